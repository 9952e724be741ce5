//! Cold indexing against the parser, on the same files and cores in one run:
//!
//! `cargo run --release --bin index_bench -- NAME=TREE [NAME=TREE ...] [--runs N] [--vectors deferred|inline] [--only parse|memory|cold|resync] [--store FILE] [--cfs PATH]`
//!
//! For each tree, N runs (default 3) of, in turn:
//! 1. parse only: every file read and parsed the way ingestion parses it before
//!    chunking (`cfs_ingest::parse_only`: tree-sitter for code, pulldown-cmark for
//!    Markdown, serde_json, html5ever's document tree, the PDF extractor), in parallel (largest file first, one file a task, as a sync parses a
//!    group), nothing else: the physical limit;
//! 2. ingestion in memory: `cfs_ingest::index_tree` (parse, chunk, hash, embed), no store;
//! 3. cold index: `Store::sync` of the tree into a new store, as `cfs index` does.
//!    `--vectors deferred` (the default) commits chunks and text without vectors, what
//!    `cfs index` with the default minilm-int embedder has done when its text is
//!    searchable; `inline` embeds with the hash embedder in the sync.
//!
//! Prints one JSON object per tree (wall and CPU seconds of each run, medians, MB/s and
//! the ratios of the medians to parse-only) and a table line; `docs/benchmarks.md` keeps
//! the table. `--only parse|memory|cold` runs one measure alone (for a profiler); `--only resync --store FILE` syncs the tree into an existing store made with the hash embedder (an incremental sync, to profile). The store's peak memory is the process's: run one tree per process to read
//! it (`peak_rss_mb`).
//!
//! `--cfs PATH` adds what a user meets, each run a process of its own, the two
//! alternating: parse only (this program with `--only parse`, under the allocator
//! settings the `cfs` binary gives itself, `cfs-cli/src/alloc.rs`) against `PATH index
//! TREE --store NEW --no-wait --json` (the default embedder, minilm-int, whose model
//! `scripts/fetch-model` fetches; its text commit is the measure). Wall time from spawn to
//! exit; the first run of a process pays for its heap's growth, which runs in one process
//! after the first do not. With `--cfs`, every measure extracts PDFs with that binary's
//! extractor (`cfs __cfs-extract-pdf`, the child `cfs index` runs); without it, no
//! measure can and all skip them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cfs_bench::flag;
use cfs_ingest::{Format, HashEmbedder, PdfConfig, parse_only, walk};
use cfs_store::{Settings, Store, SyncOptions};
use rayon::prelude::*;
use serde_json::json;

/// CPU seconds (user + system) of this process so far.
fn cpu_seconds() -> f64 {
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    stat_seconds(11)
}

/// CPU seconds (user + system) of this process's waited-for children so far.
fn children_cpu_seconds() -> f64 {
    // cutime and cstime are fields 16 and 17 of the line, 14 and 15 after the name.
    stat_seconds(13)
}

/// The sum of two adjacent clock-tick fields of `/proc/self/stat`, in seconds; `first`
/// counts the fields after the command name (which may hold spaces).
fn stat_seconds(first: usize) -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(first) + ticks(first + 1)) / 100.0
}

/// The allocator settings of the `cfs` binary (`cfs-cli/src/alloc.rs`), as glibc's
/// environment variables: a parse-only process runs under them too. `cfs index` marks
/// its threads' heaps for transparent huge pages; glibc's `hugetlb` tunable marks those
/// and more (the main thread's heap, large allocations), so the parse only gets at least
/// what `cfs` gets.
fn cfs_malloc_env() -> [(&'static str, String); 4] {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    [
        ("MALLOC_MMAP_THRESHOLD_", "131072".into()),
        ("MALLOC_TOP_PAD_", "16777216".into()),
        ("MALLOC_ARENA_MAX", (cores + 1).to_string()),
        ("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1".into()),
    ]
}

