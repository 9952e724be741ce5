//! File type detection: by extension first (CFS-011 section 2, extended to the types a
//! repository holds), then by content, so that binary files are recognised and skipped
//! with a reason instead of being chunked.

/// How a file is parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Plain text and every text format without a parser of its own.
    Text,
    /// Markdown.
    Markdown,
    /// HTML.
    Html,
    /// JSON.
    Json,
    /// PDF.
    Pdf,
    /// Source code in a language.
    Code(Language),
}

impl Format {
    /// The format's name as messages give it: a language's name for code.
    pub fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Markdown => "Markdown",
            Self::Html => "HTML",
            Self::Json => "JSON",
            Self::Pdf => "PDF",
            Self::Code(language) => language.name(),
        }
    }
}

/// A programming language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// Rust.
    Rust,
    /// Go.
    Go,
    /// Python.
    Python,
    /// TypeScript.
    TypeScript,
    /// TSX.
    Tsx,
    /// JavaScript.
    JavaScript,
    /// JSX.
    Jsx,
    /// Java.
    Java,
    /// C#.
    CSharp,
    /// Kotlin.
    Kotlin,
    /// C.
    C,
    /// C++.
    Cpp,
    /// Ruby.
    Ruby,
    /// PHP.
    Php,
    /// Swift.
    Swift,
    /// Shell scripts (sh, Bash, zsh), parsed by the Bash grammar.
    Shell,
    /// Lua.
    Lua,
    /// Zig.
    Zig,
    /// Scala.
    Scala,
    /// Haskell.
    Haskell,
    /// Elixir.
    Elixir,
    /// Dart.
    Dart,
    /// OCaml implementation files (`.ml`).
    OCaml,
    /// OCaml interface files (`.mli`), parsed by the crate's interface grammar.
    OCamlInterface,
    /// Erlang.
    Erlang,
    /// R.
    R,
    /// Julia.
    Julia,
    /// SQL (PostgreSQL's dialect and what it shares with the others).
    Sql,
    /// Objective-C (`.m`, and `.h` headers that say so; Objective-C++ is text).
    ObjC,
    /// YAML.
    Yaml,
    /// TOML.
    Toml,
    /// HCL (Terraform and other HashiCorp configuration).
    Hcl,
    /// CSS (SCSS, Sass and Less are named CSS too; what the CSS grammar cannot parse is
    /// chunked as text).
    Css,
    /// Another language, chunked as text; its name.
    Other(&'static str),
}

impl Language {
    /// Lower-case name, as stored in code chunks.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Go => "go",
            Self::Python => "python",
            Self::TypeScript => "typescript",
            Self::Tsx => "tsx",
            Self::JavaScript => "javascript",
            Self::Jsx => "jsx",
            Self::Java => "java",
            Self::CSharp => "csharp",
            Self::Kotlin => "kotlin",
            Self::C => "c",
            Self::Cpp => "cpp",
            Self::Ruby => "ruby",
            Self::Php => "php",
            Self::Swift => "swift",
            Self::Shell => "shell",
            Self::Lua => "lua",
            Self::Zig => "zig",
            Self::Scala => "scala",
            Self::Haskell => "haskell",
            Self::Elixir => "elixir",
            Self::Dart => "dart",
            Self::OCaml | Self::OCamlInterface => "ocaml",
            Self::Erlang => "erlang",
            Self::R => "r",
            Self::Julia => "julia",
            Self::Sql => "sql",
            Self::ObjC => "objc",
            Self::Yaml => "yaml",
            Self::Toml => "toml",
            Self::Hcl => "hcl",
            Self::Css => "css",
            Self::Other(name) => name,
        }
    }
}

/// The detected type of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Detected {
    /// MIME type recorded in the parse profile.
    pub mime_type: &'static str,
    /// How it is parsed.
    pub format: Format,
}

const fn text(mime_type: &'static str) -> Detected {
    Detected {
        mime_type,
        format: Format::Text,
    }
}
const fn code(mime_type: &'static str, language: Language) -> Detected {
    Detected {
        mime_type,
        format: Format::Code(language),
    }
}

