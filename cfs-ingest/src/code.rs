//! Symbol-aware code chunking with tree-sitter: Rust, Go, Python, TypeScript/TSX and
//! JavaScript/JSX always; with their `lang-*` features Java, C#, Kotlin, C, C++, Ruby,
//! PHP, Swift, Scala, Haskell, Elixir, Lua, Zig, Dart, OCaml (and its interfaces),
//! Erlang, R, shell, Objective-C (`code/objc.rs`), Julia (`code/julia.rs`) and SQL
//! (`code/sql.rs`); and the keys, tables, blocks and rules of YAML, TOML, HCL and CSS
//! (`code/config.rs`).
//!
//! One chunk per symbol (function, method, class, interface, type, const, var, impl,
//! trait, module, struct, enum, macro; a database's tables, indexes and triggers), its
//! doc comments and attributes attached, its parent, signature and doc comment
//! recorded. A container too large for one chunk
//! (a class, an impl, a trait, a module) is split into its header and its members. A
//! symbol still larger than a window is split by a sliding window (seed 003, erratum
//! E12), the windows linked by `next_window` edges. The text between symbols (imports,
//! top-level statements) is chunked too, so every byte is covered. A tree with errors
//! keeps the declarations the errors left intact (the rest is text between symbols);
//! a parse that fails or is cut off sends the file to the text chunker: unparseable
//! code never fails a file.
//! `docs/spec.md` ("Code chunking") is the normative description.

use cfs_core::{Symbol, SymbolKind, Window};
use tree_sitter::{Node, Parser};

use crate::detect::Language;
use crate::error::IngestError;
use crate::text::{ChunkParams, chunk_text};

mod cmacros;
mod config;
mod haskell;
mod julia;
mod objc;
mod ruby;
mod scanners;
mod sql;
mod typescript;
mod zsh;

/// Largest symbol chunk, and the size of each sliding window, in bytes.
pub const WINDOW_BYTES: usize = 7000;
/// Bytes shared by consecutive windows of one symbol.
pub const WINDOW_OVERLAP_BYTES: usize = 500;
/// Gaps between symbols up to this size, or of whitespace only, join the chunk before.
pub const SMALL_GAP_BYTES: usize = 64;
/// Deepest container nesting split into members; deeper containers are chunked whole.
const MAX_CONTAINER_DEPTH: usize = 8;
/// A Scala, Dart or Rust container (class, trait, object, mixin, extension, `impl`)
/// past this size is split into its members. The three keep most of their code in such
/// blocks, several to a file, and the model reads only a chunk's first 128 word pieces:
/// a 3 KB trait whole was one vector of its first method
/// (docs/bench-log/04-code-ranking-languages.md, "Scala's containers", "Dart's classes"
/// and "Rust's impl blocks").
pub const CLASS_SPLIT_BYTES: usize = 2048;
/// Longest signature kept, in bytes.
const MAX_SIGNATURE_BYTES: usize = 1024;

/// The tree-sitter runtime, part of every code parse profile.
const TREE_SITTER: &str = "tree-sitter=0.27";

/// A grammar here: the language it parses, its name and its crate's pinned version
/// (both in the parse profile), and the grammar itself.
struct Grammar {
    language: Language,
    name: &'static str,
    version: &'static str,
    /// The revision of this crate's own reading of the grammar's trees (what is a
    /// symbol, its name, parent and attached comments): raised when a change moves a
    /// chunk or a symbol of some file of the language, so that its stores parse again.
    rules: u32,
    load: fn() -> tree_sitter::Language,
}

