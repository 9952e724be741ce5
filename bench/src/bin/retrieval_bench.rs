//! Retrieval quality of an embedder on the labelled code-search suite:
//!
//! `cargo run --release --bin retrieval_bench -- SRC --bytes N [--lang L] [--embedder E] [--weights W,..] [--queries N] [--store DIR]`
//! `cargo run --release --bin retrieval_bench -- SRC --bytes N --dump FILE`
//!
//! The suite (L = `rust`, the default) is `cfs_bench::make_corpus`: the first N bytes of
//! SRC's Rust files with their outer doc comments removed; each removed comment that
//! documents a named item is a query whose answer is that item's chunk. L = `python` is
//! `make_python_corpus`, the same with the docstrings of top-level functions and classes. E is `hash`, `minilm-int` (default) or
//! `table:FILE`, vectors made elsewhere (JSON lines of `text` and `vector`, e.g. the float
//! model's, from `bench/float_vectors.py`). The corpus is synced into a store with E,
//! then every query runs as text, vector and hybrid search (exact vectors) at each fusion
//! weight W (percent; default: 0,25,50,100,150,200 and the embedder's own). `--dump`
//! writes instead every text E would embed (chunks and queries) with its minilm-int token
//! ids, for `bench/float_vectors.py`. Prints one JSON object.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

use cfs_bench::{Label, flag, is_target, make_corpus, make_python_corpus};
use cfs_ingest::{
    EmbedError, Embedder, HashEmbedder, IngestConfig, MiniLmInt, Registry, embedding_text,
    index_tree,
};
use cfs_store::search::{IndexOptions, Mode, Query, SearchIndex};
use cfs_store::{EmbedOptions, EmbedProgress, Settings, Store, SyncOptions};
use serde_json::json;

/// Vectors computed elsewhere, looked up by text.
struct TableEmbedder {
    id: String,
    vectors: HashMap<String, Vec<i16>>,
    dimension: usize,
}

impl TableEmbedder {
    fn load(path: &str) -> Self {
        let file = std::fs::File::open(path).expect("table file");
        let mut vectors = HashMap::new();
        for line in std::io::BufReader::new(file).lines() {
            let v: serde_json::Value = serde_json::from_str(&line.expect("line")).expect("JSON");
            let vector: Vec<i16> = serde_json::from_value(v["vector"].clone()).expect("vector");
            vectors.insert(v["text"].as_str().expect("text").to_owned(), vector);
        }
        let dimension = vectors.values().next().map_or(0, Vec::len);
        Self {
            id: format!("table {path}"),
            vectors,
            dimension,
        }
    }
}

impl Embedder for TableEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, EmbedError> {
        texts
            .iter()
            .map(|t| {
                self.vectors
                    .get(*t)
                    .cloned()
                    .ok_or_else(|| EmbedError::Model {
                        model: self.id.clone(),
                        reason: format!("no vector for {:?}", &t[..t.len().min(60)]),
                    })
            })
            .collect()
    }
}

fn quality(
    index: &SearchIndex,
    e: &dyn Embedder,
    labels: &[Label],
    mode: Mode,
    w: Option<u32>,
) -> serde_json::Value {
    let (mut found, mut rr) = (0usize, 0.0);
    for label in labels {
        let mut q = Query::new(label.query.clone()).mode(mode).k(10);
        q.exact = true;
        q.vector_weight = w;
        let hits = index.search(&q, e).expect("search");
        if let Some(rank) = hits.iter().position(|h| is_target(h, label)) {
            found += 1;
            rr += 1.0 / (rank as f64 + 1.0);
        }
    }
    let n = labels.len().max(1) as f64;
    json!({"recall_at_10": found as f64 / n, "mrr": rr / n})
}

