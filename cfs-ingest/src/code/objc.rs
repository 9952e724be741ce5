//! Objective-C: its classes, categories, protocols, methods and properties, the C
//! beneath them (spec section 18), and the macros every Apple header uses that the
//! grammar cannot read, blanked before the parse.

use cfs_core::SymbolKind;
use tree_sitter::Node;

use super::{Classified, c_declarator, c_symbol, child_of_kind, text_of};

/// `src` as the grammar can read it, byte for byte as long, every name where it was:
/// `NS_ASSUME_NONNULL_BEGIN` and `_END` blanked, and `typedef NS_ENUM(T, Name)` (also
/// `NS_OPTIONS`, `NS_CLOSED_ENUM`, `NS_ERROR_ENUM`) turned into `enum` and spaces up to
/// `Name`. `None` when there is nothing to rewrite.
pub(super) fn readable(src: &str) -> Option<String> {
    if !src.contains("NS_") {
        return None;
    }
    let mut out = src.as_bytes().to_vec();
    let mut changed = false;
    for macro_name in ["NS_ASSUME_NONNULL_BEGIN", "NS_ASSUME_NONNULL_END"] {
        for (at, _) in src.match_indices(macro_name) {
            out[at..at + macro_name.len()].fill(b' ');
            changed = true;
        }
    }
    for (at, _) in src.match_indices("typedef") {
        if let Some((name_start, end)) = enum_macro(src, at) {
            out[at..end].fill(b' ');
            out[at..at + 4].copy_from_slice(b"enum");
            out[name_start..end - 1].copy_from_slice(&src.as_bytes()[name_start..end - 1]);
            changed = true;
        }
    }
    // Only ASCII bytes were written over ASCII bytes: still UTF-8.
    changed.then(|| String::from_utf8(out).unwrap_or_else(|_| src.to_owned()))
}

/// For `typedef NS_ENUM(T, Name)` at `at`: where `Name` starts and one past the `)`.
fn enum_macro(src: &str, at: usize) -> Option<(usize, usize)> {
    let rest = src.get(at + "typedef".len()..)?;
    let after = rest.trim_start();
    let macro_len = ["NS_ENUM", "NS_OPTIONS", "NS_CLOSED_ENUM", "NS_ERROR_ENUM"]
        .into_iter()
        .find(|m| after.starts_with(m) && !is_word(after[m.len()..].chars().next()))?
        .len();
    let open = after[macro_len..].trim_start();
    let args = open.strip_prefix('(')?;
    let close = args.find(')')?;
    let (_, name) = args[..close].rsplit_once(',')?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| is_word(Some(c))) {
        return None;
    }
    let args_start = src.len() - args.len();
    let name_start = args_start + args[..close].rfind(name)?;
    Some((name_start, args_start + close + 1))
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An Objective-C declaration: `@interface` (a class, or with a category or as an
/// extension `()` an impl of the class it extends), `@implementation` (an impl), and
/// `@protocol` (an interface), containers of their own members; methods named by their
/// selectors (`setValue:forKey:`); properties; and C's declarations as in C.
pub(super) fn objc_symbol<'t>(
    node: Node<'t>,
    src: &str,
    function: SymbolKind,
) -> Option<Classified<'t>> {
    let name = || first_identifier(node, src);
    match node.kind() {
        "class_interface" => {
            let extension =
                node.child_by_field_name("category").is_some() || is_extension(node, src);
            let kind = match extension {
                true => SymbolKind::Impl,
                false => SymbolKind::Class,
            };
            Some((kind, name()?, Some(node)))
        }
        "class_implementation" => Some((SymbolKind::Impl, name()?, Some(node))),
        "protocol_declaration" => Some((SymbolKind::Interface, name()?, Some(node))),
        "method_declaration" | "method_definition" => {
            Some((SymbolKind::Method, selector(node, src)?, None))
        }
        "property_declaration" => Some((SymbolKind::Var, property_name(node, src)?, None)),
        _ => c_symbol(node, src, function, false),
    }
}

/// The name of an `@interface`, `@implementation` or `@protocol`: what judges it when
/// its tree holds an error (a member with a macro the grammar cannot read is judged on
/// its own).
pub(super) fn container_name(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "class_interface" | "class_implementation" | "protocol_declaration" => {
            direct_identifier(node)
        }
        _ => None,
    }
}

/// True for a class extension, `@interface Name ()`: parentheses right after the name.
fn is_extension(node: Node<'_>, src: &str) -> bool {
    let Some(name) = direct_identifier(node) else {
        return false;
    };
    let after = src.get(name.end_byte()..node.end_byte()).unwrap_or("");
    after.trim_start().starts_with("()")
}

fn direct_identifier(node: Node<'_>) -> Option<Node<'_>> {
    child_of_kind(node, &["identifier"])
}

fn first_identifier(node: Node<'_>, src: &str) -> Option<String> {
    direct_identifier(node).map(|n| text_of(n, src).to_owned())
}

/// A method's selector: each keyword with its `:` (`setValue:forKey:`), or its one
/// word when it takes no argument. A word after the last argument is a macro
/// (`NS_DESIGNATED_INITIALIZER`), not part of the selector.
fn selector(node: Node<'_>, src: &str) -> Option<String> {
    let mut first = None;
    let mut pending: Option<&str> = None;
    let mut parts = String::new();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "identifier" => {
                let word = text_of(child, src);
                first.get_or_insert(word);
                pending = Some(word);
            }
            "method_parameter" => {
                parts.push_str(pending.take().unwrap_or(""));
                parts.push(':');
            }
            _ => {}
        }
    }
    match parts.is_empty() {
        true => first.map(str::to_owned),
        false => Some(parts),
    }
}

/// A property's name: what its first declarator declares, as a C declarator does
/// (`name` in `@property (copy) NSString *name;`, `handler` in `@property (copy) void
/// (^handler)(int code);`).
fn property_name(node: Node<'_>, src: &str) -> Option<String> {
    let declaration = child_of_kind(node, &["struct_declaration"])?;
    let declarator = child_of_kind(declaration, &["struct_declarator"])?;
    let (name, _) = c_declarator(declarator)?;
    Some(text_of(name, src).to_owned())
}
