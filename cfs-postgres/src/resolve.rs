//! What search reads for the candidates of every repository at once, in one statement
//! each: the metadata of the chunks of the lists (from the search rows), the sums of
//! the candidate documents' vectors, and the texts of the answers.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId, SymbolKind};
use cfs_ingest::{Markers, Role};
use cfs_search::{ChunkMeta, DocInfo, FILE_VECTOR_CHUNKS, KINDS, PathInfo};
use postgres::Transaction;
use uuid::Uuid;

use crate::db::{array, sql_error};
use crate::error::{DbError, Result};
use crate::publish::tag_of;
use crate::search_rows::decode_sum;

/// `keys` (repository, 16-byte id) sorted, each once, as the two columns an
/// `unnest($1::int[], $2::uuid[])` reads.
fn key_columns(mut keys: Vec<(i32, [u8; 16])>) -> (Vec<i32>, Vec<Uuid>) {
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(r, id)| (r, Uuid::from_bytes(id)))
        .unzip()
}

/// [`key_columns`] of documents.
fn document_columns(docs: Vec<(i32, DocumentId)>) -> (Vec<i32>, Vec<Uuid>) {
    key_columns(docs.into_iter().map(|(r, d)| (r, d.0)).collect())
}

/// The metadata of the chunks `ids` (repository, chunk), from their repositories'
/// search rows, with their documents'.
pub(crate) fn chunks(
    tx: &mut Transaction<'_>,
    name: &str,
    ids: Vec<(i32, ChunkId)>,
) -> Result<HashMap<(i32, ChunkId), Arc<ChunkMeta>>> {
    let (repos, chunks) = key_columns(ids.into_iter().map(|(r, c)| (r, c.0)).collect());
    let rows = tx
        .query(
            "SELECT s.repo, s.chunk, s.sequence, s.byte_offset, s.byte_length, s.start_line, \
             s.end_line, s.kind, s.language, s.symbol, s.heading, s.symbol_kind, \
             s.name_start, s.continued, d.document, d.mime_type, d.paths, d.chunks, \
             d.generated, d.minified, d.role \
             FROM unnest($1::int[], $2::uuid[]) AS k(repo, chunk) \
             JOIN cfs_search s ON s.repo = k.repo AND s.chunk = k.chunk \
             JOIN cfs_search_docs d ON d.repo = s.repo AND d.document = s.document",
            &[&repos, &chunks],
        )
        .map_err(sql_error(name, "read the found chunks"))?;
    let mut docs: HashMap<(i32, Uuid), Arc<DocInfo>> = HashMap::new();
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let repo: i32 = row.get(0);
        let doc = match docs.entry((repo, row.get(14))) {
            Entry::Occupied(e) => e.get().clone(),
            Entry::Vacant(e) => e.insert(doc_info(name, &row)?).clone(),
        };
        let meta = chunk_meta(name, &row, doc)?;
        out.insert((repo, meta.id), Arc::new(meta));
    }
    Ok(out)
}

/// A chunk's metadata from its search row (columns 1-13 of [`chunks`]).
fn chunk_meta(name: &str, row: &postgres::Row, doc: Arc<DocInfo>) -> Result<ChunkMeta> {
    let id = ChunkId(*row.get::<_, Uuid>(1).as_bytes());
    let damaged = |what: &str| DbError::Damaged {
        database: name.to_owned(),
        what: format!("the search row of chunk {id} holds {what}"),
    };
    let kind: String = row.get(7);
    let kind = KINDS
        .into_iter()
        .find(|k| *k == kind)
        .ok_or_else(|| damaged("an unknown kind"))?;
    let symbol_kind = match row.get::<_, Option<i16>>(11) {
        None => None,
        Some(k) => Some(
            *usize::try_from(k)
                .ok()
                .and_then(|k| SymbolKind::ALL.get(k))
                .ok_or_else(|| damaged("an unknown symbol kind"))?,
        ),
    };
    let int =
        |i: usize| u32::try_from(row.get::<_, i32>(i)).map_err(|_| damaged("a negative number"));
    Ok(ChunkMeta {
        id,
        doc,
        sequence: int(2)?,
        byte_offset: u64::try_from(row.get::<_, i64>(3))
            .map_err(|_| damaged("a negative offset"))?,
        byte_length: int(4)?,
        start_line: int(5)?,
        end_line: int(6)?,
        kind,
        language: row.get::<_, Option<String>>(8).map(Into::into),
        symbol: row.get::<_, Option<String>>(9).map(Into::into),
        heading: row.get::<_, Option<String>>(10).map(Into::into),
        symbol_kind,
        name_start: u16::try_from(row.get::<_, i16>(12))
            .map_err(|_| damaged("a negative name start"))?,
        continued: row.get(13),
    })
}

