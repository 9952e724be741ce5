//! Incremental sync: bring the store in step with a folder, touching only what changed.
//!
//! Stat cache first (size and modification time), content hash second: a file whose
//! bytes did not change is never parsed again, and a renamed or copied file is re-bound
//! to its document without re-chunking or re-embedding. Changed files are parsed,
//! chunked and embedded in parallel, with embeddings of already-seen text taken from the
//! cache; writes go in batched transactions; removed files are unbound by an explicit
//! list. The root after a sync equals the root of a clean index of the same tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfs_core::{Canonical, ContentHash, DocumentId, PathEntry, StateRoot};
use cfs_ingest::{Embedder, IngestConfig, Registry, Scope, WalkEntry};
use redb::ReadableTable;

use crate::error::{Result, StoreError};
use crate::store::{Settings, Store};
use crate::tables::{self, Stat};
use crate::write::WriteTxn;

mod batch;
mod stream;
mod walk;

use batch::{Read, read_files, reads_of};
pub use walk::WalkAhead;
use walk::{Walked, walk_files};

/// Files written per transaction at most (a cold sync of up to this many files is one
/// commit: see `sync_scope`).
pub const DEFAULT_BATCH_FILES: usize = 50_000;
/// Bytes of file content written per transaction at most.
const COMMIT_BYTES: u64 = 1 << 30;
/// Files read and parsed at once, at most, by default.
pub const DEFAULT_PARSE_FILES: usize = 1024;
/// Files modified this recently (ns) are not trusted to the stat cache: an edit within
/// the same clock tick would otherwise go unseen.
const RACY_WINDOW_NS: u64 = 2_000_000_000;
/// Bytes of file content read and parsed at once, at most (one larger file makes a
/// group of its own); less under a smaller memory budget (`SyncOptions::memory_bytes`).
const PARSE_BYTES: u64 = 64 << 20;
/// The memory a sync holds by default (`SyncOptions::memory_bytes`).
pub const DEFAULT_SYNC_MEMORY: usize = 512 << 20;
/// Texts embedded per parallel task.
const EMBED_BATCH: usize = 256;

/// How to sync.
#[derive(Clone, Debug)]
pub struct SyncOptions {
    /// Parsing and chunking.
    pub config: IngestConfig,
    /// Collections that path entries are resolved against.
    pub registry: Registry,
    /// Files per write transaction, at most (fewer, larger commits write less; smaller
    /// ones lose less work to a crash).
    pub batch_files: usize,
    /// Files read and parsed at once, at most (the memory a sync holds); the next group
    /// is parsed while one is written.
    pub parse_files: usize,
    /// Text first: commit chunks whose texts are not in the embedding cache without
    /// their embeddings, for [`Store::embed_pending`] to add in later commits.
    pub defer_embeddings: bool,
    /// About the most memory the sync's own structures hold, in bytes, whatever the
    /// tree's size: a quarter for rows of new documents waiting for their commit
    /// (beyond it they are sorted into runs on disk beside the store, and merged at
    /// commit), a thirty-second for each of the two groups of files read and parsed at
    /// once (up to 64 MiB), the rest for what the parsed files become. The store's page
    /// cache comes on top: a quarter of this for a store opened with
    /// [`Store::open_for_sync`], redb's default (at most 1 GiB) otherwise.
    pub memory_bytes: usize,
}

impl Default for SyncOptions {
    fn default() -> Self {
        Self {
            config: IngestConfig::default(),
            registry: Registry::default(),
            batch_files: DEFAULT_BATCH_FILES,
            parse_files: DEFAULT_PARSE_FILES,
            defer_embeddings: false,
            memory_bytes: DEFAULT_SYNC_MEMORY,
        }
    }
}

/// What a sync tells its `progress` callback, in this order: the files its walk found,
/// each of them once done with (unchanged, written or failed), and each commit as it
/// begins (removing released documents, writing staged rows, rehashing, syncing to disk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncProgress<'a> {
    /// The walk found this many files to compare with the store.
    Found {
        /// Files.
        files: usize,
    },
    /// One file is done with.
    File(&'a str),
    /// A commit begins.
    Committing,
}

