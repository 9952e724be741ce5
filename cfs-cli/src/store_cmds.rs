//! The store commands: `index`, `status`, `verify`, `log`, `show`, `prove`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use cfs_core::{
    Canonical, ChunkId, ChunkKind, ChunkProof, DocumentId, StateRoot, hex_decode, hex_encode,
};
use cfs_ingest::{Embedder, HashEmbedder, LazyMiniLmInt, MiniLmInt, Registry};
use cfs_store::search::IndexOptions;
use cfs_store::{Settings, Store, StoreError, SyncOptions};
use serde_json::{Value, json};

use crate::locate::{STORE_DIR, find_store, store_in, tree_of, tree_store};
use crate::output::{embed_progress, print_json, progress, progress_of, spinner, sync_progress};

/// Options every store command takes.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// The store (a store folder or its store.redb); default: the nearest .cfs/ upward.
    #[arg(long, global = true)]
    pub store: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The embedders a store can be created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EmbedderChoice {
    /// all-MiniLM-L6-v2 with integer-only inference: semantic, bit-exact everywhere
    /// (needs its model file: `scripts/fetch-model`).
    MinilmInt,
    /// Lexical feature hashing: no model, fast, no meaning beyond words.
    Hash,
}

impl EmbedderChoice {
    /// The choice a store's recorded model id stands for.
    pub fn of_model_id(model_id: &str) -> Option<Self> {
        if model_id.starts_with("minilm-int/") {
            Some(Self::MinilmInt)
        } else if model_id.starts_with("cfs-hash-embed/") {
            Some(Self::Hash)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::MinilmInt => "minilm-int",
            Self::Hash => "hash",
        }
    }

    /// Loads the embedder (minilm-int reads and checks its model file).
    pub fn load(self) -> anyhow::Result<Box<dyn Embedder>> {
        Ok(match self {
            Self::MinilmInt => Box::new(MiniLmInt::open_default()?),
            Self::Hash => Box::new(HashEmbedder::default()),
        })
    }

    /// The embedder of a store about to be created: minilm-int's model file is looked
    /// for now (a missing or truncated file is an error before any store exists) and
    /// read, its hash checked, when a text is first embedded (a text-first `--no-wait`
    /// index never reads it).
    fn for_new_store(self) -> anyhow::Result<Box<dyn Embedder>> {
        if self == Self::MinilmInt {
            MiniLmInt::check_default()?;
        }
        Ok(self.load_lazily())
    }

    /// The embedder, its model file read only when a text is first embedded.
    fn load_lazily(self) -> Box<dyn Embedder> {
        match self {
            Self::MinilmInt => Box::new(LazyMiniLmInt::default()),
            Self::Hash => Box::new(HashEmbedder::default()),
        }
    }
}

/// The embedder a store was created with; an error if it is another version of the
/// model than the store's vectors come from. Its model file is read when a text is
/// first embedded (a missing file is an error then), so that what needs no new vector
/// (a sync with nothing to embed, a text search) never reads it.
pub fn embedder_for(store: &Store) -> anyhow::Result<Box<dyn Embedder>> {
    checked(store, store_choice(store)?.load_lazily())
}

/// [`embedder_for`], its model file read now: an error here if it is missing.
pub fn loaded_embedder_for(store: &Store) -> anyhow::Result<Box<dyn Embedder>> {
    checked(store, store_choice(store)?.load()?)
}

fn store_choice(store: &Store) -> anyhow::Result<EmbedderChoice> {
    let recorded = &store.settings().model_id;
    EmbedderChoice::of_model_id(recorded).with_context(|| {
        format!(
            "{}: embedder {recorded} is unknown to this cfs",
            store.path().display()
        )
    })
}

fn checked(store: &Store, embedder: Box<dyn Embedder>) -> anyhow::Result<Box<dyn Embedder>> {
    let recorded = &store.settings().model_id;
    if embedder.model_id() != recorded {
        bail!(
            "{}: the store's vectors come from {recorded}, but this cfs has {}; vectors of \
             two models are never mixed (`cfs reembed --embedder {}` moves the store to this \
             one)",
            store.path().display(),
            embedder.model_id(),
            store_choice(store)?.name()
        );
    }
    Ok(embedder)
}

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

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Also show each table's rows and bytes (stored, page overhead, unused).
    #[arg(long)]
    tables: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Recompute every vector from its text (default: a sample of 64).
    #[arg(long)]
    full: bool,
    #[command(flatten)]
    common: Common,
}

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

