//! `cfs publish` and `cfs verify --db`: a store's state published into PostgreSQL as one
//! repository's head, a repository checked from its rows there, and the database's
//! unheld rows collected (cfs-postgres; docs/format.md, "PostgreSQL").

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use cfs_postgres::{Database, PublishOptions};
use schemars::JsonSchema;
use serde::Serialize;

use crate::locate::{find_store, tree_of};
use crate::open::{Common, open_read_file};
use crate::output::{progress_of, spinner};
use crate::report::{Report, emit};

#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The database: postgresql://user@host:port/dbname (or a key=value string).
    url: String,
    /// The repository's name in the database (default: the name of the store's tree).
    #[arg(long, conflicts_with = "gc")]
    repo: Option<String>,
    /// Publish nothing: drop the shared rows no repository holds any more, and the
    /// vectors no embedding names (publishes in flight finish first).
    #[arg(long)]
    gc: bool,
    /// Repair what `cfs verify --db` found: compare every bucket, not only those whose
    /// stored roots differ, and rewrite every row of the repository from the store.
    #[arg(long, conflicts_with = "gc")]
    repair: bool,
    #[command(flatten)]
    common: Common,
}

pub fn publish_cmd(args: &PublishArgs) -> anyhow::Result<ExitCode> {
    let mut db = Database::connect(&args.url)?;
    if args.gc {
        let bar = spinner(args.common.json, "collecting");
        let report = cfs_postgres::gc(&mut db)?;
        bar.finish_and_clear();
        let answer = DbGcAnswer {
            database: db.describe().to_owned(),
            dropped: SharedRows::new(report.rows, report.vectors),
        };
        return emit(&answer, args.common.json);
    }
    let file = find_store(args.common.store.as_deref())?;
    let store = open_read_file(&file)?;
    let repo = match &args.repo {
        Some(name) => name.clone(),
        None => default_repo(&file)?,
    };
    let started = std::time::Instant::now();
    let bar = progress_of(
        0,
        args.common.json,
        &format!("publishing {repo}"),
        "buckets",
    );
    let options = PublishOptions {
        repo,
        repair: args.repair,
    };
    let told = |p: cfs_postgres::PublishProgress| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
    };
    let report = cfs_postgres::publish_with(&store, &mut db, &options, &told)?;
    bar.finish_and_clear();
    let answer = PublishAnswer {
        database: db.describe().to_owned(),
        repo: report.repo,
        state_root: report.root.to_hex(),
        previous_root: report.previous.map(|r| r.to_hex()),
        buckets: report.buckets,
        rows_added: report.rows_added,
        rows_removed: report.rows_removed,
        rows_sent: report.rows_sent,
        rows_shared: report.rows_shared,
        vectors_sent: report.vectors_sent,
        bytes_sent: report.bytes_sent,
        search_rows: report.search_rows,
        retries: report.retries,
        repair: args.repair,
        seconds: started.elapsed().as_secs_f64(),
    };
    emit(&answer, args.common.json)
}

/// The name a store's tree gives its repository: the tree folder's name.
fn default_repo(store_file: &std::path::Path) -> anyhow::Result<String> {
    let tree = tree_of(store_file)
        .and_then(|t| t.canonicalize().ok())
        .with_context(|| {
            format!(
                "{} is not in a tree's .cfs folder: name the repository with --repo",
                store_file.display()
            )
        })?;
    let name = tree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    cfs_postgres::check_name(&name).with_context(|| "name the repository with --repo")?;
    Ok(name)
}

/// `cfs publish --json`.
#[derive(Serialize, JsonSchema)]
pub struct PublishAnswer {
    database: String,
    repo: String,
    state_root: String,
    /// The root the repository's head named before; null for a new repository.
    previous_root: Option<String>,
    /// Buckets whose roots differed.
    buckets: usize,
    rows_added: usize,
    rows_removed: usize,
    /// Shared rows written: the database held them for no repository.
    rows_sent: usize,
    /// Rows added that the database held already.
    rows_shared: usize,
    vectors_sent: usize,
    bytes_sent: u64,
    /// Chunks whose search rows were written (those of every document whose rows
    /// moved).
    search_rows: usize,
    retries: u32,
    /// Whether every row was rewritten (`--repair`).
    repair: bool,
    seconds: f64,
}

impl Report for PublishAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.repair {
            return writeln!(
                out,
                "repaired {} in {} from the store at {}: {} rows written again ({} shared \
                 rows rewritten), {} vectors, in {:.2} s",
                self.repo,
                self.database,
                self.state_root,
                self.rows_added,
                self.rows_sent,
                self.vectors_sent,
                self.seconds
            );
        }
        if self.previous_root.as_deref() == Some(&self.state_root) {
            return writeln!(
                out,
                "{} already holds {} as {}",
                self.database, self.state_root, self.repo
            );
        }
        writeln!(
            out,
            "published {} as {} in {}: {} buckets differed, {} rows added ({} written, {} \
             shared), {} removed, {} vectors, {} bytes in {:.2} s",
            self.state_root,
            self.repo,
            self.database,
            self.buckets,
            self.rows_added,
            self.rows_sent,
            self.rows_shared,
            self.rows_removed,
            self.vectors_sent,
            self.bytes_sent,
            self.seconds
        )
    }
}

