//! A repository's search rows (docs/format.md, "PostgreSQL"): what search from the
//! database ranks by, derived from the repository's rows as a store's runtime index is.
//! Publish notes which documents its member changes touch ([`Touched`]) and rewrites
//! those documents' rows, by their keys, in its transaction ([`refresh`]).

use std::collections::BTreeSet;

use cfs_core::{Canonical, Chunk, ChunkId, DocumentId, ModelHash, PathEntry, SymbolKind, Table};
use cfs_search::{DocumentRows, SEARCH_ROWS_VERSION};
use cfs_store::{ReadTxn, RowPayload};
use postgres::Transaction;
use uuid::Uuid;

use crate::content::{undecodable, uuid_of};
use crate::db::sql_error;
use crate::error::Result;
use crate::postings;

/// Documents rewritten per batch.
const DOCS_AT_ONCE: usize = 256;

/// What a publish's member changes touch: documents whose search rows are rewritten,
/// and what names them (resolved by [`refresh`]).
#[derive(Debug, Default)]
pub(crate) struct Touched {
    docs: BTreeSet<DocumentId>,
    /// Chunks added by this publish (their documents are in `docs`).
    added_chunks: BTreeSet<ChunkId>,
    /// Chunks whose document is to be found (dropped ones, embedded ones).
    chunks: BTreeSet<ChunkId>,
    /// Paths added (a header beside one of them may change its role).
    new_paths: Vec<String>,
    /// Leaves of dropped path members and of dropped embedding members.
    old_paths: Vec<Vec<u8>>,
    old_embeddings: Vec<Vec<u8>>,
}

impl Touched {
    /// Notes the members of `table` dropped (`removed`, with their old leaves) and the
    /// rows `added`.
    pub(crate) fn note(
        &mut self,
        table: Table,
        removed: &[(&[u8], &[u8])],
        added: &[RowPayload],
    ) -> Result<()> {
        // A dropped member's key comes from the database: one that is not an id (only a
        // damaged member has one) names no search row to refresh.
        let id = |k: &[u8]| <[u8; 16]>::try_from(k).ok();
        match table {
            Table::Documents => {
                let keys = removed
                    .iter()
                    .map(|r| r.0)
                    .chain(added.iter().map(|r| &r.key[..]));
                self.docs.extend(keys.filter_map(id).map(DocumentId));
            }
            Table::Paths => {
                self.old_paths.extend(removed.iter().map(|r| r.1.to_vec()));
                for row in added {
                    let entry = decode(table, row, PathEntry::decode)?;
                    self.docs.insert(entry.document_id);
                    self.new_paths.push(entry.path.as_str().to_owned());
                }
            }
            Table::Chunks => {
                self.chunks
                    .extend(removed.iter().filter_map(|r| id(r.0)).map(ChunkId));
                for row in added {
                    let chunk = decode(table, row, Chunk::decode)?;
                    self.docs.insert(chunk.document_id);
                    self.added_chunks.insert(chunk.id);
                }
            }
            Table::Embeddings => {
                self.old_embeddings
                    .extend(removed.iter().map(|r| r.1.to_vec()));
                let chunks = added.iter().filter_map(|r| r.payload.get(..16));
                self.chunks
                    .extend(chunks.map(|c| ChunkId(*uuid_of(c).as_bytes())));
            }
            Table::Edges => {}
        }
        Ok(())
    }
}

fn decode<T, E: std::fmt::Display>(
    table: Table,
    row: &RowPayload,
    f: impl Fn(&[u8]) -> std::result::Result<T, E>,
) -> Result<T> {
    f(&row.payload).map_err(|e| undecodable(table, row, e).into())
}

/// Where a refresh writes: a publish's transaction, the database's name for errors.
pub(crate) struct Target<'a, 't> {
    pub tx: &'a mut Transaction<'t>,
    pub name: &'a str,
    pub repo: i32,
}

