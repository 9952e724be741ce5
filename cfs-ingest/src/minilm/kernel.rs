//! The integer matrix product every layer of minilm-int runs on: `i16` activations times
//! `i8` weights (or activations the spec saturated to 8 bits) into `i32`, exact. The
//! weights are laid out once, when the model loads, in [`Panels`]: the layout the
//! process's kernel reads without shuffling. The portable loop (a dot product per
//! output, which the compiler vectorises for the target's baseline) is the reference;
//! the AMX, AVX-512 VNNI, AVX2 and AVX-VNNI paths (x86-64, detected at run time) and the
//! NEON path (64-bit ARM) must give the same bits, and tests hold them to that on random
//! and extreme inputs (`scripts/test-arm` runs the NEON ones under qemu).
//!
//! Exactness is the caller's bound: every sum must fit in `i32` (`docs/spec.md` shows
//! that the model's shapes and value ranges keep them there), and then the order of
//! additions cannot change the result. The AMX path splits each `i16` activation into a
//! signed high byte and an unsigned low byte, `x = 256 hi + lo`, takes the two products
//! with the weights in `i32` (each partial sum is under 2^24 for `k` <= 512) and adds
//! `256 hi_sum + lo_sum` with wrap-around, which is exact when the true sum fits in `i32`.
//! [`matmul_blocks`] takes rows longer than that bound allows, as blocks of at most 511
//! inputs whose sums fit in `i32`, added in `i64`; the AMX path sums all blocks in its
//! tiles and combines the partial sums in `i64`.

#![expect(unsafe_code)]

use std::borrow::Cow;

use cfs_core::cpu::{Features, features};

/// Output columns in one panel of the pair layout: one 256-bit register of `i32` sums.
pub const PANEL: usize = 8;
/// The longest row a panel may have (the AVX2 kernel widens two panels on the stack).
pub const MAX_K: usize = 512;
/// Output columns in one block of the tile layout: the columns of one AMX tile.
const TILE_N: usize = 16;
/// Inputs in one step of the tile layout: the bytes of one AMX tile row.
const TILE_K: usize = 64;
/// The most blocks [`matmul_blocks`] takes.
pub const MAX_BLOCKS: usize = 8;

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
    /// AVX-512 VNNI: `vpdpwssd` on 512-bit registers, sixteen columns a register.
    Avx512Vnni,
    /// AMX: `tdpbssd` and `tdpbusd` on 16 x 64-byte tiles; the layer loops in AVX-512,
    /// and attention's small products (a head's 32 inputs or 32 columns) on AVX-512
    /// VNNI, which runs them faster than half-empty tiles do.
    Amx,
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
            Self::Auto if allowed.amx => Ok(Self::Amx),
            Self::Auto if allowed.avx512_vnni => Ok(Self::Avx512Vnni),
            Self::Auto if allowed.avx_vnni => Ok(Self::AvxVnni),
            Self::Auto if allowed.avx2 => Ok(Self::Avx2),
            Self::Auto => Ok(Self::Portable),
            Self::Avx2 if !cpu.avx2 => Err("this CPU has no AVX2".into()),
            Self::AvxVnni if !cpu.avx_vnni => Err("this CPU has no AVX-VNNI".into()),
            Self::Avx512Vnni if !cpu.avx512_vnni => Err("this CPU has no AVX-512 VNNI".into()),
            Self::Amx if !cpu.amx => Err("this CPU (or its OS) gives no AMX tiles".into()),
            Self::Neon if !cpu.neon => Err("this CPU has no NEON".into()),
            forced => Ok(forced),
        }
    }

    /// Whether the layer loops run compiled for AVX-512: on the AVX-512 VNNI and AMX
    /// paths, and on an AVX2 path the process chose on a CPU with AVX-512.
    pub fn wide_loops(self) -> bool {
        match self.resolve() {
            Ok(Self::Avx512Vnni | Self::Amx) => true,
            _ => self == Self::Auto && features().avx512,
        }
    }

    /// The path's name: the kernel's (`portable`, `avx2`, `avx-vnni`, `avx512-vnni`,
    /// `amx`, `neon`), with `+avx512` where an AVX2 kernel's layer loops are compiled for
    /// AVX-512.
    pub fn name(self) -> &'static str {
        match (self.resolve(), self.wide_loops()) {
            (Ok(Self::Avx2), false) => "avx2",
            (Ok(Self::Avx2), true) => "avx2+avx512",
            (Ok(Self::AvxVnni), false) => "avx-vnni",
            (Ok(Self::AvxVnni), true) => "avx-vnni+avx512",
            (Ok(Self::Avx512Vnni), _) => "avx512-vnni",
            (Ok(Self::Amx), _) => "amx",
            (Ok(Self::Neon), _) => "neon",
            _ => "portable",
        }
    }

    /// The weight layout the path's kernel reads.
    pub fn layout(self) -> Layout {
        match self.resolve() {
            Ok(Self::Amx) => Layout::Tiles,
            _ => Layout::Pairs,
        }
    }
}

/// How [`Panels`] order a matrix's values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// For every group of [`PANEL`] columns, for every pair of inputs `(2p, 2p + 1)`, the
    /// pair of each column of the group in turn: one 16-value load holds what one
    /// `vpmaddwd` multiplies by a broadcast pair of an activation row.
    #[default]
    Pairs,
    /// AMX's VNNI tiles: for every block of 16 columns, for every quad of inputs
    /// `4q .. 4q + 4`, the quad of each column in turn (64 bytes, one tile row); the
    /// inputs padded with zeros to a multiple of 64, so that each step of 64 inputs of a
    /// block is one 1 KiB tile.
    Tiles,
}

/// A matrix of `n` output columns by `k` inputs, laid out for a kernel ([`Layout`]); the
/// last group or block of columns is padded with zero columns.
#[derive(Clone, Debug, Default)]
pub struct Panels {
    /// The pair layout's values.
    data: Vec<i8>,
    /// The tile layout's values: one tile row per line, aligned as the tile loads want
    /// (a row across two cache lines halves their speed).
    lines: Vec<Line>,
    n: usize,
    k: usize,
    layout: Layout,
}

/// 64 bytes on a cache line of their own: a row of an AMX tile.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line([i8; TILE_K]);

