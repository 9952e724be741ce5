//! Terminal progress shared by the commands: bars and spinners on stderr, hidden under
//! `--json` and when stderr is not a terminal.

use std::io::IsTerminal;

use cfs_store::SyncProgress;
use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr when it is a terminal and JSON was not asked for; a hidden
/// one otherwise, so that scripts and pipes see no progress output.
pub fn progress(len: u64, json: bool, what: &str) -> ProgressBar {
    progress_of(len, json, what, "files")
}

/// [`progress`] counting `unit`s.
pub fn progress_of(len: u64, json: bool, what: &str, unit: &str) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let template =
        format!("{{spinner}} {{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{rate}}, {{eta}} left)");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        // A whole number per second: "2.5325/s" reads as noise.
        let rate = |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&rate_text(state.per_sec()));
        };
        bar.set_style(style.with_key("rate", rate).progress_chars("=> "));
    }
    bar.set_message(what.to_owned());
    bar
}

/// A bar of bytes for a transfer in stages (a pull: groups, rows, vectors, writing),
/// hidden under `--json` or when standard error is not a terminal.
pub fn transfer_progress(json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    let template = "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)";
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A rate as the bar shows it: a whole number per second.
fn rate_text(per_sec: f64) -> String {
    format!("{per_sec:.0}/s")
}

/// Embedding progress drawn on `bar`: its length from the pending chunks, then the
/// chunks embedded after each commit.
pub fn embed_progress(bar: &ProgressBar) -> impl Fn(cfs_store::EmbedProgress) + Sync + '_ {
    move |event| match event {
        cfs_store::EmbedProgress::Pending { chunks, .. } => bar.set_length(chunks as u64),
        cfs_store::EmbedProgress::Committed { chunks } => bar.set_position(chunks as u64),
    }
}

/// A sync's progress drawn on `bar`: its length from the walk, one tick per file, and a
/// message while it commits (a large sync's commit takes seconds after its last file).
pub fn sync_progress(bar: &ProgressBar) -> impl Fn(SyncProgress<'_>) + Sync + '_ {
    move |event| match event {
        SyncProgress::Found { files } => bar.set_length(files as u64),
        SyncProgress::File(_) => bar.inc(1),
        SyncProgress::Committing => {
            bar.set_message("writing and committing");
            // No more ticks come: the spinner turns on its own and the message is drawn.
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
        }
    }
}

/// A spinner on stderr when it is a terminal and JSON was not asked for.
pub fn spinner(json: bool, what: &str) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_show_whole_rates_and_hide_without_a_terminal() {
        assert_eq!(rate_text(2.5325), "3/s");
        assert_eq!(rate_text(1234.4), "1234/s");
        // Under --json, and when stderr is not a terminal (as under cargo test), no bar.
        assert!(progress_of(10, true, "x", "files").is_hidden());
        if !std::io::stderr().is_terminal() {
            assert!(progress_of(10, false, "x", "files").is_hidden());
        }
    }
}
