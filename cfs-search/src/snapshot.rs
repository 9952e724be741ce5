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
    Bucket, Chunk, ChunkId, ChunkKind, DocumentId, MerkleRoot, ModelHash, N_BUCKETS, PathEntry,
    PathId, StateRoot, Table, TableRoots,
};
use cfs_ingest::Markers;
use rayon::prelude::*;

use super::buckets::BucketMap;
use super::format::{BucketBits, set_bit};
use super::meta::{ChunkMeta, DocInfo};
use super::segment::{Live, NewChunk, Segment, SegmentBuilder, chunk_terms};
use cfs_store::IndexedDocument;
use cfs_store::ReadTxn;
use cfs_store::{Result, StoreError};

/// Default of [`crate::IndexOptions::merge_min_chunks`].
pub const MERGE_MIN_CHUNKS: usize = 4096;
/// Fewer items than this are decoded on the calling thread.
const PARALLEL_MIN: usize = 256;
/// Chunks prepared at once when a segment is built.
pub(crate) const BUILD_BATCH: usize = 16_384;
/// Most segments a snapshot keeps before merging.
pub const MAX_SEGMENTS: usize = 16;

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
    /// The index file this snapshot was opened from and what moved since (its delta);
    /// `None` when it was built from the store or merged since.
    pub(crate) file: Option<FileBase>,
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
    /// Bytes of mapped index files (in the page cache, shared between processes; not
    /// heap).
    pub mapped: usize,
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
            file: None,
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
            m.text += live.dead.len() * 8;
            let Some(seg) = live.segment.owned() else {
                m.mapped += live.segment.as_mapped().map_or(0, |f| f.file_bytes());
                continue;
            };
            m.text += seg.lens.capacity() * 4;
            for (term, list) in &seg.postings {
                m.text += term.len()
                    + std::mem::size_of::<(Box<str>, Vec<[u32; 2]>)>()
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

    /// Chunks and tombstones a delta over this snapshot's index file holds: the chunks
    /// of every other segment and the base's dead ones (0 when it has no index file).
    pub(crate) fn pending_over_file(&self) -> usize {
        let Some(file) = &self.file else {
            return 0;
        };
        let base_len = file.segment.as_ref().map_or(0, |s| s.len());
        let base_live = self
            .segments
            .iter()
            .find(|l| file.is_base(l))
            .map_or(0, Live::n_live);
        let others: usize = self
            .segments
            .iter()
            .filter(|l| !file.is_base(l))
            .map(|l| l.segment.len())
            .sum();
        base_len - base_live + others
    }

    /// Total tokens of the live chunks.
    pub(crate) fn live_len(&self) -> u64 {
        let live = self.segments.iter().map(Live::live_len);
        live.fold(0, u64::saturating_add)
    }

    /// A chunk's metadata.
    pub fn chunk(&self, id: &ChunkId) -> Option<Arc<ChunkMeta>> {
        let (s, i) = self.live_place(id)?;
        self.segments[s].segment.meta(i)
    }

    /// The place of each of `doc`'s chunks in sequence order where it is live
    /// ([`Self::live_place`]): as its file recorded it when the snapshot reads that file
    /// and the chunk there is live, else found by its id (a delta's document whose chunk
    /// stayed in the index file, a chunk indexed again since, a document built in memory).
    pub(crate) fn live_places<'a>(
        &'a self,
        doc: &'a DocInfo,
    ) -> impl Iterator<Item = Option<(usize, usize)>> + 'a {
        let recorded = doc.chunks.places().and_then(|(map, places)| {
            let reads = |l: &Live| l.segment.as_mapped().is_some_and(|m| m.reads(map));
            Some((self.segments.iter().position(reads)?, places))
        });
        let in_file = move |k: usize| {
            let (s, places) = recorded?;
            let (l, i) = (&self.segments[s], *places.get(k)? as usize);
            (i < l.segment.len() && !l.is_dead(i)).then_some((s, i))
        };
        // A damaged place reads another chunk (a wrong answer, never a panic), as
        // damage anywhere in a mapped section does; `cfs verify` finds it.
        doc.chunks
            .iter()
            .enumerate()
            .map(move |(k, id)| in_file(k).or_else(|| self.live_place(id)))
    }

    /// The segment where a chunk is live and its local index there (an older segment
    /// may hold it dead).
    pub(crate) fn live_place(&self, id: &ChunkId) -> Option<(usize, usize)> {
        self.segments.iter().enumerate().find_map(|(s, l)| {
            let i = l.segment.position(id)?;
            (!l.is_dead(i)).then_some((s, i))
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
    pub fn chunks_at_path(&self, path: &str) -> Vec<Arc<ChunkMeta>> {
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
                (0..l.segment.len())
                    .filter(|&i| !l.is_dead(i))
                    .map(|i| l.segment.id(i))
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
                    ids.push(l.segment.id(i));
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
        let chunk_roots = self.bucket_roots_of(&txn, &roots, Table::Chunks, &self.chunk_roots)?;
        let path_roots = self.bucket_roots_of(&txn, &roots, Table::Paths, &self.path_roots)?;
        let (paths, mut touched_docs) = self.diff_paths(&txn, &path_roots)?;
        let (added, removed) = self.diff_chunks(&txn, &chunk_roots)?;
        let added_chunks = txn.chunks_by_id(&added)?;
        touched_docs.extend(added_chunks.iter().map(|c| c.document_id));
        let (docs, mut repathed) = self.rebuild_docs(&txn, &touched_docs, &paths, &removed)?;
        // Embeddings committed after their chunks: those chunks are indexed again.
        let embedded = if roots.embeddings == self.table_roots.embeddings {
            Vec::new()
        } else {
            self.newly_embedded(&txn, &removed, &repathed)?
        };
        repathed.extend(embedded.iter().copied());
        let mut fresh: Vec<Chunk> = added_chunks;
        fresh.extend(txn.chunks_by_id(&repathed)?);
        fresh.sort_unstable_by_key(|c| c.id);
        let mut diff = SnapshotDiff {
            added: fresh.len() - repathed.len(),
            removed: removed.len(),
            repathed: repathed.len() - embedded.len(),
            embedded: embedded.len(),
            merged: false,
        };
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
        if let Some(segment) = build_segment(&txn, fresh, &docs, (&self.model, self.dim))? {
            segments.push(Live::new(Arc::new(segment)));
        }
        let mut file = self.file.clone();
        if let Some(f) = &mut file {
            changed_buckets(&path_roots, &self.path_roots)
                .into_iter()
                .for_each(|b| set_bit(&mut f.path_buckets, b));
            touched_docs.iter().for_each(|d| f.touch_doc(d));
        }
        let segments = merge_if_needed(segments, &mut file, merge_min, &mut diff);
        let next = Snapshot {
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
            file,
        };
        Ok(Some((next, diff)))
    }

    /// What a build of `txn`'s whole state needs before its chunks: the snapshot of that
    /// state without segments (its paths and documents, every document being named by a
    /// path), and every chunk id, sorted.
    pub(crate) fn skeleton(
        txn: &ReadTxn,
        model: ModelHash,
        dim: usize,
    ) -> Result<(Snapshot, Vec<ChunkId>)> {
        let empty = Snapshot::empty(model, dim);
        let roots = txn.table_roots()?;
        let chunk_roots = Arc::new(txn.bucket_roots(Table::Chunks)?);
        let path_roots = Arc::new(txn.bucket_roots(Table::Paths)?);
        let (paths, touched_docs) = empty.diff_paths(txn, &path_roots)?;
        let (ids, _) = empty.diff_chunks(txn, &chunk_roots)?;
        let (docs, _) = empty.rebuild_docs(txn, &touched_docs, &paths, &BTreeSet::new())?;
        let skeleton = Snapshot {
            root: roots.state_root(),
            sequence: txn.sequence()?,
            table_roots: roots,
            chunk_roots,
            path_roots,
            paths,
            docs,
            ..empty
        };
        Ok((skeleton, ids))
    }

    /// The bucket roots of `table` in the state of `txn`: a table whose root did not
    /// move has the same bucket roots, which are not read again.
    fn bucket_roots_of(
        &self,
        txn: &ReadTxn,
        roots: &TableRoots,
        table: Table,
        mine: &Arc<Vec<MerkleRoot>>,
    ) -> Result<Arc<Vec<MerkleRoot>>> {
        if self.txn.is_some() && roots.get(table) == self.table_roots.get(table) {
            Ok(Arc::clone(mine))
        } else {
            Ok(Arc::new(txn.bucket_roots(table)?))
        }
    }

    /// Paths: the new path map, and the documents whose set of paths changed.
    fn diff_paths(
        &self,
        txn: &ReadTxn,
        path_roots: &[MerkleRoot],
    ) -> Result<(BucketMap<PathEntry>, BTreeSet<DocumentId>)> {
        let mut paths = self.paths.clone();
        let mut touched_docs: BTreeSet<DocumentId> = BTreeSet::new();
        // Headers beside an implementation file that came or went (their role moves).
        let mut headers: Vec<String> = Vec::new();
        for b in changed_buckets(path_roots, &self.path_roots) {
            let rows = txn.path_bucket(b as u16)?;
            let old: BTreeMap<&[u8; 16], &PathEntry> =
                paths.bucket(b).iter().map(|(k, v)| (k, v)).collect();
            let new: BTreeMap<&[u8; 16], &PathEntry> = rows.iter().map(|(k, v)| (k, v)).collect();
            let moved = (old.iter().filter(|(k, e)| new.get(*k) != Some(*e)))
                .chain(new.iter().filter(|(k, e)| old.get(*k) != Some(*e)));
            for (_, e) in moved {
                touched_docs.insert(e.document_id);
                headers.extend(cfs_ingest::headers_of(e.path.as_str()));
            }
            paths.set_bucket(b, rows);
        }
        for header in &headers {
            if let Some(entry) = paths.get(&PathId::derive(header).0) {
                touched_docs.insert(entry.document_id);
            }
        }
        Ok((paths, touched_docs))
    }

    /// Chunks: ids added and removed, bucket by bucket.
    fn diff_chunks(
        &self,
        txn: &ReadTxn,
        chunk_roots: &[MerkleRoot],
    ) -> Result<(Vec<ChunkId>, BTreeSet<ChunkId>)> {
        let mut added: Vec<ChunkId> = Vec::new();
        let mut removed: BTreeSet<ChunkId> = BTreeSet::new();
        for b in changed_buckets(chunk_roots, &self.chunk_roots) {
            let now = txn.chunk_bucket(b as u16)?;
            let before = self.bucket_ids(b as u16);
            let (plus, minus) = sorted_diff(&before, &now);
            added.extend(plus);
            removed.extend(minus);
        }
        Ok((added, removed))
    }

    /// Documents: the info of every touched one rebuilt (a gone one dropped), and the
    /// live chunks of those that kept their id but changed their paths (re-pathed: they
    /// are indexed again).
    fn rebuild_docs(
        &self,
        txn: &ReadTxn,
        touched_docs: &BTreeSet<DocumentId>,
        paths: &BucketMap<PathEntry>,
        removed: &BTreeSet<ChunkId>,
    ) -> Result<(BucketMap<Arc<DocInfo>>, Vec<ChunkId>)> {
        let mut docs = self.docs.clone();
        let mut repathed: Vec<ChunkId> = Vec::new();
        let scan = txn.document_scan()?;
        for id in touched_docs {
            let Some(found) = scan.get(id)? else {
                docs.remove(&id.0);
                continue;
            };
            let markers = first_chunk_markers(txn, &found)?;
            let info = doc_info(id, found, paths, markers)?;
            if let Some(old) = self.docs.get(&id.0)
                && **old != info
            {
                repathed.extend(
                    info.chunks
                        .iter()
                        .filter(|c| self.chunk(c).is_some() && !removed.contains(c)),
                );
            }
            docs.insert(id.0, Arc::new(info));
        }
        Ok((docs, repathed))
    }

    /// Live chunks indexed without a vector that have one in this state (and are not
    /// indexed again anyway).
    fn newly_embedded(
        &self,
        txn: &ReadTxn,
        removed: &BTreeSet<ChunkId>,
        repathed: &[ChunkId],
    ) -> Result<Vec<ChunkId>> {
        let again: BTreeSet<&ChunkId> = removed.iter().chain(repathed).collect();
        let mut without_vector: Vec<ChunkId> = Vec::new();
        for live in &self.segments {
            let seg = &live.segment;
            for i in 0..seg.len() {
                if !live.is_dead(i) && !seg.has_vector(i) && !again.contains(&seg.id(i)) {
                    without_vector.push(seg.id(i));
                }
            }
        }
        txn.embedded_of(&without_vector, &self.model)
    }
}

/// The buckets whose roots differ.
fn changed_buckets(now: &[MerkleRoot], before: &[MerkleRoot]) -> Vec<usize> {
    (0..N_BUCKETS)
        .filter(|&b| now.get(b) != before.get(b))
        .collect()
}

/// The segments, merged where they have grown past the threshold: all of them into a
/// new base (the index file, if any, forgotten); or, where the base is the index file's,
/// the others into one beside it, the base left mapped (it is never merged in memory:
/// past a quarter of it changed, the next save writes the whole file merged as it is
/// written).
fn merge_if_needed(
    segments: Vec<Live>,
    file: &mut Option<FileBase>,
    merge_min: usize,
    diff: &mut SnapshotDiff,
) -> Vec<Live> {
    let from_file = file
        .as_ref()
        .is_some_and(|f| segments.first().is_some_and(|l| f.is_base(l)));
    match segments.split_first() {
        Some((base, rest)) if from_file => {
            if rest.len() > 1 && needs_merge(rest, merge_min) {
                vec![base.clone(), Live::new(Arc::new(Segment::merge(rest)))]
            } else {
                segments
            }
        }
        _ if needs_merge(&segments, merge_min) => {
            diff.merged = true;
            *file = None;
            vec![Live::new(Arc::new(Segment::merge(&segments)))]
        }
        _ => segments,
    }
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

/// The metadata of `chunk` of the document `doc`.
pub fn chunk_meta(chunk: &Chunk, doc: Arc<DocInfo>) -> ChunkMeta {
    let (mut language, mut symbol, mut heading) = (None, None, None);
    let (mut symbol_kind, mut name_start, mut continued) = (None, 0, false);
    match &chunk.kind {
        ChunkKind::Code {
            language: l,
            symbol: s,
        } => {
            language = Some(l.as_str().into());
            if let Some(s) = s {
                symbol = Some(s.qualified_name().into());
                symbol_kind = Some(s.kind);
                name_start = s.parent.as_ref().map_or(0, |p| p.len() + 2) as u16;
                continued = s.window.is_some_and(|w| w.index > 0);
            }
        }
        ChunkKind::Section { heading_path } if !heading_path.is_empty() => {
            heading = Some(heading_path.join(" > ").into());
        }
        _ => {}
    }
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
        symbol_kind,
        name_start,
        continued,
    }
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

/// The search-side info of a document: its MIME type, its paths (sorted, with their
/// collections) and its chunk ids.
fn doc_info(
    id: &DocumentId,
    found: IndexedDocument,
    paths: &BucketMap<PathEntry>,
    markers: Markers,
) -> Result<DocInfo> {
    let mut doc_paths = Vec::with_capacity(found.paths.len());
    for path_id in &found.paths {
        let entry = paths.get(&path_id.0).ok_or_else(|| {
            StoreError::Corrupted(format!("path index of {id} names a missing path"))
        })?;
        doc_paths.push(super::external::path_info(entry));
    }
    doc_paths.sort_by(|a, b| a.path.cmp(&b.path));
    let mut holds = |p: &str| paths.get(&PathId::derive(p).0).is_some();
    let markers = Markers {
        beside: cfs_ingest::beside_implementation(doc_paths.iter().map(|p| &*p.path), &mut holds),
        ..markers
    };
    Ok(DocInfo::new(
        *id,
        found.document.profile.mime_type.as_str().into(),
        doc_paths,
        found.chunks,
        markers,
    ))
}

/// The markers of a document ([`Markers::of`]), from the text of its first chunk.
pub(crate) fn first_chunk_markers(txn: &ReadTxn, found: &IndexedDocument) -> Result<Markers> {
    let Some(first) = found.chunks.first() else {
        return Ok(Markers::default());
    };
    let chunk = txn.chunk(first)?.ok_or_else(|| {
        StoreError::Corrupted(format!(
            "document {} names a missing chunk",
            found.document.id
        ))
    })?;
    let is_code = matches!(chunk.kind, ChunkKind::Code { .. });
    Ok(Markers::of(&chunk.text, is_code))
}

/// The segment of `fresh` (sorted by id; `None` when empty), built in batches: a
/// batch's vectors are read, its chunks prepared and moved into the segment, and its
/// texts dropped before the next, so the chunks' term lists and vectors are never all
/// held at once (the first index of a large store).
fn build_segment(
    txn: &ReadTxn,
    mut fresh: Vec<Chunk>,
    docs: &BucketMap<Arc<DocInfo>>,
    (model, dim): (&ModelHash, usize),
) -> Result<Option<Segment>> {
    if fresh.is_empty() {
        return Ok(None);
    }
    let mut builder = SegmentBuilder::new(dim, fresh.len());
    for batch in fresh.chunks_mut(BUILD_BATCH) {
        let vectors = txn.vectors_of(batch, model)?;
        for chunk in prepare_chunks(batch, vectors, docs)? {
            builder.push(chunk);
        }
        batch.iter_mut().for_each(|c| c.text = String::new());
    }
    Ok(Some(builder.finish()))
}

/// The chunks of a new segment: metadata (with their document's info), terms and
/// vector, prepared in parallel for many.
pub(crate) fn prepare_chunks(
    fresh: &[Chunk],
    vectors: Vec<Vec<i16>>,
    docs: &BucketMap<Arc<DocInfo>>,
) -> Result<Vec<NewChunk>> {
    let prepare = |(chunk, vector): (&Chunk, Vec<i16>)| -> Result<NewChunk> {
        let doc = docs
            .get(&chunk.document_id.0)
            .cloned()
            .ok_or_else(|| StoreError::Corrupted(format!("chunk {} has no document", chunk.id)))?;
        let meta = chunk_meta(chunk, doc);
        let terms = chunk_terms(&chunk.text, &meta);
        Ok(NewChunk {
            meta: Arc::new(meta),
            terms,
            vector,
        })
    };
    if fresh.len() < PARALLEL_MIN {
        fresh.iter().zip(vectors).map(prepare).collect()
    } else {
        fresh.par_iter().zip(vectors).map(prepare).collect()
    }
}

/// The index file a snapshot was opened from, and what moved since.
#[derive(Clone, Debug)]
pub(crate) struct FileBase {
    /// The BLAKE3 hash that ends the base file's header (it covers every section's
    /// hash): it names the file's exact content.
    pub hash: [u8; 32],
    /// The state the base file holds.
    pub root: StateRoot,
    /// The base file's chunks (`None` for a file without any).
    pub segment: Option<Arc<Segment>>,
    /// Buckets of documents whose rows may differ from the base file's.
    pub doc_buckets: BucketBits,
    /// Buckets of paths whose rows may differ from the base file's.
    pub path_buckets: BucketBits,
}

impl FileBase {
    /// Whether `live` is the base file's segment.
    pub fn is_base(&self, live: &Live) -> bool {
        self.segment
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &live.segment))
    }

    /// Records that the documents of `doc` may have moved.
    pub fn touch_doc(&mut self, doc: &DocumentId) {
        set_bit(&mut self.doc_buckets, usize::from(Bucket::of_key(&doc.0).0));
    }
}
