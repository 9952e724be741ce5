//! The chunk log beside the store file: compaction keeps the state and is seen by
//! stores opened before it, an open finishes a compaction stopped before its rename, and
//! a missing or foreign log is an error naming the file.

use std::path::{Path, PathBuf};

use cfs_ingest::HashEmbedder;
use cfs_store::{ShrinkPolicy, Store, StoreError, SyncOptions};

use crate::support::{settings, write};

/// A store of a tree of 30 files, synced; then a third of the files rewritten and
/// synced again, which leaves their old chunks in the log.
fn churned(tree: &Path, db: &Path) -> (PathBuf, SyncOptions, HashEmbedder) {
    let options = SyncOptions::default();
    let embedder = HashEmbedder::new(16);
    let file = db.join("store.redb");
    let store = Store::create(&file, settings(&options, &embedder)).unwrap();
    for i in 0..30 {
        write(
            tree,
            &format!("f{i}.md"),
            &format!("# F{i}\n\nfirst words {i}\n"),
        );
    }
    store.sync(tree, &options, &embedder, &|_| {}).unwrap();
    for i in (0..30).step_by(3) {
        write(
            tree,
            &format!("f{i}.md"),
            &format!("# F{i}\n\nother words {i}\n"),
        );
    }
    store.sync(tree, &options, &embedder, &|_| {}).unwrap();
    (file, options, embedder)
}

/// Every chunk of the state, read back.
fn texts(store: &Store) -> Vec<String> {
    let read = store.begin_read().unwrap();
    read.chunk_ids()
        .unwrap()
        .iter()
        .map(|id| read.chunk(id).unwrap().unwrap().text)
        .collect()
}

#[test]
fn gc_compacts_the_log_and_a_store_opened_before_reads_the_new_one() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (file, options, embedder) = churned(tree.path(), db.path());
    let log = cfs_store::chunk_log_path(&file);
    let mut store = Store::open(&file).unwrap();
    let other = Store::open_read_only(&file).unwrap();
    let (root, before) = (store.state_root().unwrap(), texts(&other));

    // The removed chunks' bytes are counted as they are removed: exactly what the
    // compaction returns.
    let policy = |min_free_bytes| ShrinkPolicy {
        min_free_bytes,
        min_free_percent: 1,
    };
    assert!(!store.wants_log_compaction(ShrinkPolicy::default()).unwrap());
    let report = store.gc(true).unwrap();
    let freed = report.log_bytes_before - report.log_bytes_after;
    assert!(freed > 0, "{report:?}");
    drop(store);
    let (tree2, db2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (file2, _, _) = churned(tree2.path(), db2.path());
    let twin = Store::open(&file2).unwrap();
    assert!(twin.wants_log_compaction(policy(freed)).unwrap());
    assert!(!twin.wants_log_compaction(policy(freed + 1)).unwrap());
    assert_eq!(
        twin.compact_log().unwrap(),
        Some((report.log_bytes_before, report.log_bytes_after))
    );
    assert!(!twin.wants_log_compaction(policy(1)).unwrap());
    assert_eq!(twin.compact_log().unwrap(), None);
    let mut store = Store::open(&file).unwrap();
    assert_eq!(
        report.log_bytes_after,
        std::fs::metadata(&log).unwrap().len()
    );
    assert!(!Path::new(&format!("{}.new", log.display())).exists());
    assert_eq!(store.state_root().unwrap(), root);
    assert!(store.verify().unwrap().is_ok());
    // The store opened before the compaction reads the new log.
    assert_eq!(texts(&other), before);
    assert!(other.verify().unwrap().is_ok());
    // Nothing left to compact: the log stays as it is.
    let again = store.gc(true).unwrap();
    assert_eq!(again.log_bytes_after, again.log_bytes_before);
    // Writes go on from the compacted log.
    write(tree.path(), "g.md", "# G\n\nnew words\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn an_open_finishes_a_compaction_stopped_before_its_rename() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (file, _, _) = churned(tree.path(), db.path());
    let log = cfs_store::chunk_log_path(&file);
    let old_log = std::fs::read(&log).unwrap();
    let root = {
        let mut store = Store::open(&file).unwrap();
        store.gc(true).unwrap();
        store.state_root().unwrap()
    };
    // The files as a compaction stopped after its commit leaves them: the new log at
    // `<log>.new`, the old one still in place.
    let mut new = log.clone().into_os_string();
    new.push(".new");
    std::fs::rename(&log, &new).unwrap();
    std::fs::write(&log, &old_log).unwrap();

    // A read-only open reads the new log where it is, and moves nothing.
    let reader = Store::open_read_only(&file).unwrap();
    assert!(reader.verify().unwrap().is_ok());
    assert!(Path::new(&new).exists());
    drop(reader);
    // A writable open finishes the rename.
    let store = Store::open(&file).unwrap();
    assert!(!Path::new(&new).exists());
    assert_eq!(store.state_root().unwrap(), root);
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn a_missing_or_foreign_log_is_corrupted_naming_it() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (file, _, _) = churned(tree.path(), db.path());
    let log = cfs_store::chunk_log_path(&file);
    let kept = std::fs::read(&log).unwrap();
    let named = |e: StoreError| {
        let text = e.to_string();
        assert!(matches!(e, StoreError::Corrupted(_)), "{text}");
        assert!(text.contains(&log.display().to_string()), "{text}");
        text
    };

    std::fs::remove_file(&log).unwrap();
    assert!(named(Store::open(&file).unwrap_err()).contains("missing"));
    assert!(named(Store::open_read_only(&file).unwrap_err()).contains("missing"));

    // Another store's log.
    let other = tempfile::tempdir().unwrap();
    let (other_file, _, _) = churned(tree.path(), other.path());
    std::fs::copy(cfs_store::chunk_log_path(&other_file), &log).unwrap();
    assert!(named(Store::open(&file).unwrap_err()).contains("not the chunk log"));

    // The log cut short of what was committed.
    std::fs::write(&log, &kept[..kept.len() - 10]).unwrap();
    assert!(named(Store::open(&file).unwrap_err()).contains("shorter"));

    std::fs::write(&log, &kept).unwrap();
    assert!(Store::open(&file).unwrap().verify().unwrap().is_ok());
}

#[test]
fn a_log_that_cannot_be_made_leaves_no_store_behind() {
    let db = tempfile::tempdir().unwrap();
    let file = db.path().join("store.redb");
    // A folder where the log would go: the log cannot be created.
    std::fs::create_dir(cfs_store::chunk_log_path(&file)).unwrap();
    let (options, embedder) = (SyncOptions::default(), HashEmbedder::new(16));
    let err = Store::create(&file, settings(&options, &embedder)).unwrap_err();
    assert!(err.to_string().contains("store.redb.chunks"), "{err}");
    assert!(!file.exists());
    // Once the way is clear, the store is made.
    std::fs::remove_dir(cfs_store::chunk_log_path(&file)).unwrap();
    assert!(Store::create(&file, settings(&options, &embedder)).is_ok());
}
