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

use cfs_core::{Canonical, ContentHash, DocumentId, PathEntry, StateRoot, TextHash, encode_vector};
use cfs_ingest::{
    Embedder, IngestConfig, IngestError, Parsed, Registry, Scope, WalkEntry, detect_file,
    embedding_text, parse_file, walk_scope,
};
use rayon::prelude::*;
use redb::ReadableTable;

use crate::error::{Result, StoreError};
use crate::store::{Settings, Store};
use crate::tables::{self, Stat};
use crate::vectors;
use crate::write::{NewDocument, WriteTxn};

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
/// group of its own).
const PARSE_BYTES: u64 = 64 << 20;
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
}

impl Default for SyncOptions {
    fn default() -> Self {
        Self {
            config: IngestConfig::default(),
            registry: Registry::default(),
            batch_files: DEFAULT_BATCH_FILES,
            parse_files: DEFAULT_PARSE_FILES,
            defer_embeddings: false,
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

/// Whether a stat row vouches for the file the walk found: unchanged size and time
/// (a zero time vouches for nothing).
fn vouches_for(stat: &Stat, entry: &WalkEntry) -> bool {
    stat.size == entry.size_bytes && stat.mtime_ns == entry.mtime_ns && stat.mtime_ns != 0
}
/// What planning decided for each file of a batch.
struct Plan {
    /// The document a file is bound to without parsing, when known.
    documents: Vec<Option<DocumentId>>,
    /// The files to parse: each new content once.
    to_parse: Vec<usize>,
    /// Files whose same bytes failed before, with the reason.
    known_failures: BTreeMap<usize, String>,
}

/// The hash of the text a chunk is embedded from, and that text when it is not the
/// chunk's own.
type EmbeddingText = (TextHash, Option<String>);

/// A batch parsed: each parsed file's result and its chunks' embedding texts.
struct ParsedBatch {
    results: BTreeMap<usize, std::result::Result<Parsed, IngestError>>,
    /// Per parsed file, per chunk.
    texts: Vec<(usize, Vec<EmbeddingText>)>,
}

/// Vectors computed for one batch of texts, or why the embedder failed.
type EmbeddedBatch =
    std::result::Result<Vec<(TextHash, vectors::VectorHash, Vec<u8>, Vec<i16>)>, String>;

/// One file read in this sync.
struct Read {
    entry: WalkEntry,
    result: std::result::Result<(Vec<u8>, ContentHash), IngestError>,
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

fn read_file(
    entry: &WalkEntry,
    config: &IngestConfig,
) -> std::result::Result<(Vec<u8>, ContentHash), IngestError> {
    let bytes = cfs_ingest::read_entry(entry, config)?;
    let hash = ContentHash::of(&bytes);
    Ok((bytes, hash))
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
        crate::error::guard(self.path(), || {
            self.sync_scope(root, None, options, embedder, progress)
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
        let scope = Some(scope).filter(|s| !s.is_everything());
        crate::error::guard(self.path(), || {
            self.sync_scope(root, scope, options, embedder, progress)
        })
    }

    fn sync_scope(
        &self,
        root: &Path,
        scope: Option<&Scope>,
        options: &SyncOptions,
        embedder: &dyn Embedder,
        progress: &(dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<SyncReport> {
        let requested = Settings {
            chunk: options.config.chunk,
            model_id: embedder.model_id().to_owned(),
        };
        self.settings().check(&requested, self.path())?;
        let started_ns = now_ns();
        let walked = walk_scope(root, scope)?;
        // The store's own file is never indexed, wherever it lives (only files with its
        // name are resolved, to keep the walk free of per-file path resolution).
        let store_file = self.path().canonicalize().ok();
        let store_name = self.path().file_name();
        let files: Vec<WalkEntry> = walked
            .files
            .into_iter()
            .filter(|f| {
                f.abs_path.file_name() != store_name
                    || store_file.as_deref() != f.abs_path.canonicalize().ok().as_deref()
            })
            .collect();
        progress(SyncProgress::Found { files: files.len() });
        let mut report = SyncReport::default();
        for e in walked.errors {
            report.failed.push((error_path(&e), e.to_string()));
        }

        let seen: BTreeSet<&str> = files.iter().map(|f| f.rel_path.as_str()).collect();
        // One read transaction for everything the sync compares against.
        let (existing, stats, mut renames_left) = {
            let read = self.begin_read()?;
            let (existing, stats) = match scope {
                None => {
                    let existing: BTreeMap<String, PathEntry> = read
                        .all_paths()?
                        .into_iter()
                        .map(|p| (p.path.clone(), p))
                        .collect();
                    (existing, read.stats()?)
                }
                Some(scope) => scoped_state(&read, scope)?,
            };
            // Content hashes of documents that may be leaving, to tell renames apart.
            let mut renames: BTreeMap<ContentHash, usize> = BTreeMap::new();
            for entry in existing
                .values()
                .filter(|e| !seen.contains(e.path.as_str()))
            {
                if let Some(doc) = read.document(&entry.document_id)? {
                    *renames.entry(doc.content_hash).or_insert(0) += 1;
                }
            }
            (existing, stats, renames)
        };

        // Stat cache first: unchanged size and time vouch for unchanged content.
        let mut to_read: Vec<WalkEntry> = Vec::new();
        let mut relabel: Vec<PathEntry> = Vec::new();
        for f in files.iter() {
            let cached = stats.get(&f.rel_path).filter(|s| vouches_for(s, f));
            if let Some(reason) = cached.and_then(|s| s.failure.as_ref())
                && !existing.contains_key(&f.rel_path)
            {
                report.failed.push((f.rel_path.clone(), reason.clone()));
                progress(SyncProgress::File(&f.rel_path));
                continue;
            }
            let vouched =
                cached.is_some_and(|s| s.failure.is_none()) && existing.contains_key(&f.rel_path);
            if vouched {
                let old = &existing[&f.rel_path];
                let resolution = options.registry.resolve(&f.rel_path);
                if old.collections != resolution.collections || old.context != resolution.context {
                    relabel.push(PathEntry {
                        collections: resolution.collections,
                        context: resolution.context,
                        ..old.clone()
                    });
                } else {
                    report.unchanged += 1;
                }
                progress(SyncProgress::File(&f.rel_path));
            } else {
                to_read.push(f.clone());
            }
        }

        let gone: Vec<String> = existing
            .keys()
            .filter(|p| !seen.contains(p.as_str()))
            .cloned()
            .collect();

        if relabel.is_empty() && to_read.is_empty() && gone.is_empty() {
            // Nothing to write, not even to a cache: no transaction at all.
            report.root = self.state_root()?;
            return Ok(report);
        }
        let mut txn = self.begin_write()?;
        for entry in &relabel {
            txn.bind_path(entry)?;
            report.updated += 1;
        }
        // Files are read and parsed in groups small enough to hold in memory, and
        // written into one transaction until it holds `batch_files` files or
        // COMMIT_BYTES of content: a commit rewrites every page it touches that an
        // earlier commit wrote, so fewer commits write far less.
        let parse_files = options.parse_files.max(1);
        let mut groups: Vec<&[WalkEntry]> = Vec::new();
        let (mut start, mut bytes) = (0usize, 0u64);
        for (i, f) in to_read.iter().enumerate() {
            if i > start && (i - start >= parse_files || bytes + f.size_bytes > PARSE_BYTES) {
                groups.push(&to_read[start..i]);
                start = i;
                bytes = 0;
            }
            bytes += f.size_bytes;
        }
        if start < to_read.len() {
            groups.push(&to_read[start..]);
        }
        let per_commit = options.batch_files.max(1);
        let parts: Vec<&[WalkEntry]> = groups
            .iter()
            .flat_map(|group| group.chunks(per_commit))
            .collect();
        let read_part = |part: &[WalkEntry]| -> Vec<Read> {
            part.par_iter()
                .map(|entry| Read {
                    entry: entry.clone(),
                    result: read_file(entry, &options.config),
                })
                .collect()
        };
        let (mut files_pending, mut bytes_pending) = (0usize, 0u64);
        // A batch read, planned and parsed, waiting to be written.
        let mut ahead: Option<(Vec<Read>, Plan, ParsedBatch)> = None;
        for (n, part) in parts.iter().enumerate() {
            let (reads, plan, parsed) = match ahead.take() {
                Some(batch) => batch,
                None => {
                    let reads = read_part(part);
                    let plan = Self::plan_batch(&txn, &reads, &existing, &stats, &mut report)?;
                    let parsed = Self::parse_batch(&reads, &plan, &options.config);
                    (reads, plan, parsed)
                }
            };
            files_pending += part.len();
            bytes_pending += part.iter().map(|f| f.size_bytes).sum::<u64>();
            let commit_due = files_pending >= per_commit || bytes_pending >= COMMIT_BYTES;
            // The next batch is parsed while this one is written, unless a commit comes
            // between them. Its plan is made before this batch's writes: it may miss a
            // document this batch adds (that content is then parsed twice, to the same
            // document), and it may name a document this batch releases (kept, as
            // released documents are removed only at commit).
            let next = match parts.get(n + 1).filter(|_| !commit_due) {
                Some(following) => {
                    let next_reads = read_part(following);
                    let next_plan =
                        Self::plan_batch(&txn, &next_reads, &existing, &stats, &mut report)?;
                    Some((next_reads, next_plan))
                }
                None => None,
            };
            let (written, next_parsed) = rayon::join(
                || {
                    self.write_batch(
                        &mut txn,
                        reads,
                        plan,
                        parsed,
                        &existing,
                        options,
                        embedder,
                        started_ns,
                        &mut renames_left,
                        &mut report,
                        progress,
                    )
                },
                || {
                    next.as_ref()
                        .map(|(r, p)| Self::parse_batch(r, p, &options.config))
                },
            );
            written?;
            ahead = next
                .zip(next_parsed)
                .map(|((reads, plan), parsed)| (reads, plan, parsed));
            if commit_due {
                progress(SyncProgress::Committing);
                txn.remove_orphans()?;
                report.rows_removed += txn.summary().n_removed();
                if txn.summary() != &cfs_core::ChangeSummary::default() {
                    report.commits += 1;
                }
                txn.commit()?;
                txn = self.begin_write()?;
                (files_pending, bytes_pending) = (0, 0);
            }
        }
        // Removed files: an explicit list of paths, never a filter.
        if !gone.is_empty() {
            txn.remove_stats(gone.iter().map(String::as_str))?;
            for path in &gone {
                txn.unbind_path(path)?;
            }
            report.removed += gone.len();
        }
        progress(SyncProgress::Committing);
        txn.remove_orphans()?;
        report.rows_removed += txn.summary().n_removed();
        let changed = txn.summary() != &cfs_core::ChangeSummary::default();
        report.root = txn.commit()?;
        if changed {
            report.commits += 1;
        }
        report.removed -= report.renamed.min(report.removed);
        Ok(report)
    }

    /// Decides per file of a batch whether it needs parsing: content second (the stat
    /// cache came first), then a document of the same content already in the store.
    fn plan_batch(
        txn: &WriteTxn<'_>,
        reads: &[Read],
        existing: &BTreeMap<String, PathEntry>,
        stats: &BTreeMap<String, Stat>,
        report: &mut SyncReport,
    ) -> Result<Plan> {
        let mut plan = Plan {
            documents: Vec::with_capacity(reads.len()),
            to_parse: Vec::new(),
            known_failures: BTreeMap::new(),
        };
        let mut new_content: BTreeMap<(ContentHash, &'static str), usize> = BTreeMap::new();
        for (i, read) in reads.iter().enumerate() {
            let path = read.entry.rel_path.as_str();
            let mut document = None;
            if let Ok((bytes, hash)) = &read.result {
                report.hashed += 1;
                let cached = stats.get(path).filter(|s| s.hash == *hash);
                let same = cached.is_some_and(|s| s.failure.is_none());
                if let Some(reason) = cached.and_then(|s| s.failure.clone()) {
                    // The same bytes failed before: they would fail again.
                    plan.known_failures.insert(i, reason);
                } else if same && let Some(old) = existing.get(path) {
                    document = Some(old.document_id);
                } else if let Ok(detected) = detect_file(path, bytes) {
                    if let Some(doc) = txn.document_for_content(hash, detected.mime_type)? {
                        document = Some(doc);
                    } else if let std::collections::btree_map::Entry::Vacant(slot) =
                        new_content.entry((*hash, detected.mime_type))
                    {
                        slot.insert(i);
                        plan.to_parse.push(i);
                    }
                } else {
                    plan.to_parse.push(i);
                }
            }
            plan.documents.push(document);
        }
        Ok(plan)
    }

    /// Parses the files a plan names and the texts their chunks are embedded from: no
    /// store access, so it runs while the batch before is written.
    fn parse_batch(reads: &[Read], plan: &Plan, config: &IngestConfig) -> ParsedBatch {
        let results: BTreeMap<usize, std::result::Result<Parsed, IngestError>> = plan
            .to_parse
            .par_iter()
            .map(|&i| {
                let bytes = match &reads[i].result {
                    Ok((bytes, _)) => bytes.as_slice(),
                    Err(_) => &[],
                };
                (i, parse_file(&reads[i].entry.rel_path, bytes, config))
            })
            .collect();
        let texts = results
            .par_iter()
            .filter_map(|(i, parsed)| Some((*i, parsed.as_ref().ok()?)))
            .map(|(i, parsed)| {
                let texts = parsed
                    .chunks
                    .iter()
                    .map(|chunk| {
                        let text = embedding_text(chunk);
                        // Most chunks are embedded from their own text, hashed already.
                        match text {
                            std::borrow::Cow::Borrowed(_) => (chunk.text_hash, None),
                            std::borrow::Cow::Owned(owned) => (TextHash::of(&owned), Some(owned)),
                        }
                    })
                    .collect();
                (i, texts)
            })
            .collect();
        ParsedBatch { results, texts }
    }

    /// Embeds (cache first), writes the new documents and binds every path of a batch.
    #[allow(clippy::too_many_arguments)]
    fn write_batch(
        &self,
        txn: &mut WriteTxn<'_>,
        reads: Vec<Read>,
        plan: Plan,
        parsed: ParsedBatch,
        existing: &BTreeMap<String, PathEntry>,
        options: &SyncOptions,
        embedder: &dyn Embedder,
        started_ns: u64,
        renames_left: &mut BTreeMap<ContentHash, usize>,
        report: &mut SyncReport,
        progress: &(dyn Fn(SyncProgress<'_>) + Sync),
    ) -> Result<()> {
        let Plan {
            documents: plans,
            mut known_failures,
            ..
        } = plan;
        let ParsedBatch {
            results: mut parse_results,
            texts: chunk_texts,
        } = parsed;
        report.parsed += parse_results.len();
        // Embeddings: cached ones first, the rest in parallel batches.
        let model = embedder.model_hash();
        let mut wanted: BTreeMap<TextHash, &str> = BTreeMap::new();
        for (i, texts) in &chunk_texts {
            let Some(Ok(parsed)) = parse_results.get(i) else {
                continue;
            };
            for (chunk, (hash, text)) in parsed.chunks.iter().zip(texts) {
                let text = text.as_deref().unwrap_or(chunk.text.as_str());
                wanted.entry(*hash).or_insert(text);
            }
        }
        let mut vectors = txn.cached_vectors(&model, wanted.keys())?;
        let missing: Vec<(&TextHash, &&str)> = if options.defer_embeddings {
            Vec::new()
        } else {
            wanted
                .iter()
                .filter(|(h, _)| !vectors.contains_key(h))
                .collect()
        };
        let computed: Vec<EmbeddedBatch> = missing
            .par_chunks(EMBED_BATCH)
            .map(|group| {
                let texts: Vec<&str> = group.iter().map(|(_, t)| **t).collect();
                let out = embedder.embed_batch(&texts).map_err(|e| e.to_string())?;
                if out.len() != texts.len() {
                    return Err(format!(
                        "embedder returned {} vectors for {} texts",
                        out.len(),
                        texts.len()
                    ));
                }
                Ok(group
                    .iter()
                    .map(|(h, _)| **h)
                    .zip(out)
                    .map(|(h, v)| {
                        let encoded = encode_vector(&v);
                        (h, vectors::vector_hash(&encoded), encoded, v)
                    })
                    .collect())
            })
            .collect();
        for batch in computed {
            let batch = batch.map_err(StoreError::InvalidInput)?;
            txn.cache_encoded(
                &model,
                batch.iter().map(|(h, vh, e, _)| (h, vh, e.as_slice())),
            )?;
            for (hash, _, _, vector) in batch {
                vectors.insert(hash, vector);
                report.embedded += 1;
            }
        }

        // New documents first, all at once (sorted writes), then the bindings in path order.
        let embedded: BTreeMap<usize, Vec<cfs_core::Embedding>> = chunk_texts
            .par_iter()
            .map(|(i, texts)| {
                let parsed = parse_results[i]
                    .as_ref()
                    .expect("only parsed files have texts");
                // Every chunk has its vector unless embeddings are deferred; then those
                // without one wait for `embed_pending`.
                let chunk_vectors = parsed
                    .chunks
                    .iter()
                    .zip(texts)
                    .filter_map(|(c, (h, _))| match vectors.get(h) {
                        Some(v) => Some(
                            cfs_core::Embedding::new(c.id, model, v.clone()).map_err(Into::into),
                        ),
                        None if options.defer_embeddings => None,
                        None => Some(Err(StoreError::InvalidInput(format!(
                            "{}: no vector for a chunk",
                            reads[*i].entry.rel_path
                        )))),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok((*i, chunk_vectors))
            })
            .collect::<Result<_>>()?;
        drop(chunk_texts);
        for (i, parsed) in &parse_results {
            let (Ok(parsed), Some(with_vectors)) = (parsed.as_ref(), embedded.get(i)) else {
                continue;
            };
            if with_vectors.len() == parsed.chunks.len() {
                continue;
            }
            let have: std::collections::HashSet<_> =
                with_vectors.iter().map(|e| e.chunk_id).collect();
            let before = report.deferred_chunks.len();
            report.deferred_chunks.extend(
                parsed
                    .chunks
                    .iter()
                    .map(|c| c.id)
                    .filter(|id| !have.contains(id)),
            );
            report.deferred += report.deferred_chunks.len() - before;
        }
        let new_documents: Vec<NewDocument<'_>> = parse_results
            .iter()
            .filter_map(|(i, parsed)| {
                let parsed = parsed.as_ref().ok()?;
                Some(NewDocument {
                    document: &parsed.document,
                    chunks: &parsed.chunks,
                    embeddings: embedded.get(i)?,
                    window_edges: &parsed.window_edges,
                })
            })
            .collect();
        txn.put_documents(&new_documents)?;
        drop(new_documents);
        for (i, read) in reads.iter().enumerate() {
            let path = read.entry.rel_path.as_str();
            progress(SyncProgress::File(path));
            let racy = started_ns.saturating_sub(read.entry.mtime_ns) < RACY_WINDOW_NS;
            let stat_of = |hash: ContentHash, failure: Option<String>| Stat {
                size: read.entry.size_bytes,
                mtime_ns: if racy { 0 } else { read.entry.mtime_ns },
                hash,
                failure,
            };
            let (bytes, hash) = match &read.result {
                Ok(ok) => ok,
                Err(e) => {
                    report.failed.push((path.to_owned(), e.to_string()));
                    self.forget(txn, path, existing, None)?;
                    continue;
                }
            };
            if let Some(reason) = known_failures.remove(&i) {
                report.failed.push((path.to_owned(), reason.clone()));
                self.forget(txn, path, existing, Some(stat_of(*hash, Some(reason))))?;
                continue;
            }
            let document_id = match (&plans[i], parse_results.remove(&i)) {
                (Some(doc), _) => *doc,
                (None, Some(Ok(parsed))) => parsed.document.id,
                (None, Some(Err(e))) => {
                    report.failed.push((path.to_owned(), e.to_string()));
                    self.forget(
                        txn,
                        path,
                        existing,
                        Some(stat_of(*hash, Some(e.to_string()))),
                    )?;
                    continue;
                }
                (None, None) => {
                    // Same new content as an earlier file of this batch: parsed once.
                    let detected = detect_file(path, bytes).ok();
                    match detected
                        .and_then(|d| txn.document_for_content(hash, d.mime_type).transpose())
                    {
                        Some(doc) => doc?,
                        None => {
                            let reason = "the same content failed earlier in this batch".to_owned();
                            report.failed.push((path.to_owned(), reason.clone()));
                            self.forget(txn, path, existing, Some(stat_of(*hash, Some(reason))))?;
                            continue;
                        }
                    }
                }
            };
            let resolution = options.registry.resolve(path);
            let entry = PathEntry {
                path: path.to_owned(),
                document_id,
                collections: resolution.collections,
                context: resolution.context,
            };
            match existing.get(path) {
                Some(old) if *old == entry => report.unchanged += 1,
                Some(_) => report.updated += 1,
                None => {
                    let doc = txn.content_of(&document_id)?;
                    match doc.and_then(|h| renames_left.get_mut(&h).filter(|n| **n > 0)) {
                        Some(n) => {
                            *n -= 1;
                            report.renamed += 1;
                        }
                        None => report.added += 1,
                    }
                }
            }
            txn.bind_path(&entry)?;
            txn.put_stat(path, &stat_of(*hash, None))?;
        }
        Ok(())
    }

    /// Removes a path that can no longer be indexed; its stat row records the failure
    /// when there is one to record, or goes.
    fn forget(
        &self,
        txn: &mut WriteTxn<'_>,
        path: &str,
        existing: &BTreeMap<String, PathEntry>,
        failed: Option<Stat>,
    ) -> Result<()> {
        match failed {
            Some(stat) => txn.put_stat(path, &stat)?,
            None => txn.remove_stats([path])?,
        }
        if existing.contains_key(path) {
            txn.unbind_path(path)?;
        }
        Ok(())
    }
}

fn error_path(e: &IngestError) -> String {
    match e {
        IngestError::Skipped { path, .. }
        | IngestError::Decode { path, .. }
        | IngestError::Malformed { path, .. }
        | IngestError::TooLarge { path, .. }
        | IngestError::Path { path, .. }
        | IngestError::Core { path, .. } => path.clone(),
        IngestError::Io { path, .. } => path.display().to_string(),
        _ => String::new(),
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
