//! A part's parse with its write beside it: each parsed file's document is written
//! once it and every file planned before it are parsed, by whichever core finishes a
//! file and finds the writer free.
//!
//! Written after the whole part, the write ran on one core while the others waited (the
//! TypeScript tree is one part: 11-12 ms of a 165 ms cold index), and a part's parsed
//! files were all held until then. Here a parse task that finishes a file, finds a
//! quarter of the part ready in order and the writer free writes what is ready, then
//! goes back to parsing; a task that finds it busy leaves its file to the writer's next
//! round or to the round after the parse. The writer never blocks a core: a busy writer
//! is skipped, and its own parallel steps (rows, embeddings) run in the same pool.
//!
//! A parse the writer is done with goes back to the pool thread that made it, which
//! frees it before its next file. Freed by the writer, the memory of a file parsed on
//! the other core went back to that core's heap through its lock, while that core was
//! allocating for its next parse: the TypeScript tree's cold index took 2.6-2.9% longer
//! (155.7 -> 151.2 ms over 40 alternating rounds; docs/bench-log/02-store-cold-index.md).
//!
//! Files are written in the plan's order (largest first), so the chunk log's layout
//! depends on the files alone, not on the timing, and they are handed to the cores in
//! that same order, one at a time from a shared counter: the last files parsed are the
//! smallest, and the write after the parse is short. (Split by rayon, the order was
//! each core's half of the list: a mid-sized file parsed last held back every file
//! after it, and the other core waited 6-12 ms while they were written.) A round of
//! writing has a fixed cost (tables opened, a parallel row build joined) and takes the
//! parser's data out of the caches: written a file at a time the TypeScript tree's
//! cold index took 4 ms longer, a quarter of the part at a time 4 ms less than before
//! (docs/bench-log/02-store-cold-index.md, "The parse in the plan's order"). A part's parsed files are
//! still freed soon after they are written, by their parser's next file (the 110 MB
//! tree with vectors inline peaked at 474 MB instead of 544 when the write came after
//! the part), and the Python library's cold index is 15-31 ms shorter than with the
//! write after the part.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use cfs_core::TextHash;
use cfs_ingest::{
    IngestConfig, IngestError, Parsed, embedding_text, parse_file, parse_file_hashed,
};
use rayon::prelude::*;

use super::SyncRun;
use super::batch::{Bindings, Bound, EmbeddingText, FileTexts, Plan, Read, Results, slices};
use crate::error::{Result, StoreError};
use crate::write::WriteTxn;

/// The writer is called when this share of a part (a quarter) is parsed in order.
const WRITE_ROUNDS: usize = 4;

/// A parsed file: its place in the batch, its parse, its chunks' embedding texts, and
/// the pool thread that parsed it.
type ParsedFile = (
    usize,
    std::result::Result<Parsed, IngestError>,
    Vec<EmbeddingText>,
    usize,
);

/// Per pool thread, the parses it made that the writer is done with: the thread frees
/// them itself, before its next file (see the module).
type Returned = Vec<Mutex<Vec<std::result::Result<Parsed, IngestError>>>>;

/// Frees what the writer returned to the calling pool thread.
fn free_returned(returned: &Returned) {
    if let Some(mine) = rayon::current_thread_index().and_then(|t| returned.get(t)) {
        let parses = std::mem::take(&mut *lock(mine));
        drop(parses);
    }
}

/// Files parsed and not yet written, by their place in the plan's order.
#[derive(Default)]
struct Ready {
    files: BTreeMap<usize, ParsedFile>,
    /// The place of the next file to write.
    next: usize,
}

impl Ready {
    /// Whether the `n` files from `next` on are all parsed.
    fn has_run_of(&self, n: usize) -> bool {
        self.files.range(self.next..self.next + n).count() == n
    }

    /// The parsed files from `next` on with no gap, in order.
    fn take(&mut self) -> Vec<ParsedFile> {
        let mut out = Vec::new();
        while let Some(file) = self.files.remove(&self.next) {
            out.push(file);
            self.next += 1;
        }
        out
    }
}

