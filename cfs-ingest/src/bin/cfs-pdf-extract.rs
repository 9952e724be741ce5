//! The isolated PDF extractor: `cfs-pdf-extract [MEMORY_LIMIT_BYTES]` reads a PDF on
//! stdin and writes its pages' text on stdout, separated by form feeds. Run by
//! cfs-ingest as a child process, so that a PDF that panics, aborts or exhausts memory
//! fails only this process.

fn main() -> std::process::ExitCode {
    cfs_ingest::pdf_child_main(std::env::args().skip(1))
}
