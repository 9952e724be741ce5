//! `cfs serve --mcp`: a Model Context Protocol server for coding agents, over stdio or
//! (`--http ADDR`) over HTTP on a loopback address.
//!
//! Queries read the store through a read-only handle and its runtime index; before each
//! answer the index is brought forward to the newest commit, whoever made it (this
//! server's watcher, a `cfs index` in another process), and an answer works on one
//! snapshot from start to end. Standard output carries the protocol only; notes go to
//! standard error.

mod admin;
mod answers;
mod db;
mod http;
mod lines;
mod served;
mod tools;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use cfs_store::watch::{WatchEvent, WatchSettings, watch};
use rmcp::ServiceExt;

use crate::locate::{tree_of, tree_store};
use crate::open::{Common, Opened, open_or_create, tree_root};
use served::{Served, lock};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Speak the Model Context Protocol on standard input and output.
    #[arg(long)]
    mcp: bool,
    /// The indexed folder (default: the current directory); its store is PATH/.cfs/
    /// unless --store.
    path: Option<PathBuf>,
    /// Keep the store in step with the folder while serving (an in-process watcher;
    /// creates the store if there is none).
    #[arg(long)]
    watch: bool,
    /// With --watch: sync a batch of changes once no event came for this long (ms).
    #[arg(long, default_value_t = 50)]
    quiet_ms: u64,
    /// Serve the repositories published in this PostgreSQL database (a primary or a
    /// standby) instead of a store: tools `search`, `context` and `status`.
    #[arg(long, value_name = "URL", conflicts_with_all = ["watch", "path"])]
    db: Option<String>,
    /// With --db: serve only this repository (repeatable; default: every one).
    #[arg(long = "repo", value_name = "NAME", requires = "db")]
    repos: Vec<String>,
    /// Speak MCP over HTTP (Streamable HTTP) at http://ADDR/mcp instead of standard
    /// input and output, until Ctrl-C; ADDR is a loopback address (127.0.0.1:PORT or
    /// [::1]:PORT; port 0 picks a free one, said on standard error).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    if !args.mcp {
        bail!("say which protocol to serve: cfs serve --mcp");
    }
    if let Some(addr) = args.http {
        http::check_loopback(addr)?;
    }
    if let Some(url) = &args.db {
        return run_db(url, &args.repos, args.http);
    }
    let tree = tree_root(args.path.as_deref())?;
    let file = tree_store(&tree, args.common.store.as_deref());
    let tree = match &args.common.store {
        Some(_) => tree_of(&file).or(Some(tree)),
        None => Some(tree),
    };
    let served = Arc::new(Served::new(file.clone(), tree.clone(), args.watch));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = match (args.watch, &tree) {
        (true, Some(tree)) => Some(start_watcher(args, tree, &served, &stop)?),
        _ => None,
    };
    if let Err(problem) = served.current() {
        eprintln!("cfs serve: {problem} (serving status until it can be read)");
    }
    let shared = Arc::clone(&served);
    let result = serve_with(args.http, move || {
        tools::CfsServer::new(Arc::clone(&shared))
    });
    stop.store(true, Ordering::SeqCst);
    if let Some(handle) = watcher {
        let _ = handle.join();
    }
    result
}

/// Serves the repositories of the database at `url` until the client leaves (or, over
/// HTTP, until Ctrl-C).
fn run_db(url: &str, repos: &[String], http: Option<SocketAddr>) -> anyhow::Result<ExitCode> {
    let mut db = cfs_postgres::Database::connect(url)?;
    let embedder = crate::db_search::embedder_of(&mut db, repos)?;
    let served = Arc::new(db::DbServed {
        db: std::sync::Mutex::new(db),
        embedder,
        repos: repos.to_vec(),
    });
    let shared = Arc::clone(&served);
    let result = serve_with(http, move || db::DbServer::new(Arc::clone(&shared)));
    // The connection is closed here, outside the server's runtime: its client blocks
    // on a runtime of its own, which cannot start inside another.
    drop(served);
    result
}

