//! The indexing commands: `index` (a tree into its store, text first, then vectors) and
//! `refresh` (exactly the named paths), and the report both print.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use cfs_ingest::Embedder;
use cfs_store::{Store, SyncOptions};
use schemars::JsonSchema;
use serde::Serialize;

use crate::locate::{
    STORE_DIR, check_named_paths, find_store, store_in, tree_of, tree_relative, tree_store,
};
use crate::open::{
    Common, EmbedderChoice, Opened, bring_index_forward, embedder_for, open_or_create,
    open_read_file, simd_path, sync_options, text_first, tree_root,
};
use crate::output::{embed_progress, progress, progress_of, sync_progress};
use crate::report::{Report, emit, kernels_note};

#[derive(Debug, clap::Args)]
pub struct IndexArgs {
    /// The folder to index (default: the current directory).
    path: Option<PathBuf>,
    /// The embedder of a new store (an existing store keeps its own).
    #[arg(long, value_enum)]
    embedder: Option<EmbedderChoice>,
    /// Sync only what git says changed since this commit (against the work tree),
    /// instead of walking the whole tree.
    #[arg(long, value_name = "REF")]
    changed_since: Option<String>,
    /// Return once the text is committed (searchable by keyword); the vectors are
    /// embedded by the next `cfs index` (`cfs status` shows how many are missing).
    #[arg(long)]
    no_wait: bool,
    /// About the most memory the sync holds, in MiB, whatever the tree's size (rows of
    /// new documents beyond a quarter of it wait on disk beside the store until the
    /// commit).
    #[arg(long, value_name = "MIB", default_value_t = cfs_store::DEFAULT_SYNC_MEMORY >> 20)]
    memory: usize,
    #[command(flatten)]
    common: Common,
}

impl IndexArgs {
    /// `--memory` in bytes.
    fn memory_bytes(&self) -> usize {
        self.memory.saturating_mul(1 << 20)
    }
}

#[derive(Debug, clap::Args)]
pub struct RefreshArgs {
    /// Files or folders to sync (deleted ones are removed from the store).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    common: Common,
}

pub fn index(args: &IndexArgs) -> anyhow::Result<ExitCode> {
    let (root, part) = enclosing_tree(tree_root(args.path.as_deref())?, &args.common);
    if let Some(part) = &part
        && !args.common.json
    {
        eprintln!(
            "cfs: {part} is inside the indexed tree {}: indexing it into that tree's store",
            root.display()
        );
    }
    let whole = part.is_none() && args.changed_since.is_none();
    // git's answer (a process of its own) is asked for while the store is looked at; a
    // part of the tree synced says nothing of the rest: no git head recorded then.
    // (Waited for after the sync instead, git ran beside the parse and the Python
    // library's cold index took 15 ms longer.)
    let asked = whole.then(|| {
        let git_root = root.clone();
        std::thread::spawn(move || cfs_store::git::head(&git_root))
    });
    // Errors of the read-only look are met again, and reported, by the writable path.
    let no_op = whole.then(|| unchanged_index(&root, args).ok().flatten());
    let head = asked.and_then(|h| h.join().ok().flatten());
    if let Some(no_op) = no_op.flatten()
        && no_op.head_recorded(head.as_deref())?
    {
        let done = Done {
            head: head.as_deref(),
            seconds: no_op.started.elapsed().as_secs_f64(),
            vectors: no_op.vectors.as_ref(),
            simd: None,
        };
        let report = IndexReport::new(&no_op.report, &root, &no_op.file, &done);
        return emit(&report, args.common.json);
    }
    let ahead = walk_ahead(&root, args, whole);
    let opened = open_or_create(&root, &args.common, args.embedder, args.memory_bytes())?;
    let started = std::time::Instant::now();
    let tree = Tree {
        root: &root,
        part: part.as_deref(),
        ahead,
    };
    let (report, changed_head) = sync_tree(&opened, tree, args)?;
    let head = changed_head.or(head);
    let Opened {
        store,
        file,
        embedder,
        created,
        ..
    } = opened;
    let vectors = if args.no_wait {
        None
    } else {
        Some(embed_pending(&store, &*embedder, args.common.json)?)
    };
    if let Some(head) = &head {
        store.record_git_head(head)?;
    }
    let model_ran = vectors.as_ref().is_some_and(|v| v.texts_embedded > 0) && text_first(&store);
    after_sync(store, &file, created, &*embedder, args.common.json);
    let done = Done {
        head: head.as_deref(),
        seconds: started.elapsed().as_secs_f64(),
        vectors: vectors.as_ref(),
        simd: model_ran.then(simd_path),
    };
    emit(
        &IndexReport::new(&report, &root, &file, &done),
        args.common.json,
    )
}

