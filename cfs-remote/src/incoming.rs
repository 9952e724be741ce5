//! What a pull brings, checked before anything is written: the row tables of the
//! buckets whose roots differ from the store's, the rows of those buckets the store
//! lacks, and the vectors their embeddings name that the store lacks. Each fetched row
//! decodes strictly, validates, is keyed by its entity's key and hashes to the leaf its
//! table lists; with the store's rows that the table lists, the rows are in key order,
//! in their bucket, and their leaves make the bucket's root.

use std::collections::{BTreeMap, BTreeSet};

use cfs_core::{
    Chunk, Document, Edge, Embedding, Entity, MerkleRoot, PathEntry, Table, merkle_root,
};
use cfs_store::{EMBEDDING_PAYLOAD_LEN, ReadTxn, RowLeaf};

use crate::error::{RemoteError, Result};
use crate::fetch::{self, Fetched, Span};
use crate::format::{
    BucketEntry, Manifest, Row, VECTOR_TAG, VectorRow, decode_row, object_path, vector_bucket,
};
use crate::groups::{self, GROUP_BUCKETS};
use crate::pull::PullReport;
use crate::remote::Remote;
use crate::rows::{self, RowAt, ShortLeaf};

/// A table bucket whose root differs from the store's, with the manifest's entry for it
/// (`None`: the bucket is empty there).
pub(crate) type Wanted = ((Table, u16), Option<BucketEntry>);

/// The checked rows a pull fetched, and the store's rows that stay.
#[derive(Default)]
pub(crate) struct Arrived {
    pub paths: Vec<PathEntry>,
    pub documents: Vec<Document>,
    pub chunks: Vec<Chunk>,
    pub embeddings: Vec<Embedding>,
    pub edges: Vec<Edge>,
    /// The leaves of the store's rows, in the wanted buckets, that the pulled state
    /// holds too.
    pub kept: BTreeSet<[u8; 32]>,
}

/// A wanted bucket: its remote rows (the table's) and the store's.
struct Bucket {
    table: Table,
    entry: Option<BucketEntry>,
    remote: Vec<RowAt>,
    local: BTreeMap<ShortLeaf, RowLeaf>,
}

impl Bucket {
    /// Whether the store lacks the row its table lists at `r`.
    fn lacks(&self, r: &RowAt) -> bool {
        !self.local.contains_key(&r.leaf)
    }
}

/// Fetches and checks the rows of `wanted` the store lacks, and their vectors.
pub(crate) fn fetch(
    txn: &ReadTxn,
    remote: &dyn Remote,
    manifest: &Manifest,
    wanted: &[Wanted],
    fetched: &mut Fetched<'_>,
    report: &mut PullReport,
) -> Result<Arrived> {
    fetched.stage = "tables";
    let checker = Checker { remote };
    let buckets = tables(txn, &checker, wanted, fetched)?;
    report.buckets_fetched = buckets.iter().filter(|b| b.entry.is_some()).count();
    fetched.stage = "rows";
    let mut rows = lacking_rows(&checker, &buckets, fetched)?;
    report.rows_checked += rows.iter().flatten().flatten().count() as u64;
    let named: BTreeSet<[u8; 32]> = buckets
        .iter()
        .zip(&rows)
        .filter(|(b, _)| b.table == Table::Embeddings)
        .flat_map(|(_, rows)| rows.iter().flatten())
        .filter_map(|row| row.payload.get(48..)?.try_into().ok())
        .collect();
    let vectors = fetch_vectors(txn, &checker, manifest, named, fetched, report)?;
    let mut out = Arrived::default();
    for (b, rows) in buckets.iter().zip(rows.iter_mut()) {
        out.check(&checker, b, std::mem::take(rows), &vectors)?;
    }
    Ok(out)
}

/// The row tables of the wanted buckets, fetched and decoded, with the store's rows.
fn tables(
    txn: &ReadTxn,
    checker: &Checker<'_>,
    wanted: &[Wanted],
    fetched: &mut Fetched<'_>,
) -> Result<Vec<Bucket>> {
    let entries: Vec<BucketEntry> = wanted.iter().filter_map(|w| w.1).collect();
    let mut tables = rows::fetch_tables(checker.remote, &entries, fetched)?.into_iter();
    let mut out = Vec::with_capacity(wanted.len());
    for &((table, bucket), entry) in wanted {
        let remote = match entry {
            Some(_) => tables.next().expect("a table per entry"),
            None => Vec::new(),
        };
        let local = txn
            .bucket_leaves(table, bucket)?
            .into_iter()
            .map(|r| (rows::short(&r.leaf), r))
            .collect();
        out.push(Bucket {
            table,
            entry,
            remote,
            local,
        });
    }
    Ok(out)
}

