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

/// Hidden first argument that makes `cfs` the isolated PDF extractor (a child process
/// of itself), so the one binary needs no helper installed beside it.
const PDF_CHILD_ARG: &str = "__cfs-extract-pdf";

/// The ingestion configuration of the CLI: defaults, with PDFs extracted by this binary.
pub fn ingest_config() -> cfs_ingest::IngestConfig {
    let mut config = cfs_ingest::IngestConfig::default();
    if let Ok(exe) = std::env::current_exe() {
        config.pdf.program = Some(exe);
        config.pdf.args = vec![PDF_CHILD_ARG.to_owned()];
    }
    config
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(PDF_CHILD_ARG) {
        return cfs_ingest::pdf_child_main(std::env::args().skip(2));
    }
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
