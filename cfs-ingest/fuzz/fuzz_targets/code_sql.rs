#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cfs_ingest::fuzz::replay("code_sql", data, &cfs_ingest::IngestConfig::default());
});