/// The rows each bucket's table lists that the store lacks, fetched, in the table's
/// order (`None`: the store's row).
fn lacking_rows(
    checker: &Checker<'_>,
    buckets: &[Bucket],
    fetched: &mut Fetched<'_>,
) -> Result<Vec<Vec<Option<Row>>>> {
    let spans: Vec<Span> = buckets
        .iter()
        .flat_map(|b| b.remote.iter().filter(|r| b.lacks(r)))
        .map(RowAt::span)
        .collect();
    let mut bytes = fetch::spans(checker.remote, &spans, fetched)?.into_iter();
    let mut out = Vec::with_capacity(buckets.len());
    for b in buckets {
        let mut rows = Vec::with_capacity(b.remote.len());
        for (i, at) in b.remote.iter().enumerate() {
            if !b.lacks(at) {
                rows.push(None);
                continue;
            }
            let row_bytes = bytes.next().expect("bytes per lacking row");
            let entry = b.entry.as_ref().expect("rows only where a table is");
            let row = decode_row::<Row>(&row_bytes)
                .map_err(|r| checker.damaged(entry, format!("row {i}: {r}")))?;
            rows.push(Some(row));
        }
        out.push(rows);
    }
    Ok(out)
}

/// The encodings of the vectors `named` that the store lacks, from the manifest's
/// vector buckets: each found by its hash in its bucket's row table, fetched, decoded
/// strictly and hashed to its name. The store's are read where embedding rows need them.
fn fetch_vectors(
    txn: &ReadTxn,
    checker: &Checker<'_>,
    manifest: &Manifest,
    named: BTreeSet<[u8; 32]>,
    fetched: &mut Fetched<'_>,
    report: &mut PullReport,
) -> Result<BTreeMap<[u8; 32], Vec<u8>>> {
    let mut vectors = BTreeMap::new();
    let mut lacking = Vec::new();
    for hash in named {
        match txn.vector_encoding(&hash)? {
            Some(encoding) => drop(vectors.insert(hash, encoding)),
            None => lacking.push(hash),
        }
    }
    let buckets: BTreeSet<u16> = lacking.iter().map(vector_bucket).collect();
    let wanted_groups: BTreeSet<usize> = buckets
        .iter()
        .map(|&b| usize::from(b) / GROUP_BUCKETS)
        .collect();
    let wanted_groups: Vec<BucketEntry> = wanted_groups
        .into_iter()
        .filter_map(|g| manifest.group(VECTOR_TAG, g))
        .collect();
    fetched.stage = "vector groups";
    let in_groups = groups::fetch(checker.remote, &wanted_groups, fetched)?;
    let entries: Vec<BucketEntry> = in_groups
        .values()
        .filter(|e| buckets.contains(&e.bucket))
        .copied()
        .collect();
    fetched.stage = "vector tables";
    let mut at: BTreeMap<ShortLeaf, (RowAt, BucketEntry)> = BTreeMap::new();
    for (e, rows) in entries
        .iter()
        .zip(rows::fetch_tables(checker.remote, &entries, fetched)?)
    {
        at.extend(rows.into_iter().map(|r| (r.leaf, (r, *e))));
    }
    report.vector_buckets_fetched = entries.len();
    // A vector its bucket's table does not list stays lacking: the embedding that
    // names it is refused below.
    let found: Vec<([u8; 32], RowAt, BucketEntry)> = lacking
        .iter()
        .filter_map(|h| at.get(&rows::short(h)).map(|(r, e)| (*h, *r, *e)))
        .collect();
    fetched.stage = "vectors";
    let spans: Vec<Span> = found.iter().map(|f| f.1.span()).collect();
    for ((hash, _, entry), bytes) in
        found
            .iter()
            .zip(fetch::spans(checker.remote, &spans, fetched)?)
    {
        let row = decode_row::<VectorRow>(&bytes).map_err(|r| checker.damaged(entry, r))?;
        if row.hash != *hash || *blake3::hash(&row.encoding).as_bytes() != *hash {
            let reason = format!(
                "vector {} does not hash to its name",
                cfs_core::hex_encode(hash)
            );
            return Err(checker.damaged(entry, reason));
        }
        report.rows_checked += 1;
        vectors.insert(row.hash, row.encoding);
    }
    Ok(vectors)
}

/// An embedding's canonical encoding from its row: `key || payload[..48] || vector`.
fn embedding_encoding(
    row: &Row,
    vectors: &BTreeMap<[u8; 32], Vec<u8>>,
) -> std::result::Result<Vec<u8>, String> {
    if row.payload.len() != EMBEDDING_PAYLOAD_LEN {
        return Err(format!("an embedding row of {} bytes", row.payload.len()));
    }
    let hash: [u8; 32] = row.payload[48..].try_into().expect("32 bytes");
    let vector = vectors.get(&hash).ok_or_else(|| {
        format!(
            "vector {} is in no vector bucket",
            cfs_core::hex_encode(&hash)
        )
    })?;
    Ok([&row.key[..], &row.payload[..48], vector].concat())
}

