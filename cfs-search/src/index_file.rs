//! The runtime index as a file beside the store, opened in place so that a process
//! need not rebuild or load it (`docs/format.md`, "The index file").
//!
//! Layout: a 32-byte prefix (`CFSINDEX`, format, file length, header length), the
//! borsh header (the snapshot's stamp: model, state root, sequence, table roots, the
//! bucket roots of the chunks and paths tables; counts; the section table with each
//! section's place and BLAKE3 hash), the hash of prefix and header, then the sections
//! at 64-byte boundaries: documents and paths (id columns, end offsets and borsh
//! blobs, decoded on first use through [`MappedDocs`] and [`MappedPaths`]), then the
//! chunk columns (ids, records, token counts, norms, missing-vector bits, vectors,
//! sign codes, terms, postings, strings), which a query reads in place through
//! [`Mapped`].
//!
//! A file is used only when its length and header hash check, its format and model
//! are this build's, its sections lie where its columns need them, its bucket roots
//! compose to its table roots and state root, and that state is the one the store's
//! chain records at that sequence. Anything else is torn or foreign and is rebuilt from
//! the store, never trusted. A valid file of an earlier commit is brought forward by
//! the diff of bucket roots, like any snapshot. The chunk sections' hashes are recorded
//! when the file is written and checked by [`verify_file`], not at every open.

use std::io::{Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_core::{
    ChunkId, MerkleRoot, ModelHash, N_BUCKETS, PathEntry, StateRoot, Table, TableRoots, TopTree,
};

use super::buckets::BucketMap;
use super::codes;
use super::delta::{self, Overlay};
use super::format::{
    ALIGN, BucketBits, Counts, INDEX_FILE_FORMAT, NO_PLACE, RECORD_BYTES, RULES_VERSION, Section,
    delta_path,
};
use super::in_place;
use super::mapped::{Columns, Mapped};
use super::mapped_docs::{BlobList, MappedDocs, MappedPaths};
use super::merged;
use super::meta::DocInfo;
use super::sections::{
    self, ChunkColumns, FileSections, PART_BYTES, SectionSink, doc_sections, le, sign_codes,
    tail_sections, terms,
};
use super::segment::{Live, Segment};
use super::snapshot::{FileBase, Snapshot};
use cfs_store::ReadTxn;
use cfs_store::{Result, StoreError};

const MAGIC: &[u8; 8] = b"CFSINDEX";
/// Bytes before the header: magic, format, reserved, file length, header length.
const PREFIX: usize = 32;

/// The sections, in file order (`docs/format.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Docs,
    DocEnds,
    DocIds,
    DocChunkEnds,
    DocChunks,
    DocPlaces,
    Paths,
    PathEnds,
    PathIds,
    Ids,
    Records,
    Lens,
    Norms,
    Missing,
    Vectors,
    Codes,
    TermEnds,
    TermBytes,
    PostingEnds,
    Postings,
    StringEnds,
    StringBytes,
    Dead,
    DocBuckets,
    PathBuckets,
}

const PARTS: [Part; 25] = [
    Part::Docs,
    Part::DocEnds,
    Part::DocIds,
    Part::DocChunkEnds,
    Part::DocChunks,
    Part::DocPlaces,
    Part::Paths,
    Part::PathEnds,
    Part::PathIds,
    Part::Ids,
    Part::Records,
    Part::Lens,
    Part::Norms,
    Part::Missing,
    Part::Vectors,
    Part::Codes,
    Part::TermEnds,
    Part::TermBytes,
    Part::PostingEnds,
    Part::Postings,
    Part::StringEnds,
    Part::StringBytes,
    Part::Dead,
    Part::DocBuckets,
    Part::PathBuckets,
];

