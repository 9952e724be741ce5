//! A whole folder to an in-memory canonical state, in parallel.
//!
//! Files are read, parsed, chunked and embedded on the rayon pool; the results are then
//! inserted in path order, so the state (and its root) is the same whatever the thread
//! count or the order in which work finished. The store does the same into redb.

use std::path::Path;

use cfs_core::{CanonicalState, PathEntry};
use rayon::prelude::*;

use crate::collections::Registry;
use crate::embed::Embedder;
use crate::error::IngestError;
use crate::pipeline::{IngestConfig, Ingested, ingest_file};
use crate::walk::{Walk, WalkEntry, walk};

/// One file's ingestion and the bytes it read, or why it failed.
type FileResult = Result<(Ingested, u64), IngestError>;

/// What indexing a folder produced.
#[derive(Debug)]
pub struct TreeIndex {
    /// The canonical state of the folder.
    pub state: CanonicalState,
    /// Files indexed.
    pub n_files: usize,
    /// Bytes read from indexed files.
    pub n_bytes: u64,
    /// Files not indexed, each with its reason (skipped binaries included).
    pub errors: Vec<IngestError>,
}

/// Reads one walked file, checking its size against the limit before reading it.
pub fn read_entry(entry: &WalkEntry, config: &IngestConfig) -> Result<Vec<u8>, IngestError> {
    if entry.size_bytes > config.max_file_bytes {
        return Err(IngestError::TooLarge {
            path: entry.rel_path.clone(),
            size_bytes: entry.size_bytes,
            limit_bytes: config.max_file_bytes,
        });
    }
    std::fs::read(&entry.abs_path).map_err(|source| IngestError::Io {
        path: entry.abs_path.clone(),
        source,
    })
}

/// Reads and ingests one walked file.
pub fn ingest_entry(
    entry: &WalkEntry,
    config: &IngestConfig,
    embedder: &dyn Embedder,
) -> FileResult {
    let bytes = read_entry(entry, config)?;
    let n = bytes.len() as u64;
    Ok((ingest_file(&entry.rel_path, &bytes, config, embedder)?, n))
}

/// Indexes every file under `root`; `progress` is called once per file processed.
/// Each path entry records the collections and context `registry` resolves it to.
pub fn index_tree(
    root: &Path,
    config: &IngestConfig,
    registry: &Registry,
    embedder: &dyn Embedder,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<TreeIndex, IngestError> {
    index_walk(walk(root)?, config, registry, embedder, progress)
}

/// Indexes the files of a walk. Rows are inserted in the order of `walked.files`; the
/// resulting state does not depend on that order.
pub fn index_walk(
    walked: Walk,
    config: &IngestConfig,
    registry: &Registry,
    embedder: &dyn Embedder,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<TreeIndex, IngestError> {
    let results: Vec<(String, FileResult)> = walked
        .files
        .par_iter()
        .map(|entry| {
            let result = ingest_entry(entry, config, embedder);
            progress(&entry.rel_path);
            (entry.rel_path.clone(), result)
        })
        .collect();
    let mut index = TreeIndex {
        state: CanonicalState::new(),
        n_files: 0,
        n_bytes: 0,
        errors: walked.errors,
    };
    for (path, result) in results {
        match result {
            Ok((ingested, n)) => {
                let id = ingested.parsed.document.id;
                let core = |source| IngestError::Core {
                    path: path.clone(),
                    source,
                };
                index
                    .state
                    .insert_document(
                        ingested.parsed.document,
                        ingested.parsed.chunks,
                        ingested.embeddings,
                        ingested.parsed.window_edges,
                    )
                    .map_err(core)?;
                let resolution = registry.resolve(&path);
                let entry = PathEntry {
                    path: path.clone(),
                    document_id: id,
                    collections: resolution.collections,
                    context: resolution.context,
                };
                index.state.bind_path(entry).map_err(core)?;
                index.n_files += 1;
                index.n_bytes += n;
            }
            Err(e) => index.errors.push(e),
        }
    }
    Ok(index)
}
