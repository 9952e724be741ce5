//! `cfs push`, `cfs pull` and `cfs clone` through a folder remote, end to end.

use serde_json::Value;

use crate::support::{cfs_in, git, sample_tree};

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// A pushed store cloned elsewhere has the same root and answers a search at once; a
/// copy of the tree pulled into and then indexed parses and embeds nothing; `--check`
/// re-embeds and compares; a second push sends nothing.
#[test]
fn push_clone_pull_and_index_after() {
    let tree = sample_tree();
    let root = tree.path();
    let (code, _, err) = cfs_in(root, &["index", "--embedder", "hash", "--json"]);
    assert_eq!(code, 0, "{err}");
    let remote = tempfile::tempdir().unwrap();
    let remote_path = remote.path().join("r");
    let remote_arg = remote_path.to_str().unwrap();
    let (code, out, err) = cfs_in(root, &["push", remote_arg, "--json"]);
    assert_eq!(code, 0, "{err}");
    let pushed = json(&out);
    assert!(pushed["published"].is_string(), "{pushed}");

    let elsewhere = tempfile::tempdir().unwrap();
    let clone = elsewhere.path().join("clone");
    let (code, out, err) = cfs_in(elsewhere.path(), &["clone", remote_arg, "clone", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["state_root"], pushed["state_root"]);
    let (code, out, err) = cfs_in(&clone, &["search", "merkle inclusion", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("README.md"), "{out}");
    let (code, _, err) = cfs_in(elsewhere.path(), &["clone", remote_arg, "clone"]);
    assert_ne!(code, 0);
    assert!(err.contains("a store is there already"), "{err}");
    // A clone that fails (its pack damaged) leaves no folder behind, as it leaves no
    // store.
    let damaged = tempfile::tempdir().unwrap();
    let damaged_remote = damaged.path().join("r");
    let copied = std::process::Command::new("cp")
        .args(["-r", remote_arg, damaged_remote.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(copied.success());
    let objects = std::fs::read_dir(damaged_remote.join("objects")).unwrap();
    let pack = objects
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&pack).unwrap();
    let half = bytes.len() / 2;
    for b in &mut bytes[16..half] {
        *b ^= 0x55;
    }
    std::fs::write(&pack, bytes).unwrap();
    let target = elsewhere.path().join("new/clone");
    let args = [
        "clone",
        damaged_remote.to_str().unwrap(),
        target.to_str().unwrap(),
    ];
    let (code, _, err) = cfs_in(elsewhere.path(), &args);
    assert_ne!(code, 0, "{err}");
    assert!(!elsewhere.path().join("new").exists(), "{err}");

    let copy = tempfile::tempdir().unwrap();
    for rel in ["README.md", "src/lib.rs", "copy.md"] {
        std::fs::create_dir_all(copy.path().join(rel).parent().unwrap()).unwrap();
        std::fs::copy(root.join(rel), copy.path().join(rel)).unwrap();
    }
    let (code, out, err) = cfs_in(copy.path(), &["pull", remote_arg, "--check", "3", "--json"]);
    assert_eq!(code, 0, "{err}");
    let pulled = json(&out);
    assert_eq!(pulled["created"], true);
    assert_eq!(pulled["vectors_wrong"], serde_json::json!([]));
    let (code, out, err) = cfs_in(copy.path(), &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    let indexed = json(&out);
    assert_eq!(indexed["state_root"], pushed["state_root"], "{indexed}");
    assert_eq!(indexed["parsed"], 0, "{indexed}");
    assert_eq!(indexed["embedded"], 0, "{indexed}");

    let (code, out, err) = cfs_in(root, &["push", remote_arg, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["published"], Value::Null);

    let bundle = remote.path().join("state.cfsb");
    let bundle_arg = bundle.to_str().unwrap();
    let (code, out, err) = cfs_in(root, &["bundle", "create", bundle_arg, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["state_root"], pushed["state_root"]);
    let carried = tempfile::tempdir().unwrap();
    let (code, out, err) = cfs_in(carried.path(), &["bundle", "apply", bundle_arg, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["state_root"], pushed["state_root"]);

    std::fs::write(root.join("src/more.rs"), "pub fn more() {}\n").unwrap();
    assert_eq!(cfs_in(root, &["index"]).0, 0);
    assert_eq!(cfs_in(root, &["push", remote_arg]).0, 0);
    let gc = [
        "remote",
        "gc",
        remote_arg,
        "--keep",
        "1",
        "--grace-minutes",
        "0",
        "--json",
    ];
    let (code, out, err) = cfs_in(root, &gc);
    assert_eq!(code, 0, "{err}");
    let report = json(&out);
    assert_eq!(
        (
            report["refs_removed"].as_u64(),
            report["manifests_kept"].as_u64()
        ),
        (Some(1), Some(1)),
        "{report}"
    );
    assert!(report["objects_removed"].as_u64() > Some(0), "{report}");
    let (code, out, err) = cfs_in(root, &["remote", "verify", remote_arg, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["ok"], true, "{out}");
    let again = tempfile::tempdir().unwrap();
    let (code, out, err) = cfs_in(again.path(), &["clone", remote_arg, "c", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(json(&out)["state_root"], pushed["state_root"]);
}

/// A pull from a remote with a damaged pack fails naming the object, and the store it
/// would have made is not left behind; a pull into a store of another embedder is
/// refused and leaves it as it was.
#[test]
fn a_damaged_or_foreign_remote_changes_nothing() {
    let tree = sample_tree();
    let root = tree.path();
    assert_eq!(cfs_in(root, &["index", "--embedder", "hash"]).0, 0);
    let remote = tempfile::tempdir().unwrap();
    let remote_arg = remote.path().to_str().unwrap();
    assert_eq!(cfs_in(root, &["push", remote_arg]).0, 0);
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("a.md"), "# A\n\nother words\n").unwrap();
    let (code, _, err) = cfs_in(other.path(), &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    let (_, before, _) = cfs_in(other.path(), &["status", "--json"]);
    let (code, _, err) = cfs_in(other.path(), &["pull", remote_arg]);
    assert_ne!(code, 0);
    assert!(err.contains("one store never mixes them"), "{err}");
    let (_, after, _) = cfs_in(other.path(), &["status", "--json"]);
    assert_eq!(json(&before)["state_root"], json(&after)["state_root"]);

    let objects = remote.path().join("objects");
    let largest = std::fs::read_dir(&objects)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&largest).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(&largest, bytes).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = cfs_in(empty.path(), &["pull", remote_arg]);
    assert_ne!(code, 0);
    assert!(err.contains("nothing was written"), "{err}");
    assert!(!empty.path().join(".cfs/store.redb").exists());
}

/// `cfs clone` and `cfs pull` killed with SIGKILL at seeded moments: a clone leaves no
/// store or a whole one at the pushed root; a pull leaves the store at its previous root
/// or the pulled one; whatever is left verifies, and the next pull completes.
#[test]
fn a_pull_killed_at_any_moment_leaves_one_state_or_the_other() {
    let rounds = if crate::support::slow() { 12 } else { 4 };
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let write_notes = |tag: &str, step: usize| {
        for i in (0..300).step_by(step) {
            std::fs::create_dir_all(root.join(format!("d{}", i % 10))).unwrap();
            let text = format!(
                "# Note {i} {tag}\n\n{}\n",
                "words to chunk. ".repeat(40 + i % 30)
            );
            std::fs::write(root.join(format!("d{}/n{i}.md", i % 10)), text).unwrap();
        }
    };
    write_notes("first", 1);
    let remote = tempfile::tempdir().unwrap();
    let remote_arg = remote.path().to_str().unwrap();
    let push = |args: &[&str]| -> Value {
        let (code, out, err) = cfs_in(root, args);
        assert_eq!(code, 0, "{err}");
        json(&out)
    };
    push(&["index", "--embedder", "hash", "--json"]);
    let first = push(&["push", remote_arg, "--json"]);
    write_notes("second", 3);
    push(&["index", "--json"]);
    let second = push(&["push", remote_arg, "--json"]);
    let roots = [&first["state_root"], &second["state_root"]];
    let places = tempfile::tempdir().unwrap();
    let mut seed: u64 = 0x9a11;
    let mut killed = 0;
    for round in 0..rounds {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = std::time::Duration::from_millis((seed >> 33) % 700);
        let place = places.path().join(format!("p{round}"));
        // Odd rounds pull into a store cloned at the first state; even rounds clone.
        let args: Vec<String> = if round % 2 == 1 {
            let manifest = first["manifest"].as_str().unwrap();
            let (code, _, err) = cfs_in(
                places.path(),
                &[
                    "clone",
                    remote_arg,
                    &format!("p{round}"),
                    "--manifest",
                    manifest,
                ],
            );
            assert_eq!(code, 0, "{err}");
            vec![
                "pull".into(),
                remote_arg.into(),
                place.to_str().unwrap().into(),
            ]
        } else {
            vec![
                "clone".into(),
                remote_arg.into(),
                place.to_str().unwrap().into(),
            ]
        };
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cfs"))
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            killed += 1;
        }
        child.wait().unwrap();
        let store = place.join(".cfs/store.redb");
        if !store.exists() {
            eprintln!("round {round} ({delay:?}): no store");
            assert_eq!(round % 2, 0, "round {round}: a pull lost the store it had");
            continue;
        }
        let (code, out, err) = cfs_in(&place, &["verify", "--json"]);
        assert_eq!(code, 0, "round {round} ({delay:?}): {out} {err}");
        let (_, status, _) = cfs_in(&place, &["status", "--json"]);
        let now = json(&status)["state_root"].clone();
        let expected: &[&Value] = if round % 2 == 1 { &roots } else { &roots[1..] };
        assert!(expected.contains(&&now), "round {round} ({delay:?}): {now}");
        eprintln!(
            "round {round} ({delay:?}): at {}",
            if &now == roots[0] {
                "the first root"
            } else {
                "the pulled root"
            }
        );
        let (code, out, err) = cfs_in(&place, &["pull", remote_arg, "--json"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(json(&out)["state_root"], second["state_root"]);
    }
    assert!(killed >= 1, "no pull was interrupted");
}

/// A push from a tree indexed at a git commit publishes that commit's state; a clone of
/// the repository two commits later pulls it with `--nearest`, then indexes only what
/// the later commits changed.
#[test]
fn pull_nearest_takes_the_state_of_the_nearest_pushed_ancestor() {
    let tree = sample_tree();
    let root = tree.path();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    assert_eq!(cfs_in(root, &["index", "--embedder", "hash"]).0, 0);
    let remote = tempfile::tempdir().unwrap();
    let remote_arg = remote.path().to_str().unwrap();
    let (code, out, err) = cfs_in(root, &["push", remote_arg, "--json"]);
    assert_eq!(code, 0, "{err}");
    let pushed = json(&out);
    assert!(pushed["git_commit"].is_string(), "{pushed}");
    std::fs::write(root.join("src/two.rs"), "pub fn two() -> u32 { 2 }\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "two"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("copy");
    git(
        elsewhere.path(),
        &["clone", "-q", root.to_str().unwrap(), "copy"],
    );
    let (code, out, err) = cfs_in(&copy, &["pull", remote_arg, "--nearest", "--json"]);
    assert_eq!(code, 0, "{err}");
    let pulled = json(&out);
    assert_eq!(pulled["git_commit"], pushed["git_commit"]);
    assert_eq!(pulled["state_root"], pushed["state_root"]);
    let (code, out, err) = cfs_in(&copy, &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    // Only the later commit's file is added and embedded (the skipped binary file is
    // looked at again: which files failed is a local cache, never pushed).
    let indexed = json(&out);
    assert_eq!(
        (&indexed["added"], &indexed["embedded"]),
        (&Value::from(1), &Value::from(1)),
        "{out}"
    );
    assert_eq!(indexed["unchanged"], 3, "{out}");
    let bare = tempfile::tempdir().unwrap();
    let (code, _, err) = cfs_in(bare.path(), &["pull", remote_arg, "--nearest"]);
    assert_ne!(code, 0);
    assert!(err.contains("needs a git work tree"), "{err}");
}
