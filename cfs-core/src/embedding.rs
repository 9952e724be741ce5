//! Embeddings: integer vectors of chunk text, tagged with the model that made them.
//!
//! Vectors are `i16` so that they hash, compare and search bit-exactly on every
//! platform. Vectors of two models are never compared: the model hash says which is which.

use borsh::{BorshDeserialize, BorshSerialize};

use crate::encode::{Canonical, check_len};
use crate::error::CoreError;
use crate::hash::{self, LeafHash, ModelHash};
use crate::id::{ChunkId, EmbeddingId};

/// Largest dimension accepted.
pub const MAX_DIMENSION: usize = 1 << 16;

/// An embedding. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Embedding {
    /// `EmbeddingId::derive(chunk_id, model_hash)`.
    pub id: EmbeddingId,
    /// The chunk whose text was embedded.
    pub chunk_id: ChunkId,
    /// The model that made the vector.
    pub model_hash: ModelHash,
    /// The quantized vector; its length is the model's dimension.
    pub vector: Vec<i16>,
}

impl Embedding {
    /// Builds an embedding, deriving its id.
    pub fn new(
        chunk_id: ChunkId,
        model_hash: ModelHash,
        vector: Vec<i16>,
    ) -> Result<Self, CoreError> {
        let embedding = Self {
            id: EmbeddingId::derive(&chunk_id, &model_hash),
            chunk_id,
            model_hash,
            vector,
        };
        embedding.validate()?;
        Ok(embedding)
    }

    /// The Merkle leaf of this embedding.
    pub fn leaf_hash(&self) -> LeafHash {
        hash::leaf_embedding(&self.encode())
    }
}

impl Canonical for Embedding {
    const KIND: &'static str = "embedding";

    fn validate(&self) -> Result<(), CoreError> {
        if self.vector.is_empty() {
            return Err(CoreError::invalid(Self::KIND, "empty vector"));
        }
        check_len(Self::KIND, "vector", self.vector.len(), MAX_DIMENSION)?;
        let expected = EmbeddingId::derive(&self.chunk_id, &self.model_hash);
        if self.id != expected {
            return Err(CoreError::invalid(
                Self::KIND,
                format!("id {} is not the derived id {expected}", self.id),
            ));
        }
        Ok(())
    }
}
