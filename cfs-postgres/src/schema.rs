//! The tables cfs keeps in a database (docs/format.md, "PostgreSQL"), made once under
//! a lock, and the check that a database holds this version of them.

use postgres::{IsolationLevel, Transaction};

use crate::db::{Database, sql_error};
use crate::error::{DbError, Result};

/// The version of the tables below; a database of another version is refused.
pub const SCHEMA_VERSION: i32 = 4;

/// The class of cfs's advisory locks (`pg_advisory_xact_lock(LOCK_CLASS, n)`), `n` as
/// [`Lock`] says.
const LOCK_CLASS: i32 = 0x0cf5;

/// One of cfs's advisory locks, held until its transaction ends.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Lock {
    /// While the tables are made (`n` = -1).
    Schema,
    /// Collection's, alone (`n` = 0).
    Collection,
    /// The collection lock shared: every publish holds it, so that a collection waits
    /// for the publishes in flight and they for it.
    CollectionShared,
    /// A repository's publishers take turns (`n` = its id).
    Repository(i32),
}

impl Lock {
    /// The lock's number in [`LOCK_CLASS`], whether it is shared, and what waiting on it
    /// is waiting for.
    fn parts(self) -> (i32, bool, &'static str) {
        match self {
            Lock::Schema => (-1, false, "wait for the tables to be made"),
            Lock::Collection => (0, false, "wait for publishes in flight"),
            Lock::CollectionShared => (0, true, "wait for a collection"),
            Lock::Repository(id) => (id, false, "wait for the repository's other publishers"),
        }
    }
}

/// Takes `lock` for the rest of `tx`.
pub(crate) fn lock(tx: &mut Transaction<'_>, name: &str, lock: Lock) -> Result<()> {
    let (n, shared, what) = lock.parts();
    let sql = if shared {
        "SELECT pg_advisory_xact_lock_shared($1, $2)"
    } else {
        "SELECT pg_advisory_xact_lock($1, $2)"
    };
    tx.execute(sql, &[&LOCK_CLASS, &n])
        .map(|_| ())
        .map_err(sql_error(name, what))
}

/// A read-only transaction over one snapshot of `db`, whose cfs tables are checked to
/// be of this version, with the database's name for errors: what every reader (verify,
/// status) reads in, on a primary or a standby.
pub(crate) fn read_snapshot(db: &mut Database) -> Result<(String, Transaction<'_>)> {
    let name = db.describe().to_owned();
    let mut tx = db
        .client()
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(sql_error(&name, "begin"))?;
    check(&mut tx, &name)?;
    Ok((name, tx))
}

