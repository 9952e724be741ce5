//! Code search quality on the team's labelled multi-language suite (`bench/suite/`):
//!
//! `cargo run --release --bin code_suite -- REPOS --stores DIR [--suite DIR] [--embedder E]
//!  [--repos a,b] [--split dev|test] [--modes text,vector,hybrid] [--variants V,..]
//!  [--show N] [--context B,..] [--json FILE] [--as-is]`
//!
//! `bench/suite/repos.json` names each repository (its GitHub name, the commit measured,
//! its main language, and whether it is in the `dev` split, on which ranking may be
//! tuned, or the `test` split, which is only ever reported); `bench/suite/queries/*.jsonl`
//! holds the queries, written by people reading the code, each with its kind (`name`,
//! `behaviour`, `architecture`), the language of its answer and its relevant files with a
//! grade (2: the answer, 1: also right). REPOS holds each repository checked out at its
//! commit in a folder of the suite's name (the repositories' files are never committed).
//!
//! Each repository is synced into its own store under `--stores DIR` (kept, so a later
//! run only syncs what changed and embeds nothing again; `--as-is` searches the kept
//! stores without a sync, for stores another build made), its index opened exactly
//! (no approximation), and every query run in each mode. The answer is a list of files:
//! the engine's file answer (`files`: `SearchIndex::search_files`, 10 files), and the
//! files of its chunk answer in their order, each once (`chunks`: the first 10 chunk
//! results, as an agent sees them). Scores: NDCG@10 (gain 2^grade - 1) and MRR@10
//! (first file of grade 1 or more). Variants of the ranking stack (`--variants`, default
//! `full`): `full` (the spec's), `plain` (text and vectors fused, nothing else), and
//! `-definitions`, `-variants`, `-paths`, `-coverage`, `-file-vector`, `-roles`, `-files`,
//! `-intent`, `-file-text` (the full stack without one signal; `-intent` weighs every
//! query as a description), and `set:KEY=V;KEY=V` (the full stack with other weights, see
//! `cfs_bench::with_settings`: for measuring on the dev split). The variants are
//! `cfs_bench::variant`'s. Prints the overall scores of
//! each variant and mode per split, then a table per language, kind and repository of
//! the first variant; `--json FILE` writes every query's result. `--show N` prints the
//! N worst dev queries of the first variant in hybrid mode with their first files.
//! `--context B,..` also packs each query's text into each budget of tokens three ways
//! (`cfs context`, the chunk answer read in order, the file answer's files read whole)
//! and prints how often a relevant file is in it and what share of them.
//! `--embedder` (default `minilm-int`): `hash`, `minilm-int`, or one of two experiments
//! with their own stores: `minilm-longN` (up to N sequences of a chunk pooled) and
//! `minilm-split` (identifiers read as their words, `getEncoding` as `get Encoding`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cfs_bench::{flag, variant};
use cfs_ingest::{Embedder, HashEmbedder, MiniLmInt};
use cfs_search::{Hit, IndexOptions, Mode, Query, Ranking, SearchIndex};
use cfs_store::{EmbedOptions, Settings, Store, SyncOptions};
use serde_json::{Value, json};

/// One labelled query.
#[derive(Clone, Debug)]
struct Labelled {
    id: String,
    repo: String,
    kind: String,
    lang: String,
    query: String,
    relevant: BTreeMap<String, u32>,
}

/// One repository of the suite.
#[derive(Clone, Debug)]
struct Repo {
    name: String,
    split: String,
}

/// A file ranking's scores.
#[derive(Clone, Copy, Debug, Default)]
struct Scores {
    ndcg: f64,
    mrr: f64,
}

fn load_repos(suite: &Path) -> Vec<Repo> {
    let text = std::fs::read_to_string(suite.join("repos.json")).expect("repos.json");
    let v: Value = serde_json::from_str(&text).expect("repos.json is JSON");
    v["repos"]
        .as_array()
        .expect("repos")
        .iter()
        .map(|r| Repo {
            name: r["name"].as_str().expect("name").to_owned(),
            split: r["split"].as_str().expect("split").to_owned(),
        })
        .collect()
}

fn load_queries(suite: &Path) -> Vec<Labelled> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(suite.join("queries"))
        .expect("queries folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("queries file");
        for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), n + 1));
            let repo = v["repo"].as_str().expect("repo").to_owned();
            let relevant = v["relevant"]
                .as_object()
                .expect("relevant")
                .iter()
                .map(|(p, g)| (p.clone(), g.as_u64().expect("grade") as u32))
                .collect();
            out.push(Labelled {
                id: format!("{repo}-{:02}", n + 1),
                repo,
                kind: v["kind"].as_str().expect("kind").to_owned(),
                lang: v["lang"].as_str().expect("lang").to_owned(),
                query: v["query"].as_str().expect("query").to_owned(),
                relevant,
            });
        }
    }
    out
}

