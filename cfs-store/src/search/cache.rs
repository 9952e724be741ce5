//! The runtime index as a cache file, so that a process need not rebuild it.
//!
//! Layout: the 8 bytes `CFSINDEX`, a `u32` LE format version, the borsh body, then the
//! 32-byte BLAKE3 hash of everything before it. The body holds one snapshot, stamped
//! with its state root, sequence, table roots and the bucket roots of the chunks and
//! paths tables. A file is used only when its hash checks, its format and model are
//! this build's, its bucket roots compose to its table roots and state root, and that
//! state is the one the store's chain records at that sequence. Anything else is torn
//! or foreign and is rebuilt from the store, never trusted. A valid file of an earlier
//! commit is brought forward by the diff of bucket roots, like any snapshot.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_core::{
    ChunkId, DocumentId, MerkleRoot, ModelHash, PathEntry, StateRoot, Table, TableRoots, TopTree,
};

use super::segment::{ChunkMeta, DocInfo, Live, PathInfo, Segment, Vectors};
use super::snapshot::{BucketMap, Snapshot};
use crate::error::{Result, StoreError};
use crate::read::ReadTxn;

const MAGIC: &[u8; 8] = b"CFSINDEX";
/// Format version of the cache file.
pub const CACHE_FORMAT: u32 = 1;

const KINDS: [&str; 4] = ["text", "section", "code", "page"];

#[derive(BorshSerialize, BorshDeserialize)]
struct Body {
    model: ModelHash,
    dim: u32,
    root: StateRoot,
    sequence: u64,
    table_roots: TableRoots,
    chunk_roots: Vec<MerkleRoot>,
    path_roots: Vec<MerkleRoot>,
    paths: Vec<PathEntry>,
    docs: Vec<CachedDoc>,
    chunks: Vec<CachedChunk>,
    total_len: u64,
    postings: Vec<(String, Vec<(u32, u32)>)>,
}

#[derive(BorshSerialize, BorshDeserialize)]
struct CachedDoc {
    id: DocumentId,
    mime_type: String,
    paths: Vec<(String, Vec<String>)>,
    chunks: Vec<ChunkId>,
}

#[derive(BorshSerialize, BorshDeserialize)]
struct CachedChunk {
    id: ChunkId,
    doc: DocumentId,
    sequence: u32,
    byte_offset: u64,
    byte_length: u32,
    start_line: u32,
    end_line: u32,
    kind: u8,
    language: Option<String>,
    symbol: Option<String>,
    heading: Option<String>,
    len: u32,
    vector: Vec<i16>,
}

/// What opening from a cache file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheStatus {
    /// The file holds the store's current state.
    Current,
    /// The file held an earlier committed state; it was brought forward by the diff.
    CaughtUp {
        /// Chunks added, removed or re-pathed since the file's state.
        changed: usize,
    },
    /// There was no file; the index was built from the store.
    Missing,
    /// The file was unusable (the reason says why); the index was built from the store.
    Rebuilt(String),
}

/// Writes `snap` to `path` (through a temporary file, synced, then renamed).
pub(crate) fn save(snap: &Snapshot, path: &Path) -> Result<()> {
    let merged = Segment::merge(&snap.segments);
    let bytes = encode(&body_of(snap, &merged))?;
    write_atomically(path, &bytes)
}

/// What the file holds of `snap`, its segments merged into `seg`.
fn body_of(snap: &Snapshot, seg: &Segment) -> Body {
    Body {
        model: snap.model,
        dim: snap.dim as u32,
        root: snap.root,
        sequence: snap.sequence,
        table_roots: snap.table_roots,
        chunk_roots: snap.chunk_roots.to_vec(),
        path_roots: snap.path_roots.to_vec(),
        paths: snap.paths.values().cloned().collect(),
        docs: snap.docs.values().map(|d| cached_doc(d)).collect(),
        chunks: (0..seg.metas.len()).map(|i| cached_chunk(seg, i)).collect(),
        total_len: seg.total_len,
        postings: {
            let mut p: Vec<(String, Vec<(u32, u32)>)> = seg
                .postings
                .iter()
                .map(|(t, l)| (t.to_string(), l.clone()))
                .collect();
            p.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            p
        },
    }
}

