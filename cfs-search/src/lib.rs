//! Search: runtime indexes over the committed state, published as snapshots.
//!
//! A [`SearchIndex`] holds the current [`Snapshot`] behind an atomic pointer: readers
//! take it without locks and keep it as long as they like; [`SearchIndex::refresh`]
//! builds the next one from the store's newest commit (by the diff of bucket roots, see
//! [`snapshot`]) and swaps it in. The indexes are caches: they are rebuilt from the
//! committed state whenever asked and never disagree with the state they name.
//!
//! ```no_run
//! use cfs_ingest::HashEmbedder;
//! use cfs_search::{IndexOptions, Query, SearchIndex};
//! use cfs_store::{Store, SyncOptions};
//!
//! let store = Store::open(std::path::Path::new(".cfs/store.redb"))?;
//! let embedder = HashEmbedder::default();
//! store.sync(std::path::Path::new("."), &SyncOptions::default(), &embedder, &|_| {})?;
//! let index = SearchIndex::open(&store, &embedder, IndexOptions::default())?;
//! for hit in index.search(&Query::new("parse config file").k(5), &embedder)? {
//!     println!("{}:{}-{} {}", hit.path, hit.start_line, hit.end_line, hit.snippet);
//! }
//! # Ok::<(), cfs_store::StoreError>(())
//! ```

mod bm25;
mod buckets;
mod build;
mod codes;
mod context;
mod declared;
mod definition_terms;
mod delta;
mod evidence;
mod explain;
mod external;
mod format;
mod in_place;
mod index_file;
mod intent;
mod mapped;
mod mapped_docs;
mod merged;
mod meta;
mod path_words;
mod query;
mod rank;
mod sections;
mod segment;
mod snapshot;
mod symbols;
mod tokenize;
mod vector;

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use cfs_core::{ChunkId, StateRoot};
use cfs_ingest::{Embedder, Role};

pub use bm25::{idf, log2_fixed, tf_part};
pub use context::{
    ChunkSource, Context, ContextFile, MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS, Packed, Span,
    check_budget, estimate_tokens, pack,
};
pub use declared::{
    Declared, KEYWORDS, MAX_DECLARATION_LINE_BYTES, MODIFIERS, STATEMENT_WORDS, declared,
    for_each_declared,
};
pub use definition_terms::{
    DECLARED_PREFIX, DEFINITION_PREFIX, definition_terms, name_head, name_key,
};
pub use evidence::{
    Evidence, FILE_VECTOR_CHUNKS, FileText, coverage_points, file_text_score_of,
    file_vector_score_of,
};
pub use explain::{Explaining, Explanation, SegmentExplained, TermExplained, explain};
pub use external::{
    ChunkRow, DocumentRows, ExternalLists, Found, document_rows, list_depth, rank_external,
    text_terms, vector_weight, vectors_needed,
};
pub use format::{INDEX_FILE_FORMAT, KINDS};

/// The version of what [`document_rows`] derives for a document and its chunks (its
/// role and markers, its chunks' terms and metadata, its file vector). It moves with any
/// change to those rules, so that rows a database keeps from an older cfs are written
/// again instead of ranked by rules they were not derived with, and an index file
/// whose document records hold roles of older rules is rebuilt. 2: OCaml, Reason and F#
/// interfaces, Haskell boot files and headers beside their implementation are
/// declarations; 3: the banners of Bison, flex, re2c and gperf mark generated code; 4:
/// `bench` and `benchmark` folders hold tests; 5: so do dotted folders whose last piece
/// ends in `Test` or `Tests` (`Newtonsoft.Json.Tests`); 6: and folders of two or more
/// words beginning or ending with `test` (`test_helpers`), with `example` examples; 7: a
/// name's head passes over a leading `$` (`$constructor` had no key).
pub const SEARCH_ROWS_VERSION: i32 = 7;
pub use index_file::{DELTA_MIN_CHANGED, IndexFileStatus, SavedAs};
pub use intent::{Analysis, Identifier, Intent, Mentions, STOP_WORDS, analyze};
pub use meta::{ChunkList, ChunkMeta, DocInfo, PathInfo};
pub use path_words::{
    FOLDER_POINTS, FileWords, MODULE_STEMS, PATH_ONE, file_words, path_points, word_matches,
};
pub use query::{CODE_CANDIDATES, Filter, Mode, Query, QueryTerm, RRF_K, rrf};
pub use rank::{
    Parts, RankedChunk, RankedFile, Ranking, Weights, chunk_list, fuse_ranks, rank_chunks,
};
pub use snapshot::{
    MAX_SEGMENTS, MERGE_MIN_CHUNKS, MemoryEstimate, Snapshot, SnapshotDiff, chunk_meta,
};
pub use symbols::{MAX_LEVEL, definition_found, kind_rank, lookup_terms, match_level, named_after};
pub use tokenize::{MAX_TOKEN_BYTES, for_each_token, tokens, variants, words};
pub use vector::{EF_CONSTRUCTION, EF_SEARCH, HNSW_SEED, dot, norm2};

