//! The state rules (`docs/spec.md` section 10) checked over sorted rows, as a store's
//! scan gives them: what `CanonicalState::check_integrity` and the store's `verify`
//! report.

use rayon::prelude::*;

use crate::chunk::{Chunk, ChunkKind};
use crate::document::Document;
use crate::edge::{Edge, EdgeKind, EntityId};
use crate::embedding::Embedding;
use crate::id::{ChunkId, DocumentId, EmbeddingId};
use crate::lookup::PrefixIndex;
use crate::merkle::merkle_root;
use crate::path::PathEntry;

/// The rows of a state, each table in the order of its keys: `documents`, `chunks` and
/// `embeddings` sorted by id, `edges` by key.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a> {
    pub paths: &'a [PathEntry],
    pub documents: &'a [Document],
    pub chunks: &'a [Chunk],
    pub embeddings: &'a [Embedding],
    pub edges: &'a [Edge],
    /// The chunks' leaf hashes in `chunks` order, when known (a store keeps them);
    /// otherwise they are computed.
    pub chunk_leaves: Option<&'a [[u8; 32]]>,
}

/// Every broken invariant of a set of rows, described; empty when they are sound.
///
/// Checks: every path names a present document and every document has a path; every
/// chunk's document is present, a document's chunks are exactly sequences
/// `0..n_chunks` and match its hierarchical hash; every embedding's chunk is present;
/// system edges are exactly the `contains` and `embedded_as` edges the rows imply,
/// `next_window` edges link consecutive windows of one symbol, user edges link present
/// entities. Works on sorted slices (lookups by prefix, per-document and per-edge work in
/// parallel), so a store can check millions of rows.
pub fn check_rows(rows: &Rows<'_>) -> Vec<String> {
    let found = Found::new(rows);
    let mut problems = absent_documents_of_paths(rows, &found);
    let by_document = chunks_by_document(rows);
    problems.extend(orphan_chunks(&by_document, &found));
    problems.extend(document_problems(rows, &by_document));
    problems.extend(orphan_embeddings(rows, &found));
    problems.extend(edge_problems(rows, &found));
    problems
}

/// Lookups of the rows by id, in about two memory accesses each (`lookup.rs`): the
/// edge rules make two per edge.
struct Found<'a> {
    rows: Rows<'a>,
    documents: PrefixIndex,
    chunks: PrefixIndex,
    embeddings: PrefixIndex,
}

impl<'a> Found<'a> {
    fn new(rows: &Rows<'a>) -> Self {
        Self {
            rows: *rows,
            documents: PrefixIndex::new(rows.documents, |d| &d.id.0[..]),
            chunks: PrefixIndex::new(rows.chunks, |c| &c.id.0[..]),
            embeddings: PrefixIndex::new(rows.embeddings, |e| &e.id.0[..]),
        }
    }

    fn document(&self, id: &DocumentId) -> Option<usize> {
        self.documents
            .find(self.rows.documents, |d| &d.id.0[..], &id.0)
    }

    fn chunk(&self, id: &ChunkId) -> Option<&'a Chunk> {
        let at = self.chunks.find(self.rows.chunks, |c| &c.id.0[..], &id.0)?;
        Some(&self.rows.chunks[at])
    }

    fn embedding(&self, id: &EmbeddingId) -> Option<&'a Embedding> {
        let at = self
            .embeddings
            .find(self.rows.embeddings, |e| &e.id.0[..], &id.0)?;
        Some(&self.rows.embeddings[at])
    }

    /// Whether any row has the id `id`.
    fn exists(&self, id: EntityId) -> bool {
        self.document(&DocumentId(id.0)).is_some()
            || self.chunk(&ChunkId(id.0)).is_some()
            || self.embedding(&EmbeddingId(id.0)).is_some()
    }

    /// The document and window of the chunk `id`, if it is a window of a symbol.
    fn window(&self, id: EntityId) -> Option<(DocumentId, crate::chunk::Window)> {
        let chunk = self.chunk(&ChunkId(id.0))?;
        match &chunk.kind {
            ChunkKind::Code {
                symbol: Some(s), ..
            } => Some((chunk.document_id, s.window?)),
            _ => None,
        }
    }
}

/// Paths that name an absent document.
fn absent_documents_of_paths(rows: &Rows<'_>, found: &Found<'_>) -> Vec<String> {
    rows.paths
        .iter()
        .filter(|entry| found.document(&entry.document_id).is_none())
        .map(|entry| {
            format!(
                "path {:?} names absent document {}",
                entry.path, entry.document_id
            )
        })
        .collect()
}

/// The chunks grouped by document in sequence order, each with its leaf hash (given,
/// or computed here).
fn chunks_by_document<'a>(rows: &Rows<'a>) -> Vec<(&'a Chunk, [u8; 32])> {
    let mut by_document: Vec<(&Chunk, [u8; 32])> = match rows.chunk_leaves {
        Some(leaves) if leaves.len() == rows.chunks.len() => {
            rows.chunks.iter().zip(leaves.iter().copied()).collect()
        }
        _ => rows
            .chunks
            .par_iter()
            .map(|c| (c, c.leaf_hash().0))
            .collect(),
    };
    by_document.par_sort_unstable_by_key(|(c, _)| (c.document_id, c.sequence));
    by_document
}