#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// Most records to show, newest first.
    #[arg(long, short = 'n', default_value_t = 20)]
    limit: usize,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// A relative path, a document id or a chunk id.
    target: String,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct ProveArgs {
    /// The chunk to prove (omit with --check).
    chunk_id: Option<String>,
    /// Check a proof (hex, or a file holding it) instead of making one.
    #[arg(long, value_name = "PROOF")]
    check: Option<String>,
    /// The state root to check against (default: the store's current root).
    #[arg(long, value_name = "HEX")]
    root: Option<String>,
    #[command(flatten)]
    common: Common,
}

/// Opens the store for a read command: read-only, so it never waits for a writer in
/// another process, never writes a byte, and works on a read-only mount. A store left
/// mid-write by a process that stopped is recovered by a writable open first, where the
/// file can be written.
pub fn open_read(common: &Common) -> anyhow::Result<Store> {
    let file = find_store(common.store.as_deref())?;
    open_read_file(&file)
}

/// [`open_read`] of a known store file.
pub fn open_read_file(file: &Path) -> anyhow::Result<Store> {
    match Store::open_read_only(file) {
        Err(StoreError::NeedsRecovery(_)) => {
            drop(Store::open(file)?);
            Ok(Store::open_read_only(file)?)
        }
        result => Ok(result?),
    }
}

/// Opens the store for a command that writes (waits for a writer in another process).
pub fn open_write(common: &Common) -> anyhow::Result<Store> {
    let file = find_store(common.store.as_deref())?;
    Store::open(&file).with_context(|| format!("cannot open {} for writing", file.display()))
}

/// A store opened for syncing: the store, its file, the tree's sync options and the
/// store's embedder.
pub struct Opened {
    pub store: Store,
    pub file: PathBuf,
    pub options: SyncOptions,
    pub embedder: Box<dyn Embedder>,
    /// The store was made by this call (its first sync is a cold index).
    pub created: bool,
}

/// Opens the store of the tree at `root` (`root/.cfs/` unless `--store`), creating it
/// with `choice` (default minilm-int) when there is none; an existing store made with
/// another embedder than `choice` is an error. The options defer embeddings when the
/// store's embedder is a model ([`text_first`]), and hold about `memory_bytes`; an
/// existing store's page cache is a quarter of that (`Store::open_for_sync`).
pub fn open_or_create(
    root: &Path,
    common: &Common,
    choice: Option<EmbedderChoice>,
    memory_bytes: usize,
) -> anyhow::Result<Opened> {
    let file = tree_store(root, common.store.as_deref());
    let options = SyncOptions {
        memory_bytes,
        ..sync_options(root)?
    };
    let existed = file.is_file();
    let (store, embedder) = if existed {
        let store = Store::open_for_sync(&file, memory_bytes)?;
        let recorded = EmbedderChoice::of_model_id(&store.settings().model_id);
        if let Some(choice) = choice.filter(|&c| Some(c) != recorded) {
            bail!(
                "{}: the store was made with embedder {}; --embedder {} would mix two \
                 models (index into a new store instead)",
                file.display(),
                store.settings().model_id,
                choice.name()
            );
        }
        let embedder = embedder_for(&store)?;
        (store, embedder)
    } else {
        // A new store's first index touches most of its heap for the first time.
        crate::alloc::huge_page_heaps();
        let embedder = choice
            .unwrap_or(EmbedderChoice::MinilmInt)
            .for_new_store()?;
        let settings = Settings {
            chunk: options.config.chunk,
            model_id: embedder.model_id().to_owned(),
        };
        let store = Store::create(&file, settings)?;
        keep_out_of_git(&file)?;
        (store, embedder)
    };
    // Text first with a model: a sync commits chunks at once, vectors follow in commits
    // of their own (the hash embedder keeps pace with the sync: inline).
    let options = SyncOptions {
        defer_embeddings: text_first(&store),
        ..options
    };
    Ok(Opened {
        store,
        file,
        options,
        embedder,
        created: !existed,
    })
}

/// The sync options of the tree at `root`: the CLI's ingestion configuration and the
/// tree's collections.
pub fn sync_options(root: &Path) -> anyhow::Result<SyncOptions> {
    Ok(SyncOptions {
        config: crate::ingest_config(),
        registry: Registry::load(&root.join(STORE_DIR).join("collections.yaml"))?,
        ..SyncOptions::default()
    })
}