/// The tree to index for `folder` and the part of it asked for: `folder` itself, or,
/// when `folder` has no store of its own and lies inside an indexed tree (git's rule),
/// that tree with `folder` as the scope. `--store` always means `folder` itself.
fn enclosing_tree(folder: PathBuf, common: &Common) -> (PathBuf, Option<String>) {
    if common.store.is_some() || store_in(&folder).is_file() {
        return (folder, None);
    }
    for tree in folder.ancestors().skip(1) {
        if store_in(tree).is_file()
            && let Ok(rel) = folder.strip_prefix(tree)
        {
            let rel = rel
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            return (tree.to_path_buf(), Some(rel));
        }
    }
    (folder, None)
}

/// What `cfs index` syncs: the tree, the part of it asked for, and the walk of the whole
/// tree if it was begun before the store was created ([`walk_ahead`]).
struct Tree<'a> {
    root: &'a Path,
    part: Option<&'a str>,
    ahead: Option<cfs_store::WalkAhead>,
}

/// The walk of the whole tree at `root`, begun before a new store is created, so that
/// the store's creation (its files made, written and synced: 1.6-2 ms) overlaps it
/// (`Store::walk_ahead`). Only for a whole sync into a store that does not exist yet,
/// kept where the walk cannot meet its file before it exists: in the tree's `.cfs`
/// folder, which the walk skips, or outside the tree.
fn walk_ahead(root: &Path, args: &IndexArgs, whole: bool) -> Option<cfs_store::WalkAhead> {
    let file = tree_store(root, args.common.store.as_deref());
    if !whole || file.exists() {
        return None;
    }
    let absolute = std::path::absolute(&file).ok()?;
    let apart = !absolute.starts_with(root) || absolute.starts_with(root.join(STORE_DIR));
    if !apart {
        return None;
    }
    // The parse threads' heaps before the walk's threads start (see `huge_page_heaps`).
    crate::alloc::huge_page_heaps();
    Some(Store::walk_ahead(root, &file))
}

/// Syncs the tree at `root` (the part `part` of it, or what git says changed since
/// `--changed-since`; the walk begun ahead, if any) with a progress bar; returns the
/// report and, for `--changed-since`, git's head.
fn sync_tree(
    opened: &Opened,
    tree: Tree<'_>,
    args: &IndexArgs,
) -> anyhow::Result<(cfs_store::SyncReport, Option<String>)> {
    let Tree { root, part, ahead } = tree;
    let Opened {
        store,
        options,
        embedder,
        ..
    } = opened;
    let bar = progress(0, args.common.json, "indexing");
    let progress = sync_progress(&bar);
    let synced = match (&args.changed_since, part) {
        (Some(reference), _) => {
            let changes = cfs_store::git::changed_since(root, reference)?;
            let scope = cfs_ingest::Scope::new(&changes.paths);
            let report = store.sync_paths(root, &scope, options, &**embedder, &progress)?;
            (report, changes.head)
        }
        (None, Some(part)) => {
            let scope = cfs_ingest::Scope::new([part]);
            let report = store.sync_paths(root, &scope, options, &**embedder, &progress)?;
            (report, None)
        }
        (None, None) => match ahead {
            Some(walk) => (
                store.sync_walked(walk, options, &**embedder, &progress)?,
                None,
            ),
            None => (store.sync(root, options, &**embedder, &progress)?, None),
        },
    };
    bar.finish_and_clear();
    Ok(synced)
}

/// What follows a committed sync, none of it the command's failure: the file compacted
/// after the index that created it, and the search index brought forward.
fn after_sync(store: Store, file: &Path, created: bool, embedder: &dyn Embedder, json: bool) {
    // The cold index that made the store leaves much of the file free (about 40%):
    // returned at once, through an opening of its own with a small page cache. Whether
    // it is worth it is asked of this opening, whose cache holds the pages just written
    // (a new opening, or a later sync's small cache, would read the whole file to
    // answer; later commits reuse free pages, and `cfs gc --compact` compacts on
    // demand). The sync is committed by now, so a compaction that fails is said, not
    // made the command's failure.
    let policy = cfs_store::ShrinkPolicy::default();
    // Removed chunks' bytes stay in the chunk log; past the same policy, after any
    // sync, the log is rewritten without them.
    let log_compacted = match store.wants_log_compaction(policy) {
        Ok(true) => store.compact_log().map(drop),
        Ok(false) => Ok(()),
        Err(e) => Err(e),
    };
    if let Err(e) = log_compacted {
        eprintln!(
            "cfs: warning: the chunk log of {} was not compacted: {e}",
            file.display()
        );
    }
    let wanted = if created {
        store.wants_shrink(policy)
    } else {
        Ok(false)
    };
    drop(store);
    let shrunk = match wanted {
        Ok(true) => Store::shrink_file(file, policy).map(drop),
        Ok(false) => Ok(()),
        Err(e) => Err(e),
    };
    if let Err(e) = shrunk {
        eprintln!("cfs: warning: {} was not compacted: {e}", file.display());
    }
    // A store never searched has no index to bring forward: not even opened then.
    if !cfs_search::index_file_path(file).exists() {
        return;
    }
    let brought =
        open_read_file(file).and_then(|store| bring_index_forward(&store, embedder, json));
    if let Err(e) = brought {
        eprintln!("cfs: warning: the search index was not brought forward: {e:#}");
    }
}

