//! The write transaction: rows, indexes and leaves change together, and `commit`
//! rehashes only the touched buckets, appends a state record and commits once.
//!
//! Every change goes through [`WriteTxn`], so the committed tables, the indexes, the
//! leaf hashes and the bucket roots can never disagree in a committed state: redb commits
//! all of them atomically or none. Dropping a `WriteTxn` aborts it.

use std::collections::BTreeSet;

use cfs_core::{
    Bucket, Canonical, ChangeSummary, Chunk, ChunkEncodings, Document, DocumentId, Edge, EdgeKind,
    Embedding, EmbeddingId, Entity, MerkleRoot, PathEntry, PathId, StateRecord, StateRoot, Table,
    TableChange, TopTree, merkle_root,
};
use rayon::prelude::*;
use redb::ReadableTable;

use crate::bulk::{
    CHUNK_INDEX_SLOT, LoadStaged, STAGED_BYTES, STAGED_TABLES, Staged, StagedWrite,
    TARGET_INDEX_SLOT, TableLoad, staged_slot,
};
use crate::chunk_log::Appender;
use crate::error::{Result, StoreError};
use crate::rows::Rows;
use crate::store::Store;
use crate::tables::{
    self, LogMark, edge_by_target_key, edge_from_key, encode_roots, keys_with_prefix, meta,
    read_bucket_roots, read_sequence, read_table_roots,
};
use crate::vectors::{self, VectorHash};

/// The buckets a transaction changed, a bit for each bucket of each committed table:
/// a staged row marks its bucket with a bit set, not a tree insert (a cold index
/// stages hundreds of thousands of rows).
#[derive(Default)]
struct Touched {
    bits: [[u64; Touched::WORDS]; 5],
    count: usize,
}

impl Touched {
    const WORDS: usize = (1 << cfs_core::BUCKET_BITS) / 64;

    fn insert(&mut self, table: Table, bucket: u16) {
        let word = &mut self.bits[usize::from(tables::tag(table))][usize::from(bucket / 64)];
        let bit = 1u64 << (bucket % 64);
        if *word & bit == 0 {
            *word |= bit;
            self.count += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn len(&self) -> usize {
        self.count
    }

    /// The touched buckets in table order, then bucket order.
    fn iter(&self) -> impl Iterator<Item = (Table, u16)> + '_ {
        Table::ALL.iter().flat_map(move |&table| {
            let words = &self.bits[usize::from(tables::tag(table))];
            (0..Self::WORDS).flat_map(move |w| {
                let word = words[w];
                (0..64u16)
                    .filter(move |b| word & (1 << b) != 0)
                    .map(move |b| (table, w as u16 * 64 + b))
            })
        })
    }
}

/// An open write transaction.
pub struct WriteTxn<'s> {
    txn: redb::WriteTransaction,
    /// The transaction lives no longer than its store.
    _store: std::marker::PhantomData<&'s Store>,
    touched: Touched,
    /// Documents that lost their last path in this transaction: removed at commit unless
    /// a path names them again by then.
    orphans: BTreeSet<DocumentId>,
    summary: ChangeSummary,
    timestamp_ms: Option<u64>,
    /// Rows of new documents not yet in their tables (see `Staged`).
    staged: Staged,
    /// Heap bytes of staged rows held before they are spilled (see `spill.rs`).
    staged_limit: usize,
    /// Where spilled rows wait: the store's folder.
    spill_dir: std::path::PathBuf,
    /// Roots of touched buckets already known (hashed when staged rows filled an empty
    /// table); any later change to a bucket forgets its root (`touch`).
    known_roots: std::collections::BTreeMap<(Table, u16), MerkleRoot>,
    /// New chunks' encodings, appended to the chunk log (`chunk_log.rs`).
    log: Appender,
}

impl std::fmt::Debug for WriteTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTxn")
            .field("touched", &self.touched.len())
            .field("summary", &self.summary)
            .finish()
    }
}

fn change(summary: &mut ChangeSummary, table: Table) -> &mut TableChange {
    match table {
        Table::Paths => &mut summary.paths,
        Table::Documents => &mut summary.documents,
        Table::Chunks => &mut summary.chunks,
        Table::Embeddings => &mut summary.embeddings,
        Table::Edges => &mut summary.edges,
    }
}

/// A document and its rows, to add with [`WriteTxn::put_documents`].
#[derive(Clone, Copy, Debug)]
pub struct NewDocument<'a> {
    /// The document.
    pub document: &'a Document,
    /// Its chunks.
    pub chunks: &'a [Chunk],
    /// Their embeddings.
    pub embeddings: &'a [Embedding],
    /// `next_window` edges between its chunks.
    pub window_edges: &'a [Edge],
    /// The chunks come from `cfs_ingest::parse_file` in this process: their text hashes
    /// and ids, derived there, are not derived again (`cfs_core::DocumentParts`), and
    /// their leaves, hashed there, are these (`leaves[i]` of `chunks[i]`). Only the sync
    /// sets them; a document handed in from outside is checked and hashed in full.
    derived_leaves: Option<&'a [[u8; 32]]>,
    /// The encodings those leaves were hashed over (`cfs_core::ChunkEncodings`), written
    /// as they are.
    encodings: Option<&'a ChunkEncodings>,
}

impl<'a> NewDocument<'a> {
    /// A document with its rows, every one of them to be checked.
    pub fn new(
        document: &'a Document,
        chunks: &'a [Chunk],
        embeddings: &'a [Embedding],
        window_edges: &'a [Edge],
    ) -> Self {
        Self {
            document,
            chunks,
            embeddings,
            window_edges,
            derived_leaves: None,
            encodings: None,
        }
    }

    /// A document the sync has just parsed with `cfs_ingest::parse_file`, whose chunks'
    /// derivations are not made again.
    pub(crate) fn parsed(parsed: &'a cfs_ingest::Parsed, embeddings: &'a [Embedding]) -> Self {
        Self {
            derived_leaves: Some(&parsed.chunk_leaves),
            encodings: Some(&parsed.chunk_encodings),
            ..Self::new(
                &parsed.document,
                &parsed.chunks,
                embeddings,
                &parsed.window_edges,
            )
        }
    }
}

