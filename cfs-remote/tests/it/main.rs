//! Integration tests of cfs-remote: push, pull and clone through a folder and memory
//! remote; damage of every kind refused with the store unchanged; racing pushers.

mod http_server;
mod s3;
mod support;

use cfs_remote::{
    FolderRemote, MemoryRemote, PullTarget, PushOptions, Remote, RemoteError, fetch_manifest, pull,
    push,
};
use support::{Fixture, pull_into, write};

/// A pushed state pulled into a new store gives the same root, bit for bit, which is
/// the root of a clean index of the tree; the pulled store verifies; a second push of
/// the same state publishes nothing.
#[test]
fn push_then_pull_into_a_new_store_gives_the_same_root() {
    let f = Fixture::new();
    let remote = FolderRemote::new(f.dir.path().join("remote"));
    let pushed = push(&f.store, &remote, &PushOptions::default()).unwrap();
    assert_eq!(pushed.root, f.clean_root());
    assert!(pushed.published.is_some() && pushed.tables_sent > 0 && pushed.rows_sent > 0);
    let store = f.empty_store();
    let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    let told = std::sync::Mutex::new(Vec::new());
    let progress = |p: &cfs_remote::Progress| told.lock().unwrap().push(*p);
    let report = cfs_remote::pull_with(&store, &remote, &name, &manifest, &progress).unwrap();
    assert_eq!(report.root, pushed.root);
    assert_eq!(store.state_root().unwrap(), pushed.root);
    assert!(store.verify().unwrap().is_ok());
    // Each stage was told as it went, ending with all its bytes read, then the writing.
    let told = told.into_inner().unwrap();
    let stages: Vec<&str> = told.iter().map(|p| p.stage).collect();
    for stage in ["groups", "rows", "vectors", "writing"] {
        assert!(stages.contains(&stage), "{stages:?}");
    }
    for p in told.iter().filter(|p| p.stage != "writing") {
        let last = told.iter().rfind(|q| q.stage == p.stage).unwrap();
        assert!(last.done == last.total && p.done <= p.total, "{told:?}");
    }
    assert_eq!(
        report.embeddings_pulled.len() as u64,
        store.begin_read().unwrap().counts().unwrap().embeddings
    );
    let again = push(&f.store, &remote, &PushOptions::default()).unwrap();
    assert_eq!((again.published, again.bytes_sent), (None, 0));
}

/// After a one-file change, push sends a pack of the few buckets that changed and pull
/// fetches only those, and the pulled store has the new root; a pulled text is cached,
/// so a sync of the same tree into the pulled store embeds nothing.
#[test]
fn a_one_file_change_moves_only_its_buckets() {
    let f = Fixture::new();
    let remote = FolderRemote::new(f.dir.path().join("remote"));
    let first = push(&f.store, &remote, &PushOptions::default()).unwrap();
    let (mirror, _) = pull_into(&f, &remote);
    write(&f.tree(), "src/m3.rs", "pub fn changed() -> u32 { 7 }\n");
    f.sync();
    let second = push(&f.store, &remote, &PushOptions::default()).unwrap();
    assert!(second.tables_sent <= 12, "{second:?}");
    // The manifest names groups of 32 buckets: a change re-sends the groups it touched.
    assert!(
        second.bytes_sent * 10 < first.bytes_sent,
        "{second:?} vs {first:?}"
    );
    let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    let report = pull(&mirror, &remote, &name, &manifest).unwrap();
    assert_eq!(mirror.state_root().unwrap(), second.root);
    assert!(report.buckets_fetched < 40, "{report:?}");
    assert!(mirror.verify().unwrap().is_ok());
    let synced = f.sync_other(&mirror);
    assert_eq!(synced.root, second.root);
    assert_eq!(synced.embedded, 0, "pulled texts are cached: {synced:?}");
}

