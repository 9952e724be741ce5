//! Checking a remote whole (`cfs remote verify`): every ref names a manifest that is
//! sound, its group segments make its nodes and its row tables decode, and every
//! object a manifest reaches is there and hashes to its name. A pull
//! checks what it reads; this reads everything, so damage is found before a pull meets
//! it (a push reuses an object already at its name without reading it back).

use std::collections::BTreeSet;

use crate::error::Result;
use crate::fetch::Fetched;
use crate::format::{BucketEntry, ObjectName, name_of, object_path};
use crate::groups;
use crate::refs;
use crate::remote::Remote;
use crate::rows;

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
    let mut reached = Reached::default();
    for name in &manifests {
        report.manifests += 1;
        if let Err(e) = reach(remote, name, &mut reached) {
            // Manifests that share a damaged object each meet it: one line for it.
            let problem = e.to_string();
            if !report.problems.contains(&problem) {
                report.problems.push(problem);
            }
        }
    }
    for pack in &reached.packs {
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

/// What manifests reach: packs, and the group segments and row tables already read.
#[derive(Default)]
pub(crate) struct Reached {
    pub packs: BTreeSet<ObjectName>,
    read: BTreeSet<(ObjectName, u64)>,
}

/// Checks manifest `name`, its groups and its row tables (each read once however many
/// manifests name it), adding the packs they name to `reached`. A group or table counts
/// as read only once it decoded, so that a failure here leaves another manifest that
/// shares them to read them and go on to what they reach.
pub(crate) fn reach(remote: &dyn Remote, name: &ObjectName, reached: &mut Reached) -> Result<()> {
    let manifest = refs::read_manifest(remote, name)?;
    let unread = |reached: &Reached, entries: &mut dyn Iterator<Item = &BucketEntry>| {
        entries
            .filter(|e| !reached.read.contains(&(e.pack, e.offset)))
            .copied()
            .collect::<Vec<BucketEntry>>()
    };
    let new_groups = unread(reached, &mut manifest.groups.iter());
    // Each pack is counted before it is read, so a missing one is reported as such.
    reached.packs.extend(manifest.groups.iter().map(|g| g.pack));
    let mut fetched = Fetched::default();
    let entries = groups::fetch(remote, &new_groups, &mut fetched)?;
    reached
        .read
        .extend(new_groups.iter().map(|e| (e.pack, e.offset)));
    let new_tables = unread(reached, &mut entries.values());
    reached.packs.extend(new_tables.iter().map(|e| e.pack));
    let tables = rows::fetch_tables(remote, &new_tables, &mut fetched)?;
    reached
        .read
        .extend(new_tables.iter().map(|e| (e.pack, e.offset)));
    for table in &tables {
        reached.packs.extend(rows::packs(table));
    }
    Ok(())
}
