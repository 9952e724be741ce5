//! Haskell files preprocessed with CPP: the grammar's scanner reads an `#if`'s first
//! branch as code and swallows everything from `#else` or `#elif` to `#endif` as one
//! `cpp` node, so the definitions of the other branches are no symbols (aeson's
//! `KeyMap.hs` defines its whole API twice, for two map types; spec section 18).

use super::first_word;

/// `src` with each line that starts with `#`, optional blanks, then `else` or `elif`
/// blanked to spaces (its LF kept): byte for byte as long, so that every branch reads as
/// code. `None` when there is none.
pub(super) fn cpp_branches_opened(src: &str) -> Option<String> {
    let whole = |line: &str| Some((0, line.trim_end_matches(['\n', '\r']).len()));
    super::lines_blanked(src, |line| whole(line).filter(|_| opens_branch(line)))
}

/// `#else` or `#elif ...` (the directive alone, not `#elsewhere`).
fn opens_branch(line: &str) -> bool {
    let Some(rest) = line.strip_prefix('#') else {
        return false;
    };
    matches!(
        first_word(rest.trim_start_matches([' ', '\t'])),
        "else" | "elif"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn else_and_elif_lines_are_blanked_and_nothing_else() {
        let src = "#if A\nx = 1\n#else\nx = 2\n# elif B\nx = 3\n#elsewhere\n#endif\n";
        let out = cpp_branches_opened(src).unwrap();
        assert_eq!(out.len(), src.len());
        assert_eq!(
            out,
            "#if A\nx = 1\n     \nx = 2\n        \nx = 3\n#elsewhere\n#endif\n"
        );
        assert_eq!(cpp_branches_opened("#if A\nx = 1\n#endif\n"), None);
    }
}
