//! The bucketed table commitment: why a one-file change does not rehash the store.
//!
//! Each table is split into [`N_BUCKETS`] buckets by the leading [`BUCKET_BITS`] bits of
//! its keys. A bucket's root is the Merkle root of its leaves in key order (see
//! [`crate::merkle`]); the table root is the root of a fixed, complete binary tree over
//! all bucket roots in bucket order, empty buckets holding the empty root. A change then
//! rehashes its own bucket and the [`BUCKET_BITS`] nodes above it, nothing else.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::error::{CoreError, ProofError};
use crate::hash::{self, HASH_LEN, MerkleRoot};
use crate::merkle::{MerklePath, complete_tree_path, merkle_path, merkle_root, root_from_path};

/// Bits of a key that choose its bucket.
pub const BUCKET_BITS: u32 = 10;
/// Number of buckets per table.
pub const N_BUCKETS: usize = 1 << BUCKET_BITS;

/// A bucket index, `0..N_BUCKETS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bucket(pub u16);

impl Bucket {
    /// The bucket of a key: its first [`BUCKET_BITS`] bits, big-endian. Keys shorter
    /// than two bytes are padded with zeros (no cfs key is).
    pub fn of_key(key: &[u8]) -> Self {
        let b0 = u16::from(key.first().copied().unwrap_or(0));
        let b1 = u16::from(key.get(1).copied().unwrap_or(0));
        Self(((b0 << 8) | b1) >> (16 - BUCKET_BITS))
    }

    fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// The fixed tree over the bucket roots of one table, kept whole so that setting one
/// bucket rehashes [`BUCKET_BITS`] nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopTree {
    /// Heap layout: `nodes[1]` is the root, bucket `b` is `nodes[N_BUCKETS + b]`.
    nodes: Vec<[u8; HASH_LEN]>,
}

impl Default for TopTree {
    fn default() -> Self {
        Self::new()
    }
}

/// The root of a table with no rows, computed once per process.
pub(crate) fn empty_table_root() -> MerkleRoot {
    static ROOT: std::sync::LazyLock<MerkleRoot> =
        std::sync::LazyLock::new(|| TopTree::new().root());
    *ROOT
}

impl TopTree {
    /// The tree of a table whose buckets are all empty. Each level's nodes are then one
    /// node repeated: one hash per level ([`BUCKET_BITS`]) instead of one per node (a
    /// no-op `cfs index` computes the empty state's root, and 5,115 hashes were 4-7% of it).
    pub fn new() -> Self {
        let mut nodes = vec![[0u8; HASH_LEN]; 2 * N_BUCKETS];
        let mut node = MerkleRoot::empty().0;
        let mut level = N_BUCKETS;
        loop {
            nodes[level..2 * level].fill(node);
            if level == 1 {
                break;
            }
            node = hash::node(&node, &node);
            level /= 2;
        }
        Self { nodes }
    }

    /// The tree over `roots`, which must hold exactly [`N_BUCKETS`] roots.
    pub fn from_bucket_roots(roots: &[MerkleRoot]) -> Result<Self, CoreError> {
        if roots.len() != N_BUCKETS {
            return Err(CoreError::InvalidInput(format!(
                "{} bucket roots given, {N_BUCKETS} needed",
                roots.len()
            )));
        }
        let mut nodes = vec![[0u8; HASH_LEN]; 2 * N_BUCKETS];
        for (slot, root) in nodes[N_BUCKETS..].iter_mut().zip(roots) {
            *slot = root.0;
        }
        // A level at a time, its nodes hashed side by side: node `i` over `2i, 2i + 1`.
        let mut level = N_BUCKETS / 2;
        while level >= 1 {
            let (upper, lower) = nodes.split_at_mut(2 * level);
            upper[level..].copy_from_slice(&hash::nodes(&lower[..2 * level]));
            level /= 2;
        }
        Ok(Self { nodes })
    }

    /// The table root.
    pub fn root(&self) -> MerkleRoot {
        MerkleRoot(self.nodes[1])
    }

    /// The root of one bucket.
    pub fn bucket_root(&self, bucket: Bucket) -> MerkleRoot {
        MerkleRoot(self.nodes[N_BUCKETS + bucket.index()])
    }

    /// Sets one bucket root and rehashes the path above it.
    pub fn set(&mut self, bucket: Bucket, root: MerkleRoot) {
        let mut i = N_BUCKETS + bucket.index();
        self.nodes[i] = root.0;
        while i > 1 {
            i /= 2;
            self.nodes[i] = hash::node(&self.nodes[2 * i], &self.nodes[2 * i + 1]);
        }
    }

