//! Properties of the commitment: the state root depends on the state only, never on the
//! order, repetition or parallelism that built it; encodings round-trip and reject
//! garbage without panicking; proofs break under any flipped byte.

use std::collections::BTreeMap;

use cfs_core::{
    Bucket, BucketedTable, Canonical, CanonicalState, Chunk, ChunkKind, ChunkProof, ContentHash,
    Document, DocumentParts, Edge, EdgeKind, Embedding, Entity, ModelHash, ParseProfile, PathEntry,
    StateRecord, Symbol, SymbolKind, Window, document_edges, document_edges_of,
    table_root_from_sorted,
};
use proptest::prelude::*;

fn profile() -> ParseProfile {
    ParseProfile {
        mime_type: "text/plain".into(),
        parser: "text/1".into(),
        chunker: "lines/test".into(),
        target_bytes: 64,
        max_bytes: 128,
        overlap_bytes: 0,
    }
}

/// A document whose chunks are its lines, each embedded by a toy model.
fn document(content: &str) -> (Document, Vec<Chunk>, Vec<Embedding>) {
    let hash = ContentHash::of(content.as_bytes());
    let id = cfs_core::DocumentId::derive(&hash, &profile().hash());
    let mut chunks = Vec::new();
    let mut offset = 0usize;
    for (i, line) in content.split_inclusive('\n').enumerate() {
        let n = u32::try_from(i).unwrap();
        let chunk = Chunk::new(
            id,
            n,
            offset as u64,
            n + 1,
            n + 1,
            ChunkKind::Text,
            line.into(),
        )
        .unwrap();
        chunks.push(chunk);
        offset += line.len();
    }
    let model = ModelHash::of("toy");
    let embeddings = chunks
        .iter()
        .map(|c| Embedding::new(c.id, model, vec![c.text.len() as i16, -1]).unwrap())
        .collect();
    let doc = Document::new(
        hash,
        content.len() as u64,
        profile(),
        content.len() as u64,
        vec![],
        &chunks,
    )
    .unwrap();
    (doc, chunks, embeddings)
}

fn add(state: &mut CanonicalState, path: &str, content: &str) {
    let (doc, chunks, embeddings) = document(content);
    let id = doc.id;
    state
        .insert_document(doc, chunks, embeddings, vec![])
        .unwrap();
    state.bind_path(PathEntry::new(path, id)).unwrap();
}

/// The state holding exactly `files`, built from nothing.
fn clean(files: &BTreeMap<String, String>) -> CanonicalState {
    let mut state = CanonicalState::new();
    for (path, content) in files {
        add(&mut state, path, content);
    }
    state
}

fn path_strategy() -> impl Strategy<Value = String> {
    (0..3u8, 0..6u8).prop_map(|(d, f)| format!("d{d}/f{f}.txt"))
}

fn content_strategy() -> impl Strategy<Value = String> {
    "[ab\n]{0,12}|é🦀\n[xy]{1,3}"
}

#[derive(Clone, Debug)]
enum Op {
    Write(String, String),
    Remove(String),
    Rename(String, String),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (path_strategy(), content_strategy()).prop_map(|(p, c)| Op::Write(p, c)),
        1 => path_strategy().prop_map(Op::Remove),
        1 => (path_strategy(), path_strategy()).prop_map(|(a, b)| Op::Rename(a, b)),
    ]
}

