//! The process's allocator settings (glibc only).
//!
//! glibc raises its threshold for serving large allocations by `mmap` each time such a
//! block is freed (up to 32 MiB), after which the large, short-lived buffers of a sync
//! (a parse group's files, staged rows, encoded rows) come from the heap arenas of
//! whichever threads made them and stay there, fragmented, when freed. A fixed threshold
//! returns them to the system when freed: a cold index of a 104 MB tree peaks at about
//! 450 MB instead of 570 MB, at the same speed (docs/bench-log/02-store-cold-index.md, "Memory of a cold index").
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
//! (docs/bench-log/02-store-cold-index.md, "The cold index as a process").
//!
//! `CFS_NO_ALLOC_TUNING=1` leaves glibc's defaults and the heaps' pages as they are
//! (for measuring what these settings gain, and for bug reports).

#![expect(unsafe_code)]

/// Whether `CFS_NO_ALLOC_TUNING` asks for glibc's defaults.
#[cfg(target_os = "linux")]
fn tuning_off() -> bool {
    std::env::var_os("CFS_NO_ALLOC_TUNING").is_some()
}

/// Allocations of at least this many bytes are mapped on their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: std::ffi::c_int = 128 << 10;

/// Address space a heap grows by, and keeps free at its top when it shrinks.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: std::ffi::c_int = 16 << 20;

/// Applies the settings; call once, first thing in `main`.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !tuning_off() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // One heap for each parse thread and one for the thread writing the store.
        let arenas = std::ffi::c_int::try_from(cores + 1).unwrap_or(std::ffi::c_int::MAX);
        // SAFETY: mallopt only changes allocator parameters; it is called before any
        // other thread exists. A failure (0) leaves glibc's defaults, which are correct.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Asks the kernel to back the heaps of this process's threads with transparent huge
/// pages (2 MiB) where it can (the machine's setting `madvise`, the common default, gives
/// them only to memory so marked; `always` needs nothing, `never` refuses).
///
/// A new store's first index touches most of its heap for the first time: a 4 KiB page
/// fault for every page a parse thread's heap grows by, 10,000 of them in a cold index
/// of a 6 MB TypeScript tree. With the heaps marked, a fault maps 2 MiB and the index
/// takes 5% less time there (1% on the Python library, equal on the Rust tree), at the
/// same peak memory on the 110 MB tree. A sync into an existing store is not marked: 150
/// changed files of the Python library took 3.5% longer with it (203 -> 210 ms), each
/// fault zeroing 2 MiB of which the short sync uses little (docs/bench-log/02-store-cold-index.md, "Huge
/// pages for the heaps").
///
/// glibc reserves each thread's heap (64 MiB of address space) when the thread first
/// allocates and grows it inside that mapping, so every heap exists once each thread of
/// rayon's pool has allocated, and the mark, a property of the mapping, covers its
/// growth. The main thread's heap grows by new mappings, which are not marked, nor are
/// allocations of 128 KiB and more, mapped on their own. It costs a read of the
/// process's memory map, once: later calls do nothing.
///
/// It also gives each of rayon's threads its heap, which is why it comes before any
/// other thread that allocates is started: with one heap per core and one more
/// (`tune`), a walk's threads alive when the pool starts took the heaps first, and
/// the two parse threads shared one (a cold index 4% slower).
pub fn huge_page_heaps() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(mark_heaps);
}

fn mark_heaps() {
    #[cfg(target_os = "linux")]
    if !tuning_off() {
        rayon::broadcast(|_| drop(std::hint::black_box(Box::new(0u64))));
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        for (start, end) in anonymous_mappings(&maps) {
            advise_huge_pages(start, end - start);
        }
    }
}

/// The address ranges of the private anonymous mappings (and the main heap) in a
/// `/proc/self/maps` listing: `start-end perms offset dev inode [name]`.
#[cfg(target_os = "linux")]
fn anonymous_mappings(maps: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    maps.lines().filter_map(|line| {
        let mut fields = line.split_ascii_whitespace();
        let range = fields.next()?;
        let perms = fields.next()?;
        let inode = fields.nth(2)?;
        let name = fields.next();
        let anonymous = inode == "0" && matches!(name, None | Some("[heap]"));
        if !anonymous || !perms.ends_with('p') {
            return None;
        }
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        (start < end).then_some((start, end))
    })
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: usize, len: usize) {
    // SAFETY: MADV_HUGEPAGE changes how the kernel backs the range, never its contents;
    // the range is a whole mapping of this process. A failure (an old kernel, a mapping
    // gone meanwhile) leaves 4 KiB pages, which are correct.
    let _ = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn only_private_anonymous_mappings_and_the_heap_are_marked() {
        let maps = "\
55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]
7f0f68000000-7f0f69001000 rw-p 00000000 00:00 0 
7f0f69001000-7f0f6c000000 ---p 00000000 00:00 0 
7f0f70000000-7f0f70100000 r--p 00000000 08:01 1234                       /usr/lib/libc.so.6
7f0f71000000-7f0f71001000 rw-s 00000000 00:05 99                         /dev/zero (deleted)
7f0f72000000-7f0f72002000 rw-p 00000000 00:00 0                          [stack:123]
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
7ffc00100000-7ffc00102000 r--p 00000000 00:00 0                          [vvar]
bogus line
";
        let marked: Vec<(usize, usize)> = anonymous_mappings(maps).collect();
        assert_eq!(
            marked,
            [
                (0x55d0_c000_0000, 0x55d0_c002_1000),
                (0x7f0f_6800_0000, 0x7f0f_6900_1000),
                (0x7f0f_6900_1000, 0x7f0f_6c00_0000),
            ]
        );
    }
}
