//! One file to its canonical rows: detect, decode, parse, chunk, embed.
//!
//! The result depends only on the file's path-independent bytes and the configuration,
//! never on the order files are processed in or on the thread doing it, so the same
//! file gives the same document, chunks and embeddings on every machine.

use cfs_core::{
    Chunk, ChunkDraft, ChunkEncodings, ChunkKind, ContentHash, Document, DocumentId, Edge,
    EdgeKind, Embedding, MetaEntry, ParseProfile,
};

use crate::code::{chunk_code, code_parser, parsed_languages};
use crate::decode::{canonicalize, decode};
use crate::detect::{Format, detect_file};
use crate::embed::Embedder;
use crate::error::IngestError;
use crate::html::html_to_text;
use crate::lines::LineIndex;
use crate::markdown::chunk_markdown;
use crate::parsing::ParsingMark;
use crate::pdf::{PdfConfig, extract_pdf_pages};
use crate::text::{ChunkParams, chunk_text};

/// Version of the text parser (decoding and canonical text).
pub const TEXT_PARSER: &str = "text/1";
/// Version of the JSON parser (validation, then text).
pub const JSON_PARSER: &str = "json/1";
/// Version of the separator-priority text chunker.
pub const TEXT_CHUNKER: &str = "text/1";
/// Version of the Markdown parser: pulldown-cmark, pinned, with cfs's extensions.
pub const MARKDOWN_PARSER: &str = "markdown/1 pulldown-cmark=0.13.6";
/// Version of the HTML parser: html2text, pinned, at a width that does not wrap.
pub const HTML_PARSER: &str = "html/1 html2text=0.17.4 width=10000";
/// Version of the PDF parser: pdf-extract, pinned, in a child process.
pub const PDF_PARSER: &str = "pdf/1 pdf-extract=0.12.1";
/// Version of the PDF chunker: the text chunker within each page.
pub const PDF_CHUNKER: &str = "pdf/1";
/// Version of the section-aware Markdown chunker.
pub const MARKDOWN_CHUNKER: &str = "markdown/1";
/// Version of the symbol-aware code chunker, with its window sizes.
pub const CODE_CHUNKER: &str = "code/2 window=7000 overlap=500";

/// Every parser and chunker version this build writes into parse profiles, one per
/// line. A store records the list its documents were parsed with; when this build's
/// differs (a grammar added or upgraded, a chunker's rule changed), the next whole sync
/// parses every file again, so that the store holds what a clean index would.
pub fn parsers_version() -> String {
    let code = parsed_languages().filter_map(code_parser);
    let fixed = [
        TEXT_PARSER,
        JSON_PARSER,
        MARKDOWN_PARSER,
        HTML_PARSER,
        PDF_PARSER,
        TEXT_CHUNKER,
        MARKDOWN_CHUNKER,
        PDF_CHUNKER,
        CODE_CHUNKER,
    ]
    .map(str::to_owned);
    let mut all: Vec<String> = code.chain(fixed).collect();
    all.dedup();
    all.join("\n")
}

/// Default largest file indexed, in bytes.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 32 << 20;

/// What ingestion does with a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestConfig {
    /// Chunk sizes of the text chunker.
    pub chunk: ChunkParams,
    /// Files larger than this are a per-file error.
    pub max_file_bytes: u64,
    /// How PDFs are extracted.
    pub pdf: PdfConfig,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            chunk: ChunkParams::default(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            pdf: PdfConfig::default(),
        }
    }
}

/// A parsed and chunked file, before embedding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The document.
    pub document: Document,
    /// Its chunks in sequence order.
    pub chunks: Vec<Chunk>,
    /// `next_window` edges between windows of split symbols.
    pub window_edges: Vec<Edge>,
    /// Encoding the bytes were read as.
    pub encoding: &'static str,
    /// The Merkle leaf of each chunk (`chunk_leaves[i]` of `chunks[i]`), hashed once
    /// for the document's hierarchical hash; a store writing the chunks reuses them.
    pub chunk_leaves: Vec<[u8; 32]>,
    /// The chunks' canonical encodings those leaves were hashed over; a store writing
    /// the chunks writes these.
    pub chunk_encodings: ChunkEncodings,
}

/// A parsed, chunked and embedded file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ingested {
    /// The parse.
    pub parsed: Parsed,
    /// One embedding per chunk, in chunk order.
    pub embeddings: Vec<Embedding>,
}

/// Parses and chunks one file. `path` is its relative path (for detection and errors
/// only: the result does not depend on it beyond the detected type).
pub fn parse_file(path: &str, bytes: &[u8], config: &IngestConfig) -> Result<Parsed, IngestError> {
    parse_file_hashed(path, bytes, ContentHash::of(bytes), config)
}

