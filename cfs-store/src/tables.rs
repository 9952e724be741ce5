//! Every redb table of the store, declared once, with its key and value encoding.
//!
//! Keys and values are `&[u8]` in cfs's own encodings, so redb's typed encodings can
//! never change the state. Committed tables hold canonical encodings (docs/spec.md);
//! the others are indexes and caches derived from them. `docs/format.md` is the
//! reference for these layouts.

use cfs_core::{
    ChunkId, ContentHash, DocumentId, Edge, EdgeKind, EntityId, MerkleRoot, ModelHash, PathId,
    Table, TableRoots, TextHash,
};
use redb::TableDefinition;

use crate::error::{Result, StoreError};
use crate::rows::Rows;

type Bytes = TableDefinition<'static, &'static [u8], &'static [u8]>;

// Every committed row's value is its leaf hash (32) then its payload (`row_value`).

/// Committed: path id (16) -> leaf || canonical PathEntry.
pub const PATHS: Bytes = TableDefinition::new("paths");
/// Committed: document id (16) -> leaf || canonical Document.
pub const DOCUMENTS: Bytes = TableDefinition::new("documents");
/// Committed: chunk id (16) -> leaf || extent (12) of the canonical Chunk in the chunk
/// log (`chunk_log.rs`).
pub const CHUNKS: Bytes = TableDefinition::new("chunks");
/// Committed: embedding id (16) -> leaf || chunk id (16) || model hash (32) || vector
/// hash (32); the canonical Embedding is the key, the next 48 bytes and the vector
/// (`vectors.rs`).
pub const EMBEDDINGS: Bytes = TableDefinition::new("embeddings");
/// Committed: edge key (source 16, target 16, kind u16 BE) -> leaf || canonical Edge.
pub const EDGES: Bytes = TableDefinition::new("edges");

/// Index: document id (16) -> its chunk ids (16 each) in sequence order; absent for a
/// document without chunks.
pub const CHUNKS_BY_DOCUMENT: Bytes = TableDefinition::new("chunks_by_document");
/// Index: document id (16) || path id (16) -> empty; a document's paths (its references).
pub const PATHS_BY_DOCUMENT: Bytes = TableDefinition::new("paths_by_document");
/// Index: target (16) || source (16) || kind (u16 BE) -> empty; user edges only. A
/// system edge is found from its source, whose removal is the only one that removes
/// its target: a document's `contains` edges, a chunk's `next_window` and
/// `embedded_as` edges (an embedding row names its chunk).
pub const EDGES_BY_TARGET: Bytes = TableDefinition::new("edges_by_target");
/// Index: content hash (32) || MIME type (UTF-8) -> document id (16): finds the document
/// of known content without parsing it again (renames, copies).
pub const CONTENT_INDEX: Bytes = TableDefinition::new("content_index");
/// Index: table (u8) || bucket (u16 BE) -> bucket root (32); absent = empty root.
pub const BUCKET_ROOTS: Bytes = TableDefinition::new("bucket_roots");

/// Storage: vector hash (32, BLAKE3 of the value) -> vector (u32 LE length, i16 LE each);
/// each distinct vector once, for the embeddings and the embedding cache.
pub const VECTORS: Bytes = TableDefinition::new("vectors");
/// Cache: model hash (32) || text hash (32) -> vector hash (32).
pub const EMBEDDING_CACHE: Bytes = TableDefinition::new("embedding_cache");
/// Cache: relative path (UTF-8) -> size (u64 LE) || mtime ns (u64 LE) || content hash (32).
pub const STAT_CACHE: Bytes = TableDefinition::new("stat_cache");

/// History: sequence (u64 BE) -> canonical StateRecord.
pub const STATE_CHAIN: Bytes = TableDefinition::new("state_chain");
/// Meta: key (UTF-8) -> value (see `meta` keys in store.rs).
pub const META: Bytes = TableDefinition::new("meta");

