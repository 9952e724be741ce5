//! The walker against the `ignore` crate's walker (which cfs used before it walked by
//! itself): the same files, sizes and times, and the same links reported, on random
//! trees of `.gitignore`, `.ignore` and `.git/info/exclude` rules, whole and in scopes.

use std::collections::BTreeSet;
use std::path::Path;

use cfs_ingest::{DEFAULT_IGNORED_DIRS, Scope, walk_scope};
use proptest::prelude::*;

/// What the `ignore` crate's walker finds with the settings cfs used: files (path,
/// size, time) and links, in `scope`.
fn reference(
    root: &Path,
    scope: Option<&Scope>,
) -> (BTreeSet<(String, u64, u64)>, BTreeSet<String>) {
    let scope = scope.filter(|s| !s.is_everything()).cloned();
    let mut builder = ignore::WalkBuilder::new(root);
    let root_owned = root.to_path_buf();
    builder
        .hidden(false)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            if is_dir && e.depth() > 0 && DEFAULT_IGNORED_DIRS.iter().any(|d| e.file_name() == *d) {
                return false;
            }
            // The one deliberate difference: cfs skips a `.git` file too.
            if e.file_name() == ".git" {
                return false;
            }
            let Some(scope) = &scope else { return true };
            let rel = e
                .path()
                .strip_prefix(&root_owned)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            if rel.is_empty() {
                return true;
            }
            let inside = scope.contains(&rel);
            let on_the_way = is_dir && scope.paths().any(|p| p.starts_with(&format!("{rel}/")));
            inside || on_the_way
        });
    let (mut files, mut links) = (BTreeSet::new(), BTreeSet::new());
    for e in builder.build() {
        let Ok(e) = e else { continue };
        let t = e.file_type().unwrap();
        let rel = e
            .path()
            .strip_prefix(root)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        if t.is_symlink() {
            links.insert(rel);
        } else if t.is_file() {
            let m = e.metadata().unwrap();
            let ns = m
                .modified()
                .unwrap()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            files.insert((rel, m.len(), ns.as_nanos() as u64));
        }
    }
    (files, links)
}

fn ours(root: &Path, scope: Option<&Scope>) -> (BTreeSet<(String, u64, u64)>, BTreeSet<String>) {
    let walked = walk_scope(root, scope).unwrap();
    let listed: Vec<&str> = walked.files.iter().map(|f| f.rel_path.as_str()).collect();
    assert!(
        listed.windows(2).all(|w| w[0] < w[1]),
        "sorted and distinct"
    );
    let files = walked
        .files
        .iter()
        .map(|f| (f.rel_path.clone(), f.size_bytes, f.mtime_ns))
        .collect();
    let links = walked
        .errors
        .iter()
        .map(|e| match e {
            cfs_ingest::IngestError::Skipped { path, .. } => path.clone(),
            other => panic!("unexpected walk error {other}"),
        })
        .collect();
    (files, links)
}

const DIRS: [&str; 5] = ["a", "b", "build", "node_modules", "c"];
const FILES: [&str; 7] = [
    "x.py", "y.log", "keep.log", "top.txt", "deep.py", "z1.txt", "build",
];
const PATTERNS: [&str; 18] = [
    "*.log",
    "!keep.log",
    "build/",
    "/top.txt",
    "a/**/deep.py",
    "b",
    "*.py",
    "!x.py",
    "**/c/",
    "y.*",
    "a/",
    "!a/",
    "z?.txt",
    "[xy].py",
    "!*.py",
    "/b/",
    "deep.py",
    "!build",
];

/// A folder path of up to `depth` names.
fn folder(depth: usize) -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(prop::sample::select(&DIRS[..]), 0..=depth)
}

#[derive(Debug, Clone)]
struct Tree {
    files: Vec<(Vec<&'static str>, &'static str)>,
    rules: Vec<(Vec<&'static str>, u8, Vec<&'static str>)>,
    links: Vec<Vec<&'static str>>,
    scope: Vec<Vec<&'static str>>,
}

