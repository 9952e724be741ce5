//! Search from the database answers as a local search of each repository's store
//! does, on the standby, before and after edits are published; across repositories
//! the answers merge by score; `check_answers` proves each result and names damage.

use std::path::Path;

use cfs_ingest::{HashEmbedder, Role};
use cfs_postgres::{Database, DbSearchOptions, PublishOptions, publish, search};
use cfs_search::{Filter, Hit, IndexOptions, Mode, Query, SearchIndex};

use crate::support::{Fixture, TestDb, remove, test_db, write};

/// Copies the `.rs` files of the workspace folders `dirs` into `tree`, under their
/// workspace paths: real code to search.
fn copy_sources(tree: &Path, dirs: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for dir in dirs {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                write(tree, &rel, &std::fs::read_to_string(&path).unwrap());
            }
        }
    }
}

/// Queries of every kind: bare names, qualified names, descriptions, mixed words,
/// each retriever alone, and filters.
fn queries() -> Vec<Query> {
    let filtered = |text: &str, filter: Filter| Query::new(text).filter(filter);
    vec![
        Query::new("Snapshot"),
        Query::new("rank_chunks"),
        Query::new("FilterSql::new"),
        Query::new("log2 in fixed point for the inverse document frequency"),
        Query::new("merge the small segments into the base when they grow"),
        Query::new("tombstone a dead chunk in its segment"),
        Query::new("sum of a file's chunk vectors scored against the query"),
        Query::new("compare and swap the head on its old root"),
        Query::new("hnsw seed").mode(Mode::Text),
        Query::new("how are ties between equal scores ordered").mode(Mode::Vector),
        Query::new("definition terms of a code chunk").k(25),
        Query::new("memtable probe header").mode(Mode::Text),
        filtered(
            "segment postings",
            Filter {
                path_prefix: Some("cfs-search/src/s".into()),
                language: Some("rust".into()),
                ..Filter::default()
            },
        ),
        filtered(
            "test",
            Filter {
                kind: Some("code".into()),
                role: Some(Role::Source),
                ..Filter::default()
            },
        ),
    ]
}

fn options(repo: &str) -> PublishOptions {
    PublishOptions {
        repo: repo.into(),
        repair: false,
    }
}

fn only(repo: &str) -> DbSearchOptions {
    DbSearchOptions {
        repos: vec![repo.into()],
        check_answers: false,
    }
}

/// For each repository and query: the database's answer (from the standby when there
/// is one) is the local exact search's, hit for hit, every field and score equal.
fn check_equal(t: &TestDb, repos: &[(&str, &Fixture)]) -> Database {
    let embedder = HashEmbedder::default();
    let mut db = Database::connect(&t.standby_url().unwrap_or_else(|| t.url())).unwrap();
    for (name, f) in repos {
        let index = SearchIndex::open(&f.store, &embedder, IndexOptions::exact()).unwrap();
        let mut file_texts = 0;
        for q in queries() {
            let local = index.search(&q.clone().exact(true), &embedder).unwrap();
            let found = search(&mut db, &q, &embedder, &only(name)).unwrap();
            let found: Vec<Hit> = found.hits.into_iter().map(|h| h.hit).collect();
            assert!(!local.is_empty(), "{name}: {:?} finds nothing", q.text);
            assert_eq!(found, local, "{name}: {:?}", q.text);
            file_texts += local
                .iter()
                .filter(|h| h.parts.evidence.text_rank.is_some())
                .count();
        }
        assert!(
            file_texts > 0,
            "{name}: no description ranked files by their text"
        );
    }
    db
}

#[test]
fn search_from_the_database_equals_local_search_before_and_after_edits() {
    let Some(t) = test_db() else { return };
    let x = Fixture::of(|tree| copy_sources(tree, &["cfs-search/src"]));
    let y = Fixture::of(|tree| {
        copy_sources(tree, &["cfs-search/src", "cfs-postgres/src"]);
        let header = "/* memtable probe header */\nint memtable_probe(int key);\n";
        write(tree, "native/table.h", header);
    });
    let mut primary = t.connect();
    for (name, f) in [("x", &x), ("y", &y)] {
        let report = publish(&f.store, &mut primary, &options(name)).unwrap();
        assert!(report.search_rows > 0, "{report:?}");
    }
    check_equal(&t, &[("x", &x), ("y", &y)]);
    // A changed file, a removed one and a renamed one: only their documents' search
    // rows are written again, and the totals move with them. An implementation file
    // beside a header makes the header a declaration (its rows are written again).
    let tree = y.tree();
    write(
        &tree,
        "native/table.c",
        "int memtable_probe(int key) { return key; }\n",
    );
    write(
        &tree,
        "cfs-search/src/bm25.rs",
        "pub fn idf() -> u64 { 1 }\n",
    );
    remove(&tree, "cfs-search/src/tokenize.rs");
    let moved = std::fs::read_to_string(tree.join("cfs-search/src/rank.rs")).unwrap();
    remove(&tree, "cfs-search/src/rank.rs");
    write(&tree, "cfs-search/src/ranking.rs", &moved);
    y.sync();
    let report = publish(&y.store, &mut primary, &options("y")).unwrap();
    let chunks = y.store.begin_read().unwrap().counts().unwrap().chunks as usize;
    assert!(
        report.search_rows > 0 && report.search_rows < chunks / 4,
        "{report:?}"
    );
    check_equal(&t, &[("x", &x), ("y", &y)]);
}

