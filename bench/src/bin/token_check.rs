//! How `cfs_search::estimate_tokens` compares with real tokenizers' counts on a sample
//! of chunks (`bench/token_estimate.sh` makes the sample and counts it).
//!
//! `token_check COUNTED.jsonl`: each line a chunk's `text`, `language`, `kind` and the
//! real counts `o200k`, `cl100k`, `claude`. Prints, for each tokenizer, the share of
//! chunks whose estimate is at least the real count, the same for sums of 20 chunks in
//! the sample's order (consecutive, so mostly of one file), the estimate's total over
//! the real total, the worst chunk's real count over its estimate, and the group
//! (language, or kind for prose) with the least coverage.

use std::collections::BTreeMap;

use cfs_search::estimate_tokens;
use serde_json::Value;

const TOKENIZERS: [&str; 3] = ["o200k", "cl100k", "claude"];

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: token_check COUNTED.jsonl");
    let text = std::fs::read_to_string(&path).expect("the counted sample");
    let rows: Vec<(String, u64, Value)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            let group = v["language"]
                .as_str()
                .or(v["kind"].as_str())
                .unwrap_or("text")
                .to_owned();
            let estimate = u64::from(estimate_tokens(v["text"].as_str().expect("text")));
            (group, estimate, v)
        })
        .collect();
    println!("{} chunks", rows.len());
    println!(
        "| tokenizer | chunks covered | sums of 20 covered | estimate / real | worst real / estimate | least covered group |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    for t in TOKENIZERS {
        let real = |v: &Value| v[t].as_u64().expect("a count");
        let covered = rows.iter().filter(|(_, e, v)| *e >= real(v)).count();
        let (est, tot): (u64, u64) = rows
            .iter()
            .map(|(_, e, v)| (*e, real(v)))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let worst = rows
            .iter()
            .map(|(_, e, v)| real(v) as f64 / *e as f64)
            .fold(0.0, f64::max);
        let sums: Vec<(u64, u64)> = rows
            .chunks(20)
            .filter(|w| w.len() == 20)
            .map(|w| {
                w.iter()
                    .fold((0, 0), |a, (_, e, v)| (a.0 + e, a.1 + real(v)))
            })
            .collect();
        let sums_covered = sums.iter().filter(|(e, r)| e >= r).count();
        let mut groups: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (g, e, v) in &rows {
            let entry = groups.entry(g).or_default();
            entry.0 += 1;
            entry.1 += usize::from(*e >= real(v));
        }
        let (least, (n, c)) = groups
            .iter()
            .min_by(|a, b| (a.1.1 as f64 / a.1.0 as f64).total_cmp(&(b.1.1 as f64 / b.1.0 as f64)))
            .map(|(g, nc)| (*g, *nc))
            .unwrap_or(("none", (1, 1)));
        println!(
            "| {t} | {:.1}% | {:.1}% ({}) | {:.3} | {:.2} | {least} {:.1}% ({n}) |",
            100.0 * covered as f64 / rows.len().max(1) as f64,
            100.0 * sums_covered as f64 / sums.len().max(1) as f64,
            sums.len(),
            est as f64 / tot.max(1) as f64,
            worst,
            100.0 * c as f64 / n as f64,
        );
    }
}
