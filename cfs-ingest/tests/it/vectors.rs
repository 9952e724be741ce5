//! Test vectors of ingestion: `test-vectors/{detect,decode,chunker,embedder}.json`.
//! One test checks the checked-in vectors against this implementation, another that
//! the files are exactly what this generator writes (`CFS_REGENERATE_VECTORS=1` rewrites
//! them). `test-vectors/verify.py` recomputes them from `docs/spec.md`.

use crate::support::minilm;
use std::path::PathBuf;

use cfs_core::hex_encode;
use cfs_ingest::{
    ChunkParams, Embedder, Format, HashEmbedder, chunk_text, decode, detect, feature_hash,
    identifier_parts,
};
use serde_json::{Value, json};

const REGENERATE: &str = "CFS_REGENERATE_VECTORS=1 cargo test -p cfs-ingest --test it vectors";

struct FileSpec {
    name: &'static str,
    comment: &'static str,
    cases: Vec<Value>,
}

fn case(kind: &str, name: &str, input: Value) -> Value {
    json!({"kind": kind, "name": name, "input": input})
}

fn hex_of(v: &Value, key: &str) -> Vec<u8> {
    cfs_core::hex_decode(v[key].as_str().expect("hex string")).expect("hex")
}

fn format_name(format: Format) -> String {
    match format {
        Format::Text => "text".into(),
        Format::Markdown => "markdown".into(),
        Format::Html => "html".into(),
        Format::Json => "json".into(),
        Format::Pdf => "pdf".into(),
        Format::Code(language) => format!("code:{}", language.name()),
    }
}

fn compute(case: &Value) -> Value {
    let input = &case["input"];
    match case["kind"].as_str().expect("kind") {
        "detect" => match detect(
            input["path"].as_str().expect("path"),
            &hex_of(input, "head"),
        ) {
            Ok(d) => json!({"mime_type": d.mime_type, "format": format_name(d.format)}),
            Err(_) => json!({"skipped": true}),
        },
        "decode" => match decode(&hex_of(input, "bytes")) {
            Ok(d) => json!({"text": d.text}),
            Err(_) => json!({"error": true}),
        },
        "chunk_text" => {
            let params = ChunkParams {
                target_bytes: input["target"].as_u64().expect("target") as u32,
                max_bytes: input["max"].as_u64().expect("max") as u32,
                overlap_bytes: input["overlap"].as_u64().expect("overlap") as u32,
            };
            let text = input["text"].as_str().expect("text");
            let spans = chunk_text(text, &params).expect("valid params");
            json!({"spans": spans.iter().map(|s| json!([s.start, s.end, s.start_line, s.end_line])).collect::<Vec<_>>()})
        }
        "identifier_parts" => {
            json!({"parts": identifier_parts(input["word"].as_str().expect("word"))})
        }
        "feature_hash" => {
            let tag = input["tag"].as_str().expect("tag").as_bytes()[0];
            json!({"hash": feature_hash(tag, input["feature"].as_str().expect("feature")).to_string()})
        }
        "embed" => {
            let e = HashEmbedder::new(input["dimension"].as_u64().expect("dimension") as usize);
            let v = e
                .embed_batch(&[input["text"].as_str().expect("text")])
                .expect("embed");
            json!({"model_id": e.model_id(), "model_hash": e.model_hash().to_hex(), "vector": v[0]})
        }
        "minilm" => {
            let model = minilm();
            let text = input["text"].as_str().expect("text");
            json!({
                "model_file_blake3": cfs_ingest::minilm::MINILM_HASH,
                "model_id": model.model_id(),
                "ids": model.tokenize(text),
                "vector": model.embed(text),
            })
        }
        other => panic!("unknown kind {other}"),
    }
}

