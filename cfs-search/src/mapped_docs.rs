//! The documents and paths of an index file, read in place: a document or a path is
//! decoded the first time a query, a filter or a diff asks for it (its bucket, or its
//! ordinal from a chunk record), so opening costs nothing per document.
//!
//! Both are lists in id order: an id column (16 bytes each), a column of u64 end
//! offsets, and the borsh blobs those offsets cut (`docs/format.md`). A blob that
//! does not decode (only a damaged file has one) is a missing row, never a panic.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_core::{Bucket, ChunkId, DocumentId, PathEntry};
use cfs_ingest::{Markers, Role};
use memmap2::Mmap;

use super::buckets::{Rows, Source};
use super::in_place::{cast, span};
use super::meta::{ChunkList, DocInfo, PathInfo};

/// A document's MIME type, its markers ([`Markers::bits`]), its role (its place in
/// [`Role::ALL`], derived when the file was written by the rules its header names) and
/// its paths with their collections (its id and chunk ids are in columns of their own).
#[derive(BorshSerialize, BorshDeserialize)]
pub(crate) struct CachedDoc {
    pub mime_type: String,
    pub markers: u8,
    pub role: u8,
    pub paths: Vec<(String, Vec<String>)>,
}

/// A list of borsh blobs in id order, in a mapped file.
#[derive(Debug, Clone)]
pub(crate) struct BlobList {
    pub map: Arc<Mmap>,
    pub ids: Range<usize>,
    pub ends: Range<usize>,
    pub bytes: Range<usize>,
}

impl BlobList {
    fn ids(&self) -> &[[u8; 16]] {
        self.map
            .get(self.ids.clone())
            .and_then(cast)
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.ids().len()
    }

    fn id(&self, i: usize) -> Option<[u8; 16]> {
        self.ids().get(i).copied()
    }

    fn blob(&self, i: usize) -> Option<&[u8]> {
        let ends = self.map.get(self.ends.clone()).and_then(cast::<u64>)?;
        self.map.get(self.bytes.clone())?.get(span(ends, i)?)
    }

    fn decode<T: BorshDeserialize>(&self, i: usize) -> Option<T> {
        T::try_from_slice(self.blob(i)?).ok()
    }

    /// The entries whose ids fall in bucket `b`.
    fn bucket(&self, b: usize) -> Range<usize> {
        let ids = self.ids();
        let of = |id: &[u8; 16]| usize::from(Bucket::of_key(id).0);
        ids.partition_point(|id| of(id) < b)..ids.partition_point(|id| of(id) <= b)
    }
}

/// The paths: one [`PathEntry`] blob per path id.
#[derive(Debug)]
pub(crate) struct MappedPaths(pub BlobList);

impl Source<PathEntry> for MappedPaths {
    fn rows(&self, b: usize) -> Rows<PathEntry> {
        let list = &self.0;
        list.bucket(b)
            .filter_map(|i| Some((list.id(i)?, list.decode::<PathEntry>(i)?)))
            .collect()
    }

    fn count(&self, b: usize) -> usize {
        self.0.bucket(b).len()
    }
}

/// The documents: a [`CachedDoc`] blob per document id, each one's chunk ids and
/// their places among the file's chunks.
#[derive(Debug)]
pub(crate) struct MappedDocs {
    pub list: BlobList,
    pub chunk_ends: Range<usize>,
    pub chunks: Range<usize>,
    /// One u32 per entry of `chunks` (the section's length checked when opened).
    pub places: Range<usize>,
    /// Each document once decoded, by ordinal (its place in id order).
    decoded: Vec<OnceLock<Option<Arc<DocInfo>>>>,
}

impl MappedDocs {
    pub fn new(
        list: BlobList,
        chunk_ends: Range<usize>,
        chunks: Range<usize>,
        places: Range<usize>,
    ) -> Self {
        let decoded = (0..list.len()).map(|_| OnceLock::new()).collect();
        Self {
            list,
            chunk_ends,
            chunks,
            places,
            decoded,
        }
    }

    /// The document at `ordinal`, decoded once.
    pub fn doc(&self, ordinal: usize) -> Option<Arc<DocInfo>> {
        self.decoded
            .get(ordinal)?
            .get_or_init(|| self.decode(ordinal).map(Arc::new))
            .clone()
    }

    fn decode(&self, i: usize) -> Option<DocInfo> {
        let list = &self.list;
        let meta: CachedDoc = list.decode(i)?;
        let ends = list
            .map
            .get(self.chunk_ends.clone())
            .and_then(cast::<u64>)?;
        let ids: &[ChunkId] = list.map.get(self.chunks.clone()).and_then(cast)?;
        let span = span(ends, i)?;
        // Its ids lie in the section, so their byte range lies in the map.
        ids.get(span.clone())?;
        let size = std::mem::size_of::<ChunkId>();
        let range = self.chunks.start + span.start * size..self.chunks.start + span.end * size;
        let places = self.places.start + span.start * 4..self.places.start + span.end * 4;
        let paths = meta
            .paths
            .into_iter()
            .map(|(p, c)| PathInfo {
                path: p.into(),
                collections: c.into_iter().map(Into::into).collect(),
            })
            .collect();
        Some(DocInfo {
            id: DocumentId(list.id(i)?),
            mime_type: meta.mime_type.into(),
            paths,
            chunks: ChunkList::Mapped {
                map: list.map.clone(),
                range,
                places,
            },
            markers: Markers::from_bits(meta.markers),
            role: *Role::ALL.get(usize::from(meta.role))?,
        })
    }
}

impl Source<Arc<DocInfo>> for MappedDocs {
    fn rows(&self, b: usize) -> Rows<Arc<DocInfo>> {
        self.list
            .bucket(b)
            .filter_map(|i| Some((self.list.id(i)?, self.doc(i)?)))
            .collect()
    }

    fn count(&self, b: usize) -> usize {
        self.list.bucket(b).len()
    }
}
