//! The `cfs` binary end to end: exit codes, JSON shapes, errors that name the file.

use std::process::Command;

use serde_json::Value;

mod concurrent;
mod connect;
mod first_hour;
mod idle;
mod link;
mod publish;
mod readonly;
mod remote;
mod repair;
mod support;

use support::{cfs, cfs_env, cfs_in, git, sample_tree};

#[test]
fn demo_json_reports_a_sound_deterministic_state() {
    let dir = sample_tree();
    let (code, out, err) = cfs(&[
        "demo",
        dir.path().to_str().unwrap(),
        "--json",
        "--query",
        "merkle",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["files"], 3);
    assert_eq!(v["paths"], 3);
    assert_eq!(v["documents"], 2, "identical files share a document");
    assert_eq!(v["same_root_reversed_single_thread"], true);
    assert_eq!(v["proof"]["verified"], true);
    assert_eq!(v["state_root"].as_str().unwrap().len(), 64);
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].as_str().unwrap().contains("image.png"));
    assert!(
        v["results"][0]["paths"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "README.md")
    );
    // The root depends on the content only: the same tree elsewhere gives the same root.
    let copy = sample_tree();
    let (_, out2, _) = cfs(&["demo", copy.path().to_str().unwrap(), "--json"]);
    let v2: Value = serde_json::from_str(&out2).unwrap();
    assert_eq!(v["state_root"], v2["state_root"]);
}

