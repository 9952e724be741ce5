//! `cfs publish` and `cfs verify --db` against the loopback PostgreSQL cluster that
//! `scripts/test` starts (its primary's URL in `CFS_TEST_PG`); run by hand without it,
//! these tests say so and pass (under `CI` they fail instead).

use serde_json::{Value, json};

use crate::support::{cfs_in, sample_tree};

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn primary() -> Option<String> {
    let url = std::env::var("CFS_TEST_PG").ok();
    if url.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CFS_TEST_PG is unset under CI"
        );
        eprintln!("no PostgreSQL cluster (CFS_TEST_PG unset; scripts/test starts one): skipped");
    }
    url
}

/// A store published, published again (nothing sent), verified from the database and
/// listed by `status --db`; a
/// tree whose folder name is no repository name asks for --repo; an unknown
/// repository is an error naming it; `--gc` reports what it dropped.
#[test]
fn publish_then_verify_from_the_database() {
    let Some(url) = primary() else { return };
    let tree = sample_tree();
    let root = tree.path();
    let (code, _, err) = cfs_in(root, &["index", "--embedder", "hash", "--json"]);
    assert_eq!(code, 0, "{err}");
    let repo = format!("cli-{}", std::process::id());
    let publish = ["publish", &url, "--repo", &repo, "--json"];
    let (code, out, err) = cfs_in(root, &publish);
    assert_eq!(code, 0, "{err}");
    let first = json(&out);
    assert!(first["rows_added"].as_u64().unwrap() > 0, "{first}");
    let (code, out, err) = cfs_in(root, &publish);
    assert_eq!(code, 0, "{err}");
    let again = json(&out);
    assert_eq!(again["previous_root"], first["state_root"]);
    assert_eq!(
        (again["buckets"].as_u64(), again["bytes_sent"].as_u64()),
        (Some(0), Some(0))
    );

    let (code, out, err) = cfs_in(root, &["verify", "--db", &url, "--repo", &repo, "--json"]);
    assert_eq!(code, 0, "{err}");
    let checked = json(&out);
    assert_eq!(checked["ok"], true, "{checked}");
    assert_eq!(checked["head_root"], first["state_root"]);

    let (code, out, err) = cfs_in(root, &["status", "--db", &url, "--json"]);
    assert_eq!(code, 0, "{err}");
    let status = json(&out);
    let listed = status["repositories"].as_array().unwrap();
    let ours = listed.iter().find(|r| r["name"] == repo.as_str()).unwrap();
    assert_eq!(ours["state_root"], first["state_root"]);
    assert_eq!(ours["rows"], first["rows_added"]);

    // Search from the database answers as the store does, each result proved.
    let words = "merkle tree inclusion";
    let (code, out, err) = cfs_in(root, &["search", words, "--exact", "--json"]);
    assert_eq!(code, 0, "{err}");
    let local = json(&out);
    let db_search = [
        "search",
        words,
        "--db",
        &url,
        "--repo",
        &repo,
        "--check-answers",
    ];
    let (code, out, err) = cfs_in(root, &[&db_search[..], &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let found = json(&out);
    assert_eq!(found["repos"][0]["root"], first["state_root"]);
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), local.as_array().unwrap().len());
    for (hit, mine) in hits.iter().zip(local.as_array().unwrap()) {
        assert_eq!(
            (&hit["repo"], &hit["chunk_id"]),
            (&json!(repo), &mine["chunk_id"])
        );
        assert_eq!(
            (&hit["score"], &hit["path"]),
            (&mine["score"], &mine["path"])
        );
        assert!(hit["proof"]["chunk_leaf"].is_string(), "{hit}");
    }
    let (code, out, err) = cfs_in(root, &db_search);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("README.md") && out.contains("proved"), "{out}");

    // tempfile's folders start with a dot, which no repository name does.
    let (code, _, err) = cfs_in(root, &["publish", &url]);
    assert_ne!(code, 0);
    assert!(err.contains("--repo"), "{err}");
    let (code, _, err) = cfs_in(root, &["verify", "--db", &url, "--repo", "nobody-here"]);
    assert_ne!(code, 0);
    assert!(err.contains("no repository \"nobody-here\""), "{err}");
    let (code, out, err) = cfs_in(root, &["publish", &url, "--gc", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(json(&out)["chunks"].is_u64(), "{out}");
}
