//! Test vectors of ranking for code: `test-vectors/ranking.json` (docs/spec.md sections
//! 21.2 and 21.4 to 21.10): reading a query, word variants, file roles and markers, name
//! keys, declared names, definition terms, match levels, file words and path points,
//! coverage, file vectors, file texts, and whole rankings of given lists. `ranking_vectors_are_current`
//! fails when the file is not what this generator writes (`CFS_REGENERATE_VECTORS=1`
//! rewrites it); `test-vectors/verify.py` recomputes every case from the spec.

use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId, SymbolKind};
use cfs_ingest::{Markers, Role, beside_implementation, document_role, path_role};
use cfs_search::{
    Analysis, ChunkMeta, DocInfo, Evidence, FileText, Intent, Mentions, Parts, PathInfo, QueryTerm,
    RankedChunk, Ranking, analyze, chunk_list, coverage_points, declared, definition_terms,
    file_text_score_of, file_vector_score_of, file_words, fuse_ranks, match_level, name_head,
    name_key, named_after, path_points, rank_chunks, variants,
};
use serde_json::{Value, json};

use crate::support::{check_vectors, render_vectors};

const REGENERATE: &str =
    "CFS_REGENERATE_VECTORS=1 cargo test -p cfs-search --test it ranking_vectors";

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("string {k}"))
}

fn kind_of(name: &str) -> Option<SymbolKind> {
    SymbolKind::ALL.into_iter().find(|k| k.name() == name)
}

fn intent_of(name: &str) -> Intent {
    match name {
        "name" => Intent::Name,
        "mixed" => Intent::Mixed,
        _ => Intent::Description,
    }
}

/// Chunk metadata for a case: a code chunk of `symbol` (kind, name, parent) in a
/// document at `paths`.
fn meta(
    id: ChunkId,
    doc: DocInfo,
    symbol: Option<(&str, &str, Option<&str>)>,
    window: u32,
) -> ChunkMeta {
    let (symbol_kind, qualified, name_start) = match symbol {
        Some((kind, name, parent)) => {
            let q = match parent {
                Some(p) => format!("{p}::{name}"),
                None => name.to_owned(),
            };
            (
                kind_of(kind),
                Some(q.into()),
                parent.map_or(0, |p| p.len() + 2) as u16,
            )
        }
        None => (None, None, 0),
    };
    ChunkMeta {
        id,
        doc: Arc::new(doc),
        sequence: 0,
        byte_offset: 0,
        byte_length: 0,
        start_line: 1,
        end_line: 1,
        kind: "code",
        language: Some("text".into()),
        symbol: qualified,
        heading: None,
        symbol_kind,
        name_start,
        continued: window > 0,
    }
}

