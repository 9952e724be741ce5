//! Errors of cfs-postgres.

/// An error of publishing into, or reading from, a database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// The database refused or failed a statement, or the connection failed.
    #[error("{database}: {what}: {}", chain(.source))]
    Sql {
        /// The database (its URL without a password).
        database: String,
        /// What cfs was doing.
        what: String,
        /// The cause.
        #[source]
        source: postgres::Error,
    },
    /// The URL or its TLS settings cannot be used.
    #[error("{what}")]
    Config {
        /// What is wrong.
        what: String,
    },
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] cfs_store::StoreError),
    /// The database holds cfs tables of another schema version.
    #[error("{database}: {what}")]
    Version {
        /// The database.
        database: String,
        /// The versions found and expected.
        what: String,
    },
    /// The repository is published with other chunk sizes or another embedder.
    #[error("{database}: {what}")]
    Settings {
        /// The database.
        database: String,
        /// Both settings.
        what: String,
    },
    /// A repository name that cfs does not take.
    #[error("repository name {name:?}: {reason}")]
    Name {
        /// The name given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// No repository of that name is published.
    #[error("{database}: no repository {name:?} is published")]
    NoRepository {
        /// The database.
        database: String,
        /// The name.
        name: String,
    },
    /// A row the database holds is damaged: publishing refuses to build on it.
    #[error("{database}: {what}; nothing was written")]
    Damaged {
        /// The database.
        database: String,
        /// Which row, and what is wrong.
        what: String,
    },
    /// A search result that `--check-answers` could not prove against its
    /// repository's head.
    #[error("{database}: repository {repo:?}: a result does not prove against its head: {what}")]
    Unproven {
        /// The database.
        database: String,
        /// The repository.
        repo: String,
        /// Which result, and what failed.
        what: String,
    },
    /// Other publishers kept moving the repository's head.
    #[error("{database}: repository {repo:?}: its head moved under {tries} tries; try again")]
    Race {
        /// The database.
        database: String,
        /// The repository.
        repo: String,
        /// Tries made.
        tries: u32,
    },
}

/// A database error with its causes (a TLS handshake's names the certificate problem),
/// on one line.
fn chain(e: &postgres::Error) -> String {
    let mut line = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line = format!("{line}: {text}");
        }
        cause = c.source();
    }
    line
}

/// The result type of cfs-postgres.
pub type Result<T> = std::result::Result<T, DbError>;
