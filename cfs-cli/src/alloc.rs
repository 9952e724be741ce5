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
//! page faults each time). The heaps grow, and stay grown, by 16 MiB of address space
//! instead (the top pad; pages are only resident once touched), and there is one heap
//! per core and one more (glibc makes up to eight per core, one per thread here, each
//! keeping its pad of freed memory; fewer heaps than allocating threads made two parse
//! threads share one, three times slower): a cold text index of the 110 MB registry tree
//! takes 5.5-5.7 s instead of 6.0-6.4 s and peaks at 410-460 MB instead of 370-380 MB; a
//! 64 MiB pad was faster still on the Python library (4.5%) but peaked at 500-600 MB
//! (docs/benchmarks.md, "The cold index as a process").

#![allow(unsafe_code)]

/// Allocations of at least this many bytes are mapped on their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: std::ffi::c_int = 128 << 10;

/// Address space a heap grows by, and keeps free at its top when it shrinks.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: std::ffi::c_int = 16 << 20;

/// Applies the settings; call once, first thing in `main`.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// `M_TOP_PAD`, `M_MMAP_THRESHOLD` and `M_ARENA_MAX` of glibc's `<malloc.h>`.
        const M_TOP_PAD: std::ffi::c_int = -2;
        const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
        const M_ARENA_MAX: std::ffi::c_int = -8;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // One heap for each parse thread and one for the thread writing the store.
        let arenas = std::ffi::c_int::try_from(cores + 1).unwrap_or(std::ffi::c_int::MAX);
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
