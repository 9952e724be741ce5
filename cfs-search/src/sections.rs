//! The sections of an index or delta file, encoded: written in order through a
//! [`SectionSink`] (each hashed as it goes, the large ones in parts), by `index_file::save`
//! from a snapshot and by `build::build_file` from the store (`docs/format.md`, "The
//! index file").

use std::collections::HashMap;
use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;

use borsh::BorshSerialize;
use cfs_core::{ChunkId, DocumentId, PathEntry};

use super::codes;
use super::format::{ALIGN, BucketBits, KINDS, NO_PLACE, NO_STRING, RECORD_BYTES, Section};
use super::mapped::symbol_field;
use super::mapped_docs::CachedDoc;
use super::meta::{ChunkMeta, DocInfo, Posting};
use super::segment::Vectors;
use cfs_store::{Result, StoreError};

/// Where the sections go: each written in parts, hashed as it goes, then ended.
pub(crate) trait SectionSink {
    /// Appends `bytes` to the section being written (starting one if none is).
    fn part(&mut self, bytes: &[u8]) -> Result<()>;
    /// Ends the section being written (an empty one if none is).
    fn end(&mut self) -> Result<()>;
    /// One whole section.
    fn whole(&mut self, bytes: &[u8]) -> Result<()> {
        self.part(bytes)?;
        self.end()
    }
    /// A section of `len` bytes with BLAKE3 hash `hash` that was written in place
    /// already (at the next multiple of [`ALIGN`]): passed over.
    fn written(&mut self, len: usize, hash: [u8; 32]) -> Result<()>;
}

/// The sections written into the index file after the header's place: each starts at
/// a multiple of [`ALIGN`], and its place, length and BLAKE3 hash go into `table`.
pub(crate) struct FileSections<'a, W> {
    pub f: &'a mut W,
    pub io: &'a dyn Fn(std::io::Error) -> StoreError,
    /// Bytes of the file so far.
    pub at: usize,
    /// The section being written: its offset and its hash so far.
    pub open: Option<(usize, blake3::Hasher)>,
    pub table: Vec<Section>,
}

impl<W: Write + Seek> FileSections<'_, W> {
    fn start(&mut self) -> Result<(usize, blake3::Hasher)> {
        let pad = self.at.next_multiple_of(ALIGN) - self.at;
        self.f.write_all(&[0u8; ALIGN][..pad]).map_err(self.io)?;
        self.at += pad;
        Ok((self.at, blake3::Hasher::new()))
    }
}

impl<W: Write + Seek> SectionSink for FileSections<'_, W> {
    fn part(&mut self, bytes: &[u8]) -> Result<()> {
        let (start, mut hasher) = match self.open.take() {
            Some(open) => open,
            None => self.start()?,
        };
        self.f.write_all(bytes).map_err(self.io)?;
        hasher.update(bytes);
        self.at += bytes.len();
        self.open = Some((start, hasher));
        Ok(())
    }

    fn end(&mut self) -> Result<()> {
        let (start, hasher) = match self.open.take() {
            Some(open) => open,
            None => self.start()?,
        };
        self.table.push(Section {
            offset: start as u64,
            len: (self.at - start) as u64,
            hash: *hasher.finalize().as_bytes(),
        });
        Ok(())
    }

    fn written(&mut self, len: usize, hash: [u8; 32]) -> Result<()> {
        let (start, _) = self.start()?;
        self.f
            .seek(SeekFrom::Current(len as i64))
            .map_err(self.io)?;
        self.at += len;
        self.table.push(Section {
            offset: start as u64,
            len: len as u64,
            hash,
        });
        Ok(())
    }
}

/// Bytes a large section is written in at once.
pub(crate) const PART_BYTES: usize = 1 << 20;

/// The borsh encodings of `items` one after another, and their u64 end offsets.
pub(crate) fn blobs<T: BorshSerialize>(
    items: impl Iterator<Item = T>,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let (mut bytes, mut ends) = (Vec::new(), Vec::new());
    for item in items {
        item.serialize(&mut bytes).map_err(internal)?;
        ends.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    }
    Ok((bytes, ends))
}

/// The sign code of every vector, as one section in parts: [`codes::code_words`] u64
/// words each, bit `j % 64` of word `j / 64` set when component `j` is above 0.
pub(crate) fn sign_codes(vectors: &Vectors, out: &mut dyn SectionSink) -> Result<()> {
    stream(0..vectors.norms2.len(), out, |i, part| {
        part.extend(le(&codes::sign_code(vectors.get(i)), u64::to_le_bytes))
    })
}

