//! Garbage collection of a remote: the refs past the newest `keep` of each branch go,
//! with the refs of commits whose states no kept ref names, then every object no kept
//! manifest reaches (itself, the packs of its groups, of its row tables and of its rows) that is
//! older than the grace period, so that a push under way, whose pack and manifest no ref
//! names yet, is never cut.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use cfs_core::hex_encode;

use crate::check;
use crate::error::{RemoteError, Result};
use crate::format::ObjectName;
use crate::refs;
use crate::remote::Remote;

/// What to keep.
#[derive(Clone, Copy, Debug)]
pub struct GcOptions {
    /// The newest refs of each branch to keep (at least 1).
    pub keep: usize,
    /// Objects younger than this are kept, reached or not.
    pub grace: Duration,
}

impl Default for GcOptions {
    fn default() -> Self {
        Self {
            keep: 10,
            grace: Duration::from_secs(3600),
        }
    }
}

/// What a collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Branch and commit refs kept.
    pub refs_kept: usize,
    /// Branch and commit refs removed.
    pub refs_removed: usize,
    /// Manifests the kept refs name.
    pub manifests_kept: usize,
    /// Objects kept because a kept manifest reaches them.
    pub objects_kept: usize,
    /// Objects no kept manifest reaches but younger than the grace period.
    pub objects_young: usize,
    /// Objects removed.
    pub objects_removed: usize,
}

/// Collects `remote`'s garbage (see the module's opening).
pub fn gc(remote: &dyn Remote, options: &GcOptions) -> Result<GcReport> {
    if options.keep == 0 {
        return Err(RemoteError::Invalid(
            "gc must keep at least the newest ref of each branch (--keep 1)".into(),
        ));
    }
    refs::check_mark(remote, true)?;
    let mut report = GcReport::default();
    let (kept_refs, old_refs) = branch_refs(remote, options.keep)?;
    let mut manifests = BTreeSet::new();
    for name in &kept_refs {
        manifests.insert(refs::read_ref(remote, name)?);
    }
    let mut old_refs = old_refs;
    for (name, _) in remote.list_all("commits/")? {
        match manifests.contains(&refs::read_ref(remote, &name)?) {
            true => report.refs_kept += 1,
            false => old_refs.push(name),
        }
    }
    report.refs_kept += kept_refs.len();
    report.manifests_kept = manifests.len();
    let reached = reached(remote, &manifests)?;
    for name in &old_refs {
        remote.delete(name)?;
    }
    report.refs_removed = old_refs.len();
    for (name, age) in remote.list_all("objects/")? {
        let object = name.strip_prefix("objects/").unwrap_or_default();
        if reached.contains(object) {
            report.objects_kept += 1;
        } else if age < options.grace {
            report.objects_young += 1;
        } else {
            remote.delete(&name)?;
            report.objects_removed += 1;
        }
    }
    for (name, age) in remote.list_all("tmp/").unwrap_or_default() {
        if age >= options.grace {
            remote.delete(&name)?;
        }
    }
    Ok(report)
}

/// The refs of every branch: the newest `keep` of each, and the rest.
fn branch_refs(remote: &dyn Remote, keep: usize) -> Result<(Vec<String>, Vec<String>)> {
    let mut by_branch: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, _) in remote.list_all("refs/")? {
        let branch = name.split('/').nth(1).unwrap_or_default().to_owned();
        by_branch.entry(branch).or_default().push(name);
    }
    let (mut kept, mut old) = (Vec::new(), Vec::new());
    for mut names in by_branch.into_values() {
        // Names sort newest first.
        names.sort();
        let rest = names.split_off(keep.min(names.len()));
        kept.extend(names);
        old.extend(rest);
    }
    Ok((kept, old))
}

/// The hex names of every object the manifests reach.
fn reached(remote: &dyn Remote, manifests: &BTreeSet<ObjectName>) -> Result<BTreeSet<String>> {
    let mut reached = check::Reached::default();
    for name in manifests {
        check::reach(remote, name, &mut reached)?;
    }
    Ok(manifests
        .iter()
        .chain(&reached.packs)
        .map(|n| hex_encode(n))
        .collect())
}
