//! Integration tests of cfs-postgres against a real primary and standby on loopback:
//! publish and verify, rows shared between repositories, incremental publishes,
//! racing and killed publishers, damage named by verify, collection.

mod search;
mod support;
mod tls;

use cfs_postgres::{DbError, PublishOptions, publish, verify};
use support::{Fixture, remove, test_db, write};

fn options(repo: &str) -> PublishOptions {
    PublishOptions {
        repo: repo.into(),
        repair: false,
    }
}

/// A first publish sends every row, telling its progress; the repository verifies, on
/// the primary and on the standby, to the store's root; a second publish of the same
/// state sends nothing.
#[test]
fn publish_then_verify_on_primary_and_standby() {
    let Some(t) = test_db() else { return };
    let f = Fixture::new("a", 0);
    let mut db = t.connect();
    let told = std::sync::Mutex::new(Vec::new());
    let record = |p: cfs_postgres::PublishProgress| told.lock().unwrap().push(p);
    let first = cfs_postgres::publish_with(&f.store, &mut db, &options("a"), &record).unwrap();
    let root = f.store.state_root().unwrap();
    // Told after each group of buckets, ending with all of them.
    let told = told.into_inner().unwrap();
    assert_eq!(told[0].done, 0);
    assert!(told.windows(2).all(|w| w[0].done < w[1].done), "{told:?}");
    let last = told.last().unwrap();
    assert_eq!((last.done, last.total), (first.buckets, first.buckets));
    assert_eq!((first.root, first.previous), (root, None));
    assert_eq!(first.rows_added as u64, f.rows());
    assert!(first.rows_sent > 0 && first.vectors_sent > 0 && first.rows_removed == 0);
    let checked = verify(&mut db, "a").unwrap();
    assert!(checked.is_ok(), "{checked:?}");
    assert_eq!((checked.head, checked.rows_checked), (root, f.rows()));
    let again = publish(&f.store, &mut db, &options("a")).unwrap();
    assert_eq!(
        (again.previous, again.buckets, again.bytes_sent),
        (Some(root), 0, 0)
    );
    if let Some(url) = t.standby_url() {
        let mut standby = cfs_postgres::Database::connect(&url).unwrap();
        let there = verify(&mut standby, "a").unwrap();
        assert!(there.is_ok() && there.head == root, "{there:?}");
        let status = cfs_postgres::status(&mut standby).unwrap();
        assert_eq!(status.repos[0].state_root, Some(root));
        let refused = publish(&f.store, &mut standby, &options("a")).unwrap_err();
        assert!(refused.to_string().contains("is a standby"), "{refused}");
    }
}

/// Two repositories with the same files but a few hold each shared row once: the
/// second publish writes only the rows of its own files and counts the rest shared.
#[test]
fn repositories_share_rows() {
    let Some(t) = test_db() else { return };
    let (a, b) = (Fixture::new("a", 3), Fixture::new("b", 5));
    let mut db = t.connect();
    let first = publish(&a.store, &mut db, &options("a")).unwrap();
    let second = publish(&b.store, &mut db, &options("b")).unwrap();
    assert_eq!(second.rows_added as u64, b.rows());
    assert!(second.rows_shared > second.rows_sent, "{second:?}");
    // Each repository's own notes are new rows; everything else of b was a's.
    let mut client = t.client();
    let chunks: i64 = client
        .query_one("SELECT count(*) FROM cfs_chunks", &[])
        .unwrap()
        .get(0);
    let counts = |f: &Fixture| f.store.begin_read().unwrap().counts().unwrap();
    let (ca, cb) = (counts(&a), counts(&b));
    let shared_chunks = ca.chunks + cb.chunks - chunks as u64;
    assert!(
        shared_chunks > 0 && shared_chunks < ca.chunks.min(cb.chunks),
        "{shared_chunks}"
    );
    let members: i64 = client
        .query_one("SELECT count(*) FROM cfs_members", &[])
        .unwrap()
        .get(0);
    assert_eq!(members as u64, a.rows() + b.rows());
    assert!(first.bytes_sent > second.bytes_sent);
    for repo in ["a", "b"] {
        assert!(verify(&mut db, repo).unwrap().is_ok());
    }
    // Status names both repositories with their heads and counts the shared rows once.
    let status = cfs_postgres::status(&mut db).unwrap();
    let names: Vec<&str> = status.repos.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    for (repo, f) in status.repos.iter().zip([&a, &b]) {
        assert_eq!(repo.rows, f.rows());
        assert_eq!(repo.state_root, Some(f.store.state_root().unwrap()));
        assert!(repo.published.ends_with('Z'), "{repo:?}");
    }
    assert_eq!(status.shared_rows[2], chunks as u64);
    assert!(status.vectors > 0 && status.bytes > 0);
}