/// Every table, for creation at store creation and for `verify`.
pub const ALL: [Bytes; 15] = [
    PATHS,
    DOCUMENTS,
    CHUNKS,
    EMBEDDINGS,
    EDGES,
    CHUNKS_BY_DOCUMENT,
    PATHS_BY_DOCUMENT,
    EDGES_BY_TARGET,
    CONTENT_INDEX,
    BUCKET_ROOTS,
    VECTORS,
    EMBEDDING_CACHE,
    STAT_CACHE,
    STATE_CHAIN,
    META,
];

/// The committed table of a cfs table.
pub fn committed(table: cfs_core::Table) -> Bytes {
    match table {
        cfs_core::Table::Paths => PATHS,
        cfs_core::Table::Documents => DOCUMENTS,
        cfs_core::Table::Chunks => CHUNKS,
        cfs_core::Table::Embeddings => EMBEDDINGS,
        cfs_core::Table::Edges => EDGES,
    }
}

/// The one-byte tag of a table in `BUCKET_ROOTS` keys: its state-root order.
pub fn tag(table: cfs_core::Table) -> u8 {
    match table {
        cfs_core::Table::Paths => 0,
        cfs_core::Table::Documents => 1,
        cfs_core::Table::Chunks => 2,
        cfs_core::Table::Embeddings => 3,
        cfs_core::Table::Edges => 4,
    }
}

/// The key range of bucket `b` in a committed table: `[lo, hi)` over the first two key
/// bytes (`hi` is `None` for the last bucket).
pub fn bucket_range(bucket: u16) -> ([u8; 2], Option<[u8; 2]>) {
    let shift = 16 - cfs_core::BUCKET_BITS;
    let lo = u32::from(bucket) << shift;
    let hi = (u32::from(bucket) + 1) << shift;
    let end = (hi <= 0xffff).then_some([(hi >> 8) as u8, hi as u8]);
    ([(lo >> 8) as u8, lo as u8], end)
}

/// The rows of bucket `b` of a committed table, in key order.
pub fn bucket_rows<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    table: &T,
    bucket: u16,
) -> Result<redb::Range<'_, &'static [u8], &'static [u8]>, redb::StorageError> {
    match bucket_range(bucket) {
        (lo, Some(hi)) => table.range::<&[u8]>(&lo[..]..&hi[..]),
        (lo, None) => table.range::<&[u8]>(&lo[..]..),
    }
}

/// Bytes of the leaf hash that starts every committed row's value.
pub const LEAF_LEN: usize = 32;

/// A committed row's value: its leaf hash, then its payload (the canonical encoding; for
/// embeddings the stored form of `vectors.rs`). Keeping the leaf in the row spares a
/// table of leaves (a third of the rows a sync inserts) and lets a commit rehash a
/// bucket from one range read.
pub fn row_value(leaf: &[u8; 32], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(LEAF_LEN + payload.len());
    out.extend_from_slice(leaf);
    out.extend_from_slice(payload);
    out
}

/// [`row_value`] built in place: `encode` appends the payload after the room for the
/// leaf (`capacity` bytes are reserved for the payload), then `leaf` gives the leaf of
/// that payload. The payload is written once and never copied.
pub fn row_value_with(
    capacity: usize,
    encode: impl FnOnce(&mut Vec<u8>),
    leaf: impl FnOnce(&[u8]) -> [u8; 32],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(LEAF_LEN + capacity);
    out.resize(LEAF_LEN, 0);
    encode(&mut out);
    let leaf = leaf(&out[LEAF_LEN..]);
    out[..LEAF_LEN].copy_from_slice(&leaf);
    out
}