/// Where buckets hold many rows, a change sends and fetches only the rows it made, and
/// names the others where earlier pushes left them: a store several pushes behind pulls
/// rows from several packs, and a clone of the last push, whose buckets' rows lie in
/// packs of every push, has the root of the store pushed.
#[test]
fn changes_move_only_their_rows() {
    let f = Fixture::wide(5000);
    let remote = FolderRemote::new(f.dir.path().join("remote"));
    let first = push(&f.store, &remote, &PushOptions::default()).unwrap();
    let (mirror, _) = pull_into(&f, &remote);
    let (behind, _) = pull_into(&f, &remote);
    let mut sent = Vec::new();
    for round in 0..6 {
        write(&f.tree(), "w/7.md", &format!("Note 7, round {round}.\n"));
        write(
            &f.tree(),
            &format!("w/{}.md", 100 + round),
            "A note rewritten.\n",
        );
        f.sync();
        let report = push(&f.store, &remote, &PushOptions::default()).unwrap();
        // Two files: their paths, documents, chunks, embeddings, vectors and edges.
        assert!(report.tables_sent >= 8, "{report:?}");
        sent.push(report.rows_sent);
        let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
        let pulled = pull(&mirror, &remote, &name, &manifest).unwrap();
        assert_eq!(mirror.state_root().unwrap(), report.root);
        assert!(pulled.rows_checked <= 16, "{pulled:?}");
        assert!(report.bytes_sent * 20 < first.bytes_sent, "{report:?}");
    }
    // From the second round on, the rewritten note's text is one the remote holds under
    // the previous round's name: only its path is sent.
    assert!(
        sent[0] <= 16 && sent[1..].iter().all(|&n| n < sent[0]),
        "{sent:?}"
    );
    let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    let caught_up = pull(&behind, &remote, &name, &manifest).unwrap();
    assert_eq!(caught_up.root, f.store.state_root().unwrap());
    assert!(behind.verify().unwrap().is_ok());
    let (clone, report) = pull_into(&f, &remote);
    assert_eq!(clone.state_root().unwrap(), f.clean_root());
    assert!(report.requests > 1, "{report:?}");
    assert!(cfs_remote::check(&remote).unwrap().problems.is_empty());
}

/// Every kind of damage is refused with a clear error and leaves the store as it was: a
/// flipped byte in a pack, a truncated pack, a missing pack, a manifest that does not
/// hash to its name.
#[test]
fn damaged_objects_are_refused_and_nothing_is_written() {
    let f = Fixture::new();
    let remote = MemoryRemote::new();
    push(&f.store, &remote, &PushOptions::default()).unwrap();
    let names = remote.names();
    let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    let pack = format!("objects/{}", cfs_core::hex_encode(&manifest.groups[0].pack));
    let original = remote.get(&pack).unwrap().unwrap();
    // Bytes a pull reads: in the first segment, the middle, the last segment's end. (The
    // pack's own index, after its segments, is for tools that read a pack alone: a pull
    // reads segments where its checked manifest says they are.)
    let last = manifest.groups.iter().max_by_key(|e| e.offset).unwrap();
    let first_group = manifest.groups.iter().map(|e| e.offset).min().unwrap();
    // A row, a row table (the last lies just before the groups), a group segment.
    let flips = [
        30usize,
        original.len() / 2,
        first_group as usize - 1,
        (last.offset + last.length) as usize - 1,
    ];
    let mut damages: Vec<(&str, Vec<u8>)> = flips
        .iter()
        .map(|&at| {
            let mut bytes = original.clone();
            bytes[at] ^= 0x40;
            ("a flipped byte", bytes)
        })
        .collect();
    damages.push(("a truncated pack", original[..original.len() / 3].to_vec()));
    for (what, bytes) in damages {
        remote.put(&pack, bytes);
        let target = f.empty_store();
        let before = target.state_root().unwrap();
        let err = pull(&target, &remote, &name, &manifest).unwrap_err();
        assert!(matches!(err, RemoteError::Damaged { .. }), "{what}: {err}");
        assert!(err.to_string().contains("nothing was written"), "{err}");
        assert_eq!(target.state_root().unwrap(), before, "{what}");
    }
    remote.remove(&pack);
    let err = pull(&f.empty_store(), &remote, &name, &manifest).unwrap_err();
    assert!(err.to_string().contains(&pack), "{err}");
    let manifest_path = names
        .iter()
        .find(|n| n.ends_with(&cfs_core::hex_encode(&name)))
        .unwrap();
    let mut bytes = remote.get(manifest_path).unwrap().unwrap();
    bytes[40] ^= 1;
    remote.put(manifest_path, bytes);
    let err = fetch_manifest(&remote, &PullTarget::default()).unwrap_err();
    assert!(
        err.to_string().contains("does not hash to its name"),
        "{err}"
    );
}

