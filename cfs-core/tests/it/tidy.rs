//! Architecture rules checked on the sources: dependencies point one way
//! (core <- ingest <- store <- cli), and cfs-core does no I/O.

use std::path::{Path, PathBuf};

const LAYERS: [&str; 4] = ["cfs-core", "cfs-ingest", "cfs-store", "cfs-cli"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn dependencies_point_one_way() {
    let mut violations = Vec::new();
    for (rank, krate) in LAYERS.iter().enumerate() {
        let path = root().join(krate).join("Cargo.toml");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let manifest: toml::Table = text
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = manifest.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for name in deps.keys() {
                if let Some(dep_rank) = LAYERS.iter().position(|l| l == name)
                    && dep_rank >= rank
                {
                    violations.push(format!("{krate} [{section}] depends on {name}"));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "backward or sideways edges: {violations:?}"
    );
}

#[test]
fn core_does_no_io() {
    let forbidden = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env",
        "std::io::stdin",
        "File::",
    ];
    // cpu.rs reads one environment variable, CFS_SIMD: it chooses which instructions
    // compute the same bits, never a byte of output (the tests hold every path to the
    // portable one), so the crate's results still follow from its inputs alone.
    let allowed = [("cpu.rs", "std::env")];
    let dir = root().join("cfs-core/src");
    let mut hits = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("cfs-core/src") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("source");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        for word in forbidden {
            if text.contains(word) && !allowed.contains(&(name, word)) {
                hits.push(format!("{}: {word}", path.display()));
            }
        }
    }
    assert!(hits.is_empty(), "cfs-core must not do I/O: {hits:?}");
}
