//! Properties of the text chunker and the pipeline (CFS-011 "Desired properties"):
//! complete coverage, overlap continuity, no chunk over max, char-boundary cuts,
//! determinism; and no panic on any input.

use cfs_core::Canonical;
use cfs_ingest::{
    ChunkParams, HashEmbedder, IngestConfig, chunk_markdown, chunk_text, decode, ingest_file,
    parse_file,
};
use proptest::prelude::*;

fn params_strategy() -> impl Strategy<Value = ChunkParams> {
    (8u32..300, 0u32..100, 0u32..100).prop_map(|(max, t, o)| {
        let target = 1 + t * max / 100;
        let target = target.min(max);
        ChunkParams {
            target_bytes: target,
            max_bytes: max,
            overlap_bytes: o * target / 101,
        }
    })
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z .!?\n]{0,2000}",
        "\\PC{0,600}",
        "([a-zé日🦀]{1,12}[ \n]{1,3}){0,200}",
        "(\\PC{0,40}\n\n){0,40}",
    ]
}

fn check_spans(text: &str, params: &ChunkParams) -> Result<(), TestCaseError> {
    let spans = chunk_text(text, params).unwrap();
    if text.is_empty() {
        prop_assert!(spans.is_empty());
        return Ok(());
    }
    prop_assert_eq!(spans.first().unwrap().start, 0);
    prop_assert_eq!(spans.last().unwrap().end, text.len());
    for s in &spans {
        prop_assert!(s.end > s.start);
        prop_assert!(
            s.end - s.start <= params.max_bytes as usize,
            "{:?} over max {}",
            s,
            params.max_bytes
        );
        prop_assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
        let line_of = |at: usize| {
            text.as_bytes()[..at]
                .iter()
                .filter(|b| **b == b'\n')
                .count() as u32
                + 1
        };
        prop_assert_eq!(s.start_line, line_of(s.start));
        prop_assert_eq!(s.end_line, line_of(s.end - 1));
    }
    for w in spans.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        // Coverage and progress: the next chunk starts inside or right after this one
        // and ends past it.
        prop_assert!(
            b.start > a.start && b.start <= a.end && b.end > a.end,
            "{a:?} {b:?}"
        );
        let overlap = a.end - b.start;
        prop_assert!(overlap <= params.overlap_bytes as usize);
        // Overlap continuity: the end of one chunk is the start of the next.
        prop_assert_eq!(&text[b.start..a.end], &text[b.start..b.start + overlap]);
        if overlap > 0 {
            // Overlaps start at a word.
            let prev = text.as_bytes()[b.start - 1];
            prop_assert!(matches!(prev, b' ' | b'\n' | b'\t'));
        }
    }
    prop_assert_eq!(chunk_text(text, params).unwrap(), spans);
    Ok(())
}

