//! Single-scenario tests of the store.

use std::path::Path;

use cfs_core::{Edge, EdgeKind};
use cfs_ingest::{Embedder, HashEmbedder, Registry};

use crate::support::{clean_root, settings, write};
use cfs_store::{Store, StoreError, SyncOptions};
use redb::{ReadableDatabase, ReadableTable};

fn setup() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    Store,
    SyncOptions,
    HashEmbedder,
) {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let options = SyncOptions::default();
    let embedder = HashEmbedder::new(32);
    let store =
        Store::create(&db.path().join("store.redb"), settings(&options, &embedder)).unwrap();
    (tree, db, store, options, embedder)
}

/// Opens the store in `db` again: it is at `root`, and verifies.
fn reopens_verified_at(db: &Path, root: cfs_core::StateRoot) {
    let store = Store::open(&db.join("store.redb")).unwrap();
    assert_eq!(store.state_root().unwrap(), root);
    let verified = store.verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.problems);
}

#[test]
fn sync_matches_clean_index_and_second_sync_is_a_no_op() {
    let (tree, _db, store, options, embedder) = setup();
    write(tree.path(), "a.md", "# A\n\nalpha text\n");
    write(tree.path(), "src/lib.rs", "/// Doc.\npub fn f() {}\n");
    write(tree.path(), "copy.md", "# A\n\nalpha text\n");
    write(tree.path(), "bin.dat", "\0\0\0\u{1}");
    let report = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(
        (
            report.added,
            report.updated,
            report.removed,
            report.unchanged
        ),
        (3, 0, 0, 0)
    );
    assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
    assert_eq!(report.root, clean_root(tree.path(), &options, &embedder));
    assert!(
        store.verify().unwrap().is_ok(),
        "{:?}",
        store.verify().unwrap().problems
    );
    let chain = store.begin_read().unwrap().state_chain().unwrap().len();

    let again = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(again.root, report.root);
    let records = store.begin_read().unwrap().state_chain().unwrap();
    assert_eq!(again.commits, 0, "{again:?} {:?}", records.last());
    assert_eq!(again.failed.len(), 1, "failures are reported again");
    // Files changed within the racy window are hashed again, never parsed again.
    assert_eq!(again.parsed, 0);
    assert_eq!(
        store.begin_read().unwrap().state_chain().unwrap().len(),
        chain
    );
}

#[test]
fn a_walk_begun_before_the_store_is_created_syncs_what_it_found() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let (options, embedder) = (SyncOptions::default(), HashEmbedder::new(32));
    write(tree.path(), "a.md", "# A\n\nalpha text\n");
    write(tree.path(), "src/lib.rs", "/// Doc.\npub fn f() {}\n");
    write(tree.path(), "bin.dat", "\0\0\0\u{1}");
    // The store in the tree's .cfs folder, which the walk skips, created after the walk
    // began.
    let file = tree.path().join(".cfs/store.redb");
    let walk = Store::walk_ahead(tree.path(), &file);
    let store = Store::create(&file, settings(&options, &embedder)).unwrap();
    let report = store
        .sync_walked(walk, &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!((report.added, report.failed.len()), (2, 1));
    assert_eq!(report.root, clean_root(tree.path(), &options, &embedder));
    let again = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!((again.root, again.commits), (report.root, 0));
    // A walk begun for another store is refused, and writes nothing.
    let other = Store::walk_ahead(tree.path(), &db.path().join("other.redb"));
    let refused = store.sync_walked(other, &options, &embedder, &|_| {});
    assert!(
        matches!(refused, Err(cfs_store::StoreError::InvalidInput(_))),
        "{refused:?}"
    );
    assert_eq!(store.state_root().unwrap(), report.root);
}