/// NDCG@10 and MRR@10 of a file ranking.
fn score(files: &[String], relevant: &BTreeMap<String, u32>) -> Scores {
    let gain = |g: u32| f64::from((1u32 << g) - 1);
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = files
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, f)| relevant.get(f).map_or(0.0, |&g| gain(g) * discount(i)))
        .sum();
    let mut ideal: Vec<u32> = relevant.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, &g)| gain(g) * discount(i))
        .sum();
    let mrr = files
        .iter()
        .take(10)
        .position(|f| relevant.get(f).is_some_and(|&g| g > 0))
        .map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
    Scores {
        ndcg: if idcg > 0.0 { dcg / idcg } else { 0.0 },
        mrr,
    }
}

/// The distinct files of chunk results, in order.
fn files_of(hits: &[Hit], n: usize) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for h in hits {
        if seen.insert(h.path.clone()) {
            out.push(h.path.clone());
            if out.len() == n {
                break;
            }
        }
    }
    out
}

fn embedder_named(name: &str) -> Box<dyn Embedder> {
    match name {
        "hash" => Box::new(HashEmbedder::default()),
        "minilm-int" => Box::new(MiniLmInt::open_default().expect("minilm-int model file")),
        "minilm-split" => Box::new(Experiment::new(Reading::Split)),
        other => match other.strip_prefix("minilm-long") {
            Some(n) => Box::new(Experiment::new(Reading::Long(
                n.parse().expect("minilm-longN"),
            ))),
            None => panic!("--embedder hash|minilm-int|minilm-split|minilm-longN, not {other}"),
        },
    }
}

/// How an experiment's minilm-int reads a text.
#[derive(Clone, Copy)]
enum Reading {
    /// Up to `n` sequences of 128 tokens, pooled.
    Long(usize),
    /// Identifiers as their words: `getEncodingFromMeta` as `get Encoding From Meta`.
    Split,
}

/// minilm-int reading texts another way, under a model id of its own (so in stores of
/// its own).
struct Experiment {
    model: MiniLmInt,
    id: String,
    reading: Reading,
}

impl Experiment {
    fn new(reading: Reading) -> Self {
        let model = MiniLmInt::open_default().expect("minilm-int model file");
        let name = match reading {
            Reading::Long(n) => format!("minilm-long{n}"),
            Reading::Split => "minilm-split".into(),
        };
        let id = format!("{name}/0 {}", model.model_id());
        Self { model, id, reading }
    }
}

/// A space before each identifier part that begins inside a run of ASCII letters: at a
/// lower-case letter followed by an upper-case one, and before the last upper-case
/// letter of a run of them followed by a lower-case one (`HTTPServer`).
fn split_identifiers(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, &c) in b.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = b[i - 1];
            let next_lower = b.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase() || prev.is_ascii_uppercase() && next_lower {
                out.push(' ');
            }
        }
        out.push(c);
    }
    out
}