#[derive(BorshSerialize, BorshDeserialize)]
struct Header {
    model: ModelHash,
    dim: u32,
    root: StateRoot,
    sequence: u64,
    table_roots: TableRoots,
    chunk_roots: Vec<MerkleRoot>,
    path_roots: Vec<MerkleRoot>,
    n_chunks: u64,
    total_len: u64,
    /// Zero for an index file; for a delta file, the hash that ends its base file's
    /// header.
    base: [u8; 32],
    sections: Vec<Section>,
}

/// What opening from an index file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexFileStatus {
    /// The files hold the store's current state.
    Current,
    /// The files held an earlier committed state; it was brought forward by the diff.
    CaughtUp {
        /// Chunks added, removed, re-pathed or given their embedding since the files'
        /// state.
        changed: usize,
        /// Chunks and tombstones the delta file held (0 without one).
        delta: usize,
        /// Whether bringing it forward merged the segments (the index file's segment
        /// with them).
        merged: bool,
    },
    /// There was no file; the index was built from the store.
    Missing,
    /// The file was unusable (the reason says why); the index was built from the store.
    Rebuilt(String),
    /// There was no usable file (`reason`: why the one there was not); it was written
    /// from the store and opened in place
    /// ([`crate::SearchIndex::open_or_build_file`]).
    Written {
        /// Why the file there was not used (`None`: there was none).
        reason: Option<String>,
    },
}

/// Changes since the files' state fewer than this are brought forward by each process
/// rather than written, while they are also under a sixteenth of the delta file.
pub const DELTA_MIN_CHANGED: usize = 1024;

impl IndexFileStatus {
    /// Whether writing the index ([`crate::SearchIndex::save_index_file`]) pays:
    /// always after a build or a merge; after a catch-up, when the change since the
    /// files is at least [`DELTA_MIN_CHANGED`] chunks or a sixteenth of the delta file
    /// it would rewrite (so that small commits after a large one do not rewrite it each
    /// time, and no process brings forward more than about a thousand chunks).
    pub fn worth_saving(&self) -> bool {
        match self {
            IndexFileStatus::Current => false,
            IndexFileStatus::CaughtUp {
                changed,
                delta,
                merged,
            } => *merged || *changed >= DELTA_MIN_CHANGED || *changed * 16 >= *delta,
            IndexFileStatus::Missing | IndexFileStatus::Rebuilt(_) => true,
            IndexFileStatus::Written { .. } => false,
        }
    }
}

/// How [`save`] wrote a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SavedAs {
    /// A whole index file (the delta file beside it removed).
    Whole,
    /// Nothing: the snapshot holds the state of the index file it was opened from (the
    /// delta file beside it removed).
    IndexFileAlone,
    /// A delta file over the index file the snapshot was opened from.
    Delta {
        /// Chunks in the delta's segment.
        chunks: usize,
        /// Base chunks it marks gone.
        dead: usize,
    },
}

/// What one file holds: a segment, the documents and paths it carries, and for a
/// delta the base's tombstones, the moved buckets and the base's hash.
struct Content<'a> {
    seg: &'a Segment,
    docs: Vec<&'a Arc<DocInfo>>,
    paths: Vec<(&'a [u8; 16], &'a PathEntry)>,
    dead: Vec<u32>,
    doc_buckets: BucketBits,
    path_buckets: BucketBits,
    base: [u8; 32],
}

