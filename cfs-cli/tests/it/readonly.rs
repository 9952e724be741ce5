//! Read commands on a read-only store, and beside a writer held inside its transaction.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::{cfs_in, sample_tree};

/// Every read command, with `--json`, against the store file `store`.
fn read_commands(store: &Path) -> Vec<Vec<String>> {
    let s = store.display().to_string();
    let cmd = |args: &[&str]| {
        let mut v: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        v.extend(["--store".to_owned(), s.clone(), "--json".to_owned()]);
        v
    };
    vec![
        cmd(&["status"]),
        cmd(&["search", "merkle inclusion"]),
        cmd(&["search", "add", "--mode", "vector"]),
        cmd(&["show", "src/lib.rs"]),
        cmd(&["log"]),
        cmd(&["verify", "--full"]),
    ]
}

fn run_all(dir: &Path, store: &Path) -> Vec<Value> {
    read_commands(store)
        .iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = cfs_in(dir, &args);
            assert_eq!(code, 0, "{args:?}: {err}");
            assert!(err.is_empty(), "{args:?} warned: {err}");
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
        })
        .collect()
}

/// An indexed sample tree (hash embedder: no model file needed).
fn indexed() -> (tempfile::TempDir, PathBuf) {
    let dir = sample_tree();
    let (code, _, err) = cfs_in(dir.path(), &["index", "--embedder", "hash", "--json"]);
    assert_eq!(code, 0, "{err}");
    let store = dir.path().join(".cfs/store.redb");
    (dir, store)
}

#[test]
fn read_commands_change_no_byte_of_the_store() {
    let (dir, store) = indexed();
    // A prove of a chunk the search found is a read command too.
    let (_, out, _) = cfs_in(dir.path(), &["search", "merkle", "--json"]);
    let hits: Value = serde_json::from_str(&out).unwrap();
    let chunk = hits[0]["chunk_id"].as_str().unwrap().to_owned();
    let before = std::fs::read(&store).unwrap();
    let modified = std::fs::metadata(&store).unwrap().modified().unwrap();
    run_all(dir.path(), &store);
    assert_eq!(cfs_in(dir.path(), &["prove", &chunk]).0, 0);
    assert!(
        std::fs::read(&store).unwrap() == before,
        "a read command wrote"
    );
    assert_eq!(
        std::fs::metadata(&store).unwrap().modified().unwrap(),
        modified
    );
}

/// A read-only bind mount of `src` at a new folder; unmounted on drop.
struct ReadOnlyMount {
    at: tempfile::TempDir,
}

impl ReadOnlyMount {
    fn new(src: &Path) -> Option<Self> {
        let at = tempfile::tempdir().ok()?;
        let ok = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let target = at.path().to_str()?.to_owned();
        if !ok(&["--bind", src.to_str()?, &target]) {
            return None;
        }
        let mount = Self { at };
        ok(&["-o", "remount,ro,bind", &target]).then_some(mount)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.at.path()).status();
    }
}

#[test]
fn a_store_on_a_read_only_mount_is_searchable_and_verifiable() {
    let (dir, store) = indexed();
    let expected = run_all(dir.path(), &store);
    std::fs::remove_file(dir.path().join(".cfs/index.cache")).unwrap();
    let Some(mount) = ReadOnlyMount::new(&dir.path().join(".cfs")) else {
        // Without mount rights the storage-level test (a backend that refuses every
        // write, cfs-store readonly.rs) stands in for the mount.
        eprintln!("no read-only bind mount here: covered by the ReadOnlyBackend test");
        return;
    };
    let ro_store = mount.at.path().join("store.redb");
    assert!(std::fs::write(mount.at.path().join("probe"), b"x").is_err());
    let got = run_all(dir.path(), &ro_store);
    // The same answers as from the writable store (its path and timings aside).
    let strip = |mut v: Value| {
        if let Some(map) = v.as_object_mut() {
            // (The index file is removed before the mount, so verify finds none there.)
            for key in ["store", "tree", "seconds", "index_file"] {
                map.remove(key);
            }
        }
        v
    };
    for (a, b) in expected.into_iter().zip(got) {
        assert_eq!(strip(a), strip(b));
    }
    // A write command says what is wrong.
    let (code, _, err) = cfs_in(dir.path(), &["gc", "--store", ro_store.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("store.redb"), "{err}");
}

#[test]
fn read_commands_answer_while_a_writer_holds_its_transaction() {
    let (dir, store) = indexed();
    let (_, out, _) = cfs_in(dir.path(), &["status", "--json"]);
    let committed = serde_json::from_str::<Value>(&out).unwrap()["state_root"].clone();
    // This process is the writer: inside a transaction that removes README.md.
    let writer = cfs_store::Store::open(&store).unwrap();
    let mut txn = writer.begin_write().unwrap();
    txn.unbind_path("README.md").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let root = dir.path().to_path_buf();
    std::thread::spawn(move || {
        let status = cfs_in(&root, &["status", "--json"]);
        let search = cfs_in(&root, &["search", "merkle", "--mode", "text", "--json"]);
        tx.send((status, search)).unwrap();
    });
    let ((code, status, err), (code2, search, err2)) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a read command waited for the writer");
    assert_eq!((code, code2), (0, 0), "{err}{err2}");
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["state_root"], committed);
    let hits: Value = serde_json::from_str(&search).unwrap();
    assert_eq!(hits[0]["path"], "README.md");
    assert_eq!(hits[0]["root"], committed);
    drop(txn);
}