/// What a table's writing task did: rows added and changed, buckets touched.
#[derive(Default)]
struct Written {
    added: u64,
    changed: u64,
    touched: Vec<u16>,
}

/// The rows one new document adds, with its index entries.
struct DocumentRows<'a> {
    /// The chunks' rows, their encodings to go to the chunk log.
    chunk_rows: Vec<ChunkRow<'a>>,
    /// The document's own row, written at once (not staged).
    document: Row,
    /// Its embeddings' rows and its edges' rows, each table's in one buffer.
    embeddings: Rows,
    edges: Rows,
    vectors: Vec<(VectorHash, Vec<u8>)>,
    /// The document's `CHUNKS_BY_DOCUMENT` row: its id, and its chunk ids (empty
    /// without chunks: then no row).
    chunk_index: ([u8; 16], Vec<u8>),
    target_index: Vec<[u8; 34]>,
    content: (Vec<u8>, [u8; 16]),
}

/// The rows of one new document, checked, each entity encoded and hashed once: the
/// chunks' leaves serve both the check of the hierarchical hash and the rows.
fn document_rows<'a>(d: &NewDocument<'a>) -> Result<DocumentRows<'a>> {
    let doc = d.document;
    let derived = d
        .derived_leaves
        .filter(|leaves| leaves.len() == d.chunks.len());
    let chunk_rows = chunk_rows(d.chunks, derived, d.encodings);
    let leaves: Vec<[u8; 32]> = chunk_rows.iter().map(|r| r.leaf).collect();
    let edges = cfs_core::document_edges_of(&cfs_core::DocumentParts {
        document: doc,
        chunks: d.chunks,
        chunk_leaves: Some(&leaves),
        embeddings: d.embeddings,
        window_edges: d.window_edges,
        chunks_derived: derived.is_some(),
    })?;
    // Embedding rows name their vector by hash; each distinct vector is written once
    // (vectors.rs).
    let mut embeddings = Rows::default();
    let mut vectors = Vec::with_capacity(d.embeddings.len());
    for e in d.embeddings {
        let (stored, encoded) = vectors::split(e);
        let value = tables::row_value(&stored.leaf(&encoded).0, &stored.encode());
        embeddings.push(&e.id.0, &value);
        vectors.push((stored.vector, encoded));
    }
    let mut edge_rows = Rows::default();
    canonical_rows(&mut edge_rows, &edges, Edge::key);
    Ok(DocumentRows {
        chunk_rows,
        document: canonical_row(doc, doc.id.0.to_vec(), None),
        embeddings,
        edges: edge_rows,
        vectors,
        chunk_index: {
            let mut in_order: Vec<&Chunk> = d.chunks.iter().collect();
            in_order.sort_by_key(|c| c.sequence);
            (
                doc.id.0,
                tables::chunk_index_value(in_order.iter().map(|c| &c.id)),
            )
        },
        target_index: edges
            .iter()
            .filter(|e| !e.kind.is_system())
            .map(tables::edge_by_target_key)
            .collect(),
        content: (
            tables::content_key(&doc.content_hash, &doc.profile.mime_type),
            doc.id.0,
        ),
    })
}

/// The error for binding a path to a document the store does not hold.
fn absent_document(entry: &PathEntry) -> StoreError {
    StoreError::InvalidInput(format!(
        "{:?} names the absent document {}",
        entry.path, entry.document_id
    ))
}

/// A chunk's row before its encoding goes to the chunk log: its key, its leaf and its
/// encoding (borrowed from the parse that encoded it to hash the leaf, or made here).
struct ChunkRow<'a> {
    key: [u8; 16],
    leaf: [u8; 32],
    encoding: std::borrow::Cow<'a, [u8]>,
}

/// The rows of `chunks`: their encodings and leaves as the parse made them when it
/// gave both (`derived`, `encodings`), else encoded and hashed here.
fn chunk_rows<'a>(
    chunks: &[Chunk],
    derived: Option<&[[u8; 32]]>,
    encodings: Option<&'a ChunkEncodings>,
) -> Vec<ChunkRow<'a>> {
    let encodings = encodings.filter(|e| e.len() == chunks.len());
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let key = c.id.0;
            match (derived, encodings.and_then(|e| e.get(i))) {
                (Some(leaves), Some(encoding)) => {
                    debug_assert_eq!(encoding, c.encode().as_slice(), "a parse's encoding");
                    debug_assert_eq!(leaves[i], Chunk::leaf_of_encoding(encoding).0);
                    ChunkRow {
                        key,
                        leaf: leaves[i],
                        encoding: std::borrow::Cow::Borrowed(encoding),
                    }
                }
                (derived, _) => {
                    let encoding = c.encode();
                    let leaf = match derived {
                        Some(leaves) => leaves[i],
                        None => Chunk::leaf_of_encoding(&encoding).0,
                    };
                    ChunkRow {
                        key,
                        leaf,
                        encoding: std::borrow::Cow::Owned(encoding),
                    }
                }
            }
        })
        .collect()
}

/// Rows of new documents written at once rather than staged: documents, vectors and
/// content-index entries are read while the transaction goes on.
#[derive(Default)]
struct Unstaged {
    documents: Vec<Row>,
    vectors: Vec<(VectorHash, Vec<u8>)>,
    content_index: Vec<(Vec<u8>, [u8; 16])>,
}

impl Unstaged {
    /// Writes the three tables in key order, in parallel (redb lets separate tables of
    /// one write transaction change on separate threads); returns what the documents
    /// table counted.
    fn write(mut self, txn: &redb::WriteTransaction) -> Result<Written> {
        self.documents.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        self.vectors.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.vectors.dedup_by(|a, b| a.0 == b.0);
        self.content_index.sort_unstable();
        let (written, (vectors, content)) = rayon::join(
            || write_documents(txn, &self.documents),
            || {
                rayon::join(
                    || write_vectors(txn, &self.vectors),
                    || {
                        let entries = self
                            .content_index
                            .iter()
                            .map(|(k, id)| (k.as_slice(), &id[..]));
                        write_index(txn, tables::CONTENT_INDEX, entries)
                    },
                )
            },
        );
        vectors?;
        content?;
        written
    }
}

