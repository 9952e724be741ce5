//! The delta file beside an index file: written by a snapshot opened from the index
//! file, laid over it by the next opening, ignored when damaged or of another base.

use std::path::Path;

use cfs_ingest::HashEmbedder;
use cfs_search::{
    IndexFileStatus, IndexOptions, Mode, Query, SavedAs, SearchIndex, verify_index_file,
};
use cfs_store::{Store, SyncOptions};

use crate::support::write;
use crate::support::{corpus, setup};

const QUERIES: [&str; 5] = [
    "parse config",
    "daemon configuration",
    "walrus",
    "http client",
    "manual install",
];

/// The index answers every query in every mode as an index built from the store does.
fn same_as_fresh(store: &Store, embedder: &HashEmbedder, index: &SearchIndex) {
    let fresh = SearchIndex::open(store, embedder, IndexOptions::exact()).unwrap();
    assert_eq!(index.snapshot().state_root(), fresh.snapshot().state_root());
    assert_eq!(index.snapshot().chunk_ids(), fresh.snapshot().chunk_ids());
    assert_eq!(
        index.snapshot().n_documents(),
        fresh.snapshot().n_documents()
    );
    for q in QUERIES {
        for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
            let q = Query::new(q).mode(mode).k(20);
            assert_eq!(
                index.search(&q, embedder).unwrap(),
                fresh.search(&q, embedder).unwrap(),
                "{q:?}"
            );
        }
    }
    for path in [
        "docs/manual.md",
        "src/extra.rs",
        "notes.txt",
        "src/parser.rs",
    ] {
        let a = index.snapshot().chunks_at_path(path);
        let b = fresh.snapshot().chunks_at_path(path);
        assert_eq!(
            a.iter().map(|c| c.id).collect::<Vec<_>>(),
            b.iter().map(|c| c.id).collect::<Vec<_>>()
        );
    }
}

fn open(store: &Store, embedder: &HashEmbedder, cache: &Path) -> (SearchIndex, IndexFileStatus) {
    SearchIndex::open_from_file(store, embedder, IndexOptions::exact(), cache).unwrap()
}

/// A store's first search: its index file opened, or written from the store.
fn open_or_build(
    store: &Store,
    embedder: &HashEmbedder,
    cache: &Path,
) -> (SearchIndex, IndexFileStatus) {
    SearchIndex::open_or_build_file(store, embedder, IndexOptions::exact(), cache).unwrap()
}

/// A file added, one changed, one removed, one renamed (its chunks re-pathed).
fn change(tree: &Path, store: &Store, embedder: &HashEmbedder, options: &SyncOptions) {
    write(tree, "notes.txt", "Remember the walrus.\n\nAnd the milk.\n");
    write(
        tree,
        "src/extra.rs",
        "/// Parses the manual's configuration.\npub fn extra() {}\n",
    );
    std::fs::remove_file(tree.join("src/http.py")).unwrap();
    std::fs::rename(tree.join("docs/guide.md"), tree.join("docs/manual.md")).unwrap();
    store.sync(tree, options, embedder, &|_| {}).unwrap();
}

/// A store of the corpus, and the places of its index and delta files.
struct Fixture {
    tree: tempfile::TempDir,
    _db: tempfile::TempDir,
    store: Store,
    embedder: HashEmbedder,
    options: SyncOptions,
    cache: std::path::PathBuf,
    delta: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, options) = setup(tree.path(), db.path());
    Fixture {
        cache: db.path().join("index.cache"),
        delta: db.path().join("index.delta"),
        tree,
        _db: db,
        store,
        embedder,
        options,
    }
}

/// The fixture with its index file, the change, and the delta file over it.
fn with_delta() -> Fixture {
    let f = fixture();
    let (store, embedder, cache) = (&f.store, &f.embedder, &f.cache);
    open(store, embedder, cache)
        .0
        .save_index_file(cache)
        .unwrap();
    change(f.tree.path(), store, embedder, &f.options);
    let saved = open(store, embedder, cache)
        .0
        .save_index_file(cache)
        .unwrap();
    assert!(matches!(saved, SavedAs::Delta { .. }), "{saved:?}");
    f
}

