//! The inputs of every vector file. Outputs are computed, never written by hand, except
//! for the upstream cases whose expected values come from their publishers.

use cfs_core::{
    Canonical, ChangeSummary, Chunk, ChunkKind, ContentHash, Document, DocumentId, Edge, EdgeKind,
    Embedding, MetaEntry, ModelHash, ParseProfile, PathEntry, StateRecord, Symbol, SymbolKind,
    TableChange, TableRoots, TextHash, Window, hex_encode,
};
use serde_json::{Value, json};

use super::compute::compute;
use super::json::*;

pub struct FileSpec {
    pub name: &'static str,
    pub comment: &'static str,
    pub cases: Vec<Value>,
}

fn case(kind: &str, name: &str, input: Value) -> Value {
    json!({"kind": kind, "name": name, "input": input})
}

pub fn text_profile() -> ParseProfile {
    ParseProfile {
        mime_type: "text/plain".into(),
        parser: "text/1".into(),
        chunker: "text/1".into(),
        target_bytes: 1024,
        max_bytes: 2048,
        overlap_bytes: 128,
    }
}

fn profile(mime: &str, parser: &str, chunker: &str) -> Value {
    profile_to(&ParseProfile {
        mime_type: mime.into(),
        parser: parser.into(),
        chunker: chunker.into(),
        ..text_profile()
    })
}

/// Byte span and 1-based line range of `needle` in `content`.
fn span(content: &str, needle: &str, kind: Value) -> Value {
    let start = content.find(needle).expect("needle in content");
    let end = start + needle.len();
    let line = |at: usize| content[..at].matches('\n').count() + 1;
    json!({
        "byte_offset": start, "byte_length": needle.len(),
        "start_line": line(start), "end_line": line(end - 1), "kind": kind,
    })
}

const OFFICIAL_BLAKE3: [(u64, &str, &str); 7] = [
    (
        0,
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
        "2cc39783c223154fea8dfb7c1b1660f2ac2dcbd1c1de8277b0b0dd39b7e50d7d",
    ),
    (
        1,
        "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213",
        "b3e2e340a117a499c6cf2398a19ee0d29cca2bb7404c73063382693bf66cb06c",
    ),
    (
        1023,
        "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11",
        "74a16c1c3d44368a86e1ca6df64be6a2f64cce8f09220787450722d85725dea5",
    ),
    (
        1024,
        "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7",
        "7356cd7720d5b66b6d0697eb3177d9f8d73a4a5c5e968896eb6a689684302706",
    ),
    (
        1025,
        "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444",
        "effaa245f065fbf82ac186839a249707c3bddf6d3fdda22d1b95a3c970379bcb",
    ),
    (
        2049,
        "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030",
        "2ea477c5515cc3dd606512ee72bb3e0e758cfae7232826f35fb98ca1bcbdf273",
    ),
    (
        3073,
        "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3",
        "72613c9ec9ff7e40f8f5c173784c532ad852e827dba2bf85b2ab4b76f7079081",
    ),
];

/// Upstream cases whose expected output is published data, not ours to compute.
pub fn upstream_expected(case: &Value) -> Option<Value> {
    match case.get("kind")?.as_str()? {
        "blake3_official" => {
            let len = case.get("input")?.get("input_len")?.as_u64()?;
            let (_, hash, derive) = OFFICIAL_BLAKE3.iter().find(|(l, _, _)| *l == len)?;
            Some(json!({"hash": hash, "derive_key": derive}))
        }
        "uuid5" if case.get("name")?.as_str()?.starts_with("RFC 9562") => {
            Some(json!({"uuid": "2ed6657d-e927-568b-95e1-2665a8aea6a2"}))
        }
        _ => None,
    }
}

