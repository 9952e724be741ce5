//! Errors of cfs-core. Decoding untrusted bytes returns these; it never panics.

/// An error from decoding, validating or building cfs entities.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CoreError {
    /// Bytes that do not decode as the canonical encoding of `kind`.
    #[error("malformed {kind} encoding: {reason}")]
    Malformed {
        /// The entity kind being decoded.
        kind: &'static str,
        /// What the decoder rejected.
        reason: String,
    },
    /// A decoded or built entity whose fields break an invariant of the spec.
    #[error("invalid {kind}: {reason}")]
    Invalid {
        /// The entity kind.
        kind: &'static str,
        /// The invariant that failed, with the offending values.
        reason: String,
    },
    /// An argument that is not acceptable (bad hex, bad path, out of range).
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl CoreError {
    pub(crate) fn invalid(kind: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            kind,
            reason: reason.into(),
        }
    }
}

/// Why an inclusion proof did not verify.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProofError {
    /// The proven entity itself is not valid.
    #[error("proven entity is invalid: {0}")]
    Entity(CoreError),
    /// The proof's leaf hash is not the hash of the proven entity.
    #[error("leaf hash does not match the proven entity")]
    LeafMismatch,
    /// The proof names a bucket other than the one the entity's key falls in.
    #[error("bucket {claimed} named, but the key falls in bucket {actual}")]
    WrongBucket {
        /// Bucket named by the proof.
        claimed: u16,
        /// Bucket the key falls in.
        actual: u16,
    },
    /// The Merkle path within the bucket is malformed (index, count or sibling count).
    #[error("malformed path within the bucket: {0}")]
    MalformedPath(String),
    /// The recomputed table root differs from the one in the proof.
    #[error("recomputed {table} root {computed} differs from the proof's {claimed}")]
    TableRootMismatch {
        /// Table name.
        table: &'static str,
        /// Root recomputed from the leaf.
        computed: String,
        /// Root carried in the proof.
        claimed: String,
    },
    /// The state root of the proof's table roots differs from the expected one.
    #[error("state root {computed} differs from the expected {expected}")]
    StateRootMismatch {
        /// Root composed from the proof's table roots.
        computed: String,
        /// Root the caller trusts.
        expected: String,
    },
}
