//! Refs: each branch a create-only log whose first name is its newest push, and refs by
//! git commit (docs/format.md, "Remotes").

use cfs_core::{hex_decode, hex_encode};

use crate::error::{RemoteError, Result};
use crate::format::{FORMAT, Manifest, ObjectName, object_path};
use crate::remote::Remote;

/// The branch pushes and pulls use unless told otherwise.
pub const DEFAULT_BRANCH: &str = "main";

/// The name that marks a remote and holds its format.
const MARK: &str = "cfs-remote";

/// What a pull takes: a branch's newest state, a git commit's, or one manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PullTarget {
    /// The newest state of a branch.
    Branch(String),
    /// The state pushed for a git commit (hex).
    Commit(String),
    /// The manifest of this name (hex).
    Manifest(String),
    /// The state of the first of these git commits (newest first: `HEAD`, then its
    /// ancestors) that has one.
    Nearest(Vec<String>),
}

impl Default for PullTarget {
    fn default() -> Self {
        Self::Branch(DEFAULT_BRANCH.to_owned())
    }
}

/// Fails unless `branch` is 1-64 bytes of `[A-Za-z0-9._-]`, not `.` or `..`.
pub(crate) fn check_branch(branch: &str) -> Result<()> {
    let fine = (1..=64).contains(&branch.len())
        && branch
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && branch != "."
        && branch != "..";
    if fine {
        Ok(())
    } else {
        Err(RemoteError::Invalid(format!(
            "branch name {branch:?}: use 1-64 letters, digits, '.', '_' or '-'"
        )))
    }
}

/// Fails unless `commit` is a git object name (40 or 64 lower-case hex digits).
pub(crate) fn check_commit(commit: &str) -> Result<()> {
    let fine = matches!(commit.len(), 40 | 64)
        && commit
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if fine {
        Ok(())
    } else {
        Err(RemoteError::Invalid(format!(
            "{commit:?} is not a git commit id"
        )))
    }
}

/// The name of the `n`th ref of `branch`: `u64::MAX - n` in 20 digits, so that newer
/// sorts first.
pub(crate) fn ref_name(branch: &str, n: u64) -> String {
    format!("refs/{branch}/{:020}", u64::MAX - n)
}

/// The name of the ref of git commit `commit`.
pub(crate) fn commit_ref(commit: &str) -> String {
    format!("commits/{commit}")
}

/// The newest ref of `branch`: its number and the manifest it names. A remote that
/// lists answers from the first name of the branch's log; one that cannot (a web
/// server) starts from the branch's `latest` hint and reads on while a later ref exists
/// (a hint may lag a push that published after it).
pub(crate) fn newest(remote: &dyn Remote, branch: &str) -> Result<Option<(u64, ObjectName)>> {
    let n = if remote.lists() {
        listed_newest(remote, branch)?
    } else {
        probed_newest(remote, branch)?
    };
    match n {
        0 => Ok(None),
        n => Ok(Some((n, read_ref(remote, &ref_name(branch, n))?))),
    }
}

/// The newest ref's number from the listing of the branch's log (0: none).
fn listed_newest(remote: &dyn Remote, branch: &str) -> Result<u64> {
    let prefix = format!("refs/{branch}/");
    let Some(name) = remote.list(&prefix)?.into_iter().next() else {
        return Ok(0);
    };
    // A listing is the remote's word: a name outside the prefix, or the one number
    // (0, as `u64::MAX`) after which no push could publish, is damage, not a ref.
    name.strip_prefix(&prefix)
        .filter(|digits| digits.len() == 20)
        .and_then(|digits| digits.parse::<u64>().ok())
        .map(|v| u64::MAX - v)
        .filter(|&n| n < u64::MAX)
        .ok_or_else(|| damaged(remote, &name, "not a ref name".into()))
}

/// Most refs read past a branch's hint: a push moves the hint after its ref, so a hint
/// lags by the pushes that raced it, never by thousands (a server that answers every
/// name would otherwise be read without end).
const MAX_PAST_HINT: u64 = 4096;

/// The newest ref's number from the hint and the refs after it (0: none).
fn probed_newest(remote: &dyn Remote, branch: &str) -> Result<u64> {
    let name = hint_name(branch);
    let mut n = match remote.get(&name)? {
        None => 0,
        Some(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| t.strip_suffix('\n'))
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| {
                damaged(
                    remote,
                    &name,
                    "not a hint: a ref number and a newline".into(),
                )
            })?,
    };
    let hint = n;
    while let Some(next) = n.checked_add(1).filter(|&next| next < u64::MAX) {
        if remote.get(&ref_name(branch, next))?.is_none() {
            return Ok(n);
        }
        if next - hint > MAX_PAST_HINT {
            let reason = format!("more than {MAX_PAST_HINT} refs published past it");
            return Err(damaged(remote, &name, reason));
        }
        n = next;
    }
    Err(damaged(
        remote,
        &name,
        "a ref number no push can follow".into(),
    ))
}

/// The name of the hint that names a branch's newest ref.
pub(crate) fn hint_name(branch: &str) -> String {
    format!("latest/{branch}")
}

