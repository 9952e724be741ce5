//! The store: one redb file holding the committed state, its indexes and caches.
//!
//! Shaped like redb: [`Store::create`] / [`Store::open`], [`Store::begin_write`] returns
//! a [`WriteTxn`] whose `commit` returns the new state root (dropping it aborts), and
//! [`Store::begin_read`] returns a [`ReadTxn`] over one committed state.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::tables::le::read_u32;
use cfs_core::{StateRoot, TableRoots};
use cfs_ingest::ChunkParams;
use redb::{Database, ReadOnlyDatabase, ReadableDatabase};

use crate::backend::AllocatingBackend;
use crate::chunk_log::{self, ChunkLog};
use crate::error::{Result, StoreError, io_error};
use crate::read::ReadTxn;
use crate::tables::{self, LogMark, encode_roots, meta};
use crate::write::WriteTxn;

/// The layout version of the store file; a store of another version is refused.
pub const SCHEMA_VERSION: u32 = 3;
/// The first meta value of every store.
pub const MAGIC: &[u8] = b"cfs store";

/// Meta keys.
/// What a store is built with; recorded at creation and checked at every sync.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Chunk sizes.
    pub chunk: ChunkParams,
    /// The embedding model id.
    pub model_id: String,
}

impl Settings {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(self.chunk.target_bytes.to_le_bytes());
        out.extend(self.chunk.max_bytes.to_le_bytes());
        out.extend(self.chunk.overlap_bytes.to_le_bytes());
        out.extend(self.model_id.as_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let chunk = ChunkParams {
            target_bytes: read_u32(bytes, 0)?,
            max_bytes: read_u32(bytes, 4)?,
            overlap_bytes: read_u32(bytes, 8)?,
        };
        let model_id = std::str::from_utf8(bytes.get(12..)?).ok()?.to_owned();
        Some(Self { chunk, model_id })
    }

    /// Fails with `ConfigMismatch` naming the first setting that differs.
    pub fn check(&self, requested: &Settings, path: &Path) -> Result<()> {
        let mismatch = |what, stored: String, requested: String| StoreError::ConfigMismatch {
            path: path.to_path_buf(),
            what,
            stored,
            requested,
        };
        if self.chunk != requested.chunk {
            return Err(mismatch(
                "chunk sizes",
                format!("{:?}", self.chunk),
                format!("{:?}", requested.chunk),
            ));
        }
        if self.model_id != requested.model_id {
            return Err(mismatch(
                "embedder",
                self.model_id.clone(),
                requested.model_id.clone(),
            ));
        }
        Ok(())
    }
}

/// Little-endian integer reads that return `None` past the end instead of panicking.
/// The redb handle of a store: one that may write, or a read-only one that never takes
/// the writer's lock (so it never waits for a writer) and never writes a byte.
pub(crate) enum Db {
    Writable(Database),
    ReadOnly(ReadOnlyDatabase),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Db::Writable(_) => "Db::Writable",
            Db::ReadOnly(_) => "Db::ReadOnly",
        })
    }
}

impl Db {
    fn begin_read(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::Writable(db) => db.begin_read(),
            Db::ReadOnly(db) => db.begin_read(),
        }
    }
}

/// Where a store's chunk log is: the file beside a store file, or a backend given with
/// the store's.
enum LogSource {
    File { read_only: bool },
    Backend(Box<dyn redb::StorageBackend>),
}

/// A cfs store.
#[derive(Debug)]
pub struct Store {
    db: Db,
    path: PathBuf,
    settings: Settings,
    /// The chunk log the latest state read names (`chunk_log.rs`); replaced when a
    /// compaction has given the store a new one.
    log: Mutex<Arc<ChunkLog>>,
    /// The chunk log's file, for a store in a file.
    log_path: Option<PathBuf>,
    /// Distinguishes the opened instances of a process (snapshots hold a transaction of one).
    pub(crate) instance: u64,
}

impl Store {
    /// Distinguishes the opened instances of this process: a search snapshot holding a
    /// read transaction of one instance never serves another.
    pub fn instance(&self) -> u64 {
        self.instance
    }
}

