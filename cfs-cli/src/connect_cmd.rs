//! `cfs connect CLIENT [PATH]`: registers a folder's MCP server with a coding agent, by
//! adding an entry to the client's own configuration file (or taking it out with
//! `--remove`). The file is edited, not rewritten: its other members keep their order
//! and their text, and a file that is not a JSON object is left as it is, with an error
//! naming it. The new file replaces the old in one rename.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::locate::{STORE_DIR, tree_store};
use crate::open::{Common, tree_root};
use crate::report::{Report, emit};

#[derive(Debug, clap::Args)]
pub struct ConnectArgs {
    /// The agent whose configuration file to edit.
    client: Client,
    /// The indexed folder (default: the current directory); its store is PATH/.cfs/
    /// unless --store.
    path: Option<PathBuf>,
    /// The server's name in the file (default: cfs; in Claude Desktop's file, which
    /// serves every folder, cfs-FOLDER).
    #[arg(long)]
    name: Option<String>,
    /// Take the entry out of the file instead.
    #[arg(long)]
    remove: bool,
    #[command(flatten)]
    common: Common,
}

/// The coding agents `cfs connect` knows, and where each keeps its servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Client {
    /// Claude Code: the project's `.mcp.json`.
    ClaudeCode,
    /// Cursor: the project's `.cursor/mcp.json`.
    Cursor,
    /// VS Code (Copilot's agent mode): the workspace's `.vscode/mcp.json`.
    Vscode,
    /// Claude Desktop: the user's `claude_desktop_config.json`.
    ClaudeDesktop,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::ClaudeDesktop => "claude-desktop",
        }
    }

    /// The client as people call it.
    fn title(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::ClaudeDesktop => "Claude Desktop",
        }
    }

    /// The configuration file the client reads for the tree at `tree`.
    fn file(self, tree: &Path) -> anyhow::Result<PathBuf> {
        Ok(match self {
            Client::ClaudeCode => tree.join(".mcp.json"),
            Client::Cursor => tree.join(".cursor").join("mcp.json"),
            Client::Vscode => tree.join(".vscode").join("mcp.json"),
            Client::ClaudeDesktop => desktop_file()?,
        })
    }

    /// The member of the file's object that holds its servers.
    fn servers_key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    /// The entry that starts the server: `command` with `args` on standard input and
    /// output (VS Code and Claude Code name the transport; the others assume it).
    fn entry<'a>(self, command: &'a str, args: &'a [String]) -> Entry<'a> {
        let transport = match self {
            Client::ClaudeCode | Client::Vscode => Some("stdio"),
            Client::Cursor | Client::ClaudeDesktop => None,
        };
        Entry {
            transport,
            command,
            args,
        }
    }
}

/// A server's entry in a client's file, its members in the order clients show them.
#[derive(Serialize)]
struct Entry<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    transport: Option<&'static str>,
    command: &'a str,
    args: &'a [String],
}

/// Claude Desktop's file: under Application Support on macOS, `%APPDATA%` on Windows,
/// and `$XDG_CONFIG_HOME` (or `~/.config`) elsewhere.
fn desktop_file() -> anyhow::Result<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = || var("HOME").context("HOME is not set: cannot find Claude Desktop's file");
    let dir = if cfg!(target_os = "macos") {
        home()?.join("Library/Application Support")
    } else if cfg!(windows) {
        var("APPDATA").context("APPDATA is not set: cannot find Claude Desktop's file")?
    } else {
        match var("XDG_CONFIG_HOME") {
            Some(dir) => dir,
            None => home()?.join(".config"),
        }
    };
    Ok(dir.join("Claude").join("claude_desktop_config.json"))
}

