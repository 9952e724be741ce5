//! A segment read in place: the columns of an index file mapped into memory
//! (`docs/format.md`, "The index file"). A query reads the pages of the postings,
//! vectors and records it touches, from the page cache every process shares.
//!
//! Every section's place and length were checked when the file was opened
//! (`index_file::load`), so a column is a plain cast of its bytes. What lies inside a
//! section (an offset, an ordinal, a string) is checked where it is read: a damaged
//! byte gives a missing answer, never a panic or a read outside the file. The BLAKE3
//! hash of each section is recorded when the file is written and checked by
//! `verify_file`.

use std::ops::Range;
use std::sync::Arc;

use cfs_core::{ChunkId, SymbolKind};
use memmap2::Mmap;

use super::format::{KINDS, NO_STRING, RECORD_BYTES};
use super::in_place::{Plain, cast, span};
use super::mapped_docs::MappedDocs;
use super::meta::{ChunkMeta, DocInfo, MetaView, Posting};

/// A record's last field: the symbol's kind plus one (0: none) in bits 0-7, where its
/// name starts in the symbol string in bits 8-23, bit 24 set for a later window.
pub(crate) fn symbol_field(meta: &ChunkMeta) -> u32 {
    let kind = meta.symbol_kind.map_or(0, |k| k as u32 + 1);
    kind | u32::from(meta.name_start) << 8 | u32::from(meta.continued) << 24
}

/// The symbol kind of a record's last field (`None` for 0 or a value no kind has).
fn symbol_kind_of(field: u32) -> Option<SymbolKind> {
    let tag = (field & 0xff).checked_sub(1)?;
    SymbolKind::ALL.get(tag as usize).copied()
}

/// The sections a mapped segment reads, as byte ranges of the map.
#[derive(Clone, Debug)]
pub(crate) struct Columns {
    pub ids: Range<usize>,
    pub records: Range<usize>,
    pub lens: Range<usize>,
    pub norms: Range<usize>,
    pub missing: Range<usize>,
    pub vectors: Range<usize>,
    pub codes: Range<usize>,
    pub term_ends: Range<usize>,
    pub term_bytes: Range<usize>,
    pub posting_ends: Range<usize>,
    pub postings: Range<usize>,
    pub string_ends: Range<usize>,
    pub string_bytes: Range<usize>,
}

/// One segment over a mapped index file.
pub(crate) struct Mapped {
    map: Arc<Mmap>,
    cols: Columns,
    n: usize,
    dim: usize,
    total_len: u64,
    /// The documents, by the ordinal the records name.
    docs: Arc<MappedDocs>,
}

impl Mapped {
    /// Whether the segment reads `map` (the file a document's chunk places point into).
    pub fn reads(&self, map: &Arc<Mmap>) -> bool {
        Arc::ptr_eq(&self.map, map)
    }

    /// A segment over `map` whose columns `cols` the caller has checked: each inside
    /// the map, aligned, and of the length `n` chunks of `dim` need.
    pub fn new(
        map: Arc<Mmap>,
        cols: Columns,
        (n, dim, total_len): (usize, usize, u64),
        docs: Arc<MappedDocs>,
    ) -> Self {
        Self {
            map,
            cols,
            n,
            dim,
            total_len,
            docs,
        }
    }

    fn bytes(&self, r: &Range<usize>) -> &[u8] {
        self.map.get(r.clone()).unwrap_or_default()
    }

    fn col<T: Plain>(&self, r: &Range<usize>) -> &[T] {
        cast(self.bytes(r)).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn total_len(&self) -> u64 {
        self.total_len
    }

    /// Bytes of the mapped file.
    pub fn file_bytes(&self) -> usize {
        self.map.len()
    }

    /// The sign codes of all vectors, [`super::codes::code_words`] words each, in local order.
    pub fn codes(&self) -> &[u64] {
        self.col::<u64>(&self.cols.codes)
    }

    /// The missing-vector bits, a u64 word per 64 chunks.
    pub fn missing_words(&self) -> &[u64] {
        self.col::<u64>(&self.cols.missing)
    }

    pub fn id(&self, i: usize) -> ChunkId {
        ChunkId(
            self.col::<[u8; 16]>(&self.cols.ids)
                .get(i)
                .copied()
                .unwrap_or_default(),
        )
    }

    pub fn token_len(&self, i: usize) -> u32 {
        self.col::<u32>(&self.cols.lens)
            .get(i)
            .copied()
            .unwrap_or(0)
    }

    pub fn norm2(&self, i: usize) -> u64 {
        self.col::<u64>(&self.cols.norms)
            .get(i)
            .copied()
            .unwrap_or(0)
    }

    pub fn has_vector(&self, i: usize) -> bool {
        let words = self.missing_words();
        words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 0)
    }