fn tree_strategy() -> impl Strategy<Value = Tree> {
    let file = (folder(3), prop::sample::select(&FILES[..]));
    let rule = (
        folder(2),
        0u8..3,
        prop::collection::vec(prop::sample::select(&PATTERNS[..]), 1..5),
    );
    (
        prop::collection::vec(file, 1..25),
        prop::collection::vec(rule, 0..5),
        prop::collection::vec(folder(2), 0..3),
        prop::collection::vec(folder(2), 0..3),
    )
        .prop_map(|(files, rules, links, scope)| Tree {
            files,
            rules,
            links,
            scope,
        })
}

fn build(root: &Path, tree: &Tree) {
    let at = |parts: &[&str]| parts.iter().fold(root.to_path_buf(), |p, n| p.join(n));
    for (dir, name) in &tree.files {
        let d = at(dir);
        if std::fs::create_dir_all(&d).is_ok() && !d.join(name).is_dir() {
            let _ = std::fs::write(d.join(name), format!("{dir:?}{name}"));
        }
    }
    for (dir, kind, patterns) in &tree.rules {
        let d = at(dir);
        let file = match kind {
            0 => d.join(".gitignore"),
            1 => d.join(".ignore"),
            _ => d.join(".git/info/exclude"),
        };
        if std::fs::create_dir_all(file.parent().unwrap()).is_ok() {
            let mut text = patterns.join("\n");
            text.push('\n');
            let _ = std::fs::write(file, text);
        }
    }
    for dir in &tree.links {
        let d = at(dir);
        if std::fs::create_dir_all(&d).is_ok() {
            let _ = std::os::unix::fs::symlink("x.py", d.join("link.py"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn same_files_as_the_ignore_crate(tree in tree_strategy()) {
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), &tree);
        prop_assert_eq!(ours(dir.path(), None), reference(dir.path(), None));
        if !tree.scope.is_empty() {
            let scope = Scope::new(tree.scope.iter().map(|p| p.join("/")));
            prop_assert_eq!(ours(dir.path(), Some(&scope)), reference(dir.path(), Some(&scope)));
        }
    }
}

/// A worktree's `.git` file names its common folder, whose `info/exclude` applies; a
/// `.gitignore` of a folder above a nested repository still applies inside it.
#[test]
fn worktree_exclude_and_rules_above_a_nested_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let w = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    w("main/.git/info/exclude", "secret.txt\n");
    w("main/.git/worktrees/wt/commondir", "../..\n");
    w(
        "wt/.git",
        &format!(
            "gitdir: {}\n",
            root.join("main/.git/worktrees/wt").display()
        ),
    );
    w("wt/secret.txt", "s");
    w("wt/open.txt", "o");
    w(".gitignore", "*.tmp\n");
    w("nested/.git/HEAD", "ref: refs/heads/main\n");
    w("nested/a.tmp", "t");
    w("nested/b.txt", "b");
    let names: Vec<String> = ours(root, None).0.into_iter().map(|f| f.0).collect();
    assert_eq!(names, [".gitignore", "nested/b.txt", "wt/open.txt"]);
    assert_eq!(ours(root, None), reference(root, None));
}

/// A bad pattern in a rule file is an error naming the file; the file's other patterns
/// still apply and the rest of the tree is walked.
#[test]
fn a_bad_rule_is_an_error_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "*.log\n[z-a\n").unwrap();
    std::fs::write(root.join("a.log"), "l").unwrap();
    std::fs::write(root.join("b.txt"), "b").unwrap();
    let walked = walk_scope(root, None).unwrap();
    let names: Vec<&str> = walked.files.iter().map(|f| f.rel_path.as_str()).collect();
    assert_eq!(names, [".gitignore", "b.txt"]);
    assert_eq!(walked.errors.len(), 1, "{:?}", walked.errors);
    let message = walked.errors[0].to_string();
    assert!(
        message.contains(".gitignore") && message.contains("line 2"),
        "{message}"
    );
}
