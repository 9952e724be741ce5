//! Row tables: where each row of a bucket lies. A bucket's entry in its group names its
//! row table; the table lists the bucket's rows in key order, each by the first 16 bytes
//! of its leaf and its length, in runs of rows that lie back to back in one pack. A push
//! writes only the rows the remote lacks and names the rest where they already are; a
//! pull fetches only the rows whose leaves it lacks (docs/format.md, "Remotes").

use std::collections::{BTreeMap, BTreeSet};

use borsh::{BorshDeserialize, BorshSerialize};

use crate::error::{RemoteError, Result};
use crate::fetch::{self, Fetched, Span};
use crate::format::{BucketEntry, ObjectName, object_path};
use crate::remote::Remote;

/// Bytes of a leaf that a row table keeps: enough to tell rows apart, while the bucket
/// root, recomputed from whole leaves, decides what is sound.
pub(crate) const LEAF_PREFIX: usize = 16;
/// The part of a leaf a row table keeps.
pub(crate) type ShortLeaf = [u8; LEAF_PREFIX];
/// The most packs one bucket's rows lie in: past it, a push sends again the rows of the
/// packs that hold fewest of them, so a clone reads each bucket from a few places.
pub(crate) const MAX_PACKS: usize = 4;
/// The pack index of a run that lies in the pack its table lies in.
const OWN_PACK: u16 = u16::MAX;
/// A pack not yet named: the one being written.
pub(crate) const NEW_PACK: ObjectName = [0; 32];

/// The first [`LEAF_PREFIX`] bytes of `leaf`.
pub(crate) fn short(leaf: &[u8; 32]) -> ShortLeaf {
    leaf[..LEAF_PREFIX].try_into().expect("16 bytes")
}

/// Where one row of a bucket lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowAt {
    pub leaf: ShortLeaf,
    pub pack: ObjectName,
    pub offset: u64,
    pub length: u32,
}

impl RowAt {
    pub(crate) fn span(&self) -> Span {
        Span {
            pack: self.pack,
            offset: self.offset,
            length: u64::from(self.length),
        }
    }

    fn end(&self) -> u64 {
        self.offset + u64::from(self.length)
    }
}

#[derive(BorshSerialize, BorshDeserialize)]
struct TableBytes {
    packs: Vec<ObjectName>,
    runs: Vec<RunBytes>,
}

#[derive(BorshSerialize, BorshDeserialize)]
struct RunBytes {
    pack: u16,
    offset: u64,
    rows: Vec<RowRef>,
}

#[derive(BorshSerialize, BorshDeserialize)]
struct RowRef {
    leaf: ShortLeaf,
    length: u32,
}

/// The row table of `rows` (in key order); a row in [`NEW_PACK`] lies in the pack the
/// table is written to.
pub(crate) fn encode(rows: &[RowAt]) -> Vec<u8> {
    let mut packs: Vec<ObjectName> = Vec::new();
    let mut runs: Vec<RunBytes> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let follows = i > 0 && rows[i - 1].pack == row.pack && rows[i - 1].end() == row.offset;
        if !follows {
            let pack = if row.pack == NEW_PACK {
                OWN_PACK
            } else {
                let at = packs
                    .iter()
                    .position(|p| *p == row.pack)
                    .unwrap_or_else(|| {
                        packs.push(row.pack);
                        packs.len() - 1
                    });
                u16::try_from(at).expect("a bucket's rows lie in a few packs")
            };
            runs.push(RunBytes {
                pack,
                offset: row.offset,
                rows: Vec::new(),
            });
        }
        runs.last_mut().expect("a run").rows.push(RowRef {
            leaf: row.leaf,
            length: row.length,
        });
    }
    borsh::to_vec(&TableBytes { packs, runs }).expect("a row table in memory encodes")
}

/// The rows of the row table `bytes`, which lies in pack `own`: strictly decoded, at
/// least one row, every run naming a listed pack and within 64-bit offsets.
pub(crate) fn decode(bytes: &[u8], own: &ObjectName) -> std::result::Result<Vec<RowAt>, String> {
    let t: TableBytes = borsh::from_slice(bytes).map_err(|e| format!("not a row table: {e}"))?;
    let mut out = Vec::new();
    for run in &t.runs {
        let pack = match run.pack {
            OWN_PACK => Some(*own),
            p => t.packs.get(usize::from(p)).copied(),
        };
        let Some(pack) = pack.filter(|_| !run.rows.is_empty()) else {
            return Err("a run of no rows or of no pack".into());
        };
        let mut offset = run.offset;
        for r in &run.rows {
            let end = offset
                .checked_add(u64::from(r.length))
                .filter(|_| r.length > 0);
            let Some(end) = end else {
                return Err("a row of no bytes or past the end of a pack".into());
            };
            out.push(RowAt {
                leaf: r.leaf,
                pack,
                offset,
                length: r.length,
            });
            offset = end;
        }
    }
    if out.is_empty() {
        return Err("a row table of no rows".into());
    }
    Ok(out)
}

