//! Julia: functions (long and short forms), macros, structs, abstract and primitive
//! types, constants and modules (spec section 18).

use cfs_core::SymbolKind;
use tree_sitter::Node;

use super::{Classified, child_of_kind, last_named_child, text_of};

/// A Julia definition. A function or macro is named by what its signature calls
/// (`show` in `Base.show(io, x)`, parent `Base`; the type in a callable object's
/// `(a::Dense)(x)`); a short form `f(x) = ...` is a function too.
pub(super) fn julia_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    match node.kind() {
        "function_definition" => Some((SymbolKind::Function, defined(node, src)?.1, None)),
        "macro_definition" => Some((SymbolKind::Macro, defined(node, src)?.1, None)),
        "assignment" => {
            let call = node.named_child(0).and_then(unwrap_call)?;
            Some((SymbolKind::Function, callee(call, src)?.1, None))
        }
        "struct_definition" => Some((SymbolKind::Struct, type_name(node, src)?, None)),
        "abstract_definition" | "primitive_definition" => {
            Some((SymbolKind::Type, type_name(node, src)?, None))
        }
        "const_statement" => {
            let assignment = child_of_kind(node, &["assignment"])?;
            let target = assignment.named_child(0)?;
            let target = match target.kind() {
                "typed_expression" => target.named_child(0)?,
                _ => target,
            };
            (target.kind() == "identifier")
                .then(|| (SymbolKind::Const, text_of(target, src).to_owned(), None))
        }
        "module_definition" => {
            let name = text_of(node.child_by_field_name("name")?, src).to_owned();
            Some((SymbolKind::Module, name, Some(node)))
        }
        _ => None,
    }
}

/// The definition a macro call wraps (`@inline function f(x) ... end`), if any.
pub(super) fn macro_wrapped(node: Node<'_>) -> Option<Node<'_>> {
    let arguments = child_of_kind(node, &["macro_argument_list"])?;
    let inner = arguments.named_child(0)?;
    matches!(
        inner.kind(),
        "function_definition"
            | "macro_definition"
            | "struct_definition"
            | "assignment"
            | "const_statement"
            | "abstract_definition"
            | "primitive_definition"
    )
    .then_some(inner)
}

/// The parent of a function defined on another module's name (`Base` for
/// `Base.show(io, x) = ...`).
pub(super) fn julia_scope(node: Node<'_>, src: &str) -> Option<String> {
    match node.kind() {
        "function_definition" | "macro_definition" => defined(node, src)?.0,
        "assignment" => callee(node.named_child(0).and_then(unwrap_call)?, src)?.0,
        _ => None,
    }
}

/// The part of a definition that names it, judged for errors (spec section 18): a
/// function's or macro's `signature`, a type's `type_head`, an assignment's left side.
/// The grammar names no fields, so without this an error anywhere in a body (a
/// keyword symbol in parentheses, an interpolation in a string) cost the definition.
pub(super) fn naming(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "function_definition" | "macro_definition" => child_of_kind(node, &["signature"]),
        "struct_definition" | "abstract_definition" | "primitive_definition" => {
            child_of_kind(node, &["type_head"])
        }
        "assignment" => node.named_child(0),
        _ => None,
    }
}

/// The name a long-form function or macro defines and its qualifier: what its
/// signature calls, or the bare name of a function without methods (`function f end`).
fn defined(node: Node<'_>, src: &str) -> Option<(Option<String>, String)> {
    let first = child_of_kind(node, &["signature"])?.named_child(0)?;
    match unwrap_call(first) {
        Some(call) => callee(call, src),
        None => name_of_target(first, src),
    }
}

/// `node` itself when it is a call, else the call under a `where` clause or a return
/// type (`f(x)::Int where T`).
fn unwrap_call(mut node: Node<'_>) -> Option<Node<'_>> {
    loop {
        match node.kind() {
            "call_expression" => return Some(node),
            "where_expression" | "typed_expression" => node = node.named_child(0)?,
            _ => return None,
        }
    }
}

/// The name a call defines and its qualifier: `f`, `Base.show` (qualifier `Base`), or,
/// for a callable object `(a::Dense)(x)`, the type `Dense`.
fn callee(call: Node<'_>, src: &str) -> Option<(Option<String>, String)> {
    name_of_target(call.named_child(0)?, src)
}

/// What a call's target (or a method-less function's signature) names; a parametrized
/// target (`Base.Matrix{T}(df)`) by what it parametrizes.
fn name_of_target(target: Node<'_>, src: &str) -> Option<(Option<String>, String)> {
    match target.kind() {
        "parametrized_type_expression" => name_of_target(target.named_child(0)?, src),
        "identifier" | "operator" => Some((None, text_of(target, src).to_owned())),
        "field_expression" => {
            let name = last_named_child(target)?;
            let value = target.child_by_field_name("value");
            let qualifier = value.map(|v| text_of(v, src).to_owned());
            Some((qualifier, text_of(name, src).to_owned()))
        }
        "parenthesized_expression" => {
            let inner = target.named_child(0)?;
            let typed = match inner.kind() {
                "typed_expression" => last_named_child(inner)?,
                _ => inner,
            };
            Some((None, head_identifier(typed, src)?))
        }
        _ => None,
    }
}

/// A type definition's name: its `type_head`'s first identifier, through `<:` and
/// type parameters (`Dense` in `Dense{F} <: Layer`).
fn type_name(node: Node<'_>, src: &str) -> Option<String> {
    head_identifier(child_of_kind(node, &["type_head"])?, src)
}

fn head_identifier(mut node: Node<'_>, src: &str) -> Option<String> {
    loop {
        match node.kind() {
            "identifier" => return Some(text_of(node, src).to_owned()),
            "type_head" | "binary_expression" | "parametrized_type_expression" => {
                node = node.named_child(0)?
            }
            _ => return None,
        }
    }
}

/// `src` with the `const` of each struct field declared `const` blanked to spaces
/// (`    const path::String`: a line of blanks, `const`, a name, an optional `::` type
/// and an optional comment, no `=`), byte for byte as long. Julia 1.8's constant
/// fields are unknown to the grammar: a small struct holding one is an error, and in a
/// large one the `const` reads on to the next `=`, past the struct's `end`. `None` when
/// there is none.
pub(super) fn struct_consts_blanked(src: &str) -> Option<String> {
    super::lines_blanked(src, |line| Some((const_field(line)?, "const".len())))
}

/// Where a constant field's `const` starts in its line.
fn const_field(line: &str) -> Option<usize> {
    let code = line.split('#').next().unwrap_or(line);
    let trimmed = code.trim_start_matches([' ', '\t']);
    let at = code.len() - trimmed.len();
    let rest = trimmed.strip_prefix("const")?;
    let declared = rest.trim();
    let name_end = declared
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!'))
        .unwrap_or(declared.len());
    let (name, typed) = declared.split_at(name_end);
    let field = rest.starts_with([' ', '\t'])
        && !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && (typed.is_empty() || typed.starts_with("::"))
        && !code.contains('=');
    field.then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_fields_lose_their_const_and_nothing_else() {
        let src = "mutable struct E\n    const path::String # where\n    const n\n    info::Int\nend\nconst X = 1\nconst Y::Int = 2\n";
        let out = struct_consts_blanked(src).unwrap();
        assert_eq!(out.len(), src.len());
        assert_eq!(
            out,
            "mutable struct E\n          path::String # where\n          n\n    info::Int\nend\nconst X = 1\nconst Y::Int = 2\n"
        );
        assert_eq!(struct_consts_blanked("const X = 1\n"), None);
    }
}
