//! Search over a store: results, filters, odd queries, refresh by diff, HNSW against
//! exact search, and agreement of an incrementally refreshed index with a fresh one.

use cfs_ingest::HashEmbedder;
use cfs_search::{Filter, Hit, IndexOptions, Mode, Query, SearchIndex};

use crate::support::{corpus, flip_each_byte, setup, write};

fn paths(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.path.as_str()).collect()
}

#[test]
fn finds_code_prose_and_markdown_in_every_mode() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, _) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
        let hits = index
            .search(&Query::new("parse config").mode(mode).k(3), &embedder)
            .unwrap();
        assert_eq!(hits[0].path, "src/parser.rs", "{mode:?}: {hits:#?}");
        assert_eq!(hits[0].symbol.as_deref(), Some("parse_config"));
        assert_eq!(hits[0].language.as_deref(), Some("rust"));
        assert!(hits[0].text.contains("parse_config"));
        assert!(hits[0].snippet.contains("parse_config"));
        assert!(hits[0].start_line >= 1 && hits[0].start_line <= hits[0].end_line);
    }
    // Identifier parts: `HttpClient` is found by `http client`.
    let hits = index
        .search(&Query::new("http client").mode(Mode::Text), &embedder)
        .unwrap();
    assert_eq!(hits[0].path, "src/http.py");
    assert_eq!(hits[0].symbol.as_deref(), Some("HttpClient"));
    // Path tokens are indexed: `guide` finds the guide by its name too.
    let hits = index
        .search(&Query::new("daemon").mode(Mode::Text), &embedder)
        .unwrap();
    assert_eq!(paths(&hits), ["docs/guide.md"]);
    let text = hits[0].text_score.unwrap();
    assert_eq!(text.1, 1);
    assert!(hits[0].vector_score.is_none());
}

#[test]
fn filters_restrict_every_mode() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, _) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let cases = [
        (
            Filter {
                path_prefix: Some("./docs/".into()),
                ..Filter::default()
            },
            "docs/",
        ),
        (
            Filter {
                language: Some("python".into()),
                ..Filter::default()
            },
            "src/http.py",
        ),
        (
            Filter {
                kind: Some("section".into()),
                ..Filter::default()
            },
            "docs/guide.md",
        ),
        (
            Filter {
                mime_type: Some("text/plain".into()),
                ..Filter::default()
            },
            "notes.txt",
        ),
    ];
    for (filter, expect) in cases {
        for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
            let q = Query::new("configuration file url proof")
                .mode(mode)
                .filter(filter.clone())
                .k(20);
            let hits = index.search(&q, &embedder).unwrap();
            assert!(!hits.is_empty(), "{filter:?} {mode:?}");
            assert!(
                hits.iter().all(|h| h.path.starts_with(expect)),
                "{filter:?} {mode:?}: {:?}",
                paths(&hits)
            );
        }
    }
    let none = Filter {
        collection: Some("nope".into()),
        ..Filter::default()
    };
    // A collection no chunk is in is an error (a_filter_value_no_chunk_has_...).
    assert!(
        index
            .search(&Query::new("configuration").filter(none), &embedder)
            .is_err()
    );
}

#[test]
fn odd_queries_and_empty_stores_give_lists_not_errors() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let (store, embedder, options) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let odd = [
        "",
        " ",
        "C++",
        "zk-snark",
        "what?",
        "\"quoted phrase\"",
        "a AND (b OR",
        "*",
        "-x",
        "\u{0}",
        "日本語",
    ];
    for q in odd {
        for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
            let hits = index.search(&Query::new(q).mode(mode), &embedder).unwrap();
            assert!(hits.is_empty(), "empty store, {q:?}");
        }
    }
    corpus(tree.path());
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    index.refresh(&store).unwrap();
    for q in odd {
        for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
            index.search(&Query::new(q).mode(mode), &embedder).unwrap();
        }
    }
    let hits = index
        .search(&Query::new("zk-snark C++").mode(Mode::Text), &embedder)
        .unwrap();
    assert_eq!(paths(&hits), ["notes.txt"]);
    let empty = index.search(&Query::new("").k(5), &embedder).unwrap();
    assert!(empty.is_empty());
    let zero = index.search(&Query::new("config").k(0), &embedder).unwrap();
    assert!(zero.is_empty());
}

