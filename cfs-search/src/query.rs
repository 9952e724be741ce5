//! Query execution over a snapshot: BM25 text search, vector search, and their
//! reciprocal rank fusion, with filters. Every ordering ends with the chunk id, so equal
//! inputs give equal result lists.

use std::cmp::Reverse;
use std::sync::Arc;

use cfs_core::ChunkId;
use cfs_ingest::Role;
use rayon::prelude::*;

use super::bm25;
use super::codes::{nearest, sign_code};
use super::format::KINDS;
use super::mapped::Mapped;
use super::meta::{ChunkMeta, MetaView};
use super::rank::Ranking;
use super::segment::Live;
use super::snapshot::Snapshot;
use super::tokenize::{tokens, variants};
use super::vector::{dot, norm2};
use cfs_store::{Result, StoreError};

/// Which retrievers a query uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Text and vector results fused by reciprocal rank.
    #[default]
    Hybrid,
    /// Vector similarity alone.
    Vector,
    /// BM25 alone.
    Text,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hybrid" => Ok(Self::Hybrid),
            "vector" => Ok(Self::Vector),
            "text" => Ok(Self::Text),
            _ => Err(format!("unknown mode {s:?} (hybrid, vector or text)")),
        }
    }
}

/// Conditions every result meets. Empty fields do not filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// One of the chunk's paths starts with this (a leading `./` is ignored).
    pub path_prefix: Option<String>,
    /// One of the chunk's paths is in this collection.
    pub collection: Option<String>,
    /// Language of a code chunk (`rust`, `python`, ...).
    pub language: Option<String>,
    /// Chunk kind: `text`, `section`, `code` or `page`.
    pub kind: Option<String>,
    /// The document's MIME type.
    pub mime_type: Option<String>,
    /// The file's role (`cfs_ingest::path_role`, markers of generated code).
    pub role: Option<Role>,
}

impl Filter {
    /// Whether `meta` passes.
    pub fn matches(&self, meta: &ChunkMeta) -> bool {
        self.matches_view(&meta.view())
    }

    /// [`Filter::matches`] for a chunk's [`MetaView`].
    pub fn matches_view(&self, meta: &MetaView<'_>) -> bool {
        if let Some(prefix) = &self.path_prefix {
            let prefix = prefix.strip_prefix("./").unwrap_or(prefix);
            if !meta.doc.paths.iter().any(|p| p.path.starts_with(prefix)) {
                return false;
            }
        }
        if let Some(c) = &self.collection
            && !meta
                .doc
                .paths
                .iter()
                .any(|p| p.collections.iter().any(|x| **x == **c))
        {
            return false;
        }
        if let Some(l) = &self.language
            && meta.language != Some(l.as_str())
        {
            return false;
        }
        if let Some(k) = &self.kind
            && meta.kind != k
        {
            return false;
        }
        if let Some(m) = &self.mime_type
            && *meta.doc.mime_type != **m
        {
            return false;
        }
        if let Some(r) = self.role
            && meta.doc.role != r
        {
            return false;
        }
        true
    }

    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// After a search found nothing: a filter value that no chunk of the snapshot has (a
/// mistyped language, kind, MIME type or collection) is an error listing the values
/// that exist, so that "no results" never hides a typo. Costs one pass over the chunks,
/// only when there were no results.
pub(crate) fn check_filter_values(snap: &Snapshot, filter: &Filter) -> Result<()> {
    use std::collections::BTreeSet;
    if filter.is_empty() {
        return Ok(());
    }
    let unknown = |what: &str, value: &str, known: BTreeSet<&str>| {
        let list: Vec<&str> = known.into_iter().collect();
        Err(StoreError::InvalidInput(format!(
            "no chunk has {what} {value:?}; the store has: {}",
            if list.is_empty() {
                "none".into()
            } else {
                list.join(", ")
            }
        )))
    };
    if let Some(k) = &filter.kind
        && !KINDS.contains(&k.as_str())
    {
        return unknown("kind", k, KINDS.into_iter().collect());
    }
    let docs: Vec<_> = snap.documents().collect();
    if let Some(m) = &filter.mime_type {
        let known: BTreeSet<&str> = docs.iter().map(|d| &*d.mime_type).collect();
        if !known.contains(m.as_str()) {
            return unknown("MIME type", m, known);
        }
    }
    if let Some(c) = &filter.collection {
        let known: BTreeSet<&str> = docs
            .iter()
            .flat_map(|d| {
                d.paths
                    .iter()
                    .flat_map(|p| p.collections.iter().map(|c| &**c))
            })
            .collect();
        if !known.contains(c.as_str()) {
            return unknown("collection", c, known);
        }
    }
    if let Some(l) = &filter.language {
        let ids: Vec<_> = docs.iter().flat_map(|d| d.chunks.iter()).collect();
        let known: BTreeSet<Box<str>> = ids
            .into_iter()
            .filter_map(|id| snap.chunk(id)?.language.clone())
            .collect();
        if !known.contains(l.as_str()) {
            return unknown("language", l, known.iter().map(|s| &**s).collect());
        }
    }
    Ok(())
}

/// A search request.
#[derive(Clone, Debug)]
pub struct Query {
    /// The words to look for; any text is accepted.
    pub text: String,
    /// Number of results.
    pub k: usize,
    /// Retrievers.
    pub mode: Mode,
    /// Conditions on results.
    pub filter: Filter,
    /// Search vectors exactly even where an HNSW graph exists.
    pub exact: bool,
    /// Weight of the vector ranks in hybrid fusion, in percent of the text ranks'
    /// weight; `None` takes the query intent's weight scaled by the embedder's
    /// [`cfs_ingest::Embedder::fusion_weight`] (in percent).
    pub vector_weight: Option<u32>,
    /// The ranking stack (the spec's by default).
    pub ranking: Ranking,
}

impl Query {
    /// A hybrid query for the top 10.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            k: 10,
            mode: Mode::Hybrid,
            filter: Filter::default(),
            exact: false,
            vector_weight: None,
            ranking: Ranking::default(),
        }
    }

    /// Vector search exact (the reference) even where an HNSW graph exists.
    pub fn exact(mut self, exact: bool) -> Self {
        self.exact = exact;
        self
    }

    /// With `k` results.
    pub fn k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }

    /// With a mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// With a filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// With a ranking stack.
    pub fn ranking(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }
}

