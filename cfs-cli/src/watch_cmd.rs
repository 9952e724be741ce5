//! `cfs watch`: keep the store in step with a tree while it is edited.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cfs_store::watch::{WatchEvent, WatchSettings, watch};
use serde_json::json;

use crate::store_cmds::{
    Common, EmbedderChoice, Opened, bring_index_forward, open_or_create, tree_root,
};

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// The folder to watch (default: the current directory).
    path: Option<PathBuf>,
    /// Sync a batch of changes once no event came for this long (milliseconds).
    #[arg(long, default_value_t = 50)]
    quiet_ms: u64,
    /// ... but no later than this after its first event (milliseconds).
    #[arg(long, default_value_t = 1000)]
    max_delay_ms: u64,
    /// Interval of whole syncs when the system cannot watch the tree (seconds).
    #[arg(long, default_value_t = 10)]
    poll_s: u64,
    /// Do not watch for events: sync the whole tree every --poll-s seconds (for file
    /// systems that send no events, such as network mounts).
    #[arg(long)]
    poll: bool,
    /// The embedder of a new store (an existing store keeps its own).
    #[arg(long, value_enum)]
    embedder: Option<EmbedderChoice>,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: &WatchArgs) -> anyhow::Result<ExitCode> {
    let root = tree_root(args.path.as_deref())?;
    let Opened {
        store,
        file,
        options,
        embedder,
        ..
    } = open_or_create(
        &root,
        &args.common,
        args.embedder,
        cfs_store::DEFAULT_SYNC_MEMORY,
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                // A second Ctrl-C: leave now; redb keeps the last committed state.
                std::process::exit(130);
            }
        })?;
    }
    let settings = WatchSettings {
        quiet: Duration::from_millis(args.quiet_ms),
        max_delay: Duration::from_millis(args.max_delay_ms),
        poll_interval: Duration::from_secs(args.poll_s.max(1)),
        poll_only: args.poll,
    };
    let json = args.common.json;
    let mut failed_io = None;
    // After a commit the search index files are brought forward here, by the writer.
    let bring_forward = |commits: usize| {
        if commits > 0
            && let Err(e) = bring_index_forward(&store, &*embedder, true)
        {
            eprintln!("cfs: warning: the search index was not brought forward: {e:#}");
        }
    };
    let mut on_event = |event: WatchEvent| {
        match &event {
            WatchEvent::Synced { report, .. } => bring_forward(report.commits),
            WatchEvent::Embedded { report, .. } => bring_forward(report.commits),
            _ => {}
        }
        let Some(line) = event_line(event, &root, &file, args, &settings) else {
            return;
        };
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
            failed_io.get_or_insert(e);
        }
    };
    if !json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!("syncing {} before watching ...", root.display());
    }
    watch(
        &store,
        &root,
        &options,
        &*embedder,
        &settings,
        &stop,
        &mut on_event,
    )?;
    if let Some(e) = failed_io {
        return Err(e.into());
    }
    if !json {
        eprintln!("stopped; state root {}", store.state_root()?);
    }
    Ok(ExitCode::SUCCESS)
}

/// The line a watch event prints (JSON with `--json`), `None` for an event that prints
/// nothing (a scoped sync that committed nothing; a fallback to polling, which warns on
/// stderr instead, unless `--json`).
fn event_line(
    event: WatchEvent,
    root: &Path,
    file: &Path,
    args: &WatchArgs,
    settings: &WatchSettings,
) -> Option<String> {
    let json = args.common.json;
    let line = match event {
        WatchEvent::Watching => {
            if json {
                json!({"event": "watching", "root": root.display().to_string(), "store": file.display().to_string()}).to_string()
            } else {
                format!("watching {} (Ctrl-C to stop)", root.display())
            }
        }
        WatchEvent::Degraded(_) if args.poll && !json => {
            format!(
                "polling {} every {} s (Ctrl-C to stop)",
                root.display(),
                settings.poll_interval.as_secs()
            )
        }
        WatchEvent::Degraded(reason) => {
            eprintln!(
                "cfs: warning: cannot watch {} ({reason}); syncing the whole tree every {} s instead",
                root.display(),
                settings.poll_interval.as_secs()
            );
            if !json {
                return None;
            }
            json!({"event": "degraded", "reason": reason}).to_string()
        }
        WatchEvent::Synced {
            report,
            paths,
            elapsed,
        } => {
            if report.commits == 0 && paths.is_some() {
                return None;
            }
            if json {
                json!({"event": "synced", "paths": paths, "added": report.added,
                    "updated": report.updated, "removed": report.removed,
                    "renamed": report.renamed, "failed": report.failed.len(),
                    "commits": report.commits, "state_root": report.root.to_hex(),
                    "ms": elapsed.as_secs_f64() * 1e3})
                .to_string()
            } else {
                format!(
                    "{} {} added, {} updated, {} removed, {} renamed{} in {:.1} ms; root {}",
                    match paths {
                        Some(n) => format!("{n} paths:"),
                        None => "whole tree:".into(),
                    },
                    report.added,
                    report.updated,
                    report.removed,
                    report.renamed,
                    if report.failed.is_empty() {
                        String::new()
                    } else {
                        format!(", {} failed", report.failed.len())
                    },
                    elapsed.as_secs_f64() * 1e3,
                    report.root
                )
            }
        }
        WatchEvent::Embedded { report, elapsed } => {
            if json {
                json!({"event": "embedded", "chunks": report.chunks,
                    "texts_embedded": report.texts_embedded, "commits": report.commits,
                    "pending": report.still_pending, "state_root": report.root.to_hex(),
                    "ms": elapsed.as_secs_f64() * 1e3})
                .to_string()
            } else {
                format!(
                    "vectors: {} chunks embedded in {:.1} ms; root {}",
                    report.chunks,
                    elapsed.as_secs_f64() * 1e3,
                    report.root
                )
            }
        }
    };
    Some(line)
}
