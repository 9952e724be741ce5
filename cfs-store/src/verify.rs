//! `verify`: recompute everything from the rows and compare.
//!
//! Every committed row is decoded strictly and validated, its key checked against the
//! key its content derives, its leaf hash recomputed and compared with the stored leaf;
//! bucket roots, table roots and the state root are recomputed and compared with the
//! stored ones; the reference rules of the state are checked (no orphan chunk, embedding
//! or edge; every path names a document; documents match their chunks); the indexes are
//! compared with the rows they index; the state chain must end at the current root.

use std::collections::BTreeMap;

use cfs_core::{
    Bucket, CanonicalState, Chunk, Document, Edge, Embedding, Entity, MerkleRoot, PathEntry,
    StateRoot, Table, TableRoots, merkle_root, table_root_from_sorted,
};
use rayon::prelude::*;
use redb::{ReadableTable, ReadableTableMetadata};

use crate::error::Result;
use crate::read::{Counts, ReadTxn};
use crate::tables;
use crate::write::read_bucket_roots;

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

/// A decoded row with its leaf hash and whether its key matches its content, or the
/// reason it does not decode.
type Checked<E> = std::result::Result<(E, [u8; 32], bool), String>;

struct Scan<E> {
    rows: Vec<E>,
    leaves: Vec<(Bucket, [u8; 32])>,
}

