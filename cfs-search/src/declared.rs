//! Names a code chunk declares, read from its lines: what the symbol index knows beyond
//! a chunk's own symbol (a method inside a class small enough to be one chunk, a
//! function of a language chunked as text). A line declares a name when, past its
//! modifiers, a declaration keyword precedes the name (`class Foo`, `def foo`, `fun
//! Response.foo`, `#define FOO`), or when it has the shape of a C-family signature
//! (`static int foo(`, `public String foo(`). Lexical, so less certain than a parsed
//! symbol, and ranked below one (`docs/spec.md`, "Ranking for code").

use cfs_core::SymbolKind;
use cfs_ingest::is_word_char;

/// Longest line read, in bytes: longer ones are data, not declarations.
pub const MAX_DECLARATION_LINE_BYTES: usize = 400;

/// Words that may come before a declaration keyword or a signature's type.
pub const MODIFIERS: [&str; 36] = [
    "abstract",
    "async",
    "const",
    "data",
    "declare",
    "default",
    "export",
    "extern",
    "final",
    "fileprivate",
    "implicit",
    "inline",
    "internal",
    "lazy",
    "mutating",
    "native",
    "open",
    "override",
    "partial",
    "private",
    "protected",
    "pub",
    "public",
    "readonly",
    "sealed",
    "static",
    "strictfp",
    "suspend",
    "synchronized",
    "typedef",
    "unsafe",
    "virtual",
    "volatile",
    "constexpr",
    "explicit",
    "operator",
];

/// Declaration keywords and the kind of what each declares.
pub const KEYWORDS: [(&str, SymbolKind); 23] = [
    ("class", SymbolKind::Class),
    ("struct", SymbolKind::Struct),
    ("interface", SymbolKind::Interface),
    ("trait", SymbolKind::Trait),
    ("enum", SymbolKind::Enum),
    ("protocol", SymbolKind::Interface),
    ("object", SymbolKind::Class),
    ("record", SymbolKind::Struct),
    ("union", SymbolKind::Struct),
    ("type", SymbolKind::Type),
    ("typealias", SymbolKind::Type),
    ("def", SymbolKind::Function),
    ("fn", SymbolKind::Function),
    ("fun", SymbolKind::Function),
    ("func", SymbolKind::Function),
    ("function", SymbolKind::Function),
    ("sub", SymbolKind::Function),
    ("macro", SymbolKind::Macro),
    ("macro_rules", SymbolKind::Macro),
    ("define", SymbolKind::Macro),
    ("module", SymbolKind::Module),
    ("namespace", SymbolKind::Module),
    ("package", SymbolKind::Module),
];

/// Words that start a statement, never a signature's type.
pub const STATEMENT_WORDS: [&str; 22] = [
    "return", "if", "else", "while", "for", "switch", "case", "new", "throw", "throws", "delete",
    "sizeof", "await", "yield", "do", "goto", "typeof", "assert", "raise", "not", "and", "or",
];

/// A name a line declares: the name, the segment before it if qualified, and the
/// kind of the declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared<'a> {
    pub name: &'a str,
    pub qualifier: Option<&'a str>,
    pub kind: SymbolKind,
}

/// Calls `f` with every name the lines of `text` declare, in order.
pub fn for_each_declared<'a>(text: &'a str, mut f: impl FnMut(Declared<'a>)) {
    for line in text.lines() {
        if line.len() <= MAX_DECLARATION_LINE_BYTES
            && let Some(d) = declared(line)
        {
            f(d);
        }
    }
}

/// The name `line` declares, if it declares one.
pub fn declared(line: &str) -> Option<Declared<'_>> {
    let line = line.trim_start();
    if let Some(rest) = line.strip_prefix("#define") {
        let (name, _) = word_at(rest.trim_start())?;
        return Some(Declared {
            name,
            qualifier: None,
            kind: SymbolKind::Macro,
        });
    }
    if !line.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$') {
        return None;
    }
    if let Some(d) = assigned_function(line) {
        return Some(d);
    }
    let mut rest = line;
    loop {
        let (word, after) = word_at(rest)?;
        if let Some(&(_, kind)) = KEYWORDS.iter().find(|(k, _)| *k == word) {
            let after = after.strip_prefix('!').unwrap_or(after);
            return keyword_name(after, kind);
        }
        if !MODIFIERS.contains(&word) {
            return signature_name(rest);
        }
        // A modifier's arguments (`pub(crate)`) are passed over.
        rest = match after.strip_prefix('(') {
            Some(args) => &args[args.find(')')? + 1..],
            None => after,
        }
        .trim_start();
    }
}

