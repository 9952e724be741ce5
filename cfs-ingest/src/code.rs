//! Symbol-aware code chunking with tree-sitter (Rust, Go, Python, TypeScript, TSX,
//! JavaScript, JSX).
//!
//! One chunk per symbol (function, method, class, interface, type, const, var, impl,
//! trait, module, struct, enum, macro), its doc comments and attributes attached, its
//! parent, signature and doc comment recorded. A container too large for one chunk
//! (a class, an impl, a trait, a module) is split into its header and its members. A
//! symbol still larger than a window is split by a sliding window (seed 003, erratum
//! E12), the windows linked by `next_window` edges. The text between symbols (imports,
//! top-level statements) is chunked too, so every byte is covered. A file whose parse
//! has errors is chunked as text instead: unparseable code never fails a file.
//! `docs/spec.md` ("Code chunking") is the normative description.

use cfs_core::{Symbol, SymbolKind, Window};
use tree_sitter::{Node, Parser};

use crate::detect::Language;
use crate::error::IngestError;
use crate::text::{ChunkParams, chunk_text};

/// Largest symbol chunk, and the size of each sliding window, in bytes.
pub const WINDOW_BYTES: usize = 7000;
/// Bytes shared by consecutive windows of one symbol.
pub const WINDOW_OVERLAP_BYTES: usize = 500;
/// Gaps between symbols up to this size, or of whitespace only, join the chunk before.
pub const SMALL_GAP_BYTES: usize = 64;
/// Deepest container nesting split into members; deeper containers are chunked whole.
const MAX_CONTAINER_DEPTH: usize = 8;
/// Longest signature kept, in bytes.
const MAX_SIGNATURE_BYTES: usize = 1024;

/// The grammar crates, pinned: their versions are part of the parse profile.
pub const GRAMMARS: &str =
    "tree-sitter=0.27 rust=0.24.2 go=0.25.0 python=0.25.0 javascript=0.25.0 typescript=0.23.2";

/// A chunk of a code file: its span and, unless it is text between symbols, its symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeChunk {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// The symbol, or `None` for text between symbols.
    pub symbol: Option<Symbol>,
}

/// A chunked code file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeDoc {
    /// Chunks in text order.
    pub chunks: Vec<CodeChunk>,
    /// `(k, k + 1)` index pairs of consecutive windows of one symbol.
    pub window_links: Vec<(usize, usize)>,
}

/// True for the languages with a tree-sitter grammar here.
pub fn has_grammar(language: Language) -> bool {
    grammar(language).is_some()
}

fn grammar(language: Language) -> Option<tree_sitter::Language> {
    Some(match language {
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Language::JavaScript | Language::Jsx => tree_sitter_javascript::LANGUAGE.into(),
        Language::Other(_) => return None,
    })
}

thread_local! {
    /// This thread's parser, kept from file to file: a new one allocates its stack,
    /// lexer and node pools again. A parse that completes leaves it reset (none here is
    /// cancelled or timed out, which would leave one to resume).
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new(Parser::new());
}

/// The tree of `text` by the grammar of `language`, or `None` without one.
pub(crate) fn parse_tree(text: &str, language: Language) -> Option<tree_sitter::Tree> {
    let grammar = grammar(language)?;
    PARSER.with_borrow_mut(|parser| {
        parser.set_language(&grammar).ok()?;
        parser.parse(text, None)
    })
}

/// A symbol found in the tree, before chunking.
struct Item<'t> {
    /// Start including attached comments, attributes and decorators.
    start: usize,
    /// End of the symbol's node.
    end: usize,
    symbol: Symbol,
    /// The node whose children are members, for containers.
    body: Option<Node<'t>>,
}

fn text_of<'a>(node: Node<'_>, src: &'a str) -> &'a str {
    src.get(node.start_byte()..node.end_byte()).unwrap_or("")
}

fn field_text<'a>(node: Node<'_>, field: &str, src: &'a str) -> Option<&'a str> {
    node.child_by_field_name(field).map(|n| text_of(n, src))
}

fn clip(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The declaration up to its body (or its first line when it has none), trimmed.
fn signature(node: Node<'_>, src: &str) -> String {
    let start = node.start_byte();
    let end = match node.child_by_field_name("body") {
        Some(body) => body.start_byte(),
        None => {
            let text = text_of(node, src);
            start + text.find('\n').unwrap_or(text.len())
        }
    };
    clip(
        src.get(start..end).unwrap_or("").trim_end(),
        MAX_SIGNATURE_BYTES,
    )
}

fn is_comment(language: Language, kind: &str) -> bool {
    match language {
        Language::Rust => matches!(kind, "line_comment" | "block_comment" | "attribute_item"),
        _ => kind == "comment",
    }
}

/// A Python docstring: the first statement of the body when it is a string.
fn python_docstring(node: Node<'_>, src: &str) -> Option<String> {
    let body = node.child_by_field_name("body")?;
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0)?;
    (string.kind() == "string").then(|| text_of(string, src).to_owned())
}

