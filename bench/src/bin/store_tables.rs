//! Bytes of each table of a store file, as redb counts them: what the store's size is
//! made of (docs/bench-log/03-search.md, "Size on disk against LanceDB and Chroma").
//!
//! `cargo run --release --bin store_tables -- STORE_FILE`
//!
//! Prints one JSON object per table: rows, bytes of keys and values as stored, bytes of
//! branch pages and metadata, bytes lost to fragmentation, and the pages' total; then
//! the file's length. Reads the file only.

use redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};
use serde_json::json;

fn main() {
    let path = std::env::args().nth(1).expect("STORE_FILE");
    let mut builder = redb::Database::builder();
    builder.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
    let db = builder.open_read_only(&path).expect("store file");
    let txn = db.begin_read().expect("read");
    let mut total = 0u64;
    for handle in txn.list_tables().expect("tables") {
        let name = handle.name().to_owned();
        let table = txn.open_untyped_table(handle).expect("table");
        let s = table.stats().expect("stats");
        let pages = (s.leaf_pages() + s.branch_pages()) * 4096;
        total += pages;
        println!(
            "{}",
            json!({
                "table": name, "rows": table.len().expect("len"),
                "stored_bytes": s.stored_bytes(), "metadata_bytes": s.metadata_bytes(),
                "fragmented_bytes": s.fragmented_bytes(), "page_bytes": pages,
            })
        );
    }
    let file = std::fs::metadata(&path).expect("file").len();
    println!("{}", json!({"pages_of_tables": total, "file_bytes": file}));
}
