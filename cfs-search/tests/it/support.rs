//! What the search tests share: stores and trees to test with, the clean index they
//! are held to, damage of the index file, and the switch for the slow tests (`CFS_SLOW_TESTS=1`, which CI sets:
//! tests that sleep, replay history or damage every byte run in full only then).

use std::path::Path;

use cfs_ingest::{Embedder, HashEmbedder, index_tree};
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::{Settings, Store, SyncOptions};

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

/// True (and says so on stderr) when a test that only sleeps or waits should not run:
/// `if skip_slow("name") { return; }`.
pub fn skip_slow(test: &str) -> bool {
    let skip = !slow();
    if skip {
        eprintln!("{test}: skipped (it waits on the clock); CFS_SLOW_TESTS=1 runs it");
    }
    skip
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

pub fn corpus(root: &Path) {
    write(
        root,
        "src/parser.rs",
        "/// Parses a configuration file into settings.\npub fn parse_config(text: &str) -> Config {\n    Config::default()\n}\n\n/// Opens a network socket.\npub fn open_socket(port: u16) -> Socket {\n    Socket::bind(port)\n}\n",
    );
    write(
        root,
        "src/http.py",
        "def fetch_url(url):\n    \"\"\"Download the page at url with an HTTP GET request.\"\"\"\n    return requests.get(url)\n\n\nclass HttpClient:\n    def post(self, body):\n        return body\n",
    );
    write(
        root,
        "docs/guide.md",
        "# Guide\n\nThis guide explains how to install the tool.\n\n## Configuration\n\nEdit the configuration file and restart the daemon.\n",
    );
    write(
        root,
        "notes.txt",
        "Remember to buy milk and eggs.\n\nThe zk-snark proof system is C++ heavy.\n",
    );
}

pub fn setup(root: &Path, db: &Path) -> (Store, HashEmbedder, SyncOptions) {
    let options = SyncOptions::default();
    let embedder = HashEmbedder::default();
    let store = Store::create(&db.join("store.redb"), settings(&options, &embedder)).unwrap();
    store.sync(root, &options, &embedder, &|_| {}).unwrap();
    (store, embedder, options)
}

/// Flips a bit of about 300 bytes (40 without `CFS_SLOW_TESTS`) of `damaged` (the index file at `cache` or its
/// delta), one at a time, and opens the index each time: a status that `refused`
/// accepts counts as refused; otherwise searching must never panic and must answer as
/// a fresh index does unless `verify_index_file` finds the damage. Returns (refused,
/// found by verify).
pub fn flip_each_byte(
    store: &Store,
    embedder: &HashEmbedder,
    cache: &Path,
    damaged: &Path,
    refused: impl Fn(&cfs_search::IndexFileStatus) -> bool,
) -> (usize, usize) {
    let good = std::fs::read(damaged).unwrap();
    let fresh = SearchIndex::open(store, embedder, IndexOptions::exact()).unwrap();
    let queries: Vec<Query> = ["parse config", "walrus", "http client daemon", "manual"]
        .into_iter()
        .flat_map(|q| [Mode::Text, Mode::Vector, Mode::Hybrid].map(|m| Query::new(q).mode(m)))
        .collect();
    let (mut n_refused, mut found_by_verify) = (0, 0);
    // About 300 places with CFS_SLOW_TESTS, 40 otherwise.
    let places = scaled(40, 300);
    for at in (0..good.len()).step_by(good.len() / places + 1) {
        for bit in [0, 7] {
            let mut bytes = good.clone();
            bytes[at] ^= 1 << bit;
            std::fs::write(damaged, &bytes).unwrap();
            let (index, status) =
                SearchIndex::open_from_file(store, embedder, IndexOptions::exact(), cache).unwrap();
            let answers: Vec<_> = queries
                .iter()
                .map(|q| index.search(q, embedder).ok())
                .collect();
            if refused(&status) {
                n_refused += 1;
                continue;
            }
            let same = queries
                .iter()
                .zip(&answers)
                .all(|(q, a)| a.as_ref() == fresh.search(q, embedder).ok().as_ref());
            let verified = cfs_search::verify_index_file(cache);
            // Padding between sections is covered by no hash and changes nothing.
            assert!(verified.is_err() || same, "byte {at} bit {bit}: {status:?}");
            found_by_verify += usize::from(verified.is_err());
        }
    }
    std::fs::write(damaged, &good).unwrap();
    (n_refused, found_by_verify)
}