/// A server's tools, for the errors of a `tools/call` that names none of them.
trait Tools {
    fn tools(&self) -> Vec<rmcp::model::Tool>;
}

/// Runs the MCP server `make` makes on standard input and output until the client
/// leaves, or with `http` one a session at that address until Ctrl-C.
fn serve_with<S: rmcp::ServerHandler + Tools + Send + 'static>(
    http: Option<SocketAddr>,
    make: impl Fn() -> S + Send + Sync + 'static,
) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    if let Some(addr) = http {
        let served = runtime.block_on(http::serve(make, addr));
        // Sessions' searches and refreshes still running get a moment to finish; a
        // second Ctrl-C ends the process meanwhile.
        runtime.shutdown_timeout(Duration::from_secs(5));
        served?;
        return Ok(ExitCode::SUCCESS);
    }
    runtime.block_on(async {
        // Standard input reaches the library through `lines::judge_input`, and the
        // library's answers and the ones made there reach standard output through
        // `lines::write_output`.
        let (to_library, library_reads) = tokio::io::duplex(1 << 16);
        let (library_writes, from_library) = tokio::io::duplex(1 << 16);
        let (answers, answered) = tokio::sync::mpsc::unbounded_channel();
        let server = make();
        let names = server.tools().into_iter().map(|t| t.name.to_string());
        let session = lines::Session::new(names.collect());
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        let reader = tokio::spawn(lines::judge_input(stdin, session, to_library, answers));
        let writer = tokio::spawn(lines::write_output(
            from_library,
            answered,
            tokio::io::stdout(),
        ));
        let served = serve_lines(server, (library_reads, library_writes)).await;
        // The client may still be connected when the session ended: stop reading it,
        // then let every answer out.
        reader.abort();
        let written = writer.await.context("writing the answers")?;
        served?;
        written.context("writing to standard output")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The session of `server` over the library's ends of the lines, until it ends.
async fn serve_lines<S: rmcp::ServerHandler>(
    server: S,
    ends: (tokio::io::DuplexStream, tokio::io::DuplexStream),
) -> anyhow::Result<()> {
    let service = server
        .serve(ends)
        .await
        .map_err(|e| anyhow::anyhow!("the client ended the session before it began ({e})"))?;
    service.waiting().await.context("serving")?;
    Ok(())
}

/// Starts the watcher on its own thread: it syncs the tree, and after each commit
/// publishes the new state to the served index at once.
fn start_watcher(
    args: &ServeArgs,
    tree: &std::path::Path,
    served: &Arc<Served>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let Opened {
        store,
        options,
        embedder,
        ..
    } = open_or_create(tree, &args.common, None, cfs_store::DEFAULT_SYNC_MEMORY)?;
    let settings = WatchSettings {
        quiet: Duration::from_millis(args.quiet_ms),
        ..WatchSettings::default()
    };
    let (tree, served, stop) = (tree.to_path_buf(), Arc::clone(served), Arc::clone(stop));
    let handle = std::thread::Builder::new()
        .name("cfs-watch".into())
        .spawn(move || {
            let mut on_event = |event: WatchEvent| {
                let committed = match &event {
                    WatchEvent::Synced { report, .. } => report.commits > 0,
                    WatchEvent::Embedded { report, .. } => report.commits > 0,
                    WatchEvent::Degraded(reason) => {
                        eprintln!("cfs serve: cannot watch ({reason}); polling instead");
                        false
                    }
                    WatchEvent::Watching => false,
                };
                if committed && let Err(problem) = served.current() {
                    eprintln!("cfs serve: {problem}");
                }
            };
            let result = watch(
                &store,
                &tree,
                &options,
                &*embedder,
                &settings,
                &stop,
                &mut on_event,
            );
            if let Err(e) = result {
                eprintln!("cfs serve: the watcher stopped: {e}");
                *lock(&served.watch_error) = Some(e.to_string());
            }
        })?;
    Ok(handle)
}