use cfs_store::Store;
use cfs_store::{Result, StoreError};

/// How the runtime index is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexOptions {
    /// Build an HNSW graph for a base segment of at least this many vectors (`None`:
    /// never; vector search is then exact).
    pub hnsw_min_vectors: Option<usize>,
    /// Build graphs on a background thread (true) or before `open`/`refresh` return.
    pub hnsw_background: bool,
    /// Small segments are merged into the base when their chunks (plus the base's
    /// tombstones) pass this many or a quarter of the base, whichever is larger.
    pub merge_min_chunks: usize,
}

impl IndexOptions {
    /// No HNSW graph: vector search is always exact (and so reproducible).
    pub fn exact() -> Self {
        Self {
            hnsw_min_vectors: None,
            ..Self::default()
        }
    }
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            hnsw_min_vectors: Some(50_000),
            hnsw_background: true,
            merge_min_chunks: MERGE_MIN_CHUNKS,
        }
    }
}

const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Snapshot>();
    shared::<SearchIndex>();
};

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The first of its document's paths.
    pub path: String,
    /// All of its document's paths, sorted.
    pub paths: Vec<String>,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based).
    pub end_line: u32,
    /// Byte span start in the document's canonical text.
    pub byte_offset: u64,
    /// Byte span length.
    pub byte_length: u32,
    /// Chunk kind.
    pub kind: String,
    /// Language of a code chunk.
    pub language: Option<String>,
    /// Symbol of a code chunk.
    pub symbol: Option<String>,
    /// The ranking score: the fused score in hybrid mode, else the retriever's score,
    /// as a float for display (the ranking itself is integer).
    pub score: f64,
    /// BM25 score (32 fractional bits) and rank, when the text retriever found it.
    pub text_score: Option<(u64, usize)>,
    /// Dot product and rank, when the vector retriever found it.
    pub vector_score: Option<(i64, usize)>,
    /// The role of its file.
    pub role: Role,
    /// How its score was made (`cfs search --explain`).
    pub parts: Parts,
    /// A few lines of the chunk around the first query word.
    pub snippet: String,
    /// The chunk's text.
    pub text: String,
    /// The state root of the snapshot the result came from.
    pub root: StateRoot,
}

/// One file of a file search: a document by its first path, with its best chunks.
#[derive(Clone, Debug, PartialEq)]
pub struct FileHit {
    /// The first of its document's paths.
    pub path: String,
    /// All of its document's paths, sorted.
    pub paths: Vec<String>,
    /// Its role.
    pub role: Role,
    /// The ranking score (its best chunk's plus the bonus for further chunks), as a
    /// float for display.
    pub score: f64,
    /// Its best chunks (at most [`FILE_CHUNKS`]), best first; the first one's parts
    /// hold the file's bonus.
    pub chunks: Vec<Hit>,
}

/// Chunks a [`FileHit`] shows.
pub const FILE_CHUNKS: usize = 3;

/// A runtime index kept in step with a store.
pub struct SearchIndex {
    current: ArcSwap<Snapshot>,
    refresh: Mutex<()>,
    options: IndexOptions,
    builds: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("snapshot", &self.current.load())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// What a refresh did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefreshReport {
    /// The state root now published.
    pub root: StateRoot,
    /// The change, or `None` when the store had no new commit.
    pub diff: Option<SnapshotDiff>,
}

impl SearchIndex {
    /// Builds the index of the store's latest committed state. The embedder must be the
    /// store's (vectors of two models are never compared).
    pub fn open(store: &Store, embedder: &dyn Embedder, options: IndexOptions) -> Result<Self> {
        check_model(store, embedder)?;
        let empty = Snapshot::empty(embedder.model_hash(), embedder.dimension());
        let index = Self::publishing(empty, options);
        index.refresh(store)?;
        Ok(index)
    }