/// Inserts document rows, counting added and changed rows and the buckets touched.
fn write_documents(txn: &redb::WriteTransaction, documents: &[Row]) -> Result<Written> {
    let mut t = txn.open_table(tables::DOCUMENTS)?;
    let mut out = Written::default();
    for row in documents {
        if t.insert(row.key.as_slice(), row.value.as_slice())?
            .is_some()
        {
            out.changed += 1;
        } else {
            out.added += 1;
        }
        out.touched.push(Bucket::of_key(&row.key).0);
    }
    Ok(out)
}

/// Inserts the vectors not stored yet (each distinct vector once).
fn write_vectors(txn: &redb::WriteTransaction, vectors: &[(VectorHash, Vec<u8>)]) -> Result<()> {
    let mut t = txn.open_table(tables::VECTORS)?;
    for (hash, encoded) in vectors {
        if t.get(&hash[..])?.is_none() {
            t.insert(&hash[..], encoded.as_slice())?;
        }
    }
    Ok(())
}

/// Writes index entries (no committed rows, so nothing to count or rehash).
fn write_index<'a>(
    txn: &redb::WriteTransaction,
    def: redb::TableDefinition<'static, &'static [u8], &'static [u8]>,
    entries: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> Result<()> {
    let mut t = txn.open_table(def)?;
    for (key, value) in entries {
        t.insert(key, value)?;
    }
    Ok(())
}

/// The row of an entity stored in canonical form: encoded once, in place after its
/// leaf, at its exact length (counted, not written: a cold index stages hundreds of
/// thousands of rows, and none holds spare capacity), and hashed once unless its leaf is
/// known already (a chunk the sync has just parsed, whose leaf its document was made
/// from: checked against the encoding in debug builds).
fn canonical_row<E: Entity>(entity: &E, key: Vec<u8>, leaf: Option<&[u8; 32]>) -> Row {
    let value = tables::row_value_with(
        encoded_len(entity),
        |out| encode_into(entity, out),
        |encoded| {
            let hashed = || E::leaf_of_encoding(encoded).0;
            match leaf {
                Some(leaf) => {
                    debug_assert_eq!(*leaf, hashed(), "a row's known leaf");
                    *leaf
                }
                None => hashed(),
            }
        },
    );
    Row { key, value }
}

/// [`canonical_row`] of many entities of one kind into `rows`, each under its `key`,
/// their leaves hashed side by side (`Entity::leaves_of_encodings`).
fn canonical_rows<E: Entity, K: AsRef<[u8]>>(
    rows: &mut Rows,
    entities: &[E],
    key: impl Fn(&E) -> K,
) {
    tables::push_row_values_with(rows, entities, key, encode_into, |payloads| {
        E::leaves_of_encodings(payloads)
            .into_iter()
            .map(|leaf| leaf.0)
            .collect()
    });
}

/// The length of an entity's canonical encoding, counted without writing it.
fn encoded_len<E: Entity>(entity: &E) -> usize {
    borsh::object_length(entity).unwrap_or_default()
}

/// Appends an entity's canonical encoding to `out`.
fn encode_into<E: Entity>(entity: &E, out: &mut Vec<u8>) {
    borsh::BorshSerialize::serialize(entity, out)
        .expect("canonical encoding of a value within spec bounds");
}

/// The folder of the store file `path` (`.` for a bare file name), where rows spilled
/// by a write wait.
fn spill_dir(path: &std::path::Path) -> std::path::PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => ".".into(),
    }
}

/// One committed row ready to write: its key and its value (leaf, then payload).
struct Row {
    key: Vec<u8>,
    value: Vec<u8>,
}

impl<'s> WriteTxn<'s> {
    pub(crate) fn new(store: &'s Store) -> Result<Self> {
        let mut txn = store.writable_db()?.begin_write()?;
        // The content is untrusted: a two-phase commit never trusts a checksum alone.
        txn.set_two_phase_commit(true);
        // Under the writer's lock: the log is cut back to what the last commit covers.
        let mark = LogMark::read(&txn.open_table(tables::META)?)?;
        let log = Appender::new(store.log_for(&mark)?, &mark)?;
        Ok(Self {
            txn,
            _store: std::marker::PhantomData,
            touched: Touched::default(),
            orphans: BTreeSet::new(),
            summary: ChangeSummary::default(),
            timestamp_ms: None,
            staged: Staged::default(),
            staged_limit: STAGED_BYTES,
            spill_dir: spill_dir(store.path()),
            known_roots: std::collections::BTreeMap::new(),
            log,
        })
    }

    /// Holds at most `bytes` of staged rows in memory (heap bytes, about): beyond them,
    /// the rows of a table that was empty are sorted and spilled to a file beside the
    /// store, to be merged into one ordered run at commit, and the rows of other tables
    /// are written. Default: 128 MiB.
    pub fn set_staged_limit(&mut self, bytes: usize) {
        self.staged_limit = bytes;
    }

    /// Writes the staged rows into their tables (each table by a task of its own), the
    /// spilled ones merged in. Everything that reads or removes rows of a staged table
    /// calls this first.
    fn flush_staged(&mut self) -> Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        self.each_staged_table(|table: &TableLoad<'_>, rows, runs| table.write(rows, runs))
    }

    /// Writes the staged rows, and meanwhile syncs the chunk log's new bytes (on a
    /// thread of their own: the sync waits on the device, not on a core). They must be
    /// durable before redb's commit, which names them, not before the rows are loaded.
    fn flush_staged_and_log(&mut self) -> Result<()> {
        self.log.write()?;
        let log = self.log.appended().then(|| self.log.log().clone());
        std::thread::scope(|scope| {
            let syncing = log.map(|log| scope.spawn(move || log.sync()));
            let flushed = self.flush_staged();
            let synced = syncing.map_or(Ok(()), |s| {
                s.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            });
            flushed.and(synced)
        })
    }

