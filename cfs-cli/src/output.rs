//! Output helpers shared by the commands: JSON printing and terminal progress.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressStyle};

/// Prints a JSON value on stdout.
pub fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// A progress bar on stderr when it is a terminal and JSON was not asked for; a hidden
/// one otherwise, so that scripts and pipes see no progress output.
pub fn progress(len: u64, json: bool, what: &str) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} files ({per_sec})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_owned());
    bar
}

/// Advances a sync's bar by one file; once every file is seen, the bar says that the
/// sync is writing and committing (a large sync's commit takes seconds after that).
pub fn tick(bar: &ProgressBar) {
    bar.inc(1);
    if bar.length().is_some_and(|len| bar.position() == len) {
        bar.set_message("writing and committing");
        // No more ticks come: the spinner turns on its own and the message is drawn.
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
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
