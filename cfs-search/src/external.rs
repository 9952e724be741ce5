//! Ranking from lists made outside a snapshot. A database that holds a repository's
//! chunks, term counts and vectors (cfs-postgres) finds each list's candidates itself,
//! with the rows [`document_rows`] gives it, and hands the lists here: they are fused
//! and ranked by the code that ranks a snapshot's, so both give one order
//! (`docs/spec.md`, "Ranking for code").

use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId, ModelHash, PathEntry};
use cfs_ingest::{Embedder, Markers};
use cfs_store::{ReadTxn, Result};

use super::evidence::FILE_VECTOR_CHUNKS;
use super::intent::Analysis;
use super::meta::{ChunkMeta, DocInfo, PathInfo};
use super::query::{self, Mode, Query, Scored, TextFound};
use super::rank::{self, Lists, RankedFile, Source};
use super::segment::chunk_terms;
use super::snapshot::{chunk_meta, first_chunk_markers};

/// What a database keeps to rank one document's chunks as a snapshot would.
#[derive(Debug)]
pub struct DocumentRows {
    /// The document: MIME type, paths, chunks, role.
    pub doc: Arc<DocInfo>,
    /// Its chunks, in sequence order.
    pub chunks: Vec<ChunkRow>,
    /// Its file vector: the sum of the vectors of its first
    /// [`crate::FILE_VECTOR_CHUNKS`] chunks that have one (`None` when none has).
    pub file_vector: Option<Vec<i64>>,
}

/// What a database keeps to rank one chunk.
#[derive(Debug)]
pub struct ChunkRow {
    /// The chunk's metadata.
    pub meta: Arc<ChunkMeta>,
    /// Its number of text tokens (BM25's document length).
    pub length: u32,
    /// Its definition terms with their values, then its distinct tokens with their
    /// counts, as a snapshot posts them.
    pub terms: Vec<(String, u32)>,
    /// Its vector under the store's model (`None` before it is embedded).
    pub vector: Option<Vec<i16>>,
}

/// The rows of the documents `ids` in `txn`'s state (a document without a path, which
/// no snapshot holds, gives none; a missing one neither).
pub fn document_rows(
    txn: &ReadTxn,
    model: &ModelHash,
    ids: &[DocumentId],
) -> Result<Vec<DocumentRows>> {
    let scan = txn.document_scan()?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(found) = scan.get(id)? else { continue };
        let entries = txn.paths_of(id)?;
        if entries.is_empty() {
            continue;
        }
        let mut paths: Vec<PathInfo> = entries.iter().map(path_info).collect();
        paths.sort_by(|a, b| a.path.cmp(&b.path));
        let markers = Markers {
            beside: beside_in(txn, &paths)?,
            ..first_chunk_markers(txn, &found)?
        };
        let mime = found.document.profile.mime_type.as_str().into();
        let chunks = txn.chunks_by_id(&found.chunks)?;
        let doc = Arc::new(DocInfo::new(*id, mime, paths, found.chunks, markers));
        let vectors = txn.vectors_of(&chunks, model)?;
        let file_vector = file_vector_sum(&vectors[..vectors.len().min(FILE_VECTOR_CHUNKS)]);
        let rows = chunks
            .iter()
            .zip(vectors)
            .map(|(chunk, vector)| {
                let meta = chunk_meta(chunk, Arc::clone(&doc));
                let terms = chunk_terms(&chunk.text, &meta);
                ChunkRow {
                    length: terms.total(),
                    terms: terms.iter().map(|(t, n)| (t.to_owned(), n)).collect(),
                    meta: Arc::new(meta),
                    vector: (!vector.is_empty()).then_some(vector),
                }
            })
            .collect();
        out.push(DocumentRows {
            doc,
            chunks: rows,
            file_vector,
        });
    }
    Ok(out)
}

/// Whether a document of `paths` lies beside its implementation in `txn`'s state
/// ([`cfs_ingest::beside_implementation`]).
fn beside_in(txn: &ReadTxn, paths: &[PathInfo]) -> Result<bool> {
    let mut held = std::collections::HashSet::new();
    for path in paths {
        for other in cfs_ingest::implementations_of(&path.path) {
            if txn.holds_path(&other)? {
                held.insert(other);
            }
        }
    }
    let mut holds = |p: &str| held.contains(p);
    Ok(cfs_ingest::beside_implementation(
        paths.iter().map(|p| &*p.path),
        &mut holds,
    ))
}

/// The sum of the non-empty `vectors` (`None` when all are empty).
fn file_vector_sum(vectors: &[Vec<i16>]) -> Option<Vec<i64>> {
    let mut present = vectors.iter().filter(|v| !v.is_empty()).peekable();
    let dim = present.peek()?.len();
    let mut sum = vec![0i64; dim];
    for v in present {
        for (s, &x) in sum.iter_mut().zip(v) {
            *s += i64::from(x);
        }
    }
    Some(sum)
}

/// The search side of a path row.
pub(crate) fn path_info(entry: &PathEntry) -> PathInfo {
    PathInfo {
        path: entry.path.as_str().into(),
        collections: entry
            .collections
            .iter()
            .map(|c| c.as_str().into())
            .collect(),
    }
}

