//! The parser's share of ingestion, alone: what the cold-index benchmark compares a
//! whole index against. Code is parsed by the tree-sitter grammar its chunker uses (no
//! symbols, no chunks), Markdown by pulldown-cmark (every event read), other text decoded
//! as UTF-8. Nothing here feeds the store.

use crate::detect::{Format, detect_file};

/// Parses one file's bytes the way ingestion would before chunking, and nothing more.
/// Returns the format it was parsed as, or `None` for a file ingestion would skip (not
/// text, or no format of its own).
pub fn parse_only(path: &str, bytes: &[u8]) -> Option<Format> {
    let detected = detect_file(path, bytes).ok()?;
    let text = std::str::from_utf8(bytes).ok()?;
    match detected.format {
        Format::Code(language) => {
            crate::code::parse_tree(text, language)?;
        }
        Format::Markdown => {
            let events = pulldown_cmark::Parser::new_ext(text, crate::markdown::options());
            std::hint::black_box(events.count());
        }
        Format::Text | Format::Json | Format::Html => {}
        Format::Pdf => return None,
    }
    Some(detected.format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Language;

    #[test]
    fn each_format_is_parsed_as_ingestion_would_and_skipped_files_are_none() {
        let rust = parse_only("src/lib.rs", b"fn main() { let x = 1; }\n");
        assert_eq!(rust, Some(Format::Code(Language::Rust)));
        let md = parse_only("README.md", b"# Title\n\nSome *text*.\n");
        assert_eq!(md, Some(Format::Markdown));
        assert_eq!(
            parse_only("notes.txt", b"plain words\n"),
            Some(Format::Text)
        );
        assert_eq!(parse_only("blob.bin", &[0, 159, 146, 150, 0, 1]), None);
        assert_eq!(parse_only("bad.rs", &[0xff, 0xfe, b'f', b'n']), None);
    }
}
