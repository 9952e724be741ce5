//! Chunks: the pieces of a document's canonical text that are searched and embedded.
//!
//! A chunk's span (`byte_offset`, `byte_length`) is in UTF-8 bytes of the document's
//! canonical text; its `text` is exactly that span. The kind carries what the chunker
//! knew: the heading path of a Markdown section, the symbol of a code chunk (with the
//! window index when a long symbol is split), the page of a PDF chunk.

use borsh::{BorshDeserialize, BorshSerialize};

use crate::encode::{Canonical, check_len};
use crate::error::CoreError;
use crate::hash::{self, LeafHash, MerkleRoot, TextHash};
use crate::id::{ChunkId, DocumentId};
use crate::merkle::merkle_root;

/// Longest chunk text, in bytes.
const MAX_CHUNK_BYTES: usize = 16 << 20;
/// Longest name, signature, language or heading, in bytes.
const MAX_LABEL_BYTES: usize = 64 << 10;
/// Deepest heading path.
const MAX_HEADING_DEPTH: usize = 64;

/// What kind of symbol a code chunk holds. Encoded as a `u8`, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, BorshSerialize, BorshDeserialize)]
pub enum SymbolKind {
    /// 0: a free function.
    Function,
    /// 1: a function inside a class, impl or trait.
    Method,
    /// 2: a class.
    Class,
    /// 3: an interface.
    Interface,
    /// 4: a type alias or type definition.
    Type,
    /// 5: a constant or static.
    Const,
    /// 6: a variable.
    Var,
    /// 7: a Rust `impl` block.
    Impl,
    /// 8: a Rust trait.
    Trait,
    /// 9: a module or namespace.
    Module,
    /// 10: a struct.
    Struct,
    /// 11: an enum.
    Enum,
    /// 12: a macro definition.
    Macro,
    /// 13: a section of a configuration file: a TOML table, an HCL block, a YAML key
    /// whose value is a mapping.
    Section,
    /// 14: a key of a configuration file with a value that is not a section.
    Key,
    /// 15: a style rule: a CSS rule set or at-rule.
    Rule,
    /// 16: a database table or view.
    Table,
    /// 17: a database index.
    Index,
    /// 18: a database trigger.
    Trigger,
}

impl SymbolKind {
    /// Every kind, in encoding order: `ALL[tag]` is the kind of tag `tag`.
    pub const ALL: [SymbolKind; 19] = [
        Self::Function,
        Self::Method,
        Self::Class,
        Self::Interface,
        Self::Type,
        Self::Const,
        Self::Var,
        Self::Impl,
        Self::Trait,
        Self::Module,
        Self::Struct,
        Self::Enum,
        Self::Macro,
        Self::Section,
        Self::Key,
        Self::Rule,
        Self::Table,
        Self::Index,
        Self::Trigger,
    ];

    /// Lower-case name, as shown by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::Method => "method",
            Self::Class => "class",
            Self::Interface => "interface",
            Self::Type => "type",
            Self::Const => "const",
            Self::Var => "var",
            Self::Impl => "impl",
            Self::Trait => "trait",
            Self::Module => "module",
            Self::Struct => "struct",
            Self::Enum => "enum",
            Self::Macro => "macro",
            Self::Section => "section",
            Self::Key => "key",
            Self::Rule => "rule",
            Self::Table => "table",
            Self::Index => "index",
            Self::Trigger => "trigger",
        }
    }
}

/// Position of one window of a symbol split by the sliding window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, BorshSerialize, BorshDeserialize)]
pub struct Window {
    /// 0-based index of this window.
    pub index: u32,
    /// Number of windows the symbol was split into (at least 2).
    pub count: u32,
}

/// A code symbol. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, BorshSerialize, BorshDeserialize)]
pub struct Symbol {
    /// What the symbol is.
    pub kind: SymbolKind,
    /// Its name.
    pub name: String,
    /// Name of the enclosing symbol (class, impl, trait), if any.
    pub parent: Option<String>,
    /// Its signature: the declaration up to the body.
    pub signature: String,
    /// Its doc comment, markers included, or empty.
    pub doc_comment: String,
    /// Set when the symbol was split into windows.
    pub window: Option<Window>,
}