/// A function assigned to a name (`exports.compile = function (`, `Foo.prototype.bar
/// = async function`, `handler = (req) =>`): the last segment of the left side, which
/// is words joined by `.` only.
fn assigned_function(line: &str) -> Option<Declared<'_>> {
    let (left, right) = line.split_once('=')?;
    let right = right.trim_start();
    if right.starts_with('=') || right.starts_with('>') {
        return None; // `==`, `=>` right after the name
    }
    let right = right.strip_prefix("async ").map_or(right, str::trim_start);
    let is_function = right.starts_with("function")
        && !right["function".len()..].starts_with(|c: char| is_word_char(c))
        || right.starts_with('(') && right.contains("=>");
    let left = left.trim_end();
    let left = left
        .strip_prefix("const ")
        .or_else(|| left.strip_prefix("let "))
        .or_else(|| left.strip_prefix("var "))
        .unwrap_or(left)
        .trim_start();
    let valid = |seg: &str| !seg.is_empty() && seg.chars().all(|c| is_word_char(c) || c == '$');
    if !is_function || !left.split('.').all(valid) {
        return None;
    }
    let segments: Vec<&str> = left.split('.').collect();
    let (name, before) = segments.split_last()?;
    if matches!(*name, "exports" | "prototype") {
        return None;
    }
    let qualifier = before
        .iter()
        .rev()
        .copied()
        .find(|q| !matches!(*q, "prototype" | "exports" | "module" | "this" | "self"));
    Some(Declared {
        name,
        qualifier,
        kind: SymbolKind::Function,
    })
}

/// The word at the start of `s` and what follows it.
fn word_at(s: &str) -> Option<(&str, &str)> {
    let end = s.find(|c: char| !is_word_char(c)).unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], &s[end..]))
}

/// The name after a declaration keyword: past a receiver in parentheses (Go's `func
/// (r *T) Name`) and pointer marks, the last segment of a dotted or `::` path.
fn keyword_name(after: &str, kind: SymbolKind) -> Option<Declared<'_>> {
    let mut s = after.trim_start();
    if s.starts_with('(') {
        s = s[s.find(')')? + 1..].trim_start();
    }
    let s = s.trim_start_matches(['*', '&', ' ']);
    let mut segments: Vec<&str> = Vec::new();
    let mut rest = s;
    loop {
        let (word, after) = word_at(rest)?;
        segments.push(word);
        match [".", "::"].iter().find(|sep| after.starts_with(**sep)) {
            Some(sep) => rest = &after[sep.len()..],
            None => break,
        }
    }
    let (name, before) = segments.split_last()?;
    let qualifier = before.last().copied().filter(|q| *q != "self");
    Some(Declared {
        name,
        qualifier,
        kind,
    })
}

