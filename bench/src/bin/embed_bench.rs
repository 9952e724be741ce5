//! minilm-int throughput, memory, allocations and bits, on real chunks:
//!
//! `cargo run --release --bin embed_bench -- SRC [--chunks N] [--scalar N] [--out FILE]`
//! `cargo run --release --bin embed_bench -- --kernel [--reps N] [--matrices N] [--narrow]`
//!
//! SRC is indexed in memory (hash embedder, to get its chunks); the first N distinct
//! chunk texts in chunk-id order (a fixed, content-defined sample) are embedded with
//! minilm-int on 2 threads, and on 1 thread, and the first `--scalar` (50) on 1 thread
//! on the portable path (what a CPU without AVX2 runs); every run must
//! give the same vectors. Prints one JSON object. With `--out`, writes the texts, their
//! token ids and vectors as JSON lines for `bench/embed_peer.py`, which runs
//! onnxruntime (int8) and the float model on the same chunks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cfs_bench::{flag, trimmed_rss_bytes};
use cfs_ingest::minilm::Simd;
use cfs_ingest::{
    Embedder, HashEmbedder, IngestConfig, MiniLmInt, Registry, embedding_text, index_tree,
};
use serde_json::json;

/// The system allocator, counting the blocks it hands out (allocations and reallocations).
struct Counting;

static BLOCKS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BLOCKS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BLOCKS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Blocks allocated per text when `model` embeds `texts` one by one on this thread after
/// a first pass (the steady state: buffers kept per thread are warm): into one buffer
/// the caller keeps, and as the vector `embed` returns.
fn allocations_per_text(model: &MiniLmInt, texts: &[&str]) -> (f64, f64) {
    let mut out = vec![0i16; model.dimension()];
    for t in texts {
        model.embed_into(t, &mut out);
    }
    let count = |embed: &mut dyn FnMut(&str)| {
        let before = BLOCKS.load(Ordering::Relaxed);
        for t in texts {
            embed(t);
        }
        (BLOCKS.load(Ordering::Relaxed) - before) as f64 / texts.len() as f64
    };
    let into = count(&mut |t| model.embed_into(t, &mut out));
    let returned = count(&mut |t| drop(model.embed(t)));
    (into, returned)
}

