//! The five committed tables, the [`Entity`] trait that ties each kind to its table, and
//! the state root over the five table roots.

use std::fmt::Debug;

use borsh::{BorshDeserialize, BorshSerialize};

use crate::bucket::Bucket;
use crate::chunk::Chunk;
use crate::document::Document;
use crate::edge::Edge;
use crate::embedding::Embedding;
use crate::encode::Canonical;
use crate::hash::{self, LeafHash, MerkleRoot, StateRoot};
use crate::id::{ChunkId, DocumentId, EmbeddingId, PathId};
use crate::path::PathEntry;

/// A committed table. The order here is the order of the roots in the state root.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, BorshSerialize, BorshDeserialize,
)]
pub enum Table {
    /// 0: path entries, keyed by path id.
    Paths,
    /// 1: documents, keyed by document id.
    Documents,
    /// 2: chunks, keyed by chunk id.
    Chunks,
    /// 3: embeddings, keyed by embedding id.
    Embeddings,
    /// 4: edges, keyed by (source, target, kind).
    Edges,
}

impl Table {
    /// All tables in state-root order.
    pub const ALL: [Table; 5] = [
        Table::Paths,
        Table::Documents,
        Table::Chunks,
        Table::Embeddings,
        Table::Edges,
    ];

    /// Lower-case plural name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Paths => "paths",
            Table::Documents => "documents",
            Table::Chunks => "chunks",
            Table::Embeddings => "embeddings",
            Table::Edges => "edges",
        }
    }
}

/// An entity stored in one of the committed tables.
pub trait Entity: Canonical + Clone + Send + Sync {
    /// Its table.
    const TABLE: Table;
    /// Its key; the byte order of [`Entity::key_bytes`] is the order of `Key`.
    type Key: Ord + Copy + Debug + Send + Sync;
    /// Its key.
    fn key(&self) -> Self::Key;
    /// The key's bytes, whose leading bits choose the bucket.
    fn key_bytes(key: &Self::Key) -> &[u8];
    /// Its Merkle leaf: `derive_key(LEAF_<table>, encode(self))`.
    fn leaf(&self) -> LeafHash {
        Self::leaf_of_encoding(&self.encode())
    }
    /// The Merkle leaf of the entity whose canonical encoding is `encoded`, for callers
    /// that hold the encoding already.
    fn leaf_of_encoding(encoded: &[u8]) -> LeafHash;
    /// [`Entity::leaf_of_encoding`] of many encodings, in order; the kinds a document
    /// has many of hash them side by side (`hash_many`).
    fn leaves_of_encodings(encoded: &[&[u8]]) -> Vec<LeafHash> {
        encoded.iter().map(|e| Self::leaf_of_encoding(e)).collect()
    }
    /// The bucket its key falls in.
    fn bucket_of(key: &Self::Key) -> Bucket {
        Bucket::of_key(Self::key_bytes(key))
    }
    /// The key its committed table keys its row by: its key's bytes, or for an edge the
    /// 34 bytes of source, target and kind ([`Edge::key`]), of which
    /// [`Entity::key_bytes`] (the source) choose only the bucket.
    fn row_key(&self) -> Vec<u8> {
        Self::key_bytes(&self.key()).to_vec()
    }
}

impl Entity for PathEntry {
    const TABLE: Table = Table::Paths;
    type Key = PathId;
    fn key(&self) -> PathId {
        self.id()
    }
    fn key_bytes(key: &PathId) -> &[u8] {
        &key.0
    }
    fn leaf_of_encoding(encoded: &[u8]) -> LeafHash {
        hash::leaf_path(encoded)
    }
}

impl Entity for Document {
    const TABLE: Table = Table::Documents;
    type Key = DocumentId;
    fn key(&self) -> DocumentId {
        self.id
    }
    fn key_bytes(key: &DocumentId) -> &[u8] {
        &key.0
    }
    fn leaf_of_encoding(encoded: &[u8]) -> LeafHash {
        hash::leaf_document(encoded)
    }
}