/// The writer's state: the sync, its transaction, the files bound, the first failure.
struct Writer<'w, 'a, 't> {
    run: &'w mut SyncRun<'a>,
    txn: &'w mut WriteTxn<'t>,
    reads: &'w [Read],
    returned: &'w Returned,
    bound: Bound,
    failed: Option<StoreError>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock propagates out of the parse; what is left is read
    // only to be dropped.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Writer<'_, '_, '_> {
    /// Writes what is ready until nothing is (after a failure, drops it unwritten).
    fn drain(&mut self, ready: &Mutex<Ready>) {
        loop {
            let files = lock(ready).take();
            if files.is_empty() {
                return;
            }
            if self.failed.is_some() {
                continue;
            }
            if let Err(e) = self.write(files) {
                self.failed = Some(e);
            }
        }
    }

    /// Writes the documents of `files`, in slices bounded by the memory budget, binds
    /// their paths, and returns each parse to the thread that made it.
    fn write(&mut self, files: Vec<ParsedFile>) -> Result<()> {
        self.run.report.parsed += files.len();
        let mut results = Results::new();
        let mut texts: Vec<FileTexts> = Vec::new();
        let mut owners = BTreeMap::new();
        for (i, parsed, file_texts, owner) in files {
            if parsed.is_ok() {
                texts.push((i, file_texts));
            }
            results.insert(i, parsed);
            owners.insert(i, owner);
        }
        let most = self.run.slice_chunks();
        for slice in slices(&texts, most) {
            self.run
                .write_documents(self.txn, self.reads, &results, slice)?;
        }
        self.bind(&results)?;
        for (i, parsed) in results {
            if let Some(theirs) = owners.get(&i).and_then(|&t| self.returned.get(t)) {
                lock(theirs).push(parsed);
            }
        }
        Ok(())
    }

    /// Binds the paths of the files whose documents were just written (or records why
    /// they have none): done here, beside the parse, rather than in the serial tail
    /// before the commit.
    fn bind(&mut self, results: &Results) -> Result<()> {
        let mut bindings = Bindings::default();
        for (&i, parsed) in results {
            let outcome = parsed.as_ref().map(|p| p.document.id);
            let outcome = outcome.map_err(ToString::to_string);
            self.run
                .bind_one(self.txn, &self.reads[i], outcome, &mut bindings)?;
            self.bound.insert(i);
        }
        bindings.write(self.txn)
    }
}

impl SyncRun<'_> {
    /// Parses the files `plan` names (one file at a time on every core, in the plan's
    /// order: largest first) and writes their documents beside the parse (see the
    /// module), binding each parsed file's path as its document is written; returns
    /// the files bound.
    pub(super) fn parse_and_write(
        &mut self,
        txn: &mut WriteTxn<'_>,
        reads: &[Read],
        plan: &Plan,
    ) -> Result<Bound> {
        let config = &self.options.config;
        let texts_wanted = self.texts_wanted;
        let ready = Mutex::new(Ready::default());
        let returned: Returned = (0..rayon::current_num_threads())
            .map(|_| Mutex::default())
            .collect();
        let writer = Mutex::new(Writer {
            run: self,
            txn,
            reads,
            returned: &returned,
            bound: Bound::new(),
            failed: None,
        });
        let count = plan.to_parse.len();
        let round = count.div_ceil(WRITE_ROUNDS).max(1);
        let claimed = AtomicUsize::new(0);
        let cores = rayon::current_num_threads().min(count);
        (0..cores).into_par_iter().with_max_len(1).for_each(|_| {
            // Each core takes the next file of the plan until none is left. (A core
            // waiting inside the writer's own parallel steps may take up a loop not yet
            // begun and run it there, the writer held: its files then wait for the
            // round after the parse, still written in order.)
            loop {
                let place = claimed.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = plan.to_parse.get(place) else {
                    break;
                };
                free_returned(&returned);
                let file = parse_one(reads, i, config, texts_wanted);
                let due = {
                    let mut ready = lock(&ready);
                    ready.files.insert(place, file);
                    ready.has_run_of(round)
                };
                if due && let Ok(mut writer) = writer.try_lock() {
                    writer.drain(&ready);
                }
            }
            free_returned(&returned);
        });
        let mut writer = writer.into_inner().unwrap_or_else(|e| e.into_inner());
        writer.drain(&ready);
        debug_assert!(lock(&ready).files.is_empty(), "every parsed file written");
        match writer.failed {
            Some(e) => Err(e),
            None => Ok(writer.bound),
        }
    }
}

/// Parses file `i` of the batch and, if `texts_wanted`, the texts its chunks are
/// embedded from (else each chunk's own text stands for it, unread).
fn parse_one(reads: &[Read], i: usize, config: &IngestConfig, texts_wanted: bool) -> ParsedFile {
    let path = &reads[i].entry.rel_path;
    let parsed = match &reads[i].result {
        Ok((bytes, hash)) => parse_file_hashed(path, bytes, *hash, config),
        Err(_) => parse_file(path, &[], config),
    };
    let texts = match &parsed {
        Ok(parsed) => parsed
            .chunks
            .iter()
            .map(|chunk| match texts_wanted.then(|| embedding_text(chunk)) {
                // Most chunks are embedded from their own text, hashed already.
                None | Some(std::borrow::Cow::Borrowed(_)) => (chunk.text_hash, None),
                Some(std::borrow::Cow::Owned(owned)) => (TextHash::of(&owned), Some(owned)),
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    (i, parsed, texts, rayon::current_thread_index().unwrap_or(0))
}
