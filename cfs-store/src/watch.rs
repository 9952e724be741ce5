//! Live reindexing: file-system events in, scoped syncs out.
//!
//! The watcher is only a trigger; the sync is the truth. [`Coalescer`] is the pure part:
//! it turns events (paths, or "rescan") into batches after a quiet period, dropping
//! paths outside the tree, inside ignored folders or inside the store's own folder, and
//! merging bursts (an editor's temp-file-and-rename, a branch checkout) into one batch.
//! [`watch`] is the thin adapter: notify events feed the coalescer, each batch goes
//! through [`Store::sync_paths`] (or a whole [`Store::sync`] after a rescan signal or a
//! queue overflow), and when the system's watch limit is reached it falls back to a
//! whole sync at a fixed interval. It returns when asked to stop, after the sync under
//! way has committed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cfs_ingest::{DEFAULT_IGNORED_DIRS, Embedder, Scope};
use notify::Watcher as _;

use crate::embed::{EmbedOptions, EmbedReport};
use crate::error::{Result, StoreError};
use crate::store::Store;
use crate::sync::{SyncOptions, SyncReport};

/// Something the file system said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// These paths (absolute) were created, modified, removed or renamed.
    Paths(Vec<PathBuf>),
    /// Events may have been lost (queue overflow, a rescan notice): look at everything.
    Rescan,
}

/// What to sync next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Batch {
    /// These relative paths (files or folders).
    Paths(Scope),
    /// The whole tree.
    Everything,
}

