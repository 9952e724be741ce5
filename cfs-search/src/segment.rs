//! Immutable index segments: the text postings and the vectors of a set of chunks.
//!
//! A snapshot's runtime index is a list of segments, each with a tombstone set: a base
//! segment and small segments added by later commits. A commit adds one segment (its
//! added chunks) and tombstones its removed chunks; segments are merged when the small
//! ones grow past a share of the base. Chunks are sorted by id inside a segment, so a
//! local index order is the chunk id order.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cfs_core::ChunkId;

use super::definition_terms::definition_terms;
use super::mapped::Mapped;
use super::meta::{ChunkMeta, MetaView, Posting};
use super::tokenize::for_each_token;

/// Steps of [`Segment::position`] that interpolate before it halves.
const INTERPOLATED_STEPS: usize = 4;

/// A chunk on its way into a segment: metadata, token counts, vector.
#[derive(Debug)]
pub(crate) struct NewChunk {
    pub meta: Arc<ChunkMeta>,
    /// Distinct tokens with their counts, sorted by token.
    pub terms: Terms,
    pub vector: Vec<i16>,
}

/// A chunk's distinct tokens with their counts, in one buffer (two allocations a
/// chunk, not one per token: a segment of a million chunks is built on one thread,
/// which frees what the preparing threads allocated). A code chunk's definition terms
/// ([`definition_terms`]) come first, but are not among the tokens BM25 counts.
#[derive(Debug, Default)]
pub(crate) struct Terms {
    bytes: String,
    /// (end of the token in `bytes`, count), in token order.
    ends: Vec<(u32, u32)>,
    /// Number of text tokens.
    total: u32,
}

impl Terms {
    fn push(&mut self, term: &str, count: u32) {
        self.bytes.push_str(term);
        self.ends.push((self.bytes.len() as u32, count));
    }

    /// Number of text tokens (each distinct one as often as it occurs): the chunk's
    /// length for BM25.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// The tokens and their counts, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        let mut start = 0;
        self.ends.iter().map(move |&(end, count)| {
            let term = &self.bytes[start..end as usize];
            start = end as usize;
            (term, count)
        })
    }
}

/// Token counts of the indexed fields of a chunk: its text, symbol, heading and paths.
pub(crate) fn chunk_terms(text: &str, meta: &ChunkMeta) -> Terms {
    // Every token appended to one buffer, then their spans sorted by token and counted:
    // no allocation per token.
    let mut all = String::new();
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for field in [meta.symbol.as_deref(), meta.heading.as_deref()]
        .into_iter()
        .flatten()
        .chain(meta.doc.paths.iter().map(|p| &*p.path))
        .chain(std::iter::once(text))
    {
        for_each_token(field, |t| {
            let start = all.len() as u32;
            all.push_str(t);
            spans.push((start, all.len() as u32));
        });
    }
    let token = |&(a, b): &(u32, u32)| &all[a as usize..b as usize];
    spans.sort_unstable_by(|x, y| token(x).cmp(token(y)));
    let mut terms = Terms {
        total: spans.len() as u32,
        ..Terms::default()
    };
    // Definition terms start with a control character: before every token.
    for (term, value) in definition_terms(meta, text) {
        terms.push(&term, value);
    }
    for same in spans.chunk_by(|x, y| token(x) == token(y)) {
        terms.push(token(&same[0]), same.len() as u32);
    }
    terms
}

/// The vectors of a segment, in local index order.
#[derive(Debug, Default)]
pub(crate) struct Vectors {
    pub dim: usize,
    pub data: Vec<i16>,
    pub norms2: Vec<u64>,
    /// True where the chunk has no embedding yet (embeddings deferred): its zero vector
    /// is never a result.
    pub missing: Vec<bool>,
}

impl Vectors {
    /// Empty, with room for `n` vectors of `dim`.
    pub fn with_capacity(dim: usize, n: usize) -> Self {
        Self {
            dim,
            data: Vec::with_capacity(n * dim),
            norms2: Vec::with_capacity(n),
            missing: Vec::with_capacity(n),
        }
    }

