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
//! ids, for `bench/float_vectors.py`. `--fusion` compares ways of fusing the text and
//! vector lists on the same queries instead. `--variant NAME` ranks with that variant
//! of the ranking stack (`cfs_bench::variant`; `plain` is the fusion of the text and
//! vector lists alone, without ranking for code). Prints one JSON object.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

use cfs_bench::{Label, flag, is_target, make_corpus, make_python_corpus, variant};
use cfs_ingest::{
    EmbedError, Embedder, HashEmbedder, IngestConfig, MiniLmInt, Registry, embedding_text,
    index_tree,
};
use cfs_search::{IndexOptions, Mode, Query, Ranking, SearchIndex};
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

/// A labelled suite searched with one ranking stack (`--variant NAME`, the stacks of
/// `cfs_bench::variant`; default the full stack).
struct Suite<'a> {
    index: &'a SearchIndex,
    embedder: &'a dyn Embedder,
    labels: &'a [Label],
    ranking: Ranking,
}

impl Suite<'_> {
    /// Recall@10 and MRR of the labels in `mode`, at vector weight `w`.
    fn quality(&self, mode: Mode, w: Option<u32>) -> serde_json::Value {
        let (mut found, mut rr) = (0usize, 0.0);
        for label in self.labels {
            let mut q = Query::new(label.query.clone())
                .mode(mode)
                .k(10)
                .ranking(self.ranking.clone());
            q.exact = true;
            q.vector_weight = w;
            let hits = self.index.search(&q, self.embedder).expect("search");
            if let Some(rank) = hits.iter().position(|h| is_target(h, label)) {
                found += 1;
                rr += 1.0 / (rank as f64 + 1.0);
            }
        }
        let n = self.labels.len().max(1) as f64;
        json!({"recall_at_10": found as f64 / n, "mrr": rr / n})
    }
}

/// One candidate of a query in `--fusion`: whether it is the label's target, and its
/// rank (from 1) and score in each list that holds it.
#[derive(Clone, Copy, Default)]
struct Candidate {
    target: bool,
    text: Option<(usize, f64)>,
    vector: Option<(usize, f64)>,
    /// The same from lists of `DEEP` (a candidate of one list scored by the other).
    text_deep: Option<(usize, f64)>,
    vector_deep: Option<(usize, f64)>,
}

/// How deep `--fusion` reads each list to score the other list's candidates.
const DEEP: usize = 2000;

/// A way to fuse the two lists: the fused score of a candidate, given each list's score
/// range (min, max) and (mean, standard deviation).
type Fuse = Box<dyn Fn(&Candidate, &ListStats) -> f64>;

struct ListStats {
    text: (f64, f64, f64, f64),
    vector: (f64, f64, f64, f64),
}