fn doc(index: u8, paths: &[&str], markers: u8) -> DocInfo {
    let paths = paths
        .iter()
        .map(|p| PathInfo {
            path: (*p).into(),
            collections: Vec::new(),
        })
        .collect();
    DocInfo::new(
        DocumentId([index; 16]),
        "text/plain".into(),
        paths,
        Vec::new(),
        Markers::from_bits(markers),
    )
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn compute(case: &Value) -> Value {
    let input = &case["input"];
    match s(case, "kind") {
        "query" => {
            let a = analyze(s(input, "text"));
            let idents: Vec<Value> = a
                .identifiers
                .iter()
                .map(|i| json!({"name": i.name, "key": i.key, "qualifier": i.qualifier}))
                .collect();
            json!({"intent": a.intent.name(), "identifiers": idents, "words": a.words,
                   "mentions": {"test": a.mentions.test, "example": a.mentions.example, "docs": a.mentions.docs}})
        }
        "variants" => json!({"variants": variants(s(input, "word"))}),
        "role" => json!({"role": path_role(s(input, "path")).name()}),
        "markers" => {
            let m = Markers::of(s(input, "text"), input["code"].as_bool().unwrap_or(false));
            json!({"generated": m.generated, "minified": m.minified})
        }
        "document_role" => {
            let paths = strings(&input["paths"]);
            let m = Markers::from_bits(input["markers"].as_u64().unwrap_or(0) as u8);
            json!({"role": document_role(paths.iter().map(String::as_str), m).name()})
        }
        "role_in_state" => {
            let paths = strings(&input["paths"]);
            let state = strings(&input["state"]);
            let mut holds = |p: &str| state.iter().any(|s| s == p);
            let markers = Markers {
                beside: beside_implementation(paths.iter().map(String::as_str), &mut holds),
                ..Markers::default()
            };
            let role = document_role(paths.iter().map(String::as_str), markers);
            json!({"beside": markers.beside, "role": role.name()})
        }
        "name_key" => {
            let kind = input["symbol_kind"].as_str().and_then(kind_of);
            json!({"head": name_head(s(input, "name"), kind), "key": name_key(s(input, "name"), kind)})
        }
        "declared" => match declared(s(input, "line")) {
            Some(d) => json!({"name": d.name, "qualifier": d.qualifier, "kind": d.kind.name()}),
            None => json!({"name": null}),
        },
        "definition_terms" => definition_terms_case(input),
        "match_level" => match_level_case(input),
        "path_points" => {
            let f = file_words(s(input, "path"));
            let words = strings(&input["words"]);
            let points = path_points(&words, &f, intent_of(s(input, "intent")));
            json!({"stem": f.stem, "folder": f.folder, "points": points})
        }
        "coverage" => {
            let weights: Vec<u64> = input["weights"]
                .as_array()
                .expect("weights")
                .iter()
                .map(|w| w.as_u64().expect("u64"))
                .collect();
            json!({"points": coverage_points(&weights, input["mask"].as_u64().expect("mask"))})
        }
        "file_vector" => {
            let vectors: Vec<Vec<i16>> =
                serde_json::from_value(input["vectors"].clone()).expect("vectors");
            let q: Vec<i16> = serde_json::from_value(input["query"].clone()).expect("query");
            let refs: Vec<&[i16]> = vectors.iter().map(Vec::as_slice).collect();
            json!({"score": file_vector_score_of(&refs, &q).map(|v| v.to_string())})
        }
        "file_text" => file_text_case(input),
        "rank" => rank_case(input),
        other => panic!("unknown kind {other}"),
    }
}

fn file_text_case(input: &Value) -> Value {
    let n = |k: &str| input[k].as_u64().expect("a number");
    let file = FileText {
        documents: n("documents"),
        tokens: n("tokens"),
        length: n("length"),
    };
    let terms: Vec<QueryTerm> = input["terms"]
        .as_array()
        .expect("terms")
        .iter()
        .map(|t| QueryTerm {
            term: s(t, "term").to_owned(),
            shift: t["shift"].as_u64().expect("shift") as u32,
            idf: t["idf"].as_u64().expect("idf"),
        })
        .collect();
    let counts: Vec<u64> = serde_json::from_value(input["counts"].clone()).expect("counts");
    json!({"score": file_text_score_of(&file, &terms, &counts).map(|v| v.to_string())})
}

fn definition_terms_case(input: &Value) -> Value {
    let symbol = input["symbol"].as_array().map(|a| {
        (
            a[0].as_str().unwrap_or(""),
            a[1].as_str().unwrap_or(""),
            a[2].as_str(),
        )
    });
    let d = doc(1, &["src/lib.rs"], 0);
    let m = meta(
        ChunkId([1; 16]),
        d,
        symbol,
        input["window"].as_u64().unwrap_or(0) as u32,
    );
    let mut m = m;
    if let Some(language) = input["language"].as_str() {
        m.language = Some(language.into());
    }
    let terms: Vec<Value> = definition_terms(&m, s(input, "text"))
        .into_iter()
        .map(|(t, v)| json!([t, v]))
        .collect();
    json!({"terms": terms})
}

fn match_level_case(input: &Value) -> Value {
    let symbol = input["symbol"].as_array().map(|a| {
        (
            a[0].as_str().unwrap_or(""),
            a[1].as_str().unwrap_or(""),
            a[2].as_str(),
        )
    });
    let d = doc(1, &[s(input, "path")], 0);
    let m = meta(ChunkId([1; 16]), d, symbol, 0);
    let a = analyze(s(input, "query"));
    let ident = a.identifiers.first().expect("an identifier");
    let own = input["own"].as_bool().unwrap_or(true);
    let qualified = input["qualified"].as_bool().unwrap_or(false);
    json!({
        "level": match_level(&m.view(), ident, own, qualified),
        "named": named_after(s(input, "path"), &ident.name),
    })
}

/// A ranking of given lists: each chunk's ranks, each document's paths, markers and
/// evidence; the files in order with their scores, and the chunk list.
fn rank_case(input: &Value) -> Value {
    let intent = intent_of(s(input, "intent"));
    let mentions = Mentions {
        test: input["mentions"]["test"].as_bool().unwrap_or(false),
        example: input["mentions"]["example"].as_bool().unwrap_or(false),
        docs: input["mentions"]["docs"].as_bool().unwrap_or(false),
    };
    let analysis = Analysis {
        intent,
        identifiers: Vec::new(),
        words: Vec::new(),
        mentions,
    };
    let ranking = Ranking::default();
    let mut weights = ranking.weights(intent);
    if let Some(w) = input["vector_weight"].as_u64() {
        weights.vector = w as u32;
    }
    let docs: Vec<Arc<DocInfo>> = input["docs"]
        .as_array()
        .expect("docs")
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let paths = strings(&d["paths"]);
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            Arc::new(doc(
                i as u8 + 1,
                &refs,
                d["markers"].as_u64().unwrap_or(0) as u8,
            ))
        })
        .collect();
    let mut evidence: HashMap<DocumentId, Evidence> = HashMap::new();
    for (d, v) in docs.iter().zip(input["docs"].as_array().expect("docs")) {
        let e = &v["evidence"];
        evidence.insert(
            d.id,
            Evidence {
                path: e["path"].as_u64().unwrap_or(0),
                coverage: e["coverage"].as_u64().unwrap_or(0),
                vector_rank: e["vector_rank"].as_u64().map(|r| r as usize),
                text_rank: e["text_rank"].as_u64().map(|r| r as usize),
            },
        );
    }
    let pair = |v: &Value| {
        v.as_array()
            .map(|a| (a[0].as_u64().expect("n"), a[1].as_u64().expect("n")))
    };
    let chunks: Vec<RankedChunk> = input["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| {
            let id = ChunkId::parse(s(c, "id")).expect("chunk id");
            let d = &docs[c["doc"].as_u64().expect("doc") as usize];
            let mut m = meta(
                id,
                DocInfo::new(
                    d.id,
                    d.mime_type.clone(),
                    d.paths.clone(),
                    Vec::new(),
                    d.markers,
                ),
                None,
                0,
            );
            m.doc = Arc::clone(d);
            let mut parts = Parts {
                text: pair(&c["text"]).map(|(s, r)| (s, r as usize)),
                vector: pair(&c["vector"]).map(|(s, r)| (s as i64, r as usize)),
                definition: pair(&c["definition"]).map(|(r, l)| (r as usize, l)),
                ..Parts::default()
            };
            fuse_ranks(&mut parts, &weights);
            RankedChunk {
                meta: Arc::new(m),
                parts,
            }
        })
        .collect();
    let files = rank_chunks(chunks, &evidence, &analysis, &ranking, &weights);
    let doc_index = |id: DocumentId| docs.iter().position(|d| d.id == id).unwrap_or(usize::MAX);
    let out_files: Vec<Value> = files
        .iter()
        .map(|f| {
            let chunks: Vec<Value> = f
                .chunks
                .iter()
                .map(|c| json!({"id": c.meta.id.to_string(), "fused": c.parts.fused.to_string(),
                                "chunk": c.parts.chunk.to_string(), "score": c.parts.score.to_string()}))
                .collect();
            json!({"doc": doc_index(f.chunks[0].meta.doc.id), "role": f.chunks[0].meta.doc.role.name(),
                   "score": f.score.to_string(), "chunks": chunks})
        })
        .collect();
    let order: Vec<String> = chunk_list(files, usize::MAX)
        .iter()
        .map(|c| c.meta.id.to_string())
        .collect();
    json!({"files": out_files, "chunk_order": order})
}