fn cached_doc(d: &DocInfo) -> CachedDoc {
    CachedDoc {
        id: d.id,
        mime_type: d.mime_type.to_string(),
        paths: d
            .paths
            .iter()
            .map(|p| {
                (
                    p.path.to_string(),
                    p.collections.iter().map(|c| c.to_string()).collect(),
                )
            })
            .collect(),
        chunks: d.chunks.clone(),
    }
}

/// Chunk `i` of `seg`; a chunk without an embedding is cached with an empty vector.
fn cached_chunk(seg: &Segment, i: usize) -> CachedChunk {
    let m = &seg.metas[i];
    CachedChunk {
        id: m.id,
        doc: m.doc.id,
        sequence: m.sequence,
        byte_offset: m.byte_offset,
        byte_length: m.byte_length,
        start_line: m.start_line,
        end_line: m.end_line,
        kind: KINDS.iter().position(|k| *k == m.kind).unwrap_or(0) as u8,
        language: m.language.as_deref().map(str::to_owned),
        symbol: m.symbol.as_deref().map(str::to_owned),
        heading: m.heading.as_deref().map(str::to_owned),
        len: seg.lens[i],
        vector: if seg.vectors.has(i) {
            seg.vectors.get(i).to_vec()
        } else {
            Vec::new()
        },
    }
}

/// Magic, format version, the body, and the BLAKE3 hash of everything before it.
fn encode(body: &Body) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&CACHE_FORMAT.to_le_bytes());
    body.serialize(&mut bytes)
        .map_err(|e| StoreError::Internal(format!("encoding the index cache: {e}")))?;
    let hash = blake3::hash(&bytes);
    bytes.extend_from_slice(hash.as_bytes());
    Ok(bytes)
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it over
/// `path`, then syncs the folder.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    // A name of this process's own: processes saving at once never write one file, and
    // a failed write (a full disk) leaves nothing behind.
    static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp.{}.{n}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    if let Some(dir) = path.parent()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Reads a cache file into a snapshot of its state, checking it against the store's
/// chain; `Err(reason)` when it cannot be used.
pub(crate) fn load(
    path: &Path,
    txn: &ReadTxn,
    model: ModelHash,
    dim: usize,
) -> std::result::Result<Snapshot, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("unreadable: {e}"))?;
    let body = decode(&bytes)?;
    if body.model != model || body.dim as usize != dim {
        return Err("built for another embedding model".into());
    }
    check_stamp(&body, txn)?;
    let (docs, doc_of) = doc_maps(body.docs);
    let mut paths: BucketMap<PathEntry> = BucketMap::new();
    for p in body.paths {
        paths.insert(p.id().0, p);
    }
    let segment = segment_of(body.chunks, body.postings, body.total_len, &doc_of, dim)?;
    let segments = if segment.len() > 0 {
        vec![Live::new(Arc::new(segment))]
    } else {
        Vec::new()
    };
    Ok(Snapshot {
        root: body.root,
        sequence: body.sequence,
        model,
        dim,
        table_roots: body.table_roots,
        chunk_roots: Arc::new(body.chunk_roots),
        path_roots: Arc::new(body.path_roots),
        paths,
        docs,
        segments,
        txn: None,
    })
}

/// The body of a cache file's bytes: magic, checksum and format checked.
fn decode(bytes: &[u8]) -> std::result::Result<Body, String> {
    if bytes.len() < MAGIC.len() + 4 + 32 || &bytes[..8] != MAGIC {
        return Err("not an index cache file".into());
    }
    let (content, hash) = bytes.split_at(bytes.len() - 32);
    if blake3::hash(content).as_bytes() != hash {
        return Err("torn or altered: checksum mismatch".into());
    }
    let format = u32::from_le_bytes([content[8], content[9], content[10], content[11]]);
    if format != CACHE_FORMAT {
        return Err(format!("format {format}, this build reads {CACHE_FORMAT}"));
    }
    Body::try_from_slice(&content[12..]).map_err(|e| format!("does not decode: {e}"))
}

