//! Search benchmarks and the retrieval-quality suite on real Rust sources:
//!
//! `cargo run --release --bin search_bench -- SRC --bytes N [--hnsw] [--edits N]`
//!
//! SRC is a folder of Rust crates (e.g. a copy of the cargo registry's sources). The
//! first N bytes of its `.rs` files (in path order) are copied with their outer doc
//! comments (`///`) removed; each removed comment that documents a named item becomes a
//! query whose target is that item's chunk. Then, in one run:
//!
//! 1. the runtime index is built from the store (time, memory);
//! 2. every query runs in text, vector and hybrid mode (exact vectors): Recall@10, MRR,
//!    latency p50/p99;
//! 3. with `--hnsw`, the HNSW graph is built (time) and vector search through it is
//!    compared with exact search: recall@10 of the exact top 10, speed-up;
//! 4. one-file edits: sync, then snapshot publish (refresh) time, against rebuilding
//!    the whole index (the seed's full reload).
//!
//! Prints one JSON object; `docs/benchmarks.md` records the figures.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use cfs_bench::{IndexedCorpus, Label, indexed_corpus, is_target, percentile, rss_bytes};
use cfs_ingest::HashEmbedder;
use cfs_search::{Hit, IndexOptions, Mode, Query, SearchIndex};
use serde_json::json;