/// Turns a stream of changes into batches: a batch is ready once no change came for
/// `quiet`, or `max_delay` after its first change, whichever is first.
#[derive(Debug)]
pub struct Coalescer {
    root: PathBuf,
    ignored: Vec<PathBuf>,
    quiet: Duration,
    max_delay: Duration,
    pending: BTreeSet<String>,
    everything: bool,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Coalescer {
    /// A coalescer for the tree at `root` (compared as given and canonicalized).
    pub fn new(root: &Path, quiet: Duration, max_delay: Duration) -> Self {
        Self {
            root: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
            ignored: Vec::new(),
            quiet,
            max_delay,
            pending: BTreeSet::new(),
            everything: false,
            first: None,
            last: None,
        }
    }

    /// Paths under `dir` (absolute) make no work: the store's own folder.
    pub fn ignore(&mut self, dir: &Path) {
        self.ignored
            .push(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
    }

    /// The relative path of `abs`, or `None` when it makes no work.
    pub fn relative(&self, abs: &Path) -> Option<String> {
        if self.ignored.iter().any(|d| abs.starts_with(d)) {
            return None;
        }
        let rel = abs.strip_prefix(&self.root).ok()?;
        let mut parts = Vec::new();
        for c in rel.components() {
            match c {
                std::path::Component::Normal(part) => {
                    let part = part.to_str()?;
                    if DEFAULT_IGNORED_DIRS.contains(&part) {
                        return None;
                    }
                    parts.push(part);
                }
                _ => return None,
            }
        }
        Some(parts.join("/"))
    }

    /// Takes in one change at `now`.
    pub fn push(&mut self, change: Change, now: Instant) {
        let before = self.has_work();
        let mut relevant = false;
        match change {
            Change::Rescan => {
                self.everything = true;
                relevant = true;
            }
            Change::Paths(paths) => {
                for p in paths {
                    if let Some(rel) = self.relative(&p) {
                        relevant = true;
                        if rel.is_empty() {
                            self.everything = true;
                        } else {
                            self.pending.insert(rel);
                        }
                    }
                }
            }
        }
        // Events that make no work (the store's own writes) do not delay a batch.
        if relevant {
            if !before {
                self.first = Some(now);
            }
            self.last = Some(now);
        }
    }

    fn has_work(&self) -> bool {
        self.everything || !self.pending.is_empty()
    }

    /// When the pending batch becomes ready, if there is one.
    pub fn deadline(&self) -> Option<Instant> {
        let (first, last) = (self.first?, self.last?);
        Some((last + self.quiet).min(first + self.max_delay))
    }

    /// The batch, if one is ready at `now`.
    pub fn take(&mut self, now: Instant) -> Option<Batch> {
        if now < self.deadline()? {
            return None;
        }
        self.first = None;
        self.last = None;
        let paths = std::mem::take(&mut self.pending);
        if std::mem::take(&mut self.everything) {
            Some(Batch::Everything)
        } else {
            Some(Batch::Paths(Scope::new(paths)))
        }
    }
}

/// How to watch.
#[derive(Clone, Debug)]
pub struct WatchSettings {
    /// A batch waits until no event came for this long.
    pub quiet: Duration,
    /// ... but no longer than this after its first event.
    pub max_delay: Duration,
    /// Interval of whole syncs when events cannot be had (watch limit reached).
    pub poll_interval: Duration,
    /// Do not watch: sync the whole tree every `poll_interval` (for file systems that
    /// send no events, such as network mounts).
    pub poll_only: bool,
}

impl Default for WatchSettings {
    fn default() -> Self {
        Self {
            quiet: Duration::from_millis(50),
            max_delay: Duration::from_millis(1000),
            poll_interval: Duration::from_secs(10),
            poll_only: false,
        }
    }
}

/// What the watcher did.
#[derive(Debug)]
pub enum WatchEvent {
    /// Events are being received (after the first reconcile).
    Watching,
    /// A sync finished (and committed, if anything changed).
    Synced {
        /// Its report.
        report: SyncReport,
        /// Paths in the batch; `None` for a whole sync.
        paths: Option<usize>,
        /// From the batch's first event (or the poll) to the committed state.
        elapsed: Duration,
    },
    /// Events cannot be had; whole syncs run every `poll_interval` instead.
    Degraded(String),
    /// After a sync that deferred embeddings: the vectors it left are committed.
    Embedded {
        /// What was embedded.
        report: EmbedReport,
        /// From the end of the sync to the last vector committed.
        elapsed: Duration,
    },
}

/// With [`SyncOptions::defer_embeddings`], embeds what the sync left, stopping after
/// the batch under way when `stop` is set: exactly the `deferred` chunks of a scoped
/// sync, or every chunk without a vector (a scan) after a whole one, which also resumes
/// an interrupted run.
fn embed_after(
    store: &Store,
    options: &SyncOptions,
    embedder: &dyn Embedder,
    deferred: Option<&[cfs_core::ChunkId]>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(WatchEvent),
) -> Result<()> {
    if !options.defer_embeddings {
        return Ok(());
    }
    let started = Instant::now();
    let embed = EmbedOptions::default();
    let progress = |_| {
        if stop.load(Ordering::SeqCst) {
            embed.stop.store(true, Ordering::SeqCst);
        }
    };
    let report = match deferred {
        Some([]) => return Ok(()),
        Some(ids) => store.embed_chunks(embedder, ids, &embed, &progress)?,
        None => store.embed_pending(embedder, &embed, &progress)?,
    };
    if report.commits > 0 {
        on_event(WatchEvent::Embedded {
            report,
            elapsed: started.elapsed(),
        });
    }
    Ok(())
}

/// The change an event reports, or `None` for an event that changes nothing: a read
/// (open, access, a close without writing; a sync's own reads of every folder and file
/// are such events) or an event on the root folder itself other than its removal or
/// rename (its children's changes come as events of their own).
fn change_of(event: notify::Event, root: &Path) -> Option<Change> {
    use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
    if event.need_rescan() {
        return Some(Change::Rescan);
    }
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
        EventKind::Access(_) => return None,
        EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_)) => {
            return Some(Change::Paths(event.paths));
        }
        _ => {}
    }
    let paths: Vec<PathBuf> = event.paths.into_iter().filter(|p| p != root).collect();
    (!paths.is_empty()).then_some(Change::Paths(paths))
}