/// Rewrites the search rows of every document `touched` names from the store's state
/// `txn` (dropping those of documents it no longer holds), then the repository's
/// totals; gives the number of chunk rows written.
pub(crate) fn refresh(
    t: &mut Target<'_, '_>,
    txn: &ReadTxn,
    model: &ModelHash,
    touched: Touched,
) -> Result<usize> {
    let mut docs = touched_documents(t, txn, touched)?;
    if rows_outdated(t)? {
        docs = every_document(t, txn, docs)?;
    }
    let ids: Vec<Uuid> = docs.iter().map(|d| Uuid::from_bytes(d.0)).collect();
    let mut postings = old_postings(t, &ids)?;
    for table in ["cfs_search", "cfs_search_docs"] {
        let sql = format!("DELETE FROM {table} WHERE repo = $1 AND document = ANY($2)");
        t.tx.execute(&sql, &[&t.repo, &ids]).map_err(sql_error(
            t.name,
            "drop the search rows of changed documents",
        ))?;
    }
    let mut written = 0;
    for batch in docs.chunks(DOCS_AT_ONCE) {
        let rows = cfs_search::document_rows(txn, model, batch)?;
        written += insert(t, &rows)?;
        postings.add(&rows);
    }
    postings.write(t.tx, t.name, t.repo)?;
    t.tx.execute(
        "INSERT INTO cfs_search_stats (repo, chunks, tokens, rows_version) \
         SELECT $1, count(*), coalesce(sum(length), 0), $2 FROM cfs_search WHERE repo = $1 \
         ON CONFLICT (repo) DO UPDATE SET chunks = EXCLUDED.chunks, tokens = EXCLUDED.tokens, \
         rows_version = EXCLUDED.rows_version",
        &[&t.repo, &SEARCH_ROWS_VERSION],
    )
    .map_err(sql_error(t.name, "count the repository's search rows"))?;
    Ok(written)
}

/// Whether the repository's search rows were derived by other rules than this build's
/// ([`SEARCH_ROWS_VERSION`]; a first publish has none).
fn rows_outdated(t: &mut Target<'_, '_>) -> Result<bool> {
    let row =
        t.tx.query_opt(
            "SELECT rows_version FROM cfs_search_stats WHERE repo = $1",
            &[&t.repo],
        )
        .map_err(sql_error(t.name, "read the version of the search rows"))?;
    Ok(row.is_some_and(|r| r.get::<_, i32>(0) != SEARCH_ROWS_VERSION))
}

/// `docs` and every other document of the state `txn` and of the repository's search
/// rows: all of them written again.
fn every_document(
    t: &mut Target<'_, '_>,
    txn: &ReadTxn,
    docs: Vec<DocumentId>,
) -> Result<Vec<DocumentId>> {
    let mut all: BTreeSet<DocumentId> = docs.into_iter().collect();
    all.extend(txn.all_paths()?.into_iter().map(|p| p.document_id));
    let rows =
        t.tx.query(
            "SELECT document FROM cfs_search_docs WHERE repo = $1",
            &[&t.repo],
        )
        .map_err(sql_error(t.name, "read the documents of the search rows"))?;
    all.extend(
        rows.iter()
            .map(|r| DocumentId(*r.get::<_, Uuid>(0).as_bytes())),
    );
    Ok(all.into_iter().collect())
}

/// The update of the posting lists that drops the chunks of the documents `ids` as
/// their search rows hold them.
fn old_postings(t: &mut Target<'_, '_>, ids: &[Uuid]) -> Result<postings::Update> {
    let rows =
        t.tx.query(
            "SELECT chunk, terms, document FROM cfs_search \
             WHERE repo = $1 AND document = ANY($2)",
            &[&t.repo, &ids],
        )
        .map_err(sql_error(t.name, "read the terms of changed documents"))?;
    let mut update = postings::Update::default();
    for row in rows {
        let (chunk, document): (Uuid, Uuid) = (row.get(0), row.get(2));
        let terms = crate::db::array(&row, 1).ok_or_else(|| crate::DbError::Damaged {
            database: t.name.to_owned(),
            what: format!("the search row of chunk {chunk} holds a NULL term"),
        })?;
        update.drop_chunk((*chunk.as_bytes(), *document.as_bytes()), terms);
    }
    Ok(update)
}

