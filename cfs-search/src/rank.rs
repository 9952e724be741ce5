//! Ranking for code: the text, vector and definition lists fused with weights chosen by
//! the query's intent, paths as evidence, file roles as priors, and files as answers
//! (a file's best chunk plus a bounded bonus for its further ones), with chunk lists
//! that decay a file's further chunks. Every score is an integer; every order ends with
//! the chunk id (`docs/spec.md`, "Ranking for code").

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId};
use cfs_ingest::Role;

use super::evidence::{Evidence, TermPostings, file_evidence, file_text_score, file_vector_score};
use super::intent::{Analysis, Intent, Mentions};
use super::meta::{ChunkMeta, DocInfo};
use super::query::{At, Scored, TextFound, rrf};
use super::snapshot::Snapshot;
use super::symbols::{MAX_LEVEL, definition_level};

/// The weights of one intent's lists, in percent of a text rank's reciprocal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weights {
    /// The BM25 list.
    pub text: u32,
    /// The vector list.
    pub vector: u32,
    /// The definition list.
    pub definitions: u32,
    /// A file whose name the query names wholly gets this share of a first rank.
    pub path: u32,
    /// A file whose text-matched chunks hold every word of the query gets this share of
    /// a first rank (in proportion to the idf of the words held).
    pub coverage: u32,
    /// The list of candidate files by their vector (the sum of their chunks' vectors).
    pub file_vector: u32,
    /// The list of candidate files by BM25 of their whole text.
    pub file_text: u32,
}

/// The ranking stack's weights and switches. [`Ranking::default`] is the spec's; the
/// switches exist to measure each signal's part (benchmarks), not for everyday use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranking {
    /// Look the query's identifiers up as definitions.
    pub definitions: bool,
    /// Also look up other forms of the query's words (plurals, `-ing`, `-ed`) at half
    /// weight in text search.
    pub variants: bool,
    /// Count file and folder names the query names.
    pub paths: bool,
    /// Count how much of the query a file's text-matched chunks hold.
    pub coverage: bool,
    /// Weigh chunks by their file's role.
    pub roles: bool,
    /// Rank files by their best chunk plus a bonus for further ones, and decay a file's
    /// further windows in chunk lists (else chunks stand alone).
    pub files: bool,
    /// Weights for a bare name.
    pub name: Weights,
    /// Weights for words with identifiers among them.
    pub mixed: Weights,
    /// Weights for words only.
    pub description: Weights,
    /// Each role's weight in percent, in the order of [`Role::ALL`].
    pub priors: [u32; 8],
    /// A file's bonus for further chunks is at most this percent of its best chunk's
    /// score.
    pub file_bonus_cap: u32,
}

impl Default for Ranking {
    fn default() -> Self {
        let description = Weights {
            text: 100,
            vector: 100,
            definitions: 0,
            path: 50,
            coverage: 100,
            file_vector: 100,
            file_text: 100,
        };
        Self {
            definitions: true,
            variants: true,
            paths: true,
            coverage: true,
            roles: true,
            files: true,
            name: Weights {
                text: 100,
                vector: 25,
                definitions: 300,
                path: 100,
                coverage: 0,
                file_vector: 0,
                file_text: 0,
            },
            mixed: Weights {
                text: 100,
                vector: 100,
                definitions: 150,
                path: 50,
                coverage: 100,
                file_vector: 100,
                file_text: 0,
            },
            // A question in words ("how does the router pick a route") weighs as
            // any description: on the code suite's dev split, chunk vectors and the
            // file text list found more for questions than they cost
            // (`docs/bench-log/04-code-ranking-languages.md`, "Questions as descriptions").
            description,
            // source, declaration, config, docs, example, test, generated, vendored
            priors: [100, 60, 20, 20, 25, 25, 15, 15],
            file_bonus_cap: 15,
        }
    }
}

impl Ranking {
    /// The plain fusion of text and vectors: every signal of code ranking off.
    pub fn plain() -> Self {
        let description = Weights {
            file_text: 0,
            ..Self::default().description
        };
        Self {
            definitions: false,
            variants: false,
            paths: false,
            coverage: false,
            roles: false,
            files: false,
            name: description,
            mixed: description,
            ..Self::default()
        }
    }

