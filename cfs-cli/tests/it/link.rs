//! The link tweaks still apply to what is linked: every function `code-order.txt` places
//! first exists in the binary (the linker skips a stale name without a word, since its
//! warnings are off: a grammar renamed upstream would silently undo the layout).

#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn every_function_of_the_code_order_is_in_the_binary() {
    let binary = env!("CARGO_BIN_EXE_cfs");
    let out = std::process::Command::new("nm")
        .arg(binary)
        .output()
        .expect("nm (binutils, which the C compiler of the grammars comes with)");
    assert!(out.status.success(), "nm {binary} failed");
    let symbols: std::collections::HashSet<&str> = std::str::from_utf8(&out.stdout)
        .expect("nm's output")
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    let list = concat!(env!("CARGO_MANIFEST_DIR"), "/code-order.txt");
    let text = std::fs::read_to_string(list).expect("code-order.txt");
    let names: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(names.len() > 100, "{list}: {} names", names.len());
    let missing: Vec<&&str> = names.iter().filter(|n| !symbols.contains(**n)).collect();
    assert!(
        missing.is_empty(),
        "{list} names functions the binary does not have (update the list): {missing:?}"
    );
}
