//! Snapshots: an immutable view of one committed state for searching, and the diff
//! that turns one into the next.
//!
//! A snapshot keeps the bucket roots of the chunks and paths tables of its state. The
//! next snapshot compares them with the store's: only the buckets whose roots differ are
//! read, and their ids compared, which gives the commit's diff (added, removed and
//! re-pathed chunks) from content alone, whatever process made the commit and however
//! many commits passed. Every map is split in the same 1024 buckets behind `Arc`s, so a
//! new snapshot shares every bucket it did not change: its cost follows the change.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cfs_core::{
    Bucket, Canonical, Chunk, ChunkId, ChunkKind, Document, DocumentId, EmbeddingId, MerkleRoot,
    ModelHash, N_BUCKETS, PathEntry, PathId, StateRoot, Table, TableRoots,
};
use rayon::prelude::*;

use super::segment::{ChunkMeta, DocInfo, Live, NewChunk, PathInfo, Segment, chunk_terms};
use crate::error::{Result, StoreError};
use crate::read::ReadTxn;
use crate::tables::{self, keys_with_prefix, read_bucket_roots};
use crate::vectors::{StoredEmbedding, VectorHash};

/// Default of [`crate::search::IndexOptions::merge_min_chunks`].
pub const MERGE_MIN_CHUNKS: usize = 4096;
/// Fewer items than this are decoded on the calling thread.
const PARALLEL_MIN: usize = 256;
/// Most segments a snapshot keeps before merging.
pub const MAX_SEGMENTS: usize = 16;

/// A map split in the 1024 buckets of the first 10 key bits, each bucket a sorted
/// vector behind an `Arc`.
#[derive(Clone, Debug)]
pub(crate) struct BucketMap<V> {
    buckets: Vec<Arc<Rows<V>>>,
}

/// The rows of one bucket: (key, value), sorted by key.
type Rows<V> = Vec<([u8; 16], V)>;

impl<V: Clone> BucketMap<V> {
    pub(crate) fn new() -> Self {
        Self {
            buckets: (0..N_BUCKETS).map(|_| Arc::new(Vec::new())).collect(),
        }
    }

    pub fn get(&self, key: &[u8; 16]) -> Option<&V> {
        let b = &self.buckets[usize::from(Bucket::of_key(key).0)];
        b.binary_search_by(|(k, _)| k.cmp(key))
            .ok()
            .map(|i| &b[i].1)
    }

    fn bucket(&self, b: usize) -> &[([u8; 16], V)] {
        &self.buckets[b]
    }

    fn set_bucket(&mut self, b: usize, rows: Vec<([u8; 16], V)>) {
        self.buckets[b] = Arc::new(rows);
    }

    pub(crate) fn insert(&mut self, key: [u8; 16], value: V) {
        let b = Arc::make_mut(&mut self.buckets[usize::from(Bucket::of_key(&key).0)]);
        match b.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => b[i].1 = value,
            Err(i) => b.insert(i, (key, value)),
        }
    }

    fn remove(&mut self, key: &[u8; 16]) {
        let b = Arc::make_mut(&mut self.buckets[usize::from(Bucket::of_key(key).0)]);
        if let Ok(i) = b.binary_search_by(|(k, _)| k.cmp(key)) {
            b.remove(i);
        }
    }

    fn len(&self) -> usize {
        self.buckets.iter().map(|b| b.len()).sum()
    }

    /// Every value, in key order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.buckets.iter().flat_map(|b| b.iter().map(|(_, v)| v))
    }
}

/// An immutable view of one committed state, for searching. Cloning shares every part.
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) root: StateRoot,
    pub(crate) sequence: u64,
    pub(crate) model: ModelHash,
    pub(crate) dim: usize,
    pub(crate) table_roots: TableRoots,
    pub(crate) chunk_roots: Arc<Vec<MerkleRoot>>,
    pub(crate) path_roots: Arc<Vec<MerkleRoot>>,
    pub(crate) paths: BucketMap<PathEntry>,
    pub(crate) docs: BucketMap<Arc<DocInfo>>,
    pub(crate) segments: Vec<Live>,
    /// The read transaction of this state, for chunk text, and the store instance it
    /// belongs to.
    pub(crate) txn: Option<(Arc<ReadTxn>, u64)>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("root", &self.root)
            .field("sequence", &self.sequence)
            .field("chunks", &self.n_chunks())
            .field("segments", &self.segments)
            .finish_non_exhaustive()
    }
}