/// A new store folder named `.cfs` gets a `.gitignore` of `*`, so that the store and
/// its index cache never show in `git status` of the tree.
pub fn keep_out_of_git(file: &Path) -> anyhow::Result<()> {
    let Some(dir) = file
        .parent()
        .filter(|d| d.file_name() == Some(STORE_DIR.as_ref()))
    else {
        return Ok(());
    };
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, "*\n")
            .with_context(|| format!("cannot write {}", ignore.display()))?;
    }
    Ok(())
}

/// The canonical folder `path` (default: the current directory).
pub fn tree_root(path: Option<&Path>) -> anyhow::Result<PathBuf> {
    let root = path.unwrap_or(Path::new("."));
    root.canonicalize()
        .with_context(|| format!("cannot open {}", root.display()))
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
        print_sync_report(&no_op.report, &root, &no_op.file, &done, args.common.json)?;
        return Ok(ExitCode::SUCCESS);
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
    print_sync_report(&report, &root, &file, &done, args.common.json)?;
    Ok(ExitCode::SUCCESS)
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
    if !cfs_store::search::cache_path(file).exists() {
        return;
    }
    let brought =
        open_read_file(file).and_then(|store| bring_index_forward(&store, embedder, json));
    if let Err(e) = brought {
        eprintln!("cfs: warning: the search index was not brought forward: {e:#}");
    }
}

/// Brings the search index files beside the store file forward to its newest commit,
/// when there are any (a store never searched has none; its first search builds them):
/// the change is written as a delta file here, by the writer, so that the searches
/// after a large change need not bring it forward themselves.
pub fn bring_index_forward(
    store: &Store,
    embedder: &dyn Embedder,
    json: bool,
) -> anyhow::Result<()> {
    if !crate::search_cmds::cache_path(store).exists() {
        return Ok(());
    }
    let spinner = spinner(json, "updating the search index");
    crate::search_cmds::open_index(store, embedder, IndexOptions::exact(), json)?;
    spinner.finish_and_clear();
    Ok(())
}

/// The name of the code path minilm-int runs on in this process (`cfs_core::cpu`:
/// `CFS_SIMD`, checked when the command started, or the best the CPU has).
pub fn simd_path() -> &'static str {
    cfs_ingest::minilm::Simd::Auto.name()
}

/// How the text reports name the kernels' path: ` (integer kernels: avx2)`, or nothing
/// where minilm-int did not run.
fn kernels_note(simd: Option<&str>) -> String {
    simd.map_or(String::new(), |s| format!(" (integer kernels: {s})"))
}

/// Whether syncs of this store commit text first: yes with a model (minilm-int), whose
/// embedding is far slower than parsing; no with the hash embedder.
pub fn text_first(store: &Store) -> bool {
    EmbedderChoice::of_model_id(&store.settings().model_id) == Some(EmbedderChoice::MinilmInt)
}

/// Embeds the chunks that have no vector yet, with a bar; Ctrl-C stops after the batch
/// under way has committed (the next `cfs index` goes on from there).
fn embed_pending(
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
    print_sync_report(&report, &root, &file, &done, args.common.json)?;
    Ok(ExitCode::SUCCESS)
}

/// `paths` (relative to `base`, or absolute) as paths relative to the tree at `root`
/// (canonical); a path outside the tree is an error naming it.
pub fn tree_relative(root: &Path, base: &Path, paths: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let mut rel = Vec::new();
    for path in paths {
        let abs = absolute(&base.join(path));
        let r = abs.strip_prefix(root).with_context(|| {
            format!(
                "{}: outside the indexed tree {}",
                path.display(),
                root.display()
            )
        })?;
        rel.push(r.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/"));
    }
    Ok(rel)
}

/// Refuses named paths that are neither in the tree nor in the store (a mistyped path
/// would otherwise be a silent no-op), naming each.
pub fn check_named_paths(store: &Store, root: &Path, rel: &[String]) -> anyhow::Result<()> {
    let read = store.begin_read()?;
    let mut missing = Vec::new();
    for p in rel {
        if std::fs::symlink_metadata(root.join(p)).is_err() && !read.holds_path(p)? {
            missing.push(p.as_str());
        }
    }
    if !missing.is_empty() {
        bail!(
            "no such file or folder in {} or its store: {}",
            root.display(),
            missing.join(", ")
        );
    }
    Ok(())
}

/// `path` made absolute without touching the file system beyond its longest existing
/// ancestor (a deleted file has no canonical form): `..` and `.` resolved, symlinks of
/// the existing part resolved.
fn absolute(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        if name == ".." {
            out.pop();
        } else if name != "." {
            out.push(name);
        }
    }
    out
}