/// [`parse_file`] of bytes whose content hash (BLAKE3 of `bytes`) the caller has just
/// computed, so that they are not hashed twice.
pub fn parse_file_hashed(
    path: &str,
    bytes: &[u8],
    content_hash: ContentHash,
    config: &IngestConfig,
) -> Result<Parsed, IngestError> {
    debug_assert_eq!(content_hash, ContentHash::of(bytes), "{path}: not its hash");
    config.chunk.validate()?;
    let size = bytes.len() as u64;
    if size > config.max_file_bytes {
        return Err(IngestError::TooLarge {
            path: path.into(),
            size_bytes: size,
            limit_bytes: config.max_file_bytes,
        });
    }
    let detected = detect_file(path, bytes).map_err(|reason| IngestError::Skipped {
        path: path.into(),
        reason,
    })?;
    let _parsing = ParsingMark::new(path, detected.format.name());
    let (text, encoding, extra_metadata) = extract_text(path, bytes, detected.format, config)?;
    let text = &text;
    let mut pieces = chunk_by_format(text, detected.format, &config.chunk)?;
    pieces.metadata.extend(extra_metadata);
    let profile = ParseProfile {
        mime_type: detected.mime_type.into(),
        parser: pieces.parser,
        chunker: pieces.chunker.into(),
        target_bytes: config.chunk.target_bytes,
        max_bytes: config.chunk.max_bytes,
        overlap_bytes: config.chunk.overlap_bytes,
    };
    let document_id = DocumentId::derive(&content_hash, &profile.hash());
    let core = |source| IngestError::Core {
        path: path.into(),
        source,
    };
    let lines = LineIndex::new(text);
    let drafts = pieces
        .spans
        .into_iter()
        .map(|(start, end, kind)| ChunkDraft {
            byte_offset: start as u64,
            start_line: lines.line_of(start),
            end_line: lines.line_of(end - 1),
            kind,
            text: text[start..end].to_owned(),
        })
        .collect();
    let chunks = Chunk::new_in_sequence(document_id, drafts).map_err(core)?;
    let window_edges = pieces
        .window_links
        .iter()
        .filter_map(|&(a, b)| {
            Some(Edge::new(
                chunks.get(a)?.id,
                chunks.get(b)?.id,
                EdgeKind::NEXT_WINDOW,
            ))
        })
        .collect();
    let (document, chunk_leaves, chunk_encodings) = Document::new_with_encodings(
        content_hash,
        size,
        profile,
        text.len() as u64,
        pieces.metadata,
        &chunks,
    )
    .map_err(core)?;
    Ok(Parsed {
        document,
        chunks,
        window_edges,
        encoding,
        chunk_leaves,
        chunk_encodings,
    })
}

/// The canonical text of a file, the encoding it was read as, and metadata found on the
/// way (HTML title, PDF page count).
fn extract_text(
    path: &str,
    bytes: &[u8],
    format: Format,
    config: &IngestConfig,
) -> Result<(String, &'static str, Vec<MetaEntry>), IngestError> {
    let malformed = |format: &'static str| {
        move |reason: String| IngestError::Malformed {
            path: path.into(),
            format,
            reason,
        }
    };
    if format == Format::Pdf {
        if !cfg!(feature = "pdf") {
            return Err(IngestError::Skipped {
                path: path.into(),
                reason: "built without PDF support (the pdf feature)".into(),
            });
        }
        let pages = extract_pdf_pages(bytes, &config.pdf).map_err(malformed("PDF"))?;
        let meta = vec![MetaEntry {
            key: "pages".into(),
            value: pages.len().to_string(),
        }];
        return Ok((canonicalize(&pages.join("\u{c}")), "PDF", meta));
    }
    let decoded = decode(bytes).map_err(|e| IngestError::Decode {
        path: path.into(),
        reason: e.0,
    })?;
    match format {
        Format::Json => {
            serde_json::from_str::<serde::de::IgnoredAny>(&decoded.text)
                .map_err(|e| malformed("JSON")(e.to_string()))?;
            Ok((decoded.text, decoded.encoding, Vec::new()))
        }
        Format::Html => {
            let (text, meta) = html_to_text(&decoded.text).map_err(malformed("HTML"))?;
            Ok((text, decoded.encoding, meta))
        }
        _ => Ok((decoded.text, decoded.encoding, Vec::new())),
    }
}

/// How a text was cut: spans with kinds, metadata, window links and the versions used.
struct Pieces {
    spans: Vec<(usize, usize, ChunkKind)>,
    metadata: Vec<MetaEntry>,
    window_links: Vec<(usize, usize)>,
    parser: String,
    chunker: &'static str,
}