/// Heap bytes of a snapshot's indexes, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// Postings, token counts and tombstones.
    pub text: usize,
    /// Vectors and their norms.
    pub vectors: usize,
    /// Chunk and document metadata.
    pub chunks: usize,
}

/// What a new snapshot changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotDiff {
    /// Chunks that were not in the previous snapshot.
    pub added: usize,
    /// Chunks that are gone.
    pub removed: usize,
    /// Chunks whose document gained or lost paths (re-indexed for their path tokens).
    pub repathed: usize,
    /// Chunks whose embedding arrived after their text (embeddings deferred).
    pub embedded: usize,
    /// Whether the segments were merged into a new base.
    pub merged: bool,
}

impl Snapshot {
    /// The empty snapshot (before any state is read).
    pub(crate) fn empty(model: ModelHash, dim: usize) -> Self {
        Self {
            root: StateRoot::default(),
            sequence: 0,
            model,
            dim,
            table_roots: TableRoots::empty(),
            chunk_roots: Arc::new(vec![MerkleRoot::empty(); N_BUCKETS]),
            path_roots: Arc::new(vec![MerkleRoot::empty(); N_BUCKETS]),
            paths: BucketMap::new(),
            docs: BucketMap::new(),
            segments: Vec::new(),
            txn: None,
        }
    }

    /// The state root this snapshot reflects.
    pub fn state_root(&self) -> StateRoot {
        self.root
    }

    /// The sequence of the commit this snapshot reflects.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Number of chunks.
    pub fn n_chunks(&self) -> usize {
        self.segments.iter().map(Live::n_live).sum()
    }

    /// Number of documents.
    pub fn n_documents(&self) -> usize {
        self.docs.len()
    }

    /// Number of segments (1 after a merge).
    pub fn n_segments(&self) -> usize {
        self.segments.len()
    }

    /// Whether the base segment has its HNSW graph.
    pub fn has_hnsw(&self) -> bool {
        self.segments
            .first()
            .is_some_and(|l| l.segment.hnsw.get().is_some())
    }

    /// An estimate of the heap bytes this snapshot's indexes hold, by part (shared
    /// segments counted once per snapshot; allocator overhead not counted).
    pub fn memory_estimate(&self) -> MemoryEstimate {
        let mut m = MemoryEstimate::default();
        for live in &self.segments {
            let seg = &live.segment;
            m.text += seg.lens.capacity() * 4 + live.dead.len() * 8;
            for (term, list) in &seg.postings {
                m.text += term.len()
                    + std::mem::size_of::<(Box<str>, Vec<(u32, u32)>)>()
                    + list.capacity() * 8;
            }
            m.vectors += seg.vectors.data.capacity() * 2 + seg.vectors.norms2.capacity() * 8;
            for meta in &seg.metas {
                m.chunks += std::mem::size_of::<ChunkMeta>()
                    + 8
                    + [&meta.language, &meta.symbol, &meta.heading]
                        .iter()
                        .map(|s| s.as_ref().map_or(0, |s| s.len()))
                        .sum::<usize>();
            }
        }
        for doc in self.docs.values() {
            m.chunks += std::mem::size_of::<DocInfo>()
                + doc.mime_type.len()
                + doc.chunks.len() * 16
                + doc.paths.iter().map(|p| p.path.len() + 40).sum::<usize>();
        }
        m
    }

    /// Total tokens of the live chunks.
    pub(crate) fn live_len(&self) -> u64 {
        self.segments.iter().map(Live::live_len).sum()
    }

