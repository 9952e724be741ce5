//! The integer matrix product every layer of minilm-int runs on: `i16` activations times
//! `i8` weights (or activations the spec saturated to 8 bits) into `i32`, exact. The
//! weights are laid out once, when the model loads, in [`Panels`]: the layout the SIMD
//! kernel reads without shuffling. The portable loop (a dot product per output, which
//! the compiler vectorises for the target's baseline) is the reference; the AVX2 and
//! AVX-VNNI paths (x86-64, detected at run time) and the NEON path (64-bit ARM) must give
//! the same bits, and tests hold them to that on random and extreme inputs
//! (`scripts/test-arm` runs the NEON ones under qemu).
//!
//! Exactness is the caller's bound: every sum must fit in `i32` (`docs/spec.md` shows
//! that the model's shapes and value ranges keep them there), and then the order of
//! additions cannot change the result.

#![expect(unsafe_code)]

use cfs_core::cpu::{Features, features};

/// Output columns in one panel: one 256-bit register of `i32` sums.
pub const PANEL: usize = 8;
/// The longest row a panel may have (the kernel widens two panels on the stack).
pub const MAX_K: usize = 512;

/// Which code computes the products and the rest of the layer. Every path gives the
/// same bits. [`Simd::Auto`] follows the process's decision (`cfs_core::cpu`, which
/// `CFS_SIMD` narrows); the others force a path for tests and benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simd {
    /// The best path `cfs_core::cpu::features` allows.
    Auto,
    /// The portable loops, which the compiler vectorises for the target's baseline
    /// (SSE2 on x86-64, NEON on ARM): the reference the other paths are held to, and
    /// the path of a CPU without AVX2 and of `CFS_SIMD=portable`.
    Portable,
    /// AVX2: `vpmaddwd` and `vpaddd`.
    Avx2,
    /// AVX-VNNI: the multiply and the add as one `vpdpwssd`.
    AvxVnni,
    /// NEON (64-bit ARM): `smlal` by a broadcast activation.
    Neon,
}

impl Simd {
    /// The path that runs: [`Simd::Auto`] resolved to the best the process allows; a
    /// forced path the CPU lacks is an error, never a silent fallback.
    pub fn resolve(self) -> Result<Self, String> {
        let (allowed, cpu) = (features(), Features::detected());
        match self {
            Self::Auto if allowed.neon => Ok(Self::Neon),
            Self::Auto if allowed.avx_vnni => Ok(Self::AvxVnni),
            Self::Auto if allowed.avx2 => Ok(Self::Avx2),
            Self::Auto => Ok(Self::Portable),
            Self::Avx2 if !cpu.avx2 => Err("this CPU has no AVX2".into()),
            Self::AvxVnni if !cpu.avx_vnni => Err("this CPU has no AVX-VNNI".into()),
            Self::Neon if !cpu.neon => Err("this CPU has no NEON".into()),
            forced => Ok(forced),
        }
    }

    /// Whether the layer loops run compiled for AVX-512 (the process allows it and no
    /// path was forced).
    pub fn wide_loops(self) -> bool {
        self == Self::Auto && features().avx512
    }

    /// The path's name: the kernel's (`portable`, `avx2`, `avx-vnni`, `neon`), with `+avx512`
    /// where the layer loops are compiled for AVX-512.
    pub fn name(self) -> &'static str {
        match (self.resolve(), self.wide_loops()) {
            (Ok(Self::Avx2), false) => "avx2",
            (Ok(Self::Avx2), true) => "avx2+avx512",
            (Ok(Self::AvxVnni), false) => "avx-vnni",
            (Ok(Self::AvxVnni), true) => "avx-vnni+avx512",
            (Ok(Self::Neon), _) => "neon",
            _ => "portable",
        }
    }
}

/// A matrix of `n` output columns by `k` inputs, laid out for the kernel: for every
/// group of [`PANEL`] columns (the last one padded with zero columns), for every pair
/// of inputs `(2p, 2p + 1)` in order, the pair of each column of the group in turn.
/// One 16-value load then holds what one `vpmaddwd` multiplies by a broadcast pair of
/// an activation row.
#[derive(Clone, Debug, Default)]
pub struct Panels {
    data: Vec<i8>,
    n: usize,
    k: usize,
}