/// Where [`Panels::fill`] reads a matrix of `n` columns by `k` inputs from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// Each column's inputs in a row of their own: input `i` of column `j` at
    /// `data[j * stride + i]` (weights, keys).
    Rows { data: &'a [i8], stride: usize },
    /// Each input's columns in a row of their own: input `i` of column `j` at
    /// `data[i * stride + j]` (values, read down a head's columns).
    Cols { data: &'a [i8], stride: usize },
}

impl Panels {
    /// Weights given as `n` rows of `k` (one row per output column).
    pub fn from_rows(rows: &[i8], k: usize, layout: Layout) -> Self {
        assert!(k > 0 && rows.len().is_multiple_of(k));
        let mut p = Self::default();
        let src = Source::Rows {
            data: rows,
            stride: k,
        };
        p.fill(rows.len() / k, k, layout, src);
        p
    }

    /// Lays out `n` columns of `k` inputs read from `src`, reusing this matrix's
    /// memory; an input past the end of `src` is zero.
    pub fn fill(&mut self, n: usize, k: usize, layout: Layout, src: Source<'_>) {
        self.reset(n, k, layout);
        match (layout, src) {
            (Layout::Pairs, Source::Rows { data, stride }) => {
                for j in 0..n {
                    let col = data.get(j * stride..).unwrap_or_default();
                    let col = &col[..col.len().min(k)];
                    // The column's pairs, one a row of its panel's pairs (fixed-size
                    // copies: a copy of a variable length is a call to memmove).
                    let at = pair_index(k, j, 0);
                    let mut column = self.data[at..].chunks_mut(2 * PANEL);
                    let mut pairs = col.chunks_exact(2);
                    for (pair, to) in pairs.by_ref().zip(column.by_ref()) {
                        to[..2].copy_from_slice(pair);
                    }
                    if let ([v], Some(to)) = (pairs.remainder(), column.next()) {
                        to[0] = *v;
                    }
                }
            }
            (Layout::Pairs, Source::Cols { data, stride }) => {
                assert!(stride >= n, "a row of {stride} for {n} columns");
                let rows = data.chunks(stride).take(k);
                for (i, row) in rows.map(|row| &row[..row.len().min(n)]).enumerate() {
                    // Input i of a panel's columns: every other value of its pair row.
                    for (g, block) in row.chunks(PANEL).enumerate() {
                        let at = pair_index(k, g * PANEL, i);
                        let to = &mut self.data[at..][..2 * PANEL - 1];
                        for (to, &v) in to.iter_mut().step_by(2).zip(block) {
                            *to = v;
                        }
                    }
                }
            }
            (Layout::Tiles, Source::Rows { data, stride }) => {
                for j in 0..n {
                    let col = data.get(j * stride..).unwrap_or_default();
                    let col = &col[..col.len().min(k)];
                    // The column's quads, one a line of its block (fixed-size copies).
                    let (line, byte) = tile_index(k, j, 0);
                    let mut lines = self.lines[line..].iter_mut();
                    let mut quads = col.chunks_exact(4);
                    for (quad, line) in quads.by_ref().zip(lines.by_ref()) {
                        line.0[byte..][..4].copy_from_slice(quad);
                    }
                    let rest = quads.remainder();
                    if let (false, Some(line)) = (rest.is_empty(), lines.next()) {
                        line.0[byte..][..rest.len()].copy_from_slice(rest);
                    }
                }
            }
            (Layout::Tiles, Source::Cols { data, stride }) => {
                assert!(stride >= n, "a row of {stride} for {n} columns");
                let rows = data.chunks(stride).take(k);
                for (i, row) in rows.map(|row| &row[..row.len().min(n)]).enumerate() {
                    // Input i of a block's columns: every fourth byte of one line.
                    for (b, block) in row.chunks(TILE_N).enumerate() {
                        let (line, byte) = tile_index(k, b * TILE_N, i);
                        let line = &mut self.lines[line].0[byte..];
                        for (to, &v) in line.iter_mut().step_by(4).zip(block) {
                            *to = v;
                        }
                    }
                }
            }
        }
    }

    /// Sizes this matrix for `n` columns of `k` inputs in `layout`, every value zero.
    fn reset(&mut self, n: usize, k: usize, layout: Layout) {
        assert!(
            n > 0 && k > 0 && k <= MAX_K && k.is_multiple_of(2),
            "n = {n}, k = {k}"
        );
        self.data.clear();
        self.lines.clear();
        match layout {
            Layout::Pairs => self.data.resize(n.div_ceil(PANEL) * PANEL * k, 0),
            Layout::Tiles => {
                let quads = k.next_multiple_of(TILE_K) / 4;
                let lines = n.div_ceil(TILE_N) * quads;
                self.lines.resize(lines, Line([0; TILE_K]));
            }
        }
        (self.n, self.k, self.layout) = (n, k, layout);
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
        match self.layout {
            Layout::Pairs => self.data[pair_index(self.k, j, i)],
            Layout::Tiles => {
                let (line, byte) = tile_index(self.k, j, i);
                self.lines[line].0[byte]
            }
        }
    }

    /// The same matrix in `layout`: borrowed when it is already so, else a copy (a
    /// forced path whose layout differs from the process's: tests and benchmarks).
    fn in_layout(&self, layout: Layout) -> Cow<'_, Self> {
        if self.layout == layout {
            return Cow::Borrowed(self);
        }
        let rows: Vec<i8> = (0..self.n)
            .flat_map(|j| (0..self.k).map(move |i| (j, i)))
            .map(|(j, i)| self.at(j, i))
            .collect();
        Cow::Owned(Self::from_rows(&rows, self.k, layout))
    }
}

/// Where input `i` of column `j` of a matrix of `k` inputs lies in the pair layout.
#[inline(always)]
fn pair_index(k: usize, j: usize, i: usize) -> usize {
    let (g, c) = (j / PANEL, j % PANEL);
    g * PANEL * k + (i / 2) * 2 * PANEL + c * 2 + i % 2
}

