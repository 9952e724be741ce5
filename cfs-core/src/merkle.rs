//! The Merkle tree of cfs: rs_merkle's tree shape with BLAKE3 and domain separation.
//!
//! Leaves are hashes that the caller has already domain-separated (entity leaf hashes,
//! bucket roots). Each layer pairs neighbours left to right into
//! `derive_key(NODE, left || right)`; the last node of an odd layer is promoted to the
//! next layer unchanged. One leaf is its own root; no leaves give the `EMPTY` root. A
//! path (proof) lists the siblings from the leaf upwards with their sides, skipping
//! promoted levels.

use borsh::{BorshDeserialize, BorshSerialize};
use rs_merkle::{Hasher, MerkleTree};

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

/// The root over `leaves` in the given order, a layer at a time (each layer's nodes
/// hashed together; the same tree as rs_merkle's, which the paths below come from).
pub fn merkle_root(leaves: &[[u8; HASH_LEN]]) -> MerkleRoot {
    match leaves {
        [] => MerkleRoot::empty(),
        [only] => MerkleRoot(*only),
        _ => {
            let mut layer = next_layer(leaves);
            while layer.len() > 1 {
                layer = next_layer(&layer);
            }
            MerkleRoot(layer[0])
        }
    }
}

/// The roots of many trees ([`merkle_root`] of each, in order), a layer of all of them
/// at a time: a table's buckets are a thousand trees of a few leaves, whose layers
/// alone would be hashed a node or two at a time (bench `small_batches`). Each tree's
/// layer is kept in place in one buffer, at the start of its leaves' span.
pub fn merkle_roots(trees: &[&[[u8; HASH_LEN]]]) -> Vec<MerkleRoot> {
    let mut nodes: Vec<[u8; HASH_LEN]> = trees.concat();
    // Each tree's span of `nodes`: where it starts and the width of its layer.
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(trees.len());
    let mut start = 0;
    for tree in trees {
        spans.push((start, tree.len()));
        start += tree.len();
    }
    loop {
        // Each layer's pairs, side by side: an even count from each keeps every pair
        // within its tree.
        let paired: Vec<[u8; HASH_LEN]> = spans
            .iter()
            .filter(|(_, width)| *width > 1)
            .flat_map(|&(start, width)| nodes[start..start + width / 2 * 2].iter().copied())
            .collect();
        if paired.is_empty() {
            break;
        }
        let mut up = hash::nodes(&paired).into_iter();
        for (start, width) in spans.iter_mut().filter(|(_, width)| *width > 1) {
            let pairs = *width / 2;
            for (slot, node) in nodes[*start..*start + pairs].iter_mut().zip(up.by_ref()) {
                *slot = node;
            }
            if *width % 2 == 1 {
                nodes[*start + pairs] = nodes[*start + *width - 1];
            }
            *width = pairs + *width % 2;
        }
    }
    spans
        .iter()
        .map(|&(start, width)| match width {
            0 => MerkleRoot::empty(),
            _ => MerkleRoot(nodes[start]),
        })
        .collect()
}

/// The layer above `layer`: each pair of neighbours hashed into their node, the last
/// of an odd layer promoted.
fn next_layer(layer: &[[u8; HASH_LEN]]) -> Vec<[u8; HASH_LEN]> {
    let mut next = hash::nodes(layer);
    if layer.len() % 2 == 1 {
        next.extend(layer.last());
    }
    next
}

/// One step up a Merkle path: a sibling and the side it is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct PathStep {
    /// True if the sibling is the left child (the node so far is the right one).
    pub sibling_is_left: bool,
    /// The sibling's hash.
    pub sibling: MerkleRoot,
}

/// The steps from a leaf up to the root, promoted levels skipped.
///
/// A path carries sides rather than a leaf index and count: those are not committed by
/// the root, so a path built on them could be altered and still verify, whereas every
/// bit of a path of steps is bound by the hashes.
#[derive(Clone, Debug, Default, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct MerklePath {
    /// Steps from the leaf's layer upwards.
    pub steps: Vec<PathStep>,
}

