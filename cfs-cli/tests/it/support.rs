//! What the CLI's tests share: the binary run in a folder, a sample tree, git, and the
//! switch for the slow tests (`CFS_SLOW_TESTS=1`, which CI sets: tests that sleep or
//! kill processes at many moments run in full only then).

use std::process::Command;

pub use cfs_testkit::{skip_slow, slow};

pub fn cfs(args: &[&str]) -> (i32, String, String) {
    cfs_in(&std::env::current_dir().expect("current dir"), args)
}

pub fn sample_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
    std::fs::write(
        root.join("README.md"),
        "# Sample\n\nA merkle tree proves inclusion.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "/// Adds.\npub fn add(a: u32, b: u32) -> u32 { a + b }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("copy.md"),
        "# Sample\n\nA merkle tree proves inclusion.\n",
    )
    .unwrap();
    std::fs::write(root.join("image.png"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
    std::fs::write(root.join("node_modules/x/index.js"), "ignored()").unwrap();
    dir
}

pub fn cfs_in(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    cfs_env(dir, &[], args)
}

/// `cfs ARGS` in `dir` with the environment variables `env` set.
pub fn cfs_env(
    dir: &std::path::Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cfs"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("run cfs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}