fn next_instance() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Store {
    /// Creates a store file at `path` (its folder is created); fails if one exists.
    ///
    /// The store and its chunk log are built under staging names beside `path` and
    /// moved into place last, the log first: the store file's rename is the commit point,
    /// so a process stopped at any moment leaves either no store at `path` or a whole
    /// one, never a file without its tables. Creations in one folder take turns.
    pub fn create(path: &Path, settings: Settings) -> Result<Self> {
        Self::create_filled(path, settings, |_| Ok::<(), StoreError>(())).map(|(store, ())| store)
    }

    /// [`Store::create`], with `fill` writing into the new store before it is moved into
    /// place (replication pulls a published state into it): a `fill` that fails, or a
    /// process that stops, leaves no store at `path`. The folder's creation turn is held
    /// until the store is in place, so no other creation in the folder writes over what
    /// this one staged.
    pub fn create_filled<T, E: From<StoreError>>(
        path: &Path,
        settings: Settings,
        fill: impl FnOnce(&Store) -> std::result::Result<T, E>,
    ) -> std::result::Result<(Self, T), E> {
        if path.exists() {
            return Err(StoreError::Exists(path.to_path_buf()).into());
        }
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        // The folders made for the store, deepest first: a creation that fails leaves
        // none of them behind (each removed only while empty).
        let made: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|d| !d.exists())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(dir).map_err(|source| io_error(dir, source))?;
        let turn = creation_turn(dir)?;
        // A store made meanwhile by the creation ahead is found, not replaced.
        if path.exists() {
            return Err(StoreError::Exists(path.to_path_buf()).into());
        }
        let staged = staging_path(path);
        let filled = Self::create_at(&staged, settings)
            .map_err(E::from)
            .and_then(|store| fill(&store))
            .and_then(|filled| {
                move_into_place(&staged, path, dir)
                    .map(|()| filled)
                    .map_err(E::from)
            });
        match filled {
            Ok(filled) => Ok((Self::open(path)?, filled)),
            Err(e) => {
                let _ = std::fs::remove_file(chunk_log::log_path(&staged));
                let _ = std::fs::remove_file(&staged);
                drop(turn);
                for folder in &made {
                    let _ = std::fs::remove_dir(folder);
                }
                Err(e)
            }
        }
    }

    /// A new store at `path` and its chunk log beside it, written over whatever is
    /// there: the staged store of [`Store::create_filled`], under its creation turn.
    fn create_at(path: &Path, settings: Settings) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|source| io_error(path, source))?;
        let log_path = chunk_log::log_path(path);
        let log = ChunkLog::create_file(&log_path)?;
        let db = shared_builder().create_with_backend(allocating(file, path)?)?;
        Self::initialize(db, path, log, Some(log_path), settings)
    }

    /// Creates a store on custom redb storage backends, one for the store file and one
    /// for its chunk log (for tests of crash safety and for embedding in other
    /// storage); `label` names it in errors.
    pub fn create_with_backend(
        backend: impl redb::StorageBackend,
        log: impl redb::StorageBackend,
        label: &Path,
        settings: Settings,
    ) -> Result<Self> {
        let db = Database::builder().create_with_backend(backend)?;
        let log = ChunkLog::create(Box::new(log), &chunk_log::log_path(label))?;
        Self::initialize(db, label, log, None, settings)
    }

    /// Opens a store on custom redb storage backends (see [`Store::create_with_backend`]).
    pub fn open_with_backend(
        backend: impl redb::StorageBackend,
        log: impl redb::StorageBackend,
        label: &Path,
    ) -> Result<Self> {
        let db = Database::builder().create_with_backend(backend)?;
        Self::from_database(Db::Writable(db), label, LogSource::Backend(Box::new(log)))
    }

    /// Opens a store on custom backends without ever writing to them (see
    /// [`Store::open_read_only`]).
    pub fn open_read_only_with_backend(
        backend: impl redb::StorageBackend,
        log: impl redb::StorageBackend,
        label: &Path,
    ) -> Result<Self> {
        let db = Database::builder()
            .open_read_only_with_backend(backend)
            .map_err(|e| read_only_error(e, label))?;
        Self::from_database(Db::ReadOnly(db), label, LogSource::Backend(Box::new(log)))
    }

    fn initialize(
        db: Database,
        path: &Path,
        log: ChunkLog,
        log_path: Option<PathBuf>,
        settings: Settings,
    ) -> Result<Self> {
        let mark = LogMark {
            id: log.id(),
            len: chunk_log::HEADER_LEN,
            dead: 0,
        };
        let txn = db.begin_write()?;
        {
            for def in tables::ALL {
                txn.open_table(def)?;
            }
            let mut meta = txn.open_table(tables::META)?;
            meta.insert(meta::MAGIC.as_bytes(), MAGIC)?;
            meta.insert(
                meta::SCHEMA_VERSION.as_bytes(),
                &SCHEMA_VERSION.to_le_bytes()[..],
            )?;
            meta.insert(
                meta::SPEC_VERSION.as_bytes(),
                &cfs_core::SPEC_VERSION.to_le_bytes()[..],
            )?;
            meta.insert(meta::SETTINGS.as_bytes(), settings.encode().as_slice())?;
            meta.insert(
                meta::PARSERS.as_bytes(),
                cfs_ingest::parsers_version().as_bytes(),
            )?;
            meta.insert(
                meta::TABLE_ROOTS.as_bytes(),
                encode_roots(&TableRoots::empty()).as_slice(),
            )?;
            meta.insert(meta::SEQUENCE.as_bytes(), &0u64.to_le_bytes()[..])?;
            meta.insert(meta::CHUNK_LOG.as_bytes(), &mark.encode()[..])?;
        }
        txn.commit()?;
        Ok(Self {
            db: Db::Writable(db),
            path: path.to_path_buf(),
            settings,
            log: Mutex::new(Arc::new(log)),
            log_path,
            instance: next_instance(),
        })
    }

    /// Opens an existing store, checking its magic and versions.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with_cache(path, None)
    }

    /// [`Store::open`] for syncs that hold about `memory_bytes` (`SyncOptions::
    /// memory_bytes`): redb's page cache is a quarter of it instead of redb's gigabyte.
    /// A sync of a store that has rows reads and rewrites pages all over its tables, and
    /// filled the whole gigabyte: a third of a 640 MB store's files changed peaked at
    /// 1.66 GB, 385-400 MB with a 64 MiB cache, 2-6% slower (docs/bench-log/02-store-cold-index.md).
    /// A new store ([`Store::create`]) keeps redb's cache: its one packed load is 6%
    /// slower through a small one.
    pub fn open_for_sync(path: &Path, memory_bytes: usize) -> Result<Self> {
        Self::open_with_cache(path, Some((memory_bytes / 4).max(MIN_SYNC_CACHE)))
    }

    /// [`Store::open`] with redb's page cache at `cache` bytes instead of its default.
    pub(crate) fn open_with_cache(path: &Path, cache: Option<usize>) -> Result<Self> {
        if !path.is_file() {
            return Err(StoreError::NotFound(path.to_path_buf()));
        }
        crate::error::guard(path, || {
            let mut builder = shared_builder();
            if let Some(bytes) = cache {
                builder.set_cache_size(bytes);
            }
            // Errors said as redb's open said them: "cannot open the store: ...".
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| open_error(e.into(), path))?;
            let empty = file
                .metadata()
                .map_err(|e| open_error(e.into(), path))?
                .len()
                == 0;
            let db = if empty {
                // redb's open refuses an empty file, where a backend of ours would make one.
                builder.open(path)
            } else {
                builder.create_with_backend(allocating(file, path)?)
            };
            let db = db.map_err(|e| open_error(e, path))?;
            Self::from_database(Db::Writable(db), path, LogSource::File { read_only: false })
        })
    }

    /// Opens an existing store for reading only: the open never waits for a writer in
    /// another process (each read transaction sees the latest commit when it begins),
    /// never writes a byte of the file, and works on a read-only mount. Anything that
    /// would write ([`Store::begin_write`], a sync) fails with [`StoreError::ReadOnly`].
    pub fn open_read_only(path: &Path) -> Result<Self> {
        if !path.is_file() {
            return Err(StoreError::NotFound(path.to_path_buf()));
        }
        crate::error::guard(path, || {
            let db = shared_builder()
                .set_cache_size(READ_ONLY_CACHE)
                .open_read_only(path)
                .map_err(|e| read_only_error(e, path))?;
            // A read the storage engine fails (a truncated file) names the file, as a
            // writable open's does.
            Self::from_database(Db::ReadOnly(db), path, LogSource::File { read_only: true })
                .map_err(|e| match e {
                    StoreError::Storage(reason) => StoreError::Open {
                        path: path.to_path_buf(),
                        reason,
                    },
                    e => e,
                })
        })
    }

    /// The settings recorded in the store file at `path`, read from its meta alone: for
    /// rebuilding a store that cannot be opened (its chunk log lost, or of schema 2,
    /// whose settings are encoded alike). Reads only, as [`Store::open_read_only`].
    pub fn recorded_settings(path: &Path) -> Result<Settings> {
        crate::error::guard(path, || {
            let db = shared_builder()
                .set_cache_size(READ_ONLY_CACHE)
                .open_read_only(path)
                .map_err(|e| read_only_error(e, path))?;
            let txn = db.begin_read()?;
            read_settings(&open_meta(&txn, path)?)
        })
    }

    /// True when the store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        matches!(self.db, Db::ReadOnly(_))
    }

    /// The handle that may write, or [`StoreError::ReadOnly`].
    pub(crate) fn writable_db(&self) -> Result<&Database> {
        match &self.db {
            Db::Writable(db) => Ok(db),
            Db::ReadOnly(_) => Err(StoreError::ReadOnly(self.path.clone())),
        }
    }

    pub(crate) fn writable_db_mut(&mut self) -> Result<&mut Database> {
        match &mut self.db {
            Db::Writable(db) => Ok(db),
            Db::ReadOnly(_) => Err(StoreError::ReadOnly(self.path.clone())),
        }
    }

    fn from_database(db: Db, path: &Path, source: LogSource) -> Result<Self> {
        let (settings, mark) = {
            let txn = db.begin_read()?;
            let meta = open_meta(&txn, path)?;
            let version = read_u32(&meta_value(&meta, meta::SCHEMA_VERSION)?, 0).unwrap_or(0);
            if version != SCHEMA_VERSION {
                return Err(StoreError::SchemaMismatch {
                    path: path.to_path_buf(),
                    found: version,
                    expected: SCHEMA_VERSION,
                });
            }
            let spec = read_u32(&meta_value(&meta, meta::SPEC_VERSION)?, 0).unwrap_or(0);
            if spec != cfs_core::SPEC_VERSION {
                return Err(StoreError::SpecMismatch {
                    path: path.to_path_buf(),
                    found: spec,
                    expected: cfs_core::SPEC_VERSION,
                });
            }
            (read_settings(&meta)?, LogMark::read(&meta)?)
        };
        let (log, log_path) = match source {
            LogSource::File { read_only } => {
                let log_path = chunk_log::log_path(path);
                (
                    ChunkLog::open_named(&log_path, &mark, read_only)?,
                    Some(log_path),
                )
            }
            LogSource::Backend(storage) => {
                let log = ChunkLog::open(storage, &chunk_log::log_path(path))?;
                log.check(&mark)?;
                (log, None)
            }
        };
        Ok(Self {
            db,
            path: path.to_path_buf(),
            settings,
            log: Mutex::new(Arc::new(log)),
            log_path,
            instance: next_instance(),
        })
    }

    /// The chunk log a state marked `mark` reads: the one open, or, after a compaction
    /// in another process gave the store a new log, that one (opened, and kept).
    pub(crate) fn log_for(&self, mark: &LogMark) -> Result<Arc<ChunkLog>> {
        let mut current = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if current.id() == mark.id {
            return Ok(current.clone());
        }
        let Some(log_path) = &self.log_path else {
            return Err(StoreError::Corrupted(format!(
                "{}: not the chunk log the store names",
                current.label().display()
            )));
        };
        *current = Arc::new(ChunkLog::open_named(log_path, mark, self.is_read_only())?);
        Ok(current.clone())
    }

    /// Takes the chunk log a compaction of this store made.
    pub(crate) fn set_log(&self, log: ChunkLog) {
        *self.log.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(log);
    }

    /// The chunk log's file, for a store in a file.
    pub fn log_path(&self) -> Option<&Path> {
        self.log_path.as_deref()
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store file's size in bytes (0 for a store without a file of its own).
    pub fn file_size(&self) -> u64 {
        std::fs::metadata(self.path()).map_or(0, |m| m.len())
    }

    /// The chunk log's size in bytes (0 for a store without files of its own).
    pub fn log_size(&self) -> u64 {
        self.log_path()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len())
    }

    /// What the store is built with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Takes settings that a committed transaction recorded in meta.
    pub(crate) fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
    }

    /// Starts the single write transaction.
    pub fn begin_write(&self) -> Result<WriteTxn<'_>> {
        WriteTxn::new(self)
    }

    /// A read transaction over the latest committed state.
    pub fn begin_read(&self) -> Result<ReadTxn> {
        let txn = self.db.begin_read()?;
        let mark = LogMark::read(&txn.open_table(tables::META)?)?;
        let log = self.log_for(&mark)?;
        Ok(ReadTxn::new(txn, log, mark))
    }

    /// Records that the current state reflects the git commit `head` (and the work tree's
    /// changes since it). A meta row only: the state root does not move.
    pub fn record_git_head(&self, head: &str) -> Result<()> {
        let root = self.state_root()?;
        if self.git_head()? == Some((head.to_owned(), root)) {
            // Already recorded: no write transaction (a no-op sync stays read-only).
            return Ok(());
        }
        let txn = self.writable_db()?.begin_write()?;
        {
            let mut meta_t = txn.open_table(tables::META)?;
            let value = format!("{head} {}", root.to_hex());
            meta_t.insert(meta::GIT_HEAD.as_bytes(), value.as_bytes())?;
        }
        txn.commit()?;
        Ok(())
    }

    /// The git commit last recorded by [`Store::record_git_head`], with the state root
    /// it was recorded at.
    pub fn git_head(&self) -> Result<Option<(String, StateRoot)>> {
        let txn = self.db.begin_read()?;
        let meta_t = txn.open_table(tables::META)?;
        let Some(v) = meta_t.get(meta::GIT_HEAD.as_bytes())? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(v.value()).into_owned();
        let (head, root) = text
            .split_once(' ')
            .ok_or_else(|| StoreError::Corrupted("meta git_head".into()))?;
        let root = StateRoot::from_hex(root)
            .map_err(|_| StoreError::Corrupted("meta git_head root".into()))?;
        Ok(Some((head.to_owned(), root)))
    }

    /// The parsers the store's documents were parsed with (`meta` `parsers`), `None` in
    /// a store written before they were recorded.
    pub fn parsers(&self) -> Result<Option<String>> {
        let txn = self.db.begin_read()?;
        let meta_t = txn.open_table(tables::META)?;
        let value = meta_t.get(meta::PARSERS.as_bytes())?;
        Ok(value.map(|v| String::from_utf8_lossy(v.value()).into_owned()))
    }

    /// The current state root.
    pub fn state_root(&self) -> Result<StateRoot> {
        Ok(self.begin_read()?.table_roots()?.state_root())
    }
}

