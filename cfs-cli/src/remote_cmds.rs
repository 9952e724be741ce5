//! `cfs push`, `cfs pull`, `cfs clone`, `cfs bundle` and `cfs remote`: a store's state
//! published to a remote and taken from one, and the remote itself collected and
//! checked (cfs-remote; docs/format.md, "Remotes").

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use cfs_core::hex_encode;
use cfs_remote::{
    Progress, PullReport, PullTarget, PushOptions, fetch_manifest, pull_new, pull_with, push,
};
use cfs_store::Store;
use schemars::JsonSchema;
use serde::Serialize;

use crate::locate::{store_in, tree_store};
use crate::open::{Common, embedder_for, keep_out_of_git, open_write, tree_root};
use crate::output::{spinner, transfer_progress};
use crate::report::{Report, emit};

/// Which state of the remote a pull takes.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// The branch whose newest state to take.
    #[arg(long, default_value = cfs_remote::DEFAULT_BRANCH, conflicts_with_all = ["commit", "manifest"])]
    branch: String,
    /// The state pushed for this git commit (hex).
    #[arg(long)]
    commit: Option<String>,
    /// The state of this manifest (64 hex digits).
    #[arg(long, conflicts_with = "commit")]
    manifest: Option<String>,
    /// The state pushed for the tree's git HEAD or its nearest ancestor that has one
    /// (of the 256 latest).
    #[arg(long, conflicts_with_all = ["commit", "manifest"])]
    nearest: bool,
}