/// The type named by a file's extension (or its whole name), if cfs knows it.
pub fn by_name(path: &str) -> Option<Detected> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "makefile" | "gnumakefile" => {
            return Some(code("text/x-makefile", Language::Other("make")));
        }
        "dockerfile" | "containerfile" => {
            return Some(code("text/x-dockerfile", Language::Other("dockerfile")));
        }
        "license" | "licence" | "copying" | "readme" | "changelog" | "authors" | "notice"
        | "contributing" | ".gitignore" | ".gitattributes" | ".editorconfig" | "cargo.lock" => {
            return Some(text("text/plain"));
        }
        _ => {}
    }
    let ext = lower.rsplit_once('.').map(|(_, e)| e)?;
    Some(match ext {
        "md" | "markdown" | "mdown" | "mkd" | "mdx" => Detected {
            mime_type: "text/markdown",
            format: Format::Markdown,
        },
        "txt" | "text" | "rst" | "adoc" | "asciidoc" | "org" | "tex" | "log" => text("text/plain"),
        "pdf" => Detected {
            mime_type: "application/pdf",
            format: Format::Pdf,
        },
        "html" | "htm" | "xhtml" => Detected {
            mime_type: "text/html",
            format: Format::Html,
        },
        "json" | "jsonc" | "geojson" | "webmanifest" => Detected {
            mime_type: "application/json",
            format: Format::Json,
        },
        "rs" => code("text/x-rust", Language::Rust),
        "go" => code("text/x-go", Language::Go),
        "py" | "pyi" | "pyw" => code("text/x-python", Language::Python),
        "ts" | "mts" | "cts" => code("text/typescript", Language::TypeScript),
        "tsx" => code("text/tsx", Language::Tsx),
        "js" | "mjs" | "cjs" => code("text/javascript", Language::JavaScript),
        "jsx" => code("text/jsx", Language::Jsx),
        "c" | "h" => code("text/x-c", Language::C),
        "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" | "tpp" | "inl" => {
            code("text/x-c++", Language::Cpp)
        }
        "java" => code("text/x-java", Language::Java),
        "kt" | "kts" => code("text/x-kotlin", Language::Kotlin),
        "scala" | "sc" => code("text/x-scala", Language::Scala),
        "swift" => code("text/x-swift", Language::Swift),
        "rb" | "rake" | "gemspec" | "ru" => code("text/x-ruby", Language::Ruby),
        "php" => code("text/x-php", Language::Php),
        "cs" => code("text/x-csharp", Language::CSharp),
        "lua" => code("text/x-lua", Language::Lua),
        "zig" => code("text/x-zig", Language::Zig),
        "hs" => code("text/x-haskell", Language::Haskell),
        "ex" | "exs" => code("text/x-elixir", Language::Elixir),
        "dart" => code("text/x-dart", Language::Dart),
        // Objective-C or MATLAB: `detect` decides by content.
        "m" => code("text/x-objc", Language::ObjC),
        "mm" => code("text/x-objc++", Language::Other("objcpp")),
        "r" => code("text/x-r", Language::R),
        "jl" => code("text/x-julia", Language::Julia),
        "erl" | "hrl" => code("text/x-erlang", Language::Erlang),
        "ml" => code("text/x-ocaml", Language::OCaml),
        "mli" => code("text/x-ocaml", Language::OCamlInterface),
        "sh" | "bash" | "zsh" | "ksh" | "bats" => code("text/x-shellscript", Language::Shell),
        "fish" => code("text/x-fish", Language::Other("fish")),
        "ps1" => code("text/x-powershell", Language::Other("powershell")),
        "sql" => code("application/sql", Language::Sql),
        "css" | "scss" | "sass" | "less" => code("text/css", Language::Css),
        "vue" | "svelte" => code(
            "text/html",
            Language::Other(if ext == "vue" { "vue" } else { "svelte" }),
        ),
        "proto" => code("text/x-protobuf", Language::Other("protobuf")),
        "toml" => code("application/toml", Language::Toml),
        "yaml" | "yml" => code("application/yaml", Language::Yaml),
        "tf" | "tfvars" | "hcl" => code("text/x-hcl", Language::Hcl),
        "xml" | "svg" | "xsd" | "xsl" => text("application/xml"),
        "csv" | "tsv" => text("text/csv"),
        "ini" | "cfg" | "conf" | "properties" | "env" => text("text/plain"),
        "lock" => text("text/plain"),
        _ => return None,
    })
}