fn detect_file() -> FileSpec {
    let mut cases = Vec::new();
    for (path, head) in [
        ("README.md", b"# Title\n".as_slice()),
        ("docs/Guide.MARKDOWN", b"text"),
        ("notes.txt", b"plain\n"),
        ("src/lib.rs", b"fn main() {}\n"),
        ("a/b/c.tsx", b"export const A = () => <div/>;\n"),
        ("x.mjs", b"import x from 'y';\n"),
        ("Makefile", b"all:\n\ttrue\n"),
        ("Dockerfile", b"FROM debian\n"),
        ("LICENSE", b"MIT\n"),
        ("config.yml", b"a: 1\n"),
        ("pyproject.toml", b"[project]\n"),
        ("infra/main.tf", b"resource \"a\" \"b\" {}\n"),
        ("prod.tfvars", b"region = \"x\"\n"),
        ("theme.scss", b"$x: 1;\n"),
        ("data.json", b"{}"),
        ("page.htm", b"<html></html>"),
        ("paper.pdf", b"%PDF-1.7\n"),
        ("renamed.bin", b"%PDF-1.4\n"),
        ("fake.pdf", b"not a pdf"),
        ("photo.txt", b"\x89PNG\r\n\x1a\n\x00\x00"),
        ("notes.txt", b"MZ is fine in text"),
        ("program", b"MZ\x90\x00\x03\x00"),
        ("noext", b"words and more words\n"),
        ("blob", b"\x00\x01\x02\x03\x04\x05"),
        ("controls", b"\x01\x02\x03\x04\x05\x06\x07\x08abc"),
        ("utf16-noext", &[b'h', 0, b'i', 0, b'!', 0, b'\n', 0]),
        ("archive.unknownext", b"PK\x03\x04rest"),
        (
            "list.h",
            b"#include <stdio.h>\n/* This class of errors */\nint f(void);\n",
        ),
        ("db.h", b"#pragma once\n  namespace db {\n}\n"),
        ("str.h", b"void f(std::string s);\n"),
        ("tpl.h", b"template <typename T>\nT g();\n"),
        (
            "color.h",
            b"#include <stdint.h>\nenum class color : uint32_t {\n};\n",
        ),
        ("x.hpp", b"int f(void);\n"),
        ("tasks.rake", b"task :default\n"),
        ("index.php", b"<?php\n"),
        ("install.zsh", b"echo hi\n"),
        ("config.fish", b"set x 1\n"),
        ("Build.sc", b"object build\n"),
        ("lib/main.dart", b"void main() {}\n"),
        ("src/parser.ml", b"let x = 1\n"),
        ("src/parser.mli", b"val x : int\n"),
        ("src/cache.erl", b"-module(cache).\n"),
        ("R/clamp.R", b"clamp <- function(x) x\n"),
        ("src/Flux.jl", b"module Flux\nend\n"),
        ("db/schema.sql", b"CREATE TABLE t (a int);\n"),
        ("bin/report", b"#!/usr/bin/env Rscript\n"),
        (
            "Foo.h",
            b"#import <Foundation/Foundation.h>\n@interface Foo\n",
        ),
        ("Foo.m", b"\t@implementation Foo\n@end\n"),
        ("util.m", b"#include <stdio.h>\n"),
        ("plot.m", b"x = linspace(0, 1);\n"),
        ("Foo.mm", b"int f();\n"),
        ("bin/deploy", b"#!/usr/bin/env bash\nset -e\n"),
        ("bin/serve", b"#!/usr/bin/env -S python3.12 -u\n"),
        ("bin/tool", b"#!/usr/bin/env FOO=1 node\n"),
        ("bin/run", b"#!/bin/sh\n"),
        ("bin/awk-it", b"#!/usr/bin/awk -f\n"),
        ("bin/blank", b"#!\n"),
        ("notes.txt", b"#!/bin/sh\n"),
    ] {
        cases.push(case(
            "detect",
            &format!(
                "{path} starting {:?}",
                String::from_utf8_lossy(&head[..head.len().min(8)])
            ),
            json!({"path": path, "head": hex_encode(head)}),
        ));
    }
    FileSpec {
        name: "detect.json",
        comment: "File type detection (docs/spec.md section 14): a relative path and the first bytes of a file give a MIME type and how it is parsed (text, markdown, html, json, pdf, or code:<language>), or skipped: true for a file that is not indexed.",
        cases,
    }
}