proptest! {
    // 16 cases by default; CFS_SLOW_TESTS=1 runs 64.
    #![proptest_config(ProptestConfig {
        cases: crate::support::scaled(16, 64),
        ..ProptestConfig::default()
    })]

    /// After any sequence of writes, removals and renames the root equals the root of a
    /// clean build of the final files, and the state is sound.
    #[test]
    fn root_after_any_edits_equals_clean_build(ops in prop::collection::vec(op_strategy(), 1..40)) {
        let mut state = CanonicalState::new();
        let mut files: BTreeMap<String, String> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Write(path, content) => {
                    add(&mut state, &path, &content);
                    files.insert(path, content);
                }
                Op::Remove(path) => {
                    let removed = state.unbind_path(&path);
                    prop_assert_eq!(removed.is_some(), files.remove(&path).is_some());
                }
                Op::Rename(from, to) => {
                    if let Some(content) = files.remove(&from) {
                        let entry = state.unbind_path(&from).unwrap();
                        // Re-adding is what a sync does when it finds the content again.
                        add(&mut state, &to, &content);
                        prop_assert_eq!(entry.document_id, state.path(&to).unwrap().document_id);
                        files.insert(to, content);
                    }
                }
            }
            prop_assert!(state.check_integrity().is_empty(), "{:?}", state.check_integrity());
        }
        let reference = clean(&files);
        prop_assert_eq!(state.state_root(), reference.state_root());
        prop_assert!(state.diff(&reference).is_empty());
    }

    /// Insertion order and repeated insertion do not change the root.
    #[test]
    fn root_ignores_order_and_duplicates(
        files in prop::collection::btree_map(path_strategy(), content_strategy(), 0..12),
        seed in any::<u64>(),
    ) {
        let mut entries: Vec<(String, String)> = files.clone().into_iter().collect();
        // A seeded Fisher-Yates shuffle, with every entry added twice.
        let mut x = seed | 1;
        for i in (1..entries.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            entries.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let mut shuffled = CanonicalState::new();
        for (path, content) in entries.iter().chain(entries.iter()) {
            add(&mut shuffled, path, content);
        }
        prop_assert_eq!(shuffled.state_root(), clean(&files).state_root());
    }

    /// Every encoding round-trips through decode, and decode of the result is stable.
    #[test]
    fn encodings_round_trip(
        text in "\\PC{1,40}",
        heading in prop::collection::vec("\\PC{0,8}", 0..4),
        name in "[a-z_]{1,12}",
        parent in prop::option::of("[A-Z][a-z]{0,8}"),
        window in prop::option::of((0u32..5, 2u32..6)),
        kind_index in 0usize..SymbolKind::ALL.len(),
        page in 1u32..1000,
        offset in 0u64..u64::MAX / 2,
        vector in prop::collection::vec(any::<i16>(), 1..40),
        edge_kind in prop_oneof![Just(1u16), Just(2), Just(3), 0x8000u16..=u16::MAX],
    ) {
        let kinds = SymbolKind::ALL;
        let window = window.filter(|(i, c)| i < c).map(|(index, count)| Window { index, count });
        let symbol = Symbol {
            kind: kinds[kind_index], name, parent, signature: "sig".into(),
            doc_comment: String::new(), window,
        };
        let doc = cfs_core::DocumentId([7; 16]);
        for kind in [
            ChunkKind::Text,
            ChunkKind::Section { heading_path: heading.clone() },
            ChunkKind::Code { language: "rust".into(), symbol: Some(symbol.clone()) },
            ChunkKind::Code { language: "go".into(), symbol: None },
            ChunkKind::Page { page },
        ] {
            let chunk = Chunk::new(doc, 3, offset, 1, 9, kind, text.clone()).unwrap();
            prop_assert_eq!(Chunk::decode(&chunk.encode()).unwrap(), chunk);
        }
        let embedding = Embedding::new(cfs_core::ChunkId([1; 16]), ModelHash::of("m"), vector).unwrap();
        prop_assert_eq!(Embedding::decode(&embedding.encode()).unwrap(), embedding);
        let edge = Edge::new(cfs_core::ChunkId([1; 16]), cfs_core::ChunkId([2; 16]), EdgeKind(edge_kind));
        prop_assert_eq!(Edge::decode(&edge.encode()).unwrap(), edge);
        let entry = PathEntry { path: "a/b".into(), document_id: doc, collections: heading.into_iter().filter(|h| !h.is_empty()).collect(), context: text };
        prop_assert_eq!(PathEntry::decode(&entry.encode()).unwrap(), entry);
    }

    /// Decoding arbitrary bytes returns an error or a valid value, never panics.
    #[test]
    fn decoding_garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = Chunk::decode(&bytes);
        let _ = Document::decode(&bytes);
        let _ = PathEntry::decode(&bytes);
        let _ = Embedding::decode(&bytes);
        let _ = Edge::decode(&bytes);
        let _ = StateRecord::decode(&bytes);
        if let Ok(proof) = ChunkProof::decode(&bytes) {
            let _ = proof.verify(&proof.claimed_state_root());
        }
    }

    /// The incremental bucketed root equals the full recomputation after any edits.
    #[test]
    fn incremental_root_equals_full(
        ops in prop::collection::vec((any::<bool>(), any::<[u8; 4]>(), any::<u8>()), 1..300),
    ) {
        let mut table = BucketedTable::<[u8; 4]>::new();
        let mut model: BTreeMap<[u8; 4], [u8; 32]> = BTreeMap::new();
        for (i, (insert, key, value)) in ops.into_iter().enumerate() {
            let bucket = Bucket::of_key(&key);
            if insert {
                let leaf = *blake3::hash(&[value]).as_bytes();
                table.insert(bucket, key, leaf);
                model.insert(key, leaf);
            } else {
                prop_assert_eq!(table.remove(bucket, &key), model.remove(&key));
            }
            if i % 17 == 0 {
                table.root();
            }
        }
        let sorted: Vec<(Bucket, [u8; 32])> = model.iter().map(|(k, v)| (Bucket::of_key(k), *v)).collect();
        prop_assert_eq!(table.root(), table_root_from_sorted(&sorted).unwrap());
    }
}