/// A chunk of a snapshot by its place: its segment and local index (a live chunk is
/// in one segment only, so within one snapshot the place names the chunk). Results are
/// kept by place, and their metadata read for the final ones only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct At {
    pub seg: u32,
    pub i: u32,
}

impl At {
    pub(crate) fn new(seg: usize, i: usize) -> Self {
        Self {
            seg: seg as u32,
            i: i as u32,
        }
    }

    fn id(self, snap: &Snapshot) -> ChunkId {
        snap.segments[self.seg as usize].segment.id(self.i as usize)
    }

    /// The chunk's metadata (`None` only where a damaged file cannot give it).
    pub fn meta(self, snap: &Snapshot) -> Option<Arc<ChunkMeta>> {
        snap.segments[self.seg as usize]
            .segment
            .meta(self.i as usize)
    }
}

/// One retriever's result: a chunk (by its place in a snapshot, or another key where
/// the lists come from elsewhere), its score and its 1-based rank.
#[derive(Clone, Debug)]
pub(crate) struct Scored<S, K = At> {
    pub at: K,
    pub score: S,
    pub rank: usize,
}

/// Sorts by score descending, then chunk id, and keeps the first `k`, ranked. Local
/// indexes follow chunk ids within a segment, so ids are read only where equal scores
/// fall in different segments.
pub(crate) fn top<S: Ord + Copy>(
    snap: &Snapshot,
    mut all: Vec<(S, At)>,
    k: usize,
) -> Vec<Scored<S>> {
    if k == 0 {
        return Vec::new();
    }
    if all.len() > k {
        all.select_nth_unstable_by_key(k - 1, |e| Reverse(e.0));
        // Chunks scoring as the k-th may lie on both sides of it: all of them stay.
        let cut = all[k - 1].0;
        all.retain(|e| e.0 >= cut);
    }
    all.sort_unstable_by_key(|e| (Reverse(e.0), e.1));
    order_ties_by_id(snap, &mut all);
    all.truncate(k);
    all.into_iter()
        .enumerate()
        .map(|(r, (score, at))| Scored {
            at,
            score,
            rank: r + 1,
        })
        .collect()
}