/// After a one-file edit, a removal and an addition, a publish sends only the buckets
/// whose roots differ, drops the rows the repository no longer holds by their keys,
/// and the head moves from the old root to the new.
#[test]
fn an_edit_sends_only_the_differing_buckets() {
    let Some(t) = test_db() else { return };
    let f = Fixture::new("a", 2);
    let mut db = t.connect();
    let first = publish(&f.store, &mut db, &options("a")).unwrap();
    write(&f.tree(), "src/m3.rs", "pub fn changed() -> u32 { 7 }\n");
    remove(&f.tree(), "a/x1.md");
    write(&f.tree(), "new.md", "# New\n\nA new note.\n");
    f.sync();
    let next = publish(&f.store, &mut db, &options("a")).unwrap();
    assert_eq!(next.previous, Some(first.root));
    assert_eq!(next.root, f.store.state_root().unwrap());
    assert!(
        next.buckets > 0 && next.buckets < first.buckets / 4,
        "{next:?}"
    );
    assert!(next.rows_removed > 0 && next.rows_added > 0);
    assert!(next.bytes_sent * 10 < first.bytes_sent, "{next:?}");
    let checked = verify(&mut db, "a").unwrap();
    assert!(checked.is_ok() && checked.head == next.root, "{checked:?}");
    assert_eq!(checked.rows_checked, f.rows());
}

/// Two publishers of one repository at once, each publishing its own store many
/// times: one head, the state of one of them, whose rows verify (none lost, none left).
#[test]
fn racing_publishers_leave_one_whole_head() {
    let Some(t) = test_db() else { return };
    let (a, b) = (Fixture::new("a", 4), Fixture::new("b", 6));
    let roots = [a.store.state_root().unwrap(), b.store.state_root().unwrap()];
    std::thread::scope(|s| {
        for f in [&a, &b] {
            let url = t.url();
            s.spawn(move || {
                let mut db = cfs_postgres::Database::connect(&url).unwrap();
                for _ in 0..4 {
                    publish(&f.store, &mut db, &options("shared")).unwrap();
                }
            });
        }
    });
    let mut db = t.connect();
    let checked = verify(&mut db, "shared").unwrap();
    assert!(checked.is_ok(), "{checked:?}");
    assert!(roots.contains(&checked.head));
    let which = if checked.head == roots[0] { &a } else { &b };
    assert_eq!(checked.rows_checked, which.rows());
}

/// A publish killed after it wrote its rows, while it waits to move the head, leaves
/// the head and the rows as they were; the next publish converges.
#[test]
fn a_killed_publish_changes_nothing_and_the_next_converges() {
    let Some(t) = test_db() else { return };
    let f = Fixture::new("a", 2);
    let mut db = t.connect();
    let first = publish(&f.store, &mut db, &options("a")).unwrap();
    write(&f.tree(), "src/m5.rs", "pub fn other() {}\n");
    f.sync();
    // Hold the head's row, so that the publish stops at its last step.
    let mut holder = t.client();
    let mut hold = holder.transaction().unwrap();
    hold.execute("SELECT * FROM cfs_heads FOR UPDATE", &[])
        .unwrap();
    let killed = std::thread::scope(|s| {
        let url = t.url();
        let store = &f.store;
        let publisher = s.spawn(move || {
            let mut db = cfs_postgres::Database::connect(&url).unwrap();
            publish(store, &mut db, &options("a"))
        });
        let mut killer = t.client();
        let mut waited = 0;
        loop {
            let n = killer
                .execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = current_database() AND application_name = 'cfs' \
                     AND wait_event_type = 'Lock' \
                     AND query LIKE 'UPDATE cfs_heads%'",
                    &[],
                )
                .unwrap();
            if n == 1 {
                break;
            }
            waited += 1;
            assert!(waited < 600, "the publish never reached the head");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        publisher.join().unwrap()
    });
    hold.rollback().unwrap();
    assert!(matches!(killed, Err(DbError::Sql { .. })), "{killed:?}");
    let checked = verify(&mut db, "a").unwrap();
    assert!(checked.is_ok() && checked.head == first.root, "{checked:?}");
    let next = publish(&f.store, &mut db, &options("a")).unwrap();
    assert_eq!(
        (next.previous, next.root),
        (Some(first.root), f.store.state_root().unwrap())
    );
    assert!(verify(&mut db, "a").unwrap().is_ok());
}

