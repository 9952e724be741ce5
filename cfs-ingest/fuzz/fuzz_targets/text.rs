#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cfs_ingest::fuzz::replay("text", data, &cfs_ingest::IngestConfig::default());
});