/// Writes `snap` to disk: as a delta file beside `path` when it was opened from the
/// index file there and less than a quarter of it (and `merge_min` chunks) has changed
/// since, else as a whole index file at `path` (the delta beside it removed). A whole
/// file of several segments is merged as it is written (`merged.rs`), never first in
/// memory.
pub(crate) fn save(snap: &Snapshot, path: &Path, merge_min: usize) -> Result<SavedAs> {
    if let Some(base) = &snap.file {
        if base.root == snap.root {
            // Back at the index file's own state (a branch switched back): no delta.
            remove_delta(path)?;
            return Ok(SavedAs::IndexFileAlone);
        }
        let base_len = base.segment.as_ref().map_or(0, |s| s.len());
        if snap.pending_over_file() <= merge_min.max(base_len / 4) {
            return save_delta(snap, base, path);
        }
    }
    match &snap.segments[..] {
        // One segment in memory without tombstones (a first build): as it is.
        [only] if only.n_dead == 0 && only.segment.owned().is_some() => {
            let content = Content {
                seg: &only.segment,
                docs: snap.docs.values().collect(),
                paths: snap.paths.entries().collect(),
                dead: Vec::new(),
                doc_buckets: [0; N_BUCKETS / 64],
                path_buckets: [0; N_BUCKETS / 64],
                base: [0; 32],
            };
            write_file(snap, &content, path)?;
        }
        parts => {
            let docs: Vec<&Arc<DocInfo>> = snap.docs.values().collect();
            let paths: Vec<(&[u8; 16], &PathEntry)> = snap.paths.entries().collect();
            write_sections(snap, path, |out| {
                merged::merged_sections(parts, &docs, &paths, out)
            })?;
        }
    }
    // A delta of the replaced file names its hash and would be ignored; it goes (and
    // is harmless where it cannot).
    let _ = remove_delta(path);
    Ok(SavedAs::Whole)
}

/// Writes the delta of `snap` over its index file `base`.
fn save_delta(snap: &Snapshot, base: &FileBase, path: &Path) -> Result<SavedAs> {
    let parts = delta::delta_parts(snap, base);
    let saved = SavedAs::Delta {
        chunks: parts.segment.len(),
        dead: parts.dead.len(),
    };
    let content = Content {
        seg: &parts.segment,
        docs: parts.docs.iter().collect(),
        paths: parts.paths,
        dead: parts.dead,
        doc_buckets: base.doc_buckets,
        path_buckets: base.path_buckets,
        base: base.hash,
    };
    write_file(snap, &content, &delta_path(path))?;
    Ok(saved)
}

/// Removes the delta file beside the index file at `path`, if there is one.
fn remove_delta(path: &Path) -> Result<()> {
    let delta = delta_path(path);
    match std::fs::remove_file(&delta) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&delta)(e)),
        _ => Ok(()),
    }
}

/// Writes one file of `snap`'s stamp and `content` at `path`.
fn write_file(snap: &Snapshot, content: &Content<'_>, path: &Path) -> Result<()> {
    write_sections(snap, path, |out| {
        encode_sections(content, out)?;
        Ok(Counts {
            n_chunks: content.seg.len() as u64,
            total_len: content.seg.total_len,
            base: content.base,
        })
    })
}