/// Embeds the chunks that have no vector yet, with a bar; Ctrl-C stops after the batch
/// under way has committed (the next `cfs index` goes on from there).
pub fn embed_pending(
    store: &Store,
    embedder: &dyn Embedder,
    json: bool,
) -> anyhow::Result<cfs_store::EmbedReport> {
    let options = cfs_store::EmbedOptions::default();
    let stop = std::sync::Arc::clone(&options.stop);
    // A second handler cannot be set (watch sets its own): then Ctrl-C ends at once,
    // which loses at most the batch under way.
    let _ = ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::SeqCst));
    let bar = progress_of(0, json, "embedding", "chunks");
    let report = store.embed_pending(embedder, &options, &embed_progress(&bar))?;
    bar.finish_and_clear();
    Ok(report)
}

/// A whole-tree `cfs index` with nothing to do, found from a read-only open (a writable
/// open and close write and sync the store file; this writes nothing).
struct NoOp {
    store: Store,
    file: PathBuf,
    report: cfs_store::SyncReport,
    /// What `embed_pending` reports when no vector is missing (none with `--no-wait`).
    vectors: Option<cfs_store::EmbedReport>,
    started: std::time::Instant,
}

impl NoOp {
    /// Whether git's head `head` (if the tree has one) is recorded for this state
    /// already: otherwise the writable path records it.
    fn head_recorded(&self, head: Option<&str>) -> anyhow::Result<bool> {
        Ok(match head {
            Some(head) => self.store.git_head()? == Some((head.to_owned(), self.report.root)),
            None => true,
        })
    }
}

/// The store of the tree at `root` opened read-only: `None` when a sync would write
/// something or (unless `--no-wait`) a vector is missing.
fn unchanged_index(root: &Path, args: &IndexArgs) -> anyhow::Result<Option<NoOp>> {
    let started = std::time::Instant::now();
    let file = tree_store(root, args.common.store.as_deref());
    if !file.is_file() {
        return Ok(None);
    }
    let store = Store::open_read_only(&file)?;
    let recorded = EmbedderChoice::of_model_id(&store.settings().model_id);
    if args.embedder.is_some_and(|c| Some(c) != recorded) {
        return Ok(None);
    }
    let embedder = embedder_for(&store)?;
    let options = SyncOptions {
        memory_bytes: args.memory_bytes(),
        ..sync_options(root)?
    };
    let Some(report) = store.unchanged(root, &options, &*embedder)? else {
        return Ok(None);
    };
    let status = store.embed_status()?;
    if !args.no_wait && status.embedded != status.chunks {
        return Ok(None);
    }
    let vectors = (!args.no_wait).then(|| cfs_store::EmbedReport {
        root: report.root,
        ..cfs_store::EmbedReport::default()
    });
    Ok(Some(NoOp {
        store,
        file,
        report,
        vectors,
        started,
    }))
}

/// What happened after the sync: the git HEAD recorded, the time taken, and the
/// vectors embedded (unless `--no-wait`).
pub struct Done<'a> {
    pub head: Option<&'a str>,
    pub seconds: f64,
    pub vectors: Option<&'a cfs_store::EmbedReport>,
    /// The code path minilm-int ran on, where it ran.
    pub simd: Option<&'static str>,
}

/// `cfs refresh PATH...`: syncs exactly the named files and folders.
pub fn refresh(args: &RefreshArgs) -> anyhow::Result<ExitCode> {
    let file = find_store(args.common.store.as_deref())?;
    let root = tree_of(&file).with_context(|| {
        format!(
            "{}: the store is not in a {STORE_DIR}/ folder, so its tree is unknown",
            file.display()
        )
    })?;
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot open {}", root.display()))?;
    let rel = tree_relative(&root, &std::env::current_dir()?, &args.paths)?;
    let Opened {
        store,
        options,
        embedder,
        ..
    } = open_or_create(&root, &args.common, None, cfs_store::DEFAULT_SYNC_MEMORY)?;
    check_named_paths(&store, &root, &rel)?;
    // A few named files: their vectors go in the same commit as their text.
    let options = SyncOptions {
        defer_embeddings: false,
        ..options
    };
    let started = std::time::Instant::now();
    let bar = progress(0, args.common.json, "refreshing");
    let report = store.sync_paths(
        &root,
        &cfs_ingest::Scope::new(&rel),
        &options,
        &*embedder,
        &sync_progress(&bar),
    )?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let done = Done {
        head: None,
        seconds,
        vectors: None,
        simd: None,
    };
    emit(
        &IndexReport::new(&report, &root, &file, &done),
        args.common.json,
    )
}

