//! Read-only stores: every read path works on storage that refuses writes, writes fail
//! with a clear error, a read leaves the file's bytes as they were, and a reader opening
//! the store while another process is inside a write transaction gets the last commit
//! at once.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cfs_ingest::HashEmbedder;
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::{Store, StoreError, SyncOptions};
use redb::StorageBackend;

use crate::support::{settings, write};

/// Storage holding a store file's bytes that serves reads and refuses (and counts)
/// every write, resize and sync: the stand-in for a read-only mount, which a test
/// running as root cannot make with permission bits.
#[derive(Debug)]
struct ReadOnlyBackend {
    data: Vec<u8>,
    writes: &'static AtomicU64,
}

impl ReadOnlyBackend {
    /// The store file at `file` opened read-only on its bytes and its chunk log's,
    /// counting into `writes`.
    fn open(file: &Path, writes: &'static AtomicU64) -> Store {
        let backend = Self {
            data: std::fs::read(file).unwrap(),
            writes,
        };
        let log = Self {
            data: std::fs::read(cfs_store::chunk_log_path(file)).unwrap(),
            writes,
        };
        Store::open_read_only_with_backend(backend, log, file).unwrap()
    }

    fn refuse(&self, what: &str) -> io::Error {
        self.writes.fetch_add(1, Ordering::SeqCst);
        io::Error::new(
            io::ErrorKind::ReadOnlyFilesystem,
            format!("read-only backend: {what}"),
        )
    }
}

impl StorageBackend for ReadOnlyBackend {
    fn len(&self) -> Result<u64, io::Error> {
        Ok(self.data.len() as u64)
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let src = self
            .data
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::other("read past end"))?;
        out.copy_from_slice(src);
        Ok(())
    }
    fn set_len(&self, _: u64) -> Result<(), io::Error> {
        Err(self.refuse("set_len"))
    }
    fn sync_data(&self) -> Result<(), io::Error> {
        Err(self.refuse("sync_data"))
    }
    fn write(&self, _: u64, _: &[u8]) -> Result<(), io::Error> {
        Err(self.refuse("write"))
    }
}

fn corpus(root: &Path) {
    write(
        root,
        "src/lib.rs",
        "/// Parses a config.\npub fn parse_config() {}\n",
    );
    write(
        root,
        "docs/guide.md",
        "# Guide\n\nInstall the tool, then configure it.\n",
    );
    write(root, "notes.txt", "Remember the milk.\n");
}

/// A committed store of `corpus`: the tree, the store's folder (both removed when
/// dropped), the store file and its embedder.
fn committed_store() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    std::path::PathBuf,
    HashEmbedder,
) {
    let tree = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(tree.path());
    let options = SyncOptions::default();
    let embedder = HashEmbedder::default();
    let file = db.path().join("store.redb");
    let store = Store::create(&file, settings(&options, &embedder)).unwrap();
    store
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    (tree, db, file, embedder)
}

/// Everything a read command does: roots, counts, log, show, prove, verify, vectors,
/// the runtime index and a search.
fn read_everything(store: &Store, embedder: &HashEmbedder) -> cfs_core::StateRoot {
    let txn = store.begin_read().unwrap();
    let root = txn.table_roots().unwrap().state_root();
    assert_eq!(txn.counts().unwrap().paths, 3);
    assert!(!txn.state_chain().unwrap().is_empty());
    let ids = txn.chunk_ids().unwrap();
    assert!(txn.prove_chunk(&ids[0]).unwrap().is_some());
    let entry = txn.path("src/lib.rs").unwrap().unwrap();
    assert!(!txn.chunks_of(&entry.document_id).unwrap().is_empty());
    assert!(store.verify().unwrap().is_ok());
    let status = store.embed_status().unwrap();
    assert_eq!(status.embedded, status.chunks);
    assert!(
        store
            .check_vectors(embedder, None)
            .unwrap()
            .wrong
            .is_empty()
    );
    let index = SearchIndex::open(store, embedder, IndexOptions::exact()).unwrap();
    let hits = index
        .search(&Query::new("parse config").k(3), embedder)
        .unwrap();
    assert_eq!(hits[0].path, "src/lib.rs");
    assert_eq!(hits[0].root, root);
    root
}

#[test]
fn every_read_path_works_on_storage_that_refuses_writes() {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let (tree, _db, file, embedder) = committed_store();
    let writable_root = Store::open(&file).unwrap().state_root().unwrap();
    let store = ReadOnlyBackend::open(&file, &WRITES);
    assert!(store.is_read_only());
    assert_eq!(read_everything(&store, &embedder), writable_root);
    assert_eq!(WRITES.load(Ordering::SeqCst), 0, "a read path wrote");

    // Writes are refused by the store itself, before storage sees them.
    assert!(matches!(store.begin_write(), Err(StoreError::ReadOnly(_))));
    let err = store
        .sync(tree.path(), &SyncOptions::default(), &embedder, &|_| {})
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly(_)), "{err}");
    assert!(err.to_string().contains("store.redb"), "{err}");
    assert_eq!(WRITES.load(Ordering::SeqCst), 0);
}

#[test]
fn a_read_only_open_changes_no_byte_of_the_file() {
    let (_tree, _db, file, embedder) = committed_store();
    let before = std::fs::read(&file).unwrap();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    {
        let store = Store::open_read_only(&file).unwrap();
        read_everything(&store, &embedder);
    }
    assert!(std::fs::read(&file).unwrap() == before, "the file changed");
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        modified
    );
}