fn cases() -> Vec<Value> {
    let case =
        |kind: &str, name: &str, input: Value| json!({"kind": kind, "name": name, "input": input});
    let mut out = Vec::new();
    for text in [
        "IntoResponse",
        "Router::route",
        "`Client.send()`",
        "Foo\\Bar::baz",
        "Rack::Request#params",
        "$logger",
        "render",
        "uv_loop_init",
        "where is parse_headers called",
        "How does the Router dispatch a request to its handler?",
        "retry a request with exponential backoff",
        "call parse() first",
        "where are the router tests",
        "docs for routing examples",
        "how to install the cli",
        "Why does the build fail?",
        "(which) cache is used",
        "Howdy, what is new",
        "what's new in the parser",
        "when Router::route runs",
        "a/b/c.rs",
        "",
        "  ?? ",
        "_private_thing and __dunder__",
        "parseURL vs parse2Go in HTTPServer",
        &format!("{}Name", "x".repeat(70)),
    ] {
        out.push(case("query", text, json!({"text": text})));
    }
    for word in [
        "retries", "matching", "compiled", "headers", "boxes", "compile", "retry", "route",
        "match", "class", "api", "Parse", "naïve", "http2", "ties", "sing", "bed", "uses",
    ] {
        out.push(case("variants", word, json!({"word": word})));
    }
    for path in [
        "src/lib.rs",
        "axum/src/routing/path_router.rs",
        "Latest.java",
        "contest.py",
        "bin/rackup",
        "tests/it/main.rs",
        "src/__tests__/a.ts",
        "foo_test.go",
        "pkg/test_client.py",
        "src/FooTest.java",
        "Src/Serilog.Tests/Core/LoggerTests.cs",
        "Src/Newtonsoft.Json.Tests/TestObjects/Person.cs",
        "src/Polly.Testing/ResilienceStrategyExtensions.cs",
        "axum/src/test_helpers/mod.rs",
        "runtime-tests/deno/index.ts",
        "example_flutter_app/lib/main.dart",
        "watchOS Example/ExtensionDelegate.swift",
        "src/latest/mod.rs",
        "src/sample_rate/mod.rs",
        "okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt",
        "src/router.test.ts",
        "src/router.spec.js",
        "lib/sinatra_spec.rb",
        "lib/openapi_spec.py",
        "conftest.py",
        "benches/search.rs",
        "modules/benchmark/src/main/scala/NumberParsingBenchmark.scala",
        "bench/bench.cpp",
        "vendor/github.com/x/y.go",
        "deps/jemalloc/src/arena.c",
        "api/v1/service.pb.go",
        "proto/service_pb2.py",
        "dist/app.min.js",
        "generated/x.rs",
        "types/index.d.ts",
        "stubs/os.pyi",
        "lsp/src/text_document.mli",
        "src/Data/Aeson/Types.hs-boot",
        "examples/hello/main.rs",
        "docs_src/tutorial/app.py",
        "docs/guide/snippet.py",
        "docs/guide/index.md",
        "docs/content/manual/v1.7/manual.yml",
        "README.md",
        "jq.1.prebuilt",
        "Cargo.toml",
        "package.json",
        ".github/workflows/ci.yml",
        "tsconfig.build.json",
        "CMakeLists.txt",
        "Makefile",
        "src/Thing.Designer.cs",
        "x.y.z",
    ] {
        out.push(case("role", path, json!({"path": path})));
    }
    let long_line = "var a=1;".repeat(200);
    let lines = "fn main() {\n    println!(\"hi\");\n}\n".repeat(40);
    for (name, text, code) in [
        (
            "go generated",
            "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n",
            true,
        ),
        ("lower case", "package x\n// do not edit lightly\n", true),
        (
            "bison",
            "/* A Bison parser, made by GNU Bison 3.8.2.  */\n\n/* Bison implementation */\n",
            true,
        ),
        (
            "flex",
            "#line 2 \"src/lexer.c\"\n\n#define  YY_INT_ALIGNED short int\n\n/* A lexical scanner generated by flex */\n",
            true,
        ),
        ("minified code", long_line.as_str(), true),
        ("minified text", long_line.as_str(), false),
        ("ordinary code", lines.as_str(), true),
        (
            "marker past 1024 bytes",
            &format!("{}\n// @generated", "x".repeat(1030)),
            true,
        ),
    ] {
        out.push(case("markers", name, json!({"text": text, "code": code})));
    }
    for (paths, markers) in [
        (vec!["tests/copy.rs", "src/copy.rs"], 0u8),
        (vec!["tests/copy.rs", "src/copy.rs"], 1),
        (vec!["vendor/a.js"], 2),
        (vec!["docs/a.md", "examples/a.md"], 0),
        (vec!["db/memtable.h"], 4),
        (vec!["types/index.d.ts"], 4),
        (vec!["tests/a.h"], 4),
    ] {
        out.push(case(
            "document_role",
            &paths.join(" "),
            json!({"paths": paths, "markers": markers}),
        ));
    }
    let state = [
        "db/memtable.h",
        "db/memtable.cc",
        "include/leveldb/db.h",
        "db/db_impl.cc",
        "src/jv.h",
        "src/jv.c",
        "Source/AFURLSessionManager.h",
        "Source/AFURLSessionManager.m",
        "src/Lib.HPP",
        "src/Lib.cpp",
        "src/lib.hpp",
        "src/util.h",
        "src/util.c.in",
        "test/x.h",
        "test/x.c",
        "copy/memtable.h",
    ];
    for paths in [
        vec!["db/memtable.h"],
        vec!["include/leveldb/db.h"],
        vec!["src/jv.h"],
        vec!["Source/AFURLSessionManager.h"],
        vec!["src/Lib.HPP"],
        vec!["src/lib.hpp"],
        vec!["src/util.h"],
        vec!["test/x.h"],
        vec!["db/memtable.h", "copy/memtable.h"],
        vec!["db/memtable.h", "test/x.h"],
        vec!["db/memtable.cc"],
    ] {
        out.push(case(
            "role_in_state",
            &paths.join(" "),
            json!({"paths": paths, "state": state}),
        ));
    }
    for (name, kind) in [
        ("IntoResponse", Some("trait")),
        ("Router<S>", Some("impl")),
        ("IntoResponse for Html<T>", Some("impl")),
        ("fmt::Debug for Router", Some("impl")),
        ("a for b", Some("function")),
        ("axum::Router", None),
        ("__init__", Some("method")),
        ("&'a str", None),
        ("", None),
        ("Grüße", None),
        ("*mut Foo", None),
        ("Foo\\Bar", None),
        ("$constructor", Some("function")),
        ("core.$ZodType<T>", Some("interface")),
        ("$", None),
    ] {
        out.push(case(
            "name_key",
            name,
            json!({"name": name, "symbol_kind": kind}),
        ));
    }
    for line in [
        "public enum RetryResult {",
        "internal fun Response.promisesBody(): Boolean {",
        "    def self.call(env)",
        "def parse_headers(raw):",
        "func (r *Router) Handle(method string) {",
        "open class Session: @unchecked Sendable {",
        "public static function create(array $options = []): self",
        "#define REDIS_VERSION \"8.0\"",
        "typedef struct redisObject {",
        "macro_rules! impl_handler {",
        "pub(crate) fn route(self) -> Self {",
        "jv jq_next(jq_state *jq) {",
        "Status DBImpl::Get(const ReadOptions& options,",
        "public async Task<int> RunAsync(CancellationToken token)",
        "exports.compileTrust = function(val) {",
        "Router.prototype.handle = async function handle(req) {",
        "const onError = (err) => {",
        "module.exports = function createApplication() {",
        "return foo(bar);",
        "foo(bar);",
        "int x = compute(y);",
        "// def commented(out)",
        "host.toCanonicalHost()",
        "throw new Error(\"x\")",
        "x = a == b",
        "else if (a(b))",
    ] {
        out.push(case("declared", line, json!({"line": line})));
    }
    let class_text = "class Client:\n    def send(self, request):\n        pass\n    def close(self):\n        pass\n";
    for (name, symbol, window, text) in [
        (
            "python class",
            Some(json!(["class", "Client", null])),
            0,
            class_text,
        ),
        (
            "a method of an impl",
            Some(json!(["method", "route", "Router<S>"])),
            0,
            "pub fn route(self) {}\n",
        ),
        (
            "a later window",
            Some(json!(["function", "big", null])),
            1,
            "fn inner() {}\n",
        ),
        (
            "text chunk of C",
            None,
            0,
            "static int parse(const char *s);\nint main(void) {\n  parse(x);\n}\n#define MAX 4\n",
        ),
        (
            "qualified declarations",
            None,
            0,
            "Status DBImpl::Get(const ReadOptions& o,\nfun String.toHost(): String {\n",
        ),
    ] {
        out.push(case(
            "definition_terms",
            name,
            json!({"symbol": symbol, "window": window, "text": text}),
        ));
    }
    for (name, language, symbol, text) in [
        (
            "a CSS rule declares nothing",
            "css",
            json!(["rule", ".logo", null]),
            ".logo {\n  background: url(logo.png);\n  transform: rotate(3deg);\n}\n",
        ),
        (
            "a YAML key declares nothing",
            "yaml",
            json!(["section", "schema", null]),
            "schema:\n  type: object\n  class Foo\n",
        ),
    ] {
        out.push(case(
            "definition_terms",
            name,
            json!({"symbol": symbol, "window": 0, "language": language, "text": text}),
        ));
    }
    for (name, symbol, path, query, own, qualified) in [
        (
            "exact case",
            json!(["trait", "IntoResponse", null]),
            "src/a.rs",
            "IntoResponse",
            true,
            false,
        ),
        (
            "other case",
            json!(["function", "intoresponse", null]),
            "src/a.rs",
            "IntoResponse",
            true,
            false,
        ),
        (
            "parent qualifier",
            json!(["method", "route", "Router<S>"]),
            "src/a.rs",
            "Router::route",
            true,
            false,
        ),
        (
            "stem qualifier",
            json!(["method", "escape", null]),
            "src/Entities.java",
            "Entities.escape",
            true,
            false,
        ),
        (
            "other qualifier",
            json!(["method", "route", "Other"]),
            "src/a.rs",
            "Router::route",
            true,
            false,
        ),
        ("declared", json!(null), "src/a.c", "jq_next", false, false),
        (
            "declared qualified term",
            json!(null),
            "src/a.cc",
            "DBImpl::Get",
            false,
            true,
        ),
        (
            "declared stem",
            json!(null),
            "src/Entities.java",
            "Entities.EscapeMode",
            false,
            false,
        ),
        (
            "declared other qualifier",
            json!(null),
            "src/a.java",
            "Entities.EscapeMode",
            false,
            false,
        ),
        (
            "file named after the name",
            json!(["class", "HonoRequest", null]),
            "src/request.ts",
            "HonoRequest",
            true,
            false,
        ),
        (
            "file not named after the name",
            json!(["type", "HonoRequest", null]),
            "src/client/types.ts",
            "HonoRequest",
            true,
            false,
        ),
        (
            "module file named by its folder",
            json!(["module", "routing", null]),
            "axum/src/routing/mod.rs",
            "Routing",
            true,
            false,
        ),
        (
            "stem words named by prefix and plural",
            json!(["struct", "HandlerConfig", null]),
            "src/handlers/configuration.rs",
            "HandlerConfig",
            true,
            false,
        ),
        (
            "a stem word the name lacks",
            json!(["struct", "Router", null]),
            "src/path_router.rs",
            "Router",
            true,
            false,
        ),
    ] {
        out.push(case("match_level", name, json!({"symbol": symbol, "path": path, "query": query, "own": own, "qualified": qualified})));
    }
    for (path, words, intent) in [
        (
            "axum/src/routing/path_router.rs",
            vec!["path", "router", "implementation"],
            "description",
        ),
        (
            "axum/src/routing/path_router.rs",
            vec!["router"],
            "description",
        ),
        (
            "axum-core/src/response/into_response.rs",
            vec!["into", "response"],
            "name",
        ),
        ("src/unix/loop.c", vec!["uv", "loop", "init"], "name"),
        ("src/unix/loop.c", vec!["retry"], "description"),
        ("axum/src/routing/mod.rs", vec!["routing"], "description"),
        (
            "src/middleware/csrf/index.ts",
            vec!["csrf", "middlewares"],
            "mixed",
        ),
        (
            "Src/Newtonsoft.Json/JsonConvert.cs",
            vec!["json", "converter"],
            "name",
        ),
        (".eslintrc.js", vec!["eslint"], "description"),
        (
            "lib/日本語/テキスト.rs",
            vec!["日本", "テキスト"],
            "description",
        ),
        ("a/b/handlers.go", vec!["handle", "box"], "description"),
    ] {
        out.push(case(
            "path_points",
            path,
            json!({"path": path, "words": words, "intent": intent}),
        ));
    }
    for (weights, mask) in [
        (vec![100u64, 200, 300], 0b101u64),
        (vec![0, 0], 3),
        (vec![5; 70], u64::MAX),
        (vec![7, 0, 9], 0b010),
    ] {
        out.push(case(
            "coverage",
            &format!("{weights:?} {mask:b}"),
            json!({"weights": weights, "mask": mask}),
        ));
    }
    for (name, vectors, q) in [
        ("one vector", vec![vec![3i16, 4]], vec![6i16, 8]),
        (
            "sum of two",
            vec![vec![1000i16, -2000, 300], vec![-500, 700, 32767]],
            vec![32767i16, -32768, 1],
        ),
        ("opposite", vec![vec![-5i16, 0]], vec![5i16, 0]),
        ("zero sum", vec![vec![1i16, 1], vec![-1, -1]], vec![1i16, 1]),
        ("none", vec![], vec![1i16, 1]),
    ] {
        out.push(case(
            "file_vector",
            name,
            json!({"vectors": vectors, "query": q}),
        ));
    }
    let term = |term: &str, shift: u32, idf: u64| json!({"term": term, "shift": shift, "idf": idf});
    for (name, file, terms, counts) in [
        (
            "an average file, a word and a variant",
            [10u64, 1000, 100],
            vec![term("retry", 0, 200_000), term("retries", 1, 150_000)],
            vec![3u64, 2],
        ),
        (
            "a long file",
            [10, 1000, 5000],
            vec![term("retry", 0, 200_000)],
            vec![3],
        ),
        (
            "a term it does not hold",
            [10, 1000, 80],
            vec![term("retry", 0, 200_000), term("backoff", 0, 300_000)],
            vec![0, 1],
        ),
        (
            "an idf of 0 still counts",
            [4, 40, 10],
            vec![term("the", 0, 0)],
            vec![5],
        ),
        (
            "no term held",
            [10, 1000, 100],
            vec![term("x", 0, 9)],
            vec![0],
        ),
        (
            "large counts",
            [3, 4_000_000_000, 2_000_000_000],
            vec![term("a", 0, 1 << 20)],
            vec![1_000_000_000],
        ),
    ] {
        out.push(case(
            "file_text",
            name,
            json!({"documents": file[0], "tokens": file[1], "length": file[2], "terms": terms, "counts": counts}),
        ));
    }
    out.extend(rank_cases());
    out
}

