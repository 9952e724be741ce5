//! The same edit for a client whose file is TOML (Codex's `config.toml`): the entry is
//! a table `[KEY.NAME]` whose `command` and `args` are set, everything else in the file
//! (comments, order, layout, the entry's other keys) kept by `toml_edit`.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;
use toml_edit::{Array, DocumentMut, Item, Table};

use super::{Action, Edit, Text, check_takeover, left_as_it_is};

/// Applies `edit` to the table `key.name` of the TOML file `file`; writes the file only
/// when it changes.
pub(super) fn edit(file: &Path, key: &str, name: &str, edit: Edit) -> anyhow::Result<Action> {
    let text = Text::read(file)?;
    let refuse = |what: String| left_as_it_is(file, &what);
    let mut doc: DocumentMut = text
        .body
        .parse()
        .map_err(|e| refuse(format!("not TOML ({e})")))?;
    if doc.get(key).is_some_and(|item| !item.is_table()) {
        return Err(refuse(format!("its {key:?} is not a table")));
    }
    let action = match edit {
        Edit::Put { members, tree } => {
            let servers = doc
                .entry(key)
                .or_insert_with(|| Item::Table(implicit()))
                .as_table_mut()
                .context("a table just made")?;
            let added = !servers.contains_key(name);
            let entry = servers
                .entry(name)
                .or_insert_with(|| Item::Table(Table::new()))
                .as_table_mut()
                .ok_or_else(|| refuse(format!("its entry {name:?} is not a table")))?;
            let other = entry
                .get("args")
                .and_then(|a| strings(a)?.into_iter().nth(2));
            check_takeover(file, name, other.as_deref(), tree.as_deref())?;
            let changed = put(entry, members);
            match (added, changed) {
                (_, false) => Action::Unchanged,
                (true, true) => Action::Added,
                (false, true) => Action::Updated,
            }
        }
        Edit::Remove => {
            let servers = doc.get_mut(key).and_then(Item::as_table_mut);
            match servers.and_then(|s| s.remove(name)) {
                Some(_) => Action::Removed,
                None => Action::Absent,
            }
        }
    };
    if matches!(action, Action::Added | Action::Updated | Action::Removed) {
        text.write(file, &doc.to_string())?;
    }
    Ok(action)
}

/// A table that shows no header of its own, only its subtables' (`[mcp_servers.cfs]`).
fn implicit() -> Table {
    let mut table = Table::new();
    table.set_implicit(true);
    table
}

/// Sets each of `members` (but `type`: this client names no transport) that differs;
/// whether any did.
fn put(entry: &mut Table, members: Vec<(&'static str, Value)>) -> bool {
    let mut changed = false;
    for (key, value) in members.into_iter().filter(|(k, _)| *k != "type") {
        let now = entry.get(key).and_then(json_of);
        if now.as_ref() != Some(&value)
            && let Some(item) = item_of(&value)
        {
            entry.insert(key, item);
            changed = true;
        }
    }
    changed
}

/// A string or an array of strings as TOML.
fn item_of(value: &Value) -> Option<Item> {
    match value {
        Value::String(s) => Some(toml_edit::value(s.as_str())),
        Value::Array(items) => {
            let strings: Option<Array> = items.iter().map(|v| v.as_str()).collect();
            Some(toml_edit::value(strings?))
        }
        _ => None,
    }
}

/// A TOML string or array of strings as JSON, to compare with what would be written.
fn json_of(item: &Item) -> Option<Value> {
    if let Some(s) = item.as_str() {
        return Some(Value::from(s));
    }
    Some(Value::from(strings(item)?))
}

fn strings(item: &Item) -> Option<Vec<String>> {
    item.as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}
