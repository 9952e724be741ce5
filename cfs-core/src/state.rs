//! An in-memory canonical state: the five tables as sorted maps, with the rules that keep
//! them consistent (reference-counted documents, system edges) and the full computation
//! of their roots.
//!
//! The store keeps the same state in redb; this type is the reference it is tested
//! against, the engine of the test vectors, and a convenient way for a program to build
//! a state without a database.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::bucket::{Bucket, TopTree, table_root_from_sorted};
use crate::chunk::{Chunk, ChunkKind, hierarchical_hash, hierarchical_hash_of_leaves};
use crate::diff::StateDiff;
use crate::document::Document;
use crate::edge::{Edge, EdgeKind, EntityId};
use crate::embedding::Embedding;
use crate::encode::Canonical;
use crate::error::CoreError;
use crate::hash::{HASH_LEN, MerkleRoot, StateRoot};
use crate::id::{ChunkId, DocumentId, EmbeddingId, PathId};
use crate::lookup::PrefixIndex;
use crate::merkle::{merkle_path, merkle_root};
use crate::path::PathEntry;
use crate::proof::{ChunkProof, InclusionProof};
use crate::table::{Entity, Table, TableRoots};

/// The canonical state as five sorted maps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CanonicalState {
    paths: BTreeMap<PathId, PathEntry>,
    documents: BTreeMap<DocumentId, Document>,
    chunks: BTreeMap<ChunkId, Chunk>,
    embeddings: BTreeMap<EmbeddingId, Embedding>,
    edges: BTreeMap<Edge, Edge>,
}

/// The root of one table, computed from all its rows, buckets hashed in parallel.
fn table_root<E: Entity>(rows: &BTreeMap<E::Key, E>) -> MerkleRoot {
    let rows: Vec<(&E::Key, &E)> = rows.iter().collect();
    let leaves: Vec<(Bucket, [u8; HASH_LEN])> = rows
        .par_iter()
        .map(|(key, row)| (E::bucket_of(key), row.leaf().0))
        .collect();
    table_root_from_sorted(&leaves).expect("BTreeMap iterates in key order")
}

/// Checks a document with all its rows and returns every edge it brings: the given
/// `next_window` edges, a `contains` edge per chunk and an `embedded_as` edge per
/// embedding. Every entity is valid, the chunks are exactly sequences `0..n_chunks` of
/// this document within its text and match its hierarchical hash, every embedding is of
/// one of these chunks, every window edge links two of them.
pub fn document_edges(
    document: &Document,
    chunks: &[Chunk],
    embeddings: &[Embedding],
    window_edges: &[Edge],
) -> Result<Vec<Edge>, CoreError> {
    document_edges_of(&DocumentParts {
        document,
        chunks,
        chunk_leaves: None,
        embeddings,
        window_edges,
        chunks_derived: false,
    })
}

/// A document and all its rows, for [`document_edges_of`].
#[derive(Clone, Copy, Debug)]
pub struct DocumentParts<'a> {
    /// The document.
    pub document: &'a Document,
    /// Its chunks, in any order.
    pub chunks: &'a [Chunk],
    /// `chunk_leaves[i]`, the leaf of `chunks[i]` as [`Entity::leaf`] gives it, when the
    /// caller holds them: the hierarchical hash is checked over them instead of hashing
    /// every chunk again.
    pub chunk_leaves: Option<&'a [[u8; HASH_LEN]]>,
    /// Its embeddings.
    pub embeddings: &'a [Embedding],
    /// `next_window` edges between its chunks.
    pub window_edges: &'a [Edge],
    /// The chunks were made by [`Chunk::new`] (which derived their text hashes and ids)
    /// and not changed since: those two derivations are not made again, the fields are
    /// checked as always. A chunk changed since would no longer match its leaf, and so
    /// the hierarchical hash, unless the document were changed to match.
    pub chunks_derived: bool,
}