/// Writes a file of `snap`'s stamp at `path`: the sections `encode` gives after the
/// header's place, each written and dropped in turn, then the header, which names
/// their places and hashes and the counts `encode` returns.
pub(crate) fn write_sections(
    snap: &Snapshot,
    path: &Path,
    encode: impl FnOnce(&mut FileSections<'_, Writer>) -> Result<Counts>,
) -> Result<()> {
    let io = io_error(path);
    let blank = Counts {
        n_chunks: 0,
        total_len: 0,
        base: [0; 32],
    };
    let header_len = encode_header(snap, blank, &[], 0)?.len();
    cfs_store::replace_file(path, &io, |f| {
        f.seek(SeekFrom::Start(header_len as u64)).map_err(&io)?;
        let mut out = FileSections {
            f: &mut *f,
            io: &io,
            at: header_len,
            open: None,
            table: Vec::with_capacity(PARTS.len()),
        };
        let counts = encode(&mut out)?;
        let (table, at) = (out.table, out.at);
        assert_eq!(table.len(), PARTS.len(), "index file sections missing");
        let head = encode_header(snap, counts, &table, at as u64)?;
        assert_eq!(head.len(), header_len, "index file header length moved");
        f.seek(SeekFrom::Start(0)).map_err(&io)?;
        f.write_all(&head).map_err(&io)
    })
}

/// The buffered writer of a file being written.
pub(crate) type Writer = std::io::BufWriter<std::fs::File>;

/// The bytes of every section of `content`, in file order, each given to `out` as
/// soon as it is encoded (the vectors, their codes and the postings in parts).
fn encode_sections(content: &Content<'_>, out: &mut dyn SectionSink) -> Result<()> {
    let owned = content
        .seg
        .owned()
        .ok_or_else(|| StoreError::Internal("a merged segment is in memory".into()))?;
    let ids: Vec<ChunkId> = owned.metas.iter().map(|m| m.id).collect();
    let ordinal = doc_sections(&content.docs, &content.paths, &ids, out)?;
    let vectors = &owned.vectors;
    let mut columns = ChunkColumns::with_capacity(owned.metas.len());
    for (i, m) in owned.metas.iter().enumerate() {
        let doc = ordinal.get(&m.doc.id).ok_or_else(|| {
            StoreError::Internal(format!(
                "chunk {} names a document not in its snapshot",
                m.id
            ))
        })?;
        columns.push(
            m,
            *doc,
            owned.lens[i],
            vectors.norms2[i],
            vectors.missing[i],
        );
    }
    let strings = columns.write(out)?;
    for part in vectors.data.chunks(PART_BYTES / 2) {
        out.part(&le(part, i16::to_le_bytes))?;
    }
    out.end()?;
    sign_codes(vectors, out)?;
    terms(&owned.postings, out)?;
    tail_sections(
        strings,
        &content.dead,
        (&content.doc_buckets, &content.path_buckets),
        out,
    )
}

/// The prefix, the header (the stamp and the section table) and the BLAKE3 hash of
/// both, for a file of `file_len` bytes. Its length does not depend on the sections'
/// places, lengths or hashes (fixed-width fields), so an empty table measures it.
fn encode_header(
    snap: &Snapshot,
    counts: Counts,
    sections: &[Section],
    file_len: u64,
) -> Result<Vec<u8>> {
    let blank = Section {
        offset: 0,
        len: 0,
        hash: [0; 32],
    };
    let mut table = sections.to_vec();
    table.resize(PARTS.len(), blank);
    let header = Header {
        model: snap.model,
        dim: snap.dim as u32,
        root: snap.root,
        sequence: snap.sequence,
        table_roots: snap.table_roots,
        chunk_roots: snap.chunk_roots.to_vec(),
        path_roots: snap.path_roots.to_vec(),
        n_chunks: counts.n_chunks,
        total_len: counts.total_len,
        base: counts.base,
        sections: table,
    };
    let body = borsh::to_vec(&header).map_err(sections::internal)?;
    let mut out = Vec::with_capacity(PREFIX + body.len() + 32);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&INDEX_FILE_FORMAT.to_le_bytes());
    out.extend_from_slice(&RULES_VERSION.to_le_bytes());
    out.extend_from_slice(&file_len.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    let hash = blake3::hash(&out);
    out.extend_from_slice(hash.as_bytes());
    Ok(out)
}

/// The error of an I/O failure on the index file at `path`.
fn io_error(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An index file mapped, its header and the places of its sections checked.
struct Opened {
    map: Arc<memmap2::Mmap>,
    header: Header,
    /// The hash that ends the header.
    hash: [u8; 32],
    n: usize,
    cols: Columns,
    placed: Vec<Placed>,
}

fn open(path: &Path) -> std::result::Result<Opened, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("unreadable: {e}"))?;
    let map = Arc::new(in_place::map(&file).map_err(|e| format!("cannot be mapped: {e}"))?);
    let (header, hash) = read_header(&map)?;
    let n = usize::try_from(header.n_chunks).map_err(|_| "too many chunks".to_string())?;
    let (cols, placed) = columns(&header, map.len(), n, header.dim as usize)?;
    Ok(Opened {
        map,
        header,
        hash,
        n,
        cols,
        placed,
    })
}