pub fn run(args: &ConnectArgs) -> anyhow::Result<ExitCode> {
    let tree = tree_root(args.path.as_deref())?;
    let store = absolute_store(&tree_store(&tree, args.common.store.as_deref()))?;
    let file = args.client.file(&tree)?;
    let name = match (&args.name, args.client) {
        (Some(name), _) => name.clone(),
        (None, Client::ClaudeDesktop) => format!("cfs-{}", folder_name(&tree)),
        (None, _) => "cfs".into(),
    };
    let command = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot find the cfs executable's path")?
        .to_string_lossy()
        .into_owned();
    let mut server_args: Vec<String> = vec!["serve".into(), "--mcp".into()];
    server_args.push(tree.to_string_lossy().into_owned());
    server_args.push("--watch".into());
    if args.common.store.is_some() {
        server_args.push("--store".into());
        server_args.push(store.to_string_lossy().into_owned());
    }
    let entry = args.client.entry(&command, &server_args);
    let edit = match args.remove {
        true => Edit::Remove,
        false => Edit::Put(serde_json::to_string_pretty(&entry)?),
    };
    let action = edit_file(&file, args.client.servers_key(), &name, edit)?;
    let report = ConnectReport {
        client: args.client.name(),
        title: args.client.title(),
        file: file.to_string_lossy().into_owned(),
        name,
        action,
        command,
        args: server_args,
        store: store.to_string_lossy().into_owned(),
        store_exists: store.is_file(),
    };
    emit(&report, args.common.json)
}

/// The store file's absolute path, its folder resolved where it exists (so that
/// `--store ../x` is passed on as the folder it names).
fn absolute_store(store: &Path) -> anyhow::Result<PathBuf> {
    let store = std::path::absolute(store).context("cannot name the store's path")?;
    let canonical = store
        .parent()
        .and_then(|dir| dir.canonicalize().ok())
        .zip(store.file_name())
        .map(|(dir, name)| dir.join(name));
    Ok(canonical.unwrap_or(store))
}

/// The last part of a folder's path, for a server's name.
fn folder_name(tree: &Path) -> String {
    tree.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && n != STORE_DIR)
        .unwrap_or_else(|| "root".into())
}

/// What to do with the named entry: put this JSON there, or take it out.
enum Edit {
    Put(String),
    Remove,
}

/// Applies `edit` to the entry `name` of the object `key` of the JSON file `file`;
/// writes the file only when it changes. Returns what was done.
fn edit_file(file: &Path, key: &str, name: &str, edit: Edit) -> anyhow::Result<Action> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let not_object = |what: &str| {
        anyhow::anyhow!(
            "{}: {what}; cfs leaves the file as it is (add the entry by hand, or move the \
             file away)",
            file.display()
        )
    };
    let mut top = match text.trim().is_empty() {
        true => Members::default(),
        false => {
            Members::parse(&text).map_err(|e| not_object(&format!("not a JSON object ({e})")))?
        }
    };
    let mut servers = match top.get(key) {
        Some(raw) => Members::parse(raw.get())
            .map_err(|e| not_object(&format!("its {key:?} is not an object ({e})")))?,
        None => Members::default(),
    };
    let action = match edit {
        Edit::Put(entry) => {
            let value = |text: &str| serde_json::from_str::<Value>(text).ok();
            let current = servers.get(name).map(|raw| value(raw.get()));
            match current {
                Some(Some(v)) if value(&entry).as_ref() == Some(&v) => Action::Unchanged,
                found => {
                    servers.set(name, indented(&entry, 2)?);
                    match found {
                        Some(_) => Action::Updated,
                        None => Action::Added,
                    }
                }
            }
        }
        Edit::Remove => match servers.remove(name) {
            true => Action::Removed,
            false => Action::Absent,
        },
    };
    if matches!(action, Action::Added | Action::Updated | Action::Removed) {
        top.set(key, servers.to_raw(1)?);
        replace_file(file, &top.to_text(0))?;
    }
    Ok(action)
}

/// What `cfs connect` did to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    /// The entry was not there and is now.
    Added,
    /// The entry was there with other values and now has these.
    Updated,
    /// The entry was there as it would be written; the file was not touched.
    Unchanged,
    /// The entry was there and is not now.
    Removed,
    /// There was no entry to remove; the file was not touched.
    Absent,
}

