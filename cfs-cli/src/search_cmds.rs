//! `cfs search` and `cfs rebuild-index`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use cfs_ingest::Embedder;
use cfs_store::Store;
use cfs_store::search::{
    CODE_CANDIDATES, CacheStatus, Explanation, Filter, Hit, IndexOptions, Mode, Query, SearchIndex,
};
use serde_json::json;

use crate::output::{print_json, spinner};
use crate::store_cmds::{Common, embedder_for, open_read};

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What to look for: any text (operators and punctuation are just text).
    query: String,
    /// Number of results.
    #[arg(long, short = 'k', default_value_t = 10)]
    k: usize,
    /// hybrid (text and vectors fused), vector or text.
    #[arg(long, default_value = "hybrid")]
    mode: Mode,
    /// Only chunks with a path starting with this.
    #[arg(long, value_name = "PREFIX")]
    path: Option<String>,
    /// Only chunks in this collection.
    #[arg(long, value_name = "NAME")]
    collection: Option<String>,
    /// Only code chunks of this language (rust, python, go, typescript, ...).
    #[arg(long, value_name = "L")]
    lang: Option<String>,
    /// Only chunks of this kind: text, section, code or page.
    #[arg(long, value_name = "K")]
    kind: Option<String>,
    /// Only documents of this MIME type.
    #[arg(long, value_name = "TYPE")]
    mime: Option<String>,
    /// Score every vector (the reference) instead of scanning sign codes and
    /// re-scoring the best candidates.
    #[arg(long)]
    exact: bool,
    /// Also say how the query ran: segments, terms with their weights, candidates of
    /// each retriever, fusion, and each result's score parts.
    #[arg(long)]
    explain: bool,
    #[command(flatten)]
    common: Common,
}

/// The cache file of a store's runtime index: `index.cache` beside `store.redb`.
pub fn cache_path(store: &Store) -> std::path::PathBuf {
    cache_path_of(store.path())
}

/// The index file of the store file `file`.
pub fn cache_path_of(file: &std::path::Path) -> std::path::PathBuf {
    file.with_file_name("index.cache")
}

/// Opens the store's runtime index for a search command.
fn load_index(common: &Common) -> anyhow::Result<(Store, SearchIndex, Box<dyn Embedder>)> {
    let store = open_read(common)?;
    let embedder = embedder_for(&store)?;
    let spinner = spinner(common.json, "loading the search index");
    // Vector search is exact: for one query, a graph costs more to build than it saves.
    let index = open_index(&store, &*embedder, IndexOptions::exact(), common.json)?;
    spinner.finish_and_clear();
    Ok((store, index, embedder))
}

/// Opens the runtime index from its cache file (written from the store when missing or
/// unusable, brought forward when behind), and writes it again when that pays ([`CacheStatus::worth_saving`]): a whole file after a
/// build or a merge, else a delta file beside it. `quiet` keeps the note of a rebuilt
/// cache off stderr.
pub fn open_index(
    store: &Store,
    embedder: &dyn Embedder,
    options: IndexOptions,
    quiet: bool,
) -> anyhow::Result<SearchIndex> {
    let cache = cache_path(store);
    let (index, status) = SearchIndex::open_or_build_cached(store, embedder, options, &cache)?;
    if let CacheStatus::Rebuilt(reason)
    | CacheStatus::Written {
        reason: Some(reason),
    } = &status
        && !quiet
    {
        eprintln!("cfs: index cache {} rebuilt: {reason}", cache.display());
    }
    // The cache only saves time: a store folder that cannot be written (a read-only
    // mount) searches from the index built in memory, without a word.
    if status.worth_saving()
        && let Err(e) = index.save_cache(&cache)
        && !cfs_store::search::unwritable(&e)
    {
        eprintln!("cfs: warning: index cache not written: {e}");
    }
    Ok(index)
}

