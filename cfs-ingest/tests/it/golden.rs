//! Golden files: every input under `test_data/golden/` is parsed and chunked, and a
//! summary of the result (profile, metadata, each chunk's kind, symbol, headings, page,
//! lines, span and first line) must equal `test_data/golden/expected/<file>.json`.
//! `CFS_REGENERATE_GOLDEN=1 cargo test -p cfs-ingest --test it golden` rewrites them.

use std::path::{Path, PathBuf};

use cfs_core::ChunkKind;
use cfs_ingest::{IngestConfig, parse_file};
use serde_json::{Value, json};

const REGENERATE: &str = "CFS_REGENERATE_GOLDEN=1 cargo test -p cfs-ingest --test it golden";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/golden")
}

fn summary(name: &str, bytes: &[u8]) -> Value {
    let parsed = match parse_file(name, bytes, &IngestConfig::default()) {
        Ok(parsed) => parsed,
        Err(e) => return json!({"error": e.to_string()}),
    };
    let doc = &parsed.document;
    let chunks: Vec<Value> = parsed
        .chunks
        .iter()
        .map(|c| {
            let mut v = json!({
                "seq": c.sequence,
                "kind": c.kind.name(),
                "lines": [c.start_line, c.end_line],
                "span": [c.byte_offset, c.byte_end()],
                "first_line": c.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").chars().take(60).collect::<String>(),
            });
            match &c.kind {
                ChunkKind::Section { heading_path } => v["headings"] = json!(heading_path),
                ChunkKind::Page { page } => v["page"] = json!(page),
                ChunkKind::Code { language, symbol } => {
                    v["language"] = json!(language);
                    if let Some(s) = symbol {
                        v["symbol"] = json!({
                            "kind": s.kind.name(), "name": s.name, "parent": s.parent,
                            "signature": s.signature, "doc": !s.doc_comment.is_empty(),
                            "window": s.window.map(|w| [w.index, w.count]),
                        });
                    }
                }
                ChunkKind::Text => {}
            }
            v
        })
        .collect();
    json!({
        "mime_type": doc.profile.mime_type,
        "parser": doc.profile.parser,
        "chunker": doc.profile.chunker,
        "encoding": parsed.encoding,
        "text_length_bytes": doc.text_length_bytes,
        "metadata": doc.metadata.iter().map(|m| json!([m.key, m.value])).collect::<Vec<_>>(),
        "window_edges": parsed.window_edges.len(),
        "chunks": chunks,
    })
}

#[test]
fn golden_files() {
    let regenerate = std::env::var_os("CFS_REGENERATE_GOLDEN").is_some();
    let expected_dir = dir().join("expected");
    std::fs::create_dir_all(&expected_dir).unwrap();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 15, "{inputs:?}");
    let mut stale = Vec::new();
    for input in &inputs {
        let name = input.file_name().unwrap().to_str().unwrap();
        let bytes = std::fs::read(input).unwrap();
        let mut text = serde_json::to_string_pretty(&summary(name, &bytes)).unwrap();
        text.push('\n');
        let expected = expected_dir.join(format!("{name}.json"));
        if regenerate {
            std::fs::write(&expected, &text).unwrap();
        } else if std::fs::read_to_string(&expected).ok().as_deref() != Some(text.as_str()) {
            stale.push(name.to_owned());
        }
    }
    assert!(
        stale.is_empty(),
        "golden files differ: {stale:?}; if intended, run:\n  {REGENERATE}"
    );
}
