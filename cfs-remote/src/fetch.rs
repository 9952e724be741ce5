//! Fetching spans of packs (group segments, row tables, rows): grouped by pack and read
//! with neighbours coalesced, so that many small pieces cost few requests.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::format::{ObjectName, object_path};
use crate::remote::Remote;

/// Two segments at most this far apart in a pack are read by one request.
const GAP: u64 = 16 << 10;
/// No request reads more than this.
const MAX_READ: u64 = 16 << 20;

/// What fetching cost, and whom to tell as it goes.
#[derive(Default)]
pub(crate) struct Fetched<'p> {
    pub bytes: u64,
    pub requests: u64,
    /// Told after each read: what is being fetched, bytes done and in all of this fetch.
    pub progress: Option<&'p dyn Fn(&Progress)>,
    /// What the next fetch reads, for `progress`.
    pub stage: &'static str,
}

/// Bytes of a pack: what one fetch reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub pack: ObjectName,
    pub offset: u64,
    pub length: u64,
}

/// How far a pull is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// What it is fetching (`groups`, `rows`, `vectors`) or doing (`writing`).
    pub stage: &'static str,
    /// Bytes of this stage read so far.
    pub done: u64,
    /// Bytes of this stage in all.
    pub total: u64,
}

impl Fetched<'_> {
    fn tell(&self, done: u64, total: u64) {
        if let Some(progress) = self.progress {
            progress(&Progress {
                stage: self.stage,
                done,
                total,
            });
        }
    }
}

/// The bytes of each span, in the spans' order.
pub(crate) fn spans(
    remote: &dyn Remote,
    entries: &[Span],
    fetched: &mut Fetched<'_>,
) -> Result<Vec<Vec<u8>>> {
    let mut by_pack: BTreeMap<ObjectName, Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        by_pack.entry(e.pack).or_default().push(i);
    }
    let mut out = vec![Vec::new(); entries.len()];
    let total = entries
        .iter()
        .fold(0u64, |sum, e| sum.saturating_add(e.length));
    let mut done = 0u64;
    fetched.tell(0, total);
    for (pack, mut members) in by_pack {
        members.sort_by_key(|&i| entries[i].offset);
        for run in runs(entries, &members) {
            let (first, last) = (&entries[run[0]], &entries[*run.last().expect("a run")]);
            let start = first.offset;
            let end = last.offset.saturating_add(last.length);
            let name = object_path(&pack);
            let bytes = remote.get_range(&name, start, end - start)?;
            if bytes.len() as u64 != end - start {
                return Err(crate::remote::short(
                    &remote.describe(),
                    &name,
                    bytes.len() as u64,
                    end,
                ));
            }
            fetched.bytes += bytes.len() as u64;
            fetched.requests += 1;
            for &i in run {
                let at = (entries[i].offset - start) as usize;
                out[i] = bytes[at..at + entries[i].length as usize].to_vec();
                done = done.saturating_add(entries[i].length);
            }
            fetched.tell(done, total);
        }
    }
    Ok(out)
}

/// `members` (sorted by offset) cut into runs that one read each covers.
fn runs<'m>(entries: &[Span], members: &'m [usize]) -> Vec<&'m [usize]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=members.len() {
        let split = i == members.len() || {
            let (prev, next) = (&entries[members[i - 1]], &entries[members[i]]);
            let prev_end = prev.offset.saturating_add(prev.length);
            let run_start = entries[members[start]].offset;
            next.offset > prev_end.saturating_add(GAP)
                || next.offset < prev_end
                || next.offset.saturating_add(next.length) - run_start > MAX_READ
        };
        if split {
            out.push(&members[start..i]);
            start = i;
        }
    }
    out
}
