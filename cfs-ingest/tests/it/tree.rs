//! A folder to a canonical state: determinism under file order and thread count,
//! collections on path entries, per-file errors that leave the rest indexed.

use cfs_core::{ChunkKind, EdgeKind};
use cfs_ingest::{HashEmbedder, IngestConfig, Registry, Walk, index_tree, index_walk, walk};

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, bytes: &[u8]| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    write(
        "README.md",
        b"---\ntitle: Demo\n---\n# Demo\n\nSome text.\n\n## Part\n\nMore.\n",
    );
    write(
        "internal/search/rrf.go",
        b"package search\n\n// Fuse ranks.\nfunc Fuse() {}\n",
    );
    write(
        "internal/db/store.py",
        b"class Store:\n    def get(self):\n        return 1\n",
    );
    write("web/app.tsx", b"export function App() { return <div/>; }\n");
    write(
        "web/page.html",
        b"<html><head><title>Page</title></head><body><p>Hello</p></body></html>",
    );
    write(
        "big/huge.rs",
        format!("fn huge() {{\n{}}}\n", "    let x = 1;\n".repeat(1500)).as_bytes(),
    );
    write(
        "copy/README.md",
        b"---\ntitle: Demo\n---\n# Demo\n\nSome text.\n\n## Part\n\nMore.\n",
    );
    write("bad/data.json", b"{not json");
    write("bad/blob.bin", &[0u8, 159, 146, 150, 0, 1]);
    write(".gitignore", b"ignored/\n");
    write("ignored/secret.txt", b"not indexed");
    write(
        ".cfs/collections.yaml",
        b"collections:\n  - name: search\n    pathContext:\n      \"internal/\": Internal code\n      \"internal/search/\": Hybrid search\n",
    );
    dir
}

#[test]
fn same_root_in_any_order_on_any_thread_count() {
    let dir = tree();
    let config = IngestConfig::default();
    let registry = Registry::load(&dir.path().join(".cfs/collections.yaml")).unwrap();
    let embedder = HashEmbedder::default();
    let reference = index_tree(dir.path(), &config, &registry, &embedder, &|_| {}).unwrap();
    let root = reference.state.state_root();
    assert!(reference.state.check_integrity().is_empty());
    for (threads, seed) in [(1usize, 1u64), (2, 7), (4, 42)] {
        let mut walked = walk(dir.path()).unwrap();
        let mut x = seed;
        for i in (1..walked.files.len()).rev() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            walked.files.swap(i, (x >> 33) as usize % (i + 1));
        }
        let shuffled = Walk {
            files: walked.files,
            ..Walk::default()
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let again = pool
            .install(|| index_walk(shuffled, &config, &registry, &embedder, &|_| {}))
            .unwrap();
        assert_eq!(
            again.state.state_root(),
            root,
            "threads {threads}, seed {seed}"
        );
    }
}

#[test]
fn rows_carry_kinds_collections_and_errors() {
    let dir = tree();
    let registry = Registry::load(&dir.path().join(".cfs/collections.yaml")).unwrap();
    let index = index_tree(
        dir.path(),
        &IngestConfig::default(),
        &registry,
        &HashEmbedder::default(),
        &|_| {},
    )
    .unwrap();
    let state = &index.state;
    let paths: Vec<&str> = state.paths().values().map(|p| p.path.as_str()).collect();
    assert!(
        !paths
            .iter()
            .any(|p| p.starts_with("ignored/") || p.starts_with(".cfs/")),
        "{paths:?}"
    );
    let go = state.path("internal/search/rrf.go").unwrap();
    assert_eq!(go.collections, vec!["search"]);
    assert_eq!(go.context, "Internal code\n\nHybrid search");
    assert!(state.path("web/app.tsx").unwrap().collections.is_empty());
    // Identical README files share one document.
    assert_eq!(
        state.path("README.md").unwrap().document_id,
        state.path("copy/README.md").unwrap().document_id
    );
    let readme = &state.documents()[&state.path("README.md").unwrap().document_id];
    assert_eq!(readme.metadata[0].key, "title");
    // Kinds per format.
    let kinds = |path: &str| -> Vec<ChunkKind> {
        let id = state.path(path).unwrap().document_id;
        let mut chunks: Vec<_> = state
            .chunks()
            .values()
            .filter(|c| c.document_id == id)
            .collect();
        chunks.sort_by_key(|c| c.sequence);
        chunks.into_iter().map(|c| c.kind.clone()).collect()
    };
    assert!(kinds("README.md").iter().any(
        |k| matches!(k, ChunkKind::Section { heading_path } if heading_path == &["Demo", "Part"])
    ));
    assert!(
        kinds("internal/db/store.py")
            .iter()
            .any(|k| matches!(k, ChunkKind::Code { symbol: Some(s), .. } if s.name == "Store"))
    );
    assert!(
        kinds("web/app.tsx")
            .iter()
            .any(|k| matches!(k, ChunkKind::Code { symbol: Some(s), .. } if s.name == "App"))
    );
    assert!(
        kinds("web/page.html")
            .iter()
            .all(|k| matches!(k, ChunkKind::Text))
    );
    // The huge function is windowed and its windows are linked.
    assert!(kinds("big/huge.rs").len() >= 3);
    assert!(
        state
            .edges()
            .keys()
            .filter(|e| e.kind == EdgeKind::NEXT_WINDOW)
            .count()
            >= 2
    );
    // Bad files are errors naming them; everything else is indexed.
    let errors: Vec<String> = index.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("bad/data.json")));
    assert!(errors.iter().any(|e| e.contains("bad/blob.bin")));
    assert_eq!(index.n_files, 8);
}

#[test]
fn links_vanishing_files_and_huge_lines_are_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("ok.txt"), "fine\n").unwrap();
    std::os::unix::fs::symlink(root.join("loop_b"), root.join("loop_a")).unwrap();
    std::os::unix::fs::symlink(root.join("loop_a"), root.join("loop_b")).unwrap();
    std::os::unix::fs::symlink(root.join("ok.txt"), root.join("link.txt")).unwrap();
    std::fs::write(root.join("line.txt"), vec![b'y'; 10 << 20]).unwrap();
    std::fs::write(root.join("line.md"), vec![b'z'; 10 << 20]).unwrap();
    std::fs::write(root.join("gone.txt"), "soon gone\n").unwrap();
    let mut walked = walk(root).unwrap();
    let skipped: Vec<String> = walked.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped.iter().all(|e| e.contains("symbolic link")));
    // A file that vanishes between the walk and the read.
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    walked.errors.clear();
    let index = index_walk(
        walked,
        &IngestConfig::default(),
        &Registry::default(),
        &HashEmbedder::new(16),
        &|_| {},
    )
    .unwrap();
    let errors: Vec<String> = index.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("gone.txt"));
    assert_eq!(index.n_files, 3);
    let line = index.state.path("line.txt").unwrap().document_id;
    let n = index
        .state
        .chunks()
        .values()
        .filter(|c| c.document_id == line)
        .count();
    assert_eq!(n, (10 << 20) / 2048);
}