/// Chunks canonical text by its format: Markdown by section, code with a grammar by
/// symbol (as text when the parse fails), everything else as text.
fn chunk_by_format(
    text: &str,
    format: Format,
    params: &ChunkParams,
) -> Result<Pieces, IngestError> {
    let as_text = |kind: ChunkKind, parser: &str| -> Result<Pieces, IngestError> {
        Ok(Pieces {
            spans: chunk_text(text, params)?
                .into_iter()
                .map(|span| (span.start, span.end, kind.clone()))
                .collect(),
            metadata: Vec::new(),
            window_links: Vec::new(),
            parser: parser.into(),
            chunker: TEXT_CHUNKER,
        })
    };
    match format {
        Format::Markdown => {
            let doc = chunk_markdown(text, params)?;
            let spans = doc
                .chunks
                .into_iter()
                .map(|c| {
                    let kind = match c.heading_path {
                        Some(heading_path) => ChunkKind::Section { heading_path },
                        None => ChunkKind::Text,
                    };
                    (c.start, c.end, kind)
                })
                .collect();
            Ok(Pieces {
                spans,
                metadata: doc.metadata,
                window_links: Vec::new(),
                parser: MARKDOWN_PARSER.into(),
                chunker: MARKDOWN_CHUNKER,
            })
        }
        Format::Code(language) => {
            let language_name = language.name().to_owned();
            match (chunk_code(text, language, params)?, code_parser(language)) {
                (Some(doc), Some(parser)) => Ok(Pieces {
                    spans: doc
                        .chunks
                        .into_iter()
                        .map(|c| {
                            let kind = ChunkKind::Code {
                                language: language_name.clone(),
                                symbol: c.symbol,
                            };
                            (c.start, c.end, kind)
                        })
                        .collect(),
                    metadata: Vec::new(),
                    window_links: doc.window_links,
                    parser,
                    chunker: CODE_CHUNKER,
                }),
                _ => as_text(
                    ChunkKind::Code {
                        language: language_name,
                        symbol: None,
                    },
                    TEXT_PARSER,
                ),
            }
        }
        Format::Json => as_text(ChunkKind::Text, JSON_PARSER),
        Format::Html => as_text(ChunkKind::Text, HTML_PARSER),
        Format::Pdf => {
            // One page is the text up to and including its form feed; chunks never
            // cross pages.
            let mut spans = Vec::new();
            let mut start = 0;
            for (index, page) in text.split_inclusive('\u{c}').enumerate() {
                let page_number = u32::try_from(index + 1).unwrap_or(u32::MAX);
                for span in chunk_text(page, params)? {
                    spans.push((
                        start + span.start,
                        start + span.end,
                        ChunkKind::Page { page: page_number },
                    ));
                }
                start += page.len();
            }
            Ok(Pieces {
                spans,
                metadata: Vec::new(),
                window_links: Vec::new(),
                parser: PDF_PARSER.into(),
                chunker: PDF_CHUNKER,
            })
        }
        Format::Text => as_text(ChunkKind::Text, TEXT_PARSER),
    }
}

/// The text that is embedded for a chunk: its heading path or symbol signature first,
/// when it has one, then its text.
pub fn embedding_text(chunk: &Chunk) -> std::borrow::Cow<'_, str> {
    match &chunk.kind {
        ChunkKind::Section { heading_path } if !heading_path.is_empty() => {
            format!("{}\n{}", heading_path.join(" > "), chunk.text).into()
        }
        ChunkKind::Code {
            symbol: Some(symbol),
            ..
        } if !chunk.text.contains(&symbol.signature) => {
            format!("{}\n{}", symbol.signature, chunk.text).into()
        }
        _ => chunk.text.as_str().into(),
    }
}

/// Embeds the chunks of a parse.
pub fn embed_chunks(
    path: &str,
    chunks: &[Chunk],
    embedder: &dyn Embedder,
) -> Result<Vec<Embedding>, IngestError> {
    let texts: Vec<std::borrow::Cow<'_, str>> = chunks.iter().map(embedding_text).collect();
    let refs: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
    let vectors = embedder
        .embed_batch(&refs)
        .map_err(|e| IngestError::Malformed {
            path: path.into(),
            format: "embedding input",
            reason: e.to_string(),
        })?;
    let model = embedder.model_hash();
    chunks
        .iter()
        .zip(vectors)
        .map(|(chunk, vector)| {
            Embedding::new(chunk.id, model, vector).map_err(|source| IngestError::Core {
                path: path.into(),
                source,
            })
        })
        .collect()
}

/// Parses, chunks and embeds one file.
pub fn ingest_file(
    path: &str,
    bytes: &[u8],
    config: &IngestConfig,
    embedder: &dyn Embedder,
) -> Result<Ingested, IngestError> {
    let mut parsed = parse_file(path, bytes, config)?;
    // Kept in memory with the rest of a tree, not written: no second copy of the text.
    parsed.chunk_encodings = ChunkEncodings::default();
    let embeddings = embed_chunks(path, &parsed.chunks, embedder)?;
    Ok(Ingested { parsed, embeddings })
}
