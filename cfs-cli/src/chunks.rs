//! `cfs chunks FILE`: how one file is chunked, without a store.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use cfs_core::ChunkKind;
use cfs_ingest::{ChunkParams, IngestConfig, parse_file};
use serde_json::json;

use crate::output::print_json;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to chunk.
    file: PathBuf,
    /// Target chunk size in bytes.
    #[arg(long, default_value_t = ChunkParams::default().target_bytes)]
    target: u32,
    /// Maximum chunk size in bytes.
    #[arg(long, default_value_t = ChunkParams::default().max_bytes)]
    max: u32,
    /// Overlap between chunks in bytes.
    #[arg(long, default_value_t = ChunkParams::default().overlap_bytes)]
    overlap: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    // The name is used for type detection and in errors; it needs no validation here.
    let name = args.file.to_string_lossy();
    let config = IngestConfig {
        chunk: ChunkParams {
            target_bytes: args.target,
            max_bytes: args.max,
            overlap_bytes: args.overlap,
        },
        ..crate::ingest_config()
    };
    let parsed = parse_file(&name, &bytes, &config)?;
    if args.json {
        let chunks: Vec<_> = parsed
            .chunks
            .iter()
            .map(|c| {
                let language = match &c.kind {
                    ChunkKind::Code { language, .. } => Some(language.clone()),
                    _ => None,
                };
                let (symbol, symbol_info) = crate::output::symbol_json(&c.kind);
                json!({
                    "id": c.id.to_string(), "sequence": c.sequence, "kind": c.kind.name(),
                    "language": language, "symbol": symbol, "symbol_info": symbol_info,
                    "start_line": c.start_line, "end_line": c.end_line,
                    "byte_offset": c.byte_offset, "byte_length": c.byte_length,
                    "text": c.text,
                })
            })
            .collect();
        print_json(&json!({
            "path": args.file.display().to_string(),
            "document_id": parsed.document.id.to_string(),
            "mime_type": parsed.document.profile.mime_type,
            "encoding": parsed.encoding,
            "chunks": chunks,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}: {} ({}, {}), {} chunks, document {}",
        args.file.display(),
        parsed.document.profile.mime_type,
        parsed.encoding,
        human_bytes(parsed.document.size_bytes),
        parsed.chunks.len(),
        parsed.document.id
    )?;
    for c in &parsed.chunks {
        writeln!(
            out,
            "\n--- #{} {} lines {}-{} bytes {}..{} ({} bytes)",
            c.sequence,
            c.kind.name(),
            c.start_line,
            c.end_line,
            c.byte_offset,
            c.byte_end(),
            c.byte_length
        )?;
        write!(out, "{}", c.text)?;
        if !c.text.ends_with('\n') {
            writeln!(out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        n if n >= 10 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}
