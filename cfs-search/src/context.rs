//! A query's answer as context for a model, within a budget of tokens: the text of the
//! best chunks of the best files, joined where they touch in a file, cited by path and
//! lines, rendered as Markdown, and never estimated at more tokens than the budget.
//!
//! Which chunks: the files of the query's file answer, best first, and in turn the best
//! chunk of each, then the second best of each, and so on (every file's best chunk
//! before any file's second). Each is taken if the answer still fits the budget with it;
//! one that does not fit is left out and the next is tried. The first chunk taken is cut
//! to its leading lines when it alone would not fit, so that an answer is never empty
//! while a file matched. Everything is decided by integers (the ranking's scores and
//! [`estimate_tokens`]), so the same state and query give the same bytes.

use cfs_core::{ChunkId, StateRoot};
use cfs_ingest::Role;
use cfs_store::{Result, StoreError};

use crate::rank::{RankedChunk, RankedFile};
use crate::snapshot::Snapshot;

/// The fewest tokens a context may be asked for: a cited line or two.
pub const MIN_CONTEXT_TOKENS: u32 = 64;

/// The most tokens a context may be asked for.
pub const MAX_CONTEXT_TOKENS: u32 = 1 << 20;

/// A query's answer within a budget of tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    /// The state the text comes from.
    pub root: StateRoot,
    /// The budget asked for.
    pub budget: u32,
    /// The rendered context's estimated tokens (its spans' `tokens`, summed): at most
    /// `budget`.
    pub tokens: u32,
    /// Files in the order of the answer, each with the spans taken from it.
    pub files: Vec<ContextFile>,
    /// Ranked chunks left out because they did not fit.
    pub left_out: usize,
}

/// A file's part of a context.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextFile {
    /// The first of its document's paths.
    pub path: String,
    /// Its role.
    pub role: Role,
    /// The language of its code chunks, if any.
    pub language: Option<String>,
    /// Its spans, in file order; no two touch.
    pub spans: Vec<Span>,
}

/// Lines of a file: one chunk's text or several that touch or overlap, joined.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based), of what `text` holds.
    pub end_line: u32,
    /// The chunks it holds, in file order.
    pub chunks: Vec<ChunkId>,
    /// Their symbols, in file order, each once.
    pub symbols: Vec<String>,
    /// Whether the text stops before its chunk's end (the budget did not hold it).
    pub cut: bool,
    /// The text: the document's canonical bytes over the span.
    pub text: String,
    /// The estimated tokens of its rendering ([`Context::render`]).
    pub tokens: u32,
    /// Byte range in the document's canonical text.
    start: u64,
    end: u64,
}

/// The estimated tokens of `text` for a language model: 2, plus for each run of bytes
/// of one class, letters `ceil(n / 4)`, digits `ceil(n / 2)`, other ASCII bytes but
/// whitespace `ceil(n / 2)`, newlines and non-ASCII bytes `n`, other whitespace 0. It
/// is at least what the o200k, cl100k and Anthropic tokenizers count for 99.4% of real
/// code and prose chunks and every sum of 20 of them, at about 1.4x (OpenAI) and 1.25x
/// (Anthropic) their total (docs/benchmarks.md, "Context within a budget of tokens").
pub fn estimate_tokens(text: &str) -> u32 {
    let mut total: u64 = 2;
    let mut run: Option<(ByteClass, u64)> = None;
    for class in text.bytes().map(ByteClass::of) {
        run = match run {
            Some((c, n)) if c == class => Some((c, n + 1)),
            Some((c, n)) => {
                total += c.cost(n);
                Some((class, 1))
            }
            None => Some((class, 1)),
        };
    }
    if let Some((c, n)) = run {
        total += c.cost(n);
    }
    total.min(u64::from(u32::MAX)) as u32
}

/// The classes of bytes [`estimate_tokens`] counts runs of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByteClass {
    Letter,
    Digit,
    Newline,
    Space,
    NonAscii,
    Other,
}

