//! Builds a canonical state from the compact description used by `state` and `proof`
//! vectors: documents as content plus chunk spans, paths naming documents by index.

use cfs_core::{
    CanonicalState, Chunk, ContentHash, Document, DocumentId, Edge, EdgeKind, Embedding, EntityId,
    ModelHash, PathEntry,
};
use serde_json::Value;

use super::json::{
    R, arr_of, get, kind_from, metadata_from, profile_from, str_of, strings_of, u32_of, u64_of,
};

/// A built state and, per described document, its id, chunk ids and embedding ids.
pub struct Built {
    pub state: CanonicalState,
    pub documents: Vec<(DocumentId, Vec<Chunk>, Vec<Embedding>)>,
}

fn entity_ref(built: &[(DocumentId, Vec<Chunk>, Vec<Embedding>)], v: &Value) -> R<EntityId> {
    let pick = |key: &str| -> R<(usize, usize)> {
        let a = arr_of(v, key)?;
        let n = |i: usize| {
            a.get(i)
                .and_then(Value::as_u64)
                .and_then(|x| usize::try_from(x).ok())
                .ok_or_else(|| format!("bad reference {v}"))
        };
        Ok((n(0)?, n(1)?))
    };
    let missing = || format!("reference {v} points nowhere");
    if let Some(i) = v.get("document").and_then(Value::as_u64) {
        let i = usize::try_from(i).map_err(|e| e.to_string())?;
        return built.get(i).map(|d| d.0.into()).ok_or_else(missing);
    }
    if v.get("chunk").is_some() {
        let (d, s) = pick("chunk")?;
        return built
            .get(d)
            .and_then(|d| d.1.get(s))
            .map(|c| c.id.into())
            .ok_or_else(missing);
    }
    let (d, e) = pick("embedding")?;
    built
        .get(d)
        .and_then(|d| d.2.get(e))
        .map(|x| x.id.into())
        .ok_or_else(missing)
}

pub fn build(v: &Value) -> R<Built> {
    if let Some(n) = v.get("generated") {
        let n = n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or("generated: u32")?;
        return build(&super::cases::generated_documents(n));
    }
    let mut state = CanonicalState::new();
    let mut documents = Vec::new();
    for d in arr_of(v, "documents")? {
        let content = str_of(d, "content")?;
        let profile = profile_from(get(d, "profile")?)?;
        let content_hash = ContentHash::of(content.as_bytes());
        let id = DocumentId::derive(&content_hash, &profile.hash());
        let mut chunks = Vec::new();
        for (sequence, c) in arr_of(d, "chunks")?.iter().enumerate() {
            let offset = u64_of(c, "byte_offset")?;
            let length = u64_of(c, "byte_length")?;
            let start = usize::try_from(offset).map_err(|e| e.to_string())?;
            let end = start + usize::try_from(length).map_err(|e| e.to_string())?;
            let text = content
                .get(start..end)
                .ok_or_else(|| format!("span {start}..{end} is not in the content"))?;
            let chunk = Chunk::new(
                id,
                u32::try_from(sequence).map_err(|e| e.to_string())?,
                offset,
                u32_of(c, "start_line")?,
                u32_of(c, "end_line")?,
                kind_from(get(c, "kind")?)?,
                text.into(),
            )
            .map_err(|e| e.to_string())?;
            chunks.push(chunk);
        }
        let document = Document::new(
            content_hash,
            content.len() as u64,
            profile,
            content.len() as u64,
            metadata_from(d, "metadata")?,
            &chunks,
        )
        .map_err(|e| e.to_string())?;
        let mut embeddings = Vec::new();
        for e in arr_of(d, "embeddings")? {
            let seq = usize::try_from(u64_of(e, "chunk")?).map_err(|e| e.to_string())?;
            let chunk = chunks.get(seq).ok_or("embedding of a missing chunk")?;
            let vector = arr_of(e, "vector")?
                .iter()
                .map(|x| {
                    x.as_i64()
                        .and_then(|x| i16::try_from(x).ok())
                        .ok_or("not an i16")
                })
                .collect::<Result<Vec<i16>, _>>()?;
            let model = ModelHash::of(str_of(e, "model_id")?);
            embeddings.push(Embedding::new(chunk.id, model, vector).map_err(|e| e.to_string())?);
        }
        let mut windows = Vec::new();
        for w in arr_of(d, "window_edges")? {
            let from = w
                .get(0)
                .and_then(Value::as_u64)
                .ok_or("window edge [from, to]")?;
            let to = w
                .get(1)
                .and_then(Value::as_u64)
                .ok_or("window edge [from, to]")?;
            let at = |i: u64| {
                usize::try_from(i)
                    .ok()
                    .and_then(|i| chunks.get(i))
                    .map(|c| c.id)
                    .ok_or("window edge names a missing chunk")
            };
            windows.push(Edge::new(at(from)?, at(to)?, EdgeKind::NEXT_WINDOW));
        }
        state
            .insert_document(document, chunks.clone(), embeddings.clone(), windows)
            .map_err(|e| e.to_string())?;
        documents.push((id, chunks, embeddings));
    }
    for p in arr_of(v, "paths")? {
        let index = usize::try_from(u64_of(p, "document")?).map_err(|e| e.to_string())?;
        let (document_id, _, _) = documents
            .get(index)
            .ok_or("path names a missing document")?;
        let entry = PathEntry {
            path: str_of(p, "path")?.into(),
            document_id: *document_id,
            collections: strings_of(p, "collections")?,
            context: str_of(p, "context")?.into(),
        };
        state.bind_path(entry).map_err(|e| e.to_string())?;
    }
    for e in arr_of(v, "user_edges")? {
        let edge = Edge {
            source: entity_ref(&documents, get(e, "source")?)?,
            target: entity_ref(&documents, get(e, "target")?)?,
            kind: EdgeKind(u16::try_from(u64_of(e, "kind")?).map_err(|e| e.to_string())?),
        };
        state.insert_edge(edge).map_err(|e| e.to_string())?;
    }
    let problems = state.check_integrity();
    if !problems.is_empty() {
        return Err(format!("built state is not sound: {problems:?}"));
    }
    Ok(Built { state, documents })
}