fn markdown_strategy() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => "[a-z é]{0,30}\n",
        1 => "#{1,4} [A-Za-z ]{1,12}\n",
        1 => "Title\n[=-]{3}\n",
        1 => "```rs\n(fn [a-z]\\(\\) \\{\\}\n){0,4}```\n",
        1 => "- [a-z]{1,8}\n  - [a-z]{1,8}\n",
        1 => "> [a-z ]{1,20}\n",
        1 => "\n",
        1 => "\\| a \\| b \\|\n\\|---\\|---\\|\n\\| 1 \\| 2 \\|\n",
    ];
    (
        prop::option::of("---\ntitle: [a-z]{1,6}\n---\n"),
        prop::collection::vec(line, 0..40),
    )
        .prop_map(|(front, lines)| front.unwrap_or_default() + &lines.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn markdown_chunks_cover_the_text_within_max(text in markdown_strategy(), params in params_strategy()) {
        let doc = chunk_markdown(&text, &params).unwrap();
        if text.is_empty() {
            prop_assert!(doc.chunks.is_empty());
        } else {
            prop_assert_eq!(doc.chunks.first().unwrap().start, 0);
            prop_assert_eq!(doc.chunks.last().unwrap().end, text.len());
        }
        for c in &doc.chunks {
            prop_assert!(c.end > c.start && c.end - c.start <= params.max_bytes as usize, "{c:?}");
            prop_assert!(text.is_char_boundary(c.start) && text.is_char_boundary(c.end));
        }
        for w in doc.chunks.windows(2) {
            prop_assert!(w[1].start > w[0].start && w[1].start <= w[0].end && w[1].end > w[0].end);
            // Overlap only inside a block split by the text chunker, never across sections.
            if w[1].start < w[0].end {
                prop_assert_eq!(&w[0].heading_path, &w[1].heading_path);
            }
        }
        prop_assert_eq!(chunk_markdown(&text, &params).unwrap(), doc);
    }

    #[test]
    fn text_chunker_properties(text in text_strategy(), params in params_strategy()) {
        check_spans(&text, &params)?;
    }

    #[test]
    fn any_bytes_give_chunks_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..3000), ext in prop_oneof![Just("txt"), Just("md"), Just("rs"), Just("json"), Just("pdf"), Just("bin"), Just("html")]) {
        let path = format!("f.{ext}");
        let config = IngestConfig { chunk: ChunkParams { target_bytes: 64, max_bytes: 128, overlap_bytes: 16 }, ..IngestConfig::default() };
        if let Ok(ingested) = ingest_file(&path, &bytes, &config, &HashEmbedder::new(16)) {
            let doc = &ingested.parsed.document;
            prop_assert!(doc.validate().is_ok());
            prop_assert_eq!(doc.n_chunks as usize, ingested.parsed.chunks.len());
            prop_assert_eq!(ingested.embeddings.len(), ingested.parsed.chunks.len());
            for c in &ingested.parsed.chunks {
                prop_assert!(c.validate().is_ok());
            }
        }
        let _ = decode(&bytes);
    }
}

#[test]
fn real_texts_hold_the_properties() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/golden");
    for name in ["prose.txt", "notes.md", "cfs_spec_snapshot.md"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        for params in [
            ChunkParams::default(),
            ChunkParams {
                target_bytes: 64,
                max_bytes: 100,
                overlap_bytes: 20,
            },
            ChunkParams {
                target_bytes: 8,
                max_bytes: 8,
                overlap_bytes: 0,
            },
        ] {
            check_spans(&text, &params).unwrap();
        }
    }
}

#[test]
fn identical_bytes_give_identical_rows_on_any_thread() {
    let text = "fn main() {\n    println!(\"hi\");\n}\n".repeat(200);
    let config = IngestConfig::default();
    let embedder = HashEmbedder::default();
    let one = ingest_file("a.rs", text.as_bytes(), &config, &embedder).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let text = text.clone();
            std::thread::spawn(move || {
                ingest_file(
                    "other/name.rs",
                    text.as_bytes(),
                    &IngestConfig::default(),
                    &HashEmbedder::default(),
                )
                .unwrap()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), one);
    }
}

#[test]
fn hostile_files_give_errors_not_panics() {
    let config = IngestConfig {
        max_file_bytes: 1 << 20,
        ..IngestConfig::default()
    };
    let utf16_no_bom: Vec<u8> = "hello world\n"
        .repeat(50)
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("empty.txt", vec![], true),
        (
            "binary.dat",
            (0..=255u8).cycle().take(5000).collect(),
            false,
        ),
        (
            "image.txt",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(),
            false,
        ),
        (
            "latin1.txt",
            b"caf\xe9 cr\xe8me br\xfbl\xe9e\n".to_vec(),
            true,
        ),
        ("utf16.txt", utf16_no_bom, true),
        ("bad.json", b"{\"a\": [1, 2,}".to_vec(), false),
        ("good.json", b"{\"a\": [1, 2]}".to_vec(), true),
        ("random.pdf", vec![0x42; 100], false),
        ("huge.txt", vec![b'x'; (1 << 20) + 1], false),
        ("one_long_line.txt", vec![b'y'; 1 << 20], true),
        // Valid, however deep: validated without recursion, chunked as text.
        (
            "deep.json",
            ("[".repeat(10_000) + &"]".repeat(10_000)).into_bytes(),
            true,
        ),
        ("deep_broken.json", "[".repeat(10_000).into_bytes(), false),
        ("deep.md", ">".repeat(10_000).into_bytes(), true),
        (
            "deep.rs",
            format!("fn f() {}{}", "{".repeat(10_000), "}".repeat(10_000)).into_bytes(),
            true,
        ),
        (
            "deep.py",
            format!("x = {}1{}\n", "(".repeat(10_000), ")".repeat(10_000)).into_bytes(),
            true,
        ),
        (
            "deep.ts",
            format!("const x = {}1{};\n", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
            true,
        ),
        ("broken.go", b"package main\nfunc (".to_vec(), true),
        ("deep.html", "<div>".repeat(10_000).into_bytes(), false),
        (
            "deep_ok.html",
            format!("{}x{}", "<p>".repeat(500), "</p>".repeat(500)).into_bytes(),
            true,
        ),
        (
            "truncated.pdf",
            cfs_ingest::minimal_pdf(&["text"])[..200].to_vec(),
            false,
        ),
    ];
    for (path, bytes, ok) in cases {
        match parse_file(path, &bytes, &config) {
            Ok(parsed) => assert!(
                ok,
                "{path} should have failed, got {} chunks",
                parsed.chunks.len()
            ),
            Err(e) => {
                assert!(!ok, "{path} failed: {e}");
                assert!(
                    e.to_string().contains(path),
                    "error does not name the file: {e}"
                );
            }
        }
    }
}

