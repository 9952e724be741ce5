//! Errors of cfs-ingest. Every per-file error names the file and the reason; none
//! panics, and one bad file never stops the others.

use std::path::PathBuf;

/// An error from ingesting one file, or from a bad configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The file is binary (or of a type cfs does not index) and was skipped.
    #[error("{path}: skipped: {reason}")]
    Skipped {
        /// Relative path of the file.
        path: String,
        /// Why, e.g. "binary (PNG image)".
        reason: String,
    },
    /// The file's bytes could not be decoded as text.
    #[error("{path}: cannot decode: {reason}")]
    Decode {
        /// Relative path of the file.
        path: String,
        /// What the decoder found.
        reason: String,
    },
    /// The file's content is malformed for its type (e.g. invalid JSON).
    #[error("{path}: invalid {format}: {reason}")]
    Malformed {
        /// Relative path of the file.
        path: String,
        /// The format it claims to be.
        format: &'static str,
        /// What is wrong, with a position where known.
        reason: String,
    },
    /// The file is larger than the configured limit.
    #[error("{path}: {size_bytes} bytes is over the limit of {limit_bytes}")]
    TooLarge {
        /// Relative path of the file.
        path: String,
        /// Its size.
        size_bytes: u64,
        /// The limit.
        limit_bytes: u64,
    },
    /// Reading the file or walking a directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A path that cannot be stored (not UTF-8, or not a normalized relative path).
    #[error("{path}: unusable path: {reason}")]
    Path {
        /// The path as far as it can be shown.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// Building an entity failed; a bug or an impossible input, reported, not panicked.
    #[error("{path}: {source}")]
    Core {
        /// Relative path of the file.
        path: String,
        /// The core error.
        #[source]
        source: cfs_core::CoreError,
    },
    /// The configuration is not usable.
    #[error("invalid configuration: {0}")]
    Config(String),
}