/// A remote of another layout format is refused by its mark, naming both formats.
#[test]
fn a_remote_of_another_format_is_refused() {
    let f = Fixture::new();
    let folder = f.dir.path().join("remote");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("cfs-remote"), "cfs remote 1\n").unwrap();
    let remote = FolderRemote::new(&folder);
    let err = fetch_manifest(&remote, &PullTarget::default()).unwrap_err();
    assert!(matches!(err, RemoteError::Version { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("cfs remote 1") && text.contains("cfs remote 2"),
        "{text}"
    );
    let err = push(&f.store, &remote, &PushOptions::default()).unwrap_err();
    assert!(matches!(err, RemoteError::Version { .. }), "{err}");
}

/// A manifest of another embedder is refused before anything is fetched.
#[test]
fn a_state_of_another_embedder_is_refused() {
    let f = Fixture::new();
    let remote = MemoryRemote::new();
    push(&f.store, &remote, &PushOptions::default()).unwrap();
    let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    let other = f.store_with_model("cfs-hash-embed/1 dim=128");
    let err = pull(&other, &remote, &name, &manifest).unwrap_err();
    assert!(matches!(err, RemoteError::Settings { .. }), "{err}");
    let err = push(&other, &remote, &PushOptions::default()).unwrap_err();
    assert!(matches!(err, RemoteError::Settings { .. }), "{err}");
}

/// Pushers racing on one branch each publish exactly once, under refs of their own, and
/// the branch's newest state is one of theirs, whole.
#[test]
fn racing_pushers_each_publish_once() {
    let stores: Vec<Fixture> = (0..4).map(Fixture::with_extra).collect();
    let remote = MemoryRemote::new();
    let reports: Vec<_> = std::thread::scope(|s| {
        let pushes: Vec<_> = stores
            .iter()
            .map(|f| s.spawn(|| push(&f.store, &remote, &PushOptions::default())))
            .collect();
        pushes
            .into_iter()
            .map(|p| p.join().unwrap().unwrap())
            .collect()
    });
    let refs: std::collections::BTreeSet<_> = reports
        .iter()
        .map(|r| r.published.clone().unwrap())
        .collect();
    assert_eq!(refs.len(), 4);
    let (name, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    assert!(reports.iter().any(|r| r.manifest == name));
    let (store, _) = pull_into(&stores[0], &remote);
    assert_eq!(store.state_root().unwrap(), manifest.root());
    assert!(store.verify().unwrap().is_ok());
}

/// Pulls by git commit and by manifest name find what was pushed under them.
#[test]
fn pulls_by_commit_and_by_manifest() {
    let f = Fixture::new();
    let remote = MemoryRemote::new();
    let commit = "0123456789abcdef0123456789abcdef01234567".to_owned();
    let options = PushOptions {
        git_commit: Some(commit.clone()),
        ..PushOptions::default()
    };
    let pushed = push(&f.store, &remote, &options).unwrap();
    let (by_commit, _) = fetch_manifest(&remote, &PullTarget::Commit(commit)).unwrap();
    assert_eq!(by_commit, pushed.manifest);
    let hex = cfs_core::hex_encode(&pushed.manifest);
    let (by_name, _) = fetch_manifest(&remote, &PullTarget::Manifest(hex)).unwrap();
    assert_eq!(by_name, pushed.manifest);
    let err = fetch_manifest(&remote, &PullTarget::Branch("nope".into())).unwrap_err();
    assert!(matches!(err, RemoteError::NotFound { .. }), "{err}");
}

/// A pull through HTTP from a static server over a folder remote: with range reads, and
/// from a server that ignores ranges and sends whole objects; the branch's newest state
/// is found from its hint and the refs after it (a server cannot list), also when the
/// hint lags a later push. An HTTP remote refuses a push.
#[test]
fn pull_through_http_with_and_without_ranges() {
    let f = Fixture::new();
    let folder = f.dir.path().join("remote");
    let remote = FolderRemote::new(&folder);
    push(&f.store, &remote, &PushOptions::default()).unwrap();
    write(&f.tree(), "src/m7.rs", "pub fn seven() {}\n");
    f.sync();
    let hint = std::fs::read(folder.join("latest/main")).unwrap();
    let pushed = push(&f.store, &remote, &PushOptions::default()).unwrap();
    std::fs::write(folder.join("latest/main"), hint).unwrap();
    for ranges in [true, false] {
        let server = http_server::serve(&folder, ranges);
        let http = cfs_remote::open(&server.url).unwrap();
        let (store, report) = pull_into(&f, &*http);
        assert_eq!(store.state_root().unwrap(), pushed.root, "ranges {ranges}");
        assert_eq!(report.root, pushed.root);
        assert!(store.verify().unwrap().is_ok());
    }
    let server = http_server::serve(&folder, true);
    let http = cfs_remote::open(&server.url).unwrap();
    let err = push(&f.store, &*http, &PushOptions::default()).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
}

/// A bundle carries a state whole; a bundle made since another carries only what that
/// one lacks, applies to a store at the other's state, and asks for the other first
/// elsewhere; a flipped byte is refused.
#[test]
fn bundles_whole_and_since_another() {
    let f = Fixture::new();
    let first = f.dir.path().join("first.cfsb");
    let options = PushOptions::default();
    let whole = cfs_remote::create_bundle(&f.store, &first, None, &options).unwrap();
    let bundle = cfs_remote::open(first.to_str().unwrap()).unwrap();
    let (mirror, _) = pull_into(&f, &*bundle);
    assert_eq!(mirror.state_root().unwrap(), whole.push.root);

    write(&f.tree(), "src/m9.rs", "pub fn nine() {}\n");
    f.sync();
    let second = f.dir.path().join("second.cfsb");
    let since = cfs_remote::create_bundle(&f.store, &second, Some(&first), &options).unwrap();
    assert_eq!(since.since, Some(whole.push.manifest));
    assert!(since.bytes * 4 < whole.bytes, "{since:?} vs {whole:?}");
    let bundle = cfs_remote::open(second.to_str().unwrap()).unwrap();
    let (name, manifest) = fetch_manifest(&*bundle, &PullTarget::default()).unwrap();
    pull(&mirror, &*bundle, &name, &manifest).unwrap();
    assert_eq!(mirror.state_root().unwrap(), since.push.root);
    assert!(mirror.verify().unwrap().is_ok());
    let err = pull(&f.empty_store(), &*bundle, &name, &manifest).unwrap_err();
    assert!(
        err.to_string()
            .contains("apply the bundle it was made since first"),
        "{err}"
    );

    let mut bytes = std::fs::read(&first).unwrap();
    bytes[300] ^= 0x08;
    std::fs::write(&first, bytes).unwrap();
    let bundle = cfs_remote::open(first.to_str().unwrap()).unwrap();
    let target = f.empty_store();
    let err = fetch_manifest(&*bundle, &PullTarget::default())
        .and_then(|(name, manifest)| pull(&target, &*bundle, &name, &manifest))
        .unwrap_err();
    assert!(matches!(err, RemoteError::Damaged { .. }), "{err}");
    assert_eq!(target.state_root().unwrap(), cfs_core::StateRoot::default());
}

/// `gc` keeps the newest refs of each branch and everything their manifests reach (a
/// pull of each kept state still works), removes the rest once past the grace period,
/// and keeps what is younger than it.
#[test]
fn gc_keeps_what_the_newest_refs_reach_and_removes_the_rest() {
    let f = Fixture::new();
    let remote = MemoryRemote::aged(std::time::Duration::from_secs(7200));
    let mut pushed = Vec::new();
    for i in 0..4 {
        write(
            &f.tree(),
            &format!("src/m{i}.rs"),
            &format!("pub fn v{i}() {{}}\n"),
        );
        f.sync();
        pushed.push(push(&f.store, &remote, &PushOptions::default()).unwrap());
    }
    let before = remote.names().len();
    let young = cfs_remote::GcOptions {
        keep: 2,
        grace: std::time::Duration::from_secs(3 * 3600),
    };
    let report = cfs_remote::gc(&remote, &young).unwrap();
    assert_eq!(
        (report.refs_removed, report.objects_removed),
        (2, 0),
        "{report:?}"
    );
    assert!(report.objects_young > 0, "{report:?}");
    let options = cfs_remote::GcOptions {
        keep: 2,
        grace: std::time::Duration::from_secs(3600),
    };
    let report = cfs_remote::gc(&remote, &options).unwrap();
    assert!(report.objects_removed > 0, "{report:?}");
    assert_eq!(report.manifests_kept, 2);
    assert!(remote.names().len() < before);
    for kept in &pushed[2..] {
        let hex = cfs_core::hex_encode(&kept.manifest);
        let (name, manifest) = fetch_manifest(&remote, &PullTarget::Manifest(hex)).unwrap();
        let store = f.empty_store();
        pull(&store, &remote, &name, &manifest).unwrap();
        assert_eq!(store.state_root().unwrap(), kept.root);
    }
    let hex = cfs_core::hex_encode(&pushed[0].manifest);
    assert!(fetch_manifest(&remote, &PullTarget::Manifest(hex)).is_err());
    let err = cfs_remote::gc(&remote, &cfs_remote::GcOptions { keep: 0, ..options }).unwrap_err();
    assert!(err.to_string().contains("--keep 1"), "{err}");
}

/// A pull of the nearest commit finds the first of the given commits that has a state,
/// through a listing remote and through one that cannot list.
#[test]
fn the_nearest_published_commit_is_found() {
    let f = Fixture::new();
    let folder = f.dir.path().join("remote");
    let remote = FolderRemote::new(&folder);
    let old = "a".repeat(40);
    let options = PushOptions {
        git_commit: Some(old.clone()),
        ..PushOptions::default()
    };
    let pushed = push(&f.store, &remote, &options).unwrap();
    let commits = vec!["c".repeat(40), "b".repeat(40), old.clone(), "d".repeat(40)];
    let server = http_server::serve(&folder, true);
    let http = cfs_remote::open(&server.url).unwrap();
    for r in [&remote as &dyn Remote, &*http] {
        let (name, manifest) = fetch_manifest(r, &PullTarget::Nearest(commits.clone())).unwrap();
        assert_eq!(
            (name, manifest.git_commit),
            (pushed.manifest, Some(old.clone()))
        );
        let none = PullTarget::Nearest(vec!["e".repeat(40)]);
        assert!(matches!(
            fetch_manifest(r, &none),
            Err(RemoteError::NotFound { .. })
        ));
    }
}

/// `check` reads a sound remote without a problem, and names a pack damaged in place
/// (which a push would have reused without reading) and a pack gone.
#[test]
fn check_reads_everything_and_names_what_is_damaged() {
    let f = Fixture::new();
    let folder = f.dir.path().join("remote");
    let remote = FolderRemote::new(&folder);
    push(&f.store, &remote, &PushOptions::default()).unwrap();
    write(&f.tree(), "src/m6.rs", "pub fn six() {}\n");
    f.sync();
    let second = push(&f.store, &remote, &PushOptions::default()).unwrap();
    let report = cfs_remote::check(&remote).unwrap();
    assert!(report.problems.is_empty(), "{report:?}");
    assert_eq!(
        (report.refs, report.manifests, report.packs),
        (2, 2, 2),
        "{report:?}"
    );
    let (_, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    assert!(second.published.is_some());
    let pack = manifest.groups[0].pack;
    let path = folder.join(format!("objects/{}", cfs_core::hex_encode(&pack)));
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let report = cfs_remote::check(&remote).unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(
        report.problems[0].contains("does not hash to its name"),
        "{report:?}"
    );
    std::fs::remove_file(&path).unwrap();
    let report = cfs_remote::check(&remote).unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("missing")),
        "{report:?}"
    );
}

/// A remote that answers every name under `refs/` (as a web server that serves any
/// path would), and does not list: the probe past its hint must end.
struct AnswersEveryRef<'r> {
    inner: &'r MemoryRemote,
    answer: Vec<u8>,
}