/// Wall and CPU seconds of one child process, from spawn to exit; panics if it fails.
fn timed_process(command: &mut std::process::Command) -> (f64, f64) {
    let (wall, cpu) = (Instant::now(), children_cpu_seconds());
    let out = command.output().expect("start a process");
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (wall.elapsed().as_secs_f64(), children_cpu_seconds() - cpu)
}

/// Alternating processes: parse only, then `cfs index` into a new store; `runs` of each.
/// The parse-only processes extract PDFs with `cfs`'s extractor, as `cfs index` does.
fn bench_processes(name: &str, tree: &Path, runs: usize, cfs: &Path) -> serde_json::Value {
    let me = std::env::current_exe().expect("this program's path");
    let (mut parse, mut index) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        parse.push(timed_process(
            std::process::Command::new(&me)
                .arg(format!("{name}={}", tree.display()))
                .args(["--only", "parse", "--runs", "1", "--cfs"])
                .arg(cfs)
                .envs(cfs_malloc_env()),
        ));
        let dir = tempfile::tempdir().expect("temp dir");
        index.push(timed_process(
            std::process::Command::new(cfs)
                .arg("index")
                .arg(tree)
                .arg("--store")
                .arg(dir.path().join("store"))
                .args(["--no-wait", "--json"]),
        ));
    }
    let wall = |xs: &[(f64, f64)]| median(xs.iter().map(|x| x.0).collect());
    let cpu = |xs: &[(f64, f64)]| median(xs.iter().map(|x| x.1).collect());
    let (p, c) = (wall(&parse), wall(&index));
    eprintln!(
        "{name}: processes | parse only {p:.2} s ({:.2} CPU s) | cfs index {c:.2} s ({:.2} CPU s, {:.2}x parse)",
        cpu(&parse),
        cpu(&index),
        c / p
    );
    json!({
        "runs": {"parse_only": parse, "cfs_index": index},
        "median_wall_s": {"parse_only": p, "cfs_index": c},
        "median_cpu_s": {"parse_only": cpu(&parse), "cfs_index": cpu(&index)},
        "ratio_to_parse": c / p,
    })
}

/// Peak resident memory of this process (VmHWM), MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Wall and CPU seconds of `work`.
fn timed<T>(work: impl FnOnce() -> T) -> (f64, f64, T) {
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let out = work();
    (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu, out)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Reads and parses every file; returns (files parsed, of them code, bytes).
fn parse_tree(tree: &Path, pdf: &PdfConfig) -> (usize, usize, u64) {
    let mut files = walk(tree).expect("walk TREE").files;
    // Largest first, as a sync parses a group: no large file begun last on one core.
    files.sort_by_key(|f| std::cmp::Reverse(f.size_bytes));
    files
        .par_iter()
        .with_max_len(1)
        .map(|f| {
            let Ok(bytes) = std::fs::read(&f.abs_path) else {
                return (0, 0, 0);
            };
            match parse_only(&f.rel_path, &bytes, pdf) {
                Some(Format::Code(_)) => (1, 1, bytes.len() as u64),
                Some(_) => (1, 0, bytes.len() as u64),
                None => (0, 0, 0),
            }
        })
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2))
}

/// When a cold index's phases ended, in seconds from its start: the walk, the last file
/// done with (parsed and staged), the start of the last commit, the end.
#[derive(Clone, Copy, Debug, Default)]
struct Phases {
    walked: f64,
    last_file: f64,
    last_commit: f64,
    end: f64,
}

