//! Pull: take a published state into a store. Only the rows the store lacks, of the
//! buckets whose roots differ from the store's, are fetched; every row, leaf, bucket
//! root and vector is checked before anything is written (`incoming.rs`); the
//! difference goes in as one write transaction that commits only on the manifest's
//! state root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfs_core::{
    Canonical, Chunk, ChunkId, Document, Edge, EdgeKind, Embedding, MerkleRoot, PathEntry,
    StateRoot, Table, TextHash,
};
use cfs_store::{NewDocument, ReadTxn, Store};

use crate::error::{RemoteError, Result};
use crate::fetch::{Fetched, Progress};
use crate::format::{BucketEntry, Manifest, ObjectName, chunk_sizes};
use crate::groups::{self, GROUP_BUCKETS};
use crate::incoming::{self, Arrived, Wanted};
use crate::remote::Remote;

/// What a pull did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullReport {
    /// The manifest pulled.
    pub manifest: ObjectName,
    /// The store's root before.
    pub previous_root: StateRoot,
    /// Its root now: the manifest's.
    pub root: StateRoot,
    /// Row tables fetched: one per bucket whose root differed and is not empty
    /// remotely.
    pub buckets_fetched: usize,
    /// Row tables of vector buckets fetched (those holding vectors the store lacked).
    pub vector_buckets_fetched: usize,
    /// Bytes read from the remote, manifest included.
    pub bytes_fetched: u64,
    /// Range reads made.
    pub requests: u64,
    /// Rows fetched and checked (decoded, validated, keyed, hashed), vectors included.
    pub rows_checked: u64,
    /// Documents added.
    pub documents_added: usize,
    /// Paths bound or rebound.
    pub paths_bound: usize,
    /// Paths removed.
    pub paths_removed: usize,
    /// Embeddings added to chunks the store had.
    pub embeddings_added: usize,
    /// Vectors put in the embedding cache.
    pub vectors_cached: usize,
    /// The embeddings this pull brought (for `--check`, which re-embeds some of them).
    pub embeddings_pulled: Vec<cfs_core::EmbeddingId>,
}

/// Fails unless `manifest` was built with `store`'s settings.
pub(crate) fn check_settings(
    store: &Store,
    manifest: &Manifest,
    remote: &dyn Remote,
) -> Result<()> {
    let settings = store.settings();
    let chunk = chunk_sizes(&settings.chunk);
    if manifest.model_id == settings.model_id && manifest.chunk == chunk {
        return Ok(());
    }
    Err(RemoteError::Settings {
        remote: remote.describe(),
        what: format!(
            "the remote's state was built with embedder {} and chunk sizes {:?}, the store {} \
             with {} and {:?}; one store never mixes them (pull into a new store instead)",
            manifest.model_id,
            manifest.chunk,
            store.path().display(),
            settings.model_id,
            chunk
        ),
    })
}

/// Takes the state of `manifest` (named `name`, fetched and checked by
/// [`crate::fetch_manifest`]) into `store`. On any failure the store is as it was.
pub fn pull(
    store: &Store,
    remote: &dyn Remote,
    name: &ObjectName,
    manifest: &Manifest,
) -> Result<PullReport> {
    pull_with(store, remote, name, manifest, &|_| {})
}

