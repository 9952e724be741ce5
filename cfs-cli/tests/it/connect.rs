//! `cfs connect`: an agent's configuration file gains the folder's server, keeps every
//! other member in its order and its text, is left alone when it is not a JSON object,
//! and loses only that entry on `--remove`.

use std::path::Path;

use serde_json::Value;

use crate::support::{cfs_env, cfs_in};

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The cfs executable as the entry names it: as it was run.
fn exe() -> String {
    env!("CARGO_BIN_EXE_cfs").to_owned()
}

#[test]
fn connect_adds_its_server_keeps_the_rest_and_removes_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().canonicalize().unwrap();
    let file = tree.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let before = "{\n  \"zeta\": [1,   2],\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  },\n  \"alpha\": true\n}\n";
    std::fs::write(&file, before).unwrap();
    let (code, out, err) = cfs_in(&tree, &["connect", "cursor", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["action"], "added", "{report}");
    assert_eq!(report["store_exists"], false);
    let text = std::fs::read_to_string(&file).unwrap();
    // The other members keep their order and their text.
    assert!(
        text.starts_with(
            "{\n  \"zeta\": [1,   2],\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"},\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("\n  },\n  \"alpha\": true\n}\n"), "{text}");
    let v = json(&file);
    let tree_arg = tree.to_string_lossy().into_owned();
    assert_eq!(
        v["mcpServers"]["cfs"],
        serde_json::json!({"command": exe(), "args": ["serve", "--mcp", tree_arg, "--watch"]})
    );
    // Again: nothing to do, the file untouched.
    let (_, out, _) = cfs_in(&tree, &["connect", "cursor", "--json"]);
    assert!(out.contains("\"action\": \"unchanged\""), "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // Another name beside it, then each taken out alone.
    let (code, _, err) = cfs_in(&tree, &["connect", "cursor", "--name", "cfs-two"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = cfs_in(&tree, &["connect", "cursor", "--remove"]);
    assert_eq!(code, 0);
    assert!(out.contains("cfs removed from"), "{out}");
    let v = json(&file);
    let names: Vec<&String> = v["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["cfs-two", "other"]);
    cfs_in(
        &tree,
        &["connect", "cursor", "--name", "cfs-two", "--remove"],
    );
    assert_eq!(json(&file), serde_json::from_str::<Value>(before).unwrap());
    let (_, out, _) = cfs_in(&tree, &["connect", "cursor", "--remove", "--json"]);
    assert!(out.contains("\"action\": \"absent\""), "{out}");
}

#[test]
fn connect_writes_each_clients_own_shape() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("my-project");
    std::fs::create_dir_all(&tree).unwrap();
    let tree = tree.canonicalize().unwrap();
    assert_eq!(cfs_in(&tree, &["connect", "claude-code"]).0, 0);
    let v = json(&tree.join(".mcp.json"));
    assert_eq!(v["mcpServers"]["cfs"]["type"], "stdio", "{v}");
    assert_eq!(cfs_in(&tree, &["connect", "vscode"]).0, 0);
    let v = json(&tree.join(".vscode/mcp.json"));
    assert_eq!(v["servers"]["cfs"]["type"], "stdio", "{v}");
    assert!(v.get("mcpServers").is_none());
    // Claude Desktop's file is the user's (here, in the test's folder on every system);
    // its entry is named after the folder.
    let config = dir.path().join("config");
    let home = dir.path().join("home");
    let env = [
        ("XDG_CONFIG_HOME", config.to_str().unwrap()),
        ("HOME", home.to_str().unwrap()),
        ("APPDATA", config.to_str().unwrap()),
    ];
    let (code, _, err) = cfs_env(&tree, &env, &["connect", "claude-desktop"]);
    assert_eq!(code, 0, "{err}");
    if cfg!(target_os = "linux") {
        let v = json(&config.join("Claude/claude_desktop_config.json"));
        assert_eq!(v["mcpServers"]["cfs-my-project"]["command"], exe(), "{v}");
    }
    // Gemini CLI's project settings; Windsurf's file is the user's, as Claude Desktop's.
    assert_eq!(cfs_in(&tree, &["connect", "gemini"]).0, 0);
    let v = json(&tree.join(".gemini/settings.json"));
    assert_eq!(v["mcpServers"]["cfs"]["command"], exe(), "{v}");
    assert!(v["mcpServers"]["cfs"].get("type").is_none(), "{v}");
    let (code, _, err) = cfs_env(&tree, &env, &["connect", "windsurf"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&home.join(".codeium/windsurf/mcp_config.json"));
    assert_eq!(v["mcpServers"]["cfs-my-project"]["command"], exe(), "{v}");
    // Another folder of the same name does not take that entry over.
    let twin = dir.path().join("elsewhere/my-project");
    std::fs::create_dir_all(&twin).unwrap();
    let (code, _, err) = cfs_env(&twin, &env, &["connect", "claude-desktop"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("already serves") && err.contains("--name"),
        "{err}"
    );
    let (code, _, err) = cfs_env(
        &twin,
        &env,
        &["connect", "claude-desktop", "--name", "cfs-twin"],
    );
    assert_eq!(code, 0, "{err}");
    // A store kept elsewhere is passed on, absolute.
    let store = dir.path().join("stores/p");
    std::fs::create_dir_all(&store).unwrap();
    let (code, _, err) = cfs_in(&tree, &["connect", "cursor", "--store", "../stores/p"]);
    assert_eq!(code, 0, "{err}");
    let args = json(&tree.join(".cursor/mcp.json"))["mcpServers"]["cfs"]["args"].clone();
    let want = store.canonicalize().unwrap().join("store.redb");
    assert_eq!(args[4], "--store");
    assert_eq!(Path::new(args[5].as_str().unwrap()), want, "{args}");
}

#[test]
fn connect_leaves_a_file_it_cannot_edit_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path();
    let file = tree.join(".mcp.json");
    for (text, says) in [
        ("// a comment\n{}", "not a JSON object"),
        ("[1, 2]", "not a JSON object"),
        ("{\"mcpServers\": [1]}", "\"mcpServers\" is not an object"),
        ("{\"mcpServers\": {}, \"mcpServers\": {}}", "twice"),
        ("{\"mcpServers\": {\"cfs\": 1, \"cfs\": 2}}", "twice"),
    ] {
        std::fs::write(&file, text).unwrap();
        let (code, _, err) = cfs_in(tree, &["connect", "claude-code"]);
        assert_eq!(code, 1, "{text}");
        assert!(
            err.contains(".mcp.json") && err.contains(says),
            "{text}: {err}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    }
}

#[test]
fn connect_keeps_what_the_user_added_and_how_the_file_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().canonicalize().unwrap();
    let real = tree.join("dotfiles/mcp.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    // An entry with a field the user added, CRLF line ends and a byte order mark.
    let before = "\u{feff}{\r\n  \"mcpServers\": {\r\n    \"cfs\": {\"command\": \"old\", \"env\": {\"A\": \"1\"}}\r\n  }\r\n}\r\n";
    std::fs::write(&real, before).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&real, tree.join(".mcp.json")).unwrap();
    }
    #[cfg(not(unix))]
    std::fs::copy(&real, tree.join(".mcp.json")).unwrap();
    let (code, out, err) = cfs_in(&tree, &["connect", "claude-code", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"action\": \"updated\""), "{out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let link = std::fs::symlink_metadata(tree.join(".mcp.json")).unwrap();
        assert!(link.file_type().is_symlink(), "the link stays a link");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the file stays private");
    }
    let file = if cfg!(unix) {
        real
    } else {
        tree.join(".mcp.json")
    };
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with('\u{feff}'), "{text:?}");
    assert!(!text.replace("\r\n", "").contains('\n'), "{text:?}");
    let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
    let entry = &v["mcpServers"]["cfs"];
    assert_eq!(entry["env"]["A"], "1", "{v}");
    assert_eq!(entry["command"], exe(), "{v}");
    assert_eq!(entry["type"], "stdio", "{v}");
}

#[test]
fn connect_edits_codex_toml_keeping_its_comments() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("lazy.nvim");
    let codex = dir.path().join("codex");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::create_dir_all(&codex).unwrap();
    let before = "# mine\nmodel = \"o4\"\n\n[mcp_servers.other]\ncommand = \"x\" # keep\n";
    std::fs::write(codex.join("config.toml"), before).unwrap();
    let env = [("CODEX_HOME", codex.to_str().unwrap())];
    let (code, out, err) = cfs_env(&tree, &env, &["connect", "codex", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"name\": \"cfs-lazy-nvim\""), "{out}");
    let text = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    assert!(text.starts_with(before), "{text}");
    let tree = tree.canonicalize().unwrap();
    let want = format!(
        "[mcp_servers.cfs-lazy-nvim]\ncommand = \"{}\"\nargs = [\"serve\", \"--mcp\", \"{}\", \"--watch\"]\n",
        exe(),
        tree.display()
    );
    assert!(text.ends_with(&want), "{text}");
    let (_, out, _) = cfs_env(&tree, &env, &["connect", "codex", "--json"]);
    assert!(out.contains("\"action\": \"unchanged\""), "{out}");
    let (code, _, _) = cfs_env(&tree, &env, &["connect", "codex", "--remove"]);
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    assert_eq!(text.trim_end(), before.trim_end());
    // Not TOML: left as it is.
    std::fs::write(codex.join("config.toml"), "[[[").unwrap();
    let (code, _, err) = cfs_env(&tree, &env, &["connect", "codex"]);
    assert_eq!(code, 1);
    assert!(err.contains("not TOML"), "{err}");
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        "[[["
    );
}
