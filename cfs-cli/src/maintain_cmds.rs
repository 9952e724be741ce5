//! The maintenance commands: `repair` (a damaged store rebuilt from its tree, reusing
//! the vectors that verify), `gc` (unused vectors collected, the file compacted) and
//! `reembed` (the store moved to another embedder).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use cfs_store::{Settings, Store, SyncOptions, salvage_vectors};
use schemars::JsonSchema;
use serde::Serialize;

use crate::index_cmds::embed_pending;
use crate::locate::tree_store;
use crate::open::{
    Common, EmbedderChoice, index_file, keep_out_of_git, open_write, sync_options, tree_root,
};
use crate::output::{progress, spinner, sync_progress};
use crate::report::{Report, emit};

#[derive(Debug, clap::Args)]
pub struct ReembedArgs {
    /// The embedder to switch to.
    #[arg(long, value_enum)]
    embedder: EmbedderChoice,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// Then rewrite the file so that it shrinks (needs the store to itself).
    #[arg(long)]
    compact: bool,
    #[command(flatten)]
    common: Common,
}

/// `cfs reembed --embedder E`: one commit drops every vector and records E, then every
/// chunk is embedded with E (texts whose E vectors are cached are not run again).
pub fn reembed(args: &ReembedArgs) -> anyhow::Result<ExitCode> {
    let mut store = open_write(&args.common)?;
    let embedder = args.embedder.load()?;
    let before = store.settings().model_id.clone();
    let started = std::time::Instant::now();
    store.switch_embedder(&*embedder)?;
    // The search index file holds the old model's vectors: it goes.
    let file = index_file(&store);
    if before != embedder.model_id() {
        cfs_search::remove_index_file(&file)
            .with_context(|| format!("cannot remove {}", file.display()))?;
    }
    let report = embed_pending(&store, &*embedder, args.common.json)?;
    let answer = ReembedReport {
        from: before,
        to: embedder.model_id().to_owned(),
        chunks: report.chunks,
        texts_embedded: report.texts_embedded,
        vectors_pending: report.still_pending,
        commits: report.commits,
        state_root: report.root.to_hex(),
        seconds: started.elapsed().as_secs_f64(),
    };
    emit(&answer, args.common.json)
}

/// What `cfs reembed` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReembedReport {
    from: String,
    to: String,
    chunks: usize,
    texts_embedded: usize,
    vectors_pending: usize,
    commits: usize,
    state_root: String,
    seconds: f64,
}

impl Report for ReembedReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "embedder {} -> {}", self.from, self.to)?;
        writeln!(
            out,
            "  {} chunks embedded ({} texts through the model) in {:.2} s",
            self.chunks, self.texts_embedded, self.seconds
        )?;
        if self.vectors_pending > 0 {
            writeln!(
                out,
                "  {} chunks wait for their vectors (run `cfs index`)",
                self.vectors_pending
            )?;
        }
        writeln!(out, "state root {}", self.state_root)
    }
}

pub fn gc(args: &GcArgs) -> anyhow::Result<ExitCode> {
    let mut store = open_write(&args.common)?;
    let root = store.state_root()?;
    let what = if args.compact {
        "collecting unused vectors, then compacting the file"
    } else {
        "collecting unused vectors"
    };
    let spinner = spinner(args.common.json, what);
    let report = store.gc(args.compact)?;
    spinner.finish_and_clear();
    let answer = GcAnswer {
        cache_entries_removed: report.cache_entries_removed,
        vectors_removed: report.vectors_removed,
        cache_entries_kept: report.cache_entries_kept,
        vectors_kept: report.vectors_kept,
        bytes_before: report.bytes_before,
        bytes_after: report.bytes_after,
        chunk_log_bytes_before: report.log_bytes_before,
        chunk_log_bytes_after: report.log_bytes_after,
        compacted: report.compacted,
        state_root: root.to_hex(),
    };
    emit(&answer, args.common.json)
}

/// What `cfs gc` answers (the state root does not move).
#[derive(Debug, Serialize, JsonSchema)]
pub struct GcAnswer {
    cache_entries_removed: u64,
    vectors_removed: u64,
    cache_entries_kept: u64,
    vectors_kept: u64,
    bytes_before: u64,
    bytes_after: u64,
    chunk_log_bytes_before: u64,
    chunk_log_bytes_after: u64,
    compacted: bool,
    state_root: String,
}