fn big_state(n: usize) -> CanonicalState {
    let mut state = CanonicalState::new();
    for i in 0..n {
        add(
            &mut state,
            &format!("dir/file{i}.txt"),
            &format!("line {i}\nmore {i}\nend\n"),
        );
    }
    state
}

#[test]
fn root_ignores_thread_count() {
    let state = big_state(400);
    let roots: Vec<_> = [1, 2, 3, 8]
        .into_iter()
        .map(|threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| state.table_roots())
        })
        .collect();
    assert!(roots.windows(2).all(|w| w[0] == w[1]), "{roots:?}");
}

#[test]
fn every_flipped_byte_breaks_a_proof() {
    let state = big_state(3000);
    let root = state.state_root();
    // Prove chunks from crowded buckets, so paths within the bucket are long.
    let mut by_bucket: BTreeMap<Bucket, Vec<cfs_core::ChunkId>> = BTreeMap::new();
    for id in state.chunks().keys() {
        by_bucket.entry(Chunk::bucket_of(id)).or_default().push(*id);
    }
    let crowded: Vec<cfs_core::ChunkId> = by_bucket
        .values()
        .filter(|ids| ids.len() >= 12)
        .flat_map(|ids| [ids[0], ids[ids.len() / 2]])
        .take(4)
        .collect();
    assert!(!crowded.is_empty());
    for id in crowded {
        let proof = state.prove_chunk(&id).unwrap();
        proof.verify(&root).unwrap();
        let bytes = proof.encode();
        for at in 0..bytes.len() {
            for bit in [0, 3, 7] {
                let mut tampered = bytes.clone();
                tampered[at] ^= 1 << bit;
                if let Ok(p) = ChunkProof::decode(&tampered) {
                    assert!(
                        p.verify(&root).is_err(),
                        "byte {at} bit {bit} of {} still verifies",
                        bytes.len()
                    );
                }
            }
        }
    }
}

/// Erratum E5: changes are found from content, so an edit that a timestamp would not
/// reveal (same second, same size) is still in the diff.
#[test]
fn diff_sees_changes_without_timestamps() {
    let before = big_state(50);
    let mut after = before.clone();
    let mut entry = after.path("dir/file7.txt").unwrap().clone();
    entry.context = "edited".into();
    after.bind_path(entry.clone()).unwrap();
    let diff = before.diff(&after);
    assert_eq!(diff.paths.changed, vec![entry.id()]);
    assert!(diff.paths.added.is_empty() && diff.paths.removed.is_empty());
    assert!(diff.chunks.is_empty());

    // Same size, other bytes: a new document with new chunks; the old ones go.
    let mut edited = before.clone();
    add(&mut edited, "dir/file7.txt", "LINE 7\nmore 7\nend\n");
    let diff = before.diff(&edited);
    assert_eq!(diff.documents.added.len(), 1);
    assert_eq!(diff.documents.removed.len(), 1);
    assert_eq!(diff.summary().chunks.added, 3);
    assert_eq!(diff.summary().chunks.removed, 3);
}

