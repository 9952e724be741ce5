//! Computes the expected output of one vector case from its input.

use cfs_core::{
    Bucket, Canonical, ChunkId, ContentHash, DocumentId, EmbeddingId, HASH_LEN, MerkleRoot,
    ModelHash, PathId, ProfileHash, StateRoot, TableRoots, TextHash, hex_encode, merkle_path,
    merkle_root, namespace, table_root_from_sorted,
};
use serde_json::{Value, json};

use super::json::*;
use super::state;

/// The official BLAKE3 test input: bytes 0, 1, ..., 250 repeated.
pub fn blake3_official_input(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// The generated table of `table` cases: key i and leaf i from BLAKE3 of a tag and i.
pub fn generated_entry(i: u32) -> ([u8; 16], [u8; 32]) {
    let mut k = b"cfs test key ".to_vec();
    k.extend_from_slice(&i.to_le_bytes());
    let mut l = b"cfs test leaf ".to_vec();
    l.extend_from_slice(&i.to_le_bytes());
    let key: [u8; 16] = blake3::hash(&k).as_bytes()[..16]
        .try_into()
        .expect("16 bytes");
    (key, *blake3::hash(&l).as_bytes())
}

fn leaves_of(v: &Value, key: &str) -> R<Vec<[u8; HASH_LEN]>> {
    strings_of(v, key)?.iter().map(|s| h32(s)).collect()
}

fn entity(v: &Value) -> R<Value> {
    let fields = get(v, "fields")?;
    let (encoding, leaf) = match str_of(v, "type")? {
        "path_entry" => {
            let e = path_entry_from(fields)?;
            e.validate().map_err(|e| e.to_string())?;
            (encoding_hex(&e), Some(e.leaf_hash()))
        }
        "document" => {
            let e = document_from(fields)?;
            e.validate().map_err(|e| e.to_string())?;
            (encoding_hex(&e), Some(e.leaf_hash()))
        }
        "chunk" => {
            let e = chunk_from(fields)?;
            e.validate().map_err(|e| e.to_string())?;
            (encoding_hex(&e), Some(e.leaf_hash()))
        }
        "embedding" => {
            let e = embedding_from(fields)?;
            e.validate().map_err(|e| e.to_string())?;
            (encoding_hex(&e), Some(e.leaf_hash()))
        }
        "edge" => {
            let e = edge_from(fields)?;
            e.validate().map_err(|e| e.to_string())?;
            (encoding_hex(&e), Some(e.leaf_hash()))
        }
        "state_record" => {
            let e = record_from(fields)?;
            e.validate().map_err(|e| e.to_string())?;
            (encoding_hex(&e), None)
        }
        other => return Err(format!("unknown entity type {other:?}")),
    };
    let mut out = json!({ "encoding": encoding });
    if let Some(leaf) = leaf {
        out["leaf_hash"] = json!(leaf.to_hex());
    }
    Ok(out)
}

fn table(v: &Value) -> R<Value> {
    let mut entries: Vec<([u8; 16], [u8; 32])> = match v.get("generated") {
        Some(n) => {
            let n = n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or("generated: u32")?;
            (0..n).map(generated_entry).collect()
        }
        None => arr_of(v, "entries")?
            .iter()
            .map(|pair| {
                let key = pair
                    .get(0)
                    .and_then(Value::as_str)
                    .ok_or("entry [key, leaf]")?;
                let leaf = pair
                    .get(1)
                    .and_then(Value::as_str)
                    .ok_or("entry [key, leaf]")?;
                let key: [u8; 16] = hex_decode_16(key)?;
                Ok((key, h32(leaf)?))
            })
            .collect::<R<_>>()?,
    };
    entries.sort();
    let leaves: Vec<(Bucket, [u8; 32])> = entries
        .iter()
        .map(|(k, l)| (Bucket::of_key(k), *l))
        .collect();
    let mut buckets: Vec<u16> = leaves.iter().map(|(b, _)| b.0).collect();
    buckets.dedup();
    let root = table_root_from_sorted(&leaves).map_err(|e| e.to_string())?;
    Ok(json!({"root": root.to_hex(), "nonempty_buckets": buckets.len()}))
}

fn hex_decode_16(text: &str) -> R<[u8; 16]> {
    cfs_core::hex_decode(text)
        .map_err(|e| e.to_string())?
        .try_into()
        .map_err(|_| format!("{text:?} is not 16 bytes"))
}

pub fn compute(case: &Value) -> R<Value> {
    let input = get(case, "input")?;
    Ok(match str_of(case, "kind")? {
        "blake3_official" => {
            let data = blake3_official_input(
                usize::try_from(u64_of(input, "input_len")?).map_err(|e| e.to_string())?,
            );
            json!({
                "hash": blake3::hash(&data).to_hex().to_string(),
                "derive_key": hex_encode(&blake3::derive_key(str_of(input, "context")?, &data)),
            })
        }
        "content_hash" => json!({"hash": ContentHash::of(&bytes_of(input, "hex")?).to_hex()}),
        "text_hash" => json!({"hash": TextHash::of(str_of(input, "text")?).to_hex()}),
        "model_hash" => json!({"hash": ModelHash::of(str_of(input, "model_id")?).to_hex()}),
        "profile" => {
            let p = profile_from(get(input, "profile")?)?;
            p.validate().map_err(|e| e.to_string())?;
            json!({"encoding": encoding_hex(&p), "hash": p.hash().to_hex()})
        }
        "empty_root" => json!({"root": MerkleRoot::empty().to_hex()}),
        "empty_state" => {
            let roots = TableRoots::empty();
            json!({"table_root": roots.paths.to_hex(), "state_root": roots.state_root().to_hex()})
        }
        "state_root" => {
            json!({"state_root": roots_from(get(input, "table_roots")?)?.state_root().to_hex()})
        }
        "uuid5" => {
            let ns = uuid::Uuid::from_bytes(id_of(input, "namespace")?);
            let id = uuid::Uuid::new_v5(&ns, str_of(input, "name")?.as_bytes());
            json!({"uuid": id.hyphenated().to_string()})
        }
        "namespace" => {
            let ns = match str_of(input, "kind")? {
                "path" => namespace::PATH,
                "document" => namespace::DOCUMENT,
                "chunk" => namespace::CHUNK,
                "embedding" => namespace::EMBEDDING,
                other => return Err(format!("unknown namespace {other:?}")),
            };
            json!({"uuid": ns.hyphenated().to_string()})
        }
        "path_id" => json!({"id": PathId::derive(str_of(input, "path")?).to_string()}),
        "document_id" => {
            let id = DocumentId::derive(
                &ContentHash(h32_of(input, "content_hash")?),
                &ProfileHash(h32_of(input, "profile_hash")?),
            );
            json!({"id": id.to_string()})
        }
        "chunk_id" => {
            let text = TextHash::of(str_of(input, "text")?);
            let id = ChunkId::derive(
                &DocumentId(id_of(input, "document_id")?),
                u32_of(input, "sequence")?,
                &text,
            );
            json!({"text_hash": text.to_hex(), "id": id.to_string()})
        }
        "embedding_id" => {
            let id = EmbeddingId::derive(
                &ChunkId(id_of(input, "chunk_id")?),
                &ModelHash(h32_of(input, "model_hash")?),
            );
            json!({"id": id.to_string()})
        }
        "entity" => entity(input)?,
        "merkle" => {
            let leaves = leaves_of(input, "leaves")?;
            let paths: Vec<Value> = (0..leaves.len())
                .map(|i| {
                    let p = merkle_path(&leaves, i).expect("index in range");
                    json!({"index": i, "path": path_to(&p)})
                })
                .collect();
            json!({"root": merkle_root(&leaves).to_hex(), "paths": paths})
        }
        "bucket" => json!({"bucket": Bucket::of_key(&bytes_of(input, "key")?).0}),
        "table" => table(input)?,
        "state" => {
            let built = state::build(input)?;
            let roots = built.state.table_roots();
            json!({
                "table_roots": roots_to(&roots),
                "state_root": roots.state_root().to_hex(),
                "counts": {
                    "paths": built.state.paths().len(),
                    "documents": built.state.documents().len(),
                    "chunks": built.state.chunks().len(),
                    "embeddings": built.state.embeddings().len(),
                    "edges": built.state.edges().len(),
                },
            })
        }
        "proof" => {
            let built = state::build(get(input, "state")?)?;
            let d = usize::try_from(u64_of(input, "document")?).map_err(|e| e.to_string())?;
            let s = usize::try_from(u64_of(input, "sequence")?).map_err(|e| e.to_string())?;
            let chunk = built
                .documents
                .get(d)
                .and_then(|d| d.1.get(s))
                .ok_or("proof of a missing chunk")?;
            let proof = built
                .state
                .prove_chunk(&chunk.id)
                .ok_or("chunk not in state")?;
            let root = built.state.state_root();
            proof.verify(&root).map_err(|e| e.to_string())?;
            json!({"proof": proof_to(&proof), "encoding": encoding_hex(&proof), "state_root": root.to_hex()})
        }
        "proof_check" => {
            let proof = proof_from(get(input, "proof")?)?;
            let trusted = StateRoot(h32_of(input, "trusted_root")?);
            json!({"valid": proof.verify(&trusted).is_ok()})
        }
        other => return Err(format!("unknown case kind {other:?}")),
    })
}
