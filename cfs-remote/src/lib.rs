//! cfs-remote: replication of a store's committed state through a remote.
//!
//! A remote holds immutable, content-addressed packs (rows, vectors once, row tables
//! saying where each bucket's rows lie, group segments) and manifests (one published
//! state each), and create-only refs that name them (docs/format.md, "Remotes").
//! [`push`] sends the rows the branch's newest manifest lacks, with new tables for the
//! buckets whose roots differ; [`pull`] fetches, of the buckets whose roots differ from
//! the store's, the rows the store lacks, checks every row, leaf, root and vector before
//! it writes, and applies the difference in one write transaction that commits only on
//! the manifest's state root.
//!
//! ```no_run
//! use cfs_remote::{FolderRemote, PullTarget, fetch_manifest, pull, push, PushOptions};
//! # fn main() -> Result<(), cfs_remote::RemoteError> {
//! let store = cfs_store::Store::open(std::path::Path::new(".cfs/store.redb"))?;
//! let remote = FolderRemote::new("/srv/cfs-remote");
//! push(&store, &remote, &PushOptions::default())?;
//! let (name, manifest) = fetch_manifest(&remote, &PullTarget::default())?;
//! pull(&store, &remote, &name, &manifest)?;
//! # Ok(()) }
//! ```

mod bundle;
mod check;
mod error;
mod fetch;
mod folder;
mod format;
mod gc;
mod groups;
mod http;
mod incoming;
mod pull;
mod push;
mod refs;
mod remote;
mod rows;
mod s3;

pub use bundle::{BundleRemote, BundleReport, create_bundle};
pub use check::{CheckReport, check};
pub use error::{RemoteError, Result};
pub use fetch::Progress;
pub use folder::FolderRemote;
pub use format::{BucketEntry, FORMAT, Manifest, ObjectName, VECTOR_TAG};
pub use gc::{GcOptions, GcReport, gc};
pub use http::HttpRemote;
pub use pull::{PullReport, pull, pull_new, pull_with, settings_of};
pub use push::{PushOptions, PushReport, push};
pub use refs::{DEFAULT_BRANCH, PullTarget, fetch_manifest};
pub use remote::{MemoryRemote, Remote, open};
pub use s3::{S3Config, S3Remote};