    /// A chunk's metadata.
    pub fn chunk(&self, id: &ChunkId) -> Option<&Arc<ChunkMeta>> {
        self.segments.iter().find_map(|l| {
            let i = l.segment.position(id)?;
            (!l.is_dead(i)).then(|| &l.segment.metas[i])
        })
    }

    /// Every document, in no particular order.
    pub fn documents(&self) -> impl Iterator<Item = &Arc<DocInfo>> {
        self.docs.values()
    }

    /// The document at `path`.
    pub fn document_at(&self, path: &str) -> Option<&Arc<DocInfo>> {
        let entry = self.paths.get(&PathId::derive(path).0)?;
        self.docs.get(&entry.document_id.0)
    }

    /// The chunks of the document at `path`, in sequence order.
    pub fn chunks_at_path(&self, path: &str) -> Vec<&Arc<ChunkMeta>> {
        let Some(entry) = self.paths.get(&PathId::derive(path).0) else {
            return Vec::new();
        };
        self.docs
            .get(&entry.document_id.0)
            .map(|doc| doc.chunks.iter().filter_map(|id| self.chunk(id)).collect())
            .unwrap_or_default()
    }

    /// A chunk's text, read from this snapshot's committed state.
    pub fn chunk_text(&self, id: &ChunkId) -> Result<Option<String>> {
        match &self.txn {
            Some((txn, _)) => Ok(txn.chunk(id)?.map(|c| c.text)),
            None => Ok(None),
        }
    }

