//! JSON forms of cfs entities, as the test vectors write them. The same forms are read
//! by `test-vectors/verify.py` and described in `docs/spec.md`.

use cfs_core::{
    Canonical, ChangeSummary, Chunk, ChunkId, ChunkKind, ChunkProof, ContentHash, Document,
    DocumentId, Edge, EdgeKind, Embedding, EmbeddingId, EntityId, InclusionProof, MerklePath,
    MerkleRoot, MetaEntry, ModelHash, ParseProfile, PathEntry, PathStep, StateRecord, StateRoot,
    Symbol, SymbolKind, Table, TableChange, TableRoots, TextHash, Window, hex_decode, hex_encode,
};
use serde_json::{Value, json};

pub type R<T> = Result<T, String>;

pub fn get<'a>(v: &'a Value, key: &str) -> R<&'a Value> {
    v.get(key)
        .ok_or_else(|| format!("missing field {key:?} in {v}"))
}
pub fn str_of<'a>(v: &'a Value, key: &str) -> R<&'a str> {
    get(v, key)?
        .as_str()
        .ok_or_else(|| format!("{key:?} is not a string"))
}
pub fn u64_of(v: &Value, key: &str) -> R<u64> {
    get(v, key)?
        .as_u64()
        .ok_or_else(|| format!("{key:?} is not an unsigned integer"))
}
pub fn u32_of(v: &Value, key: &str) -> R<u32> {
    u32::try_from(u64_of(v, key)?).map_err(|e| format!("{key:?}: {e}"))
}
pub fn arr_of<'a>(v: &'a Value, key: &str) -> R<&'a Vec<Value>> {
    get(v, key)?
        .as_array()
        .ok_or_else(|| format!("{key:?} is not an array"))
}
pub fn bytes_of(v: &Value, key: &str) -> R<Vec<u8>> {
    hex_decode(str_of(v, key)?).map_err(|e| e.to_string())
}
pub fn h32(text: &str) -> R<[u8; 32]> {
    hex_decode(text)
        .map_err(|e| e.to_string())?
        .try_into()
        .map_err(|_| format!("{text:?} is not 32 bytes"))
}
pub fn h32_of(v: &Value, key: &str) -> R<[u8; 32]> {
    h32(str_of(v, key)?)
}
pub fn id_of(v: &Value, key: &str) -> R<[u8; 16]> {
    uuid::Uuid::parse_str(str_of(v, key)?)
        .map(|u| u.into_bytes())
        .map_err(|e| format!("{key:?}: {e}"))
}
pub fn strings_of(v: &Value, key: &str) -> R<Vec<String>> {
    arr_of(v, key)?
        .iter()
        .map(|s| {
            s.as_str()
                .map(String::from)
                .ok_or_else(|| format!("{key:?}: not a string"))
        })
        .collect()
}
fn opt_str(v: &Value, key: &str) -> R<Option<String>> {
    match get(v, key)? {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(format!("{key:?}: {other} is neither null nor a string")),
    }
}
pub fn uuid_str(bytes: &[u8; 16]) -> String {
    uuid::Uuid::from_bytes(*bytes).hyphenated().to_string()
}

pub fn profile_to(p: &ParseProfile) -> Value {
    json!({
        "mime_type": p.mime_type, "parser": p.parser, "chunker": p.chunker,
        "target_bytes": p.target_bytes, "max_bytes": p.max_bytes, "overlap_bytes": p.overlap_bytes,
    })
}
pub fn profile_from(v: &Value) -> R<ParseProfile> {
    Ok(ParseProfile {
        mime_type: str_of(v, "mime_type")?.into(),
        parser: str_of(v, "parser")?.into(),
        chunker: str_of(v, "chunker")?.into(),
        target_bytes: u32_of(v, "target_bytes")?,
        max_bytes: u32_of(v, "max_bytes")?,
        overlap_bytes: u32_of(v, "overlap_bytes")?,
    })
}