/// A file opened and checked against the store: its documents, paths and chunks read
/// in place, its tombstones and moved buckets (a delta's).
struct Checked {
    opened: Opened,
    docs: Arc<MappedDocs>,
    paths: Arc<MappedPaths>,
    doc_buckets: BucketBits,
    path_buckets: BucketBits,
}

impl Checked {
    fn range(&self, p: Part) -> Range<usize> {
        self.opened.placed[p as usize].0.clone()
    }

    /// The base positions a delta marks gone.
    fn dead(&self) -> &[u32] {
        in_place::cast(&self.opened.map[self.range(Part::Dead)]).unwrap_or_default()
    }

    /// The file's chunks as a segment read in place (`None` without any).
    fn segment(&self, dim: usize) -> Option<Arc<Segment>> {
        let o = &self.opened;
        (o.n > 0).then(|| {
            Arc::new(Segment::mapped(Mapped::new(
                Arc::clone(&o.map),
                o.cols.clone(),
                (o.n, dim, o.header.total_len),
                Arc::clone(&self.docs),
            )))
        })
    }
}

/// Opens the file at `path` and checks it: model, stamp against the store's chain.
fn open_checked(
    path: &Path,
    txn: &ReadTxn,
    (model, dim): (ModelHash, usize),
) -> std::result::Result<Checked, String> {
    let opened = open(path)?;
    let header = &opened.header;
    if header.model != model || header.dim as usize != dim {
        return Err("built for another embedding model".into());
    }
    check_stamp(header, txn)?;
    let range = |p: Part| opened.placed[p as usize].0.clone();
    let list = |blobs: Part, ends: Part, ids: Part| BlobList {
        map: Arc::clone(&opened.map),
        ids: range(ids),
        ends: range(ends),
        bytes: range(blobs),
    };
    let docs = Arc::new(MappedDocs::new(
        list(Part::Docs, Part::DocEnds, Part::DocIds),
        range(Part::DocChunkEnds),
        range(Part::DocChunks),
        range(Part::DocPlaces),
    ));
    let paths = Arc::new(MappedPaths(list(
        Part::Paths,
        Part::PathEnds,
        Part::PathIds,
    )));
    let bits = |p: Part| -> BucketBits {
        let words: &[u64] = in_place::cast(&opened.map[range(p)]).unwrap_or_default();
        words.try_into().unwrap_or([0; N_BUCKETS / 64])
    };
    let (doc_buckets, path_buckets) = (bits(Part::DocBuckets), bits(Part::PathBuckets));
    Ok(Checked {
        opened,
        docs,
        paths,
        doc_buckets,
        path_buckets,
    })
}

/// Opens an index file, and the delta file beside it when that is sound and of this
/// file, as a snapshot of their state, checking both against the store's chain;
/// `Err(reason)` when the index file cannot be used (a delta that cannot is ignored:
/// the snapshot is then the index file's, brought forward by the caller). Reads the
/// headers; documents, paths and chunks stay in the files and are read where
/// something needs them.
pub(crate) fn load(
    path: &Path,
    txn: &ReadTxn,
    model: ModelHash,
    dim: usize,
) -> std::result::Result<Snapshot, String> {
    let base = open_checked(path, txn, (model, dim))?;
    if base.opened.header.base != [0; 32] {
        return Err("a delta file in the index file's place".into());
    }
    let delta = open_checked(&delta_path(path), txn, (model, dim))
        .ok()
        .filter(|d| {
            d.opened.header.base == base.opened.hash
                && d.dead().iter().all(|&i| (i as usize) < base.opened.n)
        });
    Ok(compose(&base, delta.as_ref(), (model, dim)))
}

