//! A query's answer as context for a model, within a budget of tokens: the text of the
//! best chunks of the best files, joined where they touch in a file, cited by path and
//! lines, rendered as Markdown, and never estimated at more tokens than the budget.
//!
//! Which chunks: the files of the query's file answer, best first, and in turn the best
//! chunk of each, then the second best of each, and so on (every file's best chunk
//! before any file's second). Each is taken if the answer still fits the budget with it;
//! one that does not fit is left out and the next is tried. The first chunk taken is cut
//! to its leading lines (or inside its first line) when it alone would not fit, so that
//! an answer is never empty while a file matched. A chunk starting or ending inside a
//! line takes the rest of the line from the chunk beside it, so spans are whole lines
//! but where a line is longer than a chunk. Everything is decided by integers (the
//! ranking's scores and [`estimate_tokens`]), so the same state and query give the
//! same bytes.

use std::sync::Arc;

use cfs_core::{ChunkId, StateRoot};
use cfs_ingest::Role;
use cfs_store::{Result, StoreError};

use crate::meta::ChunkMeta;
use crate::rank::{RankedChunk, RankedFile};
use crate::snapshot::Snapshot;

/// The fewest tokens a context may be asked for: a cited line or two.
pub const MIN_CONTEXT_TOKENS: u32 = 64;

/// The most tokens a context may be asked for.
pub const MAX_CONTEXT_TOKENS: u32 = 1 << 18;

/// Refuses a budget outside [`MIN_CONTEXT_TOKENS`]..=[`MAX_CONTEXT_TOKENS`], for every
/// way a context is asked for (a store's, a database's, the tools').
pub fn check_budget(budget: u32) -> Result<()> {
    if (MIN_CONTEXT_TOKENS..=MAX_CONTEXT_TOKENS).contains(&budget) {
        return Ok(());
    }
    Err(StoreError::InvalidInput(format!(
        "a context's budget: tokens must be {MIN_CONTEXT_TOKENS} to {MAX_CONTEXT_TOKENS}, not \
         {budget}"
    )))
}

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
    /// The repository it belongs to, in a context of a database's repositories (its
    /// spans are then cited `[REPO] PATH:LINES`).
    pub repo: Option<String>,
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
    /// Whether the text stops before the end of a chunk it holds (the budget did not
    /// hold it all).
    pub cut: bool,
    /// The text: the document's canonical bytes over the span.
    pub text: String,
    /// The estimated tokens of its rendering ([`Context::render`]).
    pub tokens: u32,
    /// The chunks it holds, in file order.
    held: Vec<Held>,
    /// Byte range in the document's canonical text.
    start: u64,
    end: u64,
    /// The furthest byte of the chunks it holds: past `end` when it was cut.
    reach: u64,
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

/// Where a context reads what it packs: each chunk's text, and the metadata of a chunk
/// beside one, to widen it to whole lines (`None`: it is left as it is).
pub trait ChunkSource {
    /// The text of a chunk the ranked files hold.
    fn text(&self, id: &ChunkId) -> Result<String>;
    /// The metadata of the chunk `id`, a neighbour of a ranked one.
    fn neighbour(&self, id: &ChunkId) -> Option<Arc<ChunkMeta>>;
}

impl ChunkSource for Snapshot {
    fn text(&self, id: &ChunkId) -> Result<String> {
        text_of(self, id)
    }

    fn neighbour(&self, id: &ChunkId) -> Option<Arc<ChunkMeta>> {
        self.chunk(id)
    }
}

/// What packing gives before it is a [`Context`]: the files that got a span, in the
/// order given, the tokens used and the ranked chunks left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
    pub files: Vec<ContextFile>,
    pub tokens: u32,
    pub left_out: usize,
}