    /// Opens the index from the index file at `file` when it is sound, bringing it
    /// forward to the store's newest commit; builds it from the store when the file is
    /// missing, torn, altered, of another format or model, or of a state that is not in
    /// the store's chain. The status says which. Does not write the file: see
    /// [`SearchIndex::save_index_file`] and [`SearchIndex::open_or_build_file`].
    pub fn open_from_file(
        store: &Store,
        embedder: &dyn Embedder,
        options: IndexOptions,
        file: &std::path::Path,
    ) -> Result<(Self, IndexFileStatus)> {
        match Self::load_file(store, embedder, file)? {
            Ok(snap) => Self::from_file(store, snap, options),
            Err(reason) => Self::in_memory(store, embedder, options, reason),
        }
    }

    /// The index built in memory for want of a usable file (`reason`: why the one
    /// there was not used; `None`: there was none), with that status.
    fn in_memory(
        store: &Store,
        embedder: &dyn Embedder,
        options: IndexOptions,
        reason: Option<String>,
    ) -> Result<(Self, IndexFileStatus)> {
        let status = reason.map_or(IndexFileStatus::Missing, IndexFileStatus::Rebuilt);
        Ok((Self::open(store, embedder, options)?, status))
    }

    /// An index publishing `snap`, nothing refreshed yet.
    fn publishing(snap: Snapshot, options: IndexOptions) -> Self {
        Self {
            current: ArcSwap::from_pointee(snap),
            refresh: Mutex::new(()),
            options,
            builds: Mutex::new(Vec::new()),
        }
    }

    /// [`SearchIndex::open_from_file`], but a missing or unusable index file is written
    /// from the store first, in one pass that holds neither the vectors nor the chunks'
    /// metadata in memory (a store's first search), then opened in place (status
    /// [`IndexFileStatus::Written`]). Where it cannot be written (a read-only folder, any
    /// I/O error on the file) the index is built in memory as `open_from_file` does, with
    /// its status.
    pub fn open_or_build_file(
        store: &Store,
        embedder: &dyn Embedder,
        options: IndexOptions,
        file: &std::path::Path,
    ) -> Result<(Self, IndexFileStatus)> {
        let reason = match Self::load_file(store, embedder, file)? {
            Ok(snap) => return Self::from_file(store, snap, options),
            Err(reason) => reason,
        };
        let built = cfs_store::guard(store.path(), || {
            let txn = store.begin_read()?;
            build::build_file(&txn, embedder.model_hash(), embedder.dimension(), file)
        });
        match built {
            Ok(()) => {}
            // The file cannot be written (a read-only folder, a full disk): in memory, as
            // `open_from_file` builds it; the caller's `save_index_file` then says why, if it tries.
            Err(StoreError::Io { .. }) => return Self::in_memory(store, embedder, options, reason),
            Err(e) => return Err(e),
        }
        let snap = Self::load_file(store, embedder, file)?.map_err(|why| {
            StoreError::Internal(format!(
                "the index file just written cannot be opened: {}",
                why.unwrap_or_default()
            ))
        })?;
        let (index, _) = Self::from_file(store, snap, options)?;
        Ok((index, IndexFileStatus::Written { reason }))
    }

    /// The snapshot of the index file at `file` (and its delta), or why there is none:
    /// `Err(None)` when there is no file, `Err(Some(reason))` when it cannot be used.
    fn load_file(
        store: &Store,
        embedder: &dyn Embedder,
        file: &std::path::Path,
    ) -> Result<std::result::Result<Snapshot, Option<String>>> {
        check_model(store, embedder)?;
        if !file.exists() {
            return Ok(Err(None));
        }
        cfs_store::guard(store.path(), || {
            let txn = store.begin_read()?;
            Ok(
                index_file::load(file, &txn, embedder.model_hash(), embedder.dimension())
                    .map_err(Some),
            )
        })
    }

    /// The index of a snapshot opened from its files, brought forward to the store's
    /// newest commit.
    fn from_file(
        store: &Store,
        snap: Snapshot,
        options: IndexOptions,
    ) -> Result<(Self, IndexFileStatus)> {
        let (file_root, delta) = (snap.root, snap.pending_over_file());
        let index = Self::publishing(snap, options);
        let report = index.refresh(store)?;
        let status = match report.diff {
            Some(d) if report.root != file_root => IndexFileStatus::CaughtUp {
                changed: d.added + d.removed + d.repathed + d.embedded,
                delta,
                merged: d.merged,
            },
            _ => IndexFileStatus::Current,
        };
        Ok((index, status))
    }