impl Symbol {
    /// `parent::name`, or `name` without a parent: how results and listings name it.
    pub fn qualified_name(&self) -> String {
        match &self.parent {
            Some(p) => format!("{p}::{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// What a chunk is. Encoded as a `u8` tag in this order, then the fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash, BorshSerialize, BorshDeserialize)]
pub enum ChunkKind {
    /// 0: prose or other text.
    Text,
    /// 1: part of a Markdown section; the heading path from the top level down.
    Section {
        /// Headings enclosing the chunk, outermost first.
        heading_path: Vec<String>,
    },
    /// 2: source code; `symbol` is `None` for code between symbols.
    Code {
        /// Language name, e.g. `rust`.
        language: String,
        /// The symbol the chunk holds, if any.
        symbol: Option<Symbol>,
    },
    /// 3: text from one page of a PDF.
    Page {
        /// 1-based page number.
        page: u32,
    },
}

impl ChunkKind {
    /// Short name of the kind: `text`, `section`, `code`, `page`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Section { .. } => "section",
            Self::Code { .. } => "code",
            Self::Page { .. } => "page",
        }
    }
}

/// A chunk. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Chunk {
    /// `ChunkId::derive(document_id, sequence, text_hash)`.
    pub id: ChunkId,
    /// The document the chunk belongs to.
    pub document_id: DocumentId,
    /// 0-based position among the document's chunks.
    pub sequence: u32,
    /// Start of the span in the canonical text, in bytes.
    pub byte_offset: u64,
    /// Length of the span in bytes; equals `text.len()`.
    pub byte_length: u32,
    /// 1-based line of the span's first byte.
    pub start_line: u32,
    /// 1-based line of the span's last byte.
    pub end_line: u32,
    /// BLAKE3 of `text`.
    pub text_hash: TextHash,
    /// What the chunk is.
    pub kind: ChunkKind,
    /// The span's text.
    pub text: String,
}

/// A chunk as its chunker cut it, before its text hash and id are derived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkDraft {
    /// Start of the span in the canonical text, in bytes.
    pub byte_offset: u64,
    /// 1-based line of the span's first byte.
    pub start_line: u32,
    /// 1-based line of the span's last byte.
    pub end_line: u32,
    /// What the chunk is.
    pub kind: ChunkKind,
    /// The span's text.
    pub text: String,
}

/// The canonical encodings of a document's chunks, one after the other in one buffer:
/// what their leaves are hashed over, kept for a store that writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkEncodings {
    bytes: Vec<u8>,
    /// Where each encoding ends in `bytes`.
    ends: Vec<usize>,
}

impl ChunkEncodings {
    /// The encodings of `chunks`, in their order.
    pub fn of(chunks: &[Chunk]) -> Self {
        // Sized first (lengths are counted, not written): grown by doubling, the buffer
        // was copied about once more in all, and the TypeScript tree's is 8.6 MB.
        let len = chunks
            .iter()
            .map(|chunk| borsh::object_length(chunk).unwrap_or_default())
            .sum();
        let mut bytes = Vec::with_capacity(len);
        let mut ends = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            borsh::to_writer(&mut bytes, chunk)
                .expect("canonical encoding of a value within spec bounds");
            ends.push(bytes.len());
        }
        Self { bytes, ends }
    }

    /// How many encodings there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The encoding of the `i`-th chunk.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        self.bytes.get(start..end)
    }

    /// Each chunk's Merkle leaf over its encoding (`[i]` of the `i`-th), hashed
    /// together.
    pub fn leaves(&self) -> Vec<LeafHash> {
        let inputs: Vec<&[u8]> = (0..self.len()).filter_map(|i| self.get(i)).collect();
        hash::leaf_chunks(&inputs)
    }
}

