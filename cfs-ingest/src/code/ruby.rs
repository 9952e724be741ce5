//! Ruby heredoc words the grammar's scanner cannot save (spec section 18).
//!
//! The scanner saves each open heredoc's word length in one byte: a word of
//! [`HEREDOC_WORD_MAX`] characters or more comes back shorter than it was saved, and the
//! scanner aborts the process. Real code names its heredocs with a few letters, but a
//! `<<` followed by a quote also occurs inside strings and comments (`"must respond to
//! #<<"`), where the scanner never starts a heredoc: such a file still parses.

use crate::detect::Language;
use tree_sitter::Node;

/// Characters of a heredoc's word from which the scanner cannot save it.
pub(super) const HEREDOC_WORD_MAX: usize = 256;

/// The kinds of the tree's leaves whose text the scanner reads as a literal's content,
/// never as the start of a heredoc.
const LITERAL_CONTENT: [&str; 3] = ["string_content", "heredoc_content", "comment"];

/// The byte offsets of each `<<` of `text` (overlapping ones too: the scanner may start a
/// heredoc at either `<` of `<<<`) after which, past an optional `-` or `~`, a quote is
/// followed by [`HEREDOC_WORD_MAX`] characters or more before that quote comes again (or
/// the text ends), or as many letters, digits and `_`: a heredoc word the scanner could
/// not save.
pub(super) fn long_heredoc_words(text: &str) -> Vec<usize> {
    heredoc_words(text)
        .filter(|&(_, word)| word >= HEREDOC_WORD_MAX)
        .map(|(at, _)| at)
        .collect()
}

/// Each `<<` of `text` (overlapping ones too) with the characters of the heredoc word
/// that would follow it ([`word_run`]).
fn heredoc_words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    text.match_indices('<')
        .map(|(at, _)| at)
        .filter(|&at| text[at + 1..].starts_with('<'))
        .map(|at| (at, word_run(&text[at + 2..])))
}

/// The characters of the heredoc word that `rest` (the text after a `<<`) would begin,
/// counted up to [`HEREDOC_WORD_MAX`].
fn word_run(rest: &str) -> usize {
    let rest = rest.strip_prefix(['-', '~']).unwrap_or(rest);
    match rest.chars().next() {
        Some(q @ ('\'' | '"' | '`')) => rest[1..]
            .chars()
            .take_while(|&c| c != q)
            .take(HEREDOC_WORD_MAX)
            .count(),
        _ => rest
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .take(HEREDOC_WORD_MAX)
            .count(),
    }
}

/// The bytes tree-sitter gives a scanner to save its state.
const STATE_BYTES: usize = 1024;

/// The open literals the scanner saves at most (it saves none past them).
const MAX_SAVED_LITERALS: usize = 204;

/// True when the state the scanner saves could reach the bytes where its bound is 2
/// short: it checks a heredoc against 1,024 before writing 2 bytes more than it counts.
/// The state is 2 bytes, 5 for each open literal and, for each open heredoc, 4 and its
/// word. Bounded from the text: a literal opens inside another only in an
/// interpolation, so at most one more than the `#{` in the text are open (and the
/// scanner saves at most [`MAX_SAVED_LITERALS`]); the open heredocs are at most every
/// `<<` followed by a word (counted as [`long_heredoc_words`] counts it, at most
/// [`HEREDOC_WORD_MAX`] characters). A last heredoc ends past 1,024 bytes only where
/// the bytes before it and its word come to 1,021. Real files stay far below: the most
/// among the code suite's 426 Ruby files is 542 (rack's `lint.rb`, by a long run after
/// a `<<` in a string), the next 344.
pub(super) fn saved_state_may_overflow(text: &str) -> bool {
    let literals = text.matches("#{").count().saturating_add(1);
    let heredocs: usize = heredoc_words(text)
        .filter(|&(_, word)| word > 0)
        .map(|(_, word)| 4 + word)
        .sum();
    heredocs > 0 && 2 + 5 * literals.min(MAX_SAVED_LITERALS) + heredocs >= STATE_BYTES - 3
}

/// True when a parse of `text` cannot abort in the scanner: it holds no
/// [`long_heredoc_words`], or each of them lies inside a literal's content. To tell,
/// `text` is parsed once (by `parse`) with the second `<` of each such `<<` made a
/// space, which leaves no long word. Where that tree has no error and the first `<` of
/// every one lies in a string's, heredoc's or comment's content, the original text
/// reads the same up to there and on to the literal's end, so its scanner reads those
/// `<<` as content too; not so in a literal opened by `<` (`%q<`, `%w<`), where each
/// `<` nests, so one inside such a literal does not count.
pub(super) fn heredocs_parse_safely(
    text: &str,
    parse: impl FnOnce(&str, Language) -> Option<tree_sitter::Tree>,
) -> bool {
    let starts = long_heredoc_words(text);
    if starts.is_empty() {
        return true;
    }
    let mut variant = text.to_owned();
    for &at in &starts {
        variant.replace_range(at + 1..at + 2, " ");
    }
    if !long_heredoc_words(&variant).is_empty() {
        return false;
    }
    let Some(tree) = parse(&variant, Language::Ruby) else {
        return false;
    };
    let root = tree.root_node();
    !root.has_error()
        && starts.iter().all(|&at| {
            root.descendant_for_byte_range(at, at + 1)
                .is_some_and(|leaf| in_literal(leaf, &variant))
        })
}

/// True when `leaf` is a literal's content and no literal around it is opened by `<`.
fn in_literal(leaf: tree_sitter::Node<'_>, text: &str) -> bool {
    let angle = |node: tree_sitter::Node<'_>| {
        let rest = text[node.start_byte()..].strip_prefix('%');
        rest.map(|r| r.trim_start_matches(|c: char| c.is_ascii_alphabetic()))
            .is_some_and(|r| r.starts_with('<'))
    };
    let mut node = Some(leaf);
    LITERAL_CONTENT.contains(&leaf.kind())
        && std::iter::from_fn(|| {
            let n = node?;
            node = n.parent();
            Some(n)
        })
        .all(|n| !angle(n))
}

/// Whether a conditional or a `begin` holds a class, module or method definition in a
/// branch (`if defined?(X)` then `def f ... end`, or a test class in `begin ... rescue
/// LoadError`): such a node is read through at its level, so that what it defines is a
/// symbol of the level.
pub(super) fn holds_definitions(node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .any(|child| match child.kind() {
            "class" | "module" | "method" | "singleton_method" => true,
            "then" | "else" | "elsif" => holds_definitions(child),
            _ => false,
        })
}
