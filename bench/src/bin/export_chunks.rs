//! Writes a store's chunks and their stored vectors for peer stores to load the same
//! rows (bench/vectordb_peers.py):
//!
//! `cargo run --release --bin export_chunks -- STORE_FILE OUT_DIR`
//!
//! `OUT_DIR/chunks.jsonl`: one object per chunk in id order, `{"id", "path", "text"}`
//! (the first path of its document); `OUT_DIR/vectors.i16`: the chunks' vectors in the
//! same order, `dim` little-endian i16 each (a chunk without an embedding gets zeros);
//! `OUT_DIR/meta.json`: `{"chunks", "dim", "model"}`. Reads the store only.

use std::io::Write;
use std::path::PathBuf;

use cfs_core::EmbeddingId;
use cfs_ingest::{Embedder, HashEmbedder, MiniLmInt};
use cfs_search::{IndexOptions, SearchIndex};
use cfs_store::Store;
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = Store::open_read_only(&PathBuf::from(&args[1])).expect("store");
    let out = PathBuf::from(&args[2]);
    std::fs::create_dir_all(&out).expect("out dir");
    let embedder: Box<dyn Embedder> = if store.settings().model_id.starts_with("minilm-int") {
        Box::new(MiniLmInt::open_default().expect("minilm-int"))
    } else {
        Box::new(HashEmbedder::default())
    };
    let (model, dim) = (embedder.model_hash(), embedder.dimension());
    let index = SearchIndex::open(&store, embedder.as_ref(), IndexOptions::exact()).expect("index");
    let snap = index.snapshot();
    let txn = store.begin_read().expect("read");
    let mut chunks =
        std::io::BufWriter::new(std::fs::File::create(out.join("chunks.jsonl")).unwrap());
    let mut vectors =
        std::io::BufWriter::new(std::fs::File::create(out.join("vectors.i16")).unwrap());
    let ids = snap.chunk_ids();
    for id in &ids {
        let meta = snap.chunk(id).expect("chunk in snapshot");
        let text = snap.chunk_text(id).expect("read").unwrap_or_default();
        let path = meta.doc.paths.first().map_or("", |p| &*p.path);
        let row = json!({"id": id.to_string(), "path": path, "text": text});
        writeln!(chunks, "{row}").unwrap();
        let vector = txn
            .embedding(&EmbeddingId::derive(id, &model))
            .expect("read")
            .map_or_else(|| vec![0; dim], |e| e.vector);
        let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
        vectors.write_all(&bytes).unwrap();
    }
    chunks.flush().unwrap();
    vectors.flush().unwrap();
    let meta = json!({"chunks": ids.len(), "dim": dim, "model": store.settings().model_id});
    std::fs::write(out.join("meta.json"), meta.to_string()).unwrap();
    println!("{meta}");
}