impl Chunk {
    /// Builds a chunk, deriving its text hash and id.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        document_id: DocumentId,
        sequence: u32,
        byte_offset: u64,
        start_line: u32,
        end_line: u32,
        kind: ChunkKind,
        text: String,
    ) -> Result<Self, CoreError> {
        let text_hash = TextHash::of(&text);
        let draft = ChunkDraft {
            byte_offset,
            start_line,
            end_line,
            kind,
            text,
        };
        Self::hashed(document_id, sequence, draft, text_hash)
    }

    /// A document's chunks from their drafts in sequence order (`sequence` is the
    /// position), their text hashes computed together: [`Chunk::new`] of each, faster.
    pub fn new_in_sequence(
        document_id: DocumentId,
        drafts: Vec<ChunkDraft>,
    ) -> Result<Vec<Self>, CoreError> {
        let texts: Vec<&str> = drafts.iter().map(|d| d.text.as_str()).collect();
        let hashes = TextHash::of_many(&texts);
        drafts
            .into_iter()
            .zip(hashes)
            .enumerate()
            .map(|(sequence, (draft, text_hash))| {
                let sequence = u32::try_from(sequence)
                    .map_err(|_| CoreError::invalid(Self::KIND, "more than u32::MAX chunks"))?;
                Self::hashed(document_id, sequence, draft, text_hash)
            })
            .collect()
    }

    /// The chunk of `draft`, whose text hashes to `text_hash`.
    fn hashed(
        document_id: DocumentId,
        sequence: u32,
        draft: ChunkDraft,
        text_hash: TextHash,
    ) -> Result<Self, CoreError> {
        debug_assert_eq!(text_hash, TextHash::of(&draft.text));
        let ChunkDraft {
            byte_offset,
            start_line,
            end_line,
            kind,
            text,
        } = draft;
        let byte_length = u32::try_from(text.len())
            .map_err(|_| CoreError::invalid(Self::KIND, "text longer than u32::MAX"))?;
        let chunk = Self {
            id: ChunkId::derive(&document_id, sequence, &text_hash),
            document_id,
            sequence,
            byte_offset,
            byte_length,
            start_line,
            end_line,
            text_hash,
            kind,
            text,
        };
        // The hash and the id were derived just above: only the fields need checking.
        chunk.validate_fields()?;
        Ok(chunk)
    }

    /// Every rule of [`Canonical::validate`] but the two derivations (text hash, id).
    pub(crate) fn validate_fields(&self) -> Result<(), CoreError> {
        check_len(Self::KIND, "text", self.text.len(), MAX_CHUNK_BYTES)?;
        if self.text.is_empty() {
            return Err(CoreError::invalid(Self::KIND, "empty text"));
        }
        if usize::try_from(self.byte_length).ok() != Some(self.text.len()) {
            return Err(CoreError::invalid(
                Self::KIND,
                format!(
                    "byte_length {} but text is {} bytes",
                    self.byte_length,
                    self.text.len()
                ),
            ));
        }
        if self
            .byte_offset
            .checked_add(u64::from(self.byte_length))
            .is_none()
        {
            return Err(CoreError::invalid(Self::KIND, "span end overflows u64"));
        }
        if self.start_line == 0 || self.start_line > self.end_line {
            return Err(CoreError::invalid(
                Self::KIND,
                format!(
                    "need 1 <= start_line ({}) <= end_line ({})",
                    self.start_line, self.end_line
                ),
            ));
        }
        validate_kind(&self.kind)
    }

    /// The Merkle leaf of this chunk.
    pub fn leaf_hash(&self) -> LeafHash {
        hash::leaf_chunk(&self.encode())
    }

    /// The Merkle leaf of each chunk (`[i]` of `chunks[i]`), hashed together: one
    /// encoding buffer for all, and their hashes side by side.
    pub fn leaf_hashes(chunks: &[Chunk]) -> Vec<LeafHash> {
        ChunkEncodings::of(chunks).leaves()
    }

    /// End of the span (exclusive), in bytes.
    pub fn byte_end(&self) -> u64 {
        self.byte_offset + u64::from(self.byte_length)
    }
}