/// Classifies `node` as a symbol of `language`; `parent` is the enclosing container's
/// name and kind. Returns the kind, the name, and the node whose children are members.
fn classify<'t>(
    language: Language,
    node: Node<'t>,
    src: &str,
    parent: Option<(&str, SymbolKind)>,
) -> Option<Classified<'t>> {
    let function = if parent.is_some() {
        SymbolKind::Method
    } else {
        SymbolKind::Function
    };
    match language {
        Language::Rust => rust_symbol(node, src, function),
        Language::Go => go_symbol(node, src),
        Language::Python => python_symbol(node, src, function),
        Language::TypeScript | Language::Tsx | Language::JavaScript | Language::Jsx => {
            script_symbol(node, src)
        }
        Language::Other(_) => None,
    }
}

/// A symbol's kind, name, and the node whose children are its members.
type Classified<'t> = (SymbolKind, String, Option<Node<'t>>);

/// The text of `node`'s field `field`, empty if it has none.
fn name_of(node: Node<'_>, field: &str, src: &str) -> String {
    field_text(node, field, src).unwrap_or("").to_owned()
}

/// A Rust item; `function` is the kind of a function here (a method in a container).
fn rust_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "function_item" | "function_signature_item" => Some((function, name(), None)),
        "struct_item" | "union_item" => Some((SymbolKind::Struct, name(), None)),
        "enum_item" => Some((SymbolKind::Enum, name(), None)),
        "type_item" => Some((SymbolKind::Type, name(), None)),
        "const_item" | "static_item" => Some((SymbolKind::Const, name(), None)),
        "macro_definition" => Some((SymbolKind::Macro, name(), None)),
        "trait_item" => Some((SymbolKind::Trait, name(), body())),
        "mod_item" => Some((SymbolKind::Module, name(), body())),
        "impl_item" => {
            let ty = name_of(node, "type", src);
            let label = match field_text(node, "trait", src) {
                Some(t) => format!("{t} for {ty}"),
                None => ty,
            };
            Some((SymbolKind::Impl, label, body()))
        }
        _ => None,
    }
}

/// A Go declaration (types, constants and variables are named by their first spec).
fn go_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let kind = match node.kind() {
        "function_declaration" => {
            return Some((SymbolKind::Function, name_of(node, "name", src), None));
        }
        "method_declaration" => {
            return Some((SymbolKind::Method, name_of(node, "name", src), None));
        }
        "type_declaration" => {
            let spec = node.named_child(0)?;
            match spec.child_by_field_name("type").map(|t| t.kind()) {
                Some("struct_type") => SymbolKind::Struct,
                Some("interface_type") => SymbolKind::Interface,
                _ => SymbolKind::Type,
            }
        }
        "const_declaration" => SymbolKind::Const,
        "var_declaration" => SymbolKind::Var,
        _ => return None,
    };
    let spec = node.named_child(0)?;
    Some((kind, name_of(spec, "name", src), None))
}

/// A Python function or class.
fn python_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    match node.kind() {
        "function_definition" => Some((function, name_of(node, "name", src), None)),
        "class_definition" => Some((
            SymbolKind::Class,
            name_of(node, "name", src),
            node.child_by_field_name("body"),
        )),
        _ => None,
    }
}

/// A TypeScript or JavaScript declaration.
fn script_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    match node.kind() {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            Some((SymbolKind::Function, name(), None))
        }
        "method_definition" | "method_signature" | "abstract_method_signature" => {
            Some((SymbolKind::Method, name(), None))
        }
        "class_declaration" | "abstract_class_declaration" => {
            Some((SymbolKind::Class, name(), node.child_by_field_name("body")))
        }
        "interface_declaration" => Some((SymbolKind::Interface, name(), None)),
        "type_alias_declaration" => Some((SymbolKind::Type, name(), None)),
        "enum_declaration" => Some((SymbolKind::Enum, name(), None)),
        "internal_module" | "module" => Some((SymbolKind::Module, name(), None)),
        "lexical_declaration" | "variable_declaration" => script_binding(node, src),
        _ => None,
    }
}

