//! The separator-priority text chunker (CFS-011 section 4, with its errata).
//!
//! Sizes are UTF-8 bytes, and every cut falls on a character boundary. A chunk ends at
//! the best separator near the target size: a paragraph break if there is one, else a
//! line break, else a sentence end, else a space, else a hard cut at the maximum. The
//! next chunk starts `overlap` bytes before the end, moved forward to the start of a
//! word when one begins inside the overlap. `docs/spec.md` ("Text chunking") is the
//! normative description; the property tests hold it to coverage, overlap continuity,
//! bounds and char-boundary cuts.

use memchr::memmem;

use crate::error::IngestError;

/// Separator levels, highest priority first. A level matches any of its separators.
const LEVELS: [&[&str]; 4] = [&["\n\n"], &["\n"], &[". ", "! ", "? "], &[" ", "\t"]];

/// The smallest `max_bytes` accepted: a 4-byte character must always fit.
pub const MIN_MAX_BYTES: u32 = 8;

/// Chunk sizes in UTF-8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkParams {
    /// Size a chunk aims for.
    pub target_bytes: u32,
    /// Size no chunk exceeds.
    pub max_bytes: u32,
    /// Bytes at the end of one chunk repeated at the start of the next (at most).
    pub overlap_bytes: u32,
}

impl Default for ChunkParams {
    /// 1024 / 2048 / 128 bytes: CFS-011's 256 / 512 / 32 tokens at about 4 bytes a token.
    fn default() -> Self {
        Self {
            target_bytes: 1024,
            max_bytes: 2048,
            overlap_bytes: 128,
        }
    }
}

impl ChunkParams {
    /// Checks `8 <= max`, `0 < target <= max` and `overlap < target`.
    pub fn validate(&self) -> Result<(), IngestError> {
        let ok = self.max_bytes >= MIN_MAX_BYTES
            && self.target_bytes > 0
            && self.target_bytes <= self.max_bytes
            && self.overlap_bytes < self.target_bytes;
        if ok {
            Ok(())
        } else {
            Err(IngestError::Config(format!(
                "chunk sizes need 8 <= max, 0 < target <= max and overlap < target; got target {}, max {}, overlap {}",
                self.target_bytes, self.max_bytes, self.overlap_bytes
            )))
        }
    }
}

/// A chunk's span in the text: bytes `start..end`, lines `start_line..=end_line` (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// Line of the first byte.
    pub start_line: u32,
    /// Line of the last byte.
    pub end_line: u32,
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at.min(text.len())
}

/// The end of the chunk that starts at `start`, for a text longer than `start + max`.
///
/// For each level in priority order, look for a separator whose end lies in
/// `[lo, start + max]`, where `lo` is `start + target / 2` or, if later, one byte past the
/// previous chunk's end (a chunk always reaches past the one before it): the last one
/// ending at or before `start + target` if any, else the first one after it. The first level with a match decides. With no
/// separator at any level, cut at `start + max` (moved back to a char boundary).
fn find_end(text: &str, start: usize, min_end: usize, params: &ChunkParams) -> usize {
    let bytes = text.as_bytes();
    let target = start + params.target_bytes as usize;
    let lo = (start + (params.target_bytes as usize / 2).max(1)).max(min_end);
    let hi = floor_char_boundary(text, start + params.max_bytes as usize);
    for level in LEVELS {
        let mut before: Option<usize> = None;
        let mut after: Option<usize> = None;
        for sep in level {
            let sep = sep.as_bytes();
            // Last separator ending in [lo, target].
            let window_start = lo.saturating_sub(sep.len()).max(start);
            if target > window_start
                && let Some(pos) = memmem::rfind(&bytes[window_start..target], sep)
            {
                let end = window_start + pos + sep.len();
                before = Some(before.map_or(end, |b: usize| b.max(end)));
            }
            // First separator ending in (target, hi].
            let mut from = target.saturating_sub(sep.len() - 1).max(start);
            while hi > from
                && let Some(pos) = memmem::find(&bytes[from..hi], sep)
            {
                let end = from + pos + sep.len();
                if end > target {
                    after = Some(after.map_or(end, |a: usize| a.min(end)));
                    break;
                }
                from += pos + 1;
            }
        }
        if let Some(end) = before.or(after) {
            return end;
        }
    }
    if hi > start {
        hi
    } else {
        // Unreachable with max >= 8, kept so that the loop always advances.
        ceil_char_boundary(text, start + 1)
    }
}

/// Where the chunk after one ending at `end` starts: at the first word that begins in
/// `[end - overlap, end)` (a non-whitespace byte after a space, tab or newline) from
/// which a chunk of `max` bytes can still reach past `end`, so that the overlap never
/// starts inside a word and every chunk ends past the previous one; at `end` (no
/// overlap) when there is no such word or no room after `start`.
fn next_start(text: &str, start: usize, end: usize, params: &ChunkParams) -> usize {
    let overlap = params.overlap_bytes as usize;
    if overlap == 0 || end.saturating_sub(overlap) <= start {
        return end;
    }
    let from = end - overlap;
    let bytes = text.as_bytes();
    let is_space = |b: u8| matches!(b, b' ' | b'\n' | b'\t');
    (from.max(start + 1)..end)
        .find(|&p| {
            is_space(bytes[p - 1])
                && !is_space(bytes[p])
                && floor_char_boundary(text, p + params.max_bytes as usize) > end
        })
        .unwrap_or(end)
}