fn hashes() -> FileSpec {
    let mut cases = Vec::new();
    for (len, _, _) in OFFICIAL_BLAKE3 {
        cases.push(case(
            "blake3_official",
            &format!("BLAKE3 official vector, input_len {len} (first 32 bytes of the output)"),
            json!({"input_len": len, "context": "BLAKE3 2019-12-27 16:29:52 test vectors context"}),
        ));
    }
    for (name, bytes) in [
        ("empty file", vec![]),
        ("one zero byte", vec![0u8]),
        ("abc", b"abc".to_vec()),
        (
            "invalid UTF-8 is hashed as bytes",
            vec![0xff, 0xfe, 0x00, 0x41],
        ),
        ("1024 bytes: one BLAKE3 chunk", vec![b'a'; 1024]),
        ("1025 bytes: one chunk plus one byte", vec![b'a'; 1025]),
        ("CRLF bytes are hashed raw", b"a\r\nb\r\n".to_vec()),
    ] {
        cases.push(case(
            "content_hash",
            name,
            json!({"hex": hex_encode(&bytes)}),
        ));
    }
    for (name, text) in [
        ("empty text", ""),
        ("one ASCII char", "a"),
        ("multi-byte UTF-8", "héllo wörld — 日本語 🦀"),
        ("text with newlines", "line one\nline two\n"),
    ] {
        cases.push(case("text_hash", name, json!({"text": text})));
    }
    for model in ["cfs-hash-embed/1 dim=256", "", "ünïcode model"] {
        cases.push(case(
            "model_hash",
            &format!("model id {model:?}"),
            json!({"model_id": model}),
        ));
    }
    cases.push(case(
        "profile",
        "default text profile",
        json!({"profile": profile_to(&text_profile())}),
    ));
    cases.push(case(
        "profile",
        "code profile, multi-byte strings",
        json!({"profile": profile("text/x-rust", "code/1 tree-sitter-rust=0.24.2", "code/1 window=7000 overlap=500 ✓")}),
    ));
    cases.push(case(
        "empty_root",
        "root of a tree with no leaves",
        json!({}),
    ));
    cases.push(case(
        "empty_state",
        "roots of a store with no rows",
        json!({}),
    ));
    let roots = TableRoots {
        paths: cfs_core::MerkleRoot([1; 32]),
        documents: cfs_core::MerkleRoot([2; 32]),
        chunks: cfs_core::MerkleRoot([3; 32]),
        embeddings: cfs_core::MerkleRoot([4; 32]),
        edges: cfs_core::MerkleRoot([5; 32]),
    };
    cases.push(case(
        "state_root",
        "composition of five arbitrary roots",
        json!({"table_roots": roots_to(&roots)}),
    ));
    FileSpec {
        name: "hashes.json",
        comment: "Hashes of cfs (docs/spec.md sections 'Hashes' and 'Merkle trees'). Each case has a kind, a name, an input and the expected output. blake3_official: the input is input_len bytes 0,1,...,250,0,1,... and the outputs are the first 32 bytes of the official BLAKE3 test vectors (BLAKE3-team test_vectors.json) in hash and derive_key modes. content_hash: plain BLAKE3 of the hex bytes. text_hash: plain BLAKE3 of the UTF-8 text. model_hash: derive_key(MODEL, model id). profile: canonical encoding of a parse profile and derive_key(PARSE_PROFILE, encoding). empty_root: derive_key(EMPTY, empty input). empty_state: the root of an empty table (1024 empty buckets) and the state root of five empty tables. state_root: derive_key(STATE_ROOT, the five table roots in table order).",
        cases,
    }
}