/// Orders each run of equal scores that spans segments by chunk id (`all` is sorted
/// by score, then place).
fn order_ties_by_id<S: Eq + Copy>(snap: &Snapshot, all: &mut [(S, At)]) {
    let mut start = 0;
    while start < all.len() {
        let score = all[start].0;
        let len = all[start..].iter().take_while(|e| e.0 == score).count();
        let run = &mut all[start..start + len];
        if run.iter().any(|e| e.1.seg != run[0].1.seg) {
            run.sort_by_cached_key(|e| e.1.id(snap));
        }
        start += len;
    }
}

/// Results each list gives before ranking, for `k` results, in every mode: ranking
/// moves chunks (a file's further chunks decay, files gain by their evidence), so a
/// list as short as the answer would leave it nothing to choose from.
pub(crate) fn depth(k: usize) -> usize {
    k.saturating_mul(4).max(50)
}

/// Results each list gives before ranking, for `files` files: four times as deep as for
/// as many chunks, and never less than for 10 files, so that an answer of up to 10
/// files is the first files of the answer of 10 (a file's further chunks found deeper
/// add to its score, so a shallower list could order the first files otherwise).
pub(crate) fn file_depth(files: usize) -> usize {
    files.saturating_mul(16).max(160)
}

/// Whether the vector retriever is needed, given the text results found in a list
/// `depth` deep: in hybrid mode when vectors weigh something, or when the text list is
/// shorter than its depth (vector results then follow it). Not the answer's length: an
/// answer of 3 would then search vectors where one of 10 does not, and file vectors
/// would order its first files otherwise.
pub(crate) fn vector_needed(mode: Mode, weight: u32, text_found: usize, depth: usize) -> bool {
    match mode {
        Mode::Hybrid => weight > 0 || text_found < depth,
        Mode::Vector => true,
        Mode::Text => false,
    }
}

/// The number of live chunks holding `term` (BM25's `df`).
pub(crate) fn live_df(snap: &Snapshot, term: &str) -> u64 {
    snap.segments
        .iter()
        .filter_map(|l| l.segment.postings(term).map(|p| (l, p)))
        .map(|(l, p)| {
            if l.n_dead == 0 {
                p.len() as u64
            } else {
                p.iter().filter(|[i, _]| !l.is_dead(*i as usize)).count() as u64
            }
        })
        .sum()
}

/// The terms of a query: its distinct tokens (its *words*, sorted), and with `expand`
/// their [`variants`] that are not words themselves; each with the right shift of its
/// weight (0 for a word, 1 for a variant: half) and the index of its word.
pub(crate) fn query_terms(query: &str, expand: bool) -> (Vec<String>, Vec<(String, u32, usize)>) {
    let mut words = tokens(query);
    words.sort_unstable();
    words.dedup();
    let stop = |w: &String| super::intent::STOP_WORDS.contains(&w.as_str());
    let skip_stop = !words.iter().all(stop);
    let mut terms: Vec<(String, u32, usize)> = words
        .iter()
        .enumerate()
        .filter(|(_, w)| !(skip_stop && stop(w)))
        .map(|(i, w)| (w.clone(), 0, i))
        .collect();
    if expand {
        for (i, w) in words.iter().enumerate().filter(|(_, w)| !stop(w)) {
            for v in variants(w) {
                if words.binary_search(&v).is_err() {
                    terms.push((v, 1, i));
                }
            }
        }
        terms.sort_unstable();
        terms.dedup_by(|b, a| a.0 == b.0);
    }
    (words, terms)
}

/// What text search found: the ranked chunks, and for each which of the query's words
/// (bit `i` for word `i`, the first 64) it holds, in a form or another; with each
/// word's weight: the largest idf of its forms held anywhere (0 for a stop word).
pub(crate) struct TextFound<K = At> {
    pub list: Vec<Scored<u64, K>>,
    pub masks: std::collections::HashMap<K, u64>,
    pub word_weights: Vec<u64>,
    /// The query terms some live chunk holds, as they were scored.
    pub terms: Vec<QueryTerm>,
}

/// A query term as text search scored it (`docs/spec.md` 21.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryTerm {
    /// The term.
    pub term: String,
    /// 0 for a query word, 1 for a variant (its score is halved).
    pub shift: u32,
    /// Its idf among the snapshot's chunks.
    pub idf: u64,
}

