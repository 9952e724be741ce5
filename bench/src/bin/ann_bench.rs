//! Approximate nearest-neighbour graphs against exact search on the store's own vectors:
//!
//! `cargo run --release --bin ann_bench -- SRC --bytes N --points 10000,25000,100000`
//!
//! Vectors are the default embedder's, of the chunks of search_bench's corpus (first
//! `points` chunks in id order); queries are its doc-comment labels. For each size:
//! build time on one thread (reproducible builds), recall@10 of the exact top 10, and
//! query p50, for instant-distance 0.6 and hnsw_rs 0.3. Prints one JSON object.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cfs_bench::{IndexedCorpus, exact_top, indexed_corpus, percentile, recall};
use cfs_ingest::Embedder;
use cfs_search::{IndexOptions, SearchIndex, dot, norm2};
use serde_json::json;

#[derive(Clone)]
struct P {
    all: Arc<Vec<Vec<i16>>>,
    i: usize,
    q: Option<Arc<Vec<i16>>>,
}

impl P {
    fn v(&self) -> &[i16] {
        match &self.q {
            Some(q) => q,
            None => &self.all[self.i],
        }
    }
}

impl instant_distance::Point for P {
    fn distance(&self, other: &Self) -> f32 {
        let (a, b) = (self.v(), other.v());
        ((1i64 << 31) - dot(a, b, norm2(a), norm2(b))) as f32
    }
}

#[derive(Default, Clone, Copy)]
struct DotDistance;

impl anndists::dist::Distance<i16> for DotDistance {
    fn eval(&self, a: &[i16], b: &[i16]) -> f32 {
        ((1i64 << 31) - dot(a, b, norm2(a), norm2(b))) as f32
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let src = PathBuf::from(
        args.next()
            .expect("usage: ann_bench SRC --bytes N --points A,B"),
    );
    let (mut budget, mut sizes) = (30u64 << 20, vec![10_000usize, 25_000]);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bytes" => budget = args.next().and_then(|n| n.parse().ok()).expect("--bytes N"),
            "--points" => {
                sizes = args
                    .next()
                    .expect("--points")
                    .split(',')
                    .map(|n| n.parse().expect("number"))
                    .collect()
            }
            other => panic!("unknown argument {other}"),
        }
    }
    // `_dir` holds the tree and the store until the end.
    let IndexedCorpus {
        dir: _dir,
        labels,
        store,
        embedder,
        ..
    } = indexed_corpus(&src, budget);
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).expect("index");
    let read = store.begin_read().expect("read");
    let model = embedder.model_hash();
    let vectors: Vec<Vec<i16>> = index
        .snapshot()
        .chunk_ids()
        .iter()
        .map(|id| {
            read.embedding(&cfs_core::EmbeddingId::derive(id, &model))
                .expect("read")
                .expect("embedding")
                .vector
        })
        .collect();
    let step = labels.len().div_ceil(300).max(1);
    let queries: Vec<Vec<i16>> = labels
        .iter()
        .step_by(step)
        .map(|l| embedder.embed(&l.query))
        .collect();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut rows = Vec::new();
    for &n in &sizes {
        let n = n.min(vectors.len());
        let all = Arc::new(vectors[..n].to_vec());
        let exact: Vec<Vec<usize>> = queries.iter().map(|q| exact_top(&all, q, 10)).collect();
        let mut t_exact = Vec::new();
        for q in &queries {
            let t = Instant::now();
            std::hint::black_box(exact_top(&all, q, 10));
            t_exact.push(t.elapsed());
        }
        t_exact.sort();

        // instant-distance, when small enough to finish in minutes.
        let id_row = if n <= 30_000 {
            let points: Vec<P> = (0..n)
                .map(|i| P {
                    all: Arc::clone(&all),
                    i,
                    q: None,
                })
                .collect();
            let t = Instant::now();
            let (graph, _) = one.install(|| {
                instant_distance::Builder::default()
                    .seed(1)
                    .ef_construction(100)
                    .ef_search(128)
                    .build_hnsw(points)
            });
            let build = t.elapsed().as_secs_f64();
            let mut times = Vec::new();
            let found: Vec<Vec<usize>> = queries
                .iter()
                .map(|q| {
                    let p = P {
                        all: Arc::clone(&all),
                        i: 0,
                        q: Some(Arc::new(q.clone())),
                    };
                    let mut s = instant_distance::Search::default();
                    let t = Instant::now();
                    let r: Vec<usize> = graph
                        .search(&p, &mut s)
                        .take(10)
                        .map(|it| it.point.i)
                        .collect();
                    times.push(t.elapsed());
                    r
                })
                .collect();
            times.sort();
            json!({"build_s": build, "recall_at_10": recall(&exact, &found), "p50_ms": percentile(&times, 0.5)})
        } else {
            serde_json::Value::Null
        };

        // hnsw_rs: M = 16, ef_construction 200, inserted in order on one thread.
        let t = Instant::now();
        let graph = hnsw_rs::hnsw::Hnsw::<i16, DotDistance>::new(16, n, 16, 200, DotDistance);
        for (i, v) in all.iter().enumerate() {
            graph.insert_slice((v.as_slice(), i));
        }
        let build = t.elapsed().as_secs_f64();
        let mut rs_rows = Vec::new();
        for ef in [64usize, 128] {
            let mut times = Vec::new();
            let found: Vec<Vec<usize>> = queries
                .iter()
                .map(|q| {
                    let t = Instant::now();
                    let r: Vec<usize> = graph.search(q, 10, ef).iter().map(|nb| nb.d_id).collect();
                    times.push(t.elapsed());
                    r
                })
                .collect();
            times.sort();
            rs_rows.push(json!({"ef_search": ef, "recall_at_10": recall(&exact, &found), "p50_ms": percentile(&times, 0.5)}));
        }
        rows.push(json!({
            "points": n,
            "exact_p50_ms_one_thread": percentile(&t_exact, 0.5),
            "instant_distance": id_row,
            "hnsw_rs": {"build_s": build, "search": rs_rows},
        }));
        eprintln!("{}", rows.last().expect("row"));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"queries": queries.len(), "sizes": rows}))
            .expect("json")
    );
}