/// The tables. Shared content is keyed by its leaf (the hash of its canonical encoding):
/// one row whatever the number of repositories holding it. A repository holds rows
/// through `cfs_members`, one per row of its committed tables. Only the indexes that
/// publish, verify and collection use are made (four on ids cost 7% of a first
/// publish), and search's: a repository's search rows (`cfs_search`: each chunk's
/// terms, length, vector hash and filter columns; `cfs_search_docs`: each document's
/// paths, role and chunks; `cfs_postings`: each term's posting list;
/// `cfs_search_stats`: its BM25 totals) are derived from its members by publish.
const TABLES: &str = "
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE cfs_schema (version int NOT NULL);
CREATE TABLE cfs_repos (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    model_id text NOT NULL,
    chunk_sizes int[] NOT NULL
);
CREATE TABLE cfs_heads (
    repo int PRIMARY KEY REFERENCES cfs_repos (id),
    sequence bigint NOT NULL,
    state_root bytea NOT NULL,
    table_roots bytea[] NOT NULL,
    published timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE cfs_bucket_roots (
    repo int NOT NULL REFERENCES cfs_repos (id),
    tag smallint NOT NULL,
    bucket smallint NOT NULL,
    root bytea NOT NULL,
    PRIMARY KEY (repo, tag, bucket)
);
CREATE TABLE cfs_members (
    repo int NOT NULL REFERENCES cfs_repos (id),
    tag smallint NOT NULL,
    key bytea NOT NULL,
    bucket smallint NOT NULL,
    leaf bytea NOT NULL,
    PRIMARY KEY (repo, tag, key)
);
CREATE INDEX cfs_members_bucket ON cfs_members (repo, tag, bucket);
CREATE TABLE cfs_paths (
    leaf bytea PRIMARY KEY,
    path text NOT NULL,
    document_id uuid NOT NULL,
    encoding bytea NOT NULL
);
CREATE TABLE cfs_documents (
    leaf bytea PRIMARY KEY,
    id uuid NOT NULL,
    encoding bytea NOT NULL
);
CREATE TABLE cfs_chunks (
    leaf bytea PRIMARY KEY,
    id uuid NOT NULL,
    document_id uuid NOT NULL,
    start_line bigint NOT NULL,
    end_line bigint NOT NULL,
    kind text NOT NULL,
    language text,
    symbol text,
    text text NOT NULL,
    encoding bytea NOT NULL
);
CREATE TABLE cfs_embeddings (
    leaf bytea PRIMARY KEY,
    id uuid NOT NULL,
    chunk_id uuid NOT NULL,
    model_hash bytea NOT NULL,
    vector_hash bytea NOT NULL
);
CREATE TABLE cfs_vectors (
    hash bytea PRIMARY KEY,
    v vector NOT NULL
);
CREATE TABLE cfs_edges (
    leaf bytea PRIMARY KEY,
    key bytea NOT NULL,
    encoding bytea NOT NULL
);
CREATE TABLE cfs_search (
    repo int NOT NULL REFERENCES cfs_repos (id),
    chunk uuid NOT NULL,
    document uuid NOT NULL,
    length int NOT NULL,
    terms text[] NOT NULL,
    v vector,
    language text,
    kind text NOT NULL,
    sequence int NOT NULL,
    byte_offset bigint NOT NULL,
    byte_length int NOT NULL,
    start_line int NOT NULL,
    end_line int NOT NULL,
    symbol text,
    symbol_kind smallint,
    name_start smallint NOT NULL,
    continued boolean NOT NULL,
    heading text,
    PRIMARY KEY (repo, chunk)
);
CREATE INDEX cfs_search_document ON cfs_search (repo, document);
-- A vector is read by every vector scan and does not compress: kept in the row, so
-- that the terms are the column moved out of a row grown past TOAST's threshold.
ALTER TABLE cfs_search ALTER COLUMN v SET STORAGE PLAIN;
CREATE TABLE cfs_search_docs (
    repo int NOT NULL REFERENCES cfs_repos (id),
    document uuid NOT NULL,
    mime_type text NOT NULL,
    role text NOT NULL,
    generated boolean NOT NULL,
    minified boolean NOT NULL,
    paths text[] NOT NULL,
    chunks uuid[] NOT NULL,
    file_vector bytea,
    PRIMARY KEY (repo, document)
);
CREATE TABLE cfs_postings (
    repo int NOT NULL REFERENCES cfs_repos (id),
    term text NOT NULL,
    slice smallint NOT NULL,
    postings bytea NOT NULL,
    PRIMARY KEY (repo, term, slice)
);
CREATE TABLE cfs_search_stats (
    repo int PRIMARY KEY REFERENCES cfs_repos (id),
    chunks bigint NOT NULL,
    tokens bigint NOT NULL,
    rows_version int NOT NULL
);
";

/// Makes cfs's tables in `db` if it has none, or checks their version; refuses a
/// standby, which takes no writes, naming it.
pub(crate) fn ensure(db: &mut Database) -> Result<()> {
    let name = db.describe().to_owned();
    let standby: bool = db
        .client()
        .query_one("SELECT pg_is_in_recovery()", &[])
        .map_err(sql_error(&name, "ask whether it is a standby"))?
        .get(0);
    if standby {
        return Err(DbError::Config {
            what: format!("{name} is a standby, which takes no writes: publish to its primary"),
        });
    }
    let mut tx = db
        .client()
        .transaction()
        .map_err(sql_error(&name, "begin"))?;
    lock(&mut tx, &name, Lock::Schema)?;
    match found_version(&mut tx, &name)?.as_deref() {
        None => {
            tx.batch_execute(TABLES)
                .map_err(sql_error(&name, "make cfs's tables"))?;
            tx.execute("INSERT INTO cfs_schema VALUES ($1)", &[&SCHEMA_VERSION])
                .map_err(sql_error(&name, "record the schema version"))?;
        }
        Some([3]) => tx
            .batch_execute(FROM_3)
            .map_err(sql_error(&name, "bring cfs's tables from version 3"))?,
        Some(_) => {
            version(&mut tx, &name)?;
        }
    }
    tx.commit().map_err(sql_error(&name, "commit the schema"))
}

/// Version 3 to 4: each repository's search rows carry the version of the rules that
/// derived them; rows of version 3 count as version 0, so the next publish of each
/// repository writes them again.
const FROM_3: &str = "
ALTER TABLE cfs_search_stats ADD COLUMN rows_version int NOT NULL DEFAULT 0;
ALTER TABLE cfs_search_stats ALTER COLUMN rows_version DROP DEFAULT;
UPDATE cfs_schema SET version = 4;
";

/// Checks, in `tx`, that the database holds cfs's tables of this version.
fn check(tx: &mut Transaction<'_>, name: &str) -> Result<()> {
    match version(tx, name)? {
        Some(()) => Ok(()),
        None => Err(DbError::Version {
            database: name.to_owned(),
            what: "it holds no cfs tables (nothing was published into it)".into(),
        }),
    }
}

/// The versions `cfs_schema` holds (one, unless damaged), `None` when the database holds
/// no cfs tables.
fn found_version(tx: &mut Transaction<'_>, name: &str) -> Result<Option<Vec<i32>>> {
    let exists: bool = tx
        .query_one("SELECT to_regclass('cfs_schema') IS NOT NULL", &[])
        .map_err(sql_error(name, "look for cfs's tables"))?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let found = tx
        .query("SELECT version FROM cfs_schema", &[])
        .map_err(sql_error(name, "read the schema version"))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(Some(found))
}

/// `Some` when the database holds cfs's tables of this version, `None` when it holds
/// none; another version is an error.
fn version(tx: &mut Transaction<'_>, name: &str) -> Result<Option<()>> {
    let Some(found) = found_version(tx, name)? else {
        return Ok(None);
    };
    if found != [SCHEMA_VERSION] {
        return Err(DbError::Version {
            database: name.to_owned(),
            what: format!(
                "its cfs tables are of schema version {found:?}; this build reads version \
                 {SCHEMA_VERSION}{}",
                if found == [3] {
                    " (a publish into it brings them to it)"
                } else {
                    ""
                }
            ),
        });
    }
    Ok(Some(()))
}
