//! Verify a repository in the database: every row it holds re-hashed from its canonical
//! encoding and checked against its key, bucket, leaf and the columns beside it; every
//! bucket root, table root and the state root recomputed from the leaves and compared
//! with what the database holds and the head names. Read-only, in one snapshot, so it
//! runs on a standby as well as the primary.

use cfs_core::{
    Chunk, Document, Edge, Embedding, Entity, MerkleRoot, N_BUCKETS, PathEntry, StateRoot, Table,
    TableRoots, TopTree, merkle_root,
};
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Row, Transaction};

use crate::content::chunk_columns;
use crate::db::{Database, sql_error};
use crate::error::{DbError, Result};
use crate::publish::{stored_bucket_roots, tag_of};
use crate::schema;

/// How many damaged rows a report names; it counts them all.
const NAMED: usize = 20;

/// What is wrong with one row, bucket or root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The table (`paths`, `documents`, `chunks`, `embeddings`, `edges`, or `head`).
    pub table: String,
    /// The row's key in hex, or the bucket (`bucket 17`), or empty for a table root.
    pub key: String,
    /// What is wrong.
    pub reason: String,
}

/// What verifying a repository found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    /// The repository.
    pub repo: String,
    /// The head's sequence.
    pub sequence: u64,
    /// The state root the head names.
    pub head: StateRoot,
    /// The state root recomputed from the rows.
    pub recomputed: StateRoot,
    /// Rows re-hashed.
    pub rows_checked: u64,
    /// Damage found, of which the first [`NAMED`] are named in `damage`.
    pub damaged: usize,
    /// The first damaged rows, buckets and roots.
    pub damage: Vec<Damage>,
}

impl VerifyReport {
    /// Whether the repository's rows make the root its head names.
    pub fn is_ok(&self) -> bool {
        self.damaged == 0 && self.head == self.recomputed
    }

    fn found(&mut self, table: &str, key: String, reason: String) {
        self.damaged += 1;
        if self.damage.len() < NAMED {
            self.damage.push(Damage {
                table: table.to_owned(),
                key,
                reason,
            });
        }
    }
}

/// Verifies repository `repo` of `db`.
pub fn verify(db: &mut Database, repo: &str) -> Result<VerifyReport> {
    let (name, mut tx) = schema::read_snapshot(db)?;
    let head = tx
        .query_opt(
            "SELECT r.id, h.sequence, h.state_root, h.table_roots FROM cfs_repos r \
             JOIN cfs_heads h ON h.repo = r.id WHERE r.name = $1",
            &[&repo],
        )
        .map_err(sql_error(&name, "read the head"))?
        .ok_or_else(|| DbError::NoRepository {
            database: name.clone(),
            name: repo.to_owned(),
        })?;
    let id: i32 = head.get(0);
    let mut report = VerifyReport {
        repo: repo.to_owned(),
        sequence: head.get::<_, i64>(1) as u64,
        head: StateRoot([0; 32]),
        recomputed: StateRoot([0; 32]),
        rows_checked: 0,
        damaged: 0,
        damage: Vec::new(),
    };
    match <[u8; 32]>::try_from(head.get::<_, Vec<u8>>(2)) {
        Ok(root) => report.head = StateRoot(root),
        Err(b) => report.found(
            "head",
            String::new(),
            format!("its state root is {} bytes", b.len()),
        ),
    }
    let (stored, wrong) = stored_bucket_roots(&mut tx, &name, id)?;
    for what in wrong {
        report.found("bucket roots", String::new(), what);
    }
    let mut roots = TableRoots::empty();
    for (tag, table) in Table::ALL.into_iter().enumerate() {
        let buckets = bucket_roots(&mut tx, &name, id, table, &mut report)?;
        for (b, (made, held)) in buckets.iter().zip(&stored[tag]).enumerate() {
            if made != held {
                report.found(
                    table.name(),
                    format!("bucket {b}"),
                    format!(
                        "its rows make root {}, cfs_bucket_roots holds {}",
                        made.to_hex(),
                        held.to_hex()
                    ),
                );
            }
        }
        roots.set(
            table,
            TopTree::from_bucket_roots(&buckets)
                .expect("1,024 roots")
                .root(),
        );
    }
    match head.try_get::<_, Vec<Option<Vec<u8>>>>(3) {
        Ok(held) => check_head(&held, &roots, &mut report),
        Err(e) => report.found("head", String::new(), format!("its table roots: {e}")),
    }
    report.recomputed = roots.state_root();
    if report.recomputed != report.head {
        report.found(
            "head",
            String::new(),
            format!(
                "the rows make state root {}, the head names {}",
                report.recomputed.to_hex(),
                report.head.to_hex()
            ),
        );
    }
    tx.commit().map_err(sql_error(&name, "end the snapshot"))?;
    Ok(report)
}