/// What a sync did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// New paths.
    pub added: usize,
    /// Paths whose content (or collections) changed.
    pub updated: usize,
    /// Paths gone from the folder.
    pub removed: usize,
    /// Paths gone whose content reappeared under a new path.
    pub renamed: usize,
    /// Paths that did not change.
    pub unchanged: usize,
    /// Files that could not be indexed, with the reason; any earlier version of them is
    /// removed from the store.
    pub failed: Vec<(String, String)>,
    /// Files read and hashed (the stat cache did not vouch for them).
    pub hashed: usize,
    /// Files parsed and chunked (their content was new).
    pub parsed: usize,
    /// Chunks embedded (not found in the embedding cache).
    pub embedded: usize,
    /// Chunks committed without their embedding ([`SyncOptions::defer_embeddings`]).
    pub deferred: usize,
    /// Their ids: [`Store::embed_chunks`] embeds exactly these, without a scan of the
    /// store (what [`Store::embed_pending`] needs after an interrupted run).
    pub deferred_chunks: Vec<cfs_core::ChunkId>,
    /// Committed rows removed, over all tables.
    pub rows_removed: u64,
    /// Transactions committed.
    pub commits: usize,
    /// The state root after the sync.
    pub root: StateRoot,
}

/// `items` cut into runs, in order, of at most `most_items` items and `most_weight` of
/// their `weight` each (an item heavier than that makes a run of its own).
fn runs<T>(
    items: &[T],
    most_items: usize,
    most_weight: u64,
    weight: impl Fn(&T) -> u64,
) -> Vec<&[T]> {
    let mut out = Vec::new();
    let (mut start, mut sum) = (0usize, 0u64);
    for (at, item) in items.iter().enumerate() {
        let w = weight(item);
        if at > start && (at - start >= most_items || sum + w > most_weight) {
            out.push(&items[start..at]);
            (start, sum) = (at, 0);
        }
        sum += w;
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

/// The value at `path` of a cursor over `(path, value)` pairs sorted by path, moved
/// forward to it; paths are asked for in increasing order.
fn seek<'m, V: 'm>(
    cursor: &mut std::iter::Peekable<impl Iterator<Item = (&'m String, &'m V)>>,
    path: &str,
) -> Option<&'m V> {
    while cursor.next_if(|(k, _)| k.as_str() < path).is_some() {}
    cursor
        .peek()
        .filter(|(k, _)| k.as_str() == path)
        .map(|(_, v)| *v)
}

/// Whether a stat row vouches for the file the walk found: unchanged size and time
/// (a zero time vouches for nothing).
fn vouches_for(stat: &Stat, entry: &WalkEntry) -> bool {
    stat.size == entry.size_bytes && stat.mtime_ns == entry.mtime_ns && stat.mtime_ns != 0
}
/// The path entries and stat-cache rows of the paths in `scope`. The stat cache is
/// keyed by path, so a folder's rows are one key range; path entries are then read by
/// id for those paths and for the scope's own paths.
fn scoped_state(
    read: &crate::ReadTxn,
    scope: &Scope,
) -> Result<(BTreeMap<String, PathEntry>, BTreeMap<String, Stat>)> {
    let mut stats: BTreeMap<String, Stat> = BTreeMap::new();
    let mut candidates: BTreeSet<String> = BTreeSet::new();
    for p in scope.paths() {
        candidates.insert(p.to_owned());
        for (path, stat) in read.stats_at(p)? {
            if let Some(stat) = stat {
                stats.insert(path.clone(), stat);
            }
            candidates.insert(path);
        }
    }
    let mut existing = BTreeMap::new();
    for path in candidates {
        if let Some(entry) = read.path(&path)? {
            existing.insert(path, entry);
        }
    }
    Ok((existing, stats))
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Store {
    /// Syncs the store with the folder `root`; `progress` hears how many files the walk
    /// found, then each file as it is done with, then each commit as it begins.
    pub fn sync(
        &self,
        root: &Path,
        options: &SyncOptions,
        embedder: &dyn Embedder,
        progress: &(dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<SyncReport> {
        let target = Target {
            root,
            scope: None,
            ahead: None,
        };
        crate::error::guard(self.path(), || {
            self.sync_scope(target, options, embedder, progress)
        })
    }

    /// Begins walking the whole tree at `root` on a thread of its own, for a sync of it
    /// into the store at `store_path` ([`Store::sync_walked`]), so that the store can be
    /// created meanwhile. The store file must not appear inside the tree during the
    /// walk except in a folder the walk skips (`.cfs`, where `cfs index` keeps it):
    /// before it exists, it cannot be recognised as the store's own.
    pub fn walk_ahead(root: &Path, store_path: &Path) -> WalkAhead {
        WalkAhead::begin(root, store_path)
    }

    /// [`Store::sync`] of the tree `walk` was begun on, with its walk: the tree as the
    /// walk found it (a file added or removed since is the next sync's). A walk begun
    /// for another store is an `InvalidInput` error.
    pub fn sync_walked(
        &self,
        walk: WalkAhead,
        options: &SyncOptions,
        embedder: &dyn Embedder,
        progress: &(dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<SyncReport> {
        if walk.store_path != self.path() {
            return Err(StoreError::InvalidInput(format!(
                "a walk begun for the store {} given to the store {}",
                walk.store_path.display(),
                self.path().display()
            )));
        }
        let root = walk.root.clone();
        let target = Target {
            root: &root,
            scope: None,
            ahead: Some(walk),
        };
        crate::error::guard(self.path(), || {
            self.sync_scope(target, options, embedder, progress)
        })
    }

    /// Syncs only the part of `root` in `scope`: the named files and everything under
    /// the named folders, added, changed or removed (a named path that no longer exists
    /// is removed, with everything under it). The same rules as a whole sync apply, so
    /// syncing the paths that changed leaves the root a whole sync would.
    pub fn sync_paths(
        &self,
        root: &Path,
        scope: &Scope,
        options: &SyncOptions,
        embedder: &dyn Embedder,
        progress: &(dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<SyncReport> {
        if scope.is_empty() {
            return Ok(SyncReport {
                root: self.state_root()?,
                ..SyncReport::default()
            });
        }
        let target = Target {
            root,
            scope: Some(scope).filter(|s| !s.is_everything()),
            ahead: None,
        };
        crate::error::guard(self.path(), || {
            self.sync_scope(target, options, embedder, progress)
        })
    }

    fn sync_scope(
        &self,
        target: Target<'_>,
        options: &SyncOptions,
        embedder: &dyn Embedder,
        progress: &(dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<SyncReport> {
        let mut run = SyncRun::start(self, options, embedder, progress)?;
        let triage = run.survey(target.root, target.scope, target.ahead)?;
        if triage.is_empty() {
            // Nothing to write, not even to a cache: no transaction at all.
            run.report.root = self.state_root()?;
            return Ok(run.report);
        }
        let mut txn = run.begin_write()?;
        for entry in &triage.relabel {
            txn.bind_path(entry)?;
            run.report.updated += 1;
        }
        let txn = run.write_files(txn, &triage.to_read)?;
        run.finish(txn, &triage.gone)
    }

    /// The report of a sync of the whole tree at `root` if that sync would write nothing
    /// (every file as the stat cache has it, none new, none gone, no collection changed),
    /// found with read transactions only: it works on a store opened read-only, so that
    /// a no-op index needs no writable open (whose open and close write and sync the
    /// file). `None` if the sync has something to do.
    pub fn unchanged(
        &self,
        root: &Path,
        options: &SyncOptions,
        embedder: &dyn Embedder,
    ) -> Result<Option<SyncReport>> {
        crate::error::guard(self.path(), || {
            let mut run = SyncRun::start(self, options, embedder, &|_| {})?;
            if !run.survey(root, None, None)?.is_empty() {
                return Ok(None);
            }
            run.report.root = self.state_root()?;
            Ok(Some(run.report))
        })
    }
}

/// What a sync covers: the tree, the part of it in scope, and its walk if it was begun
/// already ([`Store::walk_ahead`]).
struct Target<'t> {
    root: &'t Path,
    scope: Option<&'t Scope>,
    ahead: Option<WalkAhead>,
}

/// One sync run: what it compares against, what it has done so far, and how.
struct SyncRun<'a> {
    store: &'a Store,
    options: &'a SyncOptions,
    embedder: &'a dyn Embedder,
    progress: &'a (dyn Fn(SyncProgress<'_>) + Sync),
    /// When the run began: a file modified within `RACY_WINDOW_NS` before it gets a stat
    /// row that vouches for nothing.
    started_ns: u64,
    /// The path entries in scope, by path.
    existing: BTreeMap<String, PathEntry>,
    /// The stat-cache rows in scope, by path.
    stats: BTreeMap<String, Stat>,
    /// Content hashes of documents whose paths are leaving, with how many: a new path
    /// with such content is a rename.
    renames_left: BTreeMap<ContentHash, usize>,
    /// Whether the chunks' embedding texts are made and looked up in the embedding
    /// cache: not while embeddings are deferred and the cache holds no vector of this
    /// model (a new store), when nothing could be found.
    texts_wanted: bool,
    /// Whether the store's documents were parsed by other parsers than this build's
    /// (`cfs_ingest::parsers_version`): a whole sync then parses every file again,
    /// trusting neither the stat cache nor a document of the same content, and records
    /// this build's parsers when it commits.
    reparse: bool,
    report: SyncReport,
}

/// What the stat cache decided for the walked files.
struct Triage {
    /// Files to read (the stat cache does not vouch for them).
    to_read: Vec<WalkEntry>,
    /// Unchanged files whose collections or context changed.
    relabel: Vec<PathEntry>,
    /// Paths in scope that the walk did not find.
    gone: Vec<String>,
}

impl Triage {
    /// Nothing to write.
    fn is_empty(&self) -> bool {
        self.relabel.is_empty() && self.to_read.is_empty() && self.gone.is_empty()
    }
}

impl<'a> SyncRun<'a> {
    /// A run starting now, once the store's settings are checked against the
    /// options' chunking and the embedder's model.
    fn start(
        store: &'a Store,
        options: &'a SyncOptions,
        embedder: &'a dyn Embedder,
        progress: &'a (dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<Self> {
        let requested = Settings {
            chunk: options.config.chunk,
            model_id: embedder.model_id().to_owned(),
        };
        store.settings().check(&requested, store.path())?;
        let reparse = store.parsers()?.as_deref() != Some(cfs_ingest::parsers_version().as_str());
        Ok(Self {
            store,
            options,
            embedder,
            progress,
            started_ns: now_ns(),
            existing: BTreeMap::new(),
            stats: BTreeMap::new(),
            renames_left: BTreeMap::new(),
            texts_wanted: true,
            reparse,
            report: SyncReport::default(),
        })
    }

    /// Walks the tree and compares it with the store, with read transactions only:
    /// what the sync must do with the files found.
    fn survey(
        &mut self,
        root: &Path,
        scope: Option<&Scope>,
        ahead: Option<WalkAhead>,
    ) -> Result<Triage> {
        let store = self.store;
        // Only a whole sync parses everything again: a part of the tree parsed anew
        // would leave the rest as the old parsers made it.
        self.reparse &= scope.is_none();
        // The walk (system calls) and the read of the store's side run at once.
        let (walked, state) = match ahead {
            Some(walk) => {
                let state = self.read_state(scope);
                (walk.join(), state)
            }
            None => rayon::join(
                || walk_files(store.path(), root, scope),
                || self.read_state(scope),
            ),
        };
        let Walked {
            files,
            failures,
            unread,
        } = walked?;
        state?;
        (self.progress)(SyncProgress::Found { files: files.len() });
        self.report.failed = failures;
        if !unread.is_empty() {
            // What the store holds under what could not be read stays as it is.
            self.existing.retain(|path, _| !unread.contains(path));
        }
        let gone = self.gone(&files);
        self.find_renames(&gone)?;
        Ok(self.triage(&files, gone))
    }

    /// The paths in scope that the walk did not find. `files` is sorted by path, as the
    /// store's maps are, so this is one merge of the two lists.
    fn gone(&self, files: &[WalkEntry]) -> Vec<String> {
        debug_assert!(files.windows(2).all(|w| w[0].rel_path < w[1].rel_path));
        let mut found = files.iter().map(|f| (&f.rel_path, f)).peekable();
        self.existing
            .keys()
            .filter(|path| seek(&mut found, path).is_none())
            .cloned()
            .collect()
    }

    /// Reads what the run compares against: the path entries and stat rows in scope
    /// (one read transaction; it runs while the tree is walked).
    fn read_state(&mut self, scope: Option<&Scope>) -> Result<()> {
        let read = self.store.begin_read()?;
        (self.existing, self.stats) = match scope {
            None => {
                let existing = read
                    .all_paths()?
                    .into_iter()
                    .map(|p| (p.path.clone(), p))
                    .collect();
                (existing, read.stats()?)
            }
            Some(scope) => scoped_state(&read, scope)?,
        };
        Ok(())
    }

    /// The contents of the paths that are leaving (not found by the walk), to tell a
    /// rename from an addition.
    fn find_renames(&mut self, gone: &[String]) -> Result<()> {
        if gone.is_empty() {
            return Ok(());
        }
        let read = self.store.begin_read()?;
        for entry in gone.iter().filter_map(|path| self.existing.get(path)) {
            if let Some(doc) = read.document(&entry.document_id)? {
                *self.renames_left.entry(doc.content_hash).or_insert(0) += 1;
            }
        }
        Ok(())
    }

    /// Stat cache first: unchanged size and time vouch for unchanged content, so such a
    /// file is not read (only relabelled if its collections changed).
    fn triage(&mut self, files: &[WalkEntry], gone: Vec<String>) -> Triage {
        let mut to_read: Vec<WalkEntry> = Vec::new();
        let mut relabel: Vec<PathEntry> = Vec::new();
        // The files and both maps are sorted by path: each file's rows are found by
        // moving two cursors forward (no lookups, no hashing).
        let mut stats = self.stats.iter().peekable();
        let mut existing = self.existing.iter().peekable();
        for f in files {
            let cached = seek(&mut stats, &f.rel_path)
                .filter(|s| vouches_for(s, f) && !(self.reparse && s.failure.is_none()));
            let old = seek(&mut existing, &f.rel_path);
            if let Some(reason) = cached.and_then(|s| s.failure.as_ref())
                && old.is_none()
            {
                self.report
                    .failed
                    .push((f.rel_path.clone(), reason.clone()));
            } else if let Some(old) = old.filter(|_| cached.is_some_and(|s| s.failure.is_none())) {
                let resolution = self.options.registry.resolve(&f.rel_path);
                if old.collections != resolution.collections || old.context != resolution.context {
                    relabel.push(PathEntry {
                        collections: resolution.collections,
                        context: resolution.context,
                        ..old.clone()
                    });
                } else {
                    self.report.unchanged += 1;
                }
            } else {
                to_read.push(f.clone());
                continue;
            }
            (self.progress)(SyncProgress::File(&f.rel_path));
        }
        Triage {
            to_read,
            relabel,
            gone,
        }
    }

    /// Files are read and parsed in groups small enough to hold in memory
    /// (`parse_files`, `PARSE_BYTES`), each group cut into parts of at most
    /// `batch_files` files.
    fn parts<'f>(&self, to_read: &'f [WalkEntry]) -> Vec<&'f [WalkEntry]> {
        let parse_files = self.options.parse_files.max(1);
        let parse_bytes = (self.options.memory_bytes as u64 / 32).clamp(1 << 20, PARSE_BYTES);
        let groups = runs(to_read, parse_files, parse_bytes, |f| f.size_bytes);
        let per_commit = self.options.batch_files.max(1);
        groups
            .iter()
            .flat_map(|group| group.chunks(per_commit))
            .collect()
    }

    /// Reads, parses and writes the files, one part after another, into one transaction
    /// until it holds `batch_files` files or `COMMIT_BYTES` of content: a commit
    /// rewrites every page it touches that an earlier commit wrote, so fewer commits
    /// write far less. A part's documents are written beside its parse
    /// (`stream.rs`), and the next part is read meanwhile (reading needs no store: only
    /// the plan, made after the part before is bound, does). Returns the open
    /// transaction for `finish`.
    fn write_files<'s>(
        &mut self,
        mut txn: WriteTxn<'s>,
        to_read: &[WalkEntry],
    ) -> Result<WriteTxn<'s>>
    where
        'a: 's,
    {
        let parts = self.parts(to_read);
        let per_commit = self.options.batch_files.max(1);
        // A deferred sync adds nothing to the cache: what it holds now it holds throughout.
        self.texts_wanted =
            !self.options.defer_embeddings || txn.caches_vectors_of(&self.embedder.model_hash())?;
        let config = &self.options.config;
        let (mut files_pending, mut bytes_pending) = (0usize, 0u64);
        // The files of part `.0`, read during the part before.
        let mut read_ahead: Option<(usize, Vec<Read>)> = None;
        for (n, part) in parts.iter().enumerate() {
            let reads = reads_of(&mut read_ahead, n, part, config);
            let (reads, plan) = self.plan(&txn, reads)?;
            let (bound, read) = rayon::join(
                || self.parse_and_write(&mut txn, &reads, &plan),
                || {
                    parts
                        .get(n + 1)
                        .map(|part| (n + 1, read_files(part, config)))
                },
            );
            read_ahead = read;
            self.bind_batch(&mut txn, &reads, plan, &bound?)?;
            drop(reads);
            files_pending += part.len();
            bytes_pending += part.iter().map(|f| f.size_bytes).sum::<u64>();
            if files_pending >= per_commit || bytes_pending >= COMMIT_BYTES {
                self.commit(txn)?;
                txn = self.begin_write()?;
                (files_pending, bytes_pending) = (0, 0);
            }
        }
        Ok(txn)
    }

    /// A write transaction holding a quarter of the memory budget of staged rows.
    fn begin_write(&self) -> Result<WriteTxn<'a>> {
        let mut txn = self.store.begin_write()?;
        txn.set_staged_limit(self.options.memory_bytes / 4);
        Ok(txn)
    }

    /// Commits the transaction of a part, counting it if it changed a committed row.
    fn commit(&mut self, mut txn: WriteTxn<'_>) -> Result<StateRoot> {
        (self.progress)(SyncProgress::Committing);
        txn.remove_orphans()?;
        self.report.rows_removed += txn.summary().n_removed();
        if txn.summary() != &cfs_core::ChangeSummary::default() {
            self.report.commits += 1;
        }
        txn.commit()
    }

    /// Unbinds the paths that are gone (an explicit list of paths, never a filter) and
    /// commits the last transaction.
    fn finish(mut self, mut txn: WriteTxn<'_>, gone: &[String]) -> Result<SyncReport> {
        if !gone.is_empty() {
            txn.remove_stats(gone.iter().map(String::as_str))?;
            for path in gone {
                txn.unbind_path(path)?;
            }
            self.report.removed += gone.len();
        }
        if self.reparse {
            txn.set_parsers(&cfs_ingest::parsers_version())?;
        }
        self.report.root = self.commit(txn)?;
        let renamed = self.report.renamed;
        self.report.removed -= renamed.min(self.report.removed);
        Ok(self.report)
    }
}

impl WriteTxn<'_> {
    /// The content hash of a present document.
    pub(crate) fn content_of(&self, id: &DocumentId) -> Result<Option<ContentHash>> {
        let t = self.raw().open_table(tables::DOCUMENTS)?;
        match t.get(&id.0[..])? {
            Some(v) => Ok(Some(
                cfs_core::Document::decode(tables::split_row(v.value())?.1)?.content_hash,
            )),
            None => Ok(None),
        }
    }
}
