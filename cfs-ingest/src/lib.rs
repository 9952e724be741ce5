//! cfs-ingest: from files to canonical rows.
//!
//! Detection, decoding to canonical text, chunking, embedding and directory walking.
//! Everything here is deterministic: the same bytes give the same document, chunks and
//! embeddings on every machine, in any order, on any thread.

mod code;
mod collections;
mod decode;
mod detect;
mod embed;
mod error;
pub mod fuzz;
mod html;
mod ignore_rules;
mod lines;
mod markdown;
pub mod minilm;
mod parse_only;
mod parsing;
mod pdf;
mod pipeline;
mod role;
mod text;
mod tree;
mod walk;

pub use code::{
    CodeChunk, CodeDoc, SMALL_GAP_BYTES, WINDOW_BYTES, WINDOW_OVERLAP_BYTES, chunk_code,
    code_parser, grammar_version, has_grammar, parsed_languages,
};
pub use collections::{Collection, MAX_COLLECTIONS, MAX_PREFIXES, Registry, Resolution};
pub use decode::{DecodeFailure, Decoded, decode};
pub use detect::{DETECT_HEAD_BYTES, Detected, Format, Language, by_name, detect, detect_file};
pub use embed::{
    EmbedError, Embedder, HashEmbedder, feature_hash, identifier_part_ranges, identifier_parts,
    is_word_char,
};
pub use error::IngestError;
pub use html::{HTML_WIDTH, MAX_HTML_DEPTH, html_to_text};
pub use markdown::{MarkdownChunk, MarkdownDoc, chunk_markdown};
pub use minilm::{LazyMiniLmInt, MiniLmInt};
pub use parse_only::parse_only;
pub use parsing::{ParsingMark, parsing_now};
pub use pdf::{
    DEFAULT_PDF_MEMORY_BYTES, DEFAULT_PDF_TIMEOUT_MS, PdfConfig, extract_pdf_pages, minimal_pdf,
    pdf_child_main,
};
pub use pipeline::{
    CODE_CHUNKER, DEFAULT_MAX_FILE_BYTES, HTML_PARSER, IngestConfig, Ingested, JSON_PARSER,
    MARKDOWN_CHUNKER, MARKDOWN_PARSER, PDF_CHUNKER, PDF_PARSER, Parsed, TEXT_CHUNKER, TEXT_PARSER,
    embed_chunks, embedding_text, ingest_file, parse_file, parse_file_hashed, parsers_version,
};
pub use role::{
    GENERATED_MARKERS, MARKER_BYTES, MINIFIED_LINE_BYTES, MINIFIED_MIN_BYTES, Markers, Role,
    beside_implementation, document_role, headers_of, implementations_of, path_role,
};
pub use text::{ChunkParams, MIN_MAX_BYTES, Span, chunk_text};
pub use tree::{TreeIndex, index_tree, index_walk, ingest_entry, read_entry};
pub use walk::{DEFAULT_IGNORED_DIRS, Scope, Walk, WalkEntry, rel_path_string, walk, walk_scope};
