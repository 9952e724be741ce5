//! The chunk log: the canonical encoding of every chunk, end to end, in a file beside
//! the store file (`<store file>.chunks`); a `CHUNKS` row holds the chunk's leaf and
//! where its encoding lies (`tables::Extent`).
//!
//! Chunk texts are most of a store's bytes. In the store file they were written at the
//! commit, one page at a time, after the last file was parsed; in the log they are
//! appended in large writes while later files parse, and only synced at the commit
//! (docs/proposals/text-log.md, docs/bench-log/02-store-cold-index.md).
//!
//! The rules, which keep a crash and other processes safe:
//! - The log is append-only. A 64-byte header (magic, format, a random id) comes first;
//!   the store's meta names the log's id and the length its last commit covers
//!   (`tables::LogMark`).
//! - A write transaction (which holds the store's writer lock) first cuts the log back
//!   to that length: what lies past it was appended by a transaction that never
//!   committed. At its commit it syncs the log, then commits the new length with the
//!   rows that name the new bytes. A crash before the commit leaves the previous state
//!   (and a tail the next writer cuts); after it, the new state, whose bytes are synced.
//! - Readers follow only committed extents, which lie below the committed length: an
//!   appending writer never changes a byte they read.
//! - Removing a chunk leaves its bytes where they are; the commit adds their length to
//!   the count in meta (`LogMark::dead`), which decides when to compact.
//! - A compaction (`gc.rs`) writes the live encodings to `<log>.new` under a new id,
//!   syncs it, commits the rows that point into it, then renames it over the log; an
//!   open that finds meta naming the `.new` file's id finishes the rename.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::StorageBackend;

use crate::error::{Result, StoreError, io_error};
use crate::tables::{Extent, LogMark};

/// Bytes of the header: magic (16), format (u32 LE), id (16), zeros.
pub const HEADER_LEN: u64 = 64;
const MAGIC: &[u8; 16] = b"cfs chunk log\0\0\0";
const FORMAT: u32 = 1;

/// Bytes a write transaction gathers before it writes them to the log.
const APPEND_BUFFER: usize = 1 << 20;

/// The chunk log of the store file `store`: `<store file>.chunks`.
pub fn log_path(store: &Path) -> PathBuf {
    with_suffix(store, ".chunks")
}

/// Where a compaction writes the new log before it takes the log's place.
pub(crate) fn new_log_path(log: &Path) -> PathBuf {
    with_suffix(log, ".new")
}

/// `path` with `suffix` after its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Moves a compaction's new log at `new_path` over the log at `path`, once the commit
/// that names it is durable. Another process may have moved it first (an open finishes
/// a compaction whose process stopped): the log is then in place already.
pub(crate) fn take_new_log(new_path: &Path, path: &Path) -> Result<()> {
    match std::fs::rename(new_path, path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(path, e)),
        _ => Ok(()),
    }
}

/// An open chunk log: its storage (a file, or a backend given by the caller) and the id
/// its header holds.
pub(crate) struct ChunkLog {
    storage: Box<dyn StorageBackend>,
    /// The log's file once more, for a log in a writable file: appends of many chunks
    /// are written from where they lie by one vectored write (`write_parts`).
    file: Option<std::fs::File>,
    id: [u8; 16],
    /// The file, or the label of a backend, named in errors.
    label: PathBuf,
}