impl Entity for Chunk {
    const TABLE: Table = Table::Chunks;
    type Key = ChunkId;
    fn key(&self) -> ChunkId {
        self.id
    }
    fn key_bytes(key: &ChunkId) -> &[u8] {
        &key.0
    }
    fn leaf_of_encoding(encoded: &[u8]) -> LeafHash {
        hash::leaf_chunk(encoded)
    }
    fn leaves_of_encodings(encoded: &[&[u8]]) -> Vec<LeafHash> {
        hash::leaf_chunks(encoded)
    }
}

impl Entity for Embedding {
    const TABLE: Table = Table::Embeddings;
    type Key = EmbeddingId;
    fn key(&self) -> EmbeddingId {
        self.id
    }
    fn key_bytes(key: &EmbeddingId) -> &[u8] {
        &key.0
    }
    fn leaf_of_encoding(encoded: &[u8]) -> LeafHash {
        hash::leaf_embedding(encoded)
    }
}

impl Entity for Edge {
    const TABLE: Table = Table::Edges;
    type Key = Edge;
    fn key(&self) -> Edge {
        *self
    }
    /// The bucket of an edge is chosen by its source id; edges sort by the full key.
    fn key_bytes(key: &Edge) -> &[u8] {
        &key.source.0
    }
    fn leaf_of_encoding(encoded: &[u8]) -> LeafHash {
        hash::leaf_edge(encoded)
    }
    fn leaves_of_encodings(encoded: &[&[u8]]) -> Vec<LeafHash> {
        hash::leaf_edges(encoded)
    }
    fn row_key(&self) -> Vec<u8> {
        Edge::key(self).to_vec()
    }
}

/// The roots of the five tables. Field order is table order and encoding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, BorshSerialize, BorshDeserialize)]
pub struct TableRoots {
    /// Root of the paths table.
    pub paths: MerkleRoot,
    /// Root of the documents table.
    pub documents: MerkleRoot,
    /// Root of the chunks table.
    pub chunks: MerkleRoot,
    /// Root of the embeddings table.
    pub embeddings: MerkleRoot,
    /// Root of the edges table.
    pub edges: MerkleRoot,
}

impl TableRoots {
    /// The roots of five empty tables.
    pub fn empty() -> Self {
        let root = crate::bucket::empty_table_root();
        Self {
            paths: root,
            documents: root,
            chunks: root,
            embeddings: root,
            edges: root,
        }
    }

    /// The root of `table`.
    pub fn get(&self, table: Table) -> MerkleRoot {
        match table {
            Table::Paths => self.paths,
            Table::Documents => self.documents,
            Table::Chunks => self.chunks,
            Table::Embeddings => self.embeddings,
            Table::Edges => self.edges,
        }
    }

    /// Sets the root of `table`.
    pub fn set(&mut self, table: Table, root: MerkleRoot) {
        match table {
            Table::Paths => self.paths = root,
            Table::Documents => self.documents = root,
            Table::Chunks => self.chunks = root,
            Table::Embeddings => self.embeddings = root,
            Table::Edges => self.edges = root,
        }
    }

    /// `derive_key(STATE_ROOT, paths || documents || chunks || embeddings || edges)`.
    pub fn state_root(&self) -> StateRoot {
        hash::state(&[
            &self.paths.0,
            &self.documents.0,
            &self.chunks.0,
            &self.embeddings.0,
            &self.edges.0,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind's leaves of many encodings are its leaves one at a time, for batches
    /// below and above the size hashed side by side and encodings of up to 3 KiB.
    #[test]
    fn leaves_of_many_encodings_are_each_ones_leaf() {
        fn check<E: Entity>() {
            for count in [0, 1, 5, 6, 17, 40] {
                let encodings: Vec<Vec<u8>> = (0..count)
                    .map(|i: usize| (0..(i * 97) % 3100).map(|j| (i + j) as u8).collect())
                    .collect();
                let refs: Vec<&[u8]> = encodings.iter().map(Vec::as_slice).collect();
                let one_by_one: Vec<LeafHash> =
                    refs.iter().map(|e| E::leaf_of_encoding(e)).collect();
                assert_eq!(E::leaves_of_encodings(&refs), one_by_one, "{count}");
            }
        }
        check::<Edge>();
        check::<Chunk>();
        check::<PathEntry>();
    }
}