#[test]
fn rename_rebinds_without_parsing_or_embedding() {
    let (tree, _db, store, options, embedder) = setup();
    write(tree.path(), "docs/old.md", "# Title\n\nsome words here\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    std::fs::rename(
        tree.path().join("docs/old.md"),
        tree.path().join("docs/new.md"),
    )
    .unwrap();
    let report = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(
        (report.renamed, report.added, report.removed),
        (1, 0, 0),
        "{report:?}"
    );
    assert_eq!((report.parsed, report.embedded), (0, 0));
    assert_eq!(report.root, clean_root(tree.path(), &options, &embedder));
    let read = store.begin_read().unwrap();
    assert!(read.path("docs/old.md").unwrap().is_none());
    assert!(read.path("docs/new.md").unwrap().is_some());
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn swapped_and_moved_contents_rebind_without_losing_a_document() {
    let (tree, _db, store, options, embedder) = setup();
    write(tree.path(), "a.txt", "the first text\n");
    write(tree.path(), "b.txt", "the second text\n");
    write(tree.path(), "c.txt", "the third text\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    // a and b swap contents; c's content moves to d while c gets new text.
    write(tree.path(), "a.txt", "the second text\n");
    write(tree.path(), "b.txt", "the first text\n");
    write(tree.path(), "c.txt", "a fourth text\n");
    write(tree.path(), "d.txt", "the third text\n");
    let report = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    // Only the new text is parsed: the others are known documents.
    assert_eq!(report.parsed, 1, "{report:?}");
    assert_eq!(report.root, clean_root(tree.path(), &options, &embedder));
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn edits_shrink_and_delete_leave_no_ghosts() {
    let (tree, _db, store, options, embedder) = setup();
    let long: String = (0..400)
        .map(|i| format!("paragraph {i} with words\n\n"))
        .collect();
    write(tree.path(), "big.txt", &long);
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let before = store.begin_read().unwrap().counts().unwrap();
    write(tree.path(), "big.txt", "tiny\n");
    let report = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(report.updated, 1);
    let after = store.begin_read().unwrap().counts().unwrap();
    assert_eq!(after.chunks, 1);
    assert!(report.rows_removed >= before.chunks, "{report:?}");
    std::fs::remove_file(tree.path().join("big.txt")).unwrap();
    let report = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(report.removed, 1);
    let empty = store.begin_read().unwrap().counts().unwrap();
    assert_eq!(empty, cfs_store::Counts::default());
    assert_eq!(report.root, cfs_core::StateRoot::default());
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn user_edges_into_a_removed_document_go_with_it() {
    let (tree, _db, store, options, embedder) = setup();
    write(tree.path(), "a.md", "# A\n\nalpha\n");
    write(tree.path(), "b.md", "# B\n\nbeta\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let read = store.begin_read().unwrap();
    let first_chunk = |path: &str| {
        let doc = read.path(path).unwrap().unwrap().document_id;
        (doc, read.chunks_of(&doc).unwrap()[0].id)
    };
    let ((a_doc, a_chunk), (b_doc, b_chunk)) = (first_chunk("a.md"), first_chunk("b.md"));
    let a_embedding = cfs_core::EmbeddingId::derive(&a_chunk, &embedder.model_hash());
    drop(read);
    // From b into a's document, chunk and embedding; and one within b.
    let user = EdgeKind(0x8001);
    let into_a = [
        Edge::new(b_chunk, a_doc, user),
        Edge::new(b_chunk, a_chunk, user),
        Edge::new(b_doc, a_embedding, user),
    ];
    let within_b = Edge::new(b_doc, b_chunk, user);
    let mut txn = store.begin_write().unwrap();
    for edge in into_a.iter().chain([&within_b]) {
        txn.put_user_edge(edge).unwrap();
    }
    txn.commit().unwrap();
    let edges_before = store.begin_read().unwrap().counts().unwrap().edges;

    std::fs::remove_file(tree.path().join("a.md")).unwrap();
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let edges: Vec<Edge> = store
        .begin_read()
        .unwrap()
        .rows(cfs_core::Table::Edges)
        .unwrap();
    for edge in &into_a {
        assert!(!edges.contains(edge), "{edge:?} outlived its target");
    }
    assert!(edges.contains(&within_b));
    assert!(edges.len() < edges_before as usize);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn proofs_from_the_store_verify_offline() {
    let (tree, _db, store, options, embedder) = setup();
    for i in 0..50 {
        write(
            tree.path(),
            &format!("f{i}.txt"),
            &format!("file {i}\n\nsecond paragraph {i}\n"),
        );
    }
    let root = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap()
        .root;
    let read = store.begin_read().unwrap();
    let entry = read.path("f7.txt").unwrap().unwrap();
    let chunk = read.chunks_of(&entry.document_id).unwrap()[0].clone();
    let proof = read.prove_chunk(&chunk.id).unwrap().unwrap();
    proof.verify(&root).unwrap();
    assert!(proof.verify(&cfs_core::StateRoot::default()).is_err());
}

#[test]
fn reopen_and_refusals() {
    let (tree, db, store, options, embedder) = setup();
    write(tree.path(), "a.txt", "hello\n");
    let root = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap()
        .root;
    drop(store);
    let path = db.path().join("store.redb");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.state_root().unwrap(), root);
    // Other settings are refused, naming both.
    let other = HashEmbedder::new(64);
    let err = store
        .sync(tree.path(), &options, &other, &|_| {})
        .unwrap_err();
    assert!(matches!(err, StoreError::ConfigMismatch { .. }), "{err}");
    assert!(err.to_string().contains("dim=32") && err.to_string().contains("dim=64"));
    // Deleting by an empty set is refused.
    let mut txn = store.begin_write().unwrap();
    assert!(matches!(
        txn.remove_user_edges(&[]),
        Err(StoreError::InvalidInput(_))
    ));
    // A user edge to an absent entity is refused; a real one round-trips.
    let doc = store
        .begin_read()
        .unwrap()
        .path("a.txt")
        .unwrap()
        .unwrap()
        .document_id;
    let ghost = Edge::new(doc, cfs_core::ChunkId([7; 16]), EdgeKind(0x8000));
    assert!(txn.put_user_edge(&ghost).is_err());
    drop(txn);
    assert!(matches!(
        Store::open(&db.path().join("absent.redb")),
        Err(StoreError::NotFound(_))
    ));
    assert!(Store::create(&path, settings(&options, &embedder)).is_err());
    let _ = Registry::default();
}

#[test]
fn verify_finds_tampered_rows() {
    let (tree, db, store, options, embedder) = setup();
    write(tree.path(), "a.txt", "hello world\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    drop(store);
    let path = db.path().join("store.redb");
    // A bit of the chunk's text flipped, in the chunk log.
    let log = cfs_store::chunk_log_path(&path);
    let pristine = std::fs::read(&log).unwrap();
    let mut bytes = pristine.clone();
    let last = bytes.len() - 2;
    bytes[last] ^= 1;
    std::fs::write(&log, &bytes).unwrap();
    let store = Store::open(&path).unwrap();
    let report = store.verify().unwrap();
    assert!(!report.is_ok());
    assert!(
        report.problems.iter().any(|p| p.contains("chunks")),
        "{:?}",
        report.problems
    );
    drop(store);
    std::fs::write(&log, &pristine).unwrap();
    assert!(Store::open(&path).unwrap().verify().unwrap().is_ok());
    // A row that names bytes past the committed log.
    tamper(&path, "chunks", |t| {
        let (k, mut v) = first_row(t);
        v[32 + 7] = 0x7f; // the offset's high byte
        t.insert(k.as_slice(), v.as_slice()).unwrap();
    });
    let report = Store::open(&path).unwrap().verify().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("chunks row") && p.contains("outside the committed")),
        "{:?}",
        report.problems
    );
    // A wrong stored leaf is found too, in a row whose content is sound.
    tamper(&path, "edges", |t| {
        let (k, mut v) = first_row(t);
        v[0] ^= 1;
        t.insert(k.as_slice(), v.as_slice()).unwrap();
    });
    let report = Store::open(&path).unwrap().verify().unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("stored leaf")),
        "{:?}",
        report.problems
    );
}

#[test]
fn verify_finds_a_document_chunk_index_that_differs_from_the_chunks() {
    let (tree, db, store, options, embedder) = setup();
    write(tree.path(), "a.md", "# A\n\nalpha\n\n## B\n\nbeta\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let entry = store.begin_read().unwrap().path("a.md").unwrap().unwrap();
    let chunks = store
        .begin_read()
        .unwrap()
        .chunks_of(&entry.document_id)
        .unwrap();
    assert!(chunks.len() >= 2, "{chunks:?}");
    drop(store);
    let path = db.path().join("store.redb");
    // The document's chunk ids in another order.
    tamper(&path, "chunks_by_document", |t| {
        let (k, v) = first_row(t);
        let (first, rest) = v.split_at(16);
        t.insert(k.as_slice(), [rest, first].concat().as_slice())
            .unwrap();
    });
    let report = Store::open(&path).unwrap().verify().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("chunks_by_document index differs")),
        "{:?}",
        report.problems
    );
    // A value that is not whole chunk ids is an error, not a panic.
    tamper(&path, "chunks_by_document", |t| {
        let (k, v) = first_row(t);
        t.insert(k.as_slice(), &v[1..]).unwrap();
    });
    let store = Store::open(&path).unwrap();
    let err = store
        .begin_read()
        .unwrap()
        .chunks_of(&entry.document_id)
        .unwrap_err();
    assert!(matches!(err, StoreError::Corrupted(_)), "{err}");
}

type RawTable<'t> = redb::Table<'t, &'static [u8], &'static [u8]>;

/// Changes one table of a closed store file behind the store's back.
fn tamper(path: &Path, table: &str, change: impl FnOnce(&mut RawTable<'_>)) {
    let raw = redb::Database::open(path).unwrap();
    let txn = raw.begin_write().unwrap();
    {
        let def: redb::TableDefinition<'_, &[u8], &[u8]> = redb::TableDefinition::new(table);
        change(&mut txn.open_table(def).unwrap());
    }
    txn.commit().unwrap();
}

fn first_row(t: &RawTable<'_>) -> (Vec<u8>, Vec<u8>) {
    let first = t.iter().unwrap().next().unwrap().unwrap();
    (first.0.value().to_vec(), first.1.value().to_vec())
}

fn len_of(path: &Path, table: &str) -> u64 {
    use redb::ReadableTableMetadata;
    let raw = redb::Database::open(path).unwrap();
    let txn = raw.begin_read().unwrap();
    let def: redb::TableDefinition<'_, &[u8], &[u8]> = redb::TableDefinition::new(table);
    txn.open_table(def).unwrap().len().unwrap()
}

#[test]
fn vectors_are_stored_once_and_checked_by_verify() {
    let (tree, db, store, options, embedder) = setup();
    // Two files sharing a function: two documents, whose chunks of that function have
    // the same text and so one vector.
    let shared = "fn shared() -> u32 {\n    42\n}\n";
    write(
        tree.path(),
        "a.rs",
        &format!("{shared}\nfn only_a() {{}}\n"),
    );
    write(
        tree.path(),
        "b.rs",
        &format!("{shared}\nfn only_b() {{}}\n"),
    );
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let counts = store.begin_read().unwrap().counts().unwrap();
    drop(store);
    let path = db.path().join("store.redb");
    let n_vectors = len_of(&path, "vectors");
    assert!(
        n_vectors < counts.embeddings,
        "{n_vectors} vectors for {} embeddings",
        counts.embeddings
    );
    assert!(Store::open(&path).unwrap().verify().unwrap().is_ok());

    // A changed vector no longer matches its hash, nor the leaves of its embeddings.
    tamper(&path, "vectors", |t| {
        let (k, mut v) = first_row(t);
        v[4] ^= 1;
        t.insert(k.as_slice(), v.as_slice()).unwrap();
    });
    let report = Store::open(&path).unwrap().verify().unwrap();
    assert!(!report.is_ok());
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("differs from its hash")),
        "{:?}",
        report.problems
    );
    assert!(
        report.problems.iter().any(|p| p.contains("stored leaf")),
        "{:?}",
        report.problems
    );

    // A vector gone is named by the embeddings that need it.
    tamper(&path, "vectors", |t| {
        let (k, _) = first_row(t);
        t.remove(k.as_slice()).unwrap();
    });
    let report = Store::open(&path).unwrap().verify().unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("absent vector")),
        "{:?}",
        report.problems
    );
}

