//! The scans the runtime search index needs from a committed state, on [`ReadTxn`]:
//! bucket by bucket over paths and chunks, documents with their index entries, chunks
//! and vectors in bulk. Search never opens a store table itself.

use std::collections::BTreeSet;

use cfs_core::{
    Canonical, Chunk, ChunkId, Document, DocumentId, EmbeddingId, ModelHash, PathEntry, PathId,
};
use rayon::prelude::*;
use redb::ReadOnlyTable;

use crate::error::{Result, StoreError};
use crate::read::ReadTxn;
use crate::tables;
use crate::vectors::{StoredEmbedding, VectorHash};

/// Below this many items, decoding runs on the calling thread.
const PARALLEL_MIN: usize = 256;

type Bytes = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// A document with the ids of its paths and of its chunks (in sequence order).
#[derive(Clone, Debug)]
pub struct IndexedDocument {
    /// The document.
    pub document: Document,
    /// The ids of the paths bound to it.
    pub paths: Vec<PathId>,
    /// Its chunks' ids, in sequence order.
    pub chunks: Vec<ChunkId>,
}

/// Reads documents with their index entries, the three tables opened once.
pub struct DocumentScan {
    documents: Bytes,
    paths_by_document: Bytes,
    chunks_by_document: Bytes,
}

impl std::fmt::Debug for DocumentScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentScan").finish_non_exhaustive()
    }
}

impl DocumentScan {
    /// The document `id` with its paths and chunks, or `None` if it is absent.
    pub fn get(&self, id: &DocumentId) -> Result<Option<IndexedDocument>> {
        let Some(row) = self.documents.get(&id.0[..])? else {
            return Ok(None);
        };
        let document = Document::decode(tables::split_row(row.value())?.1)?;
        let paths = tables::path_ids_of(&self.paths_by_document, id)?;
        let chunks = tables::chunk_ids_of(&self.chunks_by_document, id)?;
        Ok(Some(IndexedDocument {
            document,
            paths,
            chunks,
        }))
    }
}

impl ReadTxn {
    /// The path entries of bucket `bucket`, with their ids, in key order.
    pub fn path_bucket(&self, bucket: u16) -> Result<Vec<([u8; 16], PathEntry)>> {
        let t = self.raw().open_table(tables::PATHS)?;
        let mut rows = Vec::new();
        for row in tables::bucket_rows(&t, bucket)? {
            let (k, v) = row?;
            let entry = PathEntry::decode(tables::split_row(v.value())?.1)?;
            rows.push((tables::id16(k.value(), "path key")?, entry));
        }
        Ok(rows)
    }

    /// The chunk ids of bucket `bucket`, in key order.
    pub fn chunk_bucket(&self, bucket: u16) -> Result<Vec<ChunkId>> {
        let t = self.raw().open_table(tables::CHUNKS)?;
        let mut ids = Vec::new();
        for row in tables::bucket_rows(&t, bucket)? {
            ids.push(ChunkId(tables::id16(row?.0.value(), "chunk key")?));
        }
        Ok(ids)
    }

    /// A reader of documents with their paths and chunks.
    pub fn document_scan(&self) -> Result<DocumentScan> {
        Ok(DocumentScan {
            documents: self.raw().open_table(tables::DOCUMENTS)?,
            paths_by_document: self.raw().open_table(tables::PATHS_BY_DOCUMENT)?,
            chunks_by_document: self.raw().open_table(tables::CHUNKS_BY_DOCUMENT)?,
        })
    }

    /// Of `chunks`, those that have an embedding by `model`.
    pub fn embedded_of<'c>(
        &self,
        chunks: impl IntoIterator<Item = &'c ChunkId>,
        model: &ModelHash,
    ) -> Result<Vec<ChunkId>> {
        let t = self.raw().open_table(tables::EMBEDDINGS)?;
        let mut out = Vec::new();
        for chunk in chunks {
            if t.get(&EmbeddingId::derive(chunk, model).0[..])?.is_some() {
                out.push(*chunk);
            }
        }
        Ok(out)
    }

    /// Chunks by id (rows read in order, their encodings read from the chunk log and
    /// decoded in parallel a batch at a time); a missing one is corruption (the ids come
    /// from this state).
    pub fn chunks_by_id(&self, ids: &[ChunkId]) -> Result<Vec<Chunk>> {
        const BATCH: usize = 16_384;
        let t = self.raw().open_table(tables::CHUNKS)?;
        let decode = |extent: &tables::Extent| self.log_chunk(*extent);
        let mut out = Vec::with_capacity(ids.len());
        for batch in ids.chunks(BATCH) {
            let mut extents = Vec::with_capacity(batch.len());
            for id in batch {
                let v = t.get(&id.0[..])?.ok_or_else(|| {
                    StoreError::Corrupted(format!("chunk {id} vanished from its state"))
                })?;
                extents.push(tables::Extent::decode(tables::split_row(v.value())?.1)?);
            }
            let decoded: Result<Vec<Chunk>> = if extents.len() < PARALLEL_MIN {
                extents.iter().map(decode).collect()
            } else {
                extents.par_iter().map(decode).collect()
            };
            out.extend(decoded?);
        }
        Ok(out)
    }

    /// The vectors of `chunks` under `model` (an empty vector where a chunk has none).
    /// Each distinct vector is read and decoded once.
    pub fn vectors_of(&self, chunks: &[Chunk], model: &ModelHash) -> Result<Vec<Vec<i16>>> {
        let t = self.raw().open_table(tables::EMBEDDINGS)?;
        let mut named: Vec<Option<VectorHash>> = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let id = EmbeddingId::derive(&chunk.id, model);
            named.push(match t.get(&id.0[..])? {
                Some(row) => {
                    Some(StoredEmbedding::decode(tables::split_row(row.value())?.1)?.vector)
                }
                None => None,
            });
        }
        let distinct: BTreeSet<VectorHash> = named.iter().flatten().copied().collect();
        let distinct: Vec<VectorHash> = distinct.into_iter().collect();
        let decoded = self.decode_vectors(&distinct)?;
        Ok(named
            .iter()
            .map(|n| match n {
                Some(hash) => {
                    let at = distinct.binary_search(hash).expect("collected above");
                    decoded[at].clone()
                }
                None => Vec::new(),
            })
            .collect())
    }

    /// The stored vectors of `hashes` (sorted, distinct), decoded.
    fn decode_vectors(&self, hashes: &[VectorHash]) -> Result<Vec<Vec<i16>>> {
        let stored = self.raw().open_table(tables::VECTORS)?;
        let mut raw = Vec::with_capacity(hashes.len());
        for hash in hashes {
            let v = stored.get(&hash[..])?.ok_or_else(|| {
                StoreError::Corrupted(format!(
                    "absent vector {} named by an embedding",
                    cfs_core::hex_encode(hash)
                ))
            })?;
            raw.push(v.value().to_vec());
        }
        let decode = |bytes: &Vec<u8>| Ok(cfs_core::decode_vector(bytes)?);
        if raw.len() < PARALLEL_MIN {
            raw.iter().map(decode).collect()
        } else {
            raw.par_iter().map(decode).collect()
        }
    }
}
