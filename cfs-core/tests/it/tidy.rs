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

/// The modules of cfs-cli (a file of `src/`, or a folder of it as one module) and, for
/// each, the modules it names through `crate::`; the crate root (`main.rs`) declares the
/// modules and is left out.
fn cli_imports() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = root().join("cfs-cli/src");
    let mut graph = std::collections::BTreeMap::new();
    for (module, text) in cli_sources(&src) {
        let mut named = std::collections::BTreeSet::new();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            let known = src.join(format!("{name}.rs")).is_file() || src.join(&name).is_dir();
            if !name.is_empty() && name != module && known {
                named.insert(name);
            }
        }
        graph.insert(module, named);
    }
    graph
}

/// `(module, text)` of every source file of cfs-cli but its root, a folder's files under
/// the folder's name; with their sizes in lines.
fn cli_sources(src: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(src).expect("cfs-cli/src") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir() {
            for file in std::fs::read_dir(&path).expect("folder") {
                let file = file.expect("entry").path();
                out.push((
                    name.clone(),
                    std::fs::read_to_string(&file).expect("source"),
                ));
            }
        } else if name != "main" {
            out.push((name, std::fs::read_to_string(&path).expect("source")));
        }
    }
    out
}

#[test]
fn cli_modules_import_without_circles() {
    let graph = cli_imports();
    // Depth-first from every module; a module met again on the path is a circle.
    fn visit(
        m: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        circles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == m) {
            circles.push(format!("{} -> {m}", path[at..].join(" -> ")));
            return;
        }
        path.push(m.to_owned());
        for next in graph.get(m).into_iter().flatten() {
            visit(next, graph, path, circles);
        }
        path.pop();
    }
    let mut circles = Vec::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut circles);
    }
    assert!(graph.len() > 10, "cfs-cli's modules not found: {graph:?}");
    assert!(
        circles.is_empty(),
        "cfs-cli modules import each other: {circles:?}"
    );
}

#[test]
fn no_cli_file_holds_a_fifth_of_the_crate() {
    let src = root().join("cfs-cli/src");
    let mut sizes = vec![(
        "main".to_owned(),
        std::fs::read_to_string(src.join("main.rs"))
            .expect("main.rs")
            .lines()
            .count(),
    )];
    for (module, text) in cli_sources(&src) {
        sizes.push((module, text.lines().count()));
    }
    let total: usize = sizes.iter().map(|(_, n)| n).sum();
    let big: Vec<_> = sizes.iter().filter(|(_, n)| n * 5 > total).collect();
    assert!(
        big.is_empty(),
        "over a fifth of cfs-cli's {total} lines: {big:?}"
    );
}
