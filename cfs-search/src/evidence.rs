//! What a candidate file as a whole says about a query, beyond its chunks' ranks: how
//! much of its name the query names (paths as evidence), how many of the query's words
//! its text-matched chunks hold between them (coverage), and where the sum of its
//! chunks' vectors ranks among the candidates' (the file vector). Each adds to every
//! chunk of the file in proportion to the intent's weight (`docs/spec.md`, "Ranking for
//! code").

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::DocumentId;

use super::intent::Analysis;
use super::meta::DocInfo;
use super::path_words::{PATH_ONE, file_words, path_points};
use super::query::{TextFound, rrf};
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
}

impl Evidence {
    /// What the evidence adds to each chunk of the file: `rrf(1)` times the path and
    /// coverage weights in proportion to their points, and the file vector rank's
    /// reciprocal times its weight (percentages; divisions round down, in this order).
    pub fn bonus(&self, w: &Weights) -> u64 {
        let share = |weight: u32, points: u64| rrf(1) * u64::from(weight) / 100 * points / PATH_ONE;
        share(w.path, self.path)
            + share(w.coverage, self.coverage)
            + self
                .vector_rank
                .map_or(0, |r| rrf(r) * u64::from(w.file_vector) / 100)
    }
}

/// The evidence of every file holding a candidate chunk.
pub(crate) fn file_evidence<K: Eq + std::hash::Hash>(
    file_vector: &dyn Fn(&DocInfo, &[i16]) -> Option<i128>,
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
        true => file_vector_ranks(file_vector, &docs, &lists.query_vector),
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

/// The rank (from 1) of each of `docs` by the score of its file vector
/// ([`file_vector_score`]); ties by document id; a document without vectors has none.
fn file_vector_ranks(
    file_vector: &dyn Fn(&DocInfo, &[i16]) -> Option<i128>,
    docs: &[&Arc<DocInfo>],
    q: &[i16],
) -> HashMap<DocumentId, usize> {
    let mut scored: Vec<(i128, DocumentId)> = docs
        .iter()
        .filter_map(|d| Some((file_vector(d, q)?, d.id)))
        .collect();
    scored.sort_unstable_by_key(|&(s, id)| (Reverse(s), id));
    scored
        .into_iter()
        .enumerate()
        .map(|(r, (_, id))| (id, r + 1))
        .collect()
}

/// The score of a document's file vector ([`file_vector_score_of`]) from the vectors
/// of its first [`FILE_VECTOR_CHUNKS`] chunks that have one; `None` when none has.
pub(crate) fn file_vector_score(snap: &Snapshot, doc: &DocInfo, q: &[i16]) -> Option<i128> {
    let vectors: Vec<&[i16]> = doc
        .chunks
        .iter()
        .take(FILE_VECTOR_CHUNKS)
        .filter_map(|id| {
            // The segment where the chunk is live: an older one may hold it dead.
            let (live, i) = snap.segments.iter().find_map(|l| {
                let i = l.segment.position(id)?;
                (!l.is_dead(i)).then_some((l, i))
            })?;
            live.segment.has_vector(i).then(|| live.segment.vector(i))
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
