//! Read transactions: one committed state, however many commits follow.

use cfs_core::{
    Bucket, Canonical, Chunk, ChunkId, ChunkProof, Document, DocumentId, Embedding, Entity,
    InclusionProof, PathEntry, PathId, StateRecord, Table, TableRoots, TopTree, merkle_path,
};
use redb::{ReadableTable, ReadableTableMetadata};

use std::borrow::Cow;
use std::sync::Arc;

use crate::chunk_log::ChunkLog;
use crate::error::{Result, StoreError};
use crate::tables::{self, read_bucket_roots, read_sequence, read_table_roots};

/// Row counts of the five committed tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Path entries.
    pub paths: u64,
    /// Documents.
    pub documents: u64,
    /// Chunks.
    pub chunks: u64,
    /// Embeddings.
    pub embeddings: u64,
    /// Edges.
    pub edges: u64,
}

/// How one redb table of the store uses the file (redb's own statistics).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableUsage {
    /// The table's name (`docs/format.md`).
    pub name: String,
    /// Rows.
    pub rows: u64,
    /// Bytes of keys and values.
    pub stored_bytes: u64,
    /// Bytes of page headers and offsets.
    pub metadata_bytes: u64,
    /// Bytes of pages holding nothing.
    pub fragmented_bytes: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Branch pages.
    pub branch_pages: u64,
}

/// The documents of one MIME type (one language, for code) and how they were chunked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeCount {
    /// The detected MIME type (`text/x-swift`).
    pub mime_type: String,
    /// Documents of that type.
    pub documents: u64,
    /// Of them, those parsed by a grammar into symbols (parser `code/...`); the rest
    /// were chunked as text (no grammar for the language, or a parse with errors).
    pub by_symbol: u64,
}

/// A read transaction.
pub struct ReadTxn {
    txn: redb::ReadTransaction,
    /// The chunk log, and the mark of it this state records (its length bounds every
    /// read).
    log: Arc<ChunkLog>,
    mark: tables::LogMark,
}

impl std::fmt::Debug for ReadTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadTxn").finish_non_exhaustive()
    }
}

impl ReadTxn {
    pub(crate) fn new(
        txn: redb::ReadTransaction,
        log: Arc<ChunkLog>,
        mark: tables::LogMark,
    ) -> Self {
        Self { txn, log, mark }
    }

    /// The chunk log's mark this state records.
    pub(crate) fn log_mark(&self) -> tables::LogMark {
        self.mark
    }