    /// The [`BUCKET_BITS`] siblings from a bucket up to the root.
    pub fn siblings(&self, bucket: Bucket) -> Vec<MerkleRoot> {
        let mut i = N_BUCKETS + bucket.index();
        let mut out = Vec::with_capacity(BUCKET_BITS as usize);
        while i > 1 {
            out.push(MerkleRoot(self.nodes[i ^ 1]));
            i /= 2;
        }
        out
    }

    /// Recomputes a table root from one bucket root and its siblings.
    pub fn root_from_siblings(
        bucket: Bucket,
        bucket_root: MerkleRoot,
        siblings: &[MerkleRoot],
    ) -> Result<MerkleRoot, ProofError> {
        if siblings.len() != BUCKET_BITS as usize || bucket.index() >= N_BUCKETS {
            return Err(ProofError::MalformedPath(format!(
                "bucket path needs {BUCKET_BITS} siblings and a bucket below {N_BUCKETS}, got {} and {}",
                siblings.len(),
                bucket.0
            )));
        }
        let path = complete_tree_path(bucket.index(), siblings);
        Ok(root_from_path(&bucket_root.0, &path))
    }
}

/// The 1024 bucket roots over leaves given in key order as `(bucket, leaf hash)` (empty
/// buckets have the empty root).
///
/// This is the full recomputation that `verify` runs; buckets are hashed in parallel and
/// the result does not depend on the thread count. Fails if buckets go backwards, which
/// means the leaves were not in key order.
pub fn bucket_roots_from_sorted(
    leaves: &[(Bucket, [u8; HASH_LEN])],
) -> Result<Vec<MerkleRoot>, CoreError> {
    let mut ranges: Vec<(Bucket, std::ops::Range<usize>)> = Vec::new();
    let mut start = 0;
    for i in 1..=leaves.len() {
        let boundary = match (leaves.get(i - 1), leaves.get(i)) {
            (Some((a, _)), Some((b, _))) if a == b => false,
            (Some((a, _)), Some((b, _))) if a > b => {
                return Err(CoreError::InvalidInput(format!(
                    "leaves not in key order: bucket {} after bucket {}",
                    b.0, a.0
                )));
            }
            _ => true,
        };
        if boundary {
            ranges.push((leaves[start].0, start..i));
            start = i;
        }
    }
    let roots: Vec<(Bucket, MerkleRoot)> = ranges
        .into_par_iter()
        .map(|(bucket, range)| {
            let hashes: Vec<[u8; HASH_LEN]> = leaves[range].iter().map(|(_, h)| *h).collect();
            (bucket, merkle_root(&hashes))
        })
        .collect();
    let mut all = vec![MerkleRoot::empty(); N_BUCKETS];
    for (bucket, root) in roots {
        all[bucket.index()] = root;
    }
    Ok(all)
}

/// The table root over leaves given in key order (see [`bucket_roots_from_sorted`]).
pub fn table_root_from_sorted(
    leaves: &[(Bucket, [u8; HASH_LEN])],
) -> Result<MerkleRoot, CoreError> {
    Ok(TopTree::from_bucket_roots(&bucket_roots_from_sorted(leaves)?)?.root())
}

/// A table's leaves held by bucket, with the top tree, for incremental roots: inserts
/// and removes mark their bucket dirty, and [`BucketedTable::root`] rehashes only the
/// dirty buckets.
#[derive(Clone, Debug)]
pub struct BucketedTable<K: Ord> {
    buckets: Vec<BTreeMap<K, [u8; HASH_LEN]>>,
    top: TopTree,
    dirty: BTreeSet<Bucket>,
    n_leaves: usize,
}

