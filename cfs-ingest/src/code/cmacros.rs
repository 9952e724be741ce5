//! C and C++ macros the grammar cannot expand that stand alone on a line
//! (`FMT_BEGIN_NAMESPACE`, `__BEGIN_DECLS`, `Q_OBJECT`): read as a declaration's type,
//! they join it to what follows (`FMT_BEGIN_NAMESPACE namespace detail {` reads as a
//! function named `namespace`), so that everything in the namespace is lost to its
//! symbols (spec section 18).

/// `src` with each line that holds only a macro-like name (`[A-Z_][A-Z0-9_]*`, three or
/// more characters, a letter among them; then at most blanks and a `//` comment) blanked
/// to spaces: byte for byte as long, every other name where it was. `None` when there
/// is none.
pub(super) fn macro_lines_blanked(src: &str) -> Option<String> {
    let mut out = src.as_bytes().to_vec();
    let mut changed = false;
    let mut start = 0;
    for line in src.split_inclusive('\n') {
        if let Some((at, len)) = lone_macro(line) {
            out[start + at..start + at + len].fill(b' ');
            changed = true;
        }
        start += line.len();
    }
    // Only ASCII bytes were written over ASCII bytes: still UTF-8.
    changed.then(|| String::from_utf8(out).unwrap_or_else(|_| src.to_owned()))
}

/// Where the macro-like name of a line that holds nothing else starts, and its length.
fn lone_macro(line: &str) -> Option<(usize, usize)> {
    let code = line.split("//").next().unwrap_or(line);
    let name = code.trim();
    let at = code.len() - code.trim_start().len();
    let macro_like = name.len() >= 3
        && name.bytes().any(|b| b.is_ascii_uppercase())
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    macro_like.then_some((at, name.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_macros_are_blanked_and_nothing_else() {
        let src = "FMT_BEGIN_NAMESPACE\nnamespace detail {\n  Q_OBJECT  // moc\nint f();\n}\nFMT_END_NAMESPACE\n";
        let out = macro_lines_blanked(src).unwrap();
        assert_eq!(out.len(), src.len());
        assert_eq!(
            out,
            "                   \nnamespace detail {\n            // moc\nint f();\n}\n                 \n"
        );
        for kept in [
            "int MAX;\n",
            "#define FOO\n",
            "  return X;\n",
            "AB\n",
            "Foo_BAR\n",
            "__\n",
            "123_A\n",
        ] {
            assert_eq!(macro_lines_blanked(kept), None, "{kept:?}");
        }
    }
}