/// [`document_edges`] of a document's parts (see [`DocumentParts`] for what the caller
/// may vouch for).
pub fn document_edges_of(parts: &DocumentParts<'_>) -> Result<Vec<Edge>, CoreError> {
    parts.document.validate()?;
    check_chunks(parts)?;
    check_attached(parts)?;
    let DocumentParts {
        document,
        chunks,
        embeddings,
        window_edges,
        ..
    } = *parts;
    let mut edges: Vec<Edge> = window_edges.to_vec();
    edges.extend(
        chunks
            .iter()
            .map(|c| Edge::new(document.id, c.id, EdgeKind::CONTAINS)),
    );
    edges.extend(
        embeddings
            .iter()
            .map(|e| Edge::new(e.chunk_id, e.id, EdgeKind::EMBEDDED_AS)),
    );
    edges.sort_unstable();
    edges.dedup();
    Ok(edges)
}

/// Every chunk is valid (its derivations too unless vouched for), of this document,
/// within its text; their sequences are `0..n_chunks`; their leaves make its
/// hierarchical hash.
fn check_chunks(parts: &DocumentParts<'_>) -> Result<(), CoreError> {
    const K: &str = "document";
    let DocumentParts {
        document,
        chunks,
        chunk_leaves,
        chunks_derived,
        ..
    } = *parts;
    let mut by_sequence: BTreeMap<u32, &Chunk> = BTreeMap::new();
    for chunk in chunks {
        if chunks_derived {
            chunk.validate_fields()?;
        } else {
            chunk.validate()?;
        }
        if chunk.document_id != document.id {
            return Err(CoreError::invalid(
                K,
                format!(
                    "chunk {} belongs to {}, not {}",
                    chunk.id, chunk.document_id, document.id
                ),
            ));
        }
        if chunk.byte_end() > document.text_length_bytes {
            return Err(CoreError::invalid(
                K,
                format!(
                    "chunk {} ends past the text ({} bytes)",
                    chunk.id, document.text_length_bytes
                ),
            ));
        }
        if by_sequence.insert(chunk.sequence, chunk).is_some() {
            return Err(CoreError::invalid(
                K,
                format!("sequence {} twice", chunk.sequence),
            ));
        }
    }
    if !by_sequence.keys().copied().eq(0..document.n_chunks) {
        return Err(CoreError::invalid(
            K,
            format!("chunk sequences are not 0..{}", document.n_chunks),
        ));
    }
    let hierarchical = match chunk_leaves {
        Some(leaves) if leaves.len() == chunks.len() => hierarchical_hash_of_leaves(chunks, leaves),
        _ => hierarchical_hash(chunks),
    };
    if hierarchical != document.hierarchical_hash {
        return Err(CoreError::invalid(
            K,
            "hierarchical hash does not match the chunks",
        ));
    }
    Ok(())
}

/// Every embedding is valid and of one of the chunks; every window edge is valid and
/// links two of them.
fn check_attached(parts: &DocumentParts<'_>) -> Result<(), CoreError> {
    const K: &str = "document";
    let chunk_ids: BTreeSet<ChunkId> = parts.chunks.iter().map(|c| c.id).collect();
    for embedding in parts.embeddings {
        embedding.validate()?;
        if !chunk_ids.contains(&embedding.chunk_id) {
            return Err(CoreError::invalid(
                K,
                format!(
                    "embedding {} is of a chunk not in the document",
                    embedding.id
                ),
            ));
        }
    }
    for edge in parts.window_edges {
        edge.validate()?;
        let inside = |id: EntityId| chunk_ids.contains(&ChunkId(id.0));
        if edge.kind != EdgeKind::NEXT_WINDOW || !inside(edge.source) || !inside(edge.target) {
            return Err(CoreError::invalid(
                K,
                format!("{edge:?} is not a next_window edge between its chunks"),
            ));
        }
    }
    Ok(())
}

