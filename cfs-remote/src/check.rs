//! Checking a remote whole (`cfs remote verify`): every ref names a manifest that is
//! sound, and every object a manifest reaches is there and hashes to its name. A pull
//! checks what it reads; this reads everything, so damage is found before a pull meets
//! it (a push reuses an object already at its name without reading it back).

use std::collections::BTreeSet;

use crate::error::Result;
use crate::fetch::Fetched;
use crate::format::{ObjectName, name_of, object_path};
use crate::groups;
use crate::refs;
use crate::remote::Remote;

/// What a check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Refs read (branch and commit refs).
    pub refs: usize,
    /// Manifests they name, each checked.
    pub manifests: usize,
    /// Packs read whole and hashed.
    pub packs: usize,
    /// Bytes read.
    pub bytes: u64,
    /// One line per problem (a ref, manifest, group or pack that is missing or damaged).
    pub problems: Vec<String>,
}

/// Reads every ref of `remote`, the manifests they name and every pack those reach.
pub fn check(remote: &dyn Remote) -> Result<CheckReport> {
    refs::check_mark(remote, true)?;
    let mut report = CheckReport::default();
    let mut manifests = BTreeSet::new();
    for prefix in ["refs/", "commits/"] {
        for (name, _) in remote.list_all(prefix)? {
            report.refs += 1;
            match refs::read_ref(remote, &name) {
                Ok(manifest) => drop(manifests.insert(manifest)),
                Err(e) => report.problems.push(e.to_string()),
            }
        }
    }
    let mut packs = BTreeSet::new();
    for name in &manifests {
        report.manifests += 1;
        if let Err(e) = reach(remote, name, &mut packs) {
            report.problems.push(e.to_string());
        }
    }
    for pack in &packs {
        report.packs += 1;
        match remote.get(&object_path(pack))? {
            None => report
                .problems
                .push(format!("{}: missing", object_path(pack))),
            Some(bytes) => {
                report.bytes += bytes.len() as u64;
                if name_of(&bytes) != *pack {
                    report
                        .problems
                        .push(format!("{}: does not hash to its name", object_path(pack)));
                }
            }
        }
    }
    Ok(report)
}

/// Checks manifest `name` and its groups, adding the packs they name to `packs`.
pub(crate) fn reach(
    remote: &dyn Remote,
    name: &ObjectName,
    packs: &mut BTreeSet<ObjectName>,
) -> Result<()> {
    let manifest = refs::read_manifest(remote, name)?;
    packs.extend(manifest.groups.iter().map(|g| g.pack));
    let entries = groups::fetch(remote, &manifest.groups, &mut Fetched::default())?;
    packs.extend(entries.values().map(|e| e.pack));
    Ok(())
}