/// Known binary formats by their first bytes.
const MAGIC: [(&[u8], &str); 16] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xFF\xD8\xFF", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"\x1F\x8B", "gzip data"),
    (b"\x7FELF", "ELF executable"),
    (b"MZ", "Windows executable"),
    (b"\xCF\xFA\xED\xFE", "Mach-O executable"),
    (b"\xCA\xFE\xBA\xBE", "Java class or Mach-O universal binary"),
    (b"\0asm", "WebAssembly module"),
    (b"SQLite format 3\0", "SQLite database"),
    (b"BZh", "bzip2 data"),
    (b"\xFD7zXZ\0", "xz data"),
    (b"7z\xBC\xAF\x27\x1C", "7-Zip archive"),
    (b"\x28\xB5\x2F\xFD", "zstd data"),
];

/// Bytes of a file's start that detection looks at.
pub const DETECT_HEAD_BYTES: usize = 8192;

/// Detects a file from its relative path and its whole content (only the first
/// [`DETECT_HEAD_BYTES`] are read).
pub fn detect_file(path: &str, content: &[u8]) -> Result<Detected, String> {
    detect(path, &content[..content.len().min(DETECT_HEAD_BYTES)])
}

/// Detects a file from its relative path and its first bytes. `Err` carries the reason a
/// file is not indexed (binary, unknown binary type).
pub fn detect(path: &str, head: &[u8]) -> Result<Detected, String> {
    let named = by_name(path);
    if head.starts_with(b"%PDF-") {
        return Ok(Detected {
            mime_type: "application/pdf",
            format: Format::Pdf,
        });
    }
    if let Some((_, what)) = MAGIC.iter().find(|(magic, _)| head.starts_with(magic)) {
        // "MZ" and "BZh" are short: trust them only when the name does not say text.
        let weak = head.starts_with(b"MZ") || head.starts_with(b"BZh");
        if !(weak && named.is_some()) {
            return Err(format!("binary ({what})"));
        }
    }
    if let Some(detected) = named {
        let header = path.to_ascii_lowercase().ends_with(".h");
        if detected.format == Format::Code(Language::C) && header && looks_objc(head) {
            return Ok(code("text/x-objc", Language::ObjC));
        }
        if detected.format == Format::Code(Language::C) && header && looks_cpp(head) {
            return Ok(code("text/x-c++", Language::Cpp));
        }
        if detected.mime_type == "text/x-objc" && !looks_objc(head) && !has_include(head) {
            return Ok(code("text/x-matlab", Language::Other("matlab")));
        }
        if detected.format == Format::Pdf {
            return Err("named .pdf but has no PDF header".into());
        }
        return Ok(detected);
    }
    if looks_binary(head) {
        return Err("binary (unknown type)".into());
    }
    Ok(by_shebang(head).unwrap_or(text("text/plain")))
}

/// The type a file without a known name declares on its first line: `#!` and an
/// interpreter path, or `/usr/bin/env` (its options skipped) and an interpreter, whose
/// name without a version suffix (`python3.12` is `python`) is one of these.
fn by_shebang(head: &[u8]) -> Option<Detected> {
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_ascii_whitespace();
    let mut program = words.next()?.rsplit('/').next()?;
    if program == "env" {
        program = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    }
    let name = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match name {
        "sh" | "bash" | "zsh" | "ksh" | "dash" | "ash" => {
            code("text/x-shellscript", Language::Shell)
        }
        "python" | "pypy" => code("text/x-python", Language::Python),
        "ruby" => code("text/x-ruby", Language::Ruby),
        "node" | "nodejs" | "deno" | "bun" => code("text/javascript", Language::JavaScript),
        "php" => code("text/x-php", Language::Php),
        "lua" | "luajit" => code("text/x-lua", Language::Lua),
        "elixir" => code("text/x-elixir", Language::Elixir),
        "perl" => code("text/x-perl", Language::Other("perl")),
        "Rscript" => code("text/x-r", Language::R),
        "fish" => code("text/x-fish", Language::Other("fish")),
        _ => return None,
    })
}