impl CanonicalState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// A state holding exactly these rows, unchecked: for a store to hand its rows to
    /// [`CanonicalState::check_integrity`] and [`CanonicalState::table_roots`].
    pub fn from_rows(
        paths: Vec<PathEntry>,
        documents: Vec<Document>,
        chunks: Vec<Chunk>,
        embeddings: Vec<Embedding>,
        edges: Vec<Edge>,
    ) -> Self {
        Self {
            paths: paths.into_iter().map(|p| (p.id(), p)).collect(),
            documents: documents.into_iter().map(|d| (d.id, d)).collect(),
            chunks: chunks.into_iter().map(|c| (c.id, c)).collect(),
            embeddings: embeddings.into_iter().map(|e| (e.id, e)).collect(),
            edges: edges.into_iter().map(|e| (e, e)).collect(),
        }
    }

    /// Path entries by path id.
    pub fn paths(&self) -> &BTreeMap<PathId, PathEntry> {
        &self.paths
    }
    /// Documents by id.
    pub fn documents(&self) -> &BTreeMap<DocumentId, Document> {
        &self.documents
    }
    /// Chunks by id.
    pub fn chunks(&self) -> &BTreeMap<ChunkId, Chunk> {
        &self.chunks
    }
    /// Embeddings by id.
    pub fn embeddings(&self) -> &BTreeMap<EmbeddingId, Embedding> {
        &self.embeddings
    }
    /// Edges, each its own key.
    pub fn edges(&self) -> &BTreeMap<Edge, Edge> {
        &self.edges
    }

    /// The path entry of `path`.
    pub fn path(&self, path: &str) -> Option<&PathEntry> {
        self.paths.get(&PathId::derive(path))
    }

    /// Adds a document with all its chunks and embeddings, and the system edges that link
    /// them (see [`document_edges`] for the checks).
    ///
    /// Everything is checked first and nothing is changed on error. Adding a document
    /// that is already present with the same rows is a no-op; with other rows it is an
    /// error, since ids are derived from content and the same id must mean the same rows.
    pub fn insert_document(
        &mut self,
        document: Document,
        chunks: Vec<Chunk>,
        embeddings: Vec<Embedding>,
        window_edges: Vec<Edge>,
    ) -> Result<(), CoreError> {
        const K: &str = "document";
        let edges = document_edges(&document, &chunks, &embeddings, &window_edges)?;

        if let Some(existing) = self.documents.get(&document.id) {
            let same = *existing == document
                && chunks.iter().all(|c| self.chunks.get(&c.id) == Some(c))
                && embeddings
                    .iter()
                    .all(|e| self.embeddings.get(&e.id) == Some(e))
                && edges.iter().all(|e| self.edges.contains_key(e));
            if same {
                return Ok(());
            }
            return Err(CoreError::invalid(
                K,
                format!("{} is already present with other rows", document.id),
            ));
        }
        self.documents.insert(document.id, document);
        self.chunks.extend(chunks.into_iter().map(|c| (c.id, c)));
        self.embeddings
            .extend(embeddings.into_iter().map(|e| (e.id, e)));
        self.edges.extend(edges.into_iter().map(|e| (e, e)));
        Ok(())
    }

    /// Binds a path to a present document, replacing any previous binding of that path;
    /// a document left without paths is removed with everything it owns. Returns the
    /// previous entry.
    pub fn bind_path(&mut self, entry: PathEntry) -> Result<Option<PathEntry>, CoreError> {
        entry.validate()?;
        if !self.documents.contains_key(&entry.document_id) {
            return Err(CoreError::invalid(
                "path entry",
                format!(
                    "{:?} names the absent document {}",
                    entry.path, entry.document_id
                ),
            ));
        }
        let previous = self.paths.insert(entry.id(), entry);
        if let Some(old) = &previous {
            self.collect_if_unreferenced(old.document_id);
        }
        Ok(previous)
    }

    /// Removes the binding of `path`; a document left without paths is removed with
    /// everything it owns. Returns the removed entry.
    pub fn unbind_path(&mut self, path: &str) -> Option<PathEntry> {
        let removed = self.paths.remove(&PathId::derive(path))?;
        self.collect_if_unreferenced(removed.document_id);
        Some(removed)
    }

    /// Adds a user edge between two present documents, chunks or embeddings.
    pub fn insert_edge(&mut self, edge: Edge) -> Result<(), CoreError> {
        edge.validate()?;
        if edge.kind.is_system() {
            return Err(CoreError::invalid(
                "edge",
                "system edges come with their document",
            ));
        }
        for end in [edge.source, edge.target] {
            if !self.entity_exists(end) {
                return Err(CoreError::invalid(
                    "edge",
                    format!("{end:?} does not exist"),
                ));
            }
        }
        self.edges.insert(edge, edge);
        Ok(())
    }

    /// Removes a user edge; returns whether it was present.
    pub fn remove_edge(&mut self, edge: &Edge) -> bool {
        !edge.kind.is_system() && self.edges.remove(edge).is_some()
    }

    fn entity_exists(&self, id: EntityId) -> bool {
        self.documents.contains_key(&DocumentId(id.0))
            || self.chunks.contains_key(&ChunkId(id.0))
            || self.embeddings.contains_key(&EmbeddingId(id.0))
    }

    fn collect_if_unreferenced(&mut self, document: DocumentId) {
        if self.paths.values().any(|p| p.document_id == document) {
            return;
        }
        if self.documents.remove(&document).is_none() {
            return;
        }
        let chunks: BTreeSet<ChunkId> = self
            .chunks
            .values()
            .filter(|c| c.document_id == document)
            .map(|c| c.id)
            .collect();
        self.chunks.retain(|id, _| !chunks.contains(id));
        let embeddings: BTreeSet<EmbeddingId> = self
            .embeddings
            .values()
            .filter(|e| chunks.contains(&e.chunk_id))
            .map(|e| e.id)
            .collect();
        self.embeddings.retain(|id, _| !embeddings.contains(id));
        let gone = |id: EntityId| {
            id.0 == document.0
                || chunks.contains(&ChunkId(id.0))
                || embeddings.contains(&EmbeddingId(id.0))
        };
        self.edges.retain(|e, _| !gone(e.source) && !gone(e.target));
    }

    /// The five table roots, each computed from all its rows.
    pub fn table_roots(&self) -> TableRoots {
        let ((paths, documents), (chunks, (embeddings, edges))) = rayon::join(
            || rayon::join(|| table_root(&self.paths), || table_root(&self.documents)),
            || {
                rayon::join(
                    || table_root(&self.chunks),
                    || rayon::join(|| table_root(&self.embeddings), || table_root(&self.edges)),
                )
            },
        );
        TableRoots {
            paths,
            documents,
            chunks,
            embeddings,
            edges,
        }
    }

    /// The state root.
    pub fn state_root(&self) -> StateRoot {
        self.table_roots().state_root()
    }

    /// What changed from `self` to `newer`.
    pub fn diff(&self, newer: &CanonicalState) -> StateDiff {
        StateDiff::between(self, newer)
    }

    /// The inclusion proof of a chunk, or `None` if it is absent.
    pub fn prove_chunk(&self, id: &ChunkId) -> Option<ChunkProof> {
        let chunk = self.chunks.get(id)?.clone();
        let bucket = Chunk::bucket_of(id);
        let in_bucket: Vec<(&ChunkId, &Chunk)> = self
            .chunks
            .iter()
            .filter(|(k, _)| Chunk::bucket_of(k) == bucket)
            .collect();
        let index = in_bucket.iter().position(|(k, _)| *k == id)?;
        let leaves: Vec<[u8; HASH_LEN]> = in_bucket.iter().map(|(_, c)| c.leaf_hash().0).collect();
        let path = merkle_path(&leaves, index)?;
        let mut bucket_roots = vec![MerkleRoot::empty(); crate::bucket::N_BUCKETS];
        let mut by_bucket: BTreeMap<Bucket, Vec<[u8; HASH_LEN]>> = BTreeMap::new();
        for (key, row) in &self.chunks {
            by_bucket
                .entry(Chunk::bucket_of(key))
                .or_default()
                .push(row.leaf_hash().0);
        }
        for (b, leaves) in by_bucket {
            bucket_roots[usize::from(b.0)] = merkle_root(&leaves);
        }
        let top = TopTree::from_bucket_roots(&bucket_roots).ok()?;
        Some(ChunkProof {
            chunk,
            proof: InclusionProof {
                table: Table::Chunks,
                bucket: bucket.0,
                path,
                bucket_siblings: top.siblings(bucket),
                table_roots: self.table_roots(),
            },
        })
    }

    /// Every broken invariant of the state, described; empty when the state is sound
    /// (see [`check_rows`]).
    pub fn check_integrity(&self) -> Vec<String> {
        let paths: Vec<PathEntry> = self.paths.values().cloned().collect();
        let documents: Vec<Document> = self.documents.values().cloned().collect();
        let chunks: Vec<Chunk> = self.chunks.values().cloned().collect();
        let embeddings: Vec<Embedding> = self.embeddings.values().cloned().collect();
        let edges: Vec<Edge> = self.edges.keys().copied().collect();
        check_rows(&paths, &documents, &chunks, &embeddings, &edges, None)
    }
}

