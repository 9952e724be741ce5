//! The remote's objects, byte for byte (docs/format.md, "Remotes"): manifests, packs
//! and the segments in them. Every decode is strict and checks what the bytes claim.

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_core::{MerkleRoot, N_BUCKETS, StateRoot, Table, TableRoots, TopTree, hex_encode};

use crate::error::{RemoteError, Result};

/// The remote layout's format, in `cfs-remote`, packs and manifests.
pub const FORMAT: u32 = 1;
/// The tag of vector buckets (tags 0-4 are the tables in state-root order).
pub const VECTOR_TAG: u8 = 5;

const PACK_MAGIC: [u8; 16] = *b"cfs pack\0\0\0\0\0\0\0\0";
const MANIFEST_MAGIC: [u8; 16] = *b"cfs manifest\0\0\0\0";

/// An object's name: the BLAKE3 of its bytes.
pub type ObjectName = [u8; 32];

/// Where an object lies in a remote.
pub(crate) fn object_path(name: &ObjectName) -> String {
    format!("objects/{}", hex_encode(name))
}

/// The name of `bytes`.
pub(crate) fn name_of(bytes: &[u8]) -> ObjectName {
    *blake3::hash(bytes).as_bytes()
}

/// One published state.
#[derive(BorshSerialize, BorshDeserialize, Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    magic: [u8; 16],
    format: u32,
    /// The spec version the state was computed under.
    pub spec_version: u32,
    /// Chunk sizes: target, max, overlap.
    pub chunk: [u32; 3],
    /// The embedder's model id.
    pub model_id: String,
    /// Its hash.
    pub model_hash: [u8; 32],
    /// The state root.
    pub state_root: [u8; 32],
    /// The five table roots, in state-root order.
    pub table_roots: [[u8; 32]; 5],
    /// The pusher's sequence.
    pub sequence: u64,
    /// The branch's previous manifest.
    pub previous: Option<ObjectName>,
    /// The git commit the pushed tree was at.
    pub git_commit: Option<String>,
    /// The parsers of the build that parsed the documents.
    pub parsers: String,
    /// When it was published (ms since the epoch).
    pub published_ms: u64,
    /// Every non-empty bucket, in (tag, bucket) order.
    pub buckets: Vec<BucketEntry>,
}

/// A non-empty bucket of a manifest and where its segment lies.
#[derive(BorshSerialize, BorshDeserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketEntry {
    /// 0-4: a table; 5: vectors.
    pub tag: u8,
    /// The bucket (0..1024).
    pub bucket: u16,
    /// Its root.
    pub root: [u8; 32],
    /// The pack holding its segment.
    pub pack: ObjectName,
    /// The segment's offset in the pack.
    pub offset: u64,
    /// The segment's length.
    pub length: u64,
}

impl BucketEntry {
    /// (tag, bucket): the order of a manifest's entries.
    pub fn slot(&self) -> (u8, u16) {
        (self.tag, self.bucket)
    }
}

/// The fields a pusher gives a manifest; the rest are the format's.
pub(crate) struct ManifestFields {
    pub chunk: [u32; 3],
    pub model_id: String,
    pub table_roots: TableRoots,
    pub sequence: u64,
    pub previous: Option<ObjectName>,
    pub git_commit: Option<String>,
    pub parsers: String,
    pub published_ms: u64,
    pub buckets: Vec<BucketEntry>,
}

impl Manifest {
    pub(crate) fn new(f: ManifestFields) -> Self {
        let roots = &f.table_roots;
        Self {
            magic: MANIFEST_MAGIC,
            format: FORMAT,
            spec_version: cfs_core::SPEC_VERSION,
            chunk: f.chunk,
            model_hash: cfs_core::ModelHash::of(&f.model_id).0,
            model_id: f.model_id,
            state_root: roots.state_root().0,
            table_roots: Table::ALL.map(|t| roots.get(t).0),
            sequence: f.sequence,
            previous: f.previous,
            git_commit: f.git_commit,
            parsers: f.parsers,
            published_ms: f.published_ms,
            buckets: f.buckets,
        }
    }

    /// The manifest's bytes.
    pub fn encode(&self) -> Vec<u8> {
        borsh::to_vec(self).expect("a manifest in memory encodes")
    }

    /// The manifest whose bytes are `bytes`, fetched as object `name`: checked to hash to
    /// its name, decode strictly, be of this build's versions, and have its roots compose.
    pub fn decode(bytes: &[u8], name: &ObjectName, remote: &str) -> Result<Self> {
        let damaged = |reason: String| RemoteError::Damaged {
            remote: remote.to_owned(),
            name: object_path(name),
            reason,
        };
        if name_of(bytes) != *name {
            return Err(damaged("does not hash to its name".into()));
        }
        let m = borsh::from_slice::<Self>(bytes)
            .map_err(|e| damaged(format!("not a manifest: {e}")))?;
        if m.magic != MANIFEST_MAGIC {
            return Err(damaged("not a manifest".into()));
        }
        let version = |what: &str, found: u32, expected: u32| RemoteError::Version {
            remote: remote.to_owned(),
            what: format!(
                "manifest {} is of {what} {found}; this build reads {expected}",
                hex_encode(name)
            ),
        };
        if m.format != FORMAT {
            return Err(version("format", m.format, FORMAT));
        }
        if m.spec_version != cfs_core::SPEC_VERSION {
            return Err(version(
                "spec version",
                m.spec_version,
                cfs_core::SPEC_VERSION,
            ));
        }
        m.check_roots().map_err(damaged)?;
        Ok(m)
    }

