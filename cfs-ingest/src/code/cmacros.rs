//! C and C++ macros the grammar cannot expand that stand alone on a line
//! (`FMT_BEGIN_NAMESPACE`, `__BEGIN_DECLS`, `Q_OBJECT`): read as a declaration's type,
//! they join it to what follows (`FMT_BEGIN_NAMESPACE namespace detail {` reads as a
//! function named `namespace`), so that everything in the namespace is lost to its
//! symbols (spec section 18).

use super::first_word;

/// `src` with each line that holds only a macro-like name (`[A-Z_][A-Z0-9_]*`, three or
/// more characters, a letter among them; then at most blanks and a `//` comment) blanked
/// to spaces, and so each run of macro-like names that begins a declaration
/// ([`leading_macros`]): byte for byte as long, every other name where it was. `None`
/// when there is none.
pub(super) fn macro_lines_blanked(src: &str) -> Option<String> {
    super::lines_blanked(src, |line| {
        lone_macro(line).or_else(|| leading_macros(line))
    })
}

/// Where the macro-like name of a line that holds nothing else starts, and its length.
fn lone_macro(line: &str) -> Option<(usize, usize)> {
    let code = line.split("//").next().unwrap_or(line);
    let name = code.trim();
    let at = code.len() - code.trim_start().len();
    macro_like(name).then_some((at, name.len()))
}

/// A name of three or more characters from `A-Z`, `0-9` and `_`, with a letter, not
/// starting with a digit.
fn macro_like(name: &str) -> bool {
    name.len() >= 3
        && name.bytes().any(|b| b.is_ascii_uppercase())
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Words a declaration may start with after the macros before it.
const DECLARATION_WORDS: [&str; 27] = [
    "auto",
    "bool",
    "char",
    "class",
    "consteval",
    "constexpr",
    "double",
    "enum",
    "explicit",
    "extern",
    "float",
    "friend",
    "inline",
    "int",
    "long",
    "namespace",
    "short",
    "signed",
    "static",
    "struct",
    "template",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
];

/// Where a run of macro-like names that begins a declaration starts in its line, and
/// its length (to the end of its last name): after the line's blanks, and after any
/// `template <...>` (without nested `<`) and the words `static`, `inline`, `extern`,
/// `friend`, `constexpr`, `virtual` and `template` (`extern template`); one or more names, apart by blanks, not followed
/// by `(` (a macro call); followed by a declaration's word ([`DECLARATION_WORDS`]) or by
/// a name (`~Name`, `A::B` too) that a `(`, a `<` or blanks and a name, `*` or `&`
/// follow (`FMT_CONSTEXPR size_padding(int n)`, `SPDLOG_INLINE std::shared_ptr<T> get(`,
/// `GTEST_API_ Cardinality AtLeast(int n)`). The grammar reads such a macro as the type
/// of what follows: a constructor after one reads as a field with a bit width, and its
/// class runs on past its end.
fn leading_macros(line: &str) -> Option<(usize, usize)> {
    let code = line.split("//").next().unwrap_or(line);
    let mut at = code.len() - code.trim_start().len();
    loop {
        let rest = &code[at..];
        if let Some(after) = rest.strip_prefix("template") {
            let after = after.trim_start();
            if let Some(open) = after.strip_prefix('<') {
                let close = open.find('>')?;
                if open[..close].contains('<') {
                    return None;
                }
                at = code.len() - open[close + 1..].trim_start().len();
                continue;
            }
        }
        let word = first_word(rest);
        if matches!(
            word,
            "static" | "inline" | "extern" | "friend" | "constexpr" | "virtual" | "template"
        ) {
            at = code.len() - rest[word.len()..].trim_start().len();
            continue;
        }
        break;
    }
    let start = at;
    let mut end = at;
    loop {
        let rest = &code[end..];
        let word = first_word(rest);
        if !macro_like(word) {
            break;
        }
        if rest[word.len()..].trim_start().starts_with('(') {
            return None;
        }
        end += word.len();
        end = code.len() - code[end..].trim_start_matches([' ', '\t']).len();
    }
    let run = code[start..end].trim_end();
    (!run.is_empty() && declaration_follows(code[end..].trim_start())).then_some((start, run.len()))
}

/// Whether `rest` starts what follows a declaration's macros (see [`leading_macros`]).
fn declaration_follows(rest: &str) -> bool {
    let word = first_word(rest);
    if DECLARATION_WORDS.contains(&word) {
        return true;
    }
    // A name, qualified or a destructor's.
    let mut at = usize::from(rest.starts_with('~'));
    loop {
        let word = first_word(&rest[at..]);
        if word.is_empty() || word.starts_with(|c: char| c.is_ascii_digit()) {
            return false;
        }
        at += word.len();
        match rest[at..].strip_prefix("::") {
            Some(more) => at = rest.len() - more.trim_start_matches('~').len(),
            None => break,
        }
    }
    let after = &rest[at..];
    let spaced = after.trim_start_matches([' ', '\t']);
    after.starts_with(['(', '<'])
        || spaced.starts_with('(')
        || (spaced.len() < after.len()
            && spaced
                .starts_with(|c: char| c.is_ascii_alphabetic() || matches!(c, '_' | '*' | '&')))
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

    #[test]
    fn macros_that_begin_a_declaration_are_blanked_and_nothing_else() {
        for (src, blanked) in [
            (
                "  FMT_CONSTEXPR size_padding(int n)\n",
                "                size_padding(int n)\n",
            ),
            (
                "template <typename T> FMT_CONSTEXPR auto f() -> int {\n",
                "template <typename T>               auto f() -> int {\n",
            ),
            (
                "FMT_EXPORT template <typename T> class foo;\n",
                "           template <typename T> class foo;\n",
            ),
            (
                "extern template FMT_API auto vformat(string_view) -> int;\n",
                "extern template         auto vformat(string_view) -> int;\n",
            ),
            (
                "SPDLOG_INLINE std::shared_ptr<logger> get(const std::string &name)\n",
                "              std::shared_ptr<logger> get(const std::string &name)\n",
            ),
            (
                "GTEST_API_ Cardinality AtLeast(int n);\n",
                "           Cardinality AtLeast(int n);\n",
            ),
            (
                "FMT_CONSTEXPR20 ~basic_memory_buffer() { deallocate(); }\n",
                "                ~basic_memory_buffer() { deallocate(); }\n",
            ),
            (
                "SPDLOG_INLINE spdlog::logger::logger(const logger &other)\n",
                "              spdlog::logger::logger(const logger &other)\n",
            ),
        ] {
            assert_eq!(
                macro_lines_blanked(src).as_deref(),
                Some(blanked),
                "{src:?}"
            );
        }
        for kept in [
            "template <typename T, FMT_ENABLE_IF(is_integral<T>::value)>\n",
            "  FMT_ASSERT(x, \"y\");\n",
            "  LOG_INFO << \"x\";\n",
            "  return MAX_SIZE;\n",
            "int MAX = 1;\n",
            "FOO = 2;\n",
            "  X + y;\n",
        ] {
            assert_eq!(macro_lines_blanked(kept), None, "{kept:?}");
        }
    }
}
