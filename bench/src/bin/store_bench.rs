//! Store benchmarks on a real source tree, each against its peer in the same run:
//!
//! `cargo run --release --bin store_bench -- TREE [--edits N]`
//!
//! 1. cold sync of TREE into a new store: MB/s of files read;
//! 2. no-op re-sync against `git status --porcelain` on the same tree (TREE must be a git
//!    work tree with everything committed);
//! 3. one-file edit to a committed root: parse, chunk, embed, write and commit one
//!    changed file through a write transaction (p50, p99 over N edits);
//! 4. `verify` of the whole store: rows per second.
//!
//! Prints one JSON object; `docs/benchmarks.md` records the figures.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use cfs_core::PathEntry;
use cfs_ingest::ingest_file;

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tree = PathBuf::from(args.next().expect("usage: store_bench TREE [--edits N]"));
    let edits: usize = match (args.next().as_deref(), args.next()) {
        (Some("--edits"), Some(n)) => n.parse().expect("--edits N"),
        _ => 20,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, embedder, options) = cfs_bench::new_store(&dir.path().join("store.redb"));

    // 0. The same tree indexed in memory (no store): what ingestion alone costs.
    let started = Instant::now();
    let in_memory = cfs_ingest::index_tree(
        &tree,
        &options.config,
        &options.registry,
        &embedder,
        &|_| {},
    )
    .expect("in-memory index");
    let in_memory_s = started.elapsed().as_secs_f64();
    drop(in_memory);

    // 1. Cold sync.
    let started = Instant::now();
    let cold = store
        .sync(&tree, &options, &embedder, &|_| {})
        .expect("cold sync");
    let cold_s = started.elapsed().as_secs_f64();
    let bytes: u64 = cfs_ingest::walk(&tree)
        .expect("walk")
        .files
        .iter()
        .map(|f| f.size_bytes)
        .sum();
    let counts = store.begin_read().expect("read").counts().expect("counts");

    // 2. No-op re-sync against git status. Files written by the cold sync's own clock
    //    window are re-hashed once; sync twice so the stat cache vouches for all.
    std::thread::sleep(Duration::from_millis(2100));
    store
        .sync(&tree, &options, &embedder, &|_| {})
        .expect("warm sync");
    let mut noop = Vec::new();
    let mut git = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let r = store
            .sync(&tree, &options, &embedder, &|_| {})
            .expect("no-op sync");
        noop.push(t.elapsed());
        assert_eq!(
            (r.commits, r.parsed, r.hashed),
            (0, 0, 0),
            "not a no-op: {r:?}"
        );
        let t = Instant::now();
        let out = Command::new("git")
            .arg("-C")
            .arg(&tree)
            .args(["status", "--porcelain"])
            .output()
            .expect("git");
        git.push(t.elapsed());
        assert!(out.status.success());
    }
    noop.sort();
    git.sort();

    // 3. One-file edits through a write transaction.
    let read = store.begin_read().expect("read");
    let paths = read.all_paths().expect("paths");
    let target = paths
        .iter()
        .find(|p| p.path.ends_with(".rs"))
        .expect("a Rust file")
        .path
        .clone();
    let original = std::fs::read_to_string(tree.join(&target)).expect("read target");
    drop(read);
    let mut edit_times = Vec::new();
    for i in 0..edits {
        let text = format!("{original}\n// edit {i}\n");
        let t = Instant::now();
        let ingested =
            ingest_file(&target, text.as_bytes(), &options.config, &embedder).expect("ingest");
        let mut txn = store.begin_write().expect("write");
        let p = &ingested.parsed;
        txn.put_document(
            &p.document,
            &p.chunks,
            &ingested.embeddings,
            &p.window_edges,
        )
        .expect("put");
        txn.bind_path(&PathEntry::new(target.clone(), p.document.id))
            .expect("bind");
        txn.commit().expect("commit");
        edit_times.push(t.elapsed());
    }
    edit_times.sort();

    // 4. Verify.
    let t = Instant::now();
    let report = store.verify().expect("verify");
    let verify_s = t.elapsed().as_secs_f64();
    assert!(report.is_ok(), "{:?}", report.problems);
    let after = store.begin_read().expect("read").counts().expect("counts");
    let rows = after.paths + after.documents + after.chunks + after.embeddings + after.edges;

    let noop_ms = percentile(&noop, 0.5);
    let git_ms = percentile(&git, 0.5);
    println!(
        "{}",
        serde_json::json!({
            "tree": tree.display().to_string(),
            "files_indexed": counts.paths, "bytes_walked": bytes,
            "chunks": counts.chunks, "failed": cold.failed.len(),
            "cold_sync_s": cold_s, "cold_mb_per_s": bytes as f64 / 1e6 / cold_s,
            "in_memory_index_s": in_memory_s, "in_memory_mb_per_s": bytes as f64 / 1e6 / in_memory_s,
            "noop_sync_p50_ms": noop_ms, "git_status_p50_ms": git_ms, "noop_over_git": noop_ms / git_ms,
            "edit_file": target, "edits": edits,
            "edit_p50_ms": percentile(&edit_times, 0.5), "edit_p99_ms": percentile(&edit_times, 0.99),
            "verify_s": verify_s, "verify_rows": rows, "verify_rows_per_s": rows as f64 / verify_s,
            "threads": rayon_threads(),
        })
    );
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
