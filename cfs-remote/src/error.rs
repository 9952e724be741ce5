//! Errors of cfs-remote.

/// An error of replication.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The remote could not be read or written.
    #[error("{remote}: {name}: {source}")]
    Io {
        /// The remote.
        remote: String,
        /// The object or ref.
        name: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An object is damaged or foreign: it does not hash to its name, does not decode,
    /// or its rows do not make the roots it is named under. Nothing was written.
    #[error("{remote}: {name}: {reason}; nothing was written")]
    Damaged {
        /// The remote.
        remote: String,
        /// The object or ref.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The remote, or a manifest in it, is of a format or spec version this build does
    /// not read.
    #[error("{remote}: {what}")]
    Version {
        /// The remote.
        remote: String,
        /// Which version, found and expected.
        what: String,
    },
    /// The store and the remote's state were built with other chunk sizes or another
    /// embedder: one store never mixes them.
    #[error("{remote}: {what}")]
    Settings {
        /// The remote.
        remote: String,
        /// Both settings.
        what: String,
    },
    /// Nothing is published under the name asked for.
    #[error("{remote}: nothing published as {what}")]
    NotFound {
        /// The remote.
        remote: String,
        /// The branch, commit or manifest asked for.
        what: String,
    },
    /// A request that cannot be served (a bad branch name, an unknown remote scheme).
    #[error("{0}")]
    Invalid(String),
    /// Other pushers kept publishing first.
    #[error("{remote}: branch {branch}: other pushes published first {tries} times; try again")]
    Race {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
        /// How many times.
        tries: u32,
    },
    /// The local store.
    #[error(transparent)]
    Store(#[from] cfs_store::StoreError),
}

impl From<cfs_core::CoreError> for RemoteError {
    fn from(e: cfs_core::CoreError) -> Self {
        Self::Store(e.into())
    }
}

/// Results of cfs-remote.
pub type Result<T, E = RemoteError> = std::result::Result<T, E>;