    /// The canonical encoding a committed row of `table` holds: its payload, or for a
    /// chunk the bytes of the chunk log its payload names.
    pub(crate) fn encoding<'v>(&self, table: Table, value: &'v [u8]) -> Result<Cow<'v, [u8]>> {
        let payload = tables::split_row(value)?.1;
        Ok(match table {
            Table::Chunks => Cow::Owned(self.log_bytes(tables::Extent::decode(payload)?)?),
            _ => Cow::Borrowed(payload),
        })
    }

    /// The chunk log's bytes at `extent`, which must lie within this state's length.
    pub(crate) fn log_bytes(&self, extent: tables::Extent) -> Result<Vec<u8>> {
        self.log.read(extent, self.mark.len)
    }

    /// The chunk a committed `chunks` row's payload places in the chunk log, decoded
    /// (one that does not decode is damage of the chunk log).
    pub(crate) fn log_chunk(&self, extent: tables::Extent) -> Result<cfs_core::Chunk> {
        cfs_core::Chunk::decode(&self.log_bytes(extent)?).map_err(|e| self.log.undecodable(&e))
    }

    /// A committed row decoded (a chunk that does not decode is damage of the chunk log).
    pub(crate) fn decode_row<E: Canonical>(&self, table: Table, value: &[u8]) -> Result<E> {
        E::decode(&self.encoding(table, value)?).map_err(|e| match table {
            Table::Chunks => self.log.undecodable(&e),
            _ => e.into(),
        })
    }

    fn get_row<E: Canonical>(&self, table: Table, key: &[u8]) -> Result<Option<E>> {
        let t = self.txn.open_table(tables::committed(table))?;
        match t.get(key)? {
            Some(v) => Ok(Some(self.decode_row(table, v.value())?)),
            None => Ok(None),
        }
    }

    pub(crate) fn raw(&self) -> &redb::ReadTransaction {
        &self.txn
    }

    /// The table roots of this state.
    pub fn table_roots(&self) -> Result<TableRoots> {
        read_table_roots(&self.txn.open_table(tables::META)?)
    }

    /// The sequence of the last commit (0 for a new store).
    pub fn sequence(&self) -> Result<u64> {
        read_sequence(&self.txn.open_table(tables::META)?)
    }

    /// Row counts.
    pub fn counts(&self) -> Result<Counts> {
        let len = |table: Table| -> Result<u64> {
            Ok(self.txn.open_table(tables::committed(table))?.len()?)
        };
        Ok(Counts {
            paths: len(Table::Paths)?,
            documents: len(Table::Documents)?,
            chunks: len(Table::Chunks)?,
            embeddings: len(Table::Embeddings)?,
            edges: len(Table::Edges)?,
        })
    }

    /// Documents per MIME type, most first (ties by type).
    pub fn document_types(&self) -> Result<Vec<TypeCount>> {
        let mut types = std::collections::BTreeMap::<String, (u64, u64)>::new();
        for document in self.rows::<Document>(Table::Documents)? {
            let profile = document.profile;
            let count = types.entry(profile.mime_type).or_default();
            count.0 += 1;
            count.1 += u64::from(profile.parser.starts_with("code/"));
        }
        let mut out: Vec<TypeCount> = types
            .into_iter()
            .map(|(mime_type, (documents, by_symbol))| TypeCount {
                mime_type,
                documents,
                by_symbol,
            })
            .collect();
        out.sort_by(|a, b| {
            b.documents
                .cmp(&a.documents)
                .then(a.mime_type.cmp(&b.mime_type))
        });
        Ok(out)
    }

    /// Every table's rows and bytes, in `tables::ALL` order.
    pub fn table_usage(&self) -> Result<Vec<TableUsage>> {
        tables::ALL
            .iter()
            .map(|definition| {
                let table = self.txn.open_table(*definition)?;
                let stats = table.stats()?;
                Ok(TableUsage {
                    name: redb::TableHandle::name(definition).to_owned(),
                    rows: table.len()?,
                    stored_bytes: stats.stored_bytes(),
                    metadata_bytes: stats.metadata_bytes(),
                    fragmented_bytes: stats.fragmented_bytes(),
                    leaf_pages: stats.leaf_pages(),
                    branch_pages: stats.branch_pages(),
                })
            })
            .collect()
    }

    /// The entry of a relative path.
    pub fn path(&self, path: &str) -> Result<Option<PathEntry>> {
        self.get_row(Table::Paths, &PathId::derive(path).0)
    }

    /// Whether the store holds `path` or anything under the folder `path` (read from
    /// the stat cache, which is keyed by path, for the folder case).
    pub fn holds_path(&self, path: &str) -> Result<bool> {
        if self.path(path)?.is_some() {
            return Ok(true);
        }
        let stat_t = self.txn.open_table(tables::STAT_CACHE)?;
        let (lo, hi) = tables::under_folder(path);
        let mut under = stat_t.range::<&[u8]>(lo.as_bytes()..hi.as_bytes())?;
        Ok(under.next().transpose()?.is_some())
    }

    /// A document.
    pub fn document(&self, id: &DocumentId) -> Result<Option<Document>> {
        self.get_row(Table::Documents, &id.0)
    }

    /// A chunk.
    pub fn chunk(&self, id: &ChunkId) -> Result<Option<Chunk>> {
        self.get_row(Table::Chunks, &id.0)
    }

    /// An embedding.
    pub fn embedding(&self, id: &cfs_core::EmbeddingId) -> Result<Option<Embedding>> {
        let t = self.txn.open_table(tables::EMBEDDINGS)?;
        let Some(row) = t.get(&id.0[..])? else {
            return Ok(None);
        };
        let vectors = self.txn.open_table(tables::VECTORS)?;
        let (_, stored) = tables::split_row(row.value())?;
        Ok(Some(crate::vectors::join(&vectors, &id.0, stored)?))
    }

    /// Every chunk id, sorted.
    pub fn chunk_ids(&self) -> Result<Vec<ChunkId>> {
        let t = self.txn.open_table(tables::CHUNKS)?;
        let mut out = Vec::with_capacity(usize::try_from(t.len()?).unwrap_or(0));
        for row in t.iter()? {
            let key = row?.0;
            out.push(ChunkId(tables::id16(key.value(), "chunk key")?));
        }
        Ok(out)
    }

    /// The chunks of a document in sequence order.
    pub fn chunks_of(&self, document: &DocumentId) -> Result<Vec<Chunk>> {
        let idx = self.txn.open_table(tables::CHUNKS_BY_DOCUMENT)?;
        let mut out = Vec::new();
        for id in tables::chunk_ids_of(&idx, document)? {
            out.push(
                self.chunk(&id)?
                    .ok_or_else(|| StoreError::Corrupted(format!("indexed chunk {id} missing")))?,
            );
        }
        Ok(out)
    }

    /// The path entries that name a document.
    pub fn paths_of(&self, document: &DocumentId) -> Result<Vec<PathEntry>> {
        let idx = self.txn.open_table(tables::PATHS_BY_DOCUMENT)?;
        let mut out = Vec::new();
        for id in tables::path_ids_of(&idx, document)? {
            out.push(
                self.get_row(Table::Paths, &id.0)?
                    .ok_or_else(|| StoreError::Corrupted("indexed path missing".into()))?,
            );
        }
        out.sort_by(|a: &PathEntry, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Every row of a committed table, decoded, in key order.
    pub fn rows<E: Canonical>(&self, table: Table) -> Result<Vec<E>> {
        let t = self.txn.open_table(tables::committed(table))?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (_, v) = row?;
            out.push(self.decode_row(table, v.value())?);
        }
        Ok(out)
    }

    /// Every path entry, sorted by path.
    pub fn all_paths(&self) -> Result<Vec<PathEntry>> {
        let mut paths: Vec<PathEntry> = self.rows(Table::Paths)?;
        paths.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(paths)
    }

    /// The state record of commit `sequence`, if there is one.
    pub fn state_record(&self, sequence: u64) -> Result<Option<StateRecord>> {
        let t = self.txn.open_table(tables::STATE_CHAIN)?;
        match t.get(&tables::state_key(sequence)[..])? {
            Some(v) => Ok(Some(StateRecord::decode(v.value())?)),
            None => Ok(None),
        }
    }

    /// The state chain, oldest first.
    pub fn state_chain(&self) -> Result<Vec<StateRecord>> {
        let t = self.txn.open_table(tables::STATE_CHAIN)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (_, v) = row?;
            out.push(StateRecord::decode(v.value())?);
        }
        Ok(out)
    }

    /// The inclusion proof of a chunk in this state.
    pub fn prove_chunk(&self, id: &ChunkId) -> Result<Option<ChunkProof>> {
        let Some(chunk) = self.chunk(id)? else {
            return Ok(None);
        };
        let bucket = Chunk::bucket_of(id);
        let chunks_t = self.txn.open_table(tables::CHUNKS)?;
        let mut leaves: Vec<[u8; 32]> = Vec::new();
        let mut index = None;
        for row in tables::bucket_rows(&chunks_t, bucket.0)? {
            let (k, v) = row?;
            if k.value() == &id.0[..] {
                index = Some(leaves.len());
            }
            leaves.push(*tables::split_row(v.value())?.0);
        }
        let index =
            index.ok_or_else(|| StoreError::Corrupted(format!("chunk {id} has no leaf")))?;
        let path = merkle_path(&leaves, index)
            .ok_or_else(|| StoreError::Corrupted("leaf index out of range".into()))?;
        let bucket_roots =
            read_bucket_roots(&self.txn.open_table(tables::BUCKET_ROOTS)?, Table::Chunks)?;
        let top = TopTree::from_bucket_roots(&bucket_roots)?;
        Ok(Some(ChunkProof {
            chunk,
            proof: InclusionProof {
                table: Table::Chunks,
                bucket: Bucket::of_key(&id.0).0,
                path,
                bucket_siblings: top.siblings(bucket),
                table_roots: self.table_roots()?,
            },
        }))
    }

    /// The cached vector of (model, text), if any.
    pub fn cached_vector(
        &self,
        model: &cfs_core::ModelHash,
        text: &cfs_core::TextHash,
    ) -> Result<Option<Vec<i16>>> {
        let t = self.txn.open_table(tables::EMBEDDING_CACHE)?;
        let Some(hash) = t.get(&tables::cache_key(model, text)[..])? else {
            return Ok(None);
        };
        let Ok(hash) = <crate::vectors::VectorHash>::try_from(hash.value()) else {
            return Ok(None);
        };
        let vectors = self.txn.open_table(tables::VECTORS)?;
        crate::vectors::get_vector(&vectors, &hash)
    }
}