/// Every broken invariant of a set of rows, described; empty when they are sound.
///
/// `documents`, `chunks` and `embeddings` must be sorted by id and `edges` by key (the
/// order of their tables), as a store's scan gives them. Checks: every path names a
/// present document and every document has a path; every chunk's document is present,
/// a document's chunks are exactly sequences `0..n_chunks` and match its hierarchical
/// hash; every embedding's chunk is present; system edges are exactly the `contains` and
/// `embedded_as` edges the rows imply, `next_window` edges link consecutive windows of
/// one symbol, user edges link present entities. Works on sorted slices (binary search,
/// per-document work in parallel), so a store can check millions of rows.
pub fn check_rows(
    paths: &[PathEntry],
    documents: &[Document],
    chunks: &[Chunk],
    embeddings: &[Embedding],
    edges: &[Edge],
    chunk_leaves: Option<&[[u8; 32]]>,
) -> Vec<String> {
    let mut problems = Vec::new();
    // Lookups by id in about two memory accesses each (lookup.rs): the edge rules make
    // two per edge.
    let document_index = PrefixIndex::new(documents, |d| &d.id.0[..]);
    let chunk_index = PrefixIndex::new(chunks, |c| &c.id.0[..]);
    let embedding_index = PrefixIndex::new(embeddings, |e| &e.id.0[..]);
    let document_at = |id: &DocumentId| document_index.find(documents, |d| &d.id.0[..], &id.0);
    let chunk_at = |id: &ChunkId| chunk_index.find(chunks, |c| &c.id.0[..], &id.0);
    let embedding_at = |id: &EmbeddingId| embedding_index.find(embeddings, |e| &e.id.0[..], &id.0);
    let mut referenced: Vec<DocumentId> = paths.iter().map(|p| p.document_id).collect();
    referenced.par_sort_unstable();
    referenced.dedup();
    for entry in paths {
        if document_at(&entry.document_id).is_none() {
            problems.push(format!(
                "path {:?} names absent document {}",
                entry.path, entry.document_id
            ));
        }
    }
    // Chunks grouped by document, in sequence order, with their leaf hashes (given, or
    // computed here).
    let computed: Vec<[u8; 32]>;
    let leaves: &[[u8; 32]] = match chunk_leaves {
        Some(l) if l.len() == chunks.len() => l,
        _ => {
            computed = chunks.par_iter().map(|c| c.leaf_hash().0).collect();
            &computed
        }
    };
    let mut by_document: Vec<(&Chunk, &[u8; 32])> = chunks.iter().zip(leaves).collect();
    by_document.par_sort_unstable_by_key(|(c, _)| (c.document_id, c.sequence));
    let orphan_chunks: Vec<String> = by_document
        .par_iter()
        .filter(|(chunk, _)| document_at(&chunk.document_id).is_none())
        .map(|(chunk, _)| {
            format!(
                "orphan chunk {} of absent document {}",
                chunk.id, chunk.document_id
            )
        })
        .collect();
    problems.extend(orphan_chunks);
    let document_problems: Vec<String> = documents
        .par_iter()
        .filter_map(|document| {
            if referenced.binary_search(&document.id).is_err() {
                return Some(format!("document {} has no path", document.id));
            }
            let from = by_document.partition_point(|(c, _)| c.document_id < document.id);
            let to = by_document.partition_point(|(c, _)| c.document_id <= document.id);
            let own = &by_document[from..to];
            let sequences_ok = own.iter().map(|(c, _)| c.sequence).eq(0..document.n_chunks);
            if !sequences_ok {
                let sequences: Vec<u32> = own.iter().map(|(c, _)| c.sequence).collect();
                return Some(format!(
                    "document {} has chunk sequences {:?}, expected 0..{}",
                    document.id, sequences, document.n_chunks
                ));
            }
            // In sequence order already (checked above): the Merkle root of the leaves.
            let leaves: Vec<[u8; 32]> = own.iter().map(|(_, l)| **l).collect();
            (merkle_root(&leaves) != document.hierarchical_hash)
                .then(|| format!("document {} hierarchical hash mismatch", document.id))
        })
        .collect();
    problems.extend(document_problems);
    let orphan_embeddings: Vec<String> = embeddings
        .par_iter()
        .filter(|embedding| chunk_at(&embedding.chunk_id).is_none())
        .map(|embedding| {
            format!(
                "orphan embedding {} of absent chunk {}",
                embedding.id, embedding.chunk_id
            )
        })
        .collect();
    problems.extend(orphan_embeddings);
    let exists = |id: EntityId| {
        document_at(&DocumentId(id.0)).is_some()
            || chunk_at(&ChunkId(id.0)).is_some()
            || embedding_at(&EmbeddingId(id.0)).is_some()
    };
    let window = |id: EntityId| {
        let chunk = &chunks[chunk_at(&ChunkId(id.0))?];
        match &chunk.kind {
            ChunkKind::Code {
                symbol: Some(s), ..
            } => Some((chunk.document_id, s.window?)),
            _ => None,
        }
    };
    // (problem, 1 for an implied contains edge, 2 for an implied embedded_as edge).
    let check_edge = |edge: &Edge| -> (Option<String>, u8) {
        match edge.kind {
            EdgeKind::CONTAINS => {
                let implied = chunk_at(&ChunkId(edge.target.0))
                    .is_some_and(|i| chunks[i].document_id.0 == edge.source.0);
                if implied {
                    (None, 1)
                } else {
                    (
                        Some(format!("system edge {edge:?} not implied by any row")),
                        0,
                    )
                }
            }
            EdgeKind::EMBEDDED_AS => {
                let implied = embedding_at(&EmbeddingId(edge.target.0))
                    .is_some_and(|i| embeddings[i].chunk_id.0 == edge.source.0);
                if implied {
                    (None, 2)
                } else {
                    (
                        Some(format!("system edge {edge:?} not implied by any row")),
                        0,
                    )
                }
            }
            EdgeKind::NEXT_WINDOW => {
                let step = match (window(edge.source), window(edge.target)) {
                    (Some((da, wa)), Some((db, wb))) => {
                        da == db && wa.count == wb.count && wa.index + 1 == wb.index
                    }
                    _ => false,
                };
                let problem = (!step).then(|| {
                    format!("next_window edge {edge:?} does not link consecutive windows")
                });
                (problem, 0)
            }
            _ => {
                let problem = (!exists(edge.source) || !exists(edge.target))
                    .then(|| format!("user edge {edge:?} has an absent endpoint"));
                (problem, 0)
            }
        }
    };
    // In parallel; fold and reduce keep the problems in edge order.
    let (edge_problems, n_contains, n_embedded_as) = edges
        .par_iter()
        .fold(
            || (Vec::new(), 0usize, 0usize),
            |(mut p, c, e), edge| {
                let (problem, implied) = check_edge(edge);
                p.extend(problem);
                (
                    p,
                    c + usize::from(implied == 1),
                    e + usize::from(implied == 2),
                )
            },
        )
        .reduce(
            || (Vec::new(), 0, 0),
            |(mut p, c, e), (q, c2, e2)| {
                p.extend(q);
                (p, c + c2, e + e2)
            },
        );
    problems.extend(edge_problems);
    // Edges are unique, so as many implied edges as rows means none is missing.
    let has = |edge: &Edge| edges.binary_search(edge).is_ok();
    if n_contains != chunks.len() {
        for c in chunks {
            let e = Edge::new(c.document_id, c.id, EdgeKind::CONTAINS);
            if !has(&e) {
                problems.push(format!("missing system edge {e:?}"));
            }
        }
    }
    if n_embedded_as != embeddings.len() {
        for emb in embeddings {
            let e = Edge::new(emb.chunk_id, emb.id, EdgeKind::EMBEDDED_AS);
            if !has(&e) {
                problems.push(format!("missing system edge {e:?}"));
            }
        }
    }
    problems
}