impl Embedder for Experiment {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn dimension(&self) -> usize {
        self.model.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, cfs_ingest::EmbedError> {
        use rayon::prelude::*;
        match self.reading {
            Reading::Long(n) => Ok(texts
                .par_iter()
                .map(|t| self.model.embed_long(t, n))
                .collect()),
            Reading::Split => {
                let split: Vec<String> = texts.iter().map(|t| split_identifiers(t)).collect();
                let refs: Vec<&str> = split.iter().map(String::as_str).collect();
                self.model.embed_batch(&refs)
            }
        }
    }
}

/// The repository's store under `stores`, synced with its tree and fully embedded, or
/// as it is (`as_is`: a store another build made, which this one would chunk again).
fn synced_store(tree: &Path, stores: &Path, embedder: &dyn Embedder, as_is: bool) -> Store {
    let options = SyncOptions {
        defer_embeddings: true,
        ..SyncOptions::default()
    };
    let model = embedder
        .model_id()
        .split_whitespace()
        .next()
        .unwrap_or("model");
    let dir = stores.join(model.replace('/', "-"));
    std::fs::create_dir_all(&dir).expect("stores folder");
    let name = tree.file_name().expect("repository folder name");
    // `http.zig.redb`, not `http.redb`: a folder name's dot is not an extension (it
    // made http.zig and http share one store).
    let file = dir.join(format!("{}.redb", name.to_string_lossy()));
    if as_is {
        // Read only: the store is another build's, searched as it is.
        return Store::open_read_only(&file).expect("--as-is: the kept store");
    }
    let store = if file.is_file() {
        Store::open(&file).expect("the kept store")
    } else {
        let settings = Settings {
            chunk: options.config.chunk,
            model_id: embedder.model_id().into(),
        };
        Store::create(&file, settings).expect("store")
    };
    let t = Instant::now();
    let synced = store.sync(tree, &options, embedder, &|_| {}).expect("sync");
    let embedded = store
        .embed_pending(embedder, &EmbedOptions::default(), &|_| {})
        .expect("embed");
    if synced.added + synced.updated + embedded.chunks > 0 {
        eprintln!(
            "{}: {} files added, {} updated, {} chunks embedded in {:.1} s",
            name.to_string_lossy(),
            synced.added,
            synced.updated,
            embedded.chunks,
            t.elapsed().as_secs_f64()
        );
    }
    store
}

/// What one query gave in one mode.
struct Outcome {
    files: Scores,
    chunks: Scores,
    first: Vec<String>,
}

fn run_query(
    index: &SearchIndex,
    e: &dyn Embedder,
    q: &Labelled,
    mode: Mode,
    ranking: &Ranking,
) -> Outcome {
    let mut query = Query::new(q.query.clone())
        .mode(mode)
        .k(10)
        .exact(true)
        .ranking(ranking.clone());
    if *ranking == Ranking::plain() {
        // The fusion as it was: one vector weight, the embedder's, for every query.
        query.vector_weight = Some(e.fusion_weight());
    }
    let files: Vec<String> = index
        .search_files(&query, e)
        .expect("search files")
        .into_iter()
        .map(|f| f.path)
        .collect();
    let chunks = index.search(&query, e).expect("search");
    Outcome {
        files: score(&files, &q.relevant),
        chunks: score(&files_of(&chunks, 10), &q.relevant),
        first: files.into_iter().take(5).collect(),
    }
}

/// Sums of scores over a group of queries.
#[derive(Default, Clone, Copy)]
struct Sum {
    n: usize,
    files: (f64, f64),
    chunks: (f64, f64),
}

impl Sum {
    fn add(&mut self, o: &Outcome) {
        self.n += 1;
        self.files.0 += o.files.ndcg;
        self.files.1 += o.files.mrr;
        self.chunks.0 += o.chunks.ndcg;
        self.chunks.1 += o.chunks.mrr;
    }

    fn mean(&self) -> (f64, f64, f64) {
        let n = self.n.max(1) as f64;
        (self.files.0 / n, self.files.1 / n, self.chunks.0 / n)
    }
}

const USAGE: &str = "usage: code_suite REPOS --stores DIR [--suite DIR] [--embedder E] \
[--repos a,b] [--split dev|test] [--modes text,vector,hybrid] [--variants V,..] [--show N] \
[--context B,..] [--json FILE]";

/// A group's key: variant, mode, split (`dev`, `test` or `all`), grouping (`all`,
/// `lang`, `kind`, `repo`) and its value.
type Key = (String, String, String, String, String);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str| flag(&args, name);
    let (Some(repos_dir), Some(stores)) = (args.get(1), get("--stores")) else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    let (repos_dir, stores) = (PathBuf::from(repos_dir), PathBuf::from(stores));
    let suite = get("--suite").map_or_else(|| PathBuf::from("suite"), PathBuf::from);
    let embedder = embedder_named(&get("--embedder").unwrap_or_else(|| "minilm-int".into()));
    let only: Option<BTreeSet<String>> =
        get("--repos").map(|r| r.split(',').map(Into::into).collect());
    let split = get("--split");
    let modes: Vec<Mode> = get("--modes")
        .unwrap_or_else(|| "text,vector,hybrid".into())
        .split(',')
        .map(|m| m.parse().expect("mode"))
        .collect();
    let variants: Vec<String> = get("--variants")
        .unwrap_or_else(|| "full".into())
        .split(',')
        .map(Into::into)
        .collect();
    let show: usize = get("--show").map_or(0, |n| n.parse().expect("--show N"));
    let as_is = args.iter().any(|a| a == "--as-is");
    let budgets: Vec<u32> = get("--context").map_or_else(Vec::new, |b| {
        b.split(',')
            .map(|n| n.parse().expect("--context B,.."))
            .collect()
    });
    let mut packed: BTreeMap<(u32, &str, String), Packed> = BTreeMap::new();