/// [`pull`], telling `progress` how far it is after each read.
pub fn pull_with(
    store: &Store,
    remote: &dyn Remote,
    name: &ObjectName,
    manifest: &Manifest,
    progress: &dyn Fn(&Progress),
) -> Result<PullReport> {
    check_settings(store, manifest, remote)?;
    let txn = store.begin_read()?;
    let previous_root = txn.table_roots()?.state_root();
    let mut report = PullReport {
        manifest: *name,
        previous_root,
        root: manifest.root(),
        bytes_fetched: manifest.encode().len() as u64,
        ..PullReport::default()
    };
    if previous_root == manifest.root() {
        return Ok(report);
    }
    let mut fetched = Fetched {
        progress: Some(progress),
        stage: "groups",
        ..Fetched::default()
    };
    let wanted = differing(&txn, remote, manifest, &mut fetched)?;
    let arrived = incoming::fetch(&txn, remote, manifest, &wanted, &mut fetched, &mut report)?;
    report.bytes_fetched += fetched.bytes;
    report.requests = fetched.requests;
    progress(&Progress {
        stage: "writing",
        done: 0,
        total: 0,
    });
    let local = LocalRows::read(&txn, &wanted, &arrived.kept)?;
    apply(store, &txn, manifest, arrived, &local, &mut report)?;
    Ok(report)
}

/// Makes a store at `file`, where none may be, holding the state of `manifest` (named
/// `name`): created with the manifest's settings and filled by the pull before it is
/// moved into place ([`Store::create_filled`]), so a pull that fails, or a process that
/// stops, leaves no store at `file`.
pub fn pull_new(
    file: &Path,
    remote: &dyn Remote,
    name: &ObjectName,
    manifest: &Manifest,
    progress: &dyn Fn(&Progress),
) -> Result<(Store, PullReport)> {
    Store::create_filled(file, settings_of(manifest), |store| {
        pull_with(store, remote, name, manifest, progress)
    })
}

/// The settings a store must have to hold `manifest`'s state.
pub fn settings_of(manifest: &Manifest) -> cfs_store::Settings {
    let [target_bytes, max_bytes, overlap_bytes] = manifest.chunk;
    cfs_store::Settings {
        chunk: cfs_ingest::ChunkParams {
            target_bytes,
            max_bytes,
            overlap_bytes,
        },
        model_id: manifest.model_id.clone(),
    }
}

/// The table buckets whose roots differ between the store and the manifest, with the
/// manifest's entry (`None`: the bucket is empty there): the groups whose nodes differ
/// are fetched and checked, and within them the buckets compared.
fn differing(
    txn: &ReadTxn,
    remote: &dyn Remote,
    manifest: &Manifest,
    fetched: &mut Fetched<'_>,
) -> Result<Vec<Wanted>> {
    let mut local = Vec::new();
    let mut changed = Vec::new();
    for (tag, &table) in Table::ALL.iter().enumerate() {
        let roots = txn.bucket_roots(table)?;
        let remote_nodes = manifest.group_nodes(tag as u8);
        for (g, remote_node) in remote_nodes.iter().enumerate() {
            if groups::node(&roots, g) != *remote_node {
                changed.push((tag, g));
            }
        }
        local.push(roots);
    }
    let wanted_groups: Vec<BucketEntry> = changed
        .iter()
        .filter_map(|&(tag, g)| manifest.group(tag as u8, g))
        .collect();
    let entries = groups::fetch(remote, &wanted_groups, fetched)?;
    let mut out = Vec::new();
    for (tag, g) in changed {
        let first = g * GROUP_BUCKETS;
        for (b, root) in local[tag]
            .iter()
            .enumerate()
            .skip(first)
            .take(GROUP_BUCKETS)
        {
            let entry = entries.get(&(tag as u8, b as u16)).copied();
            let remote_root = entry.map_or(MerkleRoot::empty(), |e| MerkleRoot(e.root));
            if *root != remote_root {
                out.push(((Table::ALL[tag], b as u16), entry));
            }
        }
    }
    Ok(out)
}

/// The store's rows of the buckets that differ; of paths and edges, also those the
/// pulled state does not hold.
#[derive(Default)]
struct LocalRows {
    paths: Vec<PathEntry>,
    paths_gone: Vec<PathEntry>,
    documents: BTreeSet<cfs_core::DocumentId>,
    embeddings: BTreeSet<cfs_core::EmbeddingId>,
    edges: BTreeSet<Edge>,
    edges_gone: Vec<Edge>,
}