/// BM25 over the snapshot's live chunks: the top `k` passing `filter`; with `expand`,
/// the query's words' [`variants`] at half weight too.
pub(crate) fn text_search(
    snap: &Snapshot,
    query: &str,
    k: usize,
    filter: &Filter,
    expand: bool,
) -> TextFound {
    let (words, terms) = query_terms(query, expand);
    let n = snap.n_chunks() as u64;
    let total = snap.live_len();
    let mut found = TextFound {
        list: Vec::new(),
        masks: std::collections::HashMap::new(),
        word_weights: vec![0; words.len()],
        terms: Vec::new(),
    };
    if terms.is_empty() || n == 0 || k == 0 {
        return found;
    }
    let mut acc: Vec<Vec<u64>> = snap.segments.iter().map(|_| Vec::new()).collect();
    let mut touched: Vec<Vec<u32>> = snap.segments.iter().map(|_| Vec::new()).collect();
    for (term, shift, word) in &terms {
        let df = live_df(snap, term);
        if df == 0 {
            continue;
        }
        let idf = bm25::idf(n, df);
        found.terms.push(QueryTerm {
            term: term.clone(),
            shift: *shift,
            idf,
        });
        if !super::intent::STOP_WORDS.contains(&words[*word].as_str()) {
            found.word_weights[*word] = found.word_weights[*word].max(idf);
        }
        for (s, live) in snap.segments.iter().enumerate() {
            let Some(postings) = live.segment.postings(term) else {
                continue;
            };
            if acc[s].is_empty() {
                acc[s] = vec![0; live.segment.len()];
            }
            for &[i, tf] in postings {
                let i = i as usize;
                // (An index past the segment can only come from a damaged file.)
                if i >= acc[s].len() || live.is_dead(i) {
                    continue;
                }
                let dl = u64::from(live.segment.token_len(i));
                if acc[s][i] == 0 {
                    touched[s].push(i as u32);
                }
                acc[s][i] += ((idf * bm25::tf_part(u64::from(tf), dl, n, total)) >> shift) + 1;
            }
        }
    }
    // Rank (score, place) pairs; only a filter reads chunk metadata here.
    let any = filter.is_empty();
    let mut all: Vec<(u64, At)> = Vec::new();
    for (s, live) in snap.segments.iter().enumerate() {
        let seg = &live.segment;
        for &i in &touched[s] {
            let passes = || seg.meta(i as usize).is_some_and(|m| filter.matches(&m));
            if any || passes() {
                all.push((acc[s][i as usize], At::new(s, i as usize)));
            }
        }
    }
    found.list = top(snap, all, k);
    found.masks = word_masks(snap, &found.list, &terms);
    found
}

/// For each listed chunk, the query words it holds in a form or another (bit `i` for
/// word `i`, the first 64): each term's postings searched for the chunk's local index.
fn word_masks(
    snap: &Snapshot,
    list: &[Scored<u64>],
    terms: &[(String, u32, usize)],
) -> std::collections::HashMap<At, u64> {
    let mut masks = std::collections::HashMap::with_capacity(list.len());
    for (s, live) in snap.segments.iter().enumerate() {
        let here: Vec<&Scored<u64>> = list.iter().filter(|c| c.at.seg as usize == s).collect();
        if here.is_empty() {
            continue;
        }
        for (term, _, word) in terms.iter().filter(|t| t.2 < 64) {
            let Some(postings) = live.segment.postings(term) else {
                continue;
            };
            for c in &here {
                if postings.binary_search_by_key(&c.at.i, |p| p[0]).is_ok() {
                    *masks.entry(c.at).or_insert(0u64) |= 1 << word;
                }
            }
        }
    }
    masks
}

/// Which approximations a vector search may use; with neither it is exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Approx {
    /// A segment's HNSW graph, where it has one.
    pub graph: bool,
    /// A mapped segment's sign codes ([`CODE_CANDIDATES`] re-scored exactly).
    pub codes: bool,
}

/// Candidates a sign-code scan keeps from a segment (at least `k`) for exact scoring:
/// recall@10 0.995 on semantic vectors at this count (docs/bench-log/03-search.md).
pub const CODE_CANDIDATES: usize = 500;