fn stats(values: impl Iterator<Item = f64> + Clone) -> (f64, f64, f64, f64) {
    let n = values.clone().count().max(1) as f64;
    let (min, max) = values
        .clone()
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let mean = values.clone().sum::<f64>() / n;
    let sd = (values.map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    (min, max, mean, sd.max(1e-12))
}

/// A score normalised by its list's spread, `(x - mean) / sd`; a chunk absent from the
/// list counts as its lowest score.
fn zscore(v: Option<(usize, f64)>, (min, _, mean, sd): (f64, f64, f64, f64)) -> f64 {
    (v.map_or(min, |(_, x)| x) - mean) / sd
}

/// The fusions `--fusion` compares: reciprocal ranks with several constants and vector
/// weights (the product's is `rrf k=10 w=100`, `docs/spec.md` 21.4), and convex
/// combinations of the scores normalised per query by their range or by their spread.
fn fusions() -> Vec<(String, Fuse)> {
    let mut out: Vec<(String, Fuse)> = Vec::new();
    for k in [60.0, 30.0, 10.0, 8.0, 5.0, 3.0, 1.0] {
        for w in [0.5, 0.75, 1.0, 1.25, 1.5, 2.0] {
            out.push((
                format!("rrf k={k} w={}", w * 100.0),
                Box::new(move |c: &Candidate, _: &ListStats| {
                    c.text.map_or(0.0, |(r, _)| 1.0 / (k + r as f64))
                        + w * c.vector.map_or(0.0, |(r, _)| 1.0 / (k + r as f64))
                }),
            ));
        }
    }
    // The ceilings: the target first whenever either list holds it in its top 10 (or
    // anywhere in its 50).
    for depth in [10usize, 50] {
        out.push((
            format!("either list's top {depth}"),
            Box::new(move |c: &Candidate, _: &ListStats| {
                let within = |v: Option<(usize, f64)>| v.is_some_and(|(r, _)| r <= depth);
                f64::from(u8::from(c.target && (within(c.text) || within(c.vector))))
            }),
        ));
    }
    for a in [0.4, 0.45, 0.5, 0.55, 0.6] {
        out.push((
            format!("zscore both scores text={a}"),
            Box::new(move |c: &Candidate, s: &ListStats| {
                a * zscore(c.text_deep, s.text) + (1.0 - a) * zscore(c.vector_deep, s.vector)
            }),
        ));
        out.push((
            format!("rrf k=5 both ranks w={}", (1.0 - a) / a * 100.0),
            Box::new(move |c: &Candidate, _: &ListStats| {
                let r = |v: Option<(usize, f64)>| v.map_or(0.0, |(r, _)| 1.0 / (5.0 + r as f64));
                a * r(c.text_deep) + (1.0 - a) * r(c.vector_deep)
            }),
        ));
    }
    for a in [0.3, 0.4, 0.45, 0.5, 0.55, 0.6] {
        out.push((
            format!("minmax text={a}"),
            Box::new(move |c: &Candidate, s: &ListStats| {
                let norm = |v: Option<(usize, f64)>, (min, max, _, _): (f64, f64, f64, f64)| {
                    v.map_or(0.0, |(_, x)| {
                        if max > min {
                            (x - min) / (max - min)
                        } else {
                            1.0
                        }
                    })
                };
                a * norm(c.text, s.text) + (1.0 - a) * norm(c.vector, s.vector)
            }),
        ));
        out.push((
            format!("zscore text={a}"),
            Box::new(move |c: &Candidate, s: &ListStats| {
                a * zscore(c.text, s.text) + (1.0 - a) * zscore(c.vector, s.vector)
            }),
        ));
    }
    out
}

/// `--fusion`: Recall@10 and MRR of each fusion of `fusions()`, from the same two lists
/// of 50 per query (text and exact vectors) the product fuses.
fn fusion_study(index: &SearchIndex, e: &dyn Embedder, labels: &[Label]) -> serde_json::Value {
    let fusions = fusions();
    let mut found = vec![(0usize, 0.0f64); fusions.len()];
    for label in labels {
        let mut by_id: BTreeMap<cfs_core::ChunkId, Candidate> = BTreeMap::new();
        let mut deep: [HashMap<cfs_core::ChunkId, (usize, f64)>; 2] = Default::default();
        for (side, mode) in [Mode::Text, Mode::Vector].into_iter().enumerate() {
            let mut q = Query::new(label.query.clone()).mode(mode).k(DEEP);
            q.exact = true;
            for (rank, h) in index.search(&q, e).expect("search").iter().enumerate() {
                deep[side].insert(h.chunk_id, (rank + 1, h.score));
                if rank >= 50 {
                    continue;
                }
                let c = by_id.entry(h.chunk_id).or_default();
                c.target = is_target(h, label);
                match mode {
                    Mode::Text => c.text = Some((rank + 1, h.score)),
                    _ => c.vector = Some((rank + 1, h.score)),
                }
            }
        }
        for (id, c) in &mut by_id {
            c.text_deep = deep[0].get(id).copied();
            c.vector_deep = deep[1].get(id).copied();
        }
        let all: Vec<Candidate> = by_id.into_values().collect();
        let list_stats = ListStats {
            text: stats(all.iter().filter_map(|c| c.text.map(|t| t.1))),
            vector: stats(all.iter().filter_map(|c| c.vector.map(|t| t.1))),
        };
        for (i, (_, fuse)) in fusions.iter().enumerate() {
            let mut ranked: Vec<(f64, usize, usize, bool)> = all
                .iter()
                .map(|c| {
                    let r = |v: Option<(usize, f64)>| v.map_or(usize::MAX, |t| t.0);
                    (fuse(c, &list_stats), r(c.text), r(c.vector), c.target)
                })
                .collect();
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            if let Some(pos) = ranked.iter().take(10).position(|c| c.3) {
                found[i].0 += 1;
                found[i].1 += 1.0 / (pos as f64 + 1.0);
            }
        }
    }
    let n = labels.len().max(1) as f64;
    let rows: Vec<serde_json::Value> = fusions
        .iter()
        .zip(&found)
        .map(|((name, _), (hits, rr))| {
            json!({"fusion": name, "recall_at_10": *hits as f64 / n, "mrr": rr / n})
        })
        .collect();
    json!({"labels": labels.len(), "fusions": rows})
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
    if args.iter().any(|a| a == "--fusion") {
        println!("{}", fusion_study(&index, &*embedder, &labels));
        return;
    }
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
    let suite = Suite {
        index: &index,
        embedder: &*embedder,
        labels: &labels,
        ranking: variant(&get("--variant").unwrap_or_else(|| "full".into())),
    };
    let mut hybrid = BTreeMap::new();
    for w in weights {
        hybrid.insert(w.to_string(), suite.quality(Mode::Hybrid, Some(w)));
    }
    let out = json!({
        "embedder": embedder.model_id(),
        "corpus": {"files": files, "bytes": bytes, "chunks": index.snapshot().n_chunks(), "queries": labels.len()},
        "sync_s": sync_s,
        "text": suite.quality(Mode::Text, None),
        "vector": suite.quality(Mode::Vector, None),
        "hybrid_by_weight": hybrid,
        "own_weight": own,
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
}
