//! `cfs demo [PATH]`: the whole pipeline on a folder, in memory.
//!
//! Walks and indexes the folder (the cfs sources by default), prints the counts and the
//! state root, rebuilds it on one thread from the files in reverse order to show that
//! the root does not change, answers a query by exact search over the integer vectors,
//! and proves the best hit's inclusion in the state, checking the proof offline.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use cfs_core::{Canonical, ChunkProof, DocumentId};
use std::collections::HashMap;
use std::sync::Mutex;

use cfs_ingest::{EmbedError, Embedder, Registry, TreeIndex, index_walk, walk};
use schemars::JsonSchema;
use serde::Serialize;

use crate::chunks::human_bytes;
use crate::open::EmbedderChoice;
use crate::output::progress;
use crate::report::{Report, emit};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Folder to index (default: the cfs sources this binary was built from).
    path: Option<PathBuf>,
    /// Query answered by exact vector search.
    #[arg(long, default_value = "prove that a chunk is in the committed state")]
    query: String,
    /// Results to show.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// The embedder.
    #[arg(long, value_enum, default_value = "minilm-int")]
    embedder: EmbedderChoice,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// An embedder that remembers every vector by text, so that the second, reversed run
/// costs no model time (the vectors' own determinism across threads and SIMD levels is
/// held by the test suite).
struct Memo<'a> {
    inner: &'a dyn Embedder,
    vectors: Mutex<HashMap<String, Vec<i16>>>,
}

impl Embedder for Memo<'_> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, EmbedError> {
        let known: Vec<Option<Vec<i16>>> = {
            let memo = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
            texts.iter().map(|t| memo.get(*t).cloned()).collect()
        };
        let missing: Vec<&str> = texts
            .iter()
            .zip(&known)
            .filter(|(_, k)| k.is_none())
            .map(|(t, _)| *t)
            .collect();
        let mut fresh = self.inner.embed_batch(&missing)?.into_iter();
        let mut memo = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
        Ok(texts
            .iter()
            .zip(known)
            .map(|(t, k)| {
                k.unwrap_or_else(|| {
                    let v = fresh.next().unwrap_or_default();
                    memo.insert((*t).to_owned(), v.clone());
                    v
                })
            })
            .collect())
    }
    fn fusion_weight(&self) -> u32 {
        self.inner.fusion_weight()
    }
}

fn default_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

struct Hit {
    score: i64,
    chunk: cfs_core::ChunkId,
}

