//! The index file's vocabulary (`docs/format.md`, "The index file" and "The delta
//! file"): its version, the alignment of its sections and their table entries, the
//! counts its header carries, a chunk record's size and "no string" mark, the chunk
//! kinds it numbers, bucket bit sets, and the delta file's name. The files that write
//! (`sections.rs`, `merged.rs`, `build.rs`), check (`index_file.rs`) and read (`mapped.rs`,
//! `mapped_docs.rs`, `delta.rs`) it all speak it; it imports none of them.

use std::path::{Path, PathBuf};

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_core::N_BUCKETS;

/// Format version of the index file.
pub const INDEX_FILE_FORMAT: u32 = 9;
/// The version of the rules that derived the roles in an index file's document
/// records, in bytes 12-15 of its header: [`crate::SEARCH_ROWS_VERSION`]. A file of
/// other rules is refused and rebuilt, as one of another format is.
pub(crate) const RULES_VERSION: u32 = crate::SEARCH_ROWS_VERSION as u32;
/// Sections start at multiples of this.
pub(crate) const ALIGN: usize = 64;

/// Where a section is and the BLAKE3 hash of its bytes.
#[derive(BorshSerialize, BorshDeserialize, Clone, Copy, Debug)]
pub(crate) struct Section {
    pub offset: u64,
    pub len: u64,
    pub hash: [u8; 32],
}

/// What a header says of a file's chunks besides the snapshot's stamp.
#[derive(Clone, Copy)]
pub(crate) struct Counts {
    pub n_chunks: u64,
    pub total_len: u64,
    /// Zero for an index file; the base's header hash for a delta.
    pub base: [u8; 32],
}

/// Bytes of one chunk record (`docs/format.md`).
pub(crate) const RECORD_BYTES: usize = 48;

/// A record's string reference meaning "none".
pub(crate) const NO_STRING: u32 = u32::MAX;

/// A document chunk's place meaning "not among this file's chunks" (a delta's document
/// whose chunk stayed in the index file).
pub(crate) const NO_PLACE: u32 = u32::MAX;

/// The chunk kinds a filter can name.
pub const KINDS: [&str; 4] = ["text", "section", "code", "page"];

/// One bit per bucket.
pub(crate) type BucketBits = [u64; N_BUCKETS / 64];

/// Sets bucket `b`'s bit.
pub(crate) fn set_bit(bits: &mut BucketBits, b: usize) {
    bits[b / 64] |= 1 << (b % 64);
}

/// Whether bucket `b`'s bit is set.
pub(crate) fn bit(bits: &BucketBits, b: usize) -> bool {
    bits[b / 64] >> (b % 64) & 1 == 1
}

/// The delta file of the index file at `file`: the same name with the extension
/// `delta` (`index.cache` -> `index.delta`).
pub(crate) fn delta_path(file: &Path) -> PathBuf {
    file.with_extension("delta")
}