/// What `cfs index` and `cfs refresh` answer: the sync's counts, the files that could not
/// be indexed, the vectors embedded after it, and the roots.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IndexReport {
    store: String,
    root: String,
    added: usize,
    updated: usize,
    removed: usize,
    renamed: usize,
    unchanged: usize,
    failed: Vec<FailedFile>,
    hashed: usize,
    parsed: usize,
    /// Texts run through the model, in the sync and after it.
    embedded: usize,
    vectors_pending: usize,
    rows_removed: u64,
    commits: usize,
    /// The root of the text commit.
    text_state_root: String,
    /// The root after the vectors.
    state_root: String,
    seconds: f64,
    git_head: Option<String>,
    /// The integer kernels' path, where minilm-int ran.
    simd: Option<&'static str>,
    /// The vectors embedded after the sync (none with `--no-wait`): the text form's line.
    #[serde(skip)]
    vectors: Option<VectorsDone>,
}

/// A file a sync could not index, and why.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FailedFile {
    path: String,
    reason: String,
}

/// The vectors embedded after a sync, as the text form says them.
#[derive(Debug)]
struct VectorsDone {
    chunks: usize,
    texts_embedded: usize,
    commits: usize,
}

impl IndexReport {
    pub fn new(report: &cfs_store::SyncReport, root: &Path, file: &Path, done: &Done<'_>) -> Self {
        let v = done.vectors;
        let failed = report.failed.iter().map(|(path, reason)| FailedFile {
            path: path.clone(),
            reason: reason.clone(),
        });
        Self {
            store: file.display().to_string(),
            root: root.display().to_string(),
            added: report.added,
            updated: report.updated,
            removed: report.removed,
            renamed: report.renamed,
            unchanged: report.unchanged,
            failed: failed.collect(),
            hashed: report.hashed,
            parsed: report.parsed,
            embedded: report.embedded + v.map_or(0, |v| v.texts_embedded),
            vectors_pending: v.map_or(report.deferred, |v| v.still_pending),
            rows_removed: report.rows_removed,
            commits: report.commits + v.map_or(0, |v| v.commits),
            text_state_root: report.root.to_hex(),
            state_root: v.map_or(report.root, |v| v.root).to_hex(),
            seconds: done.seconds,
            git_head: done.head.map(str::to_owned),
            simd: done.simd,
            vectors: v.map(|v| VectorsDone {
                chunks: v.chunks,
                texts_embedded: v.texts_embedded,
                commits: v.commits,
            }),
        }
    }
}

impl Report for IndexReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "indexed {} into {}", self.root, self.store)?;
        writeln!(
            out,
            "  {} added, {} updated, {} removed, {} renamed, {} unchanged, {} failed ({:.2} s)",
            self.added,
            self.updated,
            self.removed,
            self.renamed,
            self.unchanged,
            self.failed.len(),
            self.seconds
        )?;
        for f in self.failed.iter().take(10) {
            // Most reasons begin with the path already: said once.
            let reason = f.reason.strip_prefix(&format!("{}: ", f.path));
            writeln!(
                out,
                "  not indexed: {}: {}",
                f.path,
                reason.unwrap_or(&f.reason)
            )?;
        }
        if self.failed.len() > 10 {
            writeln!(
                out,
                "  ... and {} more (see --json)",
                self.failed.len() - 10
            )?;
        }
        // The embedding after the sync, when it had any (an embedder that runs inside
        // the sync, as the hash embedder does, leaves it none).
        if let Some(v) = self
            .vectors
            .as_ref()
            .filter(|v| v.chunks > 0 || v.commits > 0)
        {
            writeln!(
                out,
                "  vectors: {} chunks embedded ({} texts through the model) in {} commits{}",
                v.chunks,
                v.texts_embedded,
                v.commits,
                kernels_note(self.simd)
            )?;
        }
        if self.vectors_pending > 0 {
            writeln!(
                out,
                "  {} chunks wait for their vectors (run `cfs index` again)",
                self.vectors_pending
            )?;
        }
        if let Some(head) = &self.git_head {
            writeln!(out, "git HEAD {head}")?;
        }
        writeln!(out, "state root {}", self.state_root)
    }
}