impl Report for GcAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "removed {} cache entries and {} vectors; kept {} and {}",
            self.cache_entries_removed,
            self.vectors_removed,
            self.cache_entries_kept,
            self.vectors_kept
        )?;
        let compacted = if self.compacted { " (compacted)" } else { "" };
        writeln!(
            out,
            "store file {} -> {} bytes{compacted}; chunk log {} -> {} bytes",
            self.bytes_before,
            self.bytes_after,
            self.chunk_log_bytes_before,
            self.chunk_log_bytes_after
        )?;
        writeln!(out, "state root {} (unchanged)", self.state_root)
    }
}

#[derive(Debug, clap::Args)]
pub struct RepairArgs {
    /// The indexed folder (default: the current directory); its store is PATH/.cfs/
    /// unless --store.
    path: Option<PathBuf>,
    /// The embedder of the rebuilt store, when the damaged store's settings cannot be
    /// read (otherwise the store's own; without this, the one the salvaged vectors come
    /// from, or minilm-int when none was salvaged).
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

/// The embedder to rebuild a store whose settings cannot be read with, and where the
/// choice came from: `--embedder`; else the model most of the salvaged vectors come from
/// (they name it by hash); else the default, minilm-int.
fn unrecorded_embedder(
    asked: Option<EmbedderChoice>,
    salvage: &cfs_store::Salvage,
) -> (EmbedderChoice, &'static str) {
    if let Some(asked) = asked {
        return (asked, "--embedder");
    }
    let count = |choice: EmbedderChoice| {
        let model = choice.load_lazily().model_hash();
        salvage.vectors.iter().filter(|v| v.model == model).count()
    };
    let salvaged = <EmbedderChoice as clap::ValueEnum>::value_variants()
        .iter()
        .map(|&c| (count(c), c))
        .filter(|&(n, _)| n > 0)
        .max_by_key(|&(n, c)| (n, c == EmbedderChoice::MinilmInt));
    match salvaged {
        Some((_, choice)) => (choice, "the salvaged vectors"),
        None => (EmbedderChoice::MinilmInt, "the default"),
    }
}

pub fn repair(args: &RepairArgs) -> anyhow::Result<ExitCode> {
    let root = tree_root(args.path.as_deref())?;
    let file = tree_store(&root, args.common.store.as_deref());
    if !file.is_file() {
        bail!(
            "{}: no store to repair (cfs index makes one)",
            file.display()
        );
    }
    let salvage = salvage_vectors(&file);
    let (choice, chosen_by) = match recorded_embedder(&file) {
        Some(recorded) => (recorded, "the store's settings"),
        None => {
            let (choice, chosen_by) = unrecorded_embedder(args.embedder, &salvage);
            if !args.common.json {
                eprintln!(
                    "cfs: {}: its settings cannot be read; rebuilding with embedder {} \
                     ({chosen_by})",
                    file.display(),
                    choice.name()
                );
            }
            (choice, chosen_by)
        }
    };
    let embedder = choice.load()?;
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
    let answer = RepairReport {
        store: file.display().to_string(),
        damaged_kept_at: aside.display().to_string(),
        state_root: report.root.to_hex(),
        files: report.added,
        failed: report.failed.len(),
        embedder: choice.name(),
        embedder_from: chosen_by,
        vectors_salvaged: vectors.len(),
        vectors_rejected: salvage.rejected,
        salvage_stopped: salvage.stopped,
        texts_embedded: report.embedded,
        verified: true,
    };
    emit(&answer, args.common.json)
}

/// What `cfs repair` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RepairReport {
    store: String,
    damaged_kept_at: String,
    state_root: String,
    files: usize,
    failed: usize,
    /// The embedder the store was rebuilt with.
    embedder: &'static str,
    /// Where that choice came from: the store's settings, `--embedder`, the salvaged
    /// vectors, or the default.
    embedder_from: &'static str,
    vectors_salvaged: usize,
    vectors_rejected: usize,
    salvage_stopped: Option<String>,
    texts_embedded: usize,
    verified: bool,
}

impl Report for RepairReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "repaired {}: {} files, {} vectors reused, {} texts embedded; verified",
            self.store, self.files, self.vectors_salvaged, self.texts_embedded
        )?;
        writeln!(out, "state root {}", self.state_root)?;
        writeln!(out, "the damaged store is kept at {}", self.damaged_kept_at)
    }
}

/// Moves the damaged `file` aside (named with the time) and the rebuilt `fresh` into its
/// place; the stale index file beside it goes.
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
    let index = cfs_search::index_file_path(file);
    cfs_search::remove_index_file(&index)
        .with_context(|| format!("cannot remove {}", index.display()))?;
    Ok(aside)
}