pub const SYMBOL_KINDS: [SymbolKind; 19] = [
    SymbolKind::Function,
    SymbolKind::Method,
    SymbolKind::Class,
    SymbolKind::Interface,
    SymbolKind::Type,
    SymbolKind::Const,
    SymbolKind::Var,
    SymbolKind::Impl,
    SymbolKind::Trait,
    SymbolKind::Module,
    SymbolKind::Struct,
    SymbolKind::Enum,
    SymbolKind::Macro,
    SymbolKind::Section,
    SymbolKind::Key,
    SymbolKind::Rule,
    SymbolKind::Table,
    SymbolKind::Index,
    SymbolKind::Trigger,
];

pub fn kind_to(k: &ChunkKind) -> Value {
    match k {
        ChunkKind::Text => json!({"type": "text"}),
        ChunkKind::Section { heading_path } => {
            json!({"type": "section", "heading_path": heading_path})
        }
        ChunkKind::Page { page } => json!({"type": "page", "page": page}),
        ChunkKind::Code { language, symbol } => json!({
            "type": "code",
            "language": language,
            "symbol": symbol.as_ref().map(|s| json!({
                "kind": s.kind.name(),
                "name": s.name,
                "parent": s.parent,
                "signature": s.signature,
                "doc_comment": s.doc_comment,
                "window": s.window.map(|w| json!({"index": w.index, "count": w.count})),
            })),
        }),
    }
}
pub fn kind_from(v: &Value) -> R<ChunkKind> {
    Ok(match str_of(v, "type")? {
        "text" => ChunkKind::Text,
        "section" => ChunkKind::Section {
            heading_path: strings_of(v, "heading_path")?,
        },
        "page" => ChunkKind::Page {
            page: u32_of(v, "page")?,
        },
        "code" => {
            let symbol = match get(v, "symbol")? {
                Value::Null => None,
                s => {
                    let kind_name = str_of(s, "kind")?;
                    let kind = SYMBOL_KINDS
                        .into_iter()
                        .find(|k| k.name() == kind_name)
                        .ok_or_else(|| format!("unknown symbol kind {kind_name:?}"))?;
                    let window = match get(s, "window")? {
                        Value::Null => None,
                        w => Some(Window {
                            index: u32_of(w, "index")?,
                            count: u32_of(w, "count")?,
                        }),
                    };
                    Some(Symbol {
                        kind,
                        name: str_of(s, "name")?.into(),
                        parent: opt_str(s, "parent")?,
                        signature: str_of(s, "signature")?.into(),
                        doc_comment: str_of(s, "doc_comment")?.into(),
                        window,
                    })
                }
            };
            ChunkKind::Code {
                language: str_of(v, "language")?.into(),
                symbol,
            }
        }
        other => return Err(format!("unknown chunk kind {other:?}")),
    })
}

pub fn chunk_to(c: &Chunk) -> Value {
    json!({
        "id": c.id.to_string(), "document_id": c.document_id.to_string(), "sequence": c.sequence,
        "byte_offset": c.byte_offset, "byte_length": c.byte_length,
        "start_line": c.start_line, "end_line": c.end_line,
        "text_hash": c.text_hash.to_hex(), "kind": kind_to(&c.kind), "text": c.text,
    })
}
pub fn chunk_from(v: &Value) -> R<Chunk> {
    Ok(Chunk {
        id: ChunkId(id_of(v, "id")?),
        document_id: DocumentId(id_of(v, "document_id")?),
        sequence: u32_of(v, "sequence")?,
        byte_offset: u64_of(v, "byte_offset")?,
        byte_length: u32_of(v, "byte_length")?,
        start_line: u32_of(v, "start_line")?,
        end_line: u32_of(v, "end_line")?,
        text_hash: TextHash(h32_of(v, "text_hash")?),
        kind: kind_from(get(v, "kind")?)?,
        text: str_of(v, "text")?.into(),
    })
}