#[test]
fn answers_across_repositories_merge_by_score_and_prove() {
    let Some(t) = test_db() else { return };
    let x = Fixture::of(|tree| copy_sources(tree, &["cfs-search/src"]));
    let y = Fixture::of(|tree| copy_sources(tree, &["cfs-postgres/src"]));
    let mut primary = t.connect();
    publish(&x.store, &mut primary, &options("x")).unwrap();
    publish(&y.store, &mut primary, &options("y")).unwrap();
    let mut db = Database::connect(&t.standby_url().unwrap_or_else(|| t.url())).unwrap();
    let embedder = HashEmbedder::default();
    let q = Query::new("read the rows of a bucket and their leaves").k(12);
    let each: Vec<Vec<Hit>> = ["x", "y"]
        .iter()
        .map(|r| search(&mut db, &q, &embedder, &only(r)).unwrap())
        .map(|a| a.hits.into_iter().map(|h| h.hit).collect())
        .collect();
    let proving = DbSearchOptions {
        repos: Vec::new(),
        check_answers: true,
    };
    let all = search(&mut db, &q, &embedder, &proving).unwrap();
    assert_eq!(all.repos.len(), 2);
    assert_eq!(all.hits.len(), 12);
    assert!(all.hits.iter().any(|h| h.repo == "x") && all.hits.iter().any(|h| h.repo == "y"));
    for w in all.hits.windows(2) {
        assert!(w[0].hit.parts.score >= w[1].hit.parts.score);
    }
    for h in &all.hits {
        let place = usize::from(h.repo == "y");
        assert!(each[place].contains(&h.hit), "{} {}", h.repo, h.hit.path);
        let proof = h.proof.as_ref().expect("proved");
        assert_eq!(proof.root, all.repos[place].root);
    }
    // A bucket root altered by hand: the proof of a result in that bucket fails and
    // names it.
    let first = &all.hits[0];
    let bucket = cfs_core::Bucket::of_key(&first.hit.chunk_id.0).0 as i16;
    t.client()
        .execute(
            "UPDATE cfs_bucket_roots SET root = decode(repeat('00', 32), 'hex') \
             WHERE tag = 2 AND bucket = $1 AND repo = (SELECT id FROM cfs_repos WHERE name = $2)",
            &[&bucket, &first.repo],
        )
        .unwrap();
    let mut db = Database::connect(&t.standby_url().unwrap_or_else(|| t.url())).unwrap();
    let err = search(&mut db, &q, &embedder, &proving)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bucket") && err.contains(&first.repo), "{err}");
}

#[test]
fn search_refusals_name_the_reason() {
    let Some(t) = test_db() else { return };
    let x = Fixture::of(|tree| copy_sources(tree, &["cfs-postgres/src"]));
    let mut db = t.connect();
    publish(&x.store, &mut db, &options("x")).unwrap();
    let embedder = HashEmbedder::default();
    let err = search(&mut db, &Query::new("publish"), &embedder, &only("nope")).unwrap_err();
    assert!(err.to_string().contains("no repository \"nope\"") && err.to_string().contains("x"));
    let collection = Query::new("publish").filter(Filter {
        collection: Some("c".into()),
        ..Filter::default()
    });
    let err = search(&mut db, &collection, &embedder, &only("x")).unwrap_err();
    assert!(err.to_string().contains("collection"), "{err}");
}

