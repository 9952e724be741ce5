//! cfs-postgres: many repositories' committed states in one PostgreSQL database.
//!
//! Every row of a store's five tables is content: it is written once, keyed by its leaf
//! (the hash of its canonical encoding), whatever the number of repositories holding
//! it; a repository holds rows through its members, one per row of its tables, keyed as
//! the store keys them, with the bucket roots and the head (sequence, table roots,
//! state root) they make (docs/format.md, "PostgreSQL"). [`publish`] compares a store's
//! bucket roots with the repository's, sends the rows of the buckets that differ and
//! moves the head by a compare-and-swap, in one transaction; [`verify`] re-hashes a
//! repository's rows from their encodings and recomputes its state root; [`gc`] drops
//! the content no repository holds.
//!
//! ```no_run
//! use cfs_postgres::{Database, PublishOptions, publish, verify};
//! # fn main() -> Result<(), cfs_postgres::DbError> {
//! let store = cfs_store::Store::open(std::path::Path::new(".cfs/store.redb"))?;
//! let mut db = Database::connect("postgresql://cfs@127.0.0.1:5432/cfs")?;
//! let options = PublishOptions { repo: "cfs".into(), ..Default::default() };
//! publish(&store, &mut db, &options)?;
//! assert!(verify(&mut db, "cfs")?.is_ok());
//! # Ok(()) }
//! ```

mod content;
mod context;
mod db;
mod error;
mod filter_sql;
mod gc;
mod postings;
mod proof;
mod publish;
mod resolve;
mod schema;
mod search;
mod search_rows;
mod status;
mod tls;
mod verify;

pub use context::{DbContext, context};
pub use db::Database;
pub use error::{DbError, Result};
pub use gc::{GcReport, gc};
pub use proof::Proof;
pub use publish::{
    PublishOptions, PublishProgress, PublishReport, check_name, publish, publish_with,
};
pub use schema::SCHEMA_VERSION;
pub use search::{DbHit, DbSearchOptions, DbSearchReport, SearchedRepo, models, search};
pub use status::{DbStatus, RepoStatus, status};
pub use verify::{Damage, VerifyReport, verify};