impl ByteClass {
    fn of(b: u8) -> Self {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' => Self::Letter,
            b'0'..=b'9' => Self::Digit,
            b'\n' => Self::Newline,
            b' ' | b'\t' | b'\r' | 0x0B | 0x0C => Self::Space,
            0x80.. => Self::NonAscii,
            _ => Self::Other,
        }
    }

    /// The tokens of a run of `n` bytes of this class.
    fn cost(self, n: u64) -> u64 {
        match self {
            Self::Letter => n.div_ceil(4),
            Self::Digit | Self::Other => n.div_ceil(2),
            Self::Newline | Self::NonAscii => n,
            Self::Space => 0,
        }
    }
}

/// Packs the chunks of `files` (ranked, best first) into a context of at most `budget`
/// tokens.
pub(crate) fn pack(snap: &Snapshot, files: &[RankedFile], budget: u32) -> Result<Context> {
    let mut packed = Packer {
        files: files.iter().map(ContextFile::of).collect(),
        budget,
        used: 0,
        taken: 0,
        left_out: 0,
    };
    for (f, chunk) in rounds(files) {
        if packed.budget - packed.used < MIN_SPAN_TOKENS {
            packed.left_out += 1;
            continue;
        }
        let span = Span::of(snap, chunk)?;
        packed.offer(f, span)?;
    }
    let Packer {
        files,
        used,
        left_out,
        ..
    } = packed;
    Ok(Context {
        root: snap.state_root(),
        budget,
        tokens: used,
        files: files.into_iter().filter(|f| !f.spans.is_empty()).collect(),
        left_out,
    })
}

/// Below this many tokens left, no span is tried: its header alone would not fit.
const MIN_SPAN_TOKENS: u32 = 8;

/// The chunks of `files` in the order they are offered: each file's best chunk in file
/// order, then each file's second, and so on.
fn rounds(files: &[RankedFile]) -> impl Iterator<Item = (usize, &RankedChunk)> {
    let deepest = files.iter().map(|f| f.chunks.len()).max().unwrap_or(0);
    (0..deepest).flat_map(move |round| {
        files
            .iter()
            .enumerate()
            .filter_map(move |(f, file)| file.chunks.get(round).map(|c| (f, c)))
    })
}

struct Packer {
    files: Vec<ContextFile>,
    budget: u32,
    used: u32,
    taken: usize,
    left_out: usize,
}

impl Packer {
    /// Takes `span` into file `f` if the context still fits with it; the first span
    /// taken is cut to fit instead.
    fn offer(&mut self, f: usize, span: Span) -> Result<()> {
        let file = &self.files[f];
        let (spans, joined, replaced) = file.joined(span.clone())?;
        let used = self.used - replaced + spans[joined].tokens;
        if used <= self.budget {
            self.files[f].spans = spans;
            self.used = used;
            self.taken += 1;
            return Ok(());
        }
        if self.taken > 0 {
            self.left_out += 1;
            return Ok(());
        }
        let room = self.budget - self.used;
        match span.cut_to(|s| file.cost(s) <= room) {
            Some(mut cut) => {
                cut.tokens = file.cost(&cut);
                self.used += cut.tokens;
                self.files[f].spans = vec![cut];
                self.taken += 1;
            }
            None => self.left_out += 1,
        }
        Ok(())
    }
}

impl ContextFile {
    fn of(file: &RankedFile) -> Self {
        let best = file.chunks.first().map(|c| &c.meta);
        let path = best
            .and_then(|m| m.doc.paths.first())
            .map(|p| p.path.to_string())
            .unwrap_or_default();
        let language = file
            .chunks
            .iter()
            .find_map(|c| c.meta.language.as_deref().map(str::to_owned));
        Self {
            path,
            role: best.map_or(Role::Source, |m| m.doc.role),
            language,
            spans: Vec::new(),
        }
    }

    /// The file's spans with `span` joined in (with every span it touches or overlaps),
    /// where the joined one is among them, and the tokens of the spans it replaced.
    fn joined(&self, mut span: Span) -> Result<(Vec<Span>, usize, u32)> {
        let mut spans = Vec::with_capacity(self.spans.len() + 1);
        let mut replaced = 0;
        for s in &self.spans {
            if s.end < span.start || span.end < s.start {
                spans.push(s.clone());
            } else {
                replaced += s.tokens;
                span = s.clone().join(span)?;
            }
        }
        span.tokens = self.cost(&span);
        let at = spans.partition_point(|s| s.start < span.start);
        spans.insert(at, span);
        Ok((spans, at, replaced))
    }