/// Rows altered by hand are named by verify: a chunk's text column, a document's
/// encoding, a vector's components (other integers, or a fraction), an edge the
/// repository no longer lists, a member listed in another bucket, a table root of the
/// head, a bucket root row that is none. A publish does not mend them (the bucket roots
/// still match, or it refuses to build on them); a publish with `repair` rewrites the
/// repository from the store, and it verifies.
#[test]
fn verify_names_rows_altered_by_hand() {
    let f = Fixture::new("a", 0);
    let damage: [(&str, &str, &str); 8] = [
        (
            "UPDATE cfs_chunks SET text = text || ' ' \
             WHERE leaf = (SELECT leaf FROM cfs_chunks ORDER BY leaf LIMIT 1)",
            "chunks",
            "its columns disagree with its encoding",
        ),
        (
            "UPDATE cfs_documents SET encoding = encoding || '\\x00'::bytea \
             WHERE leaf = (SELECT leaf FROM cfs_documents ORDER BY leaf LIMIT 1)",
            "documents",
            "its encoding does not hash to its leaf",
        ),
        (
            "UPDATE cfs_vectors SET v = ('[' || array_to_string(array_fill(7, \
             ARRAY[vector_dims(v)]), ',') || ']')::vector \
             WHERE hash = (SELECT hash FROM cfs_vectors ORDER BY hash LIMIT 1)",
            "embeddings",
            "its vector does not hash to its name",
        ),
        (
            "UPDATE cfs_vectors SET v = ('[0.5' || repeat(',0', vector_dims(v) - 1) || ']')::vector \
             WHERE hash = (SELECT hash FROM cfs_vectors ORDER BY hash LIMIT 1)",
            "embeddings",
            "which is no i16",
        ),
        (
            "DELETE FROM cfs_members \
             WHERE tag = 4 AND key = (SELECT key FROM cfs_members WHERE tag = 4 ORDER BY key LIMIT 1)",
            "edges",
            "its rows make root",
        ),
        (
            "UPDATE cfs_members SET bucket = (bucket + 1) % 1024 \
             WHERE tag = 2 AND key = (SELECT key FROM cfs_members WHERE tag = 2 ORDER BY key LIMIT 1)",
            "chunks",
            "it is listed in bucket",
        ),
        (
            "UPDATE cfs_heads SET table_roots[1] = table_roots[2]",
            "head",
            "its paths root is",
        ),
        (
            "INSERT INTO cfs_bucket_roots SELECT repo, 7, 0, '\\x00'::bytea FROM cfs_heads",
            "bucket roots",
            "tag 7 bucket 0",
        ),
    ];
    for (sql, table, reason) in damage {
        let Some(t) = test_db() else { return };
        let mut db = t.connect();
        publish(&f.store, &mut db, &options("a")).unwrap();
        assert_eq!(t.client().execute(sql, &[]).unwrap(), 1, "{sql}");
        let checked = verify(&mut db, "a").unwrap();
        assert!(!checked.is_ok(), "{sql}");
        let named = &checked.damage[0];
        assert!(
            named.table == table && named.reason.contains(reason),
            "{sql}: {checked:?}"
        );
        if let Ok(again) = publish(&f.store, &mut db, &options("a")) {
            assert_eq!(again.buckets, 0);
        }
        assert!(!verify(&mut db, "a").unwrap().is_ok(), "{sql}");
        let repair = PublishOptions {
            repair: true,
            ..options("a")
        };
        let repaired = publish(&f.store, &mut db, &repair).unwrap();
        assert_eq!(repaired.rows_added as u64, f.rows(), "{sql}");
        let checked = verify(&mut db, "a").unwrap();
        assert!(checked.is_ok(), "{sql}: {checked:?}");
        assert_eq!(checked.rows_checked, f.rows());
    }
}

/// Publishing under a name of another embedder's repository is refused; so is a name
/// cfs does not take; verify of a repository never published says so.
#[test]
fn refusals_name_the_reason() {
    let Some(t) = test_db() else { return };
    let f = Fixture::new("a", 0);
    let mut db = t.connect();
    publish(&f.store, &mut db, &options("a")).unwrap();
    let mut client = t.client();
    client
        .execute(
            "UPDATE cfs_repos SET model_id = 'other/1' WHERE name = 'a'",
            &[],
        )
        .unwrap();
    let refused = publish(&f.store, &mut db, &options("a")).unwrap_err();
    assert!(matches!(refused, DbError::Settings { .. }), "{refused}");
    assert!(refused.to_string().contains("other/1"));
    for bad in ["", ".hidden", "a b", "x;drop"] {
        let refused = publish(&f.store, &mut db, &options(bad)).unwrap_err();
        assert!(
            matches!(refused, DbError::Name { .. }),
            "{bad:?}: {refused}"
        );
    }
    let missing = verify(&mut db, "nobody").unwrap_err();
    assert!(matches!(missing, DbError::NoRepository { .. }), "{missing}");
}

