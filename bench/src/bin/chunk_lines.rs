//! How cfs chunks many files, one JSON line each, for measuring chunking against an
//! independent list of definitions (`bench/definition_share.py`):
//!
//! `cargo run --release --bin chunk_lines -- ROOT < PATHS`
//!
//! PATHS holds one path a line, relative to ROOT (the path is what the file is typed
//! by). Each file gives `{"path", "language", "chunks": [{"start", "end", "bytes",
//! "symbol", "kind", "window"}]}` (`language` of its first code chunk, null when it
//! was chunked as text; `micros` the time `parse_file` took; `symbol` the symbol's own
//! name, null between symbols), or
//! `{"path", "error"}`. Reads the files only; the default ingest settings.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use cfs_core::ChunkKind;
use cfs_ingest::{IngestConfig, parse_file};
use serde_json::{Value, json};

fn main() {
    let root = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: chunk_lines ROOT < PATHS"),
    );
    let config = IngestConfig::default();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in std::io::stdin().lock().lines() {
        let path = line.expect("a path a line");
        let row = match std::fs::read(root.join(&path)) {
            Ok(bytes) => file_row(&path, &bytes, &config),
            Err(e) => json!({"path": path, "error": e.to_string()}),
        };
        writeln!(out, "{row}").expect("write");
    }
}

fn file_row(path: &str, bytes: &[u8], config: &IngestConfig) -> Value {
    let started = std::time::Instant::now();
    let parsed = parse_file(path, bytes, config);
    let micros = started.elapsed().as_micros() as u64;
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => return json!({"path": path, "error": e.to_string()}),
    };
    let mut language = None;
    let chunks: Vec<Value> = parsed
        .chunks
        .iter()
        .map(|c| {
            let symbol = match &c.kind {
                ChunkKind::Code {
                    language: l,
                    symbol,
                } => {
                    language.get_or_insert_with(|| l.clone());
                    symbol.as_ref()
                }
                _ => None,
            };
            json!({
                "start": c.start_line, "end": c.end_line, "bytes": c.byte_length,
                "symbol": symbol.map(|s| &s.name),
                "kind": symbol.map(|s| s.kind.name()),
                "window": symbol.and_then(|s| s.window.as_ref()).map(|w| w.index),
            })
        })
        .collect();
    json!({"path": path, "language": language, "micros": micros, "chunks": chunks})
}