impl Panels {
    /// Weights given as `n` rows of `k` (one row per output column).
    pub fn from_rows(rows: &[i8], k: usize) -> Self {
        assert!(k > 0 && rows.len().is_multiple_of(k));
        let mut p = Self::default();
        p.fill(rows.len() / k, k, |j, i| rows[j * k + i]);
        p
    }

    /// Lays out `n` columns of `k` inputs with `value(j, i)` the input `i` of column
    /// `j`, reusing this matrix's memory.
    pub fn fill(&mut self, n: usize, k: usize, value: impl Fn(usize, usize) -> i8) {
        assert!(
            n > 0 && k > 0 && k <= MAX_K && k.is_multiple_of(2),
            "n = {n}, k = {k}"
        );
        let groups = n.div_ceil(PANEL);
        self.data.clear();
        self.data.reserve(groups * PANEL * k);
        for g in 0..groups {
            for p in 0..k / 2 {
                for c in 0..PANEL {
                    let j = g * PANEL + c;
                    let pair = if j < n {
                        [value(j, 2 * p), value(j, 2 * p + 1)]
                    } else {
                        [0, 0]
                    };
                    self.data.extend_from_slice(&pair);
                }
            }
        }
        (self.n, self.k) = (n, k);
    }

    /// Output columns.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Output columns with the padding of the last panel: the row stride a product
    /// needs at least.
    pub fn n_padded(&self) -> usize {
        self.n.next_multiple_of(PANEL)
    }

    /// Inputs per column.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Input `i` of column `j` (zero in the padding).
    pub fn at(&self, j: usize, i: usize) -> i8 {
        let (g, c) = (j / PANEL, j % PANEL);
        self.data[g * PANEL * self.k + (i / 2) * 2 * PANEL + c * 2 + i % 2]
    }
}

/// Where the activations of a product are and where its sums go: row `t` of `x` is
/// `x[t * x_stride..][..w.k()]`, its sums `out[t * out_stride..][..w.n_padded()]`.
#[derive(Clone, Copy, Debug)]
pub struct Rows {
    /// Rows of activations.
    pub count: usize,
    /// Distance between consecutive rows of `x`.
    pub x_stride: usize,
    /// Distance between consecutive rows of `out`.
    pub out_stride: usize,
}