type MetaTable = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;

/// The meta table of a store file, its magic checked.
fn open_meta(txn: &redb::ReadTransaction, path: &Path) -> Result<MetaTable> {
    let meta = txn
        .open_table(tables::META)
        .map_err(|_| StoreError::Corrupted(format!("{}: no meta table", path.display())))?;
    if meta_value(&meta, meta::MAGIC)? != MAGIC {
        return Err(StoreError::Corrupted(format!(
            "{}: not a cfs store",
            path.display()
        )));
    }
    Ok(meta)
}

fn meta_value(meta: &MetaTable, key: &str) -> Result<Vec<u8>> {
    meta.get(key.as_bytes())?
        .map(|v| v.value().to_vec())
        .ok_or_else(|| StoreError::Corrupted(format!("meta key {key} missing")))
}

fn read_settings(meta: &MetaTable) -> Result<Settings> {
    Settings::decode(&meta_value(meta, meta::SETTINGS)?)
        .ok_or_else(|| StoreError::Corrupted("meta settings do not decode".into()))
}

/// A read-only open that found the file left mid-write by a process that stopped is
/// its own error: only a writable open recovers it.
fn read_only_error(e: redb::DatabaseError, path: &Path) -> StoreError {
    match e {
        redb::DatabaseError::RepairAborted => StoreError::NeedsRecovery(path.to_path_buf()),
        e => open_error(e, path),
    }
}

