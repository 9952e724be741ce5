//! The remote's objects, byte for byte (docs/format.md, "Remotes"): manifests, packs
//! and the segments in them. Every decode is strict and checks what the bytes claim.

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_core::{MerkleRoot, StateRoot, Table, TableRoots, hex_encode};

use crate::fetch::Span;
use crate::groups::{self, GROUPS};

use crate::error::{RemoteError, Result};

/// The remote layout's format, in `cfs-remote`, packs and manifests.
pub const FORMAT: u32 = 2;
/// The tag of vector buckets (tags 0-4 are the tables in state-root order).
pub const VECTOR_TAG: u8 = 5;

const PACK_MAGIC: [u8; 16] = *b"cfs pack\0\0\0\0\0\0\0\0";
const MANIFEST_MAGIC: [u8; 16] = *b"cfs manifest\0\0\0\0";

/// A store's chunk sizes as a manifest holds them: target, max, overlap.
pub(crate) fn chunk_sizes(c: &cfs_ingest::ChunkParams) -> [u32; 3] {
    [c.target_bytes, c.max_bytes, c.overlap_bytes]
}

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
    /// Every non-empty group of 32 buckets, in (tag, group) order: `bucket` is the
    /// group's number, `root` its node, and the pack range its group segment. Encoded
    /// as the packs they lie in, then each group naming its pack by index.
    #[borsh(serialize_with = "write_groups", deserialize_with = "read_groups")]
    pub groups: Vec<BucketEntry>,
}

/// A manifest's group as encoded: its pack by index in the manifest's list of packs.
#[derive(BorshSerialize, BorshDeserialize)]
struct GroupRef {
    tag: u8,
    group: u8,
    node: [u8; 32],
    pack: u16,
    offset: u64,
    length: u32,
}

fn write_groups<W: std::io::Write>(groups: &Vec<BucketEntry>, w: &mut W) -> std::io::Result<()> {
    let mut packs: Vec<ObjectName> = Vec::new();
    let mut refs = Vec::with_capacity(groups.len());
    for e in groups {
        let at = packs.iter().position(|p| *p == e.pack).unwrap_or_else(|| {
            packs.push(e.pack);
            packs.len() - 1
        });
        let too_big = |what| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        refs.push(GroupRef {
            tag: e.tag,
            group: u8::try_from(e.bucket).map_err(|_| too_big("a group number over 255"))?,
            node: e.root,
            pack: u16::try_from(at).map_err(|_| too_big("over 65,535 packs"))?,
            offset: e.offset,
            length: u32::try_from(e.length).map_err(|_| too_big("a group segment over 4 GiB"))?,
        });
    }
    packs.serialize(w)?;
    refs.serialize(w)
}

