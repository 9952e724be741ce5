//! What a query does over a snapshot, for `cfs search --explain`: how the query was
//! read (its intent, identifiers and words), the segments it reads, the terms it looks
//! up with their document frequencies and weights, how many chunks each retriever
//! considers, and the weights of the fusion. The score parts of each result are on the
//! [`super::Hit`] itself ([`super::Parts`]).

use cfs_core::StateRoot;

use super::bm25;
use super::external::list_depth;
use super::intent::{Intent, analyze};
use super::query::{Mode, Query, live_df, vector_needed};
use super::rank::Weights;
use super::snapshot::Snapshot;
use super::tokenize::tokens;

/// One segment of the snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentExplained {
    /// Chunks it holds, live and tombstoned.
    pub chunks: usize,
    /// Live chunks.
    pub live: usize,
    /// Read in place from the mapped index file (else built in memory).
    pub mapped: bool,
    /// Has an HNSW graph (vector search over it is approximate unless exact).
    pub graph: bool,
}

/// One distinct query term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermExplained {
    /// The token.
    pub term: String,
    /// Live chunks holding it.
    pub df: u64,
    /// Its BM25 weight, `log2((N + 1) / (df + 0.5))` with 16 fractional bits (0 when no
    /// chunk holds it).
    pub idf: u64,
}

/// How a query runs over a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// The state searched.
    pub root: StateRoot,
    /// Its segments, base first.
    pub segments: Vec<SegmentExplained>,
    /// Results taken from each retriever before fusion.
    pub depth: usize,
    /// The distinct query terms.
    pub terms: Vec<TermExplained>,
    /// Live chunks holding at least one term (each is scored).
    pub text_candidates: usize,
    /// Whether the vector retriever runs (hybrid skips it when its weight is 0 and the
    /// text results fill the whole list).
    pub vector_runs: bool,
    /// Live chunks with a vector, which an exact vector search scores one by one.
    pub vectors: usize,
    /// Whether vector search is exact for this query (`Query::exact`, or no graph and
    /// no sign codes to scan).
    pub vector_exact: bool,
    /// Whether the mapped segments are searched by their sign codes, the best
    /// [`super::CODE_CANDIDATES`] of each re-scored exactly.
    pub vector_codes: bool,
    /// Weight of the vector ranks in the fusion, in percent of the text ranks'.
    pub vector_weight: u32,
    /// The query's intent.
    pub intent: Intent,
    /// The identifiers looked up as definitions (`qualifier::name` when qualified).
    pub identifiers: Vec<String>,
    /// The words matched against file and folder names.
    pub words: Vec<String>,
    /// The fusion's weights for this query (the vector weight as used).
    pub weights: Weights,
}

/// What an explanation needs beyond the query: the embedder's fusion weight, whether
/// its vectors may be searched by their sign codes, and the answer asked for.
#[derive(Clone, Copy, Debug)]
pub struct Explaining {
    /// The embedder's fusion weight in percent.
    pub embedder_weight: u32,
    /// Whether its vectors may be searched by their sign codes.
    pub sign_codes: bool,
    /// A file answer (deeper lists) rather than a chunk answer.
    pub files: bool,
}

/// How `query` runs over `snap` as `how` says.
pub fn explain(snap: &Snapshot, query: &Query, how: Explaining) -> Explanation {
    let Explaining {
        embedder_weight,
        sign_codes,
        files,
    } = how;
    let analysis = analyze(&query.text);
    let mut weights = query.ranking.weights(analysis.intent);
    weights.vector = match query.mode {
        Mode::Vector => 100,
        _ => query
            .vector_weight
            .unwrap_or(weights.vector * embedder_weight / 100),
    };
    let weight = weights.vector;
    let segments = snap
        .segments
        .iter()
        .map(|l| SegmentExplained {
            chunks: l.segment.len(),
            live: l.n_live(),
            mapped: l.segment.as_mapped().is_some(),
            graph: l.segment.hnsw.get().is_some(),
        })
        .collect();
    let mut words = tokens(&query.text);
    words.sort_unstable();
    words.dedup();
    let n = snap.n_chunks() as u64;
    let mut candidates = 0;
    let mut terms = Vec::with_capacity(words.len());
    let text_runs = query.mode != Mode::Vector;
    for live in snap.segments.iter().filter(|_| text_runs) {
        let mut hit = vec![false; live.segment.len()];
        for w in &words {
            for &[i, _] in live.segment.postings(w).unwrap_or_default() {
                if let Some(h) = hit.get_mut(i as usize) {
                    *h |= !live.is_dead(i as usize);
                }
            }
        }
        candidates += hit.iter().filter(|&&h| h).count();
    }
    for w in words.iter().filter(|_| text_runs) {
        let df = live_df(snap, w);
        let idf = if df == 0 { 0 } else { bm25::idf(n, df) };
        terms.push(TermExplained {
            term: w.clone(),
            df,
            idf,
        });
    }
    let depth = list_depth(query, files);
    let vectors = snap
        .segments
        .iter()
        .map(|l| {
            (0..l.segment.len())
                .filter(|&i| !l.is_dead(i) && l.segment.has_vector(i))
                .count()
        })
        .sum();
    let has_graph = snap.segments.iter().any(|l| l.segment.hnsw.get().is_some());
    let codes = !query.exact
        && sign_codes
        && snap
            .segments
            .iter()
            .any(|l| l.segment.as_mapped().is_some());
    Explanation {
        root: snap.state_root(),
        segments,
        depth,
        terms,
        text_candidates: candidates,
        vector_runs: !query.text.trim().is_empty()
            && vector_needed(query.mode, weight, candidates.min(depth), depth),
        vectors,
        vector_exact: query.exact || !has_graph && !codes,
        vector_codes: codes,
        vector_weight: weight,
        intent: analysis.intent,
        identifiers: analysis
            .identifiers
            .iter()
            .map(|i| match &i.qualifier {
                Some(q) => format!("{q}::{}", i.key),
                None => i.key.clone(),
            })
            .collect(),
        words: analysis.words,
        weights,
    }
}