impl<K: Ord + Clone + Send + Sync> Default for BucketedTable<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone + Send + Sync> BucketedTable<K> {
    /// An empty table.
    pub fn new() -> Self {
        Self {
            buckets: (0..N_BUCKETS).map(|_| BTreeMap::new()).collect(),
            top: TopTree::new(),
            dirty: BTreeSet::new(),
            n_leaves: 0,
        }
    }

    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.n_leaves
    }

    /// True if there are no leaves.
    pub fn is_empty(&self) -> bool {
        self.n_leaves == 0
    }

    /// Inserts or replaces the leaf of `key`; returns the previous leaf.
    pub fn insert(
        &mut self,
        bucket: Bucket,
        key: K,
        leaf: [u8; HASH_LEN],
    ) -> Option<[u8; HASH_LEN]> {
        let previous = self.buckets[bucket.index()].insert(key, leaf);
        if previous != Some(leaf) {
            self.dirty.insert(bucket);
        }
        if previous.is_none() {
            self.n_leaves += 1;
        }
        previous
    }

    /// Removes the leaf of `key`; returns it if it was there.
    pub fn remove(&mut self, bucket: Bucket, key: &K) -> Option<[u8; HASH_LEN]> {
        let removed = self.buckets[bucket.index()].remove(key);
        if removed.is_some() {
            self.dirty.insert(bucket);
            self.n_leaves -= 1;
        }
        removed
    }

    /// Number of buckets that the next [`BucketedTable::root`] call will rehash.
    pub fn n_dirty(&self) -> usize {
        self.dirty.len()
    }

    /// The table root, rehashing the dirty buckets (in parallel) and the paths above them.
    pub fn root(&mut self) -> MerkleRoot {
        let dirty: Vec<Bucket> = std::mem::take(&mut self.dirty).into_iter().collect();
        let buckets = &self.buckets;
        let roots: Vec<(Bucket, MerkleRoot)> = dirty
            .into_par_iter()
            .map(|b| {
                let leaves: Vec<[u8; HASH_LEN]> = buckets[b.index()].values().copied().collect();
                (b, merkle_root(&leaves))
            })
            .collect();
        for (bucket, root) in roots {
            self.top.set(bucket, root);
        }
        self.top.root()
    }

    /// The path of `key` within its bucket and the bucket's siblings in the top tree, or
    /// `None` if `key` is absent. Rehashes dirty buckets first.
    pub fn prove(&mut self, bucket: Bucket, key: &K) -> Option<(MerklePath, Vec<MerkleRoot>)> {
        self.root();
        let leaves = &self.buckets[bucket.index()];
        let index = leaves.keys().position(|k| k == key)?;
        let hashes: Vec<[u8; HASH_LEN]> = leaves.values().copied().collect();
        let path = merkle_path(&hashes, index)?;
        Some((path, self.top.siblings(bucket)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The empty tree built a level at a time is the tree over empty bucket roots, and
    /// its root the empty table's.
    #[test]
    fn the_empty_tree_is_the_tree_of_empty_buckets() {
        let empty = vec![MerkleRoot::empty(); N_BUCKETS];
        assert_eq!(TopTree::new(), TopTree::from_bucket_roots(&empty).unwrap());
        assert_eq!(TopTree::new().root(), empty_table_root());
    }

    #[test]
    fn bucket_of_key_uses_leading_bits() {
        assert_eq!(Bucket::of_key(&[0, 0]).0, 0);
        assert_eq!(Bucket::of_key(&[0xff, 0xff, 1]).0, 1023);
        assert_eq!(Bucket::of_key(&[0x01, 0x40]).0, 5);
        assert_eq!(Bucket::of_key(&[0x80, 0x3f]).0, 512);
    }

    #[test]
    fn top_tree_is_the_merkle_tree_over_bucket_roots() {
        let roots: Vec<MerkleRoot> = (0..N_BUCKETS)
            .map(|i| MerkleRoot(*blake3::hash(&i.to_le_bytes()).as_bytes()))
            .collect();
        let tree = TopTree::from_bucket_roots(&roots).unwrap();
        let flat: Vec<[u8; 32]> = roots.iter().map(|r| r.0).collect();
        assert_eq!(tree.root(), merkle_root(&flat));
        for b in [0u16, 1, 511, 1023] {
            let siblings = tree.siblings(Bucket(b));
            let again = TopTree::root_from_siblings(Bucket(b), roots[usize::from(b)], &siblings);
            assert_eq!(again.unwrap(), tree.root());
        }
        // Every node of the tree built a level at a time is the one `set` hashes alone.
        let mut by_set = TopTree::new();
        for (b, root) in roots.iter().enumerate() {
            by_set.set(Bucket(b as u16), *root);
        }
        assert!(
            by_set == tree,
            "a level at a time and one path at a time differ"
        );
    }

    #[test]
    fn incremental_equals_full() {
        let mut table = BucketedTable::<[u8; 16]>::new();
        let mut all = BTreeMap::new();
        for i in 0u32..3000 {
            let key: [u8; 16] = blake3::hash(&i.to_le_bytes()).as_bytes()[..16]
                .try_into()
                .unwrap();
            let leaf = *blake3::hash(&key).as_bytes();
            table.insert(Bucket::of_key(&key), key, leaf);
            all.insert(key, leaf);
            if i % 7 == 0 {
                let first = *all.keys().next().unwrap();
                all.remove(&first);
                table.remove(Bucket::of_key(&first), &first);
            }
            if i % 500 == 0 {
                table.root();
            }
        }
        let sorted: Vec<(Bucket, [u8; 32])> =
            all.iter().map(|(k, v)| (Bucket::of_key(k), *v)).collect();
        assert_eq!(table.root(), table_root_from_sorted(&sorted).unwrap());
        assert_eq!(table.len(), all.len());
        assert_eq!(table.n_dirty(), 0);
    }

    #[test]
    fn unsorted_leaves_are_rejected() {
        let leaves = vec![(Bucket(5), [0; 32]), (Bucket(4), [0; 32])];
        assert!(table_root_from_sorted(&leaves).is_err());
        assert_eq!(table_root_from_sorted(&[]).unwrap(), TopTree::new().root());
    }
}