/// The documents `touched` names: noted ones, those of dropped paths (by their old
/// rows), and those of noted chunks (in the search rows and in the store).
fn touched_documents(
    t: &mut Target<'_, '_>,
    txn: &ReadTxn,
    touched: Touched,
) -> Result<Vec<DocumentId>> {
    let mut docs = touched.docs;
    let mut chunks: Vec<Uuid> = touched
        .chunks
        .iter()
        .map(|c| Uuid::from_bytes(c.0))
        .collect();
    let old = |sql: &str, what: &str, leaves: &[Vec<u8>], tx: &mut Transaction<'_>| {
        let rows = tx.query(sql, &[&leaves]).map_err(sql_error(t.name, what))?;
        Ok::<_, crate::DbError>(rows.iter().map(|r| r.get::<_, Uuid>(0)).collect::<Vec<_>>())
    };
    let rows =
        t.tx.query(
            "SELECT document_id, path FROM cfs_paths WHERE leaf = ANY($1)",
            &[&touched.old_paths],
        )
        .map_err(sql_error(t.name, "read dropped paths"))?;
    let mut paths = touched.new_paths;
    for row in &rows {
        docs.insert(DocumentId(*row.get::<_, Uuid>(0).as_bytes()));
        paths.push(row.get(1));
    }
    // A header whose implementation came or went changes its role (spec 21.7).
    for header in paths.iter().flat_map(|p| cfs_ingest::headers_of(p)) {
        if let Some(entry) = txn.path(&header)? {
            docs.insert(entry.document_id);
        }
    }
    let sql = "SELECT DISTINCT chunk_id FROM cfs_embeddings WHERE leaf = ANY($1)";
    chunks.extend(old(
        sql,
        "read dropped embeddings",
        &touched.old_embeddings,
        t.tx,
    )?);
    let rows =
        t.tx.query(
            "SELECT DISTINCT document FROM cfs_search WHERE repo = $1 AND chunk = ANY($2)",
            &[&t.repo, &chunks],
        )
        .map_err(sql_error(t.name, "read the documents of changed chunks"))?;
    docs.extend(
        rows.iter()
            .map(|r| DocumentId(*r.get::<_, Uuid>(0).as_bytes())),
    );
    for c in &chunks {
        let id = ChunkId(*c.as_bytes());
        if touched.added_chunks.contains(&id) {
            continue;
        }
        if let Some(chunk) = txn.chunk(&id)? {
            docs.insert(chunk.document_id);
        }
    }
    Ok(docs.into_iter().collect())
}

/// Inserts the rows of `docs`; gives the number of chunk rows.
fn insert(t: &mut Target<'_, '_>, docs: &[DocumentRows]) -> Result<usize> {
    let mut d = DocColumns::default();
    let mut c = ChunkColumns::default();
    for rows in docs {
        d.push(&rows.doc, rows.file_vector.as_deref());
        for row in &rows.chunks {
            c.push(row);
        }
    }
    t.tx.execute(
        "INSERT INTO cfs_search_docs \
         (repo, document, mime_type, role, generated, minified, paths, chunks, file_vector) \
         SELECT $1, u.d, u.m, u.r, u.g, u.n, ARRAY(SELECT json_array_elements_text(u.p::json)), \
         string_to_array(u.c, ',')::uuid[], u.f \
         FROM unnest($2::uuid[], $3::text[], $4::text[], $5::bool[], $6::bool[], \
         $7::text[], $8::text[], $9::bytea[]) AS u(d, m, r, g, n, p, c, f)",
        &[
            &t.repo,
            &d.ids,
            &d.mimes,
            &d.roles,
            &d.generated,
            &d.minified,
            &d.paths,
            &d.chunks,
            &d.file_vectors,
        ],
    )
    .map_err(sql_error(t.name, "write documents' search rows"))?;
    t.tx.execute(
        "INSERT INTO cfs_search \
         (repo, chunk, document, length, terms, v, language, kind, sequence, \
         byte_offset, byte_length, start_line, end_line, symbol, symbol_kind, name_start, \
         continued, heading) \
         SELECT $1, u.c, u.d, u.l, string_to_array(u.t, E'\\n'), u.v::vector, u.g, u.k, u.s, \
         u.o, u.n, u.a, u.b, u.y, u.yk, u.ns, u.w, u.h \
         FROM unnest($2::uuid[], $3::uuid[], $4::int[], $5::text[], $6::text[], \
         $7::text[], $8::text[], $9::int[], $10::bigint[], $11::int[], $12::int[], \
         $13::int[], $14::text[], $15::smallint[], $16::smallint[], $17::bool[], \
         $18::text[]) AS u(c, d, l, t, v, g, k, s, o, n, a, b, y, yk, ns, w, h)",
        &[
            &t.repo,
            &c.ids,
            &c.docs,
            &c.lengths,
            &c.terms,
            &c.vectors,
            &c.languages,
            &c.kinds,
            &c.sequences,
            &c.offsets,
            &c.byte_lengths,
            &c.starts,
            &c.ends,
            &c.symbols,
            &c.symbol_kinds,
            &c.name_starts,
            &c.continued,
            &c.headings,
        ],
    )
    .map_err(sql_error(t.name, "write chunks' search rows"))?;
    Ok(c.ids.len())
}

