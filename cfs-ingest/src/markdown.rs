//! Section-aware Markdown chunking (CFS-011 section 4.4, with its errata).
//!
//! The document is split into sections at its headings (pulldown-cmark, with source
//! offsets); no chunk crosses a section. Within a section, top-level blocks (paragraphs,
//! lists, code blocks, tables, quotes) are packed whole into chunks up to the target
//! size, so a fenced code block that fits stays in one piece; a block over the maximum is
//! split by the text chunker. Each chunk records the section's heading path, which is
//! also prefixed into the text that is embedded. YAML front matter is parsed into the
//! document's metadata and kept as a chunk of its own. `docs/spec.md` ("Markdown
//! chunking") is the normative description.

use std::collections::BTreeMap;

use cfs_core::MetaEntry;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::error::IngestError;
use crate::text::{ChunkParams, chunk_text};

/// A chunk of a Markdown document: its byte span in the canonical text and its headings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkdownChunk {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// Enclosing headings, outermost first; `None` for the front matter.
    pub heading_path: Option<Vec<String>>,
}

/// A chunked Markdown document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkdownDoc {
    /// Chunks in text order.
    pub chunks: Vec<MarkdownChunk>,
    /// Front matter fields, sorted by key.
    pub metadata: Vec<MetaEntry>,
}

/// The pulldown-cmark extensions cfs enables; part of the parser version.
pub(crate) fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
}

/// The end of YAML front matter: the text opens with a `---` line and a later line is
/// `---` or `...`; the block runs to the end of that line. `None` if there is none.
fn front_matter_end(text: &str) -> Option<(usize, &str)> {
    let rest = text.strip_prefix("---\n")?;
    let mut at = 4;
    for line in rest.split_inclusive('\n') {
        let bare = line.strip_suffix('\n').unwrap_or(line);
        if bare == "---" || bare == "..." {
            let yaml = &text[4..at];
            return Some((at + line.len(), yaml));
        }
        at += line.len();
    }
    None
}

/// Front matter fields as metadata: top-level keys of a YAML mapping, values as text
/// (strings as they are, other scalars and collections as compact JSON). `None` when the
/// YAML is not a mapping, in which case there is no front matter.
fn front_matter_fields(yaml: &str) -> Option<Vec<MetaEntry>> {
    let value: serde_json::Value = serde_saphyr::from_str(yaml).ok()?;
    let map = value.as_object()?;
    let fields: BTreeMap<&String, String> = map
        .iter()
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => String::new(),
                other => other.to_string(),
            };
            (k, text)
        })
        .collect();
    Some(
        fields
            .into_iter()
            .map(|(key, value)| MetaEntry {
                key: key.clone(),
                value,
            })
            .collect(),
    )
}

/// A top-level block: its start, and for a heading its level and text.
struct Block {
    start: usize,
    heading: Option<(u8, String)>,
}

/// The top-level blocks of `body`, in order.
fn blocks(body: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut heading: Option<(u8, String)> = None;
    for (event, range) in Parser::new_ext(body, options()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let level = match tag {
                        Tag::Heading { level, .. } => Some(level as u8),
                        _ => None,
                    };
                    heading = level.map(|l| (l, String::new()));
                    out.push(Block {
                        start: range.start,
                        heading: None,
                    });
                }
                depth += 1;
            }
            Event::End(end) => {
                depth = depth.saturating_sub(1);
                if depth == 0
                    && matches!(end, TagEnd::Heading(_))
                    && let (Some(block), Some((level, text))) = (out.last_mut(), heading.take())
                {
                    block.heading = Some((level, text.trim().to_owned()));
                }
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, text)) = heading.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, text)) = heading.as_mut() {
                    text.push(' ');
                }
            }
            _ => {
                if depth == 0 {
                    // A top-level leaf event (a rule, raw HTML) starts a block of its own.
                    out.push(Block {
                        start: range.start,
                        heading: None,
                    });
                }
            }
        }
    }
    out
}

/// Chunks a Markdown document's canonical text.
pub fn chunk_markdown(text: &str, params: &ChunkParams) -> Result<MarkdownDoc, IngestError> {
    params.validate()?;
    let mut doc = MarkdownDoc::default();
    let mut body_start = 0;
    if let Some((end, yaml)) = front_matter_end(text)
        && let Some(fields) = front_matter_fields(yaml)
    {
        doc.metadata = fields;
        for span in chunk_text(&text[..end], params)? {
            doc.chunks.push(MarkdownChunk {
                start: span.start,
                end: span.end,
                heading_path: None,
            });
        }
        body_start = end;
    }
    let body = &text[body_start..];
    if body.is_empty() {
        return Ok(doc);
    }
    let blocks = blocks(body);
    // Section boundaries: every heading block starts one.
    let mut starts: Vec<usize> = vec![0];
    starts.extend(
        blocks
            .iter()
            .filter(|b| b.heading.is_some() && b.start > 0)
            .map(|b| b.start),
    );
    starts.dedup();
    let mut stack: Vec<(u8, String)> = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(body.len());
        if let Some(block) = blocks.iter().find(|b| b.start == start)
            && let Some((level, title)) = &block.heading
        {
            while stack.last().is_some_and(|(l, _)| l >= level) {
                stack.pop();
            }
            stack.push((*level, title.clone()));
        }
        let path: Vec<String> = stack.iter().map(|(_, t)| t.clone()).collect();
        // Units: the section cut at each top-level block start inside it.
        let mut cuts: Vec<usize> = vec![start];
        cuts.extend(
            blocks
                .iter()
                .map(|b| b.start)
                .filter(|&s| s > start && s < end),
        );
        cuts.push(end);
        cuts.dedup();
        pack_units(body, &cuts, params, &mut |s, e| {
            doc.chunks.push(MarkdownChunk {
                start: body_start + s,
                end: body_start + e,
                heading_path: Some(path.clone()),
            });
        })?;
    }
    Ok(doc)
}

