//! Where a definition's file ranks when its bare name is searched, for names listed by
//! a source independent of cfs (`bench/definition_share.py --names`):
//!
//! `cargo run --release --bin name_lookup -- STORE_FILE < NAMES`
//!
//! NAMES holds `name<TAB>path` lines (the path relative to the store's tree). Each line
//! gives `rank<TAB>name<TAB>path`, the rank (from 1) of `path` in the hybrid file answer
//! of 10 for the query `name`, 0 when it is not there; then a summary line with the
//! names' count, the share found first and the MRR@10. Exact vectors; reads the store
//! only.

use std::io::BufRead;
use std::path::PathBuf;

use cfs_ingest::{Embedder, MiniLmInt};
use cfs_search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::Store;

fn main() {
    let file = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: name_lookup STORE_FILE < NAMES"),
    );
    let store = Store::open_read_only(&file).expect("store");
    let embedder = MiniLmInt::open_default().expect("minilm-int model file");
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).expect("index");
    let (mut n, mut first, mut rr) = (0usize, 0usize, 0f64);
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("a line");
        let Some((name, path)) = line.split_once('\t') else {
            continue;
        };
        let rank = rank_of(&index, &embedder, name, path);
        println!("{rank}\t{name}\t{path}");
        n += 1;
        first += usize::from(rank == 1);
        if rank > 0 {
            rr += 1.0 / rank as f64;
        }
    }
    let share = |x: f64| if n == 0 { 0.0 } else { x / n as f64 };
    println!(
        "names {n}, first {:.3}, mrr@10 {:.3}",
        share(first as f64),
        share(rr)
    );
}

fn rank_of(index: &SearchIndex, e: &dyn Embedder, name: &str, path: &str) -> usize {
    let query = Query::new(name.to_owned())
        .mode(Mode::Hybrid)
        .k(10)
        .exact(true);
    index
        .search_files(&query, e)
        .expect("search files")
        .iter()
        .position(|f| f.path == path)
        .map_or(0, |i| i + 1)
}
