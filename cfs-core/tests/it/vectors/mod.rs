//! The test vectors: `test-vectors/*.json` are generated from the cases in `cases.rs`;
//! one test checks every checked-in vector against this implementation, another that
//! the checked-in files are exactly what the generator writes today.

mod cases;
mod compute;
mod json;
mod state;

use std::path::PathBuf;

use serde_json::{Value, json};

const REGENERATE: &str = "CFS_REGENERATE_VECTORS=1 cargo test -p cfs-core --test it vectors";

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-vectors")
}

fn render(spec: &cases::FileSpec) -> String {
    let cases: Vec<Value> = spec
        .cases
        .iter()
        .map(|case| {
            let expected = cases::upstream_expected(case).unwrap_or_else(|| {
                compute::compute(case).unwrap_or_else(|e| panic!("case {case}: {e}"))
            });
            let mut out = case.clone();
            out["expected"] = expected;
            out
        })
        .collect();
    let file = json!({
        "_comment": spec.comment,
        "spec_version": cfs_core::SPEC_VERSION,
        "cases": cases,
    });
    let mut text = serde_json::to_string_pretty(&file).expect("JSON");
    text.push('\n');
    text
}

#[test]
fn vectors_are_current() {
    let regenerate = std::env::var_os("CFS_REGENERATE_VECTORS").is_some();
    let mut stale = Vec::new();
    for spec in cases::all_files() {
        let path = vectors_dir().join(spec.name);
        let fresh = render(&spec);
        if regenerate {
            std::fs::write(&path, &fresh).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(on_disk) if on_disk == fresh => {}
            _ => stale.push(spec.name),
        }
    }
    assert!(
        stale.is_empty(),
        "test vectors out of date: {stale:?}; if the change is intended (and docs/spec.md says so), run:\n  {REGENERATE}"
    );
}

#[test]
fn vectors_pass() {
    let mut n_checked = 0;
    let mut failures = Vec::new();
    for spec in cases::all_files() {
        let path = vectors_dir().join(spec.name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run {REGENERATE}", path.display()));
        let file: Value = serde_json::from_str(&text).expect("vector file is JSON");
        assert_eq!(
            file["spec_version"],
            json!(cfs_core::SPEC_VERSION),
            "{}",
            spec.name
        );
        let all = file["cases"].as_array().expect("cases array");
        assert!(!all.is_empty(), "{} has no cases", spec.name);
        for case in all {
            n_checked += 1;
            match compute::compute(case) {
                Ok(actual) if actual == case["expected"] => {}
                Ok(actual) => failures.push(format!(
                    "{} / {}: expected {} got {actual}",
                    spec.name, case["name"], case["expected"]
                )),
                Err(e) => failures.push(format!("{} / {}: {e}", spec.name, case["name"])),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n_checked} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(n_checked > 100, "only {n_checked} vectors");
}

#[test]
fn cases_that_describe_one_state_have_one_root() {
    let spec = cases::all_files()
        .into_iter()
        .find(|f| f.name == "state.json")
        .expect("state");
    let root = |name: &str| {
        let case = spec.cases.iter().find(|c| c["name"] == name).expect(name);
        compute::compute(case).expect("state")["state_root"].clone()
    };
    assert_eq!(
        root("markdown, code with windows, shared text, user edge"),
        root("the same state built in reverse order (same roots)")
    );
    assert_eq!(
        root("a path rebound to another document drops the first one"),
        root("clean state equal to the rebound one")
    );
    assert_ne!(root("empty state"), root("one text document at one path"));
}
