//! What a new user meets in the first hour: each surprise found on trees nobody here
//! wrote, now an answer or an error that says what to do.

use std::process::Command;

use serde_json::Value;

use crate::support::{cfs_in, sample_tree};

#[test]
fn a_new_store_keeps_out_of_git_status() {
    let dir = sample_tree();
    let root = dir.path();
    assert_eq!(
        cfs_in(root, &["index", "--embedder", "hash", "--json"]).0,
        0
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".cfs/.gitignore")).unwrap(),
        "*\n"
    );
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .unwrap()
    };
    if git(&["init", "-q"]).status.success() {
        let status = String::from_utf8(git(&["status", "--porcelain"]).stdout).unwrap();
        assert!(!status.contains(".cfs"), "{status}");
    }
}

#[test]
fn index_inside_an_indexed_tree_uses_its_store() {
    let dir = sample_tree();
    let root = dir.path();
    assert_eq!(
        cfs_in(root, &["index", "--embedder", "hash", "--json"]).0,
        0
    );
    std::fs::write(root.join("src/more.rs"), "pub fn more() {}\n").unwrap();
    std::fs::write(root.join("later.md"), "# Later\n").unwrap();
    let (code, out, err) = cfs_in(&root.join("src"), &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!root.join("src/.cfs").exists(), "a nested store was made");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["added"], 1, "only src/ is synced: {v}");
    let (_, out, _) = cfs_in(root, &["search", "more", "--mode", "text", "--json"]);
    let hits: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(hits[0]["path"], "src/more.rs");
}

#[test]
fn mistakes_are_errors_that_list_what_exists() {
    let dir = sample_tree();
    let root = dir.path();
    assert_eq!(
        cfs_in(root, &["index", "--embedder", "hash", "--json"]).0,
        0
    );
    let (code, _, err) = cfs_in(root, &["search", "add", "--lang", "rsut"]);
    assert_eq!(code, 1);
    assert!(err.contains("\"rsut\"") && err.contains("rust"), "{err}");
    let (code, _, err) = cfs_in(root, &["search", "add", "--kind", "function"]);
    assert_eq!(code, 1);
    assert!(err.contains("code"), "{err}");
    // A query no word of which is in the store finds nothing in text mode.
    let (code, out, _) = cfs_in(root, &["search", "qwxyzzy", "--mode", "text", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        serde_json::json!([])
    );
    let (code, _, err) = cfs_in(root, &["refresh", "src/lbi.rs"]);
    assert_eq!(code, 1);
    assert!(err.contains("src/lbi.rs"), "{err}");
    // A path that is gone from the tree but still in the store is a removal.
    std::fs::remove_file(root.join("copy.md")).unwrap();
    let (code, out, err) = cfs_in(root, &["refresh", "copy.md", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["removed"], 1);
}

#[test]
fn exit_codes_are_as_documented() {
    let dir = sample_tree();
    // A usage error: the parser's message, exit 2.
    let (code, _, err) = cfs_in(dir.path(), &["search"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = cfs_in(dir.path(), &["index", "--no-such-option"]);
    assert_eq!(code, 2);
    // A failure: exit 1, one line naming the store.
    let (code, _, err) = cfs_in(dir.path(), &["status", "--store", "/nowhere/store.redb"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nowhere/store.redb"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Not a store: the file and the cause, each said once.
    let bad = dir.path().join("bad.redb");
    std::fs::write(&bad, "not a store").unwrap();
    let (code, _, err) = cfs_in(
        dir.path(),
        &["search", "x", "--store", bad.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("bad.redb") && err.contains("cannot open the store"),
        "{err}"
    );
    assert_eq!(err.matches("magic number").count(), 1, "{err}");
}
