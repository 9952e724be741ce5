//! What a candidate file as a whole says about a query, beyond its chunks' ranks: how
//! much of its name the query names (paths as evidence), how many of the query's words
//! its text-matched chunks hold between them (coverage), where the sum of its chunks'
//! vectors ranks among the candidates' (the file vector), and where the whole file ranks
//! by BM25 as one document (the file text). Each adds to every
//! chunk of the file in proportion to the intent's weight (`docs/spec.md`, "Ranking for
//! code").

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::DocumentId;

use super::bm25;
use super::intent::Analysis;
use super::meta::{DocInfo, Posting};
use super::path_words::{PATH_ONE, file_words, path_points};
use super::query::{QueryTerm, TextFound, rrf};
use super::rank::{Lists, RankedChunk, Ranking, Weights};
use super::snapshot::Snapshot;

/// Most chunks of a file whose vectors make its file vector.
pub const FILE_VECTOR_CHUNKS: usize = 256;

/// What one candidate file says about a query.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Path points ([`path_points`]; [`PATH_ONE`]: its name named wholly).
    pub path: u64,
    /// Coverage points: the idf share of the query's words its text-matched chunks hold,
    /// in [`PATH_ONE`] units.
    pub coverage: u64,
    /// Its file vector's rank among the candidates' (from 1).
    pub vector_rank: Option<usize>,
    /// Its file text score's rank among the candidates' (from 1).
    pub text_rank: Option<usize>,
}

impl Evidence {
    /// What the evidence adds to each chunk of the file: `rrf(1)` times the path and
    /// coverage weights in proportion to their points, and the file vector and file text
    /// ranks' reciprocals times their weights (percentages; divisions round down, in this
    /// order).
    pub fn bonus(&self, w: &Weights) -> u64 {
        let share = |weight: u32, points: u64| rrf(1) * u64::from(weight) / 100 * points / PATH_ONE;
        share(w.path, self.path)
            + share(w.coverage, self.coverage)
            + self
                .vector_rank
                .map_or(0, |r| rrf(r) * u64::from(w.file_vector) / 100)
            + self
                .text_rank
                .map_or(0, |r| rrf(r) * u64::from(w.file_text) / 100)
    }
}

/// The evidence of every file holding a candidate chunk.
pub(crate) fn file_evidence<K: Eq + std::hash::Hash>(
    source: &super::rank::Source<'_, K>,
    chunks: &[(K, RankedChunk)],
    lists: &Lists<K>,
    analysis: &Analysis,
    ranking: &Ranking,
) -> HashMap<DocumentId, Evidence> {
    let mut docs: Vec<&Arc<DocInfo>> = chunks.iter().map(|(_, c)| &c.meta.doc).collect();
    docs.sort_unstable_by_key(|d| d.id);
    docs.dedup_by_key(|d| d.id);
    let mut held: HashMap<DocumentId, u64> = HashMap::new();
    for (at, c) in chunks {
        if let Some(mask) = lists.text.masks.get(at) {
            *held.entry(c.meta.doc.id).or_default() |= mask;
        }
    }
    let weights = ranking.weights(analysis.intent);
    let vector_ranks = match weights.file_vector > 0 && !lists.query_vector.is_empty() {
        true => ranks_by(&docs, |d| (source.file_vector)(d, &lists.query_vector)),
        false => HashMap::new(),
    };
    let text_ranks = match weights.file_text > 0 {
        true => ranks_by(&docs, source.file_text),
        false => HashMap::new(),
    };
    docs.iter()
        .map(|d| {
            let path = d
                .paths
                .iter()
                .map(|p| path_points(&analysis.words, &file_words(&p.path), analysis.intent))
                .max()
                .unwrap_or(0);
            let coverage = coverage(&lists.text, held.get(&d.id).copied().unwrap_or(0));
            let e = Evidence {
                path: if ranking.paths { path } else { 0 },
                coverage: if ranking.coverage { coverage } else { 0 },
                vector_rank: vector_ranks.get(&d.id).copied(),
                text_rank: text_ranks.get(&d.id).copied(),
            };
            (d.id, e)
        })
        .collect()
}

/// The idf share of the query's words that `mask` holds, in [`PATH_ONE`] units.
fn coverage<K>(text: &TextFound<K>, mask: u64) -> u64 {
    coverage_points(&text.word_weights, mask)
}

/// Coverage points: `floor(1024 * (the weights of the words whose bit is set in
/// mask) / (every word's weight))` over the first 64 words; 0 when they weigh 0.
pub fn coverage_points(word_weights: &[u64], mask: u64) -> u64 {
    let weights = word_weights.iter().take(64);
    let all: u64 = weights.clone().sum();
    let got: u64 = weights
        .enumerate()
        .filter(|(b, _)| mask >> b & 1 == 1)
        .map(|(_, w)| w)
        .sum();
    (got * PATH_ONE).checked_div(all).unwrap_or(0)
}

/// The rank (from 1) of each of `docs` by `score` descending, ties by document id; a
/// document without a score has no rank (the file vector's and file text's lists).
fn ranks_by<S: Ord + Copy>(
    docs: &[&Arc<DocInfo>],
    score: impl Fn(&DocInfo) -> Option<S>,
) -> HashMap<DocumentId, usize> {
    let mut scored: Vec<(S, DocumentId)> = docs
        .iter()
        .filter_map(|d| Some((score(d)?, d.id)))
        .collect();
    scored.sort_unstable_by_key(|&(s, id)| (Reverse(s), id));
    scored
        .into_iter()
        .enumerate()
        .map(|(r, (_, id))| (id, r + 1))
        .collect()
}

