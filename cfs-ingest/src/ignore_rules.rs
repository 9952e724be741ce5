//! Which walked paths are ignored: the rules of `.ignore`, `.gitignore`,
//! `.git/info/exclude` and the user's global git excludes, one folder at a time.
//!
//! Each rule file is parsed by `ignore::gitignore` (git's own glob syntax, negation,
//! folder-only and anchored patterns). How the files of different folders combine is
//! the `ignore` crate's walker's (which cfs used before it walked by itself, without a
//! git repository required):
//! - within one kind of file, the nearest folder with a matching pattern decides (its
//!   last matching pattern, so a `!` pattern there re-includes);
//! - across kinds, `.ignore` decides before `.gitignore`, which decides before
//!   `.git/info/exclude`, which decides before the global excludes, whatever folders
//!   they are in;
//! - a nested git repository does not stop the rules of the folders above it.
//!
//! The global excludes (git's `core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`)
//! are matched relative to the walked root, so a walk does not depend on the current
//! directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::error::IngestError;

/// The rules in force in one folder: its own rule files and those of the folders above.
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    /// The nearest folder with a rule file, if any.
    nearest: Option<Arc<Folder>>,
    global: Arc<Gitignore>,
}

/// The rule files of one folder.
#[derive(Debug)]
struct Folder {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
    parent: Option<Arc<Folder>>,
}

/// Which rule files a folder's listing holds.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RuleFiles {
    /// `.ignore`.
    pub ignore: bool,
    /// `.gitignore`.
    pub gitignore: bool,
    /// `.git` (a folder, or a file naming one).
    pub git: bool,
}

impl RuleFiles {
    /// Notes `name` if it is one of the rule files.
    pub fn see(&mut self, name: &std::ffi::OsStr) {
        if name == ".ignore" {
            self.ignore = true;
        } else if name == ".gitignore" {
            self.gitignore = true;
        } else if name == ".git" {
            self.git = true;
        }
    }

    fn any(self) -> bool {
        self.ignore || self.gitignore || self.git
    }
}

impl Rules {
    /// The rules at the walk's root before its own files: the global excludes only.
    pub fn at_root(root: &Path) -> Self {
        // An unreadable or malformed global excludes file is skipped, as git does.
        let (global, _) = GitignoreBuilder::new(root).build_global();
        Self {
            nearest: None,
            global: Arc::new(global),
        }
    }

    /// The rules inside `dir`, whose listing holds `files`, and the problems found in
    /// its rule files (each names the file; the rules that parsed still apply).
    pub fn enter(&self, dir: &Path, files: RuleFiles) -> (Self, Vec<IngestError>) {
        if !files.any() {
            return (self.clone(), Vec::new());
        }
        let mut problems = Vec::new();
        let mut read = |name: &str, present: bool| {
            if present {
                parse(dir, &dir.join(name), &mut problems)
            } else {
                Gitignore::empty()
            }
        };
        let ignore = read(".ignore", files.ignore);
        let gitignore = read(".gitignore", files.gitignore);
        let exclude = match files.git.then(|| git_common_dir(dir)).flatten() {
            Some(git) => parse(dir, &git.join("info/exclude"), &mut problems),
            None => Gitignore::empty(),
        };
        let folder = Folder {
            ignore,
            gitignore,
            exclude,
            parent: self.nearest.clone(),
        };
        let rules = Self {
            nearest: Some(Arc::new(folder)),
            global: self.global.clone(),
        };
        (rules, problems)
    }

    /// Whether `path` (under the folder these rules are for) is ignored.
    pub fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let (mut ignore, mut gitignore, mut exclude) = (Match::None, Match::None, Match::None);
        let mut at = self.nearest.as_deref();
        while let Some(folder) = at {
            if ignore.is_none() {
                ignore = folder.ignore.matched(path, is_dir).map(|_| ());
            }
            if gitignore.is_none() {
                gitignore = folder.gitignore.matched(path, is_dir).map(|_| ());
            }
            if exclude.is_none() {
                exclude = folder.exclude.matched(path, is_dir).map(|_| ());
            }
            at = folder.parent.as_deref();
        }
        let global = || self.global.matched(path, is_dir).map(|_| ());
        ignore.or(gitignore).or(exclude).or(global()).is_ignore()
    }
}

/// The rules of the file at `file`, for paths under `dir`. A file that cannot be read
/// gives no rules (it may have gone since the listing); bad patterns are reported and
/// the others kept.
fn parse(dir: &Path, file: &Path, problems: &mut Vec<IngestError>) -> Gitignore {
    let mut builder = GitignoreBuilder::new(dir);
    if let Some(e) = builder.add(file) {
        let only_missing = matches!(&e, ignore::Error::WithPath { err, .. }
            if matches!(&**err, ignore::Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound));
        if !only_missing {
            problems.push(IngestError::Io {
                path: file.to_path_buf(),
                source: std::io::Error::other(format!("ignore rules: {}", reason(&e))),
            });
        }
    }
    builder.build().unwrap_or_else(|e| {
        problems.push(IngestError::Io {
            path: file.to_path_buf(),
            source: std::io::Error::other(format!("ignore rules: {e}")),
        });
        Gitignore::empty()
    })
}

/// An `ignore` error without the path it repeats.
fn reason(e: &ignore::Error) -> String {
    match e {
        ignore::Error::WithPath { err, .. } => reason(err),
        ignore::Error::Partial(errs) => errs.iter().map(reason).collect::<Vec<_>>().join("; "),
        other => other.to_string(),
    }
}

/// The folder holding `info/exclude` for the repository whose `.git` is in `dir`: the
/// folder itself, or for a `.git` file (a worktree) the common folder its `gitdir:`
/// names. `None` when a `.git` file names nothing usable (e.g. a submodule's, which has
/// no common folder of its own).
fn git_common_dir(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let first_line = |file: &Path| -> Option<String> {
        let text = std::fs::read_to_string(file).ok()?;
        Some(text.lines().next()?.to_owned())
    };
    let git_dir = dir.join(first_line(&dot_git)?.strip_prefix("gitdir: ")?);
    let common = first_line(&git_dir.join("commondir"))?;
    Some(git_dir.join(common))
}