#[test]
fn a_delta_file_carries_every_change_over_its_base() {
    let Fixture {
        tree,
        _db,
        store,
        embedder,
        options,
        cache,
        delta,
    } = fixture();
    let (index, status) = open(&store, &embedder, &cache);
    assert_eq!(status, IndexFileStatus::Missing);
    assert_eq!(index.save_index_file(&cache).unwrap(), SavedAs::Whole);
    let base = std::fs::read(&cache).unwrap();

    // The change is brought forward, then written as a delta; the base is untouched.
    change(tree.path(), &store, &embedder, &options);
    let (index, status) = open(&store, &embedder, &cache);
    assert!(
        matches!(status, IndexFileStatus::CaughtUp { changed, delta: 0, merged: false } if changed >= 4),
        "{status:?}"
    );
    assert!(status.worth_saving());
    let saved = index.save_index_file(&cache).unwrap();
    assert!(
        matches!(saved, SavedAs::Delta { chunks, dead } if chunks >= 3 && dead >= 3),
        "{saved:?}"
    );
    assert_eq!(std::fs::read(&cache).unwrap(), base);
    let delta_len = std::fs::metadata(&delta).unwrap().len() as usize;
    assert_eq!(verify_index_file(&cache), Ok(base.len() + delta_len));

    // The next opening maps both and needs nothing from the store.
    let (index, status) = open(&store, &embedder, &cache);
    assert_eq!(status, IndexFileStatus::Current);
    assert!(!status.worth_saving());
    assert_eq!(index.snapshot().n_segments(), 2);
    same_as_fresh(&store, &embedder, &index);

    // A further change over base and delta: the delta is rewritten over the same base.
    write(tree.path(), "src/extra.rs", "pub fn extra_two() {}\n");
    write(tree.path(), "docs/more.md", "# More\n\nAbout the walrus.\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let (index, status) = open(&store, &embedder, &cache);
    assert!(
        matches!(status, IndexFileStatus::CaughtUp { delta, .. } if delta > 0),
        "{status:?}"
    );
    same_as_fresh(&store, &embedder, &index);
    assert!(matches!(
        index.save_index_file(&cache).unwrap(),
        SavedAs::Delta { .. }
    ));
    assert_eq!(std::fs::read(&cache).unwrap(), base);
    let (index, status) = open(&store, &embedder, &cache);
    assert_eq!(status, IndexFileStatus::Current);
    same_as_fresh(&store, &embedder, &index);

    // A whole file replaces both.
    let fresh = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    assert_eq!(fresh.save_index_file(&cache).unwrap(), SavedAs::Whole);
    assert!(!delta.exists());
    let (index, status) = open(&store, &embedder, &cache);
    assert_eq!(status, IndexFileStatus::Current);
    assert_eq!(index.snapshot().n_segments(), 1);
}

#[test]
fn a_damaged_or_foreign_delta_file_is_ignored_never_trusted() {
    let Fixture {
        tree: _tree,
        _db,
        store,
        embedder,
        cache,
        delta,
        ..
    } = with_delta();
    let good = std::fs::read(&delta).unwrap();
    let base = std::fs::read(&cache).unwrap();

    // Torn, altered or not a delta: the base is brought forward by the diff instead.
    let mut flipped = good.clone();
    flipped[100] ^= 1;
    for (bytes, why) in [
        (&good[..good.len() / 2], "torn"),
        (&flipped[..], "header"),
        (&b"garbage"[..], "not an index file"),
    ] {
        std::fs::write(&delta, bytes).unwrap();
        let (index, status) = open(&store, &embedder, &cache);
        assert!(
            matches!(status, IndexFileStatus::CaughtUp { delta: 0, .. }),
            "{status:?}"
        );
        same_as_fresh(&store, &embedder, &index);
        let verified = verify_index_file(&cache).unwrap_err();
        assert!(
            verified.contains("index.delta") && verified.contains(why),
            "{verified}"
        );
        // Saving replaces it with a sound one.
        assert!(matches!(
            index.save_index_file(&cache).unwrap(),
            SavedAs::Delta { .. }
        ));
        assert_eq!(std::fs::read(&delta).unwrap(), good);
    }

    // A delta of another base (the index file was rewritten since) is not used, and
    // `verify` does not count it.
    SearchIndex::open(&store, &embedder, IndexOptions::exact())
        .unwrap()
        .save_index_file(&cache)
        .unwrap();
    let whole = std::fs::read(&cache).unwrap();
    std::fs::write(&delta, &good).unwrap();
    let (index, status) = open(&store, &embedder, &cache);
    assert_eq!(status, IndexFileStatus::Current);
    assert_eq!(index.snapshot().n_segments(), 1);
    same_as_fresh(&store, &embedder, &index);
    assert_eq!(verify_index_file(&cache), Ok(whole.len()));

    // The old base with its delta again; then the delta in the index file's place.
    std::fs::write(&cache, &base).unwrap();
    assert_eq!(open(&store, &embedder, &cache).1, IndexFileStatus::Current);
    std::fs::write(&cache, &good).unwrap();
    let (index, status) = open(&store, &embedder, &cache);
    assert!(
        matches!(&status, IndexFileStatus::Rebuilt(r) if r.contains("delta file")),
        "{status:?}"
    );
    same_as_fresh(&store, &embedder, &index);
}

/// A byte flipped anywhere in a delta file: opening never panics and never answers
/// wrongly unless `verify_index_file` names the damage.
#[test]
fn a_flipped_byte_in_a_delta_file_is_ignored_or_found_by_verify() {
    let f = with_delta();
    let (ignored, found_by_verify) =
        crate::support::flip_each_byte(&f.store, &f.embedder, &f.cache, &f.delta, |s| {
            *s != IndexFileStatus::Current
        });
    assert!(
        ignored > 0 && found_by_verify > 0,
        "{ignored} {found_by_verify}"
    );
}

/// Embeddings committed after their text: the chunks that gained a vector are in the
/// delta with their documents, which did not move.
#[test]
fn a_delta_carries_embeddings_that_arrived_after_the_text() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let embedder = HashEmbedder::default();
    let options = SyncOptions {
        defer_embeddings: true,
        ..SyncOptions::default()
    };
    let store = Store::create(
        &db.path().join("store.redb"),
        crate::support::settings(&options, &embedder),
    )
    .unwrap();
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let cache = db.path().join("index.cache");
    open(&store, &embedder, &cache)
        .0
        .save_index_file(&cache)
        .unwrap();
    store
        .embed_pending(&embedder, &cfs_store::EmbedOptions::default(), &|_| {})
        .unwrap();
    let (index, status) = open(&store, &embedder, &cache);
    assert!(
        matches!(status, IndexFileStatus::CaughtUp { changed, .. } if changed >= 4),
        "{status:?}"
    );
    let saved = index.save_index_file(&cache).unwrap();
    assert!(
        matches!(saved, SavedAs::Delta { chunks, dead } if chunks == dead && chunks >= 4),
        "{saved:?}"
    );
    let (index, status) = open(&store, &embedder, &cache);
    assert_eq!(status, IndexFileStatus::Current);
    same_as_fresh(&store, &embedder, &index);
}