    pub fn get(&self, i: usize) -> &[i16] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Whether vector `i` is a chunk's embedding (not the stand-in of a missing one).
    pub fn has(&self, i: usize) -> bool {
        !self.missing[i]
    }

    /// Appends `vector`, cut or padded with zeros to `dim`; an empty `vector` is a chunk
    /// without an embedding (the zero vector, marked missing).
    pub fn push(&mut self, vector: &[i16]) {
        let start = self.data.len();
        self.data.resize(start + self.dim, 0);
        self.norms2
            .push(fit_vector(vector, &mut self.data[start..]));
        self.missing.push(vector.is_empty());
    }

    /// Appends vector `i` of `seg` (same dimension).
    pub fn push_from(&mut self, seg: &Segment, i: usize) {
        self.data.extend_from_slice(seg.vector(i));
        self.norms2.push(seg.norm2(i));
        self.missing.push(!seg.has_vector(i));
    }
}

/// A segment built in memory.
pub(crate) struct Owned {
    pub metas: Vec<Arc<ChunkMeta>>,
    pub lens: Vec<u32>,
    pub postings: HashMap<Box<str>, Vec<Posting>>,
    pub vectors: Arc<Vectors>,
}

/// Where a segment's columns are: in memory, or in a mapped index file.
enum Data {
    Owned(Owned),
    Mapped(Mapped),
}

/// An immutable segment. Local index `i` names the `i`-th chunk in id order; every
/// accessor takes an `i < len()`.
pub(crate) struct Segment {
    data: Data,
    pub total_len: u64,
    /// The HNSW graph over the vectors, once built (segments in memory only).
    pub hnsw: OnceLock<Arc<super::vector::Hnsw>>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("chunks", &self.len())
            .field("mapped", &matches!(self.data, Data::Mapped(_)))
            .field("hnsw", &self.hnsw.get().is_some())
            .finish()
    }
}

/// A segment in memory under construction: chunks added in id order, each chunk's
/// terms moved into the postings as it comes (so a caller can prepare chunks in
/// batches and never hold all their term lists at once).
pub(crate) struct SegmentBuilder {
    postings: HashMap<Box<str>, Vec<Posting>>,
    metas: Vec<Arc<ChunkMeta>>,
    lens: Vec<u32>,
    vectors: Vectors,
}

impl SegmentBuilder {
    /// An empty segment of vectors of `dim`, with room for `n` chunks.
    pub fn new(dim: usize, n: usize) -> Self {
        Self {
            postings: HashMap::new(),
            metas: Vec::with_capacity(n),
            lens: Vec::with_capacity(n),
            vectors: Vectors::with_capacity(dim, n),
        }
    }

    /// Adds `chunk`, whose id must follow every chunk added before and whose vector
    /// must be of the segment's dimension (or empty: no embedding yet).
    pub fn push(&mut self, chunk: NewChunk) {
        assert!(
            self.metas.last().is_none_or(|m| m.id < chunk.meta.id),
            "segment chunks out of id order"
        );
        let local = u32::try_from(self.metas.len()).unwrap_or(u32::MAX);
        add_postings(&mut self.postings, local, &chunk.terms);
        self.lens.push(chunk.terms.total());
        self.vectors.push(&chunk.vector);
        self.metas.push(chunk.meta);
    }

    /// The segment.
    pub fn finish(self) -> Segment {
        Segment::from_parts(self.metas, self.lens, self.postings, self.vectors)
    }
}

impl Segment {
    fn from_parts(
        metas: Vec<Arc<ChunkMeta>>,
        lens: Vec<u32>,
        postings: HashMap<Box<str>, Vec<Posting>>,
        vectors: Vectors,
    ) -> Self {
        Self {
            total_len: lens.iter().map(|&l| u64::from(l)).sum(),
            data: Data::Owned(Owned {
                metas,
                lens,
                postings,
                vectors: Arc::new(vectors),
            }),
            hnsw: OnceLock::new(),
        }
    }