/// Where input `i` of column `j` of a matrix of `k` inputs lies in the tile layout: the
/// line and the byte in it.
#[inline(always)]
fn tile_index(k: usize, j: usize, i: usize) -> (usize, usize) {
    let (b, c) = (j / TILE_N, j % TILE_N);
    let quads = k.next_multiple_of(TILE_K) / 4;
    (b * quads + i / 4, c * 4 + i % 4)
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
    rows.check(x, w.k, w.n_padded(), out.len());
    #[cfg(target_arch = "x86_64")]
    match simd.resolve() {
        Ok(Simd::Amx) => {
            let w = w.in_layout(Layout::Tiles);
            // SAFETY: the CPU has AMX-INT8 and AVX-512 and the process holds the tile
            // state (`resolve` refuses a path the CPU or OS lacks); `Rows::check` proved that
            // every row read and written lies inside `x` and `out`.
            unsafe { amx::matmul(x, std::slice::from_ref(&*w), rows, out) };
            return;
        }
        Ok(path @ (Simd::Avx2 | Simd::AvxVnni | Simd::Avx512Vnni)) => {
            let w = w.in_layout(Layout::Pairs);
            // SAFETY: the CPU has AVX2, and AVX-VNNI or AVX-512 VNNI where that path was
            // chosen (`resolve` refuses a path the CPU lacks), and `Rows::check` proved that
            // every row read and written lies inside `x` and `out`.
            unsafe {
                match path {
                    Simd::Avx512Vnni => x86::matmul_avx512(x, &w, rows, out),
                    _ => x86::matmul(x, &w, rows, out, path == Simd::AvxVnni),
                }
            };
            return;
        }
        _ => {}
    }
    #[cfg(target_arch = "aarch64")]
    if simd.resolve() == Ok(Simd::Neon) {
        neon::matmul(x, &w.in_layout(Layout::Pairs), rows, out);
        return;
    }
    matmul_scalar(x, w, rows, out);
}

/// The product of rows longer than one matrix may be: `blocks` side by side along the
/// inputs (each of the same shape, each block's sums exact in `i32`), the sums of all
/// blocks added in `i64`: `out[t * out_stride + j] = sum_b x[t][b * k..][..k] . w_b(j)`,
/// for every row `t` and every column `j` including the padding.
pub fn matmul_blocks(x: &[i16], blocks: &[Panels], rows: Rows, out: &mut [i64], simd: Simd) {
    let first = blocks.first().expect("no blocks");
    assert!(
        blocks
            .iter()
            .all(|b| (b.n, b.k, b.layout) == (first.n, first.k, first.layout))
    );
    let k = first.k * blocks.len();
    // Each block's `i32` sums are exact below 512 inputs: 511 * 2^15 * 2^7 < 2^31.
    assert!(first.k < MAX_K, "blocks of {} inputs", first.k);
    assert!(blocks.len() <= MAX_BLOCKS, "{} blocks", blocks.len());
    rows.check(x, k, first.n_padded(), out.len());
    #[cfg(target_arch = "x86_64")]
    if simd.resolve() == Ok(Simd::Amx) && first.layout == Layout::Tiles {
        // SAFETY: as in `matmul`; `Rows::check` proved that every row read and written
        // lies inside `x` and `out`, and the blocks are in the tile layout.
        unsafe { amx::matmul(x, blocks, rows, out) };
        return;
    }
    BLOCK_SUMS.with_borrow_mut(|sums| {
        sums.resize(rows.count * rows.out_stride, 0);
        let n = first.n_padded();
        for (q, w) in blocks.iter().enumerate() {
            matmul(&x[q * first.k..], w, rows, sums, simd);
            for t in 0..rows.count {
                let at = t * rows.out_stride;
                let pairs = out[at..][..n].iter_mut().zip(&sums[at..][..n]);
                match q {
                    0 => pairs.for_each(|(o, &p)| *o = i64::from(p)),
                    _ => pairs.for_each(|(o, &p)| *o += i64::from(p)),
                }
            }
        }
    });
}

thread_local! {
    /// One block's `i32` sums in [`matmul_blocks`], kept from one call to the next.
    static BLOCK_SUMS: std::cell::RefCell<Vec<i32>> = std::cell::RefCell::default();
}

impl Rows {
    /// Asserts that every row a product reads (`k` inputs from `t * x_stride`) lies in
    /// `x` and every row it writes (`n_padded` sums from `t * out_stride`) in an output
    /// of `out_len`.
    fn check(self, x: &[i16], k: usize, n_padded: usize, out_len: usize) {
        assert!(self.count > 0, "no rows");
        assert!(self.x_stride >= k && self.out_stride >= n_padded);
        assert!(
            (self.count - 1) * self.x_stride + k <= x.len(),
            "x too short"
        );
        assert!(
            (self.count - 1) * self.out_stride + n_padded <= out_len,
            "out too short"
        );
    }
}