/// Every language parsed by symbols: adding a language is a row here (and its symbol
/// table in [`classify`]); the rows make [`crate::parsers_version`], which tells stores
/// to parse again.
const GRAMMARS: &[Grammar] = &[
    Grammar {
        language: Language::Rust,
        name: "rust",
        version: "0.24.2",
        rules: 3,
        load: || tree_sitter_rust::LANGUAGE.into(),
    },
    Grammar {
        language: Language::Go,
        name: "go",
        version: "0.25.0",
        rules: 2,
        load: || tree_sitter_go::LANGUAGE.into(),
    },
    Grammar {
        language: Language::Python,
        name: "python",
        version: "0.25.0",
        rules: 3,
        load: || tree_sitter_python::LANGUAGE.into(),
    },
    Grammar {
        language: Language::TypeScript,
        name: "typescript",
        version: "0.23.2",
        rules: 5,
        load: || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
    },
    Grammar {
        language: Language::Tsx,
        name: "typescript",
        version: "0.23.2",
        rules: 5,
        load: || tree_sitter_typescript::LANGUAGE_TSX.into(),
    },
    Grammar {
        language: Language::JavaScript,
        name: "javascript",
        version: "0.25.0",
        rules: 3,
        load: || tree_sitter_javascript::LANGUAGE.into(),
    },
    Grammar {
        language: Language::Jsx,
        name: "javascript",
        version: "0.25.0",
        rules: 3,
        load: || tree_sitter_javascript::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-java")]
    Grammar {
        language: Language::Java,
        name: "java",
        version: "0.23.5",
        rules: 2,
        load: || tree_sitter_java::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-csharp")]
    Grammar {
        language: Language::CSharp,
        name: "c-sharp",
        version: "0.23.5",
        rules: 2,
        load: || tree_sitter_c_sharp::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-kotlin")]
    Grammar {
        language: Language::Kotlin,
        name: "kotlin-ng",
        version: "1.1.0",
        rules: 3,
        load: || tree_sitter_kotlin_ng::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-c")]
    Grammar {
        language: Language::C,
        name: "c",
        version: "0.24.2",
        rules: 4,
        load: || tree_sitter_c::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-cpp")]
    Grammar {
        language: Language::Cpp,
        name: "cpp",
        version: "0.23.4",
        rules: 4,
        load: || tree_sitter_cpp::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-ruby")]
    Grammar {
        language: Language::Ruby,
        name: "ruby",
        version: "0.23.1",
        rules: 5,
        load: || tree_sitter_ruby::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-php")]
    Grammar {
        language: Language::Php,
        name: "php",
        version: "0.25.1",
        rules: 2,
        load: || tree_sitter_php::LANGUAGE_PHP.into(),
    },
    #[cfg(feature = "lang-swift")]
    Grammar {
        language: Language::Swift,
        name: "swift",
        version: "0.7.4",
        rules: 2,
        load: || tree_sitter_swift::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-shell")]
    Grammar {
        language: Language::Shell,
        name: "bash",
        version: "0.25.1",
        rules: 4,
        load: || tree_sitter_bash::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-lua")]
    Grammar {
        language: Language::Lua,
        name: "lua",
        version: "0.5.0",
        rules: 2,
        load: || tree_sitter_lua::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-zig")]
    Grammar {
        language: Language::Zig,
        name: "zig",
        version: "1.1.2",
        rules: 2,
        load: || tree_sitter_zig::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-scala")]
    Grammar {
        language: Language::Scala,
        name: "scala",
        version: "0.26.9",
        rules: 3,
        load: || tree_sitter_scala::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-haskell")]
    Grammar {
        language: Language::Haskell,
        name: "haskell",
        version: "0.24.1",
        rules: 3,
        load: || tree_sitter_haskell::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-elixir")]
    Grammar {
        language: Language::Elixir,
        name: "elixir",
        version: "0.3.5",
        rules: 4,
        load: || tree_sitter_elixir::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-ocaml")]
    Grammar {
        language: Language::OCaml,
        name: "ocaml",
        version: "0.26.0",
        rules: 4,
        load: || tree_sitter_ocaml::LANGUAGE_OCAML.into(),
    },
    #[cfg(feature = "lang-ocaml")]
    Grammar {
        language: Language::OCamlInterface,
        name: "ocaml-interface",
        version: "0.26.0",
        rules: 3,
        load: || tree_sitter_ocaml::LANGUAGE_OCAML_INTERFACE.into(),
    },
    #[cfg(feature = "lang-erlang")]
    Grammar {
        language: Language::Erlang,
        name: "erlang",
        version: "0.21.0",
        rules: 2,
        load: || tree_sitter_erlang::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-r")]
    Grammar {
        language: Language::R,
        name: "r",
        version: "1.3.0",
        rules: 2,
        load: || tree_sitter_r::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-julia")]
    Grammar {
        language: Language::Julia,
        name: "julia",
        version: "0.23.1",
        rules: 3,
        load: || tree_sitter_julia::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-sql")]
    Grammar {
        language: Language::Sql,
        name: "sequel",
        version: "0.3.11",
        rules: 2,
        load: || tree_sitter_sequel::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-objc")]
    Grammar {
        language: Language::ObjC,
        name: "objc",
        version: "3.0.2",
        rules: 2,
        load: || tree_sitter_objc::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-yaml")]
    Grammar {
        language: Language::Yaml,
        name: "yaml",
        version: "0.7.2",
        rules: 3,
        load: || tree_sitter_yaml::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-toml")]
    Grammar {
        language: Language::Toml,
        name: "toml-ng",
        version: "0.7.0",
        rules: 2,
        load: || tree_sitter_toml_ng::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-hcl")]
    Grammar {
        language: Language::Hcl,
        name: "hcl",
        version: "1.1.0",
        rules: 2,
        load: || tree_sitter_hcl::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-css")]
    Grammar {
        language: Language::Css,
        name: "css",
        version: "0.25.0",
        rules: 1,
        load: || tree_sitter_css::LANGUAGE.into(),
    },
    #[cfg(feature = "lang-dart")]
    Grammar {
        language: Language::Dart,
        name: "dart",
        version: "0.3.0",
        rules: 3,
        load: || tree_sitter_dart::LANGUAGE.into(),
    },
];

fn grammar_of(language: Language) -> Option<&'static Grammar> {
    GRAMMARS.iter().find(|g| g.language == language)
}

/// Every language parsed by symbols here, in the table's order.
pub fn parsed_languages() -> impl Iterator<Item = Language> {
    GRAMMARS.iter().map(|g| g.language)
}

/// The grammar that parses `language` and its crate's pinned version (both part of the
/// parse profile), or `None` without one.
pub fn grammar_version(language: Language) -> Option<(&'static str, &'static str)> {
    grammar_of(language).map(|g| (g.name, g.version))
}

/// The parser of a code file in `language` parsed by symbols: `code/3`, the runtime and
/// the one grammar it used (so that a grammar added or upgraded for one language leaves
/// every other language's documents as they are), then ` rules=<n>` once the reading
/// of that grammar's trees has been revised (the profiles of rules 1 name none).
pub fn code_parser(language: Language) -> Option<String> {
    let g = grammar_of(language)?;
    let profile = format!("code/3 {TREE_SITTER} {}={}", g.name, g.version);
    Some(match g.rules {
        1 => profile,
        rules => format!("{profile} rules={rules}"),
    })
}

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
    grammar_of(language).map(|g| (g.load)())
}

thread_local! {
    /// This thread's parser, kept from file to file: a new one allocates its stack,
    /// lexer and node pools again. A parse that completes leaves it reset; one cancelled
    /// by its budget is reset here.
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new(Parser::new());
}

/// Progress checks (tree-sitter makes one per 100 parser operations) a parse of `len`
/// bytes may take before it is cancelled: 1,024, and 64 more per KiB. Real code takes
/// at most 17 per KiB (measured on the suite's Kotlin, Java, C#, Rust and TypeScript);
/// a malformed file can send error recovery into work and memory that grow without
/// bound (an 844-byte Kotlin input found by fuzzing took over 4 GB). The count, unlike
/// a time limit, is the same on every machine.
fn parse_budget(len: usize) -> usize {
    1024 + len / 16
}

/// Bytes of text the lexer is handed at a time.
const PIECE_BYTES: usize = 1024;

/// Pieces of text ([`PIECE_BYTES`]) a parse of `len` bytes may ask for before it is
/// cancelled: 1,024, and 256 more per KiB. Tree-sitter checks progress between parser
/// operations, not while it lexes, and one operation's lexing can read far ahead: a
/// 3,757-byte Kotlin input found by fuzzing asked for 124,732 pieces within its check
/// budget (0.56 s; 6.9 KB of it, 2.3 s). Real code asks for at most 57 per KiB (18,369
/// files of every grammar, log 04).
fn piece_budget(len: usize) -> usize {
    1024 + len / 4
}

/// The tree of `text` by the grammar of `language`, or `None` without one or when the
/// parse exceeds its budgets ([`parse_budget`], [`piece_budget`]).
pub(crate) fn parse_tree(text: &str, language: Language) -> Option<tree_sitter::Tree> {
    parse_counted(text, language).0
}

/// What a parse took: progress checks and pieces of text read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ParseWork {
    checks: usize,
    pieces: usize,
}

/// [`parse_tree`] with the work the parse took.
fn parse_counted(text: &str, language: Language) -> (Option<tree_sitter::Tree>, ParseWork) {
    let Some(grammar) = grammar(language) else {
        return (None, ParseWork::default());
    };
    if scanner_may_fail(text, language) {
        return (None, ParseWork::default());
    }
    // Same length, every name where it was: the tree's extents are the text's.
    let readable = match language {
        Language::ObjC => objc::readable(text),
        Language::Sql => sql::readable(text),
        _ => None,
    };
    let text = readable.as_deref().unwrap_or(text);
    let (tree, work) = parse_once(&grammar, text);
    let Some(first) = tree.as_ref() else {
        return (tree, work);
    };
    // What the grammar misreads, rewritten byte for byte as long: read again, and the
    // tree that serves the chunker better taken.
    let (rewritten, prefer) = match language {
        Language::Haskell => (haskell::cpp_branches_opened(text), Prefer::NoMoreErrors),
        _ if !first.root_node().has_error() => return (tree, work),
        Language::TypeScript => (typescript::separated_signatures(text), Prefer::FewerErrors),
        Language::C | Language::Cpp => (cmacros::macro_lines_blanked(text), Prefer::MoreNamed),
        Language::Julia => (julia::struct_consts_blanked(text), Prefer::FewerErrors),
        Language::Shell => (zsh::parameter_flags_blanked(text), Prefer::FewerErrors),
        _ => (None, Prefer::FewerErrors),
    };
    let Some(rewritten) = rewritten else {
        return (tree, work);
    };
    let (second, more) = parse_once(&grammar, &rewritten);
    let work = ParseWork {
        checks: work.checks + more.checks,
        pieces: work.pieces + more.pieces,
    };
    let better = |s: &tree_sitter::Tree| match prefer {
        Prefer::FewerErrors => error_bytes(s) < error_bytes(first),
        Prefer::NoMoreErrors => error_bytes(s) <= error_bytes(first),
        Prefer::MoreNamed => {
            named_bytes(language, s, &rewritten) > named_bytes(language, first, text)
        }
    };
    match second.filter(better) {
        Some(second) => (Some(second), work),
        None => (tree, work),
    }
}

/// Which of a text's two trees (its own and its rewrite's, section 18) chunks it.
#[derive(Clone, Copy)]
enum Prefer {
    /// The rewrite's when fewer of its bytes lie under outermost `ERROR` nodes.
    FewerErrors,
    /// The rewrite's when no more of its bytes do (Haskell's, whose two trees usually
    /// have none: the first reads only one branch of an `#if`).
    NoMoreErrors,
    /// The rewrite's when its symbols hold more bytes ([`named_bytes`]): C's and C++'s,
    /// where one `ERROR` often spans the whole file in both (an include guard's `#ifndef`
    /// that error recovery wraps) and the macros blanked decide what inside it is a
    /// symbol.
    MoreNamed,
}

/// Bytes that the symbols of `tree` hold, a container's counted by its members (whole
/// when it has none): what the tree lets the chunker name.
fn named_bytes(language: Language, tree: &tree_sitter::Tree, src: &str) -> usize {
    fn level(language: Language, node: Node<'_>, src: &str, depth: usize) -> usize {
        let found = items(language, node, src, None);
        let held = |item: &Item<'_>| {
            let members = item
                .body
                .filter(|_| depth < MAX_CONTAINER_DEPTH)
                .map_or(0, |body| level(language, body, src, depth + 1));
            match members {
                0 => item.end - item.start,
                members => members,
            }
        };
        found.iter().map(held).sum()
    }
    level(language, tree.root_node(), src, 0)
}

/// `src` with, in each line (LF included), the bytes `[at, at + len)` that `find` gives
/// written over by spaces: byte for byte as long, every other byte where it was. `None`
/// when `find` gives nothing. The rewrites of section 18 are made this way.
fn lines_blanked(src: &str, find: impl Fn(&str) -> Option<(usize, usize)>) -> Option<String> {
    let mut out = src.as_bytes().to_vec();
    let mut changed = false;
    let mut start = 0;
    for line in src.split_inclusive('\n') {
        if let Some((at, len)) = find(line) {
            out[start + at..start + at + len].fill(b' ');
            changed = true;
        }
        start += line.len();
    }
    // Spaces written over whole characters (the finders give ASCII runs): still UTF-8.
    changed.then(|| String::from_utf8(out).unwrap_or_else(|_| src.to_owned()))
}

/// The leading identifier of `text` (ASCII letters, digits, `_`), empty if none.
fn first_word(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Bytes of `tree`'s text under its outermost `ERROR` nodes.
fn error_bytes(tree: &tree_sitter::Tree) -> usize {
    let mut bytes = 0;
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.is_error() {
            bytes += node.end_byte() - node.start_byte();
        } else if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    bytes
}

/// One parse of `text` by `grammar` within its budgets.
fn parse_once(
    grammar: &tree_sitter::Language,
    text: &str,
) -> (Option<tree_sitter::Tree>, ParseWork) {
    let (budget, pieces_budget) = (parse_budget(text.len()), piece_budget(text.len()));
    let pieces = std::cell::Cell::new(0usize);
    let mut checks = 0usize;
    let tree = PARSER.with_borrow_mut(|parser| {
        parser.set_language(grammar).ok()?;
        let mut progress = |_: &tree_sitter::ParseState| {
            checks += 1;
            match checks > budget || pieces.get() > pieces_budget {
                true => std::ops::ControlFlow::Break(()),
                false => std::ops::ControlFlow::Continue(()),
            }
        };
        let options = tree_sitter::ParseOptions::new().progress_callback(&mut progress);
        let mut input = |at: usize, _| {
            pieces.set(pieces.get() + 1);
            piece(text, at)
        };
        let tree = parser.parse_with_options(&mut input, None, Some(options));
        if tree.is_none() {
            parser.reset();
        }
        tree
    });
    let work = ParseWork {
        checks,
        pieces: pieces.get(),
    };
    (tree, work)
}

/// True when the grammar's external scanner could loop forever, overrun the state it
/// saves, or recurse off the stack on `text` (`code/scanners.rs`): such a file is
/// chunked as text.
fn scanner_may_fail(text: &str, language: Language) -> bool {
    match language {
        Language::Yaml => config::yaml_too_deep(text),
        Language::Ruby => {
            ruby::saved_state_may_overflow(text)
                || !ruby::heredocs_parse_safely(text, |t, l| parse_counted(t, l).0)
        }
        Language::Kotlin => scanners::kotlin_annotation_on_last_line(text),
        Language::Python => scanners::python_indent_too_wide(text),
        Language::OCaml | Language::OCamlInterface => scanners::ocaml_comments_too_many(text),
        Language::Shell => scanners::shell_brace_before_wide_char(text),
        _ => false,
    }
}

/// The piece of `text` the lexer reads from byte `at`: [`PIECE_BYTES`], or up to the
/// end of the character that runs past them, or the rest of the text.
fn piece(text: &str, at: usize) -> &[u8] {
    let bytes = text.as_bytes();
    let mut end = at.saturating_add(PIECE_BYTES).min(bytes.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    bytes.get(at..end).unwrap_or_default()
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

/// `text` without the first of `pairs` (an opening and a closing character) around
/// it, or as it is.
fn strip_pair<'a>(text: &'a str, pairs: &[(char, char)]) -> &'a str {
    pairs
        .iter()
        .find_map(|&(open, close)| text.strip_prefix(open)?.strip_suffix(close))
        .unwrap_or(text)
}

fn clip(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The first named child of `node` of one of `kinds`.
fn child_of_kind<'t>(node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .find(|c| kinds.contains(&c.kind()))
}

/// The node holding a declaration's body: its `body` field, or in Kotlin (whose
/// grammar names no field) its class, enum or function body child.
fn body_of<'t>(language: Language, node: Node<'t>) -> Option<Node<'t>> {
    match language {
        Language::Kotlin => child_of_kind(
            node,
            &["class_body", "enum_class_body", "function_body", "block"],
        ),
        // A Ruby class's first comment is its child before the body: the class node
        // itself is the level (its body read through), and the signature is one line.
        Language::Ruby => None,
        Language::Elixir => child_of_kind(node, &["do_block"]),
        Language::Css => child_of_kind(node, &["block", "keyframe_block_list"]),
        // What a table, view or function is made of: its signature is what comes before.
        Language::Sql => child_of_kind(
            node,
            &["column_definitions", "create_query", "function_body"],
        ),
        // A method's body has no field.
        Language::ObjC => node
            .child_by_field_name("body")
            .or_else(|| child_of_kind(node, &["compound_statement"])),
        // An Erlang function's first clause's body.
        Language::Erlang => node
            .child_by_field_name("clause")?
            .child_by_field_name("body"),
        _ => node.child_by_field_name("body"),
    }
}

/// The declaration up to its body (or its first line when it has none), trimmed.
fn signature(language: Language, node: Node<'_>, src: &str) -> String {
    let start = node.start_byte();
    let Some(body) = body_of(language, node) else {
        return first_line_signature(text_of(node, src));
    };
    clip(
        src.get(start..body.start_byte()).unwrap_or("").trim_end(),
        MAX_SIGNATURE_BYTES,
    )
}

/// A signature that is the first line of `text`, trimmed at its end and clipped.
fn first_line_signature(text: &str) -> String {
    let line = &text[..text.find('\n').unwrap_or(text.len())];
    clip(line.trim_end(), MAX_SIGNATURE_BYTES)
}

/// What `node` is to the symbol after it: `Some(true)` a comment whose text joins its
/// doc comment, `Some(false)` an attribute that joins its extent only (Rust's
/// `#[...]`, Haskell's `{-# ... #-}` pragmas, Elixir's module attributes other than
/// `@doc`), `None` neither.
fn attachment(language: Language, node: Node<'_>, src: &str) -> Option<bool> {
    let kind = node.kind();
    match language {
        Language::Rust => match kind {
            "line_comment" | "block_comment" => Some(true),
            "attribute_item" => Some(false),
            _ => None,
        },
        Language::Java | Language::Kotlin => {
            matches!(kind, "line_comment" | "block_comment").then_some(true)
        }
        Language::Swift => matches!(kind, "comment" | "multiline_comment").then_some(true),
        Language::Dart => matches!(kind, "comment" | "documentation_comment").then_some(true),
        // A `-spec` belongs to the function after it.
        Language::Erlang => match kind {
            "comment" => Some(true),
            "spec" => Some(false),
            _ => None,
        },
        Language::Scala => matches!(kind, "comment" | "block_comment").then_some(true),
        Language::Css => config::is_css_comment(kind).then_some(true),
        Language::Sql => matches!(kind, "comment" | "marginalia").then_some(true),
        // A docstring is the string right above what it documents.
        Language::Julia => {
            matches!(kind, "line_comment" | "block_comment" | "string_literal").then_some(true)
        }
        Language::Haskell => match kind {
            "comment" | "haddock" => Some(true),
            "pragma" => Some(false),
            _ => None,
        },
        // A shebang is the file's, not the first function's.
        Language::Shell => {
            (kind == "comment" && !text_of(node, src).starts_with("#!")).then_some(true)
        }
        Language::Elixir => match kind {
            "comment" => Some(true),
            // A type or a callback is defined, not attached to what follows.
            "unary_operator" => elixir_attribute(node, src)
                .filter(|name| elixir_typespec_kind(name).is_none())
                .map(|name| name == "doc"),
            _ => None,
        },
        _ => (kind == "comment").then_some(true),
    }
}

/// The name of an Elixir module attribute (`@doc "..."` gives `doc`), except
/// `@moduledoc`, which documents its module rather than what follows it.
fn elixir_attribute<'s>(node: Node<'_>, src: &'s str) -> Option<&'s str> {
    let operand = node.child_by_field_name("operand")?;
    let target = operand.child_by_field_name("target")?;
    let name = text_of(target, src);
    let is_attribute = text_of(node, src).starts_with('@') && operand.kind() == "call";
    (is_attribute && name != "moduledoc").then_some(name)
}

/// What an Elixir attribute that defines something defines: `@type`, `@typep` and
/// `@opaque` a type, `@callback` a function and `@macrocallback` a macro of a behaviour.
fn elixir_typespec_kind(attribute: &str) -> Option<SymbolKind> {
    match attribute {
        "type" | "typep" | "opaque" => Some(SymbolKind::Type),
        "callback" => Some(SymbolKind::Function),
        "macrocallback" => Some(SymbolKind::Macro),
        _ => None,
    }
}

/// An Elixir `@type`, `@callback` and the like: named by the name its spec declares
/// (`@callback insert(t, keyword) :: t when t: term` is `insert`).
fn elixir_typespec<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let kind = elixir_typespec_kind(elixir_attribute(node, src)?)?;
    let operand = node.child_by_field_name("operand")?;
    let mut head = child_of_kind(operand, &["arguments"])?.named_child(0)?;
    while head.kind() == "binary_operator" {
        head = head.child_by_field_name("left")?;
    }
    let name = match head.kind() {
        "call" => head.child_by_field_name("target")?,
        "identifier" => head,
        _ => return None,
    };
    Some((kind, text_of(name, src).to_owned(), None))
}

/// Nodes whose named children are symbols of the level that holds them: Java's
/// declarations after an enum's constants, C#'s conditional compilation blocks, C's and
/// C++'s preprocessor branches, `extern "C"` blocks, anonymous namespaces and what error
/// recovery wrapped, Haskell's import and declaration lists, a shell script's braces.
fn is_transparent(language: Language, node: Node<'_>, src: &str) -> bool {
    // What error recovery wrapped (an `extern "C" {` whose `}` is in another `#if`
    // branch, a TypeScript interface's call signatures the grammar cannot separate):
    // the declarations it holds parsed whole.
    if node.is_error() {
        // Not an SQL word the grammar could not read (a name in letters outside
        // ASCII): the `CREATE` run it ends is named by it (`sql::recovered`).
        return language != Language::Sql || node.named_child_count() > 0;
    }
    let kind = node.kind();
    match language {
        Language::C | Language::Cpp | Language::ObjC => {
            matches!(
                kind,
                "preproc_if"
                    | "preproc_ifdef"
                    | "preproc_elif"
                    | "preproc_elifdef"
                    | "preproc_else"
                    | "linkage_specification"
                    | "declaration_list"
                    // Objective-C: a member of an `@implementation`, and a
                    // protocol's `@optional` or `@required` part.
                    | "implementation_definition"
                    | "qualified_protocol_interface_declaration"
            ) || (kind == "namespace_definition" && node.child_by_field_name("name").is_none())
        }
        Language::Java => kind == "enum_body_declarations",
        Language::Ruby => match kind {
            "body_statement" | "singleton_class" | "then" | "else" | "elsif" => true,
            "if" | "unless" | "begin" => ruby::holds_definitions(node),
            _ => false,
        },
        Language::CSharp => matches!(kind, "preproc_if" | "preproc_elif" | "preproc_else"),
        Language::Haskell => matches!(kind, "imports" | "declarations"),
        Language::Elixir => elixir_read_through(node, src),
        // A script wrapped in `{ ... }` so that it runs only once wholly downloaded.
        Language::Shell => kind == "compound_statement",
        Language::TypeScript | Language::Tsx => is_global_augmentation(node),
        // The documents of a stream and the mapping at their top.
        Language::Yaml => matches!(kind, "document" | "block_node" | "block_mapping"),
        // The body of a whole file.
        Language::Hcl => kind == "body",
        // Statements between `BEGIN` and `COMMIT`, or in a `BEGIN ... END` block.
        Language::Sql => matches!(kind, "transaction" | "block"),
        _ => false,
    }
}

/// Elixir's blocks whose definitions are their level's: ExUnit's `describe` (its body
/// runs as the module's), and a module's `if`, `unless`, `for`, `case` and `cond` (`if
/// Code.ensure_loaded?(X) do def ... end`, `for {code, phrase} <- statuses do def ...
/// end`), with their `do` and `else` blocks and a `case`'s clauses. Only these: a `quote`,
/// `test` or `fn` body defines nothing of the module.
fn elixir_read_through(node: Node<'_>, src: &str) -> bool {
    match node.kind() {
        "call" => node
            .child_by_field_name("target")
            .filter(|t| t.kind() == "identifier")
            .is_some_and(|t| {
                matches!(
                    text_of(t, src),
                    "describe" | "if" | "unless" | "for" | "case" | "cond"
                )
            }),
        "do_block" | "else_block" | "stab_clause" | "body" => true,
        _ => false,
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
    // A function in a type is a method; at the root or in a module, a function.
    let in_type = matches!(parent, Some((_, kind)) if kind != SymbolKind::Module);
    let function = match in_type {
        true => SymbolKind::Method,
        false => SymbolKind::Function,
    };
    match language {
        Language::Rust => rust_symbol(node, src, function),
        Language::Go => go_symbol(node, src),
        Language::Python => python_symbol(node, src, function),
        Language::TypeScript | Language::Tsx | Language::JavaScript | Language::Jsx => {
            script_symbol(node, src)
        }
        Language::Java => java_symbol(node, src, function),
        Language::CSharp => csharp_symbol(node, src, function),
        Language::Kotlin => kotlin_symbol(node, src, function, parent),
        Language::C => c_symbol(node, src, function, false),
        Language::Cpp => c_symbol(node, src, function, true),
        // In Ruby a def in a module is a method too (of its includers, or of the module).
        Language::Ruby => {
            let function = match parent {
                Some(_) => SymbolKind::Method,
                None => SymbolKind::Function,
            };
            ruby_symbol(node, src, function)
        }
        Language::Php => php_symbol(node, src, function),
        Language::Swift => swift_symbol(node, src, function),
        Language::Shell => (node.kind() == "function_definition")
            .then(|| (SymbolKind::Function, name_of(node, "name", src), None)),
        Language::Lua => lua_symbol(node, src),
        Language::Zig => zig_symbol(node, src, function),
        Language::Scala => scala_symbol(node, src, function),
        Language::Haskell => haskell_symbol(node, src, function),
        Language::Elixir => elixir_symbol(node, src, parent),
        Language::Dart => dart_symbol(node, src, function),
        Language::OCaml | Language::OCamlInterface => ocaml_symbol(node, src, function),
        Language::Erlang => erlang_symbol(node, src),
        Language::R => r_symbol(node, src),
        Language::ObjC => objc::objc_symbol(node, src, function),
        Language::Julia => julia::julia_symbol(node, src),
        Language::Sql => sql::sql_symbol(node, src),
        Language::Yaml => config::yaml_symbol(node, src),
        Language::Toml => config::toml_symbol(node, src),
        Language::Hcl => config::hcl_symbol(node, src),
        Language::Css => config::css_symbol(node, src),
        Language::Other(_) => None,
    }
}

/// A symbol's kind, name, and the node whose children are its members.
type Classified<'t> = (SymbolKind, String, Option<Node<'t>>);

/// Comments and attributes directly above a node: their start and end, and the texts
/// of those that join its doc comment.
type Attached = (usize, usize, Vec<String>);

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
        "internal_module" | "module" => {
            let name = strip_pair(&name(), &[('\'', '\''), ('"', '"')]).to_owned();
            Some((SymbolKind::Module, name, node.child_by_field_name("body")))
        }
        "lexical_declaration" | "variable_declaration" => script_binding(node, src),
        "assignment_expression" => script_assignment(node, src),
        _ => None,
    }
}

/// A function or class assigned to a member (`exports.f = function`, `res.send =
/// function send`, `Foo.prototype.bar = () => ...`, `exports.Router = class`): named
/// by the member, a method when it is set on a `prototype`; `module.exports = ...` is
/// named by the function or class itself (no symbol when it has no name). An assigned
/// class is a container, as a declared one.
fn script_assignment<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let (object, property) = script_member(node)?;
    let object = text_of(object, src);
    let value = node.child_by_field_name("right")?;
    let (kind, members) = match value.kind() {
        "function_expression" | "arrow_function" | "generator_function" => {
            match object.ends_with(".prototype") {
                true => (SymbolKind::Method, None),
                false => (SymbolKind::Function, None),
            }
        }
        "class" => (SymbolKind::Class, value.child_by_field_name("body")),
        _ => return None,
    };
    let name = match (object, text_of(property, src)) {
        ("module", "exports") => name_of(value, "name", src),
        (_, property) => property.to_owned(),
    };
    (!name.is_empty()).then_some((kind, name, members))
}

/// The object and property of an assignment's left side when it is a member of a
/// plain name or chain of names (`a.b.c = ...`; not `a[b]`, `f().x` or `this.x`).
fn script_member(node: Node<'_>) -> Option<(Node<'_>, Node<'_>)> {
    let left = node.child_by_field_name("left")?;
    if left.kind() != "member_expression" {
        return None;
    }
    let object = left.child_by_field_name("object")?;
    let property = left.child_by_field_name("property")?;
    let mut at = object;
    while at.kind() == "member_expression" {
        at = at.child_by_field_name("object")?;
    }
    (at.kind() == "identifier").then_some((object, property))
}

/// The parent of an assigned member: the object it is set on, without a last
/// `.prototype`; none for `exports` and `module.exports`.
fn script_assignment_scope(node: Node<'_>, src: &str) -> Option<String> {
    if node.kind() != "assignment_expression" {
        return None;
    }
    let (object, _) = script_member(node)?;
    let object = text_of(object, src);
    let object = object.strip_suffix(".prototype").unwrap_or(object);
    match object {
        "exports" | "module" | "module.exports" => None,
        _ => Some(clip(object, MAX_SIGNATURE_BYTES)),
    }
}

/// The name of the first variable declarator among `node`'s named children (Java and
/// C# fields and constants: `int a = 1, b;` is named `a`).
fn first_declarator(node: Node<'_>, src: &str) -> String {
    let mut cursor = node.walk();
    let declarator = node
        .named_children(&mut cursor)
        .find_map(|c| match c.kind() {
            "variable_declarator" => Some(c),
            "variable_declaration" => c
                .named_children(&mut c.walk())
                .find(|d| d.kind() == "variable_declarator"),
            _ => None,
        });
    declarator.map_or_else(String::new, |d| name_of(d, "name", src))
}

/// A Java declaration; `function` is the kind of a method here (a function outside a
/// container); constructors are named by their class.
fn java_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "class_declaration" | "record_declaration" => Some((SymbolKind::Class, name(), body())),
        "interface_declaration" | "annotation_type_declaration" => {
            Some((SymbolKind::Interface, name(), body()))
        }
        "enum_declaration" => Some((SymbolKind::Enum, name(), body())),
        "method_declaration" | "annotation_type_element_declaration" => {
            Some((function, name(), None))
        }
        "constructor_declaration" | "compact_constructor_declaration" => {
            Some((SymbolKind::Method, name(), None))
        }
        "field_declaration" => Some((SymbolKind::Var, first_declarator(node, src), None)),
        "constant_declaration" => Some((SymbolKind::Const, first_declarator(node, src), None)),
        _ => None,
    }
}

/// Where a C or C++ declarator leads: the node naming it (an identifier, a qualified
/// name, a destructor or operator name) and whether it declares a function (a function
/// declarator whose own declarator is that name, not a pointer to a function).
fn c_declarator(node: Node<'_>) -> Option<(Node<'_>, bool)> {
    let mut at = node;
    let mut function = false;
    for _ in 0..64 {
        match at.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "template_function" => {
                return Some((at, function));
            }
            "function_declarator" => {
                let inner = at.child_by_field_name("declarator")?;
                function = !matches!(inner.kind(), "parenthesized_declarator");
                at = inner;
            }
            _ => {
                at = match at.child_by_field_name("declarator") {
                    Some(inner) => inner,
                    None => at.named_child(0)?,
                };
                function = false;
            }
        }
    }
    None
}

/// A C or C++ name node's text and, for a qualified name (`Table::Get`, `a::B::C`), its
/// last part's text and the scope before it.
fn c_qualified<'s>(name: Node<'_>, src: &'s str) -> (&'s str, Option<&'s str>) {
    if name.kind() != "qualified_identifier" {
        return (text_of(name, src), None);
    }
    let scope = field_text(name, "scope", src);
    let mut last = name;
    while let Some(inner) = last.child_by_field_name("name") {
        last = inner;
    }
    (text_of(last, src), scope)
}

/// The first declarator of a C or C++ declaration: its name's text (a qualified name's
/// last part) with the scope of a qualified name, and whether it declares a function.
fn c_declared<'s>(node: Node<'_>, src: &'s str) -> Option<(&'s str, Option<&'s str>, bool)> {
    let (name, function) = c_declarator(node.child_by_field_name("declarator")?)?;
    let (name, scope) = c_qualified(name, src);
    Some((name, scope, function))
}

/// True when a declaration of C or C++ has a `const` (or `constexpr`) qualifier.
fn c_is_const(node: Node<'_>, src: &str) -> bool {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).any(|c| {
        matches!(c.kind(), "type_qualifier") && matches!(text_of(c, src), "const" | "constexpr")
    })
}

/// A C or C++ (`cpp`) declaration; `function` is the kind of a function here (a method
/// inside a class). In C a struct is not a container (its fields are not symbols).
fn c_symbol<'t>(
    node: Node<'t>,
    src: &str,
    function: SymbolKind,
    cpp: bool,
) -> Option<Classified<'t>> {
    // A qualified or template name (`struct Table::Rep`, `struct formatter<T>`)
    // defines its innermost `name`.
    let name = || {
        let mut name = node.child_by_field_name("name");
        while let Some(inner) = name.and_then(|n| n.child_by_field_name("name")) {
            name = Some(inner);
        }
        name.map_or_else(String::new, |n| text_of(n, src).to_owned())
    };
    let body = node.child_by_field_name("body");
    let members = if cpp { body } else { None };
    match node.kind() {
        "function_definition" => {
            let (name, scope, _) = c_declared(node, src)?;
            let kind = if scope.is_some() {
                SymbolKind::Method
            } else {
                function
            };
            Some((kind, name.to_owned(), None))
        }
        "declaration" | "field_declaration" => match c_declared(node, src) {
            // A prototype declares what a definition elsewhere defines: the definition
            // is the symbol (the prototype's name is a declared term of its chunk).
            Some((_, _, true)) => None,
            Some((name, _, false)) => {
                let kind = if c_is_const(node, src) {
                    SymbolKind::Const
                } else {
                    SymbolKind::Var
                };
                Some((kind, name.to_owned(), None))
            }
            // `struct Inner { ... };` inside a class: the type it defines.
            None => c_symbol(node.child_by_field_name("type")?, src, function, cpp),
        },
        "struct_specifier" | "union_specifier" if body.is_some() && !name().is_empty() => {
            Some((SymbolKind::Struct, name(), members))
        }
        "class_specifier" if body.is_some() && !name().is_empty() => {
            Some((SymbolKind::Class, name(), members))
        }
        "enum_specifier" if body.is_some() && !name().is_empty() => {
            Some((SymbolKind::Enum, name(), None))
        }
        "type_definition" => {
            let (name, _, _) = c_declared(node, src)?;
            let defined = node.child_by_field_name("type").filter(|t| {
                t.child_by_field_name("body").is_some()
                    && matches!(
                        t.kind(),
                        "struct_specifier" | "union_specifier" | "enum_specifier"
                    )
            });
            let kind = match defined.map(|t| t.kind()) {
                Some("enum_specifier") => SymbolKind::Enum,
                Some(_) => SymbolKind::Struct,
                None => SymbolKind::Type,
            };
            Some((kind, name.to_owned(), None))
        }
        "alias_declaration" | "concept_definition" => Some((SymbolKind::Type, name(), None)),
        "namespace_definition" => Some((SymbolKind::Module, name(), body)),
        "preproc_def" | "preproc_function_def" => Some((SymbolKind::Macro, name(), None)),
        _ => None,
    }
}

/// The scope of a C++ definition whose name is qualified (`Table::Get`,
/// `struct Table::Rep`): its parent.
fn cpp_scope(node: Node<'_>, src: &str) -> Option<String> {
    match node.kind() {
        "function_definition" => c_declared(node, src)?.1.map(str::to_owned),
        "class_specifier" | "struct_specifier" | "union_specifier" | "enum_specifier" => {
            c_qualified(node.child_by_field_name("name")?, src)
                .1
                .map(str::to_owned)
        }
        _ => None,
    }
}

/// The declaration a C++ `template <...>` holds (through nested templates).
fn template_inner(node: Node<'_>) -> Option<Node<'_>> {
    let mut at = node;
    while at.kind() == "template_declaration" {
        at = last_named_child(at)?;
    }
    Some(at)
}

/// The last named child of `node`, if it has any.
fn last_named_child(node: Node<'_>) -> Option<Node<'_>> {
    let count = u32::try_from(node.named_child_count()).ok()?;
    node.named_child(count.checked_sub(1)?)
}

/// The last part of a Ruby constant path (`Rack::Handler` -> `Handler`) and its scope.
fn ruby_name<'s>(node: Node<'_>, src: &'s str) -> (&'s str, Option<&'s str>) {
    let Some(name) = node.child_by_field_name("name") else {
        return ("", None);
    };
    match name.kind() {
        "scope_resolution" => (
            field_text(name, "name", src).unwrap_or(""),
            field_text(name, "scope", src),
        ),
        _ => (text_of(name, src), None),
    }
}

/// A Ruby definition: classes and modules are containers whose level is their own node
/// (the body read through); `def self.x` is a method; `NAME = ...` a constant.
fn ruby_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = ruby_name(node, src).0.to_owned();
    match node.kind() {
        "class" => Some((SymbolKind::Class, name, Some(node))),
        "module" => Some((SymbolKind::Module, name, Some(node))),
        "method" => Some((function, name, None)),
        "singleton_method" => Some((SymbolKind::Method, name, None)),
        "assignment" => {
            let left = node.child_by_field_name("left")?;
            (left.kind() == "constant")
                .then(|| (SymbolKind::Const, text_of(left, src).to_owned(), None))
        }
        _ => None,
    }
}

/// The name of the first element of kind `element` of a PHP declaration (a property's
/// without its `$`).
fn php_first_name(node: Node<'_>, element: &str, src: &str) -> Option<String> {
    let first = child_of_kind(node, &[element])?;
    let named = first.child_by_field_name("name").unwrap_or(first);
    let name = child_of_kind(named, &["name"]).unwrap_or(named);
    Some(text_of(name, src).trim_start_matches('$').to_owned())
}

/// A PHP declaration; a namespace without a body parents what follows it.
fn php_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "namespace_definition" => Some((SymbolKind::Module, name(), body())),
        "class_declaration" => Some((SymbolKind::Class, name(), body())),
        "interface_declaration" => Some((SymbolKind::Interface, name(), body())),
        "trait_declaration" => Some((SymbolKind::Trait, name(), body())),
        "enum_declaration" => Some((SymbolKind::Enum, name(), body())),
        "function_definition" => Some((SymbolKind::Function, name(), None)),
        "method_declaration" => Some((function, name(), None)),
        "property_declaration" => Some((
            SymbolKind::Var,
            php_first_name(node, "property_element", src)?,
            None,
        )),
        "const_declaration" => Some((
            SymbolKind::Const,
            php_first_name(node, "const_element", src)?,
            None,
        )),
        _ => None,
    }
}

/// A Swift declaration. One node kind holds classes, structs, enums, actors and
/// extensions, told apart by its `declaration_kind` token; an extension is an impl named
/// by the type it extends; `init`, `deinit` and `subscript` are methods named so.
fn swift_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "class_declaration" => {
            let kind = match field_text(node, "declaration_kind", src)? {
                "struct" => SymbolKind::Struct,
                "enum" => SymbolKind::Enum,
                "extension" => SymbolKind::Impl,
                _ => SymbolKind::Class,
            };
            Some((kind, name(), body()))
        }
        "protocol_declaration" => Some((SymbolKind::Interface, name(), body())),
        "function_declaration" => Some((function, name(), None)),
        "protocol_function_declaration" => Some((SymbolKind::Method, name(), None)),
        "init_declaration" => Some((SymbolKind::Method, "init".to_owned(), None)),
        "deinit_declaration" => Some((SymbolKind::Method, "deinit".to_owned(), None)),
        "subscript_declaration" => Some((SymbolKind::Method, "subscript".to_owned(), None)),
        "macro_declaration" => {
            let ident = child_of_kind(node, &["simple_identifier"])?;
            Some((SymbolKind::Macro, text_of(ident, src).to_owned(), None))
        }
        "typealias_declaration" | "associatedtype_declaration" => {
            Some((SymbolKind::Type, name(), None))
        }
        "property_declaration" | "protocol_property_declaration" => {
            let binding = child_of_kind(node, &["value_binding_pattern"]);
            let kind = match binding.is_some_and(|b| text_of(b, src).starts_with("let")) {
                true => SymbolKind::Const,
                false => SymbolKind::Var,
            };
            Some((kind, swift_pattern_name(node, src)?, None))
        }
        _ => None,
    }
}

