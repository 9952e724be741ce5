// Included by the build scripts of `cfs-cli` and `bench`: both link tree-sitter, and the
// bench's parse-only measure must run the same code layout as `cfs` itself.

/// Places tree-sitter's functions at the start of the binary's code, hottest first
/// (`list`, cfs-cli/code-order.txt), and the code on a page boundary: the parser's speed
/// then no longer depends on how much Rust code comes before it (two builds differing
/// only in Rust code parsed 3% apart, docs/benchmarks.md). Only where the linker is
/// rustc's own lld (x86_64 Linux, the default since Rust 1.90), which reads the list;
/// `CFS_NO_CODE_ORDER=1` turns it off, for another linker.
fn order_hot_code(list: &std::path::Path) {
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=CFS_NO_CODE_ORDER");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu"
        || std::env::var_os("CFS_NO_CODE_ORDER").is_some()
        || !rustc_links_with_lld()
    {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-z,separate-code");
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// Whether rustc is 1.90 or later, whose default linker on x86_64 Linux is its own lld.
fn rustc_links_with_lld() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (...)"
    let version = String::from_utf8_lossy(&out.stdout);
    let mut numbers = version
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
