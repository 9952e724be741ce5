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
        refuse_overlaps(remote, &pack, entries, &members)?;
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

/// Refuses spans of one pack (`members`, sorted by offset) that share bytes: the
/// remote's tables name each row's bytes once, and a table naming the same bytes again
/// and again would make a pull hold copies of them without bound before any row is
/// checked.
fn refuse_overlaps(
    remote: &dyn Remote,
    pack: &ObjectName,
    entries: &[Span],
    members: &[usize],
) -> Result<()> {
    for pair in members.windows(2) {
        let (prev, next) = (&entries[pair[0]], &entries[pair[1]]);
        if next.offset < prev.offset.saturating_add(prev.length) {
            return Err(crate::RemoteError::Damaged {
                remote: remote.describe(),
                name: object_path(pack),
                reason: format!(
                    "two rows its tables name share bytes (from {} and from {})",
                    prev.offset, next.offset
                ),
            });
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folder::FolderRemote;

    /// Spans of one pack that share a byte are refused before anything is read; spans
    /// that only touch, or share bytes in two different packs, are not.
    #[test]
    fn spans_that_share_bytes_are_refused() {
        let remote = FolderRemote::new("/nonexistent/remote");
        let span = |pack: u8, offset, length| Span {
            pack: [pack; 32],
            offset,
            length,
        };
        let check = |entries: &[Span]| {
            let mut members: Vec<usize> = (0..entries.len()).collect();
            members.sort_by_key(|&i| entries[i].offset);
            refuse_overlaps(&remote, &entries[0].pack, entries, &members)
        };
        assert!(check(&[span(1, 0, 10), span(1, 10, 5), span(1, 20, 1)]).is_ok());
        for overlapping in [
            [span(1, 0, 10), span(1, 9, 5)],
            [span(1, 4, 4), span(1, 4, 4)],
            [span(1, 100, 1), span(1, 0, u64::MAX)],
        ] {
            let refused = check(&overlapping).unwrap_err().to_string();
            assert!(refused.contains("share bytes"), "{refused}");
        }
        // Entries of another pack never meet: `spans` checks each pack's own.
        let mut fetched = Fetched::default();
        let both = [span(1, 0, 10), span(2, 0, 10), span(1, 5, 1)];
        let refused = spans(&remote, &both, &mut fetched).unwrap_err().to_string();
        assert!(refused.contains("share bytes"), "{refused}");
    }
}
