//! Embedders: text to integer vectors.
//!
//! [`Embedder`] is the seam for any model. [`HashEmbedder`] (lexical; the semantic
//! embedder new stores get by default, minilm-int, is [`crate::minilm`]) needs no model
//! file and is bit-exact everywhere: integer arithmetic only, signed feature hashing
//! of words, identifier parts and character trigrams, L2-normalised in fixed point and
//! quantised to `i16`. `docs/spec.md` ("The hash embedder") is its normative
//! description, and `test-vectors/embedder.json` pins its output.

use cfs_core::ModelHash;

/// Why a batch could not be embedded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The model failed on the batch.
    #[error("embedding model {model}: {reason}")]
    Model {
        /// Model id.
        model: String,
        /// What failed.
        reason: String,
    },
    /// The model cannot be used: its file is missing, damaged or not the expected one.
    #[error("embedding model {model} is unavailable: {reason}")]
    Unavailable {
        /// Model name.
        model: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
}

/// Something that turns texts into vectors of one fixed dimension.
pub trait Embedder: Send + Sync {
    /// The model id; its hash is recorded with every vector.
    fn model_id(&self) -> &str;
    /// The vector dimension.
    fn dimension(&self) -> usize;
    /// Embeds a batch; the result has one vector of [`Embedder::dimension`] per text, in order.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, EmbedError>;
    /// Weight of this model's ranks in hybrid search, in percent of the text ranks'
    /// weight. A semantic model finds what words miss: 100 by default.
    fn fusion_weight(&self) -> u32 {
        100
    }
    /// Whether a vector search may scan the 1-bit sign codes of this model's vectors
    /// and re-score the best candidates exactly, instead of scoring every vector: an
    /// approximation that keeps recall@10 at 0.99 and more for dense semantic vectors
    /// (docs/bench-log/03-search.md), true by default. Exact search stays the reference.
    fn sign_codes(&self) -> bool {
        true
    }
    /// `ModelHash::of(model_id)`.
    fn model_hash(&self) -> ModelHash {
        ModelHash::of(self.model_id())
    }
}

/// Feature tags: the first byte hashed with each feature.
const TAG_WORD: u8 = b'w';
const TAG_PART: u8 = b's';
const TAG_TRIGRAM: u8 = b'g';
/// Weights of the feature kinds.
const WEIGHT_WORD: i64 = 2;
const WEIGHT_PART: i64 = 2;
const WEIGHT_TRIGRAM: i64 = 1;
/// Most trigrams taken from one word.
const MAX_TRIGRAMS_PER_WORD: usize = 32;
/// Largest output component.
const SCALE: i128 = 32767;

/// The hash embedder: feature hashing into `dimension` signed buckets.
#[derive(Clone, Debug)]
pub struct HashEmbedder {
    dimension: usize,
    model_id: String,
}

impl Default for HashEmbedder {
    fn default() -> Self {
        Self::new(256)
    }
}

impl HashEmbedder {
    /// A hash embedder of `dimension` components (at least 1).
    pub fn new(dimension: usize) -> Self {
        let dimension = dimension.max(1);
        Self {
            dimension,
            model_id: format!("cfs-hash-embed/1 dim={dimension}"),
        }
    }

    /// Embeds one text.
    pub fn embed(&self, text: &str) -> Vec<i16> {
        let mut acc = vec![0i64; self.dimension];
        for_each_feature(text, |tag, feature, weight| {
            let h = feature_hash(tag, feature);
            let index = (h % self.dimension as u64) as usize;
            let signed = if h >> 63 == 1 { -weight } else { weight };
            acc[index] += signed;
        });
        normalize(&acc)
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed(t)).collect())
    }
    /// 0: the hash embedder sees the same words as BM25, less sharply; on the
    /// retrieval-quality suite every weight above 0 lowered Recall@10 (docs/bench-log/03-search.md),
    /// so its ranks only extend the text results.
    fn fusion_weight(&self) -> u32 {
        0
    }
    /// False: the hash embedder's vectors are sparse, and their sign codes lose the
    /// neighbours (recall@10 0.78 at 200 candidates; docs/bench-log/03-search.md).
    fn sign_codes(&self) -> bool {
        false
    }
}