/// [`row_value_with`] of many items of one kind into `rows`, each under its `key`:
/// `encode` appends each item's payload after the room for its leaf, then `leaves`
/// gives the leaves of all the payloads at once, in order (hashed side by side).
pub(crate) fn push_row_values_with<T, K: AsRef<[u8]>>(
    rows: &mut Rows,
    items: &[T],
    key: impl Fn(&T) -> K,
    encode: impl Fn(&T, &mut Vec<u8>),
    leaves: impl FnOnce(&[&[u8]]) -> Vec<[u8; 32]>,
) {
    let first = rows.len();
    for item in items {
        rows.push_with(key(item).as_ref(), |out| {
            out.extend_from_slice(&[0; LEAF_LEN]);
            encode(item, out);
        });
    }
    let payloads: Vec<&[u8]> = (first..rows.len())
        .map(|i| &rows.value(i)[LEAF_LEN..])
        .collect();
    let leaves = leaves(&payloads);
    assert_eq!(leaves.len(), items.len(), "a leaf for every row");
    for (i, leaf) in (first..).zip(leaves) {
        rows.value_mut(i)[..LEAF_LEN].copy_from_slice(&leaf);
    }
}

/// A committed row's value split into its leaf hash and its payload.
pub fn split_row(value: &[u8]) -> Result<(&[u8; 32], &[u8])> {
    value
        .split_first_chunk::<LEAF_LEN>()
        .ok_or_else(|| StoreError::Corrupted("row shorter than its leaf".into()))
}

/// Where a chunk's canonical encoding lies in the chunk log (`chunk_log.rs`): the
/// payload of a `CHUNKS` row, offset (u64 LE) || length (u32 LE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Bytes from the log's start.
    pub offset: u64,
    /// Bytes of the encoding.
    pub len: u32,
}

/// Bytes of an encoded [`Extent`].
pub const EXTENT_LEN: usize = 12;

/// A `CHUNKS` row's value: the chunk's leaf, then where its encoding lies.
pub fn chunk_row_value(leaf: &[u8; 32], extent: &Extent) -> [u8; LEAF_LEN + EXTENT_LEN] {
    let mut out = [0u8; LEAF_LEN + EXTENT_LEN];
    out[..LEAF_LEN].copy_from_slice(leaf);
    out[LEAF_LEN..].copy_from_slice(&extent.encode());
    out
}

impl Extent {
    /// offset (u64 LE) || length (u32 LE).
    pub fn encode(&self) -> [u8; EXTENT_LEN] {
        let mut out = [0u8; EXTENT_LEN];
        out[..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..].copy_from_slice(&self.len.to_le_bytes());
        out
    }

    /// A `CHUNKS` row's payload; one of another length is `Corrupted`.
    pub fn decode(payload: &[u8]) -> Result<Self> {
        if payload.len() != EXTENT_LEN {
            return Err(corrupted("a chunks row's extent is not 12 bytes"));
        }
        Ok(Self {
            offset: le::read_u64(payload, 0).ok_or_else(|| corrupted("chunk extent"))?,
            len: le::read_u32(payload, 8).ok_or_else(|| corrupted("chunk extent"))?,
        })
    }

    /// The first byte past the encoding (saturating: an extent past `u64::MAX` is past
    /// every log's end).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(u64::from(self.len))
    }
}

/// The chunk log a committed state reads (meta `chunk_log`): the log's id, its length
/// at the commit (no committed extent reaches past it), and the bytes of chunks removed
/// since the log was written (no row names them; `Store::compact_log` returns them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogMark {
    /// The id in the log's header.
    pub id: [u8; 16],
    /// Bytes of the log the commit covers, header included.
    pub len: u64,
    /// Bytes of the log whose chunks were removed.
    pub dead: u64,
}

impl LogMark {
    /// id (16) || length (u64 LE) || removed bytes (u64 LE).
    pub fn encode(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[..16].copy_from_slice(&self.id);
        out[16..24].copy_from_slice(&self.len.to_le_bytes());
        out[24..].copy_from_slice(&self.dead.to_le_bytes());
        out
    }

