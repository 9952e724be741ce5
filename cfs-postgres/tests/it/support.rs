//! What the database tests share: a database of their own on the loopback cluster that
//! `scripts/test` starts (`scripts/pg`; its URLs in `CFS_TEST_PG` and
//! `CFS_TEST_PG_STANDBY`), and stores of small trees synced with the hash embedder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cfs_ingest::HashEmbedder;
use cfs_postgres::Database;
use cfs_store::{Store, SyncOptions};
use postgres::{Client, NoTls};

pub use cfs_testkit::write;

/// A database made for one test on the primary, dropped after it.
pub struct TestDb {
    primary: String,
    standby: Option<String>,
    name: String,
}

/// A fresh database, or `None` when no cluster was started (outside CI only: under
/// `CI` a missing cluster fails the test, so that CI never passes without running it).
pub fn test_db() -> Option<TestDb> {
    let Ok(primary) = std::env::var("CFS_TEST_PG") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CFS_TEST_PG is unset under CI: scripts/test starts the cluster"
        );
        eprintln!("no PostgreSQL cluster (CFS_TEST_PG unset; scripts/test starts one): skipped");
        return None;
    };
    assert!(
        std::env::var_os("CI").is_none() || std::env::var_os("CFS_TEST_PG_STANDBY").is_some(),
        "CFS_TEST_PG_STANDBY is unset under CI: scripts/test starts the standby"
    );
    static N: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "cfs_t{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = Client::connect(&primary, NoTls).expect("the test cluster's primary");
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("a test database");
    Some(TestDb {
        standby: std::env::var("CFS_TEST_PG_STANDBY").ok(),
        primary,
        name,
    })
}

/// `url` naming database `name` instead of the one it names.
fn with_db(url: &str, name: &str) -> String {
    let base = url.rsplit_once('/').expect("a URL with a database").0;
    format!("{base}/{name}")
}

impl TestDb {
    /// The test database's URL on the primary.
    pub fn url(&self) -> String {
        with_db(&self.primary, &self.name)
    }

    /// A connection to it.
    pub fn connect(&self) -> Database {
        Database::connect(&self.url()).unwrap()
    }

    /// A plain client of it, to look at or damage its tables.
    pub fn client(&self) -> Client {
        Client::connect(&self.url(), NoTls).unwrap()
    }

    /// The test database's URL on the standby once it has replayed everything the
    /// primary has committed; `None` without a standby.
    pub fn standby_url(&self) -> Option<String> {
        let standby = self.standby.as_ref()?;
        let mut primary = self.client();
        let lsn: String = primary
            .query_one("SELECT pg_current_wal_lsn()::text", &[])
            .unwrap()
            .get(0);
        let mut replica = Client::connect(standby, NoTls).expect("the standby");
        for _ in 0..600 {
            let caught_up: bool = replica
                .query_one(
                    "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
                    &[&lsn],
                )
                .unwrap()
                .get(0);
            if caught_up {
                return Some(with_db(standby, &self.name));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the standby did not replay {lsn} in 30 s");
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut admin) = Client::connect(&self.primary, NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// A tree of Rust and Markdown files and a store of it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: Store,
    options: SyncOptions,
    embedder: HashEmbedder,
}

impl Fixture {
    /// The tree of 40 Rust files and 40 notes, with `extra` more notes named after
    /// `tag` (so that two fixtures share most files and differ in a few).
    pub fn new(tag: &str, extra: usize) -> Self {
        Self::of(|tree| {
            cfs_testkit::write_sample_tree(tree);
            for i in 0..extra {
                write(
                    tree,
                    &format!("{tag}/x{i}.md"),
                    &format!("# {tag} {i}\n\nOnly in {tag}.\n"),
                );
            }
        })
    }

    /// A store of the tree `fill` writes.
    pub fn of(fill: impl FnOnce(&Path)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        fill(&dir.path().join("tree"));
        let options = SyncOptions::default();
        let embedder = HashEmbedder::default();
        let settings = cfs_testkit::settings(&options, &embedder);
        let store = Store::create(&dir.path().join("store/store.redb"), settings).unwrap();
        let f = Self {
            dir,
            store,
            options,
            embedder,
        };
        f.sync();
        f
    }

    pub fn tree(&self) -> PathBuf {
        self.dir.path().join("tree")
    }

    pub fn sync(&self) {
        self.store
            .sync(&self.tree(), &self.options, &self.embedder, &|_| {})
            .unwrap();
    }

    /// The rows of the store's five tables.
    pub fn rows(&self) -> u64 {
        let c = self.store.begin_read().unwrap().counts().unwrap();
        c.paths + c.documents + c.chunks + c.embeddings + c.edges
    }
}

/// Removes `rel` under `root`.
pub fn remove(root: &Path, rel: &str) {
    std::fs::remove_file(root.join(rel)).unwrap();
}
