//! Every redb table of the store, declared once, with its key and value encoding.
//!
//! Keys and values are `&[u8]` in cfs's own encodings, so redb's typed encodings can
//! never change the state. Committed tables hold canonical encodings (docs/spec.md);
//! the others are indexes and caches derived from them. `docs/format.md` is the
//! reference for these layouts.

use redb::TableDefinition;

type Bytes = TableDefinition<'static, &'static [u8], &'static [u8]>;

// Every committed row's value is its leaf hash (32) then its payload (`row_value`).

/// Committed: path id (16) -> leaf || canonical PathEntry.
pub const PATHS: Bytes = TableDefinition::new("paths");
/// Committed: document id (16) -> leaf || canonical Document.
pub const DOCUMENTS: Bytes = TableDefinition::new("documents");
/// Committed: chunk id (16) -> leaf || canonical Chunk.
pub const CHUNKS: Bytes = TableDefinition::new("chunks");
/// Committed: embedding id (16) -> leaf || chunk id (16) || model hash (32) || vector
/// hash (32); the canonical Embedding is the key, the next 48 bytes and the vector
/// (`vectors.rs`).
pub const EMBEDDINGS: Bytes = TableDefinition::new("embeddings");
/// Committed: edge key (source 16, target 16, kind u16 BE) -> leaf || canonical Edge.
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

/// A committed row's value split into its leaf hash and its payload.
pub fn split_row(value: &[u8]) -> crate::error::Result<(&[u8; 32], &[u8])> {
    value
        .split_first_chunk::<LEAF_LEN>()
        .ok_or_else(|| crate::error::StoreError::Corrupted("row shorter than its leaf".into()))
}

/// Every key of the `embeddings` table (embedding ids, 16 bytes), in key order.
pub fn embedding_ids<T: redb::ReadableTable<&'static [u8], &'static [u8]>>(
    table: &T,
) -> crate::error::Result<Vec<cfs_core::EmbeddingId>> {
    let mut ids = Vec::new();
    for row in table.iter()? {
        let key = row?.0;
        ids.push(cfs_core::EmbeddingId(key.value().try_into().map_err(
            |_| crate::error::StoreError::Corrupted("embedding key not 16 bytes".into()),
        )?));
    }
    Ok(ids)
}
