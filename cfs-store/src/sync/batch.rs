//! One batch of a sync run: its files read, planned (which need parsing), embedded (the
//! cache first), written as new documents (beside their parse: `stream.rs`), and bound
//! to their paths.

use std::collections::{BTreeMap, BTreeSet};

use cfs_core::{ContentHash, DocumentId, Embedding, PathEntry, TextHash, encode_vector};
use cfs_ingest::{IngestConfig, IngestError, Parsed, WalkEntry, detect_file};
use rayon::prelude::*;

use super::{EMBED_BATCH, RACY_WINDOW_NS, SyncProgress, SyncRun};
use crate::error::{Result, StoreError};
use crate::tables::Stat;
use crate::vectors::{self, VectorHash};
use crate::write::{NewDocument, WriteTxn};

/// One file read in this sync.
pub(super) struct Read {
    pub(super) entry: WalkEntry,
    pub(super) result: std::result::Result<(Vec<u8>, ContentHash), IngestError>,
}

/// What planning decided for each file of a batch.
pub(super) struct Plan {
    /// The document a file is bound to without parsing, when known.
    documents: Vec<Option<DocumentId>>,
    /// The files to parse: each new content once, largest first.
    pub(super) to_parse: Vec<usize>,
    /// Files whose same bytes failed before, with the reason.
    known_failures: BTreeMap<usize, String>,
}

/// The hash of the text a chunk is embedded from, and that text when it is not the
/// chunk's own.
pub(super) type EmbeddingText = (TextHash, Option<String>);

/// Each parsed file's result, by its place in the batch.
pub(super) type Results = BTreeMap<usize, std::result::Result<Parsed, IngestError>>;

/// A parsed file's place in the batch and the embedding text of each of its chunks.
pub(super) type FileTexts = (usize, Vec<EmbeddingText>);
/// The places in the batch of the files bound beside the parse (`stream.rs`), as their
/// documents were written: every file parsed.
pub(super) type Bound = BTreeSet<usize>;

/// Memory budget per chunk of a write slice: a slice of a sixteenth of the budget at
/// about 4 KB a chunk (its vector, embedding, encoded rows), 8,192 chunks at 512 MiB.
const SLICE_BYTES_PER_CHUNK: usize = 64 << 10;

/// `texts` cut into runs of whole files of at most `most` chunks each (a file with more
/// makes a run of its own).
pub(super) fn slices(texts: &[FileTexts], most: usize) -> Vec<&[FileTexts]> {
    super::runs(texts, usize::MAX, most as u64, |(_, file)| {
        file.len() as u64
    })
}

/// Vectors computed for one group of texts: (text, vector hash, encoded vector,
/// vector), or why the embedder failed.
type Embedded = std::result::Result<Vec<(TextHash, VectorHash, Vec<u8>, Vec<i16>)>, String>;

fn read_file(
    entry: &WalkEntry,
    config: &IngestConfig,
) -> std::result::Result<(Vec<u8>, ContentHash), IngestError> {
    let bytes = cfs_ingest::read_entry(entry, config)?;
    let hash = ContentHash::of(&bytes);
    Ok((bytes, hash))
}

/// Removes a path that can no longer be indexed; its stat row records the failure
/// when there is one to record, or goes.
fn forget(
    txn: &mut WriteTxn<'_>,
    path: &str,
    existing: &BTreeMap<String, PathEntry>,
    failed: Option<Stat>,
) -> Result<()> {
    match failed {
        Some(stat) => txn.put_stat(path, &stat)?,
        None => txn.remove_stats([path])?,
    }
    if existing.contains_key(path) {
        txn.unbind_path(path)?;
    }
    Ok(())
}

/// Paths to bind to their documents, with their stat rows.
#[derive(Default)]
pub(super) struct Bindings<'r> {
    entries: Vec<PathEntry>,
    stats: Vec<(&'r str, Stat)>,
}

impl Bindings<'_> {
    /// Writes them, each table opened once.
    pub(super) fn write(self, txn: &mut WriteTxn<'_>) -> Result<()> {
        if self.entries.is_empty() && self.stats.is_empty() {
            return Ok(());
        }
        txn.bind_paths(&self.entries)?;
        txn.put_stats(self.stats.iter().map(|(path, stat)| (*path, stat)))
    }
}

/// Reads the files of a part, in parallel, with their content hashes: no store access,
/// so it runs while the part before is parsed and written.
pub(super) fn read_files(part: &[WalkEntry], config: &IngestConfig) -> Vec<Read> {
    part.par_iter()
        .map(|entry| Read {
            entry: entry.clone(),
            result: read_file(entry, config),
        })
        .collect()
}