/// Erratum E6: nothing is deleted by an empty or implicit filter.
#[test]
fn removing_nothing_changes_nothing() {
    let mut state = big_state(20);
    let before = state.clone();
    assert!(state.unbind_path("no/such/file").is_none());
    let absent = Edge::new(
        cfs_core::ChunkId([1; 16]),
        cfs_core::ChunkId([2; 16]),
        EdgeKind(0x8000),
    );
    assert!(!state.remove_edge(&absent));
    // System edges cannot be removed on their own.
    let system = *state
        .edges()
        .keys()
        .find(|e| e.kind == EdgeKind::CONTAINS)
        .unwrap();
    assert!(!state.remove_edge(&system));
    assert_eq!(state, before);
}

#[test]
fn shared_document_survives_until_its_last_path_goes() {
    let mut state = CanonicalState::new();
    add(&mut state, "a.txt", "same\n");
    add(&mut state, "b.txt", "same\n");
    assert_eq!(state.documents().len(), 1);
    state.unbind_path("a.txt").unwrap();
    assert_eq!(state.documents().len(), 1);
    assert_eq!(state.chunks().len(), 1);
    state.unbind_path("b.txt").unwrap();
    assert!(state.documents().is_empty() && state.chunks().is_empty());
    assert!(state.embeddings().is_empty() && state.edges().is_empty());
    assert_eq!(state.state_root(), CanonicalState::new().state_root());
}

#[test]
fn inconsistent_documents_are_rejected_whole() {
    let mut state = CanonicalState::new();
    let (doc, mut chunks, embeddings) = document("a\nb\n");
    chunks.pop();
    let before = state.clone();
    assert!(
        state
            .insert_document(doc.clone(), chunks, embeddings.clone(), vec![])
            .is_err()
    );
    assert_eq!(state, before);
    let (_, chunks, _) = document("a\nb\n");
    let mut wrong = doc;
    wrong.metadata.push(cfs_core::MetaEntry {
        key: "k".into(),
        value: "v".into(),
    });
    state
        .insert_document(wrong.clone(), chunks.clone(), embeddings.clone(), vec![])
        .unwrap();
    // The same id with other rows is refused: ids are derived from content.
    let (original, _, _) = document("a\nb\n");
    assert!(
        state
            .insert_document(original, chunks, embeddings, vec![])
            .is_err()
    );
    assert!(state.bind_path(PathEntry::new("../x", wrong.id)).is_err());
}

/// Given leaves stand in for hashing the chunks again, and only the right ones pass.
#[test]
fn document_edges_accept_their_chunks_leaves_in_any_order() {
    let (doc, mut chunks, embeddings) = document("a\nb\nc\n");
    chunks.reverse();
    let leaves: Vec<[u8; 32]> = chunks.iter().map(|c| c.leaf().0).collect();
    let with = |leaves: &[[u8; 32]]| {
        document_edges_of(&DocumentParts {
            document: &doc,
            chunks: &chunks,
            chunk_leaves: Some(leaves),
            embeddings: &embeddings,
            window_edges: &[],
            chunks_derived: false,
        })
    };
    let plain = document_edges(&doc, &chunks, &embeddings, &[]).unwrap();
    assert_eq!(plain, with(&leaves).unwrap());
    let mut swapped = leaves.clone();
    swapped.swap(0, 1);
    assert!(with(&swapped).is_err());
    let mut flipped = leaves;
    flipped[0][0] ^= 1;
    assert!(with(&flipped).is_err());
}

/// `Document::new_with_encodings` is `Document::new`, each chunk's own leaf and its own
/// encoding, whatever the chunks' order.
#[test]
fn a_document_made_with_leaves_gives_each_chunks_leaf() {
    let content = "a\nb\nc\n";
    let (doc, mut chunks, _) = document(content);
    chunks.reverse();
    let (made, leaves, encodings) = Document::new_with_encodings(
        doc.content_hash,
        doc.size_bytes,
        doc.profile.clone(),
        doc.text_length_bytes,
        vec![],
        &chunks,
    )
    .unwrap();
    assert_eq!(made, doc);
    let each: Vec<[u8; 32]> = chunks.iter().map(|c| c.leaf_hash().0).collect();
    assert_eq!(leaves, each);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(encodings.get(i), Some(c.encode().as_slice()));
    }
}

