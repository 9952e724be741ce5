//! The index file read in place: the map of a file, and its bytes as slices of plain
//! integers. The only `unsafe` of the search crate lives here: the map (the store never
//! writes an index file in place) and the casts (types of no padding and no invalid
//! bit patterns, checked for alignment and length).

#![expect(unsafe_code)]

use std::ops::Range;

use memmap2::Mmap;

/// Maps an index file read-only.
///
/// The store's index files are never written in place (a new file is written beside
/// the old one and renamed over it), so the mapped bytes do not change while mapped.
pub(crate) fn map(file: &std::fs::File) -> std::io::Result<Mmap> {
    // SAFETY: see above: no writer of cfs changes a file after its rename; another
    // program truncating it under a running search is outside what cfs can prevent
    // (tantivy's and LMDB's maps make the same assumption).
    unsafe { Mmap::map(file) }
}

/// Types whose every bit pattern is a value and whose bytes in the file are their
/// little-endian in-memory form.
///
/// # Safety
/// Implementors must have no padding and no invalid bit patterns.
pub(crate) unsafe trait Plain: Copy {}
// SAFETY: integers and arrays of integers have no padding and no invalid values.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for i16 {}
// SAFETY: as above.
unsafe impl Plain for [u32; 2] {}
// SAFETY: as above.
unsafe impl Plain for [u8; 16] {}
// SAFETY: a chunk id is `#[repr(transparent)]` over `[u8; 16]`.
unsafe impl Plain for cfs_core::ChunkId {}

/// `bytes` as a slice of `T`; `None` when misaligned or not a whole number of `T`.
pub(crate) fn cast<T: Plain>(bytes: &[u8]) -> Option<&[T]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    // SAFETY: `T: Plain` has no invalid bit patterns, so any aligned bytes are values.
    let (head, body, tail) = unsafe { bytes.align_to::<T>() };
    (head.is_empty() && tail.is_empty()).then_some(body)
}

/// Entry `i` of a list cut by u64 end offsets: `[ends[i - 1], ends[i])`, from 0 for
/// the first; `None` when `ends` has no entry `i` or an offset does not fit.
pub(crate) fn span(ends: &[u64], i: usize) -> Option<Range<usize>> {
    let start = if i == 0 { 0 } else { *ends.get(i - 1)? };
    Some(usize::try_from(start).ok()?..usize::try_from(*ends.get(i)?).ok()?)
}