/// A cold index of `tree` into a new store; returns the chunks committed and when its
/// phases ended.
fn cold_index(tree: &Path, inline: bool, pdf: &PdfConfig) -> (u64, Phases) {
    let start = Instant::now();
    let phases = std::sync::Mutex::new(Phases::default());
    let note = |event: cfs_store::SyncProgress<'_>| {
        let at = start.elapsed().as_secs_f64();
        if let Ok(mut p) = phases.lock() {
            match event {
                cfs_store::SyncProgress::Found { .. } => p.walked = at,
                cfs_store::SyncProgress::File(_) => p.last_file = at,
                cfs_store::SyncProgress::Committing => p.last_commit = at,
            }
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let embedder = HashEmbedder::default();
    let mut options = SyncOptions {
        defer_embeddings: !inline,
        ..SyncOptions::default()
    };
    options.config.pdf = pdf.clone();
    let settings = Settings {
        chunk: options.config.chunk,
        model_id: cfs_ingest::Embedder::model_id(&embedder).into(),
    };
    let store = Store::create(&dir.path().join("store.redb"), settings).expect("store");
    store
        .sync(tree, &options, &embedder, &note)
        .expect("cold index");
    let mut phases = phases.into_inner().unwrap_or_default();
    phases.end = start.elapsed().as_secs_f64();
    let chunks = store
        .begin_read()
        .expect("read")
        .counts()
        .expect("counts")
        .chunks;
    drop(store);
    (chunks, phases)
}

/// One measure alone, for a profiler.
enum Only {
    Parse,
    Memory,
    Cold,
    /// A sync of the tree into this existing store (`--store FILE`, made with the hash
    /// embedder), in this process: an incremental sync to profile.
    Resync(PathBuf),
}

/// Syncs `tree` into the existing store `file` with the hash embedder, its vectors in
/// the sync; returns the files updated.
fn resync(tree: &Path, file: &Path) -> usize {
    let store = Store::open(file).expect("open --store");
    let options = SyncOptions::default();
    store
        .sync(tree, &options, &HashEmbedder::default(), &|_| {})
        .expect("sync")
        .updated
}

/// What one tree's measures are run with.
struct TreeRun<'a> {
    runs: usize,
    inline: bool,
    only: Option<&'a Only>,
    pdf: PdfConfig,
}