/// Whole rankings: hybrid lists over files of several roles with evidence, a name
/// query's definitions, equal scores, a file's many chunks (the cap), a query naming
/// tests, code found by meaning alone below the demoted files that say the words.
fn rank_cases() -> Vec<Value> {
    let id = |n: u8| ChunkId([n; 16]).to_string();
    let case = |name: &str, input: Value| json!({"kind": "rank", "name": name, "input": input});
    let docs = json!([
        {"paths": ["src/router.rs"], "markers": 0, "evidence": {"path": 1024, "coverage": 700, "vector_rank": 1, "text_rank": 2}},
        {"paths": ["tests/router.rs"], "markers": 0, "evidence": {"path": 1024, "coverage": 900, "vector_rank": 2, "text_rank": 1}},
        {"paths": ["docs/routing.md"], "markers": 0, "evidence": {"path": 0, "coverage": 1024, "vector_rank": 3, "text_rank": 3}},
        {"paths": ["src/gen.rs"], "markers": 1, "evidence": {"path": 0, "coverage": 100, "vector_rank": null, "text_rank": null}},
    ]);
    let chunks = json!([
        {"id": id(1), "doc": 0, "text": [5_000_000_000u64, 3], "vector": [900_000_000, 1], "definition": null},
        {"id": id(2), "doc": 0, "text": [4_000_000_000u64, 5], "vector": null, "definition": null},
        {"id": id(3), "doc": 0, "text": null, "vector": [700_000_000, 4], "definition": null},
        {"id": id(4), "doc": 1, "text": [9_000_000_000u64, 1], "vector": [800_000_000, 2], "definition": null},
        {"id": id(5), "doc": 2, "text": [8_000_000_000u64, 2], "vector": [750_000_000, 3], "definition": null},
        {"id": id(6), "doc": 3, "text": [3_000_000_000u64, 4], "vector": null, "definition": null},
    ]);
    let mut out = vec![
        case(
            "description over roles",
            json!({"intent": "description", "mentions": {}, "docs": docs, "chunks": chunks}),
        ),
        case(
            "the query names tests",
            json!({"intent": "description", "mentions": {"test": true}, "docs": docs, "chunks": chunks}),
        ),
        case(
            "a name's weights over roles",
            json!({"intent": "name", "mentions": {}, "docs": docs, "chunks": chunks}),
        ),
        case(
            "a set vector weight",
            json!({"intent": "mixed", "mentions": {}, "vector_weight": 0, "docs": docs, "chunks": chunks}),
        ),
    ];
    let name_docs = json!([
        {"paths": ["src/response/into_response.rs"], "markers": 0, "evidence": {"path": 1280}},
        {"paths": ["src/handler.rs"], "markers": 0, "evidence": {}},
        {"paths": ["examples/app.rs"], "markers": 0, "evidence": {}},
    ]);
    let name_chunks = json!([
        {"id": id(10), "doc": 0, "text": [2_000_000_000u64, 4], "vector": null, "definition": [1, 5]},
        {"id": id(11), "doc": 1, "text": [9_000_000_000u64, 1], "vector": [500, 1], "definition": [2, 2]},
        {"id": id(12), "doc": 2, "text": [8_000_000_000u64, 2], "vector": null, "definition": [3, 4]},
        {"id": id(13), "doc": 1, "text": [7_000_000_000u64, 3], "vector": null, "definition": null},
    ]);
    out.push(case(
        "a name and its definitions",
        json!({"intent": "name", "mentions": {}, "docs": name_docs, "chunks": name_chunks}),
    ));
    let many_docs = json!([
        {"paths": ["src/a.rs"], "markers": 0, "evidence": {}},
        {"paths": ["src/b.rs"], "markers": 0, "evidence": {}},
    ]);
    let mut many = Vec::new();
    for n in 0..6u8 {
        many.push(json!({"id": id(20 + n), "doc": 0, "text": [1000, n as u64 + 2], "vector": null, "definition": null}));
    }
    // Equal scores across files: the tie order decides.
    many.push(
        json!({"id": id(30), "doc": 1, "text": [1000, 1], "vector": null, "definition": null}),
    );
    many.push(json!({"id": id(31), "doc": 1, "text": null, "vector": [7, 1], "definition": null}));
    // Only a demoted file says the query's words: code found by meaning alone with a
    // worse vector rank stays below it; once source says them too, the priors stand.
    let said_docs = json!([
        {"paths": ["README.md"], "markers": 0, "evidence": {"coverage": 1024, "vector_rank": 1}},
        {"paths": ["src/lib.rs"], "markers": 0, "evidence": {"vector_rank": 2}},
        {"paths": ["tests/merkle.rs"], "markers": 0, "evidence": {"coverage": 512, "vector_rank": 4}},
        {"paths": ["src/tree.rs"], "markers": 0, "evidence": {"coverage": 512, "vector_rank": 3}},
    ]);
    let said = json!([
        {"id": id(40), "doc": 0, "text": [9_000_000_000u64, 1], "vector": [600_000_000, 1], "definition": null},
        {"id": id(41), "doc": 1, "text": null, "vector": [200_000_000, 2], "definition": null},
        {"id": id(42), "doc": 2, "text": [4_000_000_000u64, 2], "vector": [150_000_000, 4], "definition": null},
        {"id": id(43), "doc": 1, "text": null, "vector": [180_000_000, 3], "definition": null},
        {"id": id(44), "doc": 1, "text": null, "vector": [100_000_000, 5], "definition": null},
    ]);
    out.push(case(
        "only docs and tests say the words",
        json!({"intent": "description", "mentions": {}, "docs": said_docs, "chunks": said}),
    ));
    let mut said_too = said.clone();
    said_too.as_array_mut().expect("chunks").push(
        json!({"id": id(45), "doc": 3, "text": [1_000_000_000u64, 3], "vector": null, "definition": null}),
    );
    out.push(case(
        "source says the words too",
        json!({"intent": "description", "mentions": {}, "docs": said_docs, "chunks": said_too}),
    ));
    out.push(case(
        "many chunks of a file, and ties",
        json!({"intent": "description", "mentions": {}, "docs": many_docs, "chunks": many}),
    ));
    out
}

