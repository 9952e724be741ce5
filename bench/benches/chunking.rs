//! Chunking throughput of cfs's text, Markdown and code chunkers against the
//! `text-splitter` crate, on the same inputs as text-splitter's own published table
//! (`../shared/bench-inputs/`), at the same chunk capacities, in one run; and the default
//! embedder's chunks per second.
//!
//! Run: `cd bench && cargo bench --bench chunking`. Each pair first checks that both
//! chunkers cover the whole input, so that neither wins by doing less.

use std::hint::black_box;
use std::path::PathBuf;

use cfs_ingest::{
    ChunkParams, Embedder, HashEmbedder, Language, chunk_code, chunk_markdown, chunk_text,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use text_splitter::{ChunkConfig, CodeSplitter, MarkdownSplitter, TextSplitter};

const CAPACITIES: [usize; 3] = [64, 1024, 16384];
const INPUTS: [&str; 3] = [
    "romeo_and_juliet.txt",
    "room_with_a_view.txt",
    "commonmark_spec.md",
];

fn input(name: &str) -> String {
    let dir = std::env::var_os("CFS_BENCH_INPUTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench-inputs")
        });
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (set CFS_BENCH_INPUTS to the bench-inputs folder)",
            dir.join(name).display()
        )
    })
}

/// cfs at capacity `n`: chunks up to `n` bytes, aiming at `n`, no overlap, as
/// text-splitter's `TextSplitter::new(n)` makes chunks up to `n` characters.
fn cfs_params(n: usize) -> ChunkParams {
    let n = u32::try_from(n).expect("small capacity");
    ChunkParams {
        target_bytes: n,
        max_bytes: n,
        overlap_bytes: 0,
    }
}

fn check_cover(text: &str, n: usize) {
    let spans = chunk_text(text, &cfs_params(n)).expect("params");
    assert_eq!(spans.first().map(|s| s.start), Some(0));
    assert_eq!(spans.last().map(|s| s.end), Some(text.len()));
    assert!(
        spans.windows(2).all(|w| w[1].start == w[0].end),
        "no gaps, no overlap"
    );
    let splitter = TextSplitter::new(ChunkConfig::new(n).with_trim(false));
    let joined: String = splitter.chunks(text).collect();
    assert_eq!(
        joined.len(),
        text.len(),
        "text-splitter without trim covers the text"
    );
}

fn chunking(c: &mut Criterion) {
    for name in INPUTS {
        let text = input(name);
        let mut group = c.benchmark_group(format!("chunk/{name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.sample_size(20);
        for n in CAPACITIES {
            check_cover(&text, n);
            group.bench_with_input(BenchmarkId::new("cfs_text", n), &n, |b, &n| {
                let params = cfs_params(n);
                b.iter(|| black_box(chunk_text(black_box(&text), &params).expect("params").len()))
            });
            if name.ends_with(".md") {
                let splitter = MarkdownSplitter::new(n);
                group.bench_with_input(
                    BenchmarkId::new("text_splitter_markdown", n),
                    &n,
                    |b, _| b.iter(|| black_box(splitter.chunks(black_box(&text)).count())),
                );
            }
            let splitter = TextSplitter::new(n);
            group.bench_with_input(BenchmarkId::new("text_splitter_text", n), &n, |b, _| {
                b.iter(|| black_box(splitter.chunks(black_box(&text)).count()))
            });
        }
        group.finish();
    }
}

/// Markdown: cfs's section-aware chunker against text-splitter's Markdown splitter.
fn markdown(c: &mut Criterion) {
    let text = input("commonmark_spec.md");
    let mut group = c.benchmark_group("markdown/commonmark_spec.md");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(20);
    for n in CAPACITIES {
        let params = cfs_params(n);
        let doc = chunk_markdown(&text, &params).expect("params");
        assert_eq!(doc.chunks.last().map(|c| c.end), Some(text.len()));
        group.bench_with_input(BenchmarkId::new("cfs_markdown", n), &n, |b, _| {
            b.iter(|| {
                black_box(
                    chunk_markdown(black_box(&text), &params)
                        .expect("params")
                        .chunks
                        .len(),
                )
            })
        });
        let splitter = MarkdownSplitter::new(n);
        group.bench_with_input(BenchmarkId::new("text_splitter_markdown", n), &n, |b, _| {
            b.iter(|| black_box(splitter.chunks(black_box(&text)).count()))
        });
    }
    group.finish();
}

/// Code: cfs's tree-sitter symbol chunker against text-splitter's code splitter, both
/// parsing the file with tree-sitter-rust inside the timed region.
fn code(c: &mut Criterion) {
    let text = input("hashbrown_set_rs.txt");
    let mut group = c.benchmark_group("code/hashbrown_set_rs");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(20);
    let params = ChunkParams::default();
    let doc = chunk_code(&text, Language::Rust, &params)
        .expect("params")
        .expect("parses");
    assert_eq!(doc.chunks.last().map(|c| c.end), Some(text.len()));
    group.bench_function("cfs_code_symbols", |b| {
        b.iter(|| {
            black_box(
                chunk_code(black_box(&text), Language::Rust, &params)
                    .expect("params")
                    .map(|d| d.chunks.len()),
            )
        })
    });
    for n in CAPACITIES {
        let splitter = CodeSplitter::new(tree_sitter_rust::LANGUAGE, n).expect("language");
        group.bench_with_input(BenchmarkId::new("text_splitter_code", n), &n, |b, _| {
            b.iter(|| black_box(splitter.chunks(black_box(&text)).count()))
        });
    }
    group.finish();
}

fn embedding(c: &mut Criterion) {
    let text = input("room_with_a_view.txt");
    let spans = chunk_text(&text, &ChunkParams::default()).expect("params");
    let chunks: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
    let embedder = HashEmbedder::default();
    let mut group = c.benchmark_group("embed");
    group.throughput(Throughput::Elements(chunks.len() as u64));
    group.sample_size(20);
    group.bench_function("hash_embed_default_chunks", |b| {
        b.iter(|| {
            black_box(
                embedder
                    .embed_batch(black_box(&chunks))
                    .expect("embed")
                    .len(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, chunking, markdown, code, embedding);
criterion_main!(benches);
