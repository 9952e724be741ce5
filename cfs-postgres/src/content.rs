//! Shared content: the rows of the five tables by their leaves, each written once
//! whatever the number of repositories holding it, with the columns search and filters
//! read beside the canonical encoding; and the vectors the embeddings name, by hash.

use std::collections::{BTreeMap, BTreeSet};

use cfs_core::{Canonical, Chunk, ChunkKind, Document, Edge, Entity, PathEntry, Table};
use cfs_store::{EMBEDDING_PAYLOAD_LEN, ReadTxn, RowPayload, StoreError};
use postgres::Transaction;
use postgres::types::ToSql;
use uuid::Uuid;

use crate::db::sql_error;
use crate::error::Result;

/// Rows written per statement.
const BATCH: usize = 2_000;

/// The table holding `table`'s shared content.
pub(crate) fn content_table(table: Table) -> &'static str {
    match table {
        Table::Paths => "cfs_paths",
        Table::Documents => "cfs_documents",
        Table::Chunks => "cfs_chunks",
        Table::Embeddings => "cfs_embeddings",
        Table::Edges => "cfs_edges",
    }
}

/// What writing content did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Written {
    /// Rows written: the database lacked them.
    pub rows: usize,
    /// Rows it held already (for another repository, or from an earlier publish).
    pub shared: usize,
    /// Vectors written.
    pub vectors: usize,
    /// Bytes of the values written.
    pub bytes: u64,
}

/// Writes shared content in one publish's transaction.
pub(crate) struct Writer<'t, 'a> {
    /// The transaction.
    pub tx: &'t mut Transaction<'a>,
    /// The database, for errors.
    pub name: &'t str,
    /// The store's state, for vectors.
    pub txn: &'t ReadTxn,
    /// Rewrite the rows the database holds too (a repair): the store's bytes, which hash
    /// to the leaf, replace whatever the database holds under it.
    pub overwrite: bool,
}

impl Writer<'_, '_> {
    /// Writes the content of `rows` (of `table`) that the database lacks (all of it when
    /// overwriting), and for embeddings the vectors; every full encoding is checked
    /// against its leaf first, so a damaged store cannot damage shared rows.
    pub(crate) fn write(&mut self, table: Table, rows: &[RowPayload]) -> Result<Written> {
        let unique: BTreeMap<&[u8; 32], &RowPayload> = rows.iter().map(|r| (&r.leaf, r)).collect();
        for row in unique.values() {
            check_leaf(table, row)?;
        }
        let leaves: Vec<&[u8]> = unique.keys().map(|l| &l[..]).collect();
        let held = if self.overwrite {
            BTreeSet::new()
        } else {
            let t = content_table(table);
            let sql = format!("SELECT leaf FROM {t} WHERE leaf = ANY($1)");
            present(self.tx, self.name, &sql, &leaves)?
        };
        let missing: Vec<&RowPayload> = unique
            .iter()
            .filter(|(leaf, _)| !held.contains(&leaf[..]))
            .map(|(_, r)| *r)
            .collect();
        let mut written = Written {
            shared: unique.len() - missing.len(),
            ..Written::default()
        };
        for batch in missing.chunks(BATCH) {
            let (rows, bytes) = insert(self, table, batch)?;
            written.rows += rows;
            written.bytes += bytes;
        }
        if table == Table::Embeddings {
            let (vectors, bytes) = write_vectors(self, &missing)?;
            written.vectors = vectors;
            written.bytes += bytes;
        }
        Ok(written)
    }

    /// ` ON CONFLICT (key) DO NOTHING`, or when overwriting, `DO UPDATE` of `columns`.
    fn on_conflict(&self, key: &str, columns: &[&str]) -> String {
        if !self.overwrite {
            return format!(" ON CONFLICT ({key}) DO NOTHING");
        }
        let set: Vec<String> = columns
            .iter()
            .map(|c| format!("{c} = EXCLUDED.{c}"))
            .collect();
        format!(" ON CONFLICT ({key}) DO UPDATE SET {}", set.join(", "))
    }

