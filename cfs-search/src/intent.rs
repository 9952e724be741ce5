//! What a query asks for, read from its shape alone: a bare name (`IntoResponse`,
//! `Router::route`), a sentence that names identifiers ("where is parse_headers
//! called"), or a description in words. Ranking looks names up as definitions and
//! weighs its lists by this intent (`docs/spec.md`, "Ranking for code").

use cfs_ingest::is_word_char;

use super::tokenize::{MAX_TOKEN_BYTES, words};

/// The kind of a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intent {
    /// One identifier-shaped word: a name to find the definition of.
    Name,
    /// Words with at least one identifier among them.
    Mixed,
    /// Words only, a description or a question alike.
    Description,
}

impl Intent {
    /// Lower-case name, as `--explain` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Intent::Name => "name",
            Intent::Mixed => "mixed",
            Intent::Description => "description",
        }
    }
}

/// An identifier in a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identifier {
    /// Its last segment as written (`route` in `Router::route`).
    pub name: String,
    /// The name lower-cased: the key definitions are looked up by.
    pub key: String,
    /// The segment before the name, lower-cased (`router` in `Router::route`).
    pub qualifier: Option<String>,
    /// The words of the name ([`words`]: `hono`, `request` in `HonoRequest`).
    pub words: Vec<String>,
}

/// Roles a query names, whose files it should not hold back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mentions {
    /// test, tests, testing, spec, specs, unittest.
    pub test: bool,
    /// example, examples, sample, samples, demo, demos.
    pub example: bool,
    /// doc, docs, documentation, readme, guide, install, installation, tutorial,
    /// changelog, faq, howto.
    pub docs: bool,
}

/// A query read for ranking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// Its kind.
    pub intent: Intent,
    /// The identifiers it names, in order, each once.
    pub identifiers: Vec<Identifier>,
    /// Its words for matching file and folder names: the parts of its tokens, in
    /// order, each once, without stop words (unless the query is a name).
    pub words: Vec<String>,
    /// Roles it names.
    pub mentions: Mentions,
}

/// Words too common to say anything about a file's name.
pub const STOP_WORDS: [&str; 40] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "into", "is", "it", "its", "of", "on", "or", "our", "should", "that", "the",
    "their", "them", "then", "there", "this", "to", "what", "when", "where", "which", "with",
    "why",
];

/// Separators between the segments of a qualified name.
const SEPARATORS: [&str; 5] = ["::", "->", ".", "\\", "#"];

/// Reads `query`.
pub fn analyze(query: &str) -> Analysis {
    let pieces: Vec<&str> = query.split_whitespace().collect();
    let single = pieces.len() == 1;
    let mut identifiers: Vec<Identifier> = Vec::new();
    let mut shaped = 0;
    for (i, raw) in pieces.iter().enumerate() {
        let piece = trim_piece(raw);
        let Some(segments) = segments(piece) else {
            continue;
        };
        shaped += 1;
        let called = raw.trim_end_matches(|c: char| !is_word_char(c) && c != '(' && c != ')');
        if !(single || looks_like_identifier(piece, &segments, i > 0) || called.ends_with("()")) {
            continue;
        }
        if let Some(ident) = identifier(&segments)
            && !identifiers.contains(&ident)
        {
            identifiers.push(ident);
        }
    }
    let intent = if single && shaped == 1 {
        Intent::Name
    } else if !identifiers.is_empty() {
        Intent::Mixed
    } else {
        Intent::Description
    };
    let all = query_words(query);
    let has = |list: &[&str]| all.iter().any(|w| list.contains(&w.as_str()));
    let mentions = Mentions {
        test: has(&["test", "tests", "testing", "spec", "specs", "unittest"]),
        example: has(&["example", "examples", "sample", "samples", "demo", "demos"]),
        docs: has(&[
            "doc",
            "docs",
            "documentation",
            "readme",
            "guide",
            "install",
            "installation",
            "tutorial",
            "changelog",
            "faq",
            "howto",
        ]),
    };
    let words = all
        .into_iter()
        .filter(|w| intent == Intent::Name || !STOP_WORDS.contains(&w.as_str()))
        .collect();
    Analysis {
        intent,
        identifiers,
        words,
        mentions,
    }
}

/// A piece without the punctuation around it (quotes, brackets, a call's `()`, a
/// sigil such as `$` or `@`, a sentence's `?` or `,`).
fn trim_piece(piece: &str) -> &str {
    piece.trim_matches(|c: char| !is_word_char(c))
}