impl std::fmt::Debug for ChunkLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkLog")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl ChunkLog {
    /// Writes a new log's header, with a new id, on empty `storage`, and syncs it.
    pub(crate) fn create(storage: Box<dyn StorageBackend>, label: &Path) -> Result<Self> {
        let log = Self {
            storage,
            file: None,
            id: new_id(label),
            label: label.to_path_buf(),
        };
        let mut header = [0u8; HEADER_LEN as usize];
        header[..16].copy_from_slice(MAGIC);
        header[16..20].copy_from_slice(&FORMAT.to_le_bytes());
        header[20..36].copy_from_slice(&log.id);
        log.io(log.storage.set_len(0))?;
        log.io(log.storage.write(0, &header))?;
        log.io(log.storage.sync_data())?;
        Ok(log)
    }

    /// Opens a log, checking its header.
    pub(crate) fn open(storage: Box<dyn StorageBackend>, label: &Path) -> Result<Self> {
        let mut header = [0u8; HEADER_LEN as usize];
        let too_short = storage.len().map_or(true, |len| len < HEADER_LEN);
        if too_short || storage.read(0, &mut header).is_err() {
            return Err(corrupted(label, "shorter than its header"));
        }
        if &header[..16] != MAGIC {
            return Err(corrupted(label, "not a cfs chunk log"));
        }
        if header[16..20] != FORMAT.to_le_bytes() {
            return Err(corrupted(label, "a chunk log of another format"));
        }
        Ok(Self {
            storage,
            file: None,
            id: header[20..36].try_into().expect("16 bytes"),
            label: label.to_path_buf(),
        })
    }

    /// Creates the log file at `path` (replacing any file there: a new store's log).
    pub(crate) fn create_file(path: &Path) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|source| io_error(path, source))?;
        let own = file.try_clone().map_err(|source| io_error(path, source))?;
        let log = Self::create(Box::new(LogFile(file)), path)?;
        Ok(Self {
            file: Some(own),
            ..log
        })
    }

    /// Opens the log file at `path` that `mark` names. A compaction that committed but
    /// has not yet moved its new log over the old one left the log meta names at
    /// `<log>.new`: a writable open finishes the move, a read-only one reads it there.
    pub(crate) fn open_named(path: &Path, mark: &LogMark, read_only: bool) -> Result<Self> {
        let new_path = new_log_path(path);
        let new = new_path
            .exists()
            .then(|| Self::open_file(&new_path, read_only).ok())
            .flatten();
        if let Some(new) = new.filter(|new| new.id == mark.id) {
            new.check(mark)?;
            if read_only {
                return Ok(new);
            }
            // Moved, then opened where it now is.
            take_new_log(&new_path, path)?;
        }
        let log = Self::open_file(path, read_only)?;
        log.check(mark)?;
        Ok(log)
    }

    /// Opens the log file at `path`, for writing too unless `read_only`.
    pub(crate) fn open_file(path: &Path, read_only: bool) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(!read_only)
            .open(path)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound => corrupted(path, "the store's chunk log is missing"),
                _ => io_error(path, source),
            })?;
        let own = match read_only {
            true => None,
            false => Some(file.try_clone().map_err(|source| io_error(path, source))?),
        };
        let log = Self::open(Box::new(LogFile(file)), path)?;
        Ok(Self { file: own, ..log })
    }

    /// The id in the header.
    pub(crate) fn id(&self) -> [u8; 16] {
        self.id
    }

    /// The file, or the backend's label.
    pub(crate) fn label(&self) -> &Path {
        &self.label
    }

    /// The bytes of the log now (committed or not).
    pub(crate) fn len(&self) -> Result<u64> {
        self.io(self.storage.len())
    }

    /// The chunk encoding at `extent`, which a state covering `committed` bytes names.
    pub(crate) fn read(&self, extent: Extent, committed: u64) -> Result<Vec<u8>> {
        if extent.offset < HEADER_LEN || extent.end() > committed {
            return Err(corrupted(
                &self.label,
                &format!(
                    "a chunk at {}..{} lies outside the committed {} bytes",
                    extent.offset,
                    extent.end(),
                    committed
                ),
            ));
        }
        let mut out = vec![0u8; extent.len as usize];
        self.storage
            .read(extent.offset, &mut out)
            .map_err(|e| corrupted(&self.label, &format!("reading a chunk: {e}")))?;
        Ok(out)
    }

    /// The error of a chunk of this log that does not decode (`e`): damage of the log.
    pub(crate) fn undecodable(&self, e: &cfs_core::CoreError) -> StoreError {
        let what = format!("a chunk does not decode ({e}); cfs repair rebuilds the store");
        corrupted(&self.label, &what)
    }

    /// Cuts the log back to the committed `mark` before a write transaction appends:
    /// bytes past it are a transaction's that never committed. A log shorter than
    /// the mark, or of another id, is `Corrupted`.
    pub(crate) fn cut_to(&self, mark: &LogMark) -> Result<()> {
        if self.check(mark)? > mark.len {
            self.io(self.storage.set_len(mark.len))?;
        }
        Ok(())
    }

    /// Writes `parts` one after the other at `offset`: from where they lie, by vectored
    /// writes, for a log in a file; gathered into one buffer for another backend.
    fn write_parts(&self, offset: u64, parts: &[&[u8]]) -> Result<()> {
        match &self.file {
            Some(file) => {
                self.io(write_all_vectored_at(file, offset, parts))?;
                let len: usize = parts.iter().map(|p| p.len()).sum();
                start_writeback(file, offset, len);
                Ok(())
            }
            None => self.io(self.storage.write(offset, &parts.concat())),
        }
    }

    /// Makes every byte written durable.
    pub(crate) fn sync(&self) -> Result<()> {
        self.io(self.storage.sync_data())
    }

    /// Checks that this is the log `mark` names and that it holds the committed bytes;
    /// returns its length.
    pub(crate) fn check(&self, mark: &LogMark) -> Result<u64> {
        if self.id != mark.id {
            return Err(corrupted(&self.label, "not the chunk log the store names"));
        }
        let len = self.len()?;
        if len < mark.len {
            return Err(corrupted(
                &self.label,
                &format!("{len} bytes, shorter than the {} committed", mark.len),
            ));
        }
        Ok(len)
    }

    fn io<T>(&self, r: std::io::Result<T>) -> Result<T> {
        r.map_err(|source| io_error(&self.label, source))
    }
}

