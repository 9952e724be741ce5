//! `cfs search --db URL`: search the repositories published in a database.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use cfs_postgres::{Database, DbSearchOptions};
use schemars::JsonSchema;
use serde::Serialize;

use crate::open::EmbedderChoice;
use crate::output::spinner;
use crate::report::{Report, emit};
use crate::search_cmds::{HitJson, SearchArgs};

pub fn search_db(args: &SearchArgs, url: &str) -> anyhow::Result<ExitCode> {
    let mut db = Database::connect(url)?;
    let embedder = embedder_of(&mut db, &args.repos)?;
    let query = args.query();
    let options = DbSearchOptions {
        repos: args.repos.clone(),
        check_answers: args.check_answers,
    };
    let started = std::time::Instant::now();
    let bar = spinner(args.common.json, "searching");
    let report = cfs_postgres::search(&mut db, &query, &*embedder, &options)?;
    bar.finish_and_clear();
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let answer = DbSearchAnswer {
        database: report.database,
        standby: report.standby,
        repos: report.repos.into_iter().map(RepoHead::from).collect(),
        hits: report
            .hits
            .iter()
            .map(|h| DbHitJson {
                repo: h.repo.clone(),
                hit: HitJson::of(&h.hit),
                proof: h.proof.as_ref().map(|p| ProofJson {
                    chunk_leaf: cfs_core::hex_encode(&p.chunk_leaf),
                    path_leaf: cfs_core::hex_encode(&p.path_leaf),
                    leaves_hashed: p.leaves,
                }),
            })
            .collect(),
    };
    if !args.common.json && std::io::stderr().is_terminal() {
        eprintln!("{} results in {ms:.1} ms", answer.hits.len());
    }
    emit(&answer, args.common.json)
}

/// The embedder of the repositories searched: they must share one.
pub(crate) fn embedder_of(
    db: &mut Database,
    repos: &[String],
) -> anyhow::Result<Box<dyn cfs_ingest::Embedder>> {
    let models = cfs_postgres::models(db, repos)?;
    let models: Vec<&str> = models.iter().map(String::as_str).collect();
    match models[..] {
        [] => bail!("{}: no repository to search is published", db.describe()),
        [model] => Ok(EmbedderChoice::of_model_id(model)
            .with_context(|| format!("{}: embedder {model} is unknown to this cfs", db.describe()))?
            .load_lazily()),
        _ => bail!(
            "{}: the repositories searched were embedded by {}; one search ranks vectors of \
             one model (name the repositories with --repo)",
            db.describe(),
            models.join(" and ")
        ),
    }
}

/// What `cfs search --db` answers.
#[derive(Serialize, JsonSchema)]
pub struct DbSearchAnswer {
    database: String,
    /// Whether the database answered as a standby.
    standby: bool,
    /// The repositories searched and the heads read, in one snapshot.
    repos: Vec<RepoHead>,
    /// The best results of all of them, best first.
    hits: Vec<DbHitJson>,
}

/// A repository searched and the head read.
#[derive(Serialize, JsonSchema)]
pub(crate) struct RepoHead {
    pub(crate) repo: String,
    pub(crate) sequence: u64,
    pub(crate) root: String,
}

impl From<cfs_postgres::SearchedRepo> for RepoHead {
    fn from(r: cfs_postgres::SearchedRepo) -> Self {
        Self {
            repo: r.name,
            sequence: r.sequence,
            root: r.root.to_hex(),
        }
    }
}

/// One result: a chunk of a repository (`root`: its head's state root).
#[derive(Serialize, JsonSchema)]
struct DbHitJson {
    repo: String,
    #[serde(flatten)]
    hit: HitJson,
    /// With --check-answers: what proved it against the head.
    proof: Option<ProofJson>,
}

/// How a result was proved.
#[derive(Serialize, JsonSchema)]
struct ProofJson {
    /// The leaf of its chunk's row and of its path's row, each re-hashed from its
    /// encoding.
    chunk_leaf: String,
    path_leaf: String,
    /// Leaves of their buckets hashed into bucket roots.
    leaves_hashed: usize,
}

impl Report for DbSearchAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.hits.is_empty() {
            writeln!(out, "no results")?;
        }
        for (i, h) in self.hits.iter().enumerate() {
            let hit = &h.hit;
            let symbol = hit
                .symbol
                .as_deref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            let proved = if h.proof.is_some() { "  proved" } else { "" };
            writeln!(
                out,
                "{:>2}. {} {}:{}-{}{symbol}  score {:.4}{proved}",
                i + 1,
                h.repo,
                hit.path,
                hit.start_line,
                hit.end_line,
                hit.score,
            )?;
            for line in hit.snippet.lines() {
                writeln!(out, "      {line}")?;
            }
        }
        let heads: Vec<String> = self
            .repos
            .iter()
            .map(|r| format!("{} {}", r.repo, &r.root[..12]))
            .collect();
        let from = if self.standby { "standby" } else { "primary" };
        writeln!(out, "from {} ({from}): {}", self.database, heads.join(", "))
    }
}