/// Compares the head's table roots with the recomputed ones.
fn check_head(held: &[Option<Vec<u8>>], roots: &TableRoots, report: &mut VerifyReport) {
    if held.len() != Table::ALL.len() {
        let what = format!("it holds {} table roots, not 5", held.len());
        report.found("head", String::new(), what);
        return;
    }
    for (table, bytes) in Table::ALL.into_iter().zip(held) {
        let root = bytes.as_deref().and_then(|b| <[u8; 32]>::try_from(b).ok());
        let made = roots.get(table);
        if root != Some(made.0) {
            let held = root.map_or_else(|| "not a root".to_owned(), |r| MerkleRoot(r).to_hex());
            report.found(
                "head",
                table.name().to_owned(),
                format!(
                    "its {} root is {held}, the rows make {}",
                    table.name(),
                    made.to_hex()
                ),
            );
        }
    }
}

/// The query of a repository's rows of `table` in key order, each with its shared
/// content (null where it is missing) and the columns beside the encoding.
fn rows_query(table: Table) -> &'static str {
    match table {
        Table::Paths => {
            "SELECT m.key, m.bucket, m.leaf, c.encoding, c.path, c.document_id \
             FROM cfs_members m LEFT JOIN cfs_paths c ON c.leaf = m.leaf \
             WHERE m.repo = $1 AND m.tag = $2 ORDER BY m.key"
        }
        Table::Documents => {
            "SELECT m.key, m.bucket, m.leaf, c.encoding, c.id \
             FROM cfs_members m LEFT JOIN cfs_documents c ON c.leaf = m.leaf \
             WHERE m.repo = $1 AND m.tag = $2 ORDER BY m.key"
        }
        Table::Chunks => {
            "SELECT m.key, m.bucket, m.leaf, c.encoding, c.id, c.document_id, c.start_line, \
             c.end_line, c.kind, c.language, c.symbol, c.text \
             FROM cfs_members m LEFT JOIN cfs_chunks c ON c.leaf = m.leaf \
             WHERE m.repo = $1 AND m.tag = $2 ORDER BY m.key"
        }
        Table::Embeddings => {
            "SELECT m.key, m.bucket, m.leaf, c.leaf, c.id, c.chunk_id, c.model_hash, \
             c.vector_hash, v.v::real[] \
             FROM cfs_members m LEFT JOIN cfs_embeddings c ON c.leaf = m.leaf \
             LEFT JOIN cfs_vectors v ON v.hash = c.vector_hash \
             WHERE m.repo = $1 AND m.tag = $2 ORDER BY m.key"
        }
        Table::Edges => {
            "SELECT m.key, m.bucket, m.leaf, c.encoding, c.key \
             FROM cfs_members m LEFT JOIN cfs_edges c ON c.leaf = m.leaf \
             WHERE m.repo = $1 AND m.tag = $2 ORDER BY m.key"
        }
    }
}