/// The bytes a write transaction appends to the log, gathered into large writes.
#[derive(Debug)]
pub(crate) struct Appender {
    log: Arc<ChunkLog>,
    /// Bytes of the log written to its storage.
    written: u64,
    /// Gathered bytes, to be written at `written`.
    buffer: Vec<u8>,
    /// The committed mark the transaction started from.
    start: LogMark,
    /// Bytes of chunks this transaction removed.
    removed: u64,
}

impl Appender {
    /// Appends after the committed `mark`, the log cut back to it.
    pub(crate) fn new(log: Arc<ChunkLog>, mark: &LogMark) -> Result<Self> {
        log.cut_to(mark)?;
        Ok(Self {
            log,
            written: mark.len,
            buffer: Vec::new(),
            start: *mark,
            removed: 0,
        })
    }

    /// Appends one chunk's encoding; returns where it lies.
    pub(crate) fn append(&mut self, encoding: &[u8]) -> Result<Extent> {
        let len = u32::try_from(encoding.len())
            .map_err(|_| corrupted(&self.log.label, "a chunk over 4 GiB"))?;
        let extent = Extent {
            offset: self.end(),
            len,
        };
        if self.buffer.capacity() == 0 {
            self.buffer.reserve_exact(APPEND_BUFFER);
        }
        self.buffer.extend_from_slice(encoding);
        if self.buffer.len() >= APPEND_BUFFER {
            self.write()?;
        }
        Ok(extent)
    }

    /// Appends the encodings of many chunks (a batch of documents'): written where they
    /// lie, after what is gathered, by vectored writes (gathered into the buffer first,
    /// the 8.6 MB of the TypeScript tree's encodings were a 1 ms copy); returns where
    /// each lies.
    pub(crate) fn append_all(&mut self, encodings: &[&[u8]]) -> Result<Vec<Extent>> {
        self.write()?;
        let mut end = self.written;
        let mut extents = Vec::with_capacity(encodings.len());
        for encoding in encodings {
            let len = u32::try_from(encoding.len())
                .map_err(|_| corrupted(&self.log.label, "a chunk over 4 GiB"))?;
            extents.push(Extent { offset: end, len });
            end += u64::from(len);
        }
        self.log.write_parts(self.written, encodings)?;
        self.written = end;
        Ok(extents)
    }

    /// The log's length with what is gathered.
    pub(crate) fn end(&self) -> u64 {
        self.written + self.buffer.len() as u64
    }

    /// Counts the bytes of a removed chunk's encoding as dead.
    pub(crate) fn remove(&mut self, extent: Extent) {
        self.removed += u64::from(extent.len);
    }