impl Remote for AnswersEveryRef<'_> {
    fn describe(&self) -> String {
        "a remote that answers every ref".into()
    }
    fn get(&self, name: &str) -> cfs_remote::Result<Option<Vec<u8>>> {
        match name.starts_with("refs/") {
            true => Ok(Some(self.answer.clone())),
            false => self.inner.get(name),
        }
    }
    fn get_range(&self, name: &str, offset: u64, len: u64) -> cfs_remote::Result<Vec<u8>> {
        self.inner.get_range(name, offset, len)
    }
    fn create(&self, name: &str, bytes: &[u8]) -> cfs_remote::Result<bool> {
        self.inner.create(name, bytes)
    }
    fn overwrite_hint(&self, name: &str, bytes: &[u8]) -> cfs_remote::Result<()> {
        self.inner.overwrite_hint(name, bytes)
    }
    fn lists(&self) -> bool {
        false
    }
    fn list(&self, prefix: &str) -> cfs_remote::Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

/// What a hostile or damaged remote says is checked before it is used: a ref number
/// after which no push could publish, refs that never end past the hint, a bundle index
/// too large to be one, a manifest whose chunk sizes no store can sync with.
#[test]
fn a_remote_s_word_on_numbers_and_sizes_is_checked() {
    let f = Fixture::new();
    let remote = MemoryRemote::new();
    push(&f.store, &remote, &PushOptions::default()).unwrap();
    let newest = remote
        .list("refs/main/")
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    let ref_bytes = remote.get(&newest).unwrap().unwrap();

    // Ref number u64::MAX ("0" written from the top): refused, not wrapped around.
    remote.put("refs/main/00000000000000000000", ref_bytes.clone());
    let err = fetch_manifest(&remote, &PullTarget::default()).unwrap_err();
    assert!(err.to_string().contains("not a ref name"), "{err}");
    write(&f.tree(), "src/m7.rs", "pub fn seven() {}\n");
    f.sync();
    let err = push(&f.store, &remote, &PushOptions::default()).unwrap_err();
    assert!(err.to_string().contains("not a ref name"), "{err}");
    remote.remove("refs/main/00000000000000000000");

    // Every ref answers: the probe stops and says so.
    let endless = AnswersEveryRef {
        inner: &remote,
        answer: ref_bytes,
    };
    let err = fetch_manifest(&endless, &PullTarget::default()).unwrap_err();
    assert!(err.to_string().contains("refs published past it"), "{err}");

    // A bundle whose index would be 64 MiB (a sparse file): refused before it is read.
    let path = f.dir.path().join("big.cfsb");
    cfs_remote::create_bundle(&f.store, &path, None, &PushOptions::default()).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let len = 64u64 << 20;
    file.set_len(len).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &20u64.to_le_bytes(), len - 8).unwrap();
    let err = cfs_remote::open(path.to_str().unwrap()).err().unwrap();
    assert!(
        err.to_string().contains("more than a bundle's index"),
        "{err}"
    );

    // A manifest re-hashed with chunk sizes of zero: refused when fetched.
    let (_, manifest) = fetch_manifest(&remote, &PullTarget::default()).unwrap();
    let mut bad = manifest.clone();
    bad.chunk = [0, 0, 0];
    let bytes = bad.encode();
    let name = cfs_core::hex_encode(blake3::hash(&bytes).as_bytes());
    remote.put(&format!("objects/{name}"), bytes);
    let err = fetch_manifest(&remote, &PullTarget::Manifest(name)).unwrap_err();
    assert!(err.to_string().contains("chunk sizes"), "{err}");
}