fn render() -> String {
    render_vectors(
        "Ranking for code (docs/spec.md sections 21.2, 21.4 to 21.10). query: intent, identifiers, file words and named roles of a query. variants: the other forms of a query word. role: a path's role. markers: a first chunk's generated and minified markers. document_role: the role of a document's paths with markers (bit 0 generated, bit 1 minified, bit 2 beside its implementation). role_in_state: whether a document of these paths lies beside its implementation in a state holding the paths of state, and its role. name_key: a symbol name's head and key. declared: the name a line declares (name null: none). definition_terms: a code chunk's definition terms (U+0001 own, U+0002 declared) with their values, for its symbol [kind, name, parent] and window index. match_level: the level of a definition found for the query's first identifier (own: under the own term; qualified: under the qualified declared term). path_points: a path's stem and folder words and its points for the query's file words. coverage: coverage points of word weights and a mask. file_vector: the score of the sum of vectors for a query vector (null: none). rank: files and chunks ranked from given list ranks (text [bm25, rank], vector [dot, rank], definition [rank, level]), documents (paths, markers, evidence) and intent, with the default weights; scores as decimal strings; the chunk order of the chunk answer.",
        cases(),
        compute,
    )
}

#[test]
fn ranking_vectors_are_current() {
    check_vectors("ranking.json", &render(), REGENERATE);
}