/// A chunk one list found, with its score there.
#[derive(Clone, Debug)]
pub struct Found<S> {
    /// The chunk.
    pub chunk: Arc<ChunkMeta>,
    /// Its score in the list.
    pub score: S,
}

/// A query's lists as found elsewhere, each best first (score descending, then chunk
/// id), at most [`list_depth`] long, every chunk passing the query's filter.
#[derive(Debug, Default)]
pub struct ExternalLists {
    /// BM25 ([`text_terms`], [`crate::idf`], [`crate::tf_part`]).
    pub text: Vec<Found<u64>>,
    /// For each chunk of `text`: the query's words it holds in a form or another (bit
    /// `i` for word `i` of [`text_terms`], the first 64).
    pub masks: HashMap<ChunkId, u64>,
    /// Each word's weight: the largest idf of its forms held anywhere (0 for a stop
    /// word or a word held nowhere).
    pub word_weights: Vec<u64>,
    /// Nearest vectors by the exact integer dot product ([`crate::dot`]).
    pub vector: Vec<Found<i64>>,
    /// Definitions ([`crate::definition_found`]; a chunk keeps its best score).
    pub definitions: Vec<Found<u64>>,
    /// The query's vector (empty when vectors were not searched).
    pub query_vector: Vec<i16>,
    /// For each document of a listed chunk that has vectors: the sum of the vectors of
    /// its first [`crate::FILE_VECTOR_CHUNKS`] chunks ([`DocumentRows::file_vector`]).
    pub file_vectors: HashMap<DocumentId, Vec<i64>>,
    /// For each document of a listed chunk that holds a query term, when the intent
    /// weighs file texts: its file text score ([`crate::file_text_score_of`]).
    pub file_texts: HashMap<DocumentId, u64>,
}

/// Ranks `lists`, found for `query` read as `analysis`, with the vector weight `weight`
/// ([`vector_weight`]): as [`crate::Snapshot`] search ranks its own.
pub fn rank_external(
    lists: ExternalLists,
    query: &Query,
    analysis: &Analysis,
    weight: u32,
) -> Vec<RankedFile> {
    let mut metas: HashMap<ChunkId, Arc<ChunkMeta>> = HashMap::new();
    let text = keyed(lists.text, &mut metas);
    let vector = keyed(lists.vector, &mut metas);
    let definitions = keyed(lists.definitions, &mut metas);
    let file_vectors = lists.file_vectors;
    let file_texts = lists.file_texts;
    let lists = Lists {
        text: TextFound {
            list: text,
            masks: lists.masks,
            word_weights: lists.word_weights,
            terms: Vec::new(),
        },
        vector,
        definitions,
        query_vector: lists.query_vector,
    };
    let source = Source {
        meta: &|id: ChunkId| metas.get(&id).cloned(),
        file_vector: &|doc: &DocInfo, q: &[i16]| {
            crate::evidence::file_vector_score_of_sum(file_vectors.get(&doc.id)?, q)
        },
        file_text: &|doc: &DocInfo| file_texts.get(&doc.id).copied(),
    };
    rank::rank_from(&source, lists, analysis, &query.ranking, Some(weight))
}

/// A list by chunk id, ranked in its order, its chunks' metadata kept in `metas`.
fn keyed<S>(
    found: Vec<Found<S>>,
    metas: &mut HashMap<ChunkId, Arc<ChunkMeta>>,
) -> Vec<Scored<S, ChunkId>> {
    let mut list = Vec::with_capacity(found.len());
    for (r, f) in found.into_iter().enumerate() {
        list.push(Scored {
            at: f.chunk.id,
            score: f.score,
            rank: r + 1,
        });
        metas.insert(f.chunk.id, f.chunk);
    }
    list
}

/// The depth of each list for `query`, for chunks or for files.
pub fn list_depth(query: &Query, files: bool) -> usize {
    match files {
        true => query::file_depth(query.k),
        false => query::depth(query.k),
    }
}

/// The weight of the vector list in percent for `query` read as `analysis`.
pub fn vector_weight(query: &Query, analysis: &Analysis, embedder: &dyn Embedder) -> u32 {
    match query.mode {
        Mode::Vector => 100,
        _ => query.vector_weight.unwrap_or_else(|| {
            query.ranking.weights(analysis.intent).vector * embedder.fusion_weight() / 100
        }),
    }
}

/// Whether `query` searches vectors, its text list `depth` deep having found
/// `text_found` chunks.
pub fn vectors_needed(query: &Query, weight: u32, text_found: usize, depth: usize) -> bool {
    query::vector_needed(query.mode, weight, text_found, depth) && !query.text.trim().is_empty()
}

/// The words of a query (sorted, distinct) and the terms text search looks up: each
/// with the right shift of its score (0 for a word, 1 for a variant at half weight)
/// and the index of its word.
pub fn text_terms(query: &Query) -> (Vec<String>, Vec<(String, u32, usize)>) {
    query::query_terms(&query.text, query.ranking.variants)
}
