//! The integer matrix product every layer of minilm-int runs on: `i16 x i16 -> i32`,
//! exact. The portable scalar loop is the reference; the AVX2 path (x86-64, detected at
//! run time) must give the same bits, and a test holds it to that on random inputs.
//! Exactness is the caller's bound: every sum must fit in `i32` (`docs/spec.md` shows
//! that the model's shapes and value ranges keep them there), and then the order of
//! additions cannot change the result.

#![allow(unsafe_code)]

/// Rows of `w` and `x` are padded to a multiple of this many values.
pub const K_STEP: usize = 16;

/// Whether the SIMD path may be used (tests and the bench switch it off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simd {
    /// The best path the CPU has.
    Auto,
    /// The portable scalar loop only.
    Off,
}

/// `out[t * n + j] = sum_i x[t * k + i] * w[j * k + i]` for `t < x.len() / k`,
/// `j < n = w.len() / k`. `k` is a multiple of [`K_STEP`].
pub fn matmul(x: &[i16], w: &[i16], k: usize, out: &mut [i32], simd: Simd) {
    assert!(k > 0 && k.is_multiple_of(K_STEP), "k = {k}");
    assert!(x.len().is_multiple_of(k) && w.len().is_multiple_of(k));
    assert_eq!(out.len(), (x.len() / k) * (w.len() / k));
    #[cfg(target_arch = "x86_64")]
    if simd == Simd::Auto && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked on the line above), and `matmul_avx2` reads
        // only inside the slices whose lengths were checked above.
        unsafe { x86::matmul_avx2(x, w, k, out) };
        return;
    }
    matmul_scalar(x, w, k, out);
}

/// The reference: one dot product per output, in index order.
pub fn matmul_scalar(x: &[i16], w: &[i16], k: usize, out: &mut [i32]) {
    let n = w.len() / k;
    for (t, row) in x.chunks_exact(k).enumerate() {
        for (j, col) in w.chunks_exact(k).enumerate() {
            out[t * n + j] = dot(row, col);
        }
    }
}

fn dot(a: &[i16], b: &[i16]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&p, &q)| i32::from(p) * i32::from(q))
        .sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Two rows of `x` against four rows of `w` at a time (eight accumulators of eight
    /// lanes), the edges through the scalar dot.
    #[target_feature(enable = "avx2")]
    pub(super) fn matmul_avx2(x: &[i16], w: &[i16], k: usize, out: &mut [i32]) {
        let n = w.len() / k;
        let t_len = x.len() / k;
        let (t_main, j_main) = (t_len - t_len % 2, n - n % 4);
        for t in (0..t_main).step_by(2) {
            let (x0, x1) = (&x[t * k..(t + 1) * k], &x[(t + 1) * k..(t + 2) * k]);
            for j in (0..j_main).step_by(4) {
                let ws = [0, 1, 2, 3].map(|q| &w[(j + q) * k..(j + q + 1) * k]);
                let [r0, r1] = block_2x4(x0, x1, ws, k);
                out[t * n + j..t * n + j + 4].copy_from_slice(&r0);
                out[(t + 1) * n + j..(t + 1) * n + j + 4].copy_from_slice(&r1);
            }
            for j in j_main..n {
                let col = &w[j * k..(j + 1) * k];
                out[t * n + j] = super::dot(x0, col);
                out[(t + 1) * n + j] = super::dot(x1, col);
            }
        }
        for t in t_main..t_len {
            let row = &x[t * k..(t + 1) * k];
            for (j, col) in w.chunks_exact(k).enumerate() {
                out[t * n + j] = super::dot(row, col);
            }
        }
    }

    #[target_feature(enable = "avx2")]
    fn block_2x4(x0: &[i16], x1: &[i16], w: [&[i16]; 4], k: usize) -> [[i32; 4]; 2] {
        let mut acc = [[_mm256_setzero_si256(); 4]; 2];
        let load = |s: &[i16], i: usize| {
            let v: &[i16; 16] = s[i..i + 16].try_into().expect("16 values");
            // SAFETY: `v` is 16 readable i16 (32 bytes); unaligned loads are allowed.
            unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
        };
        for i in (0..k).step_by(16) {
            let a = [load(x0, i), load(x1, i)];
            for q in 0..4 {
                let b = load(w[q], i);
                for r in 0..2 {
                    acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(a[r], b));
                }
            }
        }
        [reduce4(acc[0]), reduce4(acc[1])]
    }

    /// The four lane sums of four accumulators.
    #[target_feature(enable = "avx2")]
    fn reduce4(a: [__m256i; 4]) -> [i32; 4] {
        let h01 = _mm256_hadd_epi32(a[0], a[1]);
        let h23 = _mm256_hadd_epi32(a[2], a[3]);
        let h = _mm256_hadd_epi32(h01, h23);
        let sum = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
        let mut out = [0i32; 4];
        // SAFETY: `out` is 16 writable bytes; unaligned stores are allowed.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), sum) };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small seeded generator (splitmix64), so failures can be replayed.
    fn values(seed: u64, n: usize, lo: i32, hi: i32) -> Vec<i16> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                (lo + (z % (hi - lo + 1) as u64) as i32) as i16
            })
            .collect()
    }

    #[test]
    fn simd_equals_scalar_bit_for_bit() {
        for (seed, t, n, k) in [
            (1, 7, 13, 384),
            (2, 1, 1, 16),
            (3, 64, 384, 384),
            (4, 5, 6, 32),
        ] {
            let x = values(seed, t * k, -32767, 32767);
            let w = values(seed + 100, n * k, -127, 127);
            let mut a = vec![0; t * n];
            let mut b = vec![1; t * n];
            matmul(&x, &w, k, &mut a, Simd::Auto);
            matmul(&x, &w, k, &mut b, Simd::Off);
            assert_eq!(a, b, "seed {seed}");
        }
    }

    #[test]
    fn extreme_values_stay_exact() {
        let k = 384;
        let x = vec![32767i16; 3 * k];
        let w = vec![-127i16; 5 * k];
        let mut out = vec![0; 15];
        matmul(&x, &w, k, &mut out, Simd::Auto);
        assert!(out.iter().all(|&v| i64::from(v) == -32767 * 127 * k as i64));
    }
}
