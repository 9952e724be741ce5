//! Graph vector indexes on a store's own vectors, side by side on 2 cores: instant-distance
//! (its parallel build), hnsw_rs (parallel insertion) and usearch, against the exact scan.
//!
//! `cargo run --release --bin ann_peers -- DATA --points 100000,250000 [--queries 200]
//! [--instant-max 250000]`
//!
//! DATA is what `export_chunks` writes (`vectors.i16`, `meta.json`). For each size, the
//! first N vectors; queries are the vectors of `--queries` chunks spread over them
//! (zero vectors left out); the reference is the exact top 10 by the integer dot product
//! over norms (cfs's score), ties by index. Each index: build time (wall, both cores),
//! recall@10 against the reference, query p50 and p99 (one query at a time). The
//! sign-code scan of the same vectors is measured in place by `vector_bench` (it reads
//! the store's own index file). Prints one JSON object per size.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cfs_bench::{exact_top, flag, percentile, recall};
use cfs_search::{dot, norm2};
use rayon::prelude::*;
use serde_json::{Value, json};

/// cfs's score as a distance: smaller is nearer.
fn distance(a: &[i16], b: &[i16]) -> f32 {
    ((1i64 << 31) - dot(a, b, norm2(a), norm2(b))) as f32
}

#[derive(Clone)]
struct Point {
    all: Arc<Vec<Vec<i16>>>,
    i: usize,
}

impl instant_distance::Point for Point {
    fn distance(&self, other: &Self) -> f32 {
        distance(&self.all[self.i], &other.all[other.i])
    }
}

#[derive(Default, Clone, Copy)]
struct DotDistance;

impl anndists::dist::Distance<i16> for DotDistance {
    fn eval(&self, a: &[i16], b: &[i16]) -> f32 {
        distance(a, b)
    }
}

/// Recall and latency of `search` over the queries.
fn measure(
    queries: &[usize],
    exact: &[Vec<usize>],
    mut search: impl FnMut(usize) -> Vec<usize>,
) -> Value {
    let mut times: Vec<Duration> = Vec::new();
    let found: Vec<Vec<usize>> = queries
        .iter()
        .map(|&q| {
            let t = Instant::now();
            let r = search(q);
            times.push(t.elapsed());
            r
        })
        .collect();
    times.sort();
    json!({
        "recall_at_10": recall(exact, &found),
        "p50_ms": percentile(&times, 0.5), "p99_ms": percentile(&times, 0.99),
    })
}

fn read_vectors(data: &Path) -> Vec<Vec<i16>> {
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("meta.json")).expect("meta"))
            .expect("meta.json");
    let dim = meta["dim"].as_u64().expect("dim") as usize;
    let bytes = std::fs::read(data.join("vectors.i16")).expect("vectors.i16");
    bytes
        .chunks_exact(2 * dim)
        .map(|v| {
            v.chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect()
        })
        .collect()
}

fn hnsw_rs_row(all: &Arc<Vec<Vec<i16>>>, queries: &[usize], exact: &[Vec<usize>]) -> Value {
    let n = all.len();
    let t = Instant::now();
    let graph = hnsw_rs::hnsw::Hnsw::<i16, DotDistance>::new(16, n, 16, 200, DotDistance);
    let items: Vec<(&[i16], usize)> = all.iter().map(|v| v.as_slice()).zip(0..).collect();
    graph.parallel_insert_slice(&items);
    let build = t.elapsed().as_secs_f64();
    let mut row = json!({"build_s": build});
    for ef in [64usize, 128] {
        row[format!("ef{ef}")] = measure(queries, exact, |q| {
            graph
                .search(&all[q], 10, ef)
                .iter()
                .map(|nb| nb.d_id)
                .collect()
        });
    }
    row
}

fn instant_row(all: &Arc<Vec<Vec<i16>>>, queries: &[usize], exact: &[Vec<usize>]) -> Value {
    let points: Vec<Point> = (0..all.len())
        .map(|i| Point {
            all: Arc::clone(all),
            i,
        })
        .collect();
    let t = Instant::now();
    let (graph, _) = instant_distance::Builder::default()
        .seed(1)
        .ef_construction(100)
        .ef_search(128)
        .build_hnsw(points);
    let build = t.elapsed().as_secs_f64();
    let mut row = json!({"build_s": build});
    row["ef128"] = measure(queries, exact, |q| {
        let p = Point {
            all: Arc::clone(all),
            i: q,
        };
        let mut s = instant_distance::Search::default();
        graph
            .search(&p, &mut s)
            .take(10)
            .map(|it| it.point.i)
            .collect()
    });
    row
}

fn usearch_row(all: &[Vec<i16>], queries: &[usize], exact: &[Vec<usize>]) -> Value {
    let dim = all[0].len();
    let options = usearch::IndexOptions {
        dimensions: dim,
        metric: usearch::MetricKind::Cos,
        quantization: usearch::ScalarKind::F32,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 64,
        multi: false,
    };
    let floats: Vec<Vec<f32>> = all
        .iter()
        .map(|v| v.iter().map(|&x| f32::from(x)).collect())
        .collect();
    let t = Instant::now();
    let index = usearch::new_index(&options).expect("usearch index");
    index
        .reserve_capacity_and_threads(all.len(), rayon::current_num_threads())
        .expect("reserve");
    floats.par_iter().enumerate().for_each(|(i, v)| {
        index.add(i as u64, v).expect("add");
    });
    let build = t.elapsed().as_secs_f64();
    let mut row = json!({"build_s": build, "memory_bytes": index.memory_usage()});
    row["ef64"] = measure(queries, exact, |q| {
        let m = index.search(&floats[q], 10).expect("search");
        m.keys.iter().map(|&k| k as usize).collect()
    });
    row
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str| flag(&args, name);
    let data = PathBuf::from(&args[1]);
    let sizes: Vec<usize> = get("--points")
        .unwrap_or_else(|| "100000".into())
        .split(',')
        .map(|n| n.parse().expect("--points A,B"))
        .collect();
    let n_queries: usize = get("--queries").map_or(200, |v| v.parse().expect("--queries N"));
    let instant_max: usize = get("--instant-max").map_or(250_000, |v| v.parse().expect("N"));
    let vectors = read_vectors(&data);
    for &n in &sizes {
        let n = n.min(vectors.len());
        let all = Arc::new(vectors[..n].to_vec());
        let nonzero: Vec<usize> = (0..n).filter(|&i| norm2(&all[i]) > 0).collect();
        let step = (nonzero.len() / n_queries).max(1);
        let queries: Vec<usize> = nonzero
            .iter()
            .step_by(step)
            .take(n_queries)
            .copied()
            .collect();
        let exact: Vec<Vec<usize>> = queries
            .iter()
            .map(|&q| exact_top(&all, &all[q], 10))
            .collect();
        let mut row = json!({"points": n, "queries": queries.len()});
        row["exact"] = measure(&queries, &exact, |q| exact_top(&all, &all[q], 10));
        row["usearch"] = usearch_row(&all, &queries, &exact);
        row["hnsw_rs"] = hnsw_rs_row(&all, &queries, &exact);
        if n <= instant_max {
            row["instant_distance"] = instant_row(&all, &queries, &exact);
        }
        println!("{row}");
    }
}
