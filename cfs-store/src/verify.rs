//! `verify`: recompute everything from the rows and compare.
//!
//! Every committed row is decoded strictly and validated, its key checked against the
//! key its content derives, its leaf hash recomputed and compared with the stored leaf;
//! bucket roots, table roots and the state root are recomputed and compared with the
//! stored ones; the reference rules of the state are checked (no orphan chunk, embedding
//! or edge; every path names a document; documents match their chunks); the indexes are
//! compared with the rows they index; the state chain must end at the current root.

use cfs_core::{
    Bucket, Chunk, Document, Edge, Embedding, Entity, PathEntry, PrefixIndex, Rows, StateRoot,
    Table, TableRoots, TopTree, bucket_roots_from_sorted, check_rows, hex_encode,
};
use rayon::prelude::*;
use redb::ReadableTableMetadata;

use crate::error::Result;
use crate::read::{Counts, ReadTxn};
use crate::tables::{self, read_bucket_roots};
use crate::vectors::{self, StoredEmbedding, VectorHash};

/// What `verify` found.
#[derive(Clone, Debug)]
pub struct VerifyReport {
    /// The root the store says it holds.
    pub stored_root: StateRoot,
    /// The root recomputed from the rows.
    pub computed_root: StateRoot,
    /// Row counts.
    pub counts: Counts,
    /// Every problem found; empty when the store is sound.
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// True when nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty() && self.stored_root == self.computed_root
    }
}

struct Scan<E> {
    rows: Vec<E>,
    leaves: Vec<(Bucket, [u8; 32])>,
}

/// Key ranges scanned in parallel: by the first key byte, 16 values each.
const SCAN_RANGES: u16 = 16;

/// The rows of one key range, each checked against the leaf stored at its head.
struct RangeScan<E> {
    rows: Vec<E>,
    leaves: Vec<(Bucket, [u8; 32])>,
    problems: Vec<String>,
}

/// A row decoded, checked against its key, and its leaf hash; or the problem with it.
type Decoded<E> = std::result::Result<(E, [u8; 32]), String>;

/// Decodes a row stored in canonical form, checking that it lies under the key its
/// content gives.
fn canonical_row<E: Entity>() -> impl Fn(&[u8], &[u8]) -> Decoded<E> + Sync {
    move |key, value| {
        let table = E::TABLE.name();
        let entity =
            E::decode(value).map_err(|e| format!("{table} row {}: {e}", hex_encode(key)))?;
        if entity.row_key() != key {
            return Err(format!(
                "{table} row {} is stored under another key than its content gives",
                hex_encode(key)
            ));
        }
        // Strict decoding accepts only the canonical encoding of the value it returns,
        // so the bytes read are that encoding: hash them instead of encoding again.
        let leaf = E::leaf_of_encoding(value).0;
        Ok((entity, leaf))
    }
}

/// Reads a chunk row's encoding from the chunk log (`chunk_log.rs`), then checks it as
/// [`canonical_row`] does.
fn chunk_row(read: &ReadTxn) -> impl Fn(&[u8], &[u8]) -> Decoded<Chunk> + Sync + '_ {
    let canonical = canonical_row::<Chunk>();
    move |key, payload| {
        let encoding = tables::Extent::decode(payload)
            .and_then(|extent| read.log_bytes(extent))
            .map_err(|e| format!("chunks row {}: {e}", hex_encode(key)))?;
        canonical(key, &encoding)
    }
}

/// The chunk log's extents: no two chunks share a byte (each extent lies within the
/// committed log, which reading the chunks checked).
fn check_log_extents(read: &ReadTxn, problems: &mut Vec<String>) -> Result<()> {
    let mut extents = read_ranges(read, tables::CHUNKS, |k, v| {
        tables::split_row(v)
            .and_then(|(_, payload)| tables::Extent::decode(payload))
            .map(|extent| (extent.offset, extent.end(), k.to_vec()))
    })?
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    extents.sort_unstable();
    for pair in extents.windows(2) {
        if pair[1].0 < pair[0].1 {
            problems.push(format!(
                "chunks rows {} and {} name overlapping bytes of the chunk log",
                hex_encode(&pair[0].2),
                hex_encode(&pair[1].2)
            ));
        }
    }
    Ok(())
}