/// The segments of an identifier-shaped piece: word characters joined by the
/// separators of [`SEPARATORS`], every segment non-empty; `None` for any other piece.
fn segments(piece: &str) -> Option<Vec<&str>> {
    if piece.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let mut rest = piece;
    loop {
        let end = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
        if rest.is_empty() {
            return Some(out);
        }
        let sep = SEPARATORS.iter().find(|s| rest.starts_with(**s))?;
        rest = &rest[sep.len()..];
    }
}

/// Whether a piece inside a sentence is an identifier: qualified (`a.b`), with an
/// inner `_`, with a lower-case letter or digit before an upper-case one (`parseUrl`),
/// or, past the first piece, with any upper-case letter (`Router`, `JSON`).
fn looks_like_identifier(piece: &str, segments: &[&str], not_first: bool) -> bool {
    let inner_underscore = piece.trim_matches('_').contains('_');
    let camel = piece
        .as_bytes()
        .windows(2)
        .any(|w| (w[0].is_ascii_lowercase() || w[0].is_ascii_digit()) && w[1].is_ascii_uppercase());
    segments.len() > 1
        || inner_underscore
        || camel
        || not_first && piece.chars().any(char::is_uppercase)
}

/// The identifier of a piece's segments: its last segment is the name, the one before
/// it the qualifier.
fn identifier(segments: &[&str]) -> Option<Identifier> {
    let (name, before) = segments.split_last()?;
    let key: String = name.chars().flat_map(char::to_lowercase).collect();
    if key.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let qualifier = before
        .last()
        .map(|q| q.chars().flat_map(char::to_lowercase).collect());
    Some(Identifier {
        name: (*name).to_owned(),
        key,
        qualifier,
        words: words(name),
    })
}

/// The words of the query ([`words`]), in order, each once.
fn query_words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(query) {
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(name: &str, qualifier: Option<&str>) -> Identifier {
        Identifier {
            name: name.into(),
            key: name.to_lowercase(),
            qualifier: qualifier.map(Into::into),
            words: words(name),
        }
    }

    #[test]
    fn bare_names_are_name_queries() {
        for (q, want) in [
            ("IntoResponse", ident("IntoResponse", None)),
            ("uv_loop_init", ident("uv_loop_init", None)),
            ("Router::route", ident("route", Some("router"))),
            ("`Client.send()`", ident("send", Some("client"))),
            ("Foo\\Bar::baz", ident("baz", Some("bar"))),
            ("Rack::Request#params", ident("params", Some("request"))),
            ("$logger", ident("logger", None)),
            ("render", ident("render", None)),
        ] {
            let a = analyze(q);
            assert_eq!(a.intent, Intent::Name, "{q}");
            assert_eq!(a.identifiers, [want], "{q}");
        }
    }

    #[test]
    fn sentences_with_and_without_identifiers() {
        let a = analyze("where is parse_headers called");
        assert_eq!(a.intent, Intent::Mixed);
        assert_eq!(a.identifiers, [ident("parse_headers", None)]);
        assert_eq!(a.words, ["parse", "headers", "called"]);
        let a = analyze("How does the Router dispatch a request to its handler?");
        assert_eq!(a.intent, Intent::Mixed);
        assert_eq!(a.identifiers, [ident("Router", None)]);
        let a = analyze("retry a request with exponential backoff");
        assert_eq!(a.intent, Intent::Description);
        assert!(a.identifiers.is_empty());
        assert_eq!(a.words, ["retry", "request", "exponential", "backoff"]);
        let a = analyze("call parse() first");
        assert_eq!(a.identifiers, [ident("parse", None)]);
        assert_eq!(analyze("").intent, Intent::Description);
        assert_eq!(analyze("  ?? ").intent, Intent::Description);
        assert_eq!(analyze("a/b/c.rs").intent, Intent::Description);
    }

    #[test]
    fn a_question_in_words_is_a_description() {
        for q in [
            "how does the router pick a route",
            "Why does the build fail?",
            "when the list is empty, return none",
        ] {
            assert_eq!(analyze(q).intent, Intent::Description, "{q}");
        }
        let a = analyze("when Router::route runs");
        assert_eq!(a.intent, Intent::Mixed, "an identifier makes it mixed");
        assert_eq!(analyze("how do routes match").words, ["routes", "match"]);
    }

    #[test]
    fn words_and_mentions() {
        let a = analyze("IntoResponse");
        assert_eq!(a.words, ["into", "response"], "a name keeps every part");
        let a = analyze("where are the router tests");
        assert!(a.mentions.test && !a.mentions.example && !a.mentions.docs);
        assert_eq!(a.words, ["router", "tests"]);
        assert!(analyze("example of a middleware").mentions.example);
        assert!(analyze("docs for routing").mentions.docs);
    }
}