#[test]
fn sync_paths_touches_only_its_scope_with_the_same_rules() {
    use cfs_ingest::Scope;
    let (tree, _db, store, options, embedder) = setup();
    let root = tree.path();
    write(root, "a/one.txt", "one\n");
    write(root, "a/sub/two.txt", "two\n");
    write(root, "b/three.txt", "three\n");
    write(root, ".gitignore", "*.log\n");
    store.sync(root, &options, &embedder, &|_| {}).unwrap();
    let sync = |paths: &[&str]| {
        store
            .sync_paths(root, &Scope::new(paths), &options, &embedder, &|_| {})
            .unwrap()
    };

    // Out-of-scope changes are left for later; in-scope ones are taken.
    write(root, "b/three.txt", "three, edited\n");
    write(root, "a/one.txt", "one, edited\n");
    let r = sync(&["a/one.txt"]);
    assert_eq!((r.updated, r.added, r.removed), (1, 0, 0));
    assert_ne!(r.root, clean_root(root, &options, &embedder));
    let r = sync(&["b"]);
    assert_eq!(r.updated, 1);
    assert_eq!(r.root, clean_root(root, &options, &embedder));

    // A removed folder named as a whole removes everything under it.
    std::fs::remove_dir_all(root.join("a")).unwrap();
    let r = sync(&["a"]);
    assert_eq!(r.removed, 2);
    assert_eq!(r.root, clean_root(root, &options, &embedder));

    // Ignore rules hold for named paths: ignored files and folders are not indexed.
    write(root, "x.log", "ignored by .gitignore\n");
    write(root, "node_modules/m/index.js", "ignored()\n");
    write(root, ".cfs/other", "the store's folder\n");
    let r = sync(&[
        "x.log",
        "node_modules/m/index.js",
        "node_modules",
        ".cfs/other",
    ]);
    assert_eq!((r.added, r.commits), (0, 0));
    // A path that never existed is not an error.
    let r = sync(&["nowhere/at/all.txt", "c"]);
    assert_eq!((r.added, r.removed, r.commits), (0, 0, 0));
    // A rename is seen when both names are in scope.
    std::fs::rename(root.join("b/three.txt"), root.join("b/four.txt")).unwrap();
    let r = sync(&["b/three.txt", "b/four.txt"]);
    assert_eq!((r.renamed, r.removed, r.added), (1, 0, 0));
    assert_eq!(r.root, clean_root(root, &options, &embedder));
    // The whole tree: `.` or an empty path.
    write(root, "c/new.txt", "new\n");
    let r = sync(&["."]);
    assert_eq!(r.added, 1);
    assert_eq!(r.root, clean_root(root, &options, &embedder));
}