fn check_code(text: &str, language: cfs_ingest::Language) {
    let params = ChunkParams::default();
    let Some(doc) = cfs_ingest::chunk_code(text, language, &params).unwrap() else {
        return;
    };
    if text.is_empty() {
        assert!(doc.chunks.is_empty());
        return;
    }
    assert_eq!(doc.chunks.first().unwrap().start, 0);
    assert_eq!(doc.chunks.last().unwrap().end, text.len());
    for w in doc.chunks.windows(2) {
        assert!(
            w[1].start <= w[0].end && w[1].end > w[0].end && w[1].start > w[0].start,
            "{w:?}"
        );
    }
    for c in &doc.chunks {
        assert!(text.is_char_boundary(c.start) && text.is_char_boundary(c.end));
        let limit = if c.symbol.is_some() {
            cfs_ingest::WINDOW_BYTES
        } else {
            params.max_bytes as usize
        };
        assert!(
            c.end - c.start <= limit.max(cfs_ingest::WINDOW_BYTES),
            "{c:?}"
        );
    }
    for &(a, b) in &doc.window_links {
        let (wa, wb) = (
            doc.chunks[a].symbol.as_ref().unwrap().window.unwrap(),
            doc.chunks[b].symbol.as_ref().unwrap().window.unwrap(),
        );
        assert_eq!(wa.index + 1, wb.index);
        let stride = cfs_ingest::WINDOW_BYTES - cfs_ingest::WINDOW_OVERLAP_BYTES;
        let (sa, sb) = (doc.chunks[a].start, doc.chunks[b].start);
        assert!(
            sb <= sa + stride && sb + 3 >= sa + stride,
            "window starts {sa} then {sb}"
        );
    }
}

/// Every Rust file of this repository, and the hashbrown source of the shared bench
/// inputs when present, chunks with complete coverage and bounded chunks.
#[test]
fn code_chunks_cover_the_text() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let walked = cfs_ingest::walk(&root).unwrap();
    let mut n = 0;
    for entry in walked.files.iter().filter(|f| f.rel_path.ends_with(".rs")) {
        let text = std::fs::read_to_string(&entry.abs_path).unwrap();
        check_code(&text, cfs_ingest::Language::Rust);
        n += 1;
    }
    assert!(n > 10);
    // Long symbols: a generated function far over one window.
    let body = "    let value = compute(1, 2, 3); // é\n".repeat(700);
    let long = format!("fn long() {{\n{body}}}\n\nfn after() {{}}\n");
    check_code(&long, cfs_ingest::Language::Rust);
    let doc = cfs_ingest::chunk_code(&long, cfs_ingest::Language::Rust, &ChunkParams::default())
        .unwrap()
        .unwrap();
    assert!(doc.window_links.len() >= 3);
    let py = format!(
        "class C:\n{}\n",
        "    def m(self):\n        return 1\n\n".repeat(400)
    );
    check_code(&py, cfs_ingest::Language::Python);
}
