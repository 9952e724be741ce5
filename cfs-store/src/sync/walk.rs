//! The walk of a sync: the files of the tree in scope, less the store's own file; and a
//! walk begun before its store is open ([`WalkAhead`]), which runs while a new store is
//! created.
//!
//! A cold `cfs index` made the store (its files created, redb's header and first
//! commit written and synced: 1.6-2.0 ms for the TypeScript tree) and only then walked
//! the tree (1.5-1.9 ms on three threads). Walked ahead, the two overlap: the walk
//! needs the store's path only, to leave its file out.

use std::path::{Path, PathBuf};

use cfs_ingest::{IngestError, Scope, WalkEntry, walk_scope};

use crate::error::Result;

/// A file that could not be indexed: its path and the reason.
pub(super) type Failure = (String, String);

/// What the walk found.
pub(super) struct Walked {
    pub(super) files: Vec<WalkEntry>,
    pub(super) failures: Vec<Failure>,
    /// Folders it could not list and files it could not stat: not gone.
    pub(super) unread: Scope,
}

/// The files of `root` in `scope`, less the store's own files wherever the store lives
/// ([`is_store_file`]), the walk's failures, and the paths it could not read (a folder
/// that cannot be listed does not mean its files are gone).
pub(super) fn walk_files(store_path: &Path, root: &Path, scope: Option<&Scope>) -> Result<Walked> {
    let walked = walk_scope(root, scope)?;
    let files = walked
        .files
        .into_iter()
        .filter(|f| !is_store_file(store_path, &f.abs_path))
        .collect();
    let failures = walked
        .errors
        .iter()
        .map(|e| (error_path(e), e.to_string()))
        .collect();
    Ok(Walked {
        files,
        failures,
        unread: Scope::new(walked.unread),
    })
}

/// Whether `file` is one of the store's own files: the store file at `store_path`, the
/// files named after it beside it (its chunk log, a staged store), or the search index
/// files beside it. Only files with such a name are resolved, to keep the walk free of
/// per-file path resolution.
fn is_store_file(store_path: &Path, file: &Path) -> bool {
    let (Some(store_name), Some(name)) = (store_path.file_name(), file.file_name()) else {
        return false;
    };
    let named = name
        .as_encoded_bytes()
        .starts_with(store_name.as_encoded_bytes())
        || name == "index.cache"
        || name == "index.delta";
    let folder = |p: &Path| p.parent().and_then(|d| d.canonicalize().ok());
    named && folder(file).is_some_and(|d| Some(d) == folder(store_path))
}

/// The path an ingestion error names, if any.
fn error_path(e: &IngestError) -> String {
    match e {
        IngestError::Skipped { path, .. }
        | IngestError::Decode { path, .. }
        | IngestError::Malformed { path, .. }
        | IngestError::TooLarge { path, .. }
        | IngestError::Path { path, .. }
        | IngestError::Core { path, .. } => path.clone(),
        IngestError::Io { path, .. } => path.display().to_string(),
        _ => String::new(),
    }
}

/// A walk of a whole tree begun on a thread of its own, for a sync of the tree into the
/// store at a given path (`Store::walk_ahead`, `Store::sync_walked`).
pub struct WalkAhead {
    pub(super) root: PathBuf,
    pub(super) store_path: PathBuf,
    walking: std::thread::JoinHandle<Result<Walked>>,
}

impl std::fmt::Debug for WalkAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkAhead")
            .field("root", &self.root)
            .field("store_path", &self.store_path)
            .finish_non_exhaustive()
    }
}

impl WalkAhead {
    /// Begins the walk of the whole tree at `root`, leaving out the store file at
    /// `store_path`.
    pub(super) fn begin(root: &Path, store_path: &Path) -> Self {
        let (tree, store) = (root.to_path_buf(), store_path.to_path_buf());
        Self {
            root: root.to_path_buf(),
            store_path: store_path.to_path_buf(),
            walking: std::thread::spawn(move || walk_files(&store, &tree, None)),
        }
    }

    /// What the walk found (waited for).
    pub(super) fn join(self) -> Result<Walked> {
        self.walking
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}
