//! Crash safety: a storage backend that stops being durable after its k-th sync, for
//! every k of a multi-batch sync. After the "crash" the store reopens from what was
//! durable, verifies, holds a root that was committed, and a new sync converges to the
//! clean-index root.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cfs_ingest::HashEmbedder;
use cfs_store::{Store, SyncOptions};
use redb::StorageBackend;

use crate::support::{clean_root, settings, write};

/// In-memory storage whose durable image is taken at each sync, until `crash_after`
/// syncs (counted with the other file of the store: the store file and its chunk log
/// share the count); every later sync fails, as if the machine stopped.
#[derive(Debug)]
struct CrashBackend {
    data: Mutex<Vec<u8>>,
    durable: Arc<Mutex<Vec<u8>>>,
    syncs: Arc<AtomicU64>,
    crash_after: u64,
}

/// The durable images of a store's two files.
type Images = (Arc<Mutex<Vec<u8>>>, Arc<Mutex<Vec<u8>>>);

impl CrashBackend {
    fn new(image: Vec<u8>, syncs: Arc<AtomicU64>, crash_after: u64) -> Self {
        Self {
            durable: Arc::new(Mutex::new(image.clone())),
            data: Mutex::new(image),
            syncs,
            crash_after,
        }
    }

    /// The store file's backend and its chunk log's, from their images, crashing after
    /// `crash_after` syncs of the two; with their durable images.
    fn pair(images: &(Vec<u8>, Vec<u8>), crash_after: u64) -> (Self, Self, Images) {
        let syncs = Arc::new(AtomicU64::new(0));
        let file = Self::new(images.0.clone(), syncs.clone(), crash_after);
        let log = Self::new(images.1.clone(), syncs, crash_after);
        let durable = (file.durable.clone(), log.durable.clone());
        (file, log, durable)
    }
}

/// The bytes of durable images.
fn taken(images: &Images) -> (Vec<u8>, Vec<u8>) {
    (
        images.0.lock().unwrap().clone(),
        images.1.lock().unwrap().clone(),
    )
}

impl StorageBackend for CrashBackend {
    fn len(&self) -> Result<u64, io::Error> {
        Ok(self.data.lock().unwrap().len() as u64)
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        let data = self.data.lock().unwrap();
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let src = data
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::other("read past end"))?;
        out.copy_from_slice(src);
        Ok(())
    }
    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.data
            .lock()
            .unwrap()
            .resize(usize::try_from(len).map_err(io::Error::other)?, 0);
        Ok(())
    }
    fn sync_data(&self) -> Result<(), io::Error> {
        let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if n > self.crash_after {
            return Err(io::Error::other(
                "simulated crash: storage no longer durable",
            ));
        }
        *self.durable.lock().unwrap() = self.data.lock().unwrap().clone();
        Ok(())
    }
    fn write(&self, offset: u64, bytes: &[u8]) -> Result<(), io::Error> {
        let mut data = self.data.lock().unwrap();
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        if data.len() < start + bytes.len() {
            data.resize(start + bytes.len(), 0);
        }
        data[start..start + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }
}

fn tree(root: &Path, generation: u32) {
    for i in 0..24u32 {
        let text = format!(
            "# File {i}\n\ngeneration {generation} of file {i}, with words {}\n",
            i * generation
        );
        write(root, &format!("d{}/f{i}.md", i % 4), &text);
    }
    if generation > 0 {
        std::fs::remove_file(root.join("d1/f5.md")).ok();
        write(
            root,
            "new/extra.rs",
            &format!("pub fn g{generation}() {{}}\n"),
        );
    }
}

#[test]
fn a_crash_at_any_sync_leaves_a_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let options = SyncOptions {
        batch_files: 4,
        ..SyncOptions::default()
    };
    let embedder = HashEmbedder::new(16);
    let label = Path::new("crash-test.redb");

    // The initial store: the first generation synced, durable.
    tree(root, 0);
    let (backend, log, images) = CrashBackend::pair(&(Vec::new(), Vec::new()), u64::MAX);
    {
        let store =
            Store::create_with_backend(backend, log, label, settings(&options, &embedder)).unwrap();
        store.sync(root, &options, &embedder, &|_| {}).unwrap();
    }
    let initial = taken(&images);

    // An uncrashed run of the second sync: which roots it commits.
    tree(root, 1);
    let (backend, log, _) = CrashBackend::pair(&initial, u64::MAX);
    let committed: BTreeSet<cfs_core::StateRoot> = {
        let store = Store::open_with_backend(backend, log, label).unwrap();
        let before = store.state_root().unwrap();
        let report = store.sync(root, &options, &embedder, &|_| {}).unwrap();
        assert!(report.commits >= 3, "{report:?}");
        let mut roots: BTreeSet<_> = store
            .begin_read()
            .unwrap()
            .state_chain()
            .unwrap()
            .iter()
            .map(|r| r.root)
            .collect();
        roots.insert(before);
        roots
    };
    let clean = clean_root(root, &options, &embedder);
    assert!(committed.contains(&clean));

    let (mut k, mut exercised) = (0, 0);
    loop {
        let (backend, log, durable) = CrashBackend::pair(&initial, k);
        let crashed = {
            let store = Store::open_with_backend(backend, log, label);
            match store {
                Ok(store) => store.sync(root, &options, &embedder, &|_| {}).is_err(),
                Err(_) => true,
            }
        };
        let (backend, log, _) = CrashBackend::pair(&taken(&durable), u64::MAX);
        let store = Store::open_with_backend(backend, log, label).unwrap();
        let at_crash = store.state_root().unwrap();
        assert!(
            committed.contains(&at_crash),
            "crash after sync {k}: root {at_crash} was never committed"
        );
        let report = store.verify().unwrap();
        assert!(
            report.is_ok(),
            "crash after sync {k}: {:?}",
            report.problems
        );
        let converged = store.sync(root, &options, &embedder, &|_| {}).unwrap();
        assert_eq!(
            converged.root, clean,
            "crash after sync {k}: no convergence"
        );
        assert!(store.verify().unwrap().is_ok());
        if !crashed {
            break;
        }
        // Every sync point with CFS_SLOW_TESTS, every third otherwise.
        k += crate::support::scaled(3, 1) as u64;
        exercised += 1;
        assert!(k < 500, "the sync never finished");
    }
    assert!(
        exercised >= 3,
        "only {exercised} crash points were exercised"
    );
    eprintln!("crashed at {exercised} of the {k} sync points");
}
