//! Link cfs as a storage engine: open (or create) a store, sync a folder into it (text
//! first, then the vectors in later commits), and search it.
//!
//! `cargo run -p cfs-search --example search -- FOLDER "QUERY"` (minilm-int: the model
//! file of `scripts/fetch-model`; set `CFS_EXAMPLE_EMBEDDER=hash` for no model).

use std::path::PathBuf;

use cfs_ingest::{Embedder, HashEmbedder, MiniLmInt};
use cfs_search::{IndexOptions, Query, SearchIndex};
use cfs_store::{EmbedOptions, Settings, Store, SyncOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let folder = PathBuf::from(args.next().unwrap_or_else(|| ".".into()));
    let query = args.next().unwrap_or_else(|| "parse configuration".into());

    let embedder: Box<dyn Embedder> = match std::env::var("CFS_EXAMPLE_EMBEDDER").as_deref() {
        Ok("hash") => Box::new(HashEmbedder::default()),
        _ => Box::new(MiniLmInt::open_default()?),
    };
    let embedder = &*embedder;
    let options = SyncOptions {
        defer_embeddings: true,
        ..SyncOptions::default()
    };
    let dir = tempfile::tempdir()?;
    let settings = Settings {
        chunk: options.config.chunk,
        model_id: embedder.model_id().into(),
    };
    let store = Store::create(&dir.path().join("store.redb"), settings)?;
    let report = store.sync(&folder, &options, embedder, &|_| {})?;
    println!("indexed {} files, text root {}", report.added, report.root);
    let vectors = store.embed_pending(embedder, &EmbedOptions::default(), &|_| {})?;
    println!("embedded {} chunks, root {}", vectors.chunks, vectors.root);

    let index = SearchIndex::open(&store, embedder, IndexOptions::default())?;
    for hit in index.search(&Query::new(query).k(5), embedder)? {
        println!(
            "{}:{}-{}  {:.4}  {}",
            hit.path,
            hit.start_line,
            hit.end_line,
            hit.score,
            hit.snippet.lines().next().unwrap_or("")
        );
    }
    Ok(())
}
