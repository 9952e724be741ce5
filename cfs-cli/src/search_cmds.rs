//! `cfs search` and `cfs rebuild-index`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use cfs_ingest::{Embedder, Role};
use cfs_search::{
    CODE_CANDIDATES, Explanation, FileHit, Filter, Hit, IndexOptions, Mode, PATH_ONE, Query,
    SearchIndex,
};
use cfs_store::Store;
use schemars::JsonSchema;
use serde::Serialize;

use crate::open::{Common, embedder_for, index_file, open_index, open_read};
use crate::output::spinner;
use crate::report::{Report, emit, print_json};

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What to look for: any text (operators and punctuation are just text). A bare
    /// name (`IntoResponse`, `Router::route`) is looked up as a definition first.
    query: String,
    /// Number of results (files with --files).
    #[arg(long, short = 'k', default_value_t = 10)]
    k: usize,
    /// Answer with files, each ranked by its best chunk plus a bonus for further
    /// matching ones, with its best chunks' line ranges.
    #[arg(long)]
    files: bool,
    #[command(flatten)]
    pub(crate) filters: Filters,
    /// Also say how the query ran: its intent, segments, terms with their weights,
    /// candidates of each list, fusion weights, and each result's score parts.
    #[arg(long, conflicts_with = "db")]
    explain: bool,
    /// Search the repositories published in this PostgreSQL database (a primary or a
    /// standby) instead of a store: each ranked as its store would rank it, the answers
    /// merged by score. TLS as libpq's `sslmode` and `sslrootcert` say.
    #[arg(long, value_name = "URL", conflicts_with = "files")]
    pub(crate) db: Option<String>,
    /// With --db: search this repository (repeatable; default: every one).
    #[arg(long = "repo", value_name = "NAME", requires = "db")]
    pub(crate) repos: Vec<String>,
    /// With --db: prove each result against its repository's head in the same
    /// snapshot: its chunk's and path's rows re-hashed, their buckets' leaves, the
    /// bucket roots and the table roots recomputed up to the head's state root.
    #[arg(long, requires = "db")]
    pub(crate) check_answers: bool,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// How a query runs and what it may find: shared by `cfs search` and `cfs context`.
#[derive(Debug, clap::Args)]
pub(crate) struct Filters {
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
    /// Only files of this role: source, declaration, config, docs, example, test,
    /// generated or vendored.
    #[arg(long, value_name = "ROLE", value_parser = parse_role)]
    role: Option<Role>,
    /// Only documents of this MIME type.
    #[arg(long, value_name = "TYPE")]
    mime: Option<String>,
    /// Score every vector (the reference) instead of scanning sign codes and
    /// re-scoring the best candidates.
    #[arg(long)]
    exact: bool,
}

impl Filters {
    /// A query of `text` for `k` results (files for a file answer or a context) as
    /// these options say.
    pub(crate) fn query(&self, text: &str, k: usize) -> Query {
        Query::new(text)
            .k(k)
            .mode(self.mode)
            .exact(self.exact)
            .filter(Filter {
                path_prefix: self.path.clone(),
                collection: self.collection.clone(),
                language: self.lang.clone(),
                kind: self.kind.clone(),
                mime_type: self.mime.clone(),
                role: self.role,
            })
    }
}

fn parse_role(name: &str) -> Result<Role, String> {
    Role::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Role::ALL.iter().map(|r| r.name()).collect();
        format!("unknown role {name:?} ({})", names.join(", "))
    })
}

/// Opens the store's runtime index for a search command.
pub(crate) fn load_index(
    common: &Common,
) -> anyhow::Result<(Store, SearchIndex, Box<dyn Embedder>)> {
    let store = open_read(common)?;
    let embedder = embedder_for(&store)?;
    let spinner = spinner(common.json, "loading the search index");
    // Vector search is exact: for one query, a graph costs more to build than it saves.
    let index = open_index(&store, &*embedder, IndexOptions::exact(), common.json)?;
    spinner.finish_and_clear();
    Ok((store, index, embedder))
}

pub fn search(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let (_store, index, embedder) = load_index(&args.common)?;
    let query = args.query();
    let started = Instant::now();
    let found = if args.files {
        Found::Files(index.search_files(&query, &*embedder)?)
    } else {
        Found::Chunks(index.search(&query, &*embedder)?)
    };
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let explained = args
        .explain
        .then(|| ExplainJson::of(&index.explain(&query, &*embedder, args.files)));
    let results = match &found {
        Found::Chunks(hits) => SearchResults::Chunks(hits.iter().map(HitJson::of).collect()),
        Found::Files(files) => SearchResults::Files(files.iter().map(FileJson::of).collect()),
    };
    let answer = SearchReport {
        hits: results,
        explain: explained,
    };
    if args.common.json {
        match &answer.explain {
            Some(_) => print_json(&answer)?,
            None => print_json(&answer.hits)?,
        }
    } else {
        answer.write_text(&mut std::io::stdout().lock())?;
        if std::io::stderr().is_terminal() {
            eprintln!("{} results in {ms:.1} ms", found.len());
        }
    }
    // The process ends here: its index (documents, paths, maps) and the embedder (a
    // model's 50 MB of weights) are left to the exit instead of freed piece by piece.
    std::mem::forget((index, embedder));
    Ok(ExitCode::SUCCESS)
}