impl Target {
    /// What to pull; `tree` is the git work tree `--nearest` looks in.
    fn pull_target(&self, tree: &Path) -> anyhow::Result<PullTarget> {
        Ok(match (&self.commit, &self.manifest) {
            _ if self.nearest => {
                let commits = cfs_store::git::ancestors(tree, 256)?;
                if commits.is_empty() {
                    bail!(
                        "{}: --nearest needs a git work tree with commits",
                        tree.display()
                    );
                }
                PullTarget::Nearest(commits)
            }
            (Some(commit), _) => PullTarget::Commit(commit.clone()),
            (None, Some(manifest)) => PullTarget::Manifest(manifest.clone()),
            (None, None) => PullTarget::Branch(self.branch.clone()),
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The remote: a folder path, file:// URL or s3://bucket/prefix.
    remote: String,
    /// The branch to publish on.
    #[arg(long, default_value = cfs_remote::DEFAULT_BRANCH)]
    branch: String,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The remote: a folder path, file:// URL, s3://bucket/prefix, http(s):// URL of a
    /// served remote, or a bundle file.
    remote: String,
    /// The tree whose store to pull into (default: the current folder); its store is
    /// created when it has none.
    path: Option<PathBuf>,
    #[command(flatten)]
    target: Target,
    /// Then re-embed N of the pulled chunks, spread over them, and compare the vectors
    /// bit for bit.
    #[arg(long, value_name = "N")]
    check: Option<usize>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct CloneArgs {
    /// The remote: a folder path, file:// URL, s3://bucket/prefix, or http(s):// URL of
    /// a served remote.
    remote: String,
    /// The folder to make the store in (its .cfs/); it must hold no store.
    path: PathBuf,
    #[command(flatten)]
    target: Target,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `cfs push REMOTE`: publishes the store's state; the git commit the store last
/// recorded goes with it when the state is still the one recorded with it.
pub fn push_cmd(args: &PushArgs) -> anyhow::Result<ExitCode> {
    let store = open_write(&args.common)?;
    let remote = cfs_remote::open(&args.remote)?;
    let git_commit = recorded_commit(&store)?;
    let options = PushOptions {
        branch: args.branch.clone(),
        git_commit: git_commit.clone(),
    };
    let bar = spinner(args.common.json, "pushing");
    let report = push(&store, &*remote, &options)?;
    bar.finish_and_clear();
    let answer = PushAnswer {
        remote: remote.describe(),
        branch: args.branch.clone(),
        state_root: report.root.to_hex(),
        manifest: hex_encode(&report.manifest),
        published: report.published,
        git_commit,
        tables_sent: report.tables_sent,
        rows_sent: report.rows_sent,
        buckets: report.buckets,
        bytes_sent: report.bytes_sent,
        manifest_bytes: report.manifest_bytes,
        bytes_fetched: report.bytes_fetched,
        retries: report.retries,
    };
    emit(&answer, args.common.json)
}

/// `cfs push --json`.
#[derive(Serialize, JsonSchema)]
pub struct PushAnswer {
    remote: String,
    branch: String,
    state_root: String,
    manifest: String,
    /// The ref written; null when the branch held this state already.
    published: Option<String>,
    git_commit: Option<String>,
    /// Row tables sent: one per bucket whose root changed.
    tables_sent: usize,
    /// Rows sent: those the remote lacked.
    rows_sent: usize,
    buckets: usize,
    bytes_sent: u64,
    manifest_bytes: u64,
    /// Bytes read from the remote to compare with its newest state.
    bytes_fetched: u64,
    retries: u32,
}

impl Report for PushAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match &self.published {
            None => writeln!(
                out,
                "{} already holds {} on {}",
                self.remote, self.state_root, self.branch
            ),
            Some(name) => writeln!(
                out,
                "pushed {} to {} as {name}: {} rows in {} of {} buckets, {} bytes sent \
                 (manifest {}), {} read",
                self.state_root,
                self.remote,
                self.rows_sent,
                self.tables_sent,
                self.buckets,
                self.bytes_sent,
                self.manifest_bytes,
                self.bytes_fetched
            ),
        }
    }
}

/// `cfs pull REMOTE [PATH]`.
pub fn pull_cmd(args: &PullArgs) -> anyhow::Result<ExitCode> {
    let root = tree_root(args.path.as_deref())?;
    let file = tree_store(&root, args.common.store.as_deref());
    let into = PullInto {
        file,
        remote: &args.remote,
        target: args.target.pull_target(&root)?,
        json: args.common.json,
    };
    let (mut answer, pulled) = into.pull()?;
    if let Some(n) = args.check {
        let store = Store::open(&into.file)?;
        let embedder = embedder_for(&store)?;
        let bar = spinner(args.common.json, "re-embedding pulled chunks to compare");
        let check = store.check_vectors_of(&*embedder, &cfs_store::spread(&pulled, Some(n)))?;
        bar.finish_and_clear();
        answer.vectors_checked = Some(check.checked);
        answer.vectors_wrong = Some(check.wrong);
    }
    emit(&answer, args.common.json)
}

/// `cfs clone REMOTE PATH`.
pub fn clone_cmd(args: &CloneArgs) -> anyhow::Result<ExitCode> {
    let file = store_in(&args.path);
    if file.exists() {
        bail!(
            "{}: a store is there already (pull into it instead)",
            file.display()
        );
    }
    let into = PullInto {
        file,
        remote: &args.remote,
        target: args.target.pull_target(&std::env::current_dir()?)?,
        json: args.json,
    };
    emit(&into.pull()?.0, args.json)
}

/// `cfs bundle create` and `cfs bundle apply`.
#[derive(Debug, clap::Subcommand)]
pub enum BundleCommand {
    /// Write the store's state to FILE, for hand-over without a network.
    Create(BundleCreateArgs),
    /// Take the state in bundle FILE into the tree's store, as `cfs pull` does.
    Apply(PullArgs),
}

#[derive(Debug, clap::Args)]
pub struct BundleArgs {
    #[command(subcommand)]
    command: BundleCommand,
}

#[derive(Debug, clap::Args)]
pub struct BundleCreateArgs {
    /// The bundle file to write (replaced if it is there).
    file: PathBuf,
    /// Hold only what this earlier bundle lacks (the bundle then applies to a store at
    /// that bundle's state).
    #[arg(long, value_name = "BUNDLE")]
    since: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// `cfs bundle ...`.
pub fn bundle_cmd(args: &BundleArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        BundleCommand::Create(create) => bundle_create(create),
        BundleCommand::Apply(apply) => pull_cmd(apply),
    }
}

fn bundle_create(args: &BundleCreateArgs) -> anyhow::Result<ExitCode> {
    let store = open_write(&args.common)?;
    let options = PushOptions {
        git_commit: recorded_commit(&store)?,
        ..PushOptions::default()
    };
    let report = cfs_remote::create_bundle(&store, &args.file, args.since.as_deref(), &options)?;
    let answer = BundleAnswer {
        bundle: args.file.display().to_string(),
        state_root: report.push.root.to_hex(),
        manifest: hex_encode(&report.push.manifest),
        since: report.since.map(|m| hex_encode(&m)),
        objects: report.objects,
        bytes: report.bytes,
        rows: report.push.rows_sent,
    };
    emit(&answer, args.common.json)
}

/// `cfs bundle create --json`.
#[derive(Serialize, JsonSchema)]
pub struct BundleAnswer {
    bundle: String,
    state_root: String,
    manifest: String,
    /// The manifest of the bundle it was made since; null for a whole bundle.
    since: Option<String>,
    objects: usize,
    bytes: u64,
    /// Rows the bundle carries (those the bundle it was made since lacks).
    rows: usize,
}

impl Report for BundleAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let since = self
            .since
            .as_deref()
            .map(|m| format!(" since {}", &m[..16]))
            .unwrap_or_default();
        writeln!(
            out,
            "wrote {} ({} bytes, {} rows){since}: state {}",
            self.bundle, self.bytes, self.rows, self.state_root
        )
    }
}

/// The git commit the store's last index recorded, while the state is still the one it
/// was recorded with.
fn recorded_commit(store: &Store) -> anyhow::Result<Option<String>> {
    let root = store.state_root()?;
    Ok(store
        .git_head()?
        .filter(|(_, at)| *at == root)
        .map(|(commit, _)| commit))
}

/// `cfs remote ...`: work on a remote itself.
#[derive(Debug, clap::Args)]
pub struct RemoteArgs {
    #[command(subcommand)]
    command: RemoteCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum RemoteCommand {
    /// Remove the refs past the newest N of each branch and every object no kept ref
    /// reaches, once older than the grace period.
    Gc(RemoteGcArgs),
    /// Read every ref, the manifests they name and every pack those reach, and check
    /// each against its hash and roots; exit 1 on any problem.
    Verify(RemoteVerifyArgs),
}

#[derive(Debug, clap::Args)]
pub struct RemoteVerifyArgs {
    /// The remote: a folder path, file:// URL or s3://bucket/prefix.
    remote: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn remote_verify(args: &RemoteVerifyArgs) -> anyhow::Result<ExitCode> {
    let remote = cfs_remote::open(&args.remote)?;
    let bar = spinner(args.json, "reading every object of the remote");
    let report = cfs_remote::check(&*remote)?;
    bar.finish_and_clear();
    let answer = RemoteVerifyAnswer {
        remote: remote.describe(),
        ok: report.problems.is_empty(),
        refs: report.refs,
        manifests: report.manifests,
        packs: report.packs,
        bytes: report.bytes,
        problems: report.problems,
    };
    emit(&answer, args.json)
}

/// `cfs remote verify --json`.
#[derive(Serialize, JsonSchema)]
pub struct RemoteVerifyAnswer {
    remote: String,
    ok: bool,
    refs: usize,
    manifests: usize,
    packs: usize,
    bytes: u64,
    /// One line per missing or damaged ref, manifest, group or pack.
    problems: Vec<String>,
}

impl Report for RemoteVerifyAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let verdict = if self.ok { "ok" } else { "DAMAGED" };
        writeln!(
            out,
            "{}: {verdict}: {} refs, {} manifests, {} packs, {} bytes read",
            self.remote, self.refs, self.manifests, self.packs, self.bytes
        )?;
        for problem in &self.problems {
            writeln!(out, "  {problem}")?;
        }
        Ok(())
    }