    /// The weights for `intent`.
    pub fn weights(&self, intent: Intent) -> Weights {
        match intent {
            Intent::Name => self.name,
            Intent::Mixed => self.mixed,
            Intent::Description => self.description,
        }
    }

    /// The weight of `role` for a query naming `mentions`, in percent: 100 for a role
    /// the query names.
    pub fn prior(&self, role: Role, mentions: Mentions) -> u32 {
        let named = match role {
            Role::Test => mentions.test,
            Role::Example => mentions.example,
            Role::Docs => mentions.docs,
            _ => false,
        };
        let place = role.place();
        if named || !self.roles {
            100
        } else {
            self.priors[place]
        }
    }
}

/// How one chunk's score was made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    /// BM25 score (32 fractional bits) and rank.
    pub text: Option<(u64, usize)>,
    /// Dot product and rank.
    pub vector: Option<(i64, usize)>,
    /// Rank in the definition list and match level (`search::match_level`).
    pub definition: Option<(usize, u64)>,
    /// The weighted reciprocal ranks, summed.
    pub fused: u64,
    /// What its file's path, coverage and file vector add ([`Evidence`]).
    pub evidence: Evidence,
    /// The sum `evidence` adds, by the intent's weights.
    pub evidence_bonus: u64,
    /// The file's role and its weight in percent.
    pub role: Option<(Role, u32)>,
    /// `(fused + evidence_bonus) * weight / 100`, at most [`meaning_below_words`]'s cap.
    pub chunk: u64,
    /// The chunk score it had before [`meaning_below_words`] lowered it, if it did.
    pub capped_from: Option<u64>,
    /// The file's bonus for further chunks (on a file's best chunk only; it counts in
    /// the file's score, not in a chunk answer).
    pub file_bonus: u64,
    /// The score the chunk ranks by in a chunk answer: its chunk score, halved once for
    /// each better window of its file when it is a window itself.
    pub score: u64,
}

/// A chunk as ranked: its metadata and how its score was made.
#[derive(Clone, Debug)]
pub struct RankedChunk {
    /// The chunk.
    pub meta: Arc<ChunkMeta>,
    /// Its score's parts.
    pub parts: Parts,
}

/// A file (a document) as ranked: its score and its chunks, best first.
#[derive(Clone, Debug)]
pub struct RankedFile {
    /// Its best chunk's score plus its bonus for further chunks.
    pub score: u64,
    /// Its chunks, best first.
    pub chunks: Vec<RankedChunk>,
}

/// The order of equal scores: text rank, vector rank, definition rank (absent ones
/// last), then chunk id.
fn tie_key(c: &RankedChunk) -> (usize, usize, usize, ChunkId) {
    let rank = |r: Option<usize>| r.unwrap_or(usize::MAX);
    (
        rank(c.parts.text.map(|t| t.1)),
        rank(c.parts.vector.map(|v| v.1)),
        rank(c.parts.definition.map(|d| d.0)),
        c.meta.id,
    )
}

/// The lists a query ranks, their chunks named by `K` (a place in a snapshot, or a
/// chunk id where the lists come from a database).
pub(crate) struct Lists<K = At> {
    pub text: TextFound<K>,
    pub vector: Vec<Scored<i64, K>>,
    pub definitions: Vec<Scored<u64, K>>,
    /// The query's vector (empty when vectors were not searched).
    pub query_vector: Vec<i16>,
}

/// Ranks the chunks of `lists` for a query read as `analysis`: files best first, each
/// with its chunks best first. `vector_weight` replaces the intent's vector weight.
pub(crate) fn rank(
    snap: &Snapshot,
    mut lists: Lists,
    analysis: &Analysis,
    ranking: &Ranking,
    vector_weight: Option<u32>,
) -> Vec<RankedFile> {
    let postings = TermPostings::new(snap, std::mem::take(&mut lists.text.terms));
    let source = Source {
        meta: &|at: At| at.meta(snap),
        file_vector: &|doc: &DocInfo, q: &[i16]| file_vector_score(snap, doc, q),
        file_text: &|doc: &DocInfo| file_text_score(snap, doc, &postings),
    };
    rank_from(&source, lists, analysis, ranking, vector_weight)
}

