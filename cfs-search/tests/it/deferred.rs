//! Text first, vectors after: a sync that defers embeddings commits chunks that text
//! search finds at once; `embed_pending` adds the embeddings in commits of its own, can
//! stop and resume, and ends at the root of a sync that embedded inline.

use std::sync::atomic::Ordering;

use cfs_ingest::{Embedder, HashEmbedder};
use cfs_search::{IndexOptions, Mode, Query, Ranking, SearchIndex};
use cfs_store::{EmbedOptions, EmbedProgress, Store, SyncOptions};

use crate::support::{clean_root, settings, write};

fn tree(root: &std::path::Path) {
    write(
        root,
        "a.md",
        "# Alpha\n\nalpha text about parsing\n\n## Beta\n\nbeta words\n",
    );
    write(
        root,
        "copy.md",
        "# Alpha\n\nalpha text about parsing\n\n## Beta\n\nbeta words\n",
    );
    write(
        root,
        "b.md",
        "# Alpha\n\nalpha text about parsing\n\n## Gamma\n\nother words\n",
    );
    write(
        root,
        "src/lib.rs",
        "/// Parses a config.\npub fn parse_config() {}\n\npub struct Cfg;\n",
    );
    write(
        root,
        "notes.txt",
        "zebra quantum lattice\n\nsecond paragraph here\n",
    );
}

/// A temporary folder with the tree under `tree/` and a new store beside it, syncing
/// with `defer` embeddings.
fn setup(
    defer: bool,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Store,
    SyncOptions,
    HashEmbedder,
) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    tree(&root);
    let embedder = HashEmbedder::new(32);
    let options = SyncOptions {
        defer_embeddings: defer,
        ..SyncOptions::default()
    };
    let store = Store::create(&dir.path().join("s.redb"), settings(&options, &embedder)).unwrap();
    (dir, root, store, options, embedder)
}

#[test]
fn deferred_vectors_reach_the_inline_root_through_stops_and_resumes() {
    let (_dir, root, store, options, embedder) = setup(true);
    let clean = clean_root(&root, &options, &embedder);

    // Text first: every chunk committed, none embedded, and the state is sound.
    let report = store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    let status = store.embed_status().unwrap();
    assert!(status.chunks > 4 && status.embedded == 0, "{status:?}");
    assert_eq!(report.deferred as u64, status.chunks);
    assert_eq!(report.embedded, 0);
    assert_ne!(report.root, clean);
    assert!(
        store.verify().unwrap().is_ok(),
        "{:?}",
        store.verify().unwrap().problems
    );
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let hits = index
        .search(&Query::new("zebra").mode(Mode::Text), &embedder)
        .unwrap();
    assert_eq!(hits[0].path, "notes.txt");
    // The vector list as it is (no file priors: notes.txt is prose).
    let vector = |index: &SearchIndex| {
        let q = Query::new("zebra quantum").mode(Mode::Vector).k(50);
        index
            .search(&q.ranking(Ranking::plain()), &embedder)
            .unwrap()
    };
    assert!(
        vector(&index).is_empty(),
        "no vector is a result before it exists"
    );

    // Two batches of one text each, then a stop.
    let stop_options = EmbedOptions {
        batch_texts: 1,
        ..EmbedOptions::default()
    };
    let stop = std::sync::Arc::clone(&stop_options.stop);
    let commits = std::sync::atomic::AtomicUsize::new(0);
    let first = store
        .embed_pending(&embedder, &stop_options, &|p| {
            if let EmbedProgress::Committed { .. } = p
                && commits.fetch_add(1, Ordering::SeqCst) == 1
            {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
    assert_eq!(first.commits, 2);
    assert!(first.chunks >= 2 && first.still_pending > 0, "{first:?}");
    assert!(store.verify().unwrap().is_ok());
    let refreshed = index.refresh(&store).unwrap();
    assert!(matches!(refreshed.diff, Some(d) if d.embedded == first.chunks));
    assert_eq!(index.snapshot().n_chunks() as u64, status.chunks);

    // Resume: the rest, and the root of the inline sync.
    let rest = store
        .embed_pending(&embedder, &EmbedOptions::default(), &|_| {})
        .unwrap();
    assert_eq!(rest.still_pending, 0);
    assert_eq!(first.chunks + rest.chunks, status.chunks as usize);
    assert_eq!(rest.root, clean);
    assert_eq!(store.embed_status().unwrap().embedded, status.chunks);
    assert!(store.verify().unwrap().is_ok());
    index.refresh(&store).unwrap();
    assert_eq!(vector(&index)[0].path, "notes.txt");
    let fresh = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
        let q = Query::new("alpha parsing config").mode(mode).k(20);
        let ids = |i: &SearchIndex| -> Vec<_> {
            i.search(&q, &embedder)
                .unwrap()
                .into_iter()
                .map(|h| (h.chunk_id, h.score))
                .collect()
        };
        assert_eq!(
            ids(&index),
            ids(&fresh),
            "{mode:?}: refreshed index equals a fresh one"
        );
    }

    // Nothing left: no commit.
    let none = store
        .embed_pending(&embedder, &EmbedOptions::default(), &|_| {})
        .unwrap();
    assert_eq!((none.commits, none.chunks), (0, 0));
}

#[test]
fn cached_texts_are_never_embedded_again() {
    let (_dir, root, store, options, embedder) = setup(true);
    store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    let all = store
        .embed_pending(&embedder, &EmbedOptions::default(), &|_| {})
        .unwrap();
    assert!(
        all.texts_embedded > 0 && all.texts_embedded < all.chunks,
        "a.md and b.md share a section: {all:?}"
    );

    // A removed file that comes back finds its vectors in the cache: nothing deferred.
    let text = std::fs::read_to_string(root.join("notes.txt")).unwrap();
    std::fs::remove_file(root.join("notes.txt")).unwrap();
    store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    write(&root, "moved/notes.txt", &text);
    let back = store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    assert_eq!(back.deferred, 0);
    assert_eq!(back.root, clean_root(&root, &options, &embedder));

    // A new text is deferred, then embedded alone.
    write(&root, "new.txt", "an entirely new paragraph\n");
    let new = store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    assert_eq!(new.deferred, 1);
    let one = store
        .embed_pending(&embedder, &EmbedOptions::default(), &|_| {})
        .unwrap();
    assert_eq!((one.chunks, one.texts_embedded, one.commits), (1, 1, 1));
    assert_eq!(one.root, clean_root(&root, &options, &embedder));
}

#[test]
fn another_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let embedder = HashEmbedder::new(32);
    let options = SyncOptions::default();
    let store = Store::create(&dir.path().join("s.redb"), settings(&options, &embedder)).unwrap();
    let other = HashEmbedder::new(16);
    assert_ne!(other.model_id(), embedder.model_id());
    let err = store.embed_pending(&other, &EmbedOptions::default(), &|_| {});
    assert!(matches!(
        err,
        Err(cfs_store::StoreError::ConfigMismatch { .. })
    ));
}

/// The hash embedder, failing from its `fail_from`-th batch on.
struct Failing {
    inner: HashEmbedder,
    calls: std::sync::atomic::AtomicUsize,
    fail_from: usize,
}

impl Embedder for Failing {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, cfs_ingest::EmbedError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 >= self.fail_from {
            return Err(cfs_ingest::EmbedError::Model {
                model: self.model_id().to_owned(),
                reason: "failed on purpose".into(),
            });
        }
        self.inner.embed_batch(texts)
    }
}

