//! Vector search in process over a store's index file: sign codes against the exact scan.
//!
//! `cargo run --release --bin vector_bench -- STORE_FILE INDEX_FILE [--queries N] [--dense]`
//!
//! Opens the store read-only and its index file (mapped), takes N chunk vectors spread
//! over the index as queries (each asks for its 10 nearest; the query's embedding is
//! not timed), and prints the p50 and p99 of each way and the recall@10 of the codes
//! against exact. The store's embedder must be here (minilm-int, or the hash one);
//! With them, the time of reading as many bytes as the codes column holds, once, on
//! every core: the physical limit of a code scan. `--dense` declares the hash embedder's vectors dense so that their codes are scanned
//! (for timing at sizes no semantic store here reaches; their recall is low).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cfs_bench::{flag, percentile};
use cfs_ingest::{EmbedError, Embedder, HashEmbedder, MiniLmInt};
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::Store;
use rayon::prelude::*;
use serde_json::json;

/// An embedder that answers a query text with a given vector: the query is "v:<index>".
struct Fixed {
    inner: Box<dyn Embedder>,
    dense: bool,
    vectors: Vec<Vec<i16>>,
}

impl Embedder for Fixed {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let i: usize = t.trim_start_matches("v:").parse().expect("v:N");
                self.vectors[i].clone()
            })
            .collect())
    }
    fn fusion_weight(&self) -> u32 {
        100
    }
    fn sign_codes(&self) -> bool {
        self.dense || self.inner.sign_codes()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str| flag(&args, name);
    let store = Store::open_read_only(&PathBuf::from(&args[1])).expect("store");
    let cache = PathBuf::from(&args[2]);
    let n: usize = get("--queries").map_or(200, |v| v.parse().expect("--queries N"));
    let inner: Box<dyn Embedder> = if store.settings().model_id.starts_with("minilm-int") {
        Box::new(MiniLmInt::open_default().expect("minilm-int"))
    } else {
        Box::new(HashEmbedder::default())
    };
    let mut e = Fixed {
        inner,
        dense: args.iter().any(|a| a == "--dense"),
        vectors: Vec::new(),
    };
    let t = Instant::now();
    let (index, status) =
        SearchIndex::open_from_file(&store, &e, IndexOptions::exact(), &cache).expect("index");
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let snap = index.snapshot();
    let ids = snap.chunk_ids();
    let step = (ids.len() / n).max(1);
    // The chunks' own vectors, recomputed from their texts (the embedders are exact).
    let texts: Vec<String> = ids
        .iter()
        .step_by(step)
        .take(n)
        .filter_map(|id| snap.chunk_text(id).expect("text"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    e.vectors = e.inner.embed_batch(&refs).expect("embed");
    e.vectors.retain(|v| v.iter().any(|&x| x != 0));
    let (mut codes, mut exact, mut limit) = (Vec::new(), Vec::new(), Vec::new());
    // The physical limit of a code scan: reading as many bytes as the codes hold once,
    // from memory, on every core (the codes column is in the page cache, also memory).
    let words = e.inner.dimension().div_ceil(64);
    let column: Vec<u64> = (0..snap.n_chunks() * words as usize)
        .map(|w| w as u64)
        .collect();
    let mut agree = 0;
    for i in 0..e.vectors.len() {
        let t = Instant::now();
        let fold = column
            .par_chunks(16_384)
            .map(|c| c.iter().fold(0, |a, &w| a ^ w))
            .reduce(|| 0, |a, b| a ^ b);
        limit.push(t.elapsed());
        std::hint::black_box(fold);
        let q = Query::new(format!("v:{i}")).mode(Mode::Vector).k(10);
        let t = Instant::now();
        let a = index.search(&q, &e).expect("search");
        codes.push(t.elapsed());
        let t = Instant::now();
        let b = index.search(&q.clone().exact(true), &e).expect("search");
        exact.push(t.elapsed());
        agree += a
            .iter()
            .filter(|h| b.iter().any(|x| x.chunk_id == h.chunk_id))
            .count();
    }
    codes.sort();
    exact.sort();
    limit.sort();
    let p = |v: &[Duration], q| percentile(v, q);
    println!(
        "{}",
        json!({
            "chunks": snap.n_chunks(), "cache": format!("{status:?}"), "open_ms": open_ms,
            "queries": e.vectors.len(),
            "codes_p50_ms": p(&codes, 0.5), "codes_p99_ms": p(&codes, 0.99),
            "exact_p50_ms": p(&exact, 0.5), "exact_p99_ms": p(&exact, 0.99),
            "read_codes_bytes_p50_ms": p(&limit, 0.5),
            "recall_at_10": agree as f64 / (10 * e.vectors.len().max(1)) as f64,
        })
    );
}
