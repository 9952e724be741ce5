//! Documents: content-addressed units of indexed content.
//!
//! One document exists per distinct (content bytes, parse profile). The profile names
//! everything that changes the chunks (MIME type, parser and chunker versions, chunk
//! sizes), so upgrading a chunker re-chunks instead of mixing old and new chunks, while
//! two files with the same bytes share one document, its chunks and its embeddings.

use borsh::{BorshDeserialize, BorshSerialize};

use crate::chunk::{Chunk, ChunkEncodings, hierarchical_hash_of_leaves};
use crate::encode::{Canonical, check_len};
use crate::error::CoreError;
use crate::hash::{self, ContentHash, HASH_LEN, LeafHash, MerkleRoot, ProfileHash};
use crate::id::DocumentId;

/// Longest profile string (MIME type, parser, chunker), in bytes.
const MAX_PROFILE_FIELD_BYTES: usize = 1024;
/// Most metadata entries one document may carry.
const MAX_META_ENTRIES: usize = 4096;
/// Longest metadata key or value, in bytes.
const MAX_META_BYTES: usize = 1 << 20;

/// What turns content into chunks. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, BorshSerialize, BorshDeserialize)]
pub struct ParseProfile {
    /// Detected MIME type, e.g. `text/markdown`.
    pub mime_type: String,
    /// Parser name and version, e.g. `markdown/1 pulldown-cmark=0.13`.
    pub parser: String,
    /// Chunker name and version, e.g. `text/1`.
    pub chunker: String,
    /// Target chunk size in UTF-8 bytes.
    pub target_bytes: u32,
    /// Maximum chunk size in UTF-8 bytes.
    pub max_bytes: u32,
    /// Overlap between adjacent chunks in UTF-8 bytes.
    pub overlap_bytes: u32,
}

impl ParseProfile {
    /// `derive_key(PARSE_PROFILE, encode(self))`.
    pub fn hash(&self) -> ProfileHash {
        ProfileHash::of_encoded(&self.encode())
    }
}

impl Canonical for ParseProfile {
    const KIND: &'static str = "parse profile";

