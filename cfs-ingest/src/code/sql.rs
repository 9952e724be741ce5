//! SQL: tables and views, functions, indexes, triggers, types, schemas and sequences,
//! each named by what its `CREATE` statement creates (spec section 18).

use cfs_core::SymbolKind;
use tree_sitter::Node;

use super::{Classified, child_of_kind, strip_pair, text_of};

/// The statement a `statement` node holds (`CREATE TABLE ...` in `CREATE TABLE ...;`).
pub(super) fn statement_inner(node: Node<'_>) -> Option<Node<'_>> {
    node.named_child(0)
}

/// Where the name of what a `CREATE` statement creates lies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NameAt {
    /// Its first `object_reference` child (the name a trigger or an index is `ON` comes
    /// after it).
    Reference,
    /// Its `column` field: the grammar's name for an index's name.
    Column,
    /// Its first `identifier` child: a schema's or a database's name.
    Identifier,
}

/// The kind of symbol a `CREATE` statement the grammar read makes, and where its name
/// lies; `None` for any other node.
fn created(node: Node<'_>) -> Option<(SymbolKind, NameAt)> {
    Some(match node.kind() {
        "create_table" | "create_view" | "create_materialized_view" => {
            (SymbolKind::Table, NameAt::Reference)
        }
        "create_function" => (SymbolKind::Function, NameAt::Reference),
        "create_index" => (SymbolKind::Index, NameAt::Column),
        "create_trigger" => (SymbolKind::Trigger, NameAt::Reference),
        "create_type" if child_of_kind(node, &["enum_elements"]).is_some() => {
            (SymbolKind::Enum, NameAt::Reference)
        }
        "create_type" => (SymbolKind::Type, NameAt::Reference),
        "create_schema" | "create_database" => (SymbolKind::Module, NameAt::Identifier),
        "create_sequence" => (SymbolKind::Var, NameAt::Reference),
        _ => return None,
    })
}

/// A `CREATE` statement as a symbol: named by the last part of the name it creates,
/// the parts before it its parent (`app.order_count`: `order_count`, parent `app`).
pub(super) fn sql_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let (kind, _) = created(node)?;
    let name = unquote(text_of(naming(node)?, src));
    (!name.is_empty()).then(|| (kind, name.to_owned(), None))
}

/// The schema (and database) of the name a `CREATE` statement creates, if it has one.
pub(super) fn sql_scope(node: Node<'_>, src: &str) -> Option<String> {
    if created(node)?.1 != NameAt::Reference {
        return None;
    }
    scope_of(child_of_kind(node, &["object_reference"])?, src)
}

/// An object reference's `database` and `schema` fields joined with `.`, if it has any.
fn scope_of(reference: Node<'_>, src: &str) -> Option<String> {
    let parts: Vec<&str> = ["database", "schema"]
        .iter()
        .filter_map(|field| reference.child_by_field_name(field))
        .map(|part| unquote(text_of(part, src)))
        .collect();
    (!parts.is_empty()).then(|| parts.join("."))
}