    /// Runs one insert; gives the rows it wrote.
    fn run(&mut self, table: Table, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<usize> {
        let what = format!("write {}", content_table(table));
        let n = self
            .tx
            .execute(sql, params)
            .map_err(sql_error(self.name, &what))?;
        Ok(n as usize)
    }
}

/// Checks that a row's canonical encoding (all kinds but embeddings, whose payload
/// holds the vector's hash instead of the vector) hashes to its leaf.
fn check_leaf(table: Table, row: &RowPayload) -> Result<()> {
    let leaf = match table {
        Table::Paths => PathEntry::leaf_of_encoding(&row.payload),
        Table::Documents => Document::leaf_of_encoding(&row.payload),
        Table::Chunks => Chunk::leaf_of_encoding(&row.payload),
        Table::Edges => Edge::leaf_of_encoding(&row.payload),
        Table::Embeddings => return Ok(()),
    };
    if leaf.0 != row.leaf {
        return Err(undecodable(table, row, "its encoding does not hash to its leaf").into());
    }
    Ok(())
}

/// Which of `keys` the query `sql` (`... WHERE k = ANY($1)`, selecting `k`) finds.
fn present(
    tx: &mut Transaction<'_>,
    name: &str,
    sql: &str,
    keys: &[&[u8]],
) -> Result<BTreeSet<Vec<u8>>> {
    let mut held = BTreeSet::new();
    for batch in keys.chunks(BATCH * 5) {
        let batch = batch.to_vec();
        for row in tx
            .query(sql, &[&batch])
            .map_err(sql_error(name, "look for shared rows"))?
        {
            held.insert(row.get::<_, Vec<u8>>(0));
        }
    }
    Ok(held)
}

/// A row the store holds but cannot decode: the store is damaged.
pub(crate) fn undecodable(table: Table, row: &RowPayload, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupted(format!(
        "a row of {} ({}) does not decode: {e}",
        table.name(),
        cfs_core::hex_encode(&row.key)
    ))
}

/// The uuid of a 16-byte key or id.
pub(crate) fn uuid_of(bytes: &[u8]) -> Uuid {
    Uuid::from_slice(bytes).expect("ids are 16 bytes")
}

/// A chunk's kind, language and symbol as their columns hold them.
pub(crate) fn chunk_columns(chunk: &Chunk) -> (&'static str, Option<&str>, Option<&str>) {
    match &chunk.kind {
        ChunkKind::Code { language, symbol } => (
            chunk.kind.name(),
            Some(language.as_str()),
            symbol.as_ref().map(|s| s.name.as_str()),
        ),
        kind => (kind.name(), None, None),
    }
}

/// Inserts one batch of `table`'s content; gives the rows written and the bytes of the
/// values sent.
fn insert(w: &mut Writer<'_, '_>, table: Table, rows: &[&RowPayload]) -> Result<(usize, u64)> {
    let leaves: Vec<&[u8]> = rows.iter().map(|r| &r.leaf[..]).collect();
    let encodings: Vec<&[u8]> = rows.iter().map(|r| &r.payload[..]).collect();
    let bytes: u64 = rows
        .iter()
        .map(|r| (r.leaf.len() + r.payload.len()) as u64)
        .sum();
    let written = match table {
        Table::Paths => {
            let entries = rows
                .iter()
                .map(|r| PathEntry::decode(&r.payload).map_err(|e| undecodable(table, r, e)))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let paths: Vec<&str> = entries.iter().map(|p| p.path.as_str()).collect();
            let documents: Vec<Uuid> = entries.iter().map(|p| p.document_id.as_uuid()).collect();
            let sql = format!(
                "INSERT INTO cfs_paths (leaf, path, document_id, encoding) \
                 SELECT * FROM unnest($1::bytea[], $2::text[], $3::uuid[], $4::bytea[]){}",
                w.on_conflict("leaf", &["path", "document_id", "encoding"])
            );
            w.run(table, &sql, &[&leaves, &paths, &documents, &encodings])?
        }
        Table::Documents => {
            let ids: Vec<Uuid> = rows.iter().map(|r| uuid_of(&r.key)).collect();
            let sql = format!(
                "INSERT INTO cfs_documents (leaf, id, encoding) \
                 SELECT * FROM unnest($1::bytea[], $2::uuid[], $3::bytea[]){}",
                w.on_conflict("leaf", &["id", "encoding"])
            );
            w.run(table, &sql, &[&leaves, &ids, &encodings])?
        }
        Table::Chunks => {
            let (n, text_bytes) = insert_chunks(w, rows, &leaves, &encodings)?;
            return Ok((n, bytes + text_bytes));
        }
        Table::Embeddings => {
            let mut cols: [Vec<&[u8]>; 3] = Default::default();
            for r in rows {
                if r.payload.len() != EMBEDDING_PAYLOAD_LEN {
                    return Err(undecodable(table, r, "its payload is not 80 bytes").into());
                }
                cols[0].push(&r.payload[..16]);
                cols[1].push(&r.payload[16..48]);
                cols[2].push(&r.payload[48..]);
            }
            let ids: Vec<Uuid> = rows.iter().map(|r| uuid_of(&r.key)).collect();
            let chunks: Vec<Uuid> = cols[0].iter().map(|c| uuid_of(c)).collect();
            let sql = format!(
                "INSERT INTO cfs_embeddings (leaf, id, chunk_id, model_hash, vector_hash) \
                 SELECT * FROM unnest($1::bytea[], $2::uuid[], $3::uuid[], $4::bytea[], \
                 $5::bytea[]){}",
                w.on_conflict("leaf", &["id", "chunk_id", "model_hash", "vector_hash"])
            );
            w.run(table, &sql, &[&leaves, &ids, &chunks, &cols[1], &cols[2]])?
        }
        Table::Edges => {
            let keys: Vec<&[u8]> = rows.iter().map(|r| &r.key[..]).collect();
            let sql = format!(
                "INSERT INTO cfs_edges (leaf, key, encoding) \
                 SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[]){}",
                w.on_conflict("leaf", &["key", "encoding"])
            );
            w.run(table, &sql, &[&leaves, &keys, &encodings])?
        }
    };
    Ok((written, bytes))
}

/// Inserts a batch of chunks with their text and filter columns; gives the bytes of
/// the columns beside the encoding.
fn insert_chunks(
    w: &mut Writer<'_, '_>,
    rows: &[&RowPayload],
    leaves: &[&[u8]],
    encodings: &[&[u8]],
) -> Result<(usize, u64)> {
    let chunks = rows
        .iter()
        .map(|r| Chunk::decode(&r.payload).map_err(|e| undecodable(Table::Chunks, r, e)))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let ids: Vec<Uuid> = chunks.iter().map(|c| c.id.as_uuid()).collect();
    let documents: Vec<Uuid> = chunks.iter().map(|c| c.document_id.as_uuid()).collect();
    let starts: Vec<i64> = chunks.iter().map(|c| i64::from(c.start_line)).collect();
    let ends: Vec<i64> = chunks.iter().map(|c| i64::from(c.end_line)).collect();
    let columns: Vec<_> = chunks.iter().map(chunk_columns).collect();
    let kinds: Vec<&str> = columns.iter().map(|c| c.0).collect();
    let languages: Vec<Option<&str>> = columns.iter().map(|c| c.1).collect();
    let symbols: Vec<Option<&str>> = columns.iter().map(|c| c.2).collect();
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    let sql = format!(
        "INSERT INTO cfs_chunks (leaf, id, document_id, start_line, end_line, kind, language, \
         symbol, text, encoding) \
         SELECT * FROM unnest($1::bytea[], $2::uuid[], $3::uuid[], $4::bigint[], $5::bigint[], \
         $6::text[], $7::text[], $8::text[], $9::text[], $10::bytea[]){}",
        w.on_conflict(
            "leaf",
            &[
                "id",
                "document_id",
                "start_line",
                "end_line",
                "kind",
                "language",
                "symbol",
                "text",
                "encoding",
            ]
        )
    );
    let n = w.run(
        Table::Chunks,
        &sql,
        &[
            &leaves, &ids, &documents, &starts, &ends, &kinds, &languages, &symbols, &texts,
            &encodings,
        ],
    )?;
    Ok((n, texts.iter().map(|t| t.len() as u64 + 48).sum()))
}

/// Writes the vectors that the embeddings `rows` name and the database lacks (all of
/// them when overwriting), in hash order; gives how many and their bytes.
fn write_vectors(w: &mut Writer<'_, '_>, rows: &[&RowPayload]) -> Result<(usize, u64)> {
    let hashes: BTreeSet<&[u8]> = rows.iter().map(|r| &r.payload[48..]).collect();
    let hashes: Vec<&[u8]> = hashes.into_iter().collect();
    let held = if w.overwrite {
        BTreeSet::new()
    } else {
        let sql = "SELECT hash FROM cfs_vectors WHERE hash = ANY($1)";
        present(w.tx, w.name, sql, &hashes)?
    };
    let missing: Vec<&[u8]> = hashes.into_iter().filter(|h| !held.contains(*h)).collect();
    let (mut written, mut bytes) = (0, 0);
    let sql = format!(
        "INSERT INTO cfs_vectors (hash, v) \
         SELECT h, t::vector FROM unnest($1::bytea[], $2::text[]) AS u(h, t){}",
        w.on_conflict("hash", &["v"])
    );
    for batch in missing.chunks(BATCH) {
        let mut texts = Vec::with_capacity(batch.len());
        for hash in batch {
            let hash: &[u8; 32] = (*hash).try_into().expect("32 bytes");
            // The store checks that the encoding hashes to its name.
            let encoding = w.txn.vector_encoding(hash)?.ok_or_else(|| {
                StoreError::Corrupted(format!(
                    "vector {} is named by an embedding and missing",
                    cfs_core::hex_encode(hash)
                ))
            })?;
            let vector = cfs_core::decode_vector(&encoding)
                .map_err(|e| StoreError::Corrupted(format!("a vector does not decode: {e}")))?;
            texts.push(vector_text(&vector));
            bytes += (32 + 4 * vector.len()) as u64;
        }
        written += w.run(Table::Embeddings, &sql, &[&batch, &texts])?;
    }
    Ok((written, bytes))
}

/// A vector in pgvector's text form, `[1,-2,3]`: its i16 components are exact in the
/// float32 that `vector` holds.
pub(crate) fn vector_text(vector: &[i16]) -> String {
    let parts: Vec<String> = vector.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(","))
}