/// One section of a value per item, each appended to the part being filled by `bytes`,
/// given to `out` in parts of about [`PART_BYTES`].
pub(crate) fn stream<T>(
    items: impl IntoIterator<Item = T>,
    out: &mut dyn SectionSink,
    bytes: impl Fn(T, &mut Vec<u8>),
) -> Result<()> {
    let mut part = Vec::with_capacity(PART_BYTES + 4096);
    for item in items {
        bytes(item, &mut part);
        if part.len() >= PART_BYTES {
            out.part(&part)?;
            part.clear();
        }
    }
    out.part(&part)?;
    out.end()
}

/// Little-endian bytes of `values`.
pub(crate) fn le<T: Copy, const N: usize>(values: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * N);
    for &v in values {
        out.extend_from_slice(&f(v));
    }
    out
}

/// A list of strings as u64 end offsets and their bytes; `add` keeps one copy of each.
#[derive(Default)]
pub(crate) struct StringList {
    ends: Vec<u8>,
    bytes: Vec<u8>,
    index: HashMap<Box<str>, u32>,
}

impl StringList {
    pub fn add(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.index.len() as u32;
        self.push(s);
        self.index.insert(s.into(), i);
        i
    }

    pub fn push(&mut self, s: &str) {
        self.bytes.extend_from_slice(s.as_bytes());
        self.ends
            .extend_from_slice(&(self.bytes.len() as u64).to_le_bytes());
    }

    pub fn finish(self) -> (Vec<u8>, Vec<u8>) {
        (self.ends, self.bytes)
    }
}

/// The chunk columns before the vectors (ids, records, token counts, norms, missing
/// bits), built chunk by chunk in id order, with the strings the records name.
pub(crate) struct ChunkColumns {
    ids: Vec<u8>,
    records: Vec<u8>,
    lens: Vec<u32>,
    norms: Vec<u64>,
    missing: Vec<u64>,
    n: usize,
    pub total_len: u64,
    pub strings: StringList,
}

impl ChunkColumns {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            ids: Vec::with_capacity(n * 16),
            records: Vec::with_capacity(n * RECORD_BYTES),
            lens: Vec::with_capacity(n),
            norms: Vec::with_capacity(n),
            missing: vec![0; n.div_ceil(64)],
            n: 0,
            total_len: 0,
            strings: StringList::default(),
        }
    }

    /// Appends a chunk: its metadata, its document's ordinal, its token count, its
    /// vector's squared norm and whether it has no embedding yet.
    pub fn push(&mut self, m: &ChunkMeta, doc: u32, len: u32, norm2: u64, missing: bool) {
        self.ids.extend_from_slice(&m.id.0);
        let strings = &mut self.strings;
        let mut string = |s: &Option<Box<str>>| s.as_deref().map_or(NO_STRING, |s| strings.add(s));
        let kind = KINDS.iter().position(|k| *k == m.kind).unwrap_or(0) as u32;
        let fields = [
            doc,
            m.sequence,
            m.byte_offset as u32,
            (m.byte_offset >> 32) as u32,
            m.byte_length,
            m.start_line,
            m.end_line,
            kind,
            string(&m.language),
            string(&m.symbol),
            string(&m.heading),
            symbol_field(m),
        ];
        self.records
            .extend(fields.iter().flat_map(|f| f.to_le_bytes()));
        self.lens.push(len);
        self.total_len += u64::from(len);
        self.norms.push(norm2);
        if self.missing.len() <= self.n / 64 {
            self.missing.push(0);
        }
        self.missing[self.n / 64] |= u64::from(missing) << (self.n % 64);
        self.n += 1;
    }

    /// Chunks so far.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Gives the five sections to `out`, and returns the strings the records name.
    pub fn write(self, out: &mut dyn SectionSink) -> Result<StringList> {
        out.whole(&self.ids)?;
        out.whole(&self.records)?;
        out.whole(&le(&self.lens, u32::to_le_bytes))?;
        out.whole(&le(&self.norms, u64::to_le_bytes))?;
        out.whole(&le(&self.missing[..self.n.div_ceil(64)], u64::to_le_bytes))?;
        Ok(self.strings)
    }
}

