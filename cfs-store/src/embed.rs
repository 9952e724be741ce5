//! Text first, vectors after: a sync with [`SyncOptions::defer_embeddings`] commits
//! chunks whose texts are not in the embedding cache without their embeddings (the
//! chunks are text-searchable at once), and [`Store::embed_pending`] adds the missing
//! embeddings in later commits of their own, a batch of distinct texts per commit.
//! Embeddings are canonical (their id and vector follow from the chunk and the model),
//! so once every chunk has its embedding the state root is the one a sync that embedded
//! inline would have committed. An interrupted run leaves whole batches committed and
//! the next run starts from what is still missing.
//!
//! [`SyncOptions::defer_embeddings`]: crate::SyncOptions::defer_embeddings

use std::collections::BTreeMap;
use std::panic::resume_unwind;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cfs_core::{Chunk, ChunkId, EmbeddingId, ModelHash, StateRoot, Table, TextHash};
use cfs_ingest::{Embedder, embedding_text};
use redb::{ReadableTable, ReadableTableMetadata};

use crate::error::{Result, StoreError};
use crate::read::ReadTxn;
use crate::store::Store;
use crate::tables;

/// Distinct texts embedded per commit by default.
pub const DEFAULT_EMBED_BATCH_TEXTS: usize = 256;

/// How [`Store::embed_pending`] runs.
#[derive(Clone, Debug)]
pub struct EmbedOptions {
    /// Distinct texts embedded per commit (at least 1).
    pub batch_texts: usize,
    /// Set to stop after the batch under way has committed.
    pub stop: Arc<AtomicBool>,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        Self {
            batch_texts: DEFAULT_EMBED_BATCH_TEXTS,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// What [`Store::embed_pending`] reports as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbedProgress {
    /// The chunks without an embedding, and their distinct texts, before the first batch.
    Pending {
        /// Chunks.
        chunks: usize,
        /// Distinct texts among them.
        texts: usize,
    },
    /// A batch committed: chunks embedded so far in this run.
    Committed {
        /// Chunks.
        chunks: usize,
    },
}

/// What [`Store::embed_pending`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EmbedReport {
    /// Embeddings added.
    pub chunks: usize,
    /// Texts run through the model for the embeddings committed (the others came from
    /// the embedding cache; a batch computed when a stop came is not counted).
    pub texts_embedded: usize,
    /// Chunks still without an embedding (a stop, or chunks removed meanwhile).
    pub still_pending: usize,
    /// Transactions committed.
    pub commits: usize,
    /// The state root afterwards.
    pub root: StateRoot,
}

/// How many chunks a store holds and how many of them have their embedding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmbedStatus {
    /// Chunks.
    pub chunks: u64,
    /// Chunks with an embedding.
    pub embedded: u64,
}

/// A distinct text waiting for its vector, and the chunks that share it.
type Group = (TextHash, (String, Vec<ChunkId>));

/// A batch's vectors: those the embedding cache had (in the batch's order), and those
/// the model computed for the others (in their order).
struct Vectors {
    known: Vec<Option<Vec<i16>>>,
    computed: Vec<Vec<i16>>,
}

/// Runs the texts of `batch` that `known` lacks through the model.
fn compute(
    embedder: &dyn Embedder,
    batch: &[Group],
    known: &[Option<Vec<i16>>],
) -> Result<Vec<Vec<i16>>> {
    let missing: Vec<&str> = batch
        .iter()
        .zip(known)
        .filter(|(_, v)| v.is_none())
        .map(|((_, (text, _)), _)| text.as_str())
        .collect();
    let computed = embedder
        .embed_batch(&missing)
        .map_err(|e| StoreError::Embedder(e.to_string()))?;
    if computed.len() != missing.len() {
        return Err(StoreError::Embedder(format!(
            "returned {} vectors for {} texts",
            computed.len(),
            missing.len()
        )));
    }
    Ok(computed)
}

/// The chunks without an embedding, grouped by the text that is embedded for them.
struct Pending {
    texts: BTreeMap<TextHash, (String, Vec<ChunkId>)>,
    chunks: usize,
}

