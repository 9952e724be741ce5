//! The parser's share of ingestion, alone: what the cold-index benchmark compares a
//! whole index against. Each format is read by the parser ingestion uses for it, and no
//! further: code by the tree-sitter grammar its chunker uses (no symbols, no chunks),
//! Markdown by pulldown-cmark (every event read), JSON by serde_json (as ingestion checks
//! it), HTML by html5ever into a document tree (not rendered to text), PDF by the same
//! extractor child process ingestion runs (its text is what the PDF parser gives), other
//! text decoded as UTF-8. Nothing here feeds the store.

use crate::detect::{Format, detect_file};
use crate::pdf::{PdfConfig, extract_pdf_pages};

/// Parses one file's bytes the way ingestion would before chunking, and nothing more.
/// Returns the format it was parsed as, or `None` for a file ingestion would skip (not
/// text, no format of its own, or a PDF with no extractor under `pdf`).
pub fn parse_only(path: &str, bytes: &[u8], pdf: &PdfConfig) -> Option<Format> {
    let detected = detect_file(path, bytes).ok()?;
    if detected.format == Format::Pdf {
        if !cfg!(feature = "pdf") {
            return None;
        }
        std::hint::black_box(extract_pdf_pages(bytes, pdf).ok()?);
        return Some(Format::Pdf);
    }
    let text = std::str::from_utf8(bytes).ok()?;
    match detected.format {
        Format::Code(language) => {
            crate::code::parse_tree(text, language)?;
        }
        Format::Markdown => {
            let events = pulldown_cmark::Parser::new_ext(text, crate::markdown::options());
            std::hint::black_box(events.count());
        }
        Format::Json => {
            // A file that does not parse still cost its parse; ingestion reports it.
            let parsed = serde_json::from_str::<serde::de::IgnoredAny>(text);
            std::hint::black_box(parsed.is_ok());
        }
        Format::Html => {
            let dom = html2text::config::plain_no_decorate().parse_html(text.as_bytes());
            std::hint::black_box(dom.is_ok());
        }
        Format::Text | Format::Pdf => {}
    }
    Some(detected.format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Language;

    #[test]
    fn each_format_is_parsed_as_ingestion_would_and_skipped_files_are_none() {
        let pdf = PdfConfig::default();
        let rust = parse_only("src/lib.rs", b"fn main() { let x = 1; }\n", &pdf);
        assert_eq!(rust, Some(Format::Code(Language::Rust)));
        let md = parse_only("README.md", b"# Title\n\nSome *text*.\n", &pdf);
        assert_eq!(md, Some(Format::Markdown));
        let json = parse_only("a.json", br#"{"a": [1, 2]}"#, &pdf);
        assert_eq!(json, Some(Format::Json));
        let html = parse_only("a.html", b"<html><body><p>Hi</p></body></html>", &pdf);
        assert_eq!(html, Some(Format::Html));
        assert_eq!(
            parse_only("notes.txt", b"plain words\n", &pdf),
            Some(Format::Text)
        );
        assert_eq!(
            parse_only("blob.bin", &[0, 159, 146, 150, 0, 1], &pdf),
            None
        );
        assert_eq!(parse_only("bad.rs", &[0xff, 0xfe, b'f', b'n'], &pdf), None);
    }
}