/// What ranking reads beyond its lists: each listed chunk's metadata, the score of a
/// document's file vector for the query vector and its file text score for the query's
/// terms (`docs/spec.md`, "Ranking for code").
pub(crate) struct Source<'a, K> {
    pub meta: &'a dyn Fn(K) -> Option<Arc<ChunkMeta>>,
    pub file_vector: &'a dyn Fn(&DocInfo, &[i16]) -> Option<i128>,
    pub file_text: &'a dyn Fn(&DocInfo) -> Option<u64>,
}

/// [`rank`] over lists whose chunks `source` resolves.
pub(crate) fn rank_from<K: Copy + Eq + std::hash::Hash>(
    source: &Source<'_, K>,
    lists: Lists<K>,
    analysis: &Analysis,
    ranking: &Ranking,
    vector_weight: Option<u32>,
) -> Vec<RankedFile> {
    let mut weights = ranking.weights(analysis.intent);
    if let Some(w) = vector_weight {
        weights.vector = w;
    }
    let chunks: Vec<(K, RankedChunk)> = listed(&lists, &weights, ranking)
        .into_iter()
        .filter_map(|(at, parts)| {
            Some((
                at,
                RankedChunk {
                    meta: (source.meta)(at)?,
                    parts,
                },
            ))
        })
        .collect();
    let evidence = file_evidence(source, &chunks, &lists, analysis, ranking);
    let chunks = chunks.into_iter().map(|(_, c)| c).collect();
    rank_chunks(chunks, &evidence, analysis, ranking, &weights)
}

/// Ranks chunks whose parts hold their fused ranks: each file's evidence added to its
/// chunks, each chunk weighed by its file's role, then files ranked by
/// [`file_of`], best first, ties by their best chunks' tie order.
pub fn rank_chunks(
    mut chunks: Vec<RankedChunk>,
    evidence: &HashMap<DocumentId, Evidence>,
    analysis: &Analysis,
    ranking: &Ranking,
    weights: &Weights,
) -> Vec<RankedFile> {
    for c in chunks.iter_mut() {
        let doc = &c.meta.doc;
        let p = &mut c.parts;
        p.evidence = evidence.get(&doc.id).copied().unwrap_or_default();
        p.evidence_bonus = p.evidence.bonus(weights);
        let prior = ranking.prior(doc.role, analysis.mentions);
        p.role = Some((doc.role, prior));
        p.chunk = (p.fused + p.evidence_bonus) * u64::from(prior) / 100;
    }
    meaning_below_words(&mut chunks);
    let mut files: HashMap<DocumentId, Vec<RankedChunk>> = HashMap::new();
    for mut c in chunks {
        c.parts.score = c.parts.chunk;
        files.entry(c.meta.doc.id).or_default().push(c);
    }
    let mut ranked: Vec<RankedFile> = files
        .into_values()
        .map(|chunks| file_of(chunks, ranking))
        .collect();
    ranked.sort_unstable_by(|a, b| {
        (Reverse(a.score), tie_key(&a.chunks[0])).cmp(&(Reverse(b.score), tie_key(&b.chunks[0])))
    });
    ranked
}

/// When only files of demoted roles (weight under 100: tests, docs, examples...) match
/// the query's words (a text rank or a definition), keeps every chunk found by meaning
/// alone (a vector rank only) at or below each of those word matches with a better
/// vector rank: a role weight puts a file below the code that also says the query's
/// words, but never below code that only resembles the query less. Equal scores keep
/// the word match first (the tie order).
fn meaning_below_words(chunks: &mut [RankedChunk]) {
    let words = |p: &Parts| p.text.is_some() || p.definition.is_some();
    let demoted = |p: &Parts| p.role.is_some_and(|r| r.1 < 100);
    if chunks.iter().any(|c| words(&c.parts) && !demoted(&c.parts)) {
        return;
    }
    // The lowest chunk score among the word matches at each vector rank or better.
    let mut lowest: Vec<(usize, u64)> = chunks
        .iter()
        .filter(|c| words(&c.parts))
        .filter_map(|c| Some((c.parts.vector?.1, c.parts.chunk)))
        .collect();
    lowest.sort_unstable();
    for j in 1..lowest.len() {
        lowest[j].1 = lowest[j].1.min(lowest[j - 1].1);
    }
    for c in chunks.iter_mut().filter(|c| !words(&c.parts)) {
        let Some((_, rank)) = c.parts.vector else {
            continue;
        };
        let better = lowest.partition_point(|&(r, _)| r < rank);
        if let Some(&(_, cap)) = better.checked_sub(1).and_then(|i| lowest.get(i))
            && c.parts.chunk > cap
        {
            c.parts.capped_from = Some(c.parts.chunk);
            c.parts.chunk = cap;
        }
    }
}