/// Documents' search rows, column by column (a list in one text, JSON for paths:
/// arrays of arrays cannot be ragged).
#[derive(Default)]
struct DocColumns {
    ids: Vec<Uuid>,
    mimes: Vec<String>,
    roles: Vec<&'static str>,
    generated: Vec<bool>,
    minified: Vec<bool>,
    paths: Vec<String>,
    chunks: Vec<String>,
    file_vectors: Vec<Option<Vec<u8>>>,
}

impl DocColumns {
    fn push(&mut self, doc: &cfs_search::DocInfo, file_vector: Option<&[i64]>) {
        self.file_vectors.push(file_vector.map(encode_sum));
        self.ids.push(Uuid::from_bytes(doc.id.0));
        self.mimes.push(doc.mime_type.to_string());
        self.roles.push(doc.role.name());
        self.generated.push(doc.markers.generated);
        self.minified.push(doc.markers.minified);
        let paths: Vec<&str> = doc.paths.iter().map(|p| &*p.path).collect();
        self.paths
            .push(serde_json::to_string(&paths).expect("strings serialize"));
        let chunks: Vec<String> = doc
            .chunks
            .iter()
            .map(|c| Uuid::from_bytes(c.0).to_string())
            .collect();
        self.chunks.push(chunks.join(","));
    }
}

/// A file vector as stored: each component an `i64`, little-endian.
fn encode_sum(sum: &[i64]) -> Vec<u8> {
    sum.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored file vector (`None` when its length is not a whole number of components).
pub(crate) fn decode_sum(bytes: &[u8]) -> Option<Vec<i64>> {
    if !bytes.len().is_multiple_of(8) {
        return None;
    }
    let parts = bytes.chunks_exact(8);
    Some(
        parts
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
    )
}

/// Chunks' search rows, column by column.
#[derive(Default)]
struct ChunkColumns {
    ids: Vec<Uuid>,
    docs: Vec<Uuid>,
    lengths: Vec<i32>,
    terms: Vec<String>,
    vectors: Vec<Option<String>>,
    languages: Vec<Option<String>>,
    kinds: Vec<&'static str>,
    sequences: Vec<i32>,
    offsets: Vec<i64>,
    byte_lengths: Vec<i32>,
    starts: Vec<i32>,
    ends: Vec<i32>,
    symbols: Vec<Option<String>>,
    symbol_kinds: Vec<Option<i16>>,
    name_starts: Vec<i16>,
    continued: Vec<bool>,
    headings: Vec<Option<String>>,
}

impl ChunkColumns {
    fn push(&mut self, row: &cfs_search::ChunkRow) {
        let meta = &row.meta;
        self.ids.push(Uuid::from_bytes(meta.id.0));
        self.docs.push(Uuid::from_bytes(meta.doc.id.0));
        self.lengths.push(row.length as i32);
        let terms: Vec<&str> = row.terms.iter().map(|t| t.0.as_str()).collect();
        // Tokens and definition terms hold no line break (tokenize.rs, definition_terms.rs).
        debug_assert!(terms.iter().all(|t| !t.contains('\n')));
        self.terms.push(terms.join("\n"));
        let text = row.vector.as_deref().map(crate::content::vector_text);
        self.vectors.push(text);
        self.languages
            .push(meta.language.as_deref().map(str::to_owned));
        self.kinds.push(meta.kind);
        self.sequences.push(meta.sequence as i32);
        self.offsets.push(meta.byte_offset as i64);
        self.byte_lengths.push(meta.byte_length as i32);
        self.starts.push(meta.start_line as i32);
        self.ends.push(meta.end_line as i32);
        self.symbols.push(meta.symbol.as_deref().map(str::to_owned));
        let kind = |k| {
            SymbolKind::ALL
                .iter()
                .position(|x| *x == k)
                .map(|p| p as i16)
        };
        self.symbol_kinds.push(meta.symbol_kind.and_then(kind));
        self.name_starts.push(meta.name_start as i16);
        self.continued.push(meta.continued);
        self.headings
            .push(meta.heading.as_deref().map(str::to_owned));
    }
}