/// A JSON object's members in their order, each value as its text.
#[derive(Default)]
struct Members(Vec<(String, Box<RawValue>)>);

impl Members {
    /// The members of the object `text`; a key twice is refused (which one a client
    /// reads is its own affair).
    fn parse(text: &str) -> Result<Self, String> {
        let members = serde_json::from_str::<Ordered>(text)
            .map_err(|e| e.to_string())?
            .0;
        for (i, (k, _)) in members.iter().enumerate() {
            if members[..i].iter().any(|(j, _)| j == k) {
                return Err(format!("the key {k:?} twice"));
            }
        }
        Ok(Self(members))
    }

    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// Sets `key` to `value`: in its place if it is there, else last.
    fn set(&mut self, key: &str, value: Box<RawValue>) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(member) => member.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    fn remove(&mut self, key: &str) -> bool {
        let before = self.0.len();
        self.0.retain(|(k, _)| k != key);
        self.0.len() < before
    }

    /// The object as text, its members indented one level below `level`; each value's
    /// own text as it was.
    fn to_text(&self, level: usize) -> String {
        if self.0.is_empty() {
            return "{}".into();
        }
        let pad = "  ".repeat(level + 1);
        let members: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{pad}{}: {}", Value::from(k.as_str()), v.get()))
            .collect();
        let mut text = format!("{{\n{}\n{}}}", members.join(",\n"), "  ".repeat(level));
        if level == 0 {
            text.push('\n');
        }
        text
    }

    fn to_raw(&self, level: usize) -> anyhow::Result<Box<RawValue>> {
        RawValue::from_string(self.to_text(level)).context("an edited object")
    }
}

/// Pretty JSON indented to sit at `level`.
fn indented(pretty: &str, level: usize) -> anyhow::Result<Box<RawValue>> {
    let text = pretty.replace('\n', &format!("\n{}", "  ".repeat(level)));
    RawValue::from_string(text).context("an entry")
}

/// Deserializes an object's members in their order.
struct Ordered(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Ordered, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Ordered(members))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Writes `text` to `file` through a new file beside it renamed over it, so that a
/// reader sees the old file or the new one; makes the file's folder if needed.
fn replace_file(file: &Path, text: &str) -> anyhow::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let new = dir.join(format!(".{name}.cfs-new"));
    let write = || -> std::io::Result<()> {
        let mut out = std::fs::File::create(&new)?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        std::fs::rename(&new, file)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&new);
        anyhow::anyhow!("cannot write {}: {e}", file.display())
    })
}

/// What `cfs connect` answers.
#[derive(Serialize, JsonSchema)]
pub struct ConnectReport {
    client: &'static str,
    /// The client as people call it.
    #[serde(skip)]
    title: &'static str,
    /// The configuration file edited (or that would have been).
    file: String,
    /// The server's name in it.
    name: String,
    action: Action,
    /// What the client runs: the cfs executable with `args`.
    command: String,
    args: Vec<String>,
    store: String,
    /// Whether the store is there yet (if not, the server's --watch makes it when the
    /// client first starts it).
    store_exists: bool,
}

impl Report for ConnectReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let done = match self.action {
            Action::Added => "added to",
            Action::Updated => "updated in",
            Action::Unchanged => "already in",
            Action::Removed => "removed from",
            Action::Absent => "not in",
        };
        writeln!(out, "{} {done} {} ({})", self.name, self.file, self.title)?;
        if matches!(self.action, Action::Removed | Action::Absent) {
            return Ok(());
        }
        writeln!(out, "  runs: {} {}", self.command, self.args.join(" "))?;
        if !self.store_exists {
            writeln!(
                out,
                "  no store at {} yet: the server indexes the folder when the agent first \
                 starts it (--watch), or run cfs index now",
                self.store
            )?;
        }
        Ok(())
    }
}