    /// A segment read in place from a mapped index file.
    pub fn mapped(mapped: Mapped) -> Self {
        Self {
            total_len: mapped.total_len(),
            data: Data::Mapped(mapped),
            hnsw: OnceLock::new(),
        }
    }

    /// One segment in memory of the live chunks of `parts`, without re-tokenizing.
    pub fn merge(parts: &[Live]) -> Self {
        let dim = parts.first().map_or(0, |p| p.segment.dim());
        let order = live_order(parts);
        let mut remap = unmapped(parts);
        let mut metas = Vec::with_capacity(order.len());
        let mut lens = Vec::with_capacity(order.len());
        let mut vectors = Vectors::with_capacity(dim, order.len());
        for (_, p, i) in order {
            let (seg, i) = (&parts[p as usize].segment, i as usize);
            // A chunk whose metadata a damaged file cannot give is left out.
            let Some(meta) = seg.meta(i) else { continue };
            remap[p as usize][i] = metas.len() as u32;
            metas.push(meta);
            lens.push(seg.token_len(i));
            vectors.push_from(seg, i);
        }
        let postings = merged_postings(parts, &remap);
        Self::from_parts(metas, lens, postings, vectors)
    }

    /// Number of chunks (live and dead).
    pub fn len(&self) -> usize {
        match &self.data {
            Data::Owned(o) => o.metas.len(),
            Data::Mapped(m) => m.len(),
        }
    }

    /// Dimension of the vectors.
    pub fn dim(&self) -> usize {
        match &self.data {
            Data::Owned(o) => o.vectors.dim,
            Data::Mapped(m) => m.dim(),
        }
    }

    /// Id of chunk `i`.
    pub fn id(&self, i: usize) -> ChunkId {
        match &self.data {
            Data::Owned(o) => o.metas[i].id,
            Data::Mapped(m) => m.id(i),
        }
    }

    /// Metadata of chunk `i` (`None` only where a damaged file cannot give it).
    pub fn meta(&self, i: usize) -> Option<Arc<ChunkMeta>> {
        match &self.data {
            Data::Owned(o) => Some(Arc::clone(&o.metas[i])),
            Data::Mapped(m) => m.meta(i).map(Arc::new),
        }
    }

