//! `cfs context`: a query's answer as text for a model, within a budget of tokens (the
//! MCP tool `context` answers the same report).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use cfs_search::{Context, ContextFile, MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS, Span};
use schemars::JsonSchema;
use serde::Serialize;

use crate::db_search::RepoHead;
use crate::open::Common;
use crate::report::{Report, emit};
use crate::search_cmds::{Filters, load_index};

#[derive(Debug, clap::Args)]
pub struct ContextArgs {
    /// What the context is for: a question, a description, a name.
    query: String,
    /// The most tokens the context may take (estimated: docs/cli.md says how).
    #[arg(long, default_value_t = 4000, value_parser = clap::value_parser!(u32).range(i64::from(MIN_CONTEXT_TOKENS)..=i64::from(MAX_CONTEXT_TOKENS)))]
    tokens: u32,
    /// Files of the file answer the context draws from, best first (1 to 100).
    #[arg(long, short = 'k', default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    k: u32,
    #[command(flatten)]
    filters: Filters,
    /// Pack the best files of the repositories published in this PostgreSQL database
    /// instead of a store's (each ranked as its store would rank it, merged by score).
    #[arg(long, value_name = "URL")]
    db: Option<String>,
    /// With --db: only this repository (repeatable; default: every one).
    #[arg(long = "repo", value_name = "NAME", requires = "db")]
    repos: Vec<String>,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: &ContextArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = &args.db {
        return run_db(args, url);
    }
    let (_store, index, embedder) = load_index(&args.common)?;
    let query = args.filters.query(&args.query, args.k as usize);
    let context = index.context(&query, &*embedder, args.tokens)?;
    let report = ContextReport::of(&context);
    let code = emit(&report, args.common.json)?;
    if !args.common.json && std::io::stderr().is_terminal() {
        say_summary(&report.files, report.tokens, report.budget, report.left_out);
    }
    // As `cfs search`: the index and the model are left to the process's exit.
    std::mem::forget((index, embedder));
    Ok(code)
}

/// The line a terminal gets on standard error: tokens used of the budget, spans, files
/// and chunks left out.
fn say_summary(files: &[ContextFileJson], tokens: u32, budget: u32, left_out: usize) {
    let spans: usize = files.iter().map(|f| f.spans.len()).sum();
    eprintln!(
        "{tokens} of {budget} tokens: {spans} spans of {} files; {left_out} chunks did not fit",
        files.len()
    );
}

/// `cfs context --db URL`: the context of the database's repositories.
fn run_db(args: &ContextArgs, url: &str) -> anyhow::Result<ExitCode> {
    let mut db = cfs_postgres::Database::connect(url)?;
    let embedder = crate::db_search::embedder_of(&mut db, &args.repos)?;
    let query = args.filters.query(&args.query, args.k as usize);
    let found = cfs_postgres::context(&mut db, &query, &*embedder, &args.repos, args.tokens)?;
    let report = DbContextReport {
        database: found.database,
        standby: found.standby,
        heads: found.repos.into_iter().map(RepoHead::from).collect(),
        budget: found.budget,
        tokens: found.packed.tokens,
        left_out: found.packed.left_out,
        files: found.packed.files.iter().map(ContextFileJson::of).collect(),
        text: found.packed.render(),
    };
    let code = emit(&report, args.common.json)?;
    if !args.common.json && std::io::stderr().is_terminal() {
        say_summary(&report.files, report.tokens, report.budget, report.left_out);
    }
    Ok(code)
}

/// What `cfs context --db` answers: the context, and the database and heads it was read
/// from.
#[derive(Serialize, JsonSchema)]
pub struct DbContextReport {
    database: String,
    standby: bool,
    /// The repositories read, each at its head.
    heads: Vec<RepoHead>,
    budget: u32,
    tokens: u32,
    left_out: usize,
    /// Each naming its repository.
    files: Vec<ContextFileJson>,
    /// The context as Markdown, each span cited `[REPO] PATH:LINES`.
    text: String,
}

impl Report for DbContextReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(self.text.as_bytes())
    }
}

/// What `cfs context` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextReport {
    /// The state root the text comes from.
    root: String,
    budget: u32,
    /// The estimated tokens of `text`.
    tokens: u32,
    /// Chunks the ranking found that did not fit.
    left_out: usize,
    files: Vec<ContextFileJson>,
    /// The context as Markdown: each span a line citing its path and lines, then its
    /// text fenced (left out of the MCP tool's structured answer, whose text block it
    /// is).
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ContextFileJson {
    /// The repository, in a context of a database's repositories.
    #[serde(skip_serializing_if = "Option::is_none")]
    repo: Option<String>,
    path: String,
    role: &'static str,
    language: Option<String>,
    spans: Vec<SpanJson>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct SpanJson {
    start_line: u32,
    end_line: u32,
    chunk_ids: Vec<String>,
    symbols: Vec<String>,
    /// Whether the text stops before its chunk's end.
    cut: bool,
    /// The estimated tokens of its rendering.
    tokens: u32,
    /// The file's lines `start_line`-`end_line` (left out of the MCP tool's structured
    /// answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

impl ContextReport {
    pub(crate) fn of(c: &Context) -> Self {
        Self {
            root: c.root.to_hex(),
            budget: c.budget,
            tokens: c.tokens,
            left_out: c.left_out,
            files: c.files.iter().map(ContextFileJson::of).collect(),
            text: Some(c.render()),
        }
    }

    /// The report without its texts, and the rendered context apart: what the MCP tool
    /// answers as structured content and as its text block, so that the text reaches
    /// the model once.
    pub(crate) fn split_text(mut self) -> (Self, String) {
        self.files = self.files.into_iter().map(ContextFileJson::cited).collect();
        let text = self.text.take().unwrap_or_default();
        (self, text)
    }
}

impl ContextFileJson {
    pub(crate) fn of(f: &ContextFile) -> Self {
        Self {
            repo: f.repo.clone(),
            path: f.path.clone(),
            role: f.role.name(),
            language: f.language.clone(),
            spans: f.spans.iter().map(SpanJson::of).collect(),
        }
    }
}

impl ContextFileJson {
    /// The file without its spans' texts (an MCP answer's structured part).
    pub(crate) fn cited(mut self) -> Self {
        for span in &mut self.spans {
            span.text = None;
        }
        self
    }
}

impl SpanJson {
    fn of(s: &Span) -> Self {
        Self {
            start_line: s.start_line,
            end_line: s.end_line,
            chunk_ids: s.chunks().map(|c| c.to_string()).collect(),
            symbols: s.symbols(),
            cut: s.cut,
            tokens: s.tokens,
            text: Some(s.text.clone()),
        }
    }
}

impl Report for ContextReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(self.text.as_deref().unwrap_or_default().as_bytes())
    }
}