/// Where the rows of a bucket whose leaves are `leaves` (in key order) can stay, given
/// where the remote's previous state holds rows (`before`): `None` for a row to send.
/// Past [`MAX_PACKS`] packs (counting the one being written, if any row is sent), the
/// rows of the packs holding fewest of them (ties: the lower name) are sent again.
pub(crate) fn reuse(leaves: &[ShortLeaf], before: &[RowAt]) -> Vec<Option<RowAt>> {
    let before: BTreeMap<ShortLeaf, RowAt> = before.iter().map(|r| (r.leaf, *r)).collect();
    let mut at: Vec<Option<RowAt>> = leaves.iter().map(|l| before.get(l).copied()).collect();
    loop {
        let mut counts: BTreeMap<ObjectName, usize> = BTreeMap::new();
        for r in at.iter().flatten() {
            *counts.entry(r.pack).or_default() += 1;
        }
        let sending = at.iter().any(Option::is_none);
        if counts.len() + usize::from(sending) <= MAX_PACKS {
            return at;
        }
        let fewest = counts
            .iter()
            .min_by_key(|(name, n)| (**n, **name))
            .map(|(name, _)| *name)
            .expect("more packs than the most");
        for slot in at.iter_mut() {
            if slot.is_some_and(|r| r.pack == fewest) {
                *slot = None;
            }
        }
    }
}

/// The rows of the row tables `entries` name (bucket entries of groups), fetched
/// together and decoded, in the entries' order.
pub(crate) fn fetch_tables(
    remote: &dyn Remote,
    entries: &[BucketEntry],
    fetched: &mut Fetched<'_>,
) -> Result<Vec<Vec<RowAt>>> {
    let spans: Vec<Span> = entries.iter().map(BucketEntry::span).collect();
    let tables = fetch::spans(remote, &spans, fetched)?;
    entries
        .iter()
        .zip(tables)
        .map(|(e, bytes)| {
            decode(&bytes, &e.pack).map_err(|reason| RemoteError::Damaged {
                remote: remote.describe(),
                name: format!(
                    "{} (row table of bucket {} of tag {})",
                    object_path(&e.pack),
                    e.bucket,
                    e.tag
                ),
                reason,
            })
        })
        .collect()
}

/// Every pack a row table names.
pub(crate) fn packs(rows: &[RowAt]) -> BTreeSet<ObjectName> {
    rows.iter().map(|r| r.pack).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(leaf: u8, pack: u8, offset: u64) -> RowAt {
        RowAt {
            leaf: [leaf; 16],
            pack: [pack; 32],
            offset,
            length: 10,
        }
    }

    #[test]
    fn tables_round_trip_in_runs() {
        let own = [9; 32];
        let mut rows = vec![row(1, 1, 100), row(2, 1, 110), row(3, 2, 0), row(4, 1, 130)];
        rows.push(RowAt {
            pack: NEW_PACK,
            ..row(5, 0, 40)
        });
        let bytes = encode(&rows);
        let back = decode(&bytes, &own).unwrap();
        rows[4].pack = own;
        assert_eq!(back, rows);
        // Four runs: rows 1-2 lie back to back, row 4 does not follow row 3.
        let t: TableBytes = borsh::from_slice(&bytes).unwrap();
        assert_eq!(t.runs.len(), 4);
        assert_eq!(t.packs.len(), 2);
        let mut cut = bytes.clone();
        cut.pop();
        assert!(decode(&cut, &own).is_err());
        let empty = borsh::to_vec(&TableBytes {
            packs: vec![],
            runs: vec![],
        })
        .unwrap();
        assert!(decode(&empty, &own).is_err());
    }

    #[test]
    fn reuse_keeps_what_is_there_and_bounds_the_packs() {
        let before = [row(1, 1, 0), row(2, 1, 10), row(3, 2, 0), row(4, 3, 0)];
        let at = reuse(&[[1; 16], [2; 16], [7; 16], [4; 16]], &before);
        assert_eq!(
            at,
            vec![Some(before[0]), Some(before[1]), None, Some(before[3])]
        );
        // Five packs with the new one: of the packs of fewest rows (2, 3 and 4 hold
        // one each) the lowest name's row is sent again.
        let before = [
            row(1, 1, 0),
            row(2, 1, 10),
            row(3, 2, 0),
            row(4, 3, 0),
            row(5, 4, 0),
        ];
        let at = reuse(
            &[[1; 16], [2; 16], [3; 16], [4; 16], [5; 16], [6; 16]],
            &before,
        );
        assert_eq!(at.iter().flatten().count(), 4, "{at:?}");
        assert!(at[2].is_none() && at[5].is_none());
        assert_eq!(
            packs(&at.iter().flatten().copied().collect::<Vec<_>>()).len(),
            3
        );
    }
}
