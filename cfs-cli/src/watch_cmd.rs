//! `cfs watch`: keep the store in step with a tree while it is edited.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cfs_store::watch::{WatchEvent, WatchSettings, watch};
use schemars::JsonSchema;
use serde::Serialize;

use crate::open::{Common, EmbedderChoice, Opened, bring_index_forward, open_or_create, tree_root};
use crate::report::{Report, json_line};

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
        let Some(line) = WatchLine::of(event, &root, &file, args, &settings) else {
            return;
        };
        let mut out = std::io::stdout().lock();
        let written = if json {
            json_line(&line)
                .map_err(std::io::Error::other)
                .and_then(|l| writeln!(out, "{l}"))
        } else {
            line.write_text(&mut out)
        };
        if let Err(e) = written.and_then(|()| out.flush()) {
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

/// The line a watch event prints (a JSON line with `--json`).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum WatchLine {
    /// Watching began, after the first whole sync.
    Watching { root: String, store: String },
    /// The tree cannot be watched: it is synced whole every `--poll-s` seconds.
    Degraded {
        reason: String,
        /// `--poll` asked for it; the text form then says so on stdout.
        #[serde(skip)]
        asked: Option<String>,
    },
    /// A sync committed (`paths` is null for a whole sync).
    Synced {
        paths: Option<usize>,
        added: usize,
        updated: usize,
        removed: usize,
        renamed: usize,
        failed: usize,
        commits: usize,
        state_root: String,
        ms: f64,
    },
    /// Vectors were embedded after a sync.
    Embedded {
        chunks: usize,
        texts_embedded: usize,
        commits: usize,
        pending: usize,
        state_root: String,
        ms: f64,
    },
}

impl WatchLine {
    /// The line of `event`, `None` for an event that prints nothing (a scoped sync that
    /// committed nothing). A fallback to polling also warns on stderr, unless `--poll`
    /// asked for it without `--json`.
    fn of(
        event: WatchEvent,
        root: &Path,
        file: &Path,
        args: &WatchArgs,
        settings: &WatchSettings,
    ) -> Option<Self> {
        let every = settings.poll_interval.as_secs();
        Some(match event {
            WatchEvent::Watching => Self::Watching {
                root: root.display().to_string(),
                store: file.display().to_string(),
            },
            WatchEvent::Degraded(reason) => {
                if !args.poll || args.common.json {
                    eprintln!(
                        "cfs: warning: cannot watch {} ({reason}); syncing the whole tree every {every} s instead",
                        root.display(),
                    );
                }
                let polling = format!(
                    "polling {} every {every} s (Ctrl-C to stop)",
                    root.display()
                );
                Self::Degraded {
                    reason,
                    asked: args.poll.then_some(polling),
                }
            }
            WatchEvent::Synced {
                report,
                paths,
                elapsed,
            } => {
                if report.commits == 0 && paths.is_some() {
                    return None;
                }
                Self::Synced {
                    paths,
                    added: report.added,
                    updated: report.updated,
                    removed: report.removed,
                    renamed: report.renamed,
                    failed: report.failed.len(),
                    commits: report.commits,
                    state_root: report.root.to_hex(),
                    ms: elapsed.as_secs_f64() * 1e3,
                }
            }
            WatchEvent::Embedded { report, elapsed } => Self::Embedded {
                chunks: report.chunks,
                texts_embedded: report.texts_embedded,
                commits: report.commits,
                pending: report.still_pending,
                state_root: report.root.to_hex(),
                ms: elapsed.as_secs_f64() * 1e3,
            },
        })
    }
}

impl Report for WatchLine {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match self {
            Self::Watching { root, .. } => writeln!(out, "watching {root} (Ctrl-C to stop)"),
            Self::Degraded { asked, .. } => match asked {
                Some(polling) => writeln!(out, "{polling}"),
                None => Ok(()),
            },
            Self::Synced {
                paths,
                added,
                updated,
                removed,
                renamed,
                failed,
                ms,
                state_root,
                ..
            } => {
                let scope = match paths {
                    Some(n) => format!("{n} paths:"),
                    None => "whole tree:".into(),
                };
                let failed = match failed {
                    0 => String::new(),
                    n => format!(", {n} failed"),
                };
                writeln!(
                    out,
                    "{scope} {added} added, {updated} updated, {removed} removed, {renamed} renamed{failed} in {ms:.1} ms; root {state_root}"
                )
            }
            Self::Embedded {
                chunks,
                ms,
                state_root,
                ..
            } => writeln!(
                out,
                "vectors: {chunks} chunks embedded in {ms:.1} ms; root {state_root}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON lines docs/cli.md shows: the event's name as `event`, the text form's
    /// fields left out.
    #[test]
    fn watch_lines_are_the_documented_json() {
        let degraded = WatchLine::Degraded {
            reason: "inotify limit".into(),
            asked: Some("polling /t every 10 s (Ctrl-C to stop)".into()),
        };
        assert_eq!(
            json_line(&degraded).unwrap(),
            r#"{"event":"degraded","reason":"inotify limit"}"#
        );
        let synced = WatchLine::Synced {
            paths: None,
            added: 1,
            updated: 0,
            removed: 0,
            renamed: 0,
            failed: 0,
            commits: 1,
            state_root: "ab".into(),
            ms: 1.5,
        };
        assert_eq!(
            json_line(&synced).unwrap(),
            r#"{"added":1,"commits":1,"event":"synced","failed":0,"ms":1.5,"paths":null,"removed":0,"renamed":0,"state_root":"ab","updated":0}"#
        );
        let mut text = Vec::new();
        synced.write_text(&mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "whole tree: 1 added, 0 updated, 0 removed, 0 renamed in 1.5 ms; root ab\n"
        );
        let mut text = Vec::new();
        degraded.write_text(&mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "polling /t every 10 s (Ctrl-C to stop)\n"
        );
    }
}