/// Chunks of equal score in two segments: the first `k` are the smallest chunk ids
/// among them, as in one segment, whichever segment holds them and wherever `k` cuts.
#[test]
fn equal_scores_across_segments_are_ordered_by_chunk_id() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let words = [
        "alpha", "bravo", "delta", "gamma", "kilo", "lima", "oscar", "papa",
    ];
    for (n, w) in words.iter().enumerate().take(4) {
        write(tree.path(), &format!("f{n}.txt"), &format!("walrus {w}\n"));
    }
    let (store, embedder, options) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    for (n, w) in words.iter().enumerate().skip(4) {
        write(tree.path(), &format!("f{n}.txt"), &format!("walrus {w}\n"));
    }
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    index.refresh(&store).unwrap();
    assert_eq!(index.snapshot().n_segments(), 2);
    let fresh = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    for k in 1..=8 {
        let q = Query::new("walrus").mode(Mode::Text).k(k);
        let got = index.search(&q, &embedder).unwrap();
        assert_eq!(got, fresh.search(&q, &embedder).unwrap(), "k {k}");
        let ids: Vec<_> = got.iter().map(|h| h.chunk_id).collect();
        assert!(ids.is_sorted(), "k {k}: equal scores follow chunk ids");
    }
}

#[test]
fn refresh_follows_edits_and_old_snapshots_stay_whole() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, options) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let before = index.snapshot();
    let text = |q: &str| Query::new(q).mode(Mode::Text);

    write(tree.path(), "notes.txt", "Remember the walrus.\n");
    std::fs::rename(
        tree.path().join("docs/guide.md"),
        tree.path().join("docs/manual.md"),
    )
    .unwrap();
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let report = index.refresh(&store).unwrap();
    let diff = report.diff.unwrap();
    assert_eq!(report.root, store.state_root().unwrap());
    assert!(
        diff.added >= 1 && diff.removed >= 1 && diff.repathed >= 1,
        "{diff:?}"
    );

    // New text found, old text gone, renamed file under its new path.
    assert_eq!(
        paths(&index.search(&text("walrus"), &embedder).unwrap()),
        ["notes.txt"]
    );
    assert!(index.search(&text("milk"), &embedder).unwrap().is_empty());
    let daemon = index.search(&text("daemon"), &embedder).unwrap();
    assert_eq!(paths(&daemon), ["docs/manual.md"]);
    // Path tokens are indexed with every chunk of the document.
    let manual = index.search(&text("manual"), &embedder).unwrap();
    assert_eq!(manual.len(), 2);
    assert!(manual.iter().all(|h| h.path == "docs/manual.md"));
    // The snapshot taken before still answers from its own state.
    let old = cfs_search::search(&before, &text("milk"), &embedder).unwrap();
    assert_eq!(paths(&old), ["notes.txt"]);
    assert!(old[0].text.contains("milk"));
    // No new commit: nothing to do.
    assert_eq!(index.refresh(&store).unwrap().diff, None);
    let snap = index.snapshot();
    assert_eq!(snap.chunks_at_path("docs/manual.md").len(), 2);
    assert!(snap.chunks_at_path("docs/guide.md").is_empty());
}

