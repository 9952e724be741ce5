//! Garbage collection of the embedding cache and the vectors it keeps, and of the
//! chunk log's bytes that no chunk names any more.
//!
//! A sync keeps the vector of every text it embeds (`embedding_cache` and `vectors`), so
//! text that comes back (a file restored, a branch checked out again) is not embedded a
//! second time. Nothing else ever removes them: a tree that changes a lot leaves vectors
//! that no embedding names. [`Store::gc`] removes those, by explicit keys found by a sweep
//! of one write transaction, and can then compact the file, and the chunk log: a
//! removed document's chunks stay in the log until then. [`Store::shrink`] compacts
//! only when much of the file is free pages (a cold index leaves about 40% of it so). The
//! committed state, its roots and the state chain do not change.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use redb::{ReadableTable, ReadableTableMetadata};

use crate::chunk_log::{self, Appender, ChunkLog};
use crate::error::{Result, StoreError};
use crate::store::Store;
use crate::tables::{self, Extent, LogMark, meta};
use crate::vectors::{self, VectorHash};

/// redb's page cache while [`Store::shrink_file`] compacts.
const SHRINK_CACHE: usize = 64 << 20;

/// When [`Store::shrink`] compacts: when the file's free pages are at least
/// `min_free_bytes` and at least `min_free_percent` of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkPolicy {
    /// Least free bytes worth a compaction.
    pub min_free_bytes: u64,
    /// Least share of the file free, in percent.
    pub min_free_percent: u64,
}

impl Default for ShrinkPolicy {
    /// 64 MiB and a quarter of the file.
    fn default() -> Self {
        Self {
            min_free_bytes: 64 << 20,
            min_free_percent: 25,
        }
    }
}

/// What [`Store::gc`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Embedding-cache entries whose vector no embedding names.
    pub cache_entries_removed: u64,
    /// Vectors that neither an embedding nor a remaining cache entry names.
    pub vectors_removed: u64,
    /// Cache entries kept.
    pub cache_entries_kept: u64,
    /// Vectors kept.
    pub vectors_kept: u64,
    /// Store file size before, in bytes.
    pub bytes_before: u64,
    /// Store file size after (smaller only when compacted).
    pub bytes_after: u64,
    /// Whether the file was compacted.
    pub compacted: bool,
    /// Chunk log size before, in bytes.
    pub log_bytes_before: u64,
    /// Chunk log size after (smaller only when it held chunks no row names any more,
    /// and `compact` was asked).
    pub log_bytes_after: u64,
}

impl Store {
    /// Removes the embedding-cache entries and vectors that no embedding of the committed
    /// state names, in one write transaction; with `compact`, then rewrites the file so
    /// that the space they held is returned (this waits for other transactions of this
    /// process and fails while another one is open). The state root does not move.
    pub fn gc(&mut self, compact: bool) -> Result<GcReport> {
        let path = self.path().to_path_buf();
        crate::error::guard(&path, || self.gc_unguarded(compact))
    }

    /// Compacts the file when enough of it is free pages (`policy`; by default a quarter
    /// and 64 MiB, as a cold index leaves it); returns the file's sizes before and after,
    /// or `None` when there was too little to gain or a transaction of another process
    /// was in progress (the file is then left as it is: shrinking is never needed for
    /// correctness). Readers of other processes that begin during a compaction wait for
    /// its end (about a second per 600 MB of tables).
    pub fn shrink(&mut self, policy: ShrinkPolicy) -> Result<Option<(u64, u64)>> {
        let path = self.path().to_path_buf();
        crate::error::guard(&path, || {
            let before = self.file_size();
            if !self.wants_shrink(policy)? {
                return Ok(None);
            }
            match self.writable_db_mut()?.compact() {
                Ok(_) => Ok(Some((before, self.file_size()))),
                Err(redb::CompactionError::TransactionInProgress) => Ok(None),
                Err(e) => Err(StoreError::Storage(redb::Error::from(e))),
            }
        })
    }

    /// Whether [`Store::shrink`] would compact the file: its free pages (its length less
    /// the pages allocated) are past `policy`. This walks every table's pages: just after
    /// a commit of this store they are in its page cache, so ask it then (a store opened
    /// anew reads the whole file for the answer).
    pub fn wants_shrink(&self, policy: ShrinkPolicy) -> Result<bool> {
        let before = self.file_size();
        if before < policy.min_free_bytes {
            return Ok(false);
        }
        crate::error::guard(self.path(), || {
            let txn = self.writable_db()?.begin_write()?;
            let stats = txn.stats()?;
            txn.abort()?;
            let used = stats.allocated_pages() * stats.page_size() as u64;
            let free = before.saturating_sub(used);
            Ok(free >= policy.min_free_bytes && free * 100 >= before * policy.min_free_percent)
        })
    }