fn validate_kind(kind: &ChunkKind) -> Result<(), CoreError> {
    const K: &str = Chunk::KIND;
    match kind {
        ChunkKind::Text => {}
        ChunkKind::Section { heading_path } => {
            check_len(K, "heading path", heading_path.len(), MAX_HEADING_DEPTH)?;
            for heading in heading_path {
                check_len(K, "heading", heading.len(), MAX_LABEL_BYTES)?;
            }
        }
        ChunkKind::Code { language, symbol } => {
            if language.is_empty() {
                return Err(CoreError::invalid(K, "code chunk without a language"));
            }
            check_len(K, "language", language.len(), MAX_LABEL_BYTES)?;
            if let Some(symbol) = symbol {
                check_len(K, "symbol name", symbol.name.len(), MAX_LABEL_BYTES)?;
                check_len(K, "signature", symbol.signature.len(), MAX_LABEL_BYTES)?;
                check_len(K, "doc comment", symbol.doc_comment.len(), MAX_CHUNK_BYTES)?;
                if let Some(parent) = &symbol.parent {
                    check_len(K, "parent", parent.len(), MAX_LABEL_BYTES)?;
                }
                if let Some(w) = symbol.window
                    && (w.count < 2 || w.index >= w.count)
                {
                    return Err(CoreError::invalid(
                        K,
                        format!("window {} of {} is out of range", w.index, w.count),
                    ));
                }
            }
        }
        ChunkKind::Page { page } => {
            if *page == 0 {
                return Err(CoreError::invalid(K, "page numbers start at 1"));
            }
        }
    }
    Ok(())
}

impl Canonical for Chunk {
    const KIND: &'static str = "chunk";

    fn validate(&self) -> Result<(), CoreError> {
        self.validate_fields()?;
        if self.text_hash != TextHash::of(&self.text) {
            return Err(CoreError::invalid(
                Self::KIND,
                "text_hash is not BLAKE3(text)",
            ));
        }
        let expected = ChunkId::derive(&self.document_id, self.sequence, &self.text_hash);
        if self.id != expected {
            return Err(CoreError::invalid(
                Self::KIND,
                format!("id {} is not the derived id {expected}", self.id),
            ));
        }
        Ok(())
    }
}

/// The hierarchical hash of a document: the Merkle root of its chunks' leaf hashes in
/// sequence order (the empty root for no chunks). `chunks` may come in any order.
pub fn hierarchical_hash<'a>(chunks: impl IntoIterator<Item = &'a Chunk>) -> MerkleRoot {
    root_in_sequence(
        chunks
            .into_iter()
            .map(|c| (c.sequence, c.leaf_hash().0))
            .collect(),
    )
}

/// [`hierarchical_hash`] of chunks whose leaves are known (`leaves[i]` of `chunks[i]`).
pub(crate) fn hierarchical_hash_of_leaves(chunks: &[Chunk], leaves: &[[u8; 32]]) -> MerkleRoot {
    root_in_sequence(
        chunks
            .iter()
            .map(|c| c.sequence)
            .zip(leaves.iter().copied())
            .collect(),
    )
}