    fn ok(&self) -> bool {
        self.ok
    }
}

#[derive(Debug, clap::Args)]
pub struct RemoteGcArgs {
    /// The remote: a folder path, file:// URL or s3://bucket/prefix.
    remote: String,
    /// The newest refs of each branch to keep.
    #[arg(long, default_value_t = 10, value_name = "N")]
    keep: usize,
    /// Objects younger than this many minutes are kept, reached or not (a push under
    /// way is never cut).
    #[arg(long, default_value_t = 60, value_name = "MINUTES")]
    grace_minutes: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `cfs remote ...`.
pub fn remote_cmd(args: &RemoteArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        RemoteCommand::Gc(gc) => remote_gc(gc),
        RemoteCommand::Verify(verify) => remote_verify(verify),
    }
}

fn remote_gc(args: &RemoteGcArgs) -> anyhow::Result<ExitCode> {
    let remote = cfs_remote::open(&args.remote)?;
    let options = cfs_remote::GcOptions {
        keep: args.keep,
        grace: std::time::Duration::from_secs(args.grace_minutes * 60),
    };
    let bar = spinner(args.json, "collecting the remote's garbage");
    let report = cfs_remote::gc(&*remote, &options)?;
    bar.finish_and_clear();
    let answer = RemoteGcAnswer {
        remote: remote.describe(),
        refs_kept: report.refs_kept,
        refs_removed: report.refs_removed,
        manifests_kept: report.manifests_kept,
        objects_kept: report.objects_kept,
        objects_young: report.objects_young,
        objects_removed: report.objects_removed,
    };
    emit(&answer, args.json)
}

/// `cfs remote gc --json`.
#[derive(Serialize, JsonSchema)]
pub struct RemoteGcAnswer {
    remote: String,
    refs_kept: usize,
    refs_removed: usize,
    manifests_kept: usize,
    objects_kept: usize,
    /// Objects no kept ref reaches, kept for being younger than the grace period.
    objects_young: usize,
    objects_removed: usize,
}

impl Report for RemoteGcAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{}: removed {} refs and {} objects; kept {} refs, {} manifests, {} objects ({} only for being young)",
            self.remote,
            self.refs_removed,
            self.objects_removed,
            self.refs_kept,
            self.manifests_kept,
            self.objects_kept + self.objects_young,
            self.objects_young
        )
    }
}

