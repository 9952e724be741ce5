//! cfs-store: the storage engine.
//!
//! One crash-safe redb file holds the committed state (the five tables of
//! `docs/spec.md`), its indexes, the bucket roots that make a commit rehash only what it
//! touched, the state chain, and caches (stat cache, embedding cache); the chunks'
//! canonical encodings lie in an append-only log beside it, which each commit syncs
//! before it names the new bytes. Every write is one redb transaction. `docs/format.md` describes every table and the commit protocol.
//!
//! ```no_run
//! use cfs_store::{Settings, Store, SyncOptions};
//! use cfs_ingest::{Embedder, HashEmbedder};
//!
//! let embedder = HashEmbedder::default();
//! let options = SyncOptions::default();
//! let settings = Settings { chunk: options.config.chunk, model_id: embedder.model_id().into() };
//! let store = Store::create(std::path::Path::new(".cfs/store.redb"), settings)?;
//! let report = store.sync(std::path::Path::new("."), &options, &embedder, &|_| {})?;
//! println!("{} added, root {}", report.added, report.root);
//! # Ok::<(), cfs_store::StoreError>(())
//! ```

mod backend;
mod bulk;
mod caches;
mod chunk_log;
mod embed;
mod error;
mod files;
mod gc;
pub mod git;
mod read;
mod repair;
mod replica;
mod rows;
mod scan;
mod spill;
mod store;
mod sync;
mod tables;
mod vectors;
mod verify;
pub mod watch;
mod write;

pub use chunk_log::log_path as chunk_log_path;
pub use embed::{
    DEFAULT_EMBED_BATCH_TEXTS, DEFAULT_VECTOR_SAMPLE, EmbedOptions, EmbedProgress, EmbedReport,
    EmbedStatus, VectorCheck, spread,
};
pub use error::{Result, StoreError, guard, panic_message};
pub use files::replace_file;
pub use gc::{GcReport, ShrinkPolicy};
pub use read::{Counts, ReadTxn, TableUsage, TypeCount};
pub use repair::{Salvage, SalvagedVector, salvage_vectors};
pub use replica::{EMBEDDING_PAYLOAD_LEN, RowLeaf, RowPayload};
pub use scan::{DocumentScan, IndexedDocument};
pub use store::{MAGIC, SCHEMA_VERSION, Settings, Store};
pub use sync::{
    DEFAULT_BATCH_FILES, DEFAULT_PARSE_FILES, DEFAULT_SYNC_MEMORY, SyncOptions, SyncProgress,
    SyncReport, WalkAhead,
};
pub use vectors::vector_hash;
pub use verify::{VerifyReport, verify};
pub use write::{NewDocument, WriteTxn};

impl Store {
    /// Recomputes every root and checks every rule on the latest committed state.
    pub fn verify(&self) -> Result<VerifyReport> {
        error::guard(self.path(), || verify(&self.begin_read()?))
    }
}