    /// Every live chunk id, sorted (for tests and checks).
    pub fn chunk_ids(&self) -> Vec<ChunkId> {
        let mut ids: Vec<ChunkId> = self
            .segments
            .iter()
            .flat_map(|l| {
                l.segment
                    .metas
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !l.is_dead(*i))
                    .map(|(_, m)| m.id)
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Live chunk ids of one bucket, sorted.
    fn bucket_ids(&self, b: u16) -> Vec<ChunkId> {
        let mut ids = Vec::new();
        for l in &self.segments {
            for i in l.segment.bucket_range(b) {
                if !l.is_dead(i) {
                    ids.push(l.segment.metas[i].id);
                }
            }
        }
        ids.sort_unstable();
        ids
    }

    /// The snapshot of `txn`'s state, built from this one by the diff of bucket roots;
    /// `None` when `txn` holds this snapshot's state.
    pub(crate) fn next(
        &self,
        txn: ReadTxn,
        instance: u64,
        merge_min: usize,
    ) -> Result<Option<(Snapshot, SnapshotDiff)>> {
        let roots = txn.table_roots()?;
        let root = roots.state_root();
        let sequence = txn.sequence()?;
        if root == self.root {
            match &self.txn {
                Some((_, i)) if *i == instance => return Ok(None),
                // The same state through another opening of the store: take its transaction.
                Some(_) => {
                    let same = Snapshot {
                        sequence,
                        txn: Some((Arc::new(txn), instance)),
                        ..self.clone()
                    };
                    return Ok(Some((same, SnapshotDiff::default())));
                }
                None => {}
            }
        }
        let raw = txn.raw();
        // A table whose root did not move has the same bucket roots: skip reading them.
        let (chunk_roots, path_roots) = {
            let t = raw.open_table(tables::BUCKET_ROOTS)?;
            let read =
                |table: Table, mine: &Arc<Vec<MerkleRoot>>| -> Result<Arc<Vec<MerkleRoot>>> {
                    if self.txn.is_some() && roots.get(table) == self.table_roots.get(table) {
                        Ok(Arc::clone(mine))
                    } else {
                        Ok(Arc::new(read_bucket_roots(&t, table)?))
                    }
                };
            (
                read(Table::Chunks, &self.chunk_roots)?,
                read(Table::Paths, &self.path_roots)?,
            )
        };

        // Paths: find the documents whose set of paths changed.
        let mut paths = self.paths.clone();
        let mut touched_docs: BTreeSet<DocumentId> = BTreeSet::new();
        {
            let t = raw.open_table(tables::PATHS)?;
            for b in changed_buckets(&path_roots, &self.path_roots) {
                let mut rows = Vec::new();
                for row in tables::bucket_rows(&t, b as u16)? {
                    let (k, v) = row?;
                    let entry = PathEntry::decode(tables::split_row(v.value())?.1)?;
                    rows.push((key16(k.value())?, entry));
                }
                let old: BTreeMap<&[u8; 16], &PathEntry> =
                    paths.bucket(b).iter().map(|(k, v)| (k, v)).collect();
                let new: BTreeMap<&[u8; 16], &PathEntry> =
                    rows.iter().map(|(k, v)| (k, v)).collect();
                for (k, e) in &old {
                    if new.get(k) != Some(e) {
                        touched_docs.insert(e.document_id);
                    }
                }
                for (k, e) in &new {
                    if old.get(k) != Some(e) {
                        touched_docs.insert(e.document_id);
                    }
                }
                paths.set_bucket(b, rows);
            }
        }

        // Chunks: ids added and removed, bucket by bucket.
        let mut added: Vec<ChunkId> = Vec::new();
        let mut removed: BTreeSet<ChunkId> = BTreeSet::new();
        {
            let t = raw.open_table(tables::CHUNKS)?;
            for b in changed_buckets(&chunk_roots, &self.chunk_roots) {
                let mut now = Vec::new();
                for row in tables::bucket_rows(&t, b as u16)? {
                    now.push(ChunkId(key16(row?.0.value())?));
                }
                let before = self.bucket_ids(b as u16);
                let (plus, minus) = sorted_diff(&before, &now);
                added.extend(plus);
                removed.extend(minus);
            }
        }
        let added_chunks = read_chunks(&txn, &added)?;
        for chunk in &added_chunks {
            touched_docs.insert(chunk.document_id);
        }

        // Documents: rebuild the info of every touched one.
        let mut docs = self.docs.clone();
        let mut repathed: Vec<ChunkId> = Vec::new();
        {
            let documents = raw.open_table(tables::DOCUMENTS)?;
            let by_doc = raw.open_table(tables::PATHS_BY_DOCUMENT)?;
            let chunk_index = raw.open_table(tables::CHUNKS_BY_DOCUMENT)?;
            for id in &touched_docs {
                let Some(row) = documents.get(&id.0[..])? else {
                    docs.remove(&id.0);
                    continue;
                };
                let document = Document::decode(tables::split_row(row.value())?.1)?;
                let mut doc_paths = Vec::new();
                for key in keys_with_prefix(&by_doc, &id.0)? {
                    let path_id = tables::path_of_index_key(&key)?.0;
                    let entry = paths.get(&path_id).ok_or_else(|| {
                        StoreError::Corrupted(format!("path index of {id} names a missing path"))
                    })?;
                    doc_paths.push(PathInfo {
                        path: entry.path.as_str().into(),
                        collections: entry
                            .collections
                            .iter()
                            .map(|c| c.as_str().into())
                            .collect(),
                    });
                }
                doc_paths.sort_by(|a, b| a.path.cmp(&b.path));
                let mut chunks = Vec::new();
                for key in keys_with_prefix(&chunk_index, &id.0)? {
                    let v = chunk_index
                        .get(key.as_slice())?
                        .ok_or_else(|| StoreError::Corrupted("chunk index".into()))?;
                    chunks.push(tables::chunk_index_value(v.value())?);
                }
                let info = DocInfo {
                    id: *id,
                    mime_type: document.profile.mime_type.as_str().into(),
                    paths: doc_paths,
                    chunks,
                };
                if let Some(old) = self.docs.get(&id.0)
                    && **old != info
                {
                    // Same document, other paths: its live chunks are indexed again.
                    repathed.extend(
                        info.chunks
                            .iter()
                            .filter(|c| self.chunk(c).is_some() && !removed.contains(c)),
                    );
                }
                docs.insert(id.0, Arc::new(info));
            }
        }
        // Embeddings committed after their chunks: those chunks are indexed again.
        let mut embedded: Vec<ChunkId> = Vec::new();
        if roots.embeddings != self.table_roots.embeddings {
            let t = raw.open_table(tables::EMBEDDINGS)?;
            let again: BTreeSet<&ChunkId> = removed.iter().chain(&repathed).collect();
            for live in &self.segments {
                let seg = &live.segment;
                for (i, meta) in seg.metas.iter().enumerate() {
                    if live.is_dead(i) || seg.vectors.has(i) || again.contains(&meta.id) {
                        continue;
                    }
                    let id = EmbeddingId::derive(&meta.id, &self.model);
                    if t.get(&id.0[..])?.is_some() {
                        embedded.push(meta.id);
                    }
                }
            }
        }
        repathed.extend(embedded.iter().copied());
        let repathed_chunks = read_chunks(&txn, &repathed)?;

        // Segments: tombstones for removed and re-pathed chunks, one new segment.
        let mut segments = self.segments.clone();
        for id in removed.iter().chain(&repathed) {
            for live in &mut segments {
                if let Some(i) = live.segment.position(id) {
                    live.kill(i);
                }
            }
        }
        segments.retain(|l| l.n_live() > 0);
        let mut fresh: Vec<Chunk> = added_chunks;
        fresh.extend(repathed_chunks);
        fresh.sort_unstable_by_key(|c| c.id);
        let vectors = read_vectors(&txn, &fresh, &self.model)?;
        let prepare = |(chunk, vector): (&Chunk, Vec<i16>)| -> Result<NewChunk> {
            let doc = docs.get(&chunk.document_id.0).cloned().ok_or_else(|| {
                StoreError::Corrupted(format!("chunk {} has no document", chunk.id))
            })?;
            let meta = chunk_meta(chunk, doc);
            let (terms, len) = chunk_terms(&chunk.text, &meta);
            Ok(NewChunk {
                meta: Arc::new(meta),
                terms,
                len,
                vector,
            })
        };
        let new_chunks: Vec<NewChunk> = if fresh.len() < PARALLEL_MIN {
            fresh
                .iter()
                .zip(vectors)
                .map(prepare)
                .collect::<Result<_>>()?
        } else {
            fresh
                .par_iter()
                .zip(vectors)
                .map(prepare)
                .collect::<Result<_>>()?
        };
        let diff = SnapshotDiff {
            added: new_chunks.len() - repathed.len(),
            removed: removed.len(),
            repathed: repathed.len() - embedded.len(),
            embedded: embedded.len(),
            merged: false,
        };
        if !new_chunks.is_empty() {
            segments.push(Live::new(Arc::new(Segment::build(new_chunks, self.dim))));
        }
        let mut diff = diff;
        if needs_merge(&segments, merge_min) {
            let merged = Segment::merge(&segments);
            segments = vec![Live::new(Arc::new(merged))];
            diff.merged = true;
        }
        Ok(Some((
            Snapshot {
                root,
                sequence,
                model: self.model,
                dim: self.dim,
                table_roots: roots,
                chunk_roots,
                path_roots,
                paths,
                docs,
                segments,
                txn: Some((Arc::new(txn), instance)),
            },
            diff,
        )))
    }
}

/// The buckets whose roots differ.
fn changed_buckets(now: &[MerkleRoot], before: &[MerkleRoot]) -> Vec<usize> {
    (0..N_BUCKETS)
        .filter(|&b| now.get(b) != before.get(b))
        .collect()
}

/// Whether the small segments and the base's tombstones have grown past the threshold.
fn needs_merge(segments: &[Live], merge_min: usize) -> bool {
    let Some((base, small)) = segments.split_first() else {
        return false;
    };
    if segments.len() > MAX_SEGMENTS {
        return true;
    }
    let pending = base.n_dead + small.iter().map(|l| l.segment.len()).sum::<usize>();
    pending > merge_min.max(base.n_live() / 4)
}

pub(crate) fn chunk_meta(chunk: &Chunk, doc: Arc<DocInfo>) -> ChunkMeta {
    let (language, symbol, heading) = match &chunk.kind {
        ChunkKind::Code { language, symbol } => (
            Some(language.as_str().into()),
            symbol.as_ref().map(|s| s.qualified_name().into()),
            None,
        ),
        ChunkKind::Section { heading_path } if !heading_path.is_empty() => {
            (None, None, Some(heading_path.join(" > ").into()))
        }
        _ => (None, None, None),
    };
    ChunkMeta {
        id: chunk.id,
        doc,
        sequence: chunk.sequence,
        byte_offset: chunk.byte_offset,
        byte_length: chunk.byte_length,
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        kind: chunk.kind.name(),
        language,
        symbol,
        heading,
    }
}

/// Reads and decodes chunks by id (raw bytes read in order, decoded in parallel).
fn read_chunks(txn: &ReadTxn, ids: &[ChunkId]) -> Result<Vec<Chunk>> {
    let t = txn.raw().open_table(tables::CHUNKS)?;
    let mut raw = Vec::with_capacity(ids.len());
    for id in ids {
        let v = t
            .get(&id.0[..])?
            .ok_or_else(|| StoreError::Corrupted(format!("chunk {id} vanished from its state")))?;
        raw.push(tables::split_row(v.value())?.1.to_vec());
    }
    let decode = |bytes: &Vec<u8>| Ok(Chunk::decode(bytes)?);
    if raw.len() < PARALLEL_MIN {
        raw.iter().map(decode).collect()
    } else {
        raw.par_iter().map(decode).collect()
    }
}

/// The vectors of `chunks` under `model` (an empty vector where a chunk has none). Each
/// distinct vector is read and decoded once.
fn read_vectors(txn: &ReadTxn, chunks: &[Chunk], model: &ModelHash) -> Result<Vec<Vec<i16>>> {
    let t = txn.raw().open_table(tables::EMBEDDINGS)?;
    let mut named: Vec<Option<VectorHash>> = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let id = EmbeddingId::derive(&chunk.id, model);
        named.push(match t.get(&id.0[..])? {
            Some(row) => Some(StoredEmbedding::decode(tables::split_row(row.value())?.1)?.vector),
            None => None,
        });
    }
    let mut distinct: Vec<VectorHash> = named.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let stored = txn.raw().open_table(tables::VECTORS)?;
    let mut raw = Vec::with_capacity(distinct.len());
    for hash in &distinct {
        let v = stored.get(&hash[..])?.ok_or_else(|| {
            StoreError::Corrupted(format!(
                "absent vector {} named by an embedding",
                cfs_core::hex_encode(hash)
            ))
        })?;
        raw.push(v.value().to_vec());
    }
    let decode = |bytes: &Vec<u8>| Ok(cfs_core::decode_vector(bytes)?);
    let decoded: Vec<Vec<i16>> = if raw.len() < PARALLEL_MIN {
        raw.iter().map(decode).collect::<Result<_>>()?
    } else {
        raw.par_iter().map(decode).collect::<Result<_>>()?
    };
    Ok(named
        .iter()
        .map(|hash| match hash {
            Some(h) => decoded[distinct
                .binary_search(h)
                .expect("every named hash was read")]
            .clone(),
            None => Vec::new(),
        })
        .collect())
}

fn key16(bytes: &[u8]) -> Result<[u8; 16]> {
    bytes
        .try_into()
        .map_err(|_| StoreError::Corrupted(format!("{}-byte key or id, not 16", bytes.len())))
}

/// `(in b not a, in a not b)` of two sorted lists.
fn sorted_diff(a: &[ChunkId], b: &[ChunkId]) -> (Vec<ChunkId>, Vec<ChunkId>) {
    let (mut plus, mut minus) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                minus.push(*x);
                i += 1;
            }
            (Some(x), None) => {
                minus.push(*x);
                i += 1;
            }
            (_, Some(y)) => {
                plus.push(*y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    (plus, minus)
}