/// A `.h` header or a `.m` file is Objective-C when a line of its first bytes, after
/// leading white space, starts with `#import`, `@interface`, `@implementation`,
/// `@protocol` or `@class`.
fn looks_objc(head: &[u8]) -> bool {
    const STARTS: [&[u8]; 5] = [
        b"#import",
        b"@interface",
        b"@implementation",
        b"@protocol",
        b"@class",
    ];
    starts_a_line(head, &STARTS)
}

/// True when a line of `head` starts with `#include` (a `.m` file that includes C
/// headers is Objective-C, not MATLAB).
fn has_include(head: &[u8]) -> bool {
    starts_a_line(head, &[b"#include"])
}

/// True when a line of `head`, after its leading spaces, TABs, CRs and form feeds,
/// starts with one of `starts`.
fn starts_a_line(head: &[u8], starts: &[&[u8]]) -> bool {
    head.split(|&b| b == b'\n').any(|line| {
        let line = line.trim_ascii_start();
        starts.iter().any(|s| line.starts_with(s))
    })
}

/// A `.h` header is C++ rather than C when a line of its first bytes, after leading
/// white space, starts with `namespace `, `template<`, `template <`, `class `, `enum
/// class `, `enum struct ` or one of `public:`, `private:`, `protected:`, `using
/// namespace `, or when they hold `std::`.
fn looks_cpp(head: &[u8]) -> bool {
    const STARTS: [&[u8]; 10] = [
        b"namespace ",
        b"template<",
        b"template <",
        b"class ",
        b"enum class ",
        b"enum struct ",
        b"public:",
        b"private:",
        b"protected:",
        b"using namespace ",
    ];
    memchr::memmem::find(head, b"std::").is_some() || starts_a_line(head, &STARTS)
}

