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
use crate::chunk::{Chunk, hierarchical_hash, hierarchical_hash_of_leaves};
use crate::diff::StateDiff;
use crate::document::Document;
use crate::edge::{Edge, EdgeKind, EntityId};
use crate::embedding::Embedding;
use crate::encode::Canonical;
use crate::error::CoreError;
use crate::hash::{HASH_LEN, MerkleRoot, StateRoot};
use crate::id::{ChunkId, DocumentId, EmbeddingId, PathId};
use crate::merkle::{merkle_path, merkle_root};
use crate::path::PathEntry;
use crate::proof::{ChunkProof, InclusionProof};
use crate::rules::{Rows, check_rows};
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
        check_rows(&Rows {
            paths: &paths,
            documents: &documents,
            chunks: &chunks,
            embeddings: &embeddings,
            edges: &edges,
            chunk_leaves: None,
        })
    }
}
