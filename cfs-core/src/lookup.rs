//! Finding keys in large sorted slices in about two memory accesses.
//!
//! Ids and hashes are uniformly distributed, so the run of keys sharing their first 16
//! bits is a handful of entries even at millions of keys. A table of where each run
//! starts turns a lookup into one table read and a binary search of a few entries,
//! instead of twenty probes spread over the whole slice (each a cache miss once the
//! slice outgrows the cache). Any key distribution stays correct: a long run only makes
//! its binary search longer.

/// Where each 16-bit key prefix starts in a slice sorted by key, with the first 16 bytes
/// of every key kept beside it (so a lookup compares integers in one small array instead
/// of following the slice's items).
#[derive(Clone, Debug)]
pub struct PrefixIndex {
    /// `starts[p]..starts[p + 1]` holds the keys whose prefix is `p`.
    starts: Vec<u32>,
    /// The first 16 bytes of each key, big-endian, zero-padded: in key order.
    heads: Vec<u128>,
}

fn prefix(key: &[u8]) -> usize {
    let hi = key.first().copied().unwrap_or(0);
    let lo = key.get(1).copied().unwrap_or(0);
    usize::from(u16::from_be_bytes([hi, lo]))
}

fn head(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(bytes)
}

impl PrefixIndex {
    /// The index of `sorted`, whose keys (`key`) must be in ascending byte order.
    ///
    /// # Panics
    /// If the slice has more than `u32::MAX` entries.
    pub fn new<T>(sorted: &[T], key: impl Fn(&T) -> &[u8]) -> Self {
        assert!(
            u32::try_from(sorted.len()).is_ok(),
            "too many keys to index"
        );
        let mut starts = vec![0u32; (1 << 16) + 1];
        let mut heads = Vec::with_capacity(sorted.len());
        for item in sorted {
            let k = key(item);
            starts[prefix(k) + 1] += 1;
            heads.push(head(k));
        }
        for p in 1..starts.len() {
            starts[p] += starts[p - 1];
        }
        Self { starts, heads }
    }

    /// The position of `wanted` in `sorted` (the slice the index was built from).
    pub fn find<T>(&self, sorted: &[T], key: impl Fn(&T) -> &[u8], wanted: &[u8]) -> Option<usize> {
        let p = prefix(wanted);
        let (from, to) = (self.starts[p] as usize, self.starts[p + 1] as usize);
        let h = head(wanted);
        let run = self.heads.get(from..to)?;
        // Keys whose heads are equal differ after 16 bytes (or in length): compare them
        // whole, in order.
        let mut at = from + run.partition_point(|x| *x < h);
        while self.heads.get(at) == Some(&h) {
            if key(sorted.get(at)?) == wanted {
                return Some(at);
            }
            at += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_key_and_nothing_else() {
        let mut keys: Vec<[u8; 4]> = (0u32..20_000)
            .map(|i| {
                let h = blake3::hash(&i.to_le_bytes());
                [
                    h.as_bytes()[0],
                    h.as_bytes()[1],
                    h.as_bytes()[2],
                    h.as_bytes()[3],
                ]
            })
            .collect();
        // Skewed keys too: many sharing one prefix, and keys shorter than a prefix.
        keys.extend((0u8..=255).map(|b| [7, 7, b, 0]));
        keys.sort_unstable();
        keys.dedup();
        let index = PrefixIndex::new(&keys, |k| &k[..]);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(index.find(&keys, |k| &k[..], k), Some(i));
        }
        for probe in [[0u8; 4], [255; 4], [7, 7, 255, 1], [1, 2, 3, 4]] {
            assert_eq!(
                index.find(&keys, |k| &k[..], &probe),
                keys.binary_search(&probe).ok()
            );
        }
        let short: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![1]];
        let index = PrefixIndex::new(&short, |k| k.as_slice());
        for (i, k) in short.iter().enumerate() {
            assert_eq!(index.find(&short, |k| k.as_slice(), k), Some(i));
        }
        // Keys equal in their first 16 bytes.
        let long: Vec<Vec<u8>> = (0u8..5)
            .map(|b| [[9u8; 16].as_slice(), &[b]].concat())
            .chain([vec![9u8; 16]])
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let index = PrefixIndex::new(&long, |k| k.as_slice());
        for (i, k) in long.iter().enumerate() {
            assert_eq!(index.find(&long, |k| k.as_slice(), k), Some(i));
        }
        assert_eq!(
            index.find(
                &long,
                |k| k.as_slice(),
                &[[9u8; 16].as_slice(), &[7]].concat()
            ),
            None
        );
        let empty: Vec<[u8; 4]> = Vec::new();
        let index = PrefixIndex::new(&empty, |k| &k[..]);
        assert_eq!(index.find(&empty, |k| &k[..], &[1, 2, 3, 4]), None);
    }
}