/// A Swift property's name: its pattern's bound identifier (the first of a tuple
/// pattern's), without the backticks that quote a keyword.
fn swift_pattern_name(node: Node<'_>, src: &str) -> Option<String> {
    let pattern = node.child_by_field_name("name")?;
    let ident = pattern
        .child_by_field_name("bound_identifier")
        .or_else(|| first_descendant(pattern, "simple_identifier"))
        .unwrap_or(pattern);
    Some(text_of(ident, src).trim_matches('`').to_owned())
}

/// The first node of kind `kind` under `node` (itself included), in text order; a
/// cursor walk, so a deep tree takes no stack.
fn first_descendant<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    loop {
        if cursor.node().kind() == kind {
            return Some(cursor.node());
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() || cursor.node() == node {
                return None;
            }
        }
    }
}

/// The node naming a Lua function: the name of `function f`, `local function f`,
/// `function M.f`, `function M:m`, or the first variable of an assignment (also inside a
/// `variable_declaration`) whose first value is a function. Other assignments name
/// none.
fn lua_target(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "function_declaration" => node.child_by_field_name("name"),
        "variable_declaration" => lua_target(child_of_kind(node, &["assignment_statement"])?),
        "assignment_statement" => {
            let value = child_of_kind(node, &["expression_list"])?.named_child(0)?;
            if value.kind() != "function_definition" {
                return None;
            }
            child_of_kind(node, &["variable_list"])?.named_child(0)
        }
        _ => None,
    }
}

/// A Lua function: `function f`, `local function f`, `function M.f` and `M.f =
/// function ...` (functions, parent `M`), `function M:m` (a method, parent `M`).
fn lua_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let target = lua_target(node)?;
    let (kind, name) = match target.kind() {
        "method_index_expression" => (SymbolKind::Method, target.child_by_field_name("method")?),
        "dot_index_expression" => (SymbolKind::Function, target.child_by_field_name("field")?),
        _ => (SymbolKind::Function, target),
    };
    Some((kind, text_of(name, src).to_owned(), None))
}

/// The table a Lua function is defined in: `M.util` for `function M.util.f`.
fn lua_scope(node: Node<'_>, src: &str) -> Option<String> {
    let table = lua_target(node)?.child_by_field_name("table")?;
    Some(clip(text_of(table, src), MAX_SIGNATURE_BYTES))
}

/// A Zig declaration: `fn`, a `const` or `var` named by its identifier (a struct, enum,
/// union or opaque type when its value is one, and then a container of its members;
/// `@import` bindings are not symbols), and a `test` named by its string.
fn zig_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    match node.kind() {
        "function_declaration" => Some((function, name_of(node, "name", src), None)),
        "test_declaration" => {
            let name = child_of_kind(node, &["string", "identifier"])?;
            let name = child_of_kind(name, &["string_content"]).unwrap_or(name);
            Some((SymbolKind::Function, text_of(name, src).to_owned(), None))
        }
        "variable_declaration" => {
            let mut cursor = node.walk();
            let mut children = node.children(&mut cursor);
            let keyword = children.find(|c| matches!(c.kind(), "const" | "var"))?;
            let name = zig_declared_name(node)?;
            let containers = [
                "struct_declaration",
                "enum_declaration",
                "union_declaration",
                "opaque_declaration",
                "error_set_declaration",
            ];
            if let Some(value) = child_of_kind(node, &containers) {
                let kind = match value.kind() {
                    "struct_declaration" => SymbolKind::Struct,
                    "enum_declaration" => SymbolKind::Enum,
                    "union_declaration" if text_of(value, src).starts_with("union(") => {
                        SymbolKind::Enum
                    }
                    _ => SymbolKind::Type,
                };
                return Some((kind, text_of(name, src).to_owned(), Some(value)));
            }
            let imports = child_of_kind(node, &["builtin_function"])
                .is_some_and(|b| text_of(b, src).starts_with("@import"));
            let kind = match keyword.kind() {
                _ if imports => return None,
                "const" => SymbolKind::Const,
                _ => SymbolKind::Var,
            };
            Some((kind, text_of(name, src).to_owned(), None))
        }
        _ => None,
    }
}

/// The name of a Zig variable declaration: its first identifier child that no field
/// names (the grammar gives the name no field; `type` is one).
fn zig_declared_name(node: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    let unfielded = |i: usize| node.field_name_for_child(i as u32).is_none();
    node.children(&mut cursor)
        .enumerate()
        .find(|(i, child)| child.kind() == "identifier" && unfielded(*i))
        .map(|(_, child)| child)
}

/// A Dart declaration: classes, mixins (traits), extensions (impls, named by their name
/// or the type they extend), extension types (structs), enums and typedefs (types);
/// functions, getters and setters; top-level variables (consts when `const` or `final`);
/// in a type, methods and constructors (named `Circle.unit`), with or without a body,
/// and fields.
fn dart_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "class_declaration" => Some((SymbolKind::Class, name(), body())),
        "mixin_declaration" => Some((SymbolKind::Trait, name(), body())),
        "extension_declaration" => {
            let named = field_text(node, "name", src).or(field_text(node, "class", src))?;
            Some((SymbolKind::Impl, named.to_owned(), body()))
        }
        "extension_type_declaration" => Some((SymbolKind::Struct, name(), body())),
        "enum_declaration" => Some((SymbolKind::Enum, name(), body())),
        "type_alias" => {
            let ident = child_of_kind(node, &["type_identifier"])?;
            Some((SymbolKind::Type, text_of(ident, src).to_owned(), None))
        }
        "function_declaration"
        | "getter_declaration"
        | "setter_declaration"
        | "external_function_declaration" => {
            let signature = node.child_by_field_name("signature")?;
            Some((function, name_of(signature, "name", src), None))
        }
        "top_level_variable_declaration" => {
            let kind = match field_text(node, "modifier", src) {
                Some("const" | "final") => SymbolKind::Const,
                _ => SymbolKind::Var,
            };
            Some((kind, dart_first_variable(node, src)?, None))
        }
        "method_declaration" => {
            let signature = node.child_by_field_name("signature")?;
            dart_member(signature.named_child(0).unwrap_or(signature), src)
        }
        "declaration" => {
            let mut cursor = node.walk();
            let first = node
                .named_children(&mut cursor)
                .find(|c| c.kind() != "type")?;
            dart_member(first, src).or_else(|| {
                let is_const = text_of(node, src).split_whitespace().any(|w| w == "const");
                let kind = match is_const {
                    true => SymbolKind::Const,
                    false => SymbolKind::Var,
                };
                Some((kind, dart_first_variable(node, src)?, None))
            })
        }
        _ => None,
    }
}

/// A Dart member by its signature: a method, getter, setter or operator, or a
/// constructor named by its parts joined with `.` (`Circle.unit`).
fn dart_member<'t>(signature: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let name = match signature.kind() {
        "function_signature" | "getter_signature" | "setter_signature" => {
            name_of(signature, "name", src)
        }
        "operator_signature" => "operator".to_owned(),
        "constructor_signature"
        | "factory_constructor_signature"
        | "constant_constructor_signature"
        | "redirecting_factory_constructor_signature" => {
            let mut cursor = signature.walk();
            let parts: Vec<&str> = signature
                .children_by_field_name("name", &mut cursor)
                .filter(|n| n.is_named())
                .map(|n| text_of(n, src))
                .collect();
            parts.join(".")
        }
        _ => return None,
    };
    Some((SymbolKind::Method, name, None))
}

/// The first name a Dart variable declaration declares (`var a = 1, b = 2;` gives `a`).
fn dart_first_variable(node: Node<'_>, src: &str) -> Option<String> {
    let kinds = ["static_final_declaration", "initialized_identifier"];
    let first = kinds.iter().find_map(|k| first_descendant(node, k));
    let name = match first {
        Some(declared) => declared.child_by_field_name("name")?,
        None => first_descendant(child_of_kind(node, &["identifier_list"])?, "identifier")?,
    };
    Some(text_of(name, src).to_owned())
}

/// An OCaml definition, named by its first binding (`let rec f ... and g ...` is one
/// symbol, `f`): a `let` is a function when it takes parameters or its value is a `fun`
/// or `function`, else a const (`let () = ...` and other patterns are no symbol); a
/// type is a struct (record), enum (variant) or type; a module and a module type (an
/// interface) are containers of their structure or signature (in an interface, `.mli`,
/// a module's signature); a class of its object's
/// methods; an exception is a type, an `external` and a `val` functions.
fn ocaml_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let first = |kind| child_of_kind(node, &[kind]);
    let named = |kind| Some(text_of(child_of_kind(node, &[kind])?, src).to_owned());
    match node.kind() {
        "value_definition" => {
            let binding = first("let_binding")?;
            let pattern = binding.child_by_field_name("pattern")?;
            let name = match pattern.kind() {
                "value_name" => text_of(pattern, src),
                "parenthesized_operator" => text_of(pattern, src).trim_matches(['(', ')', ' ']),
                // A test of a ppx (`let%expect_test "name" = ...`), named as Zig's tests.
                "string" if first("attribute_id").is_some() => {
                    let test = text_of(pattern, src);
                    let test = test.strip_prefix('"').unwrap_or(test);
                    test.strip_suffix('"').unwrap_or(test)
                }
                _ => return None,
            };
            let body = binding.child_by_field_name("body").map(|b| b.kind());
            let takes = child_of_kind(binding, &["parameter"]).is_some()
                || matches!(body, Some("fun_expression" | "function_expression"))
                || pattern.kind() == "string";
            let kind = if takes { function } else { SymbolKind::Const };
            Some((kind, name.to_owned(), None))
        }
        "type_definition" => {
            let binding = first("type_binding")?;
            let kind = match binding.child_by_field_name("body").map(|b| b.kind()) {
                Some("record_declaration") => SymbolKind::Struct,
                Some("variant_declaration") => SymbolKind::Enum,
                _ => SymbolKind::Type,
            };
            Some((kind, name_of(binding, "name", src), None))
        }
        "module_definition" => {
            let binding = first("module_binding")?;
            let name = text_of(child_of_kind(binding, &["module_name"])?, src);
            // An interface's `module M : sig ... end` declares its module type only.
            let mut body = binding
                .child_by_field_name("body")
                .or_else(|| binding.child_by_field_name("module_type"));
            while let Some(wrapper) =
                body.filter(|b| !matches!(b.kind(), "structure" | "signature"))
            {
                body = match wrapper.kind() {
                    "functor" => wrapper.child_by_field_name("body"),
                    "typed_module_expression" => wrapper.child_by_field_name("module"),
                    "functor_type" => wrapper.child_by_field_name("codomain"),
                    _ => None,
                };
            }
            Some((SymbolKind::Module, name.to_owned(), body))
        }
        "module_type_definition" => Some((
            SymbolKind::Interface,
            named("module_type_name")?,
            node.child_by_field_name("body"),
        )),
        "class_definition" => {
            let binding = first("class_binding")?;
            let name = text_of(child_of_kind(binding, &["class_name"])?, src);
            let mut body = binding.child_by_field_name("body");
            if let Some(wrapped) = body.filter(|b| b.kind() == "let_class_expression") {
                body = wrapped.child_by_field_name("body");
            }
            let body = body.filter(|b| b.kind() == "object_expression");
            Some((SymbolKind::Class, name.to_owned(), body))
        }
        "method_definition" => Some((SymbolKind::Method, named("method_name")?, None)),
        "instance_variable_definition" => {
            Some((SymbolKind::Var, named("instance_variable_name")?, None))
        }
        "exception_definition" => {
            let declared = first_descendant(node, "constructor_name")?;
            Some((SymbolKind::Type, text_of(declared, src).to_owned(), None))
        }
        "external" | "value_specification" => Some((function, named("value_name")?, None)),
        _ => None,
    }
}

/// An Erlang form: `-module` (a module, the parent of what follows), a function (one
/// `fun_decl` per clause, merged; named by its first clause), `-record` (a struct),
/// `-type` and `-opaque` (types), `-define` (a macro).
fn erlang_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    let name = |n: Node<'_>| name_of(n, "name", src);
    match node.kind() {
        "module_attribute" => Some((SymbolKind::Module, name(node), None)),
        "fun_decl" => {
            let clause = node.child_by_field_name("clause")?;
            Some((SymbolKind::Function, name(clause), None))
        }
        "record_decl" => Some((SymbolKind::Struct, name(node), None)),
        "type_alias" | "opaque" => {
            let type_name = node.child_by_field_name("name")?;
            Some((SymbolKind::Type, name(type_name), None))
        }
        "pp_define" => {
            let lhs = node.child_by_field_name("lhs")?;
            Some((SymbolKind::Macro, name(lhs), None))
        }
        _ => None,
    }
}

/// Calls that make an R class, named by what they are assigned to or by their first
/// string argument.
const R_CLASS_MAKERS: [&str; 3] = ["setClass", "setRefClass", "R6Class"];

/// An R definition: an assignment (`<-`, `<<-`, `=`, `:=`) of a function (a function,
/// named by the variable, or `x` of `obj$x` with `obj` its parent) or of a class
/// (`setClass`, `setRefClass`, `R6Class`); a top-level `setClass(...)` (a class) or
/// `setGeneric(...)` (a function), named by its first string; `setMethod("f",
/// "Class", ...)`, a method of that class.
fn r_symbol<'t>(node: Node<'t>, src: &str) -> Option<Classified<'t>> {
    match node.kind() {
        "binary_operator" => {
            let operator = field_text(node, "operator", src)?;
            if !matches!(operator, "<-" | "<<-" | "=" | ":=") {
                return None;
            }
            let target = node.child_by_field_name("lhs")?;
            let name = match target.kind() {
                "identifier" => target,
                "extract_operator" => target.child_by_field_name("rhs")?,
                _ => return None,
            };
            let value = node.child_by_field_name("rhs")?;
            let kind = match value.kind() {
                "function_definition" => SymbolKind::Function,
                "call" if R_CLASS_MAKERS.contains(&field_text(value, "function", src)?) => {
                    SymbolKind::Class
                }
                _ => return None,
            };
            Some((kind, text_of(name, src).to_owned(), None))
        }
        "call" => {
            let kind = match field_text(node, "function", src)? {
                "setClass" | "setRefClass" => SymbolKind::Class,
                "setGeneric" => SymbolKind::Function,
                "setMethod" => SymbolKind::Method,
                _ => return None,
            };
            Some((kind, r_string_argument(node, 0, src)?, None))
        }
        _ => None,
    }
}

/// The parent of an R definition: `obj` of `obj$f <- function...`, the class of a
/// `setMethod("f", "Class", ...)`.
fn r_scope(node: Node<'_>, src: &str) -> Option<String> {
    match node.kind() {
        "call" => r_string_argument(node, 1, src)
            .filter(|_| field_text(node, "function", src) == Some("setMethod")),
        _ => {
            let target = node.child_by_field_name("lhs")?;
            let table = target
                .child_by_field_name("lhs")
                .filter(|_| target.kind() == "extract_operator")?;
            Some(clip(text_of(table, src), MAX_SIGNATURE_BYTES))
        }
    }
}

/// The content of the `index`th argument of an R call when it is a string.
fn r_string_argument(call: Node<'_>, index: usize, src: &str) -> Option<String> {
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let argument = arguments
        .named_children(&mut cursor)
        .filter(|a| a.kind() == "argument")
        .nth(index)?;
    let value = argument.child_by_field_name("value")?;
    let content = child_of_kind(value, &["string_content"]).filter(|_| value.kind() == "string")?;
    Some(text_of(content, src).to_owned())
}

/// A Scala definition: packages and package objects are modules, objects classes;
/// `val` and `var` are vars (consts when `final`), named by their pattern's first
/// identifier; a `given` with a body is an impl, an extension an impl named by the type
/// it extends, whose methods are its own children.
fn scala_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "package_clause" | "package_object" => Some((SymbolKind::Module, name(), body())),
        "object_definition" | "class_definition" => Some((SymbolKind::Class, name(), body())),
        "trait_definition" => Some((SymbolKind::Trait, name(), body())),
        "enum_definition" => Some((SymbolKind::Enum, name(), body())),
        "function_definition" | "function_declaration" => Some((function, name(), None)),
        "type_definition" => Some((SymbolKind::Type, name(), None)),
        "val_definition" | "var_definition" | "val_declaration" | "var_declaration" => {
            let is_final = modifiers_hold(node, "final", src);
            let kind = match is_final && node.kind().starts_with("val") {
                true => SymbolKind::Const,
                false => SymbolKind::Var,
            };
            let named = node
                .child_by_field_name("pattern")
                .or_else(|| node.child_by_field_name("name"))?;
            let ident = first_descendant(named, "identifier").unwrap_or(named);
            Some((kind, text_of(ident, src).to_owned(), None))
        }
        "given_definition" => {
            let named = field_text(node, "name", src).or(field_text(node, "return_type", src));
            let body = body().filter(|b| b.kind() == "with_template_body");
            let kind = match body {
                Some(_) => SymbolKind::Impl,
                None => SymbolKind::Const,
            };
            Some((kind, named?.to_owned(), body))
        }
        "extension_definition" => {
            let parameter = first_descendant(node.child_by_field_name("parameters")?, "parameter")?;
            let extended = field_text(parameter, "type", src)?;
            Some((SymbolKind::Impl, extended.to_owned(), Some(node)))
        }
        _ => None,
    }
}

