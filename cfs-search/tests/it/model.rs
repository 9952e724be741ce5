//! Random sequences of file operations on a temporary tree, each followed by a sync:
//! after every step the store's root equals a clean index of the tree, verify passes,
//! and a second sync changes nothing.

use std::collections::BTreeMap;

use cfs_ingest::HashEmbedder;
use cfs_search::{Filter, IndexFileStatus, IndexOptions, Mode, Query, SavedAs, SearchIndex};
use cfs_store::{Store, SyncOptions};
use proptest::prelude::*;

use crate::support::{clean_root, settings, write};

#[derive(Clone, Debug)]
enum Op {
    Write(u8, u8),
    Shrink(u8),
    Truncate(u8),
    Delete(u8),
    Rename(u8, u8),
    Copy(u8, u8),
    /// A file and another of the same type (the k-th present) exchange their contents
    /// between two syncs: each is bound to the other's document.
    Swap(u8, u8),
    CaseRename(u8),
    Reopen,
}

fn name(i: u8) -> String {
    let dir = ["", "docs/", "src/"][usize::from(i % 3)];
    let ext = ["txt", "md", "rs"][usize::from((i / 3) % 3)];
    format!("{dir}f{}.{ext}", i % 5)
}

fn content(seed: u8, path: &str) -> String {
    let body: String = (0..usize::from(seed % 7) * 20)
        .map(|i| format!("word{} ", (i * 7 + usize::from(seed)) % 13))
        .collect();
    if path.ends_with(".rs") {
        format!("/// Doc {seed}.\npub fn f{seed}() {{ let _ = \"{body}\"; }}\n")
    } else if path.ends_with(".md") {
        format!("# Title {seed}\n\n{body}\n\n## Sub\n\nmore {seed}\n")
    } else {
        format!("text {seed}\n\n{body}\n")
    }
}