fn ids() -> FileSpec {
    let url_ns = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";
    let dns_ns = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
    let mut cases = vec![case(
        "uuid5",
        "RFC 9562 appendix A.4: UUIDv5 of www.example.com in the DNS namespace",
        json!({"namespace": dns_ns, "name": "www.example.com"}),
    )];
    for kind in ["path", "document", "chunk", "embedding"] {
        cases.push(case(
            "namespace",
            &format!("published {kind} namespace"),
            json!({"kind": kind}),
        ));
        cases.push(case(
            "uuid5",
            &format!("the {kind} namespace is UUIDv5(NAMESPACE_URL, urn:cfs:v1:{kind})"),
            json!({"namespace": url_ns, "name": format!("urn:cfs:v1:{kind}")}),
        ));
    }
    for path in [
        "a",
        "src/lib.rs",
        "docs/日本語/ünïcode.md",
        "a b/c d.txt",
        &"x".repeat(4096),
    ] {
        let shown: String = path.chars().take(40).collect();
        cases.push(case(
            "path_id",
            &format!("path {shown:?} ({} bytes)", path.len()),
            json!({"path": path}),
        ));
    }
    let text = text_profile().hash();
    for (name, content) in [("empty content", ""), ("content 'hello'", "hello")] {
        cases.push(case(
            "document_id",
            &format!("{name}, default text profile"),
            json!({"content_hash": ContentHash::of(content.as_bytes()).to_hex(), "profile_hash": text.to_hex()}),
        ));
    }
    cases.push(case(
        "document_id",
        "same content, another profile gives another id",
        json!({"content_hash": ContentHash::of(b"hello").to_hex(), "profile_hash": ParseProfile { target_bytes: 512, ..text_profile() }.hash().to_hex()}),
    ));
    let doc = DocumentId::derive(&ContentHash::of(b"hello"), &text);
    let other = DocumentId::derive(&ContentHash::of(b"hello!"), &text);
    for (name, d, seq, t) in [
        ("first chunk", doc, 0u32, "hello"),
        ("same text, next sequence", doc, 1, "hello"),
        ("same text, other document", other, 0, "hello"),
        ("largest sequence", doc, u32::MAX, "é"),
        (
            "empty text (ids are defined for it; chunks are never empty)",
            doc,
            7,
            "",
        ),
    ] {
        cases.push(case(
            "chunk_id",
            name,
            json!({"document_id": d.to_string(), "sequence": seq, "text": t}),
        ));
    }
    let chunk = cfs_core::ChunkId::derive(&doc, 0, &TextHash::of("hello"));
    for model in ["cfs-hash-embed/1 dim=256", "other-model"] {
        cases.push(case(
            "embedding_id",
            &format!("chunk 0 of 'hello' by {model:?}"),
            json!({"chunk_id": chunk.to_string(), "model_hash": ModelHash::of(model).to_hex()}),
        ));
    }
    FileSpec {
        name: "ids.json",
        comment: "Entity ids (docs/spec.md section 'Ids'). uuid5: RFC 9562 UUIDv5 of a UTF-8 name in a namespace. namespace: the literal published namespaces, each UUIDv5(NAMESPACE_URL, 'urn:cfs:v1:<kind>'). path_id: UUIDv5(PATH, path bytes). document_id: UUIDv5(DOCUMENT, content_hash || profile_hash). chunk_id: UUIDv5(CHUNK, document_id || u32le(sequence) || BLAKE3(text)), and the text hash. embedding_id: UUIDv5(EMBEDDING, chunk_id || model_hash). Hashes are hex, ids hyphenated lower case.",
        cases,
    }
}

fn sample_chunks() -> Vec<(&'static str, Chunk)> {
    let doc = DocumentId::derive(&ContentHash::of(b"x"), &text_profile().hash());
    let mk = |seq: u32, kind: ChunkKind, text: &str| {
        Chunk::new(
            doc,
            seq,
            u64::from(seq) * 10,
            seq + 1,
            seq + 2,
            kind,
            text.into(),
        )
        .expect("valid chunk")
    };
    let symbol = |window: Option<Window>| Symbol {
        kind: SymbolKind::Method,
        name: "push".into(),
        parent: Some("Stack".into()),
        signature: "fn push(&mut self, x: T)".into(),
        doc_comment: "/// Pushes x.".into(),
        window,
    };
    vec![
        ("text chunk", mk(0, ChunkKind::Text, "Hello, world.\n")),
        ("one-byte text", mk(1, ChunkKind::Text, "a")),
        ("multi-byte text", mk(2, ChunkKind::Text, "日本語 🦀\n")),
        (
            "markdown section with heading path",
            mk(
                3,
                ChunkKind::Section {
                    heading_path: vec!["Guide".into(), "Install ✓".into()],
                },
                "Run it.\n",
            ),
        ),
        (
            "markdown section at top level",
            mk(
                4,
                ChunkKind::Section {
                    heading_path: vec![],
                },
                "Intro\n",
            ),
        ),
        (
            "code between symbols",
            mk(
                5,
                ChunkKind::Code {
                    language: "rust".into(),
                    symbol: None,
                },
                "use std::io;\n",
            ),
        ),
        (
            "code symbol",
            mk(
                6,
                ChunkKind::Code {
                    language: "rust".into(),
                    symbol: Some(symbol(None)),
                },
                "fn push(&mut self, x: T) {}\n",
            ),
        ),
        (
            "code symbol window 1 of 3",
            mk(
                7,
                ChunkKind::Code {
                    language: "rust".into(),
                    symbol: Some(symbol(Some(Window { index: 1, count: 3 }))),
                },
                "    self.items.push(x);\n",
            ),
        ),
        (
            "code symbol without parent, kind macro",
            mk(
                8,
                ChunkKind::Code {
                    language: "rust".into(),
                    symbol: Some(Symbol {
                        kind: SymbolKind::Macro,
                        name: "m".into(),
                        parent: None,
                        signature: "macro_rules! m".into(),
                        doc_comment: String::new(),
                        window: None,
                    }),
                },
                "macro_rules! m { () => {} }\n",
            ),
        ),
        (
            "pdf page",
            mk(9, ChunkKind::Page { page: 12 }, "Page text.\n"),
        ),
    ]
}