/// The node naming what a `CREATE` statement creates (see [`NameAt`]); `None` for a
/// statement that names nothing (`CREATE INDEX ON t (c)`) and for any other node.
pub(super) fn naming(node: Node<'_>) -> Option<Node<'_>> {
    match created(node)?.1 {
        NameAt::Column => node.child_by_field_name("column"),
        NameAt::Identifier => child_of_kind(node, &["identifier"]),
        NameAt::Reference => {
            child_of_kind(node, &["object_reference"]).map(|r| name_part(r).unwrap_or(r))
        }
    }
}

/// The `name` field of an object reference, through a nested reference.
fn name_part(reference: Node<'_>) -> Option<Node<'_>> {
    match reference.child_by_field_name("name") {
        Some(name) => Some(name),
        None => child_of_kind(reference, &["object_reference"]).and_then(name_part),
    }
}

/// A name without the quotes around it (`"text/plain"`, `` `users` ``, `[users]`).
fn unquote(name: &str) -> &str {
    strip_pair(name, &[('"', '"'), ('`', '`'), ('[', ']')])
}

/// How many of the nodes after a `CREATE` child of the `ERROR` with id `error` continue
/// the run it starts (see [`recovered`]): children of that `ERROR` that are neither
/// another `CREATE` nor a statement the grammar read, and the comments among them (rules
/// 2: under 1 a comment ended the run, so a head with a comment in it made no symbol).
/// Comments after the run's last node are not in it: they attach to what follows.
pub(super) fn run_len<'t>(after: impl Iterator<Item = Node<'t>>, error: Option<usize>) -> usize {
    let (mut len, mut comments) = (0, 0);
    for node in after.take_while(|n| n.parent().map(|p| p.id()) == error) {
        match node.kind() {
            "comment" | "marginalia" => comments += 1,
            "keyword_create" | "statement" => break,
            _ => (len, comments) = (len + comments + 1, 0),
        }
    }
    len
}

/// The kind, name and parent of the `CREATE` statement a run of an `ERROR`'s
/// children makes: a statement the grammar could not read (a table without columns, a
/// domain, a procedure, a name in letters it does not take), read from its text as
/// written: `CREATE`, the words of [`MODIFIERS`], the words of what it creates (see
/// [`HEADS`]), `IF NOT EXISTS` or `CONCURRENTLY`, then the name: parts joined by `.`,
/// each a run of letters, digits, `_` and `$`, or quoted by `"`, `` ` `` or `[` `]`.
/// The last part is the name, the others the parent.
pub(super) fn recovered(
    run: &[Node<'_>],
    src: &str,
) -> Option<(SymbolKind, String, Option<String>)> {
    let (first, last) = (run.first()?, run.last()?);
    let text = src.get(first.start_byte()..last.end_byte())?;
    let mut words = Words { rest: text };
    if !words.next()?.eq_ignore_ascii_case("create") {
        return None;
    }
    let mut word = words.next()?;
    while MODIFIERS.iter().any(|m| word.eq_ignore_ascii_case(m)) {
        word = words.next()?;
    }
    let kind = HEADS
        .iter()
        .find(|(head, _)| word.eq_ignore_ascii_case(head))?
        .1;
    let mut parts = words.name()?;
    while parts.len() == 1 && EXISTENCE.iter().any(|e| parts[0].eq_ignore_ascii_case(e)) {
        parts = words.name()?;
    }
    let name = unquote(parts.pop()?);
    let parent: Vec<&str> = parts.into_iter().map(unquote).collect();
    let parent = (!parent.is_empty()).then(|| parent.join("."));
    (!name.is_empty()).then(|| (kind, name.to_owned(), parent))
}

/// The words of a statement's head, white space and comments between them.
struct Words<'s> {
    rest: &'s str,
}

impl<'s> Words<'s> {
    /// The next word: letters, digits, `_` and `$`.
    fn next(&mut self) -> Option<&'s str> {
        self.skip_space();
        let len = self
            .rest
            .find(|c: char| !is_name_char(c))
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(len);
        self.rest = rest;
        (!word.is_empty()).then_some(word)
    }

    /// The next name's parts, each a word or a quoted name, joined by `.`.
    fn name(&mut self) -> Option<Vec<&'s str>> {
        let mut parts = Vec::new();
        loop {
            self.skip_space();
            let close = match self.rest.chars().next()? {
                '"' => Some('"'),
                '`' => Some('`'),
                '[' => Some(']'),
                _ => None,
            };
            let part = match close {
                Some(close) => {
                    let end = self.rest[1..].find(close)? + 2;
                    let (part, rest) = self.rest.split_at(end);
                    self.rest = rest;
                    part
                }
                None => self.next()?,
            };
            parts.push(part);
            match self.rest.strip_prefix('.') {
                Some(rest) => self.rest = rest,
                None => return Some(parts),
            }
        }
    }

    fn skip_space(&mut self) {
        loop {
            self.rest = self.rest.trim_start();
            // Comments end where `readable` ends them: `/* */` nested (rules 2; 1 ended
            // at the first `*/`).
            let end = if self.rest.starts_with("--") {
                line_end(self.rest.as_bytes(), 0)
            } else if self.rest.starts_with("/*") {
                block_comment_end(self.rest.as_bytes(), 0)
            } else {
                return;
            };
            self.rest = &self.rest[end..];
        }
    }
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Words between `CREATE` and the words of what it creates.
const MODIFIERS: [&str; 12] = [
    "or",
    "replace",
    "alter",
    "temp",
    "temporary",
    "unlogged",
    "unique",
    "materialized",
    "recursive",
    "external",
    "constraint",
    "global",
];

/// What a `CREATE` creates, by its word, and the kind of symbol it is.
const HEADS: [(&str, SymbolKind); 11] = [
    ("table", SymbolKind::Table),
    ("view", SymbolKind::Table),
    ("function", SymbolKind::Function),
    ("procedure", SymbolKind::Function),
    ("trigger", SymbolKind::Trigger),
    ("index", SymbolKind::Index),
    ("type", SymbolKind::Type),
    ("domain", SymbolKind::Type),
    ("schema", SymbolKind::Module),
    ("database", SymbolKind::Module),
    ("sequence", SymbolKind::Var),
];

