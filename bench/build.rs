//! Places tree-sitter's code first in the bench binaries, as in `cfs` (see
//! cfs-cli/code_order.rs): the parse-only measure runs the same layout.
include!("../cfs-cli/code_order.rs");

fn main() {
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    order_hot_code(&dir.join("../cfs-cli/code-order.txt"));
}