fn encoding() -> FileSpec {
    let mut cases = Vec::new();
    let doc_id = DocumentId::derive(&ContentHash::of(b"x"), &text_profile().hash());
    cases.push(case("entity", "path entry, no collections", json!({"type": "path_entry", "fields": path_entry_to(&PathEntry::new("src/main.rs", doc_id))})));
    cases.push(case(
        "entity",
        "path entry with collections and context",
        json!({"type": "path_entry", "fields": path_entry_to(&PathEntry {
            path: "internal/search/rrf.go".into(),
            document_id: doc_id,
            collections: vec!["search".into(), "backend".into()],
            context: "Search and retrieval\n\nHybrid search engine".into(),
        })}),
    ));
    let chunks = sample_chunks();
    for (name, chunk) in &chunks {
        cases.push(case(
            "entity",
            name,
            json!({"type": "chunk", "fields": chunk_to(chunk)}),
        ));
    }
    let content = b"x";
    let only: Vec<Chunk> = chunks.iter().map(|(_, c)| c.clone()).collect();
    let document = Document::new(
        ContentHash::of(content),
        1,
        text_profile(),
        200,
        vec![
            MetaEntry {
                key: "author".into(),
                value: "ü".into(),
            },
            MetaEntry {
                key: "title".into(),
                value: "Guide".into(),
            },
        ],
        &only,
    )
    .expect("valid document");
    cases.push(case(
        "entity",
        "document with ten chunks and metadata",
        json!({"type": "document", "fields": document_to(&document)}),
    ));
    let empty_doc =
        Document::new(ContentHash::of(b""), 0, text_profile(), 0, vec![], &[]).expect("valid");
    cases.push(case(
        "entity",
        "empty document: no chunks, empty hierarchical hash",
        json!({"type": "document", "fields": document_to(&empty_doc)}),
    ));
    let model = ModelHash::of("cfs-hash-embed/1 dim=4");
    for (name, vector) in [
        ("embedding of dimension 1", vec![32767i16]),
        (
            "embedding with extremes",
            vec![-32768, -1, 0, 1, 32767, 12345],
        ),
    ] {
        let e = Embedding::new(only[0].id, model, vector).expect("valid embedding");
        cases.push(case(
            "entity",
            name,
            json!({"type": "embedding", "fields": embedding_to(&e)}),
        ));
    }
    for (name, edge) in [
        (
            "contains edge",
            Edge::new(doc_id, only[0].id, EdgeKind::CONTAINS),
        ),
        (
            "next_window edge",
            Edge::new(only[7].id, only[6].id, EdgeKind::NEXT_WINDOW),
        ),
        (
            "user edge, kind 0xffff",
            Edge::new(only[1].id, doc_id, EdgeKind(0xffff)),
        ),
    ] {
        cases.push(case(
            "entity",
            name,
            json!({"type": "edge", "fields": edge_to(&edge)}),
        ));
    }
    let roots = TableRoots::empty();
    let record = StateRecord {
        sequence: 1,
        parent: roots.state_root(),
        root: roots.state_root(),
        table_roots: roots,
        timestamp_ms: 1_795_000_000_000,
        summary: ChangeSummary {
            paths: TableChange {
                added: 1,
                removed: 2,
                changed: 3,
            },
            edges: TableChange {
                added: u64::MAX,
                removed: 0,
                changed: 0,
            },
            ..ChangeSummary::default()
        },
    };
    record.validate().expect("valid record");
    cases.push(case(
        "entity",
        "state record",
        json!({"type": "state_record", "fields": record_to(&record)}),
    ));
    FileSpec {
        name: "encoding.json",
        comment: "Canonical encodings (docs/spec.md section 'Canonical encoding'). Each entity case gives the entity's fields as JSON (ids hyphenated, hashes hex, chunk kinds tagged by 'type', symbol kinds by name, metadata as [key, value] pairs, state-record summaries as [added, removed, changed] per table), the hex of its canonical encoding, and for table entities its leaf hash derive_key(LEAF_<table>, encoding). Every entity here is valid: derived ids and hashes match.",
        cases,
    }
}

