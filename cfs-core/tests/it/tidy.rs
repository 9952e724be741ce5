//! Architecture rules checked on the sources: dependencies point one way
//! (core <- ingest <- store <- search <- remote <- cli: the store never imports search,
//! not even in its tests), and cfs-core does no I/O.

use std::path::{Path, PathBuf};

const LAYERS: [&str; 7] = [
    "cfs-core",
    "cfs-ingest",
    "cfs-store",
    "cfs-search",
    "cfs-remote",
    "cfs-postgres",
    "cfs-cli",
];

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

/// The tests' shared helpers sit beside the layers, under the store: a dev-dependency
/// of the store's tests may depend on the store, never on search or anything above it.
#[test]
fn the_test_kit_stays_under_search() {
    let path = root().join("cfs-testkit/Cargo.toml");
    let manifest: toml::Table = std::fs::read_to_string(&path)
        .expect("cfs-testkit/Cargo.toml")
        .parse()
        .expect("a manifest");
    let deps = manifest["dependencies"].as_table().expect("dependencies");
    let above: Vec<&String> = deps
        .keys()
        .filter(|name| LAYERS.iter().position(|l| l == name) > Some(2))
        .collect();
    assert!(above.is_empty(), "cfs-testkit depends on {above:?}");
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
    let sources = cli_sources();
    let modules: std::collections::BTreeSet<&str> =
        sources.iter().map(|(m, _)| m.as_str()).collect();
    let mut graph = std::collections::BTreeMap::new();
    for (module, text) in sources.iter().filter(|(m, _)| m != "main") {
        let mut named = std::collections::BTreeSet::new();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if name != *module && modules.contains(name.as_str()) {
                named.insert(name);
            }
        }
        graph
            .entry(module.clone())
            .or_insert_with(std::collections::BTreeSet::new)
            .extend(named);
    }
    graph
}

/// `(module, text)` of every source file of cfs-cli (of [`source_files`]), a folder's
/// files under the folder's name, the root as `main`.
fn cli_sources() -> Vec<(String, String)> {
    source_files()
        .iter()
        .filter_map(|file| {
            let rel = file.strip_prefix("cfs-cli/src/")?;
            let module = rel.split('/').next()?.trim_end_matches(".rs").to_owned();
            let text = std::fs::read_to_string(root().join(file)).expect("source");
            Some((module, text))
        })
        .collect()
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
    let sizes: Vec<(String, usize)> = cli_sources()
        .into_iter()
        .map(|(module, text)| (module, text.lines().count()))
        .collect();
    let total: usize = sizes.iter().map(|(_, n)| n).sum();
    let big: Vec<_> = sizes.iter().filter(|(_, n)| n * 5 > total).collect();
    assert!(
        big.is_empty(),
        "over a fifth of cfs-cli's {total} lines: {big:?}"
    );
}

/// The files allowed `unsafe`, with how many sites (`unsafe {`, `unsafe fn`, `unsafe impl`,
/// `unsafe extern`) each holds, and why. Every such file also marks the code with
/// `#[expect(unsafe_code)]` (the workspace denies `unsafe_code`), so a site whose unsafe
/// has gone fails to build under `-D warnings`; this list fails on a new file or site.
const UNSAFE_ALLOWED: [(&str, usize, &str); 13] = [
    (
        "cfs-cli/src/alloc.rs",
        2,
        "glibc's mallopt and madvise, through libc",
    ),
    (
        "cfs-cli/src/crash.rs",
        10,
        "the fatal-signal handler that names the file being parsed: sigaction, write and raise, through libc",
    ),
    (
        "cfs-core/src/cpu.rs",
        1,
        "asking Linux for the AMX tile state, through libc",
    ),
    (
        "cfs-core/src/hash_many.rs",
        7,
        "BLAKE3 lanes in AVX2/AVX-512 intrinsics",
    ),
    ("cfs-ingest/src/lines.rs", 1, "SSE2 line-feed scan"),
    (
        "cfs-ingest/src/parsing.rs",
        4,
        "the path of the file being parsed, read back from a thread-local by a signal handler",
    ),
    (
        "cfs-ingest/src/minilm/embedder.rs",
        1,
        "the model file mapped read-only",
    ),
    (
        "cfs-ingest/src/minilm/kernel.rs",
        44,
        "AMX, AVX-512 VNNI, AVX2, AVX-VNNI and NEON matrix kernels; AMX's byte split in AVX-512",
    ),
    (
        "cfs-ingest/src/minilm/model.rs",
        9,
        "AVX2/AVX-512 layer loops and embedding rows, AVX-512 softmax and gathers",
    ),
    ("cfs-store/src/backend.rs", 1, "fallocate, through libc"),
    (
        "cfs-store/src/chunk_log.rs",
        2,
        "pwritev and sync_file_range, through libc",
    ),
    (
        "cfs-search/src/codes.rs",
        1,
        "popcount kernels chosen at run time",
    ),
    (
        "cfs-search/src/in_place.rs",
        8,
        "the index file mapped and read in place, chunk ids included",
    ),
];