    /// Whether this transaction appended anything.
    pub(crate) fn appended(&self) -> bool {
        self.end() > self.start.len
    }

    /// Whether the mark this transaction commits differs from the one it began with.
    pub(crate) fn changed(&self) -> bool {
        self.appended() || self.removed > 0
    }

    /// Writes what is gathered.
    pub(crate) fn write(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.log
            .io(self.log.storage.write(self.written, &self.buffer))?;
        self.written += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// The log, to sync it beside other work (after [`Appender::write`]).
    pub(crate) fn log(&self) -> &Arc<ChunkLog> {
        &self.log
    }

    /// The mark of what is written: what a commit records once it is synced.
    pub(crate) fn mark(&self) -> LogMark {
        LogMark {
            id: self.log.id,
            len: self.written,
            dead: (self.start.dead + self.removed).min(self.written),
        }
    }

    /// Writes and syncs every appended byte: the mark the commit records.
    pub(crate) fn finish(&mut self) -> Result<LogMark> {
        self.write()?;
        if self.appended() {
            self.log.sync()?;
        }
        Ok(self.mark())
    }
}

/// A log file: reads and writes at offsets, no locks (the store file's locks order the
/// writers).
#[derive(Debug)]
struct LogFile(std::fs::File);

impl StorageBackend for LogFile {
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.0, out, offset)
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> std::io::Result<()> {
        self.0.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.0, data, offset)?;
        start_writeback(&self.0, offset, data.len());
        Ok(())
    }
}

/// Writes `parts` one after the other at `offset` of `file`, by `pwritev` of up to
/// 1,024 parts a call, until every byte is written.
#[expect(unsafe_code)]
fn write_all_vectored_at(
    file: &std::fs::File,
    offset: u64,
    parts: &[&[u8]],
) -> std::io::Result<()> {
    use std::io::IoSlice;
    use std::os::fd::AsRawFd;
    /// The most parts one call takes (`IOV_MAX` on Linux and the BSDs).
    const MOST: usize = 1024;
    let mut slices: Vec<IoSlice<'_>> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| IoSlice::new(p))
        .collect();
    let mut rest = &mut slices[..];
    let mut at = offset;
    while !rest.is_empty() {
        let count = rest.len().min(MOST);
        // `off_t` is 32 bits on some 32-bit systems: a log past it is an error, not a
        // write at a wrapped offset.
        let position = libc::off_t::try_from(at).map_err(std::io::Error::other)?;
        // SAFETY: `IoSlice` is ABI-compatible with `struct iovec` on Unix; the first
        // `count` of `rest` are valid slices, which pwritev only reads.
        let written = unsafe {
            libc::pwritev(
                file.as_raw_fd(),
                rest.as_ptr().cast::<libc::iovec>(),
                count as libc::c_int,
                position,
            )
        };
        if written < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        at += written as u64;
        IoSlice::advance_slices(&mut rest, written as usize);
    }
    Ok(())
}

/// Starts writing `offset..offset + len` of `file` to its device, without waiting: the
/// sync at the commit then finds most of the log written already.
#[cfg(target_os = "linux")]
#[expect(unsafe_code)]
fn start_writeback(file: &std::fs::File, offset: u64, len: usize) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (
        libc::off64_t::try_from(offset),
        libc::off64_t::try_from(len),
    ) else {
        return;
    };
    // SAFETY: sync_file_range reads no memory of ours; it only starts writeback of
    // pages of the file (a failure leaves them to the sync at the commit).
    let flags = libc::SYNC_FILE_RANGE_WRITE;
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &std::fs::File, _offset: u64, _len: usize) {}

/// A new log's id: unique among the logs a store file ever has (only equality with the
/// id in meta matters, never its value).
fn new_id(label: &Path) -> [u8; 16] {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"cfs chunk log id");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.update(&now.to_le_bytes());
    hasher.update(&std::process::id().to_le_bytes());
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    hasher.update(&n.to_le_bytes());
    hasher.update(label.as_os_str().as_encoded_bytes());
    hasher.finalize().as_bytes()[..16]
        .try_into()
        .expect("16 bytes")
}