/// True for the characters words are made of: ASCII letters, digits and `_`, and every
/// non-ASCII character except U+0080..U+00BF (Latin-1 controls, punctuation and
/// symbols), U+00D7, U+00F7, U+2000..U+206F (General Punctuation), U+3000..U+303F (CJK
/// Symbols and Punctuation), U+FE30..U+FE4F, U+FEFF and U+FF00..U+FF0F.
pub fn is_word_char(c: char) -> bool {
    match c {
        'a'..='z' | 'A'..='Z' | '0'..='9' | '_' => true,
        '\0'..='\u{7f}' => false,
        '\u{80}'..='\u{bf}' | '\u{d7}' | '\u{f7}' => false,
        '\u{2000}'..='\u{206f}' | '\u{3000}'..='\u{303f}' => false,
        '\u{fe30}'..='\u{fe4f}' | '\u{feff}' | '\u{ff00}'..='\u{ff0f}' => false,
        _ => true,
    }
}

/// Splits an identifier into its parts: at `_`, between a lower-case letter or digit and
/// an upper-case letter, between letters and digits, and before the last upper-case
/// letter of an upper-case run followed by a lower-case one (`HTTPServer` -> `HTTP`,
/// `Server`). Parts are lower-cased (ASCII).
pub fn identifier_parts(word: &str) -> Vec<String> {
    let mut ranges = Vec::new();
    identifier_part_ranges(word, &mut ranges);
    ranges
        .into_iter()
        .map(|(a, b)| word[a..b].to_ascii_lowercase())
        .collect()
}

/// The byte ranges of `word`'s identifier parts (see [`identifier_parts`]), into `out`.
pub fn identifier_part_ranges(word: &str, out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        if c == '_' {
            if let Some(s) = start.take() {
                out.push((s, i));
            }
            prev = Some(c);
            continue;
        }
        if let Some(p) = prev {
            let boundary = (c.is_ascii_uppercase()
                && (p.is_ascii_lowercase() || p.is_ascii_digit()))
                || (c.is_ascii_digit() && p.is_ascii_alphabetic())
                || (c.is_ascii_alphabetic() && p.is_ascii_digit())
                || (c.is_ascii_uppercase()
                    && p.is_ascii_uppercase()
                    && next.is_some_and(|n| n.is_ascii_lowercase()));
            if boundary && let Some(s) = start.take() {
                out.push((s, i));
            }
        }
        if start.is_none() {
            start = Some(i);
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        out.push((s, word.len()));
    }
}

/// Calls `f(tag, feature, weight)` for every feature of `text`, in text order. Buffers
/// are reused across words: no allocation per word.
fn for_each_feature(text: &str, mut f: impl FnMut(u8, &str, i64)) {
    let mut rest = text;
    let mut lower = String::new();
    let mut padded = String::new();
    let mut bounds: Vec<usize> = Vec::new();
    let mut parts: Vec<(usize, usize)> = Vec::new();
    while !rest.is_empty() {
        let Some(start) = rest.find(is_word_char) else {
            break;
        };
        let tail = &rest[start..];
        let len = tail.find(|c: char| !is_word_char(c)).unwrap_or(tail.len());
        let word = &tail[..len];
        rest = &tail[len..];
        lower.clear();
        lower.push_str(word);
        lower.make_ascii_lowercase();
        f(TAG_WORD, &lower, WEIGHT_WORD);
        // A word of lower-case letters only is a single part: skip the split.
        if word
            .bytes()
            .any(|b| b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            identifier_part_ranges(word, &mut parts);
            if parts.len() > 1 {
                // ASCII lower-casing keeps byte offsets, so parts are ranges of `lower`.
                for &(a, b) in &parts {
                    f(TAG_PART, &lower[a..b], WEIGHT_PART);
                }
            }
        }
        if lower.chars().nth(2).is_some() {
            padded.clear();
            padded.push('^');
            padded.push_str(&lower);
            padded.push('$');
            bounds.clear();
            bounds.extend(padded.char_indices().map(|(i, _)| i));
            bounds.push(padded.len());
            for w in bounds.windows(4).take(MAX_TRIGRAMS_PER_WORD) {
                f(TAG_TRIGRAM, &padded[w[0]..w[3]], WEIGHT_TRIGRAM);
            }
        }
    }
}