/// The reference: one dot product per output, in index order, each column read out of
/// its panel once (reading every weight through `at` for every row made the portable
/// path eight times slower). [`matmul`] checked the arguments.
fn matmul_scalar(x: &[i16], w: &Panels, rows: Rows, out: &mut [i32]) {
    let mut col = [0i16; MAX_K];
    let col = &mut col[..w.k];
    for j in 0..w.n_padded() {
        for (i, c) in col.iter_mut().enumerate() {
            *c = i16::from(w.at(j, i));
        }
        for t in 0..rows.count {
            out[t * rows.out_stride + j] = dot(&x[t * rows.x_stride..][..w.k], col);
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
    use std::arch::asm;
    use std::arch::x86_64::*;

    /// Rows of `x` one call of the micro-kernel takes.
    const MR: usize = 4;

    /// Two panels at a time (16 columns): each pair widened once to `i16` on the stack,
    /// then met by every row of `x`, four rows per call of the micro-kernel (eight
    /// accumulators, two panel registers and one broadcast: 11 of the 16 registers).
    ///
    /// # Safety
    /// The CPU has AVX2, and AVX-VNNI if `vnni`; `Rows::check` holds for the arguments.
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
                // rows t .. t + mr of out hold nr panels at stride out_stride (`Rows::check`);
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

    /// Rows of `x` one call of the AVX-512 micro-kernel takes.
    const MR512: usize = 8;

    /// Four panels at a time (32 columns), widened on the stack so that each input
    /// pair's sixteen values of two panels fill one 512-bit register, then met by every
    /// row of `x`, eight rows per call of the micro-kernel (sixteen accumulators, two
    /// weight registers and one broadcast of the 32 registers). While a group's panels
    /// meet the rows, the next group's are prefetched into L2, a slice before each call
    /// of the micro-kernel: the weights come from L3 or memory once a text, and waiting
    /// on them in the widening had cost a sixth of the model's time.
    ///
    /// # Safety
    /// The CPU has AVX-512 (F, BW, DQ, VL) and AVX-512 VNNI; `Rows::check` holds for the
    /// arguments; `w` is in the pair layout.
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
    pub(super) unsafe fn matmul_avx512(x: &[i16], w: &Panels, rows: Rows, out: &mut [i32]) {
        let groups = w.n_padded() / PANEL;
        let pairs = w.k / 2;
        let mut wide = [0i16; 4 * PANEL * MAX_K];
        let blocks = rows.count.div_ceil(MR512);
        for g in (0..groups).step_by(4) {
            let np = (groups - g).min(4);
            widen4(w, g, np, &mut wide);
            let next = w.data.get((g + 4) * PANEL * w.k..).unwrap_or_default();
            let next = &next[..next.len().min(4 * PANEL * w.k)];
            for (b, t) in (0..rows.count).step_by(MR512).enumerate() {
                let mr = (rows.count - t).min(MR512);
                prefetch_part(next, b, blocks);
                let p = Pointers {
                    x: x[t * rows.x_stride..].as_ptr(),
                    w: wide.as_ptr(),
                    out: out[t * rows.out_stride + g * PANEL..].as_mut_ptr(),
                };
                let s = Strides {
                    k: pairs,
                    x: rows.x_stride,
                    out: rows.out_stride,
                };
                // SAFETY: rows t .. t + mr of x hold k values at stride x_stride and rows
                // t .. t + mr of out hold np panels at stride out_stride (`Rows::check`);
                // `wide` holds k / 2 pairs of 64 values.
                unsafe { dispatch512(mr, np, p, s) };
            }
        }
    }

    /// Asks for part `part` of `parts` of `data`'s cache lines to be brought into L2.
    #[target_feature(enable = "avx2")]
    fn prefetch_part(data: &[i8], part: usize, parts: usize) {
        let per_part = data.len().div_ceil(64 * parts) * 64;
        let lines = data.iter().skip(part * per_part).step_by(64);
        for line in lines.take(per_part / 64) {
            _mm_prefetch::<_MM_HINT_T1>(std::ptr::from_ref(line));
        }
    }

    /// Widens panels `g .. g + np` (np <= 4) into `wide`: pair p's 64 values are panels
    /// g and g + 1, then g + 2 and g + 3, sixteen values each; missing panels are zero.
    /// One `vpmovsxbw` a panel's pair (the loop of scalar sign extensions the compiler
    /// made of it took a fifth of the product's time).
    #[target_feature(enable = "avx2")]
    fn widen4(w: &Panels, g: usize, np: usize, wide: &mut [i16]) {
        const STRIDE: usize = 2 * PANEL;
        let wide = &mut wide[..w.k / 2 * 4 * STRIDE];
        let panels = &w.data[g * PANEL * w.k..][..np * PANEL * w.k];
        for (h, panel) in panels.chunks_exact(PANEL * w.k).enumerate() {
            let to = wide[h * STRIDE..].chunks_mut(4 * STRIDE);
            for (d, s) in to.zip(panel.chunks_exact(STRIDE)) {
                let d: &mut [i16; STRIDE] = (&mut d[..STRIDE]).try_into().expect("a pair");
                // SAFETY: 16 bytes are read from `s` and 16 `i16` written to `d`, slices
                // of those lengths; the CPU has AVX2.
                unsafe {
                    let v = _mm_loadu_si128(s.as_ptr().cast());
                    _mm256_storeu_si256(d.as_mut_ptr().cast(), _mm256_cvtepi8_epi16(v));
                }
            }
        }
        if np < 4 {
            for d in wide.chunks_exact_mut(4 * STRIDE) {
                d[np * STRIDE..].fill(0);
            }
        }
    }

    /// The AVX-512 micro-kernel for `mr` rows and `np` panels.
    ///
    /// # Safety
    /// As [`matmul_avx512`]'s, for the block of rows and the panels `p` describes.
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
    unsafe fn dispatch512(mr: usize, np: usize, p: Pointers, s: Strides) {
        // SAFETY: the micro-kernel needs what this function's contract gives.
        macro_rules! go {
            ($($m:literal),*) => {
                match (mr, np.div_ceil(2)) {
                    $(
                        ($m, 2) => unsafe { micro512::<$m, 2>(p, s, np) },
                        ($m, 1) => unsafe { micro512::<$m, 1>(p, s, np) },
                    )*
                    _ => unreachable!("{mr} x {np}"),
                }
            };
        }
        go!(1, 2, 3, 4, 5, 6, 7, 8)
    }

    /// `MR` rows of `x` against `NZ` registers of two widened panels each; the last
    /// register's upper eight sums are not stored when `np` is odd.
    ///
    /// # Safety
    /// As [`dispatch512`]'s.
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
    #[inline]
    unsafe fn micro512<const MR: usize, const NZ: usize>(p: Pointers, s: Strides, np: usize) {
        let mut acc = [[_mm512_setzero_si512(); NZ]; MR];
        // SAFETY: row r of x starts at `p.x + r * s.x`, inside `x`.
        let row: [*const i32; MR] = std::array::from_fn(|r| unsafe { p.x.add(r * s.x).cast() });
        // Opaque, so that LLVM keeps a base register a row instead of rederiving each
        // row's address from the first by adds that compete with `vpdpwssd` for ports.
        let row = std::hint::black_box(row);
        for i in 0..s.k {
            // SAFETY: pair i is below `s.k`, as `step512` needs.
            unsafe { step512(&mut acc, &row, p.w, i) };
        }
        for (r, acc) in acc.iter().enumerate() {
            for (z, &v) in acc.iter().enumerate() {
                let mask: __mmask16 = if 2 * z + 1 < np { 0xFFFF } else { 0x00FF };
                // SAFETY: the first 16 (or 8, with the mask) sums of row r, register z,
                // are inside `p.out`.
                unsafe {
                    _mm512_mask_storeu_epi32(p.out.add(r * s.out + z * 2 * PANEL).cast(), mask, v)
                };
            }
        }
    }

    /// One input pair of `MR` rows against `NZ` registers of widened panels: each row's
    /// pair broadcast, multiplied by each register and added to its accumulator.
    ///
    /// # Safety
    /// As [`micro512`]'s, for pair `i` (below the number of pairs).
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
    #[inline]
    unsafe fn step512<const MR: usize, const NZ: usize>(
        acc: &mut [[__m512i; NZ]; MR],
        row: &[*const i32; MR],
        w: *const i16,
        i: usize,
    ) {
        let mut b = [_mm512_setzero_si512(); NZ];
        for (z, b) in b.iter_mut().enumerate() {
            // SAFETY: pair i's values of panels 2z and 2z + 1 are 32 values in `w`.
            *b = unsafe { _mm512_loadu_si512(w.add(i * 8 * PANEL + z * 4 * PANEL).cast()) };
        }
        for (acc, row) in acc.iter_mut().zip(row) {
            // SAFETY: values 2i, 2i + 1 of the row are inside `x`.
            let a = _mm512_set1_epi32(unsafe { row.add(i).read_unaligned() });
            for (acc, &b) in acc.iter_mut().zip(&b) {
                // SAFETY: `vpdpwssd` on registers only; the CPU has AVX-512 VNNI. As
                // written, because under the generic x86-64 tuning LLVM's machine
                // combiner splits most `_mm512_dpwssd_epi32` into `vpmaddwd` and
                // `vpaddd`: two instructions for one (82-85 G MAC/s against 92-111).
                unsafe {
                    asm!(
                        "vpdpwssd {acc}, {a}, {b}",
                        acc = inout(zmm_reg) *acc,
                        a = in(zmm_reg) a,
                        b = in(zmm_reg) b,
                        options(pure, nomem, nostack),
                    )
                };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod amx {
    use std::arch::asm;
    use std::arch::x86_64::*;
    use std::cell::RefCell;

    use super::{Line, Panels, Rows, TILE_K, TILE_N};

    /// Rows of one tile.
    const TILE_M: usize = 16;
    /// Split activation bytes (high and low) a group of rows may take in L1.
    const L1_ROWS_BYTES: usize = 24 * 1024;
    /// `i32` sums of one row of the output buffer: two blocks of high-byte sums, two
    /// of low-byte sums.
    const C_ROW: usize = 4 * TILE_N;

    /// The tile configuration (`ldtilecfg`'s 64 bytes, palette 1): tiles 0-3 the sums
    /// (two column blocks of high-byte and of low-byte products), 4 and 5 the high and
    /// low bytes of 16 activation rows, 6 and 7 two blocks of weights; each 16 rows of
    /// 64 bytes.
    #[repr(C, align(64))]
    struct Config {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        colsb: [u16; 16],
        rows: [u8; 16],
    }

    const CONFIG: Config = {
        let mut colsb = [0u16; 16];
        let mut rows = [0u8; 16];
        let mut t = 0;
        while t < 8 {
            colsb[t] = 64;
            rows[t] = TILE_M as u8;
            t += 1;
        }
        Config {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            colsb,
            rows,
        }
    };

    /// The activations split into bytes, rows padded to 16 and inputs to 64 (the padding
    /// holds whatever an earlier product left: see `split_rows`), each row starting a
    /// cache line.
    #[derive(Default)]
    struct Split {
        hi: Vec<Line>,
        lo: Vec<Line>,
    }

    thread_local! {
        static SPLIT: RefCell<Split> = RefCell::default();
    }

    /// A sum of the tile products: the high-byte and low-byte partial sums (each exact
    /// in `i32`) combined into the output's type.
    pub(super) trait Sum: Copy {
        /// `256 hi + lo`.
        fn wide(hi: i32, lo: i32) -> Self;
        /// The sum of a product whose activations all fit in `i8`.
        fn narrow(sum: i32) -> Self;
    }

    /// With wrap-around: exact whenever the true sum fits in `i32` (the caller's bound).
    impl Sum for i32 {
        #[inline(always)]
        fn wide(hi: i32, lo: i32) -> Self {
            (hi << 8).wrapping_add(lo)
        }
        #[inline(always)]
        fn narrow(sum: i32) -> Self {
            sum
        }
    }

    /// Always exact: each partial sum is under 2^31 for up to 65,536 inputs.
    impl Sum for i64 {
        #[inline(always)]
        fn wide(hi: i32, lo: i32) -> Self {
            (i64::from(hi) << 8) + i64::from(lo)
        }
        #[inline(always)]
        fn narrow(sum: i32) -> Self {
            i64::from(sum)
        }
    }

    /// Every block of 16 rows against every pair of 16-column blocks: the whole sum of a
    /// 16 x 32 block, over the inputs of every matrix of `ws` in turn (side by side along
    /// the inputs), in four tiles, then combined and written to `out`. When every
    /// activation fits in `i8` (queries and contexts, which the spec saturates), the low
    /// bytes are the activations and one signed product suffices.
    ///
    /// # Safety
    /// The CPU has AMX-INT8 and AVX-512 and the process holds the tile state; every
    /// matrix of `ws` (at most [`super::MAX_BLOCKS`]) is in the tile layout with the same
    /// shape; row `t` of `x` holds `ws.len() * k` inputs from `t * x_stride` and row `t`
    /// of `out` the padded columns from `t * out_stride`.
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    pub(super) unsafe fn matmul<T: Sum>(x: &[i16], ws: &[Panels], rows: Rows, out: &mut [T]) {
        assert!(ws.len() <= super::MAX_BLOCKS, "{} blocks", ws.len());
        SPLIT.with_borrow_mut(|split| {
            let w = &ws[0];
            let k_padded = w.k.next_multiple_of(TILE_K);
            let row_bytes = ws.len() * k_padded;
            // SAFETY: AVX-512F, BW and VL (this function's contract).
            let narrow = unsafe { split_rows(x, (w.k, ws.len()), rows, split) };
            // SAFETY: the tile state is granted (the caller's contract); CONFIG is a
            // valid palette-1 configuration that lives for the whole program. It stays
            // loaded in this thread's tile state (which the compiler never touches and
            // the OS saves across switches) until `tilerelease` below; each `Block`
            // call keeps its tile data inside one `asm!` block.
            unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
            let blocks = w.n_padded().div_ceil(TILE_N);
            let mut c = [0i32; TILE_M * C_ROW];
            // Rows in groups whose split bytes stay in L1 beside a pair of weight blocks.
            let group = (L1_ROWS_BYTES / (2 * row_bytes)).max(TILE_M) / TILE_M * TILE_M;
            for g0 in (0..rows.count).step_by(group) {
                let g1 = (g0 + group).min(rows.count);
                for b in (0..blocks).step_by(2) {
                    // An odd last block is taken twice; the copy's sums are not written.
                    let b1 = (b + 1).min(blocks - 1);
                    let cols = (w.n_padded() - b * TILE_N).min(2 * TILE_N);
                    let mut pairs = [[std::ptr::null::<i8>(); 2]; super::MAX_BLOCKS];
                    for (pair, w) in pairs.iter_mut().zip(ws) {
                        let at = |b: usize| w.lines[b * k_padded / 4..].as_ptr().cast();
                        *pair = [at(b), at(b1)];
                    }
                    for r0 in (g0..g1).step_by(TILE_M) {
                        let at = r0 * row_bytes / TILE_K;
                        let p = Block {
                            hi: split.hi[at..].as_ptr().cast(),
                            lo: split.lo[at..].as_ptr().cast(),
                            a_stride: row_bytes,
                            ws: pairs.as_ptr(),
                            blocks: ws.len(),
                            steps: k_padded / TILE_K,
                            c: c.as_mut_ptr(),
                        };
                        // SAFETY: the split rows hold 16 rows of row_bytes from r0
                        // (`split_rows` pads them), `pairs` holds `ws.len()` (at most
                        // MAX_BLOCKS, asserted above) pointers to weight blocks of
                        // k_padded / 64 tiles of 1 KiB, and `c` holds 16 rows of C_ROW sums.
                        unsafe { if narrow { p.narrow() } else { p.wide() } };
                        let valid = (rows.count - r0).min(TILE_M);
                        for (r, sums) in c.chunks_exact(C_ROW).take(valid).enumerate() {
                            let o = &mut out[(r0 + r) * rows.out_stride + b * TILE_N..][..cols];
                            let (hi, lo) = sums.split_at(2 * TILE_N);
                            if narrow {
                                for (o, &l) in o.iter_mut().zip(lo) {
                                    *o = T::narrow(l);
                                }
                            } else {
                                for ((o, &h), &l) in o.iter_mut().zip(hi).zip(lo) {
                                    *o = T::wide(h, l);
                                }
                            }
                        }
                    }
                }
            }
            // SAFETY: releases the tile state this function configured.
            unsafe { asm!("tilerelease", options(nostack, nomem)) };
        })
    }

    /// Splits the rows of `x` (`blocks` runs of `k` inputs, side by side) into high
    /// (signed) and low (unsigned) bytes, each run padded to a multiple of 64 and the
    /// rows to whole tiles; returns whether every value fits in `i8`.
    ///
    /// # Safety
    /// The CPU has AVX-512F, BW and VL.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn split_rows(
        x: &[i16],
        (k, blocks): (usize, usize),
        rows: Rows,
        split: &mut Split,
    ) -> bool {
        let per_run = k.div_ceil(TILE_K);
        let per_row = blocks * per_run;
        let len = rows.count.next_multiple_of(TILE_M) * per_row;
        // The padding keeps whatever an earlier product left there: a run's bytes past
        // `k` meet the weights' zero padding, and the sums of the rows past the last
        // are not written.
        for half in [&mut split.hi, &mut split.lo] {
            if half.len() < len {
                half.resize(len, Line([0; TILE_K]));
            }
        }
        let mut narrow = true;
        for t in 0..rows.count {
            for q in 0..blocks {
                let src = &x[t * rows.x_stride + q * k..][..k];
                let at = t * per_row + q * per_run;
                let hi = &mut split.hi[at..][..per_run];
                let lo = &mut split.lo[at..][..per_run];
                for ((src, hi), lo) in src.chunks(TILE_K).zip(hi).zip(lo) {
                    // SAFETY: AVX-512F, BW and VL (this function's contract).
                    narrow &= unsafe { split_line(src, &mut hi.0, &mut lo.0) };
                }
            }
        }
        narrow
    }

    /// The high and low bytes of up to 64 values, 32 at a time; the bytes past
    /// `src.len()` are left as they are. Returns whether every value fits in `i8`.
    ///
    /// # Safety
    /// The CPU has AVX-512F, BW and VL.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn split_line(src: &[i16], hi: &mut [i8; TILE_K], lo: &mut [i8; TILE_K]) -> bool {
        assert!(src.len() <= TILE_K);
        let mut outside = 0;
        for j in (0..src.len()).step_by(32) {
            let n = src.len() - j;
            let m = if n >= 32 { u32::MAX } else { (1 << n) - 1 };
            // SAFETY: the masked lanes lie within `src`, `hi` and `lo` (asserted above).
            unsafe {
                let v = _mm512_maskz_loadu_epi16(m, src[j..].as_ptr());
                let high = _mm512_cvtepi16_epi8(_mm512_srai_epi16::<8>(v));
                _mm256_mask_storeu_epi8(hi[j..].as_mut_ptr(), m, high);
                _mm256_mask_storeu_epi8(lo[j..].as_mut_ptr(), m, _mm512_cvtepi16_epi8(v));
                let as_i8 = _mm512_srai_epi16::<8>(_mm512_slli_epi16::<8>(v));
                outside |= _mm512_mask_cmpneq_epi16_mask(m, v, as_i8);
            }
        }
        outside == 0
    }

    /// One 16 x 32 block of sums: where its bytes are and where the sums go.
    struct Block {
        hi: *const i8,
        lo: *const u8,
        a_stride: usize,
        /// The two 16-column blocks of each weight matrix in turn.
        ws: *const [*const i8; 2],
        blocks: usize,
        /// Steps of 64 inputs in one weight matrix.
        steps: usize,
        c: *mut i32,
    }

    impl Block {
        /// High bytes times weights into tiles 0 and 1, low bytes into 2 and 3, every
        /// step of 64 inputs of every weight matrix; the four tiles stored side by side
        /// in each row of `c`.
        ///
        /// # Safety
        /// As [`matmul`]'s, for the block's pointers; the configuration is loaded.
        #[inline(always)]
        unsafe fn wide(&self) {
            // SAFETY: every tile read lies in the split rows or a weight block and every
            // tile written in `c` (the caller's contract); tiles 0-7 are configured.
            unsafe {
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    "3:",
                    "mov {w0}, [{ws}]",
                    "mov {w1}, [{ws} + 8]",
                    "mov {n}, {steps}",
                    "2:",
                    "tileloadd tmm4, [{hi} + {a_stride} * 1]",
                    "tileloadd tmm5, [{lo} + {a_stride} * 1]",
                    "tileloadd tmm6, [{w0} + {stride} * 1]",
                    "tileloadd tmm7, [{w1} + {stride} * 1]",
                    "tdpbssd tmm0, tmm4, tmm6",
                    "tdpbssd tmm1, tmm4, tmm7",
                    "tdpbusd tmm2, tmm5, tmm6",
                    "tdpbusd tmm3, tmm5, tmm7",
                    "add {hi}, 64",
                    "add {lo}, 64",
                    "add {w0}, 1024",
                    "add {w1}, 1024",
                    "dec {n}",
                    "jnz 2b",
                    "add {ws}, 16",
                    "dec {blocks}",
                    "jnz 3b",
                    "mov {stride}, {c_stride}",
                    "tilestored [{c} + {stride} * 1], tmm0",
                    "tilestored [{c} + {stride} * 1 + 64], tmm1",
                    "tilestored [{c} + {stride} * 1 + 128], tmm2",
                    "tilestored [{c} + {stride} * 1 + 192], tmm3",
                    hi = inout(reg) self.hi => _,
                    lo = inout(reg) self.lo => _,
                    ws = inout(reg) self.ws => _,
                    blocks = inout(reg) self.blocks => _,
                    w0 = out(reg) _,
                    w1 = out(reg) _,
                    n = out(reg) _,
                    steps = in(reg) self.steps,
                    a_stride = in(reg) self.a_stride,
                    stride = inout(reg) TILE_K => _,
                    c = in(reg) self.c,
                    c_stride = const C_ROW * 4,
                    out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                    out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                    options(nostack),
                );
            }
        }

        /// The activations as signed bytes times weights into tiles 2 and 3 (the
        /// low-byte half of `c`; the high-byte half is not written).
        ///
        /// # Safety
        /// As [`Block::wide`]'s.
        #[inline(always)]
        unsafe fn narrow(&self) {
            // SAFETY: as in `wide`.
            unsafe {
                asm!(
                    "tilezero tmm2",
                    "tilezero tmm3",
                    "3:",
                    "mov {w0}, [{ws}]",
                    "mov {w1}, [{ws} + 8]",
                    "mov {n}, {steps}",
                    "2:",
                    "tileloadd tmm5, [{lo} + {a_stride} * 1]",
                    "tileloadd tmm6, [{w0} + {stride} * 1]",
                    "tileloadd tmm7, [{w1} + {stride} * 1]",
                    "tdpbssd tmm2, tmm5, tmm6",
                    "tdpbssd tmm3, tmm5, tmm7",
                    "add {lo}, 64",
                    "add {w0}, 1024",
                    "add {w1}, 1024",
                    "dec {n}",
                    "jnz 2b",
                    "add {ws}, 16",
                    "dec {blocks}",
                    "jnz 3b",
                    "mov {stride}, {c_stride}",
                    "tilestored [{c} + {stride} * 1 + 128], tmm2",
                    "tilestored [{c} + {stride} * 1 + 192], tmm3",
                    lo = inout(reg) self.lo => _,
                    ws = inout(reg) self.ws => _,
                    blocks = inout(reg) self.blocks => _,
                    w0 = out(reg) _,
                    w1 = out(reg) _,
                    n = out(reg) _,
                    steps = in(reg) self.steps,
                    a_stride = in(reg) self.a_stride,
                    stride = inout(reg) TILE_K => _,
                    c = in(reg) self.c,
                    c_stride = const C_ROW * 4,
                    out("tmm2") _, out("tmm3") _, out("tmm5") _, out("tmm6") _,
                    out("tmm7") _,
                    options(nostack),
                );
            }
        }
    }
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
                // (`Rows::check`); `wide` holds k / 2 widened pairs; NEON is part of
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

    const PATHS: [Simd; 5] = [
        Simd::Avx2,
        Simd::AvxVnni,
        Simd::Avx512Vnni,
        Simd::Amx,
        Simd::Neon,
    ];

    /// The product on the process's path and on the portable one, after holding every
    /// path this CPU has, on weights in either layout, to the portable one.
    fn both(x: &[i16], w: &Panels, rows: Rows) -> (Vec<i32>, Vec<i32>) {
        let len = (rows.count - 1) * rows.out_stride + w.n_padded();
        let (mut a, mut b) = (vec![7; len], vec![7; len]);
        matmul(x, w, rows, &mut a, Simd::Auto);
        matmul(x, w, rows, &mut b, Simd::Portable);
        for path in PATHS {
            if path.resolve().is_ok() {
                for layout in [Layout::Pairs, Layout::Tiles] {
                    let w = w.in_layout(layout);
                    let mut c = vec![7; len];
                    matmul(x, &w, rows, &mut c, path);
                    assert_eq!(c, b, "{path:?} on {layout:?}");
                }
            }
        }
        (a, b)
    }

    #[test]
    fn simd_equals_scalar_bit_for_bit() {
        // Row counts around the micro-kernel's 4, column counts around the panel's 8
        // and the pair of panels, strides wider than the rows; activations of 16 bits,
        // and of 8 (the AMX path's one signed product).
        for (top, (seed, t, n, k, x_pad, out_pad)) in [32767, 127].into_iter().flat_map(|top| {
            [
                (1, 7, 13, 384, 0, 3),
                (2, 1, 1, 16, 0, 0),
                (3, 64, 384, 384, 0, 0),
                (4, 5, 6, 32, 352, 2),
                (5, 108, 1536, 384, 0, 0),
                (6, 3, 24, 512, 16, 0),
                (7, 9, 17, 2, 0, 0),
                (8, 14, 40, 102, 0, 0),
                (9, 2, 33, 64, 6, 5),
            ]
            .map(|case| (top, case))
        }) {
            let x: Vec<i16> = values(seed, t * (k + x_pad), -top - 1, top)
                .into_iter()
                .map(|v| v as i16)
                .collect();
            let w: Vec<i8> = values(seed + 100, n * k, -128, 127)
                .into_iter()
                .map(|v| v as i8)
                .collect();
            let w = Panels::from_rows(&w, k, Simd::Auto.layout());
            let rows = Rows {
                count: t,
                x_stride: k + x_pad,
                out_stride: w.n_padded() + out_pad,
            };
            let (a, b) = both(&x, &w, rows);
            assert_eq!(a, b, "seed {seed}, activations within {top}");
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
            let w = Panels::from_rows(&vec![wv; 9 * k], k, Layout::Tiles);
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

    /// Blocks side by side along the inputs add up to the exact `i64` sum on every path
    /// and layout, at the extremes too, where one `i32` sum of the whole row would wrap.
    #[test]
    fn blocks_add_up_exactly_in_i64() {
        // The last case's activations all fit in `i8`: the AMX path's one signed product.
        let cases = [
            (1, 37, 40, 384, 4, 32767),
            (2, 3, 9, 70, 3, 32767),
            (3, 17, 16, 64, 1, 32767),
            (4, 21, 33, 384, 4, 127),
        ];
        for (seed, t, n, k, blocks, top) in cases {
            let mut x: Vec<i16> = values(seed, t * k * blocks, -top - 1, top)
                .into_iter()
                .map(|v| v as i16)
                .collect();
            x[..k * blocks].fill(-top as i16 - 1);
            let w: Vec<Vec<i8>> = (0..blocks)
                .map(|q| {
                    let mut w: Vec<i8> = values(seed + 10 * q as u64, n * k, -128, 127)
                        .into_iter()
                        .map(|v| v as i8)
                        .collect();
                    w[..k].fill(-128);
                    w
                })
                .collect();
            let want: Vec<i64> = (0..t)
                .flat_map(|r| (0..n).map(move |j| (r, j)))
                .map(|(r, j)| {
                    (0..blocks * k)
                        .map(|i| {
                            i64::from(x[r * blocks * k + i]) * i64::from(w[i / k][j * k + i % k])
                        })
                        .sum()
                })
                .collect();
            assert_eq!(want[0], i64::from(top + 1) * 128 * (blocks * k) as i64);
            for path in [Simd::Portable, Simd::Auto].into_iter().chain(PATHS) {
                if path.resolve().is_err() {
                    continue;
                }
                for layout in [Layout::Pairs, Layout::Tiles] {
                    let panels: Vec<Panels> =
                        w.iter().map(|w| Panels::from_rows(w, k, layout)).collect();
                    let stride = panels[0].n_padded();
                    let rows = Rows {
                        count: t,
                        x_stride: blocks * k,
                        out_stride: stride,
                    };
                    let mut out = vec![7; t * stride];
                    matmul_blocks(&x, &panels, rows, &mut out, path);
                    let got: Vec<i64> = out.chunks(stride).flat_map(|r| r[..n].to_vec()).collect();
                    assert_eq!(got, want, "seed {seed}, {path:?} on {layout:?}");
                    let padding = out.chunks(stride).flat_map(|r| &r[n..]);
                    assert!(padding.copied().all(|v| v == 0), "padding sums to zero");
                }
            }
        }
    }

    #[test]
    fn paths_are_named_and_a_missing_one_is_refused() {
        assert_eq!(Simd::Portable.resolve(), Ok(Simd::Portable));
        assert_eq!(Simd::Portable.name(), "portable");
        let cpu = Features::detected();
        assert_eq!(Simd::Avx2.resolve().is_ok(), cpu.avx2);
        assert_eq!(Simd::AvxVnni.resolve().is_ok(), cpu.avx_vnni);
        assert_eq!(Simd::Avx512Vnni.resolve().is_ok(), cpu.avx512_vnni);
        assert_eq!(Simd::Amx.resolve().is_ok(), cpu.amx);
        assert_eq!(Simd::Neon.resolve().is_ok(), cpu.neon);
        let auto = Simd::Auto.resolve().unwrap();
        assert!(Simd::Auto.name().starts_with(auto.name()));
        assert_eq!(auto == Simd::Portable, !features().avx2 && !features().neon);
        assert_eq!(auto == Simd::Amx, features().amx);
        assert_eq!(Simd::Auto.layout() == Layout::Tiles, features().amx);
    }

    /// Where `CFS_SIMD` does not narrow the choice, a CPU whose AMX tiles the OS
    /// grants runs them: the AMX path is not only compiled but taken.
    #[test]
    fn amx_runs_where_the_cpu_and_os_have_it() {
        let narrowed = std::env::var("CFS_SIMD").is_ok_and(|v| !v.is_empty() && v != "auto");
        if !narrowed {
            assert_eq!(
                Simd::Auto.resolve() == Ok(Simd::Amx),
                Features::detected().amx
            );
        }
        println!("AMX on this machine: {}", Features::detected().amx);
    }

    #[test]
    fn panels_hold_what_they_were_given() {
        let rows: Vec<i8> = (0..21 * 70).map(|v| v as i8).collect();
        for layout in [Layout::Pairs, Layout::Tiles] {
            let p = Panels::from_rows(&rows, 70, layout);
            assert_eq!((p.n(), p.n_padded(), p.k()), (21, 24, 70));
            for j in 0..32 {
                for i in 0..70 {
                    let want = if j < 21 { rows[j * 70 + i] } else { 0 };
                    if j < 24 || layout == Layout::Tiles {
                        assert_eq!(p.at(j, i), want, "({j}, {i}) in {layout:?}");
                    }
                }
            }
            let back = p.in_layout(Layout::Pairs);
            assert!((0..24).all(|j| (0..70).all(|i| back.at(j, i) == p.at(j, i))));
            // Rows whose source ends inside the last column, after an odd number of
            // its inputs: the rest of that column is zeros.
            let mut cut = Panels::from_rows(&vec![-1; 40 * 90], 90, layout);
            let src = Source::Rows {
                data: &rows[..20 * 70 + 33],
                stride: 70,
            };
            cut.fill(21, 70, layout, src);
            for (j, i) in (0..21).flat_map(|j| (0..70).map(move |i| (j, i))) {
                let want = if j < 20 || i < 33 {
                    rows[j * 70 + i]
                } else {
                    0
                };
                assert_eq!(
                    cut.at(j, i),
                    want,
                    "({j}, {i}) of a cut source in {layout:?}"
                );
            }
            // Read down the columns of a strided source that ends after 65 inputs: the
            // inputs past its end are zeros.
            let stride = 30;
            let cols: Vec<i8> = (0..65 * stride).map(|v| (v * 7) as i8).collect();
            // Filled over a matrix of other values and shape, as attention refills.
            let mut q = Panels::from_rows(&vec![-1; 40 * 90], 90, layout);
            let src = Source::Cols {
                data: &cols[3..],
                stride,
            };
            q.fill(21, 70, layout, src);
            for j in 0..32 {
                for i in 0..70 {
                    let want = if i < 65 && j < 21 {
                        cols[3 + i * stride + j]
                    } else {
                        0
                    };
                    if j < 24 || layout == Layout::Tiles {
                        assert_eq!(q.at(j, i), want, "({j}, {i}) by columns in {layout:?}");
                    }
                }
            }
        }
    }
}
