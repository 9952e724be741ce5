//! The manual and the code agree: every `--json` field the code prints is documented in
//! docs/cli.md, under its command, and the manual names no field the code does not print.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde_json::Value;

/// Every field name of `T`'s JSON, at any depth.
fn fields<T: JsonSchema>() -> BTreeSet<String> {
    let schema = schemars::schema_for!(T);
    let root = schema.as_value();
    let mut names = BTreeSet::new();
    collect_fields(root, root, &mut names, 0);
    names
}

fn collect_fields(node: &Value, root: &Value, names: &mut BTreeSet<String>, depth: usize) {
    assert!(depth < 32, "a schema that refers to itself");
    match node {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                names.extend(props.keys().cloned());
            }
            if let Some(Value::String(at)) = map.get("$ref") {
                let name = at.trim_start_matches("#/$defs/");
                collect_fields(&root["$defs"][name], root, names, depth + 1);
            }
            for (key, child) in map {
                if key != "$defs" {
                    collect_fields(child, root, names, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_fields(item, root, names, depth + 1);
            }
        }
        _ => {}
    }
}

/// The section of docs/cli.md whose heading starts with `` ## `cfs NAME``.
fn section(doc: &str, name: &str) -> String {
    let heading = format!("## `cfs {name}");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/cli.md has no section {heading}"));
    // From the line after the heading (whose backticks would pair with the text's).
    let rest = &doc[start..];
    let rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

/// The JSON keys a section documents: the keys of its JSON blocks and of its inline
/// JSON (`{"a": 1}`), and the names listed in its shorthand (`{"a", "b": [...]}`):
/// a quoted name that follows `{` or `, ` or that a `:` follows.
fn documented(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut snippets: Vec<&str> = Vec::new();
    for (i, part) in text.split("```").enumerate() {
        match i % 2 {
            1 => snippets.push(part.trim_start_matches("json")),
            _ => snippets.extend(part.split('`').skip(1).step_by(2)),
        }
    }
    for snippet in snippets {
        let snippet = snippet.trim();
        if !snippet.starts_with(['{', '[']) {
            continue;
        }
        match serde_json::from_str::<Value>(snippet) {
            Ok(value) => collect_keys(&value, &mut names),
            Err(_) => names.extend(shorthand_names(snippet)),
        }
    }
    names
}

fn collect_keys(value: &Value, names: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                names.insert(k.clone());
                collect_keys(v, names);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, names)),
        _ => {}
    }
}

fn shorthand_names(snippet: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = 0;
    while let Some(open) = snippet[at..].find('"').map(|i| at + i) {
        let Some(close) = snippet[open + 1..].find('"').map(|i| open + 1 + i) else {
            break;
        };
        let name = &snippet[open + 1..close];
        let before = snippet[..open].trim_end();
        let after = snippet[close + 1..].trim_start();
        let is_name = name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            && !name.is_empty()
            && (before.ends_with(['{', ',']) || after.starts_with(':'));
        if is_name {
            names.push(name.to_owned());
        }
        at = close + 1;
    }
    names
}

/// Each command's section of docs/cli.md names exactly the fields of the types its
/// `--json` prints: a field added, renamed or removed in the code and not in the
/// manual (or the other way round) fails here.
#[test]
fn the_manual_documents_every_json_field_and_no_other() {
    use crate::{
        chunks, connect_cmd, context_cmd, db_cmds, db_search, demo, index_cmds, inspect_cmds,
        maintain_cmds, remote_cmds, search_cmds, watch_cmd,
    };
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md");
    let doc = std::fs::read_to_string(path).expect("docs/cli.md");
    let cases: Vec<(&str, BTreeSet<String>)> = vec![
        ("demo", fields::<demo::DemoReport>()),
        ("chunks", fields::<chunks::ChunksReport>()),
        ("index", fields::<index_cmds::IndexReport>()),
        ("watch", fields::<watch_cmd::WatchLine>()),
        (
            "status",
            fields::<inspect_cmds::StatusReport>()
                .into_iter()
                .chain(fields::<db_cmds::DbStatusAnswer>())
                .collect(),
        ),
        (
            "verify",
            fields::<inspect_cmds::VerifyReport>()
                .into_iter()
                .chain(fields::<db_cmds::DbVerifyAnswer>())
                .collect(),
        ),
        (
            "publish",
            fields::<db_cmds::PublishAnswer>()
                .into_iter()
                .chain(fields::<db_cmds::DbGcAnswer>())
                .collect(),
        ),
        ("reembed", fields::<maintain_cmds::ReembedReport>()),
        ("repair", fields::<maintain_cmds::RepairReport>()),
        ("gc", fields::<maintain_cmds::GcAnswer>()),
        ("push", fields::<remote_cmds::PushAnswer>()),
        ("pull", fields::<remote_cmds::PullAnswer>()),
        ("clone", fields::<remote_cmds::PullAnswer>()),
        ("bundle create", fields::<remote_cmds::BundleAnswer>()),
        ("bundle apply", fields::<remote_cmds::PullAnswer>()),
        ("remote gc", fields::<remote_cmds::RemoteGcAnswer>()),
        ("remote verify", fields::<remote_cmds::RemoteVerifyAnswer>()),
        ("log", fields::<inspect_cmds::LogRecord>()),
        ("show", fields::<inspect_cmds::ShowReport>()),
        (
            "prove",
            fields::<inspect_cmds::ProofReport>()
                .into_iter()
                .chain(fields::<inspect_cmds::ProofChecked>())
                .collect(),
        ),
        (
            "search",
            fields::<search_cmds::SearchReport>()
                .into_iter()
                .chain(fields::<db_search::DbSearchAnswer>())
                .collect(),
        ),
        (
            "context",
            fields::<context_cmd::ContextReport>()
                .into_iter()
                .chain(fields::<context_cmd::DbContextReport>())
                .collect(),
        ),
        ("connect", fields::<connect_cmd::ConnectReport>()),
        ("rebuild-index", fields::<search_cmds::RebuildReport>()),
    ];
    let mut wrong = Vec::new();
    for (name, fields) in cases {
        let documented = documented(&section(&doc, name));
        let undocumented: Vec<_> = fields.difference(&documented).collect();
        let stale: Vec<_> = documented.difference(&fields).collect();
        if !undocumented.is_empty() || !stale.is_empty() {
            wrong.push(format!(
                "cfs {name}: not in the manual {undocumented:?}; in the manual only {stale:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/cli.md and the JSON types differ:\n{}",
        wrong.join("\n")
    );
}