/// The name of a C-family signature: two or more words (a type and the name, the
/// name possibly `Type::name`) before the line's first `(`, the first not a statement
/// word, nothing but words, spaces, `* & : < > [ ] ? , .` between them, and the line
/// not a statement ending in `;` after a `)` that is followed by more.
fn signature_name(line: &str) -> Option<Declared<'_>> {
    let open = line.find('(')?;
    let head = line[..open].trim_end();
    if !head.chars().all(|c| {
        is_word_char(c)
            || matches!(
                c,
                ' ' | '\t' | '*' | '&' | ':' | '<' | '>' | '[' | ']' | '?' | ',' | '.'
            )
    }) {
        return None;
    }
    let first = word_at(head)?.0;
    if STATEMENT_WORDS.contains(&first) {
        return None;
    }
    let end = head.len();
    let start = head
        .rfind(|c: char| !(is_word_char(c) || c == ':'))
        .map_or(0, |i| i + 1);
    let path = &head[start..end];
    // One word only, or a member after `.`: a call, not a signature.
    if start == 0 || path.is_empty() || head[..start].ends_with('.') {
        return None;
    }
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let (name, before) = segments.split_last()?;
    let qualifier = before.last().copied();
    if !name.starts_with(|c: char| c.is_alphabetic() || c == '_') {
        return None;
    }
    Some(Declared {
        name,
        qualifier,
        kind: SymbolKind::Function,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(line: &str) -> Option<(String, Option<String>, SymbolKind)> {
        declared(line).map(|d| (d.name.to_owned(), d.qualifier.map(str::to_owned), d.kind))
    }

    #[track_caller]
    fn check(line: &str, want: &str, qualifier: Option<&str>, kind: SymbolKind) {
        assert_eq!(
            name(line),
            Some((want.to_owned(), qualifier.map(str::to_owned), kind)),
            "{line}"
        );
    }

    #[test]
    fn keyword_declarations() {
        use SymbolKind::*;
        check("public enum RetryResult {", "RetryResult", None, Enum);
        check("  public enum EscapeMode {", "EscapeMode", None, Enum);
        check(
            "internal fun Response.promisesBody(): Boolean {",
            "promisesBody",
            Some("Response"),
            Function,
        );
        check(
            "fun String.toCanonicalHost(): String? {",
            "toCanonicalHost",
            Some("String"),
            Function,
        );
        check("    def self.call(env)", "call", None, Function);
        check("def parse_headers(raw):", "parse_headers", None, Function);
        check(
            "func (r *Router) Handle(method string) {",
            "Handle",
            None,
            Function,
        );
        check(
            "open class Session: @unchecked Sendable {",
            "Session",
            None,
            Class,
        );
        check(
            "public static function create(array $options = []): self",
            "create",
            None,
            Function,
        );
        check(
            "#define REDIS_VERSION \"8.0\"",
            "REDIS_VERSION",
            None,
            Macro,
        );
        check("typedef struct redisObject {", "redisObject", None, Struct);
        check("macro_rules! impl_handler {", "impl_handler", None, Macro);
        check("module Rack", "Rack", None, Module);
        check("namespace leveldb {", "leveldb", None, Module);
        check(
            "pub(crate) fn route(self) -> Self {",
            "route",
            None,
            Function,
        );
    }

    #[test]
    fn assigned_functions() {
        use SymbolKind::Function;
        check(
            "exports.compileTrust = function(val) {",
            "compileTrust",
            None,
            Function,
        );
        check(
            "res.json = function json(obj) {",
            "json",
            Some("res"),
            Function,
        );
        check(
            "Router.prototype.handle = async function handle(req) {",
            "handle",
            Some("Router"),
            Function,
        );
        check("const onError = (err) => {", "onError", None, Function);
        assert_eq!(
            name("module.exports = function createApplication() {"),
            None
        );
    }

    #[test]
    fn signatures() {
        use SymbolKind::Function;
        check("jv jq_next(jq_state *jq) {", "jq_next", None, Function);
        check(
            "static void PutVarint32(std::string* dst, uint32_t v);",
            "PutVarint32",
            None,
            Function,
        );
        check(
            "Status DBImpl::Get(const ReadOptions& options,",
            "Get",
            Some("DBImpl"),
            Function,
        );
        check(
            "public static String toCanonicalHost(String host) {",
            "toCanonicalHost",
            None,
            Function,
        );
        check(
            "std::vector<int> Sort(std::vector<int> v) {",
            "Sort",
            None,
            Function,
        );
        check(
            "public async Task<int> RunAsync(CancellationToken token)",
            "RunAsync",
            None,
            Function,
        );
    }

    #[test]
    fn statements_and_comments_declare_nothing() {
        for line in [
            "return foo(bar);",
            "foo(bar);",
            "if (x) {",
            "x = compute(y);",
            "int x = compute(y);",
            "// def commented(out)",
            "# class Comment",
            "* @param foo(bar)",
            "throw new Error(\"x\")",
            "printf(\"%d\", x);",
            "",
            "}",
            "else if (a(b))",
            "host.toCanonicalHost()",
            "x = a == b",
            "res.locals = Object.create(null)",
            "  response.promisesBody() -> {",
        ] {
            assert_eq!(name(line), None, "{line}");
        }
        let long = format!("int f{}(void);", "x".repeat(MAX_DECLARATION_LINE_BYTES));
        let mut found = 0;
        for_each_declared(&long, |_| found += 1);
        assert_eq!(found, 0, "a line past the limit is not read");
    }
}
