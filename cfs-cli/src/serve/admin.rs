//! The server's status and refresh: what state is served, and syncing named files.

use std::path::PathBuf;

use anyhow::Context;
use cfs_store::SyncOptions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::served::{Served, lock};
use crate::locate::{check_named_paths, tree_relative};
use crate::open::{Common, Opened, open_or_create};

#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusAnswer {
    /// "ok", "missing" (no store file: deleted, moved or never made), "replaced" (another
    /// file that cannot be served took its place) or "unreadable".
    pub state: String,
    /// Why the state is not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The store file.
    pub store: String,
    /// The indexed folder, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// The state root served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// Commits in the state chain, and the time of the last one (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_commit_ms: Option<u64>,
    /// The embedding model of the store's vectors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// Documents per MIME type (for code, per language), most first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<TypeCount>>,
    /// Whether this server keeps the store in step with the folder.
    pub watching: bool,
    /// Why the watcher stopped, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch_error: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    pub files: u64,
    pub documents: u64,
    pub chunks: u64,
    pub embeddings: u64,
    /// Chunks whose vectors are still being computed (text search finds them already).
    pub vectors_pending: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TypeCount {
    /// The detected MIME type (`text/x-swift`).
    pub mime_type: String,
    pub documents: u64,
    /// Of them, those parsed into symbols (the rest were chunked as text).
    pub by_symbol: u64,
}

/// The status; never an error: a store that cannot be served is a state.
pub fn status(served: &Served) -> StatusAnswer {
    let mut answer = StatusAnswer {
        state: "ok".into(),
        problem: None,
        store: served.file.display().to_string(),
        tree: served.tree.as_ref().map(|t| t.display().to_string()),
        root: None,
        counts: None,
        commits: None,
        last_commit_ms: None,
        embedder: None,
        types: None,
        watching: served.watching,
        watch_error: lock(&served.watch_error).clone(),
    };
    let fail = |mut answer: StatusAnswer, state: &str, problem: String| {
        answer.state = state.into();
        answer.problem = Some(problem);
        answer
    };
    if !served.file.is_file() {
        let problem = format!("no store file at {}", answer.store);
        return fail(answer, "missing", problem);
    }
    let (live, snap) = match served.snapshot() {
        Ok(pair) => pair,
        Err(problem) if served.was_replaced() => return fail(answer, "replaced", problem),
        Err(problem) => return fail(answer, "unreadable", problem),
    };
    let read = live.store.begin_read().and_then(|txn| {
        let counts = txn.counts()?;
        let chain = txn.state_chain()?;
        Ok((counts, chain, txn.document_types()?))
    });
    match read {
        Ok((c, chain, types)) => {
            let types = types.into_iter().map(|t| TypeCount {
                mime_type: t.mime_type,
                documents: t.documents,
                by_symbol: t.by_symbol,
            });
            answer.types = Some(types.collect());
            answer.counts = Some(Counts {
                files: c.paths,
                documents: c.documents,
                chunks: c.chunks,
                embeddings: c.embeddings,
                vectors_pending: c.chunks.saturating_sub(c.embeddings),
            });
            answer.commits = Some(chain.len());
            answer.last_commit_ms = chain.last().map(|r| r.timestamp_ms);
        }
        Err(e) => return fail(answer, "unreadable", e.to_string()),
    }
    answer.root = Some(snap.state_root().to_hex());
    answer.embedder = Some(live.store.settings().model_id.clone());
    answer
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshParams {
    /// Files or folders to sync, relative to the tree (or absolute inside it); deleted
    /// ones are removed from the store. At least one.
    pub paths: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RefreshAnswer {
    /// The state root after the refresh (served from now on).
    pub root: String,
    pub added: usize,
    pub updated: usize,
    pub removed: usize,
    pub renamed: usize,
    pub unchanged: usize,
    /// Files that could not be indexed, with the reason.
    pub failed: Vec<FailedFile>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FailedFile {
    pub path: String,
    pub reason: String,
}

/// Syncs exactly `params.paths` (text and vectors in one commit) and publishes the new
/// state to the server's index.
pub fn refresh(served: &Served, params: &RefreshParams) -> anyhow::Result<RefreshAnswer> {
    anyhow::ensure!(!params.paths.is_empty(), "paths names no file or folder");
    let tree = served.tree.as_ref().with_context(|| {
        format!(
            "{}: the store is not in a .cfs/ folder, so its tree is unknown",
            served.file.display()
        )
    })?;
    let root = tree
        .canonicalize()
        .with_context(|| format!("cannot open {}", tree.display()))?;
    let paths: Vec<PathBuf> = params.paths.iter().map(PathBuf::from).collect();
    let rel = tree_relative(&root, &root, &paths)?;
    let common = Common {
        store: Some(served.file.clone()),
        json: true,
    };
    let Opened {
        store,
        options,
        embedder,
        ..
    } = open_or_create(&root, &common, None, cfs_store::DEFAULT_SYNC_MEMORY)?;
    check_named_paths(&store, &root, &rel)?;
    let options = SyncOptions {
        defer_embeddings: false,
        ..options
    };
    let scope = cfs_ingest::Scope::new(&rel);
    let report = store.sync_paths(&root, &scope, &options, &*embedder, &|_| {})?;
    drop(store);
    // Publish at once: the next answer sees the refreshed files.
    served.current().map_err(anyhow::Error::msg)?;
    Ok(RefreshAnswer {
        root: report.root.to_hex(),
        added: report.added,
        updated: report.updated,
        removed: report.removed,
        renamed: report.renamed,
        unchanged: report.unchanged,
        failed: report
            .failed
            .into_iter()
            .map(|(path, reason)| FailedFile { path, reason })
            .collect(),
    })
}