/// Splits `text` into chunk spans. Empty text has no chunks.
pub fn chunk_text(text: &str, params: &ChunkParams) -> Result<Vec<Span>, IngestError> {
    params.validate()?;
    let mut spans = Vec::with_capacity(text.len() / params.target_bytes as usize + 1);
    let bytes = text.as_bytes();
    let mut start = 0usize;
    // Line of `start`, advanced by counting newlines between successive starts.
    let mut line: u32 = 1;
    let mut line_at = 0usize;
    let mut prev_end = 0usize;
    let line_of = |from: usize, to: usize, base: u32| -> u32 {
        base + memchr::memchr_iter(b'\n', &bytes[from..to]).count() as u32
    };
    while start < text.len() {
        let end = if text.len() - start <= params.max_bytes as usize {
            text.len()
        } else {
            find_end(text, start, prev_end + 1, params)
        };
        debug_assert!(end > start && text.is_char_boundary(end));
        line = line_of(line_at, start, line);
        line_at = start;
        let end_line = line_of(start, end - 1, line);
        spans.push(Span {
            start,
            end,
            start_line: line,
            end_line,
        });
        if end == text.len() {
            break;
        }
        prev_end = end;
        start = next_start(text, start, end, params);
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts<'a>(text: &'a str, spans: &[Span]) -> Vec<&'a str> {
        spans.iter().map(|s| &text[s.start..s.end]).collect()
    }

    #[test]
    fn cfs011_example_input() {
        // Erratum E4: the seed's expected chunks do not follow its algorithm. This is
        // what cfs does with its input at target 50 (max 100, overlap 10).
        let text = "First paragraph.\n\nSecond paragraph.\n\nThird paragraph.";
        let params = ChunkParams {
            target_bytes: 50,
            max_bytes: 100,
            overlap_bytes: 10,
        };
        let spans = chunk_text(text, &params).unwrap();
        assert_eq!(texts(text, &spans), vec![text]);
        let small = ChunkParams {
            target_bytes: 20,
            max_bytes: 30,
            overlap_bytes: 10,
        };
        let spans = chunk_text(text, &small).unwrap();
        // No word begins in the 10 bytes before each cut ("agraph.\n\n"), so there is
        // no overlap rather than one that starts inside a word.
        assert_eq!(
            texts(text, &spans),
            vec![
                "First paragraph.\n\n",
                "Second paragraph.\n\n",
                "Third paragraph."
            ]
        );
        let wide = ChunkParams {
            target_bytes: 20,
            max_bytes: 30,
            overlap_bytes: 12,
        };
        let spans = chunk_text(text, &wide).unwrap();
        assert_eq!(
            texts(text, &spans),
            vec![
                "First paragraph.\n\n",
                // 6..37 would be 31 bytes, over the max of 30: the line break decides.
                "paragraph.\n\nSecond paragraph.\n",
                "paragraph.\n\nThird paragraph."
            ]
        );
    }

    #[test]
    fn prefers_paragraphs_then_lines_then_sentences() {
        let params = ChunkParams {
            target_bytes: 16,
            max_bytes: 32,
            overlap_bytes: 0,
        };
        let text = "aaaa bbbb. cccc\ndddd eeee ffff gggg hhhh";
        let spans = chunk_text(text, &params).unwrap();
        assert_eq!(texts(text, &spans)[0], "aaaa bbbb. cccc\n");
        let text = "aaaa bbbb. cccc dddd eeee ffff gggg hhhh";
        let spans = chunk_text(text, &params).unwrap();
        assert_eq!(texts(text, &spans)[0], "aaaa bbbb. ");
        let text = "x".repeat(70);
        let spans = chunk_text(&text, &params).unwrap();
        assert_eq!(
            spans.iter().map(|s| s.end - s.start).collect::<Vec<_>>(),
            vec![32, 32, 6]
        );
    }

    #[test]
    fn lines_are_counted() {
        let params = ChunkParams {
            target_bytes: 8,
            max_bytes: 10,
            overlap_bytes: 3,
        };
        let text = "one\ntwo\nthree\nfour\nfive\n";
        let spans = chunk_text(text, &params).unwrap();
        for s in &spans {
            let before = text[..s.start].matches('\n').count() as u32 + 1;
            let last = text[..s.end - 1].matches('\n').count() as u32 + 1;
            assert_eq!((s.start_line, s.end_line), (before, last), "{s:?}");
        }
    }

    #[test]
    fn bad_params_are_an_error() {
        for (t, m, o) in [(0, 10, 0), (20, 10, 0), (10, 10, 10), (4, 4, 0)] {
            let params = ChunkParams {
                target_bytes: t,
                max_bytes: m,
                overlap_bytes: o,
            };
            assert!(chunk_text("abc", &params).is_err(), "{params:?}");
        }
        assert!(chunk_text("", &ChunkParams::default()).unwrap().is_empty());
    }
}