    /// Writes the current snapshot to disk: when it was opened from the index file at
    /// `file` and less than a quarter of it (and [`IndexOptions::merge_min_chunks`])
    /// has changed since, as a delta file beside it (`index.cache` -> `index.delta`:
    /// the base's tombstones and every later chunk, costing in proportion to the
    /// change); otherwise as a whole index file at `file`, its segments merged as it
    /// is written, the delta beside it removed. Each file is written atomically: a
    /// temporary file, synced, then renamed.
    pub fn save_index_file(&self, file: &std::path::Path) -> Result<SavedAs> {
        index_file::save(&self.snapshot(), file, self.options.merge_min_chunks)
    }

    /// The current snapshot; it stays valid (and unchanged) while held.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Publishes the snapshot of the store's newest commit, if there is one. Costs in
    /// proportion to the change since the current snapshot.
    pub fn refresh(&self, store: &Store) -> Result<RefreshReport> {
        cfs_store::guard(store.path(), || self.refresh_unguarded(store))
    }

    fn refresh_unguarded(&self, store: &Store) -> Result<RefreshReport> {
        let _one_at_a_time = self
            .refresh
            .lock()
            .map_err(|_| StoreError::Internal("an earlier refresh panicked".into()))?;
        let current = self.current.load_full();
        let Some((next, diff)) = current.next(
            store.begin_read()?,
            store.instance(),
            self.options.merge_min_chunks,
        )?
        else {
            return Ok(RefreshReport {
                root: current.root,
                diff: None,
            });
        };
        let next = Arc::new(next);
        self.current.store(Arc::clone(&next));
        self.schedule_hnsw(&next);
        Ok(RefreshReport {
            root: next.root,
            diff: Some(diff),
        })
    }

    /// Starts (or runs) the HNSW build of the base segment when it needs one.
    fn schedule_hnsw(&self, snap: &Snapshot) {
        let Some(min) = self.options.hnsw_min_vectors else {
            return;
        };
        let Some(base) = snap.segments.first() else {
            return;
        };
        let segment = Arc::clone(&base.segment);
        // A base read in place from its file has no graph yet (searched exactly).
        let Some(vectors) = segment.owned().map(|o| Arc::clone(&o.vectors)) else {
            return;
        };
        if segment.len() < min || segment.hnsw.get().is_some() {
            return;
        }
        let build = move || {
            let graph = vector::Hnsw::build(&vectors);
            let _ = segment.hnsw.set(Arc::new(graph));
        };
        if self.options.hnsw_background {
            let handle = std::thread::spawn(build);
            if let Ok(mut builds) = self.builds.lock() {
                builds.retain(|h| !h.is_finished());
                builds.push(handle);
            }
        } else {
            build();
        }
    }

    /// Waits for background graph builds to finish (for tests and benchmarks).
    pub fn wait_for_background(&self) {
        let handles: Vec<_> = match self.builds.lock() {
            Ok(mut b) => b.drain(..).collect(),
            Err(_) => return,
        };
        for h in handles {
            let _ = h.join();
        }
    }

    /// Runs a query on the current snapshot.
    pub fn search(&self, query: &Query, embedder: &dyn Embedder) -> Result<Vec<Hit>> {
        search(&self.snapshot(), query, embedder)
    }

    /// Runs a query on the current snapshot for files (`query.k` of them).
    pub fn search_files(&self, query: &Query, embedder: &dyn Embedder) -> Result<Vec<FileHit>> {
        search_files(&self.snapshot(), query, embedder)
    }

    /// Runs a query on the current snapshot for context within `budget` tokens (see
    /// [`context()`]).
    pub fn context(&self, query: &Query, embedder: &dyn Embedder, budget: u32) -> Result<Context> {
        context(&self.snapshot(), query, embedder, budget)
    }

    /// How `query` runs on the current snapshot for a chunk answer, or with `files` a
    /// file answer (see [`explain`]).
    pub fn explain(&self, query: &Query, embedder: &dyn Embedder, files: bool) -> Explanation {
        let how = Explaining {
            embedder_weight: embedder.fusion_weight(),
            sign_codes: embedder.sign_codes(),
            files,
        };
        explain(&self.snapshot(), query, how)
    }
}