/// The refreshed index holds exactly the committed chunks, answers as a fresh index of
/// the same state does, and finds each file's current text under its current path.
fn check_search(
    store: &Store,
    index: &SearchIndex,
    embedder: &HashEmbedder,
    files: &BTreeMap<String, String>,
) -> Result<(), TestCaseError> {
    index.refresh(store).unwrap();
    let snap = index.snapshot();
    prop_assert_eq!(snap.state_root(), store.state_root().unwrap());
    prop_assert_eq!(
        snap.chunk_ids(),
        store.begin_read().unwrap().chunk_ids().unwrap()
    );
    let fresh = SearchIndex::open(store, embedder, IndexOptions::exact()).unwrap();
    // Opened from index files: the ones an earlier step saved (the mapped base and its
    // delta brought forward by the diff), and the ones saved now: on odd commits a
    // delta written by the index opened from the files, else a whole file.
    let cache = store.path().with_file_name("index.cache");
    let open_file = || SearchIndex::open_from_file(store, embedder, IndexOptions::exact(), &cache);
    let mut reopened = Vec::new();
    let mut saved = None;
    if cache.exists() {
        // Merges past two chunks: the segments beside the mapped base merge, and a save
        // past a quarter of it writes a whole file merged as it is written.
        let merging = IndexOptions {
            merge_min_chunks: 2,
            ..IndexOptions::exact()
        };
        let from_files = SearchIndex::open_from_file(store, embedder, merging, &cache)
            .unwrap()
            .0;
        if snap.sequence() % 2 == 1 {
            saved = Some(from_files.save_index_file(&cache).unwrap());
        }
        reopened.push(from_files);
    }
    if saved.is_none() {
        prop_assert_eq!(index.save_index_file(&cache).unwrap(), SavedAs::Whole);
    }
    let (now, status) = open_file().unwrap();
    prop_assert_eq!(status, IndexFileStatus::Current);
    reopened.push(now);
    // The index file written straight from the store is the one written from memory.
    let (from_memory, from_store) = (
        cache.with_file_name("a.cache"),
        cache.with_file_name("b.cache"),
    );
    let _ = std::fs::remove_file(&from_store);
    fresh.save_index_file(&from_memory).unwrap();
    // And so is a whole file merged from the mapped base and the segments beside it.
    if saved == Some(SavedAs::Whole) {
        prop_assert_eq!(
            std::fs::read(&from_memory).unwrap(),
            std::fs::read(&cache).unwrap()
        );
    }
    let (built, status) =
        SearchIndex::open_or_build_file(store, embedder, IndexOptions::exact(), &from_store)
            .unwrap();
    prop_assert_eq!(status, IndexFileStatus::Written { reason: None });
    prop_assert_eq!(
        std::fs::read(&from_memory).unwrap(),
        std::fs::read(&from_store).unwrap()
    );
    reopened.push(built);
    for path in files.keys() {
        let ids = |i: &SearchIndex| -> Vec<_> {
            i.snapshot()
                .chunks_at_path(path)
                .iter()
                .map(|c| (c.id, c.doc.paths.clone()))
                .collect()
        };
        for other in &reopened {
            prop_assert_eq!(ids(other), ids(&fresh));
        }
    }
    for q in ["word3 word7", "title doc", "f12 text more", "src docs"] {
        for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
            let mut query = Query::new(q).mode(mode).k(8);
            query.exact = true;
            let a = index.search(&query, embedder).unwrap();
            let b = fresh.search(&query, embedder).unwrap();
            prop_assert_eq!(&a, &b);
            for other in &reopened {
                prop_assert_eq!(&other.search(&query, embedder).unwrap(), &b);
            }
        }
    }
    for (path, text) in files {
        let Some(word) = cfs_search::tokens(text).into_iter().next() else {
            continue;
        };
        let filter = Filter {
            path_prefix: Some(path.clone()),
            ..Filter::default()
        };
        let query = Query::new(word.clone())
            .mode(Mode::Text)
            .filter(filter)
            .k(50);
        let hits = index.search(&query, embedder).unwrap();
        prop_assert!(!hits.is_empty(), "{} not found in {}", word, path);
        let read = store.begin_read().unwrap();
        for hit in hits {
            prop_assert!(hit.paths.contains(path));
            let chunk = read.chunk(&hit.chunk_id).unwrap();
            prop_assert_eq!(chunk.map(|c| c.text), Some(hit.text.clone()));
            prop_assert!(text.contains(&hit.text));
        }
    }
    Ok(())
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..15, any::<u8>()).prop_map(|(f, s)| Op::Write(f, s)),
        1 => (0u8..15).prop_map(Op::Shrink),
        1 => (0u8..15).prop_map(Op::Truncate),
        2 => (0u8..15).prop_map(Op::Delete),
        2 => (0u8..15, 0u8..15).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (0u8..15, 0u8..15).prop_map(|(a, b)| Op::Copy(a, b)),
        2 => (0u8..15, any::<u8>()).prop_map(|(a, k)| Op::Swap(a, k)),
        1 => (0u8..15).prop_map(Op::CaseRename),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    // 4 cases by default, 24 with CFS_SLOW_TESTS=1 (CI), 300 with CFS_SLOW_TESTS=full.
    #![proptest_config(ProptestConfig {
        cases: if crate::support::exhaustive() { 300 } else { crate::support::scaled(4, 24) as u32 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_step_equals_a_clean_index(
        ops in prop::collection::vec(op_strategy(), 1..14),
        scoped in any::<bool>(),
        one_batch in any::<bool>(),
    ) {
        let tree = tempfile::tempdir().unwrap();
        let db = tempfile::tempdir().unwrap();
        let root = tree.path();
        // Commits every 3 files; or one commit per sync, its files parsed 2 at a time,
        // each pair while the pair before is written, with no memory for staged rows
        // (every pair's rows are spilled to a run, the runs merged at commit).
        let (batch_files, parse_files) = if one_batch { (1000, 2) } else { (3, 1024) };
        let memory_bytes = if one_batch { 0 } else { cfs_store::DEFAULT_SYNC_MEMORY };
        let options =
            SyncOptions { batch_files, parse_files, memory_bytes, ..SyncOptions::default() };
        let embedder = HashEmbedder::new(16);
        let path = db.path().join("store.redb");
        let mut store = Store::create(&path, settings(&options, &embedder)).unwrap();
        let mut files: BTreeMap<String, String> = BTreeMap::new();
        let search_options = IndexOptions { merge_min_chunks: 3, ..IndexOptions::exact() };
        let index = SearchIndex::open(&store, &embedder, search_options).unwrap();
        for op in ops {
            // The paths the operation touched, as a watcher would report them.
            let mut touched: Vec<String> = match &op {
                Op::Write(f, _) | Op::Shrink(f) | Op::Truncate(f) | Op::Delete(f) => vec![name(*f)],
                Op::Rename(a, b) | Op::Copy(a, b) => vec![name(*a), name(*b)],
                Op::Swap(a, _) => vec![name(*a)],
                Op::CaseRename(f) => vec![name(*f), name(*f).replace("f", "F")],
                Op::Reopen => Vec::new(),
            };
            match op {
                Op::Write(f, s) => {
                    let p = name(f);
                    let c = content(s, &p);
                    write(root, &p, &c);
                    files.insert(p, c);
                }
                Op::Shrink(f) => {
                    if let Some(c) = files.get(&name(f)).cloned() {
                        let half: String = c.chars().take(c.chars().count() / 2).collect();
                        write(root, &name(f), &half);
                        files.insert(name(f), half);
                    }
                }
                Op::Truncate(f) => {
                    if files.contains_key(&name(f)) {
                        write(root, &name(f), "");
                        files.insert(name(f), String::new());
                    }
                }
                Op::Delete(f) => {
                    if files.remove(&name(f)).is_some() {
                        std::fs::remove_file(root.join(name(f))).unwrap();
                    }
                }
                Op::Rename(a, b) => {
                    if a != b && let Some(c) = files.remove(&name(a)) {
                        std::fs::create_dir_all(root.join(name(b)).parent().unwrap()).unwrap();
                        std::fs::rename(root.join(name(a)), root.join(name(b))).unwrap();
                        files.insert(name(b), c);
                    }
                }
                Op::Copy(a, b) => {
                    if a != b && let Some(c) = files.get(&name(a)).cloned() {
                        write(root, &name(b), &c);
                        files.insert(name(b), c);
                    }
                }
                Op::Swap(a, k) => {
                    let pa = name(a);
                    let ext = pa.rsplit('.').next().unwrap_or_default().to_owned();
                    let others: Vec<String> = files
                        .keys()
                        .filter(|p| **p != pa && p.ends_with(&format!(".{ext}")))
                        .cloned()
                        .collect();
                    if let Some(ca) = files.get(&pa).cloned()
                        && !others.is_empty()
                    {
                        let pb = others[usize::from(k) % others.len()].clone();
                        let cb = files[&pb].clone();
                        write(root, &pa, &cb);
                        write(root, &pb, &ca);
                        files.insert(pa, cb);
                        files.insert(pb.clone(), ca);
                        touched.push(pb);
                    }
                }
                Op::CaseRename(f) => {
                    if let Some(c) = files.remove(&name(f)) {
                        let upper = name(f).replace("f", "F");
                        std::fs::rename(root.join(name(f)), root.join(&upper)).unwrap();
                        files.insert(upper, c);
                    }
                }
                Op::Reopen => {
                    drop(store);
                    store = Store::open(&path).unwrap();
                }
            }
            let report = if scoped {
                let scope = cfs_ingest::Scope::new(&touched);
                store.sync_paths(root, &scope, &options, &embedder, &|_| {}).unwrap()
            } else {
                store.sync(root, &options, &embedder, &|_| {}).unwrap()
            };
            prop_assert_eq!(report.root, clean_root(root, &options, &embedder));
            let verify = store.verify().unwrap();
            prop_assert!(verify.is_ok(), "{:?}", verify.problems);
            let counts = store.begin_read().unwrap().counts().unwrap();
            prop_assert_eq!(counts.paths as usize, files.len());
            let again = store.sync(root, &options, &embedder, &|_| {}).unwrap();
            prop_assert_eq!(again.commits, 0);
            prop_assert_eq!(again.root, report.root);
            check_search(&store, &index, &embedder, &files)?;
        }
    }
}
