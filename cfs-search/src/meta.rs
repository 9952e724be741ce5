//! What a snapshot knows of documents, their paths and their chunks (the chunks' texts
//! stay in the store), and a posting: the records segments are made of, whether built
//! in memory or read from a mapped index file.

use std::ops::Range;
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId, SymbolKind};
use cfs_ingest::{Markers, Role};
use memmap2::Mmap;

use super::in_place::cast;

/// What a snapshot knows about one document.
#[derive(Debug, PartialEq, Eq)]
pub struct DocInfo {
    /// The document.
    pub id: DocumentId,
    /// Its MIME type.
    pub mime_type: Box<str>,
    /// Its paths, sorted, with their collections.
    pub paths: Vec<PathInfo>,
    /// Its chunks in sequence order.
    pub chunks: ChunkList,
    /// Markers found in the start of its text (generated, minified).
    pub markers: Markers,
    /// Its role, from its paths and markers (`cfs_ingest::document_role`).
    pub role: Role,
}

impl DocInfo {
    /// The info of a document, its role derived from its paths and markers.
    pub fn new(
        id: DocumentId,
        mime_type: Box<str>,
        paths: Vec<PathInfo>,
        chunks: Vec<ChunkId>,
        markers: Markers,
    ) -> Self {
        let role = cfs_ingest::document_role(paths.iter().map(|p| &*p.path), markers);
        Self {
            id,
            mime_type,
            paths,
            chunks: ChunkList::Owned(chunks),
            markers,
            role,
        }
    }
}

/// A document's chunk ids in sequence order: owned, or read in place from a mapped
/// index file (so that a document decoded for its path or role does not read them).
#[derive(Clone)]
pub enum ChunkList {
    /// Built in memory.
    Owned(Vec<ChunkId>),
    /// The byte range of an index file's document chunks section holding them, checked
    /// for alignment and length when the document was decoded.
    Mapped {
        /// The mapped file.
        map: Arc<Mmap>,
        /// Where the ids lie.
        range: Range<usize>,
        /// Where their places among the file's chunks lie (u32 each, `u32::MAX` for
        /// one the file does not hold): inside the map, as long as the section
        /// was checked to be, so that they can be read without searching the ids.
        places: Range<usize>,
    },
}

impl ChunkList {
    /// The file the chunks were read from and each one's place among its chunks
    /// (`u32::MAX`: not among them), when they were read from a file.
    pub(crate) fn places(&self) -> Option<(&Arc<Mmap>, &[u32])> {
        match self {
            ChunkList::Owned(_) => None,
            ChunkList::Mapped { map, places, .. } => {
                Some((map, map.get(places.clone()).and_then(cast::<u32>)?))
            }
        }
    }
}

impl std::ops::Deref for ChunkList {
    type Target = [ChunkId];

    fn deref(&self) -> &[ChunkId] {
        match self {
            ChunkList::Owned(ids) => ids,
            ChunkList::Mapped { map, range, .. } => map
                .get(range.clone())
                .and_then(cast::<ChunkId>)
                .unwrap_or_default(),
        }
    }
}

impl<'a> IntoIterator for &'a ChunkList {
    type Item = &'a ChunkId;
    type IntoIter = std::slice::Iter<'a, ChunkId>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for ChunkList {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for ChunkList {}

impl std::fmt::Debug for ChunkList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One path of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathInfo {
    /// Relative path.
    pub path: Box<str>,
    /// Collections the path is in.
    pub collections: Vec<Box<str>>,
}

/// What a snapshot knows about one chunk (its text stays in the store).
#[derive(Debug)]
pub struct ChunkMeta {
    /// The chunk.
    pub id: ChunkId,
    /// Its document.
    pub doc: Arc<DocInfo>,
    /// Position in the document.
    pub sequence: u32,
    /// Byte span start in the canonical text.
    pub byte_offset: u64,
    /// Byte span length.
    pub byte_length: u32,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based).
    pub end_line: u32,
    /// `text`, `section`, `code` or `page`.
    pub kind: &'static str,
    /// Language of a code chunk.
    pub language: Option<Box<str>>,
    /// Symbol of a code chunk, `parent::name` when it has a parent.
    pub symbol: Option<Box<str>>,
    /// Heading path of a section, joined with ` > `.
    pub heading: Option<Box<str>>,
    /// Kind of the symbol of a code chunk.
    pub symbol_kind: Option<SymbolKind>,
    /// Where the symbol's own name starts in `symbol` (after `parent::`).
    pub name_start: u16,
    /// A window after the first of a symbol split by sliding windows.
    pub continued: bool,
}

impl ChunkMeta {
    /// The symbol's own name (without its parent).
    pub fn name(&self) -> Option<&str> {
        self.view().name()
    }

    /// The symbol's parent, if it has one.
    pub fn parent(&self) -> Option<&str> {
        self.view().parent()
    }

    /// Its fields that filters and the definition list read, borrowed.
    pub fn view(&self) -> MetaView<'_> {
        MetaView {
            doc: &self.doc,
            kind: self.kind,
            language: self.language.as_deref(),
            symbol: self.symbol.as_deref(),
            symbol_kind: self.symbol_kind,
            name_start: self.name_start,
        }
    }
}

/// The fields of a chunk's metadata that filters and the definition list read,
/// borrowed from a [`ChunkMeta`] or straight from an index file's records, so that a
/// name that thousands of chunks define is scored without building their metadata.
#[derive(Clone, Copy, Debug)]
pub struct MetaView<'a> {
    /// Its document.
    pub doc: &'a DocInfo,
    /// `text`, `section`, `code` or `page`.
    pub kind: &'static str,
    /// Language of a code chunk.
    pub language: Option<&'a str>,
    /// Symbol of a code chunk, `parent::name` when it has a parent.
    pub symbol: Option<&'a str>,
    /// Kind of the symbol of a code chunk.
    pub symbol_kind: Option<SymbolKind>,
    /// Where the symbol's own name starts in `symbol` (after `parent::`).
    pub name_start: u16,
}

impl<'a> MetaView<'a> {
    /// The symbol's own name (without its parent).
    pub fn name(&self) -> Option<&'a str> {
        self.symbol?.get(usize::from(self.name_start)..)
    }

    /// The symbol's parent, if it has one.
    pub fn parent(&self) -> Option<&'a str> {
        let start = usize::from(self.name_start).checked_sub(2)?;
        self.symbol?.get(..start)
    }
}

/// A postings entry: local chunk index and term count.
pub(crate) type Posting = [u32; 2];