#[test]
fn hnsw_agrees_with_exact_search() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    for i in 0..300 {
        let words: String = (0..12)
            .map(|j| format!("w{} ", (i * 31 + j * 17) % 97))
            .collect();
        write(tree.path(), &format!("d/{i}.txt"), &words);
    }
    let (store, embedder, _) = setup(tree.path(), db.path());
    let options = IndexOptions {
        hnsw_min_vectors: Some(1),
        hnsw_background: false,
        ..IndexOptions::default()
    };
    let index = SearchIndex::open(&store, &embedder, options).unwrap();
    assert!(index.snapshot().has_hnsw());
    let mut found = 0;
    let mut total = 0;
    for i in 0..40 {
        let q = format!("w{} w{} w{}", i % 97, (i * 3) % 97, (i * 7) % 97);
        let approx = index
            .search(&Query::new(&q).mode(Mode::Vector).k(10), &embedder)
            .unwrap();
        let mut query = Query::new(&q).mode(Mode::Vector).k(10);
        query.exact = true;
        let exact = index.search(&query, &embedder).unwrap();
        total += exact.len();
        found += exact
            .iter()
            .filter(|e| approx.iter().any(|a| a.chunk_id == e.chunk_id))
            .count();
        // Candidates are re-scored exactly: equal scores for the chunks found.
        for a in &approx {
            if let Some(e) = exact.iter().find(|e| e.chunk_id == a.chunk_id) {
                assert_eq!(a.vector_score.unwrap().0, e.vector_score.unwrap().0);
            }
        }
    }
    assert!(found * 100 >= total * 95, "recall {found}/{total}");
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, _) = setup(tree.path(), db.path());
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
            index
                .search(&Query::new("configuration file socket").k(20), &embedder)
                .unwrap()
        })
    };
    let one = run(1);
    assert!(!one.is_empty());
    assert_eq!(one, run(2));
    assert_eq!(one, run(4));
}

#[test]
fn cache_files_are_used_caught_up_or_rebuilt_never_trusted() {
    use cfs_search::IndexFileStatus;
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, options) = setup(tree.path(), db.path());
    let cache = db.path().join("index.cache");
    let queries = [
        "parse config",
        "daemon configuration",
        "walrus",
        "http client",
    ];
    let same_as_fresh = |index: &SearchIndex| {
        let fresh = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
        assert_eq!(index.snapshot().chunk_ids(), fresh.snapshot().chunk_ids());
        for q in queries {
            for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
                let q = Query::new(q).mode(mode);
                assert_eq!(
                    index.search(&q, &embedder).unwrap(),
                    fresh.search(&q, &embedder).unwrap()
                );
            }
        }
    };

    let (index, status) =
        SearchIndex::open_from_file(&store, &embedder, IndexOptions::exact(), &cache).unwrap();
    assert_eq!(status, IndexFileStatus::Missing);
    index.save_index_file(&cache).unwrap();
    let (index, status) =
        SearchIndex::open_from_file(&store, &embedder, IndexOptions::exact(), &cache).unwrap();
    assert_eq!(status, IndexFileStatus::Current);
    same_as_fresh(&index);

    // An older cache is brought forward by the diff.
    write(tree.path(), "notes.txt", "Remember the walrus.\n");
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    let (index, status) =
        SearchIndex::open_from_file(&store, &embedder, IndexOptions::exact(), &cache).unwrap();
    assert!(
        matches!(status, IndexFileStatus::CaughtUp { changed, delta: 0, merged: false } if changed >= 2),
        "{status:?}"
    );
    same_as_fresh(&index);
    // Written whole (the delta file is the subject of `delta.rs`).
    SearchIndex::open(&store, &embedder, IndexOptions::exact())
        .unwrap()
        .save_index_file(&cache)
        .unwrap();

    // Torn, altered or foreign files are rebuilt from the store.
    let good = std::fs::read(&cache).unwrap();
    let rebuilt = |bytes: &[u8]| {
        std::fs::write(&cache, bytes).unwrap();
        let (index, status) =
            SearchIndex::open_from_file(&store, &embedder, IndexOptions::exact(), &cache).unwrap();
        same_as_fresh(&index);
        match status {
            IndexFileStatus::Rebuilt(reason) => reason,
            other => panic!("{other:?}"),
        }
    };
    assert!(rebuilt(&good[..good.len() / 2]).contains("torn"));
    assert!(rebuilt(&good[..70]).contains("torn"));
    let mut flipped = good.clone();
    flipped[100] ^= 1;
    assert!(rebuilt(&flipped).contains("header"));
    // A header length that overflows when the hash's 32 bytes are added to it.
    let mut long = good.clone();
    long[24..32].copy_from_slice(&0xFFFF_FFFF_FFFF_FFC0u64.to_le_bytes());
    assert!(rebuilt(&long).contains("header's length"));
    assert!(rebuilt(b"").contains("not an index file"));
    assert!(
        rebuilt(b"garbage that is long enough to have a checksum field at the end")
            .contains("not an index file")
    );
    assert_eq!(
        cfs_search::verify_index_file(&cache).map_err(|_| ()),
        Err(())
    );
    std::fs::write(&cache, &good).unwrap();
    assert_eq!(cfs_search::verify_index_file(&cache), Ok(good.len()));

    // A sound file of another store's state is not this store's.
    let other_tree = tempfile::tempdir().unwrap();
    let other_db = tempfile::tempdir().unwrap();
    write(other_tree.path(), "x.txt", "another store\n");
    write(other_tree.path(), "y.txt", "with other text\n");
    let (other, _, _) = setup(other_tree.path(), other_db.path());
    let other_index = SearchIndex::open(&other, &embedder, IndexOptions::exact()).unwrap();
    other_index.save_index_file(&cache).unwrap();
    let (index, status) =
        SearchIndex::open_from_file(&store, &embedder, IndexOptions::exact(), &cache).unwrap();
    assert!(
        matches!(&status, IndexFileStatus::Rebuilt(r) if r.contains("not in this store's chain")),
        "{status:?}"
    );
    same_as_fresh(&index);
}

