//! zsh scripts (completion functions, `#compdef`) read by the bash grammar: zsh's
//! parameter flags (`${(@f)...}`) and nested expansions (`${#${(z)X}[-1]}`) are errors
//! to it that run to the end of the file, so every function after the first is lost to
//! its symbols (spec section 18).

/// `src`, a zsh script (its first line `#compdef ...`, or a `#!` line naming `zsh`),
/// with each `${(FLAGS)` (`FLAGS` one or more bytes other than `)` and LF) written over
/// by `${_:-` and spaces, and each `${#${`, `${=${` and `${${` by `$_`, spaces, then
/// `${`: byte for byte as long, expansions bash reads. `None` for another script or
/// when nothing changed.
pub(super) fn parameter_flags_blanked(src: &str) -> Option<String> {
    let first = src.lines().next().unwrap_or("");
    let zsh = first.starts_with("#compdef")
        || (first.starts_with("#!") && first.split(['/', ' ']).any(|w| w == "zsh"));
    if !zsh {
        return None;
    }
    let bytes = src.as_bytes();
    let mut out = bytes.to_vec();
    let mut changed = false;
    let mut i = 0;
    while i + 2 < bytes.len() {
        if !bytes[i..].starts_with(b"${") {
            i += 1;
            continue;
        }
        let rest = &bytes[i + 2..];
        let nested = [&b"#${"[..], b"=${", b"${"]
            .into_iter()
            .find(|p| rest.starts_with(p));
        if let Some(p) = nested {
            // `${` + the prefix: `$_`, spaces, then the inner `${`.
            let len = 2 + p.len();
            out[i..i + len].fill(b' ');
            out[i..i + 2].copy_from_slice(b"$_");
            out[i + len - 2..i + len].copy_from_slice(b"${");
            changed = true;
            i += len - 2;
            continue;
        }
        if rest.first() == Some(&b'(') {
            let flags = rest[1..].iter().position(|&b| b == b')' || b == b'\n');
            if let Some(n) = flags.filter(|&n| n > 0 && rest[1 + n] == b')') {
                let len = 3 + n + 1;
                out[i..i + len].fill(b' ');
                out[i..i + 5].copy_from_slice(b"${_:-");
                changed = true;
                i += len;
                continue;
            }
        }
        i += 2;
    }
    // Only ASCII bytes were written over ASCII bytes: still UTF-8.
    changed.then(|| String::from_utf8(out).unwrap_or_else(|_| src.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_nested_expansions_are_rewritten_in_zsh_only() {
        let src = "#compdef app\nf() {\n  c=(\"${(@f)\"$(echo)\"}\")\n  printf %s \"${#${(z)LBUFFER}[-1]}\" ${=${x}}\n}\n";
        let out = parameter_flags_blanked(src).unwrap();
        assert_eq!(out.len(), src.len());
        assert_eq!(
            out,
            "#compdef app\nf() {\n  c=(\"${_:- \"$(echo)\"}\")\n  printf %s \"$_ ${_:-LBUFFER}[-1]}\" $_ ${x}}\n}\n"
        );
        assert_eq!(parameter_flags_blanked("#!/bin/bash\nx=${(@f)y}\n"), None);
        assert!(parameter_flags_blanked("#!/usr/bin/env zsh\nx=${(f)y}\n").is_some());
        assert_eq!(parameter_flags_blanked("#compdef app\nx=${y}\n"), None);
    }
}