/// The document and path sections: documents in id order with their chunk lists and
/// each listed chunk's place among `chunk_ids` (the file's chunks, ascending;
/// [`NO_PLACE`] for one the file does not hold), paths in id order; the ordinal of
/// every document.
pub(crate) fn doc_sections(
    docs: &[&Arc<DocInfo>],
    paths: &[(&[u8; 16], &PathEntry)],
    chunk_ids: &[ChunkId],
    out: &mut dyn SectionSink,
) -> Result<HashMap<DocumentId, u32>> {
    let (doc_blobs, doc_ends) = blobs(docs.iter().map(|d| cached_doc(d)))?;
    out.whole(&doc_blobs)?;
    out.whole(&doc_ends)?;
    out.whole(&docs.iter().flat_map(|d| d.id.0).collect::<Vec<u8>>())?;
    let mut doc_chunk_ends = Vec::with_capacity(docs.len() * 8);
    let mut doc_chunks = Vec::new();
    let mut doc_places = Vec::new();
    for d in docs {
        doc_chunks.extend(d.chunks.iter().flat_map(|c| c.0));
        doc_chunk_ends.extend_from_slice(&(doc_chunks.len() as u64 / 16).to_le_bytes());
        let place = |c: &ChunkId| chunk_ids.binary_search(c).map_or(NO_PLACE, |i| i as u32);
        doc_places.extend(d.chunks.iter().flat_map(|c| place(c).to_le_bytes()));
    }
    out.whole(&doc_chunk_ends)?;
    out.whole(&doc_chunks)?;
    out.whole(&doc_places)?;
    let (path_blobs, path_ends) = blobs(paths.iter().map(|(_, p)| *p))?;
    out.whole(&path_blobs)?;
    out.whole(&path_ends)?;
    out.whole(&paths.iter().flat_map(|(k, _)| **k).collect::<Vec<u8>>())?;
    Ok(docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id, i as u32))
        .collect())
}

/// The sections after the postings: the strings the records name, a delta's dead
/// positions and moved buckets (empty and zero in an index file).
pub(crate) fn tail_sections(
    strings: StringList,
    dead: &[u32],
    (doc_buckets, path_buckets): (&BucketBits, &BucketBits),
    out: &mut dyn SectionSink,
) -> Result<()> {
    let (string_ends, string_bytes) = strings.finish();
    out.whole(&string_ends)?;
    out.whole(&string_bytes)?;
    out.whole(&le(dead, u32::to_le_bytes))?;
    out.whole(&le(doc_buckets, u64::to_le_bytes))?;
    out.whole(&le(path_buckets, u64::to_le_bytes))
}

/// The term list (sorted) and the postings in its order, given to `out` as term ends,
/// term bytes, posting ends, and postings (in parts).
pub(crate) fn terms(
    postings: &HashMap<Box<str>, Vec<Posting>>,
    out: &mut dyn SectionSink,
) -> Result<()> {
    let mut sorted: Vec<(&str, &Vec<Posting>)> = postings.iter().map(|(t, l)| (&**t, l)).collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut list = StringList::default();
    let mut ends = Vec::with_capacity(sorted.len() * 8);
    let mut count = 0u64;
    for (term, l) in &sorted {
        list.push(term);
        count += l.len() as u64;
        ends.extend_from_slice(&count.to_le_bytes());
    }
    let (term_ends, term_bytes) = list.finish();
    out.whole(&term_ends)?;
    out.whole(&term_bytes)?;
    out.whole(&ends)?;
    let mut part: Vec<u8> = Vec::with_capacity(PART_BYTES);
    for (_, l) in sorted {
        part.extend(
            l.iter()
                .flat_map(|p| p.iter().flat_map(|v| v.to_le_bytes())),
        );
        if part.len() >= PART_BYTES {
            out.part(&part)?;
            part.clear();
        }
    }
    out.part(&part)?;
    out.end()
}

pub(crate) fn internal(e: std::io::Error) -> StoreError {
    StoreError::Internal(format!("encoding the index file: {e}"))
}

pub(crate) fn cached_doc(d: &DocInfo) -> CachedDoc {
    CachedDoc {
        mime_type: d.mime_type.to_string(),
        markers: d.markers.bits(),
        role: d.role.place() as u8,
        paths: d
            .paths
            .iter()
            .map(|p| {
                (
                    p.path.to_string(),
                    p.collections.iter().map(|c| c.to_string()).collect(),
                )
            })
            .collect(),
    }
}
