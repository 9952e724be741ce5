//! Groups of 32 buckets: the level of the Merkle tree between a table's root and its
//! buckets. A manifest lists, per tag, each non-empty group's node (the Merkle root of
//! its 32 bucket roots) and where the group's segment lies; the group segment lists its
//! non-empty buckets' roots and where their row tables lie. A change re-sends only the groups it touched,
//! and a pull reads only the groups whose nodes differ from the store's (docs/format.md,
//! "Remotes").

use std::collections::BTreeMap;

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_core::{MerkleRoot, N_BUCKETS, merkle_root};

use crate::error::{RemoteError, Result};
use crate::fetch::{self, Fetched};
use crate::format::{BucketEntry, ObjectName, object_path};
use crate::remote::Remote;

/// Buckets in a group.
pub(crate) const GROUP_BUCKETS: usize = 32;
/// Groups of a tag.
pub(crate) const GROUPS: usize = N_BUCKETS / GROUP_BUCKETS;
/// The pack index of an entry whose segment lies in the group's own pack.
const OWN_PACK: u16 = u16::MAX;

#[derive(BorshSerialize, BorshDeserialize)]
struct GroupBytes {
    packs: Vec<ObjectName>,
    entries: Vec<GroupEntry>,
}

#[derive(BorshSerialize, BorshDeserialize)]
struct GroupEntry {
    bucket: u16,
    root: [u8; 32],
    pack: u16,
    offset: u64,
    length: u64,
}

/// The node of group `g` of a tag whose 1,024 bucket roots are `roots`.
pub(crate) fn node(roots: &[MerkleRoot], g: usize) -> MerkleRoot {
    let leaves: Vec<[u8; 32]> = roots[g * GROUP_BUCKETS..(g + 1) * GROUP_BUCKETS]
        .iter()
        .map(|r| r.0)
        .collect();
    merkle_root(&leaves)
}

/// The node of a group of empty buckets.
pub(crate) fn empty_node() -> MerkleRoot {
    merkle_root(&[MerkleRoot::empty().0; GROUP_BUCKETS])
}

/// A group segment of `entries` (all of one group, in bucket order); an entry whose
/// pack is all zeros lies in the pack the group is written to.
pub(crate) fn encode(entries: &[BucketEntry]) -> Vec<u8> {
    let mut packs: Vec<ObjectName> = Vec::new();
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let pack = if e.pack == [0; 32] {
            OWN_PACK
        } else {
            let at = packs.iter().position(|p| *p == e.pack).unwrap_or_else(|| {
                packs.push(e.pack);
                packs.len() - 1
            });
            u16::try_from(at).expect("at most 32 packs in a group")
        };
        out.push(GroupEntry {
            bucket: e.bucket,
            root: e.root,
            pack,
            offset: e.offset,
            length: e.length,
        });
    }
    borsh::to_vec(&GroupBytes {
        packs,
        entries: out,
    })
    .expect("a group in memory encodes")
}

/// The bucket entries of the group segment `bytes`, fetched for `group` (a manifest's
/// group entry: its `bucket` is the group's number, its `root` the group's node): in
/// bucket order, within the group, not empty, and making the node.
fn decode(bytes: &[u8], group: &BucketEntry) -> std::result::Result<Vec<BucketEntry>, String> {
    let g: GroupBytes = borsh::from_slice(bytes).map_err(|e| format!("not a group: {e}"))?;
    let first = usize::from(group.bucket) * GROUP_BUCKETS;
    let mut roots = vec![MerkleRoot::empty(); N_BUCKETS];
    let mut out = Vec::with_capacity(g.entries.len());
    for (i, e) in g.entries.iter().enumerate() {
        let b = usize::from(e.bucket);
        let sound = (first..first + GROUP_BUCKETS).contains(&b)
            && (i == 0 || g.entries[i - 1].bucket < e.bucket)
            && e.root != MerkleRoot::empty().0;
        let pack = match e.pack {
            OWN_PACK => Some(group.pack),
            p => g.packs.get(usize::from(p)).copied(),
        };
        let Some(pack) = pack.filter(|_| sound) else {
            return Err("its buckets are out of order, out of range, empty or of no pack".into());
        };
        roots[b] = MerkleRoot(e.root);
        out.push(BucketEntry {
            tag: group.tag,
            bucket: e.bucket,
            root: e.root,
            pack,
            offset: e.offset,
            length: e.length,
        });
    }
    if node(&roots, usize::from(group.bucket)).0 != group.root {
        return Err("its bucket roots do not make its node".into());
    }
    Ok(out)
}

/// The bucket entries of `groups` (a manifest's group entries), fetched together and
/// each checked against its node, keyed by (tag, bucket).
pub(crate) fn fetch(
    remote: &dyn Remote,
    groups: &[BucketEntry],
    fetched: &mut Fetched<'_>,
) -> Result<BTreeMap<(u8, u16), BucketEntry>> {
    let spans: Vec<fetch::Span> = groups.iter().map(BucketEntry::span).collect();
    let mut out = BTreeMap::new();
    for (group, bytes) in groups.iter().zip(fetch::spans(remote, &spans, fetched)?) {
        let entries = decode(&bytes, group).map_err(|reason| RemoteError::Damaged {
            remote: remote.describe(),
            name: format!(
                "{} (group {} of tag {})",
                object_path(&group.pack),
                group.bucket,
                group.tag
            ),
            reason,
        })?;
        out.extend(entries.into_iter().map(|e| (e.slot(), e)));
    }
    Ok(out)
}
