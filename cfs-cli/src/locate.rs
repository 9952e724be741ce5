//! Finding the store, as git finds a repository: `--store PATH` if given (a store folder
//! or the store file), else the nearest `.cfs/` from the current directory upward; and
//! naming paths of its tree (`cfs refresh`, the MCP `refresh` tool).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cfs_store::Store;

/// Name of the store folder in an indexed tree.
pub const STORE_DIR: &str = ".cfs";
/// Name of the store file in a store folder.
pub const STORE_FILE: &str = "store.redb";

/// The store file of the tree at `tree`: `tree/.cfs/store.redb`.
pub fn store_in(tree: &Path) -> PathBuf {
    tree.join(STORE_DIR).join(STORE_FILE)
}

/// The store of the tree at `tree`: `--store PATH` when given, else [`store_in`].
pub fn tree_store(tree: &Path, explicit: Option<&Path>) -> PathBuf {
    explicit.map_or_else(|| store_in(tree), store_file)
}

/// The store file for `--store PATH`: PATH itself if it is a file, else PATH/store.redb.
pub fn store_file(path: &Path) -> PathBuf {
    if path.is_file() || path.extension().is_some_and(|e| e == "redb") {
        path.to_path_buf()
    } else {
        path.join(STORE_FILE)
    }
}

/// The store of an existing index: `--store`, or the nearest `.cfs/store.redb` upward.
pub fn find_store(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        let file = store_file(path);
        if !file.is_file() {
            bail!("{}: no cfs store there", file.display());
        }
        return Ok(file);
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    for dir in cwd.ancestors() {
        let file = store_in(dir);
        if file.is_file() {
            return Ok(file);
        }
    }
    bail!(
        "no cfs store in {} or any parent (run cfs index, or pass --store PATH)",
        cwd.display()
    )
}

/// The indexed tree of a store found in `<tree>/.cfs/store.redb`, if it is one.
pub fn tree_of(store_file: &Path) -> Option<PathBuf> {
    let dir = store_file.parent()?;
    (dir.file_name()? == STORE_DIR).then(|| dir.parent().map(Path::to_path_buf))?
}

/// `paths` (relative to `base`, or absolute) as paths relative to the tree at `root`
/// (canonical); a path outside the tree is an error naming it.
pub fn tree_relative(root: &Path, base: &Path, paths: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let mut rel = Vec::new();
    for path in paths {
        // An empty path would name the whole tree by accident; "." names it on purpose.
        if path.as_os_str().is_empty() {
            bail!("an empty path names no file or folder (\".\" names the whole tree)");
        }
        let abs = absolute(&base.join(path));
        let r = abs.strip_prefix(root).ok().with_context(|| {
            format!(
                "{}: outside the indexed tree {}",
                path.display(),
                root.display()
            )
        })?;
        rel.push(r.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/"));
    }
    Ok(rel)
}

/// Refuses named paths that are neither in the tree nor in the store (a mistyped path
/// would otherwise be a silent no-op), naming each.
pub fn check_named_paths(store: &Store, root: &Path, rel: &[String]) -> anyhow::Result<()> {
    let read = store.begin_read()?;
    let mut missing = Vec::new();
    for p in rel {
        if std::fs::symlink_metadata(root.join(p)).is_err() && !read.holds_path(p)? {
            missing.push(p.as_str());
        }
    }
    if !missing.is_empty() {
        bail!(
            "no such file or folder in {} or its store: {}",
            root.display(),
            missing.join(", ")
        );
    }
    Ok(())
}

/// `path` made absolute without touching the file system beyond its longest existing
/// ancestor (a deleted file has no canonical form): `..` and `.` resolved, symlinks of
/// the existing part resolved but the last: a symbolic link named is the link (which
/// the tree holds), not the place it points to (which may lie outside).
fn absolute(path: &Path) -> PathBuf {
    let is_link = path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    if let (true, Some(name), Some(parent)) = (is_link, path.file_name(), path.parent()) {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        return absolute(parent).join(name);
    }
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        if name == ".." {
            out.pop();
        } else if name != "." {
            out.push(name);
        }
    }
    out
}