/// The query terms text search scored, with each segment's posting list of each (by
/// segment, then term): looked up once a query, read for every candidate file.
pub(crate) struct TermPostings<'s> {
    terms: Vec<QueryTerm>,
    lists: Vec<Vec<Option<&'s [Posting]>>>,
    /// The snapshot's documents and live tokens (`N` and `T` for files), counted once.
    documents: u64,
    tokens: u64,
}

impl<'s> TermPostings<'s> {
    pub(crate) fn new(snap: &'s Snapshot, terms: Vec<QueryTerm>) -> Self {
        let lists = snap
            .segments
            .iter()
            .map(|l| terms.iter().map(|t| l.segment.postings(&t.term)).collect())
            .collect();
        Self {
            terms,
            lists,
            documents: snap.n_documents() as u64,
            tokens: snap.live_len(),
        }
    }
}

/// A document's file text score in a snapshot: each query term's counts and the token
/// counts summed over its live chunks ([`file_text_score_of`]).
pub(crate) fn file_text_score(
    snap: &Snapshot,
    doc: &DocInfo,
    postings: &TermPostings<'_>,
) -> Option<u64> {
    let terms = &postings.terms;
    let mut counts = vec![0u64; terms.len()];
    let mut length = 0u64;
    for (s, i) in snap.live_places(doc).flatten() {
        length += u64::from(snap.segments[s].segment.token_len(i));
        for (count, list) in counts.iter_mut().zip(&postings.lists[s]) {
            let Some(list) = list else { continue };
            if let Ok(p) = list.binary_search_by_key(&(i as u32), |p| p[0]) {
                *count += u64::from(list[p][1]);
            }
        }
    }
    let file = FileText {
        documents: postings.documents,
        tokens: postings.tokens,
        length,
    };
    file_text_score_of(&file, terms, &counts)
}

/// A whole file as one BM25 document: the number of documents, every chunk's tokens,
/// and the file's own length (its chunks' token counts summed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileText {
    /// Documents in the snapshot (BM25's `N` for files).
    pub documents: u64,
    /// Tokens of every live chunk (`T`: the average file holds `T / N` of them).
    pub tokens: u64,
    /// The file's tokens (`dl`).
    pub length: u64,
}

/// A file's **file text score** for the query terms text search scored (`terms`, each
/// with its chunk idf and shift), `counts[t]` term `t`'s count in the file: the sum over
/// the terms it holds of `((idf * tf_part(count, length, N, T)) >> shift) + 1`, BM25 as
/// for a chunk with the file for the chunk; `None` when it holds no term.
pub fn file_text_score_of(file: &FileText, terms: &[QueryTerm], counts: &[u64]) -> Option<u64> {
    let score: u64 = terms
        .iter()
        .zip(counts)
        .filter(|(_, count)| **count > 0)
        .map(|(t, &count)| {
            let part = bm25::tf_part(count, file.length, file.documents, file.tokens);
            ((t.idf * part) >> t.shift) + 1
        })
        .sum();
    (score > 0).then_some(score)
}

/// The score of a document's file vector ([`file_vector_score_of`]) from the vectors
/// of its first [`FILE_VECTOR_CHUNKS`] chunks that have one; `None` when none has.
pub(crate) fn file_vector_score(snap: &Snapshot, doc: &DocInfo, q: &[i16]) -> Option<i128> {
    let vectors: Vec<&[i16]> = snap
        .live_places(doc)
        .take(FILE_VECTOR_CHUNKS)
        .filter_map(|place| {
            let (s, i) = place?;
            let segment = &snap.segments[s].segment;
            segment.has_vector(i).then(|| segment.vector(i))
        })
        .collect();
    file_vector_score_of(&vectors, q)
}

/// The score of the file vector `v`, the sum of `vectors`, for the query vector `q`:
/// `floor(dot(q, v) * 2^15 / isqrt(|v|^2))` in exact integers, rounded towards zero;
/// `None` without vectors or when `v` is zero.
pub fn file_vector_score_of(vectors: &[&[i16]], q: &[i16]) -> Option<i128> {
    let mut sum = vec![0i64; q.len()];
    for v in vectors {
        for (s, &x) in sum.iter_mut().zip(*v) {
            *s += i64::from(x);
        }
    }
    (!vectors.is_empty()).then(|| file_vector_score_of_sum(&sum, q))?
}

/// [`file_vector_score_of`] from the sum of the vectors (summed elsewhere, as a
/// database does): `None` when it is zero.
pub fn file_vector_score_of_sum(sum: &[i64], q: &[i16]) -> Option<i128> {
    let dot: i128 = sum
        .iter()
        .zip(q)
        .map(|(&s, &x)| i128::from(s) * i128::from(x))
        .sum();
    let norm2: u128 = sum
        .iter()
        .map(|&s| (i128::from(s) * i128::from(s)) as u128)
        .sum();
    let norm = norm2.isqrt();
    (norm > 0).then(|| (dot << 15) / norm as i128)
}