fn leaf(i: u32) -> String {
    hex_encode(blake3::hash(&i.to_le_bytes()).as_bytes())
}

fn merkle() -> FileSpec {
    let mut cases = Vec::new();
    for n in [0u32, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33] {
        let leaves: Vec<String> = (0..n).map(leaf).collect();
        cases.push(case(
            "merkle",
            &format!("{n} leaves"),
            json!({"leaves": leaves}),
        ));
    }
    for (name, key) in [
        ("all-zero key", "00000000000000000000000000000000"),
        ("all-ones key", "ffffffffffffffffffffffffffffffff"),
        (
            "bucket from the first 10 bits",
            "0140ffffffffffffffffffffffffffff",
        ),
        (
            "the 11th bit does not count",
            "803fffffffffffffffffffffffffffff",
        ),
        (
            "edge key: 34 bytes, bucket from its source",
            "7fc00000000000000000000000000000ffffffffffffffffffffffffffffffff0001",
        ),
    ] {
        cases.push(case("bucket", name, json!({"key": key})));
    }
    let k = |b0: u8, b1: u8, last: u8| {
        let mut key = [0u8; 16];
        key[0] = b0;
        key[1] = b1;
        key[15] = last;
        hex_encode(&key)
    };
    cases.push(case("table", "empty table", json!({"entries": []})));
    cases.push(case(
        "table",
        "one leaf",
        json!({"entries": [[k(0, 0, 1), leaf(1)]]}),
    ));
    cases.push(case(
        "table",
        "two leaves in one bucket",
        json!({"entries": [[k(0, 0, 1), leaf(1)], [k(0, 1, 2), leaf(2)]]}),
    ));
    cases.push(case(
        "table",
        "three leaves in one bucket, given out of key order",
        json!({"entries": [[k(9, 0, 3), leaf(3)], [k(9, 0, 1), leaf(1)], [k(9, 0x3f, 2), leaf(2)]]}),
    ));
    cases.push(case(
        "table",
        "three leaves in three buckets (first, middle, last)",
        json!({"entries": [[k(0, 0, 1), leaf(1)], [k(0x80, 0, 2), leaf(2)], [k(0xff, 0xff, 3), leaf(3)]]}),
    ));
    for n in [1u32, 2, 3, 5, 1000, 5000] {
        cases.push(case(
            "table",
            &format!("generated table of {n} leaves"),
            json!({"generated": n}),
        ));
    }
    FileSpec {
        name: "merkle.json",
        comment: "Merkle trees and the bucketed table commitment (docs/spec.md sections 'Merkle trees' and 'Table roots'). merkle: leaves are given as hex (leaf i is BLAKE3(u32le(i))); the root pairs neighbours into derive_key(NODE, left || right), promotes the last node of an odd layer unchanged, a single leaf is the root, no leaves give derive_key(EMPTY, ''); paths list, for each leaf (by index), the steps from the bottom up, promoted levels skipped: each step is the sibling and whether it is on the left. bucket: the first 10 bits of the key, big-endian (for an edge key, of its source). table: entries [key, leaf] are sorted by key bytes, grouped into 1024 buckets, each bucket root is the merkle root of its leaves, the table root is the merkle root of the 1024 bucket roots in bucket order (empty buckets give the empty root). A generated table of n leaves has key i = BLAKE3('cfs test key ' || u32le(i))[0..16] and leaf i = BLAKE3('cfs test leaf ' || u32le(i)).",
        cases,
    }
}

fn text_doc(content: &str, pieces: &[&str]) -> Value {
    json!({
        "content": content,
        "profile": profile_to(&text_profile()),
        "metadata": [],
        "chunks": pieces.iter().map(|p| span(content, p, json!({"type": "text"}))).collect::<Vec<_>>(),
        "embeddings": [],
        "window_edges": [],
    })
}