/// An open that failed, naming the file.
fn open_error(e: redb::DatabaseError, path: &Path) -> StoreError {
    StoreError::Open {
        path: path.to_path_buf(),
        reason: e.into(),
    }
}

/// The name a new store file is built under before it is moved to `path` (its chunk log
/// beside it, `<staged>.chunks`). A creation that stopped left them behind; the next one
/// writes over them.
fn staging_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".creating");
    path.with_file_name(name)
}

/// The turn of one creation in `dir`, held until dropped: a lock on the folder, which the
/// system lets go when the process stops. A creation takes milliseconds; one still ahead
/// after 10 s has stopped answering, and this one gives up rather than wait forever.
fn creation_turn(dir: &Path) -> Result<std::fs::File> {
    let folder = std::fs::File::open(dir).map_err(|source| io_error(dir, source))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match folder.try_lock() {
            Ok(()) => return Ok(folder),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let busy = std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another process has been creating a store here for 10 s",
                );
                return Err(io_error(dir, busy));
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io_error(dir, source)),
        }
    }
}

/// Moves the staged store at `staged` (closed) and its chunk log to `path` in `dir`: the
/// log first, then the store file, whose rename is the commit point; then makes both
/// renames durable. An error names the file that could not be put in place.
fn move_into_place(staged: &Path, path: &Path, dir: &Path) -> Result<()> {
    let log = chunk_log::log_path(path);
    std::fs::rename(chunk_log::log_path(staged), &log).map_err(|source| io_error(&log, source))?;
    std::fs::rename(staged, path).map_err(|source| io_error(path, source))?;
    sync_folder(dir)
}