/// Every stored vector, sorted by hash, each checked against its hash and decoded
/// strictly.
fn load_vectors(read: &ReadTxn, problems: &mut Vec<String>) -> Result<Vec<(VectorHash, Vec<u8>)>> {
    let mut rows = Vec::new();
    let all = read_ranges(read, tables::VECTORS, |k, v| {
        VectorHash::try_from(k)
            .map(|hash| (hash, v.to_vec()))
            .map_err(|_| format!("vector key {} is not 32 bytes", hex_encode(k)))
    })?;
    for row in all {
        match row {
            Ok(row) => rows.push(row),
            Err(problem) => problems.push(problem),
        }
    }
    let bad: Vec<String> = rows
        .par_iter()
        .filter_map(|(hash, bytes)| {
            if vectors::vector_hash(bytes) != *hash {
                return Some(format!("vector {} differs from its hash", hex_encode(hash)));
            }
            cfs_core::decode_vector(bytes)
                .err()
                .map(|e| format!("vector {}: {e}", hex_encode(hash)))
        })
        .collect();
    problems.extend(bad);
    Ok(rows)
}

/// Decodes an embedding row (`vectors.rs`) and hashes the embedding it makes with its
/// vector. The entity returned carries no vector: the reference rules need only its
/// ids, and the vector was checked once in `load_vectors`.
fn embedding_row(
    vectors: &[(VectorHash, Vec<u8>)],
) -> impl Fn(&[u8], &[u8]) -> Decoded<Embedding> + Sync {
    let index = PrefixIndex::new(vectors, |(h, _)| &h[..]);
    move |key, value| {
        let stored = StoredEmbedding::decode(value)
            .map_err(|e| format!("embeddings row {}: {e}", hex_encode(key)))?;
        let id = stored.id();
        if id.0[..] != *key {
            return Err(format!(
                "embeddings row {} is stored under another key than its content gives",
                hex_encode(key)
            ));
        }
        let at = index
            .find(vectors, |(h, _)| &h[..], &stored.vector)
            .ok_or_else(|| {
                format!(
                    "embeddings row {} names the absent vector {}",
                    hex_encode(key),
                    hex_encode(&stored.vector)
                )
            })?;
        let leaf =
            Embedding::leaf_of_parts(&id, &stored.chunk_id, &stored.model_hash, &vectors[at].1).0;
        let entity = Embedding {
            id,
            chunk_id: stored.chunk_id,
            model_hash: stored.model_hash,
            vector: Vec::new(),
        };
        Ok((entity, leaf))
    }
}

type RowTable = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;

/// The rows of key range `range` of [`SCAN_RANGES`] (by the first key byte).
fn key_range(
    table: &RowTable,
    range: u16,
) -> Result<redb::Range<'static, &'static [u8], &'static [u8]>> {
    let width = 256 / SCAN_RANGES;
    let lo = [(range * width) as u8];
    let hi = (range + 1) * width;
    Ok(if hi > 255 {
        table.range::<&[u8]>(&lo[..]..)?
    } else {
        table.range::<&[u8]>(&lo[..]..&[hi as u8][..])?
    })
}

