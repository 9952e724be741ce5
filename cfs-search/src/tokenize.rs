//! Code-aware tokenization for the text index (docs/spec.md, "Search").
//!
//! A *compound* is a maximal run of word characters ([`cfs_ingest::is_word_char`]),
//! where single `-` between two word characters also joins (`zk-snark`). Each compound
//! gives its lower-cased self and its parts: split at `-`, then as identifiers
//! (`snake_case`, `camelCase`, `HTTPServer`, letter/digit boundaries), and runs of
//! non-ASCII text split into Unicode words (UAX #29, so ideographs stand alone). A
//! token is emitted once per place it occurs; tokens longer than [`MAX_TOKEN_BYTES`]
//! are dropped. Queries are tokenized the same way, so no query is ever a syntax error.

use cfs_ingest::{identifier_part_ranges, is_word_char};
use unicode_segmentation::UnicodeSegmentation;

/// Longest token kept, in bytes.
pub const MAX_TOKEN_BYTES: usize = 64;

/// Calls `f` with every token of `text`, in text order.
pub fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let mut emit = |token: &str| {
        if !token.is_empty() && token.len() <= MAX_TOKEN_BYTES {
            f(token);
        }
    };
    let mut ranges = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let mut lower = String::new();
    for compound in compounds(text) {
        lower.clear();
        lower.extend(compound.chars().flat_map(char::to_lowercase));
        emit(&lower);
        compound_parts(compound, &mut ranges, &mut parts);
        // A compound of one part is that part, emitted already unless it differs.
        if parts.len() > 1 || parts.first().is_some_and(|p| *p != lower) {
            for part in &parts {
                emit(part);
            }
        }
    }
}

/// The parts of `compound` into `parts`: split at `-`, then an all-ASCII piece into
/// identifier parts, ASCII-lower-cased, any other into Unicode words split at `_`.
fn compound_parts(compound: &str, ranges: &mut Vec<(usize, usize)>, parts: &mut Vec<String>) {
    parts.clear();
    for piece in compound.split('-') {
        if piece.is_ascii() {
            identifier_part_ranges(piece, ranges);
            parts.extend(
                ranges
                    .iter()
                    .map(|&(a, b)| piece[a..b].to_ascii_lowercase()),
            );
        } else {
            for word in piece.unicode_words() {
                parts.extend(
                    word.split('_')
                        .filter(|p| !p.is_empty())
                        .map(|p| p.chars().flat_map(char::to_lowercase).collect()),
                );
            }
        }
    }
}

/// The words of `text`: the parts of its compounds (a compound's tokens without the
/// compound itself, unless it is its only part), in order, at most
/// [`MAX_TOKEN_BYTES`] each.
pub fn words(text: &str) -> Vec<String> {
    let mut ranges = Vec::new();
    let mut parts = Vec::new();
    let mut out = Vec::new();
    for compound in compounds(text) {
        compound_parts(compound, &mut ranges, &mut parts);
        out.extend(
            parts
                .drain(..)
                .filter(|p| !p.is_empty() && p.len() <= MAX_TOKEN_BYTES),
        );
    }
    out
}

/// The other forms of a query word that text search also looks up, at half weight: a
/// plural's singular and a base word's plural, an `-ing` or `-ed` form's base and the
/// base's `-ing` and `-ed` forms (`retries` -> `retry`, `matching` -> `match`,
/// `match`, `compile` -> `compiles`, `compiling`, `compiled`). Only for words of four
/// or more ASCII letters; each variant of three or more letters, other than the word.
pub fn variants(word: &str) -> Vec<String> {
    let n = word.len();
    if n < 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Vec::new();
    }
    let cut = |k: usize| word[..n - k].to_owned();
    let mut out: Vec<String> = Vec::new();
    if let Some(stem) = word.strip_suffix("ies").filter(|s| s.len() >= 2) {
        out.push(format!("{stem}y"));
    } else if word.ends_with("ing") && n >= 6 {
        out.extend([cut(3), format!("{}e", cut(3))]);
    } else if (word.ends_with("ed") || word.ends_with("es")) && n >= 5 {
        out.extend([cut(2), cut(1)]);
    } else if word.ends_with('s') && !word.ends_with("ss") {
        out.push(cut(1));
    } else if let Some(stem) = word.strip_suffix('e') {
        out.extend([format!("{word}s"), format!("{stem}ing"), format!("{word}d")]);
    } else if let Some(stem) = word.strip_suffix('y') {
        out.extend([
            format!("{stem}ies"),
            format!("{word}ing"),
            format!("{word}s"),
        ]);
    } else {
        out.extend([
            format!("{word}s"),
            format!("{word}es"),
            format!("{word}ing"),
            format!("{word}ed"),
        ]);
    }
    out.retain(|v| v.len() >= 3 && v != word);
    out.dedup();
    out
}

