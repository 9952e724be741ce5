//! Every redb table of the store, declared once, with its key and value encoding.
//!
//! Keys and values are `&[u8]` in cfs's own encodings, so redb's typed encodings can
//! never change the state. Committed tables hold canonical encodings (docs/spec.md);
//! the others are indexes and caches derived from them. `docs/format.md` is the
//! reference for these layouts.

use redb::TableDefinition;

type Bytes = TableDefinition<'static, &'static [u8], &'static [u8]>;

/// Committed: path id (16) -> canonical PathEntry.
pub const PATHS: Bytes = TableDefinition::new("paths");
/// Committed: document id (16) -> canonical Document.
pub const DOCUMENTS: Bytes = TableDefinition::new("documents");
/// Committed: chunk id (16) -> canonical Chunk.
pub const CHUNKS: Bytes = TableDefinition::new("chunks");
/// Committed: embedding id (16) -> chunk id (16) || model hash (32) || vector hash (32);
/// the canonical Embedding is the key, the first 48 bytes and the vector (`vectors.rs`).
pub const EMBEDDINGS: Bytes = TableDefinition::new("embeddings");
/// Committed: edge key (source 16, target 16, kind u16 BE) -> canonical Edge.
pub const EDGES: Bytes = TableDefinition::new("edges");

/// Index: document id (16) || sequence (u32 BE) -> chunk id (16).
pub const CHUNKS_BY_DOCUMENT: Bytes = TableDefinition::new("chunks_by_document");
/// Index: document id (16) || path id (16) -> empty; a document's paths (its references).
pub const PATHS_BY_DOCUMENT: Bytes = TableDefinition::new("paths_by_document");
/// Index: target (16) || source (16) || kind (u16 BE) -> empty.
pub const EDGES_BY_TARGET: Bytes = TableDefinition::new("edges_by_target");
/// Index: content hash (32) || MIME type (UTF-8) -> document id (16): finds the document
/// of known content without parsing it again (renames, copies).
pub const CONTENT_INDEX: Bytes = TableDefinition::new("content_index");
/// Index: table (u8) || key -> leaf hash (32), for rehashing one bucket.
pub const LEAVES: Bytes = TableDefinition::new("leaves");
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
pub const ALL: [Bytes; 16] = [
    PATHS,
    DOCUMENTS,
    CHUNKS,
    EMBEDDINGS,
    EDGES,
    CHUNKS_BY_DOCUMENT,
    PATHS_BY_DOCUMENT,
    EDGES_BY_TARGET,
    CONTENT_INDEX,
    LEAVES,
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

/// The one-byte tag of a table in `LEAVES` and `BUCKET_ROOTS` keys: its state-root order.
pub fn tag(table: cfs_core::Table) -> u8 {
    match table {
        cfs_core::Table::Paths => 0,
        cfs_core::Table::Documents => 1,
        cfs_core::Table::Chunks => 2,
        cfs_core::Table::Embeddings => 3,
        cfs_core::Table::Edges => 4,
    }
}

/// The key range of one bucket of a table in `LEAVES`: `[tag || lo, tag || hi)`, where
/// `lo`/`hi` are the first two key bytes of bucket `b` and `b + 1` (the last bucket's
/// upper bound is the next tag).
pub fn bucket_range(table: cfs_core::Table, bucket: u16) -> (Vec<u8>, Vec<u8>) {
    let shift = 16 - cfs_core::BUCKET_BITS;
    let lo = (u32::from(bucket)) << shift;
    let hi = (u32::from(bucket) + 1) << shift;
    let t = tag(table);
    let start = vec![t, (lo >> 8) as u8, lo as u8];
    let end = if hi > 0xffff {
        vec![t + 1]
    } else {
        vec![t, (hi >> 8) as u8, hi as u8]
    };
    (start, end)
}