    /// [`Store::shrink`] of the store file at `path`, opened for it alone with a small
    /// page cache: a compaction reads every page once, and through redb's default cache
    /// (a gigabyte) it would add that much to the peak of a cold `cfs index`.
    pub fn shrink_file(path: &std::path::Path, policy: ShrinkPolicy) -> Result<Option<(u64, u64)>> {
        Store::open_with_cache(path, Some(SHRINK_CACHE))?.shrink(policy)
    }

    fn gc_unguarded(&mut self, compact: bool) -> Result<GcReport> {
        let mut report = GcReport {
            bytes_before: self.file_size(),
            log_bytes_before: self.log_size(),
            ..GcReport::default()
        };
        let txn = self.writable_db()?.begin_write()?;
        {
            // Every vector an embedding names.
            let named: HashSet<VectorHash> = {
                let embeddings = txn.open_table(tables::EMBEDDINGS)?;
                let mut named = HashSet::with_capacity(embeddings.len()? as usize);
                for row in embeddings.iter()? {
                    let (_, value) = row?;
                    let (_, payload) = tables::split_row(value.value())?;
                    named.insert(vectors::StoredEmbedding::decode(payload)?.vector);
                }
                named
            };
            // Cache entries naming any other vector go, by their keys.
            let mut cache = txn.open_table(tables::EMBEDDING_CACHE)?;
            let mut stale_entries: Vec<Vec<u8>> = Vec::new();
            for row in cache.iter()? {
                let (key, value) = row?;
                let vector = VectorHash::try_from(value.value()).map_err(|_| {
                    StoreError::Corrupted("an embedding cache value is not 32 bytes".into())
                })?;
                if named.contains(&vector) {
                    report.cache_entries_kept += 1;
                } else {
                    stale_entries.push(key.value().to_vec());
                }
            }
            for key in &stale_entries {
                cache.remove(key.as_slice())?;
            }
            report.cache_entries_removed = stale_entries.len() as u64;
            // Kept cache entries name only named vectors: a vector no embedding names is
            // named by nothing now.
            let mut stored = txn.open_table(tables::VECTORS)?;
            let mut stale_vectors: Vec<VectorHash> = Vec::new();
            for row in stored.iter()? {
                let (key, _) = row?;
                let hash = VectorHash::try_from(key.value())
                    .map_err(|_| StoreError::Corrupted("a vector key is not 32 bytes".into()))?;
                if named.contains(&hash) {
                    report.vectors_kept += 1;
                } else {
                    stale_vectors.push(hash);
                }
            }
            for hash in &stale_vectors {
                stored.remove(&hash[..])?;
            }
            report.vectors_removed = stale_vectors.len() as u64;
        }
        txn.commit()?;
        if compact {
            self.compact_log_unguarded()?;
            report.compacted = self
                .writable_db_mut()?
                .compact()
                .map_err(|e| StoreError::Storage(redb::Error::from(e)))?;
        }
        report.bytes_after = self.file_size();
        report.log_bytes_after = self.log_size();
        Ok(report)
    }

    /// Whether the chunk log holds enough bytes of removed chunks to be compacted
    /// (`policy`, as for the store file: by default 64 MiB and a quarter of the log).
    /// One meta read: the removed bytes are counted as chunks are removed.
    pub fn wants_log_compaction(&self, policy: ShrinkPolicy) -> Result<bool> {
        let mark = self.begin_read()?.log_mark();
        Ok(mark.dead >= policy.min_free_bytes
            && mark.dead * 100 >= mark.len * policy.min_free_percent)
    }

    /// Rewrites the chunk log with only the encodings that rows name (in key order),
    /// when it holds others: removed documents' chunks stay in the log until then
    /// (`chunk_log.rs` gives the order of the steps and what a crash between them
    /// leaves). Returns the log's sizes before and after, or `None` when there was
    /// nothing to return or the store has no files of its own. The state root does not
    /// move. Readers of this and other processes go on reading: those that began before
    /// read the old log (still open to them), later ones the new.
    pub fn compact_log(&self) -> Result<Option<(u64, u64)>> {
        crate::error::guard(self.path(), || self.compact_log_unguarded())
    }