/// The tokens of `text`, in order.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_owned()));
    out
}

/// The compounds of `text`: runs of word characters joined by single `-`.
fn compounds(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(is_word_char)?;
        let tail = &rest[start..];
        let mut end = 0;
        let mut chars = tail.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if is_word_char(c) {
                end = i + c.len_utf8();
            } else if c == '-' && chars.peek().is_some_and(|&(_, n)| is_word_char(n)) && end == i {
                continue;
            } else {
                break;
            }
        }
        let compound = &tail[..end];
        rest = &tail[end..];
        Some(compound)
    })
}

#[cfg(test)]
mod tests {
    use super::tokens;

    #[test]
    fn splits_code_identifiers_and_keeps_the_compound() {
        assert_eq!(
            tokens("parseHTTPResponse2"),
            ["parsehttpresponse2", "parse", "http", "response", "2"]
        );
        assert_eq!(tokens("snake_case"), ["snake_case", "snake", "case"]);
        assert_eq!(tokens("zk-snark"), ["zk-snark", "zk", "snark"]);
        assert_eq!(tokens("word"), ["word"]);
        assert_eq!(tokens("Word"), ["word"]);
    }

    #[test]
    fn operators_and_punctuation_are_not_errors() {
        assert_eq!(tokens("C++"), ["c"]);
        assert_eq!(tokens("what?"), ["what"]);
        assert_eq!(tokens("\"quoted\" AND -x"), ["quoted", "and", "x"]);
        assert!(tokens("--- ?? ** \"\"").is_empty());
        assert!(tokens("").is_empty());
        assert_eq!(tokens("a--b"), ["a", "b"]);
        assert_eq!(tokens("-lead trail-"), ["lead", "trail"]);
    }

    #[test]
    fn unicode_words_and_case() {
        assert_eq!(tokens("Grüße aus Köln"), ["grüße", "aus", "köln"]);
        assert_eq!(tokens("日本語"), ["日本語", "日", "本", "語"]);
        assert_eq!(tokens("ÉCOLE"), ["école"]);
    }

    #[test]
    fn variants_of_query_words() {
        use super::variants;
        assert_eq!(variants("retries"), ["retry"]);
        assert_eq!(variants("matching"), ["match", "matche"]);
        assert_eq!(variants("compiled"), ["compil", "compile"]);
        assert_eq!(variants("headers"), ["header"]);
        assert_eq!(variants("boxes"), ["box", "boxe"]);
        assert_eq!(variants("compile"), ["compiles", "compiling", "compiled"]);
        assert_eq!(variants("retry"), ["retries", "retrying", "retrys"]);
        assert_eq!(variants("route"), ["routes", "routing", "routed"]);
        assert_eq!(
            variants("match"),
            ["matchs", "matches", "matching", "matched"]
        );
        assert_eq!(
            variants("class"),
            ["classs", "classes", "classing", "classed"]
        );
        assert!(variants("api").is_empty() && variants("Parse").is_empty());
        assert!(variants("naïve").is_empty() && variants("http2").is_empty());
    }

    #[test]
    fn long_tokens_are_dropped_but_their_parts_kept() {
        let long = format!("{}_tail", "a".repeat(80));
        assert_eq!(tokens(&long), ["tail"]);
    }
}