/// Roles named in the vectors are every role there is.
#[test]
fn ranking_vectors_name_every_role() {
    let names: Vec<String> = cases()
        .iter()
        .filter(|c| c["kind"] == "role")
        .map(|c| compute(c)["role"].as_str().unwrap_or("").to_owned())
        .collect();
    for role in Role::ALL {
        assert!(
            names.iter().any(|n| n == role.name()),
            "no role case gives {role}"
        );
    }
}

/// A database keeps the rows these cases' rules derive (roles, markers, names, terms)
/// under `SEARCH_ROWS_VERSION`: when what they give changes, the version must move, so
/// that databases published before write their rows again.
#[test]
fn the_search_rows_version_moves_with_the_rules_it_names() {
    const DERIVING: [&str; 7] = [
        "role",
        "markers",
        "document_role",
        "role_in_state",
        "name_key",
        "declared",
        "definition_terms",
    ];
    let mut hash = blake3::Hasher::new();
    for c in cases()
        .iter()
        .filter(|c| DERIVING.iter().any(|k| c["kind"] == *k))
    {
        hash.update(c.to_string().as_bytes());
        hash.update(compute(c).to_string().as_bytes());
    }
    let fingerprint = hash.finalize().to_hex()[..16].to_owned();
    assert_eq!(
        (cfs_search::SEARCH_ROWS_VERSION, fingerprint.as_str()),
        (7, "756f3857bbc6f779"),
        "what the search rows are derived by changed: move cfs_search::SEARCH_ROWS_VERSION \
         and write the new version and fingerprint here"
    );
}