    fn compact_log_unguarded(&self) -> Result<Option<(u64, u64)>> {
        let Some(path) = self.log_path().map(Path::to_path_buf) else {
            return Ok(None);
        };
        let before = self.log_size();
        let mut txn = self.writable_db()?.begin_write()?;
        txn.set_two_phase_commit(true);
        let mark = LogMark::read(&txn.open_table(tables::META)?)?;
        let old = self.log_for(&mark)?;
        old.cut_to(&mark)?;
        if chunk_log::HEADER_LEN + live_bytes(&txn)? == mark.len {
            return Ok(None);
        }
        // The live encodings in a new log, synced before any row names it.
        let new_path = chunk_log::new_log_path(&path);
        let new = Arc::new(ChunkLog::create_file(&new_path)?);
        let empty = LogMark {
            id: new.id(),
            len: chunk_log::HEADER_LEN,
            dead: 0,
        };
        let mut appender = Appender::new(new, &empty)?;
        move_chunks(&txn, (&old, mark.len), &mut appender)?;
        let new_mark = appender.finish()?;
        txn.open_table(tables::META)?
            .insert(meta::CHUNK_LOG.as_bytes(), &new_mark.encode()[..])?;
        txn.commit()?;
        // Committed: the new log takes the old one's name (an open finishes this step
        // if the process stops first).
        chunk_log::take_new_log(&new_path, &path)?;
        self.set_log(ChunkLog::open_file(&path, false)?);
        Ok(Some((before, self.log_size())))
    }
}

/// Bytes of the chunk log that chunk rows name.
fn live_bytes(txn: &redb::WriteTransaction) -> Result<u64> {
    let mut live = 0u64;
    for row in txn.open_table(tables::CHUNKS)?.iter()? {
        let (_, value) = row?;
        live += u64::from(Extent::decode(tables::split_row(value.value())?.1)?.len);
    }
    Ok(live)
}

/// Chunk rows moved per step of a compaction: their keys and leaves are held at once
/// (a few in unit tests, so that a small store takes several steps).
const MOVE_BATCH: usize = if cfg!(test) { 5 } else { 16_384 };

/// Copies every chunk's encoding from `old` (committed up to its length) to `appender`
/// in key order, and points its row at the copy; a batch of rows at a time, so that a
/// store of millions of chunks is never held in memory.
fn move_chunks(
    txn: &redb::WriteTransaction,
    (old, committed): (&ChunkLog, u64),
    appender: &mut Appender,
) -> Result<()> {
    let mut after: Option<Vec<u8>> = None;
    loop {
        let batch = next_rows(txn, after.as_deref())?;
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = Some(last.0.clone());
        let mut chunks = txn.open_table(tables::CHUNKS)?;
        for (key, leaf, extent) in &batch {
            let to = appender.append(&old.read(*extent, committed)?)?;
            chunks.insert(
                key.as_slice(),
                tables::chunk_row_value(leaf, &to).as_slice(),
            )?;
        }
    }
}

/// A chunk row: its key, its leaf, and where its encoding lies.
type ChunkRow = (Vec<u8>, [u8; 32], Extent);

/// Up to [`MOVE_BATCH`] chunk rows after the key `after` (from the first without it), in
/// key order.
fn next_rows(txn: &redb::WriteTransaction, after: Option<&[u8]>) -> Result<Vec<ChunkRow>> {
    use std::ops::Bound;
    let chunks = txn.open_table(tables::CHUNKS)?;
    let start = after.map_or(Bound::Unbounded, Bound::Excluded);
    let mut rows = Vec::with_capacity(MOVE_BATCH);
    for row in chunks
        .range::<&[u8]>((start, Bound::Unbounded))?
        .take(MOVE_BATCH)
    {
        let (key, value) = row?;
        let (leaf, payload) = tables::split_row(value.value())?;
        rows.push((key.value().to_vec(), *leaf, Extent::decode(payload)?));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use cfs_ingest::{Embedder, HashEmbedder};

    use crate::{Settings, Store, SyncOptions};

    #[test]
    fn a_compaction_in_several_steps_keeps_every_chunk() {
        let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (options, embedder) = (SyncOptions::default(), HashEmbedder::new(8));
        let settings = Settings {
            chunk: options.config.chunk,
            model_id: embedder.model_id().into(),
        };
        let store = Store::create(&db.path().join("store.redb"), settings).unwrap();
        let write = |i: usize, words: &str| {
            let text = format!("# Part {i}\n\n{words} {i}\n\n## More\n\nand more {i}\n");
            std::fs::write(tree.path().join(format!("f{i}.md")), text).unwrap();
        };
        for i in 0..12 {
            write(i, "first");
        }
        store
            .sync(tree.path(), &options, &embedder, &|_| {})
            .unwrap();
        for i in (0..12).step_by(2) {
            write(i, "second");
        }
        let root = store
            .sync(tree.path(), &options, &embedder, &|_| {})
            .unwrap()
            .root;
        let chunks = store.begin_read().unwrap().counts().unwrap().chunks;
        assert!(chunks > 3 * 5, "{chunks} chunks: too few for several steps");

        let (before, after) = store.compact_log().unwrap().unwrap();
        assert!(after < before);
        assert_eq!(store.state_root().unwrap(), root);
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
        assert_eq!(report.counts.chunks, chunks);
        // Each chunk was copied once: nothing is left to return.
        assert_eq!(store.compact_log().unwrap(), None);
    }
}