/// The Merkle root of `(sequence, leaf)` pairs taken in sequence order.
fn root_in_sequence(mut leaves: Vec<(u32, [u8; 32])>) -> MerkleRoot {
    leaves.sort_unstable_by_key(|(sequence, _)| *sequence);
    let leaves: Vec<[u8; 32]> = leaves.into_iter().map(|(_, leaf)| leaf).collect();
    merkle_root(&leaves)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str) -> Chunk {
        Chunk::new(
            DocumentId([5; 16]),
            0,
            0,
            1,
            1,
            ChunkKind::Text,
            text.into(),
        )
        .unwrap()
    }

    #[test]
    fn symbol_kinds_are_listed_in_tag_order() {
        for (tag, kind) in SymbolKind::ALL.into_iter().enumerate() {
            assert_eq!(borsh::to_vec(&kind).unwrap(), [tag as u8]);
            assert_eq!(kind as usize, tag);
        }
    }

    #[test]
    fn new_derives_and_validates() {
        let c = chunk("hello");
        assert_eq!(c.byte_length, 5);
        assert_eq!(Chunk::decode(&c.encode()).unwrap(), c);
        assert!(
            Chunk::new(
                DocumentId([5; 16]),
                0,
                0,
                1,
                1,
                ChunkKind::Text,
                String::new()
            )
            .is_err()
        );
    }

    /// A document's chunks made together are `Chunk::new` of each, and their encodings
    /// and batched leaves are each chunk's own.
    #[test]
    fn chunks_made_and_hashed_together_are_made_one_by_one() {
        let doc = DocumentId([5; 16]);
        let texts: Vec<String> = (0..40)
            .map(|i| format!("line {i}\n").repeat(1 + i * 17))
            .collect();
        let drafts: Vec<ChunkDraft> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| ChunkDraft {
                byte_offset: i as u64 * 10_000,
                start_line: 1,
                end_line: 1,
                kind: ChunkKind::Text,
                text: text.clone(),
            })
            .collect();
        let together = Chunk::new_in_sequence(doc, drafts).unwrap();
        let one_by_one: Vec<Chunk> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let seq = i as u32;
                Chunk::new(
                    doc,
                    seq,
                    i as u64 * 10_000,
                    1,
                    1,
                    ChunkKind::Text,
                    text.clone(),
                )
                .unwrap()
            })
            .collect();
        assert_eq!(together, one_by_one);
        let encodings = ChunkEncodings::of(&together);
        assert_eq!(encodings.len(), together.len());
        for (i, c) in together.iter().enumerate() {
            assert_eq!(encodings.get(i), Some(c.encode().as_slice()));
        }
        assert_eq!(encodings.get(together.len()), None);
        let leaves: Vec<LeafHash> = together.iter().map(Chunk::leaf_hash).collect();
        assert_eq!(encodings.leaves(), leaves);
        assert_eq!(Chunk::leaf_hashes(&together), leaves);
        assert!(ChunkEncodings::of(&[]).leaves().is_empty());
    }

    #[test]
    fn decode_rejects_tampering() {
        let c = chunk("hello");
        let mut tampered = c.clone();
        tampered.text = "hellp".into();
        assert!(matches!(
            Chunk::decode(&tampered.encode()),
            Err(CoreError::Invalid { .. })
        ));
        let mut bad_window = c.clone();
        bad_window.kind = ChunkKind::Code {
            language: "rust".into(),
            symbol: Some(Symbol {
                kind: SymbolKind::Function,
                name: "f".into(),
                parent: None,
                signature: "fn f()".into(),
                doc_comment: String::new(),
                window: Some(Window { index: 2, count: 2 }),
            }),
        };
        assert!(bad_window.validate().is_err());
        // An out-of-range enum tag is malformed, not a panic.
        let mut bytes = c.encode();
        let tag_at = 16 + 16 + 4 + 8 + 4 + 4 + 4 + 32;
        bytes[tag_at] = 9;
        assert!(matches!(
            Chunk::decode(&bytes),
            Err(CoreError::Malformed { .. })
        ));
    }

    #[test]
    fn hierarchical_hash_ignores_input_order() {
        let doc = DocumentId([5; 16]);
        let chunks: Vec<Chunk> = (0..5)
            .map(|i| {
                Chunk::new(doc, i, u64::from(i), 1, 1, ChunkKind::Text, format!("c{i}")).unwrap()
            })
            .collect();
        let forward = hierarchical_hash(&chunks);
        let backward = hierarchical_hash(chunks.iter().rev());
        assert_eq!(forward, backward);
        assert_eq!(hierarchical_hash(&[]), MerkleRoot::empty());
    }
}