struct Quality {
    recall: f64,
    mrr: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn run_queries(
    index: &SearchIndex,
    embedder: &HashEmbedder,
    labels: &[&Label],
    mode: Mode,
    exact: bool,
) -> (Quality, Vec<Vec<Hit>>) {
    let mut times = Vec::new();
    let mut found = 0usize;
    let mut rr = 0.0;
    let mut all = Vec::new();
    for label in labels {
        let mut q = Query::new(label.query.clone()).mode(mode).k(10);
        q.exact = exact;
        if let Some(w) = std::env::var("CFS_VECTOR_WEIGHT")
            .ok()
            .and_then(|w| w.parse().ok())
        {
            q.vector_weight = Some(w);
        }
        let t = Instant::now();
        let hits = index.search(&q, embedder).expect("search");
        times.push(t.elapsed());
        if let Some(rank) = hits.iter().position(|h| is_target(h, label)) {
            found += 1;
            rr += 1.0 / (rank as f64 + 1.0);
        }
        all.push(hits);
    }
    times.sort();
    let n = labels.len().max(1) as f64;
    (
        Quality {
            recall: found as f64 / n,
            mrr: rr / n,
            p50_ms: percentile(&times, 0.5),
            p99_ms: percentile(&times, 0.99),
        },
        all,
    )
}

fn quality_json(q: &Quality) -> serde_json::Value {
    json!({"recall_at_10": q.recall, "mrr": q.mrr, "p50_ms": q.p50_ms, "p99_ms": q.p99_ms})
}

fn main() {
    let mut args = std::env::args().skip(1);
    let src = PathBuf::from(args.next().expect("usage: search_bench SRC --bytes N"));
    let mut budget = 30 << 20;
    let mut hnsw = false;
    let mut edits = 20usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bytes" => budget = args.next().and_then(|n| n.parse().ok()).expect("--bytes N"),
            "--edits" => edits = args.next().and_then(|n| n.parse().ok()).expect("--edits N"),
            "--hnsw" => hnsw = true,
            other => panic!("unknown argument {other}"),
        }
    }
    // `_dir` holds the tree and the store until the end.
    let IndexedCorpus {
        dir: _dir,
        tree,
        bytes,
        files: n_files,
        labels,
        store,
        embedder,
        options,
    } = indexed_corpus(&src, budget);

    // 1. Build the index.
    let exact_options = IndexOptions::exact();
    let rss0 = rss_bytes();
    let t = Instant::now();
    let index = SearchIndex::open(&store, &embedder, exact_options).expect("index");
    let build_s = t.elapsed().as_secs_f64();
    let rss1 = rss_bytes();
    let chunks = index.snapshot().n_chunks();

    // 2. Quality and latency, one label in every `step` (at most 400 queries).
    let step = labels.len().div_ceil(400).max(1);
    let sample: Vec<&Label> = labels.iter().step_by(step).collect();
    let mut quality = BTreeMap::new();
    for (name, mode) in [
        ("text", Mode::Text),
        ("vector", Mode::Vector),
        ("hybrid", Mode::Hybrid),
    ] {
        let (q, _) = run_queries(&index, &embedder, &sample, mode, true);
        quality.insert(name, quality_json(&q));
    }

    // 3. HNSW against exact search.
    let hnsw_json = if hnsw {
        let options = IndexOptions {
            hnsw_min_vectors: Some(1),
            hnsw_background: false,
            ..IndexOptions::default()
        };
        let t = Instant::now();
        let graph = SearchIndex::open(&store, &embedder, options).expect("hnsw index");
        let hnsw_build_s = t.elapsed().as_secs_f64() - build_s;
        let (ex, exact_hits) = run_queries(&graph, &embedder, &sample, Mode::Vector, true);
        let (ap, approx_hits) = run_queries(&graph, &embedder, &sample, Mode::Vector, false);
        let (hy, _) = run_queries(&graph, &embedder, &sample, Mode::Hybrid, false);
        let mut found = 0usize;
        let mut total = 0usize;
        for (e, a) in exact_hits.iter().zip(&approx_hits) {
            total += e.len();
            found += e
                .iter()
                .filter(|x| a.iter().any(|y| y.chunk_id == x.chunk_id))
                .count();
        }
        json!({
            "build_s": hnsw_build_s,
            "recall_at_10_vs_exact": found as f64 / total.max(1) as f64,
            "exact_vector_p50_ms": ex.p50_ms,
            "hnsw_vector_p50_ms": ap.p50_ms,
            "hnsw_vector_p99_ms": ap.p99_ms,
            "speedup_p50": ex.p50_ms / ap.p50_ms.max(1e-9),
            "hybrid_with_hnsw": quality_json(&hy),
            "labels_recall_with_hnsw": ap.recall,
        })
    } else {
        serde_json::Value::Null
    };

    // 4. One-file edits: publish the new snapshot, against a full rebuild.
    let walk = cfs_ingest::walk(&tree).expect("walk corpus");
    let mut publish = Vec::new();
    let mut full = Vec::new();
    for i in 0..edits {
        let f = &walk.files[(i * 7919) % walk.files.len()];
        let p = tree.join(&f.rel_path);
        let mut text = std::fs::read_to_string(&p).expect("read");
        text.push_str(&format!("\n/// edit {i}\npub fn bench_edit_{i}() {{}}\n"));
        std::fs::write(&p, text).expect("write");
        store
            .sync(&tree, &options, &embedder, &|_| {})
            .expect("sync");
        let t = Instant::now();
        let r = index.refresh(&store).expect("refresh");
        publish.push(t.elapsed());
        assert!(r.diff.is_some());
        let hits = index
            .search(
                &Query::new(format!("bench_edit_{i}")).mode(Mode::Text).k(1),
                &embedder,
            )
            .expect("search");
        assert_eq!(hits[0].path, f.rel_path);
        if i < 3 {
            let t = Instant::now();
            let _fresh = SearchIndex::open(&store, &embedder, exact_options).expect("reload");
            full.push(t.elapsed());
        }
    }
    publish.sort();
    full.sort();
    let publish_p50 = percentile(&publish, 0.5);
    let full_p50 = percentile(&full, 0.5);

    let out = json!({
        "corpus": {"files": n_files, "bytes": bytes, "chunks": chunks, "labels": labels.len(), "queries": sample.len()},
        "index_build_s": build_s,
        "index_rss_mb": (rss1.saturating_sub(rss0)) as f64 / 1048576.0,
        "index_rss_mb_per_100k_chunks": (rss1.saturating_sub(rss0)) as f64 / 1048576.0 * 100_000.0 / chunks.max(1) as f64,
        "quality_exact": quality,
        "hnsw": hnsw_json,
        "publish_one_file_ms": {"p50": publish_p50, "p99": percentile(&publish, 0.99), "full_rebuild_ms": full_p50, "ratio": full_p50 / publish_p50.max(1e-9)},
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("json"));
}