impl LocalRows {
    /// Reads the rows of `wanted`; `kept` holds the leaves of those the pulled state
    /// holds too.
    fn read(txn: &ReadTxn, wanted: &[Wanted], kept: &BTreeSet<[u8; 32]>) -> Result<Self> {
        let mut out = Self::default();
        for &((table, bucket), _) in wanted {
            if table == Table::Chunks {
                continue;
            }
            let rows = txn.bucket_payloads(table, bucket)?;
            for row in rows {
                let gone = !kept.contains(&row.leaf);
                match table {
                    Table::Paths => {
                        let path = PathEntry::decode(&row.payload)?;
                        if gone {
                            out.paths_gone.push(path.clone());
                        }
                        out.paths.push(path);
                    }
                    Table::Documents => {
                        out.documents.insert(Document::decode(&row.payload)?.id);
                    }
                    Table::Embeddings => {
                        let id: [u8; 16] = row.key.as_slice().try_into().map_err(|_| {
                            cfs_store::StoreError::Corrupted(
                                "an embedding key of other length".into(),
                            )
                        })?;
                        out.embeddings.insert(cfs_core::EmbeddingId(id));
                    }
                    Table::Edges => {
                        let edge = Edge::decode(&row.payload)?;
                        if gone {
                            out.edges_gone.push(edge);
                        }
                        out.edges.insert(edge);
                    }
                    Table::Chunks => {}
                }
            }
        }
        Ok(out)
    }
}

/// A new document with its rows, owned.
struct Incoming {
    document: Document,
    chunks: Vec<Chunk>,
    embeddings: Vec<Embedding>,
    window_edges: Vec<Edge>,
}

/// Writes the difference between the fetched rows and the store's in one transaction
/// that commits only on the manifest's root. The new documents take the fetched chunks
/// and embeddings by value: a clone holds each fetched row once.
fn apply(
    store: &Store,
    txn: &ReadTxn,
    manifest: &Manifest,
    mut remote: Arrived,
    local: &LocalRows,
    report: &mut PullReport,
) -> Result<()> {
    let incoming = take_new_documents(&mut remote, local);
    let mut w = store.begin_write()?;
    let news: Vec<NewDocument<'_>> = incoming
        .iter()
        .map(|d| NewDocument::new(&d.document, &d.chunks, &d.embeddings, &d.window_edges))
        .collect();
    report.documents_added = w.put_documents(&news)?;
    let remote_paths: BTreeMap<&str, &PathEntry> =
        remote.paths.iter().map(|p| (p.path.as_str(), p)).collect();
    let local_paths: BTreeMap<&str, &PathEntry> =
        local.paths.iter().map(|p| (p.path.as_str(), p)).collect();
    let bind: Vec<PathEntry> = remote_paths
        .iter()
        .filter(|(path, p)| local_paths.get(*path) != Some(*p))
        .map(|(_, p)| (*p).clone())
        .collect();
    w.bind_paths(&bind)?;
    report.paths_bound = bind.len();
    for path in local
        .paths_gone
        .iter()
        .filter(|p| !remote_paths.contains_key(p.path.as_str()))
    {
        w.unbind_path(&path.path)?;
        report.paths_removed += 1;
    }
    // Embeddings of chunks the store had (the new documents' went in with them).
    let mut cached: Vec<&Embedding> = incoming.iter().flat_map(|d| &d.embeddings).collect();
    for e in remote
        .embeddings
        .iter()
        .filter(|e| !local.embeddings.contains(&e.id))
    {
        if w.put_embedding(e)? {
            report.embeddings_added += 1;
        }
        cached.push(e);
    }
    // In key order, as the rows came, so `--check` samples the same embeddings.
    cached.sort_by_key(|e| e.id);
    apply_user_edges(&mut w, &remote, local)?;
    let chunks: BTreeMap<ChunkId, &Chunk> = incoming
        .iter()
        .flat_map(|d| &d.chunks)
        .chain(&remote.chunks)
        .map(|c| (c.id, c))
        .collect();
    report.vectors_cached = cache_vectors(&mut w, txn, &chunks, &cached)?;
    report.embeddings_pulled = cached.iter().map(|e| e.id).collect();
    if manifest.parsers != cfs_ingest::parsers_version() {
        w.set_parsers(&manifest.parsers)?;
    }
    w.commit_expecting(manifest.root())?;
    Ok(())
}