/// Packs the chunks of `files` (ranked, best first; from the repositories `repos`,
/// one a file, or none for a store) into at most `budget` tokens.
pub fn pack(
    source: &dyn ChunkSource,
    files: &[RankedFile],
    repos: &[&str],
    budget: u32,
) -> Result<Packed> {
    let mut contexts: Vec<ContextFile> = files.iter().map(ContextFile::of).collect();
    for (file, repo) in contexts.iter_mut().zip(repos) {
        file.repo = Some((*repo).to_owned());
    }
    let mut packed = Packer {
        files: contexts,
        budget,
        used: 0,
        taken: 0,
        left_out: 0,
    };
    for (f, chunk) in rounds(files) {
        let meta = &chunk.meta;
        // A chunk whose bytes a span already holds costs nothing more.
        if packed.files[f].attach(meta) {
            continue;
        }
        if packed.budget - packed.used < MIN_SPAN_TOKENS {
            packed.left_out += 1;
            continue;
        }
        let span = Span::of(source, chunk)?;
        packed.offer(f, span)?;
    }
    let Packer {
        files,
        used,
        left_out,
        ..
    } = packed;
    let spans = files.iter().flat_map(|f| &f.spans);
    assert!(
        used <= budget && spans.map(|s| u64::from(s.tokens)).sum::<u64>() == u64::from(used),
        "a context's tokens are its spans' and within its budget"
    );
    Ok(Packed {
        files: files.into_iter().filter(|f| !f.spans.is_empty()).collect(),
        tokens: used,
        left_out,
    })
}

impl Packed {
    /// The context of the state `root`, of `budget` tokens.
    pub fn into_context(self, root: StateRoot, budget: u32) -> Context {
        Context {
            root,
            budget,
            tokens: self.tokens,
            files: self.files,
            left_out: self.left_out,
        }
    }

    /// The packed files as Markdown (see [`Context::render`]).
    pub fn render(&self) -> String {
        render(&self.files)
    }
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
        let file = &mut self.files[f];
        let touched = file.touching(&span);
        let replaced: u32 = file.spans[touched.clone()].iter().map(|s| s.tokens).sum();
        let mut joined = file.spans[touched.clone()]
            .iter()
            .cloned()
            .try_fold(span, Span::join)?;
        joined.tokens = file.cost(&joined);
        let used = self.used - replaced + joined.tokens;
        if used <= self.budget {
            file.spans.splice(touched, [joined]);
            self.used = used;
            self.taken += 1;
            return Ok(());
        }
        if self.taken > 0 {
            self.left_out += 1;
            return Ok(());
        }
        let room = self.budget - self.used;
        match joined.cut_to(|s| file.cost(s) <= room) {
            Some(mut cut) => {
                cut.tokens = file.cost(&cut);
                self.used += cut.tokens;
                file.spans = vec![cut];
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
            repo: None,
            path,
            role: best.map_or(Role::Source, |m| m.doc.role),
            language,
            spans: Vec::new(),
        }
    }

    /// The spans `span` touches or overlaps: a run of them, as the spans are in file
    /// order and no two touch.
    fn touching(&self, span: &Span) -> std::ops::Range<usize> {
        let first = self.spans.partition_point(|s| s.end < span.start);
        let last = self.spans.partition_point(|s| s.start <= span.end);
        first..last.max(first)
    }

    /// Notes the chunk of `meta` in the span that holds all its bytes, if one does.
    fn attach(&mut self, meta: &ChunkMeta) -> bool {
        let start = meta.byte_offset;
        let end = start.saturating_add(u64::from(meta.byte_length));
        let at = self.spans.partition_point(|s| s.end < end);
        match self.spans.get_mut(at) {
            Some(s) if s.start <= start && end <= s.end => {
                s.hold(Held::of(meta));
                true
            }
            _ => false,
        }
    }

    /// The estimated tokens of a span as rendered in this file: its frame's and its
    /// text's, estimated apart (no run of one class crosses where they meet, since the
    /// frame's head ends and its tail begins with a newline or a backtick next to one).
    fn cost(&self, span: &Span) -> u32 {
        let (head, tail) = self.frame(span);
        let sum = u64::from(estimate_tokens(&head))
            + u64::from(estimate_tokens(&span.text))
            + u64::from(estimate_tokens(&tail));
        (sum - 4).min(u64::from(u32::MAX)) as u32
    }