/// A Haskell declaration: the module header; data types (an enum with two or more
/// constructors, else a struct), newtypes, synonyms and families (types); a class (an
/// interface whose members are its declarations); an instance (an impl named by its
/// class and types, `Show (Tree a)`); a signature, function or binding (a function, or
/// a method in a class or instance; a signature and its equations are one symbol, see
/// [`merges_clauses`]).
fn haskell_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let members = || node.child_by_field_name("declarations");
    match node.kind() {
        "header" => Some((SymbolKind::Module, name_of(node, "module", src), None)),
        "data_type" => {
            let constructors = node.child_by_field_name("constructors");
            let count = constructors.map_or(0, |c| c.named_child_count());
            let kind = match count {
                0 | 1 => SymbolKind::Struct,
                _ => SymbolKind::Enum,
            };
            Some((kind, name(), None))
        }
        "newtype" | "type_synonym" | "type_family" | "data_family" => {
            Some((SymbolKind::Type, name(), None))
        }
        "class" => Some((SymbolKind::Interface, name(), members())),
        "instance" => {
            let types = field_text(node, "patterns", src).unwrap_or("");
            let named = format!(
                "{} {}",
                name(),
                types.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            Some((SymbolKind::Impl, named.trim().to_owned(), members()))
        }
        "signature" | "function" | "bind" => {
            let named = node
                .child_by_field_name("name")
                .or_else(|| node.child_by_field_name("names")?.named_child(0))
                .or_else(|| child_of_kind(node, &["infix"])?.child_by_field_name("operator"))?;
            let text = text_of(named, src).trim_matches(|c| matches!(c, '(' | ')' | '`'));
            Some((function, text.to_owned(), None))
        }
        // `pattern T_If id = ...` (its signature apart, merged as a function's).
        "pattern_synonym" => {
            let mut synonym = node.named_child(0)?.child_by_field_name("synonym")?;
            while synonym.kind() == "apply" {
                synonym = synonym.child_by_field_name("function")?;
            }
            if synonym.kind() == "infix" {
                synonym = synonym.child_by_field_name("operator")?;
            }
            let text = text_of(synonym, src).trim_matches(|c| matches!(c, '(' | ')' | '`'));
            Some((function, text.to_owned(), None))
        }
        _ => None,
    }
}

/// An Elixir definition, a `call` named by its target: `defmodule` (a module named by
/// its alias, its `do` block the members), `defprotocol` (an interface), `defimpl` (an
/// impl), `def`, `defp`, `defdelegate`, `defguard` (functions named by their head's
/// call, a zero-arity head's identifier, or a guarded head's left side), `defmacro`
/// (a macro) and `defstruct` (a struct named by its module).
fn elixir_symbol<'t>(
    node: Node<'t>,
    src: &str,
    parent: Option<(&str, SymbolKind)>,
) -> Option<Classified<'t>> {
    if node.kind() == "unary_operator" {
        return elixir_typespec(node, src);
    }
    if node.kind() != "call" {
        return None;
    }
    let target = node.child_by_field_name("target")?;
    if target.kind() != "identifier" {
        return None;
    }
    let arguments = child_of_kind(node, &["arguments"]);
    let first = || arguments?.named_child(0);
    let block = || child_of_kind(node, &["do_block"]);
    let container = |kind| Some((kind, text_of(first()?, src).to_owned(), block()));
    match text_of(target, src) {
        "defmodule" => container(SymbolKind::Module),
        "defprotocol" => container(SymbolKind::Interface),
        "defimpl" => container(SymbolKind::Impl),
        "defstruct" | "defexception" => {
            let module = parent.map_or("defstruct", |(p, _)| p);
            Some((SymbolKind::Struct, module.to_owned(), None))
        }
        keyword @ ("def" | "defp" | "defdelegate" | "defguard" | "defguardp" | "defmacro"
        | "defmacrop") => {
            let mut head = first()?;
            let operator = |n: Node<'t>| n.child_by_field_name("operator");
            if head.kind() == "binary_operator"
                && operator(head).is_some_and(|o| text_of(o, src) == "when")
            {
                head = head.child_by_field_name("left").unwrap_or(head);
            }
            // An operator defined (`def left and right`, `def not value`): named by it.
            let name = match head.kind() {
                "call" => head.child_by_field_name("target")?,
                "identifier" => head,
                "binary_operator" | "unary_operator" => operator(head)?,
                _ => return None,
            };
            let kind = match keyword.starts_with("defmacro") {
                true => SymbolKind::Macro,
                false => SymbolKind::Function,
            };
            Some((kind, text_of(name, src).to_owned(), None))
        }
        _ => None,
    }
}

/// A C# declaration; a namespace is a module, a record or class a class; `function` is
/// the kind of a method here.
fn csharp_symbol<'t>(node: Node<'t>, src: &str, function: SymbolKind) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "namespace_declaration" | "file_scoped_namespace_declaration" => {
            Some((SymbolKind::Module, name(), body()))
        }
        "class_declaration" | "record_declaration" => Some((SymbolKind::Class, name(), body())),
        "struct_declaration" => Some((SymbolKind::Struct, name(), body())),
        "interface_declaration" => Some((SymbolKind::Interface, name(), body())),
        "enum_declaration" => Some((SymbolKind::Enum, name(), None)),
        "delegate_declaration" => Some((SymbolKind::Type, name(), None)),
        "method_declaration" | "constructor_declaration" | "destructor_declaration" => {
            Some((function, name(), None))
        }
        "operator_declaration" | "conversion_operator_declaration" => {
            Some((SymbolKind::Method, "operator".to_owned(), None))
        }
        "indexer_declaration" => Some((SymbolKind::Method, "this".to_owned(), None)),
        "property_declaration" | "event_declaration" => Some((SymbolKind::Var, name(), None)),
        "field_declaration" | "event_field_declaration" => {
            let kind = match text_of(node, src).contains("const ") {
                true => SymbolKind::Const,
                false => SymbolKind::Var,
            };
            Some((kind, first_declarator(node, src), None))
        }
        _ => None,
    }
}

/// A Kotlin declaration. Its grammar names few fields: a class's body and kind
/// (`interface`, `enum class`) are read from its children, a property's name from its
/// variable declaration; a companion object without a name is `Companion`, a
/// secondary constructor is named by its class (`parent`); `function` is the kind of a
/// function here.
fn kotlin_symbol<'t>(
    node: Node<'t>,
    src: &str,
    function: SymbolKind,
    parent: Option<(&str, SymbolKind)>,
) -> Option<Classified<'t>> {
    let name = || name_of(node, "name", src);
    let body = || body_of(Language::Kotlin, node);
    let has_child = |kind: &str| {
        let mut cursor = node.walk();
        node.children(&mut cursor).any(|c| c.kind() == kind)
    };
    match node.kind() {
        "class_declaration" => {
            let kind = if has_child("interface") {
                SymbolKind::Interface
            } else if has_child("enum_class_body") {
                SymbolKind::Enum
            } else {
                SymbolKind::Class
            };
            Some((kind, name(), body()))
        }
        "object_declaration" => Some((SymbolKind::Class, name(), body())),
        "companion_object" => {
            let named = field_text(node, "name", src).unwrap_or("Companion");
            Some((SymbolKind::Class, named.to_owned(), body()))
        }
        "function_declaration" => Some((function, name(), None)),
        "secondary_constructor" => {
            let class = parent.map_or("constructor", |(p, _)| p);
            Some((SymbolKind::Method, class.to_owned(), None))
        }
        "property_declaration" => {
            let kind = match modifiers_hold(node, "const", src) {
                true => SymbolKind::Const,
                false => SymbolKind::Var,
            };
            let name = kotlin_property_name(node, src).unwrap_or_default();
            Some((kind, name, None))
        }
        "type_alias" => Some((SymbolKind::Type, name_of(node, "type", src), None)),
        _ => None,
    }
}

/// True when a `modifiers` child of `node` holds the word `word` (Kotlin's `const`,
/// Scala's `final`: their grammars make modifiers anonymous tokens).
fn modifiers_hold(node: Node<'_>, word: &str, src: &str) -> bool {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|c| c.kind() == "modifiers")
        .any(|m| text_of(m, src).split_whitespace().any(|w| w == word))
}

/// A Kotlin property's name: its variable declaration's identifier, or the first of a
/// destructuring declaration's.
fn kotlin_property_name(node: Node<'_>, src: &str) -> Option<String> {
    let kinds = ["variable_declaration", "multi_variable_declaration"];
    let mut declaration = child_of_kind(node, &kinds)?;
    if declaration.kind() == "multi_variable_declaration" {
        declaration = declaration.named_child(0)?;
    }
    let ident = child_of_kind(declaration, &["identifier"])?;
    Some(text_of(ident, src).to_owned())
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

/// True for a C or C++ comment with code before it on its line (`}  // namespace x`):
/// it trails that code and attaches to nothing.
fn trails_code(language: Language, comment: Node<'_>, src: &str) -> bool {
    if !matches!(language, Language::C | Language::Cpp | Language::ObjC) {
        return false;
    }
    let before = src.get(..comment.start_byte()).unwrap_or_default();
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    !line.trim().is_empty()
}

/// True when only white space with at most one line feed lies between `end` and
/// `start`: what ends at `end` sits directly above what starts at `start`.
fn directly_above(src: &str, end: usize, start: usize) -> bool {
    src.get(end..start)
        .is_some_and(|between| between.matches('\n').count() <= 1 && between.trim().is_empty())
}

/// What a TypeScript `declare` wraps (its first named child), or `node` itself.
fn undeclared(node: Node<'_>) -> Node<'_> {
    match node.kind() {
        "ambient_declaration" => node.named_child(0).unwrap_or(node),
        _ => node,
    }
}

/// Whether `node` is TypeScript's `declare global { ... }` or the block it holds: the
/// declarations in it are of the level that holds it.
fn is_global_augmentation(node: Node<'_>) -> bool {
    let block_of = |n: Node<'_>| {
        n.kind() == "ambient_declaration"
            && n.named_child(0)
                .is_some_and(|c| c.kind() == "statement_block")
    };
    block_of(node) || (node.kind() == "statement_block" && node.parent().is_some_and(block_of))
}

/// The named children of `node`, those of its transparent children in their place.
fn level_nodes<'t>(language: Language, node: Node<'t>, src: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match is_transparent(language, child, src) {
            true => out.extend(level_nodes(language, child, src)),
            false => out.push(child),
        }
    }
    out
}

/// The symbols among the named children of `node`, with attached comments.
fn items<'t>(
    language: Language,
    node: Node<'t>,
    src: &str,
    parent: Option<(&str, SymbolKind)>,
) -> Vec<Item<'t>> {
    let mut out: Vec<Item<'t>> = Vec::new();
    // The comments and attributes directly above the next node.
    let mut attached: Option<Attached> = None;
    // A C# file-scoped namespace names the parent of every declaration after it.
    let mut scope: Option<String> = None;
    // Whether the last symbol found may take further clauses (nothing but comments and
    // attributes since).
    let mut clauses_open = false;
    let level = level_nodes(language, node, src);
    // Over a slice, so that a look ahead (`sql::run_len`) copies no nodes.
    let mut nodes = level.iter().copied().peekable();
    while let Some(child) = nodes.next() {
        let parent = parent.or(scope.as_deref().map(|s| (s, SymbolKind::Module)));
        let adjacent = |end: usize| directly_above(src, end, child.start_byte());
        let attaches = attachment(language, child, src);
        if attaches.is_some() && trails_code(language, child, src) {
            attached = None;
            continue;
        }
        if let Some(is_doc) = attaches {
            let text = text_of(child, src).to_owned();
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
        // SQL: a `CREATE` in an `ERROR`, with what follows it there (`sql::recovered`).
        if language == Language::Sql && child.kind() == "keyword_create" {
            let error = child.parent().map(|p| p.id());
            let len = sql::run_len(nodes.clone(), error);
            let run: Vec<Node<'t>> = std::iter::once(child)
                .chain(nodes.by_ref().take(len))
                .collect();
            let docs = attached.take().filter(|(_, end, _)| adjacent(*end));
            out.extend(recovered_item(&run, src, docs));
            clauses_open = false;
            continue;
        }
        // Wrappers whose inner declaration is the symbol: `export ...`, `@decorator def`,
        // TypeScript's `declare ...` (also inside `export`).
        let inner = match child.kind() {
            "export_statement" => child.child_by_field_name("declaration").map(undeclared),
            "ambient_declaration" => Some(undeclared(child)),
            "decorated_definition" => child.child_by_field_name("definition"),
            "template_declaration" => template_inner(child),
            // A Dart class member: its annotations, then the declaration.
            "member_declaration" => child_of_kind(child, &["method_declaration", "declaration"]),
            // A Julia definition under a macro (`@inline function f(x) ... end`).
            "macrocall_expression" => julia::macro_wrapped(child),
            // A shell function defined behind a guard (zsh's completion functions:
            // `(( $+functions[_f] )) ||` then `_f() { ... }`).
            "list" if language == Language::Shell => {
                last_named_child(child).filter(|n| n.kind() == "function_definition")
            }
            // What an SQL statement does (`CREATE TABLE ...`).
            "statement" if language == Language::Sql => sql::statement_inner(child),
            // A TypeScript `namespace` statement; a script's assignment
            // (`exports.f = function ...`).
            "expression_statement" => child.named_child(0).filter(|n| {
                matches!(
                    n.kind(),
                    "internal_module" | "module" | "assignment_expression"
                )
            }),
            _ => Some(child),
        };
        let found = inner
            .and_then(|inner| classify(language, inner, src, parent).map(|c| (inner, c)))
            .filter(|(inner, _)| !declares_in_error(language, *inner))
            .filter(|(_, (kind, name, _))| !named_by_keyword(language, *kind, name));
        if let Some((inner, (kind, name, body))) = found {
            // Another clause or equation of the function just found (Haskell's
            // signature and equations, Elixir's clauses) extends it.
            if merges_clauses(language)
                && matches!(
                    kind,
                    SymbolKind::Function | SymbolKind::Method | SymbolKind::Macro
                )
                && let Some(last) = out
                    .last_mut()
                    .filter(|l| clauses_open && l.symbol.name == name && l.symbol.kind == kind)
            {
                last.end = child.end_byte();
                attached = None;
                continue;
            }
            let receiver = match language {
                Language::Go if kind == SymbolKind::Method => go_receiver(inner, src),
                Language::Cpp => cpp_scope(inner, src),
                Language::Ruby => ruby_name(inner, src).1.map(str::to_owned),
                Language::Lua => lua_scope(inner, src),
                Language::R => r_scope(inner, src),
                Language::Toml => config::toml_scope(inner, src),
                Language::Julia => julia::julia_scope(inner, src),
                Language::Sql => sql::sql_scope(inner, src),
                Language::Hcl => config::hcl_scope(inner, src),
                Language::TypeScript | Language::Tsx | Language::JavaScript | Language::Jsx => {
                    script_assignment_scope(inner, src)
                }
                _ => None,
            };
            let (start, mut docs) = match attached.take() {
                Some((start, end, docs)) if adjacent(end) => (start, docs),
                _ => (child.start_byte(), Vec::new()),
            };
            if language == Language::Python
                && let Some(docstring) = python_docstring(inner, src)
            {
                docs.push(docstring);
            }
            let parent = receiver.or_else(|| parent.map(|(p, _)| clip(p, MAX_SIGNATURE_BYTES)));
            let signature = signature(language, inner, src);
            let symbol = found_symbol(kind, &name, parent, signature, &docs);
            if let Some(opened) = scope_opened(language, inner, &symbol, body.is_some()) {
                scope = Some(opened);
            }
            // Comments a TOML table ends with belong to the next table.
            let trailing = match language {
                Language::Toml => config::toml_trailing_comments(child, src),
                _ => None,
            };
            out.push(Item {
                start,
                end: trailing.as_ref().map_or(child.end_byte(), |(end, _)| *end),
                symbol,
                body,
            });
            attached = trailing.map(|(_, comments)| comments);
            clauses_open = true;
        } else {
            attached = None;
            clauses_open = false;
        }
    }
    out
}

/// The item of an SQL `CREATE` statement read from a run of an `ERROR`'s children
/// (`sql::recovered`), with the comments attached above it; its signature is its first
/// line.
fn recovered_item<'t>(run: &[Node<'t>], src: &str, attached: Option<Attached>) -> Option<Item<'t>> {
    let (kind, name, parent) = sql::recovered(run, src)?;
    let (first, last) = (run.first()?, run.last()?);
    let (start, docs) = attached.map_or((first.start_byte(), Vec::new()), |(s, _, d)| (s, d));
    let text = src.get(first.start_byte()..last.end_byte()).unwrap_or("");
    let parent = parent.map(|p| clip(&p, MAX_SIGNATURE_BYTES));
    let symbol = found_symbol(kind, &name, parent, first_line_signature(text), &docs);
    Some(Item {
        start,
        end: last.end_byte(),
        symbol,
        body: None,
    })
}

/// A symbol found at a level, whole (not a window): its name clipped to
/// [`MAX_SIGNATURE_BYTES`] (its parent as the caller clipped it), its attached doc
/// comments one after another.
fn found_symbol(
    kind: SymbolKind,
    name: &str,
    parent: Option<String>,
    signature: String,
    docs: &[String],
) -> Symbol {
    Symbol {
        kind,
        name: clip(name, MAX_SIGNATURE_BYTES),
        parent,
        signature,
        doc_comment: docs.join("\n"),
        window: None,
    }
}

/// The parent a declaration gives every symbol after it at its level, for those that
/// name what follows rather than what they hold: C#'s file-scoped namespace, PHP's
/// namespace without a body, Erlang's `-module(m).`, and Scala's package clause without
/// a body (`package a.b` then `package c` are the package `a.b.c`).
fn scope_opened(
    language: Language,
    inner: Node<'_>,
    symbol: &Symbol,
    has_body: bool,
) -> Option<String> {
    let kind = inner.kind();
    if language == Language::Scala && kind == "package_clause" && !has_body {
        return Some(match &symbol.parent {
            Some(p) => format!("{p}.{}", symbol.name),
            None => symbol.name.clone(),
        });
    }
    let opens = kind == "file_scoped_namespace_declaration"
        || (language == Language::Php && kind == "namespace_definition" && !has_body)
        || (language == Language::Erlang && kind == "module_attribute");
    opens.then(|| symbol.name.clone())
}

/// True for the languages that write one function as several sibling nodes: Haskell
/// (a type signature, then one equation per pattern), Elixir (one `def` per clause) and
/// Erlang (one `fun_decl` per clause).
/// Consecutive functions, methods or macros of one name there are one symbol, with
/// comments and attributes between them; anything else between them ends it. Other
/// kinds never merge: consecutive Elixir `defimpl Inspect, for: A` and `defimpl Inspect,
/// for: B` are two impls.
fn merges_clauses(language: Language) -> bool {
    matches!(
        language,
        Language::Haskell | Language::Elixir | Language::Erlang
    )
}

/// True for a container split into its members whatever its size: a C++, PHP or
/// TypeScript namespace (a `declare module` too), a Ruby, Elixir or Julia module or a
/// braced Scala package, which often holds a whole file: its members are what a search
/// looks for, and a file under the window size would otherwise be one chunk named after
/// it. C# namespaces and Rust `mod`s are split only past their language's size
/// ([`split_past`]): splitting them at any size lost file retrieval on the team's suite
/// (docs/bench-log/04-code-ranking-languages.md).
fn splits_at_any_size(language: Language, item: &Item<'_>) -> bool {
    let splits = [
        Language::Cpp,
        Language::Php,
        Language::Ruby,
        Language::Elixir,
        Language::Scala,
        Language::TypeScript,
        Language::Tsx,
        Language::Julia,
    ];
    splits.contains(&language) && item.symbol.kind == SymbolKind::Module && item.body.is_some()
}

