//! What search reads for the candidates of every repository at once, in one statement
//! each: the chunks of the lists (their rows decoded, with their documents' search
//! rows) and the sums of the candidate documents' vectors.

use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::{Canonical, Chunk, ChunkId, DocumentId};
use cfs_ingest::Markers;
use cfs_search::{ChunkMeta, DocInfo, FILE_VECTOR_CHUNKS, PathInfo};
use cfs_store::StoreError;
use postgres::Transaction;
use uuid::Uuid;

use crate::db::sql_error;
use crate::error::{DbError, Result};
use crate::publish::tag_of;

/// Chunks read: their metadata and texts, by repository and chunk.
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    pub metas: HashMap<(i32, ChunkId), Arc<ChunkMeta>>,
    pub texts: HashMap<(i32, ChunkId), String>,
}

/// The chunks `ids` (repository, chunk) as their repositories hold them.
pub(crate) fn chunks(
    tx: &mut Transaction<'_>,
    name: &str,
    mut ids: Vec<(i32, ChunkId)>,
) -> Result<Chunks> {
    ids.sort_unstable();
    ids.dedup();
    let repos: Vec<i32> = ids.iter().map(|i| i.0).collect();
    let keys: Vec<&[u8]> = ids.iter().map(|i| &i.1.0[..]).collect();
    let rows = tx
        .query(
            "SELECT c.encoding, d.document, d.mime_type, d.paths, d.chunks, d.generated, \
             d.minified, m.repo FROM unnest($1::int[], $2::bytea[]) AS k(repo, key) \
             JOIN cfs_members m ON m.repo = k.repo AND m.tag = $3 AND m.key = k.key \
             JOIN cfs_chunks c ON c.leaf = m.leaf \
             JOIN cfs_search s ON s.repo = m.repo AND s.chunk = c.id \
             JOIN cfs_search_docs d ON d.repo = s.repo AND d.document = s.document",
            &[&repos, &keys, &tag_of(cfs_core::Table::Chunks)],
        )
        .map_err(sql_error(name, "read the found chunks"))?;
    let mut docs: HashMap<(i32, Uuid), Arc<DocInfo>> = HashMap::new();
    let mut out = Chunks::default();
    for row in rows {
        let repo: i32 = row.get(7);
        let encoding: Vec<u8> = row.get(0);
        let chunk = Chunk::decode(&encoding).map_err(|e| {
            DbError::Store(StoreError::Corrupted(format!(
                "{name}: a chunk of repository {repo} does not decode: {e}"
            )))
        })?;
        let doc = docs
            .entry((repo, row.get(1)))
            .or_insert_with(|| doc_info(&row))
            .clone();
        let meta = cfs_search::chunk_meta(&chunk, doc);
        out.texts.insert((repo, chunk.id), chunk.text);
        out.metas.insert((repo, meta.id), Arc::new(meta));
    }
    Ok(out)
}

/// A document's info from its search row (columns 1-6 of [`chunks`]).
fn doc_info(row: &postgres::Row) -> Arc<DocInfo> {
    let id: Uuid = row.get(1);
    let paths: Vec<String> = row.get(3);
    let chunks: Vec<Uuid> = row.get(4);
    let paths = paths
        .into_iter()
        .map(|p| PathInfo {
            path: p.into(),
            collections: Vec::new(),
        })
        .collect();
    let markers = Markers {
        generated: row.get(5),
        minified: row.get(6),
    };
    Arc::new(DocInfo::new(
        DocumentId(*id.as_bytes()),
        row.get::<_, String>(2).into(),
        paths,
        chunks.into_iter().map(|c| ChunkId(*c.as_bytes())).collect(),
        markers,
    ))
}

/// For each of `docs` (repository, document) with vectors: the sum of the vectors of
/// its first [`FILE_VECTOR_CHUNKS`] chunks (float32 sums of at most 256 `i16`s are
/// exact).
pub(crate) fn file_vectors(
    tx: &mut Transaction<'_>,
    name: &str,
    mut docs: Vec<(i32, DocumentId)>,
) -> Result<HashMap<(i32, DocumentId), Vec<i64>>> {
    docs.sort_unstable();
    docs.dedup();
    if docs.is_empty() {
        return Ok(HashMap::new());
    }
    let repos: Vec<i32> = docs.iter().map(|d| d.0).collect();
    let ids: Vec<Uuid> = docs.iter().map(|d| Uuid::from_bytes(d.1.0)).collect();
    let first = FILE_VECTOR_CHUNKS as i32;
    let rows = tx
        .query(
            "SELECT d.repo, d.document, sum(v.v)::text \
             FROM unnest($1::int[], $2::uuid[]) AS k(repo, document) \
             JOIN cfs_search_docs d ON d.repo = k.repo AND d.document = k.document \
             CROSS JOIN LATERAL unnest(d.chunks[1:$3]) AS c(id) \
             JOIN cfs_search s ON s.repo = d.repo AND s.chunk = c.id \
             JOIN cfs_vectors v ON v.hash = s.vector GROUP BY d.repo, d.document",
            &[&repos, &ids, &first],
        )
        .map_err(sql_error(name, "sum the found files' vectors"))?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let text: String = row.get(2);
        let sum = crate::search::floats_of(name, &text)?
            .iter()
            .map(|&x| x as i64)
            .collect();
        out.insert(
            (row.get(0), DocumentId(*row.get::<_, Uuid>(1).as_bytes())),
            sum,
        );
    }
    Ok(out)
}