/// The snapshot of an index file with its delta laid over it.
fn compose(base: &Checked, delta: Option<&Checked>, (model, dim): (ModelHash, usize)) -> Snapshot {
    let base_segment = base.segment(dim);
    let mut segments: Vec<Live> = base_segment.iter().cloned().map(Live::new).collect();
    let mut docs: BucketMap<Arc<DocInfo>> = BucketMap::lazy(base.docs.clone());
    let mut paths: BucketMap<PathEntry> = BucketMap::lazy(base.paths.clone());
    let mut stamp = &base.opened.header;
    let mut moved = ([0; N_BUCKETS / 64], [0; N_BUCKETS / 64]);
    if let Some(d) = delta {
        if let Some(live) = segments.first_mut() {
            for &i in d.dead() {
                live.kill(i as usize);
            }
        }
        segments.retain(|l| l.n_live() > 0);
        segments.extend(d.segment(dim).map(Live::new));
        docs = BucketMap::lazy(Arc::new(Overlay::<Arc<DocInfo>> {
            base: base.docs.clone(),
            delta: d.docs.clone(),
            moved: d.doc_buckets,
        }));
        paths = BucketMap::lazy(Arc::new(Overlay::<PathEntry> {
            base: base.paths.clone(),
            delta: d.paths.clone(),
            moved: d.path_buckets,
        }));
        stamp = &d.opened.header;
        moved = (d.doc_buckets, d.path_buckets);
    }
    Snapshot {
        root: stamp.root,
        sequence: stamp.sequence,
        model,
        dim,
        table_roots: stamp.table_roots,
        chunk_roots: Arc::new(stamp.chunk_roots.clone()),
        path_roots: Arc::new(stamp.path_roots.clone()),
        paths,
        docs,
        segments,
        txn: None,
        file: Some(FileBase {
            hash: base.opened.hash,
            root: base.opened.header.root,
            segment: base_segment,
            doc_buckets: moved.0,
            path_buckets: moved.1,
        }),
    }
}

/// The header of a mapped file and the hash that ends it: magic, format, length and
/// the header's hash checked.
fn read_header(map: &[u8]) -> std::result::Result<(Header, [u8; 32]), String> {
    if map.len() < PREFIX + 32 || &map[..8] != MAGIC {
        return Err("not an index file".into());
    }
    let word = |at: usize| u64::from_le_bytes(map[at..at + 8].try_into().unwrap_or([0; 8]));
    let format = u32::from_le_bytes([map[8], map[9], map[10], map[11]]);
    if format != INDEX_FILE_FORMAT {
        return Err(format!(
            "format {format}, this build reads {INDEX_FILE_FORMAT}"
        ));
    }
    let rules = u32::from_le_bytes([map[12], map[13], map[14], map[15]]);
    if rules != RULES_VERSION {
        return Err(format!(
            "roles derived by rules {rules}, this build derives by {RULES_VERSION}"
        ));
    }
    if word(16) != map.len() as u64 {
        return Err(format!(
            "torn: {} bytes where its header says {}",
            map.len(),
            word(16)
        ));
    }
    let end = usize::try_from(word(24))
        .ok()
        .and_then(|l| l.checked_add(PREFIX))
        .filter(|&e| e.checked_add(32).is_some_and(|end| end <= map.len()))
        .ok_or("torn or altered: the header's length")?;
    let hash: [u8; 32] = map[end..end + 32].try_into().unwrap_or([0; 32]);
    if blake3::hash(&map[..end]).as_bytes() != &hash {
        return Err("torn or altered: the header's hash".into());
    }
    let header = Header::try_from_slice(&map[PREFIX..end])
        .map_err(|e| format!("header does not decode: {e}"))?;
    Ok((header, hash))
}

/// A section's byte range and hash.
type Placed = (Range<usize>, [u8; 32]);

