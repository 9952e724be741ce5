//! What the remote tests share: a store of a small tree, synced with the hash embedder.

use cfs_ingest::{Embedder, HashEmbedder};
use cfs_remote::{PullReport, PullTarget, Remote, fetch_manifest, pull};
use cfs_store::{Settings, Store, SyncOptions, SyncReport};
use cfs_testkit::settings;

pub use cfs_testkit::write;

/// A tree of Rust and Markdown files, a store of it, and a folder for more stores.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: Store,
    options: SyncOptions,
    embedder: HashEmbedder,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_extra(usize::MAX)
    }

    /// The fixture with one more file when `extra` is not `usize::MAX`, so that stores
    /// differ.
    pub fn with_extra(extra: usize) -> Self {
        Self::build(extra, 0)
    }

    /// The fixture with `n` more small notes, so that buckets hold several rows each.
    pub fn wide(n: usize) -> Self {
        Self::build(usize::MAX, n)
    }

    fn build(extra: usize, wide: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        for i in 0..wide {
            write(&tree, &format!("w/{i}.md"), &format!("Note {i} of many.\n"));
        }
        cfs_testkit::write_sample_tree(&tree);
        if extra != usize::MAX {
            write(
                &tree,
                &format!("extra{extra}.md"),
                &format!("# Extra {extra}\n"),
            );
        }
        let options = SyncOptions::default();
        let embedder = HashEmbedder::default();
        let store = Store::create(
            &dir.path().join("a/store.redb"),
            settings(&options, &embedder),
        )
        .unwrap();
        let f = Self {
            dir,
            store,
            options,
            embedder,
        };
        f.sync();
        f
    }

    pub fn tree(&self) -> std::path::PathBuf {
        self.dir.path().join("tree")
    }

    pub fn sync(&self) -> SyncReport {
        self.sync_other(&self.store)
    }

    /// A sync of the fixture's tree into `store`.
    pub fn sync_other(&self, store: &Store) -> SyncReport {
        store
            .sync(&self.tree(), &self.options, &self.embedder, &|_| {})
            .unwrap()
    }

    pub fn clean_root(&self) -> cfs_core::StateRoot {
        cfs_testkit::clean_root(&self.tree(), &self.options, &self.embedder)
    }

    /// A new, empty store of the fixture's settings.
    pub fn empty_store(&self) -> Store {
        self.store_with_model(self.embedder.model_id())
    }

    /// A new, empty store of model `model_id`.
    pub fn store_with_model(&self, model_id: &str) -> Store {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let settings = Settings {
            chunk: self.options.config.chunk,
            model_id: model_id.into(),
        };
        Store::create(&self.dir.path().join(format!("s{n}/store.redb")), settings).unwrap()
    }
}

/// A new store with the branch's newest state pulled into it.
pub fn pull_into(f: &Fixture, remote: &dyn Remote) -> (Store, PullReport) {
    let store = f.empty_store();
    let (name, manifest) = fetch_manifest(remote, &PullTarget::default()).unwrap();
    let report = pull(&store, remote, &name, &manifest).unwrap();
    (store, report)
}
