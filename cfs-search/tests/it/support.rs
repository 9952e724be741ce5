//! What the search tests share: a small corpus and its store, damage of the index
//! file, and the helpers of every crate's tests (`cfs-testkit`: trees, settings, the
//! clean index a store is held to, the switch for the slow tests).

use std::path::{Path, PathBuf};

use cfs_ingest::HashEmbedder;
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::{Store, SyncOptions};
use serde_json::{Value, json};

pub use cfs_testkit::{clean_root, exhaustive, scaled, settings, skip_slow, write};

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

/// A test-vector file's text: `cases`, each with its `expected` from `compute`, under
/// `comment` and the spec version.
pub fn render_vectors(
    comment: &str,
    cases: Vec<Value>,
    compute: impl Fn(&Value) -> Value,
) -> String {
    let cases: Vec<Value> = cases
        .into_iter()
        .map(|mut c| {
            c["expected"] = compute(&c);
            c
        })
        .collect();
    let file = json!({
        "_comment": comment,
        "spec_version": cfs_core::SPEC_VERSION,
        "cases": cases,
    });
    let mut text = serde_json::to_string_pretty(&file).expect("JSON");
    text.push('\n');
    text
}

/// Checks that `test-vectors/NAME` is `fresh`, rewriting it first under
/// `CFS_REGENERATE_VECTORS`; `regenerate` is the command the failure names.
pub fn check_vectors(name: &str, fresh: &str, regenerate: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-vectors")
        .join(name);
    if std::env::var_os("CFS_REGENERATE_VECTORS").is_some() {
        std::fs::write(&path, fresh).expect("write vectors");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == fresh,
        "test-vectors/{name} is out of date; if intended (and docs/spec.md says so), run:\n  {regenerate}"
    );
}
