//! Salvaging vectors from a store file, damaged or not.

use cfs_ingest::{Embedder, HashEmbedder};
use cfs_store::{Store, SyncOptions, salvage_vectors};

use crate::store::{settings, write};

#[test]
fn salvaged_vectors_make_a_rebuild_embed_nothing() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    write(tree.path(), "a.md", "# A\n\nalpha text\n");
    write(tree.path(), "src/lib.rs", "/// Doc.\npub fn f() {}\n");
    let options = SyncOptions::default();
    let embedder = HashEmbedder::new(32);
    let old = db.path().join("old.redb");
    let store = Store::create(&old, settings(&options, &embedder)).unwrap();
    let first = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    drop(store);

    let salvage = salvage_vectors(&old);
    assert_eq!(salvage.stopped, None);
    assert_eq!(salvage.rejected, 0);
    assert_eq!(salvage.vectors.len(), first.embedded);
    assert!(
        salvage
            .vectors
            .iter()
            .all(|v| v.model == embedder.model_hash())
    );

    let fresh = Store::create(&db.path().join("new.redb"), settings(&options, &embedder)).unwrap();
    fresh.cache_salvaged(&salvage.vectors).unwrap();
    let rebuilt = fresh
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(rebuilt.root, first.root);
    assert_eq!(rebuilt.embedded, 0, "every vector came from the salvage");

    // A file that is not a store gives nothing, and says why; it is not an error.
    let junk = db.path().join("junk.redb");
    std::fs::write(&junk, vec![7u8; 8192]).unwrap();
    let salvage = salvage_vectors(&junk);
    assert!(salvage.vectors.is_empty());
    assert!(salvage.stopped.is_some());
}