/// Removes the store's user edges the pulled state lacks and adds those it lacks.
fn apply_user_edges(
    w: &mut cfs_store::WriteTxn<'_>,
    remote: &Arrived,
    local: &LocalRows,
) -> Result<()> {
    let gone: Vec<Edge> = local
        .edges_gone
        .iter()
        .filter(|e| !e.kind.is_system() && !remote.edges.contains(e))
        .copied()
        .collect();
    if !gone.is_empty() {
        w.remove_user_edges(&gone)?;
    }
    for edge in remote
        .edges
        .iter()
        .filter(|e| !e.kind.is_system() && !local.edges.contains(e))
    {
        w.put_user_edge(edge)?;
    }
    Ok(())
}

/// The fetched documents the store lacks, each with its chunks (all of them: a new
/// document's chunks are new rows, so their buckets differ), their embeddings and their
/// window edges, moved out of `remote`: what stays there are the rows of documents the
/// store has.
fn take_new_documents(remote: &mut Arrived, local: &LocalRows) -> Vec<Incoming> {
    let mut chunks: BTreeMap<cfs_core::DocumentId, Vec<Chunk>> = BTreeMap::new();
    for c in std::mem::take(&mut remote.chunks) {
        chunks.entry(c.document_id).or_default().push(c);
    }
    let mut embeddings: BTreeMap<ChunkId, Embedding> = std::mem::take(&mut remote.embeddings)
        .into_iter()
        .map(|e| (e.chunk_id, e))
        .collect();
    let mut out = Vec::new();
    for document in std::mem::take(&mut remote.documents) {
        if local.documents.contains(&document.id) {
            continue;
        }
        let mut own = chunks.remove(&document.id).unwrap_or_default();
        own.sort_by_key(|c| c.sequence);
        let ids: BTreeSet<cfs_core::EntityId> =
            own.iter().map(|c| cfs_core::EntityId(c.id.0)).collect();
        out.push(Incoming {
            document,
            embeddings: own
                .iter()
                .filter_map(|c| embeddings.remove(&c.id))
                .collect(),
            window_edges: remote
                .edges
                .iter()
                .filter(|e| e.kind == EdgeKind::NEXT_WINDOW && ids.contains(&e.source))
                .copied()
                .collect(),
            chunks: own,
        });
    }
    remote.chunks = chunks.into_values().flatten().collect();
    remote.embeddings = embeddings.into_values().collect();
    out
}

/// Puts each pulled vector in the embedding cache under the text it embeds (its chunk
/// from `chunks`, the pulled ones, or else the store), so that a sync never embeds that
/// text again.
fn cache_vectors(
    w: &mut cfs_store::WriteTxn<'_>,
    txn: &ReadTxn,
    chunks: &BTreeMap<ChunkId, &Chunk>,
    embeddings: &[&Embedding],
) -> Result<usize> {
    let mut n = 0;
    for e in embeddings {
        let chunk = match chunks.get(&e.chunk_id) {
            Some(c) => std::borrow::Cow::Borrowed(*c),
            None => match txn.chunk(&e.chunk_id)? {
                Some(c) => std::borrow::Cow::Owned(c),
                None => continue,
            },
        };
        let text = cfs_ingest::embedding_text(&chunk);
        w.cache_vector(&e.model_hash, &TextHash::of(&text), &e.vector)?;
        n += 1;
    }
    Ok(n)
}
