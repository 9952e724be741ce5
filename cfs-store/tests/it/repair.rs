//! Salvaging vectors from a store file, damaged or not.

use cfs_ingest::{Embedder, HashEmbedder};
use cfs_store::{Store, SyncOptions, salvage_vectors};

use crate::support::{settings, write};

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

/// Flips 8 bits of `bytes`, chosen by `seed`.
fn flip(bytes: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x % bytes.len() as u64) as usize;
        bytes[at] ^= 1 << (x % 8);
    }
}

#[test]
fn damaged_bytes_are_errors_never_panics() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    for i in 0..40 {
        write(
            tree.path(),
            &format!("src/m{i}.rs"),
            &format!("/// Item {i}.\npub fn item_{i}(x: u32) -> u32 {{ x + {i} }}\n"),
        );
    }
    let options = SyncOptions::default();
    let embedder = HashEmbedder::new(32);
    let file = db.path().join("store.redb");
    let store = Store::create(&file, settings(&options, &embedder)).unwrap();
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    drop(store);
    let pristine = std::fs::read(&file).unwrap();
    let (mut errors, mut damaged_bytes) = (0, 0);
    // The default hook would print every panic the guard catches.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for seed in 0..150 {
        let mut bytes = pristine.clone();
        flip(&mut bytes, seed);
        let copy = db.path().join("copy.redb");
        std::fs::write(&copy, &bytes).unwrap();
        let Ok(mut store) = Store::open(&copy) else {
            errors += 1;
            continue;
        };
        let results = [
            store.verify().map(|r| r.is_ok()),
            store
                .sync(tree.path(), &options, &embedder, &|_| {})
                .map(|_| true),
            store.gc(false).map(|_| true),
        ];
        for r in results {
            if let Err(e) = r {
                errors += 1;
                damaged_bytes += e.to_string().contains("damaged bytes") as usize;
            }
        }
    }
    std::panic::set_hook(hook);
    assert!(errors > 0, "no flip was noticed");
    eprintln!("{errors} errors, {damaged_bytes} of them panics the store turned into errors");
}