/// Every section checked for its place (inside the file, aligned, in order) and for the
/// length `n` chunks of `dim` need: the chunk columns, and the places of all sections.
fn columns(
    header: &Header,
    file_len: usize,
    n: usize,
    dim: usize,
) -> std::result::Result<(Columns, Vec<Placed>), String> {
    if header.sections.len() != PARTS.len() {
        return Err(format!(
            "{} sections, not {}",
            header.sections.len(),
            PARTS.len()
        ));
    }
    let mut placed: Vec<Placed> = Vec::with_capacity(PARTS.len());
    for (part, s) in PARTS.iter().zip(&header.sections) {
        let start = usize::try_from(s.offset).map_err(|_| "offset too large")?;
        let range = usize::try_from(s.len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&e| e <= file_len && start.is_multiple_of(ALIGN))
            .map(|e| start..e)
            .ok_or_else(|| format!("the {part:?} section lies outside the file"))?;
        placed.push((range, s.hash));
    }
    let range = |p: Part| placed[p as usize].0.clone();
    let len = |p: Part| range(p).len();
    let count = |p: Part, unit: usize| len(p) / unit;
    let (terms, strings) = (count(Part::TermEnds, 8), count(Part::StringEnds, 8));
    // A count or dimension too large for its sections' sizes (a hostile header, whose
    // hash anyone can make) is refused, never multiplied past usize.
    let times = |a: usize, b: usize| a.checked_mul(b).ok_or("a section's size overflows");
    let expected = [
        (Part::DocPlaces, count(Part::DocChunks, 16) * 4),
        (Part::Ids, times(n, 16)?),
        (Part::Records, times(n, RECORD_BYTES)?),
        (Part::Lens, times(n, 4)?),
        (Part::Norms, times(n, 8)?),
        (Part::Missing, n.div_ceil(64) * 8),
        (Part::Vectors, times(n, times(dim, 2)?)?),
        (Part::Codes, times(n, times(codes::code_words(dim), 8)?)?),
        (Part::TermEnds, terms * 8),
        (Part::PostingEnds, terms * 8),
        (Part::Postings, count(Part::Postings, 8) * 8),
        (Part::StringEnds, strings * 8),
        (Part::Dead, count(Part::Dead, 4) * 4),
        (Part::DocBuckets, N_BUCKETS / 8),
        (Part::PathBuckets, N_BUCKETS / 8),
    ];
    for (part, bytes) in expected {
        if len(part) != bytes {
            return Err(format!(
                "the {part:?} section has {} bytes, not {bytes}",
                len(part)
            ));
        }
    }
    let cols = Columns {
        ids: range(Part::Ids),
        records: range(Part::Records),
        lens: range(Part::Lens),
        norms: range(Part::Norms),
        missing: range(Part::Missing),
        vectors: range(Part::Vectors),
        codes: range(Part::Codes),
        term_ends: range(Part::TermEnds),
        term_bytes: range(Part::TermBytes),
        posting_ends: range(Part::PostingEnds),
        postings: range(Part::Postings),
        string_ends: range(Part::StringEnds),
        string_bytes: range(Part::StringBytes),
    };
    Ok((cols, placed))
}

/// Checks every section of the index file at `path`, and of the delta file beside it
/// when that is of this file, against its hash (what opening leaves to the reads):
/// their bytes, or `Err` naming the first section that differs.
pub(crate) fn verify_file(path: &Path) -> std::result::Result<usize, String> {
    let (bytes, hash) = verify_one(path)?;
    let delta = delta_path(path);
    if !delta.exists() {
        return Ok(bytes);
    }
    let file = delta.display();
    let header = open(&delta).map_err(|e| format!("{file}: {e}"))?.header;
    if header.base != hash {
        // Of another index file: never used, and replaced by the next delta.
        return Ok(bytes);
    }
    let (delta_bytes, _) = verify_one(&delta).map_err(|e| format!("{file}: {e}"))?;
    Ok(bytes + delta_bytes)
}

/// One file's sections checked: its bytes and its header's hash.
fn verify_one(path: &Path) -> std::result::Result<(usize, [u8; 32]), String> {
    let Opened {
        map, placed, hash, ..
    } = open(path)?;
    for (part, (range, expected)) in PARTS.iter().zip(&placed) {
        if blake3::hash(&map[range.clone()]).as_bytes() != expected {
            return Err(format!("the {part:?} section does not match its hash"));
        }
    }
    let section = |p: Part| &map[placed[p as usize].0.clone()];
    let unaligned = || "a document section is unaligned".to_string();
    check_places(
        in_place::cast(section(Part::DocChunks)).ok_or_else(unaligned)?,
        in_place::cast(section(Part::DocPlaces)).ok_or_else(unaligned)?,
        in_place::cast(section(Part::Ids)).ok_or_else(unaligned)?,
    )?;
    Ok((map.len(), hash))
}

