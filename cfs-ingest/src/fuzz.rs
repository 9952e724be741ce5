//! Bodies of the fuzz targets (`cfs-ingest/fuzz/`), as plain functions so that a stable
//! test replays the saved corpus through exactly the same code. Each body feeds
//! arbitrary bytes to one parser or chunker and asserts the properties that must hold
//! for any input; a panic here is a bug.

use crate::code::chunk_code;
use crate::decode::decode;
use crate::detect::Language;
use crate::markdown::chunk_markdown;
use crate::pipeline::{IngestConfig, parse_file};
use crate::text::{ChunkParams, chunk_text};

/// Small chunk sizes, so that short inputs still make several chunks.
fn params(seed: &[u8]) -> ChunkParams {
    let pick = |i: usize, default: u8| u32::from(seed.get(i).copied().unwrap_or(default));
    let max = 8 + pick(0, 56);
    let target = 1 + pick(1, 32) % max;
    let overlap = pick(2, 8) % target;
    ChunkParams {
        target_bytes: target,
        max_bytes: max,
        overlap_bytes: overlap,
    }
}

fn check_spans(text: &str, spans: &[(usize, usize)], max: usize) {
    if text.is_empty() {
        assert!(spans.is_empty());
        return;
    }
    assert_eq!(spans.first().map(|s| s.0), Some(0), "coverage starts at 0");
    assert_eq!(
        spans.last().map(|s| s.1),
        Some(text.len()),
        "coverage ends at the end"
    );
    for &(s, e) in spans {
        assert!(s < e && e - s <= max, "span {s}..{e} over {max}");
        assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
    }
    for w in spans.windows(2) {
        assert!(
            w[1].0 > w[0].0 && w[1].0 <= w[0].1 && w[1].1 > w[0].1,
            "{w:?}"
        );
    }
}

/// Decoding: never panics; canonical text has no CR.
pub fn decode_body(data: &[u8]) {
    if let Ok(decoded) = decode(data) {
        assert!(!decoded.text.contains('\r'));
    }
}

/// The text chunker: the first three bytes choose the sizes, the rest is the text.
pub fn text_body(data: &[u8]) {
    let (seed, rest) = data.split_at(data.len().min(3));
    let text = String::from_utf8_lossy(rest);
    let params = params(seed);
    let spans: Vec<(usize, usize)> = chunk_text(&text, &params)
        .expect("valid params")
        .iter()
        .map(|s| (s.start, s.end))
        .collect();
    check_spans(&text, &spans, params.max_bytes as usize);
}

/// The Markdown chunker.
pub fn markdown_body(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let params = params(&[]);
    let doc = chunk_markdown(&text, &params).expect("valid params");
    let spans: Vec<(usize, usize)> = doc.chunks.iter().map(|c| (c.start, c.end)).collect();
    check_spans(&text, &spans, params.max_bytes as usize);
}

/// The code chunker of one language.
pub fn code_body(language: Language, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let params = params(&[]);
    if let Some(doc) = chunk_code(&text, language, &params).expect("valid params") {
        let spans: Vec<(usize, usize)> = doc.chunks.iter().map(|c| (c.start, c.end)).collect();
        check_spans(&text, &spans, crate::code::WINDOW_BYTES);
    }
}

/// A whole file through the pipeline under a name (HTML, PDF, anything): an error or
/// valid rows, never a panic.
pub fn file_body(name: &str, data: &[u8], config: &IngestConfig) {
    if let Ok(parsed) = parse_file(name, data, config) {
        use cfs_core::Canonical;
        assert!(parsed.document.validate().is_ok());
        assert!(parsed.chunks.iter().all(|c| c.validate().is_ok()));
    }
}

/// Replays one corpus input through the body named by its target.
pub fn replay(target: &str, data: &[u8], config: &IngestConfig) {
    match target {
        "decode" => decode_body(data),
        "text" => text_body(data),
        "markdown" => markdown_body(data),
        "html" => file_body("fuzz.html", data, config),
        "pdf" => file_body("fuzz.pdf", data, config),
        "code_rust" => code_body(Language::Rust, data),
        "code_go" => code_body(Language::Go, data),
        "code_python" => code_body(Language::Python, data),
        "code_typescript" => code_body(Language::TypeScript, data),
        "code_tsx" => code_body(Language::Tsx, data),
        "code_javascript" => code_body(Language::JavaScript, data),
        "code_java" => code_body(Language::Java, data),
        "code_csharp" => code_body(Language::CSharp, data),
        "code_kotlin" => code_body(Language::Kotlin, data),
        "code_c" => code_body(Language::C, data),
        "code_cpp" => code_body(Language::Cpp, data),
        "code_ruby" => code_body(Language::Ruby, data),
        "code_php" => code_body(Language::Php, data),
        "code_swift" => code_body(Language::Swift, data),
        "code_shell" => code_body(Language::Shell, data),
        "code_lua" => code_body(Language::Lua, data),
        "code_zig" => code_body(Language::Zig, data),
        "code_scala" => code_body(Language::Scala, data),
        "code_haskell" => code_body(Language::Haskell, data),
        "code_elixir" => code_body(Language::Elixir, data),
        "code_dart" => code_body(Language::Dart, data),
        "code_ocaml" => code_body(Language::OCaml, data),
        "code_ocaml_interface" => code_body(Language::OCamlInterface, data),
        "code_erlang" => code_body(Language::Erlang, data),
        "code_r" => code_body(Language::R, data),
        "code_objc" => code_body(Language::ObjC, data),
        "code_julia" => code_body(Language::Julia, data),
        "code_sql" => code_body(Language::Sql, data),
        "code_yaml" => code_body(Language::Yaml, data),
        "code_toml" => code_body(Language::Toml, data),
        "code_hcl" => code_body(Language::Hcl, data),
        "code_css" => code_body(Language::Css, data),
        other => panic!("unknown fuzz target {other}"),
    }
}

/// Every fuzz target.
pub const TARGETS: [&str; 37] = [
    "decode",
    "text",
    "markdown",
    "html",
    "pdf",
    "code_rust",
    "code_go",
    "code_python",
    "code_typescript",
    "code_tsx",
    "code_javascript",
    "code_java",
    "code_csharp",
    "code_kotlin",
    "code_c",
    "code_cpp",
    "code_ruby",
    "code_php",
    "code_swift",
    "code_shell",
    "code_lua",
    "code_zig",
    "code_scala",
    "code_haskell",
    "code_elixir",
    "code_dart",
    "code_ocaml",
    "code_ocaml_interface",
    "code_erlang",
    "code_r",
    "code_objc",
    "code_julia",
    "code_sql",
    "code_yaml",
    "code_toml",
    "code_hcl",
    "code_css",
];