impl Pending {
    /// Chunk `id` waits for the vector of its text.
    fn add(&mut self, id: ChunkId, chunk: &Chunk) {
        let text = embedding_text(chunk);
        let entry = self
            .texts
            .entry(TextHash::of(&text))
            .or_insert_with(|| (text.into_owned(), Vec::new()));
        entry.1.push(id);
        self.chunks += 1;
    }
}

impl Store {
    /// Chunks, and chunks with an embedding (one model per store: every embedding row
    /// is of one chunk).
    pub fn embed_status(&self) -> Result<EmbedStatus> {
        let read = self.begin_read()?;
        let chunks = read.raw().open_table(tables::CHUNKS)?.len()?;
        let embedded = read.raw().open_table(tables::EMBEDDINGS)?.len()?;
        Ok(EmbedStatus { chunks, embedded })
    }

    /// Embeds every chunk that has no embedding yet, a batch of distinct texts per
    /// commit, texts found in the embedding cache without running the model.
    pub fn embed_pending(
        &self,
        embedder: &dyn Embedder,
        options: &EmbedOptions,
        progress: &(dyn Fn(EmbedProgress) + Sync),
    ) -> Result<EmbedReport> {
        self.check_embedder(embedder)?;
        // One model per store: as many embeddings as chunks means none is missing, and
        // the scan (a lookup per chunk) is skipped.
        let status = self.embed_status()?;
        if status.embedded == status.chunks {
            progress(EmbedProgress::Pending {
                chunks: 0,
                texts: 0,
            });
            return Ok(EmbedReport {
                root: self.state_root()?,
                ..EmbedReport::default()
            });
        }
        let pending = self.pending(embedder)?;
        self.embed_groups(embedder, pending, options, progress)
    }

    /// Vectors of two models never meet: `embedder` must be the store's.
    fn check_embedder(&self, embedder: &dyn Embedder) -> Result<()> {
        let requested = crate::Settings {
            chunk: self.settings().chunk,
            model_id: embedder.model_id().to_owned(),
        };
        self.settings().check(&requested, self.path())
    }

    /// Embeds the chunks `ids` that have no embedding yet (the ones a sync deferred:
    /// [`crate::SyncReport::deferred_chunks`]), as [`Store::embed_pending`] does but
    /// without scanning the store for them: a one-file edit costs its own chunks.
    pub fn embed_chunks(
        &self,
        embedder: &dyn Embedder,
        ids: &[ChunkId],
        options: &EmbedOptions,
        progress: &(dyn Fn(EmbedProgress) + Sync),
    ) -> Result<EmbedReport> {
        self.check_embedder(embedder)?;
        let model = embedder.model_hash();
        let read = self.begin_read()?;
        let embeddings = read.raw().open_table(tables::EMBEDDINGS)?;
        let mut pending = Pending {
            texts: BTreeMap::new(),
            chunks: 0,
        };
        for id in ids {
            let present = embeddings
                .get(&EmbeddingId::derive(id, &model).0[..])?
                .is_some();
            // A chunk removed since its sync has nothing to embed.
            let Some(chunk) = read.chunk(id)?.filter(|_| !present) else {
                continue;
            };
            pending.add(*id, &chunk);
        }
        drop(embeddings);
        drop(read);
        self.embed_groups(embedder, pending, options, progress)
    }

