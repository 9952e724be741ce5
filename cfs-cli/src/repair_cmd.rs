//! `cfs repair`: rebuild a damaged store from its tree, reusing the vectors that verify.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use cfs_store::{Settings, Store, SyncOptions, salvage_vectors};
use serde_json::json;

use crate::locate::tree_store;
use crate::output::{print_json, progress, sync_progress};
use crate::store_cmds::{Common, EmbedderChoice, keep_out_of_git, sync_options, tree_root};

#[derive(Debug, clap::Args)]
pub struct RepairArgs {
    /// The indexed folder (default: the current directory); its store is PATH/.cfs/
    /// unless --store.
    path: Option<PathBuf>,
    /// The embedder of the rebuilt store, when the damaged store's settings cannot be
    /// read (otherwise the store's own).
    #[arg(long, value_enum)]
    embedder: Option<EmbedderChoice>,
    #[command(flatten)]
    common: Common,
}

/// The damaged store's embedder, when its settings can be read (a failed or panicking
/// read is `None`: `Store::recorded_settings` turns panics into errors).
fn recorded_embedder(file: &Path) -> Option<EmbedderChoice> {
    let settings = Store::recorded_settings(file).ok()?;
    EmbedderChoice::of_model_id(&settings.model_id)
}

pub fn run(args: &RepairArgs) -> anyhow::Result<ExitCode> {
    let root = tree_root(args.path.as_deref())?;
    let file = tree_store(&root, args.common.store.as_deref());
    if !file.is_file() {
        bail!(
            "{}: no store to repair (cfs index makes one)",
            file.display()
        );
    }
    let choice = match (recorded_embedder(&file), args.embedder) {
        (Some(recorded), _) => recorded,
        (None, Some(asked)) => asked,
        (None, None) => bail!(
            "{}: its settings cannot be read; say which embedder to rebuild it with \
             (--embedder minilm-int or hash)",
            file.display()
        ),
    };
    let embedder = choice.load()?;
    let salvage = salvage_vectors(&file);
    let model = embedder.model_hash();
    let vectors: Vec<_> = salvage
        .vectors
        .into_iter()
        .filter(|v| v.model == model)
        .collect();

    // Rebuild beside the damaged file, check, then swap.
    let fresh = file.with_extension("redb.repair");
    if fresh.exists() {
        std::fs::remove_file(&fresh)
            .with_context(|| format!("cannot remove {}", fresh.display()))?;
    }
    let options = SyncOptions {
        defer_embeddings: false,
        ..sync_options(&root)?
    };
    let settings = Settings {
        chunk: options.config.chunk,
        model_id: embedder.model_id().to_owned(),
    };
    let store = Store::create(&fresh, settings)?;
    store.cache_salvaged(&vectors)?;
    let bar = progress(0, args.common.json, "rebuilding");
    let report = store.sync(&root, &options, &*embedder, &sync_progress(&bar))?;
    bar.finish_and_clear();
    let verified = store.verify()?;
    let vector_check = store.check_vectors(&*embedder, Some(cfs_store::DEFAULT_VECTOR_SAMPLE))?;
    if !verified.is_ok() || !vector_check.wrong.is_empty() {
        bail!(
            "the rebuilt store {} does not verify ({} problems, {} wrong vectors); the \
             damaged store is untouched",
            fresh.display(),
            verified.problems.len(),
            vector_check.wrong.len()
        );
    }
    drop(store);
    let aside = set_aside(&file, &fresh)?;
    keep_out_of_git(&file)?;
    let value = json!({
        "store": file.display().to_string(),
        "damaged_kept_at": aside.display().to_string(),
        "state_root": report.root.to_hex(),
        "files": report.added,
        "failed": report.failed.len(),
        "vectors_salvaged": vectors.len(),
        "vectors_rejected": salvage.rejected,
        "salvage_stopped": salvage.stopped,
        "texts_embedded": report.embedded,
        "verified": true,
    });
    if args.common.json {
        print_json(&value)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "repaired {}: {} files, {} vectors reused, {} texts embedded; verified",
            file.display(),
            report.added,
            vectors.len(),
            report.embedded
        )?;
        writeln!(out, "state root {}", report.root)?;
        writeln!(out, "the damaged store is kept at {}", aside.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Moves the damaged `file` aside (named with the time) and the rebuilt `fresh` into its
/// place; the stale index cache beside it goes.
fn set_aside(file: &Path, fresh: &Path) -> anyhow::Result<PathBuf> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = file.with_extension(format!("redb.damaged-{secs}"));
    std::fs::rename(file, &aside)
        .with_context(|| format!("cannot move {} aside", file.display()))?;
    // The damaged store's chunk log goes with it, if it has one.
    let log = cfs_store::chunk_log_path(file);
    match std::fs::rename(&log, cfs_store::chunk_log_path(&aside)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot move {} aside", log.display()));
        }
        _ => {}
    }
    std::fs::rename(cfs_store::chunk_log_path(fresh), &log)
        .with_context(|| format!("cannot move {} into place", log.display()))?;
    std::fs::rename(fresh, file)
        .with_context(|| format!("cannot move {} into place", fresh.display()))?;
    let cache = cfs_store::search::cache_path(file);
    cfs_store::search::remove_cache(&cache)
        .with_context(|| format!("cannot remove {}", cache.display()))?;
    Ok(aside)
}