/// Checks every section of the index file at `path` against the hash its header
/// records (opening checks the header, places and stamp only): its size in bytes, or
/// what is wrong. A damaged file is only a cache: deleting it makes the next
/// [`SearchIndex::open_from_file`] rebuild it.
pub fn verify_index_file(path: &std::path::Path) -> std::result::Result<usize, String> {
    index_file::verify_file(path)
}

/// The index file of the store file `store`: `index.cache` beside a `store.redb` (a
/// store folder holds one store), else `<store file>.index.cache`, so that store files
/// sharing a folder never take each other's index file.
pub fn index_file_path(store: &std::path::Path) -> std::path::PathBuf {
    let name = store.file_name().unwrap_or_default();
    if name == "store.redb" {
        return store.with_file_name("index.cache");
    }
    let mut name = name.to_os_string();
    name.push(".index.cache");
    store.with_file_name(name)
}

/// Removes the index file at `file` and the delta file beside it (what is not there is
/// not an error): for a store whose files no longer describe it, e.g. after a change of
/// embedder.
pub fn remove_index_file(file: &std::path::Path) -> std::io::Result<()> {
    for path in [file.to_path_buf(), format::delta_path(file)] {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// True for a write refused because the place is read-only or not ours.
pub fn unwritable(e: &StoreError) -> bool {
    matches!(e, StoreError::Io { source, .. } if matches!(
        source.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    ))
}

/// Vectors of two models are never compared: the embedder must be the store's.
fn check_model(store: &Store, embedder: &dyn Embedder) -> Result<()> {
    if store.settings().model_id == embedder.model_id() {
        return Ok(());
    }
    Err(StoreError::ModelMismatch {
        store: store.settings().model_id.clone(),
        embedder: embedder.model_id().to_owned(),
    })
}

/// Runs a query on a snapshot. An empty store, an empty query or a query of operators
/// gives an empty list, never an error.
pub fn search(snap: &Snapshot, query: &Query, embedder: &dyn Embedder) -> Result<Vec<Hit>> {
    let files = ranked(snap, query, embedder, query::depth(query.k))?;
    let chunks = chunk_list(files, query.k);
    if chunks.is_empty() {
        query::check_filter_values(snap, &query.filter)?;
    }
    let words = tokens(&query.text);
    chunks.into_iter().map(|c| hit(snap, c, &words)).collect()
}

/// Runs a query on a snapshot for files: the best `query.k` files, each with its best
/// chunks. Each list is taken as [`query::file_depth`] says.
pub fn search_files(
    snap: &Snapshot,
    query: &Query,
    embedder: &dyn Embedder,
) -> Result<Vec<FileHit>> {
    let mut files = ranked(snap, query, embedder, query::file_depth(query.k))?;
    if files.is_empty() {
        query::check_filter_values(snap, &query.filter)?;
    }
    files.truncate(query.k);
    let words = tokens(&query.text);
    files
        .into_iter()
        .map(|f| {
            let score = f.score as f64 / (1u64 << 32) as f64;
            let chunks = f
                .chunks
                .into_iter()
                .take(FILE_CHUNKS)
                .map(|c| hit(snap, c, &words))
                .collect::<Result<Vec<Hit>>>()?;
            let first = chunks.first();
            Ok(FileHit {
                path: first.map(|h| h.path.clone()).unwrap_or_default(),
                paths: first.map(|h| h.paths.clone()).unwrap_or_default(),
                role: first.map_or(Role::Source, |h| h.role),
                score,
                chunks,
            })
        })
        .collect()
}

/// Runs a query on a snapshot for context: the best `query.k` files' chunks packed into
/// at most `budget` tokens ([`context`](mod@context) says how), `budget` within
/// [`MIN_CONTEXT_TOKENS`]..=[`MAX_CONTEXT_TOKENS`].
pub fn context(
    snap: &Snapshot,
    query: &Query,
    embedder: &dyn Embedder,
    budget: u32,
) -> Result<Context> {
    check_budget(budget)?;
    let mut files = ranked(snap, query, embedder, query::file_depth(query.k))?;
    if files.is_empty() {
        query::check_filter_values(snap, &query.filter)?;
    }
    files.truncate(query.k);
    Ok(pack(snap, &files, &[], budget)?.into_context(snap.state_root(), budget))
}

/// The files of a query's lists (each `depth` deep), ranked.
fn ranked(
    snap: &Snapshot,
    query: &Query,
    embedder: &dyn Embedder,
    depth: usize,
) -> Result<Vec<RankedFile>> {
    let analysis = analyze(&query.text);
    let ranking = &query.ranking;
    let words_run = query.mode != Mode::Vector;
    let text = match words_run {
        true => query::text_search(snap, &query.text, depth, &query.filter, ranking.variants),
        false => query::TextFound {
            list: Vec::new(),
            masks: Default::default(),
            word_weights: Vec::new(),
            terms: Vec::new(),
        },
    };
    let definitions = match words_run && ranking.definitions && !analysis.identifiers.is_empty() {
        true => symbols::definitions(snap, &analysis.identifiers, depth, &query.filter),
        false => Vec::new(),
    };
    let weight = external::vector_weight(query, &analysis, embedder);
    // With weight 0, vector results only follow the others: when the text retriever
    // filled its whole list they are not computed.
    let vector_needed = query::vector_needed(query.mode, weight, text.list.len(), depth);
    let (vector, query_vector) = if vector_needed && !query.text.trim().is_empty() {
        vector_list(snap, query, embedder, depth)?
    } else {
        (Vec::new(), Vec::new())
    };
    let lists = rank::Lists {
        text,
        vector,
        definitions,
        query_vector,
    };
    Ok(rank::rank(snap, lists, &analysis, ranking, Some(weight)))
}

/// The vector list of a query: its `depth` nearest chunks passing the filter, and the
/// query's vector.
fn vector_list(
    snap: &Snapshot,
    query: &Query,
    embedder: &dyn Embedder,
    depth: usize,
) -> Result<(Vec<query::Scored<i64>>, Vec<i16>)> {
    if embedder.model_hash() != snap.model {
        return Err(StoreError::ModelMismatch {
            store: format!("the model {}", snap.model),
            embedder: embedder.model_id().to_owned(),
        });
    }
    let v = embedder
        .embed_batch(&[query.text.as_str()])
        .map_err(|e| StoreError::Embedder(format!("embedding the query: {e}")))?;
    let v = v.into_iter().next().unwrap_or_default();
    let approx = query::Approx {
        graph: !query.exact,
        codes: !query.exact && embedder.sign_codes(),
    };
    let list = query::vector_search(snap, &v, depth, &query.filter, approx);
    Ok((list, v))
}

/// The hit of a ranked chunk.
fn hit(snap: &Snapshot, c: RankedChunk, words: &[String]) -> Result<Hit> {
    let text = snap.chunk_text(&c.meta.id)?.ok_or_else(|| {
        StoreError::Corrupted(format!("chunk {} missing from its snapshot", c.meta.id))
    })?;
    Ok(hit_of(c, text, snap.state_root(), words))
}

/// The hit of a ranked chunk whose text is `text`, from the state `root`, for a query
/// of `words` ([`tokens`]).
pub fn hit_of(c: RankedChunk, text: String, root: StateRoot, words: &[String]) -> Hit {
    let meta = &c.meta;
    let paths: Vec<String> = meta.doc.paths.iter().map(|p| p.path.to_string()).collect();
    Hit {
        root,
        chunk_id: meta.id,
        path: paths.first().cloned().unwrap_or_default(),
        paths,
        start_line: meta.start_line,
        end_line: meta.end_line,
        byte_offset: meta.byte_offset,
        byte_length: meta.byte_length,
        kind: meta.kind.to_owned(),
        language: meta.language.as_deref().map(str::to_owned),
        symbol: meta.symbol.as_deref().map(str::to_owned),
        score: c.parts.score as f64 / (1u64 << 32) as f64,
        text_score: c.parts.text,
        vector_score: c.parts.vector,
        role: meta.doc.role,
        snippet: snippet(&text, words),
        text,
        parts: c.parts,
    }
}

/// Most bytes in a snippet.
const SNIPPET_BYTES: usize = 300;

/// Up to three lines of `text` starting one line before the first line holding a query
/// token (or the first lines), cut at a character boundary.
fn snippet(text: &str, words: &[String]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines
        .iter()
        .position(|line| {
            let mut hit = false;
            for_each_token(line, |t| hit |= words.iter().any(|w| w == t));
            hit
        })
        .unwrap_or(0);
    let start = first.saturating_sub(1);
    let mut out = lines[start.min(lines.len())..]
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if out.len() > SNIPPET_BYTES {
        let mut cut = SNIPPET_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}
