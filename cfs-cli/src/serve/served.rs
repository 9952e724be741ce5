//! The store a server answers from: opened read-only, its runtime index brought forward
//! to the newest commit before each answer, reopened when the file is replaced, and
//! reported (not crashed on) when the file is gone.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cfs_ingest::Embedder;
use cfs_search::{IndexOptions, SearchIndex, Snapshot};
use cfs_store::Store;

use crate::open::open_index;
use crate::open::{embedder_for, open_read_file};

/// One opened store file with its index and its embedder.
pub struct Live {
    pub store: Store,
    pub index: SearchIndex,
    pub embedder: Box<dyn Embedder>,
    /// Device and inode of the file it was opened from.
    identity: (u64, u64),
}

impl Live {
    fn open(file: &Path, identity: (u64, u64)) -> anyhow::Result<Self> {
        let store = open_read_file(file)?;
        let embedder = embedder_for(&store)?;
        // Exact vector search, as the CLI's: answers are reproducible, and today's HNSW
        // graph costs minutes of a core to build past 50 K vectors.
        let index = open_index(&store, &*embedder, IndexOptions::exact(), true)?;
        Ok(Self {
            store,
            index,
            embedder,
            identity,
        })
    }
}

/// Device and inode of `file`: a store replaced by another file at the same path has
/// another identity.
fn identity(file: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(file)?;
    Ok((meta.dev(), meta.ino()))
}

/// What the server serves, shared by every request.
pub struct Served {
    /// The store file.
    pub file: PathBuf,
    /// The indexed tree, when known (`<tree>/.cfs/store.redb` or the served folder).
    pub tree: Option<PathBuf>,
    /// Whether an in-process watcher keeps the store in step with the tree.
    pub watching: bool,
    live: Mutex<Option<Arc<Live>>>,
    /// Set when a store was opened and later found replaced (cleared by the next open).
    replaced: Mutex<bool>,
    /// The watcher's last error, if it stopped.
    pub watch_error: Mutex<Option<String>>,
}

/// Why there is no store to answer from, as a sentence for a tool error.
pub type Unavailable = String;

impl Served {
    pub fn new(file: PathBuf, tree: Option<PathBuf>, watching: bool) -> Self {
        Self {
            file,
            tree,
            watching,
            live: Mutex::new(None),
            replaced: Mutex::new(false),
            watch_error: Mutex::new(None),
        }
    }

    /// The store at its newest commit: opened on first use, reopened when the file was
    /// replaced, its index brought forward when another process (or the watcher)
    /// committed. An answer then works on one snapshot of it.
    pub fn current(&self) -> Result<Arc<Live>, Unavailable> {
        let id = identity(&self.file).map_err(|e| {
            format!(
                "{}: the store is gone ({e}); index the tree again (cfs index) to serve it",
                self.file.display()
            )
        })?;
        let live = {
            let mut slot = lock(&self.live);
            match slot.as_ref() {
                Some(live) if live.identity == id => Arc::clone(live),
                previous => {
                    let was_open = previous.is_some();
                    *slot = None;
                    let live = Arc::new(Live::open(&self.file, id).map_err(|e| {
                        // Once replaced, it stays so until a store can be opened again.
                        if was_open {
                            *lock(&self.replaced) = true;
                        }
                        format!("{e:#}")
                    })?);
                    *lock(&self.replaced) = false;
                    *slot = Some(Arc::clone(&live));
                    live
                }
            }
        };
        live.index
            .refresh(&live.store)
            .map_err(|e| format!("{}: {e}", self.file.display()))?;
        Ok(live)
    }

    /// The current snapshot and the live store it belongs to.
    pub fn snapshot(&self) -> Result<(Arc<Live>, Arc<Snapshot>), Unavailable> {
        let live = self.current()?;
        let snap = live.index.snapshot();
        Ok((live, snap))
    }

    /// True when the store that was served has been replaced by a file that cannot be
    /// served.
    pub fn was_replaced(&self) -> bool {
        *lock(&self.replaced)
    }
}

/// A lock that a panicked holder did not poison for the others: the data behind it is
/// replaced whole, never left half-written.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
