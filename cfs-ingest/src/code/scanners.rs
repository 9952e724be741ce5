//! Texts that a grammar's external scanner cannot survive, told from the text before
//! any parse (spec section 18). A scanner is C code inside the grammar crate: one that
//! loops forever, overruns the 1,024 bytes tree-sitter gives it to save its state
//! (tree-sitter then aborts the process) or recurses off the stack ends the process, so
//! a file that could make it do so is chunked as text. Each rule is a bound that real
//! code stays far inside; YAML's is in `config.rs`, Ruby's in `ruby.rs`.

/// True when the last line of `text` (after its last LF) holds an `@`. The Kotlin
/// grammar's scanner reads on from an `@` to the next white space (or, past a `(`, to
/// the next LF) without looking for the text's end, and where no LF follows it never
/// returns (found by fuzzing: `class tty`, two LFs, `@Supp` and two U+FFFD, `e`).
pub(super) fn kotlin_annotation_on_last_line(text: &str) -> bool {
    text.rsplit('\n')
        .next()
        .is_some_and(|last| last.contains('@'))
}

/// The indentation width from which a Python file is not parsed.
pub(super) const PYTHON_MAX_INDENT: usize = 256;

/// True when the Python grammar's scanner could count an indentation of
/// [`PYTHON_MAX_INDENT`] or more. It saves each open block's indentation in two bytes
/// (and up to 255 bytes of open strings) and overruns its 1,024 bytes past about 383
/// to 511 blocks; the blocks' indentations rise strictly, so under this width they
/// cannot be that many. It counts as the scanner does: from each LF, CR or form feed
/// (which start the count at 0), a space 1, a TAB 8, a `\` followed by an LF (or a CR
/// and an LF) nothing, the count going on past it; anything else ends the count.
pub(super) fn python_indent_too_wide(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut width = Some(0usize);
    let mut i = 0;
    while i < bytes.len() {
        width = match (width, bytes[i]) {
            (_, b'\n' | b'\r' | b'\x0c') => Some(0),
            (Some(w), b' ') => Some(w + 1),
            (Some(w), b'\t') => Some(w + 8),
            (Some(w), b'\\') => {
                let lf = i + 1 + usize::from(bytes.get(i + 1) == Some(&b'\r'));
                if bytes.get(lf) == Some(&b'\n') {
                    i = lf;
                    Some(w)
                } else {
                    None
                }
            }
            _ => None,
        };
        if width.is_some_and(|w| w >= PYTHON_MAX_INDENT) {
            return true;
        }
        i += 1;
    }
    false
}

/// The number of comment openings from which an OCaml file is not parsed.
pub(super) const OCAML_MAX_COMMENT_OPENINGS: usize = 1024;

/// True when `text` holds [`OCAML_MAX_COMMENT_OPENINGS`] or more `(*`. The OCaml
/// grammar's scanner reads a comment by calling itself for each nested `(*`, with no
/// bound: some 26,000 levels overrun a thread's 2 MiB stack (a segmentation fault), and
/// a library's caller may parse on a smaller one. Its depth is at most the number of
/// `(*` in the text; real files hold a few hundred (216 at most in the suite's sources).
pub(super) fn ocaml_comments_too_many(text: &str) -> bool {
    text.matches("(*")
        .nth(OCAML_MAX_COMMENT_OPENINGS - 1)
        .is_some()
}

/// True when a `{` of `text` is followed by ASCII digits (or none) and then a character
/// from U+0100 up, or by those digits, `..`, ASCII digits (or none) and such a
/// character. Where a brace expansion may begin, the shell grammar's scanner passes
/// each character after the `{` to C's `isdigit`, whose table ends at 255: a wider
/// one reads far past it, and where that memory is not mapped the process dies
/// (`echo {` and a Nerd Font icon, U+F02A2, did). Such a file is chunked as text.
pub(super) fn shell_brace_before_wide_char(text: &str) -> bool {
    fn past_digits(s: &str) -> &str {
        s.trim_start_matches(|c: char| c.is_ascii_digit())
    }
    text.match_indices('{').any(|(at, _)| {
        let rest = past_digits(&text[at + 1..]);
        let rest = rest.strip_prefix("..").map_or(rest, past_digits);
        rest.chars().next().is_some_and(|c| u32::from(c) >= 0x100)
    })
}