#[test]
fn a_read_only_store_follows_commits_of_a_writer() {
    let (tree, _db, file, embedder) = committed_store();
    let reader = Store::open_read_only(&file).unwrap();
    let writer = Store::open(&file).unwrap();
    let first = reader.state_root().unwrap();
    write(tree.path(), "more.md", "# More\n\nAnother page.\n");
    let report = writer
        .sync(tree.path(), &SyncOptions::default(), &embedder, &|_| {})
        .unwrap();
    assert_ne!(report.root, first);
    assert_eq!(reader.state_root().unwrap(), report.root);
}

/// Environment variable that turns `writer_helper` into the writer process.
const HELPER_STORE: &str = "CFS_TEST_WRITER_STORE";

/// The writer process of `a_reader_never_waits_for_a_writer_in_another_process`: opens
/// the store, starts a write transaction, changes a row, says "holding", and commits
/// when its standard input closes.
#[test]
#[ignore = "run as a child process by a_reader_never_waits_for_a_writer_in_another_process"]
fn writer_helper() {
    let file = std::env::var_os(HELPER_STORE).expect("run by the reader test");
    let store = Store::open(Path::new(&file)).unwrap();
    let mut txn = store.begin_write().unwrap();
    txn.unbind_path("notes.txt").unwrap();
    txn.remove_orphans().unwrap();
    println!("holding");
    io::stdout().flush().unwrap();
    io::stdin().read_to_end(&mut Vec::new()).unwrap();
    let root = txn.commit().unwrap();
    println!("committed {}", root.to_hex());
}

#[test]
fn a_reader_never_waits_for_a_writer_in_another_process() {
    let (_tree, _db, file, embedder) = committed_store();
    let committed = Store::open(&file).unwrap().state_root().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "readonly::writer_helper",
            "--nocapture",
        ])
        .args(["--test-threads", "1", "-q"])
        .env(HELPER_STORE, &file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let holding = lines.by_ref().map_while(Result::ok).any(|l| l == "holding");
    assert!(holding, "the writer process did not start its transaction");

    // The reader runs on a thread so that a reader that waits fails the test instead of
    // hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    let reader_file = file.clone();
    std::thread::spawn(move || {
        let store = Store::open_read_only(&reader_file).unwrap();
        let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
        let query = Query::new("milk").mode(Mode::Text);
        let hits = index.search(&query, &embedder).unwrap();
        let paths: Vec<String> = hits.into_iter().map(|h| h.path).collect();
        tx.send((store.state_root().unwrap(), paths, store))
            .unwrap();
    });
    let (seen, hits, store) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the reader waited for the writer");
    assert_eq!(seen, committed, "the reader saw an uncommitted state");
    assert_eq!(
        hits,
        ["notes.txt"],
        "the file the writer is removing is still committed"
    );

    drop(child.stdin.take());
    let out: String = lines.map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success());
    let new_root = store.state_root().unwrap();
    assert_ne!(new_root, committed);
    assert!(
        out.contains(&new_root.to_hex()),
        "the open reader sees the writer's commit"
    );
}

#[test]
fn a_cache_that_cannot_be_written_leaves_no_temporary_file() {
    let (_tree, db, file, embedder) = committed_store();
    let store = Store::open_read_only(&file).unwrap();
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    // A folder where the index file should go: the final rename fails.
    let cache = db.path().join("index.cache");
    std::fs::create_dir(&cache).unwrap();
    assert!(index.save_index_file(&cache).is_err());
    let left: Vec<_> = std::fs::read_dir(db.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Sets the modification time of every file under `root` a minute back (out of the
/// racy window, in which the stat cache vouches for nothing).
fn age_files(root: &Path) {
    let past = std::time::SystemTime::now() - Duration::from_secs(60);
    for entry in walkdir(root) {
        let f = std::fs::File::options().append(true).open(&entry).unwrap();
        f.set_modified(past).unwrap();
    }
}

fn walkdir(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_read_only_store_tells_whether_a_sync_would_write_anything() {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let (tree, _db, file, embedder) = committed_store();
    age_files(tree.path());
    let options = SyncOptions::default();
    let writable = Store::open(&file).unwrap();
    let synced = writable
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    drop(writable);
    let open = || ReadOnlyBackend::open(&file, &WRITES);
    // Nothing changed: the report a sync would give, from reads alone.
    let report = open()
        .unchanged(tree.path(), &options, &embedder)
        .unwrap()
        .expect("nothing to sync");
    assert_eq!(report.root, synced.root);
    assert_eq!((report.unchanged, report.added, report.commits), (3, 0, 0));
    assert_eq!(WRITES.load(Ordering::SeqCst), 0, "the check wrote");

    // An edit, a new file, a removed file: each is work for the sync.
    let nothing_to_sync = || {
        open()
            .unchanged(tree.path(), &options, &embedder)
            .unwrap()
            .is_some()
    };
    write(tree.path(), "notes.txt", "Remember the bread too.\n");
    age_files(tree.path());
    assert!(!nothing_to_sync(), "an edit");
    Store::open(&file)
        .unwrap()
        .sync(tree.path(), &options, &embedder, &|_| {})
        .unwrap();
    assert!(nothing_to_sync(), "synced");
    write(tree.path(), "src/new.rs", "pub fn added() {}\n");
    age_files(tree.path());
    assert!(!nothing_to_sync(), "a new file");
    std::fs::remove_file(tree.path().join("src/new.rs")).unwrap();
    std::fs::remove_file(tree.path().join("notes.txt")).unwrap();
    assert!(!nothing_to_sync(), "a file removed");
    assert_eq!(WRITES.load(Ordering::SeqCst), 0);
}