fn decode_file() -> FileSpec {
    let utf16 = |text: &str, le: bool, bom: bool| -> String {
        let mut bytes: Vec<u8> = Vec::new();
        if bom {
            bytes.extend(if le { [0xFF, 0xFE] } else { [0xFE, 0xFF] });
        }
        for unit in text.encode_utf16() {
            bytes.extend(if le {
                unit.to_le_bytes()
            } else {
                unit.to_be_bytes()
            });
        }
        hex_encode(&bytes)
    };
    let mut cases = vec![
        case("decode", "empty", json!({"bytes": ""})),
        case("decode", "ASCII", json!({"bytes": hex_encode(b"abc\n")})),
        case(
            "decode",
            "UTF-8 with BOM",
            json!({"bytes": hex_encode("\u{feff}héllo".as_bytes())}),
        ),
        case(
            "decode",
            "CRLF and lone CR become LF",
            json!({"bytes": hex_encode(b"a\r\nb\rc\r\r\nd")}),
        ),
        case(
            "decode",
            "UTF-8 BOM then invalid UTF-8",
            json!({"bytes": hex_encode(b"\xEF\xBB\xBFok\xff")}),
        ),
        case(
            "decode",
            "UTF-16LE with BOM",
            json!({"bytes": utf16("hé 🦀\r\n", true, true)}),
        ),
        case(
            "decode",
            "UTF-16BE with BOM",
            json!({"bytes": utf16("hé 🦀\n", false, true)}),
        ),
        case(
            "decode",
            "UTF-16LE without BOM",
            json!({"bytes": utf16("fn main() {}\n", true, false)}),
        ),
        case(
            "decode",
            "UTF-16BE without BOM",
            json!({"bytes": utf16("fn main() {}\n", false, false)}),
        ),
        case(
            "decode",
            "UTF-16LE with BOM and odd length",
            json!({"bytes": "fffe6100ff"}),
        ),
        case(
            "decode",
            "UTF-16LE with an unpaired surrogate",
            json!({"bytes": "fffe00d86100"}),
        ),
        case(
            "decode",
            "UTF-16LE with a NUL character",
            json!({"bytes": "fffe61000000"}),
        ),
        case(
            "decode",
            "NUL bytes that are not UTF-16",
            json!({"bytes": hex_encode(b"ab\x00cd\x00\x00\x00")}),
        ),
        case(
            "decode",
            "a U+FEFF after a UTF-8 BOM is removed too",
            json!({"bytes": hex_encode("\u{feff}\u{feff}x".as_bytes())}),
        ),
    ];
    cases.push(case(
        "decode",
        "UTF-8 multi-byte, no BOM",
        json!({"bytes": hex_encode("日本語 🦀 e\u{301}".as_bytes())}),
    ));
    FileSpec {
        name: "decode.json",
        comment: "Canonical text (docs/spec.md section 15): raw bytes (hex) give the canonical text, or error: true. Only the byte-order-mark, UTF-8 and UTF-16 rules are covered here; legacy charset detection (chardetng) is implementation-defined and tested in Rust only.",
        cases,
    }
}