/// Each document chunk's recorded place (`places[k]` for `chunks[k]`) is where `ids`
/// (the file's chunks, ascending) holds it, [`NO_PLACE`] when they do not: what a
/// search reads instead of looking the id up, so a writer's mistake there is found.
fn check_places(
    chunks: &[ChunkId],
    places: &[u32],
    ids: &[ChunkId],
) -> std::result::Result<(), String> {
    for (k, (id, &place)) in chunks.iter().zip(places).enumerate() {
        let held = ids.binary_search(id).map_or(NO_PLACE, |i| i as u32);
        if place != held {
            return Err(format!(
                "document chunk {k} ({id}) is recorded at {place}, not {held}"
            ));
        }
    }
    Ok(())
}

/// The stamp must describe a state this store committed: its bucket roots compose to
/// its state root, which is the root of its commit in the store's chain.
fn check_stamp(header: &Header, txn: &ReadTxn) -> std::result::Result<(), String> {
    let compose = |roots: &[MerkleRoot]| TopTree::from_bucket_roots(roots).map(|t| t.root());
    let chunks_root = compose(&header.chunk_roots).map_err(|e| e.to_string())?;
    let paths_root = compose(&header.path_roots).map_err(|e| e.to_string())?;
    if chunks_root != header.table_roots.get(Table::Chunks)
        || paths_root != header.table_roots.get(Table::Paths)
        || header.table_roots.state_root() != header.root
    {
        return Err("bucket roots do not compose to its state root".into());
    }
    let committed = if header.sequence == 0 {
        Some(StateRoot::default())
    } else {
        txn.state_record(header.sequence)
            .map_err(|e| e.to_string())?
            .map(|r| r.root)
    };
    if committed != Some(header.root) {
        return Err(format!(
            "its state (commit {}) is not in this store's chain",
            header.sequence
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk count or dimension whose sections' sizes overflow (a hostile header,
    /// whose hash anyone can make) is refused, not multiplied past `usize`.
    #[test]
    fn a_count_too_large_for_its_sections_is_refused() {
        let zeros = [0u8; 512];
        let mut header = Header::deserialize(&mut &zeros[..]).unwrap();
        let blank = Section {
            offset: 0,
            len: 0,
            hash: [0; 32],
        };
        header.sections = vec![blank; PARTS.len()];
        for (n, dim) in [
            (usize::MAX / 8, 384),
            (1 << 40, usize::MAX / 4),
            (3, usize::MAX),
        ] {
            let refused = columns(&header, 1 << 20, n, dim).err();
            assert!(
                refused.is_some_and(|e| e.contains("overflows")),
                "{n} x {dim}"
            );
        }
    }

    /// A place that names another chunk, one left out for a chunk the file holds, and
    /// one given to a chunk it does not hold are each found.
    #[test]
    fn check_places_finds_a_wrong_place() {
        let ids = [ChunkId([1; 16]), ChunkId([3; 16]), ChunkId([5; 16])];
        let chunks = [ChunkId([5; 16]), ChunkId([4; 16]), ChunkId([1; 16])];
        assert_eq!(check_places(&chunks, &[2, NO_PLACE, 0], &ids), Ok(()));
        for wrong in [
            [1, NO_PLACE, 0],
            [NO_PLACE, NO_PLACE, 0],
            [2, 1, 0],
            [2, NO_PLACE, 3],
        ] {
            assert!(check_places(&chunks, &wrong, &ids).is_err(), "{wrong:?}");
        }
    }
}
