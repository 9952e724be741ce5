//! BLAKE3 hashes and the domain-separation contexts of cfs.
//!
//! Two kinds of hash appear in cfs. Hashes of user data (file content, chunk text) are
//! plain BLAKE3, so that any BLAKE3 tool can check them. Every hash cfs computes over its
//! own structures (Merkle leaves and nodes, profiles, model ids, the state root) uses
//! BLAKE3's `derive_key` mode with a context string from [`context`], so that a hash of
//! one kind can never be taken for a hash of another.

use std::fmt;
use std::sync::LazyLock;

use borsh::{BorshDeserialize, BorshSerialize};

use crate::error::CoreError;
use crate::hash_many::{Mode, hash_many};
use blake3::hazmat::HasherExt;

/// Length in bytes of every hash in cfs.
pub const HASH_LEN: usize = 32;

/// The `derive_key` context strings. Each is hashed once into a key by BLAKE3; changing
/// one changes every hash of that kind, so they are part of the spec.
pub mod context {
    /// Leaf hash of a path entry: over its canonical encoding.
    pub const LEAF_PATH: &str = "cfs v1 2026-11-22 leaf path";
    /// Leaf hash of a document.
    pub const LEAF_DOCUMENT: &str = "cfs v1 2026-11-22 leaf document";
    /// Leaf hash of a chunk.
    pub const LEAF_CHUNK: &str = "cfs v1 2026-11-22 leaf chunk";
    /// Leaf hash of an embedding.
    pub const LEAF_EMBEDDING: &str = "cfs v1 2026-11-22 leaf embedding";
    /// Leaf hash of an edge.
    pub const LEAF_EDGE: &str = "cfs v1 2026-11-22 leaf edge";
    /// Inner node of every Merkle tree: over `left || right`.
    pub const NODE: &str = "cfs v1 2026-11-22 merkle node";
    /// The root of a tree with no leaves: over the empty input.
    pub const EMPTY: &str = "cfs v1 2026-11-22 merkle empty";
    /// The state root: over the five table roots in table order.
    pub const STATE_ROOT: &str = "cfs v1 2026-11-22 state root";
    /// A parse profile: over its canonical encoding.
    pub const PARSE_PROFILE: &str = "cfs v1 2026-11-22 parse profile";
    /// An embedding model: over its model id string.
    pub const MODEL: &str = "cfs v1 2026-11-22 embedding model";
}

macro_rules! derive_hasher {
    ($name:ident, $ctx:expr) => {
        static $name: LazyLock<blake3::Hasher> =
            LazyLock::new(|| blake3::Hasher::new_derive_key($ctx));
    };
}

derive_hasher!(LEAF_PATH, context::LEAF_PATH);
derive_hasher!(LEAF_DOCUMENT, context::LEAF_DOCUMENT);
derive_hasher!(LEAF_EMBEDDING, context::LEAF_EMBEDDING);
derive_hasher!(STATE, context::STATE_ROOT);
derive_hasher!(PROFILE, context::PARSE_PROFILE);
derive_hasher!(MODEL, context::MODEL);

/// The derive-key context keys of the kinds hashed many at a time (`hash_many`), and
/// their one-at-a-time hashers made from them.
static LEAF_CHUNK_KEY: LazyLock<[u8; HASH_LEN]> =
    LazyLock::new(|| blake3::hazmat::hash_derive_key_context(context::LEAF_CHUNK));
static NODE_KEY: LazyLock<[u8; HASH_LEN]> =
    LazyLock::new(|| blake3::hazmat::hash_derive_key_context(context::NODE));
static LEAF_EDGE_KEY: LazyLock<[u8; HASH_LEN]> =
    LazyLock::new(|| blake3::hazmat::hash_derive_key_context(context::LEAF_EDGE));
static LEAF_CHUNK: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_from_context_key(&LEAF_CHUNK_KEY));
static LEAF_EDGE: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_from_context_key(&LEAF_EDGE_KEY));
static NODE: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_from_context_key(&NODE_KEY));

static EMPTY: LazyLock<[u8; HASH_LEN]> = LazyLock::new(|| blake3::derive_key(context::EMPTY, b""));

