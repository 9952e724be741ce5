//! Finding the store, as git finds a repository: `--store PATH` if given (a store folder
//! or the store file), else the nearest `.cfs/` from the current directory upward.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

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