/// The stamp must describe a state this store committed: its bucket roots compose to
/// its state root, which is the root of its commit in the store's chain.
fn check_stamp(body: &Body, txn: &ReadTxn) -> std::result::Result<(), String> {
    let compose = |roots: &[MerkleRoot]| TopTree::from_bucket_roots(roots).map(|t| t.root());
    let chunks_root = compose(&body.chunk_roots).map_err(|e| e.to_string())?;
    let paths_root = compose(&body.path_roots).map_err(|e| e.to_string())?;
    if chunks_root != body.table_roots.get(Table::Chunks)
        || paths_root != body.table_roots.get(Table::Paths)
        || body.table_roots.state_root() != body.root
    {
        return Err("bucket roots do not compose to its state root".into());
    }
    let committed = if body.sequence == 0 {
        Some(StateRoot::default())
    } else {
        txn.state_record(body.sequence)
            .map_err(|e| e.to_string())?
            .map(|r| r.root)
    };
    if committed != Some(body.root) {
        return Err(format!(
            "its state (commit {}) is not in this store's chain",
            body.sequence
        ));
    }
    Ok(())
}

/// The cached documents, by bucket and by id.
fn doc_maps(
    cached: Vec<CachedDoc>,
) -> (BucketMap<Arc<DocInfo>>, HashMap<DocumentId, Arc<DocInfo>>) {
    let mut docs: BucketMap<Arc<DocInfo>> = BucketMap::new();
    let mut doc_of: HashMap<DocumentId, Arc<DocInfo>> = HashMap::new();
    for d in cached {
        let info = Arc::new(DocInfo {
            id: d.id,
            mime_type: d.mime_type.into(),
            paths: d
                .paths
                .into_iter()
                .map(|(p, c)| PathInfo {
                    path: p.into(),
                    collections: c.into_iter().map(Into::into).collect(),
                })
                .collect(),
            chunks: d.chunks,
        });
        docs.insert(d.id.0, Arc::clone(&info));
        doc_of.insert(d.id, info);
    }
    (docs, doc_of)
}

/// The one segment of the cached chunks and postings, checked: chunks in id order,
/// each naming a present document, vectors of `dim`, postings within the chunks.
fn segment_of(
    chunks: Vec<CachedChunk>,
    cached_postings: Vec<(String, Vec<(u32, u32)>)>,
    total_len: u64,
    doc_of: &HashMap<DocumentId, Arc<DocInfo>>,
    dim: usize,
) -> std::result::Result<Segment, String> {
    let n = chunks.len();
    let mut metas = Vec::with_capacity(n);
    let mut lens = Vec::with_capacity(n);
    let mut vectors = Vectors::with_capacity(dim, n);
    for (i, c) in chunks.into_iter().enumerate() {
        if i > 0 && metas.last().is_some_and(|m: &Arc<ChunkMeta>| m.id >= c.id) {
            return Err("chunks out of order".into());
        }
        let doc = doc_of
            .get(&c.doc)
            .cloned()
            .ok_or_else(|| format!("chunk {} names a missing document", c.id))?;
        if !c.vector.is_empty() && c.vector.len() != dim {
            return Err(format!("chunk {} has a vector of another dimension", c.id));
        }
        vectors.push(&c.vector);
        lens.push(c.len);
        metas.push(Arc::new(ChunkMeta {
            id: c.id,
            doc,
            sequence: c.sequence,
            byte_offset: c.byte_offset,
            byte_length: c.byte_length,
            start_line: c.start_line,
            end_line: c.end_line,
            kind: KINDS.get(usize::from(c.kind)).copied().unwrap_or("text"),
            language: c.language.map(Into::into),
            symbol: c.symbol.map(Into::into),
            heading: c.heading.map(Into::into),
        }));
    }
    let mut postings = HashMap::with_capacity(cached_postings.len());
    for (term, list) in cached_postings {
        if list.iter().any(|&(i, _)| i as usize >= n) {
            return Err(format!("postings of {term:?} point past the chunks"));
        }
        postings.insert(term.into_boxed_str(), list);
    }
    Ok(Segment {
        metas,
        lens,
        total_len,
        postings,
        vectors: Arc::new(vectors),
        hnsw: OnceLock::new(),
    })
}