    fn validate(&self) -> Result<(), CoreError> {
        for (field, value) in [
            ("mime_type", &self.mime_type),
            ("parser", &self.parser),
            ("chunker", &self.chunker),
        ] {
            if value.is_empty() {
                return Err(CoreError::invalid(Self::KIND, format!("{field} is empty")));
            }
            check_len(Self::KIND, field, value.len(), MAX_PROFILE_FIELD_BYTES)?;
        }
        if self.max_bytes == 0 || self.target_bytes > self.max_bytes {
            return Err(CoreError::invalid(
                Self::KIND,
                format!(
                    "need 0 < target ({}) <= max ({})",
                    self.target_bytes, self.max_bytes
                ),
            ));
        }
        if self.overlap_bytes >= self.max_bytes {
            return Err(CoreError::invalid(
                Self::KIND,
                format!(
                    "overlap ({}) must be below max ({})",
                    self.overlap_bytes, self.max_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// One metadata pair (front matter field, PDF page count, ...).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, BorshSerialize, BorshDeserialize)]
pub struct MetaEntry {
    /// Key; keys are unique and sorted by bytes within a document.
    pub key: String,
    /// Value, as text.
    pub value: String,
}

/// A document. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Document {
    /// `DocumentId::derive(content_hash, profile.hash())`.
    pub id: DocumentId,
    /// BLAKE3 of the raw file bytes.
    pub content_hash: ContentHash,
    /// Length of the raw file bytes.
    pub size_bytes: u64,
    /// How the content was parsed and chunked.
    pub profile: ParseProfile,
    /// Length in bytes of the canonical text that chunk offsets refer to.
    pub text_length_bytes: u64,
    /// Number of chunks; their sequences are `0..n_chunks`.
    pub n_chunks: u32,
    /// Merkle root of the chunks' leaf hashes in sequence order.
    pub hierarchical_hash: MerkleRoot,
    /// Metadata pairs, sorted by key, keys unique.
    pub metadata: Vec<MetaEntry>,
}

impl Document {
    /// Builds the document of `content_hash` under `profile` from its chunks, which must
    /// already carry [`DocumentId::derive`]`(content_hash, profile.hash())` as their
    /// document id (build the id first, then the chunks, then the document).
    pub fn new(
        content_hash: ContentHash,
        size_bytes: u64,
        profile: ParseProfile,
        text_length_bytes: u64,
        metadata: Vec<MetaEntry>,
        chunks: &[Chunk],
    ) -> Result<Self, CoreError> {
        Self::new_with_encodings(
            content_hash,
            size_bytes,
            profile,
            text_length_bytes,
            metadata,
            chunks,
        )
        .map(|(document, _, _)| document)
    }

    /// [`Document::new`], also returning the leaf of each chunk (`leaves[i]` of
    /// `chunks[i]`, as [`Chunk::leaf_hash`] gives it) that its hierarchical hash is made
    /// of, and the encodings they were hashed over: for a caller that stores the chunks
    /// and need not encode or hash them again.
    pub fn new_with_encodings(
        content_hash: ContentHash,
        size_bytes: u64,
        profile: ParseProfile,
        text_length_bytes: u64,
        metadata: Vec<MetaEntry>,
        chunks: &[Chunk],
    ) -> Result<(Self, Vec<[u8; HASH_LEN]>, ChunkEncodings), CoreError> {
        let id = DocumentId::derive(&content_hash, &profile.hash());
        if let Some(stray) = chunks.iter().find(|c| c.document_id != id) {
            return Err(CoreError::invalid(
                Self::KIND,
                format!(
                    "chunk {} belongs to {}, not {id}",
                    stray.id, stray.document_id
                ),
            ));
        }
        let n_chunks = u32::try_from(chunks.len())
            .map_err(|_| CoreError::invalid(Self::KIND, "more than u32::MAX chunks"))?;
        let encodings = ChunkEncodings::of(chunks);
        let leaves: Vec<[u8; HASH_LEN]> = encodings.leaves().into_iter().map(|l| l.0).collect();
        let document = Self {
            id,
            content_hash,
            size_bytes,
            profile,
            text_length_bytes,
            n_chunks,
            hierarchical_hash: hierarchical_hash_of_leaves(chunks, &leaves),
            metadata,
        };
        document.validate()?;
        Ok((document, leaves, encodings))
    }

    /// The Merkle leaf of this document.
    pub fn leaf_hash(&self) -> LeafHash {
        hash::leaf_document(&self.encode())
    }
}

impl Canonical for Document {
    const KIND: &'static str = "document";

    fn validate(&self) -> Result<(), CoreError> {
        self.profile.validate()?;
        let expected = DocumentId::derive(&self.content_hash, &self.profile.hash());
        if self.id != expected {
            return Err(CoreError::invalid(
                Self::KIND,
                format!("id {} is not the derived id {expected}", self.id),
            ));
        }
        check_len(
            Self::KIND,
            "metadata",
            self.metadata.len(),
            MAX_META_ENTRIES,
        )?;
        for entry in &self.metadata {
            check_len(Self::KIND, "metadata key", entry.key.len(), MAX_META_BYTES)?;
            check_len(
                Self::KIND,
                "metadata value",
                entry.value.len(),
                MAX_META_BYTES,
            )?;
        }
        if let Some(pair) = self.metadata.windows(2).find(|w| w[0].key >= w[1].key) {
            return Err(CoreError::invalid(
                Self::KIND,
                format!(
                    "metadata keys not strictly sorted: {:?} then {:?}",
                    pair[0].key, pair[1].key
                ),
            ));
        }
        if self.n_chunks == 0 && self.hierarchical_hash != MerkleRoot::empty() {
            return Err(CoreError::invalid(
                Self::KIND,
                "a document without chunks must have the empty hierarchical hash",
            ));
        }
        Ok(())
    }
}