    /// The mark recorded in meta.
    pub fn read<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(meta_t: &T) -> Result<Self> {
        let bytes = meta_t
            .get(meta::CHUNK_LOG.as_bytes())?
            .ok_or_else(|| corrupted("meta chunk_log missing"))?;
        let bytes = bytes.value();
        match (
            bytes.get(..16),
            le::read_u64(bytes, 16),
            le::read_u64(bytes, 24),
        ) {
            (Some(id), Some(len), Some(dead)) if bytes.len() == 32 && dead <= len => Ok(Self {
                id: id.try_into().expect("16 bytes"),
                len,
                dead,
            }),
            _ => Err(corrupted("meta chunk_log is not 32 bytes of a sound mark")),
        }
    }
}

/// Every key of the `embeddings` table (embedding ids, 16 bytes), in key order.
pub fn embedding_ids<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    table: &T,
) -> Result<Vec<cfs_core::EmbeddingId>> {
    let mut ids = Vec::new();
    for row in table.iter()? {
        let key = row?.0;
        ids.push(cfs_core::EmbeddingId(id16(key.value(), "embedding key")?));
    }
    Ok(ids)
}

// Keys of the index, cache and history tables. Every key and meta value the store writes
// is built here and parsed here, with a checked length: a stored key of the wrong shape
// is `StoreError::Corrupted`, never a panic.

fn corrupted(what: &str) -> StoreError {
    StoreError::Corrupted(what.into())
}

/// A stored 16-byte id (`what` names the key or value in the error).
pub(crate) fn id16(bytes: &[u8], what: &str) -> Result<[u8; 16]> {
    bytes
        .try_into()
        .map_err(|_| corrupted(&format!("{what} is not 16 bytes")))
}

/// A `CHUNKS_BY_DOCUMENT` value: the chunk ids, in sequence order.
pub fn chunk_index_value<'c>(ids: impl IntoIterator<Item = &'c ChunkId>) -> Vec<u8> {
    ids.into_iter().flat_map(|id| id.0).collect()
}

/// `PATHS_BY_DOCUMENT` key: document id, then path id.
pub fn path_index_key(document: &DocumentId, path: &PathId) -> [u8; 32] {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(&document.0);
    key[16..].copy_from_slice(&path.0);
    key
}

/// The path id of a `PATHS_BY_DOCUMENT` key.
pub fn path_of_index_key(key: &[u8]) -> Result<PathId> {
    match key.split_first_chunk::<16>() {
        Some((_, path)) if path.len() == 16 => Ok(PathId(id16(path, "paths_by_document key")?)),
        _ => Err(corrupted("paths_by_document key is not 32 bytes")),
    }
}

/// `EDGES_BY_TARGET` key: target, source, kind (u16 BE).
pub fn edge_by_target_key(edge: &Edge) -> [u8; 34] {
    let mut key = [0u8; 34];
    key[..16].copy_from_slice(&edge.target.0);
    key[16..32].copy_from_slice(&edge.source.0);
    key[32..].copy_from_slice(&edge.kind.0.to_be_bytes());
    key
}

/// An edge from its `EDGES` key, or from its `EDGES_BY_TARGET` key when `by_target`.
pub fn edge_from_key(key: &[u8], by_target: bool) -> Result<Edge> {
    let key: &[u8; 34] = key
        .try_into()
        .map_err(|_| corrupted("edge key is not 34 bytes"))?;
    let (a, rest) = key.split_first_chunk::<16>().expect("34 bytes");
    let (b, kind) = rest.split_first_chunk::<16>().expect("18 bytes");
    let kind = EdgeKind(u16::from_be_bytes([kind[0], kind[1]]));
    let (source, target) = if by_target { (b, a) } else { (a, b) };
    Ok(Edge {
        source: EntityId(*source),
        target: EntityId(*target),
        kind,
    })
}

/// `CONTENT_INDEX` key: content hash, then the MIME type.
pub fn content_key(content: &ContentHash, mime_type: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(32 + mime_type.len());
    key.extend_from_slice(&content.0);
    key.extend_from_slice(mime_type.as_bytes());
    key
}