/// `unsafe` sites per source file of the crates.
fn unsafe_sites() -> std::collections::BTreeMap<String, usize> {
    let mut sites = std::collections::BTreeMap::new();
    for file in source_files() {
        let text = std::fs::read_to_string(root().join(&file)).expect("source");
        let count = text
            .match_indices("unsafe")
            .filter(|(at, _)| {
                let before = text[..*at].chars().next_back();
                let after = text[at + "unsafe".len()..].trim_start();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && ["{", "fn ", "impl", "extern"]
                        .iter()
                        .any(|w| after.starts_with(w))
            })
            .count();
        if count > 0 {
            sites.insert(file, count);
        }
    }
    sites
}

#[test]
fn unsafe_is_only_in_the_allowed_files() {
    let found = unsafe_sites();
    let allowed: std::collections::BTreeMap<String, usize> = UNSAFE_ALLOWED
        .iter()
        .map(|(file, n, _)| ((*file).to_owned(), *n))
        .collect();
    assert_eq!(
        found, allowed,
        "unsafe sites differ from UNSAFE_ALLOWED (a new one needs a reason there and a \
         SAFETY comment; a removed one, its line there updated)"
    );
    for (file, _, _) in UNSAFE_ALLOWED {
        let text = std::fs::read_to_string(root().join(file)).expect("allowed file");
        assert!(
            text.contains("expect(unsafe_code)") && !text.contains("allow(unsafe_code)"),
            "{file}: mark its unsafe code with #[expect(unsafe_code)]"
        );
    }
}

#[test]
fn system_calls_go_through_libc() {
    let mut declared = Vec::new();
    for file in unsafe_sites().keys() {
        let text = std::fs::read_to_string(root().join(file)).expect("source");
        if text.contains("extern \"C\" {") {
            declared.push(file.clone());
        }
    }
    assert!(
        declared.is_empty(),
        "C functions declared by hand (use the libc crate, whose types fit each target): \
         {declared:?}"
    );
}

#[test]
fn every_unsafe_site_says_why_it_is_sound() {
    let mut unexplained = Vec::new();
    for (file, _, _) in UNSAFE_ALLOWED {
        let text = std::fs::read_to_string(root().join(file)).expect("allowed file");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let site = ["unsafe {", "unsafe fn ", "unsafe impl", "unsafe extern"]
                .iter()
                .any(|w| code.contains(w));
            let window = &lines[i.saturating_sub(12)..=i];
            if site
                && !window
                    .iter()
                    .any(|l| l.contains("SAFETY") || l.contains("# Safety"))
            {
                unexplained.push(format!("{file}:{}", i + 1));
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "unsafe without a SAFETY comment (or a # Safety section) just above: {unexplained:?}"
    );
}

/// Every source file of the crates (and cfs-cli's build files), repository-relative.
fn source_files() -> std::collections::BTreeSet<String> {
    let mut files = std::collections::BTreeSet::new();
    let mut stack: Vec<PathBuf> = LAYERS.iter().map(|c| root().join(c).join("src")).collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root()).expect("in the repository");
                files.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.extend([
        "cfs-cli/build.rs".to_owned(),
        "cfs-cli/code_order.rs".to_owned(),
    ]);
    files
}

/// ARCHITECTURE.md is the map: it names every source file (as `crate/src/...rs` in
/// backticks), and every `.rs` path it names exists.
#[test]
fn the_map_names_every_source_file_and_no_missing_one() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let named: std::collections::BTreeSet<String> = map
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.ends_with(".rs") && !t.contains(' '))
        .map(str::to_owned)
        .collect();
    let files = source_files();
    let unnamed: Vec<_> = files.difference(&named).collect();
    let missing: Vec<_> = named.iter().filter(|n| !root().join(n).is_file()).collect();
    assert!(
        unnamed.is_empty() && missing.is_empty(),
        "ARCHITECTURE.md does not name {unnamed:?}; it names files that do not exist: \
         {missing:?}"
    );
}