/// The matrix product alone at the model's shapes (101 rows, the mean chunk's tokens;
/// 112, whole tiles; 30, a short chunk; 404, four chunks' tokens in one product, what
/// batching chunks would give; 101 x 101 x 32 and 101 x 32 x 102, one head's scores
/// and context), one thread, on every path this CPU has: G multiply-adds a second.
/// `matrices` distinct weight matrices of each shape are taken in turn: 1 keeps them in
/// cache (the kernel's own ceiling); 32 of 384 x 384 (4.7 MB, more than L2) make each
/// product's weights come from L3 or memory, as a layer's do when the model embeds one
/// text after another. `narrow` takes activations in 8 bits (-127..=127, as an 8-bit
/// activation model would give them: the AMX path then needs one tile product a step,
/// not two) instead of the whole `i16` range.
fn kernel_rates(reps: usize, matrices: usize, narrow: bool) -> serde_json::Value {
    use cfs_ingest::minilm::{Panels, Rows, matmul};
    let mut rates = serde_json::Map::new();
    for (m, n, k) in [
        (101usize, 384usize, 384usize),
        (101, 1536, 384),
        (112, 384, 384),
        (404, 384, 384),
        (404, 1536, 384),
        (30, 384, 384),
        (101, 101, 32),
        (101, 32, 102),
    ] {
        let x: Vec<i16> = (0..m * k)
            .map(|i| match narrow {
                true => (i * 7919 % 255) as i16 - 127,
                false => (i * 7919 % 65536) as i16,
            })
            .collect();
        let w: Vec<Vec<i8>> = (0..matrices)
            .map(|q| {
                (0..n * k)
                    .map(|i| ((i + q) * 31 % 256) as u8 as i8)
                    .collect()
            })
            .collect();
        let mut shape = serde_json::Map::new();
        for path in [
            Simd::Amx,
            Simd::Avx512Vnni,
            Simd::AvxVnni,
            Simd::Avx2,
            Simd::Portable,
        ] {
            if path.resolve().is_err() {
                continue;
            }
            // The portable loop is some 50 times slower: fewer repetitions.
            let reps = if path == Simd::Portable {
                reps / 30 + 1
            } else {
                reps
            };
            let ps: Vec<Panels> = w
                .iter()
                .map(|w| Panels::from_rows(w, k, path.layout()))
                .collect();
            let out_stride = ps[0].n_padded();
            let mut out = vec![0i32; m * out_stride];
            let rows = Rows {
                count: m,
                x_stride: k,
                out_stride,
            };
            matmul(&x, &ps[0], rows, &mut out, path);
            let t = Instant::now();
            for p in ps.iter().cycle().take(reps) {
                matmul(&x, p, rows, &mut out, path);
            }
            let rate = (m * n * k * reps) as f64 / t.elapsed().as_secs_f64() / 1e9;
            shape.insert(path.name().to_owned(), json!((rate * 10.0).round() / 10.0));
        }
        rates.insert(format!("{m}x{n}x{k}"), shape.into());
    }
    rates.into()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "--kernel") {
        let reps = flag(&args, "--reps").map_or(300, |v| v.parse().expect("--reps N"));
        let matrices = flag(&args, "--matrices").map_or(1, |v| v.parse().expect("--matrices N"));
        let rates = kernel_rates(reps, matrices, args.iter().any(|a| a == "--narrow"));
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"g_mac_per_s": rates})).expect("JSON")
        );
        return;
    }
    let src = PathBuf::from(args.get(1).expect("SRC"));
    let n: usize = flag(&args, "--chunks").map_or(2000, |v| v.parse().expect("--chunks N"));
    let index = index_tree(
        &src,
        &IngestConfig::default(),
        &Registry::default(),
        &HashEmbedder::default(),
        &|_| {},
    )
    .expect("index SRC");
    let mut seen = BTreeSet::new();
    let texts: Vec<String> = index
        .state
        .chunks()
        .values()
        .map(|c| embedding_text(c).into_owned())
        .filter(|t| seen.insert(t.clone()))
        .take(n)
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();

    let rss_before = trimmed_rss_bytes();
    let t = Instant::now();
    let model = MiniLmInt::open_default().expect("minilm-int model");
    let load_s = t.elapsed().as_secs_f64();
    let model_rss = trimmed_rss_bytes().saturating_sub(rss_before);
    let tokens: usize = refs.iter().map(|t| model.tokenize(t).len()).sum();

    let run = |threads: usize, simd: Simd| {
        let m = model.with_simd(simd);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let t = Instant::now();
        let v = pool.install(|| m.embed_batch(&refs)).expect("embed");
        (t.elapsed().as_secs_f64(), v)
    };
    let (s2, v2) = run(2, Simd::Auto);
    let (s1, v1) = run(1, Simd::Auto);
    let scalar_n = flag(&args, "--scalar")
        .map_or(50, |v| v.parse().expect("--scalar N"))
        .min(refs.len());
    let m = model.with_simd(Simd::Portable);
    let t = Instant::now();
    let vs: Vec<Vec<i16>> = refs[..scalar_n].iter().map(|t| m.embed(t)).collect();
    let s_scalar = t.elapsed().as_secs_f64();
    assert_eq!(v1, v2, "1 and 2 threads differ");
    assert_eq!(&vs[..], &v1[..scalar_n], "SIMD and scalar differ");

    if let Some(out) = flag(&args, "--out") {
        let mut f = std::io::BufWriter::new(std::fs::File::create(out).expect("--out"));
        for (text, v) in refs.iter().zip(&v2) {
            let line = json!({"text": text, "ids": model.tokenize(text), "vector": v});
            writeln!(f, "{line}").expect("write");
        }
    }
    let allocations = allocations_per_text(&model, &refs[..refs.len().min(50)]);
    let per_s = |s: f64, k: usize| k as f64 / s;
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "chunks": refs.len(),
            "mean_tokens": tokens as f64 / refs.len() as f64,
            "model_load_s": load_s,
            "model_rss_mb": model_rss as f64 / 1e6,
            "allocations_per_text": allocations.0,
            "allocations_per_text_returned": allocations.1,
            "two_threads": {"seconds": s2, "chunks_per_s": per_s(s2, refs.len()), "tokens_per_s": per_s(s2, tokens)},
            "one_thread": {"seconds": s1, "chunks_per_s": per_s(s1, refs.len())},
            "one_thread_scalar": {"chunks": scalar_n, "seconds": s_scalar, "chunks_per_s": per_s(s_scalar, scalar_n)},
            "same_bits_1_2_threads_simd_scalar": true,
        }))
        .expect("JSON")
    );
}