/// The sides of the siblings of leaf `index` among `count`, from the bottom up: for each
/// layer with a sibling, whether that sibling is on the left.
fn sibling_sides(mut index: usize, mut width: usize) -> Vec<bool> {
    let mut sides = Vec::new();
    while width > 1 {
        if index % 2 == 1 {
            sides.push(true);
        } else if index + 1 < width {
            sides.push(false);
        }
        index /= 2;
        width = width.div_ceil(2);
    }
    sides
}

/// The path of leaf `index` in the tree over `leaves`; `None` if out of range.
pub fn merkle_path(leaves: &[[u8; HASH_LEN]], index: usize) -> Option<MerklePath> {
    if index >= leaves.len() {
        return None;
    }
    if leaves.len() == 1 {
        return Some(MerklePath::default());
    }
    let tree = MerkleTree::<NodeHasher>::from_leaves(leaves);
    let proof = tree.proof(&[index]);
    let sides = sibling_sides(index, leaves.len());
    debug_assert_eq!(sides.len(), proof.proof_hashes().len());
    let steps = sides
        .into_iter()
        .zip(proof.proof_hashes())
        .map(|(sibling_is_left, h)| PathStep {
            sibling_is_left,
            sibling: MerkleRoot(*h),
        })
        .collect();
    Some(MerklePath { steps })
}

/// The path of position `index` in a complete tree of `2^depth` leaves, given its
/// siblings from the bottom up; the sides come from the bits of `index`.
pub(crate) fn complete_tree_path(index: usize, siblings: &[MerkleRoot]) -> MerklePath {
    let steps = siblings
        .iter()
        .enumerate()
        .map(|(level, sibling)| PathStep {
            sibling_is_left: (index >> level) & 1 == 1,
            sibling: *sibling,
        })
        .collect();
    MerklePath { steps }
}

/// The root that a leaf and its path lead to.
pub fn root_from_path(leaf: &[u8; HASH_LEN], path: &MerklePath) -> MerkleRoot {
    let node = path.steps.iter().fold(*leaf, |node, step| {
        if step.sibling_is_left {
            hash::node(&step.sibling.0, &node)
        } else {
            hash::node(&node, &step.sibling.0)
        }
    });
    MerkleRoot(node)
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
    fn layered_root_is_rs_merkle_root() {
        for n in 2..=200u8 {
            let l = leaves(n);
            let theirs = MerkleTree::<NodeHasher>::from_leaves(&l).root().unwrap();
            assert_eq!(merkle_root(&l), MerkleRoot(theirs), "n={n}");
        }
    }

    /// Many trees at once, of every size to 40 and none, in a scattered order: each
    /// root is the one tree's alone.
    #[test]
    fn roots_of_many_trees_are_each_trees_root() {
        let sizes: Vec<u8> = (0..=40).chain([1, 0, 7, 2, 33, 1]).rev().collect();
        let trees: Vec<Vec<[u8; 32]>> = sizes
            .iter()
            .enumerate()
            .map(|(t, &n)| (0..n).map(|i| [i ^ t as u8; 32]).collect())
            .collect();
        let borrowed: Vec<&[[u8; 32]]> = trees.iter().map(Vec::as_slice).collect();
        let roots = merkle_roots(&borrowed);
        assert_eq!(roots.len(), trees.len());
        for (tree, root) in trees.iter().zip(&roots) {
            assert_eq!(*root, merkle_root(tree), "{} leaves", tree.len());
        }
        assert!(merkle_roots(&[]).is_empty());
    }

    #[test]
    fn every_path_verifies_and_matches_root() {
        for n in 1..=33u8 {
            let l = leaves(n);
            let root = merkle_root(&l);
            for i in 0..usize::from(n) {
                let path = merkle_path(&l, i).unwrap();
                assert_eq!(root_from_path(&l[i], &path), root, "n={n} i={i}");
                let mut extra = path.clone();
                extra.steps.push(PathStep {
                    sibling_is_left: false,
                    sibling: MerkleRoot([0; 32]),
                });
                assert_ne!(root_from_path(&l[i], &extra), root);
                for k in 0..path.steps.len() {
                    let mut flipped = path.clone();
                    flipped.steps[k].sibling_is_left ^= true;
                    assert_ne!(root_from_path(&l[i], &flipped), root);
                }
            }
            assert!(merkle_path(&l, usize::from(n)).is_none());
        }
    }
}