/// FNV-1a (64-bit) over `tag || feature`, finished with the splitmix64 mixer.
pub fn feature_hash(tag: u8, feature: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for &b in std::iter::once(&tag).chain(feature.as_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// With `r = floor(sqrt(2^32 * sum v^2))` (the norm with 16 fractional bits), each
/// component is `round(v * 32767 * 2^16 / r)`, halves away from zero, clamped to
/// `[-32767, 32767]`; all-zero input stays zero.
pub(crate) fn normalize(acc: &[i64]) -> Vec<i16> {
    let mut out = vec![0; acc.len()];
    normalize_into(acc, &mut out);
    out
}

/// [`normalize`] into `out` (as long as `acc`). The division is done in `i64` when every
/// component is under 2^24 in magnitude (`2 * scaled + r` stays under 2^58 for up to
/// 2^40 components), else in `i128`: the same integer either way.
pub(crate) fn normalize_into(acc: &[i64], out: &mut [i16]) {
    assert_eq!(acc.len(), out.len());
    let norm2: u128 = acc
        .iter()
        .map(|&v| (i128::from(v) * i128::from(v)) as u128)
        .sum();
    let r = (norm2 << 32).isqrt() as i128;
    if r == 0 {
        out.fill(0);
        return;
    }
    let small = acc.iter().all(|v| v.unsigned_abs() < 1 << 24);
    for (o, &v) in out.iter_mut().zip(acc) {
        let q = if small {
            // |scaled| < 2^24 * 2^15 * 2^16 = 2^55, and r <= sqrt(2^32 * n * 2^48) < 2^56.
            let (scaled, r) = ((v * SCALE as i64) << 16, r as i64);
            i128::from((2 * scaled + scaled.signum() * r) / (2 * r))
        } else {
            let scaled = (i128::from(v) * SCALE) << 16;
            (2 * scaled + scaled.signum() * r) / (2 * r)
        };
        *o = q.clamp(-SCALE, SCALE) as i16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `i64` division gives the integer the `i128` one gives, on both sides of the
    /// 2^24 bound and at the extremes.
    #[test]
    fn normalizing_in_i64_is_the_same_integer() {
        let wide = |acc: &[i64]| -> Vec<i16> {
            let norm2: u128 = acc
                .iter()
                .map(|&v| (i128::from(v) * i128::from(v)) as u128)
                .sum();
            let r = (norm2 << 32).isqrt() as i128;
            acc.iter()
                .map(|&v| {
                    let scaled = (i128::from(v) * SCALE) << 16;
                    let q = (2 * scaled + scaled.signum() * r) / (2 * r);
                    q.clamp(-SCALE, SCALE) as i16
                })
                .collect()
        };
        let mut seed = 11u64;
        for top in [1i64, 3, 1000, (1 << 24) - 1, 1 << 24, 1 << 40] {
            let acc: Vec<i64> = (0..384)
                .map(|i| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let v = (seed >> 20) as i64 % (top + 1);
                    if i % 3 == 0 { -v } else { v }
                })
                .chain([top - 1, -(top - 1), top])
                .collect();
            assert_eq!(normalize(&acc), wide(&acc), "components up to {top}");
        }
        let all_top = vec![(1i64 << 24) - 1; 384];
        assert_eq!(normalize(&all_top), wide(&all_top));
    }

    #[test]
    fn identifier_parts_split_like_code() {
        assert_eq!(
            identifier_parts("parseHTTPServer2Config"),
            ["parse", "http", "server", "2", "config"]
        );
        assert_eq!(
            identifier_parts("snake_case_name"),
            ["snake", "case", "name"]
        );
        assert_eq!(identifier_parts("plain"), ["plain"]);
        assert_eq!(identifier_parts("__x__"), ["x"]);
    }

    #[test]
    fn unit_length_and_determinism() {
        let e = HashEmbedder::default();
        let v = e.embed("fn parse_config(path: &Path) -> Config");
        assert_eq!(v.len(), 256);
        let norm2: i64 = v.iter().map(|&x| i64::from(x) * i64::from(x)).sum();
        let unit = 32767i64 * 32767;
        assert!((norm2 - unit).abs() < unit / 100, "{norm2}");
        assert_eq!(v, e.embed("fn parse_config(path: &Path) -> Config"));
        assert_eq!(e.embed("{} ();"), vec![0; 256]);
    }

    #[test]
    fn similar_texts_score_higher() {
        let e = HashEmbedder::default();
        let dot = |a: &[i16], b: &[i16]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| i64::from(*x) * i64::from(*y))
                .sum::<i64>()
        };
        let q = e.embed("parse the configuration file");
        let near = e.embed("fn parse_config_file(path) reads the configuration");
        let far = e.embed("render a triangle with the GPU shader pipeline");
        assert!(dot(&q, &near) > dot(&q, &far));
    }
}
