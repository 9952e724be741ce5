//! This repository's own history, replayed commit by commit through
//! `git::changed_since`: after each commit the store's root equals a clean index of
//! that commit's tree. The last `RECENT_COMMITS` commits by default (each costs a clean
//! index of the tree: about 4 s in a debug build), `SLOW_COMMITS` with
//! `CFS_SLOW_TESTS=1` (CI), every commit with `CFS_SLOW_TESTS=full`.

use std::path::Path;
use std::process::Command;

use cfs_ingest::{HashEmbedder, Scope};
use cfs_store::{Store, StoreError, SyncOptions, git};

use crate::support::{clean_root, exhaustive, settings, slow};

/// Commits replayed by default (each costs a clean index of its tree).
const RECENT_COMMITS: usize = 2;

/// Commits replayed with `CFS_SLOW_TESTS=1`.
const SLOW_COMMITS: usize = 40;

fn run_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git must be installed to run this test");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git::head` reads HEAD from the repository's files where it can and agrees with
/// `git rev-parse` in every state: outside a repository, no commits, a loose branch
/// ref, packed refs, a detached HEAD, an orphan branch, and a folder inside the work
/// tree (asked of git).
#[test]
fn head_agrees_with_git_rev_parse() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rev = |at: &Path| {
        let out = Command::new("git")
            .arg("-C")
            .arg(at)
            .args(["rev-parse", "--verify", "--quiet", "HEAD"])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    // Outside any repository (no .git here or above, as git looks): none, as git says.
    assert_eq!(git::head(d), rev(d), "outside a repository");
    run_git(d, &["init", "-q"]);
    assert_eq!(git::head(d), None);
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/a.txt"), "a\n").unwrap();
    let commit = |m: &str| {
        run_git(d, &["add", "-A"]);
        run_git(
            d,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                m,
            ],
        );
    };
    commit("one");
    let first = rev(d);
    assert!(first.is_some());
    assert_eq!(git::head(d), first, "loose ref");
    assert_eq!(git::head(&d.join("sub")), first, "inside the tree");
    std::fs::write(d.join("sub/a.txt"), "b\n").unwrap();
    commit("two");
    run_git(d, &["pack-refs", "--all"]);
    assert_eq!(git::head(d), rev(d), "packed ref");
    assert_ne!(git::head(d), first);
    run_git(d, &["checkout", "-q", "--detach", "HEAD~1"]);
    assert_eq!(git::head(d), first, "detached");
    run_git(d, &["checkout", "-q", "--orphan", "fresh"]);
    assert_eq!(git::head(d), None, "orphan branch");
    assert_eq!(rev(d), None);
}

#[test]
fn replaying_this_repository_history_matches_a_clean_index_at_every_commit() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join("clone");
    let status = Command::new("git")
        .args(["clone", "--quiet", "--no-checkout"])
        .arg(&repo)
        .arg(&clone)
        .status()
        .unwrap();
    assert!(status.success());
    let mut commits: Vec<String> =
        run_git(&clone, &["rev-list", "--reverse", "--first-parent", "HEAD"])
            .lines()
            .map(str::to_owned)
            .collect();
    if !exhaustive() {
        let keep = if slow() { SLOW_COMMITS } else { RECENT_COMMITS };
        commits.drain(..commits.len().saturating_sub(keep));
    }
    // Two more commits on top, with a rename, a deletion, an edit and a new folder, so
    // that every kind of change is replayed even from a shallow clone.
    run_git(
        &clone,
        &["checkout", "--quiet", "--force", commits.last().unwrap()],
    );
    let ident = [
        "-c",
        "user.name=cfs test",
        "-c",
        "user.email=test@cfs",
        "-c",
        "commit.gpgsign=false",
    ];
    let commit = |message: &str| {
        run_git(&clone, &["add", "-A"]);
        let mut args: Vec<&str> = ident.to_vec();
        args.extend(["commit", "--quiet", "-m", message]);
        run_git(&clone, &args);
        run_git(&clone, &["rev-parse", "HEAD"]).trim().to_owned()
    };
    std::fs::rename(clone.join("README.md"), clone.join("READ_ME.md")).unwrap();
    std::fs::create_dir_all(clone.join("extra/deep")).unwrap();
    std::fs::write(
        clone.join("extra/deep/new.md"),
        "# New\n\nA file of its own.\n",
    )
    .unwrap();
    commits.push(commit("rename and add"));
    std::fs::remove_file(clone.join("READ_ME.md")).unwrap();
    std::fs::write(clone.join("extra/deep/new.md"), "# New\n\nEdited.\n").unwrap();
    commits.push(commit("delete and edit"));
    assert!(commits.len() >= 3);
    let options = SyncOptions::default();
    let embedder = HashEmbedder::new(16);
    let store = Store::create(
        &work.path().join("store.redb"),
        settings(&options, &embedder),
    )
    .unwrap();

    // A reference that names no commit is a clear error.
    run_git(&clone, &["checkout", "--quiet", "--force", &commits[0]]);
    match git::changed_since(&clone, "no-such-ref") {
        Err(e @ StoreError::Git { .. }) => {
            assert!(e.to_string().contains("no-such-ref: no such commit"), "{e}")
        }
        other => panic!("{other:?}"),
    }

    let report = store.sync(&clone, &options, &embedder, &|_| {}).unwrap();
    assert_eq!(report.root, clean_root(&clone, &options, &embedder));
    let mut scoped_paths = 0;
    for pair in commits.windows(2) {
        run_git(&clone, &["checkout", "--quiet", "--force", &pair[1]]);
        let changes = git::changed_since(&clone, &pair[0]).unwrap();
        assert_eq!(changes.head.as_deref(), Some(pair[1].as_str()));
        scoped_paths += changes.paths.len();
        let report = store
            .sync_paths(
                &clone,
                &Scope::new(&changes.paths),
                &options,
                &embedder,
                &|_| {},
            )
            .unwrap();
        assert_eq!(
            report.root,
            clean_root(&clone, &options, &embedder),
            "after commit {}",
            pair[1]
        );
    }
    assert!(scoped_paths > 0);
    assert!(store.verify().unwrap().is_ok());
}
