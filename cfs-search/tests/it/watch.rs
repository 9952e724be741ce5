//! A real file-system watcher on a temporary tree: after each kind of edit settles, the
//! store's root equals a clean index of the tree, and search finds the new text and not
//! the old.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use cfs_ingest::HashEmbedder;
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::watch::{WatchEvent, WatchSettings, watch};
use cfs_store::{Store, SyncOptions};

use crate::support::{clean_root, settings, write};

/// Waits until the store's root is the clean-index root of the tree.
fn settle(store: &Store, root: &Path, options: &SyncOptions, embedder: &HashEmbedder, what: &str) {
    let expected = clean_root(root, options, embedder);
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.state_root().unwrap() != expected {
        assert!(
            Instant::now() < deadline,
            "{what}: the watcher did not converge"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn found(index: &SearchIndex, store: &Store, embedder: &HashEmbedder, word: &str) -> Vec<String> {
    index.refresh(store).unwrap();
    index
        .search(&Query::new(word).mode(Mode::Text).k(50), embedder)
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect()
}

/// A watcher on its own thread over a store inside `root` (as `cfs index` puts it, so
/// that its own writes are events that must make no work), forwarding what it does.
struct Watcher {
    store: Arc<Store>,
    options: SyncOptions,
    embedder: HashEmbedder,
    events: mpsc::Receiver<WatchEvent>,
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<cfs_store::Result<()>>,
}

impl Watcher {
    fn start(root: &Path, watch_settings: WatchSettings) -> Self {
        Self::start_with(root, watch_settings, SyncOptions::default())
    }

    fn start_with(root: &Path, watch_settings: WatchSettings, options: SyncOptions) -> Self {
        let embedder = HashEmbedder::new(32);
        let store = Arc::new(
            Store::create(&root.join(".cfs/store.redb"), settings(&options, &embedder)).unwrap(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, events) = mpsc::channel();
        let handle = {
            let (store, stop, options, embedder) = (
                Arc::clone(&store),
                Arc::clone(&stop),
                options.clone(),
                embedder.clone(),
            );
            let root = root.to_path_buf();
            std::thread::spawn(move || {
                let mut on_event = |e: WatchEvent| {
                    let _ = tx.send(e);
                };
                watch(
                    &store,
                    &root,
                    &options,
                    &embedder,
                    &watch_settings,
                    &stop,
                    &mut on_event,
                )
            })
        };
        Self {
            store,
            options,
            embedder,
            events,
            stop,
            handle,
        }
    }

    fn next(&self) -> WatchEvent {
        self.events.recv_timeout(Duration::from_secs(30)).unwrap()
    }

    /// Commits reported since the last call.
    fn commits(&self) -> usize {
        self.events
            .try_iter()
            .map(|e| match e {
                WatchEvent::Synced { report, .. } => report.commits,
                WatchEvent::Degraded(reason) => panic!("degraded: {reason}"),
                WatchEvent::Watching => 0,
                WatchEvent::Embedded { report, .. } => report.commits,
            })
            .sum()
    }

    /// Waits until the store's root is the clean-index root of `root`.
    fn settle(&self, root: &Path, what: &str) {
        settle(&self.store, root, &self.options, &self.embedder, what);
    }

    fn stop(self) -> Arc<Store> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().unwrap().unwrap();
        self.store
    }
}

#[test]
fn a_real_watcher_converges_after_every_kind_of_edit() {
    if crate::support::skip_slow("a_real_watcher_converges_after_every_kind_of_edit") {
        return;
    }
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path().canonicalize().unwrap();
    let root = root.as_path();
    write(root, "keep.txt", "stays as it is\n");
    write(root, "docs/old.md", "# Old\n\nzebra crossing\n");
    let watcher = Watcher::start(
        root,
        WatchSettings {
            quiet: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
            ..WatchSettings::default()
        },
    );
    // The first whole sync, then watching.
    assert!(
        matches!(watcher.next(), WatchEvent::Synced { report, paths: None, .. } if report.commits == 1)
    );
    assert!(matches!(watcher.next(), WatchEvent::Watching));
    let (store, embedder) = (&watcher.store, &watcher.embedder);
    watcher.settle(root, "start");
    let index = SearchIndex::open(store, embedder, IndexOptions::default()).unwrap();
    assert_eq!(found(&index, store, embedder, "zebra"), ["docs/old.md"]);

    write(root, "new.txt", "a fresh aardvark\n");
    watcher.settle(root, "create");
    assert_eq!(found(&index, store, embedder, "aardvark"), ["new.txt"]);

    write(root, "new.txt", "a fresh aardvark and a badger\n");
    watcher.settle(root, "modify");
    assert_eq!(found(&index, store, embedder, "badger"), ["new.txt"]);

    write(root, "new.txt", "a badger\n");
    watcher.settle(root, "shrink");
    assert!(found(&index, store, embedder, "aardvark").is_empty());

    std::fs::rename(root.join("new.txt"), root.join("renamed.txt")).unwrap();
    watcher.settle(root, "rename");
    assert_eq!(found(&index, store, embedder, "badger"), ["renamed.txt"]);

    std::fs::create_dir_all(root.join("elsewhere/deeper")).unwrap();
    std::fs::rename(
        root.join("docs/old.md"),
        root.join("elsewhere/deeper/old.md"),
    )
    .unwrap();
    watcher.settle(root, "move across folders");
    assert_eq!(
        found(&index, store, embedder, "zebra"),
        ["elsewhere/deeper/old.md"]
    );

    std::fs::remove_file(root.join("renamed.txt")).unwrap();
    watcher.settle(root, "delete");
    assert!(found(&index, store, embedder, "badger").is_empty());

    // An editor's atomic save: write a temporary file, then rename it over the file.
    write(root, ".keep.txt.swp", "changed by the editor: ocelot\n");
    std::fs::rename(root.join(".keep.txt.swp"), root.join("keep.txt")).unwrap();
    watcher.settle(root, "atomic save");
    assert_eq!(found(&index, store, embedder, "ocelot"), ["keep.txt"]);
    assert!(found(&index, store, embedder, "stays").is_empty());

    // A burst of 2,000 files (a checkout) ends in a few commits.
    watcher.commits();
    let writing = Instant::now();
    for i in 0..2000 {
        write(
            root,
            &format!("burst/d{}/f{i}.txt", i % 20),
            &format!("file {i} of the burst, walrus{i}\n"),
        );
    }
    // A batch is cut at most every max_delay (2 s here) while events keep coming, so a
    // slow (loaded) machine may need a few more batches; each batch is one commit.
    let allowed = writing.elapsed().as_millis() as usize / 2000 + 3;
    watcher.settle(root, "burst of 2,000 files");
    // The report of the last sync follows its commit.
    std::thread::sleep(Duration::from_millis(500));
    let commits = watcher.commits();
    assert!(
        (1..=allowed).contains(&commits),
        "{commits} commits for the burst (at most {allowed})"
    );
    assert_eq!(
        found(&index, store, embedder, "walrus1999")[0],
        "burst/d19/f1999.txt"
    );
    // Ignored trees make no work.
    write(root, "node_modules/pkg/index.js", "module.exports = 1;\n");
    write(root, "target/debug/out.txt", "build output\n");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(watcher.commits(), 0);

    let store = watcher.stop();
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn without_events_whole_syncs_run_at_the_poll_interval() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path().canonicalize().unwrap();
    let root = root.as_path();
    write(root, "a.txt", "first\n");
    let watcher = Watcher::start(
        root,
        WatchSettings {
            poll_interval: Duration::from_millis(200),
            poll_only: true,
            ..WatchSettings::default()
        },
    );
    assert!(matches!(watcher.next(), WatchEvent::Synced { .. }));
    assert!(matches!(watcher.next(), WatchEvent::Degraded(_)));
    write(root, "b.txt", "second\n");
    std::fs::remove_file(root.join("a.txt")).unwrap();
    watcher.settle(root, "polling");
    watcher.stop();
}

#[test]
fn text_first_watching_commits_the_text_then_the_vectors() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path().canonicalize().unwrap();
    let root = root.as_path();
    write(root, "a.txt", "first\n");
    let options = SyncOptions {
        defer_embeddings: true,
        ..SyncOptions::default()
    };
    let watch_settings = WatchSettings {
        poll_interval: Duration::from_millis(200),
        poll_only: true,
        ..WatchSettings::default()
    };
    let watcher = Watcher::start_with(root, watch_settings, options);
    assert!(matches!(watcher.next(), WatchEvent::Synced { report, .. } if report.deferred == 1));
    assert!(
        matches!(watcher.next(), WatchEvent::Embedded { report, .. } if report.chunks == 1 && report.still_pending == 0)
    );
    assert!(matches!(watcher.next(), WatchEvent::Degraded(_)));
    write(root, "b.txt", "second\n");
    watcher.settle(root, "text first");
    watcher.stop();
}

#[test]
fn an_idle_tree_makes_no_sync_after_the_first() {
    if crate::support::skip_slow("an_idle_tree_makes_no_sync_after_the_first") {
        return;
    }
    let tree = tempfile::tempdir().unwrap();
    write(tree.path(), "a.md", "# A\n\nalpha\n");
    write(tree.path(), "src/b.rs", "fn b() {}\n");
    write(tree.path(), "src/deep/c.txt", "gamma\n");
    let w = Watcher::start(tree.path(), WatchSettings::default());
    assert!(matches!(w.next(), WatchEvent::Synced { paths: None, .. }));
    assert!(matches!(w.next(), WatchEvent::Watching));
    // The first sync read every folder and file: those reads are not changes.
    std::thread::sleep(Duration::from_secs(3));
    let later: Vec<WatchEvent> = w.events.try_iter().collect();
    assert!(
        later.is_empty(),
        "an idle tree was synced {} more times: {:?}",
        later.len(),
        later.first()
    );
    // A real change after the idle spell is still seen.
    write(tree.path(), "src/deep/c.txt", "delta\n");
    w.settle(tree.path(), "an edit after idling");
    w.stop();
}