/// Binary, unless it is UTF-16 (a BOM, or mostly zeros at one byte parity only): a NUL byte, or
/// more than 10% of bytes that are control characters other than whitespace.
fn looks_binary(head: &[u8]) -> bool {
    if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
        return false;
    }
    if head.contains(&0) {
        // Judge an even-length prefix, since `head` may cut a file anywhere.
        let even = &head[..head.len() & !1];
        return crate::decode::utf16_without_bom(even).is_none();
    }
    let control = head
        .iter()
        .filter(|b| **b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0C))
        .count();
    control * 10 > head.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions() {
        assert_eq!(by_name("a/README.md").unwrap().format, Format::Markdown);
        assert_eq!(
            by_name("x.TSX").unwrap().format,
            Format::Code(Language::Tsx)
        );
        assert_eq!(by_name("lib.rs").unwrap().mime_type, "text/x-rust");
        for (name, language) in [
            ("tasks.rake", Language::Ruby),
            ("x.gemspec", Language::Ruby),
            ("index.php", Language::Php),
            ("install.sh", Language::Shell),
            ("a.zsh", Language::Shell),
            ("init.lua", Language::Lua),
            ("main.zig", Language::Zig),
            ("Main.scala", Language::Scala),
            ("Main.hs", Language::Haskell),
            ("mix.exs", Language::Elixir),
            ("App.swift", Language::Swift),
            ("main.dart", Language::Dart),
            ("lib.ml", Language::OCaml),
            ("cache.erl", Language::Erlang),
            ("R/clamp.R", Language::R),
            ("a.hpp", Language::Cpp),
            ("a.c", Language::C),
        ] {
            assert_eq!(
                by_name(name).unwrap().format,
                Format::Code(language),
                "{name}"
            );
        }
        assert_eq!(
            by_name("Makefile").unwrap().format,
            Format::Code(Language::Other("make"))
        );
        assert!(by_name("photo.jpeg").is_none());
    }

    #[test]
    fn a_header_is_cpp_when_its_head_says_so() {
        let lang = |path: &str, head: &str| match detect(path, head.as_bytes()).unwrap().format {
            Format::Code(language) => language,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            lang("a.h", "#include <stdio.h>\nint f(void);\n"),
            Language::C
        );
        // A comment that says "class" is not a class.
        assert_eq!(
            lang("a.h", "/* This class of\n * errors */\nint f(void);\n"),
            Language::C
        );
        assert_eq!(
            lang("a.h", "#pragma once\nnamespace db {\n}\n"),
            Language::Cpp
        );
        assert_eq!(
            lang(
                "color.h",
                "#include \"format.h\"\nenum class color : uint32_t {\n};\n"
            ),
            Language::Cpp
        );
        assert_eq!(
            lang("a.h", "  template <typename T>\nT f();\n"),
            Language::Cpp
        );
        assert_eq!(
            lang("a.h", "struct A {\n public:\n  int x;\n};\n"),
            Language::Cpp
        );
        assert_eq!(lang("a.h", "void f(std::string s);\n"), Language::Cpp);
        // Only headers: a `.c` file is C whatever it says.
        assert_eq!(lang("a.c", "namespace x {}\n"), Language::C);
        assert_eq!(lang("a.hpp", "int f(void);\n"), Language::Cpp);
    }

    #[test]
    fn a_file_without_a_known_name_is_read_by_its_shebang() {
        let lang = |head: &str| match detect("bin/tool", head.as_bytes()).unwrap().format {
            Format::Code(language) => Some(language),
            _ => None,
        };
        assert_eq!(lang("#!/bin/sh\necho hi\n"), Some(Language::Shell));
        assert_eq!(lang("#!/usr/bin/env bash\n"), Some(Language::Shell));
        assert_eq!(
            lang("#!/usr/bin/env -S python3.12 -u\n"),
            Some(Language::Python)
        );
        assert_eq!(lang("#!/usr/bin/ruby -w\n"), Some(Language::Ruby));
        assert_eq!(lang("#!/usr/bin/env node\n"), Some(Language::JavaScript));
        assert_eq!(lang("#!/usr/bin/env FOO=1 lua5.4\n"), Some(Language::Lua));
        assert_eq!(lang("#!/usr/bin/awk -f\n"), None);
        assert_eq!(lang("#! \n"), None);
        // A name that says what a file is wins over its first line.
        assert_eq!(
            detect("a.txt", b"#!/bin/sh\n").unwrap().format,
            Format::Text
        );
    }

    #[test]
    fn objective_c_and_matlab_by_content() {
        let lang = |path: &str, head: &str| match detect(path, head.as_bytes()).unwrap().format {
            Format::Code(language) => language.name(),
            other => panic!("{other:?}"),
        };
        assert_eq!(lang("a.h", "#import <Foundation/Foundation.h>\n"), "objc");
        assert_eq!(lang("a.h", "@interface A : NSObject\n@end\n"), "objc");
        // Objective-C++ headers that also say `class ` are Objective-C.
        assert_eq!(lang("a.h", "@class B;\nclass C {};\n"), "objc");
        assert_eq!(lang("a.h", "int f(void);\n"), "c");
        assert_eq!(lang("A.m", "  @implementation A\n@end\n"), "objc");
        assert_eq!(lang("a.m", "#include <stdio.h>\nint main() {}\n"), "objc");
        assert_eq!(
            lang("plot.m", "x = linspace(0, 1);\nplot(x, x.^2);\n"),
            "matlab"
        );
        assert_eq!(lang("a.mm", "int f();\n"), "objcpp");
    }

    #[test]
    fn content_decides_for_binaries() {
        assert!(detect("a.txt", b"\x89PNG\r\n\x1a\n....").is_err());
        assert!(detect("blob", b"\x00\x01\x02\x03").is_err());
        assert_eq!(
            detect("noext", b"plain words\n").unwrap().format,
            Format::Text
        );
        assert_eq!(
            detect("doc.bin", b"%PDF-1.7\n").unwrap().format,
            Format::Pdf
        );
        assert!(detect("fake.pdf", b"hello").is_err());
        // A text file that happens to start with MZ stays text.
        assert_eq!(
            detect("notes.txt", b"MZ is a word").unwrap().format,
            Format::Text
        );
        // UTF-16 without BOM is not binary.
        let utf16: Vec<u8> = "hello".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(detect("a", &utf16).unwrap().format, Format::Text);
    }
}
