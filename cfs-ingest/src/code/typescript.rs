//! TypeScript's generic call signatures on lines of their own, which the grammar
//! (`tree-sitter-typescript` 0.23.2) reads as the previous member continued when nothing
//! but a line break separates them, so that one interface's error runs to the end of
//! the file (spec section 18).

/// `src` with the line break that ends the last line of code before each line starting
/// (after blanks) with `<` written over by `;` when that line ends a member (not in
/// `{ ( [ , ; < = | & : ? .`, nor `=>`): byte for byte as long, every name where it was.
/// `None` when there is nothing to separate.
pub(super) fn separated_signatures(src: &str) -> Option<String> {
    let mut out = src.as_bytes().to_vec();
    let mut changed = false;
    // The line break ending the last line of code seen, and that line's last byte.
    let mut last_code: Option<(usize, u8, bool)> = None;
    let mut start = 0;
    for line in src.split_inclusive('\n') {
        let end = start + line.len();
        let body = line.trim_end();
        let code = body.trim_start();
        if code.starts_with('<')
            && let Some((at, last, arrow)) = last_code
            && !b"{([,;<=|&:?.".contains(&last)
            && !arrow
        {
            out[at] = b';';
            changed = true;
        }
        let comment = code.starts_with("//") || code.starts_with("/*") || code.starts_with('*');
        if !code.is_empty() && !comment && line.ends_with('\n') {
            let last = *body.as_bytes().last().unwrap_or(&b' ');
            last_code = Some((end - 1, last, body.ends_with("=>")));
        }
        start = end;
    }
    // Only an ASCII byte was written over an ASCII byte: still UTF-8.
    changed.then(|| String::from_utf8(out).unwrap_or_else(|_| src.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_line_after_a_member_is_separated_and_nothing_else_moves() {
        let src = "interface H {\n  <P>(a: P): R<\n    P\n  >\n\n  // two\n  <P,\n   Q>(a: P, b: Q): R\n}\n";
        let out = separated_signatures(src).unwrap();
        assert_eq!(out.len(), src.len());
        assert_eq!(
            out,
            "interface H {\n  <P>(a: P): R<\n    P\n  >;\n  // two\n  <P,\n   Q>(a: P, b: Q): R\n}\n"
        );
        // After an opening brace, a comma, `=` or an arrow nothing is written.
        for kept in [
            "interface H {\n  <P>(a: P): R\n}\n",
            "f(a,\n  <T>b)\n",
            "const f =\n  <T>(x: T) => x\n",
            "const f = (x) =>\n  <T>y\n",
        ] {
            assert_eq!(separated_signatures(kept), None, "{kept:?}");
        }
    }
}
