//! Walk-only timing on a tree, to split a no-op re-sync into its parts:
//! `cargo run --release --bin walk_bench -- TREE`.

use std::time::Instant;

fn main() {
    let tree = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: walk_bench TREE"));
    let mut times = Vec::new();
    let mut n = 0;
    for _ in 0..7 {
        let t = Instant::now();
        n = cfs_ingest::walk(&tree).expect("walk").files.len();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!("{{\"files\": {n}, \"walk_p50_ms\": {:.1}}}", times[3]);
}