/// Shared rows by table, and vectors: what a database stores, or what a collection
/// dropped.
#[derive(Serialize, JsonSchema)]
struct SharedRows {
    paths: u64,
    documents: u64,
    chunks: u64,
    embeddings: u64,
    edges: u64,
    vectors: u64,
}

impl SharedRows {
    /// `rows` by table in state-root order, and `vectors`.
    fn new(rows: [u64; 5], vectors: u64) -> Self {
        let [paths, documents, chunks, embeddings, edges] = rows;
        Self {
            paths,
            documents,
            chunks,
            embeddings,
            edges,
            vectors,
        }
    }
}

impl std::fmt::Display for SharedRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} paths, {} documents, {} chunks, {} embeddings, {} edges, {} vectors",
            self.paths, self.documents, self.chunks, self.embeddings, self.edges, self.vectors
        )
    }
}

/// `cfs publish --gc --json`: shared rows dropped, by table.
#[derive(Serialize, JsonSchema)]
pub struct DbGcAnswer {
    database: String,
    #[serde(flatten)]
    dropped: SharedRows,
}

impl Report for DbGcAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{}: dropped rows no repository holds: {}",
            self.database, self.dropped
        )
    }
}

/// `cfs verify --db URL --repo NAME`.
pub fn verify_db(url: &str, repo: &str, json: bool) -> anyhow::Result<ExitCode> {
    let mut db = Database::connect(url)?;
    let started = std::time::Instant::now();
    let bar = spinner(json, &format!("verifying {repo}"));
    let report = cfs_postgres::verify(&mut db, repo)?;
    bar.finish_and_clear();
    let answer = DbVerifyAnswer {
        ok: report.is_ok(),
        database: db.describe().to_owned(),
        repo: report.repo,
        sequence: report.sequence,
        head_root: report.head.to_hex(),
        computed_root: report.recomputed.to_hex(),
        rows_checked: report.rows_checked,
        damaged: report.damaged,
        damage: report
            .damage
            .into_iter()
            .map(|d| DamageLine {
                table: d.table,
                key: d.key,
                reason: d.reason,
            })
            .collect(),
        seconds: started.elapsed().as_secs_f64(),
    };
    emit(&answer, json)
}

/// `cfs verify --db --json`.
#[derive(Serialize, JsonSchema)]
pub struct DbVerifyAnswer {
    ok: bool,
    database: String,
    repo: String,
    sequence: u64,
    head_root: String,
    computed_root: String,
    rows_checked: u64,
    /// Damaged rows, buckets and roots found; the first 20 are in `damage`.
    damaged: usize,
    damage: Vec<DamageLine>,
    seconds: f64,
}

/// One damaged row, bucket or root.
#[derive(Serialize, JsonSchema)]
struct DamageLine {
    table: String,
    key: String,
    reason: String,
}

impl Report for DbVerifyAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for d in &self.damage {
            writeln!(out, "damaged: {} {}: {}", d.table, d.key, d.reason)?;
        }
        if self.ok {
            writeln!(
                out,
                "{} in {}: {} rows re-hashed, state root {} as its head says ({:.2} s)",
                self.repo, self.database, self.rows_checked, self.head_root, self.seconds
            )
        } else {
            writeln!(
                out,
                "{} in {}: {} damaged; the rows make {}, the head names {}; `cfs publish \
                 --repair` from a sound store of it rewrites them",
                self.repo, self.database, self.damaged, self.computed_root, self.head_root
            )
        }
    }

    fn ok(&self) -> bool {
        self.ok
    }
}

/// `cfs status --db URL`.
pub fn status_db(url: &str, json: bool) -> anyhow::Result<ExitCode> {
    let mut db = Database::connect(url)?;
    let status = cfs_postgres::status(&mut db)?;
    let answer = DbStatusAnswer {
        database: db.describe().to_owned(),
        repositories: status
            .repos
            .into_iter()
            .map(|r| RepoLine {
                name: r.name,
                embedder: r.model_id,
                sequence: r.sequence,
                state_root: r.state_root.map(|s| s.to_hex()),
                published: r.published,
                rows: r.rows,
            })
            .collect(),
        stored: SharedRows::new(status.shared_rows, status.vectors),
        bytes: status.bytes,
    };
    emit(&answer, json)
}

/// `cfs status --db --json`: the repositories, then the shared rows stored.
#[derive(Serialize, JsonSchema)]
pub struct DbStatusAnswer {
    database: String,
    repositories: Vec<RepoLine>,
    #[serde(flatten)]
    stored: SharedRows,
    /// cfs's tables with their indexes and TOAST.
    bytes: u64,
}

/// One published repository.
#[derive(Serialize, JsonSchema)]
struct RepoLine {
    name: String,
    embedder: String,
    sequence: u64,
    /// Null when the stored root is not one (`cfs verify --db` says more).
    state_root: Option<String>,
    /// When its head last moved (UTC).
    published: String,
    /// Rows of its five tables.
    rows: u64,
}

impl Report for DbStatusAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{}: {} repositories",
            self.database,
            self.repositories.len()
        )?;
        for r in &self.repositories {
            let root = r.state_root.as_deref().unwrap_or("(damaged)");
            writeln!(
                out,
                "  {}  {}  {} rows  sequence {}  published {}",
                r.name, root, r.rows, r.sequence, r.published
            )?;
        }
        writeln!(out, "shared rows: {}; {} bytes", self.stored, self.bytes)
    }
}