fn chunker_file() -> FileSpec {
    let mut cases = Vec::new();
    let seed = "First paragraph.\n\nSecond paragraph.\n\nThird paragraph.";
    for (t, m, o) in [(50, 100, 10), (20, 30, 10), (20, 30, 12), (16, 20, 0)] {
        cases.push(case(
            "chunk_text",
            &format!("CFS-011 example text, target {t} max {m} overlap {o}"),
            json!({"text": seed, "target": t, "max": m, "overlap": o}),
        ));
    }
    let prose = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test_data/golden/prose.txt"),
    )
    .expect("prose");
    let prose: String = prose.chars().take(6000).collect();
    let many: Vec<(&str, String, u32, u32, u32)> = vec![
        ("empty text", String::new(), 10, 20, 2),
        ("one character", "a".into(), 10, 20, 2),
        ("exactly max", "x".repeat(20), 10, 20, 2),
        ("max plus one", "x".repeat(21), 10, 20, 2),
        ("no separators: hard cuts", "y".repeat(50), 10, 20, 5),
        (
            "4-byte characters at the minimum max",
            "🦀".repeat(9),
            8,
            8,
            0,
        ),
        (
            "4-byte characters, max not a multiple of 4",
            "🦀".repeat(9),
            9,
            10,
            0,
        ),
        ("mixed widths", "aé日🦀".repeat(12), 12, 15, 4),
        (
            "sentences beat words",
            "One two three. Four five six! Seven eight nine? Ten eleven.".into(),
            20,
            30,
            6,
        ),
        (
            "lines beat sentences",
            "one. two\nthree. four\nfive. six\nseven. eight\n".into(),
            12,
            20,
            4,
        ),
        (
            "paragraphs beat lines",
            "aa\nbb\n\ncc\ndd\n\nee\nff\n\ngg\n".into(),
            8,
            12,
            3,
        ),
        (
            "runs of newlines",
            "a\n\n\n\nb\n\n\n\nc\n\n\n\nd\n\n\n\n".into(),
            4,
            8,
            2,
        ),
        (
            "tabs and spaces",
            "col1\tcol2\tcol3\tcol4\tcol5 col6 col7".into(),
            10,
            14,
            5,
        ),
        (
            "overlap inside one long word is dropped",
            format!("{} {}", "z".repeat(30), "w".repeat(30)),
            20,
            25,
            8,
        ),
        (
            "regression: an overlap start from which max cannot pass the previous end",
            "日é\n  🦀日🦀 ".into(),
            8,
            9,
            7,
        ),
        ("prose, small chunks", prose.clone(), 300, 500, 60),
        ("prose, default sizes", prose.clone(), 1024, 2048, 128),
        ("prose, no overlap", prose, 700, 800, 0),
    ];
    for (name, text, t, m, o) in many {
        cases.push(case(
            "chunk_text",
            name,
            json!({"text": text, "target": t, "max": m, "overlap": o}),
        ));
    }
    FileSpec {
        name: "chunker.json",
        comment: "The separator-priority text chunker (docs/spec.md section 16): a text and target/max/overlap in bytes give the chunk spans [start, end, start_line, end_line], byte offsets in the UTF-8 text.",
        cases,
    }
}

fn embedder_file() -> FileSpec {
    let mut cases = Vec::new();
    for word in [
        "plain",
        "snake_case_name",
        "camelCaseName",
        "parseHTTPServer2Config",
        "__dunder__",
        "ABC",
        "x9y",
        "Ünïcode_Part",
        "a_B_c",
    ] {
        cases.push(case("identifier_parts", word, json!({"word": word})));
    }
    for (tag, feature) in [
        ("w", ""),
        ("w", "hello"),
        ("s", "http"),
        ("g", "^he"),
        ("g", "日本語"),
        ("w", "config"),
    ] {
        cases.push(case(
            "feature_hash",
            &format!("{tag} {feature:?}"),
            json!({"tag": tag, "feature": feature}),
        ));
    }
    for (name, text, dim) in [
        ("empty text", "", 256),
        ("only punctuation", "{ } ( ) ; — …", 256),
        ("one word", "hello", 256),
        (
            "code",
            "fn parse_config(path: &Path) -> Result<Config, Error> {",
            256,
        ),
        (
            "prose",
            "The quick brown fox jumps over the lazy dog. The dog sleeps.",
            256,
        ),
        (
            "unicode and identifiers",
            "日本語のテキスト with HTTPServer and naïve café",
            256,
        ),
        ("a long word", &"abcdefghij".repeat(10), 64),
        ("dimension 1", "anything at all", 1),
        ("dimension 7", "seven buckets only", 7),
    ] {
        cases.push(case("embed", name, json!({"text": text, "dimension": dim})));
    }
    FileSpec {
        name: "embedder.json",
        comment: "The hash embedder (docs/spec.md section 19). identifier_parts: a word split into its ASCII-lower-cased identifier parts. feature_hash: FNV-1a 64 over the tag byte and the feature's UTF-8 bytes, then the splitmix64 finaliser, as a decimal u64 string. embed: the model id, its model hash and the i16 vector of a text at a dimension.",
        cases,
    }
}