/// While one batch commits the next runs through the model: a model failing on the
/// third batch leaves the first two committed (the second was computed before the
/// failure), returns the error, and a later run embeds the rest to the inline root.
#[test]
fn a_failing_model_leaves_whole_batches_and_a_resume_finishes() {
    let (_dir, root, store, options, embedder) = setup(true);
    let clean = clean_root(&root, &options, &embedder);
    store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    let one_text = EmbedOptions {
        batch_texts: 1,
        ..EmbedOptions::default()
    };
    let failing = Failing {
        inner: HashEmbedder::new(32),
        calls: std::sync::atomic::AtomicUsize::new(0),
        fail_from: 3,
    };
    let commits = std::sync::atomic::AtomicUsize::new(0);
    let err = store.embed_pending(&failing, &one_text, &|p| {
        if let EmbedProgress::Committed { .. } = p {
            commits.fetch_add(1, Ordering::SeqCst);
        }
    });
    assert!(
        matches!(err, Err(cfs_store::StoreError::Embedder(_))),
        "{err:?}"
    );
    assert_eq!(commits.load(Ordering::SeqCst), 2);
    let status = store.embed_status().unwrap();
    assert!(
        status.embedded >= 2 && status.embedded < status.chunks,
        "{status:?}"
    );
    assert!(store.verify().unwrap().is_ok());

    let rest = store.embed_pending(&embedder, &one_text, &|_| {}).unwrap();
    assert_eq!(rest.still_pending, 0);
    assert_eq!(
        rest.commits, rest.texts_embedded,
        "one text a commit, none from the cache"
    );
    assert_eq!(rest.root, clean);
}

/// The hash embedder's model id with other vectors: what a store written by a faulty
/// or tampered embedder holds.
struct Impostor(HashEmbedder);

impl Embedder for Impostor {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, cfs_ingest::EmbedError> {
        let mut out = self.0.embed_batch(texts)?;
        for v in &mut out {
            v.reverse();
        }
        Ok(out)
    }
}