pub fn print_sync_report(
    report: &cfs_store::SyncReport,
    root: &Path,
    file: &Path,
    done: &Done<'_>,
    json: bool,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let (head, seconds) = (done.head, done.seconds);
    let v = done.vectors;
    let embedded = report.embedded + v.map_or(0, |v| v.texts_embedded);
    let pending = v.map_or(report.deferred, |v| v.still_pending);
    let root_now = v.map_or(report.root, |v| v.root);
    let commits = report.commits + v.map_or(0, |v| v.commits);
    if json {
        print_json(&json!({
            "store": file.display().to_string(),
            "root": root.display().to_string(),
            "added": report.added, "updated": report.updated, "removed": report.removed,
            "renamed": report.renamed, "unchanged": report.unchanged,
            "failed": report.failed.iter().map(|(p, r)| json!({"path": p, "reason": r})).collect::<Vec<_>>(),
            "hashed": report.hashed, "parsed": report.parsed, "embedded": embedded,
            "vectors_pending": pending,
            "rows_removed": report.rows_removed, "commits": commits,
            "text_state_root": report.root.to_hex(),
            "state_root": root_now.to_hex(), "seconds": seconds,
            "git_head": head, "simd": done.simd,
        }))?;
        return Ok(());
    }
    writeln!(out, "indexed {} into {}", root.display(), file.display())?;
    writeln!(
        out,
        "  {} added, {} updated, {} removed, {} renamed, {} unchanged, {} failed ({:.2} s)",
        report.added,
        report.updated,
        report.removed,
        report.renamed,
        report.unchanged,
        report.failed.len(),
        seconds
    )?;
    for (path, reason) in report.failed.iter().take(10) {
        writeln!(out, "  not indexed: {path}: {reason}")?;
    }
    if report.failed.len() > 10 {
        writeln!(
            out,
            "  ... and {} more (see --json)",
            report.failed.len() - 10
        )?;
    }
    if let Some(v) = v {
        writeln!(
            out,
            "  vectors: {} chunks embedded ({} texts through the model) in {} commits{}",
            v.chunks,
            v.texts_embedded,
            v.commits,
            kernels_note(done.simd)
        )?;
    }
    if pending > 0 {
        writeln!(
            out,
            "  {pending} chunks wait for their vectors (run `cfs index` again)"
        )?;
    }
    if let Some(head) = head {
        writeln!(out, "git HEAD {head}")?;
    }
    writeln!(out, "state root {root_now}")?;
    Ok(())
}