/// A hint's content: the ref's number and a newline.
pub(crate) fn hint_content(n: u64) -> Vec<u8> {
    format!("{n}\n").into_bytes()
}

/// The manifest ref `name` names.
pub(crate) fn read_ref(remote: &dyn Remote, name: &str) -> Result<ObjectName> {
    let bytes = remote.get(name)?.ok_or_else(|| RemoteError::NotFound {
        remote: remote.describe(),
        what: name.to_owned(),
    })?;
    let text = std::str::from_utf8(&bytes).unwrap_or_default();
    parse_object_name(text.strip_suffix('\n').unwrap_or("")).ok_or_else(|| {
        damaged(
            remote,
            name,
            "not a ref: a manifest's name and a newline".into(),
        )
    })
}

/// A ref's content: the manifest's hex name and a newline.
pub(crate) fn ref_content(manifest: &ObjectName) -> Vec<u8> {
    format!("{}\n", hex_encode(manifest)).into_bytes()
}

fn parse_object_name(hex: &str) -> Option<ObjectName> {
    (hex.len() == 64)
        .then(|| hex_decode(hex).ok())
        .flatten()
        .and_then(|bytes| bytes.try_into().ok())
}

fn damaged(remote: &dyn Remote, name: &str, reason: String) -> RemoteError {
    RemoteError::Damaged {
        remote: remote.describe(),
        name: name.to_owned(),
        reason,
    }
}

/// Marks a remote at its first push, or checks its mark: a folder of something else,
/// or a remote of another format, is refused.
pub(crate) fn mark(remote: &dyn Remote) -> Result<()> {
    let content = format!("cfs remote {FORMAT}\n");
    remote.create(MARK, content.as_bytes())?;
    check_mark(remote, false)
}

/// Checks a remote's mark; a remote with none has nothing published (`NotFound`).
pub(crate) fn check_mark(remote: &dyn Remote, pulling: bool) -> Result<()> {
    match remote.get(MARK)? {
        Some(bytes) if bytes == format!("cfs remote {FORMAT}\n").as_bytes() => Ok(()),
        Some(bytes) => Err(RemoteError::Version {
            remote: remote.describe(),
            what: format!(
                "the remote's mark says {:?}; this build reads cfs remote {FORMAT}",
                String::from_utf8_lossy(&bytes).trim_end()
            ),
        }),
        None if pulling => Err(RemoteError::NotFound {
            remote: remote.describe(),
            what: "anything (no cfs remote here)".into(),
        }),
        None => Err(damaged(remote, MARK, "missing".into())),
    }
}

/// The manifest a pull of `target` takes, checked (see [`Manifest::decode`]), and its
/// name.
pub fn fetch_manifest(remote: &dyn Remote, target: &PullTarget) -> Result<(ObjectName, Manifest)> {
    check_mark(remote, true)?;
    let not_found = |what: String| RemoteError::NotFound {
        remote: remote.describe(),
        what,
    };
    let name = match target {
        PullTarget::Branch(branch) => {
            check_branch(branch)?;
            newest(remote, branch)?
                .ok_or_else(|| not_found(format!("branch {branch}")))?
                .1
        }
        PullTarget::Commit(commit) => {
            check_commit(commit)?;
            let name = commit_ref(commit);
            if remote.get(&name)?.is_none() {
                return Err(not_found(format!("commit {commit}")));
            }
            read_ref(remote, &name)?
        }
        PullTarget::Nearest(commits) => {
            let commit = nearest(remote, commits)?.ok_or_else(|| {
                not_found(format!("any of {} commits from HEAD back", commits.len()))
            })?;
            read_ref(remote, &commit_ref(&commit))?
        }
        PullTarget::Manifest(hex) => parse_object_name(hex)
            .ok_or_else(|| RemoteError::Invalid(format!("{hex:?} is not a manifest name")))?,
    };
    Ok((name, read_manifest(remote, &name)?))
}

/// The first of `commits` that has a ref: from one listing where the remote lists, else
/// by asking for each of the first 32 (a web server).
fn nearest(remote: &dyn Remote, commits: &[String]) -> Result<Option<String>> {
    for commit in commits {
        check_commit(commit)?;
    }
    if remote.lists() {
        let published: std::collections::BTreeSet<String> =
            remote.list("commits/")?.into_iter().collect();
        return Ok(commits
            .iter()
            .find(|c| published.contains(&commit_ref(c)))
            .cloned());
    }
    for commit in commits.iter().take(32) {
        if remote.get(&commit_ref(commit))?.is_some() {
            return Ok(Some(commit.clone()));
        }
    }
    Ok(None)
}

/// Manifest `name`, checked.
pub(crate) fn read_manifest(remote: &dyn Remote, name: &ObjectName) -> Result<Manifest> {
    let path = object_path(name);
    let bytes = remote.get(&path)?.ok_or_else(|| RemoteError::Damaged {
        remote: remote.describe(),
        name: path.clone(),
        reason: "missing: a ref names it".into(),
    })?;
    Manifest::decode(&bytes, name, &remote.describe())
}