/// Names what is damaged.
struct Checker<'a> {
    remote: &'a dyn Remote,
}

impl Checker<'_> {
    fn damaged(&self, entry: &BucketEntry, reason: String) -> RemoteError {
        RemoteError::Damaged {
            remote: self.remote.describe(),
            name: format!(
                "{} (bucket {} of {})",
                object_path(&entry.pack),
                entry.bucket,
                tag_name(entry.tag)
            ),
            reason,
        }
    }
}

fn tag_name(tag: u8) -> &'static str {
    Table::ALL
        .get(usize::from(tag))
        .map_or("vectors", |t| t.name())
}

/// One row of a bucket as checked: its key and leaf, and the entity if it was fetched.
struct Checked<E> {
    key: Vec<u8>,
    leaf: [u8; 32],
    fetched: Option<E>,
}

impl Arrived {
    /// Checks bucket `b` (its fetched rows `rows`, aligned with its table) and keeps its
    /// fetched entities and the leaves of the store's rows it lists.
    fn check(
        &mut self,
        checker: &Checker<'_>,
        b: &Bucket,
        rows: Vec<Option<Row>>,
        vectors: &BTreeMap<[u8; 32], Vec<u8>>,
    ) -> Result<()> {
        let Some(entry) = &b.entry else {
            return Ok(());
        };
        let plain = |row: &Row| Ok(row.payload.clone());
        match b.table {
            Table::Paths => {
                let rows = self.rows(checker, entry, b, rows, plain)?;
                self.paths.extend(rows);
            }
            Table::Documents => {
                let rows = self.rows(checker, entry, b, rows, plain)?;
                self.documents.extend(rows);
            }
            Table::Chunks => {
                let rows = self.rows(checker, entry, b, rows, plain)?;
                self.chunks.extend(rows);
            }
            Table::Embeddings => {
                let encode = |row: &Row| embedding_encoding(row, vectors);
                let rows = self.rows(checker, entry, b, rows, encode)?;
                self.embeddings.extend(rows);
            }
            Table::Edges => {
                let rows = self.rows::<Edge>(checker, entry, b, rows, plain)?;
                self.edges.extend(rows);
            }
        }
        Ok(())
    }

    /// The entities of a bucket's fetched rows, each decoded strictly, validated, keyed
    /// by its own key and hashing to the leaf its table lists; with the store's rows the
    /// table lists, in key order, in the bucket, their leaves making its root.
    fn rows<E: Entity>(
        &mut self,
        checker: &Checker<'_>,
        entry: &BucketEntry,
        b: &Bucket,
        rows: Vec<Option<Row>>,
        canonical: impl Fn(&Row) -> std::result::Result<Vec<u8>, String>,
    ) -> Result<Vec<E>> {
        let mut checked: Vec<Checked<E>> = Vec::with_capacity(rows.len());
        for (i, (at, row)) in b.remote.iter().zip(rows).enumerate() {
            let bad = |what: &str| checker.damaged(entry, format!("row {i}: {what}"));
            checked.push(match row {
                None => {
                    let local = &b.local[&at.leaf];
                    self.kept.insert(local.leaf);
                    Checked {
                        key: local.key.clone(),
                        leaf: local.leaf,
                        fetched: None,
                    }
                }
                Some(row) => {
                    let encoding = canonical(&row).map_err(|r| bad(&r))?;
                    let entity = E::decode(&encoding).map_err(|e| bad(&e.to_string()))?;
                    let leaf = E::leaf_of_encoding(&encoding).0;
                    if entity.row_key() != row.key {
                        return Err(bad("its key is not its entity's"));
                    }
                    if rows::short(&leaf) != at.leaf {
                        return Err(bad("it does not hash to the leaf its table lists"));
                    }
                    Checked {
                        key: row.key,
                        leaf,
                        fetched: Some(entity),
                    }
                }
            });
        }
        let bucket = entry.bucket;
        let in_order = checked.windows(2).all(|w| w[0].key < w[1].key);
        if !in_order
            || checked
                .iter()
                .any(|c| cfs_core::Bucket::of_key(&c.key).0 != bucket)
        {
            return Err(checker.damaged(entry, "its rows are out of key order or bucket".into()));
        }
        let leaves: Vec<[u8; 32]> = checked.iter().map(|c| c.leaf).collect();
        if merkle_root(&leaves) != MerkleRoot(entry.root) {
            return Err(checker.damaged(entry, "its rows do not make its root".into()));
        }
        Ok(checked.into_iter().filter_map(|c| c.fetched).collect())
    }
}