/// BLAKE3 in derive-key mode over the concatenation of `parts`.
fn derive(base: &blake3::Hasher, parts: &[&[u8]]) -> [u8; HASH_LEN] {
    let mut hasher = base.clone();
    for part in parts {
        hasher.update(part);
    }
    *hasher.finalize().as_bytes()
}

pub(crate) fn leaf_path(encoded: &[u8]) -> LeafHash {
    LeafHash(derive(&LEAF_PATH, &[encoded]))
}
pub(crate) fn leaf_document(encoded: &[u8]) -> LeafHash {
    LeafHash(derive(&LEAF_DOCUMENT, &[encoded]))
}
pub(crate) fn leaf_chunk(encoded: &[u8]) -> LeafHash {
    LeafHash(derive(&LEAF_CHUNK, &[encoded]))
}
/// [`leaf_chunk`] of many encodings at once.
pub(crate) fn leaf_chunks(encoded: &[&[u8]]) -> Vec<LeafHash> {
    hash_many(encoded, Mode::DeriveKey(&LEAF_CHUNK_KEY))
        .into_iter()
        .map(LeafHash)
        .collect()
}
pub(crate) fn leaf_embedding(encoded: &[u8]) -> LeafHash {
    LeafHash(derive(&LEAF_EMBEDDING, &[encoded]))
}
pub(crate) fn leaf_embedding_parts(parts: &[&[u8]]) -> LeafHash {
    LeafHash(derive(&LEAF_EMBEDDING, parts))
}
pub(crate) fn leaf_edge(encoded: &[u8]) -> LeafHash {
    LeafHash(derive(&LEAF_EDGE, &[encoded]))
}
/// [`leaf_edge`] of many encodings at once.
pub(crate) fn leaf_edges(encoded: &[&[u8]]) -> Vec<LeafHash> {
    hash_many(encoded, Mode::DeriveKey(&LEAF_EDGE_KEY))
        .into_iter()
        .map(LeafHash)
        .collect()
}

/// The inner-node hash of every cfs Merkle tree.
pub(crate) fn node(left: &[u8; HASH_LEN], right: &[u8; HASH_LEN]) -> [u8; HASH_LEN] {
    derive(&NODE, &[left, right])
}

/// [`node`] over each pair of neighbours of `layer` (`2i` and `2i + 1`), all at once; a
/// last hash without a neighbour is left out.
pub(crate) fn nodes(layer: &[[u8; HASH_LEN]]) -> Vec<[u8; HASH_LEN]> {
    let pairs: Vec<[u8; 2 * HASH_LEN]> = layer
        .chunks_exact(2)
        .map(|two| {
            let mut both = [0; 2 * HASH_LEN];
            both[..HASH_LEN].copy_from_slice(&two[0]);
            both[HASH_LEN..].copy_from_slice(&two[1]);
            both
        })
        .collect();
    let inputs: Vec<&[u8]> = pairs.iter().map(|p| p.as_slice()).collect();
    hash_many(&inputs, Mode::DeriveKey(&NODE_KEY))
}

/// The root of a tree with no leaves.
pub(crate) fn empty() -> [u8; HASH_LEN] {
    *EMPTY
}

pub(crate) fn state(parts: &[&[u8]]) -> StateRoot {
    StateRoot(derive(&STATE, parts))
}

macro_rules! hash_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, BorshSerialize, BorshDeserialize)]
        pub struct $name(pub [u8; HASH_LEN]);

        impl $name {
            /// The raw 32 bytes.
            pub fn as_bytes(&self) -> &[u8; HASH_LEN] {
                &self.0
            }

            /// Lower-case hex, 64 characters.
            pub fn to_hex(&self) -> String {
                hex_encode(&self.0)
            }

            /// Parses 64 hex characters.
            pub fn from_hex(text: &str) -> Result<Self, CoreError> {
                let bytes = hex_decode(text)?;
                let array: [u8; HASH_LEN] = bytes.try_into().map_err(|bytes: Vec<u8>| {
                    CoreError::InvalidInput(format!(
                        "{} must be {} bytes, got {}",
                        stringify!($name),
                        HASH_LEN,
                        bytes.len()
                    ))
                })?;
                Ok(Self(array))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.to_hex())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.to_hex())
            }
        }
    };
}