/// The 1,024 bucket roots of the repository's rows of `table`, each row checked.
fn bucket_roots(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
    table: Table,
    report: &mut VerifyReport,
) -> Result<Vec<MerkleRoot>> {
    let mut roots = vec![MerkleRoot::empty(); N_BUCKETS];
    let mut leaves: Vec<[u8; 32]> = Vec::new();
    let mut current: Option<usize> = None;
    let tag = tag_of(table);
    let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&repo, &tag];
    let mut rows = tx
        .query_raw(rows_query(table), params)
        .map_err(sql_error(name, "read the repository's rows"))?;
    let mut previous: Option<Vec<u8>> = None;
    while let Some(row) = rows
        .next()
        .map_err(sql_error(name, "read the repository's rows"))?
    {
        report.rows_checked += 1;
        let key: Vec<u8> = row.get(0);
        let bucket = usize::from(cfs_core::Bucket::of_key(&key).0);
        if current != Some(bucket) {
            if let Some(b) = current {
                roots[b] = merkle_root(&leaves);
            }
            leaves.clear();
            current = Some(bucket);
        }
        let leaf: Vec<u8> = row.get(2);
        let hex = cfs_core::hex_encode(&key);
        if let Err(reason) = check_row(table, &row, &key, bucket) {
            report.found(table.name(), hex.clone(), reason);
        }
        if previous.as_ref().is_some_and(|p| p >= &key) {
            report.found(table.name(), hex.clone(), "rows out of key order".into());
        }
        match <[u8; 32]>::try_from(leaf) {
            Ok(l) => leaves.push(l),
            Err(_) => report.found(table.name(), hex, "its leaf is not 32 bytes".into()),
        }
        previous = Some(key);
    }
    if let Some(b) = current {
        roots[b] = merkle_root(&leaves);
    }
    Ok(roots)
}

/// Checks one member row: its content is there, its encoding hashes to its leaf and
/// decodes to an entity of its key, its bucket is its key's, and the columns beside the
/// encoding say what the encoding says.
fn check_row(
    table: Table,
    row: &Row,
    key: &[u8],
    bucket: usize,
) -> std::result::Result<(), String> {
    let member_bucket: i16 = col(row, 1)?;
    if member_bucket as usize != bucket {
        return Err(format!(
            "it is listed in bucket {member_bucket}, its key is in {bucket}"
        ));
    }
    let leaf: Vec<u8> = col(row, 2)?;
    match table {
        Table::Paths => {
            let (entry, _) = entity::<PathEntry>(row, key, &leaf)?;
            let (path, document): (String, uuid::Uuid) = (col(row, 4)?, col(row, 5)?);
            same(
                path == entry.path && document == entry.document_id.as_uuid(),
                "path or document_id",
            )
        }
        Table::Documents => {
            let (document, _) = entity::<Document>(row, key, &leaf)?;
            let id: uuid::Uuid = col(row, 4)?;
            same(id == document.id.as_uuid(), "id")
        }
        Table::Chunks => {
            let (chunk, _) = entity::<Chunk>(row, key, &leaf)?;
            same(chunk_agrees(row, &chunk)?, "columns")
        }
        Table::Embeddings => check_embedding(row, key, &leaf),
        Table::Edges => {
            let (edge, _) = entity::<Edge>(row, key, &leaf)?;
            let held: Vec<u8> = col(row, 4)?;
            same(held == edge.key(), "key")
        }
    }
}

/// The entity of a row whose shared content is its encoding (column 3), checked.
fn entity<E: Entity>(
    row: &Row,
    key: &[u8],
    leaf: &[u8],
) -> std::result::Result<(E, Vec<u8>), String> {
    let encoding: Option<Vec<u8>> = col(row, 3)?;
    let encoding = encoding.ok_or("its shared row is missing")?;
    checked::<E>(encoding, key, leaf)
}

/// Decodes `encoding` as an `E` of key `key` hashing to `leaf`.
fn checked<E: Entity>(
    encoding: Vec<u8>,
    key: &[u8],
    leaf: &[u8],
) -> std::result::Result<(E, Vec<u8>), String> {
    if E::leaf_of_encoding(&encoding).0[..] != *leaf {
        return Err("its encoding does not hash to its leaf".into());
    }
    let entity = E::decode(&encoding).map_err(|e| format!("its encoding does not decode: {e}"))?;
    if entity.row_key() != key {
        return Err("its encoding is of another key".into());
    }
    Ok((entity, encoding))
}