fn files() -> Vec<FileSpec> {
    vec![
        detect_file(),
        decode_file(),
        chunker_file(),
        embedder_file(),
        minilm_file(),
    ]
}

fn minilm_file() -> FileSpec {
    let long = "Parsing configuration files, one section after another. ".repeat(40);
    let texts = [
        ("empty", String::new()),
        ("one word", "hello".into()),
        ("a query", "parse the configuration file and return the settings".into()),
        ("Rust", "/// Reads a config file.\nfn parse_config(path: &Path) -> Result<Config, Error> {\n    let text = fs::read_to_string(path)?;\n    toml::from_str(&text).map_err(Error::from)\n}".into()),
        ("Python", "def read_csv(path):\n    \"\"\"Read the rows of a CSV file.\"\"\"\n    with open(path) as f:\n        return list(csv.reader(f))".into()),
        ("Go", "// HTTPServer serves requests.\nfunc (s *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {}".into()),
        ("Markdown", "# Install\n\nRun `cargo install cfs` and then **cfs index .** to build the store.".into()),
        ("accents and case", "Héllo Wörld, NAÏVE café, Ångström".into()),
        ("CJK, emoji, symbols", "東京 is 日本's capital 🦀 → ≤ ∑ ©".into()),
        ("controls and odd spaces", "tab\there\u{0}nul\u{200b}zero-width\u{a0}nbsp\u{3000}wide\r\nend".into()),
        ("unknown pieces and a long word", format!("qzxjv {} camelCaseIdentifier snake_case_name", "a".repeat(101))),
        ("longer than 256 tokens", long),
    ];
    FileSpec {
        name: "minilm.json",
        comment: "The minilm-int embedder (docs/spec.md section 22): a text gives its token ids ([CLS] ... [SEP], at most 256) and its 384-dimensional i16 vector from the model file whose BLAKE3 is model_file_blake3 (scripts/fetch-model makes it). verify.py recomputes both with its own integer implementation (test-vectors/minilm_int.py).",
        cases: texts
            .into_iter()
            .map(|(name, text)| case("minilm", name, json!({"text": text})))
            .collect(),
    }
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-vectors")
}

fn render(spec: &FileSpec) -> String {
    let cases: Vec<Value> = spec
        .cases
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c["expected"] = compute(&c);
            c
        })
        .collect();
    let file =
        json!({"_comment": spec.comment, "spec_version": cfs_core::SPEC_VERSION, "cases": cases});
    let mut text = serde_json::to_string_pretty(&file).expect("JSON");
    text.push('\n');
    text
}

#[test]
fn vectors_are_current() {
    let regenerate = std::env::var_os("CFS_REGENERATE_VECTORS").is_some();
    let mut stale = Vec::new();
    for spec in files() {
        let path = dir().join(spec.name);
        let fresh = render(&spec);
        if regenerate {
            std::fs::write(&path, &fresh).expect("write vectors");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(fresh.as_str()) {
            stale.push(spec.name);
        }
    }
    assert!(
        stale.is_empty(),
        "test vectors out of date: {stale:?}; if intended (and docs/spec.md says so), run:\n  {REGENERATE}"
    );
}

#[test]
fn vectors_pass() {
    let mut failures = Vec::new();
    let mut n = 0;
    for spec in files() {
        let path = dir().join(spec.name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run {REGENERATE}", path.display()));
        let file: Value = serde_json::from_str(&text).expect("JSON");
        for c in file["cases"].as_array().expect("cases") {
            n += 1;
            let actual = compute(c);
            if actual != c["expected"] {
                failures.push(format!(
                    "{} / {}: expected {} got {actual}",
                    spec.name, c["name"], c["expected"]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(n > 50);
}
