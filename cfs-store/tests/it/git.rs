//! This repository's own history, replayed commit by commit through
//! `git::changed_since`: after each commit the store's root equals a clean index of
//! that commit's tree.

use std::path::Path;
use std::process::Command;

use cfs_ingest::{HashEmbedder, Scope};
use cfs_store::{Store, StoreError, SyncOptions, git};

use crate::store::{clean_root, settings};

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

#[test]
fn replaying_this_repository_history_matches_a_clean_index_at_every_commit() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let commits: Vec<String> = run_git(&repo, &["rev-list", "--reverse", "--first-parent", "HEAD"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(commits.len() >= 2, "needs a clone with history");
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join("clone");
    let status = Command::new("git")
        .args(["clone", "--quiet", "--no-checkout"])
        .arg(&repo)
        .arg(&clone)
        .status()
        .unwrap();
    assert!(status.success());
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
        Err(StoreError::InvalidInput(m)) => {
            assert!(m.contains("no-such-ref: no such commit"), "{m}")
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