pub fn path_entry_to(p: &PathEntry) -> Value {
    json!({"path": p.path, "document_id": p.document_id.to_string(), "collections": p.collections, "context": p.context})
}
pub fn path_entry_from(v: &Value) -> R<PathEntry> {
    Ok(PathEntry {
        path: str_of(v, "path")?.into(),
        document_id: DocumentId(id_of(v, "document_id")?),
        collections: strings_of(v, "collections")?,
        context: str_of(v, "context")?.into(),
    })
}

pub fn document_to(d: &Document) -> Value {
    json!({
        "id": d.id.to_string(), "content_hash": d.content_hash.to_hex(), "size_bytes": d.size_bytes,
        "profile": profile_to(&d.profile), "text_length_bytes": d.text_length_bytes,
        "n_chunks": d.n_chunks, "hierarchical_hash": d.hierarchical_hash.to_hex(),
        "metadata": d.metadata.iter().map(|m| json!([m.key, m.value])).collect::<Vec<_>>(),
    })
}
pub fn metadata_from(v: &Value, key: &str) -> R<Vec<MetaEntry>> {
    arr_of(v, key)?
        .iter()
        .map(|pair| match pair.as_array().map(Vec::as_slice) {
            Some([Value::String(k), Value::String(val)]) => Ok(MetaEntry {
                key: k.clone(),
                value: val.clone(),
            }),
            _ => Err(format!("metadata entry {pair} is not [key, value]")),
        })
        .collect()
}
pub fn document_from(v: &Value) -> R<Document> {
    Ok(Document {
        id: DocumentId(id_of(v, "id")?),
        content_hash: ContentHash(h32_of(v, "content_hash")?),
        size_bytes: u64_of(v, "size_bytes")?,
        profile: profile_from(get(v, "profile")?)?,
        text_length_bytes: u64_of(v, "text_length_bytes")?,
        n_chunks: u32_of(v, "n_chunks")?,
        hierarchical_hash: MerkleRoot(h32_of(v, "hierarchical_hash")?),
        metadata: metadata_from(v, "metadata")?,
    })
}

pub fn embedding_to(e: &Embedding) -> Value {
    json!({"id": e.id.to_string(), "chunk_id": e.chunk_id.to_string(), "model_hash": e.model_hash.to_hex(), "vector": e.vector})
}
pub fn embedding_from(v: &Value) -> R<Embedding> {
    let vector = arr_of(v, "vector")?
        .iter()
        .map(|x| {
            x.as_i64()
                .and_then(|x| i16::try_from(x).ok())
                .ok_or_else(|| format!("{x} is not an i16"))
        })
        .collect::<R<Vec<i16>>>()?;
    Ok(Embedding {
        id: EmbeddingId(id_of(v, "id")?),
        chunk_id: ChunkId(id_of(v, "chunk_id")?),
        model_hash: ModelHash(h32_of(v, "model_hash")?),
        vector,
    })
}

pub fn edge_to(e: &Edge) -> Value {
    json!({"source": uuid_str(&e.source.0), "target": uuid_str(&e.target.0), "kind": e.kind.0})
}
pub fn edge_from(v: &Value) -> R<Edge> {
    Ok(Edge {
        source: EntityId(id_of(v, "source")?),
        target: EntityId(id_of(v, "target")?),
        kind: EdgeKind(u16::try_from(u64_of(v, "kind")?).map_err(|e| e.to_string())?),
    })
}

pub fn roots_to(r: &TableRoots) -> Value {
    json!({
        "paths": r.paths.to_hex(), "documents": r.documents.to_hex(), "chunks": r.chunks.to_hex(),
        "embeddings": r.embeddings.to_hex(), "edges": r.edges.to_hex(),
    })
}
pub fn roots_from(v: &Value) -> R<TableRoots> {
    Ok(TableRoots {
        paths: MerkleRoot(h32_of(v, "paths")?),
        documents: MerkleRoot(h32_of(v, "documents")?),
        chunks: MerkleRoot(h32_of(v, "chunks")?),
        embeddings: MerkleRoot(h32_of(v, "embeddings")?),
        edges: MerkleRoot(h32_of(v, "edges")?),
    })
}

