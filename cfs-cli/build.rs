//! Links the `cfs` binary as a position-dependent executable on Linux: its start then
//! applies none of the 51,000 dynamic relocations a position-independent one needs
//! (docs/bench-log/02-store-cold-index.md, "No-op `cfs index`"); `CFS_PIE=1` links it position-independent as
//! usual. And places tree-sitter's code first (`code_order.rs`; `CFS_NO_CODE_ORDER=1`
//! turns that off).
include!("code_order.rs");

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    println!("cargo:rerun-if-env-changed=CFS_PIE");
    if os == "linux" && std::env::var_os("CFS_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    order_hot_code(&dir.join("code-order.txt"));
}