/// Each listed chunk's parts: its ranks in the lists, fused ([`fuse_ranks`]).
fn listed<K: Copy + Eq + std::hash::Hash>(
    lists: &Lists<K>,
    weights: &Weights,
    ranking: &Ranking,
) -> HashMap<K, Parts> {
    let mut parts: HashMap<K, Parts> = HashMap::new();
    for t in &lists.text.list {
        parts.entry(t.at).or_default().text = Some((t.score, t.rank));
    }
    for v in &lists.vector {
        parts.entry(v.at).or_default().vector = Some((v.score, v.rank));
    }
    for d in lists.definitions.iter().filter(|_| ranking.definitions) {
        parts.entry(d.at).or_default().definition = Some((d.rank, definition_level(d.score)));
    }
    for p in parts.values_mut() {
        fuse_ranks(p, weights);
    }
    parts
}

/// Sets `p.fused`: each rank's reciprocal ([`rrf`]) times its list's weight in percent
/// (rounded down), a definition's then times its level over [`MAX_LEVEL`] (rounded
/// down), summed.
pub fn fuse_ranks(p: &mut Parts, weights: &Weights) {
    let weighed = |rank: usize, w: u32| rrf(rank) * u64::from(w) / 100;
    p.fused = p.text.map_or(0, |t| weighed(t.1, weights.text))
        + p.vector.map_or(0, |v| weighed(v.1, weights.vector))
        + p.definition.map_or(0, |(rank, level)| {
            weighed(rank, weights.definitions) * level / MAX_LEVEL
        });
}

/// A file of its chunks: sorted best first; its score the best one's plus the others'
/// scores halved once per better chunk, that sum at most [`Ranking::file_bonus_cap`]
/// percent of the best (none when the best was lowered by [`meaning_below_words`]). In a
/// chunk answer each chunk ranks by its own score, but the file's windows (chunks
/// without a symbol and later windows of a split symbol) are halved once for each
/// better window of the file. With [`Ranking::files`] off, the
/// file's score is its best chunk's and no window is halved.
fn file_of(mut chunks: Vec<RankedChunk>, ranking: &Ranking) -> RankedFile {
    chunks.sort_unstable_by(|a, b| {
        (Reverse(a.parts.chunk), tie_key(a)).cmp(&(Reverse(b.parts.chunk), tie_key(b)))
    });
    let best = chunks[0].parts.chunk;
    if !ranking.files {
        return RankedFile {
            score: best,
            chunks,
        };
    }
    let more: u64 = chunks
        .iter()
        .enumerate()
        .skip(1)
        .map(|(j, c)| c.parts.chunk >> j.min(63))
        .sum();
    // A file whose best chunk was kept below a word match stays below it too.
    let cap = match chunks[0].parts.capped_from {
        Some(_) => 0,
        None => best * u64::from(ranking.file_bonus_cap) / 100,
    };
    let bonus = more.min(cap);
    chunks[0].parts.file_bonus = bonus;
    // In a chunk answer a chunk keeps its score, but a file's windows (chunks without a
    // symbol, later windows of a split symbol) after its best one are halved once more
    // each: a long text or a huge function does not fill the answer.
    let mut windows = 0usize;
    for c in chunks.iter_mut() {
        c.parts.score = c.parts.chunk;
        if c.meta.symbol.is_none() || c.meta.continued {
            c.parts.score >>= windows.min(63);
            windows += 1;
        }
    }
    RankedFile {
        score: best + bonus,
        chunks,
    }
}

/// The chunk list of ranked files: every chunk by its rank score, then the tie order.
pub fn chunk_list(files: Vec<RankedFile>, k: usize) -> Vec<RankedChunk> {
    let mut all: Vec<RankedChunk> = files.into_iter().flat_map(|f| f.chunks).collect();
    all.sort_unstable_by(|a, b| {
        (Reverse(a.parts.score), tie_key(a)).cmp(&(Reverse(b.parts.score), tie_key(b)))
    });
    all.truncate(k);
    all
}