/// `Ok` if the columns beside the encoding agree with it, else names `what` disagrees.
fn same(agrees: bool, what: &str) -> std::result::Result<(), String> {
    if agrees {
        Ok(())
    } else {
        Err(format!("its {what} disagree with its encoding"))
    }
}

/// Whether a chunk row's columns are its encoding's.
fn chunk_agrees(row: &Row, chunk: &Chunk) -> std::result::Result<bool, String> {
    let (kind, language, symbol) = chunk_columns(chunk);
    let id: uuid::Uuid = col(row, 4)?;
    let document: uuid::Uuid = col(row, 5)?;
    let (start, end): (i64, i64) = (col(row, 6)?, col(row, 7)?);
    let texts = (
        col::<String>(row, 8)?,
        col::<Option<String>>(row, 9)?,
        col::<Option<String>>(row, 10)?,
        col::<String>(row, 11)?,
    );
    Ok(id == chunk.id.as_uuid()
        && document == chunk.document_id.as_uuid()
        && start == i64::from(chunk.start_line)
        && end == i64::from(chunk.end_line)
        && texts.0 == kind
        && texts.1.as_deref() == language
        && texts.2.as_deref() == symbol
        && texts.3 == chunk.text)
}

/// Column `i` of `row`, or why it cannot be read (a type the schema does not give it).
fn col<'a, T: postgres::types::FromSql<'a>>(
    row: &'a Row,
    i: usize,
) -> std::result::Result<T, String> {
    row.try_get(i).map_err(|e| format!("column {i}: {e}"))
}

/// Checks an embedding row: its content and vector are there, the vector's encoding
/// (made from the `vector` column, whose components must be i16 values) hashes to the
/// name the embedding gives it, and the embedding's encoding (key, chunk, model and the
/// vector's encoding) hashes to its leaf.
fn check_embedding(row: &Row, key: &[u8], leaf: &[u8]) -> std::result::Result<(), String> {
    if col::<Option<Vec<u8>>>(row, 3)?.is_none() {
        return Err("its shared row is missing".into());
    }
    let hash: Vec<u8> = col(row, 7)?;
    let Some(floats) = col::<Option<Vec<f32>>>(row, 8)? else {
        return Err(format!("vector {} is missing", cfs_core::hex_encode(&hash)));
    };
    let vector = vector_of(&floats)?;
    if cfs_store::vector_hash(&vector)[..] != hash[..] {
        return Err("its vector does not hash to its name".into());
    }
    let id: uuid::Uuid = col(row, 4)?;
    let chunk: uuid::Uuid = col(row, 5)?;
    let model: Vec<u8> = col(row, 6)?;
    let encoding = [&id.as_bytes()[..], chunk.as_bytes(), &model, &vector].concat();
    checked::<Embedding>(encoding, key, leaf).map(|_| ())
}

/// The canonical encoding of the vector a `vector` column holds: each component must be
/// an i16 value, which float32 holds exactly.
fn vector_of(floats: &[f32]) -> std::result::Result<Vec<u8>, String> {
    let mut components = Vec::with_capacity(floats.len());
    for &f in floats {
        let x = f as i16;
        if f32::from(x) != f {
            return Err(format!("its vector holds {f}, which is no i16"));
        }
        components.push(x);
    }
    Ok(cfs_core::encode_vector(&components))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `vector` column's components make the encoding only when each is an i16
    /// value: the extremes pass; a fraction, one past either end, and NaN are named.
    #[test]
    fn a_vector_column_makes_its_encoding_only_from_i16_values() {
        let made = vector_of(&[-32768.0, 0.0, 32767.0]).unwrap();
        assert_eq!(made, cfs_core::encode_vector(&[-32768, 0, 32767]));
        for bad in [0.5, 32768.0, -32769.0, f32::NAN, f32::INFINITY] {
            let refused = vector_of(&[1.0, bad]).unwrap_err();
            assert!(refused.contains("no i16"), "{bad}: {refused}");
        }
    }
}
