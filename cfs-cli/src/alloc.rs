//! The process's allocator settings (glibc only).
//!
//! glibc raises its threshold for serving large allocations by `mmap` each time such a
//! block is freed (up to 32 MiB), after which the large, short-lived buffers of a sync
//! (a parse group's files, staged rows, encoded rows) come from the heap arenas of
//! whichever threads made them and stay there, fragmented, when freed. A fixed threshold
//! returns them to the system when freed: a cold index of a 104 MB tree peaks at about
//! 450 MB instead of 570 MB, at the same speed (docs/benchmarks.md, Store).
//!
//! A fixed threshold also fixes the heap's trim threshold at glibc's 128 KiB, so a
//! thread's heap shrank and grew again by a few pages at a time (an `mprotect` and fresh
//! page faults each time). The heaps grow and stay grown by 64 MiB of address space
//! instead (the top pad; pages are only resident once touched): a cold index of the
//! Python library takes 4.5% less time, of a Rust tree 5%. Each heap then keeps up to
//! that much freed memory resident, so there are as many heaps as cores (glibc makes up
//! to eight per core, one per thread here): the 110 MB registry tree's cold index peaks
//! at 390-400 MB instead of 470-480 MB without either setting and 560-570 MB with the
//! pad alone (docs/benchmarks.md, "The cold index as a process").

#![allow(unsafe_code)]

/// Allocations of at least this many bytes are mapped on their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: std::ffi::c_int = 128 << 10;

/// Address space a heap grows by, and keeps free at its top when it shrinks.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: std::ffi::c_int = 64 << 20;

/// Applies the settings; call once, first thing in `main`.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// `M_TOP_PAD`, `M_MMAP_THRESHOLD` and `M_ARENA_MAX` of glibc's `<malloc.h>`.
        const M_TOP_PAD: std::ffi::c_int = -2;
        const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
        const M_ARENA_MAX: std::ffi::c_int = -8;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = std::ffi::c_int::try_from(cores).unwrap_or(std::ffi::c_int::MAX);
        unsafe extern "C" {
            fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        // SAFETY: mallopt only changes allocator parameters; it is called before any
        // other thread exists. A failure (0) leaves glibc's defaults, which are correct.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            mallopt(M_TOP_PAD, TOP_PAD);
            mallopt(M_ARENA_MAX, arenas);
        }
    }
}