/// Chunks vouched for as made by `Chunk::new` are not derived again, but their fields
/// are checked, and a chunk changed after its document was made no longer matches it.
#[test]
fn derived_chunks_skip_only_their_derivations() {
    let (doc, chunks, embeddings) = document("a\nb\nc\n");
    let parts = |chunks: &[Chunk], derived: bool| {
        let leaves: Vec<[u8; 32]> = chunks.iter().map(|c| c.leaf().0).collect();
        document_edges_of(&DocumentParts {
            document: &doc,
            chunks,
            chunk_leaves: Some(&leaves),
            embeddings: &embeddings,
            window_edges: &[],
            chunks_derived: derived,
        })
    };
    assert_eq!(
        parts(&chunks, true).unwrap(),
        parts(&chunks, false).unwrap()
    );
    let mut changed = chunks.clone();
    changed[0].text.push('!');
    changed[0].byte_length += 1;
    assert!(
        parts(&changed, true).is_err(),
        "its leaf left the hierarchical hash"
    );
    let mut empty = chunks;
    empty[0].start_line = 0;
    assert!(parts(&empty, true).is_err(), "fields are checked");
}

/// The reference rules catch each kind of breach (rows handed over unchecked).
#[test]
fn integrity_checks_find_every_breach() {
    let state = big_state(5);
    assert!(state.check_integrity().is_empty());
    let rows = |s: &CanonicalState| {
        (
            s.paths().values().cloned().collect::<Vec<_>>(),
            s.documents().values().cloned().collect::<Vec<_>>(),
            s.chunks().values().cloned().collect::<Vec<_>>(),
            s.embeddings().values().cloned().collect::<Vec<_>>(),
            s.edges().keys().copied().collect::<Vec<_>>(),
        )
    };
    let check =
        |p: Vec<PathEntry>, d: Vec<Document>, c: Vec<Chunk>, e: Vec<Embedding>, g: Vec<Edge>| {
            CanonicalState::from_rows(p, d, c, e, g).check_integrity()
        };
    let (p, d, c, e, g) = rows(&state);
    let found = |problems: Vec<String>, what: &str| {
        assert!(
            problems.iter().any(|x| x.contains(what)),
            "{what} not in {problems:?}"
        );
    };
    found(
        check(p[1..].to_vec(), d.clone(), c.clone(), e.clone(), g.clone()),
        "has no path",
    );
    let no_contains: Vec<Edge> = g
        .iter()
        .copied()
        .filter(|x| x.kind != EdgeKind::CONTAINS || x.target.0 != c[0].id.0)
        .collect();
    found(
        check(p.clone(), d.clone(), c.clone(), e.clone(), no_contains),
        "missing system edge",
    );
    found(
        check(p.clone(), d.clone(), c[1..].to_vec(), e.clone(), g.clone()),
        "chunk sequences",
    );
    let mut stray = e.clone();
    stray.push(Embedding::new(cfs_core::ChunkId([9; 16]), ModelHash::of("toy"), vec![1]).unwrap());
    found(
        check(p.clone(), d.clone(), c.clone(), stray, g.clone()),
        "orphan embedding",
    );
    let mut bad = g.clone();
    bad.push(Edge::new(c[0].id, c[1].id, EdgeKind::NEXT_WINDOW));
    found(
        check(p.clone(), d.clone(), c.clone(), e.clone(), bad),
        "does not link consecutive windows",
    );
    let mut user = g.clone();
    user.push(Edge::new(
        c[0].id,
        cfs_core::ChunkId([7; 16]),
        EdgeKind(0x8000),
    ));
    found(
        check(p.clone(), d.clone(), c.clone(), e.clone(), user),
        "absent endpoint",
    );
    let mut orphan = c.clone();
    let mut other = c[0].clone();
    other.document_id = cfs_core::DocumentId([3; 16]);
    other.id = cfs_core::ChunkId::derive(&other.document_id, other.sequence, &other.text_hash);
    orphan.push(other);
    orphan.sort_by_key(|x| x.id);
    found(check(p, d, orphan, e, g), "orphan chunk");
}