    /// The estimated tokens of a span as rendered in this file.
    fn cost(&self, span: &Span) -> u32 {
        let mut out = String::new();
        self.render_span(span, &mut out);
        estimate_tokens(&out)
    }

    /// Appends `span` as Markdown: a line citing the path and lines, then the text
    /// fenced by more backticks than any run in it.
    fn render_span(&self, span: &Span, out: &mut String) {
        use std::fmt::Write;
        let role = match self.role {
            Role::Source => String::new(),
            role => format!(" [{}]", role.name()),
        };
        let cut = if span.cut { " (cut)" } else { "" };
        let fence = "`".repeat(longest_run(&span.text, b'`').max(2) + 1);
        let lang = self.language.as_deref().unwrap_or("");
        let newline = if span.text.ends_with('\n') { "" } else { "\n" };
        let _ = write!(
            out,
            "{}:{}-{}{role}{cut}\n{fence}{lang}\n{}{newline}{fence}\n\n",
            self.path, span.start_line, span.end_line, span.text
        );
    }
}

impl Context {
    /// The context as Markdown: each span a line citing its path and lines, then its
    /// text fenced.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for file in &self.files {
            for span in &file.spans {
                file.render_span(span, &mut out);
            }
        }
        out
    }
}

impl Span {
    /// The span of one ranked chunk, made whole lines: a chunk that begins or ends
    /// inside a line (a window of a long symbol or paragraph) takes the rest of that
    /// line from the chunks beside it.
    fn of(snap: &Snapshot, chunk: &RankedChunk) -> Result<Self> {
        let meta = &chunk.meta;
        let text = text_of(snap, &meta.id)?;
        let mut span = Self {
            start_line: meta.start_line,
            end_line: meta.end_line,
            chunks: vec![meta.id],
            symbols: meta.symbol.iter().map(|s| s.to_string()).collect(),
            cut: false,
            tokens: 0,
            start: meta.byte_offset,
            end: meta.byte_offset + text.len() as u64,
            text,
        };
        let order = &meta.doc.chunks;
        let at = meta.sequence as usize;
        for before in order[..at.min(order.len())].iter().rev() {
            if !span.take_line_start(snap, before)? {
                break;
            }
        }
        for after in order.iter().skip(at + 1) {
            if !span.take_line_end(snap, after)? {
                break;
            }
        }
        Ok(span)
    }

    /// Prepends the part of the first line that chunk `id` (one before the span) holds;
    /// true if the line may begin further back still.
    fn take_line_start(&mut self, snap: &Snapshot, id: &ChunkId) -> Result<bool> {
        let Some(meta) = snap.chunk(id) else {
            return Ok(false);
        };
        let reaches = meta.byte_offset < self.start
            && self.start <= meta.byte_offset + u64::from(meta.byte_length);
        if !reaches || meta.end_line < self.start_line {
            return Ok(false);
        }
        let text = text_of(snap, id)?;
        let before = text
            .get(..(self.start - meta.byte_offset) as usize)
            .ok_or_else(|| disagree(id, &self.chunks[0]))?;
        let from = before.rfind('\n').map_or(0, |i| i + 1);
        self.text.insert_str(0, &before[from..]);
        self.start -= (before.len() - from) as u64;
        Ok(from == 0)
    }

    /// Appends the part of the last line that chunk `id` (one after the span) holds;
    /// true if the line may end further on still.
    fn take_line_end(&mut self, snap: &Snapshot, id: &ChunkId) -> Result<bool> {
        if self.text.ends_with('\n') {
            return Ok(false);
        }
        let Some(meta) = snap.chunk(id) else {
            return Ok(false);
        };
        let end = meta.byte_offset + u64::from(meta.byte_length);
        if !(meta.byte_offset <= self.end && self.end < end) {
            return Ok(false);
        }
        let text = text_of(snap, id)?;
        let after = text
            .get((self.end - meta.byte_offset) as usize..)
            .ok_or_else(|| disagree(id, &self.chunks[0]))?;
        let to = after.find('\n').map_or(after.len(), |i| i + 1);
        self.text.push_str(&after[..to]);
        self.end += to as u64;
        Ok(to == after.len() && !after.ends_with('\n'))
    }