/// Back at the index file's own state (a branch switched there and back): the delta
/// goes and the index file alone is opened.
#[test]
fn a_state_equal_to_the_index_file_removes_the_delta() {
    let f = with_delta();
    let (store, embedder, cache) = (&f.store, &f.embedder, &f.cache);
    // The corpus's files back as they were, the change's new ones gone.
    let tree = f.tree.path();
    corpus(tree);
    std::fs::remove_file(tree.join("src/extra.rs")).unwrap();
    std::fs::remove_file(tree.join("docs/manual.md")).unwrap();
    store.sync(tree, &f.options, embedder, &|_| {}).unwrap();
    let (index, status) = open(store, embedder, cache);
    assert!(
        matches!(status, IndexFileStatus::CaughtUp { .. }),
        "{status:?}"
    );
    assert_eq!(
        index.save_index_file(cache).unwrap(),
        SavedAs::IndexFileAlone
    );
    assert!(!f.delta.exists());
    let (index, status) = open(store, embedder, cache);
    assert_eq!(status, IndexFileStatus::Current);
    assert_eq!(index.snapshot().n_segments(), 1);
}

/// A store's first search: the index file written from the store and opened in place;
/// a damaged one written again; one that cannot be written leaves the index in memory.
#[test]
fn a_missing_or_damaged_index_file_is_written_from_the_store() {
    let f = fixture();
    let (store, embedder, cache) = (&f.store, &f.embedder, &f.cache);
    let build = |cache: &Path| open_or_build(store, embedder, cache);
    let (index, status) = build(cache);
    assert_eq!(status, IndexFileStatus::Written { reason: None });
    assert!(!status.worth_saving());
    assert!(index.snapshot().n_segments() == 1 && cache.is_file());
    same_as_fresh(store, embedder, &index);
    assert_eq!(build(cache).1, IndexFileStatus::Current);
    let good = std::fs::read(cache).unwrap();
    std::fs::write(cache, &good[..good.len() / 2]).unwrap();
    let (index, status) = build(cache);
    assert!(
        matches!(&status, IndexFileStatus::Written { reason: Some(r) } if r.contains("torn")),
        "{status:?}"
    );
    same_as_fresh(store, embedder, &index);
    assert_eq!(std::fs::read(cache).unwrap(), good);
    // A folder in the file's place: nothing can be written there.
    let folder = f.tree.path().join("in-the-way.cache");
    std::fs::create_dir(&folder).unwrap();
    let (index, status) = build(&folder);
    assert!(matches!(status, IndexFileStatus::Rebuilt(_)), "{status:?}");
    assert!(status.worth_saving());
    same_as_fresh(store, embedder, &index);
}

