//! Each distinct vector is stored once; embedding rows name theirs by hash.
//!
//! Source trees repeat themselves: in the cargo registry's Rust sources two thirds of the
//! chunks share their text with another chunk, and so their vector. The committed state
//! still has one embedding per chunk (docs/spec.md); only the storage is normalised. An
//! embedding row holds `chunk id || model hash || vector hash` and the `vectors` table
//! holds `vector hash -> encoded vector`, where the encoding is the vector's own part of
//! the embedding's canonical encoding. The canonical encoding of a stored embedding is
//! therefore `key || row[..48] || vectors[row[48..]]`, and its leaf is hashed from those
//! parts without copying them together.

use cfs_core::{ChunkId, Embedding, EmbeddingId, LeafHash, ModelHash, encode_vector};
use redb::ReadableTable;

use crate::error::{Result, StoreError};

/// BLAKE3 of a vector's encoding: its key in the `vectors` table.
pub(crate) type VectorHash = [u8; 32];

/// Bytes of a stored embedding row.
pub(crate) const STORED_LEN: usize = 16 + 32 + 32;

/// The hash of an encoded vector: its name in the store and in replicas.
pub fn vector_hash(encoded: &[u8]) -> [u8; 32] {
    *blake3::hash(encoded).as_bytes()
}

/// An embedding row as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StoredEmbedding {
    pub chunk_id: ChunkId,
    pub model_hash: ModelHash,
    pub vector: VectorHash,
}

impl StoredEmbedding {
    pub(crate) fn encode(&self) -> [u8; STORED_LEN] {
        let mut out = [0u8; STORED_LEN];
        out[..16].copy_from_slice(&self.chunk_id.0);
        out[16..48].copy_from_slice(&self.model_hash.0);
        out[48..].copy_from_slice(&self.vector);
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let bytes: &[u8; STORED_LEN] = bytes.try_into().map_err(|_| {
            StoreError::Corrupted(format!(
                "embedding row of {} bytes, expected {STORED_LEN}",
                bytes.len()
            ))
        })?;
        let (chunk, rest) = bytes.split_at(16);
        let (model, vector) = rest.split_at(32);
        Ok(Self {
            chunk_id: ChunkId(chunk.try_into().expect("16 bytes")),
            model_hash: ModelHash(model.try_into().expect("32 bytes")),
            vector: vector.try_into().expect("32 bytes"),
        })
    }

    /// The id this row must be stored under.
    pub(crate) fn id(&self) -> EmbeddingId {
        EmbeddingId::derive(&self.chunk_id, &self.model_hash)
    }

    /// The leaf of the embedding this row and its encoded vector make.
    pub(crate) fn leaf(&self, encoded_vector: &[u8]) -> LeafHash {
        Embedding::leaf_of_parts(&self.id(), &self.chunk_id, &self.model_hash, encoded_vector)
    }
}

/// An embedding split into its stored row and its encoded vector.
pub(crate) fn split(embedding: &Embedding) -> (StoredEmbedding, Vec<u8>) {
    let encoded = encode_vector(&embedding.vector);
    let stored = StoredEmbedding {
        chunk_id: embedding.chunk_id,
        model_hash: embedding.model_hash,
        vector: vector_hash(&encoded),
    };
    (stored, encoded)
}

/// The vector stored under `hash`, decoded strictly.
pub(crate) fn get_vector<T: ReadableTable<&'static [u8], &'static [u8]>>(
    vectors: &T,
    hash: &VectorHash,
) -> Result<Option<Vec<i16>>> {
    match vectors.get(&hash[..])? {
        Some(v) => Ok(Some(cfs_core::decode_vector(v.value())?)),
        None => Ok(None),
    }
}

/// The embedding stored under `key` as `row`, joined with its vector and validated.
pub(crate) fn join<T: ReadableTable<&'static [u8], &'static [u8]>>(
    vectors: &T,
    key: &[u8],
    row: &[u8],
) -> Result<Embedding> {
    let stored = StoredEmbedding::decode(row)?;
    let vector = get_vector(vectors, &stored.vector)?.ok_or_else(|| {
        StoreError::Corrupted(format!(
            "embedding {} names the absent vector {}",
            cfs_core::hex_encode(key),
            cfs_core::hex_encode(&stored.vector)
        ))
    })?;
    let embedding = Embedding::new(stored.chunk_id, stored.model_hash, vector)?;
    if embedding.id.0[..] != *key {
        return Err(StoreError::Corrupted(format!(
            "embedding row {} is stored under another key than its content gives",
            cfs_core::hex_encode(key)
        )));
    }
    Ok(embedding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfs_core::Canonical;

    #[test]
    fn a_stored_row_and_its_vector_give_the_embedding_and_its_leaf() {
        let e = Embedding::new(ChunkId([3; 16]), ModelHash([5; 32]), vec![1, -2, 300]).unwrap();
        let (stored, encoded) = split(&e);
        assert_eq!(StoredEmbedding::decode(&stored.encode()).unwrap(), stored);
        assert_eq!(stored.id(), e.id);
        assert_eq!(stored.leaf(&encoded), e.leaf_hash());
        let canonical = [&e.id.0[..], &stored.encode()[..48], &encoded].concat();
        assert_eq!(canonical, e.encode());
        assert!(StoredEmbedding::decode(&stored.encode()[1..]).is_err());
    }
}