/// A parsed document with its embeddings, ready for `put_document`.
fn parsed_document(
    path: &str,
    text: &str,
    options: &SyncOptions,
    embedder: &HashEmbedder,
) -> (cfs_ingest::Parsed, Vec<cfs_core::Embedding>) {
    let parsed = cfs_ingest::parse_file(path, text.as_bytes(), &options.config).unwrap();
    let embeddings = parsed
        .chunks
        .iter()
        .map(|c| {
            let text = cfs_ingest::embedding_text(c);
            let vector = embedder.embed_batch(&[text.as_ref()]).unwrap().remove(0);
            cfs_core::Embedding::new(c.id, embedder.model_hash(), vector).unwrap()
        })
        .collect();
    (parsed, embeddings)
}

#[test]
fn rows_written_in_a_transaction_are_seen_by_what_follows_in_it() {
    // New documents' chunks, embeddings and edges wait in memory until commit; what
    // reads or removes them in the same transaction must see them all the same.
    let (_tree, _db, store, options, embedder) = setup();
    let text = "pub fn one() -> u32 { 1 }\n\npub fn two() -> u32 { 2 }\n";
    let (a, a_embeddings) = parsed_document("a.rs", text, &options, &embedder);
    let (b, b_embeddings) = parsed_document("b.md", "# B\n\nbeta\n", &options, &embedder);
    let mut txn = store.begin_write().unwrap();
    for (p, e) in [(&a, &a_embeddings), (&b, &b_embeddings)] {
        assert!(
            txn.put_document(&p.document, &p.chunks, e, &p.window_edges)
                .unwrap()
        );
    }
    // A user edge between two chunks written a moment ago is accepted, and removed.
    let edge = Edge::new(a.chunks[0].id, b.chunks[0].id, EdgeKind(0x8001));
    txn.put_user_edge(&edge).unwrap();
    assert_eq!(txn.remove_user_edges(&[edge]).unwrap(), 1);
    txn.put_user_edge(&edge).unwrap();
    // A document bound and released in the same transaction goes with all its rows.
    let entry = |path: &str, doc: &cfs_core::Document| cfs_core::PathEntry::new(path, doc.id);
    txn.bind_path(&entry("a.rs", &a.document)).unwrap();
    txn.bind_path(&entry("b.md", &b.document)).unwrap();
    txn.unbind_path("b.md").unwrap();
    txn.remove_orphans().unwrap();
    let summary = *txn.summary();
    let root = txn.commit().unwrap();
    // Counted as if every row had been written at once: b's were added and removed.
    assert_eq!(
        (summary.chunks.added, summary.chunks.removed),
        (
            (a.chunks.len() + b.chunks.len()) as u64,
            b.chunks.len() as u64
        )
    );
    assert_eq!(summary.edges.changed, 0);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.computed_root, root);
    let read = store.begin_read().unwrap();
    let counts = read.counts().unwrap();
    assert_eq!(
        (counts.documents, counts.chunks, counts.embeddings),
        (1, a.chunks.len() as u64, a.chunks.len() as u64)
    );
    assert_eq!(read.chunks_of(&a.document.id).unwrap(), a.chunks);
    assert!(read.chunks_of(&b.document.id).unwrap().is_empty());
}