/// Keeps `store` in step with the tree at `root` until `stop` is set: a whole sync
/// first, then scoped syncs of what events name. `on_event` hears every sync; it can
/// refresh a search index. A sync error ends the watch with that error.
pub fn watch(
    store: &Store,
    root: &Path,
    options: &SyncOptions,
    embedder: &dyn Embedder,
    settings: &WatchSettings,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(WatchEvent),
) -> Result<()> {
    let root = &root.canonicalize().map_err(|source| StoreError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    let mut coalescer = Coalescer::new(root, settings.quiet, settings.max_delay);
    if let Some(dir) = store.path().parent() {
        coalescer.ignore(dir);
    }
    // Start watching before the first sync, so that no edit falls between the two.
    let (watcher, rx) = start_watcher(root, settings.poll_only);
    let mut degraded = watcher.as_ref().err().map(ToString::to_string);
    let run = Syncs {
        store,
        root,
        options,
        embedder,
        stop,
    };
    run.whole(Instant::now(), on_event)?;
    match &degraded {
        Some(reason) => on_event(WatchEvent::Degraded(reason.clone())),
        None => on_event(WatchEvent::Watching),
    }
    let mut next_poll = Instant::now() + settings.poll_interval;
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if degraded.is_some() {
            // No events: a whole sync at every interval.
            if now >= next_poll {
                run.whole(now, on_event)?;
                next_poll = Instant::now() + settings.poll_interval;
            }
            std::thread::sleep(Duration::from_millis(100).min(settings.poll_interval));
            continue;
        }
        receive(&rx, &mut coalescer, &mut degraded, root, on_event)?;
        let now = Instant::now();
        let started = coalescer.first.unwrap_or(now);
        if let Some(batch) = coalescer.take(now) {
            run.batch(batch, started, on_event)?;
        }
    }
    drop(watcher);
    Ok(())
}

type Events = mpsc::Receiver<notify::Result<notify::Event>>;

/// The system's recursive watcher of `root` and its events, or why there is none
/// (`poll_only`, or the system refused).
fn start_watcher(
    root: &Path,
    poll_only: bool,
) -> (notify::Result<notify::RecommendedWatcher>, Events) {
    let (tx, rx) = mpsc::channel::<notify::Result<notify::Event>>();
    if poll_only {
        return (Err(notify::Error::generic("polling was asked for")), rx);
    }
    let watcher = notify::recommended_watcher(move |event| {
        let _ = tx.send(event);
    })
    .and_then(|mut w| {
        w.watch(root, notify::RecursiveMode::Recursive)?;
        Ok(w)
    });
    (watcher, rx)
}

/// Waits for one event (at most 100 ms, less if the coalescer's batch is due sooner)
/// and gives it to the coalescer; a lost event asks for a rescan, and the system's
/// watch limit degrades the watch to polling.
fn receive(
    rx: &Events,
    coalescer: &mut Coalescer,
    degraded: &mut Option<String>,
    root: &Path,
    on_event: &mut dyn FnMut(WatchEvent),
) -> Result<()> {
    let now = Instant::now();
    let wait = coalescer
        .deadline()
        .map_or(Duration::from_millis(100), |d| {
            d.saturating_duration_since(now)
        })
        .min(Duration::from_millis(100));
    match rx.recv_timeout(wait) {
        Ok(Ok(event)) => {
            if let Some(change) = change_of(event, root) {
                coalescer.push(change, Instant::now());
            }
        }
        Ok(Err(e)) => {
            if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) {
                *degraded = Some(e.to_string());
                on_event(WatchEvent::Degraded(e.to_string()));
            }
            // Whatever was lost, a whole sync finds.
            coalescer.push(Change::Rescan, Instant::now());
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => return Err(StoreError::WatcherStopped),
    }
    Ok(())
}

/// The syncs a watch makes, each followed by the embeddings it deferred.
struct Syncs<'a> {
    store: &'a Store,
    root: &'a Path,
    options: &'a SyncOptions,
    embedder: &'a dyn Embedder,
    stop: &'a AtomicBool,
}

