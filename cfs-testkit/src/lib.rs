//! What the tests of cfs-store, cfs-search, cfs-remote and cfs-cli share (a
//! dev-dependency only): files written into a tree, a store's settings for a sync, the
//! state root of a clean in-memory index that a store is held to, and the switch for
//! the slow tests (`CFS_SLOW_TESTS=1`, which CI sets: tests that sleep, replay history,
//! kill processes or damage every byte run in full only then).

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

/// True (and says so on stderr) when a test that only waits on the clock should not
/// run: `if skip_slow("name") { return; }`.
pub fn skip_slow(test: &str) -> bool {
    let skip = !slow();
    if skip {
        eprintln!("{test}: skipped (it waits on the clock); CFS_SLOW_TESTS=1 runs it");
    }
    skip
}

/// The settings of a store that `options` and `embedder` sync into.
pub fn settings(options: &SyncOptions, embedder: &HashEmbedder) -> Settings {
    Settings {
        chunk: options.config.chunk,
        model_id: embedder.model_id().into(),
    }
}

/// Writes `text` at `rel` under `root`, making its folders.
pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("folders");
    std::fs::write(path, text).expect("a written file");
}

/// Writes the replication tests' sample tree under `root`: 40 Rust files `src/mI.rs`
/// of one to five small functions each, and 40 notes `docs/nI.md`.
pub fn write_sample_tree(root: &Path) {
    for i in 0..40 {
        let body =
            format!("pub fn f{i}(x: u32) -> u32 {{\n    x * {i} + 1\n}}\n").repeat(1 + i % 5);
        write(root, &format!("src/m{i}.rs"), &body);
        write(
            root,
            &format!("docs/n{i}.md"),
            &format!("# Note {i}\n\nWords about {i}.\n"),
        );
    }
}

/// The state root of a clean in-memory index of `root`.
pub fn clean_root(
    root: &Path,
    options: &SyncOptions,
    embedder: &HashEmbedder,
) -> cfs_core::StateRoot {
    index_tree(root, &options.config, &options.registry, embedder, &|_| {})
        .expect("a clean index")
        .state
        .state_root()
}