impl SearchArgs {
    /// The query the arguments ask.
    pub(crate) fn query(&self) -> Query {
        self.filters.query(&self.query, self.k)
    }
}

/// A search's results: chunks, or files with their best chunks.
enum Found {
    Chunks(Vec<Hit>),
    Files(Vec<FileHit>),
}

impl Found {
    fn len(&self) -> usize {
        match self {
            Found::Chunks(h) => h.len(),
            Found::Files(f) => f.len(),
        }
    }
}

/// What `cfs search` answers: its results, and with `--explain` how the query ran (the
/// JSON is then `{"hits", "explain"}`, else the list of results alone).
#[derive(Serialize, JsonSchema)]
pub struct SearchReport {
    hits: SearchResults,
    explain: Option<ExplainJson>,
}

/// Chunks, or with `--files` files with their best chunks; best first.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum SearchResults {
    Chunks(Vec<HitJson>),
    Files(Vec<FileJson>),
}

impl Report for SearchReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if let Some(e) = &self.explain {
            e.write_text(out)?;
        }
        let explain = self.explain.is_some();
        match &self.hits {
            SearchResults::Chunks(hits) => write_hits(out, hits, explain),
            SearchResults::Files(files) => write_files(out, files, explain),
        }
    }
}

fn write_hits(out: &mut dyn Write, hits: &[HitJson], explain: bool) -> std::io::Result<()> {
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
            "{:>2}. {}:{}-{}{symbol}{}  score {:.4}{}",
            i + 1,
            hit.path,
            hit.start_line,
            hit.end_line,
            role_tag(hit.role),
            hit.score,
            parts_text(hit, explain)
        )?;
        for line in hit.snippet.lines() {
            writeln!(out, "      {line}")?;
        }
    }
    Ok(())
}

fn write_files(out: &mut dyn Write, files: &[FileJson], explain: bool) -> std::io::Result<()> {
    if files.is_empty() {
        writeln!(out, "no results")?;
    }
    for (i, file) in files.iter().enumerate() {
        writeln!(
            out,
            "{:>2}. {}{}  score {:.4}",
            i + 1,
            file.path,
            role_tag(file.role),
            file.score
        )?;
        for hit in &file.chunks {
            let symbol = hit.symbol.as_deref().unwrap_or("");
            let parts = parts_text(hit, explain);
            writeln!(
                out,
                "      {}-{} {symbol}{parts}",
                hit.start_line, hit.end_line
            )?;
        }
    }
    Ok(())
}

/// ` [role]` for a file that is not source.
fn role_tag(role: &str) -> String {
    if role == Role::Source.name() {
        String::new()
    } else {
        format!(" [{role}]")
    }
}

/// The lists that found a result with its rank in each; with `explain`, every part of
/// its score too: the scores behind the ranks (BM25 and the dot product, scaled as in
/// JSON), the fused sum, the path's points, the role's weight, the file's bonus.
fn parts_text(hit: &HitJson, explain: bool) -> String {
    let p = &hit.parts;
    let mut s = String::new();
    if let (Some(rank), Some(level)) = (p.definition_rank, p.definition_level) {
        s += &format!(" definition #{rank}");
        if explain {
            s += &format!(" (level {level})");
        }
    }
    if let Some(t) = &hit.text_score {
        s += &format!(" text #{}", t.rank);
        if explain {
            s += &format!(" (bm25 {:.3})", t.bm25);
        }
    }
    if let Some(v) = &hit.vector_score {
        s += &format!(" vector #{}", v.rank);
        if explain {
            s += &format!(" (dot {:.4})", v.dot as f64 / (1u64 << 30) as f64);
        }
    }
    if !explain {
        return s;
    }
    s += &format!(" fused {:.4}", p.fused);
    if p.path_points > 0 {
        s += &format!(" path {}/{PATH_ONE}", p.path_points);
    }
    if p.coverage_points > 0 {
        s += &format!(" coverage {}/{PATH_ONE}", p.coverage_points);
    }
    if let Some(rank) = p.file_vector_rank {
        s += &format!(" file vector #{rank}");
    }
    if let Some(rank) = p.file_text_rank {
        s += &format!(" file text #{rank}");
    }
    if p.evidence_bonus > 0.0 {
        s += &format!(" file evidence +{:.4}", p.evidence_bonus);
    }
    if p.role_weight != 100 {
        s += &format!(" {} x{}%", hit.role, p.role_weight);
    }
    if let Some(was) = p.capped_from {
        s += &format!(" kept below a word match (was {was:.4})");
    }
    if p.file_bonus > 0.0 {
        s += &format!(" file +{:.4}", p.file_bonus);
    }
    s
}