/// Vector search over the snapshot's live chunks: the top `k` passing `filter`, exact,
/// or from each segment's candidates (its HNSW graph's, or its sign codes' nearest)
/// re-scored exactly, as `approx` allows.
pub(crate) fn vector_search(
    snap: &Snapshot,
    query: &[i16],
    k: usize,
    filter: &Filter,
    approx: Approx,
) -> Vec<Scored<i64>> {
    let qn = norm2(query);
    if qn == 0 || k == 0 || query.len() != snap.dim {
        return Vec::new();
    }
    let mut all: Vec<(i64, At)> = Vec::new();
    for (s, live) in snap.segments.iter().enumerate() {
        let place = |(score, i): (i64, usize)| (score, At::new(s, i));
        let seg = &live.segment;
        let score = |i: usize| dot(query, seg.vector(i), qn, seg.norm2(i));
        let any = filter.is_empty();
        let keep = |i: usize| {
            !live.is_dead(i)
                && seg.has_vector(i)
                && (any || seg.meta(i).is_some_and(|m| filter.matches(&m)))
        };
        if let (true, Some(mapped)) = (approx.codes, seg.as_mapped()) {
            all.extend(code_scan(live, mapped, query, k, (&score, &keep)).map(place));
            continue;
        }
        if let (true, Some(hnsw)) = (approx.graph, seg.hnsw.get()) {
            let found: Vec<usize> = hnsw
                .candidates(query)
                .into_iter()
                .filter(|&i| keep(i))
                .collect();
            // A selective filter or many tombstones can leave too few: scan instead.
            if found.len() >= k || filter.is_empty() && live.n_dead == 0 {
                all.extend(found.into_iter().map(|i| place((score(i), i))));
                continue;
            }
        }
        all.extend(exact_scan(live, k, &score, &keep).map(place));
    }
    top(snap, all, k)
}

/// The candidates of a mapped segment from its sign codes: the [`CODE_CANDIDATES`] (at
/// least `k`) that `keep` passes nearest to the query's code in Hamming distance, ties
/// by local index (so by chunk id), each scored exactly.
fn code_scan(
    live: &Live,
    mapped: &Mapped,
    query: &[i16],
    k: usize,
    (score, keep): (
        &(dyn Fn(usize) -> i64 + Sync),
        &(dyn Fn(usize) -> bool + Sync),
    ),
) -> impl Iterator<Item = (i64, usize)> + use<> {
    let code = sign_code(query);
    let seg = &live.segment;
    // A codes column shorter than the segment (a damaged file) gives no candidates.
    let codes = mapped.codes().get(..seg.len() * code.len());
    let found = nearest(
        codes.unwrap_or_default(),
        &code,
        CODE_CANDIDATES.max(k),
        keep,
    );
    let scored = found.into_iter().map(|i| (score(i), i)).collect();
    best(scored, k).into_iter()
}

/// The `k` best of `(score, local index)` pairs: score descending, then index (local
/// indexes follow chunk ids, so this is (score, id) order).
fn best(mut v: Vec<(i64, usize)>, k: usize) -> Vec<(i64, usize)> {
    let key = |e: &(i64, usize)| (Reverse(e.0), e.1);
    if v.len() > k {
        v.select_nth_unstable_by_key(k - 1, key);
        v.truncate(k);
    }
    v
}

/// Local index ranges of a segment of `n` chunks, scanned one per task.
fn blocks(n: usize) -> Vec<std::ops::Range<usize>> {
    const BLOCK: usize = 8192;
    (0..n)
        .step_by(BLOCK)
        .map(|s| s..(s + BLOCK).min(n))
        .collect()
}

/// The top `k` of one segment by exhaustive scan, in parallel blocks.
fn exact_scan(
    live: &Live,
    k: usize,
    score: &(dyn Fn(usize) -> i64 + Sync),
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> impl Iterator<Item = (i64, usize)> + use<> {
    let seg = &live.segment;
    let blocks = blocks(seg.len());
    let block = |range: std::ops::Range<usize>| -> Vec<(i64, usize)> {
        best(
            range.filter(|&i| keep(i)).map(|i| (score(i), i)).collect(),
            k,
        )
    };
    let found: Vec<(i64, usize)> = if blocks.len() > 1 {
        blocks.into_par_iter().flat_map(block).collect()
    } else {
        blocks.into_iter().flat_map(block).collect()
    };
    best(found, k).into_iter()
}

/// Reciprocal rank fusion constant.
pub const RRF_K: u64 = 10;

/// Fused score of a rank, fixed point with 32 fractional bits: `2^32 / (10 + rank)`.
pub fn rrf(rank: usize) -> u64 {
    (1u64 << 32) / (RRF_K + rank as u64)
}
