//! Live reindexing benchmarks on search_bench's corpus:
//!
//! `cargo run --release --bin watch_bench -- SRC --bytes N [--saves N]`
//!
//! 1. save to searchable: append a new word to one file, then time until a search of
//!    the refreshed index finds it (event, debounce, sync, commit, refresh, query);
//! 2. checkout storm: rewrite 2,000 files at once, then time until all are synced, and
//!    count the commits it took.
//!
//! Prints one JSON object.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use cfs_bench::{make_corpus, new_store, percentile};
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::watch::{WatchEvent, WatchSettings, watch};
use serde_json::json;

fn main() {
    let mut args = std::env::args().skip(1);
    let src = PathBuf::from(args.next().expect("usage: watch_bench SRC --bytes N"));
    let (mut budget, mut saves) = (20u64 << 20, 30usize);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bytes" => budget = args.next().and_then(|n| n.parse().ok()).expect("--bytes N"),
            "--saves" => saves = args.next().and_then(|n| n.parse().ok()).expect("--saves N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = dir.path().join("tree");
    make_corpus(&src, &tree, budget);
    // The store inside the tree, as `cfs index` puts it: its own writes make events.
    let (store, embedder, options) = new_store(&tree.join(".cfs/store.redb"));
    let store = Arc::new(store);
    store
        .sync(&tree, &options, &embedder, &|_| {})
        .expect("first sync");
    // The sync alone: one edited file through sync_paths, no watcher.
    let files = cfs_ingest::walk(&tree).expect("walk").files;
    let mut direct = Vec::new();
    for i in 0..20 {
        let f = &files[(i * 4099 + 17) % files.len()];
        let mut text = std::fs::read_to_string(&f.abs_path).expect("read");
        text.push_str(&format!("\n// direct edit {i}\n"));
        std::fs::write(&f.abs_path, text).expect("write");
        let t = Instant::now();
        let w = cfs_ingest::walk_scope(&tree, Some(&cfs_ingest::Scope::new([&f.rel_path])))
            .expect("walk");
        if std::env::var_os("CFS_PROBE").is_some() {
            eprintln!("walk_scope {:?} ({} files)", t.elapsed(), w.files.len());
        }
        let t = Instant::now();
        store
            .sync_paths(
                &tree,
                &cfs_ingest::Scope::new([&f.rel_path]),
                &options,
                &embedder,
                &|_| {},
            )
            .expect("sync_paths");
        direct.push(t.elapsed());
        if std::env::var_os("CFS_PROBE").is_some() {
            eprintln!("sync_paths {:?}", t.elapsed());
        }
    }
    direct.sort();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<(usize, usize)>();
    let watcher = {
        let (store, stop, options, embedder, tree) = (
            Arc::clone(&store),
            Arc::clone(&stop),
            options.clone(),
            embedder.clone(),
            tree.clone(),
        );
        std::thread::spawn(move || {
            let mut on_event = |e: WatchEvent| {
                if let WatchEvent::Synced { report, .. } = e {
                    let _ = tx.send((report.commits, report.added + report.updated));
                }
            };
            watch(
                &store,
                &tree,
                &options,
                &embedder,
                &WatchSettings::default(),
                &stop,
                &mut on_event,
            )
            .expect("watch");
        })
    };
    rx.recv().expect("first sync");
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).expect("index");
    let chunks = index.snapshot().n_chunks();

    // 1. Save to searchable.
    let mut latencies = Vec::new();
    for i in 0..saves {
        let f = &files[(i * 7919) % files.len()];
        let mut text = std::fs::read_to_string(&f.abs_path).expect("read");
        // One token of letters only, found in no other file.
        let word: String = format!("zq{i:04}wombat")
            .chars()
            .map(|c| {
                if c.is_ascii_digit() {
                    (b'a' + c as u8 - b'0') as char
                } else {
                    c
                }
            })
            .collect();
        text.push_str(&format!("\n// {word}\n"));
        let t0 = Instant::now();
        std::fs::write(&f.abs_path, text).expect("write");
        loop {
            let _ = rx.recv_timeout(Duration::from_millis(5));
            index.refresh(&store).expect("refresh");
            let hits = index
                .search(&Query::new(word.clone()).mode(Mode::Text).k(1), &embedder)
                .expect("search");
            if hits.first().is_some_and(|h| h.path == f.rel_path) {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "never searchable");
        }
        latencies.push(t0.elapsed());
    }
    latencies.sort();

    // 2. Checkout storm: 2,000 files rewritten at once.
    while rx.try_recv().is_ok() {}
    let storm: Vec<_> = files.iter().take(2000).collect();
    let t0 = Instant::now();
    for (i, f) in storm.iter().enumerate() {
        let mut text = std::fs::read_to_string(&f.abs_path).expect("read");
        text.push_str(&format!("\n// storm {i}\n"));
        std::fs::write(&f.abs_path, text).expect("write");
    }
    let written = t0.elapsed();
    let (mut commits, mut synced, mut batches) = (0, 0, 0);
    while synced < storm.len() {
        let (c, n) = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("storm sync");
        commits += c;
        synced += n;
        batches += 1;
    }
    let storm_s = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    watcher.join().expect("watcher");
    let out = json!({
        "chunks": chunks,
        "files": files.len(),
        "one_file_sync_paths_ms": {"p50": percentile(&direct, 0.5), "p99": percentile(&direct, 0.99)},
        "save_to_searchable_ms": {"p50": percentile(&latencies, 0.5), "p99": percentile(&latencies, 0.99), "n": latencies.len()},
        "checkout_storm": {"files": storm.len(), "write_s": written.as_secs_f64(), "to_committed_s": storm_s, "batches": batches, "commits": commits},
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("json"));
}