    /// Entries in strictly increasing order, of known tags and buckets, not empty, and
    /// table roots and state root that recompute from them.
    fn check_roots(&self) -> std::result::Result<(), String> {
        if self.model_hash != cfs_core::ModelHash::of(&self.model_id).0 {
            return Err("its model hash is not its model id's".into());
        }
        let in_order = self.buckets.windows(2).all(|w| w[0].slot() < w[1].slot());
        let known = |e: &BucketEntry| e.tag <= VECTOR_TAG && usize::from(e.bucket) < N_BUCKETS;
        if !in_order || !self.buckets.iter().all(known) {
            return Err("its buckets are out of order or out of range".into());
        }
        if self.buckets.iter().any(|e| e.root == MerkleRoot::empty().0) {
            return Err("it lists an empty bucket".into());
        }
        let roots = self.table_roots();
        for (i, &table) in Table::ALL.iter().enumerate() {
            let top = TopTree::from_bucket_roots(&self.bucket_roots(i as u8))
                .map_err(|e| e.to_string())?;
            if top.root() != roots.get(table) {
                return Err(format!("its {} root does not recompute", table.name()));
            }
        }
        if roots.state_root().0 != self.state_root {
            return Err("its state root does not recompute".into());
        }
        Ok(())
    }

    /// The table roots.
    pub fn table_roots(&self) -> TableRoots {
        let mut roots = TableRoots::empty();
        for (table, root) in Table::ALL.iter().zip(self.table_roots) {
            roots.set(*table, MerkleRoot(root));
        }
        roots
    }

    /// The state root.
    pub fn root(&self) -> StateRoot {
        StateRoot(self.state_root)
    }

    /// The 1,024 bucket roots of tag `tag` (absent buckets are empty).
    pub fn bucket_roots(&self, tag: u8) -> Vec<MerkleRoot> {
        let mut roots = vec![MerkleRoot::empty(); N_BUCKETS];
        for e in self.buckets.iter().filter(|e| e.tag == tag) {
            roots[usize::from(e.bucket)] = MerkleRoot(e.root);
        }
        roots
    }
}

/// A row of a table segment.
#[derive(BorshSerialize, BorshDeserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
}

/// A row of a vector segment.
#[derive(BorshSerialize, BorshDeserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct VectorRow {
    pub hash: [u8; 32],
    pub encoding: Vec<u8>,
}

/// A segment's entry in a pack's index.
#[derive(BorshSerialize, BorshDeserialize, Clone, Copy, Debug, PartialEq, Eq)]
struct IndexEntry {
    tag: u8,
    bucket: u16,
    root: [u8; 32],
    offset: u64,
    length: u64,
}

/// A pack being written: segments appended, then the index.
pub(crate) struct PackWriter {
    bytes: Vec<u8>,
    index: Vec<IndexEntry>,
}

impl PackWriter {
    pub(crate) fn new() -> Self {
        let mut bytes = PACK_MAGIC.to_vec();
        bytes.extend(FORMAT.to_le_bytes());
        Self {
            bytes,
            index: Vec::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Appends the segment of (`tag`, `bucket`) with root `root`: its entry in a
    /// manifest, whose pack is named when the pack is finished.
    pub(crate) fn push(
        &mut self,
        tag: u8,
        bucket: u16,
        root: MerkleRoot,
        segment: &[u8],
    ) -> BucketEntry {
        let entry = IndexEntry {
            tag,
            bucket,
            root: root.0,
            offset: self.bytes.len() as u64,
            length: segment.len() as u64,
        };
        self.bytes.extend_from_slice(segment);
        self.index.push(entry);
        BucketEntry {
            tag,
            bucket,
            root: root.0,
            pack: [0; 32],
            offset: entry.offset,
            length: entry.length,
        }
    }

    /// The pack's bytes and name.
    pub(crate) fn finish(mut self) -> (Vec<u8>, ObjectName) {
        let at = self.bytes.len() as u64;
        let index = borsh::to_vec(&self.index).expect("an index in memory encodes");
        self.bytes.extend(index);
        self.bytes.extend(at.to_le_bytes());
        let name = name_of(&self.bytes);
        (self.bytes, name)
    }
}

/// A table segment's bytes.
pub(crate) fn encode_rows(rows: &[Row]) -> Vec<u8> {
    borsh::to_vec(rows).expect("rows in memory encode")
}

/// A vector segment's bytes.
pub(crate) fn encode_vectors(rows: &[VectorRow]) -> Vec<u8> {
    borsh::to_vec(rows).expect("vectors in memory encode")
}

/// The rows of a table segment, strictly decoded.
pub(crate) fn decode_rows(bytes: &[u8]) -> std::result::Result<Vec<Row>, String> {
    borsh::from_slice(bytes).map_err(|e| format!("not a segment of rows: {e}"))
}

/// The rows of a vector segment, strictly decoded.
pub(crate) fn decode_vectors(bytes: &[u8]) -> std::result::Result<Vec<VectorRow>, String> {
    borsh::from_slice(bytes).map_err(|e| format!("not a segment of vectors: {e}"))
}

/// The bucket of a vector: the first 10 bits of its hash.
pub(crate) fn vector_bucket(hash: &[u8; 32]) -> u16 {
    cfs_core::Bucket::of_key(hash).0
}

/// The root of a vector bucket: the Merkle root of its vectors' hashes in order.
pub(crate) fn vector_root(hashes: &[[u8; 32]]) -> MerkleRoot {
    cfs_core::merkle_root(hashes)
}