/// Chunks whose document is absent.
fn orphan_chunks(by_document: &[(&Chunk, [u8; 32])], found: &Found<'_>) -> Vec<String> {
    by_document
        .par_iter()
        .filter(|(chunk, _)| found.document(&chunk.document_id).is_none())
        .map(|(chunk, _)| {
            format!(
                "orphan chunk {} of absent document {}",
                chunk.id, chunk.document_id
            )
        })
        .collect()
}

/// Documents without a path, or whose chunks are not exactly sequences `0..n_chunks`
/// with the Merkle root of their leaves equal to the document's hierarchical hash.
fn document_problems(rows: &Rows<'_>, by_document: &[(&Chunk, [u8; 32])]) -> Vec<String> {
    let mut referenced: Vec<DocumentId> = rows.paths.iter().map(|p| p.document_id).collect();
    referenced.par_sort_unstable();
    referenced.dedup();
    rows.documents
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
            let leaves: Vec<[u8; 32]> = own.iter().map(|(_, l)| *l).collect();
            (merkle_root(&leaves) != document.hierarchical_hash)
                .then(|| format!("document {} hierarchical hash mismatch", document.id))
        })
        .collect()
}

/// Embeddings whose chunk is absent.
fn orphan_embeddings(rows: &Rows<'_>, found: &Found<'_>) -> Vec<String> {
    rows.embeddings
        .par_iter()
        .filter(|embedding| found.chunk(&embedding.chunk_id).is_none())
        .map(|embedding| {
            format!(
                "orphan embedding {} of absent chunk {}",
                embedding.id, embedding.chunk_id
            )
        })
        .collect()
}

/// The system edge a row implies, if an edge is one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Implied {
    No,
    Contains,
    EmbeddedAs,
}

/// What is wrong with one edge, if anything, and which implied system edge it is.
fn edge_rule(edge: &Edge, found: &Found<'_>) -> (Option<String>, Implied) {
    // A system edge is sound when the row it names implies it: a chunk of the source
    // document, an embedding of the source chunk.
    let system = match edge.kind {
        EdgeKind::CONTAINS => Some((
            found
                .chunk(&ChunkId(edge.target.0))
                .is_some_and(|c| c.document_id.0 == edge.source.0),
            Implied::Contains,
        )),
        EdgeKind::EMBEDDED_AS => Some((
            found
                .embedding(&EmbeddingId(edge.target.0))
                .is_some_and(|e| e.chunk_id.0 == edge.source.0),
            Implied::EmbeddedAs,
        )),
        _ => None,
    };
    let problem = match (system, edge.kind) {
        (Some((true, implied)), _) => return (None, implied),
        (Some((false, _)), _) => format!("system edge {edge:?} not implied by any row"),
        (None, EdgeKind::NEXT_WINDOW) if !consecutive_windows(edge, found) => {
            format!("next_window edge {edge:?} does not link consecutive windows")
        }
        (None, EdgeKind::NEXT_WINDOW) => return (None, Implied::No),
        (None, _) if !found.exists(edge.source) || !found.exists(edge.target) => {
            format!("user edge {edge:?} has an absent endpoint")
        }
        (None, _) => return (None, Implied::No),
    };
    (Some(problem), Implied::No)
}

/// Whether a `next_window` edge links two consecutive windows of one symbol.
fn consecutive_windows(edge: &Edge, found: &Found<'_>) -> bool {
    match (found.window(edge.source), found.window(edge.target)) {
        (Some((da, wa)), Some((db, wb))) => {
            da == db && wa.count == wb.count && wa.index + 1 == wb.index
        }
        _ => false,
    }
}

/// Every edge's problems, in edge order, then the system edges the rows imply that are
/// missing.
fn edge_problems(rows: &Rows<'_>, found: &Found<'_>) -> Vec<String> {
    // In parallel; fold and reduce keep the problems in edge order.
    let (mut problems, n_contains, n_embedded_as) = rows
        .edges
        .par_iter()
        .fold(
            || (Vec::new(), 0usize, 0usize),
            |(mut p, c, e), edge| {
                let (problem, implied) = edge_rule(edge, found);
                p.extend(problem);
                (
                    p,
                    c + usize::from(implied == Implied::Contains),
                    e + usize::from(implied == Implied::EmbeddedAs),
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
    // Edges are unique, so as many implied edges as rows means none is missing.
    let has = |edge: &Edge| rows.edges.binary_search(edge).is_ok();
    if n_contains != rows.chunks.len() {
        let implied = rows
            .chunks
            .iter()
            .map(|c| Edge::new(c.document_id, c.id, EdgeKind::CONTAINS));
        problems.extend(missing(implied, has));
    }
    if n_embedded_as != rows.embeddings.len() {
        let implied = rows
            .embeddings
            .iter()
            .map(|e| Edge::new(e.chunk_id, e.id, EdgeKind::EMBEDDED_AS));
        problems.extend(missing(implied, has));
    }
    problems
}

/// The `implied` system edges that `has` does not find, described.
fn missing(
    implied: impl Iterator<Item = Edge>,
    has: impl Fn(&Edge) -> bool,
) -> impl Iterator<Item = String> {
    implied
        .filter(move |e| !has(e))
        .map(|e| format!("missing system edge {e:?}"))
}