#[test]
fn rows_derived_by_other_rules_are_refused_then_written_again() {
    let Some(t) = test_db() else { return };
    let x = Fixture::of(|tree| {
        copy_sources(tree, &["cfs-postgres/src"]);
        write(tree, "native/table.h", "int memtable_probe(int key);\n");
        write(
            tree,
            "native/table.c",
            "int memtable_probe(int key) { return key; }\n",
        );
    });
    let mut db = t.connect();
    publish(&x.store, &mut db, &options("x")).unwrap();
    let embedder = HashEmbedder::default();
    let q = Query::new("memtable probe").mode(Mode::Text);
    let local = SearchIndex::open(&x.store, &embedder, IndexOptions::exact()).unwrap();
    let want = local.search(&q.clone().exact(true), &embedder).unwrap();
    let chunks = x.store.begin_read().unwrap().counts().unwrap().chunks;
    assert!(want.iter().any(|h| h.role == Role::Declaration), "{want:?}");
    // Rows as an older cfs derived them (its headers were source), then a database of
    // schema 3 (no rows version): readers refuse each, saying why, until the next
    // publish, with nothing else to do, writes every search row again.
    let mut client = t.client();
    let stale = [
        (
            "UPDATE cfs_search_stats SET rows_version = 1",
            ["\"x\"", "publish it again"],
        ),
        (
            "ALTER TABLE cfs_search_stats DROP COLUMN rows_version; \
             UPDATE cfs_schema SET version = 3",
            ["[3]", "a publish into it"],
        ),
    ];
    for (damage, says) in stale {
        client.batch_execute(damage).unwrap();
        let err = search(&mut db, &q, &embedder, &only("x"))
            .unwrap_err()
            .to_string();
        assert!(says.iter().all(|s| err.contains(s)), "{err}");
        let report = publish(&x.store, &mut db, &options("x")).unwrap();
        assert_eq!(report.search_rows as u64, chunks, "{report:?}");
        let found = search(&mut db, &q, &embedder, &only("x")).unwrap();
        let found: Vec<Hit> = found.hits.into_iter().map(|h| h.hit).collect();
        assert_eq!(found, want);
    }
}

/// Search rows damaged by hand (a NULL in an array, a negative total, a file vector of
/// the wrong length or out of range, a text gone) make the search an error naming the
/// damage, never a panic or a silently wrong answer; a bad head of another repository
/// does not stop a search of this one.
#[test]
fn damaged_search_rows_are_errors_not_panics() {
    let Some(t) = test_db() else { return };
    let x = Fixture::of(|tree| copy_sources(tree, &["cfs-postgres/src"]));
    let mut db = t.connect();
    publish(&x.store, &mut db, &options("x")).unwrap();
    publish(&x.store, &mut db, &options("y")).unwrap();
    let embedder = HashEmbedder::default();
    // Vectors searched (the hash embedder's weigh nothing in a hybrid search), so that
    // file vectors are read.
    let q = Query::new("publish the rows of a repository").mode(Mode::Vector);
    let mut client = t.client();
    let damages = [
        (
            "UPDATE cfs_search_docs SET paths = array_append(paths, NULL) WHERE repo = \
             (SELECT id FROM cfs_repos WHERE name = 'x')",
            "NULL",
        ),
        (
            "UPDATE cfs_search_stats SET chunks = -5 WHERE repo = \
             (SELECT id FROM cfs_repos WHERE name = 'x')",
            "negative",
        ),
        (
            "UPDATE cfs_search_docs SET file_vector = '\\x0100000000000000'::bytea \
             WHERE repo = (SELECT id FROM cfs_repos WHERE name = 'x') \
             AND file_vector IS NOT NULL",
            "file vector",
        ),
        (
            "UPDATE cfs_search_docs SET file_vector = \
             decode(repeat('0000000000000080', length(file_vector) / 8), 'hex') \
             WHERE repo = (SELECT id FROM cfs_repos WHERE name = 'x') \
             AND file_vector IS NOT NULL",
            "file vector",
        ),
    ];
    for (damage, says) in damages {
        let changed = client.execute(damage, &[]).unwrap();
        assert!(changed > 0, "{damage}: no row changed");
        let err = match search(&mut db, &q, &embedder, &only("x")) {
            Ok(_) => panic!("{damage}: answered"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(says), "{damage}: {err}");
        // The other repository's search is not this damage's.
        assert!(
            search(&mut db, &q, &embedder, &only("y")).is_ok(),
            "{damage}"
        );
        publish(
            &x.store,
            &mut db,
            &PublishOptions {
                repair: true,
                ..options("x")
            },
        )
        .unwrap();
        assert!(
            search(&mut db, &q, &embedder, &only("x")).is_ok(),
            "{damage}: repaired"
        );
    }
    // A head that is not a root in another repository: a search of this one answers.
    client
        .batch_execute(
            "UPDATE cfs_heads SET state_root = '\\x00'::bytea WHERE repo = \
             (SELECT id FROM cfs_repos WHERE name = 'y')",
        )
        .unwrap();
    assert!(search(&mut db, &q, &embedder, &only("x")).is_ok());
}