/// Rows of a table, by name.
fn table_rows(store: &Store, name: &str) -> u64 {
    let usage = store.begin_read().unwrap().table_usage().unwrap();
    usage.iter().find(|t| t.name == name).unwrap().rows
}

#[test]
fn gc_removes_the_vectors_no_embedding_names_and_nothing_else() {
    let (tree, db, mut store, options, embedder) = setup();
    let old = "# A\n\nalpha text that goes away\n";
    write(tree.path(), "a.md", old);
    write(tree.path(), "b.md", "# B\n\nbeta stays\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    write(tree.path(), "a.md", "# A\n\nalpha text that replaced it\n");
    let root = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap()
        .root;
    let (cache_before, vectors_before) = (
        table_rows(&store, "embedding_cache"),
        table_rows(&store, "vectors"),
    );

    let report = store.gc(false).unwrap();
    assert!(report.cache_entries_removed > 0 && report.vectors_removed > 0);
    assert_eq!(
        report.cache_entries_removed + report.cache_entries_kept,
        cache_before
    );
    assert_eq!(report.vectors_removed + report.vectors_kept, vectors_before);
    assert_eq!(table_rows(&store, "vectors"), report.vectors_kept);
    assert_eq!(store.state_root().unwrap(), root, "gc moves no root");
    let verified = store.verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.problems);
    // What the current chunks were embedded from is still cached.
    let read = store.begin_read().unwrap();
    for path in ["a.md", "b.md"] {
        let document = read.path(path).unwrap().unwrap().document_id;
        for chunk in read.chunks_of(&document).unwrap() {
            let text = cfs_ingest::embedding_text(&chunk);
            let hash = cfs_core::TextHash::of(&text);
            assert!(
                read.cached_vector(&embedder.model_hash(), &hash)
                    .unwrap()
                    .is_some(),
                "{path}: {text:?}"
            );
        }
    }
    drop(read);
    // A second collection finds nothing.
    let again = store.gc(false).unwrap();
    assert_eq!((again.cache_entries_removed, again.vectors_removed), (0, 0));

    // The old text comes back: embedded again, to the clean index's root.
    write(tree.path(), "a.md", old);
    let report = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert!(report.embedded > 0);
    assert_eq!(report.root, clean_root(tree.path(), &options, &embedder));

    // Compaction keeps the state and never grows the file.
    write(tree.path(), "a.md", "# A\n\nsomething else again\n");
    let root = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap()
        .root;
    let report = store.gc(true).unwrap();
    assert!(report.vectors_removed > 0);
    assert!(report.bytes_after <= report.bytes_before, "{report:?}");
    drop(store);
    reopens_verified_at(db.path(), root);
}