/// A `CONTENT_INDEX` value: the document id.
pub fn content_value(value: &[u8]) -> Result<DocumentId> {
    Ok(DocumentId(id16(value, "content index value")?))
}

/// `EMBEDDING_CACHE` key: model hash, then text hash.
pub fn cache_key(model: &ModelHash, text: &TextHash) -> [u8; 64] {
    let mut key = [0u8; 64];
    key[..32].copy_from_slice(&model.0);
    key[32..].copy_from_slice(&text.0);
    key
}

/// `BUCKET_ROOTS` key: the table's tag, then the bucket (u16 BE).
pub fn bucket_root_key(table: Table, bucket: u16) -> [u8; 3] {
    let [hi, lo] = bucket.to_be_bytes();
    [tag(table), hi, lo]
}

/// The bucket of a `BUCKET_ROOTS` key.
fn bucket_of_root_key(key: &[u8]) -> Result<usize> {
    match key {
        [_, hi, lo] => Ok(usize::from(u16::from_be_bytes([*hi, *lo]))),
        other => Err(StoreError::Corrupted(format!(
            "bucket_roots key of {} bytes, expected 3",
            other.len()
        ))),
    }
}

/// The `cfs_core::N_BUCKETS` bucket roots of `table` (absent buckets are empty).
pub fn read_bucket_roots<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    bucket_roots: &T,
    table: Table,
) -> Result<Vec<MerkleRoot>> {
    let mut all = vec![MerkleRoot::empty(); cfs_core::N_BUCKETS];
    let t = tag(table);
    for row in bucket_roots.range::<&[u8]>(&[t][..]..&[t + 1][..])? {
        let (k, v) = row?;
        let bucket = bucket_of_root_key(k.value())?;
        let root: [u8; 32] = v
            .value()
            .try_into()
            .map_err(|_| corrupted("bucket root is not 32 bytes"))?;
        *all.get_mut(bucket)
            .ok_or_else(|| StoreError::Corrupted(format!("bucket {bucket} out of range")))? =
            MerkleRoot(root);
    }
    Ok(all)
}

/// `STATE_CHAIN` key: the record's sequence (u64 BE).
pub fn state_key(sequence: u64) -> [u8; 8] {
    sequence.to_be_bytes()
}

/// The exclusive upper bound of all keys starting with `prefix`, or `None` for "to the end".
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Keys of `table` starting with `prefix`.
pub fn keys_with_prefix<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    table: &T,
    prefix: &[u8],
) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let iter = match prefix_end(prefix) {
        Some(end) => table.range::<&[u8]>(prefix..end.as_slice())?,
        None => table.range::<&[u8]>(prefix..)?,
    };
    for row in iter {
        out.push(row?.0.value().to_vec());
    }
    Ok(out)
}

/// The chunk ids of `document` in `CHUNKS_BY_DOCUMENT`, in sequence order.
pub fn chunk_ids_of<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    chunk_index: &T,
    document: &DocumentId,
) -> Result<Vec<ChunkId>> {
    let Some(value) = chunk_index.get(&document.0[..])? else {
        return Ok(Vec::new());
    };
    let (ids, rest) = value.value().as_chunks::<16>();
    if !rest.is_empty() {
        return Err(corrupted(
            "a chunks_by_document value is not whole chunk ids",
        ));
    }
    Ok(ids.iter().map(|id| ChunkId(*id)).collect())
}

/// The path ids of `document` in `PATHS_BY_DOCUMENT`, in key order.
pub fn path_ids_of<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    path_index: &T,
    document: &DocumentId,
) -> Result<Vec<PathId>> {
    keys_with_prefix(path_index, &document.0)?
        .iter()
        .map(|key| path_of_index_key(key))
        .collect()
}

/// The `STAT_CACHE` key range of everything under the folder `path`: from "path/" up to
/// "path0" ('0' follows '/').
pub fn under_folder(path: &str) -> (String, String) {
    (format!("{path}/"), format!("{path}0"))
}