/// Collection drops the shared rows no repository holds any more (a changed file's old
/// rows) and keeps every row a repository holds, waiting for publishes in flight.
#[test]
fn gc_drops_only_unheld_rows() {
    let Some(t) = test_db() else { return };
    let (a, b) = (Fixture::new("a", 1), Fixture::new("b", 1));
    let mut db = t.connect();
    publish(&a.store, &mut db, &options("a")).unwrap();
    publish(&b.store, &mut db, &options("b")).unwrap();
    assert_eq!(
        cfs_postgres::gc(&mut db).unwrap(),
        cfs_postgres::GcReport::default()
    );
    // A file only a holds changes, and one both hold: a's old rows of the first go,
    // the second's stay (b holds them).
    write(&a.tree(), "a/x0.md", "# changed\n");
    write(&a.tree(), "src/m1.rs", "pub fn changed() {}\n");
    a.sync();
    publish(&a.store, &mut db, &options("a")).unwrap();
    let report = cfs_postgres::gc(&mut db).unwrap();
    assert!(report.rows[2] >= 1 && report.vectors >= 1, "{report:?}");
    for repo in ["a", "b"] {
        assert!(verify(&mut db, repo).unwrap().is_ok());
    }
    let mut client = t.client();
    let unheld: i64 = client
        .query_one(
            "SELECT count(*) FROM cfs_chunks c WHERE NOT EXISTS \
             (SELECT 1 FROM cfs_members m WHERE m.leaf = c.leaf)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(unheld, 0);
}

/// Publishers of two repositories that share most rows, at once into a new database:
/// the tables are made once, the shared rows written once, both heads verify, and
/// collection running meanwhile takes nothing either holds.
#[test]
fn publishers_of_other_repositories_and_collection_run_together() {
    let Some(t) = test_db() else { return };
    let (a, b) = (Fixture::new("a", 3), Fixture::new("b", 5));
    std::thread::scope(|s| {
        for (f, repo) in [(&a, "a"), (&b, "b")] {
            let url = t.url();
            s.spawn(move || {
                let mut db = cfs_postgres::Database::connect(&url).unwrap();
                for round in 0..3 {
                    write(
                        &f.tree(),
                        &format!("{repo}/round.md"),
                        &format!("# Round {round}\n"),
                    );
                    f.sync();
                    publish(&f.store, &mut db, &options(repo)).unwrap();
                }
            });
        }
        let url = t.url();
        s.spawn(move || {
            let mut db = cfs_postgres::Database::connect(&url).unwrap();
            for _ in 0..5 {
                cfs_postgres::gc(&mut db).unwrap();
            }
        });
    });
    let mut db = t.connect();
    for (f, repo) in [(&a, "a"), (&b, "b")] {
        let checked = verify(&mut db, repo).unwrap();
        assert!(checked.is_ok(), "{checked:?}");
        assert_eq!(checked.head, f.store.state_root().unwrap());
    }
    let mut client = t.client();
    let versions: i64 = client
        .query_one("SELECT count(*) FROM cfs_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(versions, 1);
}

/// A head moved by someone who ignores the publishers' lock, while a publish waits to
/// move it: the compare-and-swap finds another root, the publish starts again from
/// what the database holds and lands on its second try.
#[test]
fn a_head_moved_underneath_makes_the_publish_try_again() {
    let Some(t) = test_db() else { return };
    let f = Fixture::new("a", 2);
    let mut db = t.connect();
    publish(&f.store, &mut db, &options("a")).unwrap();
    write(&f.tree(), "src/m7.rs", "pub fn seven() {}\n");
    f.sync();
    let mut holder = t.client();
    let mut hold = holder.transaction().unwrap();
    hold.execute("SELECT * FROM cfs_heads FOR UPDATE", &[])
        .unwrap();
    let report = std::thread::scope(|s| {
        let (url, store) = (t.url(), &f.store);
        let publisher = s.spawn(move || {
            let mut db = cfs_postgres::Database::connect(&url).unwrap();
            publish(store, &mut db, &options("a"))
        });
        let mut watcher = t.client();
        for _ in 0..600 {
            let waiting: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                     AND application_name = 'cfs' \
                     AND wait_event_type = 'Lock' AND query LIKE 'UPDATE cfs_heads%'",
                    &[],
                )
                .unwrap()
                .get(0);
            if waiting == 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        hold.execute(
            "UPDATE cfs_heads SET state_root = '\\x00'::bytea || substring(state_root from 2)",
            &[],
        )
        .unwrap();
        hold.commit().unwrap();
        publisher.join().unwrap()
    })
    .unwrap();
    assert_eq!(report.retries, 1, "{report:?}");
    let checked = verify(&mut db, "a").unwrap();
    assert!(
        checked.is_ok() && checked.head == f.store.state_root().unwrap(),
        "{checked:?}"
    );
}
