//! `cfs chunks FILE`: how one file is chunked, without a store.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use cfs_ingest::{ChunkParams, IngestConfig, parse_file};
use schemars::JsonSchema;
use serde::Serialize;

use crate::report::{CodeFields, Report, SymbolInfo, emit};

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
    let config = IngestConfig {
        chunk: ChunkParams {
            target_bytes: args.target,
            max_bytes: args.max,
            overlap_bytes: args.overlap,
        },
        ..crate::open::ingest_config()
    };
    let bytes = read_file(&args.file, config.max_file_bytes)?;
    // The name is used for type detection and in errors; it needs no validation here.
    let name = args.file.to_string_lossy();
    let parsed = parse_file(&name, &bytes, &config)?;
    let report = ChunksReport {
        path: args.file.display().to_string(),
        document_id: parsed.document.id.to_string(),
        mime_type: parsed.document.profile.mime_type.clone(),
        encoding: parsed.encoding.to_string(),
        chunks: parsed.chunks.iter().map(FileChunk::of).collect(),
        size_bytes: parsed.document.size_bytes,
    };
    emit(&report, args.json)
}

/// What `cfs chunks` answers: the file's type, encoding and document id, and its chunks.
#[derive(Serialize, JsonSchema)]
pub struct ChunksReport {
    path: String,
    document_id: String,
    mime_type: String,
    encoding: String,
    chunks: Vec<FileChunk>,
    /// The file's size, for the text form.
    #[serde(skip)]
    size_bytes: u64,
}

/// One chunk of the file.
#[derive(Serialize, JsonSchema)]
struct FileChunk {
    id: String,
    sequence: u32,
    kind: &'static str,
    /// Set for code chunks.
    language: Option<String>,
    /// The symbol's qualified name (`parent::name`, as search and show give it).
    symbol: Option<String>,
    symbol_info: Option<SymbolInfo>,
    start_line: u32,
    end_line: u32,
    byte_offset: u64,
    byte_length: u32,
    text: String,
}

impl FileChunk {
    fn of(c: &cfs_core::Chunk) -> Self {
        let code = CodeFields::of(&c.kind);
        let (language, symbol, symbol_info) = match code {
            Some(f) => (Some(f.language), f.symbol, f.symbol_info),
            None => (None, None, None),
        };
        Self {
            id: c.id.to_string(),
            sequence: c.sequence,
            kind: c.kind.name(),
            language,
            symbol,
            symbol_info,
            start_line: c.start_line,
            end_line: c.end_line,
            byte_offset: c.byte_offset,
            byte_length: c.byte_length,
            text: c.text.clone(),
        }
    }
}

impl Report for ChunksReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{}: {} ({}, {}), {} chunks, document {}",
            self.path,
            self.mime_type,
            self.encoding,
            human_bytes(self.size_bytes),
            self.chunks.len(),
            self.document_id
        )?;
        for c in &self.chunks {
            writeln!(
                out,
                "\n--- #{} {} lines {}-{} bytes {}..{} ({} bytes)",
                c.sequence,
                c.kind,
                c.start_line,
                c.end_line,
                c.byte_offset,
                c.byte_offset + u64::from(c.byte_length),
                c.byte_length
            )?;
            write!(out, "{}", c.text)?;
            if !c.text.ends_with('\n') {
                writeln!(out)?;
            }
        }
        Ok(())
    }
}

pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        n if n >= 10 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// The bytes of the regular file at `path`, refused before reading when it is not one
/// (a FIFO would block, a device never end) or is larger than `limit`, as `cfs index`
/// refuses it.
fn read_file(path: &std::path::Path, limit: u64) -> anyhow::Result<Vec<u8>> {
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {shown}"))?;
    anyhow::ensure!(meta.is_file(), "{shown}: not a regular file");
    anyhow::ensure!(
        meta.len() <= limit,
        "{shown}: {} bytes, more than the {limit} a file may have",
        meta.len()
    );
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {shown}"))?;
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)
        .with_context(|| format!("cannot read {shown}"))?;
    anyhow::ensure!(
        bytes.len() as u64 <= limit,
        "{shown}: grew past {limit} bytes"
    );
    Ok(bytes)
}