/// `--twins`: how many labels' target chunks have a byte-identical twin elsewhere in the
/// corpus (a vendored copy, the same helper in two packages), and text and vector
/// Recall@10 when a twin of the target counts as the target.
fn twins(index: &SearchIndex, e: &dyn Embedder, labels: &[Label]) -> serde_json::Value {
    let snap = index.snapshot();
    let mut count: HashMap<String, usize> = HashMap::new();
    for id in snap.chunk_ids() {
        if let Ok(Some(text)) = snap.chunk_text(&id) {
            *count.entry(text).or_default() += 1;
        }
    }
    let target_text = |label: &Label| -> Option<String> {
        let chunk = snap.chunks_at_path(&label.path).into_iter().find(|c| {
            let paths: Vec<&str> = c.doc.paths.iter().map(|p| &*p.path).collect();
            cfs_bench::is_target_parts(&paths, c.symbol.as_deref(), label)
        })?;
        snap.chunk_text(&chunk.id).ok().flatten()
    };
    let (mut with_twin, mut found) = (0usize, 0usize);
    let mut hits = BTreeMap::new();
    for mode in [Mode::Text, Mode::Vector] {
        let (mut strict, mut lenient) = (0usize, 0usize);
        for label in labels {
            let Some(text) = target_text(label) else {
                continue;
            };
            if mode == Mode::Text {
                found += 1;
                with_twin += usize::from(count.get(&text).copied().unwrap_or(0) > 1);
            }
            let mut q = Query::new(label.query.clone()).mode(mode).k(10);
            q.exact = true;
            let got = index.search(&q, e).expect("search");
            strict += usize::from(got.iter().any(|h| is_target(h, label)));
            lenient += usize::from(got.iter().any(|h| is_target(h, label) || h.text == text));
        }
        let n = found.max(1) as f64;
        hits.insert(
            format!("{mode:?}"),
            json!({"recall_at_10": strict as f64 / n, "twin_counts_recall_at_10": lenient as f64 / n}),
        );
    }
    json!({"labels": labels.len(), "targets_found": found, "targets_with_twin": with_twin, "by_mode": hits})
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str| flag(&args, name);
    let src = PathBuf::from(args.get(1).expect("SRC"));
    let budget: u64 = get("--bytes").map_or(4 << 20, |v| v.parse().expect("--bytes N"));
    // `--store DIR` keeps the tree and the store in DIR: a later run on the same corpus
    // finds every vector in the store (a no-op sync) and costs seconds, not an hour.
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = get("--store").map_or_else(|| temp.path().to_path_buf(), PathBuf::from);
    let tree = dir.join("tree");
    let (bytes, files, labels) = match get("--lang").as_deref() {
        None | Some("rust") => make_corpus(&src, &tree, budget),
        Some("python") => make_python_corpus(&src, &tree, budget),
        Some(other) => panic!("--lang rust|python, not {other}"),
    };

    if let Some(out) = get("--dump") {
        let minilm = MiniLmInt::open_default().expect("minilm-int (for token ids)");
        let index = index_tree(
            &tree,
            &IngestConfig::default(),
            &Registry::default(),
            &HashEmbedder::default(),
            &|_| {},
        )
        .expect("index");
        let mut texts: Vec<String> = index
            .state
            .chunks()
            .values()
            .map(|c| embedding_text(c).into_owned())
            .collect();
        texts.extend(labels.iter().map(|l| l.query.clone()));
        texts.sort();
        texts.dedup();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&out).expect("--dump"));
        for t in &texts {
            writeln!(f, "{}", json!({"text": t, "ids": minilm.tokenize(t)})).expect("write");
        }
        println!(
            "{}",
            json!({"texts": texts.len(), "labels": labels.len(), "file": out})
        );
        return;
    }

    let name = get("--embedder").unwrap_or_else(|| "minilm-int".into());
    let embedder: Box<dyn Embedder> = match name.as_str() {
        "hash" => Box::new(HashEmbedder::default()),
        "minilm-int" => Box::new(MiniLmInt::open_default().expect("minilm-int")),
        other => Box::new(TableEmbedder::load(
            other
                .strip_prefix("table:")
                .expect("hash, minilm-int or table:FILE"),
        )),
    };
    // Text first, vectors after, a commit per batch: a run stopped while embedding
    // (a hundred thousand chunks take hours on 2 cores) resumes where it stopped.
    let options = SyncOptions {
        defer_embeddings: true,
        ..SyncOptions::default()
    };
    let settings = Settings {
        chunk: options.config.chunk,
        model_id: embedder.model_id().into(),
    };
    let file = dir.join("store.redb");
    let store = if file.is_file() {
        Store::open(&file).expect("the kept store")
    } else {
        Store::create(&file, settings).expect("store")
    };
    let t = Instant::now();
    let synced = store
        .sync(&tree, &options, &*embedder, &|_| {})
        .expect("sync");
    let report = |event: EmbedProgress| {
        if let EmbedProgress::Committed { chunks } = event {
            eprintln!(
                "embedded {chunks} chunks, {:.0} s",
                t.elapsed().as_secs_f64()
            );
        }
    };
    let embedded = store
        .embed_pending(&*embedder, &EmbedOptions::default(), &report)
        .expect("embed");
    let sync_s = t.elapsed().as_secs_f64();
    eprintln!(
        "sync: {} added, {} updated, {} unchanged, {} parsed, {} embedded in {sync_s:.1} s",
        synced.added, synced.updated, synced.unchanged, synced.parsed, embedded.chunks
    );
    let index = SearchIndex::open(&store, &*embedder, IndexOptions::exact()).expect("index");

    // `--queries N`: every k-th label, at most N (the suite at scale has tens of
    // thousands).
    let labels: Vec<Label> =
        match get("--queries").map(|n| n.parse::<usize>().expect("--queries N")) {
            Some(n) if n < labels.len() => {
                let step = labels.len().div_ceil(n);
                labels.into_iter().step_by(step).collect()
            }
            _ => labels,
        };
    if args.iter().any(|a| a == "--twins") {
        println!("{}", twins(&index, &*embedder, &labels));
        return;
    }
    let own = embedder.fusion_weight();
    let mut weights: Vec<u32> = get("--weights").map_or(vec![0, 25, 50, 100, 150, 200], |w| {
        w.split(',').map(|x| x.parse().expect("weight")).collect()
    });
    weights.push(own);
    weights.sort();
    weights.dedup();
    let mut hybrid = BTreeMap::new();
    for w in weights {
        hybrid.insert(
            w.to_string(),
            quality(&index, &*embedder, &labels, Mode::Hybrid, Some(w)),
        );
    }
    let out = json!({
        "embedder": embedder.model_id(),
        "corpus": {"files": files, "bytes": bytes, "chunks": index.snapshot().n_chunks(), "queries": labels.len()},
        "sync_s": sync_s,
        "text": quality(&index, &*embedder, &labels, Mode::Text, None),
        "vector": quality(&index, &*embedder, &labels, Mode::Vector, None),
        "hybrid_by_weight": hybrid,
        "own_weight": own,
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
}