    /// What goes before and after a span's text: a line citing the path and lines (the
    /// path's control characters escaped), then a fence of more backticks than any run
    /// in the text.
    fn frame(&self, span: &Span) -> (String, String) {
        // A repository's name holds no bracket, so `[REPO] PATH` reads one way only.
        let cited = match &self.repo {
            Some(repo) => format!("[{repo}] {}", self.path),
            None => self.path.clone(),
        };
        let path: String = match cited.chars().any(char::is_control) {
            true => cited.escape_debug().collect(),
            false => cited,
        };
        let role = match self.role {
            Role::Source => String::new(),
            role => format!(" [{}]", role.name()),
        };
        let cut = if span.cut { " (cut)" } else { "" };
        let fence = "`".repeat(longest_run(&span.text, b'`').max(2) + 1);
        let lang = self.language.as_deref().unwrap_or("");
        let (a, b) = (span.start_line, span.end_line);
        let head = format!("{path}:{a}-{b}{role}{cut}\n{fence}{lang}\n");
        let newline = if span.text.ends_with('\n') || span.text.is_empty() {
            ""
        } else {
            "\n"
        };
        (head, format!("{newline}{fence}\n\n"))
    }

    /// Appends `span` as Markdown.
    fn render_span(&self, span: &Span, out: &mut String) {
        let (head, tail) = self.frame(span);
        out.push_str(&head);
        out.push_str(&span.text);
        out.push_str(&tail);
    }
}

impl Context {
    /// The context as Markdown: each span a line citing its path and lines, then its
    /// text fenced.
    pub fn render(&self) -> String {
        render(&self.files)
    }
}

/// Files' spans as Markdown, in order.
fn render(files: &[ContextFile]) -> String {
    let mut out = String::new();
    for file in files {
        for span in &file.spans {
            file.render_span(span, &mut out);
        }
    }
    out
}

/// A chunk a span holds.
#[derive(Clone, Debug, PartialEq)]
struct Held {
    start: u64,
    id: ChunkId,
    symbol: Option<String>,
}

impl Held {
    fn of(meta: &ChunkMeta) -> Self {
        Self {
            start: meta.byte_offset,
            id: meta.id,
            symbol: meta.symbol.as_deref().map(str::to_owned),
        }
    }
}

impl Span {
    /// The chunks it holds, in file order.
    pub fn chunks(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.held.iter().map(|h| h.id)
    }

