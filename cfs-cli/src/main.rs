//! `cfs`: the admin command line of the cfs store.
//!
//! A thin front over the libraries: every command parses its arguments, calls one
//! library function and prints the result for people, or as JSON with `--json`.

mod alloc;
mod chunks;
mod connect_cmd;
mod context_cmd;
#[cfg(unix)]
mod crash;
mod db_cmds;
mod db_search;
mod demo;
mod index_cmds;
mod inspect_cmds;
mod locate;
mod maintain_cmds;
#[cfg(test)]
mod manual_tests;
mod open;
mod output;
mod remote_cmds;
mod report;
mod search_cmds;
mod serve;
mod watch_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// cfs: an embedded, transactional, content-addressed store for code and documents.
#[derive(Debug, Parser)]
#[command(name = "cfs", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Index a folder in memory, then show its state root, a determinism check, an
    /// inclusion proof and a vector query. Without PATH, indexes the cfs sources.
    Demo(demo::Args),
    /// Print the chunks of one file, without a store.
    Chunks(chunks::Args),
    /// Index a folder into its store (PATH/.cfs/ unless --store), creating it if needed;
    /// later runs sync only what changed.
    Index(index_cmds::IndexArgs),
    /// Counts, state root and size of the store.
    Status(inspect_cmds::StatusArgs),
    /// Recompute every hash and root from the rows and check every rule; exit 1 on any
    /// problem.
    Verify(inspect_cmds::VerifyArgs),
    /// The state chain, newest first.
    Log(inspect_cmds::LogArgs),
    /// A document by path, document id or chunk id: its paths, hashes and chunks.
    Show(inspect_cmds::ShowArgs),
    /// An inclusion proof of a chunk, or `--check` a proof offline.
    Prove(inspect_cmds::ProveArgs),
    /// Sync exactly the named files and folders (deleted ones are removed).
    Refresh(index_cmds::RefreshArgs),
    /// Remove cached vectors that no embedding names; `--compact` then shrinks the file.
    Gc(maintain_cmds::GcArgs),
    /// Rebuild a damaged store from its tree, reusing the vectors that verify; the
    /// damaged file is kept aside.
    Repair(maintain_cmds::RepairArgs),
    /// Switch the store to another embedder and embed every chunk with it.
    Reembed(maintain_cmds::ReembedArgs),
    /// Keep the store in step with a folder while it changes, until Ctrl-C.
    Watch(watch_cmd::WatchArgs),
    /// Search the store: BM25 text and vector similarity, fused by reciprocal rank.
    Search(search_cmds::SearchArgs),
    /// A query's answer as text for a model, within a budget of tokens: the best files'
    /// best chunks, joined where they touch, each cited by path and lines.
    Context(context_cmd::ContextArgs),
    /// Serve the store to coding agents: `--mcp` speaks the Model Context Protocol on
    /// standard input and output (tools search, context, get_chunk, get_file, status, refresh,
    /// collections); `--watch` keeps the store in step with the folder meanwhile.
    Serve(serve::ServeArgs),
    /// Register the folder's MCP server with a coding agent (claude-code, cursor,
    /// vscode, claude-desktop, gemini, windsurf, codex) by adding it to the agent's
    /// configuration file; `--remove` takes it out.
    Connect(connect_cmd::ConnectArgs),
    /// Rebuild the runtime search index from the committed state and check that it
    /// agrees with it.
    RebuildIndex(open::Common),
    /// Publish the store's state to a remote (a folder or S3), sending only the buckets
    /// the remote's newest state lacks.
    Push(remote_cmds::PushArgs),
    /// Take a remote's state into the store (created if there is none): only what
    /// differs is fetched, and every row is checked before anything is written.
    Pull(remote_cmds::PullArgs),
    /// Make a store in a new folder from a remote's state.
    Clone(remote_cmds::CloneArgs),
    /// Carry a store's state in one file: `create FILE [--since BUNDLE]`, `apply FILE`.
    Bundle(remote_cmds::BundleArgs),
    /// Publish the store's state into a PostgreSQL database as a repository's head,
    /// sending only the buckets that differ from the repository's there; `--gc` drops
    /// the rows no repository holds.
    Publish(db_cmds::PublishArgs),
    /// Work on a remote itself: `gc REMOTE [--keep N] [--grace-minutes M]`, `verify
    /// REMOTE`.
    Remote(remote_cmds::RemoteArgs),
}

