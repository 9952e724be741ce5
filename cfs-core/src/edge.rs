//! Edges: typed links between entities, unique and sorted by (source, target, kind).
//!
//! cfs writes three kinds itself (document contains chunk, chunk is embedded as
//! embedding, chunk continues in the next window of the same symbol); kinds from
//! [`EdgeKind::USER_MIN`] up are free for programs that link cfs.

use std::fmt;

use borsh::{BorshDeserialize, BorshSerialize};

use crate::encode::Canonical;
use crate::error::CoreError;
use crate::hash::{self, LeafHash};
use crate::id::{ChunkId, DocumentId, EmbeddingId};

/// The id of any entity, as an edge endpoint.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, BorshSerialize, BorshDeserialize)]
pub struct EntityId(pub [u8; 16]);

impl fmt::Debug for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EntityId({})",
            uuid::Uuid::from_bytes(self.0).hyphenated()
        )
    }
}

impl From<DocumentId> for EntityId {
    fn from(id: DocumentId) -> Self {
        Self(id.0)
    }
}
impl From<ChunkId> for EntityId {
    fn from(id: ChunkId) -> Self {
        Self(id.0)
    }
}
impl From<EmbeddingId> for EntityId {
    fn from(id: EmbeddingId) -> Self {
        Self(id.0)
    }
}

/// The kind of an edge, a `u16`.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, BorshSerialize, BorshDeserialize,
)]
pub struct EdgeKind(pub u16);

impl EdgeKind {
    /// Document -> chunk: the document contains the chunk.
    pub const CONTAINS: Self = Self(1);
    /// Chunk -> embedding: the chunk's text is embedded as the embedding.
    pub const EMBEDDED_AS: Self = Self(2);
    /// Chunk -> chunk: the next window of the same split symbol.
    pub const NEXT_WINDOW: Self = Self(3);
    /// The first kind free for users; `USER_MIN..=u16::MAX` are user kinds.
    pub const USER_MIN: u16 = 0x8000;

    /// True for the kinds cfs itself writes and checks.
    pub fn is_system(self) -> bool {
        matches!(self, Self::CONTAINS | Self::EMBEDDED_AS | Self::NEXT_WINDOW)
    }

    /// Short name: `contains`, `embedded_as`, `next_window`, or `user:N`.
    pub fn name(self) -> String {
        match self {
            Self::CONTAINS => "contains".into(),
            Self::EMBEDDED_AS => "embedded_as".into(),
            Self::NEXT_WINDOW => "next_window".into(),
            Self(n) => format!("user:{n}"),
        }
    }
}

/// An edge. Field order is both the encoding order and the sort order.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, BorshSerialize, BorshDeserialize,
)]
pub struct Edge {
    /// Where the edge starts.
    pub source: EntityId,
    /// Where it ends.
    pub target: EntityId,
    /// What it means.
    pub kind: EdgeKind,
}

impl Edge {
    /// An edge from `source` to `target` of `kind`.
    pub fn new(source: impl Into<EntityId>, target: impl Into<EntityId>, kind: EdgeKind) -> Self {
        Self {
            source: source.into(),
            target: target.into(),
            kind,
        }
    }

    /// The 34-byte table key: source, target, kind as big-endian `u16`, so that the byte
    /// order of keys is the order of edges.
    pub fn key(&self) -> [u8; 34] {
        let mut key = [0u8; 34];
        key[..16].copy_from_slice(&self.source.0);
        key[16..32].copy_from_slice(&self.target.0);
        key[32..].copy_from_slice(&self.kind.0.to_be_bytes());
        key
    }

    /// The Merkle leaf of this edge.
    pub fn leaf_hash(&self) -> LeafHash {
        hash::leaf_edge(&self.encode())
    }
}

impl Canonical for Edge {
    const KIND: &'static str = "edge";

    fn validate(&self) -> Result<(), CoreError> {
        if !self.kind.is_system() && self.kind.0 < EdgeKind::USER_MIN {
            return Err(CoreError::invalid(
                Self::KIND,
                format!("kind {} is reserved", self.kind.0),
            ));
        }
        if self.source == self.target {
            return Err(CoreError::invalid(Self::KIND, "source equals target"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_edge_order() {
        let mut edges = vec![
            Edge::new(DocumentId([2; 16]), ChunkId([1; 16]), EdgeKind::CONTAINS),
            Edge::new(DocumentId([1; 16]), ChunkId([9; 16]), EdgeKind(0x8001)),
            Edge::new(DocumentId([1; 16]), ChunkId([9; 16]), EdgeKind(0x8000)),
            Edge::new(DocumentId([1; 16]), ChunkId([3; 16]), EdgeKind(0xffff)),
        ];
        let mut by_key = edges.clone();
        edges.sort();
        by_key.sort_by_key(Edge::key);
        assert_eq!(edges, by_key);
    }

    #[test]
    fn reserved_kinds_are_invalid() {
        let e = Edge::new(DocumentId([2; 16]), ChunkId([1; 16]), EdgeKind(4));
        assert!(matches!(
            Edge::decode(&e.encode()),
            Err(CoreError::Invalid { .. })
        ));
        let self_loop = Edge::new(ChunkId([1; 16]), ChunkId([1; 16]), EdgeKind::NEXT_WINDOW);
        assert!(self_loop.validate().is_err());
    }
}
