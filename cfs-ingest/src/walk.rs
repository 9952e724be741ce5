//! Directory walking: which files under a root are indexed.
//!
//! gitignore-aware through the `ignore` crate (with `require_git(false)`, so a
//! `.gitignore` counts outside a git repository too), with a default ignore set for
//! version-control folders, dependency and build outputs and the store itself. Symbolic
//! links are not followed (so no loop and no escape from the root) and are reported as
//! skipped. The walk runs on several threads; paths come back sorted by their relative
//! path, whatever order the file system or the threads gave them in.

use std::path::{Path, PathBuf};

use cfs_core::validate_rel_path;

use crate::error::IngestError;

/// Folder names never walked into, wherever they are.
pub const DEFAULT_IGNORED_DIRS: [&str; 16] = [
    ".git",
    ".hg",
    ".svn",
    ".cfs",
    "node_modules",
    "target",
    "dist",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".next",
    ".gradle",
    ".idea",
];

/// A file found by the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkEntry {
    /// Path relative to the root, `/`-separated, validated.
    pub rel_path: String,
    /// Path on disk.
    pub abs_path: PathBuf,
    /// Size from the directory walk's metadata.
    pub size_bytes: u64,
    /// Modification time in nanoseconds since the Unix epoch (0 if unknown).
    pub mtime_ns: u64,
}

/// What a walk found: files to index, and per-path problems.
#[derive(Debug, Default)]
pub struct Walk {
    /// Files, sorted by relative path.
    pub files: Vec<WalkEntry>,
    /// Paths that could not be walked or used, with the reason.
    pub errors: Vec<IngestError>,
}

/// A part of a tree: relative paths, each naming a file or a folder (everything under
/// it). A walk within a scope reads only the folders on the way to its paths, and
/// applies the same ignore rules as a walk of the whole tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    paths: std::collections::BTreeSet<String>,
}

impl Scope {
    /// The scope of `paths` (relative, `/`-separated; trailing `/` and `./` ignored).
    /// An empty path or `.` is the whole tree: use [`Scope::is_everything`].
    pub fn new<S: AsRef<str>>(paths: impl IntoIterator<Item = S>) -> Self {
        let paths = paths
            .into_iter()
            .map(|p| {
                let p = p.as_ref().trim_end_matches('/');
                let p = p.strip_prefix("./").unwrap_or(p);
                if p == "." {
                    String::new()
                } else {
                    p.to_owned()
                }
            })
            .collect();
        Self { paths }
    }

    /// The paths of the scope, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.paths.iter().map(String::as_str)
    }

    /// Whether the scope is the whole tree.
    pub fn is_everything(&self) -> bool {
        self.paths.contains("")
    }

    /// Whether the scope holds no path.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Whether `rel` is one of the paths or under one.
    pub fn contains(&self, rel: &str) -> bool {
        if self.is_everything() || self.paths.contains(rel) {
            return true;
        }
        let mut at = rel;
        while let Some((parent, _)) = at.rsplit_once('/') {
            if self.paths.contains(parent) {
                return true;
            }
            at = parent;
        }
        false
    }

    /// Whether a walk must enter the folder `rel`: it is in the scope or on the way.
    fn enters(&self, rel: &str) -> bool {
        if rel.is_empty() || self.contains(rel) {
            return true;
        }
        let prefix = format!("{rel}/");
        self.paths
            .range(prefix.clone()..)
            .next()
            .is_some_and(|p| p.starts_with(&prefix))
    }
}

/// Walks `root`.
pub fn walk(root: &Path) -> Result<Walk, IngestError> {
    walk_scope(root, None)
}

/// Walks the part of `root` in `scope` (all of it for `None`).
pub fn walk_scope(root: &Path, scope: Option<&Scope>) -> Result<Walk, IngestError> {
    let scope = scope
        .filter(|s| !s.is_everything())
        .cloned()
        .map(std::sync::Arc::new);
    let meta = std::fs::metadata(root).map_err(|source| IngestError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(IngestError::Io {
            path: root.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry({
            let scope = scope.clone();
            let root = root.to_path_buf();
            move |entry| {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                if is_dir
                    && entry.depth() > 0
                    && DEFAULT_IGNORED_DIRS.iter().any(|d| entry.file_name() == *d)
                {
                    return false;
                }
                let Some(scope) = &scope else { return true };
                match entry.path().strip_prefix(&root).ok().and_then(Path::to_str) {
                    Some(rel) => {
                        let rel = rel.replace(std::path::MAIN_SEPARATOR, "/");
                        if is_dir {
                            scope.enters(&rel)
                        } else {
                            scope.contains(&rel)
                        }
                    }
                    // Paths that are not UTF-8 are reported by the visit.
                    None => true,
                }
            }
        });
    let found: std::sync::Mutex<Walk> = std::sync::Mutex::new(Walk::default());
    builder.build_parallel().run(|| {
        Box::new(|result| {
            let outcome = visit(root, result);
            if let Ok(mut walk) = found.lock() {
                match outcome {
                    Some(Ok(entry)) => walk.files.push(entry),
                    Some(Err(e)) => walk.errors.push(e),
                    None => {}
                }
            }
            ignore::WalkState::Continue
        })
    });
    let mut out = found.into_inner().unwrap_or_default();
    out.errors.sort_by_key(|e| e.to_string());
    out.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    Ok(out)
}

/// One walked entry: a file to index, a per-path error, or nothing (folders and other
/// kinds of file).
fn visit(
    root: &Path,
    result: Result<ignore::DirEntry, ignore::Error>,
) -> Option<Result<WalkEntry, IngestError>> {
    let entry = match result {
        Ok(entry) => entry,
        Err(e) => return Some(Err(walk_error(root, e))),
    };
    let file_type = entry.file_type()?;
    if file_type.is_symlink() {
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        return Some(Err(IngestError::Skipped {
            path: rel.display().to_string(),
            reason: "symbolic link (links are not followed)".into(),
        }));
    }
    if !file_type.is_file() {
        return None;
    }
    let rel = entry.path().strip_prefix(root).ok()?;
    let rel_path = match rel_path_string(rel) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let meta = match entry.metadata() {
        Ok(meta) => meta,
        Err(e) => return Some(Err(walk_error(root, e))),
    };
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    Some(Ok(WalkEntry {
        rel_path,
        abs_path: entry.path().to_path_buf(),
        size_bytes: meta.len(),
        mtime_ns,
    }))
}

fn walk_error(root: &Path, e: ignore::Error) -> IngestError {
    let path = match &e {
        ignore::Error::WithPath { path, .. } => path.clone(),
        _ => root.to_path_buf(),
    };
    IngestError::Io {
        path,
        source: std::io::Error::other(e.to_string()),
    }
}

/// The `/`-separated UTF-8 form of a relative path, validated as cfs stores it.
pub fn rel_path_string(rel: &Path) -> Result<String, IngestError> {
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            std::path::Component::Normal(part) => match part.to_str() {
                Some(s) => parts.push(s),
                None => {
                    return Err(IngestError::Path {
                        path: rel.display().to_string(),
                        reason: "not valid UTF-8".into(),
                    });
                }
            },
            _ => {
                return Err(IngestError::Path {
                    path: rel.display().to_string(),
                    reason: "not a plain relative path".into(),
                });
            }
        }
    }
    let joined = parts.join("/");
    validate_rel_path(&joined).map_err(|e| IngestError::Path {
        path: joined.clone(),
        reason: e.to_string(),
    })?;
    Ok(joined)
}