/// A pull into the store file `file`, made when there is none.
struct PullInto<'a> {
    file: PathBuf,
    remote: &'a str,
    target: PullTarget,
    json: bool,
}

impl PullInto<'_> {
    /// Pulls: the answer, and the embeddings the pull brought.
    fn pull(&self) -> anyhow::Result<(PullAnswer, Vec<cfs_core::EmbeddingId>)> {
        let remote = cfs_remote::open(self.remote)?;
        let (name, manifest) = fetch_manifest(&*remote, &self.target)?;
        let created = !self.file.is_file();
        let bar = transfer_progress(self.json);
        let progress = |p: &Progress| {
            bar.set_message(p.stage);
            bar.set_length(p.total);
            bar.set_position(p.done);
        };
        let report = if created {
            let (store, report) = pull_new(&self.file, &*remote, &name, &manifest, &progress)?;
            drop(store);
            keep_out_of_git(&self.file)?;
            report
        } else {
            let store = Store::open(&self.file)
                .with_context(|| format!("cannot open {} for writing", self.file.display()))?;
            pull_with(&store, &*remote, &name, &manifest, &progress)?
        };
        bar.finish_and_clear();
        let answer = PullAnswer {
            git_commit: manifest.git_commit.clone(),
            ..PullAnswer::new(&report, remote.describe(), &self.file, created)
        };
        Ok((answer, report.embeddings_pulled))
    }
}

/// `cfs pull --json` and `cfs clone --json`.
#[derive(Serialize, JsonSchema)]
pub struct PullAnswer {
    remote: String,
    store: String,
    /// The store was made by this pull.
    created: bool,
    manifest: String,
    /// The git commit the pushed tree was at, when the push named one.
    git_commit: Option<String>,
    previous_root: String,
    state_root: String,
    buckets_fetched: usize,
    vector_buckets_fetched: usize,
    bytes_fetched: u64,
    requests: u64,
    rows_checked: u64,
    documents_added: usize,
    paths_bound: usize,
    paths_removed: usize,
    embeddings_added: usize,
    vectors_cached: usize,
    /// With --check: vectors re-embedded and compared.
    vectors_checked: Option<usize>,
    /// With --check: one line per vector that differed.
    vectors_wrong: Option<Vec<String>>,
}

impl PullAnswer {
    fn new(r: &PullReport, remote: String, file: &Path, created: bool) -> Self {
        Self {
            remote,
            store: file.display().to_string(),
            created,
            manifest: hex_encode(&r.manifest),
            git_commit: None,
            previous_root: r.previous_root.to_hex(),
            state_root: r.root.to_hex(),
            buckets_fetched: r.buckets_fetched,
            vector_buckets_fetched: r.vector_buckets_fetched,
            bytes_fetched: r.bytes_fetched,
            requests: r.requests,
            rows_checked: r.rows_checked,
            documents_added: r.documents_added,
            paths_bound: r.paths_bound,
            paths_removed: r.paths_removed,
            embeddings_added: r.embeddings_added,
            vectors_cached: r.vectors_cached,
            vectors_checked: None,
            vectors_wrong: None,
        }
    }
}

impl Report for PullAnswer {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.previous_root == self.state_root {
            writeln!(out, "{} is up to date at {}", self.store, self.state_root)?;
        } else {
            writeln!(
                out,
                "pulled {} into {}: {} buckets and {} vector buckets, {} bytes in {} reads, {} rows checked",
                self.state_root,
                self.store,
                self.buckets_fetched,
                self.vector_buckets_fetched,
                self.bytes_fetched,
                self.requests,
                self.rows_checked
            )?;
            writeln!(
                out,
                "{} documents added, {} paths bound, {} removed, {} embeddings added, {} vectors cached",
                self.documents_added,
                self.paths_bound,
                self.paths_removed,
                self.embeddings_added,
                self.vectors_cached
            )?;
        }
        if let (Some(checked), Some(wrong)) = (self.vectors_checked, &self.vectors_wrong) {
            writeln!(
                out,
                "re-embedded {checked} chunks: {} vectors differ",
                wrong.len()
            )?;
            for line in wrong {
                writeln!(out, "  {line}")?;
            }
        }
        Ok(())
    }

    fn ok(&self) -> bool {
        self.vectors_wrong.as_ref().is_none_or(Vec::is_empty)
    }
}