/// `const f = () => ...` is a function; other `const`, `let` and `var` bindings are
/// constants and variables, named by their first declarator.
fn script_binding<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let declarator = node.named_child(0)?;
    let value = declarator.child_by_field_name("value").map(|v| v.kind());
    let is_const = text_of(node, src).starts_with("const");
    let kind = match value {
        Some("arrow_function" | "function_expression" | "function") => SymbolKind::Function,
        _ if is_const => SymbolKind::Const,
        _ => SymbolKind::Var,
    };
    Some((kind, name_of(declarator, "name", src), None))
}

/// The receiver type of a Go method, without `*` and type parameters: `(t *List[T])`
/// gives `List`.
fn go_receiver(node: Node<'_>, src: &str) -> Option<String> {
    let receiver = node.child_by_field_name("receiver")?;
    let param = receiver.named_child(0)?;
    let ty = field_text(param, "type", src)?;
    let ty = ty.trim_start_matches('*');
    let ty = ty.split('[').next().unwrap_or(ty).trim();
    Some(clip(ty, MAX_SIGNATURE_BYTES))
}

/// The symbols among the named children of `node`, with attached comments.
fn items<'t>(
    language: Language,
    node: Node<'t>,
    src: &str,
    parent: Option<(&str, SymbolKind)>,
) -> Vec<Item<'t>> {
    let mut out = Vec::new();
    // Start and texts of the comments and attributes directly above the next node.
    let mut attached: Option<(usize, usize, Vec<String>)> = None;
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let adjacent = |end: usize| {
            src.get(end..child.start_byte()).is_some_and(|between| {
                between.matches('\n').count() <= 1 && between.trim().is_empty()
            })
        };
        if is_comment(language, child.kind()) {
            let text = text_of(child, src).to_owned();
            let is_doc = child.kind() != "attribute_item";
            attached = match attached.take() {
                Some((start, end, mut docs)) if adjacent(end) => {
                    if is_doc {
                        docs.push(text);
                    }
                    Some((start, child.end_byte(), docs))
                }
                _ => Some((
                    child.start_byte(),
                    child.end_byte(),
                    if is_doc { vec![text] } else { vec![] },
                )),
            };
            continue;
        }
        // Wrappers whose inner declaration is the symbol: `export ...`, `@decorator def`.
        let inner = match child.kind() {
            "export_statement" => child.child_by_field_name("declaration"),
            "decorated_definition" => child.child_by_field_name("definition"),
            // A TypeScript `namespace` statement.
            "expression_statement" => child
                .named_child(0)
                .filter(|n| matches!(n.kind(), "internal_module" | "module")),
            _ => Some(child),
        };
        let found =
            inner.and_then(|inner| classify(language, inner, src, parent).map(|c| (inner, c)));
        if let Some((inner, (kind, name, body))) = found {
            let receiver = (language == Language::Go && kind == SymbolKind::Method)
                .then(|| go_receiver(inner, src))
                .flatten();
            let (start, mut docs) = match attached.take() {
                Some((start, end, docs)) if adjacent(end) => (start, docs),
                _ => (child.start_byte(), Vec::new()),
            };
            if language == Language::Python
                && let Some(docstring) = python_docstring(inner, src)
            {
                docs.push(docstring);
            }
            let symbol = Symbol {
                kind,
                name: clip(&name, MAX_SIGNATURE_BYTES),
                parent: receiver.or_else(|| parent.map(|(p, _)| clip(p, MAX_SIGNATURE_BYTES))),
                signature: signature(inner, src),
                doc_comment: docs.join("\n"),
                window: None,
            };
            out.push(Item {
                start,
                end: child.end_byte(),
                symbol,
                body,
            });
        } else {
            attached = None;
        }
    }
    out
}

/// Builds the chunks of one level: symbols in `[lo, hi)` and the gaps between them.
struct Emitter<'a> {
    src: &'a str,
    language: Language,
    params: &'a ChunkParams,
    doc: CodeDoc,
}