/// The files of part `n`: read ahead during the join before, or read now.
pub(super) fn reads_of(
    ahead: &mut Option<(usize, Vec<Read>)>,
    n: usize,
    part: &[WalkEntry],
    config: &IngestConfig,
) -> Vec<Read> {
    match ahead.take() {
        Some((at, reads)) if at == n => reads,
        _ => read_files(part, config),
    }
}

impl SyncRun<'_> {
    /// Decides per file read whether it needs parsing: content second (the stat cache
    /// came first), then a document of the same content already in the store.
    pub(super) fn plan(
        &mut self,
        txn: &WriteTxn<'_>,
        reads: Vec<Read>,
    ) -> Result<(Vec<Read>, Plan)> {
        let mut plan = Plan {
            documents: Vec::with_capacity(reads.len()),
            to_parse: Vec::new(),
            known_failures: BTreeMap::new(),
        };
        let mut new_content: BTreeMap<(ContentHash, &'static str), usize> = BTreeMap::new();
        for (i, read) in reads.iter().enumerate() {
            let path = read.entry.rel_path.as_str();
            let mut document = None;
            if let Ok((bytes, hash)) = &read.result {
                self.report.hashed += 1;
                let cached = self.stats.get(path).filter(|s| s.hash == *hash);
                let same = cached.is_some_and(|s| s.failure.is_none()) && !self.reparse;
                if let Some(reason) = cached.and_then(|s| s.failure.clone()) {
                    // The same bytes failed before: they would fail again.
                    plan.known_failures.insert(i, reason);
                } else if same && let Some(old) = self.existing.get(path) {
                    document = Some(old.document_id);
                } else if let Ok(detected) = detect_file(path, bytes) {
                    let known = match self.reparse {
                        true => None,
                        false => txn.document_for_content(hash, detected.mime_type)?,
                    };
                    if let Some(doc) = known {
                        document = Some(doc);
                    } else if let std::collections::btree_map::Entry::Vacant(slot) =
                        new_content.entry((*hash, detected.mime_type))
                    {
                        slot.insert(i);
                        plan.to_parse.push(i);
                    }
                } else {
                    plan.to_parse.push(i);
                }
            }
            plan.documents.push(document);
        }
        // Largest first: a large file begun last would be parsed on one core alone
        // while the others wait at the group's end.
        plan.to_parse
            .sort_by_key(|&i| (std::cmp::Reverse(reads[i].entry.size_bytes), i));
        Ok((reads, plan))
    }

    /// The most chunks a write slice holds: a batch's documents go in slices of a
    /// bounded number of chunks (by the memory budget, [`SLICE_BYTES_PER_CHUNK`]), so
    /// that a group of dense files (generated code: a chunk per 100 bytes) never holds
    /// every vector, embedding and encoded row of its group at once.
    pub(super) fn slice_chunks(&self) -> usize {
        (self.options.memory_bytes / SLICE_BYTES_PER_CHUNK).max(1)
    }

    /// Embeds and writes the documents of the parsed files `texts` names.
    pub(super) fn write_documents(
        &mut self,
        txn: &mut WriteTxn<'_>,
        reads: &[Read],
        results: &Results,
        texts: &[FileTexts],
    ) -> Result<()> {
        let vectors = self.embed_texts(txn, results, texts)?;
        let embedded = self.chunk_embeddings(reads, results, texts, &vectors)?;
        drop(vectors);
        let new_documents: Vec<NewDocument<'_>> = texts
            .iter()
            .filter_map(|(i, _)| {
                let parsed = results.get(i)?.as_ref().ok()?;
                Some(NewDocument::parsed(parsed, embedded.get(i)?))
            })
            .collect();
        txn.put_documents(&new_documents)?;
        Ok(())
    }

    /// The vector of every distinct text of the files `texts` names: from the embedding
    /// cache, the rest computed in parallel groups (none when embeddings are deferred)
    /// and cached.
    fn embed_texts(
        &mut self,
        txn: &WriteTxn<'_>,
        results: &Results,
        texts: &[FileTexts],
    ) -> Result<BTreeMap<TextHash, Vec<i16>>> {
        if !self.texts_wanted {
            return Ok(BTreeMap::new());
        }
        let model = self.embedder.model_hash();
        let mut wanted: BTreeMap<TextHash, &str> = BTreeMap::new();
        for (i, texts) in texts {
            let Some(Ok(file)) = results.get(i) else {
                continue;
            };
            for (chunk, (hash, text)) in file.chunks.iter().zip(texts) {
                let text = text.as_deref().unwrap_or(chunk.text.as_str());
                wanted.entry(*hash).or_insert(text);
            }
        }
        let mut vectors = txn.cached_vectors(&model, wanted.keys())?;
        if self.options.defer_embeddings {
            return Ok(vectors);
        }
        let missing: Vec<(&TextHash, &&str)> = wanted
            .iter()
            .filter(|(h, _)| !vectors.contains_key(h))
            .collect();
        let embedder = self.embedder;
        let computed: Vec<Embedded> = missing
            .par_chunks(EMBED_BATCH)
            .map(|group| {
                let texts: Vec<&str> = group.iter().map(|(_, t)| **t).collect();
                let out = embedder.embed_batch(&texts).map_err(|e| e.to_string())?;
                if out.len() != texts.len() {
                    return Err(format!(
                        "returned {} vectors for {} texts",
                        out.len(),
                        texts.len()
                    ));
                }
                Ok(group
                    .iter()
                    .zip(out)
                    .map(|((h, _), v)| {
                        let encoded = encode_vector(&v);
                        (**h, vectors::vector_hash(&encoded), encoded, v)
                    })
                    .collect())
            })
            .collect();
        for group in computed {
            let group = group.map_err(StoreError::Embedder)?;
            txn.cache_encoded(
                &model,
                group.iter().map(|(h, vh, e, _)| (h, vh, e.as_slice())),
            )?;
            for (hash, _, _, vector) in group {
                vectors.insert(hash, vector);
                self.report.embedded += 1;
            }
        }
        Ok(vectors)
    }

    /// The embeddings of each parsed file's chunks. Every chunk has its vector unless
    /// embeddings are deferred; then those without one are reported as deferred, for
    /// `embed_pending` or `embed_chunks`.
    fn chunk_embeddings(
        &mut self,
        reads: &[Read],
        results: &Results,
        texts: &[FileTexts],
        vectors: &BTreeMap<TextHash, Vec<i16>>,
    ) -> Result<BTreeMap<usize, Vec<Embedding>>> {
        let model = self.embedder.model_hash();
        let defer = self.options.defer_embeddings;
        let embedded: BTreeMap<usize, Vec<Embedding>> = texts
            .par_iter()
            .map(|(i, texts)| {
                let file = results[i].as_ref().expect("only parsed files have texts");
                let chunk_vectors = file
                    .chunks
                    .iter()
                    .zip(texts)
                    .filter_map(|(c, (h, _))| match vectors.get(h) {
                        Some(v) => Some(Embedding::new(c.id, model, v.clone()).map_err(Into::into)),
                        None if defer => None,
                        None => Some(Err(StoreError::Embedder(format!(
                            "{}: no vector for a chunk",
                            reads[*i].entry.rel_path
                        )))),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok((*i, chunk_vectors))
            })
            .collect::<Result<_>>()?;
        for (i, with_vectors) in &embedded {
            let Some(Ok(file)) = results.get(i) else {
                continue;
            };
            if with_vectors.len() == file.chunks.len() {
                continue;
            }
            let have: std::collections::HashSet<_> =
                with_vectors.iter().map(|e| e.chunk_id).collect();
            let deferred = file
                .chunks
                .iter()
                .map(|c| c.id)
                .filter(|id| !have.contains(id));
            let before = self.report.deferred_chunks.len();
            self.report.deferred_chunks.extend(deferred);
            self.report.deferred += self.report.deferred_chunks.len() - before;
        }
        Ok(embedded)
    }

    /// Binds every path of a batch not bound beside the parse to its document, in path
    /// order, with its stat row (all of them at the end, each table opened once); a
    /// file that failed is forgotten (its failure recorded when its bytes are known).
    pub(super) fn bind_batch(
        &mut self,
        txn: &mut WriteTxn<'_>,
        reads: &[Read],
        plan: Plan,
        bound: &Bound,
    ) -> Result<()> {
        let Plan {
            documents,
            mut known_failures,
            ..
        } = plan;
        let mut bindings = Bindings::default();
        for (i, read) in reads.iter().enumerate() {
            if bound.contains(&i) {
                continue;
            }
            let path = read.entry.rel_path.as_str();
            let outcome = match (&read.result, known_failures.remove(&i)) {
                (Err(e), _) => Err(e.to_string()),
                (Ok(_), Some(reason)) => Err(reason),
                (Ok((bytes, hash)), None) => {
                    self.document_of(txn, path, bytes, hash, documents[i])?
                }
            };
            self.bind_one(txn, read, outcome, &mut bindings)?;
        }
        bindings.write(txn)
    }

    /// Adds to `bindings` the path of a read file bound to `outcome` (its document) with
    /// its stat row; a file without a document (`outcome` says why) is recorded as
    /// failed and forgotten instead.
    pub(super) fn bind_one<'r>(
        &mut self,
        txn: &mut WriteTxn<'_>,
        read: &'r Read,
        outcome: std::result::Result<DocumentId, String>,
        bindings: &mut Bindings<'r>,
    ) -> Result<()> {
        let path = read.entry.rel_path.as_str();
        (self.progress)(SyncProgress::File(path));
        let racy = self.started_ns.saturating_sub(read.entry.mtime_ns) < RACY_WINDOW_NS;
        let stat_of = |hash: ContentHash, failure: Option<String>| Stat {
            size: read.entry.size_bytes,
            mtime_ns: if racy { 0 } else { read.entry.mtime_ns },
            hash,
            failure,
        };
        let hash = match &read.result {
            Ok((_, hash)) => *hash,
            Err(e) => {
                self.report.failed.push((path.to_owned(), e.to_string()));
                return forget(txn, path, &self.existing, None);
            }
        };
        match outcome {
            Ok(document_id) => {
                let entry = self.counted_entry(txn, path, document_id)?;
                bindings.entries.push(entry);
                bindings.stats.push((path, stat_of(hash, None)));
                Ok(())
            }
            Err(reason) => {
                self.report.failed.push((path.to_owned(), reason.clone()));
                forget(txn, path, &self.existing, Some(stat_of(hash, Some(reason))))
            }
        }
    }

    /// The document a read file that was not parsed binds to: the one its plan named,
    /// or (same new content as an earlier file of this batch, parsed once) the one of
    /// its content; or why it has none.
    fn document_of(
        &self,
        txn: &WriteTxn<'_>,
        path: &str,
        bytes: &[u8],
        hash: &ContentHash,
        planned: Option<DocumentId>,
    ) -> Result<std::result::Result<DocumentId, String>> {
        if let Some(doc) = planned {
            return Ok(Ok(doc));
        }
        let detected = detect_file(path, bytes).ok();
        Ok(
            match detected.and_then(|d| txn.document_for_content(hash, d.mime_type).transpose()) {
                Some(doc) => Ok(doc?),
                None => Err("the same content failed earlier in this batch".to_owned()),
            },
        )
    }

    /// The entry binding `path` to `document_id`, counted: unchanged, updated, renamed
    /// (a leaving path had its content) or added.
    fn counted_entry(
        &mut self,
        txn: &WriteTxn<'_>,
        path: &str,
        document_id: DocumentId,
    ) -> Result<PathEntry> {
        let resolution = self.options.registry.resolve(path);
        let entry = PathEntry {
            path: path.to_owned(),
            document_id,
            collections: resolution.collections,
            context: resolution.context,
        };
        let report = &mut self.report;
        match self.existing.get(path) {
            Some(old) if *old == entry => report.unchanged += 1,
            Some(_) => report.updated += 1,
            // A new path is a rename when a leaving path had its content (the content
            // is only read when paths are leaving: never in a cold index).
            None if self.renames_left.is_empty() => report.added += 1,
            None => {
                let doc = txn.content_of(&document_id)?;
                match doc.and_then(|h| self.renames_left.get_mut(&h).filter(|n| **n > 0)) {
                    Some(n) => {
                        *n -= 1;
                        report.renamed += 1;
                    }
                    None => report.added += 1,
                }
            }
        }
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(chunks: &[usize]) -> Vec<FileTexts> {
        let text = (TextHash([0; 32]), None);
        chunks
            .iter()
            .enumerate()
            .map(|(i, &n)| (i, vec![text.clone(); n]))
            .collect()
    }

    fn shape(slices: Vec<&[FileTexts]>) -> Vec<Vec<usize>> {
        slices
            .iter()
            .map(|s| s.iter().map(|(_, t)| t.len()).collect())
            .collect()
    }

    #[test]
    fn slices_hold_whole_files_up_to_the_most_chunks() {
        let texts = files(&[2, 2, 2, 5, 1, 9, 0, 3]);
        assert_eq!(
            shape(slices(&texts, 4)),
            vec![vec![2, 2], vec![2], vec![5], vec![1], vec![9], vec![0, 3]]
        );
        assert_eq!(
            shape(slices(&texts, 100)),
            vec![vec![2, 2, 2, 5, 1, 9, 0, 3]]
        );
        assert_eq!(shape(slices(&texts, 1)).len(), 8, "a file a slice");
        assert!(slices(&[], 4).is_empty());
    }
}
