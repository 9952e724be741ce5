//! HTML to readable text with a real HTML parser (html2text, pinned), then chunked as
//! text. Scripts, styles and markup are dropped; links keep their text. The result is
//! the document's canonical text, so chunk offsets refer to it, not to the HTML source.

use cfs_core::MetaEntry;

/// Line width given to html2text; wide enough that paragraphs are not wrapped.
pub const HTML_WIDTH: usize = 10_000;
/// Deepest element nesting converted; deeper documents are an error (html2text renders
/// recursively).
pub const MAX_HTML_DEPTH: usize = 2_000;
/// Stack for the conversion thread, so that documents up to the depth limit convert.
const HTML_STACK_BYTES: usize = 256 << 20;

/// The readable text of an HTML document and its `<title>` as metadata.
pub fn html_to_text(html: &str) -> Result<(String, Vec<MetaEntry>), String> {
    let depth = nesting_depth(html);
    if depth > MAX_HTML_DEPTH {
        return Err(format!(
            "elements nested {depth} deep, over the limit of {MAX_HTML_DEPTH}"
        ));
    }
    let owned = html.to_owned();
    let rendered = std::thread::Builder::new()
        .name("cfs-html".into())
        .stack_size(HTML_STACK_BYTES)
        .spawn(move || {
            html2text::config::plain_no_decorate()
                .allow_width_overflow()
                .string_from_read(owned.as_bytes(), HTML_WIDTH)
        })
        .map_err(|e| format!("cannot start the HTML thread: {e}"))?
        .join()
        .map_err(|_| "the HTML converter failed".to_owned())?
        .map_err(|e| e.to_string())?;
    let text: String = rendered
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim_matches('\n').to_owned();
    let metadata = title(html)
        .map(|value| {
            vec![MetaEntry {
                key: "title".into(),
                value,
            }]
        })
        .unwrap_or_default();
    Ok((if text.is_empty() { text } else { text + "\n" }, metadata))
}

/// An upper bound of element nesting: opening tags minus closing tags, at their peak.
fn nesting_depth(html: &str) -> usize {
    let bytes = html.as_bytes();
    let (mut depth, mut peak) = (0usize, 0usize);
    for i in memchr::memchr_iter(b'<', bytes) {
        match bytes.get(i + 1) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(c) if c.is_ascii_alphabetic() => {
                depth += 1;
                peak = peak.max(depth);
            }
            _ => {}
        }
    }
    peak
}

/// The text of the first `<title>` element, whitespace collapsed.
fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let text = html
        .get(start..end)?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_styles_and_markup_go() {
        let html = "<html><head><title> The  Page </title><style>p{color:red}</style>\
                    <script>var x = 1;</script></head><body><h1>Head</h1>\
                    <p>Hello <a href=\"x\">link</a> world.</p><ul><li>one</li><li>two</li></ul></body></html>";
        let (text, meta) = html_to_text(html).unwrap();
        assert!(text.contains("Hello [link] world."), "{text}");
        assert!(text.contains("Head"));
        assert!(text.contains("one") && text.contains("two"));
        assert!(!text.contains("color") && !text.contains("var x"), "{text}");
        assert_eq!(
            meta,
            vec![MetaEntry {
                key: "title".into(),
                value: "The Page".into()
            }]
        );
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let deep = "<div>".repeat(100_000);
        assert!(html_to_text(&deep).is_err());
        let ok = format!("{}x{}", "<div>".repeat(1_500), "</div>".repeat(1_500));
        assert!(html_to_text(&ok).unwrap().0.contains('x'));
    }
}
