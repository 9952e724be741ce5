//! Test vectors of search: `test-vectors/search.json` (docs/spec.md section 21).
//! `vectors_are_current` fails when the file is not what this generator writes
//! (`CFS_REGENERATE_VECTORS=1` rewrites it); `test-vectors/verify.py` recomputes it from
//! the spec.

use cfs_search::{idf, log2_fixed, rrf, tf_part, tokens};
use serde_json::{Value, json};

use crate::support::{check_vectors, render_vectors};

const REGENERATE: &str = "CFS_REGENERATE_VECTORS=1 cargo test -p cfs-search --test it vectors";

fn compute(case: &Value) -> Value {
    let input = &case["input"];
    let n = |k: &str| input[k].as_u64().expect("number");
    match case["kind"].as_str().expect("kind") {
        "tokens" => json!({"tokens": tokens(input["text"].as_str().expect("text"))}),
        "log2" => json!({"log2": log2_fixed(n("n")).to_string()}),
        "bm25" => json!({
            "idf": idf(n("n"), n("df")).to_string(),
            "tfp": tf_part(n("tf"), n("dl"), n("n"), n("total")).to_string(),
        }),
        "rrf" => json!({"rrf": rrf(n("rank") as usize).to_string()}),
        other => panic!("unknown kind {other}"),
    }
}

fn cases() -> Vec<Value> {
    let case =
        |kind: &str, name: &str, input: Value| json!({"kind": kind, "name": name, "input": input});
    let mut out = Vec::new();
    for text in [
        "",
        "parseHTTPResponse2",
        "snake_case and kebab-case",
        "zk-snark",
        "C++ what? \"quoted\" (a OR b)",
        "--lead trail- a--b",
        "Grüße aus Köln",
        "日本語のテキスト",
        "ÉCOLE naïve_Café",
        "src/search/mod.rs",
        "fn parse_config(path: &Path) -> Result<Config, Error> {",
        &format!("{}_tail", "x".repeat(80)),
        "HTTPServer x9y a_B_c",
    ] {
        out.push(case("tokens", text, json!({"text": text})));
    }
    for v in [1u64, 2, 3, 5, 10, 1000, 123_456_789, u64::MAX] {
        out.push(case("log2", &v.to_string(), json!({"n": v})));
    }
    for (n, df, tf, dl, total) in [
        (1u64, 1u64, 1u64, 1u64, 1u64),
        (1000, 1, 1, 50, 50_000),
        (1000, 10, 3, 120, 50_000),
        (1000, 1000, 1, 50, 50_000),
        (378_000, 7, 12, 900, 99_000_000),
        (10, 2, 1_000_000, 1, 10),
    ] {
        out.push(case(
            "bm25",
            &format!("N={n} df={df} tf={tf} dl={dl} T={total}"),
            json!({"n": n, "df": df, "tf": tf, "dl": dl, "total": total}),
        ));
    }
    for rank in [1u64, 2, 10, 50, 1000] {
        out.push(case("rrf", &rank.to_string(), json!({"rank": rank})));
    }
    out
}

fn render() -> String {
    render_vectors(
        "Search (docs/spec.md section 21). tokens: the tokens of a text. log2: L(n), log2 with 16 fraction bits, as a decimal string. bm25: idf and tf part for N chunks, df, tf, dl and total tokens T. rrf: floor(2^32 / (10 + rank)).",
        cases(),
        compute,
    )
}

#[test]
fn vectors_are_current() {
    check_vectors("search.json", &render(), REGENERATE);
}