/// `out[t * out_stride + j] = sum_i x[t * x_stride + i] * w(j, i)` for every row `t`
/// and every column `j` of `w` including the padding (whose sums are zero).
pub fn matmul(x: &[i16], w: &Panels, rows: Rows, out: &mut [i32], simd: Simd) {
    check(x, w, rows, out);
    #[cfg(target_arch = "x86_64")]
    if let Ok(path @ (Simd::Avx2 | Simd::AvxVnni)) = simd.resolve() {
        // SAFETY: the CPU has AVX2, and AVX-VNNI where that path was chosen (`resolve`
        // refuses a path the CPU lacks), and `check` proved that every row read and
        // written lies inside `x` and `out`.
        unsafe { x86::matmul(x, w, rows, out, path == Simd::AvxVnni) };
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if simd.resolve() == Ok(Simd::Neon) {
        neon::matmul(x, w, rows, out);
        return;
    }
    matmul_scalar(x, w, rows, out);
}

fn check(x: &[i16], w: &Panels, rows: Rows, out: &mut [i32]) {
    assert!(rows.count > 0, "no rows");
    assert!(rows.x_stride >= w.k && rows.out_stride >= w.n_padded());
    assert!(
        (rows.count - 1) * rows.x_stride + w.k <= x.len(),
        "x too short"
    );
    assert!(
        (rows.count - 1) * rows.out_stride + w.n_padded() <= out.len(),
        "out too short"
    );
}

/// The reference: one dot product per output, in index order, each column read out of
/// its panel once (reading every weight through `at` for every row made the portable
/// path eight times slower). [`matmul`] checked the arguments.
fn matmul_scalar(x: &[i16], w: &Panels, rows: Rows, out: &mut [i32]) {
    for j in 0..w.n_padded() {
        let col: Vec<i16> = (0..w.k).map(|i| i16::from(w.at(j, i))).collect();
        for t in 0..rows.count {
            out[t * rows.out_stride + j] = dot(&x[t * rows.x_stride..][..w.k], &col);
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
    use super::{MAX_K, PANEL, Panels, Rows};
    use std::arch::x86_64::*;

    /// Rows of `x` one call of the micro-kernel takes.
    const MR: usize = 4;

    /// Two panels at a time (16 columns): each pair widened once to `i16` on the stack,
    /// then met by every row of `x`, four rows per call of the micro-kernel (eight
    /// accumulators, two panel registers and one broadcast: 11 of the 16 registers).
    ///
    /// # Safety
    /// The CPU has AVX2, and AVX-VNNI if `vnni`; `super::check` holds for the arguments.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn matmul(x: &[i16], w: &Panels, rows: Rows, out: &mut [i32], vnni: bool) {
        let groups = w.n_padded() / PANEL;
        let mut wide = [0i16; 2 * PANEL * MAX_K];
        for g in (0..groups).step_by(2) {
            let nr = (groups - g).min(2);
            let len = nr * PANEL * w.k;
            for (d, &s) in wide[..len]
                .iter_mut()
                .zip(&w.data[g * PANEL * w.k..][..len])
            {
                *d = i16::from(s);
            }
            let mut t = 0;
            while t < rows.count {
                let mr = (rows.count - t).min(MR);
                let xp = x[t * rows.x_stride..].as_ptr();
                let op = out[t * rows.out_stride + g * PANEL..].as_mut_ptr();
                // SAFETY: rows t .. t + mr of x hold k values at stride x_stride and
                // rows t .. t + mr of out hold nr panels at stride out_stride (`check`);
                // `wide` holds nr widened panels of k pairs; AVX-VNNI is used only
                // where it was detected.
                unsafe {
                    let p = Pointers {
                        x: xp,
                        w: wide.as_ptr(),
                        out: op,
                    };
                    let s = Strides {
                        k: w.k,
                        x: rows.x_stride,
                        out: rows.out_stride,
                    };
                    dispatch(vnni, mr, nr, p, s);
                }
                t += mr;
            }
        }
    }

    /// Where one call of the micro-kernel reads and writes.
    #[derive(Clone, Copy)]
    struct Pointers {
        x: *const i16,
        w: *const i16,
        out: *mut i32,
    }

    #[derive(Clone, Copy)]
    struct Strides {
        k: usize,
        x: usize,
        out: usize,
    }

    /// The micro-kernel for `mr` rows and `nr` panels.
    ///
    /// # Safety
    /// The CPU has AVX2 (and AVX-VNNI when `vnni`); `p` and `s` describe `mr` rows of
    /// activations, `nr` widened panels and `mr` x `8 nr` outputs that are all in bounds.
    #[target_feature(enable = "avx2")]
    unsafe fn dispatch(vnni: bool, mr: usize, nr: usize, p: Pointers, s: Strides) {
        // SAFETY: the micro-kernels need what this function's contract gives.
        macro_rules! go {
            ($($m:literal),*) => {
                match (mr, nr) {
                    $(
                        ($m, 2) if vnni => unsafe { micro_vnni::<$m, 2>(p, s) },
                        ($m, 1) if vnni => unsafe { micro_vnni::<$m, 1>(p, s) },
                        ($m, 2) => unsafe { micro::<$m, 2>(p, s) },
                        ($m, 1) => unsafe { micro::<$m, 1>(p, s) },
                    )*
                    _ => unreachable!("{mr} x {nr}"),
                }
            };
        }
        go!(1, 2, 3, 4)
    }

    /// `MR` rows of `x` against `NR` widened panels: for each input pair, the pair of
    /// each row broadcast to all eight lanes and multiplied by each panel's pairs.
    macro_rules! micro {
        ($name:ident, $feature:literal, $madd:expr) => {
            /// # Safety
            /// `p.x` holds `MR` rows of `s.k` values at stride `s.x`, `p.w` holds `NR`
            /// widened panels of `s.k` pairs, `p.out` holds `MR` rows of `NR * 8` sums at
            /// stride `s.out`; the CPU has the target's features.
            #[target_feature(enable = $feature)]
            #[inline]
            unsafe fn $name<const MR: usize, const NR: usize>(p: Pointers, s: Strides) {
                let mut acc = [[_mm256_setzero_si256(); NR]; MR];
                let panel = PANEL * s.k;
                for i in (0..s.k).step_by(2) {
                    let mut b = [_mm256_setzero_si256(); NR];
                    for (c, b) in b.iter_mut().enumerate() {
                        // SAFETY: panel c's pair i/2 is 16 values inside `p.w`.
                        *b = unsafe { _mm256_loadu_si256(p.w.add(c * panel + i * PANEL).cast()) };
                    }
                    for (r, acc) in acc.iter_mut().enumerate() {
                        // SAFETY: values i, i + 1 of row r are inside `p.x`.
                        let pair = unsafe { p.x.add(r * s.x + i).cast::<i32>().read_unaligned() };
                        let a = _mm256_set1_epi32(pair);
                        for (acc, &b) in acc.iter_mut().zip(&b) {
                            *acc = $madd(*acc, a, b);
                        }
                    }
                }
                for (r, acc) in acc.iter().enumerate() {
                    for (c, &v) in acc.iter().enumerate() {
                        // SAFETY: eight sums of row r, panel c, are inside `p.out`.
                        unsafe { _mm256_storeu_si256(p.out.add(r * s.out + c * PANEL).cast(), v) };
                    }
                }
            }
        };
    }

    micro!(micro, "avx2", |c, a, b| _mm256_add_epi32(
        c,
        _mm256_madd_epi16(a, b)
    ));
    micro!(micro_vnni, "avx2,avxvnni", |c, a, b| {
        _mm256_dpwssd_avx_epi32(c, a, b)
    });
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::{MAX_K, PANEL, Panels, Rows};
    use std::arch::aarch64::*;

    /// Rows of `x` one call of the micro-kernel takes.
    const MR: usize = 4;

    /// One panel at a time, widened once to `i16` on the stack with each pair's eight
    /// even inputs before its eight odd ones, then met by every row of `x`, four rows
    /// per call of the micro-kernel (eight accumulators of four lanes).
    pub(super) fn matmul(x: &[i16], w: &Panels, rows: Rows, out: &mut [i32]) {
        let k = w.k;
        let mut wide = [0i16; PANEL * MAX_K];
        for g in 0..w.n_padded() / PANEL {
            let panel = &w.data[g * PANEL * k..][..PANEL * k];
            for (p, pair) in panel.chunks_exact(2 * PANEL).enumerate() {
                for c in 0..PANEL {
                    wide[p * 2 * PANEL + c] = i16::from(pair[2 * c]);
                    wide[p * 2 * PANEL + PANEL + c] = i16::from(pair[2 * c + 1]);
                }
            }
            let mut t = 0;
            while t < rows.count {
                let mr = (rows.count - t).min(MR);
                let xs = &x[t * rows.x_stride..];
                let os = &mut out[t * rows.out_stride + g * PANEL..];
                let (xp, op, wp) = (xs.as_ptr(), os.as_mut_ptr(), wide.as_ptr());
                let s = (k, rows.x_stride, rows.out_stride);
                // SAFETY: rows t .. t + mr of x hold k values at stride x_stride and rows
                // t .. t + mr of out hold a panel's eight sums at stride out_stride
                // (`super::check`); `wide` holds k / 2 widened pairs; NEON is part of
                // every aarch64 target.
                unsafe {
                    match mr {
                        4 => micro::<4>(xp, wp, op, s),
                        3 => micro::<3>(xp, wp, op, s),
                        2 => micro::<2>(xp, wp, op, s),
                        _ => micro::<1>(xp, wp, op, s),
                    }
                }
                t += mr;
            }
        }
    }

    /// `MR` rows of `x` against one widened panel: for each input pair, the eight even
    /// weights times the row's first value and the eight odd ones times its second,
    /// accumulated exactly in `i32`.
    ///
    /// # Safety
    /// `x` holds `MR` rows of `k` values at stride `xs`, `w` holds `k / 2` widened pairs
    /// of sixteen values, `out` holds `MR` rows of eight sums at stride `os`.
    #[inline(always)]
    unsafe fn micro<const MR: usize>(
        x: *const i16,
        w: *const i16,
        out: *mut i32,
        (k, xs, os): (usize, usize, usize),
    ) {
        // SAFETY: every read and write below stays inside what the caller guarantees.
        unsafe {
            let mut acc = [[vdupq_n_s32(0); 2]; MR];
            for p in 0..k / 2 {
                let even = vld1q_s16(w.add(p * 2 * PANEL));
                let odd = vld1q_s16(w.add(p * 2 * PANEL + PANEL));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let (a, b) = (*x.add(r * xs + 2 * p), *x.add(r * xs + 2 * p + 1));
                    acc[0] = vmlal_n_s16(acc[0], vget_low_s16(even), a);
                    acc[0] = vmlal_n_s16(acc[0], vget_low_s16(odd), b);
                    acc[1] = vmlal_high_n_s16(acc[1], even, a);
                    acc[1] = vmlal_high_n_s16(acc[1], odd, b);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                vst1q_s32(out.add(r * os), acc[0]);
                vst1q_s32(out.add(r * os + 4), acc[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small seeded generator (splitmix64), so failures can be replayed.
    fn values(seed: u64, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                lo + (z % (hi - lo + 1) as u64) as i32
            })
            .collect()
    }

    fn both(x: &[i16], w: &Panels, rows: Rows) -> (Vec<i32>, Vec<i32>) {
        let len = (rows.count - 1) * rows.out_stride + w.n_padded();
        let (mut a, mut b) = (vec![7; len], vec![7; len]);
        matmul(x, w, rows, &mut a, Simd::Auto);
        matmul(x, w, rows, &mut b, Simd::Portable);
        for path in [Simd::Avx2, Simd::AvxVnni, Simd::Neon] {
            if path.resolve().is_ok() {
                let mut c = vec![7; len];
                matmul(x, w, rows, &mut c, path);
                assert_eq!(c, b, "{path:?}");
            }
        }
        (a, b)
    }

    #[test]
    fn simd_equals_scalar_bit_for_bit() {
        // Row counts around the micro-kernel's 4, column counts around the panel's 8
        // and the pair of panels, strides wider than the rows.
        for (seed, t, n, k, x_pad, out_pad) in [
            (1, 7, 13, 384, 0, 3),
            (2, 1, 1, 16, 0, 0),
            (3, 64, 384, 384, 0, 0),
            (4, 5, 6, 32, 352, 2),
            (5, 108, 1536, 384, 0, 0),
            (6, 3, 24, 512, 16, 0),
            (7, 9, 17, 2, 0, 0),
        ] {
            let x: Vec<i16> = values(seed, t * (k + x_pad), -32767, 32767)
                .into_iter()
                .map(|v| v as i16)
                .collect();
            let w: Vec<i8> = values(seed + 100, n * k, -128, 127)
                .into_iter()
                .map(|v| v as i8)
                .collect();
            let w = Panels::from_rows(&w, k);
            let rows = Rows {
                count: t,
                x_stride: k + x_pad,
                out_stride: w.n_padded() + out_pad,
            };
            let (a, b) = both(&x, &w, rows);
            assert_eq!(a, b, "seed {seed}");
            for tt in 0..t {
                let row = &b[tt * rows.out_stride..][..w.n_padded()];
                assert!(row[n..].iter().all(|&v| v == 0), "padding sums to zero");
            }
        }
    }

    #[test]
    fn extreme_values_stay_exact() {
        let k = 384;
        for (xv, wv) in [(32767i16, -128i8), (-32768, -128), (-32767, 127)] {
            let x = vec![xv; 5 * k];
            let w = Panels::from_rows(&vec![wv; 9 * k], k);
            let rows = Rows {
                count: 5,
                x_stride: k,
                out_stride: w.n_padded(),
            };
            let (a, b) = both(&x, &w, rows);
            assert_eq!(a, b);
            let want = i64::from(xv) * i64::from(wv) * k as i64;
            assert!(
                a.chunks(16)
                    .all(|r| r[..9].iter().all(|&v| i64::from(v) == want))
            );
        }
    }

    #[test]
    fn paths_are_named_and_a_missing_one_is_refused() {
        assert_eq!(Simd::Portable.resolve(), Ok(Simd::Portable));
        assert_eq!(Simd::Portable.name(), "portable");
        let cpu = Features::detected();
        assert_eq!(Simd::Avx2.resolve().is_ok(), cpu.avx2);
        assert_eq!(Simd::AvxVnni.resolve().is_ok(), cpu.avx_vnni);
        assert_eq!(Simd::Neon.resolve().is_ok(), cpu.neon);
        let auto = Simd::Auto.resolve().unwrap();
        assert!(Simd::Auto.name().starts_with(auto.name()));
        assert_eq!(auto == Simd::Portable, !features().avx2 && !features().neon);
    }

    #[test]
    fn panels_hold_what_they_were_given() {
        let rows: Vec<i8> = (0..5 * 6).map(|v| v as i8).collect();
        let p = Panels::from_rows(&rows, 6);
        assert_eq!((p.n(), p.n_padded(), p.k()), (5, 8, 6));
        for j in 0..8 {
            for i in 0..6 {
                let want = if j < 5 { rows[j * 6 + i] } else { 0 };
                assert_eq!(p.at(j, i), want, "({j}, {i})");
            }
        }
    }
}