    /// The batch loop of [`Store::embed_pending`] and [`Store::embed_chunks`].
    fn embed_groups(
        &self,
        embedder: &dyn Embedder,
        pending: Pending,
        options: &EmbedOptions,
        progress: &(dyn Fn(EmbedProgress) + Sync),
    ) -> Result<EmbedReport> {
        progress(EmbedProgress::Pending {
            chunks: pending.chunks,
            texts: pending.texts.len(),
        });
        let mut report = EmbedReport {
            still_pending: pending.chunks,
            root: self.state_root()?,
            ..EmbedReport::default()
        };
        let groups: Vec<Group> = pending.texts.into_iter().collect();
        let batches: Vec<&[Group]> = groups.chunks(options.batch_texts.max(1)).collect();
        let model = embedder.model_hash();
        // Two stages: while one batch commits on this thread, the next one's texts run
        // through the model on another (the commit left a core idle: 323 texts/s in a
        // default index against 344-353 for the model alone, measured on AMX).
        let mut ready = match batches.first() {
            Some(batch) if !options.stop.load(Ordering::SeqCst) => {
                Some(self.prepare(embedder, &model, batch)?)
            }
            _ => None,
        };
        for (i, batch) in batches.iter().enumerate() {
            let Some(vectors) = ready.take() else { break };
            let next = batches
                .get(i + 1)
                .filter(|_| !options.stop.load(Ordering::SeqCst));
            let (prepared, committed) = std::thread::scope(|scope| {
                let running = next.map(|b| scope.spawn(|| self.prepare(embedder, &model, b)));
                let committed = self.commit_batch(&model, batch, vectors, &mut report);
                let prepared = running.map(|r| r.join().unwrap_or_else(|e| resume_unwind(e)));
                (prepared, committed)
            });
            committed?;
            progress(EmbedProgress::Committed {
                chunks: report.chunks,
            });
            ready = prepared.transpose()?;
            // A stop set while the next batch ran leaves it uncommitted.
            if options.stop.load(Ordering::SeqCst) {
                break;
            }
        }
        Ok(report)
    }

    /// Switches the store to `embedder`: one commit removes every embedding (with its
    /// edges) and records the new model in the store's settings, so that vectors of two
    /// models never meet; [`Store::embed_pending`] then embeds every chunk with it
    /// (texts whose vectors by it are still in the embedding cache are not run again).
    /// Nothing happens if the store has that embedder already.
    pub fn switch_embedder(&mut self, embedder: &dyn Embedder) -> Result<StateRoot> {
        let settings = crate::Settings {
            chunk: self.settings().chunk,
            model_id: embedder.model_id().to_owned(),
        };
        if settings == *self.settings() {
            return self.state_root();
        }
        let mut txn = self.begin_write()?;
        txn.remove_embeddings_for(&settings)?;
        let root = txn.commit()?;
        self.set_settings(settings);
        Ok(root)
    }

    /// Scans the chunks for those whose embedding by this model is absent.
    fn pending(&self, embedder: &dyn Embedder) -> Result<Pending> {
        let model = embedder.model_hash();
        let read = self.begin_read()?;
        let chunks = read.raw().open_table(tables::CHUNKS)?;
        let embeddings = read.raw().open_table(tables::EMBEDDINGS)?;
        let mut pending = Pending {
            texts: BTreeMap::new(),
            chunks: 0,
        };
        for row in chunks.iter()? {
            let (key, value) = row?;
            let id = ChunkId(
                key.value()
                    .try_into()
                    .map_err(|_| StoreError::Corrupted("chunk key".into()))?,
            );
            if embeddings
                .get(&EmbeddingId::derive(&id, &model).0[..])?
                .is_some()
            {
                continue;
            }
            let chunk: Chunk = read.decode_row(Table::Chunks, value.value())?;
            pending.add(id, &chunk);
        }
        Ok(pending)
    }

    /// The vectors of `batch`: those in the embedding cache, and the model's for the
    /// others.
    fn prepare(
        &self,
        embedder: &dyn Embedder,
        model: &ModelHash,
        batch: &[Group],
    ) -> Result<Vectors> {
        let known = self.known_vectors(model, batch)?;
        let computed = compute(embedder, batch, &known)?;
        Ok(Vectors { known, computed })
    }

    /// The vectors of `batch`'s texts already in the embedding cache.
    fn known_vectors(&self, model: &ModelHash, batch: &[Group]) -> Result<Vec<Option<Vec<i16>>>> {
        let read = self.begin_read()?;
        batch
            .iter()
            .map(|(hash, _)| read.cached_vector(model, hash))
            .collect()
    }

