//! Links the `cfs` binary as a position-dependent executable on Linux: its start then
//! applies none of the 51,000 dynamic relocations a position-independent one needs
//! (docs/benchmarks.md, "No-op index"); and places tree-sitter's code first
//! (`code_order.rs`).
include!("code_order.rs");

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    order_hot_code(&dir.join("code-order.txt"));
}