/// Words between the words of what a statement creates and its name.
const EXISTENCE: [&str; 4] = ["if", "not", "exists", "concurrently"];

/// `src` as the grammar can read it, byte for byte as long, every line where it was:
/// each dollar-quoted string (`$$ ... $$`, `$body$ ... $body$`: a function's body, a
/// `DO` block) turned into a single-quoted one of spaces, its line feeds kept, and
/// every other `$` into a space. The grammar reads a dollar-quoted body as statements,
/// and one it cannot read there (`$$ begin end; $$`) sends it past the body's end, into
/// the statements after it; and its scanner of dollar quotes leaks the tag it holds
/// when it meets one it cannot close (`$x$` alone, `$1+$2`): 1.6 KB an input, measured
/// on the fuzz corpus. Quotes are found as PostgreSQL finds them: not in a comment
/// (`--`, nested `/* */`), a string, a quoted name, or right after a word character or
/// `$` (`a$1$`); one that never closes runs to the end. `None` without a `$`.
pub(super) fn readable(src: &str) -> Option<String> {
    if !src.contains('$') {
        return None;
    }
    let bytes = src.as_bytes();
    let mut out = bytes.to_vec();
    let mut at = 0;
    while at < bytes.len() {
        at = match bytes[at] {
            b'-' if bytes.get(at + 1) == Some(&b'-') => line_end(bytes, at),
            b'/' if bytes.get(at + 1) == Some(&b'*') => block_comment_end(bytes, at),
            quote @ (b'\'' | b'"') => quoted_end(bytes, at, quote),
            b'$' if at == 0 || !is_word_byte(bytes[at - 1]) && bytes[at - 1] != b'$' => {
                match dollar_tag(bytes, at) {
                    // Unclosed, it runs to the end of the file: nothing after it to read.
                    Some(tag) => match find(bytes, tag, at + tag.len()) {
                        Some(close) => {
                            blank(&mut out, at, close + tag.len());
                            close + tag.len()
                        }
                        None => bytes.len(),
                    },
                    None => at + 1,
                }
            }
            _ => at + 1,
        };
    }
    // Every other `$` (`$1`, `a$b`, one that never closes) becomes a space: the grammar
    // never enters its scanner's dollar-quote state, which leaks the tag it keeps.
    for b in out.iter_mut().filter(|b| **b == b'$') {
        *b = b' ';
    }
    // Whole characters (between ASCII delimiters) became ASCII spaces: still UTF-8.
    Some(String::from_utf8(out).unwrap_or_else(|_| src.to_owned()))
}

/// The tag opening a dollar-quoted string at `at` (`$$`, `$body$`), `None` when `at`
/// opens none (`$1`, `$`).
fn dollar_tag(bytes: &[u8], at: usize) -> Option<&[u8]> {
    let tag_len = bytes[at + 1..]
        .iter()
        .take_while(|&&b| is_word_byte(b))
        .count();
    let tag_end = at + 1 + tag_len;
    let starts_with_digit = bytes.get(at + 1).is_some_and(u8::is_ascii_digit);
    (bytes.get(tag_end) == Some(&b'$') && !starts_with_digit).then(|| &bytes[at..=tag_end])
}

/// Where `needle` next occurs in `bytes` from `from`.
fn find(bytes: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    rest.windows(needle.len())
        .position(|w| w == needle)
        .map(|i| from + i)
}

/// `out[at..close]`, a dollar-quoted string, as `'`, spaces and line feeds, `'`.
fn blank(out: &mut [u8], at: usize, close: usize) {
    for b in &mut out[at..close] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
    out[at] = b'\'';
    out[close - 1] = b'\'';
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

fn line_end(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| at + n)
}

/// One past the `*/` closing the comment opening at `at`, nested comments counted.
fn block_comment_end(bytes: &[u8], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at + 1 < bytes.len() {
        match (bytes[at], bytes[at + 1]) {
            (b'/', b'*') => (depth, at) = (depth + 1, at + 2),
            (b'*', b'/') => {
                (depth, at) = (depth - 1, at + 2);
                if depth == 0 {
                    return at;
                }
            }
            _ => at += 1,
        }
    }
    bytes.len()
}

/// One past the quote closing the string or quoted name opening at `at` (a doubled
/// quote is one inside it).
fn quoted_end(bytes: &[u8], mut at: usize, quote: u8) -> usize {
    at += 1;
    while at < bytes.len() {
        if bytes[at] == quote {
            if bytes.get(at + 1) == Some(&quote) {
                at += 2;
                continue;
            }
            return at + 1;
        }
        at += 1;
    }
    bytes.len()
}