    /// The symbols of the chunks it holds, in file order, each once.
    pub fn symbols(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.held.iter().filter_map(|h| h.symbol.as_ref()) {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }

    /// Notes one more chunk it holds, in file order.
    fn hold(&mut self, held: Held) {
        if self.held.iter().any(|h| h.id == held.id) {
            return;
        }
        let at = self
            .held
            .partition_point(|h| (h.start, h.id) < (held.start, held.id));
        self.held.insert(at, held);
    }

    /// The span of one ranked chunk, made whole lines where its neighbours allow: a
    /// chunk that begins or ends inside a line (a window of a long symbol) takes the
    /// rest of that line from the chunk before or after it, if that chunk holds it.
    fn of(source: &dyn ChunkSource, chunk: &RankedChunk) -> Result<Self> {
        let meta = &chunk.meta;
        let text = source.text(&meta.id)?;
        let end = meta
            .byte_offset
            .checked_add(text.len() as u64)
            .ok_or_else(|| damaged(&meta.id))?;
        let mut span = Self {
            start_line: meta.start_line,
            end_line: meta.end_line,
            cut: false,
            text,
            tokens: 0,
            held: vec![Held::of(meta)],
            start: meta.byte_offset,
            end,
            reach: end,
        };
        let order = &meta.doc.chunks;
        let at = meta.sequence as usize;
        if let Some(before) = at.checked_sub(1).and_then(|i| order.get(i)) {
            span.take_line_start(source, before)?;
        }
        if let Some(after) = order.get(at.saturating_add(1)) {
            span.take_line_end(source, after)?;
        }
        span.reach = span.end;
        Ok(span)
    }

    /// Prepends the start of the span's first line from chunk `id`, the one before it,
    /// when that chunk holds the line's start.
    fn take_line_start(&mut self, source: &dyn ChunkSource, id: &ChunkId) -> Result<()> {
        let Some(meta) = source.neighbour(id) else {
            return Ok(());
        };
        let reach = meta.byte_offset.saturating_add(u64::from(meta.byte_length));
        let inside = meta.byte_offset < self.start && self.start <= reach;
        if !inside || meta.end_line < self.start_line {
            return Ok(());
        }
        let text = source.text(id)?;
        let before = text
            .get(..(self.start - meta.byte_offset) as usize)
            .ok_or_else(|| disagree(id, &self.held[0].id))?;
        if let Some(newline) = before.rfind('\n') {
            let line = &before[newline + 1..];
            self.text.insert_str(0, line);
            self.start -= line.len() as u64;
        }
        Ok(())
    }

    /// Appends the end of the span's last line from chunk `id`, the one after it, when
    /// that chunk holds the line's end.
    fn take_line_end(&mut self, source: &dyn ChunkSource, id: &ChunkId) -> Result<()> {
        if self.text.ends_with('\n') {
            return Ok(());
        }
        let Some(meta) = source.neighbour(id) else {
            return Ok(());
        };
        let reach = meta.byte_offset.saturating_add(u64::from(meta.byte_length));
        if !(meta.byte_offset <= self.end && self.end < reach) {
            return Ok(());
        }
        let text = source.text(id)?;
        let after = text
            .get((self.end - meta.byte_offset) as usize..)
            .ok_or_else(|| disagree(id, &self.held[0].id))?;
        if let Some(newline) = after.find('\n') {
            self.text.push_str(&after[..=newline]);
            self.end += newline as u64 + 1;
        }
        Ok(())
    }

    /// Two spans of one document that touch or overlap, as one. Their texts are the
    /// same bytes where they overlap (both are the document's), so the second's text
    /// past the first's end is what the first lacks.
    fn join(self, other: Span) -> Result<Span> {
        let (first, second) = match (self.start, self.end) <= (other.start, other.end) {
            true => (self, other),
            false => (other, self),
        };
        let mut text = first.text;
        if second.end > first.end {
            // `second` starts at or before `first` ends (they touch), and both end on a
            // character boundary of the same text.
            let from = (first.end - second.start) as usize;
            let tail = second.text.get(from..);
            text.push_str(tail.ok_or_else(|| disagree(&first.held[0].id, &second.held[0].id))?);
        }
        let mut joined = Span {
            start_line: first.start_line.min(second.start_line),
            end_line: first.end_line.max(second.end_line),
            cut: false,
            text,
            tokens: 0,
            held: first.held,
            start: first.start,
            end: first.end.max(second.end),
            reach: first.reach.max(second.reach),
        };
        for h in second.held {
            joined.hold(h);
        }
        joined.cut = joined.reach > joined.end;
        Ok(joined)
    }

    /// The span cut to its longest run of leading whole lines that `fits` accepts, or,
    /// when not even its first line fits, to the longest start of that line that does;
    /// `None` if nothing does.
    fn cut_to(&self, fits: impl Fn(&Span) -> bool) -> Option<Span> {
        let cut_at = |bytes: usize, lines: u32| Span {
            end_line: self.start_line.saturating_add(lines.saturating_sub(1)),
            cut: true,
            text: self.text[..bytes].to_owned(),
            end: self.start + bytes as u64,
            ..self.clone()
        };
        let mut best = None;
        let (mut end, mut lines) = (0, 0u32);
        for line in self.text.split_inclusive('\n') {
            end += line.len();
            lines += 1;
            let cut = cut_at(end, lines);
            if !fits(&cut) {
                break;
            }
            best = Some(cut);
        }
        if best.is_some() {
            return best;
        }
        // Not one whole line fits: the longest start of the first line that does (the
        // estimate never falls as text is added, so a binary search finds it).
        let first = self.text.split_inclusive('\n').next().unwrap_or("");
        let (mut lo, mut hi) = (0, first.len());
        while lo < hi {
            let mid = floor_boundary(first, (lo + hi).div_ceil(2));
            if mid > lo && fits(&cut_at(mid, 1)) {
                lo = mid;
            } else {
                hi = if mid > lo { mid - 1 } else { lo };
            }
        }
        (lo > 0).then(|| cut_at(lo, 1))
    }
}

/// The largest character boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The text of a chunk the snapshot holds.
fn text_of(snap: &Snapshot, id: &ChunkId) -> Result<String> {
    snap.chunk_text(id)?
        .ok_or_else(|| StoreError::Corrupted(format!("chunk {id} missing from its snapshot")))
}

/// A chunk whose place in its document cannot be (a damaged store).
fn damaged(id: &ChunkId) -> StoreError {
    StoreError::Corrupted(format!("chunk {id} lies past the end of any document"))
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
    fn a_span_is_cut_at_whole_lines_or_inside_its_first() {
        let span = Span {
            start_line: 10,
            end_line: 13,
            cut: false,
            text: "one\ntwo\nthree\nfour\n".into(),
            tokens: 0,
            held: Vec::new(),
            start: 100,
            end: 119,
            reach: 119,
        };
        let cut = span.cut_to(|s| s.text.len() <= 9).unwrap();
        assert_eq!(
            (cut.text.as_str(), cut.end_line, cut.end, cut.cut),
            ("one\ntwo\n", 11, 108, true)
        );
        let part = span.cut_to(|s| s.text.len() <= 2).unwrap();
        assert_eq!(
            (part.text.as_str(), part.end_line, part.end),
            ("on", 10, 102)
        );
        assert!(span.cut_to(|s| s.text.is_empty()).is_none());
        // A first line of multi-byte characters is cut at a character boundary.
        let wide = Span {
            text: "ééé\n".into(),
            ..span.clone()
        };
        assert_eq!(wide.cut_to(|s| s.text.len() <= 3).unwrap().text, "é");
    }

    fn held(start: u64, n: u8) -> Held {
        Held {
            start,
            id: ChunkId([n; 16]),
            symbol: Some(format!("s{n}")),
        }
    }

    /// A span of the bytes `start..end` of a document whose every line is `"abcd\n"`.
    fn lines(start: u64, end: u64, n: u8) -> Span {
        let doc = "abcd\n".repeat(100);
        Span {
            start_line: start as u32 / 5 + 1,
            end_line: (end as u32 - 1) / 5 + 1,
            cut: false,
            text: doc[start as usize..end as usize].to_owned(),
            tokens: 0,
            held: vec![held(start, n)],
            start,
            end,
            reach: end,
        }
    }

    #[test]
    fn a_join_keeps_its_chunks_in_file_order_and_a_cut_end() {
        let (a, b, c) = (lines(0, 300, 1), lines(250, 500, 3), lines(200, 275, 2));
        let joined = a.join(b).unwrap().join(c).unwrap();
        let ids: Vec<u8> = joined.chunks().map(|id| id.0[0]).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(joined.symbols(), ["s1", "s2", "s3"]);
        assert_eq!(
            (joined.start_line, joined.end_line, joined.text.len()),
            (1, 100, 500)
        );
        // A cut span keeps its mark when what joins it ends inside it, and loses it when
        // what joins it reaches past its chunk's end.
        let cut = lines(0, 300, 1).cut_to(|s| s.text.len() <= 100).unwrap();
        assert!(cut.cut && cut.end == 100 && cut.reach == 300);
        let inside = cut.clone().join(lines(50, 100, 2)).unwrap();
        assert!(inside.cut && inside.end_line == 20);
        let past = cut.join(lines(95, 400, 3)).unwrap();
        assert!(!past.cut && past.end == 400, "{past:?}");
    }
}