/// Packs the units `cuts[k]..cuts[k+1]` into chunks: a unit joins the current chunk if
/// the result stays within `target`, or if the chunk is empty and the unit fits `max`; a
/// unit over `max` is split by the text chunker on its own.
fn pack_units(
    body: &str,
    cuts: &[usize],
    params: &ChunkParams,
    emit: &mut dyn FnMut(usize, usize),
) -> Result<(), IngestError> {
    let target = params.target_bytes as usize;
    let max = params.max_bytes as usize;
    let mut chunk_start: Option<usize> = None;
    let mut chunk_end = 0;
    for pair in cuts.windows(2) {
        let (s, e) = (pair[0], pair[1]);
        let unit = e - s;
        if let Some(cs) = chunk_start {
            if e - cs <= target {
                chunk_end = e;
                continue;
            }
            emit(cs, chunk_end);
            chunk_start = None;
        }
        if unit <= max {
            chunk_start = Some(s);
            chunk_end = e;
        } else {
            for span in chunk_text(&body[s..e], params)? {
                emit(s + span.start, s + span.end);
            }
        }
    }
    if let Some(cs) = chunk_start {
        emit(cs, chunk_end);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(target: u32, max: u32) -> ChunkParams {
        ChunkParams {
            target_bytes: target,
            max_bytes: max,
            overlap_bytes: 0,
        }
    }

    #[test]
    fn sections_and_heading_paths() {
        let text = "Intro.\n\n# Guide\n\nText.\n\n## Install\n\nRun it.\n\n## Use\n\nUse it.\n\n# Other\nEnd.\n";
        let doc = chunk_markdown(text, &params(1000, 2000)).unwrap();
        let got: Vec<(&str, Vec<String>)> = doc
            .chunks
            .iter()
            .map(|c| (&text[c.start..c.end], c.heading_path.clone().unwrap()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Intro.\n\n", vec![]),
                ("# Guide\n\nText.\n\n", vec!["Guide".to_string()]),
                (
                    "## Install\n\nRun it.\n\n",
                    vec!["Guide".into(), "Install".into()]
                ),
                ("## Use\n\nUse it.\n\n", vec!["Guide".into(), "Use".into()]),
                ("# Other\nEnd.\n", vec!["Other".into()]),
            ]
        );
    }

    #[test]
    fn code_blocks_stay_whole_when_they_fit() {
        let code = "```rust\nfn a() {}\n\nfn b() {}\n\nfn c() {}\n```\n";
        let text = format!("# T\n\nSome words here.\n\n{code}\nAfter.\n");
        let doc = chunk_markdown(&text, &params(30, 60)).unwrap();
        let texts: Vec<&str> = doc.chunks.iter().map(|c| &text[c.start..c.end]).collect();
        assert!(texts.iter().any(|t| t.starts_with(code)), "{texts:?}");
        // Coverage: contiguous and complete.
        assert_eq!(doc.chunks.first().unwrap().start, 0);
        assert_eq!(doc.chunks.last().unwrap().end, text.len());
        assert!(doc.chunks.windows(2).all(|w| w[0].end == w[1].start));
    }

    #[test]
    fn front_matter_is_metadata_and_a_chunk() {
        let text = "---\ntitle: Guide\ntags: [a, b]\ndraft: false\n---\n# Guide\n\nBody.\n";
        let doc = chunk_markdown(text, &params(1000, 2000)).unwrap();
        let meta: Vec<(&str, &str)> = doc
            .metadata
            .iter()
            .map(|m| (m.key.as_str(), m.value.as_str()))
            .collect();
        assert_eq!(
            meta,
            vec![
                ("draft", "false"),
                ("tags", "[\"a\",\"b\"]"),
                ("title", "Guide")
            ]
        );
        assert_eq!(doc.chunks[0].heading_path, None);
        assert_eq!(
            &text[doc.chunks[0].start..doc.chunks[0].end],
            "---\ntitle: Guide\ntags: [a, b]\ndraft: false\n---\n"
        );
        // A rule that is not front matter stays text.
        let doc = chunk_markdown("---\nnot: [closed\n", &params(100, 200)).unwrap();
        assert!(doc.metadata.is_empty());
    }

    #[test]
    fn oversized_blocks_are_split() {
        let text = format!("# Big\n\n{}\n", "word ".repeat(100));
        let doc = chunk_markdown(&text, &params(40, 64)).unwrap();
        assert!(doc.chunks.iter().all(|c| c.end - c.start <= 64));
        assert_eq!(doc.chunks.last().unwrap().end, text.len());
    }
}
