//! PDF extraction in the isolated child process: pages become page chunks; broken,
//! truncated and hostile PDFs are per-file errors naming the file.

use cfs_core::ChunkKind;
use cfs_ingest::{IngestConfig, PdfConfig, minimal_pdf, parse_file};

#[test]
fn pages_become_page_chunks() {
    let pdf = minimal_pdf(&["Hello from page one", "And this is page two"]);
    let parsed = parse_file("doc.pdf", &pdf, &IngestConfig::default()).unwrap();
    assert_eq!(parsed.document.profile.mime_type, "application/pdf");
    assert_eq!(parsed.document.metadata[0].key, "pages");
    assert_eq!(parsed.document.metadata[0].value, "2");
    let pages: Vec<u32> = parsed
        .chunks
        .iter()
        .map(|c| match c.kind {
            ChunkKind::Page { page } => page,
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert!(pages.contains(&1) && pages.contains(&2), "{pages:?}");
    let all: String = parsed.chunks.iter().map(|c| c.text.as_str()).collect();
    assert!(
        all.contains("page one") && all.contains("page two"),
        "{all:?}"
    );
    assert!(all.contains('\u{c}'));
}

#[test]
fn broken_pdfs_are_errors_naming_the_file() {
    let config = IngestConfig::default();
    let good = minimal_pdf(&["Some text"]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated.pdf", good[..good.len() / 2].to_vec()),
        (
            "garbage.pdf",
            b"%PDF-1.7\n\x00\x01\x02 not a pdf at all".to_vec(),
        ),
        ("header_only.pdf", b"%PDF-".to_vec()),
        (
            "random.pdf",
            (0..4000u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect(),
        ),
    ];
    for (name, bytes) in cases {
        match parse_file(name, &bytes, &config) {
            Err(e) => assert!(e.to_string().contains(name), "{e}"),
            Ok(parsed) => assert!(parsed.document.validate_ok(), "{name}"),
        }
    }
}

#[test]
fn a_hung_or_missing_extractor_is_an_error() {
    let pdf = minimal_pdf(&["x"]);
    let missing = IngestConfig {
        pdf: PdfConfig {
            program: Some("/nonexistent/extractor".into()),
            ..PdfConfig::default()
        },
        ..IngestConfig::default()
    };
    let e = parse_file("a.pdf", &pdf, &missing).unwrap_err().to_string();
    assert!(
        e.contains("a.pdf") && e.contains("/nonexistent/extractor"),
        "{e}"
    );
    // `sleep` stands in for an extractor that never finishes.
    let hung = IngestConfig {
        pdf: PdfConfig {
            program: Some("sleep".into()),
            args: vec!["5".into()],
            timeout_ms: 200,
            ..PdfConfig::default()
        },
        ..IngestConfig::default()
    };
    let started = std::time::Instant::now();
    let e = parse_file("slow.pdf", &pdf, &hung).unwrap_err().to_string();
    assert!(e.contains("slow.pdf") && e.contains("200 ms"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
}

trait ValidateOk {
    fn validate_ok(&self) -> bool;
}
impl ValidateOk for cfs_core::Document {
    fn validate_ok(&self) -> bool {
        use cfs_core::Canonical;
        self.validate().is_ok()
    }
}
