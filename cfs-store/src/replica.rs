//! What replication (`cfs-remote`) reads from a committed state and writes into one: a
//! table's bucket roots, a bucket's rows as their keys and payloads, the vectors the
//! embeddings name, and a commit that lands only on an expected root. A payload is a
//! row's canonical encoding, except an embedding's, which is `chunk id (16) || model
//! hash (32) || vector hash (32)` with the vector apart (docs/format.md, "Remotes").

use std::collections::BTreeSet;

use cfs_core::{MerkleRoot, Table};
use redb::ReadableTable;

use crate::error::{Result, StoreError};
use crate::read::ReadTxn;
use crate::tables;
use crate::vectors::{STORED_LEN, StoredEmbedding};

/// A committed row as replication carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowPayload {
    /// The row's key.
    pub key: Vec<u8>,
    /// Its canonical encoding (an embedding's: with the vector's hash for the vector).
    pub payload: Vec<u8>,
    /// Its leaf hash, as committed.
    pub leaf: [u8; 32],
}

/// A committed row's key and leaf hash, without its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowLeaf {
    /// The row's key.
    pub key: Vec<u8>,
    /// Its leaf hash, as committed.
    pub leaf: [u8; 32],
}

/// Bytes of an embedding's payload: chunk id, model hash, vector hash.
pub const EMBEDDING_PAYLOAD_LEN: usize = STORED_LEN;

impl ReadTxn {
    /// The root of each of `table`'s 1,024 buckets, in bucket order (an empty bucket has
    /// the empty root).
    pub fn bucket_roots(&self, table: Table) -> Result<Vec<MerkleRoot>> {
        tables::read_bucket_roots(&self.raw().open_table(tables::BUCKET_ROOTS)?, table)
    }

    /// The rows of bucket `bucket` of `table`, in key order.
    pub fn bucket_payloads(&self, table: Table, bucket: u16) -> Result<Vec<RowPayload>> {
        let t = self.raw().open_table(tables::committed(table))?;
        let mut out = Vec::new();
        for row in tables::bucket_rows(&t, bucket)? {
            let (key, value) = row?;
            out.push(RowPayload {
                key: key.value().to_vec(),
                payload: self.encoding(table, value.value())?.into_owned(),
                leaf: *tables::split_row(value.value())?.0,
            });
        }
        Ok(out)
    }

    /// The keys and leaves of bucket `bucket` of `table`, in key order: what a row
    /// holds without reading its payload (a chunk's lies in the chunk log).
    pub fn bucket_leaves(&self, table: Table, bucket: u16) -> Result<Vec<RowLeaf>> {
        let t = self.raw().open_table(tables::committed(table))?;
        let mut out = Vec::new();
        for row in tables::bucket_rows(&t, bucket)? {
            let (key, value) = row?;
            out.push(RowLeaf {
                key: key.value().to_vec(),
                leaf: *tables::split_row(value.value())?.0,
            });
        }
        Ok(out)
    }

    /// The hashes of the vectors the state's embeddings name, each once, in order.
    pub fn vector_hashes(&self) -> Result<BTreeSet<[u8; 32]>> {
        let t = self.raw().open_table(tables::EMBEDDINGS)?;
        let mut out = BTreeSet::new();
        for row in t.iter()? {
            let (_, value) = row?;
            out.insert(StoredEmbedding::decode(tables::split_row(value.value())?.1)?.vector);
        }
        Ok(out)
    }

    /// The encoded vector of hash `hash` (the tail of an embedding's canonical
    /// encoding), if the store holds it.
    pub fn vector_encoding(&self, hash: &[u8; 32]) -> Result<Option<Vec<u8>>> {
        let t = self.raw().open_table(tables::VECTORS)?;
        let encoding = t.get(&hash[..])?.map(|v| v.value().to_vec());
        match encoding {
            Some(e) if crate::vectors::vector_hash(&e) != *hash => {
                Err(StoreError::Corrupted(format!(
                    "vector {} does not hash to its key",
                    cfs_core::hex_encode(hash)
                )))
            }
            e => Ok(e),
        }
    }
}