    /// Commits one batch: the embeddings of its chunks, and its newly computed vectors
    /// into the embedding cache.
    fn commit_batch(
        &self,
        model: &ModelHash,
        batch: &[Group],
        vectors: Vectors,
        report: &mut EmbedReport,
    ) -> Result<()> {
        let Vectors {
            known,
            mut computed,
        } = vectors;
        report.texts_embedded += computed.len();
        computed.reverse();
        let mut txn = self.begin_write()?;
        for ((hash, (_, chunk_ids)), known) in batch.iter().zip(known) {
            let (vector, fresh) = match known {
                Some(v) => (v, false),
                None => (computed.pop().expect("one vector per missing text"), true),
            };
            if fresh {
                txn.cache_vector(model, hash, &vector)?;
            }
            for chunk in chunk_ids {
                let embedding = cfs_core::Embedding::new(*chunk, *model, vector.clone())?;
                if txn.put_embedding(&embedding)? {
                    report.chunks += 1;
                    report.still_pending -= 1;
                }
            }
        }
        report.root = txn.commit()?;
        report.commits += 1;
        Ok(())
    }
}

/// What [`Store::check_vectors`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VectorCheck {
    /// Embeddings whose vector was recomputed.
    pub checked: usize,
    /// Embeddings in the store.
    pub embeddings: usize,
    /// One line per embedding whose vector is not the one its text gives.
    pub wrong: Vec<String>,
}

/// Embeddings [`Store::check_vectors`] recomputes when not asked for all.
pub const DEFAULT_VECTOR_SAMPLE: usize = 64;

/// `sample` of `ids` spread evenly over them (all of them with `None`).
pub fn spread<T: Copy>(ids: &[T], sample: Option<usize>) -> Vec<T> {
    let n = ids.len();
    let k = sample.unwrap_or(n).min(n);
    (0..k).map(|i| ids[i * n / k]).collect()
}

impl Store {
    /// Recomputes the vectors of `sample` embeddings spread evenly over the store (all
    /// of them with `None`) from their chunks' texts, and compares them with the stored
    /// ones: the check that the committed vectors are the model's, which the Merkle
    /// roots alone cannot make.
    pub fn check_vectors(
        &self,
        embedder: &dyn Embedder,
        sample: Option<usize>,
    ) -> Result<VectorCheck> {
        let read = self.begin_read()?;
        let ids: Vec<EmbeddingId> =
            tables::embedding_ids(&read.raw().open_table(tables::EMBEDDINGS)?)?;
        check_in(&read, embedder, &spread(&ids, sample))
    }

    /// [`Store::check_vectors`] of the embeddings `ids` (a pull checks those it brought).
    pub fn check_vectors_of(
        &self,
        embedder: &dyn Embedder,
        ids: &[EmbeddingId],
    ) -> Result<VectorCheck> {
        check_in(&self.begin_read()?, embedder, ids)
    }
}

/// The check of [`Store::check_vectors`] of the embeddings `picked` of state `read`, the
/// one the ids were read from.
fn check_in(
    read: &ReadTxn,
    embedder: &dyn Embedder,
    picked: &[EmbeddingId],
) -> Result<VectorCheck> {
    let mut check = VectorCheck {
        checked: 0,
        embeddings: read.counts()?.embeddings as usize,
        wrong: Vec::new(),
    };
    for group in picked.chunks(DEFAULT_EMBED_BATCH_TEXTS) {
        let mut rows = Vec::with_capacity(group.len());
        for id in group {
            let e = read
                .embedding(id)?
                .ok_or_else(|| StoreError::Corrupted(format!("embedding {id} vanished")))?;
            let chunk = read.chunk(&e.chunk_id)?.ok_or_else(|| {
                StoreError::Corrupted(format!(
                    "embedding {id} names the absent chunk {}",
                    e.chunk_id
                ))
            })?;
            rows.push((e, embedding_text(&chunk).into_owned()));
        }
        let texts: Vec<&str> = rows.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = embedder
            .embed_batch(&texts)
            .map_err(|e| StoreError::Embedder(e.to_string()))?;
        for ((e, _), v) in rows.iter().zip(vectors) {
            check.checked += 1;
            if e.model_hash != embedder.model_hash() || e.vector != v {
                check.wrong.push(format!(
                    "embedding {} of chunk {}: the stored vector is not the one {} gives its text",
                    e.id,
                    e.chunk_id,
                    embedder.model_id()
                ));
            }
        }
    }
    Ok(check)
}