/// A fixed-point score (32 fractional bits) as a float.
fn unit(v: u64) -> f64 {
    v as f64 / (1u64 << 32) as f64
}

impl ExplainJson {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "state root {}", self.root)?;
        writeln!(
            out,
            "query: {} intent; definitions looked up: {}; words for file names: {}",
            self.intent,
            list_or_none(&self.identifiers),
            list_or_none(&self.words)
        )?;
        for (i, s) in self.segments.iter().enumerate() {
            let place = if s.mapped {
                "mapped from the index file"
            } else {
                "in memory"
            };
            let graph = if s.graph { ", HNSW graph" } else { "" };
            writeln!(
                out,
                "segment {i}: {} chunks, {} live, {place}{graph}",
                s.chunks, s.live
            )?;
        }
        for t in &self.terms {
            writeln!(
                out,
                "term {:?}: in {} chunks, idf {:.3}",
                t.term, t.df, t.idf
            )?;
        }
        writeln!(
            out,
            "text: {} chunks scored, top {} kept",
            self.text_candidates, self.depth
        )?;
        self.write_vectors(out)?;
        let w = &self.weights;
        writeln!(
            out,
            "fusion: reciprocal ranks weighted text {}%, vectors {}%, definitions {}%; a file \
             named wholly by the query +{}% of a first rank\n",
            w.text, w.vector, w.definitions, w.path
        )
    }

    fn write_vectors(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.vector_runs {
            return writeln!(out, "vectors: not searched");
        }
        let how = if self.vector_exact {
            "exact scan of".to_owned()
        } else if self.vector_codes {
            format!(
                "sign codes (the best {CODE_CANDIDATES} of each mapped segment re-scored exactly) of"
            )
        } else {
            "graph over".to_owned()
        };
        writeln!(
            out,
            "vectors: {how} {} vectors, top {} kept",
            self.vectors, self.depth
        )
    }
}

fn list_or_none(list: &[String]) -> String {
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

/// `--explain` in JSON.
#[derive(Serialize, JsonSchema)]
struct ExplainJson {
    root: String,
    intent: &'static str,
    identifiers: Vec<String>,
    words: Vec<String>,
    segments: Vec<SegmentJson>,
    terms: Vec<TermJson>,
    depth: usize,
    text_candidates: usize,
    vector_runs: bool,
    vectors: usize,
    vector_exact: bool,
    vector_codes: bool,
    vector_weight: u32,
    weights: WeightsJson,
}

#[derive(Serialize, JsonSchema)]
struct SegmentJson {
    chunks: usize,
    live: usize,
    mapped: bool,
    graph: bool,
}

#[derive(Serialize, JsonSchema)]
struct TermJson {
    term: String,
    df: u64,
    idf: f64,
}

#[derive(Serialize, JsonSchema)]
struct WeightsJson {
    text: u32,
    vector: u32,
    definitions: u32,
    path: u32,
}

impl ExplainJson {
    fn of(e: &Explanation) -> Self {
        let segment = |s: &cfs_search::SegmentExplained| SegmentJson {
            chunks: s.chunks,
            live: s.live,
            mapped: s.mapped,
            graph: s.graph,
        };
        let term = |t: &cfs_search::TermExplained| TermJson {
            term: t.term.clone(),
            df: t.df,
            idf: t.idf as f64 / f64::from(1u32 << 16),
        };
        Self {
            root: e.root.to_hex(),
            intent: e.intent.name(),
            identifiers: e.identifiers.clone(),
            words: e.words.clone(),
            segments: e.segments.iter().map(segment).collect(),
            terms: e.terms.iter().map(term).collect(),
            depth: e.depth,
            text_candidates: e.text_candidates,
            vector_runs: e.vector_runs,
            vectors: e.vectors,
            vector_exact: e.vector_exact,
            vector_codes: e.vector_codes,
            vector_weight: e.vector_weight,
            weights: WeightsJson {
                text: e.weights.text,
                vector: e.weights.vector,
                definitions: e.weights.definitions,
                path: e.weights.path,
            },
        }
    }
}

/// A result's BM25 score (as a float) and rank.
#[derive(Serialize, JsonSchema)]
struct TextScoreJson {
    bm25: f64,
    rank: usize,
}

/// A result's dot product and rank.
#[derive(Serialize, JsonSchema)]
struct VectorScoreJson {
    dot: i64,
    rank: usize,
}

/// How a result's score was made (`cfs_search::Parts`), scores as floats.
#[derive(Serialize, JsonSchema)]
struct PartsJson {
    definition_rank: Option<usize>,
    definition_level: Option<u64>,
    fused: f64,
    path_points: u64,
    coverage_points: u64,
    file_vector_rank: Option<usize>,
    file_text_rank: Option<usize>,
    evidence_bonus: f64,
    role_weight: u32,
    chunk: f64,
    capped_from: Option<f64>,
    file_bonus: f64,
}

/// One chunk result of `cfs search --json`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct HitJson {
    pub(crate) path: String,
    paths: Vec<String>,
    pub(crate) start_line: u32,
    pub(crate) end_line: u32,
    byte_offset: u64,
    byte_length: u32,
    pub(crate) score: f64,
    text_score: Option<TextScoreJson>,
    vector_score: Option<VectorScoreJson>,
    parts: PartsJson,
    chunk_id: String,
    kind: String,
    language: Option<String>,
    pub(crate) symbol: Option<String>,
    role: &'static str,
    pub(crate) snippet: String,
    text: String,
    root: String,
}