fn main() -> ExitCode {
    alloc::tune();
    if std::env::args().nth(1).as_deref() == Some(open::PDF_CHILD_ARG) {
        return cfs_ingest::pdf_child_main(std::env::args().skip(2));
    }
    #[cfg(unix)]
    crash::install();
    let cli = Cli::parse();
    // A CFS_SIMD this build or this CPU cannot honour is said at once, not found later.
    let result = match cfs_core::cpu::Features::from_env() {
        Ok(_) => guarded(|| dispatch(cli.command)),
        Err(e) => Err(anyhow::anyhow!(e)),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cfs: error: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, each said once: a cause whose text the line
/// already holds (libraries often print their source inside their own message) is
/// left out.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// The message and place of the last panic, for [`guarded`].
static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Runs `command` so that a panic (a bug, or damaged bytes a library did not expect)
/// is an error with a message and exit 1, never a crash with exit 101.
fn guarded(command: impl FnOnce() -> anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = cfs_store::panic_message(info.payload());
        if let Ok(mut slot) = PANIC.lock() {
            slot.get_or_insert(format!("{message}{at}"));
        }
    }));
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(command)).unwrap_or_else(|_| {
        let what = PANIC
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .unwrap_or_else(|| "no message".into());
        match open::opened_store() {
            Some(store) => Err(anyhow::anyhow!(
                "{}: reading failed ({what}); the store file may be damaged: cfs verify \
                 says where, cfs repair rebuilds it",
                store.display()
            )),
            None => Err(anyhow::anyhow!("internal failure ({what})")),
        }
    })
}

fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Demo(args) => demo::run(&args),
        Command::Chunks(args) => chunks::run(&args),
        Command::Index(args) => index_cmds::index(&args),
        Command::Status(args) => inspect_cmds::status(&args),
        Command::Verify(args) => inspect_cmds::verify(&args),
        Command::Log(args) => inspect_cmds::log(&args),
        Command::Show(args) => inspect_cmds::show(&args),
        Command::Prove(args) => inspect_cmds::prove(&args),
        Command::Refresh(args) => index_cmds::refresh(&args),
        Command::Gc(args) => maintain_cmds::gc(&args),
        Command::Reembed(args) => maintain_cmds::reembed(&args),
        Command::Repair(args) => maintain_cmds::repair(&args),
        Command::Watch(args) => watch_cmd::run(&args),
        Command::Search(args) => match &args.db {
            Some(url) => db_search::search_db(&args, url),
            None => search_cmds::search(&args),
        },
        Command::Context(args) => context_cmd::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Connect(args) => connect_cmd::run(&args),
        Command::RebuildIndex(args) => search_cmds::rebuild_index(&args),
        Command::Push(args) => remote_cmds::push_cmd(&args),
        Command::Publish(args) => db_cmds::publish_cmd(&args),
        Command::Pull(args) => remote_cmds::pull_cmd(&args),
        Command::Clone(args) => remote_cmds::clone_cmd(&args),
        Command::Bundle(args) => remote_cmds::bundle_cmd(&args),
        Command::Remote(args) => remote_cmds::remote_cmd(&args),
    }
}

/// True when the output was closed by the reader (`cfs chunks big.rs | head`): not an
/// error worth reporting.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        let io = cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe);
        let json = cause
            .downcast_ref::<serde_json::Error>()
            .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe));
        io || json
    })
}
