//! What changed in a git work tree since a commit, for `cfs index --changed-since`.

use std::path::Path;
use std::process::Command;

use crate::error::{Result, StoreError};

/// The paths that differ between a commit and the work tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitChanges {
    /// The work tree's `HEAD` commit (`None` in a repository without commits).
    pub head: Option<String>,
    /// Paths relative to the tree that were added, modified, removed or renamed (both
    /// names) since the commit, and untracked files that are not ignored; sorted.
    pub paths: Vec<String>,
}

fn git(tree: &Path, args: &[&str]) -> Result<std::process::Output> {
    Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(args)
        .output()
        .map_err(|source| StoreError::Io {
            path: tree.to_path_buf(),
            source: std::io::Error::new(source.kind(), format!("running git: {source}")),
        })
}

fn nul_list(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// The changes of the work tree at `tree` since `reference` (any commit-ish), as git
/// sees them: `git diff --name-only --no-renames --relative REF` plus untracked files.
/// A reference that names no commit is an error that says so.
pub fn changed_since(tree: &Path, reference: &str) -> Result<GitChanges> {
    let spec = format!("{reference}^{{commit}}");
    let verify = git(tree, &["rev-parse", "--verify", "--quiet", &spec])?;
    if !verify.status.success() {
        let inside = git(tree, &["rev-parse", "--is-inside-work-tree"])?;
        if !inside.status.success() {
            return Err(StoreError::Git {
                tree: tree.to_path_buf(),
                reason: format!(
                    "not inside a work tree ({})",
                    String::from_utf8_lossy(&inside.stderr).trim()
                ),
            });
        }
        return Err(StoreError::Git {
            tree: tree.to_path_buf(),
            reason: format!("{reference}: no such commit"),
        });
    }
    let commit = String::from_utf8_lossy(&verify.stdout).trim().to_owned();
    let diff = git(
        tree,
        &[
            "diff",
            "--name-only",
            "--no-renames",
            "--relative",
            "-z",
            &commit,
            "--",
        ],
    )?;
    if !diff.status.success() {
        return Err(StoreError::Git {
            tree: tree.to_path_buf(),
            reason: format!(
                "diff {reference}: {}",
                String::from_utf8_lossy(&diff.stderr).trim()
            ),
        });
    }
    let untracked = git(tree, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    let mut paths = nul_list(&diff.stdout);
    paths.extend(nul_list(&untracked.stdout));
    paths.sort();
    paths.dedup();
    Ok(GitChanges {
        head: head(tree),
        paths,
    })
}

/// The `HEAD` commit of the work tree at `tree`, when it is one and has commits.
/// Read from the repository's files when `tree` is its top and `HEAD` is plain (a
/// detached commit, or a branch whose ref is loose or packed), else asked of git: a
/// process of git's own costs a no-op `cfs index` more than the rest of its start.
/// Outside any repository (no `.git` in `tree` or a folder above it, and no git
/// environment pointing elsewhere), there is none, and git is not asked.
pub fn head(tree: &Path) -> Option<String> {
    if !git_redirected() && !tree.ancestors().any(|dir| dir.join(".git").exists()) {
        return None;
    }
    match head_from_files(&tree.join(".git")) {
        Some(found) => found,
        None => head_from_git(tree),
    }
}

/// `HEAD` and up to `max - 1` of its ancestors, newest first (git's default order), for
/// finding the nearest commit whose state was published. Outside a repository, or in
/// one without commits, none.
pub fn ancestors(tree: &Path, max: usize) -> Result<Vec<String>> {
    if head(tree).is_none() {
        return Ok(Vec::new());
    }
    let count = format!("--max-count={max}");
    let out = git(tree, &["rev-list", &count, "HEAD"])?;
    if !out.status.success() {
        return Err(StoreError::Git {
            tree: tree.to_path_buf(),
            reason: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Whether git's own environment can point it at a repository elsewhere.
fn git_redirected() -> bool {
    ["GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

fn head_from_git(tree: &Path) -> Option<String> {
    let out = git(tree, &["rev-parse", "--verify", "--quiet", "HEAD"]).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `HEAD` read from the repository folder `dir`: `Some(Some(commit))`, `Some(None)`
/// for a branch without commits (its ref is nowhere and the repository has no other
/// ref store), or `None` when the files do not settle it (no such folder, a linked work
/// tree, a symbolic ref to a symbolic ref, the reftable format, git's environment set):
/// git then answers.
fn head_from_files(dir: &Path) -> Option<Option<String>> {
    let commit = |s: &str| {
        let s = s.trim();
        (matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| s.to_ascii_lowercase())
    };
    // git's own environment can point it elsewhere: then only git knows.
    if git_redirected() || !dir.is_dir() || dir.join("reftable").exists() {
        return None;
    }
    let head = std::fs::read_to_string(dir.join("HEAD")).ok()?;
    let Some(name) = head.strip_prefix("ref: ").map(str::trim) else {
        return commit(&head).map(Some);
    };
    if !name.starts_with("refs/") || name.split('/').any(|part| part == "..") {
        return None;
    }
    match std::fs::read_to_string(dir.join(name)) {
        Ok(loose) => return commit(&loose).map(Some),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return None,
        Err(_) => {}
    }
    let packed = match std::fs::read_to_string(dir.join("packed-refs")) {
        Ok(packed) => packed,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(_) => return None,
    };
    for line in packed.lines() {
        if let Some((hash, refname)) = line.split_once(' ')
            && refname == name
        {
            return commit(hash).map(Some);
        }
    }
    Some(None)
}