    let repos: Vec<Repo> = load_repos(&suite)
        .into_iter()
        .filter(|r| only.as_ref().is_none_or(|o| o.contains(&r.name)))
        .filter(|r| split.as_ref().is_none_or(|s| *s == r.split))
        .collect();
    let queries = load_queries(&suite);
    let mut groups: BTreeMap<Key, Sum> = BTreeMap::new();
    let mut rows = Vec::new();
    let mut worst: Vec<(f64, String)> = Vec::new();
    for repo in &repos {
        let tree = repos_dir.join(&repo.name);
        let store = synced_store(&tree, &stores, &*embedder, as_is);
        let index = SearchIndex::open(&store, &*embedder, IndexOptions::exact()).expect("index");
        for q in queries.iter().filter(|q| q.repo == repo.name) {
            for &budget in &budgets {
                for (how, got) in contexts(&index, &*embedder, &tree, q, budget) {
                    for group in ["all".to_owned(), q.kind.clone()] {
                        packed.entry((budget, how, group)).or_default().add(&got);
                    }
                }
            }
            for (vi, v) in variants.iter().enumerate() {
                let ranking = variant(v);
                for &mode in &modes {
                    let o = run_query(&index, &*embedder, q, mode, &ranking);
                    let m = format!("{mode:?}").to_lowercase();
                    for (g, value) in [
                        ("all", "all"),
                        ("lang", q.lang.as_str()),
                        ("kind", q.kind.as_str()),
                        ("repo", q.repo.as_str()),
                    ] {
                        for s in [repo.split.as_str(), "all"] {
                            let key = (v.clone(), m.clone(), s.into(), g.into(), value.into());
                            groups.entry(key).or_default().add(&o);
                        }
                    }
                    if vi == 0 && mode == Mode::Hybrid && repo.split == "dev" {
                        worst.push((
                            o.files.ndcg,
                            format!(
                                "{} [{}] {:?} -> {:?} (want {:?})",
                                q.id,
                                q.kind,
                                q.query,
                                o.first,
                                q.relevant.keys().collect::<Vec<_>>()
                            ),
                        ));
                    }
                    rows.push(json!({
                        "id": q.id, "split": repo.split, "lang": q.lang, "kind": q.kind,
                        "variant": v, "mode": m, "query": q.query,
                        "files_ndcg10": o.files.ndcg, "files_mrr10": o.files.mrr,
                        "chunks_ndcg10": o.chunks.ndcg, "first": o.first,
                    }));
                }
            }
        }
    }
    print_overall(&groups);
    if !budgets.is_empty() {
        print_contexts(&packed);
    }
    if let Some(first) = variants.first() {
        print_table(&groups, first);
    }
    if show > 0 {
        worst.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (s, line) in worst.iter().take(show) {
            println!("{s:.2} {line}");
        }
    }
    if let Some(out) = get("--json") {
        let groups: Vec<Value> = groups
            .iter()
            .map(|((v, m, s, g, value), sum)| {
                let (ndcg, mrr, chunks) = sum.mean();
                json!({"variant": v, "mode": m, "split": s, "group": g, "value": value,
                       "queries": sum.n, "files_ndcg10": ndcg, "files_mrr10": mrr,
                       "chunks_ndcg10": chunks})
            })
            .collect();
        let mut f = std::fs::File::create(&out).expect("--json FILE");
        writeln!(f, "{}", json!({"groups": groups, "queries": rows})).expect("write");
    }
}

/// What a budget of tokens held for one query.
#[derive(Default, Clone, Copy)]
struct Packed {
    n: usize,
    /// Queries with a relevant file in the text.
    hits: usize,
    /// Sum of each query's share of its relevant files in the text.
    recall: f64,
    tokens: u64,
}

impl Packed {
    fn add(&mut self, o: &Packed) {
        self.n += o.n;
        self.hits += o.hits;
        self.recall += o.recall;
        self.tokens += o.tokens;
    }
}