impl HitJson {
    pub(crate) fn of(hit: &Hit) -> Self {
        let p = &hit.parts;
        Self {
            path: hit.path.clone(),
            paths: hit.paths.clone(),
            start_line: hit.start_line,
            end_line: hit.end_line,
            byte_offset: hit.byte_offset,
            byte_length: hit.byte_length,
            score: hit.score,
            text_score: hit.text_score.map(|(s, rank)| TextScoreJson {
                bm25: unit(s),
                rank,
            }),
            vector_score: hit
                .vector_score
                .map(|(dot, rank)| VectorScoreJson { dot, rank }),
            parts: PartsJson {
                definition_rank: p.definition.map(|d| d.0),
                definition_level: p.definition.map(|d| d.1),
                fused: unit(p.fused),
                path_points: p.evidence.path,
                coverage_points: p.evidence.coverage,
                file_vector_rank: p.evidence.vector_rank,
                file_text_rank: p.evidence.text_rank,
                evidence_bonus: unit(p.evidence_bonus),
                role_weight: p.role.map_or(100, |r| r.1),
                chunk: unit(p.chunk),
                capped_from: p.capped_from.map(unit),
                file_bonus: unit(p.file_bonus),
            },
            chunk_id: hit.chunk_id.to_string(),
            kind: hit.kind.clone(),
            language: hit.language.clone(),
            symbol: hit.symbol.clone(),
            role: hit.role.name(),
            snippet: hit.snippet.clone(),
            text: hit.text.clone(),
            root: hit.root.to_hex(),
        }
    }
}

/// One file result of `cfs search --files --json`.
#[derive(Serialize, JsonSchema)]
struct FileJson {
    path: String,
    paths: Vec<String>,
    role: &'static str,
    score: f64,
    chunks: Vec<HitJson>,
}

impl FileJson {
    fn of(f: &FileHit) -> Self {
        Self {
            path: f.path.clone(),
            paths: f.paths.clone(),
            role: f.role.name(),
            score: f.score,
            chunks: f.chunks.iter().map(HitJson::of).collect(),
        }
    }
}

/// Rebuilds the runtime index from the committed state, checks it against the state,
/// writes its index file, and reports its size and build time.
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
    let file = index_file(&store);
    if agrees {
        index.save_index_file(&file)?;
    }
    let report = RebuildReport {
        state_root: snap.state_root().to_hex(),
        chunks: snap.n_chunks(),
        documents: snap.n_documents(),
        segments: snap.n_segments(),
        seconds,
        agrees_with_state: agrees,
        cache: file.display().to_string(),
    };
    emit(&report, common.json)
}

/// What `cfs rebuild-index` answers.
#[derive(Serialize, JsonSchema)]
pub struct RebuildReport {
    state_root: String,
    chunks: usize,
    documents: usize,
    segments: usize,
    seconds: f64,
    agrees_with_state: bool,
    /// The index file written.
    cache: String,
}

impl Report for RebuildReport {
    fn ok(&self) -> bool {
        self.agrees_with_state
    }

    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "index of {} chunks in {} documents rebuilt in {:.2} s",
            self.chunks, self.documents, self.seconds
        )?;
        writeln!(out, "state root {}", self.state_root)?;
        let verdict = if self.agrees_with_state {
            "index agrees with the committed state"
        } else {
            "INDEX DISAGREES WITH THE COMMITTED STATE"
        };
        writeln!(out, "{verdict}")
    }
}
