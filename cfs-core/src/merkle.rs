//! The Merkle tree of cfs: rs_merkle's tree shape with BLAKE3 and domain separation.
//!
//! Leaves are hashes that the caller has already domain-separated (entity leaf hashes,
//! bucket roots). Each layer pairs neighbours left to right into
//! `derive_key(NODE, left || right)`; the last node of an odd layer is promoted to the
//! next layer unchanged. One leaf is its own root; no leaves give the `EMPTY` root. A
//! path (proof) lists the siblings from the leaf upwards, skipping promoted levels.

use borsh::{BorshDeserialize, BorshSerialize};
use rs_merkle::{Hasher, MerkleTree};

use crate::error::ProofError;
use crate::hash::{self, HASH_LEN, MerkleRoot};

/// rs_merkle hasher whose inner nodes are `derive_key(NODE, left || right)`.
#[derive(Clone, Debug)]
struct NodeHasher;

impl Hasher for NodeHasher {
    type Hash = [u8; HASH_LEN];

    fn hash(data: &[u8]) -> Self::Hash {
        // rs_merkle calls this only through `concat_and_hash` below, which never does;
        // hashing a 64-byte concatenation here keeps the two consistent regardless.
        let mut left = [0u8; HASH_LEN];
        let mut right = [0u8; HASH_LEN];
        if data.len() == 2 * HASH_LEN {
            left.copy_from_slice(&data[..HASH_LEN]);
            right.copy_from_slice(&data[HASH_LEN..]);
            return hash::node(&left, &right);
        }
        *blake3::Hasher::new_derive_key(hash::context::NODE)
            .update(data)
            .finalize()
            .as_bytes()
    }

    fn concat_and_hash(left: &Self::Hash, right: Option<&Self::Hash>) -> Self::Hash {
        match right {
            Some(right) => hash::node(left, right),
            None => *left,
        }
    }
}

/// The root over `leaves` in the given order.
pub fn merkle_root(leaves: &[[u8; HASH_LEN]]) -> MerkleRoot {
    match leaves {
        [] => MerkleRoot::empty(),
        [only] => MerkleRoot(*only),
        _ => MerkleRoot(
            MerkleTree::<NodeHasher>::from_leaves(leaves)
                .root()
                .unwrap_or_else(hash::empty),
        ),
    }
}

/// Where a leaf sits in a tree and the siblings that lead from it to the root.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct MerklePath {
    /// 0-based index of the leaf.
    pub index: u32,
    /// Number of leaves in the tree.
    pub count: u32,
    /// Sibling hashes from the leaf's layer upwards, promoted levels skipped.
    pub siblings: Vec<MerkleRoot>,
}

/// The path of leaf `index` in the tree over `leaves`; `None` if out of range.
pub fn merkle_path(leaves: &[[u8; HASH_LEN]], index: usize) -> Option<MerklePath> {
    if index >= leaves.len() {
        return None;
    }
    let siblings = if leaves.len() == 1 {
        Vec::new()
    } else {
        MerkleTree::<NodeHasher>::from_leaves(leaves)
            .proof(&[index])
            .proof_hashes()
            .iter()
            .map(|h| MerkleRoot(*h))
            .collect()
    };
    Some(MerklePath {
        index: u32::try_from(index).ok()?,
        count: u32::try_from(leaves.len()).ok()?,
        siblings,
    })
}

/// Recomputes the root from a leaf and its path, rejecting a path whose index, count or
/// number of siblings does not fit.
pub fn root_from_path(leaf: &[u8; HASH_LEN], path: &MerklePath) -> Result<MerkleRoot, ProofError> {
    if path.index >= path.count {
        return Err(ProofError::MalformedPath(format!(
            "index {} not below count {}",
            path.index, path.count
        )));
    }
    let mut node = *leaf;
    let mut index = path.index;
    let mut width = path.count;
    let mut siblings = path.siblings.iter();
    while width > 1 {
        let sibling_needed = index % 2 == 1 || index + 1 < width;
        if sibling_needed {
            let sibling = siblings.next().ok_or_else(|| {
                ProofError::MalformedPath(format!("too few siblings for count {}", path.count))
            })?;
            node = if index % 2 == 1 {
                hash::node(&sibling.0, &node)
            } else {
                hash::node(&node, &sibling.0)
            };
        }
        index /= 2;
        width = width.div_ceil(2);
    }
    if siblings.next().is_some() {
        return Err(ProofError::MalformedPath(format!(
            "too many siblings for count {}",
            path.count
        )));
    }
    Ok(MerkleRoot(node))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(n: u8) -> Vec<[u8; 32]> {
        (0..n).map(|i| [i; 32]).collect()
    }

    #[test]
    fn small_trees_by_hand() {
        let l = leaves(3);
        assert_eq!(merkle_root(&[]), MerkleRoot::empty());
        assert_eq!(merkle_root(&l[..1]), MerkleRoot(l[0]));
        let ab = hash::node(&l[0], &l[1]);
        assert_eq!(merkle_root(&l[..2]), MerkleRoot(ab));
        // Odd leaf promoted, not duplicated.
        assert_eq!(merkle_root(&l), MerkleRoot(hash::node(&ab, &l[2])));
    }

    #[test]
    fn every_path_verifies_and_matches_root() {
        for n in 1..=33u8 {
            let l = leaves(n);
            let root = merkle_root(&l);
            for i in 0..usize::from(n) {
                let path = merkle_path(&l, i).unwrap();
                assert_eq!(root_from_path(&l[i], &path).unwrap(), root, "n={n} i={i}");
                let mut extra = path.clone();
                extra.siblings.push(MerkleRoot([0; 32]));
                assert!(root_from_path(&l[i], &extra).is_err());
                if !path.siblings.is_empty() {
                    let mut short = path.clone();
                    short.siblings.pop();
                    assert!(root_from_path(&l[i], &short).is_err());
                }
            }
            assert!(merkle_path(&l, usize::from(n)).is_none());
        }
    }
}