fn rich_documents() -> Vec<Value> {
    let md = "# Guide\n\nIntro text.\n\n## Install\n\nRun `cfs index`.\n";
    let code = "use std::io;\n\n/// A stack.\nimpl Stack {\n    fn push(&mut self, x: T) {\n        self.items.push(x);\n        self.len += 1;\n    }\n}\n";
    let symbol = |window: Option<(u32, u32)>| {
        json!({
            "kind": "method", "name": "push", "parent": "Stack",
            "signature": "fn push(&mut self, x: T)", "doc_comment": "",
            "window": window.map(|(index, count)| json!({"index": index, "count": count})),
        })
    };
    vec![
        json!({
            "content": md,
            "profile": profile("text/markdown", "markdown/1 pulldown-cmark=0.13", "markdown/1"),
            "metadata": [["title", "Guide"]],
            "chunks": [
                span(md, "# Guide\n\nIntro text.\n\n", json!({"type": "section", "heading_path": ["Guide"]})),
                span(md, "## Install\n\nRun `cfs index`.\n", json!({"type": "section", "heading_path": ["Guide", "Install"]})),
            ],
            "embeddings": [
                {"chunk": 0, "model_id": "cfs-hash-embed/1 dim=4", "vector": [100, -200, 300, -400]},
                {"chunk": 1, "model_id": "cfs-hash-embed/1 dim=4", "vector": [0, 0, 0, 32767]},
                {"chunk": 1, "model_id": "other-model", "vector": [-32768]},
            ],
            "window_edges": [],
        }),
        json!({
            "content": code,
            "profile": profile("text/x-rust", "code/1 tree-sitter-rust=0.24.2", "code/1 window=7000 overlap=500"),
            "metadata": [],
            "chunks": [
                span(code, "use std::io;\n\n", json!({"type": "code", "language": "rust", "symbol": null})),
                span(code, "    fn push(&mut self, x: T) {\n        self.items", json!({"type": "code", "language": "rust", "symbol": symbol(Some((0, 3)))})),
                span(code, "self.items.push(x);\n        self.len", json!({"type": "code", "language": "rust", "symbol": symbol(Some((1, 3)))})),
                span(code, "self.len += 1;\n    }\n", json!({"type": "code", "language": "rust", "symbol": symbol(Some((2, 3)))})),
            ],
            "embeddings": [],
            "window_edges": [[1, 2], [2, 3]],
        }),
        text_doc(
            "Hello, world.\nSecond line.\n",
            &["Hello, world.\n", "Second line.\n"],
        ),
    ]
}

fn rich_state(reversed: bool) -> Value {
    let mut documents = rich_documents();
    let mut paths = vec![
        json!({"path": "docs/guide.md", "document": 0, "collections": ["docs"], "context": "Documentation"}),
        json!({"path": "src/stack.rs", "document": 1, "collections": [], "context": ""}),
        json!({"path": "hello.txt", "document": 2, "collections": [], "context": ""}),
        json!({"path": "copy/of/hello.txt", "document": 2, "collections": [], "context": ""}),
    ];
    let mut edges =
        vec![json!({"source": {"document": 0}, "target": {"chunk": [1, 1]}, "kind": 0x8000})];
    if reversed {
        documents.reverse();
        for p in &mut paths {
            p["document"] = json!(2 - p["document"].as_u64().expect("index"));
        }
        paths.reverse();
        edges =
            vec![json!({"source": {"document": 2}, "target": {"chunk": [1, 1]}, "kind": 0x8000})];
    }
    json!({"documents": documents, "paths": paths, "user_edges": edges})
}

/// The generated documents of a `{"generated": n}` state, spelled out.
pub fn generated_documents(n: u32) -> Value {
    let documents: Vec<Value> = (0..n)
        .map(|i| {
            let content = format!("document {i}\nsecond line of {i}\n");
            let first = format!("document {i}\n");
            let second = format!("second line of {i}\n");
            let mut d = text_doc(&content, &[&first, &second]);
            d["embeddings"] = json!([{"chunk": 0, "model_id": "cfs-hash-embed/1 dim=2", "vector": [i % 100, -i64::from(i)]}]);
            d
        })
        .collect();
    let paths: Vec<Value> = (0..n)
        .map(|i| json!({"path": format!("dir{}/file{i}.txt", i % 7), "document": i, "collections": [], "context": ""}))
        .collect();
    json!({"documents": documents, "paths": paths, "user_edges": []})
}