#[test]
fn chunks_json_and_errors() {
    let dir = sample_tree();
    let file = dir.path().join("src/lib.rs");
    let (code, out, _) = cfs(&["chunks", file.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mime_type"], "text/x-rust");
    let chunk = &v["chunks"][0];
    assert_eq!(chunk["language"], "rust");
    assert_eq!(chunk["symbol"], "add");
    assert_eq!(chunk["symbol_info"]["kind"], "function");
    assert_eq!(chunk["start_line"], 1);
    assert!(chunk["text"].as_str().unwrap().contains("pub fn add"));

    let png = dir.path().join("image.png");
    let (code, _, err) = cfs(&["chunks", png.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("image.png") && err.contains("binary"), "{err}");
    let (code, _, err) = cfs(&["chunks", "/no/such/file.txt"]);
    assert_eq!(code, 1);
    assert!(err.contains("/no/such/file.txt"), "{err}");
    // A FIFO would block the read and a device never end: refused before reading.
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for path in [
        fifo.to_str().unwrap(),
        "/dev/zero",
        dir.path().to_str().unwrap(),
    ] {
        let (code, _, err) = cfs(&["chunks", path]);
        assert_eq!(code, 1, "{path}");
        assert!(
            err.contains(path) && err.contains("not a regular file"),
            "{err}"
        );
    }
    // PDFs are extracted by the cfs binary itself, in a child process.
    let pdf = dir.path().join("doc.pdf");
    std::fs::write(
        &pdf,
        cfs_ingest::minimal_pdf(&["First page text", "Second page text"]),
    )
    .unwrap();
    let (code, out, err) = cfs(&["chunks", pdf.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["chunks"][1]["kind"], "page");
    assert!(
        v["chunks"][1]["text"]
            .as_str()
            .unwrap()
            .contains("Second page text")
    );
    let (code, _, err) = cfs(&["chunks", file.to_str().unwrap(), "--max", "4"]);
    assert_eq!(code, 1);
    assert!(err.contains("max"), "{err}");
}

#[test]
fn index_status_verify_log_show_prove() {
    let dir = sample_tree();
    let root = dir.path();
    let (code, out, err) = cfs_in(root, &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["added"], 3);
    assert_eq!(v["failed"].as_array().unwrap().len(), 1);
    let root_hex = v["state_root"].as_str().unwrap().to_owned();
    // A new store embeds with minilm-int, and waits for every vector.
    assert_eq!(v["vectors_pending"], 0);
    assert_ne!(v["text_state_root"], v["state_root"]);
    // The store's root equals the in-memory demo root of the same tree.
    let (_, demo, _) = cfs(&["demo", root.to_str().unwrap(), "--json"]);
    let demo: Value = serde_json::from_str(&demo).unwrap();
    assert_eq!(demo["state_root"], root_hex.as_str());

    // Found from a subfolder, as git finds a repository.
    let sub = root.join("src");
    let (code, out, _) = cfs_in(&sub, &["status", "--json"]);
    assert_eq!(code, 0);
    let s: Value = serde_json::from_str(&out).unwrap();
    for key in [
        "state_root",
        "paths",
        "documents",
        "chunks",
        "embeddings",
        "edges",
    ] {
        assert!(!s[key].is_null(), "status lacks {key}");
    }
    assert_eq!(s["state_root"], root_hex.as_str());
    assert_eq!(s["paths"], 3);
    // The integer kernels' path is named where the model ran, and CFS_SIMD forces one;
    // the portable path recomputes every vector of the store to the same bits.
    let simd = cfs_ingest::minilm::Simd::Auto.name();
    assert_eq!(
        (v["simd"].as_str(), s["simd"].as_str()),
        (Some(simd), Some(simd))
    );
    let portable = [("CFS_SIMD", "portable")];
    let (code, out, _) = cfs_env(root, &portable, &["status", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["simd"],
        "portable"
    );
    let (code, _, err) = cfs_env(root, &portable, &["verify", "--full"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cfs_env(root, &[("CFS_SIMD", "tiles")], &["status"]);
    assert!(code != 0 && err.contains("CFS_SIMD=tiles"), "{err}");
    // AMX is a path where the CPU and the OS have it, and refused by name elsewhere.
    let (code, out, err) = cfs_env(root, &[("CFS_SIMD", "amx")], &["status", "--json"]);
    if cfs_core::cpu::Features::detected().amx {
        assert_eq!(code, 0, "{err}");
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["simd"], "amx");
    } else {
        assert!(code != 0 && err.contains("CFS_SIMD=amx"), "{err}");
    }
    assert!(s["tables"].is_null(), "tables only when asked");
    // Documents per type: the two Markdown files are one document; the Rust file was
    // parsed by symbol.
    assert_eq!(
        s["types"],
        serde_json::json!([
            {"mime_type": "text/markdown", "documents": 1, "by_symbol": 0},
            {"mime_type": "text/x-rust", "documents": 1, "by_symbol": 1},
        ])
    );

    // --tables: every table once, its rows agreeing with the counts.
    let (code, out, _) = cfs_in(root, &["status", "--tables", "--json"]);
    assert_eq!(code, 0);
    let t: Value = serde_json::from_str(&out).unwrap();
    let tables = t["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 15);
    let rows = |name: &str| {
        let table = tables.iter().find(|x| x["name"] == name).unwrap();
        assert!(table["stored_bytes"].as_u64().unwrap() > 0 || table["rows"] == 0);
        table["rows"].clone()
    };
    for key in ["paths", "documents", "chunks", "embeddings", "edges"] {
        assert_eq!(rows(key), s[key], "{key}");
    }
    // A row a document (every sample file has chunks).
    assert_eq!(rows("chunks_by_document"), s["documents"]);
    // User edges only: the sample has none.
    assert_eq!(rows("edges_by_target"), 0);
    let (code, text, _) = cfs_in(root, &["status", "--tables"]);
    assert_eq!(code, 0);
    assert!(text.contains("chunks_by_document"), "{text}");

    let (code, out, _) = cfs_in(root, &["verify", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["ok"], true);

    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn sub(a: u32, b: u32) -> u32 { a - b }\n",
    )
    .unwrap();
    let (code, out, _) = cfs_in(root, &["index", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["updated"].as_u64(), v["parsed"].as_u64()),
        (Some(1), Some(1))
    );
    // Each index commits the text, then the vectors.
    assert_eq!(v["commits"], 2);
    assert_eq!(v["vectors_pending"], 0);
    let (_, out, _) = cfs_in(root, &["log", "--json"]);
    let log: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(log.as_array().unwrap().len(), 4);
    assert_eq!(log[1]["parent"], root_hex.as_str());
    assert_eq!(log[0]["parent"], v["text_state_root"]);

    let (code, out, _) = cfs_in(root, &["show", "src/lib.rs", "--json"]);
    assert_eq!(code, 0);
    let show: Value = serde_json::from_str(&out).unwrap();
    let chunk_id = show["chunks"][0]["id"].as_str().unwrap().to_owned();
    // One shape for `symbol` everywhere: the qualified name, details beside it.
    assert_eq!(show["chunks"][0]["symbol"], "sub");
    assert_eq!(show["chunks"][0]["symbol_info"]["kind"], "function");
    let (code, out, _) = cfs_in(root, &["show", &chunk_id, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["document_id"],
        show["document_id"]
    );

    let (code, proof, _) = cfs_in(root, &["prove", &chunk_id]);
    assert_eq!(code, 0);
    let proof = proof.trim();
    let (code, out, _) = cfs_in(root, &["prove", "--check", proof, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["valid"], true);
    // Offline, against an explicit root, from another folder.
    let status: Value = serde_json::from_str(&cfs_in(root, &["status", "--json"]).1).unwrap();
    let current = status["state_root"].as_str().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let (code, _, _) = cfs_in(
        elsewhere.path(),
        &["prove", "--check", proof, "--root", current],
    );
    assert_eq!(code, 0);
    let (code, _, _) = cfs_in(
        elsewhere.path(),
        &["prove", "--check", proof, "--root", &root_hex],
    );
    assert_eq!(
        code, 1,
        "a proof of the new state fails against the old root"
    );
    // A proof given as a file is read from it; a path that is not one is named.
    let proof_file = elsewhere.path().join("proof.hex");
    std::fs::write(&proof_file, proof).unwrap();
    let from_file = proof_file.to_str().unwrap();
    let (code, _, err) = cfs_in(root, &["prove", "--check", from_file, "--root", current]);
    assert_eq!(code, 0, "{err}");
    let missing = elsewhere.path().join("missing.hex");
    let missing = missing.to_str().unwrap();
    let (code, _, err) = cfs_in(root, &["prove", "--check", missing, "--root", current]);
    assert_eq!(code, 1);
    assert!(
        err.contains(missing) && err.contains("neither a file"),
        "{err}"
    );

    let (code, _, err) = cfs_in(elsewhere.path(), &["status"]);
    assert_eq!(code, 1);
    assert!(err.contains("no cfs store"), "{err}");
    let (code, _, err) = cfs_in(root, &["show", "no/such/file"]);
    assert_eq!(code, 1);
    assert!(err.contains("no/such/file"), "{err}");

    // gc: the vectors of the edited file's old text go; the state stays.
    let (code, out, err) = cfs_in(root, &["gc", "--compact", "--json"]);
    assert_eq!(code, 0, "{err}");
    let gc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(gc["state_root"], current);
    assert!(gc["vectors_removed"].as_u64().unwrap() >= 1, "{gc}");
    assert!(gc["cache_entries_removed"].as_u64().unwrap() >= 1, "{gc}");
    assert!(gc["bytes_after"].as_u64() <= gc["bytes_before"].as_u64());
    let (code, out, _) = cfs_in(root, &["verify", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["ok"], true);
    let (code, text, _) = cfs_in(root, &["gc"]);
    assert_eq!(code, 0);
    assert!(
        text.contains("removed 0 cache entries and 0 vectors"),
        "{text}"
    );
}

/// `cfs index` killed with SIGKILL at seeded random moments: the store always reopens,
/// verifies, and a new `cfs index` converges to the root of a clean in-memory index.
/// With CFS_SLOW_TESTS, six moments of a minilm-int index (text first, then the vectors'
/// commits); otherwise two of a hash-embedder index.
#[test]
fn sigkill_during_index_leaves_a_sound_store() {
    let (rounds, embedder) = if support::slow() {
        (6, "minilm-int")
    } else {
        (2, "hash")
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..300 {
        let text = format!(
            "# Note {i}\n\n{}\n",
            "some words to chunk and embed. ".repeat(40 + i % 30)
        );
        std::fs::create_dir_all(root.join(format!("d{}", i % 10))).unwrap();
        std::fs::write(root.join(format!("d{}/n{i}.md", i % 10)), text).unwrap();
    }
    let demo_args = [
        "demo",
        root.to_str().unwrap(),
        "--embedder",
        embedder,
        "--json",
    ];
    let (_, demo, _) = cfs(&demo_args);
    let clean = serde_json::from_str::<Value>(&demo).unwrap()["state_root"].clone();
    let mut seed: u64 = 0x5eed;
    let mut killed = 0;
    for round in 0..rounds {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // Within the run: a hash index of this tree takes about 300 ms in a debug build.
        let delay_ms = if support::slow() {
            20 + (seed >> 33) % 400
        } else {
            5 + (seed >> 33) % 100
        };
        // Each round changes some files, so there is work to interrupt.
        for i in (round..300).step_by(7) {
            std::fs::write(
                root.join(format!("d{}/n{i}.md", i % 10)),
                format!("round {round} file {i}\n"),
            )
            .unwrap();
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_cfs"))
            .args(["index", "--embedder", embedder, "--json"])
            .current_dir(root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            killed += 1;
        }
        child.wait().unwrap();
        // A kill before the new store's creation ends leaves no store at all.
        if !root.join(".cfs/store.redb").exists() {
            assert_eq!(round, 0, "a store once made is never taken away");
            continue;
        }
        let (code, out, err) = cfs_in(root, &["verify", "--json"]);
        assert_eq!(
            code, 0,
            "round {round} (seed {seed:#x}, {delay_ms} ms): {out} {err}"
        );
    }
    let (code, _, err) = cfs_in(root, &["index"]);
    assert_eq!(code, 0, "{err}");
    let (_, demo, _) = cfs(&demo_args);
    let clean_now = serde_json::from_str::<Value>(&demo).unwrap()["state_root"].clone();
    let (_, status, _) = cfs_in(root, &["status", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&status).unwrap()["state_root"],
        clean_now
    );
    assert_ne!(clean, clean_now);
    assert!(killed >= 1, "no run was interrupted");
}

#[test]
fn search_answers_files_filters_roles_and_explains_its_ranking() {
    let dir = sample_tree();
    let root = dir.path();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(
        root.join("tests/add.rs"),
        "#[test]\nfn adds() { assert_eq!(add(1, 2), 3); }\n",
    )
    .unwrap();
    assert_eq!(cfs_in(root, &["index", "--json"]).0, 0);
    // A bare name finds its definition; the test that calls it is a test.
    let (code, out, err) = cfs_in(root, &["search", "add", "--files", "--json"]);
    assert_eq!(code, 0, "{err}");
    let files: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(files[0]["path"], "src/lib.rs", "{files}");
    assert_eq!(files[0]["role"], "source");
    let chunk = &files[0]["chunks"][0];
    assert_eq!(chunk["symbol"], "add");
    assert_eq!(chunk["parts"]["definition_rank"], 1, "{chunk}");
    let roles: Vec<&str> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["role"].as_str().unwrap())
        .collect();
    assert!(roles.contains(&"test"), "{files}");
    // Text output tags roles other than source and names the lists.
    let (_, out, _) = cfs_in(root, &["search", "add", "--files"]);
    assert!(out.contains(" 1. src/lib.rs  score"), "{out}");
    assert!(out.contains("tests/add.rs [test]"), "{out}");
    assert!(out.contains("definition #1"), "{out}");
    // --role keeps one role; an unknown role is an error naming the roles.
    let (_, out, _) = cfs_in(root, &["search", "add", "--role", "test", "--json"]);
    let hits: Value = serde_json::from_str(&out).unwrap();
    assert!(!hits.as_array().unwrap().is_empty());
    assert!(
        hits.as_array().unwrap().iter().all(|h| h["role"] == "test"),
        "{hits}"
    );
    let (code, _, err) = cfs_in(root, &["search", "add", "--role", "tests"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("unknown role") && err.contains("vendored"),
        "{err}"
    );
    // --explain says how the query was read and every part of each score.
    let (_, out, _) = cfs_in(root, &["search", "add", "--explain"]);
    assert!(
        out.contains("query: name intent; definitions looked up: add"),
        "{out}"
    );
    assert!(
        out.contains("definition #1 (level 5)") && out.contains("fused "),
        "{out}"
    );
    let (_, out, _) = cfs_in(
        root,
        &["search", "merkle tree proof", "--explain", "--json"],
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["explain"]["intent"], "description", "{v}");
    assert_eq!(v["explain"]["weights"]["definitions"], 0, "{v}");
    let (_, asked, _) = cfs_in(
        root,
        &[
            "search",
            "how is a merkle proof checked",
            "--explain",
            "--json",
        ],
    );
    let asked: Value = serde_json::from_str(&asked).unwrap();
    assert_eq!(asked["explain"]["intent"], "description", "{asked}");
    assert_eq!(
        asked["explain"]["weights"], v["explain"]["weights"],
        "{asked}"
    );
    let readme = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["path"] == "README.md")
        .unwrap();
    assert_eq!(readme["role"], "docs", "{v}");
    assert_eq!(readme["parts"]["role_weight"], 20, "{v}");
    assert_eq!(readme["parts"]["coverage_points"], 1024, "{v}");
    // A query that names docs weighs them as source.
    let (_, out, _) = cfs_in(root, &["search", "merkle tree docs", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["path"], "README.md", "{v}");
    assert_eq!(v[0]["parts"]["role_weight"], 100, "{v}");
}

#[test]
fn context_gives_cited_text_within_its_budget() {
    let dir = sample_tree();
    let root = dir.path();
    assert_eq!(cfs_in(root, &["index", "--json"]).0, 0);
    let (code, out, err) = cfs_in(root, &["context", "add", "--tokens", "200", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let (_, status, _) = cfs_in(root, &["status", "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(v["root"], status["state_root"], "{v}");
    assert_eq!(v["budget"], 200);
    let tokens = v["tokens"].as_u64().unwrap();
    assert!(tokens > 0 && tokens <= 200, "{v}");
    let span = &v["files"][0]["spans"][0];
    assert_eq!(v["files"][0]["path"], "src/lib.rs", "{v}");
    assert_eq!(
        (span["start_line"].as_u64(), span["end_line"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(span["symbols"][0], "add", "{v}");
    let text = v["text"].as_str().unwrap();
    assert!(
        text.starts_with("src/lib.rs:1-2\n```rust\n/// Adds.\npub fn add("),
        "{text}"
    );
    // The text form is the rendered context itself.
    let (_, plain, _) = cfs_in(root, &["context", "add", "--tokens", "200"]);
    assert_eq!(plain, text);
    // A budget under the least is refused before anything runs.
    let (code, _, err) = cfs_in(root, &["context", "add", "--tokens", "10"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("64"), "{err}");
}

#[test]
fn search_and_rebuild_index() {
    let dir = sample_tree();
    let root = dir.path();
    assert_eq!(cfs_in(root, &["index", "--json"]).0, 0);
    let (code, out, err) = cfs_in(root, &["search", "merkle inclusion", "--json", "-k", "5"]);
    assert_eq!(code, 0, "{err}");
    let hits: Value = serde_json::from_str(&out).unwrap();
    let hits = hits.as_array().unwrap();
    assert_eq!(hits[0]["path"], "README.md");
    assert_eq!(
        hits[0]["paths"],
        serde_json::json!(["README.md", "copy.md"])
    );
    // Only the docs say "merkle": code found by meaning alone is kept below them.
    assert_eq!(hits[1]["path"], "src/lib.rs");
    assert!(hits[1]["parts"]["capped_from"].is_f64(), "{hits:?}");
    for key in [
        "path",
        "start_line",
        "end_line",
        "score",
        "chunk_id",
        "text",
    ] {
        assert!(!hits[0][key].is_null(), "search result lacks {key}");
    }
    // Filters and modes.
    let (_, out, _) = cfs_in(
        root,
        &[
            "search", "add", "--lang", "rust", "--mode", "text", "--json",
        ],
    );
    let hits: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(hits[0]["symbol"], "add");
    assert_eq!(hits.as_array().unwrap().len(), 1);
    // Queries full of operators are text, not errors.
    for q in ["C++", "what?", "\"a b\"", "", "zk-snark"] {
        let (code, out, err) = cfs_in(root, &["search", q, "--json"]);
        assert_eq!(code, 0, "{q}: {err}");
        assert!(serde_json::from_str::<Value>(&out).unwrap().is_array());
    }
    let (code, _, err) = cfs_in(root, &["search", "x", "--mode", "fuzzy"]);
    assert_ne!(code, 0);
    assert!(err.contains("fuzzy"), "{err}");
    let (code, out, _) = cfs_in(root, &["search", "merkle"]);
    assert_eq!(code, 0);
    assert!(out.contains("README.md:"), "{out}");
    // --explain: segments, terms, candidates, fusion, and the score behind each rank.
    let (code, out, err) = cfs_in(root, &["search", "merkle", "--explain"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("segment 0:") && out.contains("term \"merkle\": in 1 chunks"),
        "{out}"
    );
    assert!(
        out.contains("text: 1 chunks scored") && out.contains("(bm25 "),
        "{out}"
    );
    let (code, out, err) = cfs_in(root, &["search", "merkle", "--explain", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["explain"]["terms"][0]["df"], 1, "{v}");
    assert_eq!(v["explain"]["text_candidates"], 1, "{v}");
    assert!(
        v["hits"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("README.md"),
        "{v}"
    );

    // The index file is written beside the store, and a torn one is rebuilt.
    let cache = root.join(".cfs/index.cache");
    assert!(cache.is_file());
    let bytes = std::fs::read(&cache).unwrap();
    std::fs::write(&cache, &bytes[..bytes.len() / 2]).unwrap();
    let (code, out, err) = cfs_in(root, &["search", "merkle"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("README.md:"), "{out}");
    assert!(err.contains("rebuilt") && err.contains("torn"), "{err}");
    assert_eq!(std::fs::read(&cache).unwrap(), bytes);
    // verify checks every section of it against its hash.
    let (code, out, err) = cfs_in(root, &["verify"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("index file:") && out.contains("matches its hash"),
        "{out}"
    );

    let (code, out, err) = cfs_in(root, &["rebuild-index", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["agrees_with_state"], true);
    assert_eq!(v["chunks"], 2);

    // After a change, `cfs index` writes a delta file beside the index file, which
    // stays as it was; searches map both; a rebuild replaces both by one file.
    let bytes = std::fs::read(&cache).unwrap();
    std::fs::write(
        root.join("notes.md"),
        "# Notes\n\nThe walrus of merkle trees.\n",
    )
    .unwrap();
    let (code, _, err) = cfs_in(root, &["index"]);
    assert_eq!(code, 0, "{err}");
    let delta = root.join(".cfs/index.delta");
    assert!(delta.is_file());
    for _ in 0..2 {
        let (code, out, err) = cfs_in(root, &["search", "walrus"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("notes.md:"), "{out}");
        assert!(delta.is_file());
        assert_eq!(std::fs::read(&cache).unwrap(), bytes);
    }
    let (code, out, err) = cfs_in(root, &["verify"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("index file:"), "{out}");
    let (code, _, err) = cfs_in(root, &["rebuild-index"]);
    assert_eq!(code, 0, "{err}");
    assert!(!delta.exists());
}

#[test]
fn refresh_and_changed_since() {
    let dir = sample_tree();
    let root = dir.path();
    git(root, &["init", "--quiet"]);
    git(root, &["add", "README.md", "src/lib.rs"]);
    git(root, &["commit", "--quiet", "-m", "one"]);
    let (code, out, err) = cfs_in(root, &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["git_head"].is_string());
    let status: Value = serde_json::from_str(&cfs_in(root, &["status", "--json"]).1).unwrap();
    assert_eq!(status["git_head"]["commit"], v["git_head"]);
    assert_eq!(status["git_head"]["current"], true);

    // refresh: only the named paths; a deleted one is removed.
    std::fs::write(root.join("src/lib.rs"), "/// Subtracts.\npub fn sub() {}\n").unwrap();
    std::fs::remove_file(root.join("copy.md")).unwrap();
    std::fs::write(root.join("other.txt"), "not named\n").unwrap();
    let (code, out, err) = cfs_in(
        &root.join("src"),
        &["refresh", "lib.rs", "../copy.md", "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            r["updated"].as_u64(),
            r["removed"].as_u64(),
            r["added"].as_u64()
        ),
        (Some(1), Some(1), Some(0))
    );
    let (code, _, err) = cfs_in(root, &["refresh", "/etc/passwd"]);
    assert_ne!(code, 0);
    assert!(err.contains("outside the indexed tree"), "{err}");
    assert!(!err.contains("prefix not found"), "{err}");
    let (code, _, _) = cfs_in(root, &["refresh", ""]);
    assert_eq!(code, 2, "an empty path is a usage error");
    // A symbolic link in the tree is the link, though it points outside: named, it is
    // refreshed (and skipped, links are not followed), not refused as outside.
    std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
    let (code, out, err) = cfs_in(root, &["refresh", "link", "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert!(
        r["failed"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{r}"
    );
    std::fs::remove_file(root.join("link")).unwrap();

    // --changed-since: committed, staged, unstaged and untracked changes since REF.
    git(root, &["add", "-A"]);
    git(root, &["commit", "--quiet", "-m", "two"]);
    std::fs::write(
        root.join("README.md"),
        "# Sample\n\nEdited after the commit.\n",
    )
    .unwrap();
    std::fs::write(root.join("untracked.md"), "# New\n").unwrap();
    let (code, out, err) = cfs_in(root, &["index", "--changed-since", "HEAD~1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    // other.txt (committed in "two") and untracked.md are new; README.md changed.
    assert_eq!(r["added"], 2, "{r}");
    assert_eq!(r["updated"], 1, "{r}");
    let (_, demo, _) = cfs(&["demo", root.to_str().unwrap(), "--json"]);
    let demo: Value = serde_json::from_str(&demo).unwrap();
    assert_eq!(demo["state_root"], r["state_root"]);
    let (code, _, err) = cfs_in(root, &["index", "--changed-since", "nope"]);
    assert_ne!(code, 0);
    assert!(err.contains("nope: no such commit"), "{err}");
}

#[test]
fn watch_syncs_edits_and_stops_cleanly_on_interrupt() {
    if support::skip_slow("watch_syncs_edits_and_stops_cleanly_on_interrupt") {
        return;
    }
    use std::io::BufRead;
    let dir = sample_tree();
    let root = dir.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cfs"))
        .args(["watch", "--json", "--quiet-ms", "50"])
        .current_dir(root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    // Text first: each sync, then its vectors.
    assert_eq!(next()["event"], "synced");
    assert_eq!(next()["event"], "embedded");
    assert_eq!(next()["event"], "watching");
    std::fs::write(root.join("added.md"), "# Added while watching\n").unwrap();
    let e = next();
    assert_eq!(
        (e["event"].as_str(), e["added"].as_u64()),
        (Some("synced"), Some(1)),
        "{e}"
    );
    let e = next();
    assert_eq!(
        (
            e["event"].as_str(),
            e["chunks"].as_u64(),
            e["pending"].as_u64()
        ),
        (Some("embedded"), Some(1), Some(0)),
        "{e}"
    );
    let (code, _, _) = cfs_in(root, &["search", "watching", "--json"]);
    assert_eq!(code, 0);
    let hits: Value =
        serde_json::from_str(&cfs_in(root, &["search", "watching", "--json"]).1).unwrap();
    assert_eq!(hits[0]["path"], "added.md");
    // The store has an index file now: the watcher brings it forward after each commit.
    assert!(!root.join(".cfs/index.delta").exists());
    std::fs::write(root.join("second.md"), "# Second while watching\n").unwrap();
    assert_eq!(next()["event"], "synced");
    assert_eq!(next()["event"], "embedded");
    assert!(root.join(".cfs/index.delta").is_file());
    let hits: Value =
        serde_json::from_str(&cfs_in(root, &["search", "second", "--json"]).1).unwrap();
    assert_eq!(hits[0]["path"], "second.md");
    // Ctrl-C: the watcher finishes and exits 0.
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let (code, _, err) = cfs_in(root, &["verify"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn embedders_text_first_and_a_missing_model() {
    let dir = sample_tree();
    let root = dir.path();
    // Without the model file: a clear error that says how to get it, and no store.
    let empty = tempfile::tempdir().unwrap();
    // `cfs index` with the model looked for in `empty`: exit 1; its stderr.
    let index_failing = || -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_cfs"))
            .args(["index"])
            .current_dir(root)
            .env("CFS_MODEL_DIR", empty.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{err}");
        err
    };
    let err = index_failing();
    assert!(
        err.contains("minilm-int-v1.cfsm") && err.contains("scripts/fetch-model"),
        "{err}"
    );
    assert!(
        !root.join(".cfs/store.redb").exists(),
        "no store made without its embedder"
    );
    // A model file of the wrong length (a cut download): the same, naming the file.
    std::fs::write(empty.path().join("minilm-int-v1.cfsm"), vec![0u8; 1000]).unwrap();
    let err = index_failing();
    assert!(
        err.contains("minilm-int-v1.cfsm") && err.contains("1000 bytes"),
        "{err}"
    );
    assert!(err.contains("scripts/fetch-model"), "{err}");
    assert!(!root.join(".cfs/store.redb").exists(), "no store made");

    // --no-wait: the text is committed and searchable, the vectors wait.
    let (code, out, err) = cfs_in(root, &["index", "--no-wait", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let pending = v["vectors_pending"].as_u64().unwrap();
    assert!(pending > 0 && v["commits"] == 1, "{v}");
    let (_, status, _) = cfs_in(root, &["status", "--json"]);
    let s: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(s["vectors_pending"].as_u64(), Some(pending));
    assert!(s["embedder"].as_str().unwrap().starts_with("minilm-int/2 "));
    let (_, text, _) = cfs_in(root, &["status"]);
    assert!(
        text.contains(&format!("embedded 0 of {pending} chunks")),
        "{text}"
    );
    let (code, out, _) = cfs_in(root, &["search", "merkle", "--mode", "text", "--json"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("README.md") || out.contains("copy.md"),
        "{out}"
    );
    let (code, _, _) = cfs_in(root, &["verify"]);
    assert_eq!(code, 0, "a state waiting for vectors is sound");
    // Keyword search reads no model file: it works where the model is missing.
    let out = Command::new(env!("CARGO_BIN_EXE_cfs"))
        .args(["search", "merkle", "--mode", "text", "--json"])
        .current_dir(root)
        .env("CFS_MODEL_DIR", empty.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(".md"));

    // The next index embeds them, to the root of a clean index.
    let (code, out, _) = cfs_in(root, &["index", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["vectors_pending"], 0);
    let (_, demo, _) = cfs(&["demo", root.to_str().unwrap(), "--json"]);
    let demo: Value = serde_json::from_str(&demo).unwrap();
    assert_eq!(demo["state_root"], v["state_root"]);
    // verify recomputes a sample of vectors from their texts, or all with --full.
    let (code, out, _) = cfs_in(root, &["verify", "--full", "--json"]);
    assert_eq!(code, 0, "{out}");
    let checked: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        checked["vectors"]["checked"],
        checked["vectors"]["embeddings"]
    );
    assert_eq!(
        checked["vectors"]["wrong"].as_array().map(Vec::len),
        Some(0)
    );
    let (code, out, _) = cfs_in(
        root,
        &["search", "add two numbers", "--mode", "vector", "--json"],
    );
    assert_eq!(code, 0);
    assert!(out.contains("src/lib.rs"), "{out}");

    // Another embedder for an existing store is refused; a new store can have it.
    let (code, _, err) = cfs_in(root, &["index", "--embedder", "hash"]);
    assert_eq!(code, 1);
    assert!(err.contains("mix two models"), "{err}");
    let other = tempfile::tempdir().unwrap();
    let store = other.path().join("s");
    let store = store.to_str().unwrap();
    let (code, out, err) = cfs_in(
        root,
        &["index", "--embedder", "hash", "--store", store, "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let (_, demo, _) = cfs(&[
        "demo",
        root.to_str().unwrap(),
        "--embedder",
        "hash",
        "--json",
    ]);
    let demo: Value = serde_json::from_str(&demo).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["state_root"],
        demo["state_root"]
    );

    // reembed switches that store to minilm-int: the root of a minilm-int clean index.
    let (code, _, _) = cfs_in(root, &["search", "merkle", "--store", store]);
    assert_eq!(code, 0, "an index file of the hash vectors exists now");
    let r = reembed_to_minilm(root, store);
    assert_eq!(r["vectors_pending"], 0);
    assert_eq!(r["state_root"], v["state_root"], "{r}");
    let (code, out, _) = cfs_in(
        root,
        &[
            "search",
            "add two numbers",
            "--mode",
            "vector",
            "--store",
            store,
            "--json",
        ],
    );
    assert_eq!(code, 0);
    assert!(out.contains("src/lib.rs"), "{out}");
}

/// `cfs reembed --embedder minilm-int --store STORE --json` in `root`: its JSON.
fn reembed_to_minilm(root: &std::path::Path, store: &str) -> Value {
    let args = [
        "reembed",
        "--embedder",
        "minilm-int",
        "--store",
        store,
        "--json",
    ];
    let (code, out, err) = cfs_in(root, &args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// A store whose vectors come from an earlier version of the model (minilm-int/1 cut
/// texts at 256 tokens) is refused with the command that moves it, and that command
/// gives the root of a clean index with this version.
#[test]
fn a_store_of_the_earlier_model_version_is_moved_by_reembed() {
    let tree = sample_tree();
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("old.redb");
    let old_id = cfs_ingest::minilm::minilm_model_id().replace("minilm-int/2 ", "minilm-int/1 ");
    let settings = cfs_store::Settings {
        chunk: cfs_store::SyncOptions::default().config.chunk,
        model_id: old_id.clone(),
    };
    drop(cfs_store::Store::create(&file, settings).unwrap());
    let store = file.to_str().unwrap();
    let (code, _, err) = cfs_in(root, &["index", "--store", store]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&old_id) && err.contains("cfs reembed --embedder minilm-int"),
        "{err}"
    );
    let r = reembed_to_minilm(root, store);
    assert_eq!(r["from"], old_id.as_str());
    let (code, out, err) = cfs_in(root, &["index", "--store", store, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let (_, demo, _) = cfs(&["demo", root.to_str().unwrap(), "--json"]);
    let demo: Value = serde_json::from_str(&demo).unwrap();
    assert_eq!(v["state_root"], demo["state_root"]);
}

#[test]
fn a_no_op_index_leaves_the_store_file_untouched() {
    let dir = sample_tree();
    let root = dir.path();
    let (code, _, err) = cfs_in(root, &["index", "--embedder", "hash", "--json"]);
    assert_eq!(code, 0, "{err}");
    // Out of the racy window (files modified within 2 s of a sync are hashed again),
    // and a sync that records their stats as trusted.
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for path in ["README.md", "src/lib.rs", "copy.md", "image.png"] {
        let file = std::fs::File::options().append(true).open(root.join(path));
        file.unwrap().set_modified(past).unwrap();
    }
    let (code, _, err) = cfs_in(root, &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    let store = root.join(".cfs/store.redb");
    let before = (
        std::fs::read(&store).unwrap(),
        std::fs::metadata(&store).unwrap().modified().unwrap(),
    );
    let (code, out, err) = cfs_in(root, &["index", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["added"], 0);
    assert_eq!(report["commits"], 0);
    assert!(report["unchanged"].as_u64().unwrap() >= 2, "{out}");
    let after = (
        std::fs::read(&store).unwrap(),
        std::fs::metadata(&store).unwrap().modified().unwrap(),
    );
    assert!(before == after, "a no-op index wrote to the store file");
}

#[test]
fn store_files_sharing_a_folder_keep_their_own_index_files() {
    let tree = sample_tree();
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let stores = [dir.path().join("a.redb"), dir.path().join("b.redb")];
    for file in &stores {
        let store = file.to_str().unwrap();
        let (code, _, err) = cfs_in(root, &["index", "--embedder", "hash", "--store", store]);
        assert_eq!(code, 0, "{err}");
    }
    // b's state differs from a's, so one shared index file would be rebuilt at each switch.
    std::fs::write(root.join("extra.md"), "# Extra\n\nMerkle walrus.\n").unwrap();
    let b = stores[1].to_str().unwrap();
    let (code, _, err) = cfs_in(root, &["index", "--store", b]);
    assert_eq!(code, 0, "{err}");
    for round in 0..2 {
        for file in &stores {
            let store = file.to_str().unwrap();
            let (code, _, err) = cfs_in(root, &["search", "merkle", "--store", store]);
            assert_eq!(code, 0, "{err}");
            assert!(!err.contains("rebuilt"), "round {round}: {err}");
        }
    }
    assert!(dir.path().join("a.redb.index.cache").is_file());
    assert!(dir.path().join("b.redb.index.cache").is_file());
    assert!(!dir.path().join("index.cache").exists());
}

/// A store kept inside the tree it indexes, under a folder of its own name: none of its
/// files (the store, its chunk log, the search index) is taken for a file of the tree.
#[test]
fn a_store_inside_its_tree_does_not_index_itself() {
    let dir = sample_tree();
    let root = dir.path();
    let args = [
        "index",
        "--store",
        "mystore",
        "--embedder",
        "hash",
        "--json",
    ];
    let (code, _, err) = cfs_in(root, &args);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cfs_in(root, &["search", "add", "--store", "mystore"]);
    assert_eq!(code, 0, "{err}");
    assert!(root.join("mystore/index.cache").is_file());
    std::fs::write(root.join("more.md"), "# More\n").unwrap();
    let (code, out, err) = cfs_in(root, &args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["added"], 1, "{v}");
    // The sample tree's PNG is its one failure; nothing of the store's is one.
    assert!(!v["failed"].to_string().contains("mystore/"), "{v}");
    assert_eq!(v["unchanged"], 3, "{v}");
}

/// `cfs serve --mcp` answers what its MCP library would leave unanswered or take for
/// the end: a notification before the session, a line that is not JSON, a batch,
/// params of the wrong type, a tools/call without a tool, a last line without its
/// newline; and serves the rest.
#[test]
fn the_mcp_server_answers_malformed_lines() {
    let dir = sample_tree();
    let root = dir.path();
    assert_eq!(cfs_in(root, &["index", "--embedder", "hash"]).0, 0);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let lines = [
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        "not json",
        r#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#,
        init,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":5}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"grep"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search","arguments":{"query":"merkle","k":1}}}"#,
    ];
    let mut input = lines.join("\n") + "\n";
    input.push_str(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cfs"))
        .args(["serve", "--mcp"])
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("ignored a message before the session began"),
        "{err}"
    );
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let code = |id: Value| {
        let a = answers
            .iter()
            .find(|a| a["id"] == id && a["error"].is_object());
        a.and_then(|a| a["error"]["code"].as_i64())
    };
    let nulls: Vec<i64> = answers
        .iter()
        .filter(|a| a["id"].is_null())
        .map(|a| a["error"]["code"].as_i64().unwrap())
        .collect();
    assert_eq!(nulls, [-32700, -32600], "{answers:?}");
    assert_eq!(
        (code(4.into()), code(5.into())),
        (Some(-32602), Some(-32602))
    );
    let unknown = answers.iter().find(|a| a["id"] == 8).unwrap();
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"grep\"") && message.contains("get_chunk"),
        "{message}"
    );
    let result = |id: i64| {
        answers
            .iter()
            .find(|a| a["id"] == id && a["result"].is_object())
    };
    assert!(result(0).is_some() && result(7).is_some(), "{answers:?}");
    let found = &result(6).unwrap()["result"]["structuredContent"]["results"][0]["path"];
    assert_eq!(found, "README.md", "{answers:?}");
}