fn corrupted(path: &Path, what: &str) -> StoreError {
    StoreError::Corrupted(format!("{}: {what}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Appender, ChunkLog, HEADER_LEN};
    use crate::tables::LogMark;

    /// The mark of a new log: its header only.
    fn fresh(log: &ChunkLog) -> LogMark {
        LogMark {
            id: log.id(),
            len: HEADER_LEN,
            dead: 0,
        }
    }

    #[test]
    fn a_transaction_that_never_committed_leaves_a_tail_the_next_one_cuts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb.chunks");
        let log = Arc::new(ChunkLog::create_file(&path).unwrap());
        let start = fresh(&log);
        // Committed: two encodings, one of them past the gathering buffer.
        let mut first = Appender::new(log.clone(), &start).unwrap();
        let a = first.append(b"alpha").unwrap();
        let big = vec![7u8; (1 << 20) + 3];
        let b = first.append(&big).unwrap();
        let committed = first.finish().unwrap();
        assert_eq!((a.offset, b.offset), (HEADER_LEN, HEADER_LEN + 5));
        assert_eq!(committed.len, b.end());
        // Not committed: appended and written, then given up.
        let mut second = Appender::new(log.clone(), &committed).unwrap();
        second.append(&big).unwrap();
        second.finish().unwrap();
        assert!(log.len().unwrap() > committed.len);
        // The next transaction starts where the commit ended.
        let mut third = Appender::new(log.clone(), &committed).unwrap();
        assert_eq!(log.len().unwrap(), committed.len);
        assert_eq!(third.append(b"gamma").unwrap().offset, committed.len);
        assert_eq!(log.read(a, committed.len).unwrap(), b"alpha");
        assert_eq!(log.read(b, committed.len).unwrap(), big);
        // Nothing past the committed length is read, nor the header.
        let past = crate::tables::Extent {
            offset: committed.len,
            len: 5,
        };
        assert!(log.read(past, committed.len).is_err());
        let header = crate::tables::Extent { offset: 0, len: 5 };
        assert!(log.read(header, committed.len).is_err());
        // A reopened log has the same id.
        assert_eq!(ChunkLog::open_file(&path, true).unwrap().id(), log.id());
    }

    #[test]
    fn many_encodings_appended_at_once_lie_where_their_extents_say() {
        // More parts than one vectored write takes, some empty, after a gathered one;
        // in a file (vectored writes) and on a backend without one (gathered).
        let parts: Vec<Vec<u8>> = (0..2_500usize)
            .map(|i| vec![(i % 251) as u8; (i * 37) % 1_100])
            .collect();
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let dir = tempfile::tempdir().unwrap();
        let in_file = ChunkLog::create_file(&dir.path().join("store.redb.chunks")).unwrap();
        let other = dir.path().join("other.chunks");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&other)
            .unwrap();
        let on_backend = ChunkLog::create(Box::new(super::LogFile(file)), &other).unwrap();
        for log in [in_file, on_backend] {
            let log = Arc::new(log);
            let mut appender = Appender::new(log.clone(), &fresh(&log)).unwrap();
            let first = appender.append(b"first").unwrap();
            let extents = appender.append_all(&refs).unwrap();
            let committed = appender.finish().unwrap();
            assert_eq!(extents[0].offset, first.end());
            assert_eq!(committed.len, extents[extents.len() - 1].end());
            assert_eq!(log.read(first, committed.len).unwrap(), b"first");
            for (extent, part) in extents.iter().zip(&parts) {
                assert_eq!(&log.read(*extent, committed.len).unwrap(), part);
            }
        }
    }

    #[test]
    fn a_new_log_moved_by_another_process_first_is_in_place_already() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb.chunks");
        let new_path = super::new_log_path(&path);
        assert_eq!(new_path, dir.path().join("store.redb.chunks.new"));
        std::fs::write(&new_path, b"new").unwrap();
        std::fs::write(&path, b"old").unwrap();
        super::take_new_log(&new_path, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        // Gone already: the other process moved it.
        super::take_new_log(&new_path, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }
}