/// `shrink` leaves a file with little free space alone, and compacts one whose free
/// share passes the policy (as `wants_shrink` says beforehand): smaller, the same root,
/// still verified, and nothing left worth compacting.
#[test]
fn shrink_compacts_only_past_its_policy_and_keeps_the_state() {
    let (tree, db, mut store, options, embedder) = setup();
    for i in 0..60 {
        let body: String = (0..40).map(|j| format!("line {i} {j} of text\n")).collect();
        write(
            tree.path(),
            &format!("f{i}.md"),
            &format!("# F{i}\n\n{body}"),
        );
    }
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(
        store.shrink(cfs_store::ShrinkPolicy::default()).unwrap(),
        None,
        "a small store has under 64 MiB free"
    );
    for i in 0..55 {
        std::fs::remove_file(tree.path().join(format!("f{i}.md"))).unwrap();
    }
    let root = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap()
        .root;
    let any = cfs_store::ShrinkPolicy {
        min_free_bytes: 0,
        min_free_percent: 1,
    };
    let all = cfs_store::ShrinkPolicy {
        min_free_bytes: 0,
        min_free_percent: 100,
    };
    assert!(store.wants_shrink(any).unwrap());
    assert!(
        !store.wants_shrink(all).unwrap(),
        "some of the file is in use"
    );
    let (before, after) = store.shrink(any).unwrap().expect("compacted");
    assert!(after < before, "{before} -> {after}");
    let quarter = cfs_store::ShrinkPolicy {
        min_free_bytes: 0,
        min_free_percent: 25,
    };
    assert!(!store.wants_shrink(quarter).unwrap(), "compacted already");
    drop(store);
    reopens_verified_at(db.path(), root);
}