/// An index file whose header names other rules for its documents' roles (bytes 12-15,
/// `SEARCH_ROWS_VERSION`) is refused and written again, as one of another format is:
/// its records hold roles that this build would derive otherwise.
#[test]
fn an_index_file_of_other_role_rules_is_written_again() {
    let f = fixture();
    let (store, embedder, cache) = (&f.store, &f.embedder, &f.cache);
    let build = |cache: &Path| open_or_build(store, embedder, cache);
    build(cache);
    let good = std::fs::read(cache).unwrap();
    let rules = u32::from_le_bytes(good[12..16].try_into().unwrap());
    assert_eq!(i64::from(rules), i64::from(cfs_search::SEARCH_ROWS_VERSION));
    let mut older = good.clone();
    older[12..16].copy_from_slice(&(rules - 1).to_le_bytes());
    std::fs::write(cache, &older).unwrap();
    let (index, status) = build(cache);
    let said = format!(
        "roles derived by rules {}, this build derives by {rules}",
        rules - 1
    );
    assert!(
        matches!(&status, IndexFileStatus::Written { reason: Some(r) } if r.contains(&said)),
        "{status:?}"
    );
    same_as_fresh(store, embedder, &index);
    assert_eq!(std::fs::read(cache).unwrap(), good);
}

/// Past a quarter of the index file changed, a save writes a whole file, its segments
/// (the mapped base with its tombstones and the change beside it, never merged in
/// memory) merged as it is written: the bytes of one written from a fresh index.
#[test]
fn past_a_quarter_changed_a_whole_file_is_written() {
    let f = with_delta();
    let (store, embedder, cache) = (&f.store, &f.embedder, &f.cache);
    for n in 0..12 {
        write(
            f.tree.path(),
            &format!("more/m{n}.md"),
            &format!("# More {n}\n\nThe walrus number {n}.\n"),
        );
    }
    store
        .sync(f.tree.path(), &f.options, embedder, &|_| {})
        .unwrap();
    // (A small threshold: the default waits for 4,096 chunks.)
    let merging = IndexOptions {
        merge_min_chunks: 2,
        ..IndexOptions::exact()
    };
    let (index, status) = SearchIndex::open_from_file(store, embedder, merging, cache).unwrap();
    assert!(
        matches!(status, IndexFileStatus::CaughtUp { merged: false, .. }),
        "{status:?}"
    );
    assert!(status.worth_saving());
    // The mapped base kept, the delta's segment and the change merged beside it.
    assert_eq!(index.snapshot().n_segments(), 2);
    assert_eq!(index.save_index_file(cache).unwrap(), SavedAs::Whole);
    assert!(!f.delta.exists());
    let from_memory = f.tree.path().join("from-memory.cache");
    SearchIndex::open(store, embedder, IndexOptions::exact())
        .unwrap()
        .save_index_file(&from_memory)
        .unwrap();
    assert_eq!(
        std::fs::read(cache).unwrap(),
        std::fs::read(&from_memory).unwrap()
    );
    let (index, status) = open(store, embedder, cache);
    assert_eq!(status, IndexFileStatus::Current);
    assert_eq!(index.snapshot().n_segments(), 1);
    same_as_fresh(store, embedder, &index);
}
