//! The index file written straight from the store, for a store's first search: the
//! chunks are read in id order, a batch at a time, and each one's vector and sign code
//! written at once into their sections' places (known from the chunk count before the
//! first chunk is read), so neither the vectors nor the chunks' metadata are ever all
//! in memory; only the postings and the small fixed-size columns are. The file is byte
//! for byte the one `index_file::save` writes from an index built in memory.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId, ModelHash, N_BUCKETS, PathEntry};

use super::codes::{code_words, sign_code};
use super::format::{ALIGN, Counts, RECORD_BYTES};
use super::index_file::write_sections;
use super::meta::{DocInfo, Posting};
use super::sections::{
    ChunkColumns, PART_BYTES, SectionSink, doc_sections, le, tail_sections, terms,
};
use super::segment::{add_postings, fit_vector};
use super::snapshot::{BUILD_BATCH, Snapshot, prepare_chunks};
use cfs_store::ReadTxn;
use cfs_store::{Result, StoreError};

/// Writes the index file of `txn`'s state at `path` (through a temporary file, synced,
/// then renamed), reading the store in batches.
pub(crate) fn build_file(txn: &ReadTxn, model: ModelHash, dim: usize, path: &Path) -> Result<()> {
    let (snap, ids) = Snapshot::skeleton(txn, model, dim)?;
    let docs: Vec<&Arc<DocInfo>> = snap.docs.values().collect();
    let paths: Vec<(&[u8; 16], &PathEntry)> = snap.paths.entries().collect();
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    write_sections(&snap, path, |out| {
        let ordinal = doc_sections(&docs, &paths, &ids, out)?;
        std::io::Write::flush(out.f).map_err(io)?;
        let places = Places::after(out.at, ids.len(), dim);
        let file = (
            out.f.get_ref(),
            &places,
            &io as &dyn Fn(std::io::Error) -> StoreError,
        );
        let pass = ChunkPass::run(txn, &snap, &ids, &ordinal, file)?;
        let total_len = pass.columns.total_len;
        let strings = pass.columns.write(out)?;
        out.written(pass.vectors.0, pass.vectors.1)?;
        out.written(pass.codes.0, pass.codes.1)?;
        assert_eq!(out.at, places.end, "index file columns out of place");
        terms(&pass.postings, out)?;
        let none = [0; N_BUCKETS / 64];
        tail_sections(strings, &[], (&none, &none), out)?;
        Ok(Counts {
            n_chunks: ids.len() as u64,
            total_len,
            base: [0; 32],
        })
    })
}

/// Where the vectors and codes sections of `n` chunks of `dim` go, after the columns
/// before them (ids, records, token counts, norms, missing bits), each at a multiple
/// of [`ALIGN`] as the section writer places it.
struct Places {
    vectors: u64,
    codes: u64,
    /// The end of the codes section.
    end: usize,
}

impl Places {
    fn after(at: usize, n: usize, dim: usize) -> Self {
        let mut at = at;
        let mut place = |len: usize| {
            let start = at.next_multiple_of(ALIGN);
            at = start + len;
            start as u64
        };
        for len in [n * 16, n * RECORD_BYTES, n * 4, n * 8, n.div_ceil(64) * 8] {
            place(len);
        }
        let vectors = place(n * dim * 2);
        let codes = place(n * code_words(dim) * 8);
        Self {
            vectors,
            codes,
            end: at,
        }
    }
}

/// Bytes written at their place in the file, in order, hashed as they go.
struct Placed<'a> {
    file: &'a File,
    at: u64,
    len: usize,
    buf: Vec<u8>,
    hasher: blake3::Hasher,
}

impl<'a> Placed<'a> {
    fn new(file: &'a File, at: u64) -> Self {
        Self {
            file,
            at,
            len: 0,
            buf: Vec::with_capacity(PART_BYTES),
            hasher: blake3::Hasher::new(),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= PART_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.write_all_at(&self.buf, self.at)?;
        self.hasher.update(&self.buf);
        self.at += self.buf.len() as u64;
        self.len += self.buf.len();
        self.buf.clear();
        Ok(())
    }

    /// The section's length and hash.
    fn finish(mut self) -> std::io::Result<(usize, [u8; 32])> {
        self.flush()?;
        Ok((self.len, *self.hasher.finalize().as_bytes()))
    }
}

/// One pass over the chunks: their columns and postings in memory, their vectors and
/// codes written in place.
struct ChunkPass {
    columns: ChunkColumns,
    postings: HashMap<Box<str>, Vec<Posting>>,
    vectors: (usize, [u8; 32]),
    codes: (usize, [u8; 32]),
}

impl ChunkPass {
    fn run(
        txn: &ReadTxn,
        snap: &Snapshot,
        ids: &[ChunkId],
        ordinal: &HashMap<DocumentId, u32>,
        (file, places, io): (&File, &Places, &dyn Fn(std::io::Error) -> StoreError),
    ) -> Result<Self> {
        let dim = snap.dim;
        let mut columns = ChunkColumns::with_capacity(ids.len());
        let mut postings: HashMap<Box<str>, Vec<Posting>> = HashMap::new();
        let mut vectors = Placed::new(file, places.vectors);
        let mut codes = Placed::new(file, places.codes);
        let mut padded = vec![0i16; dim];
        assert!(ids.is_sorted(), "chunk ids out of order");
        for batch in ids.chunks(BUILD_BATCH) {
            let chunks = txn.chunks_by_id(batch)?;
            let found = txn.vectors_of(&chunks, &snap.model)?;
            let prepared = prepare_chunks(&chunks, found, &snap.docs)?;
            drop(chunks);
            for chunk in prepared {
                let local = u32::try_from(columns.len()).unwrap_or(u32::MAX);
                add_postings(&mut postings, local, &chunk.terms);
                let doc = ordinal.get(&chunk.meta.doc.id).ok_or_else(|| {
                    StoreError::Internal(format!("chunk {} has no document", chunk.meta.id))
                })?;
                let norm2 = fit_vector(&chunk.vector, &mut padded);
                let (len, missing) = (chunk.terms.total(), chunk.vector.is_empty());
                columns.push(&chunk.meta, *doc, len, norm2, missing);
                vectors.write(&le(&padded, i16::to_le_bytes)).map_err(io)?;
                codes
                    .write(&le(&sign_code(&padded), u64::to_le_bytes))
                    .map_err(io)?;
            }
        }
        Ok(Self {
            columns,
            postings,
            vectors: vectors.finish().map_err(io)?,
            codes: codes.finish().map_err(io)?,
        })
    }
}
