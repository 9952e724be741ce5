//! Replays fuzz corpora through the fuzz targets' bodies in a plain process, without
//! libFuzzer: `cargo run --release -p cfs-ingest --example replay_corpus -- CORPORA
//! [TARGET...]` (CORPORA holds a folder per target, as `.cache/fuzz/corpus`; no TARGET:
//! every folder). A defect whose effect depends on what memory the process has mapped
//! (a read past a C table that lands in libFuzzer's libstdc++ in the fuzz binary and
//! in nothing in `cfs`) passes under the fuzzer and shows here. Before each input its
//! path is written to `CORPORA/replaying`, so that if the process dies, that file names
//! the input; a run that ends removes it. Prints, per target, the inputs replayed and
//! the seconds they took.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(root) = args.first().map(PathBuf::from) else {
        eprintln!("usage: replay_corpus CORPORA [TARGET...]");
        return std::process::ExitCode::from(2);
    };
    let targets = match &args[1..] {
        [] => folders(&root),
        named => named.to_vec(),
    };
    let marker = root.join("replaying");
    let config = cfs_ingest::IngestConfig::default();
    for target in &targets {
        let started = Instant::now();
        let inputs = files(&root.join(target));
        for input in &inputs {
            let Ok(data) = std::fs::read(input) else {
                continue;
            };
            mark(&marker, input);
            cfs_ingest::fuzz::replay(target, &data, &config);
        }
        println!(
            "{target}\t{}\t{:.1}",
            inputs.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let _ = std::fs::remove_file(&marker);
    std::process::ExitCode::SUCCESS
}

/// The folders under `root`, by name.
fn folders(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The files in `dir`, by name.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.retain(|p| p.is_file());
    paths.sort();
    paths
}

/// Writes `input`'s path to `marker`, replacing what it held.
fn mark(marker: &Path, input: &Path) {
    if let Ok(mut file) = std::fs::File::create(marker) {
        let _ = writeln!(file, "{}", input.display());
    }
}