/// A `STAT_CACHE` row's value: size, modification time, content hash, and for a file
/// that could not be indexed, why (so that an unchanged binary is not read again every
/// sync).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Bytes.
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: u64,
    /// BLAKE3 of the content.
    pub hash: ContentHash,
    /// Why the file could not be indexed.
    pub failure: Option<String>,
}

impl Stat {
    /// size (u64 LE) || mtime ns (u64 LE) || content hash (32) || failure (UTF-8).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48);
        out.extend(self.size.to_le_bytes());
        out.extend(self.mtime_ns.to_le_bytes());
        out.extend(self.hash.0);
        if let Some(reason) = &self.failure {
            out.extend(reason.as_bytes());
        }
        out
    }

    /// `None` for a value of another shape (the row is then not trusted).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let failure = match bytes.get(48..)? {
            [] => None,
            reason => Some(std::str::from_utf8(reason).ok()?.to_owned()),
        };
        Some(Self {
            size: le::read_u64(bytes, 0)?,
            mtime_ns: le::read_u64(bytes, 8)?,
            hash: ContentHash(bytes.get(16..48)?.try_into().ok()?),
            failure,
        })
    }
}

/// The keys of the `META` table.
pub mod meta {
    /// The store's magic bytes (`store::MAGIC`).
    pub const MAGIC: &str = "magic";
    /// u32 LE.
    pub const SCHEMA_VERSION: &str = "schema_version";
    /// u32 LE.
    pub const SPEC_VERSION: &str = "spec_version";
    /// `Settings::encode`.
    pub const SETTINGS: &str = "settings";
    /// The five table roots in table order (160 bytes).
    pub const TABLE_ROOTS: &str = "table_roots";
    /// The last state record's sequence (u64 LE).
    pub const SEQUENCE: &str = "sequence";
    /// The git commit the last scoped sync brought the store to (UTF-8).
    pub const GIT_HEAD: &str = "git_head";
    /// The chunk log the state reads (`LogMark`).
    pub const CHUNK_LOG: &str = "chunk_log";
    /// The parsers the documents were parsed with (`cfs_ingest::parsers_version`, UTF-8);
    /// absent in a store written before it was recorded.
    pub const PARSERS: &str = "parsers";
}

/// The table roots recorded in meta.
pub fn read_table_roots<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    meta_t: &T,
) -> Result<TableRoots> {
    let bytes = meta_t
        .get(meta::TABLE_ROOTS.as_bytes())?
        .ok_or_else(|| corrupted("meta table_roots missing"))?;
    decode_roots(bytes.value())
}

/// The sequence of the last state record, recorded in meta.
pub fn read_sequence<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    meta_t: &T,
) -> Result<u64> {
    let bytes = meta_t
        .get(meta::SEQUENCE.as_bytes())?
        .ok_or_else(|| corrupted("meta sequence missing"))?;
    le::read_u64(bytes.value(), 0).ok_or_else(|| corrupted("meta sequence"))
}

/// The five roots concatenated in table order (160 bytes).
pub fn encode_roots(roots: &TableRoots) -> Vec<u8> {
    Table::ALL.iter().flat_map(|t| roots.get(*t).0).collect()
}

fn decode_roots(bytes: &[u8]) -> Result<TableRoots> {
    if bytes.len() != 5 * 32 {
        return Err(corrupted("meta table_roots is not 160 bytes"));
    }
    let root = |i: usize| {
        let mut h = [0u8; 32];
        h.copy_from_slice(&bytes[i * 32..i * 32 + 32]);
        MerkleRoot(h)
    };
    Ok(TableRoots {
        paths: root(0),
        documents: root(1),
        chunks: root(2),
        embeddings: root(3),
        edges: root(4),
    })
}

/// Little-endian reads of fixed-width integers from stored bytes.
pub mod le {
    /// The u32 at `at`, if the bytes reach that far.
    pub fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    }

    /// The u64 at `at`, if the bytes reach that far.
    pub fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    }
}
