//! Entity ids: UUIDv5 (RFC 9562) under the fixed namespaces in [`namespace`].
//!
//! A UUIDv5 is SHA-1 of `namespace || name`, truncated to 16 bytes with the version and
//! variant bits set. The names are binary and defined here and in `docs/spec.md`:
//!
//! | id | name bytes |
//! |---|---|
//! | [`PathId`] | the relative path, UTF-8 |
//! | [`DocumentId`] | content hash (32) `||` profile hash (32) |
//! | [`ChunkId`] | document id (16) `||` sequence (u32 LE) `||` text hash (32) |
//! | [`EmbeddingId`] | chunk id (16) `||` model hash (32) |

use std::fmt;

use borsh::{BorshDeserialize, BorshSerialize};
use uuid::Uuid;

use crate::error::CoreError;
use crate::hash::{ContentHash, ModelHash, ProfileHash, TextHash};

/// The published namespaces. Each is `UUIDv5(NAMESPACE_URL, "urn:cfs:v1:<kind>")`,
/// which a test checks; the literal values are what the spec publishes.
pub mod namespace {
    use uuid::{Uuid, uuid};

    /// Namespace of path ids.
    pub const PATH: Uuid = uuid!("4e83bbb9-3b92-54b4-aa3b-02f8fcda6fa8");
    /// Namespace of document ids.
    pub const DOCUMENT: Uuid = uuid!("eee15cb3-ea93-5620-987c-902405b9fa52");
    /// Namespace of chunk ids.
    pub const CHUNK: Uuid = uuid!("f7009ce4-badb-5371-be38-658e3dd17834");
    /// Namespace of embedding ids.
    pub const EMBEDDING: Uuid = uuid!("2ee7d442-d547-5450-b018-6348aee37b25");
}

macro_rules! id_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, BorshSerialize, BorshDeserialize)]
        #[repr(transparent)]
        pub struct $name(pub [u8; 16]);

        impl $name {
            /// The 16 raw bytes; ids sort by these.
            pub fn as_bytes(&self) -> &[u8; 16] {
                &self.0
            }

            /// As a `uuid::Uuid`.
            pub fn as_uuid(&self) -> Uuid {
                Uuid::from_bytes(self.0)
            }

            /// Parses the hyphenated, simple or braced UUID forms.
            pub fn parse(text: &str) -> Result<Self, CoreError> {
                Uuid::parse_str(text).map(|u| Self(u.into_bytes())).map_err(|e| {
                    CoreError::InvalidInput(format!(
                        "{} {text:?} is not a UUID: {e}",
                        stringify!($name)
                    ))
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.as_uuid().hyphenated(), f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.as_uuid().hyphenated())
            }
        }
    };
}

id_newtype!(
    /// Id of a path entry: `UUIDv5(PATH, path)`.
    PathId
);
id_newtype!(
    /// Id of a document: one per distinct (content, parse profile).
    DocumentId
);
id_newtype!(
    /// Id of a chunk: unique per (document, sequence, text).
    ChunkId
);
id_newtype!(
    /// Id of an embedding: one per (chunk, model).
    EmbeddingId
);

/// UUIDv5 of `name` under `namespace`. SHA-1 through the `sha1` crate, which uses the
/// processor's SHA instructions where it has them (the `uuid` crate's SHA-1 is portable
/// code only: 1.3 ms of a cold index of the 6 MB TypeScript tree, a chunk id for each of
/// 8,500 chunks); a test checks it against `Uuid::new_v5`.
fn v5(namespace: &Uuid, name: &[u8]) -> [u8; 16] {
    use sha1::Digest;
    let digest = sha1::Sha1::new()
        .chain_update(namespace.as_bytes())
        .chain_update(name)
        .finalize();
    let mut id: [u8; 16] = digest[..16].try_into().expect("SHA-1 has 20 bytes");
    // RFC 9562: version 5 in the high nibble of byte 6, variant 0b10 in byte 8.
    id[6] = (id[6] & 0x0f) | 0x50;
    id[8] = (id[8] & 0x3f) | 0x80;
    id
}

impl PathId {
    /// The id of a relative path.
    pub fn derive(path: &str) -> Self {
        Self(v5(&namespace::PATH, path.as_bytes()))
    }
}

impl DocumentId {
    /// The id of a document with this content under this parse profile.
    pub fn derive(content: &ContentHash, profile: &ProfileHash) -> Self {
        let mut name = [0u8; 64];
        name[..32].copy_from_slice(&content.0);
        name[32..].copy_from_slice(&profile.0);
        Self(v5(&namespace::DOCUMENT, &name))
    }
}

impl ChunkId {
    /// The id of the chunk at `sequence` of `document` with text hash `text`.
    pub fn derive(document: &DocumentId, sequence: u32, text: &TextHash) -> Self {
        let mut name = [0u8; 52];
        name[..16].copy_from_slice(&document.0);
        name[16..20].copy_from_slice(&sequence.to_le_bytes());
        name[20..].copy_from_slice(&text.0);
        Self(v5(&namespace::CHUNK, &name))
    }
}

impl EmbeddingId {
    /// The id of the embedding of `chunk` by `model`.
    pub fn derive(chunk: &ChunkId, model: &ModelHash) -> Self {
        let mut name = [0u8; 48];
        name[..16].copy_from_slice(&chunk.0);
        name[16..].copy_from_slice(&model.0);
        Self(v5(&namespace::EMBEDDING, &name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_derived_as_published() {
        for (kind, ns) in [
            ("path", namespace::PATH),
            ("document", namespace::DOCUMENT),
            ("chunk", namespace::CHUNK),
            ("embedding", namespace::EMBEDDING),
        ] {
            let name = format!("urn:cfs:v1:{kind}");
            assert_eq!(
                Uuid::new_v5(&Uuid::NAMESPACE_URL, name.as_bytes()),
                ns,
                "{kind}"
            );
        }
    }

    #[test]
    fn rfc9562_v5_example() {
        // RFC 9562, appendix A.4.
        let id = Uuid::from_bytes(v5(&Uuid::NAMESPACE_DNS, b"www.example.com"));
        assert_eq!(id.to_string(), "2ed6657d-e927-568b-95e1-2665a8aea6a2");
    }

    #[test]
    fn v5_is_the_uuid_crates_for_names_of_every_length_around_sha1_blocks() {
        // Names from empty to three SHA-1 blocks past the 16-byte namespace, each byte
        // value, under every published namespace.
        for ns in [
            namespace::PATH,
            namespace::DOCUMENT,
            namespace::CHUNK,
            namespace::EMBEDDING,
        ] {
            for len in 0..200usize {
                let name: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8).collect();
                assert_eq!(
                    v5(&ns, &name),
                    Uuid::new_v5(&ns, &name).into_bytes(),
                    "{len}"
                );
            }
        }
    }

    #[test]
    fn same_text_in_two_documents_gives_two_chunk_ids() {
        let text = TextHash::of("fn main() {}");
        let a = DocumentId([1; 16]);
        let b = DocumentId([2; 16]);
        assert_ne!(ChunkId::derive(&a, 0, &text), ChunkId::derive(&b, 0, &text));
        assert_ne!(ChunkId::derive(&a, 0, &text), ChunkId::derive(&a, 1, &text));
    }

    #[test]
    fn parse_round_trip() {
        let id = PathId::derive("src/lib.rs");
        assert_eq!(PathId::parse(&id.to_string()).unwrap(), id);
        assert!(PathId::parse("not-a-uuid").is_err());
    }
}
