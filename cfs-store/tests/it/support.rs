//! What the store's tests share: stores and trees to test with, the clean index they
//! are held to, and the switch for the slow tests (`CFS_SLOW_TESTS=1`, which CI sets:
//! tests that sleep, replay history or damage every byte run in full only then).

use std::path::Path;

use cfs_ingest::{Embedder, HashEmbedder, index_tree};
use cfs_store::{Settings, SyncOptions};

/// Whether the slow tests run in full (`CFS_SLOW_TESTS` is set).
pub fn slow() -> bool {
    std::env::var_os("CFS_SLOW_TESTS").is_some()
}

/// `full` when the slow tests run, else `quick`: how much of a long test to run.
pub fn scaled(quick: usize, full: usize) -> usize {
    if slow() { full } else { quick }
}

/// Whether the longest forms run too (`CFS_SLOW_TESTS=full`: the whole history
/// replayed, 300 model cases; longer than CI's budget, for a machine left to it).
pub fn exhaustive() -> bool {
    std::env::var_os("CFS_SLOW_TESTS").is_some_and(|v| v == "full")
}

pub fn settings(options: &SyncOptions, embedder: &HashEmbedder) -> Settings {
    Settings {
        chunk: options.config.chunk,
        model_id: embedder.model_id().into(),
    }
}

pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The state root of a clean in-memory index of `root`.
pub fn clean_root(
    root: &Path,
    options: &SyncOptions,
    embedder: &HashEmbedder,
) -> cfs_core::StateRoot {
    index_tree(root, &options.config, &options.registry, embedder, &|_| {})
        .unwrap()
        .state
        .state_root()
}