/// Exact search: dot products of i16 vectors in i64, ties broken by chunk id.
fn exact_search(index: &TreeIndex, query: &[i16], k: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = index
        .state
        .embeddings()
        .values()
        .map(|e| Hit {
            score: e
                .vector
                .iter()
                .zip(query)
                .map(|(a, b)| i64::from(*a) * i64::from(*b))
                .sum(),
            chunk: e.chunk_id,
        })
        .collect();
    hits.sort_by(|a, b| b.score.cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
    hits.truncate(k);
    hits
}

fn paths_of(index: &TreeIndex, document: DocumentId) -> Vec<String> {
    index
        .state
        .paths()
        .values()
        .filter(|p| p.document_id == document)
        .map(|p| p.path.clone())
        .collect()
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let root = match &args.path {
        Some(p) => p.clone(),
        None => default_root(),
    };
    let root = root.canonicalize().with_context(|| {
        format!(
            "cannot open {} (pass a folder: cfs demo PATH)",
            root.display()
        )
    })?;
    let model = args.embedder.load()?;
    let embedder = Memo {
        inner: &*model,
        vectors: Mutex::new(HashMap::new()),
    };
    let shown = demonstrate(&root, args, &embedder)?;
    let report = DemoReport::new(&shown, &root, args, embedder.model_id());
    emit(&report, args.json)
}

/// What the demo found: the index, how long it took, whether the root held, the hits
/// of the query and the proof of the first.
struct Shown {
    index: TreeIndex,
    elapsed: std::time::Duration,
    same_root: bool,
    hits: Vec<DemoHit>,
    proof: Option<ChunkProof>,
    proof_ok: Option<bool>,
    problems: Vec<String>,
}

/// Indexes `root` in memory, checks the root against the files in reverse order on
/// one thread, runs the query and proves its first hit.
fn demonstrate(root: &Path, args: &Args, embedder: &Memo<'_>) -> anyhow::Result<Shown> {
    let config = crate::open::ingest_config();
    let started = Instant::now();
    let walked = walk(root)?;
    let files_in_order: Vec<_> = walked.files.clone();
    let bar = progress(walked.files.len() as u64, args.json, "indexing");
    let registry = Registry::load(&root.join(".cfs").join("collections.yaml"))?;
    let index = index_walk(walked, &config, &registry, embedder, &|_| bar.inc(1))?;
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let root_hash = index.state.state_root();

    // Determinism: the files in reverse order, on one thread, give the same root.
    let reversed = cfs_ingest::Walk {
        files: files_in_order.into_iter().rev().collect(),
        ..cfs_ingest::Walk::default()
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let again = pool.install(|| index_walk(reversed, &config, &registry, embedder, &|_| {}))?;
    let same_root = again.state.state_root() == root_hash;
    if !same_root {
        bail!("the state root changed with file order and thread count: a determinism bug");
    }

    let query = embedder
        .embed_batch(&[args.query.as_str()])?
        .pop()
        .unwrap_or_default();
    let found = exact_search(&index, &query, args.k);
    let proof: Option<ChunkProof> = found
        .first()
        .and_then(|h| index.state.prove_chunk(&h.chunk));
    let proof_ok = proof.as_ref().map(|p| p.verify(&root_hash).is_ok());
    let hits = found
        .iter()
        .filter_map(|h| {
            let chunk = index.state.chunks().get(&h.chunk)?;
            Some(DemoHit {
                paths: paths_of(&index, chunk.document_id),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                score: h.score,
                chunk_id: chunk.id.to_string(),
                text: chunk.text.clone(),
            })
        })
        .collect();
    let problems = index.state.check_integrity();
    Ok(Shown {
        index,
        elapsed,
        same_root,
        hits,
        proof,
        proof_ok,
        problems,
    })
}

/// What `cfs demo` answers.
#[derive(Serialize, JsonSchema)]
pub struct DemoReport {
    /// The folder indexed.
    root: String,
    files: usize,
    bytes: u64,
    seconds: f64,
    errors: Vec<String>,
    paths: usize,
    documents: usize,
    chunks: usize,
    embeddings: usize,
    edges: usize,
    state_root: String,
    table_roots: TableRootsJson,
    same_root_reversed_single_thread: bool,
    integrity_problems: Vec<String>,
    query: String,
    results: Vec<DemoHit>,
    /// Null when the folder has no chunks.
    proof: Option<DemoProof>,
    /// For the text form: the embedder and the threads the index ran on.
    #[serde(skip)]
    model_id: String,
    #[serde(skip)]
    threads: usize,
}

/// The root of each table of the state.
#[derive(Serialize, JsonSchema)]
struct TableRootsJson {
    paths: String,
    documents: String,
    chunks: String,
    embeddings: String,
    edges: String,
}

/// A chunk the query found.
#[derive(Clone, Serialize, JsonSchema)]
struct DemoHit {
    paths: Vec<String>,
    start_line: u32,
    end_line: u32,
    score: i64,
    chunk_id: String,
    text: String,
}

/// The inclusion proof of the best hit.
#[derive(Serialize, JsonSchema)]
struct DemoProof {
    chunk_id: String,
    bytes: usize,
    verified: Option<bool>,
}

impl DemoReport {
    fn new(shown: &Shown, root: &Path, args: &Args, model_id: &str) -> Self {
        let (index, roots) = (&shown.index, shown.index.state.table_roots());
        let state = &index.state;
        Self {
            root: root.display().to_string(),
            files: index.n_files,
            bytes: index.n_bytes,
            seconds: shown.elapsed.as_secs_f64(),
            errors: index.errors.iter().map(|e| e.to_string()).collect(),
            paths: state.paths().len(),
            documents: state.documents().len(),
            chunks: state.chunks().len(),
            embeddings: state.embeddings().len(),
            edges: state.edges().len(),
            state_root: roots.state_root().to_hex(),
            table_roots: TableRootsJson {
                paths: roots.paths.to_hex(),
                documents: roots.documents.to_hex(),
                chunks: roots.chunks.to_hex(),
                embeddings: roots.embeddings.to_hex(),
                edges: roots.edges.to_hex(),
            },
            same_root_reversed_single_thread: shown.same_root,
            integrity_problems: shown.problems.clone(),
            query: args.query.clone(),
            results: shown.hits.clone(),
            proof: shown.proof.as_ref().map(|p| DemoProof {
                chunk_id: p.chunk.id.to_string(),
                bytes: p.encode().len(),
                verified: shown.proof_ok,
            }),
            model_id: model_id.to_owned(),
            threads: rayon::current_num_threads(),
        }
    }

    /// The hits, a line each with the first line of their text, and the proof.
    fn write_hits(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for (rank, h) in self.results.iter().enumerate() {
            let first_line = h.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            writeln!(
                out,
                "  {}. {} lines {}-{}  score {}\n     {}",
                rank + 1,
                h.paths.first().map_or("?", String::as_str),
                h.start_line,
                h.end_line,
                h.score,
                first_line.trim()
            )?;
        }
        if let Some(DemoProof {
            chunk_id,
            bytes,
            verified: Some(ok),
        }) = &self.proof
        {
            writeln!(
                out,
                "\ninclusion proof of chunk {chunk_id}: {bytes} bytes, verified against the state root: {ok}"
            )?;
        }
        Ok(())
    }
}

impl Report for DemoReport {
    /// The proof verified (or there was none to make) and the state is sound.
    fn ok(&self) -> bool {
        self.proof
            .as_ref()
            .is_none_or(|p| p.verified != Some(false))
            && self.integrity_problems.is_empty()
    }

    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let seconds = self.seconds;
        let mb_per_s = self.bytes as f64 / 1e6 / seconds.max(1e-9);
        writeln!(out, "indexed {}", self.root)?;
        writeln!(
            out,
            "  {} files, {} in {seconds:.2} s ({mb_per_s:.1} MB/s on {} threads)",
            self.files,
            human_bytes(self.bytes),
            self.threads
        )?;
        writeln!(
            out,
            "  {} paths, {} documents, {} chunks, {} embeddings, {} edges",
            self.paths, self.documents, self.chunks, self.embeddings, self.edges
        )?;
        if !self.errors.is_empty() {
            writeln!(out, "  {} files not indexed:", self.errors.len())?;
            for e in self.errors.iter().take(5) {
                writeln!(out, "    {e}")?;
            }
        }
        writeln!(out, "state root {}", self.state_root)?;
        writeln!(
            out,
            "  same root from the files in reverse order on 1 thread: {}",
            self.same_root_reversed_single_thread
        )?;
        let integrity = if self.integrity_problems.is_empty() {
            "sound".to_string()
        } else {
            format!("{:?}", self.integrity_problems)
        };
        writeln!(out, "  integrity: {integrity}")?;
        writeln!(
            out,
            "\nquery {:?} (exact search, {}):",
            self.query, self.model_id
        )?;
        self.write_hits(out)
    }
}
