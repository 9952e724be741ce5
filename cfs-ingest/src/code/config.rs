//! The structural units of configuration and style files: YAML keys, TOML tables and
//! keys, HCL blocks and attributes, CSS rules (spec section 18).

use cfs_core::SymbolKind;
use tree_sitter::Node;

use super::{
    Attached, Classified, child_of_kind, directly_above, last_named_child, strip_pair, text_of,
};

/// The longest run of indentation and block indicators (spaces, tabs, `-`, `?`, `:`)
/// at a row's start that a YAML file may have and be parsed. The grammar's scanner
/// keeps an entry for every open block, each at a greater indentation than the one
/// holding it, save a sequence right under its key; past about 250 entries it overruns
/// the 1,024 bytes tree-sitter gives it to save its state (and aborts the process).
const YAML_MAX_INDENT: usize = 64;

/// True when `text` is YAML indented deep enough to overrun the grammar's scanner:
/// such a file is chunked as text. Rows are the scanner's: each LF or CR ends one, and
/// a byte-order mark where a row begins is passed over.
pub(super) fn yaml_too_deep(text: &str) -> bool {
    text.split(['\n', '\r']).any(|row| {
        let indent = row
            .trim_start_matches('\u{FEFF}')
            .bytes()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'-' | b'?' | b':'))
            .count();
        indent >= YAML_MAX_INDENT
    })
}

/// A YAML mapping pair: a section whose members are its value's pairs when that value
/// is a block mapping, else a key; named by its key without quotes.
pub(super) fn yaml_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    if node.kind() != "block_mapping_pair" {
        return None;
    }
    let name = unquote(first_line(text_of(node.child_by_field_name("key")?, src)));
    if name.is_empty() {
        return None;
    }
    let mapping = node
        .child_by_field_name("value")
        .filter(|v| v.kind() == "block_node")
        .and_then(|v| child_of_kind(v, &["block_mapping"]));
    Some(match mapping {
        Some(members) => (SymbolKind::Section, name.to_owned(), Some(members)),
        None => (SymbolKind::Key, name.to_owned(), None),
    })
}

/// A TOML table or array-of-tables element (a section whose members are its pairs) or
/// a pair (a key), named by the last part of its key.
pub(super) fn toml_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let (kind, members) = match node.kind() {
        "table" | "table_array_element" => (SymbolKind::Section, Some(node)),
        "pair" => (SymbolKind::Key, None),
        _ => return None,
    };
    let name = toml_key_parts(node, src).pop()?;
    Some((kind, name, members))
}

/// The comments a TOML table ends with that sit directly above the next table's header
/// (the grammar makes them the table's last children): the table's end without them,
/// and their start, end and texts, to attach to the next table.
pub(super) fn toml_trailing_comments(table: Node<'_>, src: &str) -> Option<(usize, Attached)> {
    let is_table = |n: Node<'_>| matches!(n.kind(), "table" | "table_array_element");
    let next = table.next_named_sibling().filter(|n| is_table(*n))?;
    if !is_table(table) {
        return None;
    }
    let mut first = None;
    let mut above = next.start_byte();
    let last = last_named_child(table)?;
    let mut child = Some(last);
    while let Some(comment) = child.filter(|c| c.kind() == "comment") {
        if !directly_above(src, comment.end_byte(), above) {
            break;
        }
        first = Some(comment);
        above = comment.start_byte();
        child = comment.prev_named_sibling();
    }
    let first = first?;
    let end = first.prev_sibling()?.end_byte();
    let texts = std::iter::successors(Some(first), |c| c.next_named_sibling())
        .map(|c| text_of(c, src).to_owned())
        .collect();
    Some((end, (first.start_byte(), last.end_byte(), texts)))
}

/// The parts of a TOML table's or pair's dotted key before the last, joined with `.`
/// (`dependencies` for `[dependencies.serde]`), when there are any.
pub(super) fn toml_scope(node: Node<'_>, src: &str) -> Option<String> {
    let mut parts = toml_key_parts(node, src);
    parts.pop();
    (!parts.is_empty()).then(|| parts.join("."))
}

/// The parts of the key of a TOML table or pair, quotes removed.
fn toml_key_parts(node: Node<'_>, src: &str) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(key) = child_of_kind(node, &["bare_key", "quoted_key", "dotted_key"]) {
        key_parts(key, src, &mut parts);
    }
    parts
}

fn key_parts(key: Node<'_>, src: &str, out: &mut Vec<String>) {
    match key.kind() {
        "dotted_key" => {
            let mut cursor = key.walk();
            for part in key.named_children(&mut cursor) {
                key_parts(part, src, out);
            }
        }
        _ => out.push(unquote(text_of(key, src)).to_owned()),
    }
}

/// An HCL block (a section whose members are its body's) or attribute (a key). A block
/// is named by its last label (`logs` in `resource "aws_s3_bucket" "logs"`), or by its
/// type when it has none (`locals`).
pub(super) fn hcl_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    match node.kind() {
        "block" => {
            let mut words = hcl_block_words(node, src);
            let name = words.pop()?;
            Some((SymbolKind::Section, name, child_of_kind(node, &["body"])))
        }
        "attribute" => {
            let name = text_of(child_of_kind(node, &["identifier"])?, src);
            Some((SymbolKind::Key, name.to_owned(), None))
        }
        _ => None,
    }
}

/// The word before an HCL block's name (`aws_s3_bucket` in `resource "aws_s3_bucket"
/// "logs"`, `variable` in `variable "region"`), when it has a label.
pub(super) fn hcl_scope(node: Node<'_>, src: &str) -> Option<String> {
    if node.kind() != "block" {
        return None;
    }
    let mut words = hcl_block_words(node, src);
    words.pop();
    words.pop()
}

/// An HCL block's type and labels in order, string labels without quotes.
fn hcl_block_words(node: Node<'_>, src: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "identifier" => words.push(text_of(child, src).to_owned()),
            "string_lit" => words.push(unquote(text_of(child, src)).to_owned()),
            _ => break,
        }
    }
    words
}

/// A CSS rule set, named by its selectors; an at-rule with a block (`@media`,
/// `@supports`, `@font-face`, ...) named by its prelude, its block's rules its members;
/// `@keyframes`, named by the animation. White space runs in names are one space.
pub(super) fn css_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let block = || child_of_kind(node, &["block"]);
    let name = match node.kind() {
        "rule_set" => text_of(child_of_kind(node, &["selectors"])?, src),
        "keyframes_statement" => text_of(child_of_kind(node, &["keyframes_name"])?, src),
        "media_statement" | "supports_statement" | "scope_statement" | "at_rule" => {
            let end = block().map_or(node.end_byte(), |b| b.start_byte());
            src.get(node.start_byte()..end).unwrap_or("")
        }
        _ => return None,
    };
    let name = collapse_spaces(name);
    if name.is_empty() {
        return None;
    }
    let members = match node.kind() {
        "keyframes_statement" => None,
        _ => block(),
    };
    Some((SymbolKind::Rule, name, members))
}

/// True for a CSS comment (`/* */`, or `//` where a preprocessor allows it).
pub(super) fn is_css_comment(kind: &str) -> bool {
    matches!(kind, "comment" | "js_comment")
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

/// `text` trimmed, without one pair of matching quotes around it.
fn unquote(text: &str) -> &str {
    strip_pair(text.trim(), &[('"', '"'), ('\'', '\'')])
}

/// `text` trimmed, each run of white space in it one space.
fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