#[test]
fn a_sync_reports_what_it_found_each_file_and_its_commit() {
    let (tree, _db, store, options, embedder) = setup();
    write(tree.path(), "a.md", "# A\n\nalpha\n");
    write(tree.path(), "b.txt", "beta\n");
    write(tree.path(), "c.dat", "\0\0\0\u{1}");
    let events = std::sync::Mutex::new(Vec::new());
    let record = |e: cfs_store::SyncProgress<'_>| events.lock().unwrap().push(format!("{e:?}"));
    store
        .sync(tree.path(), &options, &embedder, &record)
        .unwrap();
    let mut seen = events.lock().unwrap().clone();
    assert_eq!(seen.first().unwrap(), "Found { files: 3 }");
    assert_eq!(seen.last().unwrap(), "Committing");
    let mut files: Vec<String> = seen.drain(1..seen.len() - 1).collect();
    files.sort();
    assert_eq!(
        files,
        [r#"File("a.md")"#, r#"File("b.txt")"#, r#"File("c.dat")"#]
    );
    // Again: every file once more (files this fresh are read again: their times are
    // too close to the sync's to be trusted, so the stat cache is rewritten and
    // committed, with no state record).
    events.lock().unwrap().clear();
    store
        .sync(tree.path(), &options, &embedder, &record)
        .unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(seen[0], "Found { files: 3 }");
    assert_eq!(seen.iter().filter(|e| e.starts_with("File(")).count(), 3);
}

#[test]
fn gc_refuses_a_damaged_cache_and_removes_nothing() {
    let (tree, db, store, options, embedder) = setup();
    write(tree.path(), "a.md", "# A\n\nalpha\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    write(tree.path(), "a.md", "# A\n\nsomething else\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    drop(store);
    let path = db.path().join("store.redb");
    let (cache, vectors) = (len_of(&path, "embedding_cache"), len_of(&path, "vectors"));
    tamper(&path, "embedding_cache", |t| {
        let (k, _) = first_row(t);
        t.insert(k.as_slice(), &b"short"[..]).unwrap();
    });
    let mut store = Store::open(&path).unwrap();
    let err = store.gc(false).unwrap_err();
    assert!(matches!(err, StoreError::Corrupted(_)), "{err}");
    assert!(err.to_string().contains("embedding cache"), "{err}");
    drop(store);
    assert_eq!(len_of(&path, "embedding_cache"), cache);
    assert_eq!(len_of(&path, "vectors"), vectors);
}

#[test]
fn another_spec_or_schema_version_is_refused_by_its_name() {
    let (_tree, db, store, _, _) = setup();
    drop(store);
    let path = db.path().join("store.redb");
    tamper(&path, "meta", |t| {
        t.insert(&b"spec_version"[..], &999u32.to_le_bytes()[..])
            .unwrap();
    });
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SpecMismatch { found: 999, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("spec version 999"), "{err}");
    tamper(&path, "meta", |t| {
        t.insert(&b"schema_version"[..], &7u32.to_le_bytes()[..])
            .unwrap();
    });
    let err = Store::open_read_only(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaMismatch { found: 7, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("schema version 7"), "{err}");
}

/// A folder the walk cannot list (here: its path grew past the system's limit when the
/// tree moved, which no permission bit can stop root from reading) is reported, and
/// what the store holds under it stays; the rest of the tree syncs as usual.
#[test]
fn a_folder_that_cannot_be_listed_keeps_its_files() {
    let (tree, _db, store, options, embedder) = setup();
    let deep = "d".repeat(200);
    write(tree.path(), "t/src/a.txt", "alpha\n");
    write(tree.path(), &format!("t/src/{deep}/b.txt"), "beta\n");
    let first = store
        .sync(&tree.path().join("t"), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(first.added, 2);

    // Move the tree under a folder whose path is a little under the limit.
    let target = 4096 - 40;
    let mut long = tree.path().join("long");
    while long.as_os_str().len() + 202 < target {
        long.push("l".repeat(200));
    }
    let pad = target - long.as_os_str().len() - 1;
    long.push("p".repeat(pad));
    std::fs::create_dir_all(&long).unwrap();
    std::fs::rename(tree.path().join("t"), long.join("t")).unwrap();
    let root = long.join("t");
    write(tree.path(), "short.txt", "");
    std::fs::rename(tree.path().join("short.txt"), root.join("src/new.txt")).unwrap();
    assert!(std::fs::read_dir(root.join("src")).is_ok());
    assert!(std::fs::read_dir(root.join("src").join(&deep)).is_err());

    let second = store.sync(&root, &options, &embedder, &|_| {}).unwrap();
    assert_eq!((second.added, second.removed), (1, 0), "{second:?}");
    assert!(
        second.failed.iter().any(|(path, _)| path.ends_with(&deep)),
        "{:?}",
        second.failed
    );
    let paths: Vec<String> = store
        .begin_read()
        .unwrap()
        .all_paths()
        .unwrap()
        .into_iter()
        .map(|p| p.path)
        .collect();
    assert_eq!(
        paths,
        [
            "src/a.txt",
            format!("src/{deep}/b.txt").as_str(),
            "src/new.txt"
        ]
    );
}

/// A store is never created over a file that is there: the error says it exists, and
/// the file is left as it was.
#[test]
fn creating_where_a_file_is_fails_and_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let (options, embedder) = (SyncOptions::default(), HashEmbedder::default());
    let file = dir.path().join("nested/store.redb");
    drop(Store::create(&file, settings(&options, &embedder)).unwrap());
    let before = std::fs::read(&file).unwrap();
    let err = Store::create(&file, settings(&options, &embedder)).unwrap_err();
    assert!(matches!(err, StoreError::Exists(_)), "{err}");
    assert!(std::fs::read(&file).unwrap() == before, "the file changed");
    Store::open(&file).unwrap();
}

/// What a creation that stopped part-way leaves (its staged store and log, a log whose
/// store was removed) is written over by the next one, which ends with the store and its
/// log in place and nothing staged beside them.
#[test]
fn a_creation_writes_over_what_a_stopped_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let (options, embedder) = (SyncOptions::default(), HashEmbedder::default());
    let file = dir.path().join("store.redb");
    for left in [
        "store.redb.creating",
        "store.redb.creating.chunks",
        "store.redb.chunks",
    ] {
        std::fs::write(dir.path().join(left), b"left by a creation that stopped").unwrap();
    }
    let store = Store::create(&file, settings(&options, &embedder)).unwrap();
    assert!(store.verify().unwrap().is_ok());
    drop(store);
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["store.redb", "store.redb.chunks"]);
    Store::open_read_only(&file).unwrap();
}

/// Processes creating one store at once take turns: one makes it, the others find it
/// made, and the store they find is whole.
#[test]
fn creations_at_once_make_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let (options, embedder) = (SyncOptions::default(), HashEmbedder::default());
    let file = dir.path().join("store.redb");
    let made: Vec<bool> = std::thread::scope(|s| {
        let creators: Vec<_> = (0..4)
            .map(|_| s.spawn(|| Store::create(&file, settings(&options, &embedder))))
            .collect();
        creators
            .into_iter()
            .map(|c| match c.join().unwrap() {
                Ok(_) => true,
                Err(StoreError::Exists(_)) => false,
                Err(e) => panic!("{e}"),
            })
            .collect()
    });
    assert_eq!(made.iter().filter(|&&m| m).count(), 1, "{made:?}");
    assert!(Store::open(&file).unwrap().verify().unwrap().is_ok());
}

