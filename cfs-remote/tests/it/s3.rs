//! The S3 remote against an S3-compatible server on loopback, which `scripts/test`
//! starts (moto's server, from the project's `.venv`) and names in `CFS_TEST_S3`; run by
//! hand without it, these tests say so and pass.

use cfs_remote::{
    PullTarget, PushOptions, Remote, RemoteError, S3Config, S3Remote, fetch_manifest, pull, push,
};

use crate::support::{Fixture, pull_into, write};

/// A remote `s3://cfs-test/<prefix>-<run>` on the server `CFS_TEST_S3` names, its
/// bucket made; `None` when no server was started.
fn s3(prefix: &str) -> Option<S3Remote> {
    let Some(endpoint) = std::env::var("CFS_TEST_S3").ok() else {
        eprintln!("no S3-compatible server (CFS_TEST_S3 unset; scripts/test starts one): skipped");
        return None;
    };
    let config = S3Config {
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        credentials: Some(("test".into(), "test".into(), None)),
    };
    // A prefix of this run's own: a server outlives a run.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let spec = format!("s3://cfs-test/{prefix}-{}-{run}", std::process::id());
    let remote = S3Remote::with_config(&spec, &config).unwrap();
    remote.create_bucket().unwrap();
    Some(remote)
}

/// Push, pull and a one-file change through S3; a name is never overwritten (a second
/// create of it is refused); a damaged pack is refused and nothing is written; gc
/// keeps what the newest ref reaches.
#[test]
fn push_and_pull_through_s3() {
    let Some(remote) = s3("push-pull") else {
        return;
    };
    let f = Fixture::new();
    let first = push(&f.store, &remote, &PushOptions::default()).unwrap();
    let (mirror, _) = pull_into(&f, &remote);
    assert_eq!(mirror.state_root().unwrap(), first.root);
    assert!(!remote.create("cfs-remote", b"something else").unwrap());
    assert_eq!(
        remote.get("cfs-remote").unwrap().unwrap(),
        format!("cfs remote {}\n", cfs_remote::FORMAT).as_bytes()
    );

    write(&f.tree(), "src/m5.rs", "pub fn five() {}\n");
    f.sync();
    let second = push(&f.store, &remote, &PushOptions::default()).unwrap();
    assert!(second.bytes_sent * 5 < first.bytes_sent, "{second:?}");
    let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    pull(&mirror, &remote, &name, &manifest).unwrap();
    assert_eq!(mirror.state_root().unwrap(), second.root);
    assert!(mirror.verify().unwrap().is_ok());

    let options = cfs_remote::GcOptions {
        keep: 1,
        grace: std::time::Duration::ZERO,
    };
    let report = cfs_remote::gc(&remote, &options).unwrap();
    assert_eq!(
        (report.refs_removed, report.manifests_kept),
        (1, 1),
        "{report:?}"
    );
    let (store, _) = pull_into(&f, &remote);
    assert_eq!(store.state_root().unwrap(), second.root);

    let pack = format!("objects/{}", cfs_core::hex_encode(&manifest.groups[0].pack));
    let mut bytes = remote.get(&pack).unwrap().unwrap();
    bytes[30] ^= 0x40;
    remote.delete(&pack).unwrap();
    assert!(remote.create(&pack, &bytes).unwrap());
    let target = f.empty_store();
    let err = pull(&target, &remote, &name, &manifest).unwrap_err();
    assert!(matches!(err, RemoteError::Damaged { .. }), "{err}");
    assert_eq!(target.state_root().unwrap(), cfs_core::StateRoot::default());
}

/// Pushers racing through S3 each publish once, under refs of their own.
#[test]
fn racing_pushers_through_s3() {
    let Some(remote) = s3("race") else {
        return;
    };
    let stores: Vec<Fixture> = (0..3).map(Fixture::with_extra).collect();
    let refs: std::collections::BTreeSet<String> = std::thread::scope(|s| {
        let pushes: Vec<_> = stores
            .iter()
            .map(|f| s.spawn(|| push(&f.store, &remote, &PushOptions::default()).unwrap()))
            .collect();
        pushes
            .into_iter()
            .map(|p| p.join().unwrap().published.unwrap())
            .collect()
    });
    assert_eq!(refs.len(), 3);
    let (store, report) = pull_into(&stores[0], &remote);
    assert_eq!(store.state_root().unwrap(), report.root);
}
