//! One-file edit to searchable with the minilm-int embedder, text first:
//!
//! `cargo run --release --bin edit_bench -- SRC --bytes N [--edits N] [--store DIR]`
//!
//! Builds search_bench's corpus of SRC up to N bytes into a minilm-int store (text
//! first, then every vector; `--store DIR` keeps the tree and store there and reuses them
//! on the next run), opens the runtime index, then for each edit appends a new small
//! function with a new word to one file and times, from the write of the file:
//! - text-searchable: the scoped sync (text commit, vectors deferred), the snapshot
//!   refresh, and a text search that finds the new word in that file;
//! - vector-searchable: then the embedding of the new texts and its commit, the refresh,
//!   and a vector search for the new function's text that has its chunk in the top 10.
//!
//! Prints one JSON object (p50/p99 of each, the chunks of the store).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cfs_bench::{make_corpus, percentile};
use cfs_ingest::{Embedder, MiniLmInt, Scope};
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::{EmbedOptions, Settings, Store, SyncOptions};
use serde_json::json;

struct Args {
    src: PathBuf,
    bytes: u64,
    edits: usize,
    keep: Option<PathBuf>,
}

fn args() -> Args {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        src: PathBuf::from(it.next().expect("usage: edit_bench SRC --bytes N")),
        bytes: 20 << 20,
        edits: 20,
        keep: None,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().expect("a value");
        match flag.as_str() {
            "--bytes" => a.bytes = value().parse().expect("--bytes N"),
            "--edits" => a.edits = value().parse().expect("--edits N"),
            "--store" => a.keep = Some(PathBuf::from(value())),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// The tree and its store, embedded to the end (made on first use of `dir`).
fn tree_and_store(a: &Args, dir: &std::path::Path, embedder: &MiniLmInt) -> (PathBuf, Store) {
    let tree = dir.join("tree");
    let file = tree.join(".cfs/store.redb");
    let options = SyncOptions {
        defer_embeddings: true,
        ..SyncOptions::default()
    };
    let store = if file.is_file() {
        Store::open(&file).expect("open the store")
    } else {
        make_corpus(&a.src, &tree, a.bytes);
        let settings = Settings {
            chunk: options.config.chunk,
            model_id: embedder.model_id().into(),
        };
        let store = Store::create(&file, settings).expect("create the store");
        store
            .sync(&tree, &options, embedder, &|_| {})
            .expect("text");
        store
    };
    let started = Instant::now();
    let report = store
        .embed_pending(embedder, &EmbedOptions::default(), &|_| {})
        .expect("vectors");
    if report.chunks > 0 {
        eprintln!(
            "embedded {} chunks in {:.0} s",
            report.chunks,
            started.elapsed().as_secs_f64()
        );
    }
    (tree, store)
}

/// `digits` spelled with the letters a-j after "quokka".
fn letters(digits: &str) -> String {
    let spelled: String = digits
        .chars()
        .map(|c| (b'a' + c.to_digit(10).unwrap_or(0) as u8) as char)
        .collect();
    format!("quokka{spelled}")
}

fn main() {
    let a = args();
    let embedder = MiniLmInt::open_default().expect("the minilm-int model file");
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = a.keep.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let (tree, store) = tree_and_store(&a, &dir, &embedder);
    let options = SyncOptions {
        defer_embeddings: true,
        ..SyncOptions::default()
    };
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).expect("index");
    let chunks = index.snapshot().n_chunks();
    let files = cfs_ingest::walk(&tree).expect("walk").files;
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (mut text_lat, mut vec_lat) = (Vec::new(), Vec::new());
    // Per phase: sync, refresh, text search, embed, refresh, vector search.
    let mut phases: Vec<Vec<Duration>> = vec![Vec::new(); 6];
    let mut lap = |i: usize, t: &mut Instant| {
        phases[i].push(t.elapsed());
        *t = Instant::now();
    };
    for i in 0..a.edits {
        let f = &files[(i * 7919 + 11) % files.len()];
        // A word of letters no earlier run used: the new text is never in the cache.
        let word = letters(&format!("{run}{i:03}"));
        let function = format!(
            "\n/// Counts the {word} entries of a ledger by their owner.\n\
             pub fn count_{word}(ledger: &[u32]) -> usize {{ ledger.len() }}\n"
        );
        let mut text = std::fs::read_to_string(&f.abs_path).expect("read");
        text.push_str(&function);
        let t0 = Instant::now();
        std::fs::write(&f.abs_path, text).expect("write");
        let mut t = t0;
        let scope = Scope::new([&f.rel_path]);
        let report = store
            .sync_paths(&tree, &scope, &options, &embedder, &|_| {})
            .expect("sync");
        lap(0, &mut t);
        index.refresh(&store).expect("refresh");
        lap(1, &mut t);
        let hits = index
            .search(&Query::new(word.clone()).mode(Mode::Text).k(1), &embedder)
            .expect("text search");
        lap(2, &mut t);
        assert!(hits.first().is_some_and(|h| h.path == f.rel_path), "text");
        text_lat.push(t0.elapsed());
        // What the watcher does after a scoped sync: exactly the deferred chunks.
        store
            .embed_chunks(
                &embedder,
                &report.deferred_chunks,
                &EmbedOptions::default(),
                &|_| {},
            )
            .expect("embed");
        lap(3, &mut t);
        index.refresh(&store).expect("refresh");
        lap(4, &mut t);
        // Searchable by vector: the edited file's new chunk is among the 10 nearest to
        // the new function's text (an older chunk of similar code may rank first).
        let hits = index
            .search(
                &Query::new(function.trim()).mode(Mode::Vector).k(10),
                &embedder,
            )
            .expect("vector search");
        lap(5, &mut t);
        assert!(
            hits.iter()
                .any(|h| h.path == f.rel_path && h.text.contains(&word)),
            "vector"
        );
        vec_lat.push(t0.elapsed());
    }
    text_lat.sort();
    vec_lat.sort();
    let names = [
        "sync",
        "refresh",
        "text search",
        "embed",
        "refresh 2",
        "vector search",
    ];
    let phase_p50: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .zip(phases.iter_mut())
        .map(|(name, v)| {
            v.sort();
            (
                name.to_string(),
                json!((percentile(v, 0.5) * 10.0).round() / 10.0),
            )
        })
        .collect();
    let ms = |v: &[Duration], p| (percentile(v, p) * 10.0).round() / 10.0;
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "chunks": chunks,
            "edits": a.edits,
            "text_searchable_ms": {"p50": ms(&text_lat, 0.5), "p99": ms(&text_lat, 0.99)},
            "vector_searchable_ms": {"p50": ms(&vec_lat, 0.5), "p99": ms(&vec_lat, 0.99)},
            "phase_p50_ms": phase_p50,
        }))
        .expect("JSON")
    );
}
