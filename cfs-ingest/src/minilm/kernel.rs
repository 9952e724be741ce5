//! The integer matrix product every layer of minilm-int runs on: `i16 x i16 -> i32`,
//! exact. The portable scalar loop is the reference; the AVX2 and AVX-VNNI paths
//! (x86-64, detected at run time) must give the same bits, and a test holds it to that on random inputs.
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

    /// Rows of `w` a pass keeps hot in cache while every row pair of `x` meets them.
    const W_BLOCK: usize = 16;

    /// Two rows of `x` against four rows of `w` at a time (eight accumulators of eight
    /// lanes), `w` in blocks of [`W_BLOCK`] rows, the edges through the scalar dot.
    /// With AVX-VNNI the multiply and the add are one instruction.
    #[target_feature(enable = "avx2")]
    pub(super) fn matmul_avx2(x: &[i16], w: &[i16], k: usize, out: &mut [i32]) {
        let vnni = std::is_x86_feature_detected!("avxvnni");
        let n = w.len() / k;
        let t_len = x.len() / k;
        let (t_main, j_main) = (t_len - t_len % 2, n - n % 4);
        for j0 in (0..j_main).step_by(W_BLOCK) {
            let j_end = (j0 + W_BLOCK).min(j_main);
            for t in (0..t_main).step_by(2) {
                for j in (j0..j_end).step_by(4) {
                    let [r0, r1] = if vnni {
                        // SAFETY: AVX-VNNI was detected at run time just above.
                        unsafe { block_2x4_vnni(x, t, w, j, k) }
                    } else {
                        block_2x4(x, t, w, j, k)
                    };
                    out[t * n + j..t * n + j + 4].copy_from_slice(&r0);
                    out[(t + 1) * n + j..(t + 1) * n + j + 4].copy_from_slice(&r1);
                }
            }
        }
        for t in 0..t_main {
            let row = &x[t * k..(t + 1) * k];
            for j in j_main..n {
                out[t * n + j] = super::dot(row, &w[j * k..(j + 1) * k]);
            }
        }
        for t in t_main..t_len {
            let row = &x[t * k..(t + 1) * k];
            for (j, col) in w.chunks_exact(k).enumerate() {
                out[t * n + j] = super::dot(row, col);
            }
        }
    }

    /// 16 values of `s` from `i`; the caller guarantees `i + 16 <= s.len()`.
    #[inline(always)]
    fn load(s: &[i16], i: usize) -> __m256i {
        debug_assert!(i + 16 <= s.len());
        // SAFETY: `i + 16 <= s.len()` (the block asserts on entry that its rows end
        // inside the slices, and reads them in steps of 16 up to `k`), so
        // the 32 bytes read are inside `s`; unaligned loads are allowed, and the callers
        // run with AVX2 enabled.
        unsafe { _mm256_loadu_si256(s.as_ptr().add(i).cast()) }
    }

    /// Rows `t`, `t + 1` of `x` against rows `j .. j + 4` of `w`.
    macro_rules! block_2x4 {
        ($name:ident, $feature:literal, $madd:expr) => {
            #[target_feature(enable = $feature)]
            fn $name(x: &[i16], t: usize, w: &[i16], j: usize, k: usize) -> [[i32; 4]; 2] {
                assert!((t + 2) * k <= x.len() && (j + 4) * k <= w.len() && k % 16 == 0);
                let (xo, wo) = (t * k, j * k);
                let mut acc = [[_mm256_setzero_si256(); 4]; 2];
                for i in (0..k).step_by(16) {
                    let a = [load(x, xo + i), load(x, xo + k + i)];
                    for q in 0..4 {
                        let b = load(w, wo + q * k + i);
                        for r in 0..2 {
                            acc[r][q] = $madd(acc[r][q], a[r], b);
                        }
                    }
                }
                [reduce4(acc[0]), reduce4(acc[1])]
            }
        };
    }

    block_2x4!(block_2x4, "avx2", |c, a, b| _mm256_add_epi32(
        c,
        _mm256_madd_epi16(a, b)
    ));
    block_2x4!(block_2x4_vnni, "avx2,avxvnni", |c, a, b| {
        _mm256_dpwssd_avx_epi32(c, a, b)
    });

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