pub fn search(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let (_store, index, embedder) = load_index(&args.common)?;
    let query = Query::new(args.query.clone())
        .k(args.k)
        .mode(args.mode)
        .exact(args.exact)
        .filter(Filter {
            path_prefix: args.path.clone(),
            collection: args.collection.clone(),
            language: args.lang.clone(),
            kind: args.kind.clone(),
            mime_type: args.mime.clone(),
        });
    let started = Instant::now();
    let hits = index.search(&query, &*embedder)?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let explained = args.explain.then(|| index.explain(&query, &*embedder));
    if args.common.json {
        let hits = json!(hits.iter().map(hit_json).collect::<Vec<_>>());
        match &explained {
            Some(e) => print_json(&json!({"hits": hits, "explain": explain_json(e)}))?,
            None => print_json(&hits)?,
        }
        std::mem::forget((index, embedder));
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if let Some(e) = &explained {
        write_explanation(&mut out, e)?;
    }
    if hits.is_empty() {
        writeln!(out, "no results")?;
    }
    for (i, hit) in hits.iter().enumerate() {
        let symbol = hit
            .symbol
            .as_deref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        writeln!(
            out,
            "{:>2}. {}:{}-{}{symbol}  score {:.4}{}",
            i + 1,
            hit.path,
            hit.start_line,
            hit.end_line,
            hit.score,
            if args.explain {
                score_parts(hit)
            } else {
                parts(hit)
            }
        )?;
        for line in hit.snippet.lines() {
            writeln!(out, "      {line}")?;
        }
    }
    if std::io::stderr().is_terminal() {
        eprintln!("{} results in {ms:.1} ms", hits.len());
    }
    // The process ends here: its index (documents, paths, maps) and the embedder (a
    // model's 50 MB of weights) are left to the exit instead of freed piece by piece
    // (as in the JSON branch above).
    std::mem::forget((index, embedder));
    Ok(ExitCode::SUCCESS)
}

fn parts(hit: &Hit) -> String {
    let mut s = String::new();
    if let Some((_, rank)) = hit.text_score {
        s += &format!(" text #{rank}");
    }
    if let Some((_, rank)) = hit.vector_score {
        s += &format!(" vector #{rank}");
    }
    s
}

/// Ranks with the scores behind them: BM25 and the dot product (scaled as in JSON).
fn score_parts(hit: &Hit) -> String {
    let mut s = String::new();
    if let Some((score, rank)) = hit.text_score {
        s += &format!(
            " text #{rank} (bm25 {:.3})",
            score as f64 / (1u64 << 32) as f64
        );
    }
    if let Some((dot, rank)) = hit.vector_score {
        s += &format!(
            " vector #{rank} (dot {:.4})",
            dot as f64 / (1u64 << 30) as f64
        );
    }
    s
}

fn write_explanation(out: &mut impl Write, e: &Explanation) -> std::io::Result<()> {
    writeln!(out, "state root {}", e.root)?;
    for (i, s) in e.segments.iter().enumerate() {
        writeln!(
            out,
            "segment {i}: {} chunks, {} live, {}{}",
            s.chunks,
            s.live,
            if s.mapped {
                "mapped from the index file"
            } else {
                "in memory"
            },
            if s.graph { ", HNSW graph" } else { "" }
        )?;
    }
    for t in &e.terms {
        let idf = t.idf as f64 / f64::from(1u32 << 16);
        writeln!(out, "term {:?}: in {} chunks, idf {idf:.3}", t.term, t.df)?;
    }
    writeln!(
        out,
        "text: {} chunks scored, top {} kept",
        e.text_candidates, e.depth
    )?;
    if e.vector_runs {
        let how = if e.vector_exact {
            "exact scan of".to_owned()
        } else if e.vector_codes {
            format!(
                "sign codes (the best {CODE_CANDIDATES} of each mapped segment re-scored exactly) of"
            )
        } else {
            "graph over".to_owned()
        };
        writeln!(
            out,
            "vectors: {how} {} vectors, top {} kept",
            e.vectors, e.depth
        )?;
    } else {
        writeln!(out, "vectors: not searched")?;
    }
    writeln!(
        out,
        "fusion: reciprocal rank, vector weight {}% of text\n",
        e.vector_weight
    )
}

fn explain_json(e: &Explanation) -> serde_json::Value {
    json!({
        "root": e.root.to_hex(),
        "segments": e.segments.iter().map(|s| json!({
            "chunks": s.chunks, "live": s.live, "mapped": s.mapped, "graph": s.graph,
        })).collect::<Vec<_>>(),
        "terms": e.terms.iter().map(|t| json!({
            "term": t.term, "df": t.df, "idf": t.idf as f64 / f64::from(1u32 << 16),
        })).collect::<Vec<_>>(),
        "depth": e.depth,
        "text_candidates": e.text_candidates,
        "vector_runs": e.vector_runs,
        "vectors": e.vectors,
        "vector_exact": e.vector_exact,
        "vector_codes": e.vector_codes,
        "vector_weight": e.vector_weight,
    })
}

fn hit_json(hit: &Hit) -> serde_json::Value {
    json!({
        "path": hit.path,
        "paths": hit.paths,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "byte_offset": hit.byte_offset,
        "byte_length": hit.byte_length,
        "score": hit.score,
        "text_score": hit.text_score.map(|(s, r)| json!({"bm25": s as f64 / (1u64 << 32) as f64, "rank": r})),
        "vector_score": hit.vector_score.map(|(s, r)| json!({"dot": s, "rank": r})),
        "chunk_id": hit.chunk_id.to_string(),
        "kind": hit.kind,
        "language": hit.language,
        "symbol": hit.symbol,
        "snippet": hit.snippet,
        "text": hit.text,
        "root": hit.root.to_hex(),
    })
}

/// Rebuilds the runtime index from the committed state, checks it against the state,
/// writes its cache file, and reports its size and build time.
pub fn rebuild_index(common: &Common) -> anyhow::Result<ExitCode> {
    let store = open_read(common)?;
    let embedder = embedder_for(&store)?;
    let started = Instant::now();
    let spinner = spinner(common.json, "rebuilding the search index");
    let index = SearchIndex::open(&store, &*embedder, IndexOptions::exact())?;
    spinner.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    // Catch up with any commit made while building, then compare with that state.
    index.refresh(&store)?;
    let snap = index.snapshot();
    let read = store.begin_read()?;
    let committed = read.chunk_ids()?;
    let agrees =
        snap.chunk_ids() == committed && snap.state_root() == read.table_roots()?.state_root();
    let cache = cache_path(&store);
    if agrees {
        index.save_cache(&cache)?;
    }
    let value = json!({
        "state_root": snap.state_root().to_hex(),
        "chunks": snap.n_chunks(),
        "documents": snap.n_documents(),
        "segments": snap.n_segments(),
        "seconds": seconds,
        "agrees_with_state": agrees,
        "cache": cache.display().to_string(),
    });
    if common.json {
        print_json(&value)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "index of {} chunks in {} documents rebuilt in {seconds:.2} s",
            snap.n_chunks(),
            snap.n_documents()
        )?;
        writeln!(out, "state root {}", snap.state_root())?;
        writeln!(
            out,
            "{}",
            if agrees {
                "index agrees with the committed state"
            } else {
                "INDEX DISAGREES WITH THE COMMITTED STATE"
            }
        )?;
    }
    Ok(if agrees {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