    /// Staged rows over their budget: spilled or written (`TableLoad::spill`); the staged
    /// rows are empty afterwards, the runs kept.
    fn spill(&mut self) -> Result<()> {
        self.each_staged_table(|table: &TableLoad<'_>, rows, runs| table.spill(rows, runs))
    }

    /// Takes the staged rows and gives each table's, with its runs, to `write` (each
    /// table by a task of its own), then counts what went into the tables.
    fn each_staged_table(&mut self, load: LoadStaged) -> Result<()> {
        let rows = std::mem::take(&mut self.staged.rows);
        self.staged.bytes = 0;
        let (txn, dir) = (&self.txn, self.spill_dir.as_path());
        let results: Vec<(Option<Table>, StagedWrite)> = STAGED_TABLES
            .into_par_iter()
            .zip(rows)
            .zip(self.staged.runs.par_iter_mut())
            .with_max_len(1)
            .map(|(((def, table), rows), runs)| {
                let target = TableLoad {
                    txn,
                    def,
                    committed: table.is_some(),
                    dir,
                };
                Ok((table, load(&target, rows, runs)?))
            })
            .collect::<Result<_>>()?;
        self.account(results);
        Ok(())
    }

    /// Counts staged rows that went into their tables.
    fn account(&mut self, results: Vec<(Option<Table>, StagedWrite)>) {
        for (table, written) in results {
            let Some(table) = table else { continue };
            let counts = change(&mut self.summary, table);
            // Counted as added when staged: a present key was unchanged or changed.
            counts.added -= written.present;
            counts.changed += written.differed;
            for (bucket, root) in written.bucket_roots.into_iter().flatten() {
                self.known_roots.insert((table, bucket), root);
            }
        }
    }

    /// Marks a bucket as changed: its root is recomputed at commit.
    fn touch(&mut self, table: Table, bucket: u16) {
        self.touched.insert(table, bucket);
        self.known_roots.remove(&(table, bucket));
    }

    /// Sets the commit time recorded in the state chain (default: now).
    pub fn set_timestamp_ms(&mut self, timestamp_ms: u64) {
        self.timestamp_ms = Some(timestamp_ms);
    }

    /// The underlying redb transaction, for the store's own caches.
    pub(crate) fn raw(&self) -> &redb::WriteTransaction {
        &self.txn
    }

    /// Writes a row stored in canonical form (not an embedding: see `vectors.rs`).
    fn put_row<E: Entity>(&mut self, entity: &E, key: &[u8]) -> Result<()> {
        let table = E::TABLE;
        debug_assert!(table != Table::Embeddings && table != Table::Chunks);
        if staged_slot(table).is_some() {
            self.flush_staged()?;
        }
        let value = canonical_row(entity, key.to_vec(), None).value;
        let previous = {
            let mut t = self.txn.open_table(tables::committed(table))?;
            t.insert(key, value.as_slice())?.map(|g| g.value().to_vec())
        };
        if previous.as_deref() == Some(value.as_slice()) {
            return Ok(());
        }
        self.count_put(table, key, previous.is_some());
        Ok(())
    }

    /// Counts a committed row written with a value its key did not hold (`replaced`: it
    /// held another) and touches its bucket.
    fn count_put(&mut self, table: Table, key: &[u8], replaced: bool) {
        let counts = change(&mut self.summary, table);
        if replaced {
            counts.changed += 1;
        } else {
            counts.added += 1;
        }
        self.touch(table, Bucket::of_key(key).0);
    }

    fn delete_row(&mut self, table: Table, key: &[u8]) -> Result<bool> {
        if staged_slot(table).is_some() {
            self.flush_staged()?;
        }
        let removed = {
            let mut t = self.txn.open_table(tables::committed(table))?;
            match t.remove(key)? {
                Some(old) if table == Table::Chunks => {
                    // Its encoding stays in the chunk log, named by no row.
                    let extent = tables::Extent::decode(tables::split_row(old.value())?.1)?;
                    self.log.remove(extent);
                    true
                }
                old => old.is_some(),
            }
        };
        if removed {
            change(&mut self.summary, table).removed += 1;
            self.touch(table, Bucket::of_key(key).0);
        }
        Ok(removed)
    }

    /// Writes an edge, and for a user edge its `EDGES_BY_TARGET` entry.
    fn put_edge_row(&mut self, edge: &Edge) -> Result<()> {
        self.put_row(edge, &edge.key())?;
        if !edge.kind.is_system() {
            let mut t = self.txn.open_table(tables::EDGES_BY_TARGET)?;
            t.insert(&edge_by_target_key(edge)[..], &[][..])?;
        }
        Ok(())
    }

    fn delete_edge_row(&mut self, edge: &Edge) -> Result<()> {
        self.delete_row(Table::Edges, &edge.key())?;
        if !edge.kind.is_system() {
            let mut t = self.txn.open_table(tables::EDGES_BY_TARGET)?;
            t.remove(&edge_by_target_key(edge)[..])?;
        }
        Ok(())
    }

    /// Records the parsers the store's documents were parsed with (`meta` `parsers`): a
    /// meta row, outside the state.
    pub fn set_parsers(&mut self, parsers: &str) -> Result<()> {
        let mut meta = self.txn.open_table(tables::META)?;
        meta.insert(tables::meta::PARSERS.as_bytes(), parsers.as_bytes())?;
        Ok(())
    }

    /// True if the document is present.
    pub fn has_document(&self, id: &DocumentId) -> Result<bool> {
        let t = self.txn.open_table(tables::DOCUMENTS)?;
        Ok(t.get(&id.0[..])?.is_some())
    }

    /// The document of known content and MIME type, if present.
    pub fn document_for_content(
        &self,
        content: &cfs_core::ContentHash,
        mime_type: &str,
    ) -> Result<Option<DocumentId>> {
        let t = self.txn.open_table(tables::CONTENT_INDEX)?;
        let key = tables::content_key(content, mime_type);
        let Some(v) = t.get(key.as_slice())? else {
            return Ok(None);
        };
        let id = tables::content_value(v.value())?;
        drop(v);
        drop(t);
        Ok(self.has_document(&id)?.then_some(id))
    }

    /// Adds a document with its chunks, embeddings and window edges, and the system edges
    /// that link them, checked by `cfs_core::document_edges`. A document already present
    /// is left as it is (its id says it is the same). Returns whether it was added.
    pub fn put_document(
        &mut self,
        document: &Document,
        chunks: &[Chunk],
        embeddings: &[Embedding],
        window_edges: &[Edge],
    ) -> Result<bool> {
        Ok(
            self.put_documents(&[NewDocument::new(document, chunks, embeddings, window_edges)])?
                == 1,
        )
    }

    /// Adds many documents at once: every document is checked, all rows are encoded and
    /// hashed in parallel, then written table by table in key order (sorted inserts keep
    /// the B-trees compact and fast). Documents already present are skipped. Returns how
    /// many were added.
    pub fn put_documents(&mut self, documents: &[NewDocument<'_>]) -> Result<usize> {
        let mut fresh: Vec<&NewDocument<'_>> = Vec::new();
        let mut seen = BTreeSet::new();
        for d in documents {
            if !self.has_document(&d.document.id)? && seen.insert(d.document.id) {
                fresh.push(d);
            }
        }
        // Every document is checked and its rows built on its own (in parallel).
        let built: Vec<DocumentRows<'_>> = fresh
            .par_iter()
            .map(|d| document_rows(d))
            .collect::<Result<_>>()?;
        let unstaged = self.stage(built)?;
        let written = unstaged.write(&self.txn)?;
        let counts = change(&mut self.summary, Table::Documents);
        counts.added += written.added;
        counts.changed += written.changed;
        for bucket in written.touched {
            self.touch(Table::Documents, bucket);
        }
        Ok(fresh.len())
    }

    /// Stages the chunk, embedding and edge rows and the index entries of new
    /// documents (counted as added, their buckets touched), spilling the staged rows
    /// whenever they pass their budget (so that one large batch cannot overshoot it);
    /// returns the rows written at once: documents, vectors and content-index entries,
    /// which are read while the transaction goes on.
    fn stage(&mut self, built: Vec<DocumentRows<'_>>) -> Result<Unstaged> {
        let mut unstaged = Unstaged::default();
        let chunks_slot = staged_slot(Table::Chunks).expect("chunk rows are staged");
        // Every chunk's encoding goes to the chunk log, all of them by one append.
        let encodings: Vec<&[u8]> = built
            .iter()
            .flat_map(|b| b.chunk_rows.iter().map(|row| &*row.encoding))
            .collect();
        let mut extents = self.log.append_all(&encodings)?.into_iter();
        drop(encodings);
        for b in built {
            if self.staged.bytes > self.staged_limit {
                self.spill()?;
            }
            // A chunk's row holds its leaf and where its encoding lies in the log.
            for (row, extent) in b.chunk_rows.iter().zip(extents.by_ref()) {
                change(&mut self.summary, Table::Chunks).added += 1;
                self.touch(Table::Chunks, Bucket::of_key(&row.key).0);
                let value = tables::chunk_row_value(&row.leaf, &extent);
                self.staged.push(chunks_slot, &row.key, &value);
            }
            unstaged.documents.push(b.document);
            for (table, rows) in [(Table::Embeddings, &b.embeddings), (Table::Edges, &b.edges)] {
                let slot = staged_slot(table).expect("embedding and edge rows are staged");
                change(&mut self.summary, table).added += rows.len() as u64;
                for (key, _) in rows.iter() {
                    self.touch(table, Bucket::of_key(key).0);
                }
                self.staged.extend(slot, rows);
            }
            unstaged.vectors.extend(b.vectors);
            let (document, chunk_ids) = b.chunk_index;
            if !chunk_ids.is_empty() {
                self.staged.push(CHUNK_INDEX_SLOT, &document, &chunk_ids);
            }
            for key in b.target_index {
                self.staged.push(TARGET_INDEX_SLOT, &key, &[]);
            }
            unstaged.content_index.push(b.content);
        }
        if self.staged.bytes > self.staged_limit {
            self.spill()?;
        }
        Ok(unstaged)
    }

    /// Binds a path to a present document, replacing its previous binding; a document
    /// left without paths is removed with everything it owns when the transaction
    /// commits (so a path bound to it later in the same transaction keeps it: two files
    /// that swap contents rebind to each other's documents).
    pub fn bind_path(&mut self, entry: &PathEntry) -> Result<()> {
        self.bind_paths(std::slice::from_ref(entry))
    }

    /// [`WriteTxn::bind_path`] of each entry in turn, the tables opened once: what a sync
    /// does with a batch's paths (five table openings and a decode a path, one at a
    /// time, were a quarter of the last batch's write).
    pub fn bind_paths(&mut self, entries: &[PathEntry]) -> Result<()> {
        debug_assert!(
            staged_slot(Table::Paths).is_none(),
            "paths are written directly"
        );
        let mut released = Vec::new();
        let mut counted = Vec::with_capacity(entries.len());
        {
            let documents = self.txn.open_table(tables::DOCUMENTS)?;
            let mut paths = self.txn.open_table(tables::committed(Table::Paths))?;
            let mut index = self.txn.open_table(tables::PATHS_BY_DOCUMENT)?;
            for entry in entries {
                entry.validate()?;
                if documents.get(&entry.document_id.0[..])?.is_none() {
                    return Err(absent_document(entry));
                }
                let id = entry.id();
                let value = canonical_row(entry, id.0.to_vec(), None).value;
                let previous = paths
                    .insert(&id.0[..], value.as_slice())?
                    .map(|old| old.value().to_vec());
                index.insert(
                    &tables::path_index_key(&entry.document_id, &id)[..],
                    &[][..],
                )?;
                if previous.as_deref() == Some(value.as_slice()) {
                    continue;
                }
                counted.push((id, previous.is_some()));
                if let Some(old) = previous {
                    let old = PathEntry::decode(tables::split_row(&old)?.1)?;
                    if old.document_id != entry.document_id {
                        released.push((old.document_id, id));
                    }
                }
            }
        }
        for (id, replaced) in counted {
            self.count_put(Table::Paths, &id.0, replaced);
        }
        for (document, path) in released {
            self.release(document, path)?;
        }
        Ok(())
    }

    /// Removes the binding of `path`; a document left without paths is removed with
    /// everything it owns when the transaction commits. Returns the removed entry.
    pub fn unbind_path(&mut self, path: &str) -> Result<Option<PathEntry>> {
        let id = PathId::derive(path);
        let Some(old) = self.get_path_by_id(&id)? else {
            return Ok(None);
        };
        self.delete_row(Table::Paths, &id.0)?;
        self.release(old.document_id, id)?;
        Ok(Some(old))
    }

    fn get_path_by_id(&self, id: &PathId) -> Result<Option<PathEntry>> {
        let t = self.txn.open_table(tables::PATHS)?;
        match t.get(&id.0[..])? {
            Some(v) => Ok(Some(PathEntry::decode(tables::split_row(v.value())?.1)?)),
            None => Ok(None),
        }
    }

    /// Drops the reference of path `path` to `document`; a document left without paths
    /// is marked for removal.
    fn release(&mut self, document: DocumentId, path: PathId) -> Result<()> {
        let remaining = {
            let mut idx = self.txn.open_table(tables::PATHS_BY_DOCUMENT)?;
            idx.remove(&tables::path_index_key(&document, &path)[..])?;
            keys_with_prefix(&idx, &document.0)?.len()
        };
        if remaining == 0 {
            self.orphans.insert(document);
        }
        Ok(())
    }

    /// Removes now, with everything they own, the documents that lost their last path
    /// in this transaction and were not bound again (`commit` does it too). The set is
    /// explicit: the documents released, each checked to have no path.
    pub fn remove_orphans(&mut self) -> Result<()> {
        for document in std::mem::take(&mut self.orphans) {
            let has_path = {
                let idx = self.txn.open_table(tables::PATHS_BY_DOCUMENT)?;
                !keys_with_prefix(&idx, &document.0)?.is_empty()
            };
            if !has_path {
                self.remove_document(document)?;
            }
        }
        Ok(())
    }

    /// Removes a document, its chunks, their embeddings, and every edge from or to any of
    /// them. The set is explicit: the document and the chunk ids its index lists.
    fn remove_document(&mut self, document: DocumentId) -> Result<()> {
        self.flush_staged()?;
        let doc_bytes = {
            let t = self.txn.open_table(tables::DOCUMENTS)?;
            t.get(&document.0[..])?.map(|v| v.value().to_vec())
        };
        let Some(doc_bytes) = doc_bytes else {
            return Ok(());
        };
        let doc = Document::decode(tables::split_row(&doc_bytes)?.1)?;
        let chunk_ids =
            tables::chunk_ids_of(&self.txn.open_table(tables::CHUNKS_BY_DOCUMENT)?, &document)?;
        // Every edge touching the document or a chunk; embeddings are the targets of
        // the chunks' embedded_as edges. System edges all leave from the document or
        // its chunks; the targets index finds the user edges that arrive.
        let mut ends: Vec<[u8; 16]> = vec![document.0];
        ends.extend(chunk_ids.iter().map(|c| c.0));
        let mut edges: BTreeSet<Edge> = BTreeSet::new();
        let mut embedding_ids: Vec<EmbeddingId> = Vec::new();
        {
            let by_source = self.txn.open_table(tables::EDGES)?;
            let by_target = self.txn.open_table(tables::EDGES_BY_TARGET)?;
            for end in &ends {
                for key in keys_with_prefix(&by_source, end)? {
                    let edge = edge_from_key(&key, false)?;
                    if edge.kind == EdgeKind::EMBEDDED_AS {
                        embedding_ids.push(EmbeddingId(edge.target.0));
                    }
                    edges.insert(edge);
                }
                for key in keys_with_prefix(&by_target, end)? {
                    edges.insert(edge_from_key(&key, true)?);
                }
            }
            for emb in &embedding_ids {
                for key in keys_with_prefix(&by_target, &emb.0)? {
                    edges.insert(edge_from_key(&key, true)?);
                }
                for key in keys_with_prefix(&by_source, &emb.0)? {
                    edges.insert(edge_from_key(&key, false)?);
                }
            }
        }
        for edge in &edges {
            self.delete_edge_row(edge)?;
        }
        for emb in &embedding_ids {
            self.delete_row(Table::Embeddings, &emb.0)?;
        }
        for chunk in &chunk_ids {
            self.delete_row(Table::Chunks, &chunk.0)?;
        }
        self.txn
            .open_table(tables::CHUNKS_BY_DOCUMENT)?
            .remove(&document.0[..])?;
        self.delete_row(Table::Documents, &document.0)?;
        // The content's entry goes only if it names this document: a document of the same
        // content parsed again by other parsers may have taken it.
        let mut idx = self.txn.open_table(tables::CONTENT_INDEX)?;
        let key = tables::content_key(&doc.content_hash, &doc.profile.mime_type);
        let names_it = match idx.get(key.as_slice())? {
            Some(v) => tables::content_value(v.value())? == document,
            None => false,
        };
        if names_it {
            idx.remove(key.as_slice())?;
        }
        Ok(())
    }

    /// Adds the embedding of a present chunk that has none yet, with its vector and its
    /// `embedded_as` edge: what a sync that deferred embeddings left out. False (and
    /// nothing written) if the chunk is gone or the embedding is present.
    pub fn put_embedding(&mut self, embedding: &Embedding) -> Result<bool> {
        embedding.validate()?;
        self.flush_staged()?;
        let present = |t: &redb::Table<'_, &'static [u8], &'static [u8]>, key: &[u8]| {
            t.get(key).map(|v| v.is_some())
        };
        if !present(&self.txn.open_table(tables::CHUNKS)?, &embedding.chunk_id.0)?
            || present(&self.txn.open_table(tables::EMBEDDINGS)?, &embedding.id.0)?
        {
            return Ok(false);
        }
        let (stored, encoded) = vectors::split(embedding);
        {
            let mut t = self.txn.open_table(tables::VECTORS)?;
            if t.get(&stored.vector[..])?.is_none() {
                t.insert(&stored.vector[..], encoded.as_slice())?;
            }
        }
        let value = tables::row_value(&stored.leaf(&encoded).0, &stored.encode());
        self.txn
            .open_table(tables::EMBEDDINGS)?
            .insert(&embedding.id.0[..], value.as_slice())?;
        change(&mut self.summary, Table::Embeddings).added += 1;
        self.touch(Table::Embeddings, Bucket::of_key(&embedding.id.0).0);
        let edge = Edge::new(embedding.chunk_id, embedding.id, EdgeKind::EMBEDDED_AS);
        self.put_edge_row(&edge)?;
        Ok(true)
    }

    /// Removes every embedding with its `embedded_as` edge and any user edge that
    /// touches it (the ids read first: an explicit set), and records `settings` in meta:
    /// the first commit of switching a store to another embedder. Returns the embeddings
    /// removed.
    pub(crate) fn remove_embeddings_for(&mut self, settings: &crate::Settings) -> Result<usize> {
        self.flush_staged()?;
        let ids: Vec<EmbeddingId> =
            tables::embedding_ids(&self.txn.open_table(tables::EMBEDDINGS)?)?;
        let mut edges: BTreeSet<Edge> = BTreeSet::new();
        {
            let embeddings = self.txn.open_table(tables::EMBEDDINGS)?;
            let by_source = self.txn.open_table(tables::EDGES)?;
            let by_target = self.txn.open_table(tables::EDGES_BY_TARGET)?;
            for id in &ids {
                // Its embedded_as edge, from the chunk its row names (the targets
                // index holds user edges only).
                let row = embeddings.get(&id.0[..])?.ok_or_else(|| {
                    StoreError::Corrupted(format!("embedding {id} vanished from its state"))
                })?;
                let stored = vectors::StoredEmbedding::decode(tables::split_row(row.value())?.1)?;
                edges.insert(Edge::new(stored.chunk_id, *id, EdgeKind::EMBEDDED_AS));
                for key in keys_with_prefix(&by_target, &id.0)? {
                    edges.insert(edge_from_key(&key, true)?);
                }
                for key in keys_with_prefix(&by_source, &id.0)? {
                    edges.insert(edge_from_key(&key, false)?);
                }
            }
        }
        for edge in &edges {
            self.delete_edge_row(edge)?;
        }
        for id in &ids {
            self.delete_row(Table::Embeddings, &id.0)?;
        }
        self.txn
            .open_table(tables::META)?
            .insert(meta::SETTINGS.as_bytes(), settings.encode().as_slice())?;
        Ok(ids.len())
    }

    /// Adds a user edge (kind `0x8000` and up) between present documents, chunks or
    /// embeddings.
    pub fn put_user_edge(&mut self, edge: &Edge) -> Result<()> {
        edge.validate()?;
        if edge.kind.is_system() {
            return Err(StoreError::InvalidInput(
                "system edges come with their document".into(),
            ));
        }
        self.flush_staged()?;
        for end in [edge.source, edge.target] {
            if !self.entity_exists(&end.0)? {
                return Err(StoreError::InvalidInput(format!("{end:?} does not exist")));
            }
        }
        self.put_edge_row(edge)
    }

    /// Removes user edges named one by one; an empty set is refused.
    pub fn remove_user_edges(&mut self, edges: &[Edge]) -> Result<usize> {
        if edges.is_empty() {
            return Err(StoreError::InvalidInput(
                "refusing to delete by an empty set".into(),
            ));
        }
        self.flush_staged()?;
        let mut n = 0;
        for edge in edges.iter().filter(|e| !e.kind.is_system()) {
            let present = {
                let t = self.txn.open_table(tables::EDGES)?;
                t.get(&edge.key()[..])?.is_some()
            };
            if present {
                self.delete_edge_row(edge)?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn entity_exists(&self, id: &[u8; 16]) -> Result<bool> {
        for def in [tables::DOCUMENTS, tables::CHUNKS, tables::EMBEDDINGS] {
            if self.txn.open_table(def)?.get(&id[..])?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// What this transaction has changed so far.
    pub fn summary(&self) -> &ChangeSummary {
        &self.summary
    }

    /// Rehashes the touched buckets, composes the new state root, appends a state record
    /// and commits, all at once. A transaction that changed no committed row commits its
    /// cache updates only and returns the current root without a new record.
    pub fn commit(self) -> Result<StateRoot> {
        self.commit_checked(None)
    }

    /// [`WriteTxn::commit`] only if the new state root is `expected`; otherwise nothing
    /// is written and the error names both roots. What replication does with a state it
    /// received: the rows it applied must make the root they were sent under.
    pub fn commit_expecting(self, expected: StateRoot) -> Result<StateRoot> {
        self.commit_checked(Some(expected))
    }

    fn commit_checked(mut self, expected: Option<StateRoot>) -> Result<StateRoot> {
        self.remove_orphans()?;
        self.flush_staged_and_log()?;
        let Self {
            txn,
            touched,
            summary,
            timestamp_ms,
            known_roots,
            log,
            ..
        } = self;
        if log.changed() {
            txn.open_table(tables::META)?
                .insert(meta::CHUNK_LOG.as_bytes(), &log.mark().encode()[..])?;
        }
        let (previous, sequence) = {
            let meta = txn.open_table(tables::META)?;
            (read_table_roots(&meta)?, read_sequence(&meta)?)
        };
        if touched.is_empty() {
            check_root(expected, previous.state_root())?;
            txn.commit()?;
            return Ok(previous.state_root());
        }
        let unknown: BTreeSet<(Table, u16)> = touched
            .iter()
            .filter(|key| !known_roots.contains_key(key))
            .collect();
        let rehashed = rehash_buckets(&txn, &unknown)?;
        #[cfg(debug_assertions)]
        {
            // Roots hashed beside the bulk loader's cursor equal a rehash of the rows.
            let known: BTreeSet<(Table, u16)> = known_roots.keys().copied().collect();
            for (table, bucket, root) in rehash_buckets(&txn, &known)? {
                assert_eq!(root, known_roots.get(&(table, bucket)).copied());
            }
        }
        let known = known_roots.into_iter().map(|((t, b), r)| (t, b, Some(r)));
        let mut roots = previous;
        {
            let mut bucket_roots = txn.open_table(tables::BUCKET_ROOTS)?;
            write_bucket_roots(
                &mut bucket_roots,
                rehashed.into_iter().chain(known).collect(),
            )?;
            let tables_touched: BTreeSet<Table> = touched.iter().map(|(t, _)| t).collect();
            for table in tables_touched {
                let all = read_bucket_roots(&bucket_roots, table)?;
                roots.set(table, TopTree::from_bucket_roots(&all)?.root());
            }
        }
        let record = StateRecord {
            sequence: sequence + 1,
            parent: previous.state_root(),
            root: roots.state_root(),
            table_roots: roots,
            timestamp_ms: timestamp_ms.unwrap_or_else(now_ms),
            summary,
        };
        check_root(expected, record.root)?;
        append_record(&txn, &record)?;
        txn.commit()?;
        Ok(record.root)
    }
}

/// Fails when a commit expecting `expected` would make `root` (the transaction, dropped
/// by the caller's `?`, is then aborted).
fn check_root(expected: Option<StateRoot>, root: StateRoot) -> Result<()> {
    match expected {
        Some(expected) if expected != root => Err(StoreError::RootMismatch { expected, root }),
        _ => Ok(()),
    }
}

/// Records each bucket's new root (`None`: the bucket is left empty). Into an empty table
/// (a new store's first commit: a root for every bucket of every table written) they go
/// as one ordered run through a cursor, three times faster than an insert each; otherwise
/// by key.
fn write_bucket_roots(
    t: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    mut roots: Vec<(Table, u16, Option<MerkleRoot>)>,
) -> Result<()> {
    roots.sort_unstable_by_key(|&(table, bucket, _)| tables::bucket_root_key(table, bucket));
    if redb::ReadableTableMetadata::is_empty(t)? && roots.iter().all(|r| r.2.is_some()) {
        let rows = roots.iter().filter_map(|&(table, bucket, root)| {
            Some(Ok((tables::bucket_root_key(table, bucket), root?.0)))
        });
        return crate::bulk::append_ordered(t, rows);
    }
    for (table, bucket, root) in roots {
        let key = tables::bucket_root_key(table, bucket);
        match root {
            Some(root) => t.insert(&key[..], &root.0[..])?,
            None => t.remove(&key[..])?,
        };
    }
    Ok(())
}

/// The root of each of `buckets` from the leaves at the head of its rows (`None` for a
/// bucket left empty); one task per table, the tables read in parallel.
fn rehash_buckets(
    txn: &redb::WriteTransaction,
    buckets: &BTreeSet<(Table, u16)>,
) -> Result<Vec<(Table, u16, Option<MerkleRoot>)>> {
    let by_table: Vec<(Table, Vec<u16>)> = Table::ALL
        .iter()
        .map(|&table| {
            let of_table = buckets
                .iter()
                .filter(|key| key.0 == table)
                .map(|(_, b)| *b)
                .collect();
            (table, of_table)
        })
        .filter(|(_, of_table): &(Table, Vec<u16>)| !of_table.is_empty())
        .collect();
    let rehashed: Vec<Vec<(Table, u16, Option<MerkleRoot>)>> = by_table
        .par_iter()
        .with_max_len(1)
        .map(|(table, of_table)| {
            let rows = txn.open_table(tables::committed(*table))?;
            let mut out = Vec::with_capacity(of_table.len());
            let mut hashes: Vec<[u8; 32]> = Vec::new();
            for &bucket in of_table {
                hashes.clear();
                for row in tables::bucket_rows(&rows, bucket)? {
                    hashes.push(*tables::split_row(row?.1.value())?.0);
                }
                let root = (!hashes.is_empty()).then(|| merkle_root(&hashes));
                out.push((*table, bucket, root));
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    Ok(rehashed.into_iter().flatten().collect())
}

/// Appends a validated state record to the chain and records its roots and sequence in
/// meta.
fn append_record(txn: &redb::WriteTransaction, record: &StateRecord) -> Result<()> {
    record.validate()?;
    let mut chain = txn.open_table(tables::STATE_CHAIN)?;
    let key = tables::state_key(record.sequence);
    assert!(
        chain.get(&key[..])?.is_none(),
        "state record {} is appended once",
        record.sequence
    );
    chain.insert(&key[..], record.encode().as_slice())?;
    let mut meta_t = txn.open_table(tables::META)?;
    meta_t.insert(
        meta::TABLE_ROOTS.as_bytes(),
        encode_roots(&record.table_roots).as_slice(),
    )?;
    meta_t.insert(
        meta::SEQUENCE.as_bytes(),
        &record.sequence.to_le_bytes()[..],
    )?;
    Ok(())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn touched_buckets_come_back_once_each_in_table_then_bucket_order() {
        use cfs_core::Table;
        let mut touched = super::Touched::default();
        assert!(touched.is_empty());
        let marks = [
            (Table::Edges, 1023),
            (Table::Paths, 64),
            (Table::Chunks, 0),
            (Table::Paths, 63),
            (Table::Edges, 1023),
            (Table::Chunks, 700),
        ];
        for (table, bucket) in marks {
            touched.insert(table, bucket);
        }
        let mut expected: Vec<(Table, u16)> = marks.to_vec();
        expected.sort();
        expected.dedup();
        assert_eq!(touched.iter().collect::<Vec<_>>(), expected);
        assert_eq!(touched.len(), expected.len());
    }

    #[test]
    fn rows_spill_beside_the_store_file_even_for_a_bare_file_name() {
        assert_eq!(super::spill_dir(Path::new("store.redb")), Path::new("."));
        assert_eq!(
            super::spill_dir(Path::new("a/.cfs/store.redb")),
            Path::new("a/.cfs")
        );
        assert_eq!(super::spill_dir(Path::new("/s.redb")), Path::new("/"));
    }
}
