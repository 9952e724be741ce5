//! cfs's BM25 text index against tantivy on the same chunks and queries:
//!
//! `cargo run --release --bin text_bench -- SRC --bytes N`
//!
//! The corpus and labels are search_bench's (doc comments as queries). Both indexes get
//! the same indexed text per chunk (symbol, heading, paths, text); cfs tokenizes it with
//! its code-aware tokenizer, tantivy with its default one (`TEXT`), queries parsed
//! leniently. Reported: build time, resident memory growth, query p50/p99, Recall@10
//! and MRR. Prints one JSON object.

use std::path::PathBuf;
use std::time::Instant;

use cfs_bench::{IndexedCorpus, indexed_corpus, is_target_parts, percentile, rss_bytes};
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use serde_json::json;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexWriter, TantivyDocument, doc};

fn main() {
    let mut args = std::env::args().skip(1);
    let src = PathBuf::from(args.next().expect("usage: text_bench SRC --bytes N"));
    let budget: u64 = match (args.next().as_deref(), args.next()) {
        (Some("--bytes"), Some(n)) => n.parse().expect("--bytes N"),
        _ => 30 << 20,
    };
    // `_dir` holds the tree and the store until the end.
    let IndexedCorpus {
        dir: _dir,
        bytes,
        labels,
        store,
        embedder,
        ..
    } = indexed_corpus(&src, budget);
    let step = labels.len().div_ceil(400).max(1);
    let sample: Vec<_> = labels.iter().step_by(step).collect();

    // cfs.
    let rss0 = rss_bytes();
    let t = Instant::now();
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).expect("index");
    let cfs_build = t.elapsed().as_secs_f64();
    let cfs_rss = rss_bytes().saturating_sub(rss0);
    let snap = index.snapshot();
    let memory = snap.memory_estimate();
    let (mut times, mut found, mut rr) = (Vec::new(), 0usize, 0.0);
    for label in &sample {
        let q = Query::new(label.query.clone()).mode(Mode::Text).k(10);
        let t = Instant::now();
        let hits = index.search(&q, &embedder).expect("search");
        times.push(t.elapsed());
        if let Some(r) = hits
            .iter()
            .position(|h| is_target_parts(&h.paths, h.symbol.as_deref(), label))
        {
            found += 1;
            rr += 1.0 / (r as f64 + 1.0);
        }
    }
    times.sort();
    let n = sample.len().max(1) as f64;
    let cfs = json!({"build_s": cfs_build, "rss_mb": cfs_rss as f64 / 1048576.0,
        "p50_ms": percentile(&times, 0.5), "p99_ms": percentile(&times, 0.99),
        "recall_at_10": found as f64 / n, "mrr": rr / n,
        "estimate_mb": {"text": memory.text as f64 / 1048576.0, "vectors": memory.vectors as f64 / 1048576.0, "chunks": memory.chunks as f64 / 1048576.0}});

    // tantivy, on the same indexed text.
    let docs: Vec<(String, String)> = snap
        .chunk_ids()
        .into_iter()
        .map(|id| {
            let meta = snap.chunk(&id).expect("chunk");
            let mut body = String::new();
            for field in [meta.symbol.as_deref(), meta.heading.as_deref()]
                .into_iter()
                .flatten()
            {
                body.push_str(field);
                body.push('\n');
            }
            for p in &meta.doc.paths {
                body.push_str(&p.path);
                body.push('\n');
            }
            body.push_str(&snap.chunk_text(&id).expect("text").expect("text"));
            (id.to_string(), body)
        })
        .collect();
    let mut schema = Schema::builder();
    let id_field = schema.add_text_field("id", STRING | STORED);
    let body_field = schema.add_text_field("body", TEXT);
    let schema = schema.build();
    let rss0 = rss_bytes();
    let t = Instant::now();
    let tindex = Index::create_in_ram(schema);
    let mut writer: IndexWriter = tindex
        .writer_with_num_threads(2, 256 << 20)
        .expect("writer");
    for (id, body) in &docs {
        writer
            .add_document(doc!(id_field => id.as_str(), body_field => body.as_str()))
            .expect("add");
    }
    writer.commit().expect("commit");
    let reader = tindex.reader().expect("reader");
    let searcher = reader.searcher();
    let tantivy_build = t.elapsed().as_secs_f64();
    let tantivy_rss = rss_bytes().saturating_sub(rss0);
    let parser = QueryParser::for_index(&tindex, vec![body_field]);
    let (mut times, mut found, mut rr) = (Vec::new(), 0usize, 0.0);
    for label in &sample {
        let t = Instant::now();
        let (query, _) = parser.parse_query_lenient(&label.query);
        let top = searcher
            .search(&query, &TopDocs::with_limit(10).order_by_score())
            .expect("search");
        let ids: Vec<String> = top
            .iter()
            .map(|(_, addr)| {
                let d: TantivyDocument = searcher.doc(*addr).expect("doc");
                d.get_first(id_field)
                    .and_then(|v| v.as_str())
                    .expect("id")
                    .to_owned()
            })
            .collect();
        times.push(t.elapsed());
        if let Some(r) = ids.iter().position(|id| {
            let meta = snap
                .chunk(&cfs_core::ChunkId::parse(id).expect("id"))
                .expect("chunk");
            let paths: Vec<&str> = meta.doc.paths.iter().map(|p| &*p.path).collect();
            is_target_parts(&paths, meta.symbol.as_deref(), label)
        }) {
            found += 1;
            rr += 1.0 / (r as f64 + 1.0);
        }
    }
    times.sort();
    let tantivy = json!({"build_s": tantivy_build, "rss_mb": tantivy_rss as f64 / 1048576.0,
        "p50_ms": percentile(&times, 0.5), "p99_ms": percentile(&times, 0.99),
        "recall_at_10": found as f64 / n, "mrr": rr / n});
    let out = json!({
        "corpus": {"bytes": bytes, "chunks": docs.len(), "queries": sample.len()},
        "cfs": cfs,
        "tantivy": tantivy,
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("json"));
}