impl Emitter<'_> {
    fn gap(&mut self, start: usize, end: usize) -> Result<(), IngestError> {
        if start >= end {
            return Ok(());
        }
        let text = &self.src[start..end];
        let small = text.trim().is_empty() || text.len() <= SMALL_GAP_BYTES;
        if small
            && let Some(last) = self.doc.chunks.last_mut()
            && last.end == start
            && end - last.start <= WINDOW_BYTES
        {
            last.end = end;
            return Ok(());
        }
        for span in chunk_text(text, self.params)? {
            self.doc.chunks.push(CodeChunk {
                start: start + span.start,
                end: start + span.end,
                symbol: None,
            });
        }
        Ok(())
    }

    fn level(
        &mut self,
        items: Vec<Item<'_>>,
        lo: usize,
        hi: usize,
        depth: usize,
    ) -> Result<(), IngestError> {
        let mut cursor = lo;
        for item in items {
            self.gap(cursor, item.start)?;
            self.item(item, depth)?;
            cursor = cursor.max(self.doc.chunks.last().map_or(cursor, |c| c.end));
        }
        self.gap(cursor, hi)
    }

    fn item(&mut self, item: Item<'_>, depth: usize) -> Result<(), IngestError> {
        if item.end - item.start <= WINDOW_BYTES {
            self.doc.chunks.push(CodeChunk {
                start: item.start,
                end: item.end,
                symbol: Some(item.symbol),
            });
            return Ok(());
        }
        if depth < MAX_CONTAINER_DEPTH
            && let Some(body) = item.body
        {
            let parent = (item.symbol.name.as_str(), item.symbol.kind);
            let members = items(self.language, body, self.src, Some(parent));
            if let Some(first) = members.first() {
                let header_end = first.start;
                self.windows(item.start, header_end, &item.symbol);
                return self.level(members, header_end, item.end, depth + 1);
            }
        }
        self.windows(item.start, item.end, &item.symbol);
        Ok(())
    }

    /// Windows of at most `WINDOW_BYTES` over `[start, end)`, starts `WINDOW_BYTES -
    /// WINDOW_OVERLAP_BYTES` apart, all on char boundaries; one chunk if it fits.
    fn windows(&mut self, start: usize, end: usize, symbol: &Symbol) {
        let mut bounds = Vec::new();
        let mut s = start;
        loop {
            let e = floor_boundary(self.src, (s + WINDOW_BYTES).min(end));
            bounds.push((s, e));
            if e >= end {
                break;
            }
            let next = floor_boundary(self.src, s + WINDOW_BYTES - WINDOW_OVERLAP_BYTES);
            s = if next > s { next } else { e };
        }
        let count = bounds.len();
        let first = self.doc.chunks.len();
        for (index, (s, e)) in bounds.into_iter().enumerate() {
            let mut symbol = symbol.clone();
            if count > 1 {
                symbol.window = Some(Window {
                    index: index as u32,
                    count: count as u32,
                });
            }
            self.doc.chunks.push(CodeChunk {
                start: s,
                end: e,
                symbol: Some(symbol),
            });
        }
        for k in first..first + count - 1 {
            self.doc.window_links.push((k, k + 1));
        }
    }
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Chunks a code file by symbols. `Ok(None)` when the language has no grammar here or
/// the parse has errors: the caller chunks the file as text instead.
pub fn chunk_code(
    text: &str,
    language: Language,
    params: &ChunkParams,
) -> Result<Option<CodeDoc>, IngestError> {
    params.validate()?;
    let Some(tree) = parse_tree(text, language) else {
        return Ok(None);
    };
    let root = tree.root_node();
    if root.has_error() {
        return Ok(None);
    }
    let top = items(language, root, text, None);
    let mut emitter = Emitter {
        src: text,
        language,
        params,
        doc: CodeDoc::default(),
    };
    emitter.level(top, 0, text.len(), 0)?;
    Ok(Some(emitter.doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str, language: Language) -> CodeDoc {
        chunk_code(text, language, &ChunkParams::default())
            .unwrap()
            .unwrap()
    }

    /// The thread's parser serves one file after another of any language: a file's
    /// tree is the one a fresh thread (a new parser) gives, whatever came before it,
    /// a file that failed to parse as another language included.
    #[test]
    fn a_files_tree_does_not_depend_on_what_its_thread_parsed_before() {
        let rust = "/// Doc.\npub fn one() -> u32 { 1 }\nstruct Two { a: u8 }\n";
        let sources = [
            ("def f(x):\n    return x\n", Language::Python),
            ("fn broken( {{{\n", Language::Rust),
            ("export class A { m(): void {} }\n", Language::TypeScript),
            ("package main\nfunc main() {}\n", Language::Go),
        ];
        let fresh = std::thread::spawn(move || parse_tree(rust, Language::Rust).unwrap())
            .join()
            .unwrap()
            .root_node()
            .to_sexp();
        for (text, language) in sources {
            parse_tree(text, language).unwrap();
            let after = parse_tree(rust, Language::Rust).unwrap();
            assert_eq!(after.root_node().to_sexp(), fresh, "after {language:?}");
        }
    }

    fn names(doc: &CodeDoc) -> Vec<(String, Option<String>, &'static str)> {
        doc.chunks
            .iter()
            .filter_map(|c| c.symbol.as_ref())
            .map(|s| (s.name.clone(), s.parent.clone(), s.kind.name()))
            .collect()
    }

    fn covers(doc: &CodeDoc, text: &str) {
        assert_eq!(doc.chunks.first().map(|c| c.start), Some(0));
        assert_eq!(doc.chunks.last().map(|c| c.end), Some(text.len()));
        for w in doc.chunks.windows(2) {
            assert!(w[1].start <= w[0].end && w[1].end > w[0].end, "{w:?}");
        }
    }

    #[test]
    fn rust_symbols_with_docs() {
        let text = "use std::io;\n\n/// Adds.\n#[inline]\npub fn add(a: u32) -> u32 { a }\n\nstruct S;\n\nimpl S {\n    fn m(&self) {}\n}\n";
        let doc = chunk(text, Language::Rust);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("add".into(), None, "function"),
                ("S".into(), None, "struct"),
                ("S".into(), None, "impl")
            ]
        );
        let add = doc
            .chunks
            .iter()
            .find(|c| c.symbol.as_ref().is_some_and(|s| s.name == "add"))
            .unwrap();
        assert!(text[add.start..add.end].starts_with("/// Adds."));
        let symbol = add.symbol.as_ref().unwrap();
        assert_eq!(symbol.doc_comment, "/// Adds.\n");
        assert_eq!(symbol.signature, "pub fn add(a: u32) -> u32");
    }

    #[test]
    fn large_impl_is_split_into_methods_and_huge_function_into_windows() {
        let body = "        let x = 1;\n".repeat(600);
        let text = format!(
            "impl Big {{\n    fn small(&self) {{}}\n\n    fn huge(&self) {{\n{body}    }}\n}}\n"
        );
        let doc = chunk(&text, Language::Rust);
        covers(&doc, &text);
        let methods: Vec<_> = doc
            .chunks
            .iter()
            .filter_map(|c| c.symbol.as_ref())
            .filter(|s| s.kind == SymbolKind::Method)
            .collect();
        assert!(
            methods
                .iter()
                .any(|s| s.name == "small" && s.parent.as_deref() == Some("Big"))
        );
        let windows: Vec<_> = methods.iter().filter(|s| s.name == "huge").collect();
        assert!(windows.len() >= 2);
        assert_eq!(windows[0].window.unwrap().count as usize, windows.len());
        assert_eq!(doc.window_links.len(), windows.len() - 1);
        assert!(
            doc.chunks
                .iter()
                .all(|c| c.end - c.start <= WINDOW_BYTES || c.symbol.is_none())
        );
    }

    #[test]
    fn go_python_typescript() {
        let go = "package main\n\nimport \"fmt\"\n\n// T is a type.\ntype T struct{}\n\nfunc (t *T) M() {}\n\nfunc F() { fmt.Println() }\n";
        assert_eq!(
            names(&chunk(go, Language::Go)),
            vec![
                ("T".into(), None, "struct"),
                ("M".into(), Some("T".into()), "method"),
                ("F".into(), None, "function")
            ]
        );
        let py = "import os\n\n@dec\ndef f():\n    \"\"\"Doc.\"\"\"\n    pass\n\nclass C:\n    def m(self):\n        pass\n";
        let doc = chunk(py, Language::Python);
        assert_eq!(
            names(&doc),
            vec![("f".into(), None, "function"), ("C".into(), None, "class")]
        );
        assert!(doc.chunks.iter().any(|c| {
            c.symbol
                .as_ref()
                .is_some_and(|s| s.doc_comment == "\"\"\"Doc.\"\"\"")
        }));
        let ts = "export interface I { a: number }\nexport const f = (x: number) => x;\nclass K { m(): void {} }\n";
        assert_eq!(
            names(&chunk(ts, Language::TypeScript)),
            vec![
                ("I".into(), None, "interface"),
                ("f".into(), None, "function"),
                ("K".into(), None, "class")
            ]
        );
    }

    #[test]
    fn broken_code_falls_back() {
        assert!(
            chunk_code("fn (((", Language::Rust, &ChunkParams::default())
                .unwrap()
                .is_none()
        );
        assert!(
            chunk_code("x", Language::Other("c"), &ChunkParams::default())
                .unwrap()
                .is_none()
        );
    }
}