fn many_state(n: u32) -> Value {
    json!({"generated": n})
}

fn state() -> FileSpec {
    let hello = text_doc(
        "Hello, world.\nSecond line.\n",
        &["Hello, world.\n", "Second line.\n"],
    );
    let other = text_doc("Other.\n", &["Other.\n"]);
    let cases = vec![
        case(
            "state",
            "empty state",
            json!({"documents": [], "paths": [], "user_edges": []}),
        ),
        case(
            "state",
            "one text document at one path",
            json!({"documents": [hello], "paths": [{"path": "hello.txt", "document": 0, "collections": [], "context": ""}], "user_edges": []}),
        ),
        case(
            "state",
            "two paths share one document",
            json!({"documents": [hello], "paths": [
                {"path": "a.txt", "document": 0, "collections": [], "context": ""},
                {"path": "dir/b.txt", "document": 0, "collections": ["docs"], "context": "Documentation"},
            ], "user_edges": []}),
        ),
        case(
            "state",
            "empty file: a document without chunks",
            json!({"documents": [text_doc("", &[])], "paths": [{"path": "empty.txt", "document": 0, "collections": [], "context": ""}], "user_edges": []}),
        ),
        case(
            "state",
            "markdown, code with windows, shared text, user edge",
            rich_state(false),
        ),
        case(
            "state",
            "the same state built in reverse order (same roots)",
            rich_state(true),
        ),
        case(
            "state",
            "a path rebound to another document drops the first one",
            json!({"documents": [hello, other], "paths": [
                {"path": "x.txt", "document": 0, "collections": [], "context": ""},
                {"path": "x.txt", "document": 1, "collections": [], "context": ""},
            ], "user_edges": []}),
        ),
        case(
            "state",
            "clean state equal to the rebound one",
            json!({"documents": [other], "paths": [{"path": "x.txt", "document": 0, "collections": [], "context": ""}], "user_edges": []}),
        ),
        case("state", "60 documents over many buckets", many_state(60)),
        case(
            "state",
            "3000 generated documents: buckets with several leaves",
            many_state(3000),
        ),
    ];
    FileSpec {
        name: "state.json",
        comment: "Whole canonical states (docs/spec.md sections 'Entities', 'Table roots' and 'State root'). A state input lists documents (content as UTF-8 text that is also the canonical text; a parse profile; metadata pairs; chunks as byte spans of the content with line ranges and kinds, sequence = position in the list; embeddings naming a chunk by sequence with a model id whose model hash is derive_key(MODEL, id); next_window edges as [from, to] sequences), then paths bound in order (a later binding of the same path replaces the earlier one, and a document left without paths is removed with its chunks, embeddings and edges), then user edges between {document: i}, {chunk: [i, seq]} or {embedding: [i, k]}. A state {generated: n} stands for n documents where document i has content 'document i\\nsecond line of i\\n' (i in decimal), the default text profile, no metadata, two text chunks (one per line, lines 1 and 2), one embedding of chunk 0 by model 'cfs-hash-embed/1 dim=2' with vector [i mod 100, -i], bound at path 'dir(i mod 7)/file(i).txt', and no user edges. Each document also gets a contains edge to each chunk and an embedded_as edge from each chunk to each embedding. Expected: the five table roots, the state root and the row counts. Pairs of cases that describe the same final state have the same roots.",
        cases,
    }
}