hash_newtype!(
    /// Plain BLAKE3 of a file's raw bytes.
    ContentHash
);
hash_newtype!(
    /// Plain BLAKE3 of a chunk's UTF-8 text.
    TextHash
);
hash_newtype!(
    /// `derive_key(PARSE_PROFILE, encode(profile))`.
    ProfileHash
);
hash_newtype!(
    /// `derive_key(MODEL, model_id)`: which embedding model made a vector.
    ModelHash
);
hash_newtype!(
    /// `derive_key(LEAF_<table>, encode(entity))`: an entity as a Merkle leaf.
    LeafHash
);
hash_newtype!(
    /// A Merkle root or inner node: bucket roots, table roots, hierarchical hashes.
    MerkleRoot
);
hash_newtype!(
    /// The root that commits to the whole canonical state.
    StateRoot
);

impl ContentHash {
    /// Hashes a file's raw bytes.
    pub fn of(content: &[u8]) -> Self {
        Self(*blake3::hash(content).as_bytes())
    }
}

impl TextHash {
    /// Hashes a chunk's text.
    pub fn of(text: &str) -> Self {
        Self(*blake3::hash(text.as_bytes()).as_bytes())
    }

    /// [`TextHash::of`] each text, hashed together.
    pub fn of_many(texts: &[&str]) -> Vec<Self> {
        let inputs: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        hash_many(&inputs, Mode::Plain)
            .into_iter()
            .map(Self)
            .collect()
    }
}

impl ModelHash {
    /// Hashes an embedding model's id string (e.g. `cfs-hash-embed/1 dim=256`).
    pub fn of(model_id: &str) -> Self {
        Self(derive(&MODEL, &[model_id.as_bytes()]))
    }
}

impl ProfileHash {
    pub(crate) fn of_encoded(encoded: &[u8]) -> Self {
        Self(derive(&PROFILE, &[encoded]))
    }
}

impl Default for StateRoot {
    /// The state root of the empty state.
    fn default() -> Self {
        crate::table::TableRoots::empty().state_root()
    }
}

impl MerkleRoot {
    /// The root of a tree with no leaves.
    pub fn empty() -> Self {
        Self(empty())
    }
}

impl From<LeafHash> for MerkleRoot {
    fn from(leaf: LeafHash) -> Self {
        Self(leaf.0)
    }
}

/// Lower-case hex of `bytes`.
pub fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Parses hex (either case); an odd length or a non-hex character is an error.
pub fn hex_decode(text: &str) -> Result<Vec<u8>, CoreError> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return Err(CoreError::InvalidInput(format!(
            "hex string has odd length {}",
            bytes.len()
        )));
    }
    bytes
        .chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| match (nibble(pair[0]), nibble(pair[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(CoreError::InvalidInput(format!(
                "not a hex digit at offset {}",
                i * 2
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_decode(&hex_encode(&bytes)).unwrap(), bytes);
        assert!(hex_decode("abc").is_err());
        assert!(hex_decode("zz").is_err());
        assert_eq!(hex_decode("ABcd").unwrap(), vec![0xab, 0xcd]);
    }

    #[test]
    fn contexts_are_distinct() {
        let all = [
            context::LEAF_PATH,
            context::LEAF_DOCUMENT,
            context::LEAF_CHUNK,
            context::LEAF_EMBEDDING,
            context::LEAF_EDGE,
            context::NODE,
            context::EMPTY,
            context::STATE_ROOT,
            context::PARSE_PROFILE,
            context::MODEL,
        ];
        let set: std::collections::BTreeSet<_> = all.iter().collect();
        assert_eq!(set.len(), all.len());
    }

    #[test]
    fn derive_matches_blake3_derive_key() {
        let data = b"some leaf bytes";
        assert_eq!(
            leaf_chunk(data).0,
            blake3::derive_key(context::LEAF_CHUNK, data)
        );
        let mut both = [7u8; 64];
        both[32..].fill(9);
        assert_eq!(
            node(&[7; 32], &[9; 32]),
            blake3::derive_key(context::NODE, &both)
        );
    }
}