/// Every row of a table mapped by `f`, in key order, the key ranges read in parallel.
fn read_ranges<T: Send>(
    read: &ReadTxn,
    def: redb::TableDefinition<'static, &'static [u8], &'static [u8]>,
    f: impl Fn(&[u8], &[u8]) -> T + Sync,
) -> Result<Vec<T>> {
    let table = read.raw().open_table(def)?;
    let parts: Vec<Vec<T>> = (0..SCAN_RANGES)
        .into_par_iter()
        .map(|range| {
            let mut out = Vec::new();
            for row in key_range(&table, range)? {
                let (k, v) = row?;
                out.push(f(k.value(), v.value()));
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    Ok(parts.into_iter().flatten().collect())
}

fn scan_range<E: Entity>(
    rows_t: &RowTable,
    range: u16,
    decode: &(impl Fn(&[u8], &[u8]) -> Decoded<E> + Sync),
) -> Result<RangeScan<E>> {
    let table = E::TABLE;
    let rows_iter = key_range(rows_t, range)?;
    let mut out = RangeScan {
        rows: Vec::new(),
        leaves: Vec::new(),
        problems: Vec::new(),
    };
    for row in rows_iter {
        let (k, v) = row?;
        let key = k.value();
        let Ok((stored_leaf, payload)) = tables::split_row(v.value()) else {
            out.problems.push(format!(
                "{} row {}: shorter than its leaf",
                table.name(),
                hex_encode(key)
            ));
            continue;
        };
        let (entity, leaf) = match decode(key, payload) {
            Ok(decoded) => decoded,
            Err(problem) => {
                out.problems.push(problem);
                continue;
            }
        };
        if *stored_leaf != leaf {
            out.problems.push(format!(
                "{} row {}: stored leaf hash wrong",
                table.name(),
                hex_encode(key)
            ));
        }
        out.leaves.push((Bucket::of_key(key), leaf));
        out.rows.push(entity);
    }
    Ok(out)
}

/// Every row of a table, decoded, validated and hashed, 16 key ranges in parallel, each
/// row checked against the leaf stored with it.
fn scan<E: Entity>(
    read: &ReadTxn,
    decode: impl Fn(&[u8], &[u8]) -> Decoded<E> + Sync,
    problems: &mut Vec<String>,
) -> Result<Scan<E>> {
    let rows_t = read.raw().open_table(tables::committed(E::TABLE))?;
    let parts: Vec<RangeScan<E>> = (0..SCAN_RANGES)
        .into_par_iter()
        .map(|range| scan_range(&rows_t, range, &decode))
        .collect::<Result<_>>()?;
    let mut out = Scan {
        rows: Vec::new(),
        leaves: Vec::new(),
    };
    for part in parts {
        out.rows.extend(part.rows);
        out.leaves.extend(part.leaves);
        problems.extend(part.problems);
    }
    Ok(out)
}

/// Verifies one committed state.
pub fn verify(read: &ReadTxn) -> Result<VerifyReport> {
    let mut problems = Vec::new();
    let stored_roots = read.table_roots()?;
    let counts = read.counts()?;
    let scans = Scans::read(read, &mut problems)?;
    let computed = check_roots(read, &scans, &stored_roots, &mut problems)?;
    // Reference rules, on the decoded rows.
    // The scans return each table in key order, as check_rows needs.
    let chunk_leaves: Vec<[u8; 32]> = scans.chunks.leaves.iter().map(|(_, l)| *l).collect();
    problems.extend(check_rows(&Rows {
        paths: &scans.paths.rows,
        documents: &scans.documents.rows,
        chunks: &scans.chunks.rows,
        embeddings: &scans.embeddings.rows,
        edges: &scans.edges.rows,
        chunk_leaves: Some(&chunk_leaves),
    }));
    check_indexes(read, &scans, &mut problems)?;
    check_log_extents(read, &mut problems)?;
    check_content_index(read, &scans.documents.rows, &mut problems)?;
    check_chain(read, &stored_roots, &mut problems)?;
    // Millions of decoded rows take a while to free: off the caller's path.
    rayon::spawn(move || drop(scans));
    Ok(VerifyReport {
        stored_root: stored_roots.state_root(),
        computed_root: computed.state_root(),
        counts,
        problems,
    })
}

/// Every committed table decoded and checked row by row, with its leaves.
struct Scans {
    paths: Scan<PathEntry>,
    documents: Scan<Document>,
    chunks: Scan<Chunk>,
    embeddings: Scan<Embedding>,
    edges: Scan<Edge>,
}

impl Scans {
    fn read(read: &ReadTxn, problems: &mut Vec<String>) -> Result<Self> {
        let paths = scan(read, canonical_row::<PathEntry>(), problems)?;
        let documents = scan(read, canonical_row::<Document>(), problems)?;
        let chunks = scan(read, chunk_row(read), problems)?;
        let vectors = load_vectors(read, problems)?;
        let embeddings = scan(read, embedding_row(&vectors), problems)?;
        drop(vectors);
        let edges = scan(read, canonical_row::<Edge>(), problems)?;
        Ok(Self {
            paths,
            documents,
            chunks,
            embeddings,
            edges,
        })
    }
}

/// Each table's bucket roots and root recomputed from its leaves and compared with the
/// stored ones; the computed table roots.
fn check_roots(
    read: &ReadTxn,
    scans: &Scans,
    stored_roots: &TableRoots,
    problems: &mut Vec<String>,
) -> Result<TableRoots> {
    let mut computed = TableRoots::empty();
    let bucket_table = read.raw().open_table(tables::BUCKET_ROOTS)?;
    for (table, leaves) in [
        (Table::Paths, &scans.paths.leaves),
        (Table::Documents, &scans.documents.leaves),
        (Table::Chunks, &scans.chunks.leaves),
        (Table::Embeddings, &scans.embeddings.leaves),
        (Table::Edges, &scans.edges.leaves),
    ] {
        let expected = bucket_roots_from_sorted(leaves)?;
        computed.set(table, TopTree::from_bucket_roots(&expected)?.root());
        if computed.get(table) != stored_roots.get(table) {
            problems.push(format!(
                "{} root: stored {}, computed {}",
                table.name(),
                stored_roots.get(table),
                computed.get(table)
            ));
        }
        let stored = read_bucket_roots(&bucket_table, table)?;
        for (b, (root, want)) in stored.iter().zip(&expected).enumerate() {
            if root != want {
                problems.push(format!(
                    "{} bucket {b}: stored root differs from its leaves",
                    table.name()
                ));
            }
        }
    }
    Ok(computed)
}

/// The `CHUNKS_BY_DOCUMENT` rows the chunks imply, in key order: a row a document, its
/// chunk ids in sequence order.
fn chunk_index_of(chunks: &[Chunk]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut order: Vec<&Chunk> = chunks.iter().collect();
    order.par_sort_unstable_by_key(|c| (c.document_id, c.sequence));
    order
        .chunk_by(|a, b| a.document_id == b.document_id)
        .map(|of_document| {
            let ids = of_document.iter().map(|c| &c.id);
            (
                of_document[0].document_id.0.to_vec(),
                tables::chunk_index_value(ids),
            )
        })
        .collect()
}

/// The secondary indexes against the rows: fixed-size entries, sorted, compared as
/// vectors (redb iterates keys in order, so the stored side is already sorted).
fn check_indexes(read: &ReadTxn, scans: &Scans, problems: &mut Vec<String>) -> Result<()> {
    let found: Vec<(Vec<u8>, Vec<u8>)> = read_ranges(read, tables::CHUNKS_BY_DOCUMENT, |k, v| {
        (k.to_vec(), v.to_vec())
    })?;
    if found != chunk_index_of(&scans.chunks.rows) {
        problems.push("chunks_by_document index differs from the chunks".into());
    }
    let mut expected: Vec<[u8; 32]> = scans
        .paths
        .rows
        .iter()
        .map(|p| tables::path_index_key(&p.document_id, &p.id()))
        .collect();
    expected.sort_unstable();
    let found: Vec<[u8; 32]> = read_ranges(read, tables::PATHS_BY_DOCUMENT, |k, _| {
        <[u8; 32]>::try_from(k).unwrap_or([0; 32])
    })?;
    if found != expected {
        problems.push("paths_by_document index differs from the paths".into());
    }
    let mut expected: Vec<[u8; 34]> = scans
        .edges
        .rows
        .par_iter()
        .filter(|e| !e.kind.is_system())
        .map(tables::edge_by_target_key)
        .collect();
    expected.par_sort_unstable();
    let found: Vec<[u8; 34]> = read_ranges(read, tables::EDGES_BY_TARGET, |k, _| {
        <[u8; 34]>::try_from(k).unwrap_or([0; 34])
    })?;
    if found != expected {
        problems.push("edges_by_target index differs from the edges".into());
    }
    Ok(())
}

/// One content-index entry per document, naming it.
fn check_content_index(
    read: &ReadTxn,
    documents: &[Document],
    problems: &mut Vec<String>,
) -> Result<()> {
    let content = read.raw().open_table(tables::CONTENT_INDEX)?;
    if content.len()? != documents.len() as u64 {
        problems.push(format!(
            "content index has {} entries for {} documents",
            content.len()?,
            documents.len()
        ));
    }
    for d in documents {
        let key = tables::content_key(&d.content_hash, &d.profile.mime_type);
        if content.get(key.as_slice())?.map(|v| v.value().to_vec()) != Some(d.id.0.to_vec()) {
            problems.push(format!(
                "document {} is missing from the content index",
                d.id
            ));
        }
    }
    Ok(())
}

/// The chain ends at the current root and links each record to the one before.
fn check_chain(
    read: &ReadTxn,
    stored_roots: &TableRoots,
    problems: &mut Vec<String>,
) -> Result<()> {
    let chain = read.state_chain()?;
    let mut parent = TableRoots::empty().state_root();
    for (i, record) in chain.iter().enumerate() {
        if record.sequence != i as u64 + 1 || record.parent != parent {
            problems.push(format!("state chain broken at record {}", record.sequence));
        }
        parent = record.root;
    }
    if parent != stored_roots.state_root() {
        problems.push("the state chain does not end at the current root".into());
    }
    if read.sequence()? != chain.len() as u64 {
        problems.push("meta sequence differs from the state chain".into());
    }
    Ok(())
}