fn change_to(c: &TableChange) -> Value {
    json!([c.added, c.removed, c.changed])
}
fn change_from(v: &Value, key: &str) -> R<TableChange> {
    let a = arr_of(v, key)?;
    let n = |i: usize| {
        a.get(i)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{key:?}[{i}]"))
    };
    Ok(TableChange {
        added: n(0)?,
        removed: n(1)?,
        changed: n(2)?,
    })
}
pub fn record_to(r: &StateRecord) -> Value {
    let s = &r.summary;
    json!({
        "sequence": r.sequence, "parent": r.parent.to_hex(), "root": r.root.to_hex(),
        "table_roots": roots_to(&r.table_roots), "timestamp_ms": r.timestamp_ms,
        "summary": {
            "paths": change_to(&s.paths), "documents": change_to(&s.documents),
            "chunks": change_to(&s.chunks), "embeddings": change_to(&s.embeddings),
            "edges": change_to(&s.edges),
        },
    })
}
pub fn record_from(v: &Value) -> R<StateRecord> {
    let s = get(v, "summary")?;
    Ok(StateRecord {
        sequence: u64_of(v, "sequence")?,
        parent: StateRoot(h32_of(v, "parent")?),
        root: StateRoot(h32_of(v, "root")?),
        table_roots: roots_from(get(v, "table_roots")?)?,
        timestamp_ms: u64_of(v, "timestamp_ms")?,
        summary: ChangeSummary {
            paths: change_from(s, "paths")?,
            documents: change_from(s, "documents")?,
            chunks: change_from(s, "chunks")?,
            embeddings: change_from(s, "embeddings")?,
            edges: change_from(s, "edges")?,
        },
    })
}

pub fn hexes(roots: &[MerkleRoot]) -> Vec<String> {
    roots.iter().map(MerkleRoot::to_hex).collect()
}
pub fn roots_list(v: &Value, key: &str) -> R<Vec<MerkleRoot>> {
    strings_of(v, key)?
        .iter()
        .map(|s| h32(s).map(MerkleRoot))
        .collect()
}

pub fn path_to(p: &MerklePath) -> Value {
    p.steps
        .iter()
        .map(|s| json!({"left": s.sibling_is_left, "sibling": s.sibling.to_hex()}))
        .collect()
}
pub fn path_from(steps: &[Value]) -> R<MerklePath> {
    let steps = steps
        .iter()
        .map(|s| {
            Ok(PathStep {
                sibling_is_left: get(s, "left")?.as_bool().ok_or("left: bool")?,
                sibling: MerkleRoot(h32_of(s, "sibling")?),
            })
        })
        .collect::<R<Vec<_>>>()?;
    Ok(MerklePath { steps })
}

pub fn proof_to(p: &ChunkProof) -> Value {
    json!({
        "chunk": chunk_to(&p.chunk),
        "table": p.proof.table.name(),
        "bucket": p.proof.bucket,
        "path": path_to(&p.proof.path),
        "bucket_siblings": hexes(&p.proof.bucket_siblings),
        "table_roots": roots_to(&p.proof.table_roots),
    })
}
pub fn proof_from(v: &Value) -> R<ChunkProof> {
    let table_name = str_of(v, "table")?;
    let table = Table::ALL
        .into_iter()
        .find(|t| t.name() == table_name)
        .ok_or_else(|| format!("unknown table {table_name:?}"))?;
    Ok(ChunkProof {
        chunk: chunk_from(get(v, "chunk")?)?,
        proof: InclusionProof {
            table,
            bucket: u16::try_from(u64_of(v, "bucket")?).map_err(|e| e.to_string())?,
            path: path_from(arr_of(v, "path")?)?,
            bucket_siblings: roots_list(v, "bucket_siblings")?,
            table_roots: roots_from(get(v, "table_roots")?)?,
        },
    })
}

pub fn encoding_hex<T: Canonical>(value: &T) -> String {
    hex_encode(&value.encode())
}