#[test]
fn vectors_are_checked_against_their_texts() {
    let (_dir, root, store, options, embedder) = setup(false);
    store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    let all = store.check_vectors(&embedder, None).unwrap();
    assert!(
        all.checked > 4 && all.checked == all.embeddings && all.wrong.is_empty(),
        "{all:?}"
    );
    let sample = store.check_vectors(&embedder, Some(3)).unwrap();
    assert_eq!(sample.checked, 3);
    // A store whose vectors are not the model's passes verify (the roots are sound) but
    // not the vector check.
    let bad = tempfile::tempdir().unwrap();
    let impostor = Impostor(HashEmbedder::new(32));
    let other = Store::create(&bad.path().join("s.redb"), settings(&options, &embedder)).unwrap();
    other.sync(&root, &options, &impostor, &|_| {}).unwrap();
    assert!(other.verify().unwrap().is_ok());
    let found = other.check_vectors(&embedder, None).unwrap();
    assert_eq!(found.wrong.len(), found.checked, "{found:?}");
}

#[test]
fn switching_embedders_reaches_the_new_clean_root_and_back_from_the_cache() {
    let (dir, root, mut store, options, embedder) = setup(false);
    store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    let other = HashEmbedder::new(16);

    store.switch_embedder(&other).unwrap();
    assert_eq!(store.settings().model_id, other.model_id());
    assert_eq!(store.embed_status().unwrap().embedded, 0);
    assert!(
        store.verify().unwrap().is_ok(),
        "{:?}",
        store.verify().unwrap().problems
    );
    let old = store.sync(&root, &options, &embedder, &|_| {});
    assert!(matches!(
        old,
        Err(cfs_store::StoreError::ConfigMismatch { .. })
    ));
    let new = store
        .embed_pending(&other, &EmbedOptions::default(), &|_| {})
        .unwrap();
    assert_eq!(new.root, clean_root(&root, &options, &other));
    assert!(store.check_vectors(&other, None).unwrap().wrong.is_empty());

    // Back to the first model: its vectors are still cached, no text is embedded again.
    store.switch_embedder(&embedder).unwrap();
    let back = store
        .embed_pending(&embedder, &EmbedOptions::default(), &|_| {})
        .unwrap();
    assert_eq!(back.texts_embedded, 0);
    assert_eq!(back.root, clean_root(&root, &options, &embedder));
    // The same embedder again: nothing to do.
    assert_eq!(store.switch_embedder(&embedder).unwrap(), back.root);
    drop(store);
    let reopened = Store::open(&dir.path().join("s.redb")).unwrap();
    assert_eq!(reopened.settings().model_id, embedder.model_id());
    assert!(reopened.verify().unwrap().is_ok());
}

#[test]
fn embed_chunks_embeds_exactly_what_a_sync_deferred() {
    let (_dir, root, store, options, embedder) = setup(true);
    let first = store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    assert_eq!(first.deferred_chunks.len(), first.deferred);
    assert!(first.deferred > 0);
    let done = store
        .embed_chunks(
            &embedder,
            &first.deferred_chunks,
            &EmbedOptions::default(),
            &|_| {},
        )
        .unwrap();
    assert_eq!(done.chunks, first.deferred);
    let status = store.embed_status().unwrap();
    assert_eq!(status.embedded, status.chunks);
    assert_eq!(done.root, clean_root(&root, &options, &embedder));

    // An edit: the scoped sync defers only the new text's chunk, and embedding it
    // reaches the clean root again; ids already embedded or gone are skipped.
    write(
        &root,
        "notes.txt",
        "zebra quantum lattice\n\na new paragraph\n",
    );
    let scope = cfs_ingest::Scope::new(["notes.txt"]);
    let edit = store
        .sync_paths(&root, &scope, &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(edit.deferred_chunks.len(), edit.deferred);
    let mut ids = edit.deferred_chunks.clone();
    ids.extend(&first.deferred_chunks);
    let done = store
        .embed_chunks(&embedder, &ids, &EmbedOptions::default(), &|_| {})
        .unwrap();
    assert_eq!(done.chunks, edit.deferred);
    assert_eq!(done.root, clean_root(&root, &options, &embedder));
}

#[test]
fn vectors_embedded_after_the_text_are_found_by_later_syncs() {
    let (_dir, root, store, options, embedder) = setup(true);
    store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    store
        .embed_pending(&embedder, &EmbedOptions::default(), &|_| {})
        .unwrap();
    // The file goes, then comes back: its texts' vectors are in the cache.
    let text = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    std::fs::remove_file(root.join("src/lib.rs")).unwrap();
    store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    write(&root, "src/lib.rs", &text);
    let inline = SyncOptions {
        defer_embeddings: false,
        ..options.clone()
    };
    let back = store.sync(&root, &inline, &embedder, &|_| {}).unwrap();
    assert_eq!(back.embedded, 0, "{back:?}");
    assert_eq!(back.deferred, 0);
}
