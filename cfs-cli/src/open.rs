//! Opening a store and what goes with it, for every command: the store found and opened
//! for reading, writing or syncing (created when asked), its embedder, the tree's sync
//! options, and the runtime index file beside it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cfs_ingest::{Embedder, HashEmbedder, LazyMiniLmInt, MiniLmInt, Registry};
use cfs_search::{IndexFileStatus, IndexOptions, SearchIndex};
use cfs_store::{Settings, Store, StoreError, SyncOptions};

use crate::locate::{STORE_DIR, find_store, tree_store};
use crate::output::spinner;

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

    pub fn name(self) -> &'static str {
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
    pub fn for_new_store(self) -> anyhow::Result<Box<dyn Embedder>> {
        if self == Self::MinilmInt {
            MiniLmInt::check_default()?;
        }
        Ok(self.load_lazily())
    }

    /// The embedder, its model file read only when a text is first embedded.
    pub fn load_lazily(self) -> Box<dyn Embedder> {
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

/// Opens the store for a read command: read-only, so it never waits for a writer in
/// another process, never writes a byte, and works on a read-only mount. The one
/// exception: a store left mid-write by a process that stopped is recovered by a
/// writable open first, where the file can be written (where it cannot, the error says
/// what recovers it).
pub fn open_read(common: &Common) -> anyhow::Result<Store> {
    let file = find_store(common.store.as_deref())?;
    open_read_file(&file)
}

/// The store file this process opened last, for the message of a failure that was not
/// an error (a panic in a library reading damaged bytes): it names the file.
static OPENED: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

fn note_opened(file: &Path) {
    if let Ok(mut slot) = OPENED.lock() {
        *slot = Some(file.to_path_buf());
    }
}

/// The store file this process opened last, if any.
pub fn opened_store() -> Option<PathBuf> {
    OPENED.lock().ok()?.clone()
}

/// [`open_read`] of a known store file.
pub fn open_read_file(file: &Path) -> anyhow::Result<Store> {
    note_opened(file);
    match Store::open_read_only(file) {
        Err(StoreError::NeedsRecovery(_)) => {
            drop(Store::open(file).with_context(|| {
                format!(
                    "{}: left mid-write by a process that stopped, and recovering it \
                     writes: run cfs index where the file can be written",
                    file.display()
                )
            })?);
            Ok(Store::open_read_only(file)?)
        }
        result => Ok(result?),
    }
}

/// Opens the store for a command that writes (waits for a writer in another process).
pub fn open_write(common: &Common) -> anyhow::Result<Store> {
    let file = find_store(common.store.as_deref())?;
    note_opened(&file);
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
    note_opened(&file);
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
        config: ingest_config(),
        registry: Registry::load(&root.join(STORE_DIR).join("collections.yaml"))?,
        ..SyncOptions::default()
    })
}

/// A new store folder named `.cfs` gets a `.gitignore` of `*`, so that the store and
/// its index file never show in `git status` of the tree.
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

/// Whether syncs of this store commit text first: yes with a model (minilm-int), whose
/// embedding is far slower than parsing; no with the hash embedder.
pub fn text_first(store: &Store) -> bool {
    EmbedderChoice::of_model_id(&store.settings().model_id) == Some(EmbedderChoice::MinilmInt)
}

/// The name of the code path minilm-int runs on in this process (`cfs_core::cpu`:
/// `CFS_SIMD`, checked when the command started, or the best the CPU has).
pub fn simd_path() -> &'static str {
    cfs_ingest::minilm::Simd::Auto.name()
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
    if !index_file(store).exists() {
        return Ok(());
    }
    let spinner = spinner(json, "updating the search index");
    open_index(store, embedder, IndexOptions::exact(), json)?;
    spinner.finish_and_clear();
    Ok(())
}

/// The runtime index file of a store ([`cfs_search::index_file_path`]: the library
/// names it, beside the store file).
pub fn index_file(store: &Store) -> PathBuf {
    cfs_search::index_file_path(store.path())
}

/// Opens the runtime index from its file (written from the store when missing or
/// unusable, brought forward when behind), and writes it again when that pays
/// ([`IndexFileStatus::worth_saving`]): a whole file after a build or a merge, else a delta
/// file beside it. `quiet` keeps the note of a rebuilt file off stderr.
pub fn open_index(
    store: &Store,
    embedder: &dyn Embedder,
    options: IndexOptions,
    quiet: bool,
) -> anyhow::Result<SearchIndex> {
    let file = index_file(store);
    let (index, status) = SearchIndex::open_or_build_file(store, embedder, options, &file)?;
    if let IndexFileStatus::Rebuilt(reason)
    | IndexFileStatus::Written {
        reason: Some(reason),
    } = &status
        && !quiet
    {
        eprintln!("cfs: index file {} rebuilt: {reason}", file.display());
    }
    // The index file only saves time: a store folder that cannot be written (a read-only
    // mount) searches from the index built in memory, without a word.
    if status.worth_saving()
        && let Err(e) = index.save_index_file(&file)
        && !cfs_search::unwritable(&e)
    {
        eprintln!("cfs: warning: index file not written: {e}");
    }
    Ok(index)
}

/// Hidden first argument that makes `cfs` the isolated PDF extractor (a child process
/// of itself), so the one binary needs no helper installed beside it.
pub const PDF_CHILD_ARG: &str = "__cfs-extract-pdf";

/// The ingestion configuration of the CLI: defaults, with PDFs extracted by this binary.
pub fn ingest_config() -> cfs_ingest::IngestConfig {
    let mut config = cfs_ingest::IngestConfig::default();
    if let Ok(exe) = std::env::current_exe() {
        config.pdf.program = Some(exe);
        config.pdf.args = vec![PDF_CHILD_ARG.to_owned()];
    }
    config
}
