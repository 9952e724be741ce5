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

mod toml_file;

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
    /// Gemini CLI: the project's `.gemini/settings.json`.
    Gemini,
    /// Windsurf: the user's `~/.codeium/windsurf/mcp_config.json`.
    Windsurf,
    /// Codex: the user's `~/.codex/config.toml` (`$CODEX_HOME/config.toml`).
    Codex,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Gemini => "gemini",
            Client::Windsurf => "windsurf",
            Client::Codex => "codex",
        }
    }

    /// Whether its file is the user's, serving every folder (so an entry is named after
    /// its folder, and one serving another folder is not taken over).
    fn users(self) -> bool {
        matches!(
            self,
            Client::ClaudeDesktop | Client::Windsurf | Client::Codex
        )
    }

    /// The client as people call it.
    fn title(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Gemini => "Gemini CLI",
            Client::Windsurf => "Windsurf",
            Client::Codex => "Codex",
        }
    }

    /// The configuration file the client reads for the tree at `tree`.
    fn file(self, tree: &Path) -> anyhow::Result<PathBuf> {
        Ok(match self {
            Client::ClaudeCode => tree.join(".mcp.json"),
            Client::Cursor => tree.join(".cursor").join("mcp.json"),
            Client::Vscode => tree.join(".vscode").join("mcp.json"),
            Client::ClaudeDesktop => desktop_file()?,
            Client::Gemini => tree.join(".gemini").join("settings.json"),
            Client::Windsurf => home()?.join(".codeium/windsurf/mcp_config.json"),
            Client::Codex => match var("CODEX_HOME") {
                Some(dir) => dir.join("config.toml"),
                None => home()?.join(".codex").join("config.toml"),
            },
        })
    }

    /// The member of the file's object that holds its servers.
    fn servers_key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            Client::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    /// The members of the entry that starts the server: `command` with `args` on
    /// standard input and output (VS Code and Claude Code name the transport; the
    /// others assume it), in the order clients show them.
    fn entry(self, command: &str, args: &[String]) -> Vec<(&'static str, Value)> {
        let mut members = Vec::new();
        if matches!(self, Client::ClaudeCode | Client::Vscode) {
            members.push(("type", Value::from("stdio")));
        }
        members.push(("command", Value::from(command)));
        members.push(("args", Value::from(args.to_vec())));
        members
    }
}

/// An environment variable's path, when it is set and not empty.
fn var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The user's home folder (`HOME`, or `USERPROFILE` on Windows).
fn home() -> anyhow::Result<PathBuf> {
    var("HOME")
        .or_else(|| var("USERPROFILE"))
        .context("HOME is not set: cannot find the user's configuration files")
}

/// Claude Desktop's file: under Application Support on macOS, `%APPDATA%` on Windows,
/// and `$XDG_CONFIG_HOME` (or `~/.config`) elsewhere.
fn desktop_file() -> anyhow::Result<PathBuf> {
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
    let file = through_link(args.client.file(&tree)?)?;
    let name = match (&args.name, args.client.users()) {
        (Some(name), _) => name.clone(),
        (None, true) => format!("cfs-{}", folder_name(&tree)),
        (None, false) => "cfs".into(),
    };
    let command = executable()?;
    let mut server_args: Vec<String> = vec!["serve".into(), "--mcp".into()];
    server_args.push(utf8(&tree)?.to_owned());
    server_args.push("--watch".into());
    if args.common.store.is_some() {
        server_args.push("--store".into());
        server_args.push(utf8(&store)?.to_owned());
    }
    let edit = match args.remove {
        true => Edit::Remove,
        false => Edit::Put {
            members: args.client.entry(&command, &server_args),
            // A user's file serves every folder: a default name that already serves
            // another folder is not taken over.
            tree: (args.name.is_none() && args.client.users()).then(|| server_args[2].clone()),
        },
    };
    let key = args.client.servers_key();
    let action = match args.client {
        Client::Codex => toml_file::edit(&file, key, &name, edit)?,
        _ => edit_file(&file, key, &name, edit)?,
    };
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

/// The path of this cfs as the user ran it, where that names this same file (a link on
/// PATH, as a package manager makes, outlives the versioned file it points at), else
/// the running executable's.
fn executable() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("cannot find the cfs executable's path")?;
    let invoked = std::env::args_os().next().map(PathBuf::from);
    let named = invoked.and_then(|a| match a.components().count() > 1 {
        true => std::path::absolute(&a).ok(),
        false => std::env::var_os("PATH").and_then(|dirs| {
            std::env::split_paths(&dirs)
                .map(|d| d.join(&a))
                .find(|p| p.is_file())
        }),
    });
    let same = |p: &PathBuf| p.canonicalize().ok() == exe.canonicalize().ok();
    Ok(utf8(&named.filter(same).unwrap_or(exe))?.to_owned())
}

/// A path as text, for a JSON file: one that is not UTF-8 is refused rather than
/// written changed.
fn utf8(path: &Path) -> anyhow::Result<&str> {
    path.to_str().with_context(|| {
        format!(
            "{}: not UTF-8, so a client's JSON file cannot name it",
            path.display()
        )
    })
}

/// The file a configuration path names: a link's target, so that the link (a dotfile
/// manager's) stays a link.
fn through_link(file: PathBuf) -> anyhow::Result<PathBuf> {
    match std::fs::symlink_metadata(&file) {
        Ok(meta) if meta.file_type().is_symlink() => file
            .canonicalize()
            .with_context(|| format!("{}: a link to nothing", file.display())),
        _ => Ok(file),
    }
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

/// The last part of a folder's path, for a server's name: letters, digits, `_` and
/// `-` kept, anything else `-` (some clients take no other character in a name).
fn folder_name(tree: &Path) -> String {
    let name = tree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && n != STORE_DIR)
        .unwrap_or_else(|| "root".into());
    name.chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '-',
            },
        )
        .collect()
}

