//! Replays the saved fuzz seeds (`fuzz/seeds/<target>/`) through the fuzz bodies on a
//! stable toolchain: every input must pass the body's assertions without a panic.

use cfs_ingest::IngestConfig;
use cfs_ingest::fuzz::{TARGETS, replay};

#[test]
fn fuzz_corpus_replays() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let config = IngestConfig::default();
    let mut n = 0;
    for target in TARGETS {
        let dir = root.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus for {target}");
        for file in files {
            let data = std::fs::read(&file).unwrap();
            replay(target, &data, &config);
            n += 1;
        }
    }
    assert!(n >= 40, "{n} corpus inputs");
}