fn bench_tree(name: &str, tree: &Path, run: &TreeRun<'_>) -> serde_json::Value {
    let TreeRun {
        runs,
        inline,
        only,
        ref pdf,
    } = *run;
    let mut options = SyncOptions::default();
    options.config.pdf = pdf.clone();
    let embedder = HashEmbedder::default();
    let (mut parse, mut memory, mut cold) = (Vec::new(), Vec::new(), Vec::new());
    let mut phases: Vec<Phases> = Vec::new();
    let (mut files, mut code_files, mut bytes, mut chunks) = (0, 0, 0, 0);
    for _ in 0..runs {
        let in_memory = || {
            cfs_ingest::index_tree(tree, &options.config, &options.registry, &embedder, &|_| {})
                .expect("in-memory index")
        };
        match only {
            Some(Only::Cold) => {
                let (wall, cpu, (n, p)) = timed(|| cold_index(tree, inline, pdf));
                eprintln!("{name}: cold index {wall:.2} s, {cpu:.2} CPU s, {n} chunks, {p:?}");
                continue;
            }
            Some(Only::Parse) => {
                let (wall, cpu, _) = timed(|| parse_tree(tree, pdf));
                eprintln!("{name}: parse only {wall:.2} s, {cpu:.2} CPU s");
                continue;
            }
            Some(Only::Memory) => {
                let (wall, cpu, _) = timed(in_memory);
                eprintln!("{name}: in memory {wall:.2} s, {cpu:.2} CPU s");
                continue;
            }
            Some(Only::Resync(file)) => {
                let (wall, cpu, updated) = timed(|| resync(tree, file));
                eprintln!("{name}: resync {wall:.2} s, {cpu:.2} CPU s, {updated} files updated");
                continue;
            }
            None => {}
        }
        let (wall, cpu, (n, code, b)) = timed(|| parse_tree(tree, pdf));
        (files, code_files, bytes) = (n, code, b);
        parse.push((wall, cpu));
        let (wall, cpu, _) = timed(in_memory);
        memory.push((wall, cpu));
        let (wall, cpu, (n, p)) = timed(|| cold_index(tree, inline, pdf));
        chunks = n;
        cold.push((wall, cpu));
        phases.push(p);
    }
    if only.is_some() {
        return json!({"tree": name, "peak_rss_mb": peak_rss_mb()});
    }
    let wall = |xs: &[(f64, f64)]| median(xs.iter().map(|x| x.0).collect());
    let cpu = |xs: &[(f64, f64)]| median(xs.iter().map(|x| x.1).collect());
    let mb = bytes as f64 / 1e6;
    let (p, m, c) = (wall(&parse), wall(&memory), wall(&cold));
    eprintln!(
        "{name}: {files} files ({code_files} code), {mb:.1} MB, {chunks} chunks | parse {p:.2} s \
         ({:.1} MB/s) | in-memory {m:.2} s ({:.2}x) | cold index {c:.2} s ({:.1} MB/s, {:.2}x parse)",
        mb / p,
        m / p,
        mb / c,
        c / p
    );
    json!({
        "tree": name,
        "path": tree.display().to_string(),
        "files_parsed": files,
        "code_files": code_files,
        "mb": mb,
        "chunks": chunks,
        "vectors": if inline { "inline" } else { "deferred" },
        "runs": {"parse_only": parse, "in_memory": memory, "cold_index": cold},
        "median_wall_s": {"parse_only": p, "in_memory": m, "cold_index": c},
        "median_cpu_s": {"parse_only": cpu(&parse), "in_memory": cpu(&memory), "cold_index": cpu(&cold)},
        "mb_per_s": {"parse_only": mb / p, "in_memory": mb / m, "cold_index": mb / c},
        "ratio_to_parse": {"in_memory": m / p, "cold_index": c / p},
        "cold_phases_s": phases.iter().map(|p| json!({
            "walked": p.walked, "last_file": p.last_file, "last_commit": p.last_commit, "end": p.end,
        })).collect::<Vec<_>>(),
        "peak_rss_mb": peak_rss_mb(),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| flag(&args, name);
    let runs: usize = get("--runs").map_or(3, |v| v.parse().expect("--runs N"));
    let inline = match get("--vectors").as_deref() {
        None | Some("deferred") => false,
        Some("inline") => true,
        Some(other) => panic!("--vectors deferred|inline, not {other}"),
    };
    let only = match get("--only").as_deref() {
        None => None,
        Some("cold") => Some(Only::Cold),
        Some("parse") => Some(Only::Parse),
        Some("memory") => Some(Only::Memory),
        Some("resync") => Some(Only::Resync(
            get("--store")
                .map(PathBuf::from)
                .expect("--only resync needs --store FILE"),
        )),
        Some(other) => panic!("--only parse|memory|cold|resync, not {other}"),
    };
    let trees: Vec<(String, PathBuf)> = args
        .iter()
        .filter_map(|a| a.split_once('='))
        .map(|(name, path)| (name.to_owned(), PathBuf::from(path)))
        .collect();
    assert!(
        !trees.is_empty(),
        "usage: index_bench NAME=TREE [NAME=TREE ...] [--runs N]"
    );
    let cfs = get("--cfs").map(PathBuf::from);
    // PDFs go to `cfs`'s extractor when it is given, in every measure; without it no
    // measure can extract them and all skip them.
    let pdf = match &cfs {
        Some(cfs) => PdfConfig {
            program: Some(cfs.clone()),
            args: vec!["__cfs-extract-pdf".into()],
            ..PdfConfig::default()
        },
        None => PdfConfig::default(),
    };
    let run = TreeRun {
        runs,
        inline,
        only: only.as_ref(),
        pdf,
    };
    let results: Vec<_> = trees
        .iter()
        .map(|(name, tree)| {
            let mut result = bench_tree(name, tree, &run);
            if let (Some(cfs), None) = (&cfs, &only) {
                result["processes"] = bench_processes(name, tree, runs, cfs);
            }
            result
        })
        .collect();
    println!(
        "{}",
        serde_json::to_string_pretty(
            &json!({"threads": rayon::current_num_threads(), "trees": results})
        )
        .expect("json")
    );
}
