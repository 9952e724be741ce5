//! Path entries: the names of documents, as git's tree entries are the names of blobs.
//!
//! A path entry binds a relative path to a document. Renaming a file moves its path
//! entry and touches nothing else. The collections a path falls in, and the context text
//! they give it, are resolved at index time and kept here so they can filter searches.

use borsh::{BorshDeserialize, BorshSerialize};

use crate::encode::{Canonical, check_len};
use crate::error::CoreError;
use crate::hash::{self, LeafHash};
use crate::id::{DocumentId, PathId};

/// Longest relative path accepted, in UTF-8 bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Most collections one path may belong to.
const MAX_COLLECTIONS: usize = 1024;
/// Longest collection name or context, in bytes.
const MAX_CONTEXT_BYTES: usize = 1 << 20;

/// A relative path bound to a document. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct PathEntry {
    /// Relative path: UTF-8, `/`-separated, see [`validate_rel_path`].
    pub path: String,
    /// The document the path holds.
    pub document_id: DocumentId,
    /// Names of the collections whose prefixes match the path, in registry order.
    pub collections: Vec<String>,
    /// The resolved collection context (matching contexts joined, shortest prefix first).
    pub context: String,
}

impl PathEntry {
    /// A path entry with no collections.
    pub fn new(path: impl Into<String>, document_id: DocumentId) -> Self {
        Self {
            path: path.into(),
            document_id,
            collections: Vec::new(),
            context: String::new(),
        }
    }

    /// The key of this entry in the paths table.
    pub fn id(&self) -> PathId {
        PathId::derive(&self.path)
    }

    /// The Merkle leaf of this entry.
    pub fn leaf_hash(&self) -> LeafHash {
        hash::leaf_path(&self.encode())
    }
}

impl Canonical for PathEntry {
    const KIND: &'static str = "path entry";

    fn validate(&self) -> Result<(), CoreError> {
        validate_rel_path(&self.path)?;
        check_len(
            Self::KIND,
            "collections",
            self.collections.len(),
            MAX_COLLECTIONS,
        )?;
        for name in &self.collections {
            if name.is_empty() {
                return Err(CoreError::invalid(Self::KIND, "empty collection name"));
            }
            check_len(Self::KIND, "collection name", name.len(), MAX_CONTEXT_BYTES)?;
        }
        check_len(Self::KIND, "context", self.context.len(), MAX_CONTEXT_BYTES)
    }
}

/// Checks that `path` is a normalized relative path: non-empty, at most
/// [`MAX_PATH_BYTES`], `/`-separated components that are neither empty nor `.` nor `..`,
/// no leading or trailing `/`, no NUL and no `\`.
pub fn validate_rel_path(path: &str) -> Result<(), CoreError> {
    let fail = |reason: &str| CoreError::invalid("path", format!("{path:?}: {reason}"));
    if path.is_empty() {
        return Err(fail("empty"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(fail("longer than 4096 bytes"));
    }
    if path.contains('\0') {
        return Err(fail("contains NUL"));
    }
    if path.contains('\\') {
        return Err(fail("contains a backslash; paths are '/'-separated"));
    }
    for component in path.split('/') {
        match component {
            "" => return Err(fail("empty component (leading, trailing or double '/')")),
            "." | ".." => return Err(fail("'.' or '..' component")),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rel_paths() {
        for ok in ["a", "src/lib.rs", "a b/ü.md", ".gitignore", "a/.b/c"] {
            assert!(validate_rel_path(ok).is_ok(), "{ok}");
        }
        for bad in ["", "/a", "a/", "a//b", "./a", "a/../b", "a\\b", "a\0b"] {
            assert!(validate_rel_path(bad).is_err(), "{bad:?}");
        }
        assert!(validate_rel_path(&"a".repeat(MAX_PATH_BYTES)).is_ok());
        assert!(validate_rel_path(&"a".repeat(MAX_PATH_BYTES + 1)).is_err());
    }

    #[test]
    fn decode_rejects_bad_path_and_trailing_bytes() {
        let entry = PathEntry::new("docs/a.md", DocumentId([3; 16]));
        let bytes = entry.encode();
        assert_eq!(PathEntry::decode(&bytes).unwrap(), entry);
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(matches!(
            PathEntry::decode(&trailing),
            Err(CoreError::Malformed { .. })
        ));
        let bad = PathEntry::new("../etc/passwd", DocumentId([3; 16]));
        assert!(matches!(
            PathEntry::decode(&bad.encode()),
            Err(CoreError::Invalid { .. })
        ));
    }
}