/// The size past which a container of `language` is split into its members (when it
/// has any): [`CLASS_SPLIT_BYTES`] for Scala, Dart and Rust, [`WINDOW_BYTES`] for the
/// others.
fn split_past(language: Language) -> usize {
    if matches!(language, Language::Scala | Language::Dart | Language::Rust) {
        CLASS_SPLIT_BYTES
    } else {
        WINDOW_BYTES
    }
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
        let size = item.end - item.start;
        let whole = size <= WINDOW_BYTES && !splits_at_any_size(self.language, &item);
        if whole && size <= split_past(self.language) {
            self.whole(item);
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
        if whole {
            self.whole(item);
            return Ok(());
        }
        self.windows(item.start, item.end, &item.symbol);
        Ok(())
    }

    /// `item` as one chunk.
    fn whole(&mut self, item: Item<'_>) {
        self.doc.chunks.push(CodeChunk {
            start: item.start,
            end: item.end,
            symbol: Some(item.symbol),
        });
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

/// Words C has reserved since C89, which no C, C++ or Objective-C declaration can be
/// named (C23's newer ones, `bool` or `true`, name types and constants in older code).
const C_KEYWORDS: [&str; 33] = [
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned",
    "void", "volatile", "while",
];

/// The words C++ reserves beyond those (C++23), which no C++ declaration can be named.
const CPP_KEYWORDS: [&str; 58] = [
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "bool",
    "catch",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "false",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_assert",
    "static_cast",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    "xor",
];

/// True for a C, C++ or Objective-C declaration named by a reserved word: error
/// recovery around a macro the grammar cannot expand (`FMT_END_EXPORT` before `namespace
/// detail {`) read the keyword as a name, so the declaration is not what it seems. A
/// macro may define a keyword (`#define inline __inline`) and stays a symbol.
fn named_by_keyword(language: Language, kind: SymbolKind, name: &str) -> bool {
    if !matches!(language, Language::C | Language::Cpp | Language::ObjC)
        || kind == SymbolKind::Macro
    {
        return false;
    }
    C_KEYWORDS.contains(&name) || language == Language::Cpp && CPP_KEYWORDS.contains(&name)
}

/// True when the part of a declaration that names it holds an error (its `declarator`
/// or `name` field; the whole node when it has neither): its name cannot be trusted.
/// Errors elsewhere (a macro the grammar took for a type, a statement in a body, a
/// member of a container, which is judged on its own) leave it a symbol, so that one
/// error does not cost a file its other definitions. Objective-C's containers are
/// judged by their name; Zig's grammar puts a `MISSING` field in every empty container
/// (`struct {}`), so a Zig declaration is judged by its name; Julia's grammar names no
/// fields, so a Julia definition is judged by its signature, type head or left side.
fn declares_in_error(language: Language, node: Node<'_>) -> bool {
    if !node.has_error() {
        return false;
    }
    let julia = || julia::naming(node).filter(|_| language == Language::Julia);
    let naming = julia()
        .or_else(|| node.child_by_field_name("declarator"))
        .or_else(|| node.child_by_field_name("name"))
        .or_else(|| zig_declared_name(node).filter(|_| node.kind() == "variable_declaration"))
        .or_else(|| objc::container_name(node))
        .or_else(|| sql::naming(node));
    naming.is_none_or(|n| n.is_error() || n.is_missing() || holds_error(language, n))
}

/// True when a node under `node` is an `ERROR` or `MISSING` one, but for the type
/// tree-sitter-c and -cpp leave `MISSING` in an empty braced default argument (`const
/// X &a = {}` reads as a compound literal whose type is missing: nothing is wrong).
fn holds_error(language: Language, node: Node<'_>) -> bool {
    if !node.has_error() {
        return false;
    }
    if !matches!(language, Language::C | Language::Cpp | Language::ObjC) {
        return true;
    }
    let mut cursor = node.walk();
    node.children(&mut cursor).any(|child| {
        let typeless_literal = child.is_missing()
            && node.kind() == "compound_literal_expression"
            && node.child_by_field_name("type") == Some(child);
        !typeless_literal
            && (child.is_error() || child.is_missing() || holds_error(language, child))
    })
}

/// Chunks a code file by symbols, whatever errors its tree holds (an `ERROR` is never a
/// symbol; what it wraps counts as its parent's). `Ok(None)` when the language has no
/// grammar here or the parse fails or is cut off: the caller chunks the file as text
/// instead.
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
        let add = named(&doc, "add");
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
    fn typescript_generic_overloads_on_lines_of_their_own_parse_whole() {
        let text = include_str!("../test_data/golden/overloads.ts");
        let grammar = grammar(Language::TypeScript).unwrap();
        let (first, _) = parse_once(&grammar, text);
        assert!(
            first.unwrap().root_node().has_error(),
            "the grammar's own reading"
        );
        let tree = parse_tree(text, Language::TypeScript).unwrap();
        assert!(
            !tree.root_node().has_error(),
            "{}",
            tree.root_node().to_sexp()
        );
        // A tree whose error the separation does not mend stays the first one.
        let broken = include_str!("../test_data/golden/broken.ts");
        assert!(
            parse_tree(broken, Language::TypeScript)
                .unwrap()
                .root_node()
                .has_error()
        );
    }

    #[test]
    #[cfg(feature = "lang-cpp")]
    fn macros_before_declarations_do_not_run_a_class_on() {
        let text = "#ifndef FMT_FORMAT_H_\n#define FMT_FORMAT_H_\n\n#include \"base.h\"\n\nFMT_BEGIN_NAMESPACE\nnamespace detail {\n\n// Size and padding computation.\nstruct size_padding {\n  unsigned size;\n  unsigned padding;\n\n  FMT_CONSTEXPR size_padding(int num_digits, unsigned prefix, const format_specs& specs)\n      : size((prefix >> 24) + to_unsigned(num_digits)), padding(0) {\n    if (specs.align == align::numeric) {\n      padding = specs.width - size;\n    }\n  }\n};\n\ntemplate <typename Char> FMT_CONSTEXPR auto write_padded(int n) -> int {\n  return n;\n}\n\nFMT_CONSTEXPR20 void grow(int n) { use(n); }\n\n}  // namespace detail\nFMT_END_NAMESPACE\n\n#endif  // FMT_FORMAT_H_\n";
        let doc = chunk(text, Language::Cpp);
        covers(&doc, text);
        let detail = Some("detail".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("FMT_FORMAT_H_".into(), None, "macro"),
                ("detail".into(), None, "module"),
                ("size_padding".into(), detail.clone(), "struct"),
                ("write_padded".into(), detail.clone(), "function"),
                ("grow".into(), detail, "function"),
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-cpp")]
    fn an_empty_braced_default_argument_is_no_error() {
        let text =
            "void sink(const options &opts = {}) {\n  use(opts);\n}\nint g() { return 1; }\n";
        let (first, _) = parse_once(&grammar(Language::Cpp).unwrap(), text);
        assert!(
            first.unwrap().root_node().has_error(),
            "the grammar's MISSING"
        );
        assert_eq!(
            names(&chunk(text, Language::Cpp)),
            vec![
                ("sink".into(), None, "function"),
                ("g".into(), None, "function"),
            ]
        );
    }

    #[test]
    #[cfg(all(feature = "lang-c", feature = "lang-cpp"))]
    fn macros_alone_on_a_line_do_not_swallow_what_follows() {
        let text = "FMT_BEGIN_NAMESPACE\nnamespace detail {\n\n// Writes a buffer.\ntemplate <typename Char>\nvoid write_buffer(Char* buf) {\n  flush(buf);\n}\n\nstruct file_access_tag {};\n}  // namespace detail\nFMT_END_NAMESPACE\n";
        let (first, _) = parse_once(&grammar(Language::Cpp).unwrap(), text);
        assert!(
            first.unwrap().root_node().has_error(),
            "the grammar's own reading"
        );
        let doc = chunk(text, Language::Cpp);
        covers(&doc, text);
        let detail = Some("detail".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("detail".into(), None, "module"),
                ("write_buffer".into(), detail.clone(), "function"),
                ("file_access_tag".into(), detail, "struct"),
            ]
        );
        assert_eq!(
            symbol(&doc, "write_buffer").doc_comment,
            "// Writes a buffer."
        );
        // C's `__BEGIN_DECLS` likewise.
        let c = "__BEGIN_DECLS\nstatic int f(void) { return 1; }\n__END_DECLS\n";
        let (first, _) = parse_once(&grammar(Language::C).unwrap(), c);
        assert!(first.unwrap().root_node().has_error());
        assert_eq!(
            names(&chunk(c, Language::C)),
            vec![("f".into(), None, "function")]
        );
    }

    #[test]
    fn typescript_declarations_and_namespace_members() {
        let text = "declare function f(): void;\n\nexport declare namespace Api {\n  export interface Req { url: string }\n}\n\ndeclare module 'express' {\n  interface Request { user?: string }\n}\n\ndeclare global {\n  interface Window { app: unknown }\n}\n\nnamespace Util {\n  export function pad(s: string): string { return s }\n}\n";
        for language in [Language::TypeScript, Language::Tsx] {
            let doc = chunk(text, language);
            covers(&doc, text);
            let (api, express, util) = (
                Some("Api".into()),
                Some("express".into()),
                Some("Util".into()),
            );
            assert_eq!(
                names(&doc),
                vec![
                    // What `declare` wraps is the symbol, as what `export` wraps is.
                    ("f".into(), None, "function"),
                    // A namespace or module is split into its members at any size;
                    // a module's name is its string's content.
                    ("Api".into(), None, "module"),
                    ("Req".into(), api, "interface"),
                    ("express".into(), None, "module"),
                    ("Request".into(), express, "interface"),
                    // `declare global` augments the file's own level.
                    ("Window".into(), None, "interface"),
                    ("Util".into(), None, "module"),
                    ("pad".into(), util, "function"),
                ],
                "{language:?}"
            );
        }
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
    fn a_tree_with_errors_keeps_its_sound_declarations() {
        // Each text has a construct the grammar cannot read between or inside sound
        // declarations: those keep their symbols, the broken part is text between them.
        let cases: [(&str, Language, &[&str]); 3] = [
            (
                "fn a() {\n    let = 1;\n}\n\nfn b() -> u8 { 1 }\n",
                Language::Rust,
                &["a", "b"],
            ),
            (
                "def a():\n    return 1\n\nprint >>\n\ndef b():\n    return 2\n",
                Language::Python,
                &["a", "b"],
            ),
            // Call signatures with type parameters on successive lines, as in a real
            // interface the TypeScript grammar leaves an `ERROR` in.
            (
                "interface Get {\n  <K extends A>(key: K): A[K]\n  <K extends B>(key: K): B[K]\n}\n\nexport function run(): void {}\n",
                Language::TypeScript,
                &["Get", "run"],
            ),
        ];
        for (text, language, expected) in cases {
            let doc = chunk(text, language);
            covers(&doc, text);
            let got: Vec<String> = names(&doc).into_iter().map(|(n, _, _)| n).collect();
            assert_eq!(got, expected, "{language:?}: {text}");
        }
        // A file whose only declaration is broken has no symbol, but is chunked.
        let doc = chunk("fn (((", Language::Rust);
        covers(&doc, "fn (((");
        assert!(names(&doc).is_empty());
        // A language without a grammar goes to the text chunker.
        assert!(
            chunk_code("x", Language::Other("lua"), &ChunkParams::default())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    #[cfg(all(feature = "lang-csharp", feature = "lang-c", feature = "lang-cpp"))]
    fn errors_in_csharp_c_and_cpp_and_keywords_read_as_names() {
        // `#if` inside a base list leaves an `ERROR`; the class keeps its symbol.
        let text = "class A : B\n#if X\n  , C\n#endif\n{\n  void M() {}\n}\n";
        let doc = chunk(text, Language::CSharp);
        covers(&doc, text);
        assert_eq!(names(&doc), vec![("A".into(), None, "class")]);
        // A keyword is never a C, C++ or Objective-C name: recovery around a macro
        // made `namespace detail { ... }` a function named `namespace`.
        let text = "FMT_END_EXPORT\n\nnamespace detail {\nint f(int x) { return x; }\n}\n\nstruct S { int a; };\n";
        let doc = chunk(text, Language::Cpp);
        covers(&doc, text);
        let got: Vec<String> = names(&doc).into_iter().map(|(n, _, _)| n).collect();
        assert!(!got.iter().any(|n| n == "namespace"), "{got:?}");
        assert!(got.iter().any(|n| n == "S"), "{got:?}");
        let text = "#define inline __inline\nstatic inline int g(void) { return 1; }\n";
        assert_eq!(
            names(&chunk(text, Language::C)),
            vec![
                ("inline".into(), None, "macro"),
                ("g".into(), None, "function")
            ]
        );
    }

    /// Every chunk of a large class: its symbols' (name, parent, kind), windows once.
    // Used by the tests of the optional grammars.
    #[cfg_attr(not(feature = "all-languages"), allow(dead_code))]
    fn members(doc: &CodeDoc) -> Vec<(String, Option<String>, &'static str)> {
        let mut out = names(doc);
        out.dedup();
        out
    }

    /// The first chunk whose symbol is named `name`.
    fn named<'d>(doc: &'d CodeDoc, name: &str) -> &'d CodeChunk {
        let mut chunks = doc.chunks.iter();
        chunks
            .find(|c| c.symbol.as_ref().is_some_and(|s| s.name == name))
            .unwrap()
    }

    /// The first symbol named `name`.
    // Used by the tests of the optional grammars.
    #[cfg_attr(not(feature = "all-languages"), allow(dead_code))]
    fn symbol<'d>(doc: &'d CodeDoc, name: &str) -> &'d Symbol {
        named(doc, name).symbol.as_ref().unwrap()
    }

    #[test]
    #[cfg(feature = "lang-java")]
    fn java_classes_split_into_members_with_javadoc_and_enum_methods() {
        let pad = "        int x = 1;\n".repeat(400);
        let text = format!(
            "package a.b;\n\nimport java.util.List;\n\n/** A router. */\n@Deprecated\npublic class Router {{\n    /** Most. */\n    private static final int MAX = 3, MIN = 1;\n\n    public Router() {{}}\n\n    /** Routes. */\n    @Override\n    public void route(String path) {{\n{pad}    }}\n\n    enum Mode {{\n        A, B;\n        void go() {{}}\n    }}\n    interface Handler {{ void handle(); }}\n    record Point(int x, int y) {{}}\n}}\n"
        );
        let doc = chunk(&text, Language::Java);
        covers(&doc, &text);
        let router = Some("Router".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Router".into(), None, "class"),
                ("MAX".into(), router.clone(), "var"),
                ("Router".into(), router.clone(), "method"),
                ("route".into(), router.clone(), "method"),
                ("Mode".into(), router.clone(), "enum"),
                ("Handler".into(), router.clone(), "interface"),
                ("Point".into(), router, "class"),
            ]
        );
        let route = symbol(&doc, "route");
        assert_eq!(route.doc_comment, "/** Routes. */");
        assert_eq!(
            route.signature,
            "@Override\n    public void route(String path)"
        );
        // An enum's methods after its constants are its members.
        let small = "enum Mode {\n    A, B;\n    void go() {}\n}\n";
        let pad = format!(
            "    void big() {{\n{}    }}\n",
            "        int x = 1;\n".repeat(400)
        );
        let text = small.replace("    void go", &format!("{pad}    void go"));
        let doc = chunk(&text, Language::Java);
        let mode = Some("Mode".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Mode".into(), None, "enum"),
                ("big".into(), mode.clone(), "method"),
                ("go".into(), mode, "method"),
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-csharp")]
    fn csharp_file_scoped_namespace_parents_what_follows_and_members_split() {
        let pad = "        int x = 1;\n".repeat(400);
        let text = format!(
            "using System;\n\nnamespace Serilog.Core;\n\n/// <summary>A logger.</summary>\n[Serializable]\npublic sealed class Logger : ILogger\n{{\n    const int Max = 3;\n    public string Name {{ get; set; }}\n    public void Write(string m)\n    {{\n{pad}    }}\n#if DEBUG\n    void Debug() {{ }}\n#endif\n}}\n\npublic record Point(int X, int Y);\npublic delegate void Handler(int x);\npublic interface ILog {{ void W(); }}\n"
        );
        let doc = chunk(&text, Language::CSharp);
        covers(&doc, &text);
        let ns = Some("Serilog.Core".to_owned());
        let logger = Some("Logger".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Serilog.Core".into(), None, "module"),
                ("Logger".into(), ns.clone(), "class"),
                ("Max".into(), logger.clone(), "const"),
                ("Name".into(), logger.clone(), "var"),
                ("Write".into(), logger.clone(), "method"),
                ("Debug".into(), logger, "method"),
                ("Point".into(), ns.clone(), "class"),
                ("Handler".into(), ns.clone(), "type"),
                ("ILog".into(), ns, "interface"),
            ]
        );
        let class = symbol(&doc, "Logger");
        assert_eq!(class.doc_comment, "/// <summary>A logger.</summary>");
        assert_eq!(
            class.signature,
            "[Serializable]\npublic sealed class Logger : ILogger"
        );
    }

    #[test]
    #[cfg(feature = "lang-kotlin")]
    fn kotlin_classes_objects_properties_and_a_one_line_body() {
        let pad = "        val x = 1\n".repeat(500);
        let text = format!(
            "package okhttp3\n\nimport java.io.File\n\n/** A client. */\nclass OkHttpClient(val a: Int) : Call.Factory {{\n    val timeout: Int = 0\n    constructor(b: String) : this(1)\n    /** Calls. */\n    fun newCall(request: Request): Call {{\n{pad}        return RealCall()\n    }}\n    companion object {{\n        const val MAX = 3\n    }}\n}}\n\ninterface Interceptor {{\n    fun intercept(chain: Chain): Response\n}}\nenum class Protocol {{\n    HTTP_1, HTTP_2;\n    fun isHttp() = true\n}}\ntypealias Headers = Map<String, String>\nfun topLevel(x: Int) = x\nprivate const val TOP = 1\n"
        );
        let doc = chunk(&text, Language::Kotlin);
        covers(&doc, &text);
        let client = Some("OkHttpClient".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("OkHttpClient".into(), None, "class"),
                ("timeout".into(), client.clone(), "var"),
                ("OkHttpClient".into(), client.clone(), "method"),
                ("newCall".into(), client.clone(), "method"),
                ("Companion".into(), client, "class"),
                ("Interceptor".into(), None, "interface"),
                ("Protocol".into(), None, "enum"),
                ("Headers".into(), None, "type"),
                ("topLevel".into(), None, "function"),
                ("TOP".into(), None, "const"),
            ]
        );
        let call = symbol(&doc, "newCall");
        assert_eq!(call.signature, "fun newCall(request: Request): Call");
        assert_eq!(call.doc_comment, "/** Calls. */");
        // A one-line body: the grammar assumes the newline it wants after a member (a
        // MISSING node), which is no error here.
        let one_line = "class A { fun a() = 1 }\n";
        assert_eq!(
            names(&chunk(one_line, Language::Kotlin)),
            vec![("A".into(), None, "class")]
        );
        // A syntax error that swallows the class's name leaves no symbol, and the
        // file is still chunked.
        let broken = "class A {\n  fun (\n}\n";
        covers(&chunk(broken, Language::Kotlin), broken);
    }

    #[test]
    #[cfg(all(feature = "lang-cpp", feature = "lang-php", feature = "lang-ruby"))]
    fn cpp_namespaces_classes_and_qualified_definitions() {
        let pad = "  int x = 1;\n".repeat(600);
        let text = format!(
            "#include <string>\n\nnamespace db {{\n\nnamespace {{\nint NextId() {{ return 1; }}\n}}  // namespace\n\n// A table.\nclass Table {{\n public:\n  Table();\n  int Get(int key) const;\n  int n_ GUARDED_BY(mu_);\n}};\n\ntemplate <typename T>\nT Clamp(T v) {{ return v; }}\n\nTable::Table() {{\n{pad}}}\n\nint Table::Get(int key) const {{ return key; }}\n\nstruct Table::Rep {{ int a; }};\n\nusing Map = std::map<int, int>;\n\n}}  // namespace db\n"
        );
        let doc = chunk(&text, Language::Cpp);
        covers(&doc, &text);
        let db = Some("db".to_owned());
        let table = Some("Table".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("db".into(), None, "module"),
                // An anonymous namespace is read through.
                ("NextId".into(), db.clone(), "function"),
                ("Table".into(), db.clone(), "class"),
                ("Clamp".into(), db.clone(), "function"),
                // Definitions outside their class take its name as their parent.
                ("Table".into(), table.clone(), "method"),
                ("Get".into(), table.clone(), "method"),
                ("Rep".into(), table, "struct"),
                ("Map".into(), db, "type"),
            ]
        );
        assert_eq!(symbol(&doc, "Clamp").signature, "T Clamp(T v)");
        // `}  // namespace` trails what it follows: the class's comment is its own.
        assert_eq!(symbol(&doc, "Table").doc_comment, "// A table.");
        // A namespace (a Ruby module) is split into its members whatever its size.
        let small = chunk("namespace a {\nint f() { return 1; }\n}\n", Language::Cpp);
        let a = Some("a".to_owned());
        assert_eq!(
            members(&small),
            vec![("a".into(), None, "module"), ("f".into(), a, "function")]
        );
        let php = chunk(
            "<?php\nnamespace A {\n  function f() {}\n}\n",
            Language::Php,
        );
        let ruby = chunk("module A\n  def f; end\nend\n", Language::Ruby);
        let a = Some("A".to_owned());
        assert_eq!(
            members(&php),
            vec![
                ("A".into(), None, "module"),
                ("f".into(), a.clone(), "function")
            ]
        );
        assert_eq!(
            members(&ruby),
            vec![("A".into(), None, "module"), ("f".into(), a, "method")]
        );
        // A class whose members the grammar misreads (`GUARDED_BY`) is still one.
        assert!(doc.chunks.iter().any(|c| {
            c.symbol
                .as_ref()
                .is_some_and(|s| s.name == "Table" && s.kind == SymbolKind::Class)
                && text[c.start..c.end].contains("GUARDED_BY")
        }));
    }

    #[test]
    #[cfg(feature = "lang-c")]
    fn c_definitions_not_prototypes_through_header_guards() {
        let text = "#ifndef A_H\n#define A_H\nvoid list_free(struct list *l);\n/* Frees. */\nvoid list_free(struct list *l) { free(l); }\nstatic const int kMax = 3;\nstruct list *(*make)(void);\ntypedef enum { A, B } mode_t;\n#ifdef __cplusplus\nextern \"C\" {\n#endif\nint api(void);\n#endif\n";
        let doc = chunk(text, Language::C);
        covers(&doc, text);
        assert_eq!(
            members(&doc),
            vec![
                // Prototypes are not symbols: the definition is.
                ("A_H".into(), None, "macro"),
                ("list_free".into(), None, "function"),
                ("kMax".into(), None, "const"),
                // A pointer to a function is a variable, not a prototype.
                ("make".into(), None, "var"),
                ("mode_t".into(), None, "enum"),
            ]
        );
        assert_eq!(symbol(&doc, "list_free").doc_comment, "/* Frees. */");
    }

    #[test]
    #[cfg(feature = "lang-ruby")]
    fn ruby_modules_classes_methods_and_constants() {
        let pad = "      x = 1\n".repeat(700);
        let text = format!(
            "require \"json\"\n\nmodule Rack\n  # A handler.\n  class Handler < Base\n    VERSION = \"1.0\"\n    attr_reader :app\n\n    # Makes one.\n    def initialize(app)\n{pad}    end\n\n    def self.call(env)\n      env\n    end\n\n    class << self\n      def helper; end\n    end\n  end\n\n  class Rack::Other; end\nend\n\ndef top_level(x) = x * 2\n"
        );
        let doc = chunk(&text, Language::Ruby);
        covers(&doc, &text);
        let rack = Some("Rack".to_owned());
        let handler = Some("Handler".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Rack".into(), None, "module"),
                ("Handler".into(), rack.clone(), "class"),
                ("VERSION".into(), handler.clone(), "const"),
                ("initialize".into(), handler.clone(), "method"),
                ("call".into(), handler.clone(), "method"),
                // `class << self` is read through.
                ("helper".into(), handler, "method"),
                ("Other".into(), rack, "class"),
                ("top_level".into(), None, "function"),
            ]
        );
        // The comment before a class's first member is its own, though the grammar
        // puts it outside the body.
        assert_eq!(symbol(&doc, "Handler").doc_comment, "# A handler.");
        assert_eq!(symbol(&doc, "initialize").doc_comment, "# Makes one.");
        assert_eq!(symbol(&doc, "Handler").signature, "class Handler < Base");
    }

    #[test]
    #[cfg(feature = "lang-ruby")]
    fn ruby_definitions_under_conditionals_and_begin_are_their_levels() {
        let text = "module Utils
  if defined?(Process::CLOCK_MONOTONIC)
    def clock_time
      1
    end
  else
    def clock_time
      2
    end
  end

  unless method_defined?(:options)
    def options; end
  end
end

begin
  require 'haml'
  class HamlTest < Base
    def test_it; end
  end
rescue LoadError
  warn 'skipping'
end

if ready
  run
end
";
        let doc = chunk(text, Language::Ruby);
        covers(&doc, text);
        let utils = Some("Utils".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("Utils".into(), None, "module"),
                ("clock_time".into(), utils.clone(), "method"),
                ("clock_time".into(), utils.clone(), "method"),
                ("options".into(), utils, "method"),
                ("HamlTest".into(), None, "class"),
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-php")]
    fn php_namespaces_parent_what_follows_and_classes_split() {
        let pad = "        $x = 1;\n".repeat(500);
        let text = format!(
            "<?php\ndeclare(strict_types=1);\n\nnamespace Monolog\\Handler;\n\nuse Monolog\\Logger;\n\n/**\n * Streams records.\n */\n#[Attr]\nfinal class StreamHandler extends AbstractHandler\n{{\n    public const MAX = 10;\n    protected ?string $url = null, $other;\n\n    /** Writes. */\n    protected function write(array $record): void\n    {{\n{pad}    }}\n}}\n\ninterface Formatter {{ public function format(array $r); }}\ntrait Loggable {{ function log() {{}} }}\nenum Level: int {{ case Debug = 100; }}\nfunction helper(int $x): int {{ return $x; }}\n"
        );
        let doc = chunk(&text, Language::Php);
        covers(&doc, &text);
        let ns = Some("Monolog\\Handler".to_owned());
        let class = Some("StreamHandler".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Monolog\\Handler".into(), None, "module"),
                ("StreamHandler".into(), ns.clone(), "class"),
                ("MAX".into(), class.clone(), "const"),
                ("url".into(), class.clone(), "var"),
                ("write".into(), class, "method"),
                ("Formatter".into(), ns.clone(), "interface"),
                ("Loggable".into(), ns.clone(), "trait"),
                ("Level".into(), ns.clone(), "enum"),
                ("helper".into(), ns, "function"),
            ]
        );
        let class = symbol(&doc, "StreamHandler");
        assert_eq!(class.doc_comment, "/**\n * Streams records.\n */");
        assert_eq!(symbol(&doc, "write").doc_comment, "/** Writes. */");
    }

    /// A file whose parse would run away (found by fuzzing: the Kotlin grammar's error
    /// recovery on 844 bytes took over 4 GB) is cut off by its budget and chunked as
    /// text; the thread's parser then serves the next file as a fresh one.
    #[test]
    #[cfg(feature = "lang-swift")]
    fn swift_types_extensions_protocols_and_members() {
        let pad = "        let x = 1\n".repeat(500);
        let text = format!(
            "import Foundation\n\n/// A session.\npublic final class Session: NSObject {{\n    /// The default one.\n    public static let `default` = Session()\n    var retries = 0\n\n    init(retries: Int) {{\n{pad}    }}\n\n    func request(_ url: URL) -> Int {{ 1 }}\n    deinit {{}}\n}}\n\nprotocol Adapter {{\n    func adapt() throws\n}}\n\nstruct Point {{ let x: Double }}\nenum Method {{ case get }}\nextension Session: Adapter {{}}\nactor Counter {{}}\ntypealias Handler = (Int) -> Void\nfunc top(x: Int) -> Int {{ x }}\nlet (a, b) = (1, 2)\n"
        );
        let doc = chunk(&text, Language::Swift);
        covers(&doc, &text);
        let session = Some("Session".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Session".into(), None, "class"),
                ("default".into(), session.clone(), "const"),
                ("retries".into(), session.clone(), "var"),
                ("init".into(), session.clone(), "method"),
                ("request".into(), session.clone(), "method"),
                ("deinit".into(), session, "method"),
                ("Adapter".into(), None, "interface"),
                ("Point".into(), None, "struct"),
                ("Method".into(), None, "enum"),
                ("Session".into(), None, "impl"),
                ("Counter".into(), None, "class"),
                ("Handler".into(), None, "type"),
                ("top".into(), None, "function"),
                ("a".into(), None, "const"),
            ]
        );
        assert_eq!(symbol(&doc, "default").doc_comment, "/// The default one.");
        assert_eq!(
            symbol(&doc, "Session").signature,
            "public final class Session: NSObject"
        );
        assert_eq!(symbol(&doc, "top").signature, "func top(x: Int) -> Int");
    }

    #[test]
    #[cfg(feature = "lang-shell")]
    fn shell_functions_with_their_comments_not_the_shebang() {
        let text = "#!/usr/bin/env bash\n# Logs a line.\nlog() { echo \"$1\"; }\n\nfunction build {\n  make\n}\nreadonly X=1\n";
        let doc = chunk(text, Language::Shell);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("log".into(), None, "function"),
                ("build".into(), None, "function"),
            ]
        );
        assert_eq!(symbol(&doc, "log").doc_comment, "# Logs a line.");
        let text = "#!/bin/sh\nlog() { :; }\n";
        assert_eq!(symbol(&chunk(text, Language::Shell), "log").doc_comment, "");
        // A script in braces (so that it runs only once downloaded whole).
        let text = "#!/bin/sh\n{\nlog() { :; }\nlog\n}\n";
        assert_eq!(
            names(&chunk(text, Language::Shell)),
            vec![("log".into(), None, "function")]
        );
        // Functions behind a guard, as zsh completion scripts define them: the guard
        // is the function's chunk too.
        let text = "(( $+functions[_my-app_commands] )) ||\n_my-app_commands() {\n  _describe -t commands c \"$@\"\n}\ntrue && function g { :; }\n";
        let doc = chunk(text, Language::Shell);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("_my-app_commands".into(), None, "function"),
                ("g".into(), None, "function"),
            ]
        );
        assert_eq!(
            (doc.chunks[0].start, doc.chunks[0].symbol.is_some()),
            (0, true)
        );
        // zsh's parameter flags and nested expansions, which bash's grammar cannot read.
        let text = "#compdef tool\n\n_tool_lines() {\n    local -a lines\n    lines=(\"${(@f)\"$(tool --list)\"}\")\n    _describe 'lines' lines\n}\n\n_tool_word() {\n    printf %s \"${#${(z)LBUFFER}[-1]}\"\n}\n\n_tool() {\n    _arguments '1: :_tool_lines'\n}\n";
        let (first, _) = parse_once(&grammar(Language::Shell).unwrap(), text);
        assert!(
            first.unwrap().root_node().has_error(),
            "the grammar's own reading"
        );
        let doc = chunk(text, Language::Shell);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("_tool_lines".into(), None, "function"),
                ("_tool_word".into(), None, "function"),
                ("_tool".into(), None, "function"),
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-lua")]
    fn lua_functions_methods_and_their_tables() {
        let text = "local M = {}\n\n--- Makes one.\nfunction M.new(o) return o end\nfunction M:add(x) end\nfunction M.util.f() end\nM.total = function(t) end\nlocal function clamp(n) return n end\nlocal x = 1\nreturn M\n";
        let doc = chunk(text, Language::Lua);
        covers(&doc, text);
        let m = Some("M".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("new".into(), m.clone(), "function"),
                ("add".into(), m.clone(), "method"),
                ("f".into(), Some("M.util".into()), "function"),
                ("total".into(), m, "function"),
                ("clamp".into(), None, "function"),
            ]
        );
        assert_eq!(symbol(&doc, "new").doc_comment, "--- Makes one.");
    }

    #[test]
    #[cfg(feature = "lang-zig")]
    fn zig_containers_split_into_fields_methods_and_declarations() {
        let pad = "    x += 1;\n".repeat(700);
        let text = format!(
            "const std = @import(\"std\");\n\n/// A ring.\npub const Ring = struct {{\n    items: [4]u32 = undefined,\n    const Self = @This();\n    /// Pushes.\n    pub fn push(self: *Self) void {{\n{pad}    }}\n}};\n\nconst Tag = enum {{ a, b }};\nconst Empty = struct {{}};\nvar counter: u32 = 0;\nfn free() void {{}}\ntest \"ring\" {{}}\n"
        );
        let doc = chunk(&text, Language::Zig);
        covers(&doc, &text);
        let ring = Some("Ring".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Ring".into(), None, "struct"),
                ("Self".into(), ring.clone(), "const"),
                ("push".into(), ring, "method"),
                ("Tag".into(), None, "enum"),
                ("Empty".into(), None, "struct"),
                ("counter".into(), None, "var"),
                ("free".into(), None, "function"),
                ("ring".into(), None, "function"),
            ]
        );
        assert_eq!(symbol(&doc, "push").doc_comment, "/// Pushes.");
    }

    #[test]
    #[cfg(feature = "lang-scala")]
    fn scala_packages_objects_classes_and_extensions() {
        let pad = "    val x = 1\n".repeat(600);
        let text = format!(
            "package com.shop\npackage cart\n\n/** A cart. */\nclass Cart(owner: String) {{\n  final val Max = 50\n  var items = 0\n  /** Adds. */\n  def add(p: Int): Unit = {{\n{pad}  }}\n}}\n\nobject Cart {{ def empty = new Cart(\"\") }}\ntrait Named {{ def name: String }}\ntype Price = BigDecimal\ndef top(x: Int): Int = x\nextension (p: Product)\n  def label: String = p.name\n"
        );
        let doc = chunk(&text, Language::Scala);
        covers(&doc, &text);
        let package = Some("com.shop.cart".to_owned());
        let cart = Some("Cart".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("com.shop".into(), None, "module"),
                ("cart".into(), Some("com.shop".into()), "module"),
                ("Cart".into(), package.clone(), "class"),
                ("Max".into(), cart.clone(), "const"),
                ("items".into(), cart.clone(), "var"),
                ("add".into(), cart.clone(), "method"),
                ("Cart".into(), package.clone(), "class"),
                ("Named".into(), package.clone(), "trait"),
                ("Price".into(), package.clone(), "type"),
                ("top".into(), package.clone(), "function"),
                ("Product".into(), package, "impl"),
            ]
        );
        assert_eq!(symbol(&doc, "add").doc_comment, "/** Adds. */");
    }

    /// A Scala, Dart or Rust container is split into its members past `CLASS_SPLIT_BYTES`,
    /// where other languages keep one whole up to `WINDOW_BYTES`; a smaller one, and a
    /// large definition without members, stay one chunk.
    fn classes_split_past_their_own_size(
        language: Language,
        def: &str,
        class: &str,
        function: &str,
    ) {
        let defs = |n: usize| {
            (0..n)
                .map(|i| def.replace("{i}", &i.to_string()))
                .collect::<String>()
        };
        let big = class.replace("{name}", "Big").replace("{body}", &defs(60));
        let small = class
            .replace("{name}", "Small")
            .replace("{body}", &defs(20));
        let long = function.replace("{body}", &"    y = y + 1;\n".repeat(150));
        assert!(big.len() > CLASS_SPLIT_BYTES && big.len() < WINDOW_BYTES);
        assert!(small.len() < CLASS_SPLIT_BYTES);
        assert!(long.len() > CLASS_SPLIT_BYTES && long.len() < WINDOW_BYTES);
        let text = format!("{big}\n{small}\n{long}");
        let doc = chunk(&text, language);
        covers(&doc, &text);
        let of = |parent: &str| {
            let parent = Some(parent.to_owned());
            doc.chunks
                .iter()
                .filter(|c| c.symbol.as_ref().is_some_and(|s| s.parent == parent))
                .count()
        };
        assert_eq!(of("Big"), 60, "{language:?}");
        assert_eq!(of("Small"), 0, "{language:?}");
        let text_of = |name: &str| {
            let c = named(&doc, name);
            text[c.start..c.end].trim_end()
        };
        assert_eq!(text_of("Small"), small.trim_end());
        assert_eq!(text_of("long"), long.trim_end());
    }

    #[test]
    #[cfg(feature = "lang-scala")]
    fn scala_containers_split_past_their_own_size() {
        classes_split_past_their_own_size(
            Language::Scala,
            "  def step{i}(x: Int): Int = x + {i} * 31 + 7\n",
            "trait {name} {\n{body}}\n",
            "def long(x: Int): Int = {\n  var y = x\n{body}  y\n}\n",
        );
    }

    #[test]
    fn rust_impl_blocks_split_past_their_own_size() {
        classes_split_past_their_own_size(
            Language::Rust,
            "    fn step{i}(x: i32) -> i32 { x + {i} * 31 + 7 }\n",
            "impl {name} {\n{body}}\n",
            "fn long(x: i32) -> i32 {\n    let mut y = x;\n{body}    y\n}\n",
        );
    }

    #[test]
    #[cfg(feature = "lang-dart")]
    fn dart_classes_split_past_their_own_size() {
        classes_split_past_their_own_size(
            Language::Dart,
            "  int step{i}(int x) => x + {i} * 31 + 7;\n",
            "class {name} {\n{body}}\n",
            "int long(int x) {\n  var y = x;\n{body}  return y;\n}\n",
        );
    }

    #[test]
    #[cfg(feature = "lang-haskell")]
    fn haskell_signatures_and_equations_are_one_function() {
        let pad = "  gross x = x\n".repeat(600);
        let text = format!(
            "module Shop (Item) where\n\nimport Data.List\n\n-- | An item.\ndata Item = Item {{ count :: Int }}\ndata Size = Small | Large\n\n-- | Priced things.\nclass Priced a where\n  price :: a -> Int\n  -- | With tax.\n  gross :: a -> Int\n{pad}\ninstance Priced Item where\n  price i = count i\n\n-- | Describes.\ndescribe :: Size -> String\ndescribe Small = \"S\"\n-- the other one\ndescribe Large = \"L\"\n\n{{-# INLINE total #-}}\ntotal :: Int\ntotal = 1\n"
        );
        let doc = chunk(&text, Language::Haskell);
        covers(&doc, &text);
        let priced = Some("Priced".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Shop".into(), None, "module"),
                ("Item".into(), None, "struct"),
                ("Size".into(), None, "enum"),
                ("Priced".into(), None, "interface"),
                ("price".into(), priced.clone(), "method"),
                ("gross".into(), priced, "method"),
                ("Priced Item".into(), None, "impl"),
                ("describe".into(), None, "function"),
                ("total".into(), None, "function"),
            ]
        );
        let describe = named(&doc, "describe");
        assert!(
            text[describe.start..describe.end]
                .trim_end()
                .ends_with("describe Large = \"L\"")
        );
        assert_eq!(symbol(&doc, "describe").doc_comment, "-- | Describes.");
        assert_eq!(symbol(&doc, "gross").doc_comment, "-- | With tax.");
        assert_eq!(symbol(&doc, "total").doc_comment, "");
    }

    #[test]
    #[cfg(feature = "lang-haskell")]
    fn haskell_pattern_synonyms_and_every_cpp_branch() {
        let text = "{-# LANGUAGE CPP, PatternSynonyms #-}\nmodule AST where\n\npattern T_If :: Id -> Token\npattern T_If id = OuterToken id Inner_T_If\npattern a :> b <- (a, b)\n\n#ifdef USE_ORDEREDMAP\nempty :: KeyMap v\nempty = KeyMap M.empty\n#else\nempty :: KeyMap v\nempty = KeyMap H.empty\n\nsingleton :: Key -> v -> KeyMap v\nsingleton k v = KeyMap (H.singleton k v)\n#endif\n\ntoList :: KeyMap v -> [(Key, v)]\ntoList = undefined\n";
        let doc = chunk(text, Language::Haskell);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("AST".into(), None, "module"),
                ("T_If".into(), None, "function"),
                (":>".into(), None, "function"),
                // Both branches' equations, one after the other: one function.
                ("empty".into(), None, "function"),
                ("singleton".into(), None, "function"),
                ("toList".into(), None, "function"),
            ]
        );
        // The signature and the equation are one chunk.
        let t_if = named(&doc, "T_If");
        assert!(text[t_if.start..t_if.end].contains("Inner_T_If"));
    }

    #[test]
    #[cfg(feature = "lang-elixir")]
    fn elixir_modules_clauses_and_attributes() {
        let pad = "    x = 1\n".repeat(800);
        let text = format!(
            "defmodule Geo.Shapes do\n  @moduledoc \"Shapes.\"\n  defstruct name: nil\n  @type point :: {{number, number}}\n  @doc \"Reads one.\"\n  @callback read(t, keyword) :: {{:ok, t}} when t: term\n  @macrocallback m(term) :: Macro.t\n\n  @doc \"Counts down.\"\n  @spec countdown(integer) :: :done\n  def countdown(0), do: :done\n  # the rest\n  def countdown(n) when n > 0 do\n{pad}  end\n\n  defp double(x), do: x * 2\n  def hello, do: :hi\n  defmacro twice(x), do: x\n\n  defmodule Inner do\n  end\nend\n\ndefprotocol Geo.Describe do\n  def describe(v)\nend\n\ndefimpl Geo.Describe, for: Geo.Shapes do\n  def describe(s), do: s.name\nend\n"
        );
        let doc = chunk(&text, Language::Elixir);
        covers(&doc, &text);
        let shapes = Some("Geo.Shapes".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Geo.Shapes".into(), None, "module"),
                ("Geo.Shapes".into(), shapes.clone(), "struct"),
                // Types and a behaviour's callbacks are defined by attributes.
                ("point".into(), shapes.clone(), "type"),
                ("read".into(), shapes.clone(), "function"),
                ("m".into(), shapes.clone(), "macro"),
                ("countdown".into(), shapes.clone(), "function"),
                ("double".into(), shapes.clone(), "function"),
                ("hello".into(), shapes.clone(), "function"),
                ("twice".into(), shapes.clone(), "macro"),
                ("Inner".into(), shapes, "module"),
                ("Geo.Describe".into(), None, "interface"),
                ("Geo.Describe".into(), None, "impl"),
            ]
        );
        // A module is split into its members whatever its size.
        let small = "defmodule A do\n  def f(x), do: x\nend\n";
        assert_eq!(
            members(&chunk(small, Language::Elixir)),
            vec![
                ("A".into(), None, "module"),
                ("f".into(), Some("A".into()), "function"),
            ]
        );
        let countdown = symbol(&doc, "countdown");
        assert_eq!(countdown.doc_comment, "@doc \"Counts down.\"");
        assert_eq!(countdown.signature, "def countdown(0), do: :done");
        assert_eq!(symbol(&doc, "read").doc_comment, "@doc \"Reads one.\"");
    }

    #[test]
    #[cfg(feature = "lang-elixir")]
    fn elixir_definitions_in_describe_and_conditionals_impls_apart_and_operators() {
        let text = "defmodule T do
  describe \"custom ids\" do
    defmodule Prefixed do
    end

    test \"casts\" do
      def not_a_member, do: 1
    end
  end

  if Code.ensure_loaded?(Duration) do
    defp cast(d), do: d
  else
    defp fallback(d), do: d
  end

  for {code, phrase} <- [{200, :ok}] do
    def code(unquote(phrase)), do: unquote(code)
  end

  case System.otp_release() do
    \"26\" -> def otp, do: 26
    _ -> def otp, do: 0
  end

  quote do
    def injected, do: 1
  end

  def left and right, do: left && right
  def not value, do: !value
  def size(x) when is_list(x), do: length(x)
end

defimpl Inspect, for: A do
  def inspect(a, _), do: a
end

defimpl Inspect, for: B do
  def inspect(b, _), do: b
end
";
        let doc = chunk(text, Language::Elixir);
        covers(&doc, text);
        let t = Some("T".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("T".into(), None, "module"),
                ("Prefixed".into(), t.clone(), "module"),
                ("cast".into(), t.clone(), "function"),
                ("fallback".into(), t.clone(), "function"),
                ("code".into(), t.clone(), "function"),
                ("otp".into(), t.clone(), "function"),
                ("otp".into(), t.clone(), "function"),
                ("and".into(), t.clone(), "function"),
                ("not".into(), t.clone(), "function"),
                ("size".into(), t, "function"),
                ("Inspect".into(), None, "impl"),
                ("Inspect".into(), None, "impl"),
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-dart")]
    fn dart_classes_members_constructors_and_extensions() {
        let pad = "    x += 1;\n".repeat(700);
        let text = format!(
            "import 'dart:math';\n\n/// Max sides.\nconst int maxSides = 12;\ntypedef Measure = double Function(int s);\nint add(int a, int b) => a + b;\n\n/// A circle.\nclass Circle extends Shape {{\n  /// Its radius.\n  final double radius;\n  Circle(this.radius);\n  Circle.unit() : radius = 1.0;\n  @override\n  double area() {{\n{pad}  }}\n  double get diameter => radius * 2;\n  double perimeter();\n}}\n\nmixin Named {{}}\nextension Doubled on Circle {{}}\nextension on String {{}}\nenum Color {{ red, green }}\n"
        );
        let doc = chunk(&text, Language::Dart);
        covers(&doc, &text);
        let circle = Some("Circle".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("maxSides".into(), None, "const"),
                ("Measure".into(), None, "type"),
                ("add".into(), None, "function"),
                ("Circle".into(), None, "class"),
                ("radius".into(), circle.clone(), "var"),
                ("Circle".into(), circle.clone(), "method"),
                ("Circle.unit".into(), circle.clone(), "method"),
                ("area".into(), circle.clone(), "method"),
                ("diameter".into(), circle.clone(), "method"),
                ("perimeter".into(), circle, "method"),
                ("Named".into(), None, "trait"),
                ("Doubled".into(), None, "impl"),
                ("String".into(), None, "impl"),
                ("Color".into(), None, "enum"),
            ]
        );
        assert_eq!(symbol(&doc, "radius").doc_comment, "/// Its radius.");
        assert_eq!(symbol(&doc, "area").signature, "@override\n  double area()");
    }

    #[test]
    #[cfg(feature = "lang-ocaml")]
    fn ocaml_lets_types_modules_and_classes() {
        let pad = "  let x = 1\n".repeat(700);
        let text = format!(
            "open Printf\n\n(** Raised on a miss. *)\nexception Not_stocked of string\nexternal now : unit -> float = \"now\"\ntype item = {{ name : string }}\ntype place = Front | Back\nlet default_qty = 10\n(** Shows. *)\nlet show it = it.name\nlet rec even n = n = 0\nand odd n = n = 1\nlet (+++) a b = a + b\nlet () = ()\nmodule type ORDERED = sig\n  val compare : int -> int\nend\nmodule Stock = struct\n  (** Adds. *)\n  let add it = it\n{pad}end\nmodule MaxOf (X : ORDERED) = struct let max a b = a end\nclass counter start = object\n  method get = start\nend\n"
        );
        let doc = chunk(&text, Language::OCaml);
        covers(&doc, &text);
        let stock = Some("Stock".to_owned());
        assert_eq!(
            members(&doc),
            vec![
                ("Not_stocked".into(), None, "type"),
                ("now".into(), None, "function"),
                ("item".into(), None, "struct"),
                ("place".into(), None, "enum"),
                ("default_qty".into(), None, "const"),
                ("show".into(), None, "function"),
                ("even".into(), None, "function"),
                ("+++".into(), None, "function"),
                ("ORDERED".into(), None, "interface"),
                ("Stock".into(), None, "module"),
                ("add".into(), stock.clone(), "function"),
                ("x".into(), stock, "const"),
                ("MaxOf".into(), None, "module"),
                ("counter".into(), None, "class"),
            ]
        );
        assert_eq!(symbol(&doc, "add").doc_comment, "(** Adds. *)");
        assert_eq!(
            symbol(&doc, "Not_stocked").doc_comment,
            "(** Raised on a miss. *)"
        );
    }

    #[test]
    #[cfg(feature = "lang-ocaml")]
    fn ocaml_ppx_tests_are_named_by_their_string() {
        let text = "let%expect_test \"round trip\" =\n  print_endline \"a\";\n  [%expect {| a |}]\n;;\n\nlet%test_unit \"zero\" = assert (0 = 0)\n\nlet () = run ()\n";
        let doc = chunk(text, Language::OCaml);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("round trip".into(), None, "function"),
                ("zero".into(), None, "function"),
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-erlang")]
    fn erlang_functions_merge_their_clauses_under_their_module() {
        let text = "%% @doc A cache.\n-module(cache).\n-export([get/1]).\n-define(TIMEOUT, 5000).\n-record(state, {hits = 0}).\n-type key() :: atom().\n\n%% @doc Looks up.\n-spec get(key()) -> term().\nget(a) -> 1;\nget(_) -> 2.\n\nput(K, V) -> ok.\n";
        let doc = chunk(text, Language::Erlang);
        covers(&doc, text);
        let cache = Some("cache".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("cache".into(), None, "module"),
                ("TIMEOUT".into(), cache.clone(), "macro"),
                ("state".into(), cache.clone(), "struct"),
                ("key".into(), cache.clone(), "type"),
                ("get".into(), cache.clone(), "function"),
                ("put".into(), cache, "function"),
            ]
        );
        let get = symbol(&doc, "get");
        assert_eq!(get.doc_comment, "%% @doc Looks up.");
        assert_eq!(get.signature, "get(a)");
        let chunk = doc
            .chunks
            .iter()
            .find(|c| c.symbol.as_ref() == Some(get))
            .unwrap();
        assert!(text[chunk.start..chunk.end].contains("get(_) -> 2."));
    }

    #[test]
    #[cfg(feature = "lang-yaml")]
    fn yaml_keys_and_sections_split_into_their_keys_when_large() {
        let steps = "      - run: cargo test --workspace --all-features\n".repeat(160);
        let text = format!(
            "# The pipeline's name.\nname: CI\n'on':\n  push:\n    branches: [main]\njobs:\n  # Tests.\n  test:\n    steps:\n{steps}  lint:\n    runs-on: ubuntu-latest\n---\nkind: Service\n"
        );
        let doc = chunk(&text, Language::Yaml);
        covers(&doc, &text);
        assert_eq!(
            names(&doc),
            vec![
                ("name".into(), None, "key"),
                ("on".into(), None, "section"),
                ("jobs".into(), None, "section"),
                ("test".into(), Some("jobs".into()), "section"),
                // Over 7,000 bytes: windows of one key.
                ("steps".into(), Some("test".into()), "key"),
                ("steps".into(), Some("test".into()), "key"),
                ("lint".into(), Some("jobs".into()), "section"),
                ("kind".into(), None, "key"),
            ]
        );
        assert_eq!(symbol(&doc, "name").doc_comment, "# The pipeline's name.");
        assert_eq!(symbol(&doc, "on").signature, "'on':");
    }

    /// The YAML grammar's scanner saves one entry per open block and overruns its
    /// state buffer (an abort) past about 250: a file indented that deep is text, and
    /// the deepest files below the limit parse.
    #[test]
    #[cfg(feature = "lang-yaml")]
    fn yaml_too_deep_for_the_scanner_is_text() {
        let nested = |step: &str, levels: usize| {
            (0..levels)
                .map(|i| format!("{}k{i}:\n", step.repeat(i)))
                .collect::<String>()
        };
        let deep = nested(" ", 300);
        assert!(
            chunk_code(&deep, Language::Yaml, &ChunkParams::default())
                .unwrap()
                .is_none()
        );
        let dashes = |n: usize| format!("{}a\n", "- ".repeat(n));
        let mut compact = String::new();
        for i in 0..31 {
            compact.push_str(&format!("{}k:\n{}- ", "  ".repeat(i), "  ".repeat(i)));
            compact.push('\n');
        }
        for text in [
            nested(" ", 63),
            nested("\t", 63),
            dashes(31),
            dashes(40),
            compact,
        ] {
            // Parsed or text; never an abort.
            let _ = chunk_code(&text, Language::Yaml, &ChunkParams::default()).unwrap();
        }
    }

    /// The scanner starts a row at a lone CR too, and skips a byte-order mark: lines
    /// that begin after either are measured as any other (found by reading the
    /// scanner: each of these aborted the process).
    #[test]
    #[cfg(feature = "lang-yaml")]
    fn yaml_rows_begin_after_a_cr_and_past_a_byte_order_mark() {
        let dashes = "- ".repeat(254) + "x\n";
        let nested: String = (0..300)
            .map(|i| format!("{}k{i}:\r", " ".repeat(i)))
            .collect();
        for text in [
            format!("\r{dashes}"),
            format!("\u{FEFF}{dashes}"),
            format!("#\r{dashes}"),
            format!("---\r{dashes}"),
            nested,
        ] {
            assert!(config::yaml_too_deep(&text), "{:?}", &text[..8]);
            assert!(parse_tree(&text, Language::Yaml).is_none());
        }
        let shallow = "a:\r  b: 1\r\u{FEFF}c: 2\r\n";
        assert!(!config::yaml_too_deep(shallow));
        assert!(parse_tree(shallow, Language::Yaml).is_some());
    }

    #[test]
    #[cfg(feature = "lang-toml")]
    fn toml_tables_are_sections_named_by_their_last_key_part() {
        let text = "title = \"x\"\nsite.url = \"https://example.org\"\n# The package.\n[package]\nname = \"cfs\"\n\n# Parsers.\n# Pinned.\n[dependencies.\"tree-sitter\"]\nversion = \"0.27\"\n# The last table's.\n\n[[bin]]\nname = \"cfs\"\n# At the end.\n";
        let doc = chunk(text, Language::Toml);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("title".into(), None, "key"),
                ("url".into(), Some("site".into()), "key"),
                ("package".into(), None, "section"),
                ("tree-sitter".into(), Some("dependencies".into()), "section"),
                ("bin".into(), None, "section"),
            ]
        );
        assert_eq!(symbol(&doc, "package").doc_comment, "# The package.");
        // The grammar makes the comments above a header the table before's children.
        assert_eq!(
            symbol(&doc, "tree-sitter").doc_comment,
            "# Parsers.\n# Pinned."
        );
        let text_of = |name: &str| {
            let c = named(&doc, name);
            &text[c.start..c.end]
        };
        assert_eq!(
            text_of("package"),
            "# The package.\n[package]\nname = \"cfs\"\n\n"
        );
        assert!(text_of("tree-sitter").ends_with("# The last table's.\n\n"));
        assert!(text_of("bin").ends_with("# At the end.\n"));
    }

    #[test]
    #[cfg(feature = "lang-hcl")]
    fn hcl_blocks_are_named_by_their_last_label_and_split_into_blocks() {
        let rules = "      \"10.0.0.0/8\", \"172.16.0.0/12\", \"192.168.0.0/16\",\n".repeat(150);
        let text = format!(
            "# Logs.\nresource \"aws_s3_bucket\" \"logs\" {{\n  bucket = \"x\"\n}}\nresource \"aws_security_group\" \"web\" {{\n  name = \"web\"\n  ingress {{\n    cidr_blocks = [\n{rules}    ]\n  }}\n  egress {{\n    from_port = 0\n  }}\n}}\nlocals {{\n  a = 1\n}}\nregion = \"eu\"\n"
        );
        let doc = chunk(&text, Language::Hcl);
        covers(&doc, &text);
        assert_eq!(
            names(&doc),
            vec![
                ("logs".into(), Some("aws_s3_bucket".into()), "section"),
                ("web".into(), Some("aws_security_group".into()), "section"),
                ("name".into(), Some("web".into()), "key"),
                ("ingress".into(), Some("web".into()), "section"),
                ("cidr_blocks".into(), Some("ingress".into()), "key"),
                ("cidr_blocks".into(), Some("ingress".into()), "key"),
                ("egress".into(), Some("web".into()), "section"),
                ("locals".into(), None, "section"),
                ("region".into(), None, "key"),
            ]
        );
        assert_eq!(symbol(&doc, "logs").doc_comment, "# Logs.");
    }

    #[test]
    #[cfg(feature = "lang-css")]
    fn css_rules_at_rules_and_keyframes() {
        let text = "/* Buttons. */\n.btn,\n.btn-primary  >  a:hover {\n  color: red;\n}\n@media (max-width: 600px) {\n  .nav { display: none; }\n}\n@keyframes spin { to { transform: rotate(1turn); } }\n@import url(\"x.css\");\n";
        let doc = chunk(text, Language::Css);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                (".btn, .btn-primary > a:hover".into(), None, "rule"),
                ("@media (max-width: 600px)".into(), None, "rule"),
                ("spin".into(), None, "rule"),
            ]
        );
        let btn = symbol(&doc, ".btn, .btn-primary > a:hover");
        assert_eq!(btn.doc_comment, "/* Buttons. */");
        assert_eq!(btn.signature, ".btn,\n.btn-primary  >  a:hover");
        // What the CSS grammar cannot read (SCSS variables, an old hack) is text
        // between the rules it can.
        let scss = "$x: 1;\n.a { color: red; }\n.b { *zoom: 1; }\n@mixin m { color: red; }\n";
        let doc = chunk(scss, Language::Css);
        covers(&doc, scss);
        assert_eq!(
            names(&doc),
            vec![
                (".a".into(), None, "rule"),
                ("@mixin m".into(), None, "rule")
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-objc")]
    fn objc_classes_categories_protocols_and_selectors() {
        let text = "#import <Foundation/Foundation.h>\nNS_ASSUME_NONNULL_BEGIN\n/** Colors. */\ntypedef NS_ENUM(NSInteger, Color) {\n    ColorRed,\n    ColorGreen = 5,\n};\n/// Something that can be started.\n@protocol Runnable <NSObject>\n- (void)start;\n@optional\n- (BOOL)canStartWithDelay:(double)delay;\n@end\n/** A small worker. */\n@interface Worker : NSObject <Runnable>\n@property (nonatomic, copy) NSString *name;\n- (instancetype)initWithName:(NSString *)name NS_DESIGNATED_INITIALIZER;\n- (void)setValue:(id)v forKey:(NSString *)k;\n@end\n@interface Worker (Extra)\n- (NSString *)summary;\n@end\n@interface Worker ()\n@property (nonatomic) NSInteger count;\n@end\nint add_ints(int a, int b) {\n    return a + b;\n}\n@implementation Worker\n#pragma mark - Lifecycle\n\n// Starts the job.\n- (void)start {\n    self.count += 1;\n}\n\n- (void)setValue:(id)v forKey:(NSString *)k {\n    NSLog(@\"%@ = %@\", k, v);\n}\n@end\nNS_ASSUME_NONNULL_END\n";
        let doc = chunk(text, Language::ObjC);
        covers(&doc, text);
        let worker = || Some("Worker".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("Color".into(), None, "enum"),
                ("Runnable".into(), None, "interface"),
                ("Worker".into(), None, "class"),
                ("Worker".into(), None, "impl"),
                ("Worker".into(), None, "impl"),
                ("add_ints".into(), None, "function"),
                ("Worker".into(), None, "impl"),
            ]
        );
        let color = symbol(&doc, "Color");
        assert_eq!(color.signature, "typedef NS_ENUM(NSInteger, Color)");
        assert_eq!(color.doc_comment, "/** Colors. */");
        // A large implementation splits into its methods, named by their selectors.
        let body = "    NSLog(@\"%@\", self);\n".repeat(300);
        let big = format!(
            "@implementation Worker\n// Starts.\n- (void)start {{\n{body}}}\n\n- (void)setValue:(id)v forKey:(NSString *)k {{\n}}\n+ (instancetype)shared {{\n    return nil;\n}}\n@end\n"
        );
        let doc = chunk(&big, Language::ObjC);
        covers(&doc, &big);
        let methods: Vec<_> = names(&doc)
            .into_iter()
            .filter(|n| n.2 == "method")
            .collect();
        assert_eq!(
            methods,
            vec![
                ("start".into(), worker(), "method"),
                ("start".into(), worker(), "method"),
                ("setValue:forKey:".into(), worker(), "method"),
                ("shared".into(), worker(), "method"),
            ]
        );
        assert_eq!(symbol(&doc, "start").doc_comment, "// Starts.");
        assert_eq!(
            symbol(&doc, "setValue:forKey:").signature,
            "- (void)setValue:(id)v forKey:(NSString *)k"
        );
        // Members of an interface, when it is split.
        let props = "@property (nonatomic, copy) NSString *a;\n".repeat(200)
            + "@property (nonatomic, copy) void (^handler)(int code);\n";
        let iface = format!(
            "@interface Big : NSObject\n{props}- (instancetype)initWithName:(NSString *)name NS_DESIGNATED_INITIALIZER;\n@end\n"
        );
        let doc = chunk(&iface, Language::ObjC);
        let last = doc
            .chunks
            .iter()
            .rev()
            .find_map(|c| c.symbol.as_ref())
            .unwrap();
        assert_eq!(
            (last.name.as_str(), last.kind.name()),
            ("initWithName:", "method")
        );
        assert!(names(&doc).contains(&("a".into(), Some("Big".into()), "var")));
        // A block property is named by the block, not by its parameter.
        assert!(names(&doc).contains(&("handler".into(), Some("Big".into()), "var")));
    }

    #[test]
    #[cfg(feature = "lang-ocaml")]
    fn ocaml_interfaces_declare_values_types_and_module_signatures() {
        let vals = "  val v : int\n".repeat(600);
        let text = format!(
            "(** Keys. *)\ntype key = string\ntype t = {{ a : int }}\nexception Full of int\n(** [create n] makes one. *)\nval create : int -> t\nexternal now : unit -> float = \"now\"\nmodule type ORDERED = sig\n  type t\nend\nmodule Big : sig\n{vals}  (** Resets. *)\n  val reset : t -> unit\nend\nmodule Make (O : ORDERED) : sig\n  type k = O.t\nend\n"
        );
        let doc = chunk(&text, Language::OCamlInterface);
        covers(&doc, &text);
        let found = names(&doc);
        assert_eq!(
            found[..6].to_vec(),
            vec![
                ("key".into(), None, "type"),
                ("t".into(), None, "struct"),
                ("Full".into(), None, "type"),
                ("create".into(), None, "function"),
                ("now".into(), None, "function"),
                ("ORDERED".into(), None, "interface"),
            ]
        );
        assert_eq!(
            symbol(&doc, "create").doc_comment,
            "(** [create n] makes one. *)"
        );
        // A module's signature over 7,000 bytes splits into its declarations.
        assert!(found.contains(&("reset".into(), Some("Big".into()), "function")));
        assert_eq!(symbol(&doc, "reset").doc_comment, "(** Resets. *)");
        assert_eq!(found.last(), Some(&("Make".into(), None, "module")));
    }

    #[test]
    #[cfg(feature = "lang-sql")]
    fn sql_tables_views_functions_indexes_triggers_and_types() {
        let text = include_str!("../test_data/golden/small.sql");
        let doc = chunk(text, Language::Sql);
        covers(&doc, text);
        let shop = || Some("shop".to_owned());
        assert_eq!(
            names(&doc),
            vec![
                ("shop".into(), None, "module"),
                ("customers".into(), shop(), "table"),
                ("order".into(), None, "table"),
                ("order_customer_idx".into(), None, "index"),
                ("customers_email_lower".into(), None, "index"),
                ("order_state".into(), None, "enum"),
                ("money_pair".into(), None, "type"),
                ("invoice_number".into(), None, "var"),
                ("active_customers".into(), None, "table"),
                ("daily_totals".into(), Some("reporting".into()), "table"),
                ("order_count".into(), shop(), "function"),
                ("touch_created".into(), None, "function"),
                ("customers_touch".into(), None, "trigger"),
                ("audit_log".into(), None, "table"),
            ]
        );
        let customers = symbol(&doc, "customers");
        assert_eq!(
            customers.doc_comment,
            "-- Customers, one row per account.\n-- Email addresses are unique."
        );
        assert_eq!(
            customers.signature,
            "CREATE TABLE IF NOT EXISTS shop.customers"
        );
        assert_eq!(
            symbol(&doc, "order").doc_comment,
            "/* Orders placed by customers. */"
        );
        assert_eq!(
            symbol(&doc, "order_count").signature,
            "CREATE OR REPLACE FUNCTION shop.order_count(customer bigint)\n\
             RETURNS bigint\nLANGUAGE sql STABLE"
        );
        // The `;` after a statement is in its chunk.
        let table = doc.chunks.iter().find(|c| c.symbol.is_some()).unwrap();
        assert!(text[table.start..table.end].ends_with(";\n\n"));
        // A statement the grammar cannot read stays text between the ones it can
        // (`SET` with a list), or, a `CREATE`, is read from its words (a procedure).
        let mixed = "SET search_path = a, b;\nCREATE PROCEDURE p() LANGUAGE sql AS $$ \
                     DELETE FROM t $$;\nCREATE VIEW v AS SELECT 1;\n";
        assert!(
            parse_tree(mixed, Language::Sql)
                .unwrap()
                .root_node()
                .has_error()
        );
        let doc = chunk(mixed, Language::Sql);
        covers(&doc, mixed);
        assert_eq!(
            names(&doc),
            vec![("p".into(), None, "function"), ("v".into(), None, "table")]
        );
        // A dollar-quoted body is read as a string: statements in it the grammar cannot
        // read (`begin end;`) do not carry the function past its end; a `$$` in a
        // comment or a string opens nothing.
        let bodies = "create function f() returns void as $$ begin end; $$ language plpgsql;\n\
                      -- costs $$ here\ncreate table t (a text default '$$');\n\
                      create function g() returns int as $body$ select 1 $body$ language sql;\n";
        let doc = chunk(bodies, Language::Sql);
        covers(&doc, bodies);
        assert_eq!(
            names(&doc),
            vec![
                ("f".into(), None, "function"),
                ("t".into(), None, "table"),
                ("g".into(), None, "function"),
            ]
        );
        assert_eq!(symbol(&doc, "t").doc_comment, "-- costs $$ here");
        assert_eq!(
            sql::readable("select $1, a$b$ from t; do $x$ é\n $$ $x$;").as_deref(),
            Some("select  1, a b  from t; do '     \n      ';")
        );
        // A `CREATE` the grammar read only the head of is still its symbol (a table
        // without columns, a name in letters outside ASCII), although error recovery
        // put both, and the statement after them, in one `ERROR`.
        let heads = "CREATE TABLE empty ();\nCREATE SCHEMA تست;\nCREATE TABLE a (x int CHECK \
                     (x ~* '[')) CREATE TABLE b (y int);\nCREATE VIEW w AS SELECT 1;\n";
        let doc = chunk(heads, Language::Sql);
        covers(&doc, heads);
        assert_eq!(
            names(&doc),
            vec![
                ("empty".into(), None, "table"),
                ("تست".into(), None, "module"),
                ("a".into(), None, "table"),
                ("b".into(), None, "table"),
                ("w".into(), None, "table"),
            ]
        );
        // Comments inside a recovered head are part of it, and nest as PostgreSQL
        // reads them; one after it attaches to what follows (rules 2).
        for (text, name) in [
            (
                "CREATE /* a /* nested */ comment */ TABLE audit ();\n",
                "audit",
            ),
            ("CREATE -- plain\n  TABLE log ();\n", "log"),
        ] {
            let doc = chunk(text, Language::Sql);
            covers(&doc, text);
            assert_eq!(names(&doc), vec![(name.into(), None, "table")], "{text}");
        }
        let after = "CREATE TABLE log ();\n-- About seen.\nCREATE TABLE seen ();\n";
        let doc = chunk(after, Language::Sql);
        covers(&doc, after);
        assert_eq!(
            names(&doc),
            vec![
                ("log".into(), None, "table"),
                ("seen".into(), None, "table")
            ]
        );
        assert_eq!(symbol(&doc, "seen").doc_comment, "-- About seen.");
        assert_eq!(
            code_parser(Language::Sql).as_deref(),
            Some("code/3 tree-sitter=0.27 sequel=0.3.11 rules=2")
        );
        assert_eq!(
            code_parser(Language::Rust).as_deref(),
            Some("code/3 tree-sitter=0.27 rust=0.24.2 rules=3")
        );
    }

    #[test]
    #[cfg(feature = "lang-julia")]
    fn julia_functions_short_and_long_types_macros_and_modules() {
        let text = include_str!("../test_data/golden/small.jl");
        let doc = chunk(text, Language::Julia);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("Dense".into(), None, "struct"),
                ("AbstractOptimiser".into(), None, "type"),
                ("Adam".into(), None, "struct"),
                ("ϵ".into(), None, "const"),
                ("Dense".into(), None, "function"),
                ("relu".into(), None, "function"),
                ("show".into(), Some("Base".into()), "function"),
                ("layer".into(), None, "macro"),
                // A module is split into its members whatever its size (rules 2).
                ("Losses".into(), None, "module"),
                ("mse".into(), Some("Losses".into()), "function"),
                ("crossentropy".into(), Some("Losses".into()), "function"),
                ("gradient".into(), None, "function"),
            ]
        );
        let dense = &doc.chunks.iter().find_map(|c| c.symbol.as_ref()).unwrap();
        assert!(dense.doc_comment.contains("A fully connected layer."));
        assert_eq!(symbol(&doc, "relu").signature, "relu(x) = max(zero(x), x)");
        // A large module likewise.
        let body = "  f(x) = x + 1\n".repeat(600);
        let big =
            format!("module Big\n{body}  # Squares.\n  function square(x)\n    x^2\n  end\nend\n");
        let doc = chunk(&big, Language::Julia);
        covers(&doc, &big);
        assert_eq!(symbol(&doc, "square").parent.as_deref(), Some("Big"));
        assert_eq!(symbol(&doc, "square").doc_comment, "# Squares.");
        // Syntax newer than the grammar (`public` in a macro call) stays text between
        // the definitions it can read.
        let newer = "module M\n@compat(public, (\n  a,\n))\nf(x) = 1\nend\ng(y) = 2\n";
        assert!(
            parse_tree(newer, Language::Julia)
                .unwrap()
                .root_node()
                .has_error()
        );
        let doc = chunk(newer, Language::Julia);
        covers(&doc, newer);
        assert_eq!(
            names(&doc),
            vec![
                ("M".into(), None, "module"),
                ("f".into(), Some("M".into()), "function"),
                ("g".into(), None, "function")
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-julia")]
    fn julia_constant_fields_method_less_functions_and_errors_in_bodies() {
        let text = "mutable struct Entry\n    const path::String\n    info::Int\nend\n\nfunction allowmissing! end\n\nBase.Matrix{T}(df::Frame) where {T} = convert(T, df)\n\nfunction g(ex)\n    return (ex.head === :for)\nend\n\nh(x) = x\n";
        let doc = chunk(text, Language::Julia);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("Entry".into(), None, "struct"),
                ("allowmissing!".into(), None, "function"),
                ("Matrix".into(), Some("Base".into()), "function"),
                ("g".into(), None, "function"),
                ("h".into(), None, "function"),
            ]
        );
    }

    #[test]
    #[cfg(feature = "lang-r")]
    fn r_assigned_functions_classes_generics_and_methods() {
        let text = "#' Clamps.\n#' @param x A number.\nclamp <- function(x, lo = 0) {\n  max(x, lo)\n}\nsquare = function(x) x^2\nMAX <- 50L\nAccount <- setRefClass(\"Account\", fields = list(b = \"numeric\"))\nsetClass(\"Circle\", representation(r = \"numeric\"))\nsetGeneric(\"area\", function(s) standardGeneric(\"area\"))\nsetMethod(\"area\", \"Circle\", function(s) pi * s@r^2)\nutils$describe <- function(x) x\nprint(1)\n";
        let doc = chunk(text, Language::R);
        covers(&doc, text);
        assert_eq!(
            names(&doc),
            vec![
                ("clamp".into(), None, "function"),
                ("square".into(), None, "function"),
                ("Account".into(), None, "class"),
                ("Circle".into(), None, "class"),
                ("area".into(), None, "function"),
                ("area".into(), Some("Circle".into()), "method"),
                ("describe".into(), Some("utils".into()), "function"),
            ]
        );
        assert_eq!(
            symbol(&doc, "clamp").doc_comment,
            "#' Clamps.\n#' @param x A number."
        );
        assert_eq!(
            symbol(&doc, "clamp").signature,
            "clamp <- function(x, lo = 0) {"
        );
    }

    #[test]
    #[cfg(feature = "lang-kotlin")]
    fn a_runaway_parse_is_cut_off_and_the_parser_serves_the_next_file() {
        let runaway = include_bytes!("../fuzz/seeds/code_kotlin/runaway");
        let text = String::from_utf8_lossy(runaway);
        assert!(parse_tree(&text, Language::Kotlin).is_none());
        assert!(
            chunk_code(&text, Language::Kotlin, &ChunkParams::default())
                .unwrap()
                .is_none()
        );
        let kotlin = "class A {\n    fun b() = 1\n}\n";
        let fresh = std::thread::spawn(move || parse_tree(kotlin, Language::Kotlin).unwrap())
            .join()
            .unwrap();
        let after = parse_tree(kotlin, Language::Kotlin).unwrap();
        assert_eq!(after.root_node().to_sexp(), fresh.root_node().to_sexp());
    }

    /// A file whose error recovery lexes far ahead at every step (found by fuzzing:
    /// 3,757 bytes of coil's Gradle build script, coil-kt/coil, Apache-2.0, mutated by
    /// libFuzzer; it read 124,732 pieces of text within its check budget) is cut off by
    /// the pieces it reads, long before its checks run out; real code parses whole.
    #[test]
    #[cfg(feature = "lang-kotlin")]
    fn a_parse_that_reads_too_much_text_is_cut_off() {
        let input = include_bytes!("../fuzz/seeds/code_kotlin/long-lexing");
        let text = String::from_utf8_lossy(input);
        let (tree, work) = parse_counted(&text, Language::Kotlin);
        assert!(tree.is_none());
        assert!(work.pieces > piece_budget(text.len()), "{work:?}");
        assert!(work.checks < parse_budget(text.len()) / 20, "{work:?}");
        let real = "class A {\n    fun b(x: Int) = x + 1\n}\n".repeat(400);
        let (tree, work) = parse_counted(&real, Language::Kotlin);
        assert!(tree.is_some_and(|t| !t.root_node().has_error()));
        assert!(work.pieces * 8 < piece_budget(real.len()), "{work:?}");
    }

    /// A heredoc word of 256 characters or more, which the Ruby grammar's scanner saves
    /// in one byte and then aborts the process restoring (found by fuzzing), sends the
    /// file to text before it is parsed; 255 are parsed.
    #[test]
    #[cfg(feature = "lang-ruby")]
    fn a_heredoc_word_the_ruby_scanner_cannot_save_is_not_parsed() {
        let long = |w: usize| {
            [
                format!("x = <<\"{}\"\nhi\n", "b".repeat(w)),
                format!("puts(env<<`{}`)\n", "a".repeat(w)),
                format!("x = <<~'{}'\nhi\n", "c".repeat(w)),
                format!("x = <<-{}\nhello\n", "D".repeat(w)),
                format!("a <<<\"{}\"\n", "é".repeat(w)),
            ]
        };
        // Unclosed, the word runs to the text's end.
        let unclosed = format!("x = <<\"{}\n", "b".repeat(300));
        for text in long(256).iter().chain(&long(1100)).chain([&unclosed]) {
            assert!(!ruby::long_heredoc_words(text).is_empty(), "{text:.20}");
            assert!(parse_tree(text, Language::Ruby).is_none());
            assert!(
                chunk_code(text, Language::Ruby, &ChunkParams::default())
                    .unwrap()
                    .is_none()
            );
        }
        for text in long(255) {
            assert!(ruby::long_heredoc_words(&text).is_empty(), "{text:.20}");
            assert!(parse_tree(&text, Language::Ruby).is_some());
        }
        let real = "def banner\n  <<~EOS\n    usage: x << y\n  EOS\nend\n";
        assert!(ruby::long_heredoc_words(real).is_empty());
        let doc = chunk(real, Language::Ruby);
        assert_eq!(symbol(&doc, "banner").kind, SymbolKind::Function);
    }

    /// A `<<` and a quote inside a string's, heredoc's or comment's content start no
    /// heredoc, so a long run after them leaves the file parsed; one in code, in an
    /// interpolation, or in a literal opened by `<` (where `<` nests) sends it to text.
    #[test]
    #[cfg(feature = "lang-ruby")]
    fn a_long_heredoc_word_inside_a_literal_leaves_the_file_parsed() {
        let body = format!("def check(io)\n  io.flush\n  # {}\nend\n", "x".repeat(300));
        let parsed = [
            format!("raise E, \"must respond to #<<\"\n{body}x = \"y\"\n"),
            format!("# respond to <<\"\n{body}"),
            format!("s = <<~EOS\n  a <<'{}\nEOS\n{body}", "b".repeat(300)),
            format!("r = /a<<`/\n{body}"),
        ];
        for text in &parsed {
            assert!(!ruby::long_heredoc_words(text).is_empty(), "{text:.30}");
            assert!(parse_tree(text, Language::Ruby).is_some(), "{text:.30}");
            let doc = chunk(text, Language::Ruby);
            assert_eq!(symbol(&doc, "check").kind, SymbolKind::Function);
        }
        let texts = [
            format!("x = \"#{{a <<\"{}\"}}\"\n{body}", "b".repeat(300)),
            format!("x = %q<a<<\"{}>\n{body}", "b".repeat(300)),
            format!("x = %w<a <<\"{}>\n{body}", "b".repeat(300)),
            format!("x = y <<\"{}\"\n{body}", "b".repeat(300)),
        ];
        for text in &texts {
            assert!(!ruby::long_heredoc_words(text).is_empty(), "{text:.30}");
            assert!(parse_tree(text, Language::Ruby).is_none(), "{text:.30}");
        }
    }

    /// An `@` on a Kotlin file's last line, which can send the grammar's scanner into a
    /// loop that never ends, sends the file to text; a file that ends its last line
    /// parses.
    #[test]
    #[cfg(feature = "lang-kotlin")]
    fn an_annotation_on_a_kotlin_files_last_line_is_not_parsed() {
        let hang = "class tty\n\n@Supp\u{FFFD}\u{FFFD}e";
        assert!(scanners::kotlin_annotation_on_last_line(hang));
        assert!(parse_tree(hang, Language::Kotlin).is_none());
        for fine in ["class A\n\n@Suppress(\"x\")\nfun f() = 1\n", "class A {}\n"] {
            assert!(!scanners::kotlin_annotation_on_last_line(fine));
            assert!(parse_tree(fine, Language::Kotlin).is_some());
        }
    }

    /// Four open heredocs whose words, each under 256 characters, bring the Ruby
    /// scanner's saved state to the 2 bytes its bound misses (found by reading the
    /// scanner: the process aborted); such a file is text, and real files are far from
    /// it.
    #[test]
    #[cfg(feature = "lang-ruby")]
    fn ruby_state_that_could_overrun_its_bytes_is_not_parsed() {
        let words: Vec<String> = [251, 251, 251, 254]
            .iter()
            .zip('A'..)
            .map(|(&n, c)| c.to_string().repeat(n))
            .collect();
        let opens: Vec<String> = words.iter().map(|w| format!("<<{w}")).collect();
        let bodies: String = words.iter().map(|w| format!("x\n{w}\n")).collect();
        let text = format!("foo({})\n{bodies}", opens.join(", "));
        assert!(ruby::long_heredoc_words(&text).is_empty());
        assert!(ruby::saved_state_may_overflow(&text));
        assert!(parse_tree(&text, Language::Ruby).is_none());
        let nested = format!("{}<<EOS\n", "\"#{".repeat(250));
        assert!(ruby::saved_state_may_overflow(&nested));
        let real = "def usage\n  <<~EOS\n    #{name} [options]\n  EOS\nend\n";
        assert!(!ruby::saved_state_may_overflow(real));
        assert!(parse_tree(real, Language::Ruby).is_some());
    }

    /// Python blocks nested 511 deep with a string open overran the scanner's saved
    /// state (an abort); indentation from 256 columns, counted as the scanner counts
    /// it (a TAB 8, on past a `\` and its LF), sends a file to text.
    #[test]
    fn python_indented_wider_than_the_scanner_can_save_is_not_parsed() {
        let blocks = |n: usize| -> String {
            let opens: String = (0..n)
                .map(|i| format!("{}if 1:\n", " ".repeat(i)))
                .collect();
            format!("{opens}{}x = \"a\"\n", " ".repeat(n))
        };
        let continued = format!("if 1:\n{}x = 1\n", "  \\\n".repeat(130));
        let tabs = format!("if 1:\n{}x = 1\n", "\t".repeat(32));
        for text in [blocks(511), continued, tabs] {
            assert!(scanners::python_indent_too_wide(&text), "{:?}", &text[..10]);
            assert!(parse_tree(&text, Language::Python).is_none());
        }
        let below = blocks(255);
        assert!(!scanners::python_indent_too_wide(&below));
        assert!(parse_tree(&below, Language::Python).is_some());
        let joined = "x = a + \\\n    b\n";
        assert!(!scanners::python_indent_too_wide(joined));
    }

    /// Comments nested 120,000 deep recursed the OCaml scanner off the stack (a
    /// segmentation fault); 1,024 `(*` or more send a file to text, fewer parse.
    #[test]
    #[cfg(feature = "lang-ocaml")]
    fn ocaml_comments_nested_past_the_stack_are_not_parsed() {
        let deep = format!("let x = 1\n{}\nlet y = 2\n", "(*".repeat(120_000));
        for language in [Language::OCaml, Language::OCamlInterface] {
            assert!(scanners::ocaml_comments_too_many(&deep));
            assert!(parse_tree(&deep, language).is_none());
        }
        let under = format!("let x = 1\n{}\nlet y = 2\n", "(*".repeat(1023));
        assert!(!scanners::ocaml_comments_too_many(&under));
        assert!(parse_tree(&under, Language::OCaml).is_some());
    }

    /// A `{` before a character from U+0100 up, where a brace expansion may begin, sent
    /// the shell scanner's `isdigit` past its table (the process died); such a file is
    /// text, and braces before ASCII or Latin-1 parse.
    #[test]
    #[cfg(feature = "lang-shell")]
    fn a_shell_brace_before_a_wide_character_is_not_parsed() {
        for text in [
            "echo {\u{F02A2}}\n",
            "{\u{10FFFF}",
            "echo {1..\u{10FFFF}}\n",
            "for i in {12\u{100}; do :; done\n",
        ] {
            assert!(scanners::shell_brace_before_wide_char(text), "{text:?}");
            assert!(parse_tree(text, Language::Shell).is_none());
        }
        for text in [
            "echo {1..10} {a,b} {\u{FF}}\n",
            "f() {\n  echo \u{2713}\n}\n",
        ] {
            assert!(!scanners::shell_brace_before_wide_char(text), "{text:?}");
            assert!(parse_tree(text, Language::Shell).is_some());
        }
    }

    #[test]
    fn pieces_end_on_a_character() {
        let text = format!("{}é{}", "a".repeat(1023), "b".repeat(10));
        assert_eq!(piece(&text, 0).len(), 1025, "the é is whole");
        assert_eq!(piece(&text, 1023), &text.as_bytes()[1023..]);
        assert_eq!(piece(&text, 5).len(), 1024);
        assert!(piece(&text, text.len()).is_empty() && piece(&text, text.len() + 9).is_empty());
    }
}