/// Makes the renames in `dir` durable.
fn sync_folder(dir: &Path) -> Result<()> {
    let folder = std::fs::File::open(dir).map_err(|source| io_error(dir, source))?;
    folder.sync_all().map_err(|source| io_error(dir, source))
}

/// A writable store file's backend: redb's, with the file's blocks allocated ahead of
/// the pages written into them (`backend.rs`).
fn allocating(file: std::fs::File, path: &Path) -> Result<AllocatingBackend> {
    AllocatingBackend::new(file).map_err(|source| io_error(path, source))
}

/// The smallest page cache [`Store::open_for_sync`] gives redb.
const MIN_SYNC_CACHE: usize = 16 << 20;

/// redb's page cache of a store opened read-only. A reader (search, status, the MCP
/// server) reads a query's few pages, or every chunk once when it builds the index
/// file; the operating system's page cache, which every process shares, holds the file
/// anyway, so a private copy of a gigabyte (redb's default) only adds to the resident
/// size: 1.0 GB of the 3.3 GB peak of a first search at 1.12 M chunks.
const READ_ONLY_CACHE: usize = 64 << 20;

/// The redb builder of store files: any number of processes may have a store open at
/// once (a watcher writing, searches and status reading), write transactions taking
/// turns, each reader seeing the latest commit when its transaction begins.
fn shared_builder() -> redb::Builder {
    let mut builder = Database::builder();
    builder.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
    builder
}
