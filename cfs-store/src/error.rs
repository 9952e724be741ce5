//! Errors of cfs-store.

use std::path::PathBuf;

/// An error from the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file could not be read or written (redb's message, said once).
    #[error(transparent)]
    Storage(#[from] redb::Error),
    /// A file or folder could not be accessed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store holds bytes that break the format (a row that does not decode, a
    /// missing meta key); run `cfs verify` and re-index.
    #[error("corrupted store: {0}")]
    Corrupted(String),
    /// The store was written by another schema version of cfs.
    #[error("{path}: store schema version {found}, this cfs reads version {expected}; cfs repair rebuilds it from its tree (or re-index into a new store: cfs index --store NEW_PATH)", path = path.display())]
    SchemaMismatch {
        /// The store.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// The store's state was computed under another version of the protocol spec.
    #[error("{path}: store computed under spec version {found}, this cfs implements spec version {expected}; re-index into a new store (cfs index --store NEW_PATH)", path = path.display())]
    SpecMismatch {
        /// The store.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build implements.
        expected: u32,
    },
    /// The store was built with other chunking parameters or another embedder.
    #[error("{path}: store built with {what} {stored:?}, asked for {requested:?}; re-index into a new store or keep the store's settings", path = path.display())]
    ConfigMismatch {
        /// The store.
        path: PathBuf,
        /// Which setting.
        what: &'static str,
        /// The store's value.
        stored: String,
        /// The requested value.
        requested: String,
    },
    /// The store file could not be opened (not a store, unreadable, locked).
    #[error("{}: cannot open the store: {reason}", path.display())]
    Open {
        /// The store file.
        path: PathBuf,
        /// Why (redb's error; kept out of the source chain so it is said once).
        reason: redb::Error,
    },
    /// The store was opened read-only and something asked to write.
    #[error("{}: opened read-only; this needs a store opened for writing", .0.display())]
    ReadOnly(PathBuf),
    /// A read-only open found the store left mid-write by a process that stopped.
    #[error("{}: left mid-write by a process that stopped; open it for writing once (cfs index) to recover", .0.display())]
    NeedsRecovery(PathBuf),
    /// The path holds no store.
    #[error("{}: no cfs store here (create one with cfs index)", .0.display())]
    NotFound(PathBuf),
    /// A request that cannot be served (an absent document or entity, an empty delete
    /// set, a filter value no chunk has).
    #[error("invalid request: {0}")]
    InvalidInput(String),
    /// A commit that had to make one state root would have made another; nothing was
    /// written.
    #[error(
        "the rows would make state root {root}, not the expected {expected}; nothing was written"
    )]
    RootMismatch {
        /// The root the commit had to make.
        expected: cfs_core::StateRoot,
        /// The root its rows make.
        root: cfs_core::StateRoot,
    },
    /// A store file is already at the path a new store was asked for.
    #[error("{}: already exists", .0.display())]
    Exists(PathBuf),
    /// git could not answer for the tree (not a work tree, no such commit, a failed diff).
    #[error("{}: git: {reason}", tree.display())]
    Git {
        /// The tree.
        tree: PathBuf,
        /// What git said.
        reason: String,
    },
    /// The embedder failed or returned something unusable.
    #[error("embedder: {0}")]
    Embedder(String),
    /// Vectors of two models would be compared: the embedder is not the store's.
    #[error("the store's vectors are from {store:?}, the embedder is {embedder:?}")]
    ModelMismatch {
        /// The store's model id.
        store: String,
        /// The embedder's model id.
        embedder: String,
    },
    /// The file-system watcher stopped delivering events.
    #[error("the file-system watcher stopped")]
    WatcherStopped,
    /// A bug in cfs (an encoding that cannot fail did, a lock held by a thread that
    /// panicked); please report it.
    #[error("internal error: {0}")]
    Internal(String),
    /// A core rule was broken.
    #[error(transparent)]
    Core(#[from] cfs_core::CoreError),
    /// Ingestion failed as a whole (not per file).
    #[error(transparent)]
    Ingest(#[from] cfs_ingest::IngestError),
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                Self::Storage(redb::Error::from(e))
            }
        }
    )*};
}
from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CursorError,
    redb::CommitError
);

/// Results of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An I/O failure on the file at `path`.
pub(crate) fn io_error(path: &std::path::Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs `work`, turning a panic into [`StoreError::Corrupted`] naming the store file:
/// the storage engine indexes its pages without checks and panics on some damaged
/// bytes, which must be an error for the caller, never the end of its process.
pub fn guard<T>(store: &std::path::Path, work: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|payload| {
        let message = panic_message(&*payload);
        Err(StoreError::Corrupted(format!(
            "{}: reading failed on damaged bytes ({message}); cfs repair rebuilds the store",
            store.display()
        )))
    })
}

/// The text a panic was raised with (`panic!` with a literal or a formatted message).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}
