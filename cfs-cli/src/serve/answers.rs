//! The answers of the server's tools, built from one snapshot: compact, citing path and
//! line range, each naming the state root it came from. Errors are sentences for the
//! agent (a tool error), never a crash.

use std::collections::BTreeMap;
use std::str::FromStr;

use cfs_core::ChunkId;
use cfs_ingest::Embedder;
use cfs_ingest::Role;
use cfs_search::{
    ChunkMeta, DocInfo, Filter, Hit, Mode, Query, Snapshot, context, search, search_files,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context_cmd::ContextReport;

/// Most results one search returns.
pub const MAX_K: u32 = 100;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// What to look for: words, an identifier, a question in plain language.
    pub query: String,
    /// Number of results, 1 to 100 (default 10).
    pub k: Option<u32>,
    /// "hybrid" (default: text and vectors fused), "text" (BM25) or "vector".
    pub mode: Option<String>,
    /// Only chunks of files whose path starts with this (relative to the tree).
    pub path: Option<String>,
    /// Only chunks in this collection (see the collections tool).
    pub collection: Option<String>,
    /// Only code chunks of this language. Chunked by symbol: rust, go, python,
    /// typescript, tsx, javascript, jsx, java, csharp, kotlin, c, cpp, objc, ruby, php,
    /// swift, shell, lua, zig, scala, haskell, elixir, dart, ocaml, erlang, r, julia, sql;
    /// and by their keys, tables, blocks and rules: yaml, toml, hcl, css. Others by name
    /// as text (perl, matlab, protobuf, ...).
    pub lang: Option<String>,
    /// Only chunks of this kind: text, section, code or page.
    pub kind: Option<String>,
    /// Only files of this role: source, declaration, config, docs, example, test,
    /// generated or vendored.
    pub role: Option<String>,
    /// Answer with files (each with its best chunks) instead of chunks: for "where is
    /// the code for this?".
    pub files: Option<bool>,
    /// Search vectors exactly (the reference) instead of through the ANN graph.
    pub exact: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchAnswer {
    /// The state root the results come from.
    pub root: String,
    /// Chunks, best first (empty when files were asked for).
    pub results: Vec<Found>,
    /// Files, best first, when files were asked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FoundFile>,
}

/// A file of a file search.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FoundFile {
    /// The file (relative to the tree).
    pub path: String,
    /// source, declaration, config, docs, example, test, generated or vendored.
    pub role: String,
    /// The ranking score: its best chunk's plus a bonus for further matching chunks.
    pub score: f64,
    /// Its best chunks, best first.
    pub chunks: Vec<Found>,
}

/// Where a chunk is: what every answer about one chunk cites.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cited {
    /// Pass to get_chunk for the whole text and its neighbours.
    pub chunk_id: String,
    /// The file (relative to the tree).
    pub path: String,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// text, section, code or page.
    pub kind: String,
    /// The code symbol, `parent::name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