fn proofs() -> FileSpec {
    let mut cases = vec![
        case(
            "proof",
            "window 1 of a split code symbol",
            json!({"state": rich_state(false), "document": 1, "sequence": 2}),
        ),
        case(
            "proof",
            "chunk of a document at two paths",
            json!({"state": rich_state(false), "document": 2, "sequence": 0}),
        ),
    ];
    // A chunk that shares its bucket with others, so the path within the bucket is not empty.
    let built = super::state::build(&many_state(3000)).expect("generated state");
    let crowded = |id: &cfs_core::ChunkId| {
        let bucket = cfs_core::Bucket::of_key(&id.0);
        built
            .state
            .chunks()
            .keys()
            .filter(|k| cfs_core::Bucket::of_key(&k.0) == bucket)
            .count()
            >= 5
    };
    let (document, sequence) = built
        .documents
        .iter()
        .enumerate()
        .find_map(|(d, (_, chunks, _))| chunks.iter().position(|c| crowded(&c.id)).map(|s| (d, s)))
        .expect("a crowded bucket");
    let base = case(
        "proof",
        "chunk in a bucket of five or more",
        json!({"state": many_state(3000), "document": document, "sequence": sequence}),
    );
    let expected = compute(&base).expect("valid proof case");
    cases.push(base);
    let proof = expected["proof"].clone();
    let root = expected["state_root"].as_str().expect("root").to_string();
    let flip = |hex: &str| {
        let mut bytes = cfs_core::hex_decode(hex).expect("hex");
        bytes[0] ^= 1;
        hex_encode(&bytes)
    };
    let mut tampered: Vec<(&str, Value, String)> =
        vec![("untampered proof", proof.clone(), root.clone())];
    let mut p = proof.clone();
    p["path"][0]["sibling"] = json!(flip(p["path"][0]["sibling"].as_str().expect("sibling")));
    tampered.push(("a flipped bit in a bucket-level sibling", p, root.clone()));
    let mut p = proof.clone();
    p["bucket_siblings"][3] = json!(flip(p["bucket_siblings"][3].as_str().expect("sibling")));
    tampered.push(("a flipped bit in a top-tree sibling", p, root.clone()));
    let mut p = proof.clone();
    p["bucket_siblings"].as_array_mut().expect("array").pop();
    tampered.push(("a top-tree sibling missing", p, root.clone()));
    let mut p = proof.clone();
    p["path"]
        .as_array_mut()
        .expect("array")
        .push(json!({"left": false, "sibling": hex_encode(&[0; 32])}));
    tampered.push(("an extra step", p, root.clone()));
    let mut p = proof.clone();
    p["path"].as_array_mut().expect("array").pop();
    tampered.push(("a step missing", p, root.clone()));
    let mut p = proof.clone();
    p["path"][1]["left"] = json!(!p["path"][1]["left"].as_bool().expect("side"));
    tampered.push(("a step's side flipped", p, root.clone()));
    let mut p = proof.clone();
    p["bucket"] = json!((p["bucket"].as_u64().expect("bucket") + 1) % 1024);
    tampered.push(("another bucket", p, root.clone()));
    let mut p = proof.clone();
    p["chunk"]["text"] = json!("second line of ?\n");
    tampered.push(("chunk text changed, hash and id left", p, root.clone()));
    let mut p = proof.clone();
    p["chunk"]["end_line"] = json!(p["chunk"]["end_line"].as_u64().expect("line") + 1);
    tampered.push((
        "chunk line range changed (a valid chunk that is not in the state)",
        p,
        root.clone(),
    ));
    let mut p = proof.clone();
    p["table_roots"]["edges"] = json!(flip(p["table_roots"]["edges"].as_str().expect("root")));
    tampered.push(("another edges root", p, root.clone()));
    tampered.push(("trusted root of another state", proof.clone(), flip(&root)));
    let mut p = proof.clone();
    p["table"] = json!("documents");
    tampered.push(("a chunk proven in the documents table", p, root.clone()));
    for (name, p, trusted) in tampered {
        cases.push(case(
            "proof_check",
            name,
            json!({"proof": p, "trusted_root": trusted}),
        ));
    }
    FileSpec {
        name: "proofs.json",
        comment: "Inclusion proofs of chunks (docs/spec.md section 'Inclusion proofs'). proof: build the state (as in state.json), then prove chunk `sequence` of document `document`: the chunk, its bucket, the path of its leaf among the bucket's leaves in key order (steps from the bottom up, each a sibling and whether it is on the left), the 10 siblings of the bucket root in the top tree from the bottom up, and the five table roots; expected are these fields, the canonical encoding of the proof and the state root. proof_check: verify a proof against a trusted state root (the chunk is valid, the table is chunks, the bucket is the chunk id's bucket, there are exactly 10 bucket siblings, the recomputed chunks root equals the proof's, the state root of the proof's table roots equals the trusted one); expected is whether it verifies.",
        cases,
    }
}

pub fn all_files() -> Vec<FileSpec> {
    vec![hashes(), ids(), encoding(), merkle(), state(), proofs()]
}
