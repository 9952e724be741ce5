// Included by the build scripts of `cfs-cli` and `bench`: both link tree-sitter, and the
// bench's parse-only measure must run the same code layout as `cfs` itself.

/// Places tree-sitter's functions at the start of the binary's code, hottest first
/// (`list`, cfs-cli/code-order.txt), and the code on a page boundary: the parser's speed
/// then no longer depends on how much Rust code comes before it (two builds differing
/// only in Rust code parsed 3% apart, docs/bench-log/02-store-cold-index.md). Only where the linker is
/// rustc's own lld, which reads the list: x86_64 Linux with rustc 1.90 or later and its
/// `gcc-ld/ld.lld` in the sysroot, no other linker asked for in the flags.
/// `CFS_NO_CODE_ORDER=1` turns it off.
fn order_hot_code(list: &std::path::Path) {
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=CFS_NO_CODE_ORDER");
    let target = std::env::var("TARGET").unwrap_or_default();
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let linker_chosen = flags.contains("linker") || flags.contains("link-self-contained");
    if target != "x86_64-unknown-linux-gnu"
        || std::env::var_os("CFS_NO_CODE_ORDER").is_some()
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
        || linker_chosen
        || !rustc_links_with_lld(&target)
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

/// Whether rustc links `target` with its own lld by default: rustc 1.90 or later (the
/// default since then on x86_64 Linux) whose sysroot has the lld it links with.
fn rustc_links_with_lld(target: &str) -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let ask = |arg: &str| {
        std::process::Command::new(&rustc)
            .args(arg.split(' '))
            .output()
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    // "rustc 1.95.0 (...)"
    let version = ask("--version").unwrap_or_default();
    let mut numbers = version
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    let Some(sysroot) = ask("--print sysroot") else {
        return false;
    };
    let lld = std::path::Path::new(&sysroot)
        .join("lib/rustlib")
        .join(target)
        .join("bin/gcc-ld/ld.lld");
    (major, minor) >= (1, 90) && lld.is_file()
}