fn scan<E: Entity>(
    read: &ReadTxn,
    key_bytes: impl Fn(&E) -> Vec<u8> + Sync,
    problems: &mut Vec<String>,
) -> Result<Scan<E>> {
    let table = E::TABLE;
    let tag = tables::tag(table);
    let mut raw: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for row in read.raw().open_table(tables::committed(table))?.iter()? {
        let (k, v) = row?;
        raw.push((k.value().to_vec(), v.value().to_vec()));
    }
    let mut stored: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let leaves_t = read.raw().open_table(tables::LEAVES)?;
    for row in leaves_t.range::<&[u8]>(&[tag][..]..&[tag + 1][..])? {
        let (k, v) = row?;
        stored.push((k.value()[1..].to_vec(), v.value().to_vec()));
    }
    // Decode, validate and hash in parallel; compare in key order.
    let checked: Vec<Checked<E>> = raw
        .par_iter()
        .map(|(key, value)| match E::decode(value) {
            Ok(entity) => {
                let leaf = entity.leaf().0;
                let key_ok = key_bytes(&entity) == *key;
                Ok((entity, leaf, key_ok))
            }
            Err(e) => Err(format!(
                "{} row {}: {e}",
                table.name(),
                cfs_core::hex_encode(key)
            )),
        })
        .collect();
    let mut out = Scan {
        rows: Vec::with_capacity(raw.len()),
        leaves: Vec::with_capacity(raw.len()),
    };
    if stored.len() != raw.len() {
        problems.push(format!(
            "{}: {} stored leaves for {} rows",
            table.name(),
            stored.len(),
            raw.len()
        ));
    }
    // Rows and leaves are both in key order: walk them together.
    let mut stored_iter = stored.iter().peekable();
    for ((key, _), result) in raw.iter().zip(checked) {
        let (entity, leaf, key_ok) = match result {
            Ok(ok) => ok,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        if !key_ok {
            problems.push(format!(
                "{} row {} is stored under another key than its content gives",
                table.name(),
                cfs_core::hex_encode(key)
            ));
        }
        while stored_iter.peek().is_some_and(|(k, _)| k < key) {
            stored_iter.next();
        }
        let matches = stored_iter
            .peek()
            .is_some_and(|(k, v)| k == key && v.as_slice() == &leaf[..]);
        if !matches {
            problems.push(format!(
                "{} row {}: stored leaf hash missing or wrong",
                table.name(),
                cfs_core::hex_encode(key)
            ));
        }
        out.leaves.push((Bucket::of_key(key), leaf));
        out.rows.push(entity);
    }
    Ok(out)
}

fn bucket_roots_of(leaves: &[(Bucket, [u8; 32])]) -> BTreeMap<u16, MerkleRoot> {
    let mut by: BTreeMap<u16, Vec<[u8; 32]>> = BTreeMap::new();
    for (b, l) in leaves {
        by.entry(b.0).or_default().push(*l);
    }
    by.into_iter()
        .map(|(b, ls)| (b, merkle_root(&ls)))
        .collect()
}

/// Verifies one committed state.
pub fn verify(read: &ReadTxn) -> Result<VerifyReport> {
    let mut problems = Vec::new();
    let stored_roots = read.table_roots()?;
    let counts = read.counts()?;
    let paths: Scan<PathEntry> = scan(read, |p: &PathEntry| p.id().0.to_vec(), &mut problems)?;
    let documents: Scan<Document> = scan(read, |d: &Document| d.id.0.to_vec(), &mut problems)?;
    let chunks: Scan<Chunk> = scan(read, |c: &Chunk| c.id.0.to_vec(), &mut problems)?;
    let embeddings: Scan<Embedding> = scan(read, |e: &Embedding| e.id.0.to_vec(), &mut problems)?;
    let edges: Scan<Edge> = scan(read, |e: &Edge| e.key().to_vec(), &mut problems)?;
    let n_leaves = read.raw().open_table(tables::LEAVES)?.len()?;
    let n_rows = (paths.rows.len()
        + documents.rows.len()
        + chunks.rows.len()
        + embeddings.rows.len()
        + edges.rows.len()) as u64;
    if n_leaves != n_rows {
        problems.push(format!("{n_leaves} stored leaves for {n_rows} rows"));
    }

    let mut computed = TableRoots::empty();
    let bucket_table = read.raw().open_table(tables::BUCKET_ROOTS)?;
    for (table, leaves) in [
        (Table::Paths, &paths.leaves),
        (Table::Documents, &documents.leaves),
        (Table::Chunks, &chunks.leaves),
        (Table::Embeddings, &embeddings.leaves),
        (Table::Edges, &edges.leaves),
    ] {
        computed.set(table, table_root_from_sorted(leaves)?);
        if computed.get(table) != stored_roots.get(table) {
            problems.push(format!(
                "{} root: stored {}, computed {}",
                table.name(),
                stored_roots.get(table),
                computed.get(table)
            ));
        }
        let expected = bucket_roots_of(leaves);
        let stored = read_bucket_roots(&bucket_table, table)?;
        for (b, root) in stored.iter().enumerate() {
            let want = expected
                .get(&(b as u16))
                .copied()
                .unwrap_or_else(MerkleRoot::empty);
            if *root != want {
                problems.push(format!(
                    "{} bucket {b}: stored root differs from its leaves",
                    table.name()
                ));
            }
        }
    }

    // Reference rules, on the decoded rows.
    let state = CanonicalState::from_rows(
        paths.rows,
        documents.rows,
        chunks.rows,
        embeddings.rows,
        edges.rows,
    );
    problems.extend(state.check_integrity());

    // Indexes against the rows: fixed-size entries, sorted, compared as vectors (redb
    // iterates keys in order, so the stored side is already sorted).
    let mut expected: Vec<[u8; 36]> = state
        .chunks()
        .values()
        .map(|c| {
            let mut e = [0u8; 36];
            e[..16].copy_from_slice(&c.document_id.0);
            e[16..20].copy_from_slice(&c.sequence.to_be_bytes());
            e[20..].copy_from_slice(&c.id.0);
            e
        })
        .collect();
    expected.par_sort_unstable();
    let mut found: Vec<[u8; 36]> = Vec::with_capacity(expected.len());
    for row in read.raw().open_table(tables::CHUNKS_BY_DOCUMENT)?.iter()? {
        let (k, v) = row?;
        let mut e = [0u8; 36];
        if k.value().len() + v.value().len() == 36 {
            e[..20].copy_from_slice(k.value());
            e[20..].copy_from_slice(v.value());
        }
        found.push(e);
    }
    if found != expected {
        problems.push("chunks_by_document index differs from the chunks".into());
    }
    let mut expected: Vec<[u8; 32]> = state
        .paths()
        .values()
        .map(|p| {
            let mut e = [0u8; 32];
            e[..16].copy_from_slice(&p.document_id.0);
            e[16..].copy_from_slice(&p.id().0);
            e
        })
        .collect();
    expected.sort_unstable();
    let mut found: Vec<[u8; 32]> = Vec::with_capacity(expected.len());
    for row in read.raw().open_table(tables::PATHS_BY_DOCUMENT)?.iter()? {
        found.push(<[u8; 32]>::try_from(row?.0.value()).unwrap_or([0; 32]));
    }
    if found != expected {
        problems.push("paths_by_document index differs from the paths".into());
    }
    let mut expected: Vec<[u8; 34]> = state
        .edges()
        .keys()
        .map(|e| {
            let mut k = [0u8; 34];
            k[..16].copy_from_slice(&e.target.0);
            k[16..32].copy_from_slice(&e.source.0);
            k[32..].copy_from_slice(&e.kind.0.to_be_bytes());
            k
        })
        .collect();
    expected.par_sort_unstable();
    let mut found: Vec<[u8; 34]> = Vec::with_capacity(expected.len());
    for row in read.raw().open_table(tables::EDGES_BY_TARGET)?.iter()? {
        found.push(<[u8; 34]>::try_from(row?.0.value()).unwrap_or([0; 34]));
    }
    if found != expected {
        problems.push("edges_by_target index differs from the edges".into());
    }
    let content = read.raw().open_table(tables::CONTENT_INDEX)?;
    if content.len()? != state.documents().len() as u64 {
        problems.push(format!(
            "content index has {} entries for {} documents",
            content.len()?,
            state.documents().len()
        ));
    }
    for d in state.documents().values() {
        let key = [d.content_hash.0.as_slice(), d.profile.mime_type.as_bytes()].concat();
        if content.get(key.as_slice())?.map(|v| v.value().to_vec()) != Some(d.id.0.to_vec()) {
            problems.push(format!(
                "document {} is missing from the content index",
                d.id
            ));
        }
    }

    // The chain ends at the current root and links each record to the one before.
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

    Ok(VerifyReport {
        stored_root: stored_roots.state_root(),
        computed_root: computed.state_root(),
        counts,
        problems,
    })
}
