//! PDF text extraction, isolated in a child process.
//!
//! pdf-extract panics on many malformed files and can abort the process, which
//! `catch_unwind` cannot stop. So extraction runs in a child process (the
//! `cfs-pdf-extract` binary, or any program that calls [`pdf_child_main`] for the
//! arguments in [`PdfConfig`]) with a wall-clock limit and an address-space limit; a PDF
//! that fails is a per-file error and never takes the indexer down.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Default wall-clock limit of one extraction.
pub const DEFAULT_PDF_TIMEOUT_MS: u64 = 30_000;
/// Default address-space limit of the extraction process.
pub const DEFAULT_PDF_MEMORY_BYTES: u64 = 2 << 30;
/// Largest extracted text accepted from the child, in bytes.
const MAX_PDF_TEXT_BYTES: usize = 256 << 20;

/// How PDFs are extracted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PdfConfig {
    /// The extractor program; `None` looks for `cfs-pdf-extract` beside the running
    /// executable (and, for test binaries, one folder up).
    pub program: Option<PathBuf>,
    /// Arguments before the memory limit (e.g. a hidden subcommand of a larger binary).
    pub args: Vec<String>,
    /// Wall-clock limit in milliseconds.
    pub timeout_ms: u64,
    /// Address-space limit of the child in bytes.
    pub memory_limit_bytes: u64,
}

impl Default for PdfConfig {
    fn default() -> Self {
        Self {
            program: None,
            args: Vec::new(),
            timeout_ms: DEFAULT_PDF_TIMEOUT_MS,
            memory_limit_bytes: DEFAULT_PDF_MEMORY_BYTES,
        }
    }
}

impl PdfConfig {
    fn resolve_program(&self) -> Result<PathBuf, String> {
        if let Some(program) = &self.program {
            return Ok(program.clone());
        }
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot locate the running executable: {e}"))?;
        let name = format!("cfs-pdf-extract{}", std::env::consts::EXE_SUFFIX);
        let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
        [dir.join(&name), dir.join("..").join(&name)]
            .into_iter()
            .find(|p| p.is_file())
            .ok_or_else(|| {
                format!(
                    "the PDF extractor {name} is not installed beside {}",
                    exe.display()
                )
            })
    }
}

/// Extracts the text of each page of a PDF in a child process.
pub fn extract_pdf_pages(bytes: &[u8], config: &PdfConfig) -> Result<Vec<String>, String> {
    let program = config.resolve_program()?;
    let mut child = Command::new(&program)
        .args(&config.args)
        .arg(config.memory_limit_bytes.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin for the PDF extractor")?;
    let mut stdout = child
        .stdout
        .take()
        .ok_or("no stdout for the PDF extractor")?;
    let mut stderr = child
        .stderr
        .take()
        .ok_or("no stderr for the PDF extractor")?;
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        // A child that dies early closes the pipe; its exit status says why.
        let _ = stdin.write_all(&input);
    });
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let result = (&mut stdout)
            .take(MAX_PDF_TEXT_BYTES as u64 + 1)
            .read_to_end(&mut out);
        result.map(|_| out)
    });
    let err_reader = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = (&mut stderr).take(64 << 10).read_to_string(&mut err);
        err
    });
    let deadline = Instant::now() + Duration::from_millis(config.timeout_ms);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "PDF extraction took longer than {} ms",
                    config.timeout_ms
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for the PDF extractor: {e}")),
        }
    };
    let _ = writer.join();
    let out = reader
        .join()
        .map_err(|_| "the PDF output reader failed".to_owned())?
        .map_err(|e| format!("reading the PDF extractor's output: {e}"))?;
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        let why = err.lines().next().unwrap_or("").trim();
        return Err(match status.code() {
            Some(code) => format!("PDF extraction failed (exit {code}): {why}"),
            None => format!("PDF extraction was killed (it crashed or ran out of memory) {why}"),
        });
    }
    if out.len() > MAX_PDF_TEXT_BYTES {
        return Err(format!("extracted text over {MAX_PDF_TEXT_BYTES} bytes"));
    }
    let text =
        String::from_utf8(out).map_err(|_| "the PDF extractor wrote invalid UTF-8".to_owned())?;
    Ok(text.split('\u{c}').map(str::to_owned).collect())
}

/// The body of the extractor process: arguments `[MEMORY_LIMIT_BYTES]`, the PDF on
/// stdin, the pages on stdout joined by form feeds (form feeds inside a page become
/// newlines). Exit 0 on success, 2 on a PDF that cannot be read.
pub fn pdf_child_main(mut args: impl Iterator<Item = String>) -> ExitCode {
    if let Some(limit) = args.next().and_then(|a| a.parse::<u64>().ok()) {
        #[cfg(feature = "pdf")]
        {
            // Best effort: where the platform has no such limit, the timeout still holds.
            let _ = rlimit::setrlimit(rlimit::Resource::AS, limit, limit);
        }
        #[cfg(not(feature = "pdf"))]
        let _ = limit;
    }
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("cannot read the PDF: {e}");
        return ExitCode::from(2);
    }
    match extract_in_process(&input) {
        Ok(pages) => {
            let joined = pages
                .iter()
                .map(|p| p.replace('\u{c}', "\n"))
                .collect::<Vec<_>>()
                .join("\u{c}");
            let mut out = std::io::stdout().lock();
            if out
                .write_all(joined.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return ExitCode::from(2);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

/// A small valid PDF with one text line per page (Helvetica, offsets computed), for
/// tests and samples. Page texts must not contain `(`, `)` or `\\`.
pub fn minimal_pdf(pages: &[&str]) -> Vec<u8> {
    let mut objects: Vec<String> = Vec::new();
    let n = pages.len();
    // 1: catalog, 2: pages, 3: font, then per page: page object and content stream.
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(format!(
        "<< /Type /Pages /Kids [{}] /Count {n} >>",
        kids.join(" ")
    ));
    objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into());
    for (i, text) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        let stream = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}\nendstream",
            stream.len()
        ));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{body}\nendobj\n", i + 1).into_bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).into_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").into_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .into_bytes(),
    );
    out
}

#[cfg(feature = "pdf")]
fn extract_in_process(input: &[u8]) -> Result<Vec<String>, String> {
    // Panics are caught where they can be; aborts end the process, which the parent sees.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        eprintln!("pdf-extract panicked: {message}");
    }));
    std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(input))
        .map_err(|_| "pdf-extract panicked".to_owned())?
        .map_err(|e| format!("unreadable PDF: {e}"))
}

#[cfg(not(feature = "pdf"))]
fn extract_in_process(_input: &[u8]) -> Result<Vec<String>, String> {
    Err("built without the pdf feature".into())
}
