//! Inclusion proofs: evidence, checkable offline, that an entity is in a committed state.
//!
//! A proof climbs two Merkle levels and one composition: from the entity's leaf to its
//! bucket root (the path within the bucket), from the bucket root to the table root (the
//! [`crate::BUCKET_BITS`] siblings in the top tree), and from the five table roots to the
//! state root. Whoever trusts a state root can check a proof with nothing else.

use borsh::{BorshDeserialize, BorshSerialize};

use crate::bucket::{Bucket, TopTree};
use crate::chunk::Chunk;
use crate::encode::Canonical;
use crate::error::{CoreError, ProofError};
use crate::hash::{LeafHash, MerkleRoot, StateRoot};
use crate::merkle::{MerklePath, root_from_path};
use crate::table::{Entity, Table, TableRoots};

/// The path from one leaf to a state root. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct InclusionProof {
    /// The table the leaf is in.
    pub table: Table,
    /// The bucket the leaf is in.
    pub bucket: u16,
    /// The leaf's path within its bucket, from the bottom up.
    pub path: MerklePath,
    /// Siblings of the bucket root in the table's top tree, from the bottom up.
    pub bucket_siblings: Vec<MerkleRoot>,
    /// The five table roots of the state.
    pub table_roots: TableRoots,
}

impl InclusionProof {
    /// Checks that `leaf`, whose key falls in `key_bucket`, is in the state `expected`.
    pub fn verify_leaf(
        &self,
        leaf: &LeafHash,
        key_bucket: Bucket,
        expected: &StateRoot,
    ) -> Result<(), ProofError> {
        if key_bucket.0 != self.bucket {
            return Err(ProofError::WrongBucket {
                claimed: self.bucket,
                actual: key_bucket.0,
            });
        }
        let bucket_root = root_from_path(&leaf.0, &self.path);
        let table_root =
            TopTree::root_from_siblings(Bucket(self.bucket), bucket_root, &self.bucket_siblings)?;
        let claimed = self.table_roots.get(self.table);
        if table_root != claimed {
            return Err(ProofError::TableRootMismatch {
                table: self.table.name(),
                computed: table_root.to_hex(),
                claimed: claimed.to_hex(),
            });
        }
        let computed = self.table_roots.state_root();
        if computed != *expected {
            return Err(ProofError::StateRootMismatch {
                computed: computed.to_hex(),
                expected: expected.to_hex(),
            });
        }
        Ok(())
    }
}

/// A chunk with the proof that it is in a state. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct ChunkProof {
    /// The proven chunk, whole.
    pub chunk: Chunk,
    /// Its inclusion proof.
    pub proof: InclusionProof,
}

impl ChunkProof {
    /// Checks the chunk itself (id, text hash, invariants) and its inclusion in the state
    /// `expected`.
    pub fn verify(&self, expected: &StateRoot) -> Result<(), ProofError> {
        self.chunk.validate().map_err(ProofError::Entity)?;
        if self.proof.table != Table::Chunks {
            return Err(ProofError::MalformedPath(format!(
                "a chunk proof must be in the chunks table, not {}",
                self.proof.table.name()
            )));
        }
        let bucket = Chunk::bucket_of(&self.chunk.id);
        self.proof
            .verify_leaf(&self.chunk.leaf_hash(), bucket, expected)
    }

    /// The state root this proof claims, to be compared with a trusted one.
    pub fn claimed_state_root(&self) -> StateRoot {
        self.proof.table_roots.state_root()
    }
}

impl Canonical for ChunkProof {
    const KIND: &'static str = "chunk proof";

    fn validate(&self) -> Result<(), CoreError> {
        self.chunk.validate()
    }
}