    pub fn vector(&self, i: usize) -> &[i16] {
        let data = self.col::<i16>(&self.cols.vectors);
        data.get(i * self.dim..(i + 1) * self.dim)
            .unwrap_or_default()
    }

    /// Entry `i` of a string list (`ends` of u64 end offsets into `bytes`).
    fn string(&self, ends: &Range<usize>, bytes: &Range<usize>, i: usize) -> Option<&str> {
        let b = self.bytes(bytes).get(span(self.col::<u64>(ends), i)?)?;
        std::str::from_utf8(b).ok()
    }

    fn term(&self, t: usize) -> Option<&str> {
        self.string(&self.cols.term_ends, &self.cols.term_bytes, t)
    }

    fn n_terms(&self) -> usize {
        self.col::<u64>(&self.cols.term_ends).len()
    }

    fn postings_of(&self, t: usize) -> &[Posting] {
        span(self.col::<u64>(&self.cols.posting_ends), t)
            .and_then(|r| self.col::<Posting>(&self.cols.postings).get(r))
            .unwrap_or_default()
    }

    /// The postings of `term` (binary search of the sorted term list).
    pub fn postings(&self, term: &str) -> Option<&[Posting]> {
        let (mut lo, mut hi) = (0, self.n_terms());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.term(mid).unwrap_or("").cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.postings_of(mid)),
            }
        }
        None
    }

    pub fn for_each_term(&self, mut f: impl FnMut(&str, &[Posting])) {
        for t in 0..self.n_terms() {
            if let Some(term) = self.term(t) {
                f(term, self.postings_of(t));
            }
        }
    }

    fn u32_at(rec: &[u8], at: usize) -> u32 {
        rec.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    }

    /// String `r` of the string column (`None` for [`NO_STRING`]).
    fn string_at(&self, r: u32) -> Option<&str> {
        match r {
            NO_STRING => None,
            r => self.string(&self.cols.string_ends, &self.cols.string_bytes, r as usize),
        }
    }

    /// `f` of chunk `i`'s [`MetaView`]: the fields that filters and the definition list
    /// read, borrowed from its record, its document's decoded info and the string
    /// column (its metadata is not built).
    pub fn with_view<R>(&self, i: usize, f: impl FnOnce(&MetaView<'_>) -> R) -> Option<R> {
        let rec = self.record(i)?;
        let doc = self.doc_at(rec)?;
        Some(f(&self.view_of(rec, &doc)))
    }

    /// The view of the chunk whose record is `rec`, of the document `doc` it names.
    fn view_of<'a>(&'a self, rec: &[u8], doc: &'a DocInfo) -> MetaView<'a> {
        let at = |o| Self::u32_at(rec, o);
        MetaView {
            doc,
            kind: KINDS.get(at(28) as usize).copied().unwrap_or("text"),
            language: self.string_at(at(32)),
            symbol: self.string_at(at(36)),
            symbol_kind: symbol_kind_of(at(44)),
            name_start: (at(44) >> 8) as u16,
        }
    }

    /// The document that the record `rec` names.
    fn doc_at(&self, rec: &[u8]) -> Option<Arc<DocInfo>> {
        self.docs.doc(Self::u32_at(rec, 0) as usize)
    }

    fn record(&self, i: usize) -> Option<&[u8]> {
        let records = self.bytes(&self.cols.records);
        records.get(i * RECORD_BYTES..(i + 1) * RECORD_BYTES)
    }

    /// The metadata of chunk `i`, from its record: its view ([`Mapped::with_view`])
    /// owned, and the rest of the record.
    pub fn meta(&self, i: usize) -> Option<ChunkMeta> {
        let rec = self.record(i)?;
        let at = |o| Self::u32_at(rec, o);
        let doc = self.doc_at(rec)?;
        let view = self.view_of(rec, &doc);
        let (kind, symbol_kind, name_start) = (view.kind, view.symbol_kind, view.name_start);
        let (language, symbol) = (view.language.map(Box::from), view.symbol.map(Box::from));
        Some(ChunkMeta {
            id: self.id(i),
            doc,
            sequence: at(4),
            byte_offset: u64::from(at(8)) | u64::from(at(12)) << 32,
            byte_length: at(16),
            start_line: at(20),
            end_line: at(24),
            kind,
            language,
            symbol,
            heading: self.string_at(at(40)).map(Box::from),
            symbol_kind,
            name_start,
            continued: at(44) >> 24 & 1 != 0,
        })
    }
}