impl Syncs<'_> {
    /// A whole sync of the tree.
    fn whole(&self, started: Instant, on_event: &mut dyn FnMut(WatchEvent)) -> Result<()> {
        let (store, options, embedder) = (self.store, self.options, self.embedder);
        let report = store.sync(self.root, options, embedder, &|_| {})?;
        on_event(WatchEvent::Synced {
            report,
            paths: None,
            elapsed: started.elapsed(),
        });
        embed_after(store, options, embedder, None, self.stop, on_event)
    }

    /// The sync of one coalesced batch, whose first event came at `started`.
    fn batch(
        &self,
        batch: Batch,
        started: Instant,
        on_event: &mut dyn FnMut(WatchEvent),
    ) -> Result<()> {
        let scope = match batch {
            Batch::Everything => return self.whole(started, on_event),
            Batch::Paths(scope) => scope,
        };
        let (store, options, embedder) = (self.store, self.options, self.embedder);
        let n = scope.paths().count();
        let mut report = store.sync_paths(self.root, &scope, options, embedder, &|_| {})?;
        let deferred = std::mem::take(&mut report.deferred_chunks);
        on_event(WatchEvent::Synced {
            report,
            paths: Some(n),
            elapsed: started.elapsed(),
        });
        embed_after(
            store,
            options,
            embedder,
            Some(&deferred),
            self.stop,
            on_event,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coalescer(root: &Path) -> Coalescer {
        Coalescer::new(root, Duration::from_millis(50), Duration::from_millis(500))
    }

    #[test]
    fn bursts_become_one_batch_after_the_quiet_period() {
        let root = Path::new("/tree");
        let mut c = coalescer(root);
        let t0 = Instant::now();
        assert_eq!(c.take(t0), None);
        // An editor's save: write a temp file, rename it over the file.
        c.push(Change::Paths(vec![root.join("src/.a.rs.swp")]), t0);
        c.push(
            Change::Paths(vec![root.join("src/.a.rs.swp"), root.join("src/a.rs")]),
            t0 + Duration::from_millis(10),
        );
        assert_eq!(c.take(t0 + Duration::from_millis(40)), None);
        let batch = c.take(t0 + Duration::from_millis(60)).unwrap();
        assert_eq!(
            batch,
            Batch::Paths(Scope::new(["src/.a.rs.swp", "src/a.rs"]))
        );
        assert_eq!(c.take(t0 + Duration::from_secs(9)), None);
    }

    #[test]
    fn a_steady_stream_is_cut_at_the_max_delay() {
        let root = Path::new("/tree");
        let mut c = coalescer(root);
        let t0 = Instant::now();
        for i in 0..100u64 {
            let t = t0 + Duration::from_millis(10 * i);
            c.push(Change::Paths(vec![root.join(format!("f{i}"))]), t);
            if let Some(Batch::Paths(scope)) = c.take(t) {
                assert!(t >= t0 + Duration::from_millis(500));
                assert_eq!(scope.paths().count(), 51);
                return;
            }
        }
        panic!("no batch within the max delay");
    }

    #[test]
    fn ignored_and_outside_paths_make_no_work_and_rescans_cover_all() {
        let root = Path::new("/tree");
        let mut c = coalescer(root);
        c.ignore(Path::new("/tree/.store"));
        let t0 = Instant::now();
        c.push(
            Change::Paths(vec![
                root.join(".git/index"),
                root.join("a/node_modules/x.js"),
                root.join("target/debug/cfs"),
                root.join(".store/store.redb"),
                PathBuf::from("/elsewhere/file"),
            ]),
            t0,
        );
        assert_eq!(c.deadline(), None);
        assert_eq!(c.take(t0 + Duration::from_secs(1)), None);
        // Ignored events do not push a pending batch back.
        c.push(Change::Paths(vec![root.join("a.txt")]), t0);
        let deadline = c.deadline();
        c.push(
            Change::Paths(vec![root.join(".git/index")]),
            t0 + Duration::from_millis(30),
        );
        assert_eq!(c.deadline(), deadline);
        assert!(c.take(t0 + Duration::from_millis(50)).is_some());
        c.push(Change::Paths(vec![root.join("b.txt")]), t0);
        c.push(Change::Rescan, t0);
        assert_eq!(c.take(t0 + Duration::from_secs(1)), Some(Batch::Everything));
        // The root itself means everything.
        c.push(Change::Paths(vec![root.to_path_buf()]), t0);
        assert_eq!(c.take(t0 + Duration::from_secs(1)), Some(Batch::Everything));
    }
}