/// A query's text within `budget` tokens three ways: `cfs context`; the chunk answer's
/// texts (100 chunks) read in order, each taken if it still fits (cited as a context
/// cites a span); and the file answer's files read whole in order, each taken if it
/// still fits. The two others take their first item cut to fit when it does not, as a
/// context does. Each scored by the relevant files it holds.
fn contexts(
    index: &SearchIndex,
    e: &dyn Embedder,
    tree: &Path,
    q: &Labelled,
    budget: u32,
) -> Vec<(&'static str, Packed)> {
    use cfs_search::estimate_tokens;
    let query = Query::new(q.query.clone()).k(10).exact(true);
    let ctx = index.context(&query, e, budget).expect("context");
    let context_files: Vec<String> = ctx.files.iter().map(|f| f.path.clone()).collect();
    // Each item taken if it still fits; the first one cut to fit when it does not, as
    // a context cuts its first chunk.
    let fill = |items: Vec<(String, u32)>| {
        let (mut used, mut files) = (0u32, BTreeSet::new());
        for (path, cost) in items {
            if used + cost <= budget {
                used += cost;
                files.insert(path);
            } else if files.is_empty() {
                used = budget;
                files.insert(path);
            }
        }
        (files.into_iter().collect::<Vec<_>>(), used)
    };
    let fence = |path: &str, text: &str, lines: &str| {
        estimate_tokens(&format!("{path}:{lines}\n```\n{text}\n```\n\n"))
    };
    let hits = index.search(&query.clone().k(100), e).expect("search");
    let chunk_items = hits
        .iter()
        .map(|h| {
            let lines = format!("{}-{}", h.start_line, h.end_line);
            (h.path.clone(), fence(&h.path, &h.text, &lines))
        })
        .collect();
    let files = index.search_files(&query, e).expect("search files");
    // A file that cannot be read as text is not one an agent could read whole.
    let file_items = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(tree.join(&f.path)).ok()?;
            Some((f.path.clone(), fence(&f.path, &text, "1-")))
        })
        .collect();
    let score = |(files, tokens): (Vec<String>, u32)| {
        let relevant = q.relevant.iter().filter(|(_, g)| **g > 0);
        let total = relevant.clone().count().max(1);
        let found = relevant.filter(|(p, _)| files.contains(p)).count();
        Packed {
            n: 1,
            hits: usize::from(found > 0),
            recall: found as f64 / total as f64,
            tokens: u64::from(tokens),
        }
    };
    vec![
        ("context", score((context_files, ctx.tokens))),
        ("chunks in order", score(fill(chunk_items))),
        ("whole files in order", score(fill(file_items))),
    ]
}

/// The context table: for each budget and way, over all queries and by kind.
fn print_contexts(packed: &BTreeMap<(u32, &str, String), Packed>) {
    println!("\n| budget | way | group | n | a relevant file | relevant files | tokens used |");
    println!("|---:|---|---|---:|---:|---:|---:|");
    for ((budget, how, group), p) in packed {
        let n = p.n.max(1) as f64;
        println!(
            "| {budget} | {how} | {group} | {} | {:.3} | {:.3} | {:.0} |",
            p.n,
            p.hits as f64 / n,
            p.recall / n,
            p.tokens as f64 / n
        );
    }
}

/// Each variant and mode over all queries of each split: files NDCG@10 / MRR@10 and the
/// chunk answer's NDCG@10.
fn print_overall(groups: &BTreeMap<Key, Sum>) {
    println!("| variant | mode | split | n | files NDCG@10 | files MRR@10 | chunks NDCG@10 |");
    println!("|---|---|---|---:|---:|---:|---:|");
    for ((v, m, s, g, _), sum) in groups {
        if g == "all" {
            let (ndcg, mrr, chunks) = sum.mean();
            println!(
                "| {v} | {m} | {s} | {} | {ndcg:.3} | {mrr:.3} | {chunks:.3} |",
                sum.n
            );
        }
    }
}

/// One line per split, grouping and value of `variant`: NDCG@10 / MRR@10 of the file
/// answer in each mode.
fn print_table(groups: &BTreeMap<Key, Sum>, variant: &str) {
    let mut lines: BTreeMap<(String, String, String), Vec<(String, Sum)>> = BTreeMap::new();
    for ((v, m, s, g, value), sum) in groups {
        if v == variant && g != "all" {
            let key = (s.clone(), g.clone(), value.clone());
            lines.entry(key).or_default().push((m.clone(), *sum));
        }
    }
    println!("\n{variant}: files NDCG@10 / MRR@10 by mode");
    println!("| split | group | value | n | modes |");
    println!("|---|---|---|---:|---|");
    for ((s, g, value), modes) in lines {
        let n = modes.first().map_or(0, |m| m.1.n);
        let cells: Vec<String> = modes
            .iter()
            .map(|(m, sum)| {
                let (ndcg, mrr, _) = sum.mean();
                format!("{m} {ndcg:.3} / {mrr:.3}")
            })
            .collect();
        println!("| {s} | {g} | {value} | {n} | {} |", cells.join(" · "));
    }
}