/// What to do with the named entry: set these members of it (its others kept), or
/// take it out. With `tree`, an entry that serves another folder is left alone.
pub(crate) enum Edit {
    Put {
        members: Vec<(&'static str, Value)>,
        tree: Option<String>,
    },
    Remove,
}

/// A configuration file's text: its byte order mark and line ends, kept for writing it
/// back, and the JSON or TOML between.
pub(crate) struct Text {
    bom: bool,
    crlf: bool,
    body: String,
}

impl Text {
    pub(crate) fn read(file: &Path) -> anyhow::Result<Self> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        let body = text.strip_prefix('\u{feff}');
        Ok(Self {
            bom: body.is_some(),
            crlf: text.contains("\r\n"),
            body: body.unwrap_or(&text).to_owned(),
        })
    }

    /// `body` written as the file was: its line ends (JSON strings and TOML basic
    /// strings hold no raw line break, so every one is layout) and its mark.
    pub(crate) fn write(&self, file: &Path, body: &str) -> anyhow::Result<()> {
        let lf = body.replace("\r\n", "\n");
        let body = if self.crlf {
            lf.replace('\n', "\r\n")
        } else {
            lf
        };
        let bom = if self.bom { "\u{feff}" } else { "" };
        replace_file(file, &format!("{bom}{body}"))
    }
}

/// The error for a file cfs will not edit: what is wrong with it, and that it is left
/// as it is.
fn left_as_it_is(file: &Path, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: {what}; cfs leaves the file as it is (add the entry by hand, or move the file \
         away)",
        file.display()
    )
}

/// Refuses to take over the entry `name` when it serves a folder (`serves`) other than
/// `tree` (`None`: the file is a project's own, whose entry follows the folder).
fn check_takeover(
    file: &Path,
    name: &str,
    serves: Option<&str>,
    tree: Option<&str>,
) -> anyhow::Result<()> {
    match (serves, tree) {
        (Some(other), Some(tree)) if other != tree => anyhow::bail!(
            "{}: {name:?} already serves {other}; pass --name to add this folder beside it",
            file.display()
        ),
        _ => Ok(()),
    }
}

/// Applies `edit` to the entry `name` of the object `key` of the JSON file `file`;
/// writes the file only when it changes. Returns what was done.
fn edit_file(file: &Path, key: &str, name: &str, edit: Edit) -> anyhow::Result<Action> {
    let text = Text::read(file)?;
    let object = |raw: &str, what: &str| match raw.trim() {
        "" | "null" => Ok(Members::default()),
        raw => Members::parse(raw).map_err(|e| left_as_it_is(file, &format!("{what} ({e})"))),
    };
    let mut top = object(&text.body, "not a JSON object")?;
    let mut servers = match top.get(key) {
        Some(raw) => object(raw.get(), &format!("its {key:?} is not an object"))?,
        None => Members::default(),
    };
    let action = match edit {
        Edit::Put { members, tree } => {
            let current = match servers.get(name) {
                Some(raw) => Some(object(
                    raw.get(),
                    &format!("its entry {name:?} is not an object"),
                )?),
                None => None,
            };
            let serves = current
                .as_ref()
                .and_then(|c| c.get("args"))
                .and_then(|a| serde_json::from_str::<Vec<Value>>(a.get()).ok());
            let other = serves
                .as_ref()
                .and_then(|a| a.get(2))
                .and_then(Value::as_str);
            check_takeover(file, name, other, tree.as_deref())?;
            let added = current.is_none();
            let mut entry = current.unwrap_or_default();
            let changed = entry.put(members)?;
            match (added, changed) {
                (_, false) => Action::Unchanged,
                (true, true) => {
                    servers.set(name, entry.to_raw(2)?);
                    Action::Added
                }
                (false, true) => {
                    servers.set(name, entry.to_raw(2)?);
                    Action::Updated
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
        text.write(file, &top.to_text(0))?;
    }
    Ok(action)
}

/// What `cfs connect` did to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
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

    /// Sets each of `members` that differs from its value here (each value pretty and
    /// indented for an entry's place); whether any did.
    fn put(&mut self, members: Vec<(&'static str, Value)>) -> anyhow::Result<bool> {
        let mut changed = false;
        for (key, value) in members {
            let now = self
                .get(key)
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
            if now.as_ref() != Some(&value) {
                self.set(key, indented(&serde_json::to_string_pretty(&value)?, 3)?);
                changed = true;
            }
        }
        Ok(changed)
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

/// Writes `text` to `file` through a new file beside it (made with a name of its own)
/// renamed over it, so that a reader sees the old file or the new one; the new file
/// takes the old one's permissions (a file holding tokens stays private). Makes the
/// file's folder if needed.
fn replace_file(file: &Path, text: &str) -> anyhow::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let failed = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", file.display());
    let mut new = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    new.write_all(text.as_bytes()).map_err(failed)?;
    new.as_file().sync_all().map_err(failed)?;
    if let Ok(old) = std::fs::metadata(file) {
        std::fs::set_permissions(new.path(), old.permissions()).map_err(failed)?;
    }
    new.persist(file).map_err(|e| failed(e.error))?;
    Ok(())
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