/// A byte flipped anywhere in an index file: opening it never panics; either the file
/// is refused (and the index rebuilt), or searching it never panics and
/// `verify_index_file` names the damaged section.
#[test]
fn a_flipped_byte_in_an_index_file_is_refused_or_found_by_verify() {
    use cfs_search::IndexFileStatus;
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, _) = setup(tree.path(), db.path());
    let cache = db.path().join("index.cache");
    SearchIndex::open(&store, &embedder, IndexOptions::exact())
        .unwrap()
        .save_index_file(&cache)
        .unwrap();
    let (refused, found_by_verify) = flip_each_byte(&store, &embedder, &cache, &cache, |s| {
        matches!(s, IndexFileStatus::Rebuilt(_))
    });
    assert!(
        refused > 0 && found_by_verify > 0,
        "{refused} {found_by_verify}"
    );
}

#[test]
fn a_filter_value_no_chunk_has_is_an_error_listing_what_exists() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, _) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let run = |filter: Filter| index.search(&Query::new("parse config").filter(filter), &embedder);
    let err = run(Filter {
        language: Some("rsut".into()),
        ..Filter::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("\"rsut\"") && err.contains("python, rust"),
        "{err}"
    );
    let err = run(Filter {
        kind: Some("function".into()),
        ..Filter::default()
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("code, page, section, text"), "{err}");
    let err = run(Filter {
        mime_type: Some("text/x-cobol".into()),
        ..Filter::default()
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("text/markdown"), "{err}");
    let err = run(Filter {
        collection: Some("backend".into()),
        ..Filter::default()
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("none"), "{err}");
    // A value that exists but matches nothing here is an empty answer, not an error.
    let hits = index
        .search(
            &Query::new("milk").mode(Mode::Text).filter(Filter {
                language: Some("python".into()),
                ..Filter::default()
            }),
            &embedder,
        )
        .unwrap();
    assert!(hits.is_empty());
}

/// `explain` agrees with the search it describes: each term's document frequency is
/// the number of chunks a text search for that term alone finds, the candidates are
/// the chunks holding any term, and the vector side runs as the mode says.
#[test]
fn explain_agrees_with_the_search() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, embedder, _) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let found = |q: &str| {
        let q = Query::new(q).mode(Mode::Text).k(100);
        index.search(&q, &embedder).unwrap().len() as u64
    };
    let query = Query::new("configuration file walrus").mode(Mode::Text);
    let e = index.explain(&query, &embedder, false);
    assert_eq!(e.depth, 50);
    assert_eq!(index.explain(&query, &embedder, true).depth, 160);
    assert_eq!(
        index.explain(&query.clone().k(20), &embedder, true).depth,
        320
    );
    let words: Vec<&str> = e.terms.iter().map(|t| t.term.as_str()).collect();
    assert_eq!(words, ["configuration", "file", "walrus"]);
    let n = index.snapshot().n_chunks() as u64;
    for t in &e.terms {
        assert_eq!(t.df, found(&t.term), "{}", t.term);
        let idf = if t.df == 0 {
            0
        } else {
            cfs_search::idf(n, t.df)
        };
        assert_eq!(t.idf, idf, "{}", t.term);
    }
    assert_eq!(e.text_candidates as u64, found("configuration file walrus"));
    assert!(!e.vector_runs && e.vector_exact);
    assert_eq!(e.segments.len(), 1);
    assert_eq!(e.segments[0].live, index.snapshot().n_chunks());
    let e = index.explain(&query.clone().mode(Mode::Vector), &embedder, false);
    assert!(e.vector_runs && e.terms.is_empty() && e.text_candidates == 0);
    assert_eq!(e.vectors, index.snapshot().n_chunks());
}

/// The hash embedder's vectors, declared dense: its searches may scan sign codes.
struct Dense(HashEmbedder);

impl cfs_ingest::Embedder for Dense {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, cfs_ingest::EmbedError> {
        self.0.embed_batch(texts)
    }
}

/// A mapped segment is searched by its sign codes when the embedder allows it: with
/// fewer chunks than the candidates kept, every live chunk is re-scored, so the answer
/// is the exact one; `Query::exact` and the hash embedder scan every vector; `explain`
/// says which.
#[test]
fn sign_code_scans_keep_the_exact_answer_when_candidates_cover_the_segment() {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let (store, hash, _) = setup(tree.path(), db.path());
    let dense = Dense(hash.clone());
    let cache = db.path().join("index.cache");
    SearchIndex::open(&store, &hash, IndexOptions::exact())
        .unwrap()
        .save_index_file(&cache)
        .unwrap();
    let (mapped, _) =
        SearchIndex::open_from_file(&store, &dense, IndexOptions::exact(), &cache).unwrap();
    let fresh = SearchIndex::open(&store, &hash, IndexOptions::exact()).unwrap();
    for q in [
        "parse config",
        "http client request",
        "daemon restart",
        "milk eggs",
    ] {
        let q = Query::new(q).mode(Mode::Vector).k(5);
        let exact = fresh.search(&q.clone().exact(true), &hash).unwrap();
        assert!(!exact.is_empty());
        assert_eq!(mapped.search(&q, &dense).unwrap(), exact);
        assert_eq!(
            mapped.search(&q.clone().exact(true), &dense).unwrap(),
            exact
        );
    }
    let q = Query::new("parse config").mode(Mode::Vector);
    let e = mapped.explain(&q, &dense, false);
    assert!(e.vector_codes && !e.vector_exact, "{e:?}");
    let e = mapped.explain(&q.clone().exact(true), &dense, false);
    assert!(!e.vector_codes && e.vector_exact, "{e:?}");
    let e = mapped.explain(&q, &hash, false);
    assert!(!e.vector_codes && e.vector_exact, "{e:?}");
}
