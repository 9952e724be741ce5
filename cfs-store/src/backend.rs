//! The storage backend of writable store files: redb's file backend, with the file's
//! blocks allocated a region at a time before the first page written into the region.
//!
//! redb writes a commit's pages one 4 KiB page per call, in no order in the file, and
//! most of a cold index's commit goes into holes the file grew by. Into a hole, the
//! file system reserves a block for each page as it is written (ext4's delayed
//! allocation) and allocates them all at the sync. Allocated first, 8 MiB at a time
//! (`fallocate`), the pages are plain overwrites of allocated blocks: the Python
//! library's commit took 12 ms less and the Rust tree's 22 ms less (docs/bench-log/02-store-cold-index.md,
//! "The commit tail, 2026-11-26 (later)"). The regions are allocated only where a page
//! is written, so the file stays about as sparse as before (126 MB on disk for the Rust
//! tree's 135 MB file against 123 MB).
//!
//! Nothing else changes: every call is redb's file backend's, and an allocation that
//! fails (a file system without `fallocate`) leaves the write to proceed as it would
//! have.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// The file space allocated at once.
const REGION: u64 = 8 << 20;

/// redb's file backend with the file's blocks allocated ahead of the writes (see the
/// module).
#[derive(Debug)]
pub(crate) struct AllocatingBackend {
    inner: FileBackend,
    /// The same open file as `inner`'s, for the allocations.
    file: File,
    /// Per region (by index), how many of its bytes from its start this backend has
    /// allocated since the file was opened: a region the file ends inside is allocated
    /// further once the file has grown past what was allocated.
    allocated: Mutex<HashMap<u64, u64>>,
}

impl AllocatingBackend {
    /// A backend over `file`, open for reading and writing.
    pub(crate) fn new(file: File) -> io::Result<Self> {
        let own = file.try_clone()?;
        let inner = FileBackend::new(file).map_err(io::Error::other)?;
        Ok(Self {
            inner,
            file: own,
            allocated: Mutex::new(HashMap::new()),
        })
    }

    fn allocated(&self) -> MutexGuard<'_, HashMap<u64, u64>> {
        // A set left by a panic only names regions allocated: still true.
        self.allocated.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates what `offset..offset + len` needs of its regions and is not allocated
    /// yet, each region as far as the file reaches (the file's length asked at most
    /// once, and only when something is missing).
    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let end = offset + len;
        let mut allocated = self.allocated();
        let mut file_len = None;
        for region in (offset / REGION)..=((end - 1) / REGION) {
            let start = region * REGION;
            let needed = end.min(start + REGION) - start;
            if allocated.get(&region).is_some_and(|&n| n >= needed) {
                continue;
            }
            let file_len = match file_len {
                Some(known) => known,
                None => *file_len.insert(self.inner.len()?),
            };
            let n = REGION.min(file_len.saturating_sub(start));
            if n > 0 {
                allocate_blocks(&self.file, start, n);
                allocated.insert(region, n);
            }
        }
        Ok(())
    }
}

/// Allocates the blocks of `offset..offset + len` of `file`, within its length; a
/// failure only leaves them to be allocated as they are written.
#[cfg(target_os = "linux")]
#[expect(unsafe_code)]
fn allocate_blocks(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return;
    };
    // SAFETY: fallocate reads no memory of ours; mode 0 within the file's length only
    // allocates blocks for holes, which read as zeros before and after.
    let _ = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset, len) };
}

#[cfg(not(target_os = "linux"))]
fn allocate_blocks(_file: &File, _offset: u64, _len: u64) {}

impl StorageBackend for AllocatingBackend {
    fn len(&self) -> Result<u64, io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        // What the new end cuts off is a hole again once the file grows back.
        self.allocated().retain(|&region, n| {
            *n = (*n).min(len.saturating_sub(region * REGION).min(REGION));
            *n > 0
        });
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        self.allocate(offset, data.len() as u64)?;
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), io::Error> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn backend() -> (AllocatingBackend, tempfile::TempPath) {
        let (file, path) = tempfile::NamedTempFile::new().unwrap().into_parts();
        (AllocatingBackend::new(file).unwrap(), path)
    }

    /// Bytes of the file's blocks on disk.
    fn on_disk(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).unwrap().blocks() * 512
    }

    /// A page written into a hole allocates its region, not the whole file; reads,
    /// lengths and contents are a plain file's.
    #[test]
    fn a_write_allocates_its_region_only() {
        let (backend, path) = backend();
        backend.set_len(4 * REGION).unwrap();
        backend.write(REGION + 4096, &[7; 4096]).unwrap();
        let disk = on_disk(&path);
        if cfg!(all(target_os = "linux", target_pointer_width = "64")) {
            assert!((REGION..2 * REGION).contains(&disk), "{disk} bytes on disk");
        }
        let mut page = [0u8; 4096];
        backend.read(REGION + 4096, &mut page).unwrap();
        assert_eq!(page, [7; 4096]);
        backend.read(REGION, &mut page).unwrap();
        assert_eq!(page, [0; 4096], "allocated space reads as zeros");
        assert_eq!(backend.len().unwrap(), 4 * REGION);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len() as u64, 4 * REGION);
        assert!(bytes.iter().enumerate().all(|(i, &b)| {
            let page = (REGION + 4096) as usize..(REGION + 8192) as usize;
            b == if page.contains(&i) { 7 } else { 0 }
        }));
    }

    /// A region the file ended inside is allocated to the file's new end once it grows.
    #[test]
    fn a_region_cut_by_the_end_is_allocated_after_growth() {
        let (backend, path) = backend();
        backend.set_len(REGION / 2).unwrap();
        backend.write(4096, &[1; 4096]).unwrap();
        assert_eq!(backend.allocated().get(&0), Some(&(REGION / 2)));
        backend.set_len(2 * REGION).unwrap();
        backend.write(REGION - 4096, &[2; 4096]).unwrap();
        assert_eq!(backend.allocated().get(&0), Some(&REGION));
        if cfg!(all(target_os = "linux", target_pointer_width = "64")) {
            let disk = on_disk(&path);
            assert!((REGION..2 * REGION).contains(&disk), "{disk} bytes on disk");
        }
    }

    /// A region shortened by `set_len` is allocated again when the file grows back and
    /// a page is written there.
    #[test]
    fn a_shrunk_region_is_allocated_again() {
        let (backend, path) = backend();
        backend.set_len(2 * REGION).unwrap();
        backend.write(REGION, &[1; 4096]).unwrap();
        backend.set_len(REGION + 4096).unwrap();
        assert_eq!(backend.allocated().get(&1), Some(&4096));
        backend.set_len(2 * REGION).unwrap();
        backend.write(REGION + 8192, &[2; 4096]).unwrap();
        assert_eq!(backend.allocated().get(&1), Some(&REGION));
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[REGION as usize], 1);
        assert_eq!(bytes[(REGION + 4096) as usize], 0);
        assert_eq!(bytes[(REGION + 8192) as usize], 2);
    }
}