/// A cold index in pools of one, two and four threads: the same root, the same chunk
/// log (after its header's random id), whatever order the files finish parsing in
/// (their documents are written beside the parse, in the plan's order). Files of very
/// different sizes, the largest in the middle of the walk, a failing file, a duplicate.
#[test]
fn a_cold_index_is_the_same_on_any_number_of_threads() {
    let tree = tempfile::tempdir().unwrap();
    for i in 0..60 {
        let body = "fn f() { let x = 1; }\n".repeat(1 + (i * 37) % 50);
        write(
            tree.path(),
            &format!("src/m{i:02}.rs"),
            &format!("// {i}\n{body}"),
        );
    }
    write(
        tree.path(),
        "src/big.rs",
        &"pub fn g(a: u32) -> u32 { a + 1 }\n".repeat(3000),
    );
    write(tree.path(), "docs/a.md", "# A\n\nalpha text\n");
    write(tree.path(), "docs/copy.md", "# A\n\nalpha text\n");
    write(tree.path(), "bad.json", "{ not json");
    let options = SyncOptions::default();
    let embedder = HashEmbedder::new(32);
    let expected = clean_root(tree.path(), &options, &embedder);
    let mut logs = Vec::new();
    for threads in [1, 2, 4] {
        let db = tempfile::tempdir().unwrap();
        let file = db.path().join("store.redb");
        let store = Store::create(&file, settings(&options, &embedder)).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let report = pool
            .install(|| store.sync(tree.path(), &options, &embedder, &|_| {}))
            .unwrap();
        assert_eq!(report.root, expected, "{threads} threads");
        assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
        drop(store);
        let log = std::fs::read(cfs_store::chunk_log_path(&file)).unwrap();
        logs.push(log[64..].to_vec());
    }
    assert!(
        logs.windows(2).all(|w| w[0] == w[1]),
        "the chunk log's layout varies"
    );
}

/// A store parsed by other parsers than this build's (here: one written before the
/// parsers were recorded) is parsed again whole by the next sync, and then holds what a
/// clean index holds; scoped syncs meanwhile leave the rest as it is, and a sync after
/// the reparse trusts the stat cache again.
#[test]
fn a_store_parsed_by_other_parsers_is_parsed_again_by_the_next_whole_sync() {
    let (tree, db, store, options, embedder) = setup();
    write(tree.path(), "a.md", "# A\n\nalpha text\n");
    write(
        tree.path(),
        "src/Main.java",
        "class Main {\n    void run() {}\n}\n",
    );
    write(tree.path(), "src/lib.rs", "/// Doc.\npub fn f() {}\n");
    let first = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(first.parsed, 3);
    assert_eq!(
        store.parsers().unwrap(),
        Some(cfs_ingest::parsers_version())
    );
    drop(store);
    let path = db.path().join("store.redb");
    tamper(&path, "meta", |t| {
        t.remove(&b"parsers"[..]).unwrap();
    });
    let store = Store::open(&path).unwrap();
    assert_eq!(store.parsers().unwrap(), None);
    // A scoped sync parses only its scope and does not claim the store is current.
    let scope = cfs_ingest::Scope::new(["src/lib.rs"]);
    let scoped = store
        .sync_paths(tree.path(), &scope, &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!(scoped.parsed, 0, "{scoped:?}");
    assert_eq!(store.parsers().unwrap(), None);
    let again = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert_eq!((again.hashed, again.parsed, again.unchanged), (3, 3, 3));
    assert_eq!(again.root, clean_root(tree.path(), &options, &embedder));
    assert_eq!(
        store.parsers().unwrap(),
        Some(cfs_ingest::parsers_version())
    );
    let then = store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    // (Files this new may be hashed again: the stat cache does not vouch for them yet.)
    assert_eq!((then.parsed, then.unchanged, then.commits), (0, 3, 0));
    reopens_verified_at(db.path(), again.root);
}