impl Cited {
    fn of(meta: &ChunkMeta) -> Self {
        Self {
            chunk_id: meta.id.to_string(),
            path: meta
                .doc
                .paths
                .first()
                .map(|p| p.path.to_string())
                .unwrap_or_default(),
            start_line: meta.start_line,
            end_line: meta.end_line,
            kind: meta.kind.to_owned(),
            symbol: meta.symbol.as_deref().map(str::to_owned),
            language: meta.language.as_deref().map(str::to_owned),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Found {
    #[serde(flatten)]
    pub chunk: Cited,
    /// Its file's role: source, declaration, config, docs, example, test, generated or
    /// vendored.
    pub role: String,
    /// The ranking score (fused in hybrid mode).
    pub score: f64,
    /// A few lines around the first query word.
    pub snippet: String,
    /// Other files with the same content.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_content: Vec<String>,
}

/// A search tool's number of results (default 10), mode (default hybrid) and role,
/// checked: a bad one is a tool error saying what is accepted.
pub fn query_options(
    k: Option<u32>,
    mode: Option<&str>,
    role: Option<&str>,
) -> Result<(usize, Mode, Option<Role>), String> {
    let k = k.unwrap_or(10);
    if !(1..=MAX_K).contains(&k) {
        return Err(format!("k must be 1 to {MAX_K}, not {k}"));
    }
    let mode = match mode {
        None => Mode::Hybrid,
        Some(m) => Mode::from_str(m)
            .map_err(|_| format!("mode must be hybrid, text or vector, not {m:?}"))?,
    };
    let role = match role {
        None => None,
        Some(r) => Some(Role::from_name(r).ok_or_else(|| {
            let names: Vec<&str> = Role::ALL.iter().map(|r| r.name()).collect();
            format!("role must be one of {}, not {r:?}", names.join(", "))
        })?),
    };
    Ok((k as usize, mode, role))
}

/// The query `params` ask (a context's too, by the same fields).
fn query_of(params: &SearchParams) -> Result<Query, String> {
    let (k, mode, role) = query_options(params.k, params.mode.as_deref(), params.role.as_deref())?;
    Ok(Query::new(params.query.clone())
        .k(k)
        .mode(mode)
        .exact(params.exact.unwrap_or(false))
        .filter(Filter {
            path_prefix: params.path.clone(),
            collection: params.collection.clone(),
            language: params.lang.clone(),
            kind: params.kind.clone(),
            mime_type: None,
            role,
        }))
}

/// Runs `params` on `snap`.
pub fn search_answer(
    snap: &Snapshot,
    embedder: &dyn Embedder,
    params: SearchParams,
) -> Result<SearchAnswer, String> {
    let query = query_of(&params)?;
    let root = snap.state_root().to_hex();
    if params.files.unwrap_or(false) {
        let files = search_files(snap, &query, embedder).map_err(|e| e.to_string())?;
        let files = files
            .into_iter()
            .map(|f| {
                let chunks = f.chunks.into_iter().map(|h| found(snap, h));
                Ok(FoundFile {
                    path: f.path,
                    role: f.role.name().to_owned(),
                    score: f.score,
                    chunks: chunks.collect::<Result<_, String>>()?,
                })
            })
            .collect::<Result<_, String>>()?;
        return Ok(SearchAnswer {
            root,
            results: Vec::new(),
            files,
        });
    }
    let hits = search(snap, &query, embedder).map_err(|e| e.to_string())?;
    let results = hits
        .into_iter()
        .map(|h| found(snap, h))
        .collect::<Result<_, String>>()?;
    Ok(SearchAnswer {
        root,
        results,
        files: Vec::new(),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextParams {
    /// What the context is for: a question, a description of behaviour, a name.
    pub query: String,
    /// The most tokens the context may take, 64 to 262144 (default 4000; estimated
    /// from its bytes, at least what common tokenizers count for 99.4% of chunks).
    pub tokens: Option<u32>,
    /// Files of the file answer the context draws from, 1 to 100 (default 10).
    pub k: Option<u32>,
    /// "hybrid" (default), "text" or "vector".
    pub mode: Option<String>,
    /// Only files whose path starts with this (relative to the tree).
    pub path: Option<String>,
    /// Only chunks in this collection.
    pub collection: Option<String>,
    /// Only code chunks of this language (as search takes it).
    pub lang: Option<String>,
    /// Only chunks of this kind: text, section, code or page.
    pub kind: Option<String>,
    /// Only files of this role (as search takes it).
    pub role: Option<String>,
    /// Search vectors exactly (the reference) instead of through the ANN graph.
    pub exact: Option<bool>,
}

/// Runs a context request on `snap`.
pub fn context_answer(
    snap: &Snapshot,
    embedder: &dyn Embedder,
    params: ContextParams,
) -> Result<ContextReport, String> {
    let tokens = params.tokens.unwrap_or(4000);
    let query = query_of(&SearchParams {
        query: params.query,
        k: params.k,
        mode: params.mode,
        path: params.path,
        collection: params.collection,
        lang: params.lang,
        kind: params.kind,
        role: params.role,
        files: None,
        exact: params.exact,
    })?;
    let found = context(snap, &query, embedder, tokens).map_err(|e| e.to_string())?;
    Ok(ContextReport::of(&found))
}

/// The answer's form of a hit.
fn found(snap: &Snapshot, h: Hit) -> Result<Found, String> {
    let meta = snap
        .chunk(&h.chunk_id)
        .ok_or_else(|| format!("chunk {} left its snapshot", h.chunk_id))?;
    Ok(Found {
        chunk: Cited::of(&meta),
        role: h.role.name().to_owned(),
        same_content: h.paths.iter().filter(|p| **p != h.path).cloned().collect(),
        score: h.score,
        snippet: h.snippet,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkParams {
    /// A chunk id from a search result (32 hex digits or the UUID form).
    pub id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkAnswer {
    /// The state root the chunk was read at.
    pub root: String,
    #[serde(flatten)]
    pub chunk: Cited,
    /// Every file with this content.
    pub paths: Vec<String>,
    /// Heading path of a section, joined with " > ".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// Position of the chunk in its file, from 0, and the file's number of chunks.
    pub sequence: u32,
    pub chunks_in_file: usize,
    /// The chunk before this one in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The chunk after this one in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    pub text: String,
}

pub fn chunk_answer(snap: &Snapshot, params: &ChunkParams) -> Result<ChunkAnswer, String> {
    let root = snap.state_root();
    let id = ChunkId::parse(params.id.trim())
        .map_err(|e| format!("{:?} is not a chunk id: {e}", params.id))?;
    let meta = snap
        .chunk(&id)
        .ok_or_else(|| format!("no chunk {id} at state root {root}"))?;
    let text = snap
        .chunk_text(&id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no text for chunk {id} at state root {root}"))?;
    let order = &meta.doc.chunks;
    let at = order.iter().position(|c| *c == id);
    let neighbour = |i: Option<usize>| i.and_then(|i| order.get(i)).map(ToString::to_string);
    Ok(ChunkAnswer {
        root: root.to_hex(),
        chunk: Cited::of(&meta),
        paths: paths_of(&meta.doc),
        heading: meta.heading.as_deref().map(str::to_owned),
        sequence: meta.sequence,
        chunks_in_file: order.len(),
        previous: neighbour(at.and_then(|i| i.checked_sub(1))),
        next: neighbour(at.map(|i| i + 1)),
        text,
    })
}

fn paths_of(doc: &DocInfo) -> Vec<String> {
    doc.paths.iter().map(|p| p.path.to_string()).collect()
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileParams {
    /// The file's path relative to the tree, as search results give it.
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FileAnswer {
    /// The state root the file was read at.
    pub root: String,
    pub path: String,
    pub document_id: String,
    pub mime_type: String,
    /// Every file with this content.
    pub paths: Vec<String>,
    /// The file's chunks in order.
    pub chunks: Vec<FileChunk>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FileChunk {
    pub chunk_id: String,
    pub start_line: u32,
    pub end_line: u32,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    pub text: String,
}

pub fn file_answer(snap: &Snapshot, params: &FileParams) -> Result<FileAnswer, String> {
    let root = snap.state_root();
    let path = params.path.trim().trim_start_matches("./");
    let doc = snap
        .document_at(path)
        .ok_or_else(|| format!("no file {path:?} in the store at state root {root}"))?;
    let mut chunks = Vec::with_capacity(doc.chunks.len());
    for id in &doc.chunks {
        let (Some(meta), Some(text)) = (
            snap.chunk(id),
            snap.chunk_text(id).map_err(|e| e.to_string())?,
        ) else {
            return Err(format!(
                "chunk {id} of {path} is missing at state root {root}"
            ));
        };
        chunks.push(FileChunk {
            chunk_id: id.to_string(),
            start_line: meta.start_line,
            end_line: meta.end_line,
            kind: meta.kind.to_owned(),
            symbol: meta.symbol.as_deref().map(str::to_owned),
            heading: meta.heading.as_deref().map(str::to_owned),
            text,
        });
    }
    Ok(FileAnswer {
        root: root.to_hex(),
        path: path.to_owned(),
        document_id: doc.id.to_string(),
        mime_type: doc.mime_type.to_string(),
        paths: paths_of(doc),
        chunks,
    })
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CollectionsAnswer {
    /// The state root the counts are of.
    pub root: String,
    pub collections: Vec<CollectionInfo>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CollectionInfo {
    pub name: String,
    /// From the tree's .cfs/collections.yaml.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Files in the collection.
    pub files: usize,
    /// Chunks of those files.
    pub chunks: usize,
}

/// Every collection with a file in the snapshot, and every collection the registry
/// declares (with zero counts when it has no file yet), by name.
pub fn collections_answer(snap: &Snapshot, declared: &[(String, String)]) -> CollectionsAnswer {
    let mut by_name: BTreeMap<String, CollectionInfo> = BTreeMap::new();
    let entry = |name: &str, by_name: &mut BTreeMap<String, CollectionInfo>| {
        by_name
            .entry(name.to_owned())
            .or_insert_with(|| CollectionInfo {
                name: name.to_owned(),
                description: String::new(),
                files: 0,
                chunks: 0,
            });
    };
    for (name, description) in declared {
        entry(name, &mut by_name);
        if let Some(c) = by_name.get_mut(name) {
            c.description.clone_from(description);
        }
    }
    for doc in snap.documents() {
        for path in &doc.paths {
            for name in &path.collections {
                entry(name, &mut by_name);
                if let Some(c) = by_name.get_mut(&**name) {
                    c.files += 1;
                    c.chunks += doc.chunks.len();
                }
            }
        }
    }
    CollectionsAnswer {
        root: snap.state_root().to_hex(),
        collections: by_name.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent learns the languages it can filter by from the tool's schema: every
    /// language cfs parses is named there.
    #[test]
    fn the_lang_filter_names_every_parsed_language() {
        let schema = serde_json::to_value(schemars::schema_for!(SearchParams)).unwrap();
        let described = schema["properties"]["lang"]["description"]
            .as_str()
            .unwrap()
            .replace(['\n', ',', ';', ':', '.'], " ");
        let words: Vec<&str> = described.split_whitespace().collect();
        for language in cfs_ingest::parsed_languages() {
            assert!(
                words.contains(&language.name()),
                "{} is not in the lang filter's description: {described}",
                language.name()
            );
        }
    }
}
