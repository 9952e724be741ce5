//! `cfs`: the admin command line of the cfs store.
//!
//! A thin front over the libraries: every command parses its arguments, calls one
//! library function and prints the result for people, or as JSON with `--json`.

mod chunks;
mod demo;
mod output;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Chunks(args) => chunks::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cfs: error: {e:#}");
            ExitCode::FAILURE
        }
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