    /// `f` of chunk `i`'s [`MetaView`], read from the index file's record in place for
    /// a mapped segment (its metadata is not built).
    pub fn with_view<R>(&self, i: usize, f: impl FnOnce(&MetaView<'_>) -> R) -> Option<R> {
        match &self.data {
            Data::Owned(o) => Some(f(&o.metas.get(i)?.view())),
            Data::Mapped(m) => m.with_view(i, f),
        }
    }

    /// Number of tokens of chunk `i`.
    pub fn token_len(&self, i: usize) -> u32 {
        match &self.data {
            Data::Owned(o) => o.lens[i],
            Data::Mapped(m) => m.token_len(i),
        }
    }

    /// The postings of `term`, in local index order.
    pub fn postings(&self, term: &str) -> Option<&[Posting]> {
        match &self.data {
            Data::Owned(o) => o.postings.get(term).map(Vec::as_slice),
            Data::Mapped(m) => m.postings(term),
        }
    }

    /// Calls `f` with every term and its postings.
    pub fn for_each_term(&self, mut f: impl FnMut(&str, &[Posting])) {
        match &self.data {
            Data::Owned(o) => o.postings.iter().for_each(|(t, l)| f(t, l)),
            Data::Mapped(m) => m.for_each_term(f),
        }
    }

    /// Vector of chunk `i` (zeros where it has none).
    pub fn vector(&self, i: usize) -> &[i16] {
        match &self.data {
            Data::Owned(o) => o.vectors.get(i),
            Data::Mapped(m) => m.vector(i),
        }
    }

    /// Squared norm of vector `i`.
    pub fn norm2(&self, i: usize) -> u64 {
        match &self.data {
            Data::Owned(o) => o.vectors.norms2[i],
            Data::Mapped(m) => m.norm2(i),
        }
    }

    /// Whether chunk `i` has its embedding.
    pub fn has_vector(&self, i: usize) -> bool {
        match &self.data {
            Data::Owned(o) => o.vectors.has(i),
            Data::Mapped(m) => m.has_vector(i),
        }
    }

    /// The parts of a segment in memory.
    pub fn owned(&self) -> Option<&Owned> {
        match &self.data {
            Data::Owned(o) => Some(o),
            Data::Mapped(_) => None,
        }
    }

    /// The mapped file of a segment read in place.
    pub fn as_mapped(&self) -> Option<&Mapped> {
        match &self.data {
            Data::Owned(_) => None,
            Data::Mapped(m) => Some(m),
        }
    }

    /// Local index of `id`, if the segment holds it. Chunk ids are hashes, spread evenly
    /// over their range, so the first steps guess where `id` lies between the keys known
    /// just outside the range left (interpolation search): those of the ids read before,
    /// so that each step reads one id, and `id` is found in two or three reads where
    /// halving takes about twenty. After [`INTERPOLATED_STEPS`] the range is halved, so
    /// no order of ids costs more than that many steps beyond halving's. The answer is
    /// the binary search's: ids are sorted and distinct.
    pub fn position(&self, id: &ChunkId) -> Option<usize> {
        let key = |c: &ChunkId| {
            let b = c.as_bytes();
            u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        };
        let target = key(id);
        // The ids in `lo..hi` have keys in `below..=above`: the keys of the ids read
        // just outside the range, or the ends of the key space.
        let (mut lo, mut hi) = (0, self.len());
        let (mut below, mut above) = (0u64, u64::MAX);
        let mut steps = 0;
        while lo < hi {
            steps += 1;
            let mid = if steps <= INTERPOLATED_STEPS && (below..=above).contains(&target) {
                let span = (hi - lo) as u128;
                let guess = u128::from(target - below) * span / (u128::from(above - below) + 1);
                lo + guess as usize
            } else {
                lo + (hi - lo) / 2
            };
            let read = self.id(mid);
            match read.cmp(id) {
                std::cmp::Ordering::Less => (lo, below) = (mid + 1, key(&read)),
                std::cmp::Ordering::Greater => (hi, above) = (mid, key(&read)),
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The local range of chunks whose ids start with the 10-bit bucket `b`.
    pub fn bucket_range(&self, b: u16) -> std::ops::Range<usize> {
        let of = |i: usize| cfs_core::Bucket::of_key(self.id(i).as_bytes()).0;
        let first = |pred: &dyn Fn(u16) -> bool| {
            let (mut lo, mut hi) = (0, self.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if pred(of(mid)) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        first(&|x| x < b)..first(&|x| x <= b)
    }
}

/// Adds the postings of a chunk of `terms` at local index `local` (each term's list
/// stays in index order when chunks come in index order).
pub(crate) fn add_postings(
    postings: &mut HashMap<Box<str>, Vec<Posting>>,
    local: u32,
    terms: &Terms,
) {
    for (term, count) in terms.iter() {
        match postings.get_mut(term) {
            Some(list) => list.push([local, count]),
            None => {
                postings.insert(term.into(), vec![[local, count]]);
            }
        }
    }
}

/// Writes `vector` into `out` (the segment's dimension), cut or padded with zeros, and
/// returns the squared norm of what was kept. An empty `vector` is a chunk without an
/// embedding: the zero vector.
pub(crate) fn fit_vector(vector: &[i16], out: &mut [i16]) -> u64 {
    let n = vector.len().min(out.len());
    out[..n].copy_from_slice(&vector[..n]);
    out[n..].fill(0);
    super::vector::norm2(&vector[..n])
}

/// (id, part, local index) of every live chunk of `parts`, in id order.
pub(crate) fn live_order(parts: &[Live]) -> Vec<(ChunkId, u32, u32)> {
    let mut order = Vec::with_capacity(parts.iter().map(Live::n_live).sum());
    for (p, live) in parts.iter().enumerate() {
        for i in 0..live.segment.len() {
            if !live.is_dead(i) {
                order.push((live.segment.id(i), p as u32, i as u32));
            }
        }
    }
    order.sort_unstable_by_key(|e| e.0);
    order
}

/// A renaming of every local index of `parts` to "left out" (`u32::MAX`), for
/// [`merged_postings`] to be filled in.
pub(crate) fn unmapped(parts: &[Live]) -> Vec<Vec<u32>> {
    parts
        .iter()
        .map(|l| vec![u32::MAX; l.segment.len()])
        .collect()
}

/// The postings of `parts` merged, each local index `i` of part `p` renamed
/// `remap[p][i]` (`u32::MAX`: left out), each list in new index order; a term left
/// without postings is left out.
pub(crate) fn merged_postings(
    parts: &[Live],
    remap: &[Vec<u32>],
) -> HashMap<Box<str>, Vec<Posting>> {
    let mut postings: HashMap<Box<str>, Vec<Posting>> = HashMap::new();
    for (p, live) in parts.iter().enumerate() {
        live.segment.for_each_term(|term, list| {
            let mapped = list.iter().filter_map(|&[i, tf]| {
                let new = *remap[p].get(i as usize)?;
                (new != u32::MAX).then_some([new, tf])
            });
            match postings.get_mut(term) {
                Some(out) => out.extend(mapped),
                None => {
                    let out: Vec<Posting> = mapped.collect();
                    if !out.is_empty() {
                        postings.insert(term.into(), out);
                    }
                }
            }
        });
    }
    if parts.len() > 1 {
        for list in postings.values_mut() {
            list.sort_unstable();
        }
    }
    postings
}

/// A segment with the tombstones of one snapshot.
#[derive(Debug, Clone)]
pub(crate) struct Live {
    pub segment: Arc<Segment>,
    /// One bit per local index: set when the chunk is gone.
    pub dead: Arc<Vec<u64>>,
    pub n_dead: usize,
    pub dead_len: u64,
}

impl Live {
    pub fn new(segment: Arc<Segment>) -> Self {
        let words = segment.len().div_ceil(64);
        Self {
            segment,
            dead: Arc::new(vec![0; words]),
            n_dead: 0,
            dead_len: 0,
        }
    }

    /// Whether local `i` is gone (an `i` past the segment, which only a damaged file
    /// can name, is not: its reader skips it).
    pub fn is_dead(&self, i: usize) -> bool {
        self.dead
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Marks local `i` dead; false when it already was.
    pub fn kill(&mut self, i: usize) -> bool {
        if self.is_dead(i) {
            return false;
        }
        Arc::make_mut(&mut self.dead)[i / 64] |= 1 << (i % 64);
        self.n_dead += 1;
        self.dead_len = self
            .dead_len
            .saturating_add(u64::from(self.segment.token_len(i)));
        true
    }

    pub fn n_live(&self) -> usize {
        self.segment.len() - self.n_dead
    }

    /// The live chunks' tokens; saturating, since a damaged file's token counts need
    /// not add up to its header's total.
    pub fn live_len(&self) -> u64 {
        self.segment.total_len.saturating_sub(self.dead_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::{DocInfo, PathInfo};
    use cfs_core::DocumentId;
    use cfs_ingest::Markers;

    fn meta(symbol: Option<&str>, path: &str) -> ChunkMeta {
        ChunkMeta {
            id: ChunkId([7; 16]),
            doc: Arc::new(DocInfo::new(
                DocumentId([1; 16]),
                "text/x-rust".into(),
                vec![PathInfo {
                    path: path.into(),
                    collections: Vec::new(),
                }],
                Vec::new(),
                Markers::default(),
            )),
            sequence: 0,
            byte_offset: 0,
            byte_length: 0,
            start_line: 1,
            end_line: 1,
            kind: "code",
            language: None,
            symbol: symbol.map(Into::into),
            heading: None,
            symbol_kind: None,
            name_start: 0,
            continued: false,
        }
    }

    /// Every token of the symbol, the paths and the text counted once per place, the
    /// distinct ones in byte order, and the symbol's definition term (not counted in
    /// the chunk's length); a segment built of two chunks posts each term once per
    /// chunk with its count.
    #[test]
    fn chunk_terms_count_every_field_and_the_builder_posts_them() {
        let m = meta(Some("parse_config"), "src/cfg.rs");
        let terms = chunk_terms("fn parse_config() { parse(cfg) }", &m);
        let got: Vec<(&str, u32)> = terms.iter().collect();
        assert_eq!(
            got,
            [
                ("\u{1}parse_config", 1),
                ("cfg", 2),
                ("config", 2),
                ("fn", 1),
                ("parse", 3),
                ("parse_config", 2),
                ("rs", 1),
                ("src", 1),
            ]
        );
        assert_eq!(terms.total(), 12, "every token, each time it occurs");
        let mut b = SegmentBuilder::new(2, 2);
        for (id, text) in [([1u8; 16], "parse parse"), ([2; 16], "config")] {
            let mut m = meta(None, "a");
            m.id = ChunkId(id);
            let terms = chunk_terms(text, &m);
            let meta = Arc::new(m);
            b.push(NewChunk {
                meta,
                terms,
                vector: vec![1, 2],
            });
        }
        let seg = b.finish();
        let mut posted: Vec<(String, Vec<Posting>)> = Vec::new();
        seg.for_each_term(|t, l| posted.push((t.to_owned(), l.to_vec())));
        posted.sort();
        assert_eq!(
            posted,
            [
                ("a".to_owned(), vec![[0, 1], [1, 1]]),
                ("config".to_owned(), vec![[1, 1]]),
                ("parse".to_owned(), vec![[0, 2]]),
            ]
        );
        assert_eq!(seg.token_len(0), 3);
    }

    /// A segment whose total says fewer tokens than its dead chunks hold (a damaged
    /// index file's header or token counts) counts no live tokens, never below zero.
    #[test]
    fn live_tokens_never_go_below_zero() {
        let mut b = SegmentBuilder::new(1, 1);
        let m = meta(None, "a");
        let terms = chunk_terms("parse parse parse", &m);
        b.push(NewChunk {
            meta: Arc::new(m),
            terms,
            vector: vec![1],
        });
        let mut seg = b.finish();
        seg.total_len = 1;
        let mut live = Live::new(Arc::new(seg));
        assert!(live.kill(0));
        assert_eq!(live.live_len(), 0);
    }

    /// Interpolation finds what halving finds, for ids spread evenly (hashes), bunched
    /// at one end (the worst case for guessing), absent ones and every edge.
    #[test]
    fn position_finds_every_id_and_no_absent_one() {
        let segment = |ids: &[[u8; 16]]| {
            let mut b = SegmentBuilder::new(1, ids.len());
            for id in ids {
                let mut m = meta(None, "a");
                m.id = ChunkId(*id);
                let terms = chunk_terms("x", &m);
                b.push(NewChunk {
                    meta: Arc::new(m),
                    terms,
                    vector: vec![1],
                });
            }
            b.finish()
        };
        let hashed: Vec<[u8; 16]> = (0u32..3000)
            .map(|i| *blake3::hash(&i.to_le_bytes()).as_bytes())
            .map(|h| h[..16].try_into().unwrap())
            .collect();
        // Ids that differ only in their last bytes but for one far above them.
        let mut bunched: Vec<[u8; 16]> = (0u16..3000)
            .map(|i| {
                let mut id = [0u8; 16];
                id[14..].copy_from_slice(&i.to_be_bytes());
                id
            })
            .collect();
        bunched.push([0xff; 16]);
        for mut ids in [hashed, bunched, vec![[5; 16]], vec![]] {
            ids.sort();
            ids.dedup();
            let seg = segment(&ids);
            for (i, id) in ids.iter().enumerate() {
                assert_eq!(seg.position(&ChunkId(*id)), Some(i));
                let mut absent = *id;
                absent[15] ^= 1;
                if ids.binary_search(&absent).is_err() {
                    assert_eq!(seg.position(&ChunkId(absent)), None);
                }
            }
            assert_eq!(
                seg.position(&ChunkId([0; 16])),
                ids.binary_search(&[0; 16]).ok()
            );
            assert_eq!(seg.position(&ChunkId([0xfe; 16])), None);
        }
    }
}