fn read_groups<R: std::io::Read>(r: &mut R) -> std::io::Result<Vec<BucketEntry>> {
    let packs = Vec::<ObjectName>::deserialize_reader(r)?;
    let refs = Vec::<GroupRef>::deserialize_reader(r)?;
    refs.into_iter()
        .map(|g| {
            let pack = packs.get(usize::from(g.pack)).copied().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "a group names no pack")
            })?;
            Ok(BucketEntry {
                tag: g.tag,
                bucket: u16::from(g.group),
                root: g.node,
                pack,
                offset: g.offset,
                length: u64::from(g.length),
            })
        })
        .collect()
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
    /// The pack holding its segment (a group's, or a bucket's row table).
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

    /// Where its segment lies.
    pub(crate) fn span(&self) -> Span {
        Span {
            pack: self.pack,
            offset: self.offset,
            length: self.length,
        }
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
    pub groups: Vec<BucketEntry>,
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
            groups: f.groups,
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

    /// Groups in strictly increasing order, of known tags and numbers, not empty, and
    /// table roots and a state root that recompute from their nodes.
    fn check_roots(&self) -> std::result::Result<(), String> {
        if self.model_hash != cfs_core::ModelHash::of(&self.model_id).0 {
            return Err("its model hash is not its model id's".into());
        }
        // A store made with them could never sync: refused here, not at the next index.
        let [target_bytes, max_bytes, overlap_bytes] = self.chunk;
        let chunk = cfs_ingest::ChunkParams {
            target_bytes,
            max_bytes,
            overlap_bytes,
        };
        chunk
            .validate()
            .map_err(|e| format!("its chunk sizes {:?}: {e}", self.chunk))?;
        let in_order = self.groups.windows(2).all(|w| w[0].slot() < w[1].slot());
        let known = |e: &BucketEntry| e.tag <= VECTOR_TAG && usize::from(e.bucket) < GROUPS;
        if !in_order || !self.groups.iter().all(known) {
            return Err("its groups are out of order or out of range".into());
        }
        let empty = groups::empty_node();
        if self.groups.iter().any(|e| e.root == empty.0) {
            return Err("it lists an empty group".into());
        }
        let roots = self.table_roots();
        for (i, &table) in Table::ALL.iter().enumerate() {
            let nodes: Vec<[u8; 32]> = self.group_nodes(i as u8).iter().map(|n| n.0).collect();
            if cfs_core::merkle_root(&nodes) != roots.get(table) {
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

    /// The 32 group nodes of tag `tag` (absent groups are empty).
    pub fn group_nodes(&self, tag: u8) -> Vec<MerkleRoot> {
        let mut nodes = vec![groups::empty_node(); GROUPS];
        for e in self.groups.iter().filter(|e| e.tag == tag) {
            nodes[usize::from(e.bucket)] = MerkleRoot(e.root);
        }
        nodes
    }

    /// The group entry of (tag, group), if the group is not empty.
    pub fn group(&self, tag: u8, group: usize) -> Option<BucketEntry> {
        self.groups
            .iter()
            .find(|e| e.tag == tag && usize::from(e.bucket) == group)
            .copied()
    }
}

/// A row of a table bucket as a pack holds it.
#[derive(BorshSerialize, BorshDeserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
}

/// A row of a vector bucket as a pack holds it.
#[derive(BorshSerialize, BorshDeserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct VectorRow {
    pub hash: [u8; 32],
    pub encoding: Vec<u8>,
}

/// The kind of a pack's region, in its index, or-ed with its tag: a bucket's new rows.
pub(crate) const ROWS_KIND: u8 = 0;
/// A bucket's row table's kind, or-ed with its tag.
pub(crate) const TABLE_KIND: u8 = 0x40;
/// A group segment's kind, or-ed with its tag.
pub(crate) const GROUP_KIND: u8 = 0x80;

/// A region's entry in a pack's index.
#[derive(BorshSerialize, BorshDeserialize, Clone, Copy, Debug, PartialEq, Eq)]
struct IndexEntry {
    kind: u8,
    bucket: u16,
    root: [u8; 32],
    offset: u64,
    length: u64,
}

/// A pack being written: regions appended, then the index.
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

    /// Where the next region starts.
    pub(crate) fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Appends a region of kind `kind` for (tag, `bucket`) with root `root`: its entry
    /// in a manifest or group, whose pack is named when the pack is finished.
    pub(crate) fn push(
        &mut self,
        (kind, tag): (u8, u8),
        bucket: u16,
        root: MerkleRoot,
        region: &[u8],
    ) -> BucketEntry {
        let entry = IndexEntry {
            kind: kind | tag,
            bucket,
            root: root.0,
            offset: self.len(),
            length: region.len() as u64,
        };
        self.bytes.extend_from_slice(region);
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
        let at = self.len();
        let index = borsh::to_vec(&self.index).expect("an index in memory encodes");
        self.bytes.extend(index);
        self.bytes.extend(at.to_le_bytes());
        let name = name_of(&self.bytes);
        (self.bytes, name)
    }
}

/// A row's bytes in a pack.
pub(crate) fn encode_row<R: BorshSerialize>(row: &R) -> Vec<u8> {
    borsh::to_vec(row).expect("a row in memory encodes")
}

/// The row whose bytes are `bytes`, strictly decoded.
pub(crate) fn decode_row<R: BorshDeserialize>(bytes: &[u8]) -> std::result::Result<R, String> {
    borsh::from_slice(bytes).map_err(|e| format!("not a row: {e}"))
}

/// The bucket of a vector: the first 10 bits of its hash.
pub(crate) fn vector_bucket(hash: &[u8; 32]) -> u16 {
    cfs_core::Bucket::of_key(hash).0
}

/// The root of a vector bucket: the Merkle root of its vectors' hashes in order.
pub(crate) fn vector_root(hashes: &[[u8; 32]]) -> MerkleRoot {
    cfs_core::merkle_root(hashes)
}
