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
        "function_definition" => {
            Some((SymbolKind::Function, callee(signature(node)?, src)?.1, None))
        }
        "macro_definition" => Some((SymbolKind::Macro, callee(signature(node)?, src)?.1, None)),
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
    let call = match node.kind() {
        "function_definition" | "macro_definition" => signature(node)?,
        "assignment" => node.named_child(0).and_then(unwrap_call)?,
        _ => return None,
    };
    callee(call, src)?.0
}

/// The call a long-form signature makes, through `where` clauses and return types.
fn signature(node: Node<'_>) -> Option<Node<'_>> {
    let signature = child_of_kind(node, &["signature"])?;
    unwrap_call(signature.named_child(0)?)
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
    let target = call.named_child(0)?;
    match target.kind() {
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
