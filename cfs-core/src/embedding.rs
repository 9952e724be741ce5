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

    /// The leaf of the embedding `(id, chunk_id, model_hash, vector)` from the canonical
    /// encoding of its vector ([`encode_vector`]), without building the entity: equal to
    /// [`Embedding::leaf_hash`] of that embedding. For stores that keep each distinct
    /// vector once.
    pub fn leaf_of_parts(
        id: &EmbeddingId,
        chunk_id: &ChunkId,
        model_hash: &ModelHash,
        encoded_vector: &[u8],
    ) -> LeafHash {
        hash::leaf_embedding_parts(&[&id.0, &chunk_id.0, &model_hash.0, encoded_vector])
    }
}

/// The canonical encoding of a vector, as it appears at the end of an embedding's
/// encoding: `u32 LE` count, then each component as `i16 LE`.
pub fn encode_vector(vector: &[i16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 2 * vector.len());
    out.extend((vector.len() as u32).to_le_bytes());
    for x in vector {
        out.extend(x.to_le_bytes());
    }
    out
}

/// Strictly decodes [`encode_vector`]'s output: the count must match the bytes exactly,
/// and the vector must be non-empty and within [`MAX_DIMENSION`].
pub fn decode_vector(bytes: &[u8]) -> Result<Vec<i16>, CoreError> {
    let malformed = |reason: &str| CoreError::Malformed {
        kind: "vector",
        reason: reason.to_owned(),
    };
    let (count, body) = bytes
        .split_first_chunk::<4>()
        .ok_or_else(|| malformed("shorter than its count"))?;
    let n = u32::from_le_bytes(*count) as usize;
    if body.len() != 2 * n {
        return Err(malformed("count does not match its length"));
    }
    if n == 0 {
        return Err(CoreError::invalid("vector", "empty vector"));
    }
    check_len("vector", "vector", n, MAX_DIMENSION)?;
    Ok(body
        .chunks_exact(2)
        .map(|p| i16::from_le_bytes([p[0], p[1]]))
        .collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(vector: Vec<i16>) -> Embedding {
        let chunk_id = ChunkId([7; 16]);
        let model_hash = ModelHash([9; 32]);
        Embedding::new(chunk_id, model_hash, vector).unwrap()
    }

    #[test]
    fn vector_encoding_is_the_tail_of_the_embedding_encoding() {
        for vector in [
            vec![1],
            vec![-32768, 0, 32767],
            (0..300).map(|i| i * 97).collect(),
        ] {
            let e = sample(vector.clone());
            let encoded = encode_vector(&vector);
            assert!(e.encode().ends_with(&encoded));
            assert_eq!(e.encode().len(), 16 + 16 + 32 + encoded.len());
            assert_eq!(decode_vector(&encoded).unwrap(), vector);
            assert_eq!(
                Embedding::leaf_of_parts(&e.id, &e.chunk_id, &e.model_hash, &encoded),
                e.leaf_hash()
            );
        }
    }

    #[test]
    fn vector_decoding_is_strict() {
        let good = encode_vector(&[1, 2, 3]);
        assert!(decode_vector(&good[..good.len() - 1]).is_err());
        assert!(decode_vector(&[good.as_slice(), &[0, 0]].concat()).is_err());
        assert!(decode_vector(&good[..3]).is_err());
        assert!(decode_vector(&encode_vector(&[])).is_err());
        let mut wrong_count = good.clone();
        wrong_count[0] = 4;
        assert!(decode_vector(&wrong_count).is_err());
    }
}
