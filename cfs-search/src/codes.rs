//! Sign codes: one bit per vector component, and the scan that picks a segment's
//! candidates for exact scoring by Hamming distance to the query's code.
//!
//! The scan is two passes over the segment. The first computes every distance (a u16
//! each) and counts the codes at each distance; the second takes whole distance levels,
//! nearest first, until enough candidates pass the caller's check. A level is taken in
//! local-index order, so the candidates are the first of (distance, index) order that
//! pass, whatever the thread count.

// The population-count kernels are selected at run time (`target_feature`).
#![expect(unsafe_code)]

use rayon::prelude::*;

/// Codes per parallel task of the distance pass.
const BLOCK: usize = 16_384;

/// u64 words of the sign code of a vector of `dim` components.
pub(crate) fn code_words(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// The sign code of `v`: bit `j % 64` of word `j / 64` set when `v[j] > 0`.
pub(crate) fn sign_code(v: &[i16]) -> Vec<u64> {
    let mut code = vec![0u64; code_words(v.len())];
    for (j, &x) in v.iter().enumerate() {
        code[j / 64] |= u64::from(x > 0) << (j % 64);
    }
    code
}

/// The local indexes of the `c` codes of `codes` (`query.len()` words each) nearest
/// `query` in Hamming distance among those `keep` passes, in (distance, index) order;
/// fewer when fewer pass.
pub(crate) fn nearest(
    codes: &[u64],
    query: &[u64],
    c: usize,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> Vec<usize> {
    let words = query.len();
    if words == 0 || c == 0 || words * 64 > usize::from(u16::MAX) {
        return Vec::new();
    }
    let (dist, hist) = distances(codes, query);
    take_levels(&dist, &hist, c, keep)
}

/// Every code's distance to `query`, and how many codes are at each distance.
fn distances(codes: &[u64], query: &[u64]) -> (Vec<u16>, Vec<u32>) {
    let words = query.len();
    let levels = words * 64 + 1;
    let mut dist = vec![0u16; codes.len() / words];
    let count = |mut h: Vec<u32>, out: &[u16]| {
        for &d in out {
            h[usize::from(d)] += 1;
        }
        h
    };
    let hist = dist
        .par_chunks_mut(BLOCK)
        .enumerate()
        .map(|(b, out)| {
            let start = b * BLOCK * words;
            hamming_into(&codes[start..start + out.len() * words], query, out);
            count(vec![0; levels], out)
        })
        .reduce(
            || vec![0; levels],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    (dist, hist)
}

/// The first `c` indexes of (distance, index) order that `keep` passes: distance levels
/// are taken whole, nearest first, enough of them for the candidates still wanted (and
/// at least as many as were tried before, so a check that fails often costs a few
/// rounds, not one per level).
fn take_levels(
    dist: &[u16],
    hist: &[u32],
    c: usize,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> Vec<usize> {
    let mut out = Vec::with_capacity(c);
    let (mut lo, mut tried) = (0, 0);
    while out.len() < c && lo < hist.len() {
        let want = (c - out.len()).max(tried);
        let (mut hi, mut count) = (lo, hist[lo] as usize);
        while count < want && hi + 1 < hist.len() {
            hi += 1;
            count += hist[hi] as usize;
        }
        let mut found = within(dist, lo, hi);
        found.sort_unstable();
        tried += found.len();
        let need = c - out.len();
        out.extend(
            found
                .into_iter()
                .map(|(_, i)| i)
                .filter(|&i| keep(i))
                .take(need),
        );
        lo = hi + 1;
    }
    out
}

/// `(distance, index)` of every entry of `dist` in `lo..=hi`, in index order.
fn within(dist: &[u16], lo: usize, hi: usize) -> Vec<(u16, usize)> {
    // Levels are at most u16::MAX + 1; one unsigned compare tests the range.
    let (lo, span) = (lo as u16, (hi - lo) as u16);
    let block = |(b, ds): (usize, &[u16])| {
        let mut v = Vec::new();
        for (t, &d) in ds.iter().enumerate() {
            if d.wrapping_sub(lo) <= span {
                v.push((d, b * BLOCK + t));
            }
        }
        v
    };
    let parts: Vec<Vec<(u16, usize)>> = dist.par_chunks(BLOCK).enumerate().map(block).collect();
    parts.concat()
}

/// `out[t]` = the Hamming distance of code `t` of `codes` to `query`, for each entry of
/// `out` (`codes` holds `out.len()` codes of `query.len()` words). Uses the CPU's
/// `popcnt` where it has one (the portable count gives the same numbers; an AVX-512
/// count of eight codes at once was measured no faster: the loads bound the pass).
fn hamming_into(codes: &[u64], query: &[u64], out: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    if cfs_core::cpu::features().popcnt {
        // SAFETY: the CPU has `popcnt` (`features` allows only what it detected); the
        // function only reads and writes the slices it is given.
        unsafe { hamming_popcnt(codes, query, out) };
        return;
    }
    hamming_portable(codes, query, out);
}

#[inline(always)]
fn hamming_portable(codes: &[u64], query: &[u64], out: &mut [u16]) {
    for (o, c) in out.iter_mut().zip(codes.chunks_exact(query.len())) {
        let d: u32 = c.iter().zip(query).map(|(a, b)| (a ^ b).count_ones()).sum();
        // At most 64 x words, which `nearest` keeps within u16.
        *o = d as u16;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn hamming_popcnt(codes: &[u64], query: &[u64], out: &mut [u16]) {
    hamming_portable(codes, query, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// What `nearest` promises, by sorting every code.
    fn reference(
        codes: &[u64],
        query: &[u64],
        c: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<usize> {
        let mut all: Vec<(u32, usize)> = codes
            .chunks_exact(query.len())
            .enumerate()
            .map(|(i, w)| {
                (
                    w.iter().zip(query).map(|(a, b)| (a ^ b).count_ones()).sum(),
                    i,
                )
            })
            .collect();
        all.sort_unstable();
        all.into_iter()
            .map(|(_, i)| i)
            .filter(|&i| keep(i))
            .take(c)
            .collect()
    }

    #[test]
    fn the_popcnt_path_counts_as_the_portable_one() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let query: Vec<u64> = (0..6).map(|_| next()).collect();
        let codes: Vec<u64> = (0..6 * 300).map(|_| next()).collect();
        let (mut a, mut b) = (vec![0; 300], vec![0; 300]);
        hamming_into(&codes, &query, &mut a);
        hamming_portable(&codes, &query, &mut b);
        assert_eq!(a, b);
        assert!(a.iter().all(|&d| d <= 384) && a.iter().any(|&d| d > 0));
        let v: Vec<i16> = (0..130).map(|j| if j % 3 == 0 { 5 } else { -1 }).collect();
        let code = sign_code(&v);
        assert_eq!(code.len(), 3);
        assert_eq!(code[0] & 0b1001, 0b1001);
        assert_eq!(code[2], 0b10); // component 129 (129 % 3 == 0) only
    }

    /// Codes with few distinct bits (so many ties), over several blocks, against the
    /// sort of every code: with no check, a check most codes fail, and one none pass.
    #[test]
    fn nearest_is_the_first_of_distance_then_index_order_that_passes() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let words = 4;
        let n = 2 * BLOCK + 777;
        // Only the low 6 bits of each word vary: distances 0..=24, heavy ties.
        let codes: Vec<u64> = (0..n * words).map(|_| next() & 0x3f).collect();
        let query: Vec<u64> = (0..words).map(|_| next() & 0x3f).collect();
        let checks: [&(dyn Fn(usize) -> bool + Sync); 4] =
            [&|_| true, &|i| i % 97 == 3, &|i| i > n - 40, &|_| false];
        for keep in checks {
            for c in [1, 10, 500, 3_000, n + 5] {
                assert_eq!(
                    nearest(&codes, &query, c, keep),
                    reference(&codes, &query, c, keep),
                    "c = {c}"
                );
            }
        }
        assert!(nearest(&codes, &query, 0, &|_| true).is_empty());
        assert!(nearest(&[], &query, 10, &|_| true).is_empty());
    }
}
