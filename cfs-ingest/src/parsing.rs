//! Which file this thread is parsing, for a handler of a fatal signal.
//!
//! A grammar's external scanner is C code inside its crate; a defect there that the
//! guards of `code/scanners.rs` do not know of can end the process (an abort, a
//! segmentation fault) with nothing said about which file did it. [`parse_file`]
//! marks the file while it parses it, and a program's signal handler (the `cfs` binary
//! installs one) can name it with [`parsing_now`]: no allocation, no lock, one read of
//! a thread-local. The mark changes nothing the parse gives.
//!
//! [`parse_file`]: crate::parse_file

#![expect(unsafe_code)]

use std::cell::Cell;

/// A file being parsed: its path's bytes (borrowed for the mark's life) and its format.
#[derive(Clone, Copy, Debug)]
struct Current {
    path: *const u8,
    len: usize,
    format: &'static str,
}

thread_local! {
    static NOW: Cell<Option<Current>> = const { Cell::new(None) };
}

/// The mark of the file this thread parses, until it drops; marks nest. It stays on
/// its thread (it is not `Send`). [`crate::parse_file`] sets one; a caller that reads
/// files through its own code may set its own.
#[derive(Debug)]
pub struct ParsingMark<'a> {
    previous: Option<Current>,
    _path: std::marker::PhantomData<(&'a str, *const u8)>,
}

impl<'a> ParsingMark<'a> {
    /// Marks `path`, read as `format`, as this thread's until the mark drops.
    pub fn new(path: &'a str, format: &'static str) -> Self {
        let current = Current {
            path: path.as_ptr(),
            len: path.len(),
            format,
        };
        Self {
            previous: NOW.with(|now| now.replace(Some(current))),
            _path: std::marker::PhantomData,
        }
    }
}

impl Drop for ParsingMark<'_> {
    fn drop(&mut self) {
        NOW.with(|now| now.set(self.previous));
    }
}

/// The path (as bytes) and format of the file this thread is parsing, if any.
///
/// # Safety
///
/// The path is borrowed from the parse in progress: call this only where that parse
/// cannot go on, from a handler of a signal raised on this thread (where it is about to
/// end the process), and do not keep the result past the handler.
pub unsafe fn parsing_now() -> Option<(&'static [u8], &'static str)> {
    let current = NOW.with(Cell::get)?;
    // SAFETY: the mark that set it lives until the parse returns, which it has not:
    // this thread is inside it (the caller's contract).
    let path = unsafe { std::slice::from_raw_parts(current.path, current.len) };
    Some((path, current.format))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mark names its file while it lives, restores the one around it when it drops,
    /// and no other thread sees it.
    #[test]
    fn a_mark_names_its_file_while_it_lives() {
        // SAFETY: each call copies the path out while the mark that set it lives.
        let now = || unsafe { parsing_now() }.map(|(p, f)| (p.to_vec(), f));
        assert_eq!(now(), None);
        let outer = String::from("src/a.rs");
        let mark = ParsingMark::new(&outer, "rust");
        assert_eq!(now(), Some((b"src/a.rs".to_vec(), "rust")));
        {
            let inner = String::from("b.sh");
            let _inner = ParsingMark::new(&inner, "shell");
            assert_eq!(now(), Some((b"b.sh".to_vec(), "shell")));
            // SAFETY: only whether there is a mark is read, on a thread that set none.
            let elsewhere = std::thread::spawn(|| unsafe { parsing_now() }.is_none());
            assert!(elsewhere.join().unwrap());
        }
        assert_eq!(now(), Some((b"src/a.rs".to_vec(), "rust")));
        drop(mark);
        assert_eq!(now(), None);
    }
}