/// A document's info from its search row (columns 14-20 of [`chunks`]).
fn doc_info(name: &str, row: &postgres::Row) -> Result<Arc<DocInfo>> {
    let id: Uuid = row.get(14);
    let (Some(paths), Some(chunks)) = (array::<String>(row, 16), array::<Uuid>(row, 17)) else {
        return Err(DbError::Damaged {
            database: name.to_owned(),
            what: format!("the search row of document {id} holds a path or chunk that is NULL"),
        });
    };
    let paths = paths
        .into_iter()
        .map(|p| PathInfo {
            path: p.into(),
            collections: Vec::new(),
        })
        .collect();
    // A header beside its implementation was published as a declaration; no other
    // document's role reads `beside` (spec 21.7).
    let markers = Markers {
        generated: row.get(18),
        minified: row.get(19),
        beside: row.get::<_, String>(20) == Role::Declaration.name(),
    };
    Ok(Arc::new(DocInfo::new(
        DocumentId(*id.as_bytes()),
        row.get::<_, String>(15).into(),
        paths,
        chunks.into_iter().map(|c| ChunkId(*c.as_bytes())).collect(),
        markers,
    )))
}

/// The texts of the chunks `ids` (repository, chunk), as their repositories hold them.
pub(crate) fn texts(
    tx: &mut Transaction<'_>,
    name: &str,
    ids: &[(i32, ChunkId)],
) -> Result<HashMap<(i32, ChunkId), String>> {
    let repos: Vec<i32> = ids.iter().map(|i| i.0).collect();
    let keys: Vec<&[u8]> = ids.iter().map(|i| &i.1.0[..]).collect();
    let rows = tx
        .query(
            "SELECT m.repo, m.key, c.text FROM unnest($1::int[], $2::bytea[]) AS k(repo, key) \
             JOIN cfs_members m ON m.repo = k.repo AND m.tag = $3 AND m.key = k.key \
             JOIN cfs_chunks c ON c.leaf = m.leaf",
            &[&repos, &keys, &tag_of(cfs_core::Table::Chunks)],
        )
        .map_err(sql_error(name, "read the answers' texts"))?;
    // Keyed by the member's key, which its leaf proves, not by a column beside the text.
    Ok(rows
        .iter()
        .filter_map(|r| {
            let key = <[u8; 16]>::try_from(r.get::<_, &[u8]>(1)).ok()?;
            Some(((r.get(0), ChunkId(key)), r.get(2)))
        })
        .collect())
}

/// The length of each of `docs` (repository, document) that has chunks: its chunks'
/// token counts summed.
pub(crate) fn file_lengths(
    tx: &mut Transaction<'_>,
    name: &str,
    docs: Vec<(i32, DocumentId)>,
) -> Result<HashMap<(i32, DocumentId), u64>> {
    let (repos, ids) = document_columns(docs);
    let rows = tx
        .query(
            "SELECT s.repo, s.document, sum(s.length)::bigint \
             FROM unnest($1::int[], $2::uuid[]) AS k(repo, document) \
             JOIN cfs_search s ON s.repo = k.repo AND s.document = k.document \
             GROUP BY s.repo, s.document",
            &[&repos, &ids],
        )
        .map_err(sql_error(name, "read the found files' lengths"))?;
    let length = |row: &postgres::Row| u64::try_from(row.get::<_, i64>(2)).unwrap_or(0);
    Ok(rows
        .iter()
        .map(|row| {
            let doc = DocumentId(*row.get::<_, Uuid>(1).as_bytes());
            ((row.get(0), doc), length(row))
        })
        .collect())
}

/// The number of documents of each of `repos` (BM25's `N` for whole files).
pub(crate) fn document_counts(
    tx: &mut Transaction<'_>,
    name: &str,
    repos: Vec<i32>,
) -> Result<HashMap<i32, u64>> {
    let rows = tx
        .query(
            "SELECT repo, count(*) FROM cfs_search_docs WHERE repo = ANY($1) GROUP BY repo",
            &[&repos],
        )
        .map_err(sql_error(name, "count the repositories' documents"))?;
    Ok(rows
        .iter()
        .map(|row| (row.get(0), u64::try_from(row.get::<_, i64>(1)).unwrap_or(0)))
        .collect())
}

/// The file vectors of `docs` (repository, document) that have one: the sum of the
/// vectors of each one's first [`FILE_VECTOR_CHUNKS`] chunks, as publish stored it,
/// checked to be such a sum: `dim` components, each within what that many `i16`
/// components can add up to (so that scoring it cannot overflow).
pub(crate) fn file_vectors(
    tx: &mut Transaction<'_>,
    name: &str,
    docs: Vec<(i32, DocumentId)>,
    dim: usize,
) -> Result<HashMap<(i32, DocumentId), Vec<i64>>> {
    let (repos, ids) = document_columns(docs);
    if repos.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = tx
        .query(
            "SELECT d.repo, d.document, d.file_vector \
             FROM unnest($1::int[], $2::uuid[]) AS k(repo, document) \
             JOIN cfs_search_docs d ON d.repo = k.repo AND d.document = k.document \
             WHERE d.file_vector IS NOT NULL",
            &[&repos, &ids],
        )
        .map_err(sql_error(name, "read the found files' vectors"))?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let doc = DocumentId(*row.get::<_, Uuid>(1).as_bytes());
        let most = i16::MAX as u64 * FILE_VECTOR_CHUNKS as u64;
        let sound =
            |sum: &Vec<i64>| sum.len() == dim && sum.iter().all(|x| x.unsigned_abs() <= most);
        let sum = decode_sum(row.get(2))
            .filter(sound)
            .ok_or_else(|| DbError::Damaged {
                database: name.to_owned(),
                what: format!("the file vector of document {doc} is not a sum of {dim} components"),
            })?;
        out.insert((row.get(0), doc), sum);
    }
    Ok(out)
}
