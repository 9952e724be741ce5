//! The walk of a sync: the files of the tree in scope, less the store's own file; and a
//! walk begun before its store is open ([`WalkAhead`]), which runs while a new store is
//! created.
//!
//! A cold `cfs index` made the store (its files created, redb's header and first
//! commit written and synced: 1.6-2.0 ms for the TypeScript tree) and only then walked
//! the tree (1.5-1.9 ms on three threads). Walked ahead, the two overlap: the walk
//! needs the store's path only, to leave its file out.

use std::path::{Path, PathBuf};

use cfs_ingest::{Embedder, Scope, WalkEntry, walk_scope};

use super::{Failure, SyncOptions, SyncProgress, SyncReport, Target, error_path};
use crate::error::{Result, StoreError};
use crate::store::Store;

/// What the walk found.
pub(super) struct Walked {
    pub(super) files: Vec<WalkEntry>,
    pub(super) failures: Vec<Failure>,
    /// Folders it could not list and files it could not stat: not gone.
    pub(super) unread: Scope,
}

/// The files of `root` in `scope`, less the store file at `store_path` wherever it lives
/// (only files with its name are resolved, to keep the walk free of per-file path
/// resolution), the walk's failures, and the paths it could not read (a folder that
/// cannot be listed does not mean its files are gone).
pub(super) fn walk_files(store_path: &Path, root: &Path, scope: Option<&Scope>) -> Result<Walked> {
    let walked = walk_scope(root, scope)?;
    let store_file = store_path.canonicalize().ok();
    let store_name = store_path.file_name();
    let files = walked
        .files
        .into_iter()
        .filter(|f| {
            f.abs_path.file_name() != store_name
                || store_file.as_deref() != f.abs_path.canonicalize().ok().as_deref()
        })
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

/// A walk of a whole tree begun on a thread of its own, for a sync of the tree into the
/// store at a given path ([`Store::walk_ahead`], [`Store::sync_walked`]).
pub struct WalkAhead {
    root: PathBuf,
    store_path: PathBuf,
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
    /// What the walk found (waited for).
    pub(super) fn join(self) -> Result<Walked> {
        self.walking
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Store {
    /// Begins walking the whole tree at `root` on a thread of its own, for a sync of it
    /// into the store at `store_path` ([`Store::sync_walked`]), so that the store can be
    /// created meanwhile. The store file must not appear inside the tree during the
    /// walk except in a folder the walk skips (`.cfs`, where `cfs index` keeps it):
    /// before it exists, it cannot be recognised as the store's own.
    pub fn walk_ahead(root: &Path, store_path: &Path) -> WalkAhead {
        let (root, store_path) = (root.to_path_buf(), store_path.to_path_buf());
        let (tree, store) = (root.clone(), store_path.clone());
        WalkAhead {
            root,
            store_path,
            walking: std::thread::spawn(move || walk_files(&store, &tree, None)),
        }
    }

    /// [`Store::sync`] of the tree `walk` was begun on, with its walk: the tree as the
    /// walk found it (a file added or removed since is the next sync's). A walk begun
    /// for another store is an `InvalidInput` error.
    pub fn sync_walked(
        &self,
        walk: WalkAhead,
        options: &SyncOptions,
        embedder: &dyn Embedder,
        progress: &(dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<SyncReport> {
        if walk.store_path != self.path() {
            return Err(StoreError::InvalidInput(format!(
                "a walk begun for the store {} given to the store {}",
                walk.store_path.display(),
                self.path().display()
            )));
        }
        let root = walk.root.clone();
        let target = Target {
            root: &root,
            scope: None,
            ahead: Some(walk),
        };
        crate::error::guard(self.path(), || {
            self.sync_scope(target, options, embedder, progress)
        })
    }
}