    /// Two spans of one document that touch or overlap, as one.
    fn join(self, other: Span) -> Result<Span> {
        let (first, second) = match (self.start, self.end) <= (other.start, other.end) {
            true => (self, other),
            false => (other, self),
        };
        let mut text = first.text;
        if second.end > first.end {
            let from = (first.end - second.start) as usize;
            let tail = second
                .text
                .get(from..)
                .ok_or_else(|| disagree(&first.chunks[0], &second.chunks[0]))?;
            text.push_str(tail);
        }
        let mut chunks = first.chunks;
        chunks.extend(second.chunks);
        let mut symbols = first.symbols;
        for s in second.symbols {
            if !symbols.contains(&s) {
                symbols.push(s);
            }
        }
        Ok(Span {
            start_line: first.start_line.min(second.start_line),
            end_line: first.end_line.max(second.end_line),
            chunks,
            symbols,
            // The end is the further span's, and so is whether it stops short.
            cut: if second.end > first.end {
                second.cut
            } else {
                first.cut
            },
            tokens: 0,
            start: first.start,
            end: first.end.max(second.end),
            text,
        })
    }

    /// The span cut to its longest run of leading whole lines that `fits` accepts, or
    /// `None` if not even its first line fits.
    fn cut_to(self, fits: impl Fn(&Span) -> bool) -> Option<Span> {
        let mut best = None;
        let mut end = 0;
        let mut lines = 0;
        for line in self.text.split_inclusive('\n') {
            end += line.len();
            lines += 1;
            let cut = Span {
                end_line: self.start_line + lines - 1,
                cut: true,
                text: self.text[..end].to_owned(),
                end: self.start + end as u64,
                ..self.clone()
            };
            if !fits(&cut) {
                break;
            }
            best = Some(cut);
        }
        best
    }
}

/// The text of a chunk the snapshot holds.
fn text_of(snap: &Snapshot, id: &ChunkId) -> Result<String> {
    snap.chunk_text(id)?
        .ok_or_else(|| StoreError::Corrupted(format!("chunk {id} missing from its snapshot")))
}

/// Two chunks of one document whose byte ranges do not agree with their texts.
fn disagree(a: &ChunkId, b: &ChunkId) -> StoreError {
    StoreError::Corrupted(format!(
        "chunks {a} and {b} of one document disagree on their bytes"
    ))
}

/// The longest run of `byte` in `text`.
fn longest_run(text: &str, byte: u8) -> usize {
    let (mut longest, mut run) = (0, 0);
    for &b in text.as_bytes() {
        run = if b == byte { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_runs_by_their_class() {
        assert_eq!(estimate_tokens(""), 2);
        // "parse" 2, "_" 1, "config" 2, "(" ... : runs of letters by four, others by two.
        assert_eq!(estimate_tokens("parse_config"), 2 + 2 + 1 + 2);
        assert_eq!(estimate_tokens("x = 12345;\n"), 2 + 1 + 1 + 3 + 1 + 1);
        assert_eq!(estimate_tokens("    \t \r\n\n"), 2 + 2);
        assert_eq!(estimate_tokens("é"), 2 + 2);
        assert_eq!(estimate_tokens("=>"), 2 + 1);
        // Runs do not join across the end of one text and the start of the next when
        // the first ends in a newline, so a rendering's estimate is at most the sum of
        // its parts'.
        let (a, b) = ("fn a() {}\n", "fn b() {}\n");
        let joined = format!("{a}{b}");
        assert!(estimate_tokens(&joined) <= estimate_tokens(a) + estimate_tokens(b));
    }

    #[test]
    fn a_span_is_cut_at_whole_lines() {
        let span = Span {
            start_line: 10,
            end_line: 13,
            chunks: Vec::new(),
            symbols: Vec::new(),
            cut: false,
            text: "one\ntwo\nthree\nfour\n".into(),
            tokens: 0,
            start: 100,
            end: 119,
        };
        let cut = span.clone().cut_to(|s| s.text.len() <= 9).unwrap();
        assert_eq!(
            (cut.text.as_str(), cut.end_line, cut.end, cut.cut),
            ("one\ntwo\n", 11, 108, true)
        );
        assert!(span.cut_to(|s| s.text.len() < 4).is_none());
    }
}