pub fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let common = &args.common;
    let mut out = std::io::stdout().lock();
    let store = open_read(common)?;
    let read = store.begin_read()?;
    let counts = read.counts()?;
    let roots = read.table_roots()?;
    let chain = read.state_chain()?;
    let size = store.file_size();
    let last = chain.last();
    // What status reads must agree with itself: the roots in meta are the last record's.
    let consistent = last.is_none_or(|r| r.root == roots.state_root() && r.table_roots == roots);
    let git_head = store.git_head()?;
    let usage = if args.tables {
        read.table_usage()?
    } else {
        Vec::new()
    };
    let types = read.document_types()?;
    // The code path minilm-int runs on in this process (CFS_SIMD or the CPU's best).
    let simd = text_first(&store).then(simd_path);
    let mut value = json!({
        "store": store.path().display().to_string(),
        "tree": tree_of(store.path()).map(|p| p.display().to_string()),
        "state_root": roots.state_root().to_hex(),
        "paths": counts.paths, "documents": counts.documents, "chunks": counts.chunks,
        "embeddings": counts.embeddings, "edges": counts.edges,
        "vectors_pending": counts.chunks.saturating_sub(counts.embeddings),
        "commits": chain.len(),
        "consistent": consistent,
        "last_commit_ms": last.map(|r| r.timestamp_ms),
        "store_bytes": size,
        "chunk_log_bytes": store.log_size(),
        "chunk_sizes": {
            "target_bytes": store.settings().chunk.target_bytes,
            "max_bytes": store.settings().chunk.max_bytes,
            "overlap_bytes": store.settings().chunk.overlap_bytes,
        },
        "embedder": store.settings().model_id,
        "simd": simd,
        "git_head": git_head.as_ref().map(|(h, r)| json!({"commit": h, "state_root": r.to_hex(), "current": *r == roots.state_root()})),
        "types": types.iter().map(|t| json!({
            "mime_type": t.mime_type, "documents": t.documents, "by_symbol": t.by_symbol,
        })).collect::<Vec<_>>(),
    });
    if args.tables {
        value["tables"] = usage
            .iter()
            .map(|t| {
                json!({
                    "name": t.name, "rows": t.rows, "stored_bytes": t.stored_bytes,
                    "metadata_bytes": t.metadata_bytes, "fragmented_bytes": t.fragmented_bytes,
                    "leaf_pages": t.leaf_pages, "branch_pages": t.branch_pages,
                })
            })
            .collect();
    }
    if common.json {
        print_json(&value)?;
    } else {
        write_status(&mut out, &value)?;
    }
    Ok(if consistent {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The text form of `cfs status`'s documents per type: one line, the ten most common
/// types with how many of each were chunked by symbol.
fn write_types(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    let Some(types) = v["types"].as_array().filter(|t| !t.is_empty()) else {
        return Ok(());
    };
    let shown: Vec<String> = types
        .iter()
        .take(10)
        .map(|t| {
            let (n, symbols) = (t["documents"].as_u64(), t["by_symbol"].as_u64());
            let (n, symbols) = (n.unwrap_or(0), symbols.unwrap_or(0));
            let mime = t["mime_type"].as_str().unwrap_or_default();
            match symbols {
                0 => format!("{mime} {n}"),
                _ => format!("{mime} {n} ({symbols} by symbol)"),
            }
        })
        .collect();
    let more = types.len().saturating_sub(10);
    let tail = if more > 0 {
        format!(", {more} more")
    } else {
        String::new()
    };
    writeln!(out, "  documents by type: {}{tail}", shown.join(", "))
}

/// The text form of `cfs status`, from its JSON value.
fn write_status(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    writeln!(
        out,
        "store {} ({} bytes, chunk log {} bytes)",
        text("store"),
        n("store_bytes"),
        n("chunk_log_bytes")
    )?;
    writeln!(
        out,
        "  {} paths, {} documents, {} chunks, {} embeddings, {} edges",
        n("paths"),
        n("documents"),
        n("chunks"),
        n("embeddings"),
        n("edges")
    )?;
    let simd = kernels_note(v["simd"].as_str());
    writeln!(
        out,
        "  {} commits; embedder {}{simd}",
        n("commits"),
        text("embedder")
    )?;
    writeln!(
        out,
        "  embedded {} of {} chunks",
        n("embeddings"),
        n("chunks")
    )?;
    write_types(out, v)?;
    writeln!(out, "state root {}", text("state_root"))?;
    if v["consistent"] != true {
        writeln!(
            out,
            "DAMAGED: the state root and the last state record differ; cfs verify says \
             more, cfs repair rebuilds the store from its tree"
        )?;
    }
    if let Some(head) = v["git_head"]["commit"].as_str() {
        let note = if v["git_head"]["current"] == true {
            ""
        } else {
            " (the store changed since)"
        };
        writeln!(out, "indexed git HEAD {head}{note}")?;
    }
    if let Some(tables) = v["tables"].as_array() {
        writeln!(
            out,
            "{:<20} {:>10} {:>14} {:>14} {:>14}",
            "table", "rows", "stored bytes", "overhead", "unused"
        )?;
        for t in tables {
            let n = |k: &str| t[k].as_u64().unwrap_or(0);
            writeln!(
                out,
                "{:<20} {:>10} {:>14} {:>14} {:>14}",
                t["name"].as_str().unwrap_or_default(),
                n("rows"),
                n("stored_bytes"),
                n("metadata_bytes"),
                n("fragmented_bytes")
            )?;
        }
    }
    Ok(())
}

/// `cfs reembed --embedder E`: one commit drops every vector and records E, then every
/// chunk is embedded with E (texts whose E vectors are cached are not run again).
pub fn reembed(args: &ReembedArgs) -> anyhow::Result<ExitCode> {
    let mut store = open_write(&args.common)?;
    let embedder = args.embedder.load()?;
    let before = store.settings().model_id.clone();
    let started = std::time::Instant::now();
    store.switch_embedder(&*embedder)?;
    // The search index cache holds the old model's vectors: it goes.
    let cache = crate::search_cmds::cache_path(&store);
    if before != embedder.model_id() {
        cfs_store::search::remove_cache(&cache)
            .with_context(|| format!("cannot remove {}", cache.display()))?;
    }
    let report = embed_pending(&store, &*embedder, args.common.json)?;
    let seconds = started.elapsed().as_secs_f64();
    if args.common.json {
        print_json(&json!({
            "from": before, "to": embedder.model_id(),
            "chunks": report.chunks, "texts_embedded": report.texts_embedded,
            "vectors_pending": report.still_pending, "commits": report.commits,
            "state_root": report.root.to_hex(), "seconds": seconds,
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "embedder {before} -> {}", embedder.model_id())?;
        writeln!(
            out,
            "  {} chunks embedded ({} texts through the model) in {seconds:.2} s",
            report.chunks, report.texts_embedded
        )?;
        if report.still_pending > 0 {
            writeln!(
                out,
                "  {} chunks wait for their vectors (run `cfs index`)",
                report.still_pending
            )?;
        }
        writeln!(out, "state root {}", report.root)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn gc(args: &GcArgs) -> anyhow::Result<ExitCode> {
    let mut store = open_write(&args.common)?;
    let root = store.state_root()?;
    let what = if args.compact {
        "collecting unused vectors, then compacting the file"
    } else {
        "collecting unused vectors"
    };
    let spinner = crate::output::spinner(args.common.json, what);
    let report = store.gc(args.compact)?;
    spinner.finish_and_clear();
    if args.common.json {
        print_json(&json!({
            "cache_entries_removed": report.cache_entries_removed,
            "vectors_removed": report.vectors_removed,
            "cache_entries_kept": report.cache_entries_kept,
            "vectors_kept": report.vectors_kept,
            "bytes_before": report.bytes_before,
            "bytes_after": report.bytes_after,
            "chunk_log_bytes_before": report.log_bytes_before,
            "chunk_log_bytes_after": report.log_bytes_after,
            "compacted": report.compacted,
            "state_root": root.to_hex(),
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "removed {} cache entries and {} vectors; kept {} and {}",
            report.cache_entries_removed,
            report.vectors_removed,
            report.cache_entries_kept,
            report.vectors_kept
        )?;
        let compacted = if report.compacted { " (compacted)" } else { "" };
        writeln!(
            out,
            "store file {} -> {} bytes{compacted}; chunk log {} -> {} bytes",
            report.bytes_before,
            report.bytes_after,
            report.log_bytes_before,
            report.log_bytes_after
        )?;
        writeln!(out, "state root {root} (unchanged)")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn verify(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let common = &args.common;
    let store = open_read(common)?;
    let started = std::time::Instant::now();
    let report = store.verify().with_context(|| {
        format!(
            "verifying {}: the store is damaged; cfs repair rebuilds it from its tree",
            store.path().display()
        )
    })?;
    // The vectors: recomputed from their texts when the store's model is here.
    let sample = (!args.full).then_some(cfs_store::DEFAULT_VECTOR_SAMPLE);
    let vectors = match loaded_embedder_for(&store) {
        Ok(embedder) => Ok(store.check_vectors(&*embedder, sample)?),
        Err(e) => Err(format!("{e:#}")),
    };
    let verified = Verified {
        report,
        vectors,
        index: index_file_check(&store),
        seconds: started.elapsed().as_secs_f64(),
    };
    if common.json {
        print_json(&verified.json())?;
    } else {
        let cache = crate::search_cmds::cache_path(&store);
        verified.write(&mut std::io::stdout().lock(), &cache)?;
    }
    Ok(if verified.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What `cfs verify` found: the store's rows and roots, its vectors (or why they were
/// not checked), its index file (if any), and how long it took.
struct Verified {
    report: cfs_store::VerifyReport,
    vectors: Result<cfs_store::VectorCheck, String>,
    index: Option<Result<usize, String>>,
    seconds: f64,
}

impl Verified {
    fn ok(&self) -> bool {
        let vectors_ok = self.vectors.as_ref().map_or(true, |v| v.wrong.is_empty());
        self.report.is_ok() && vectors_ok && self.index.as_ref().is_none_or(|i| i.is_ok())
    }

    fn json(&self) -> Value {
        let vectors = match &self.vectors {
            Ok(v) => json!({"checked": v.checked, "embeddings": v.embeddings, "wrong": v.wrong}),
            Err(reason) => json!({"skipped": reason}),
        };
        json!({
            "ok": self.ok(),
            "stored_root": self.report.stored_root.to_hex(),
            "computed_root": self.report.computed_root.to_hex(),
            "problems": self.report.problems,
            "vectors": vectors,
            "index_file": match &self.index {
                None => json!(null),
                Some(Ok(bytes)) => json!({"ok": true, "bytes": bytes}),
                Some(Err(reason)) => json!({"ok": false, "problem": reason}),
            },
            "seconds": self.seconds,
        })
    }

    /// The text form; `cache` is the index file the advice names.
    fn write(&self, out: &mut impl Write, cache: &Path) -> std::io::Result<()> {
        let (report, seconds) = (&self.report, self.seconds);
        if report.is_ok() {
            let c = &report.counts;
            let rows = c.paths + c.documents + c.chunks + c.embeddings + c.edges;
            writeln!(
                out,
                "ok: {rows} rows recomputed to state root {} ({seconds:.2} s)",
                report.computed_root
            )?;
        } else {
            writeln!(
                out,
                "FAILED: stored root {}, computed {}",
                report.stored_root, report.computed_root
            )?;
            for p in &report.problems {
                writeln!(out, "  {p}")?;
            }
            writeln!(
                out,
                "the store is damaged: cfs repair rebuilds it from its tree (the damaged file is kept aside)"
            )?;
        }
        match &self.vectors {
            Ok(v) if v.wrong.is_empty() => writeln!(
                out,
                "vectors: {} of {} recomputed from their texts, all equal",
                v.checked, v.embeddings
            )?,
            Ok(v) => {
                writeln!(
                    out,
                    "vectors: FAILED, {} of {} checked differ",
                    v.wrong.len(),
                    v.checked
                )?;
                for w in v.wrong.iter().take(20) {
                    writeln!(out, "  {w}")?;
                }
            }
            Err(reason) => writeln!(out, "vectors: not checked: {reason}")?,
        }
        match &self.index {
            None => Ok(()),
            Some(Ok(bytes)) => writeln!(
                out,
                "index file: {bytes} bytes, every section matches its hash"
            ),
            Some(Err(reason)) => writeln!(
                out,
                "index file: FAILED, {reason}; it is only a cache: delete {} and the next search rebuilds it",
                cache.display()
            ),
        }
    }
}

/// The search index file beside the store, every section checked against its hash;
/// `None` when there is none.
fn index_file_check(store: &Store) -> Option<Result<usize, String>> {
    let path = crate::search_cmds::cache_path(store);
    path.exists()
        .then(|| cfs_store::search::verify_index_file(&path))
}

pub fn log(args: &LogArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let store = open_read(&args.common)?;
    let chain = store.begin_read()?.state_chain()?;
    let records: Vec<Value> = chain
        .iter()
        .rev()
        .take(args.limit)
        .map(|r| {
            let t = |c: &cfs_core::TableChange| json!({"added": c.added, "removed": c.removed, "changed": c.changed});
            json!({
                "sequence": r.sequence, "root": r.root.to_hex(), "parent": r.parent.to_hex(),
                "timestamp_ms": r.timestamp_ms,
                "changes": {
                    "paths": t(&r.summary.paths), "documents": t(&r.summary.documents),
                    "chunks": t(&r.summary.chunks), "embeddings": t(&r.summary.embeddings),
                    "edges": t(&r.summary.edges),
                },
            })
        })
        .collect();
    if args.common.json {
        print_json(&json!(records))?;
    } else {
        for r in chain.iter().rev().take(args.limit) {
            let s = &r.summary;
            writeln!(
                out,
                "#{} {} at {} ms: paths +{} -{} ~{}, chunks +{} -{}",
                r.sequence,
                r.root,
                r.timestamp_ms,
                s.paths.added,
                s.paths.removed,
                s.paths.changed,
                s.chunks.added,
                s.chunks.removed
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn chunk_json(c: &cfs_core::Chunk) -> Value {
    let mut v = json!({
        "id": c.id.to_string(), "sequence": c.sequence, "kind": c.kind.name(),
        "start_line": c.start_line, "end_line": c.end_line,
        "byte_offset": c.byte_offset, "byte_length": c.byte_length,
        "text_hash": c.text_hash.to_hex(), "leaf_hash": c.leaf_hash().to_hex(), "text": c.text,
    });
    match &c.kind {
        ChunkKind::Code { language, .. } => {
            v["language"] = json!(language);
            (v["symbol"], v["symbol_info"]) = crate::output::symbol_json(&c.kind);
        }
        ChunkKind::Section { heading_path } => v["heading_path"] = json!(heading_path),
        ChunkKind::Page { page } => v["page"] = json!(page),
        ChunkKind::Text => {}
    }
    v
}

pub fn show(args: &ShowArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let store = open_read(&args.common)?;
    let read = store.begin_read()?;
    let document = if let Ok(id) = DocumentId::parse(&args.target) {
        if let Some(doc) = read.document(&id)? {
            Some(doc)
        } else if let Some(chunk) = read.chunk(&ChunkId(id.0))? {
            read.document(&chunk.document_id)?
        } else {
            bail!("{}: no document or chunk has this id", args.target);
        }
    } else {
        let rel = args.target.trim_start_matches("./");
        let entry = read.path(rel)?.with_context(|| {
            format!("{rel}: not in the store (paths are relative to the indexed folder)")
        })?;
        read.document(&entry.document_id)?
    };
    let doc = document.context("the store names a document it does not hold: run cfs verify")?;
    let paths = read.paths_of(&doc.id)?;
    let chunks = read.chunks_of(&doc.id)?;
    let value = json!({
        "document_id": doc.id.to_string(),
        "content_hash": doc.content_hash.to_hex(),
        "hierarchical_hash": doc.hierarchical_hash.to_hex(),
        "leaf_hash": doc.leaf_hash().to_hex(),
        "size_bytes": doc.size_bytes,
        "mime_type": doc.profile.mime_type, "parser": doc.profile.parser, "chunker": doc.profile.chunker,
        "metadata": doc.metadata.iter().map(|m| json!([m.key, m.value])).collect::<Vec<_>>(),
        "paths": paths.iter().map(|p| json!({"path": p.path, "id": p.id().to_string(), "collections": p.collections, "context": p.context})).collect::<Vec<_>>(),
        "chunks": chunks.iter().map(chunk_json).collect::<Vec<_>>(),
    });
    if args.common.json {
        print_json(&value)?;
    } else {
        writeln!(
            out,
            "document {} ({}, {} bytes)",
            doc.id, doc.profile.mime_type, doc.size_bytes
        )?;
        writeln!(out, "  content hash {}", doc.content_hash)?;
        writeln!(out, "  hierarchical hash {}", doc.hierarchical_hash)?;
        for p in &paths {
            writeln!(out, "  path {}", p.path)?;
        }
        for c in &chunks {
            writeln!(
                out,
                "  chunk #{} {} {} lines {}-{} ({} bytes)",
                c.sequence,
                c.id,
                c.kind.name(),
                c.start_line,
                c.end_line,
                c.byte_length
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn read_proof(text: &str) -> anyhow::Result<ChunkProof> {
    let hex = if Path::new(text).is_file() {
        std::fs::read_to_string(text).with_context(|| format!("cannot read {text}"))?
    } else {
        text.to_owned()
    };
    let bytes = hex_decode(hex.trim()).context("the proof is not hex")?;
    ChunkProof::decode(&bytes).context("the proof does not decode")
}

pub fn prove(args: &ProveArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if let Some(proof_text) = &args.check {
        let proof = read_proof(proof_text)?;
        let (trusted, source) = match &args.root {
            Some(hex) => (StateRoot::from_hex(hex)?, "given"),
            None => match find_store(args.common.store.as_deref()) {
                Ok(file) => (open_read_file(&file)?.state_root()?, "the store's current"),
                Err(_) => bail!("no --root given and no store found: pass the trusted state root"),
            },
        };
        let result = proof.verify(&trusted);
        if args.common.json {
            print_json(&json!({
                "valid": result.is_ok(), "chunk_id": proof.chunk.id.to_string(),
                "state_root": trusted.to_hex(), "error": result.as_ref().err().map(|e| e.to_string()),
            }))?;
        } else {
            match &result {
                Ok(()) => writeln!(
                    out,
                    "valid: chunk {} is in state {} ({source} root)",
                    proof.chunk.id, trusted
                )?,
                Err(e) => writeln!(out, "INVALID: {e}")?,
            }
        }
        return Ok(if result.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let id_text = args
        .chunk_id
        .as_deref()
        .context("give a CHUNK_ID, or --check PROOF")?;
    let id = ChunkId::parse(id_text)?;
    let store = open_read(&args.common)?;
    let read = store.begin_read()?;
    let proof = read
        .prove_chunk(&id)?
        .with_context(|| format!("{id}: no such chunk"))?;
    let root = read.table_roots()?.state_root();
    proof
        .verify(&root)
        .context("the store made a proof that does not verify: run cfs verify")?;
    let hex = hex_encode(&proof.encode());
    if args.common.json {
        print_json(
            &json!({"chunk_id": id.to_string(), "state_root": root.to_hex(), "proof": hex}),
        )?;
    } else {
        writeln!(out, "{hex}")?;
    }
    Ok(ExitCode::SUCCESS)
}
