//! The integer MiniLM encoder: weights checked and laid out for the kernel, and the
//! forward pass from token ids to an `i16` unit vector. Every step is the integer
//! operation `docs/spec.md` ("minilm-int: the forward pass") names, in its order; the
//! bounds checked at load are the ones that keep every intermediate inside `i64` (and
//! every dot product inside `i32`), so no step can overflow.

#![cfg_attr(target_arch = "x86_64", expect(unsafe_code))]

use std::cell::RefCell;
use std::ops::Range;

use super::file::ModelFile;
use super::kernel::{Panels, Rows, Simd, Source, matmul, matmul_blocks};
use super::tokenize::Vocab;

/// Width of the hidden state.
pub const HIDDEN: usize = 384;
/// Width of the feed-forward layer.
pub const FFN: usize = 1536;
/// Encoder layers.
pub const LAYERS: usize = 6;
/// Attention heads.
pub const HEADS: usize = 12;
/// Width of one head.
pub const HEAD_DIM: usize = HIDDEN / HEADS;
/// Position rows in the model (at least the longest sequence).
pub const POSITIONS: usize = 512;
/// Rows of the first feed-forward product at a time: their `i32` sums (768 KiB) stay
/// in L2 when several texts go through a layer together.
const FFN_ROWS: usize = 128;
/// Blocks of the second feed-forward product: each block's sums fit in `i32`.
const FFN_BLOCK: usize = 384;
/// Entries of the table of `2^-x` (x in 1/1024 steps) and its value at 0.
const EXP_ENTRIES: usize = 1024;
const EXP_ONE: u32 = 1 << 30;

/// `floor((x + 2^(sh-1)) / 2^sh)`: rounding half up, the one rounding of the model.
#[inline(always)]
fn rshift_round(x: i64, sh: u32) -> i64 {
    (x + (1i64 << (sh - 1))) >> sh
}

#[inline(always)]
fn saturate(x: i64, bits: u32) -> i64 {
    let hi = (1i64 << (bits - 1)) - 1;
    x.clamp(-hi, hi)
}

/// A fixed-point multiplier and shift: `x * ratio ~ rshift_round(x * m, sh)`.
#[derive(Clone, Copy, Debug)]
struct Requant {
    m: i64,
    sh: u32,
}

impl Requant {
    #[inline(always)]
    fn apply(self, x: i64) -> i64 {
        rshift_round(x * self.m, self.sh)
    }

    /// [`Requant::apply`] of an `i32` sum, with the multiplier (under 2^23, checked at
    /// load) as `i32`: one widening multiply, the same integer.
    #[inline(always)]
    fn apply_i32(self, x: i32) -> i64 {
        rshift_round(i64::from(x) * i64::from(self.m as i32), self.sh)
    }
}

fn check_multiplier(name: &str, m: i64, sh: i32) -> Result<Requant, String> {
    if !(0..1 << 23).contains(&m) || !(1..=62).contains(&sh) {
        return Err(format!("{name}: multiplier {m} >> {sh} out of range"));
    }
    Ok(Requant { m, sh: sh as u32 })
}

fn scalar_requant(f: &ModelFile<'_>, name: &str) -> Result<Requant, String> {
    let m = f.i64s(&format!("{name}.m"), &[1])?[0];
    let sh = f.i32s(&format!("{name}.sh"), &[1])?[0];
    check_multiplier(name, m, sh)
}

/// The per-channel end of a linear layer: bias at the accumulator's scale, then the
/// fixed-point multiplier of each channel and the layer's one shift. Kept as
/// `a * m + (b * m + 2^(sh-1))`, the same integer as `rshift_round((a + b) * m, sh)`.
#[derive(Debug)]
struct Channels {
    sh: u32,
    /// Each multiplier as `i32` (they are under 2^23), so that an `i32` sum times it
    /// is one widening multiply.
    m32: Vec<i32>,
    /// `b_j * m_j + 2^(sh-1)`: the bias and the rounding term at the product's scale
    /// (`|b| <= 2^38`, so under 2^61), the same integer as `(a + b) * m`'s part.
    bm: Vec<i64>,
}

impl Channels {
    fn load(f: &ModelFile<'_>, name: &str, n: usize) -> Result<Self, String> {
        let b = f.i64s(&format!("{name}.b"), &[n])?;
        let m = f.i64s(&format!("{name}.m"), &[n])?;
        let sh = f.i32s(&format!("{name}.sh"), &[1])?[0];
        for &mj in &m {
            check_multiplier(name, mj, sh)?;
        }
        if b.iter().any(|v| v.unsigned_abs() > 1 << 38) {
            return Err(format!("{name}: bias out of range"));
        }
        let sh = sh as u32;
        Ok(Self {
            m32: m.iter().map(|&mj| mj as i32).collect(),
            bm: b
                .iter()
                .zip(&m)
                .map(|(&bj, &mj)| bj * mj + (1 << (sh - 1)))
                .collect(),
            sh,
        })
    }

    /// Output channels.
    fn n(&self) -> usize {
        self.m32.len()
    }

    /// `requant(sum_j + b_j)` for every row of `sums` (rows of one value per channel).
    #[inline(always)]
    fn apply<A: Copy + Into<i64>>(&self, sums: &[A], out: &mut Vec<i64>) {
        out.resize(sums.len(), 0);
        self.apply_into(sums, out, |v| v);
    }

    /// `to(requant(sum_j + b_j))` for every row of `sums`, into `out` (as long as
    /// `sums`): `(a + b) * m` as `a * m + b * m`, for `i32` sums a widening multiply of
    /// two `i32`, so the pass vectorises when `to` is arithmetic. Sums are under 2^33 in
    /// magnitude (the second feed-forward product's `i64` ones: 1,536 inputs of `i16`
    /// times `i8`), so `a * m` is under 2^56 and `a * m + b * m` under 2^63.
    #[inline(always)]
    fn apply_into<A: Copy + Into<i64>, U>(&self, sums: &[A], out: &mut [U], to: impl Fn(i64) -> U) {
        let n = self.n();
        for (row, out) in sums.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
            for (((o, &a), &bm), &m) in out.iter_mut().zip(row).zip(&self.bm).zip(&self.m32) {
                let a: i64 = a.into();
                debug_assert!(a.unsigned_abs() < 1 << 33);
                *o = to((a * i64::from(m) + bm) >> self.sh);
            }
        }
    }
}

/// A linear layer: `i8` weights of `n` columns by `k` laid out for the kernel, then
/// its [`Channels`].
#[derive(Debug)]
struct Linear {
    w: Panels,
    out: Channels,
}

impl Linear {
    fn load(f: &ModelFile<'_>, name: &str, n: usize, k: usize) -> Result<Self, String> {
        let w = f.i8s(&format!("{name}.w"), &[n, k])?;
        Ok(Self {
            w: Panels::from_rows(&w, k, Simd::Auto.layout()),
            out: Channels::load(f, name, n)?,
        })
    }

    /// The sums `x . w_j` for every row of `x` and channel `j`, at the start of `sums`
    /// (grown when too short, never shrunk: the products of a layer take turns in it,
    /// and the kernel writes every sum, so nothing is zeroed in between).
    #[inline(always)]
    fn sums<'s>(&self, x: &[i16], simd: Simd, sums: &'s mut Vec<i32>) -> &'s [i32] {
        let (k, n) = (self.w.k(), self.w.n());
        let rows = Rows {
            count: x.len() / k,
            x_stride: k,
            out_stride: n,
        };
        let len = rows.count * n;
        if sums.len() < len {
            sums.resize(len, 0);
        }
        matmul(x, &self.w, rows, &mut sums[..len], simd);
        &sums[..len]
    }

    /// `requant(x . w_j + b_j)` for every row of `x` and channel `j`, into `out`.
    #[inline(always)]
    fn forward(&self, x: &[i16], simd: Simd, sums: &mut Vec<i32>, out: &mut Vec<i64>) {
        let sums = self.sums(x, simd, sums);
        self.out.apply(sums, out);
    }

    /// `to(requant(x . w_j + b_j))` for every row of `x` and channel `j`, into `out`.
    #[inline(always)]
    fn forward_to<U: Copy + Default>(
        &self,
        x: &[i16],
        simd: Simd,
        sums: &mut Vec<i32>,
        out: &mut Vec<U>,
        to: impl Fn(i64) -> U,
    ) {
        let sums = self.sums(x, simd, sums);
        out.resize(sums.len(), U::default());
        self.out.apply_into(sums, out, to);
    }
}

/// The second feed-forward product, `k` = 1536 split into blocks of 384 inputs whose
/// `i32` sums are exact; the blocks are added in `i64`.
#[derive(Debug)]
struct BlockedLinear {
    blocks: Vec<Panels>,
    out: Channels,
}

impl BlockedLinear {
    fn load(f: &ModelFile<'_>, name: &str, n: usize, k: usize) -> Result<Self, String> {
        let w = f.i8s(&format!("{name}.w"), &[n, k])?;
        let blocks = (0..k / FFN_BLOCK)
            .map(|q| {
                let mut p = Panels::default();
                let src = Source::Rows {
                    data: &w[q * FFN_BLOCK..],
                    stride: k,
                };
                p.fill(n, FFN_BLOCK, Simd::Auto.layout(), src);
                p
            })
            .collect();
        Ok(Self {
            blocks,
            out: Channels::load(f, name, n)?,
        })
    }

    #[inline(always)]
    fn forward(&self, x: &[i16], simd: Simd, wide: &mut Vec<i64>, out: &mut Vec<i64>) {
        let k = FFN_BLOCK * self.blocks.len();
        let n = self.out.n();
        let rows = Rows {
            count: x.len() / k,
            x_stride: k,
            out_stride: n,
        };
        wide.resize(rows.count * n, 0);
        matmul_blocks(x, &self.blocks, rows, wide, simd);
        self.out.apply(wide, out);
    }
}

/// LayerNorm parameters: gamma at 2^16 and beta at 2^31 of the output scale.
#[derive(Debug)]
struct LayerNorm {
    g: Vec<i64>,
    b: Vec<i64>,
}

impl LayerNorm {
    fn load(f: &ModelFile<'_>, name: &str) -> Result<Self, String> {
        let g = f.i64s(&format!("{name}.g"), &[HIDDEN])?;
        let b = f.i64s(&format!("{name}.b"), &[HIDDEN])?;
        if g.iter().any(|v| v.unsigned_abs() >= 1 << 40)
            || b.iter().any(|v| v.unsigned_abs() >= 1 << 60)
        {
            return Err(format!("{name}: LayerNorm parameters out of range"));
        }
        Ok(Self { g, b })
    }

    /// One row of `i32`-range integers to `i16`-range outputs.
    #[inline(always)]
    fn row(&self, x: &[i64], out: &mut [i16]) {
        let n = x.len() as i64;
        let sum: i64 = x.iter().sum();
        let mean = (sum + n / 2).div_euclid(n);
        let std = variance(x, mean).isqrt() as i64;
        let inv = if std > 0 {
            ((1i64 << 47) + std / 2) / std
        } else {
            0
        };
        for (c, o) in out.iter_mut().enumerate() {
            let norm = rshift_round((x[c] - mean) * inv, 32);
            let y = rshift_round(norm * self.g[c] + self.b[c], 31);
            *o = saturate(y, 16) as i16;
        }
    }

    #[inline(always)]
    fn forward(&self, x: &[i64], out: &mut [i16]) {
        for (row, o) in x.chunks_exact(HIDDEN).zip(out.chunks_exact_mut(HIDDEN)) {
            self.row(row, o);
        }
    }

    /// The residual connection, then LayerNorm, a row at a time (the row stays in L1):
    /// `out = ln(saturate(acc + res(residual), 32))`.
    #[inline(always)]
    fn add_and_norm(&self, acc: &mut [i64], residual: &[i16], res: Requant, out: &mut [i16]) {
        let rows = acc
            .chunks_exact_mut(HIDDEN)
            .zip(residual.chunks_exact(HIDDEN));
        for ((a, r), o) in rows.zip(out.chunks_exact_mut(HIDDEN)) {
            for (a, &r) in a.iter_mut().zip(r) {
                *a = saturate(*a + res.apply(i64::from(r)), 32);
            }
            self.row(a, o);
        }
    }
}

#[derive(Debug)]
struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    att: Requant,
    ctx: Requant,
    o: Linear,
    res1: Requant,
    ln1: LayerNorm,
    f1: Linear,
    /// GELU of every `i16` input, indexed by the input's bits as a `u16` plus 2^15.
    gelu: Box<[i16; 1 << 16]>,
    f2: BlockedLinear,
    res2: Requant,
    ln2: LayerNorm,
}

impl Layer {
    fn load(f: &ModelFile<'_>, l: usize) -> Result<Self, String> {
        let p = |s: &str| format!("l{l}.{s}");
        Ok(Self {
            q: Linear::load(f, &p("q"), HIDDEN, HIDDEN)?,
            k: Linear::load(f, &p("k"), HIDDEN, HIDDEN)?,
            v: Linear::load(f, &p("v"), HIDDEN, HIDDEN)?,
            att: scalar_requant(f, &p("att"))?,
            ctx: scalar_requant(f, &p("ctx"))?,
            o: Linear::load(f, &p("o"), HIDDEN, HIDDEN)?,
            res1: scalar_requant(f, &p("res1"))?,
            ln1: LayerNorm::load(f, &p("ln1"))?,
            f1: Linear::load(f, &p("f1"), FFN, HIDDEN)?,
            gelu: table(f.i16s(&p("gelu"), &[1 << 16])?),
            f2: BlockedLinear::load(f, &p("f2"), HIDDEN, FFN)?,
            res2: scalar_requant(f, &p("res2"))?,
            ln2: LayerNorm::load(f, &p("ln2"))?,
        })
    }
}

/// The whole model, ready to run.
#[derive(Debug)]
pub struct Model {
    /// The tokenizer's vocabulary.
    pub vocab: Vocab,
    word: Vec<i8>,
    word_m: Vec<i32>,
    pos: Vec<i8>,
    pos_m: Vec<i32>,
    emb_ln: LayerNorm,
    exp2: Box<[u32; EXP_ENTRIES]>,
    layers: Vec<Layer>,
}

thread_local! {
    /// Each thread's buffers, kept from one text to the next: in the steady state a
    /// forward pass allocates nothing.
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// Buffers of one forward pass.
#[derive(Default)]
struct Scratch {
    /// The token ids of every text of a batch, end to end, and how many each has.
    ids: Vec<u32>,
    lens: Vec<usize>,
    /// One text's token ids.
    text_ids: Vec<u32>,
    /// The hidden states, and at the end the last ones.
    hidden: Vec<i16>,
    pooled: Vec<i64>,
    sums: Sums,
    acc: Vec<i64>,
    q: Vec<i16>,
    k: Vec<i8>,
    v: Vec<i8>,
    ctx: Vec<i16>,
    h1: Vec<i16>,
    g: Vec<i16>,
    att: Attention,
}

/// The build of the model's loops a path runs: AVX-512 where the CPU has it and no
/// lesser path was forced, AVX2 on the other x86-64 SIMD paths, else the target's
/// baseline (the portable path and every other target).
enum Loops {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Baseline,
}

impl Loops {
    fn of(simd: Simd) -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Ok(Simd::Avx2 | Simd::AvxVnni | Simd::Avx512Vnni | Simd::Amx) = simd.resolve() {
            return if simd.wide_loops() {
                Self::Avx512
            } else {
                Self::Avx2
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        Self::Baseline
    }
}

/// Sums of the matrix products before requantisation.
#[derive(Default)]
struct Sums {
    narrow: Vec<i32>,
    wide: Vec<i64>,
}

/// Buffers of one head's attention.
#[derive(Default)]
struct Attention {
    keys: Panels,
    values: Panels,
    scores: Vec<i32>,
    probs: Vec<i16>,
    ctx: Vec<i32>,
    e: Vec<i64>,
}

impl Model {
    /// Checks and lays out every tensor of a parsed model file.
    pub fn load(f: &ModelFile<'_>) -> Result<Self, String> {
        let vocab_text =
            std::str::from_utf8(f.bytes("vocab")?).map_err(|_| "vocab is not UTF-8".to_owned())?;
        let vocab = Vocab::parse(vocab_text).ok_or("vocab has a repeated or missing token")?;
        let n_vocab = vocab.len();
        let word = f.i8s("emb.word", &[n_vocab, HIDDEN])?;
        let word_m = f.i32s("emb.word.m", &[n_vocab])?;
        let pos = f.i8s("emb.pos", &[POSITIONS, HIDDEN])?;
        let pos_m = f.i32s("emb.pos.m", &[POSITIONS])?;
        if word_m
            .iter()
            .chain(&pos_m)
            .any(|&m| !(0..=1 << 20).contains(&m))
        {
            return Err("embedding multipliers out of range".into());
        }
        let exp2 = f.u32s("exp2", &[EXP_ENTRIES])?;
        if exp2[0] != EXP_ONE || exp2.iter().any(|&e| e > EXP_ONE) {
            return Err("exp2 table out of range".into());
        }
        let layers = (0..LAYERS)
            .map(|l| Layer::load(f, l))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            vocab,
            word,
            word_m,
            pos,
            pos_m,
            emb_ln: LayerNorm::load(f, "emb.ln")?,
            exp2: table(exp2),
            layers,
        })
    }

    /// The unit vector of a text: tokens, encoder, mean pooling, L2 normalisation.
    pub fn embed(&self, text: &str, simd: Simd) -> Vec<i16> {
        let mut out = vec![0; HIDDEN];
        self.embed_into(text, simd, &mut out);
        out
    }

    /// [`Model::embed`] into `out` ([`HIDDEN`] values), with this thread's buffers: in
    /// the steady state nothing is allocated (on the process's own path; a path forced
    /// onto weights of the other layout copies them each product).
    pub fn embed_into(&self, text: &str, simd: Simd, out: &mut [i16]) {
        self.embed_batch_into(&[text], simd, out);
    }

    /// The unit vectors of `texts` into `out` ([`HIDDEN`] values a text, in order),
    /// each the one [`Model::embed`] gives: the texts' rows go through every product
    /// as one matrix (a layer's weights are read once for all of them), attention and
    /// pooling take one text at a time. Nothing is allocated in the steady state.
    pub fn embed_batch_into(&self, texts: &[&str], simd: Simd, out: &mut [i16]) {
        assert_eq!(out.len(), texts.len() * HIDDEN, "{} texts", texts.len());
        if texts.is_empty() {
            return;
        }
        SCRATCH.with_borrow_mut(|s| {
            s.ids.clear();
            s.lens.clear();
            for text in texts {
                self.vocab.tokenize_into(text, &mut s.text_ids);
                s.ids.extend_from_slice(&s.text_ids);
                s.lens.push(s.text_ids.len());
            }
            self.encode_with(s, simd);
            let mut rows = s.hidden.as_slice();
            for (&len, out) in s.lens.iter().zip(out.chunks_exact_mut(HIDDEN)) {
                let (text, rest) = rows.split_at(len * HIDDEN);
                let pooled = &mut s.pooled;
                pooled.clear();
                pooled.resize(HIDDEN, 0);
                add_rows(pooled, text);
                crate::embed::normalize_into(pooled, out);
                rows = rest;
            }
        });
    }

    /// The unit vector of a whole text, however long: mean pooling over the hidden
    /// states of its first `max_sequences` sequences of `MAX_TOKENS`.
    pub fn embed_long(&self, text: &str, simd: Simd, max_sequences: usize) -> Vec<i16> {
        let ids = self.vocab.word_pieces(text);
        let mut pooled = vec![0i64; HIDDEN];
        for seq in self.vocab.sequences(&ids).iter().take(max_sequences) {
            add_rows(&mut pooled, &self.encode(seq, simd));
        }
        crate::embed::normalize(&pooled)
    }

    /// The last hidden states, `ids.len()` rows of [`HIDDEN`].
    pub fn encode(&self, ids: &[u32], simd: Simd) -> Vec<i16> {
        SCRATCH.with_borrow_mut(|s| {
            s.ids.clear();
            s.ids.extend_from_slice(ids);
            s.lens.clear();
            s.lens.push(ids.len());
            self.encode_with(s, simd);
            s.hidden.clone()
        })
    }

    /// The last hidden states of the sequences `s.ids` holds end to end (`s.lens`
    /// their lengths) into `s.hidden`, a row a token.
    fn encode_with(&self, s: &mut Scratch, simd: Simd) {
        for &len in &s.lens {
            assert!((1..=POSITIONS).contains(&len), "{len} tokens");
        }
        let rows = s.ids.len();
        assert_eq!(s.lens.iter().sum::<usize>(), rows, "token counts");
        let mut x = std::mem::take(&mut s.hidden);
        x.clear();
        x.resize(rows * HIDDEN, 0);
        self.run_embedding(&mut x, s, simd);
        for buf in [&mut s.ctx, &mut s.h1] {
            buf.clear();
            buf.resize(rows * HIDDEN, 0);
        }
        for layer in &self.layers {
            self.run_layer(layer, &mut x, s, simd);
        }
        s.hidden = x;
    }

    /// The embedding rows of `ids` (word plus position, each at its row's scale) and
    /// their LayerNorm into `x`, compiled as [`Model::run_layer`]'s loops are.
    fn run_embedding(&self, x: &mut [i16], s: &mut Scratch, simd: Simd) {
        match Loops::of(simd) {
            // SAFETY: as in `run_layer`.
            #[cfg(target_arch = "x86_64")]
            Loops::Avx512 => unsafe { self.embedding_avx512(x, s) },
            // SAFETY: as in `run_layer`.
            #[cfg(target_arch = "x86_64")]
            Loops::Avx2 => unsafe { self.embedding_avx2(x, s) },
            Loops::Baseline => self.embedding(x, s),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn embedding_avx2(&self, x: &mut [i16], s: &mut Scratch) {
        self.embedding(x, s);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    fn embedding_avx512(&self, x: &mut [i16], s: &mut Scratch) {
        self.embedding(x, s);
    }

    #[inline(always)]
    fn embedding(&self, x: &mut [i16], s: &mut Scratch) {
        let (ids, lens, emb) = (&s.ids, &s.lens, &mut s.acc);
        emb.clear();
        emb.resize(ids.len() * HIDDEN, 0);
        // Each sequence's positions count from 0.
        let positions = lens.iter().flat_map(|&len| 0..len);
        for ((t, &id), row) in positions.zip(ids).zip(emb.chunks_exact_mut(HIDDEN)) {
            let id = id as usize;
            let (word_m, pos_m) = (i64::from(self.word_m[id]), i64::from(self.pos_m[t]));
            let word = &self.word[id * HIDDEN..][..HIDDEN];
            let pos = &self.pos[t * HIDDEN..][..HIDDEN];
            for ((e, &w), &p) in row.iter_mut().zip(word).zip(pos) {
                *e = i64::from(w) * word_m + i64::from(p) * pos_m;
            }
        }
        self.emb_ln.forward(emb, x);
    }

    /// One layer, its loops compiled for the path's instruction set (AVX-512 where the
    /// CPU has it and no path was forced): the same integer operations, so the same
    /// bits; [`Simd::Portable`] runs the build for the target's baseline.
    fn run_layer(&self, layer: &Layer, x: &mut [i16], s: &mut Scratch, simd: Simd) {
        match Loops::of(simd) {
            // SAFETY: the CPU has every feature `layer_avx512` is compiled for
            // (`cfs_core::cpu` allows AVX-512 only with F, BW, DQ and VL).
            #[cfg(target_arch = "x86_64")]
            Loops::Avx512 => unsafe { self.layer_avx512(layer, x, s, simd) },
            // SAFETY: the CPU has AVX2 (`resolve` refuses a path it lacks).
            #[cfg(target_arch = "x86_64")]
            Loops::Avx2 => unsafe { self.layer_avx2(layer, x, s, simd) },
            Loops::Baseline => self.layer(layer, x, s, simd),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn layer_avx2(&self, layer: &Layer, x: &mut [i16], s: &mut Scratch, simd: Simd) {
        self.layer(layer, x, s, simd);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    fn layer_avx512(&self, layer: &Layer, x: &mut [i16], s: &mut Scratch, simd: Simd) {
        self.layer(layer, x, s, simd);
    }

    #[inline(always)]
    fn layer(&self, layer: &Layer, x: &mut [i16], s: &mut Scratch, simd: Simd) {
        // Attention.
        let sums = &mut s.sums.narrow;
        let to_i8 = |v| saturate(v, 8) as i8;
        layer
            .q
            .forward_to(x, simd, sums, &mut s.q, |v| saturate(v, 8) as i16);
        layer.k.forward_to(x, simd, sums, &mut s.k, to_i8);
        layer.v.forward_to(x, simd, sums, &mut s.v, to_i8);
        let mut at = 0;
        for i in 0..s.lens.len() {
            let len = s.lens[i];
            self.attention(layer, at..at + len, s, simd);
            at += len;
        }
        layer
            .o
            .forward(&s.ctx, simd, &mut s.sums.narrow, &mut s.acc);
        layer.ln1.add_and_norm(&mut s.acc, x, layer.res1, &mut s.h1);
        // Feed-forward: the first product a block of rows at a time (its sums stay in
        // L2), then a row at a time the arithmetic pass vectorised and the GELU lookups
        // reading the row from L1.
        s.g.resize(s.h1.len() / HIDDEN * FFN, 0);
        let wide = simd.wide_loops();
        let blocks = s.h1.chunks(FFN_ROWS * HIDDEN);
        for (h1, g) in blocks.zip(s.g.chunks_mut(FFN_ROWS * FFN)) {
            let sums = layer.f1.sums(h1, simd, &mut s.sums.narrow);
            for (sums, g) in sums.chunks_exact(FFN).zip(g.chunks_exact_mut(FFN)) {
                layer.f1.out.apply_into(sums, g, |v| saturate(v, 16) as i16);
                lookups::gelu(&layer.gelu, g, wide);
            }
        }
        layer.f2.forward(&s.g, simd, &mut s.sums.wide, &mut s.acc);
        layer.ln2.add_and_norm(&mut s.acc, &s.h1, layer.res2, x);
    }

    /// Integer softmax attention of every head of one sequence (its `rows`), into
    /// `s.ctx`: a head's keys and values are laid out as the kernel's panels (they are
    /// saturated to 8 bits), its queries read in place.
    #[inline(always)]
    fn attention(&self, layer: &Layer, rows: Range<usize>, s: &mut Scratch, simd: Simd) {
        let t_len = rows.len();
        let at = rows.start * HIDDEN..rows.end * HIDDEN;
        let (q, k, v) = (&s.q[at.clone()], &s.k[at.clone()], &s.v[at.clone()]);
        let out = &mut s.ctx[at];
        let t_pairs = t_len.next_multiple_of(2);
        let a = &mut s.att;
        let wide = simd.wide_loops();
        // A head's products are small (32 inputs; 32 columns): AMX's tiles, half empty
        // and configured a call, run them slower than AVX-512 VNNI's registers do.
        let simd = match simd.resolve() {
            Ok(Simd::Amx) if Simd::Avx512Vnni.resolve().is_ok() => Simd::Avx512Vnni,
            _ => simd,
        };
        let layout = simd.layout();
        let softmax = lookups::Softmax {
            table: &self.exp2,
            att: layer.att,
        };
        a.e.resize(t_len, 0);
        for h in 0..HEADS {
            let c0 = h * HEAD_DIM;
            let keys = Source::Rows {
                data: &k[c0..],
                stride: HIDDEN,
            };
            let values = Source::Cols {
                data: &v[c0..],
                stride: HIDDEN,
            };
            a.keys.fill(t_len, HEAD_DIM, layout, keys);
            a.values.fill(HEAD_DIM, t_pairs, layout, values);
            let stride = a.keys.n_padded();
            a.scores.resize(t_len * stride, 0);
            let rows = Rows {
                count: t_len,
                x_stride: HIDDEN,
                out_stride: stride,
            };
            matmul(&q[c0..], &a.keys, rows, &mut a.scores, simd);
            a.probs.clear();
            a.probs.resize(t_len * t_pairs, 0);
            for (row, prow) in a
                .scores
                .chunks_exact(stride)
                .zip(a.probs.chunks_exact_mut(t_pairs))
            {
                let (e, p) = (&mut a.e, &mut prow[..t_len]);
                softmax.row(&row[..t_len], e, p, wide);
            }
            let rows = Rows {
                count: t_len,
                x_stride: t_pairs,
                out_stride: HEAD_DIM,
            };
            a.ctx.resize(t_len * HEAD_DIM, 0);
            matmul(&a.probs, &a.values, rows, &mut a.ctx, simd);
            for (sums, ctx) in a
                .ctx
                .chunks_exact(HEAD_DIM)
                .zip(out.chunks_exact_mut(HIDDEN))
            {
                for (c, &sum) in ctx[c0..][..HEAD_DIM].iter_mut().zip(sums) {
                    *c = saturate(layer.ctx.apply_i32(sum), 8) as i16;
                }
            }
        }
    }
}

/// `floor(sum (v - mean)^2 / n)` of a row whose rounded mean is `mean`: in `i64` when
/// the row's spread keeps every square under 2^54 (a sum of 384 stays under 2^63; the
/// mean lies between the row's least and greatest value), else in `i128`. The same
/// integer either way.
#[inline(always)]
fn variance(x: &[i64], mean: i64) -> u128 {
    let n = x.len() as i64;
    let (lo, hi) = x
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if hi - lo < 1 << 27 && n <= 512 {
        let sum: i64 = x.iter().map(|&v| (v - mean) * (v - mean)).sum();
        return (sum / n) as u128;
    }
    let sum: i128 = x.iter().map(|&v| i128::from(v - mean).pow(2)).sum();
    (sum / i128::from(n)) as u128
}

/// The two table lookups of a layer, as AVX-512 gathers where the layer loops are
/// compiled for AVX-512: the same table entries, so the same bits.
mod lookups {
    use super::{EXP_ENTRIES, Requant, rshift_round};

    /// Integer softmax of rows of attention scores: the scores to log2 units (10
    /// fractional bits) by `att`, `2^-d` of each one's distance `d` below the greatest
    /// from `table`.
    #[derive(Clone, Copy)]
    pub(super) struct Softmax<'t> {
        pub(super) table: &'t [u32; EXP_ENTRIES],
        pub(super) att: Requant,
    }

    impl Softmax<'_> {
        /// One row into probabilities at 2^15, through one division; `e` holds at
        /// least `row.len()` values of scratch.
        #[inline(always)]
        pub(super) fn row(self, row: &[i32], e: &mut [i64], out: &mut [i16], wide: bool) {
            #[cfg(target_arch = "x86_64")]
            if wide {
                // SAFETY: the layer loops are compiled for AVX-512 only where the CPU
                // has it (`Simd::wide_loops`).
                unsafe { avx512::softmax(self, row, e, out) };
                return;
            }
            let _ = wide;
            softmax_scalar(self, row, e, out);
        }
    }

    /// The reference: each step over the whole row in turn.
    #[inline(always)]
    fn softmax_scalar(s: Softmax<'_>, row: &[i32], e: &mut [i64], out: &mut [i16]) {
        let (table, att) = (s.table, s.att);
        let e = &mut e[..row.len()];
        for (ej, &a) in e.iter_mut().zip(row) {
            *ej = att.apply_i32(a);
        }
        let max = e.iter().copied().max().unwrap_or(0);
        for ej in e.iter_mut() {
            *ej = i64::from(exp2(table, max - *ej));
        }
        let total: i64 = e.iter().sum();
        let factor = (1i64 << 62) / total;
        for (o, &ej) in out.iter_mut().zip(e.iter()) {
            *o = probability(ej, factor);
        }
    }

    /// A probability at 2^15 from its `2^-d` value and the row's `2^62 / total`.
    #[inline(always)]
    fn probability(e: i64, factor: i64) -> i16 {
        rshift_round(e * factor, 47).min(32767) as i16
    }

    /// `exp2[f] >> n` of a distance `d >= 0` (`n = d >> 10`, `f = d % 1024`).
    /// `exp2[f] <= 2^30`, so a shift of 31 or more gives 0, as the spec says; so does
    /// every distance from 31 * 1024 up, which lets the lookup run on 15-bit distances.
    #[inline(always)]
    fn exp2(table: &[u32; EXP_ENTRIES], d: i64) -> u32 {
        let d = d.min(32767) as u32;
        table[d as usize % EXP_ENTRIES] >> (d >> 10)
    }

    /// GELU's value of every input, in place: the table is indexed by the input's bits
    /// plus 2^15, its `u16` bits with the top bit flipped.
    #[inline(always)]
    pub(super) fn gelu(table: &[i16; 1 << 16], g: &mut [i16], wide: bool) {
        #[cfg(target_arch = "x86_64")]
        if wide {
            // SAFETY: as in `softmax`.
            unsafe { avx512::gelu(table, g) };
            return;
        }
        let _ = wide;
        gelu_scalar(table, g);
    }

    #[inline(always)]
    fn gelu_scalar(table: &[i16; 1 << 16], g: &mut [i16]) {
        for g in g {
            *g = table[usize::from(*g as u16 ^ 0x8000)];
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx512 {
        use std::arch::x86_64::*;

        use super::EXP_ENTRIES;

        /// [`super::Softmax::row`] in three passes over the row: the greatest score (the
        /// requantisation by `m >= 0` keeps the order, so its requantised value is the
        /// greatest), the table's values by gathers of sixteen and their sum, and the
        /// probabilities eight at a time by a 32 x 32-bit multiply where the factor fits
        /// in 32 bits (every row but one whose other entries are all zero).
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
        pub(in super::super) fn softmax(
            s: super::Softmax<'_>,
            row: &[i32],
            e: &mut [i64],
            out: &mut [i16],
        ) {
            let (table, att) = (s.table, s.att);
            let n = row.len();
            let (e, out) = (&mut e[..n], &mut out[..n]);
            let main = n / 16 * 16;
            // SAFETY: every load and store reads or writes sixteen values at `i` < `main`
            // <= n in `row` and `e`; every gather index is `d % 1024`.
            let (max, mut total) = unsafe {
                let mut lanes = _mm512_set1_epi32(i32::MIN);
                for i in (0..main).step_by(16) {
                    lanes = _mm512_max_epi32(lanes, _mm512_loadu_si512(row[i..].as_ptr().cast()));
                }
                let greatest = row[main..]
                    .iter()
                    .fold(_mm512_reduce_max_epi32(lanes), |a, &b| a.max(b));
                let max = att.apply_i32(greatest);
                let m = _mm512_set1_epi64(att.m);
                let round = _mm512_set1_epi64(1 << (att.sh - 1));
                let sh = _mm512_set1_epi64(i64::from(att.sh));
                let (top, cap) = (_mm512_set1_epi64(max), _mm512_set1_epi64(32767));
                // Eight distances below the greatest, capped at 15 bits.
                let distances = |a: __m256i| {
                    let a = _mm512_cvtepi32_epi64(a);
                    let v = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(a, m), round), sh);
                    _mm512_cvtepi64_epi32(_mm512_min_epi64(_mm512_sub_epi64(top, v), cap))
                };
                let mut sum = _mm512_setzero_si512();
                for i in (0..main).step_by(16) {
                    let lo = distances(_mm256_loadu_si256(row[i..].as_ptr().cast()));
                    let hi = distances(_mm256_loadu_si256(row[i + 8..].as_ptr().cast()));
                    let d = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                    let f = _mm512_and_si512(d, _mm512_set1_epi32(EXP_ENTRIES as i32 - 1));
                    let x = _mm512_i32gather_epi32::<4>(f, table.as_ptr().cast());
                    let x = _mm512_srlv_epi32(x, _mm512_srli_epi32::<10>(d));
                    let lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(x));
                    let hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(x));
                    _mm512_storeu_si512(e[i..].as_mut_ptr().cast(), lo);
                    _mm512_storeu_si512(e[i + 8..].as_mut_ptr().cast(), hi);
                    sum = _mm512_add_epi64(sum, _mm512_add_epi64(lo, hi));
                }
                (max, _mm512_reduce_add_epi64(sum))
            };
            for (ej, &a) in e[main..].iter_mut().zip(&row[main..]) {
                *ej = i64::from(super::exp2(table, max - att.apply_i32(a)));
                total += *ej;
            }
            let factor = (1i64 << 62) / total;
            let tail = if factor < 1 << 32 { n / 8 * 8 } else { 0 };
            // SAFETY: each load and store reads or writes eight values at `i` < `tail` <= n
            // in `e` and `out`.
            unsafe {
                let (f, half) = (_mm512_set1_epi64(factor), _mm512_set1_epi64(1 << 46));
                for i in (0..tail).step_by(8) {
                    let x = _mm512_loadu_si512(e[i..].as_ptr().cast());
                    let p = _mm512_srli_epi64::<47>(_mm512_add_epi64(_mm512_mul_epu32(x, f), half));
                    let p = _mm512_cvtepi64_epi16(_mm512_min_epi64(p, _mm512_set1_epi64(32767)));
                    _mm_storeu_si128(out[i..].as_mut_ptr().cast(), p);
                }
            }
            for (o, &ej) in out[tail..].iter_mut().zip(&e[tail..]) {
                *o = super::probability(ej, factor);
            }
        }

        /// Sixteen inputs at a time: a gather of the aligned pair of entries holding
        /// each one (so nothing past the table is read), then its half.
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
        pub(in super::super) fn gelu(table: &[i16; 1 << 16], g: &mut [i16]) {
            let mut chunks = g.chunks_exact_mut(16);
            for c in &mut chunks {
                // SAFETY: `c` holds sixteen values; every pair index is below 2^15, so
                // each 4-byte read lies inside the table of 2^16 `i16`.
                unsafe {
                    let v = _mm256_loadu_si256(c.as_ptr().cast());
                    let idx = _mm512_xor_si512(_mm512_cvtepu16_epi32(v), _mm512_set1_epi32(0x8000));
                    let pair = _mm512_srli_epi32::<1>(idx);
                    let both = _mm512_i32gather_epi32::<4>(pair, table.as_ptr().cast());
                    let half = _mm512_slli_epi32::<4>(_mm512_and_si512(idx, _mm512_set1_epi32(1)));
                    let r = _mm512_cvtepi32_epi16(_mm512_srlv_epi32(both, half));
                    _mm256_storeu_si256(c.as_mut_ptr().cast(), r);
                }
            }
            super::gelu_scalar(table, chunks.into_remainder());
        }
    }
}

/// A table checked for its length at load, so that indexing it needs no check.
fn table<T, const N: usize>(values: Vec<T>) -> Box<[T; N]> {
    values
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("the model file reader checked the length"))
}

/// Adds every row of [`HIDDEN`] hidden states to `pooled`, column by column.
fn add_rows(pooled: &mut [i64], hidden: &[i16]) {
    for row in hidden.chunks_exact(HIDDEN) {
        for (p, &v) in pooled.iter_mut().zip(row) {
            *p += i64::from(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variance_is_the_same_integer_on_both_sides_of_the_fast_path() {
        let wide = |x: &[i64], mean: i64| {
            let sum: i128 = x.iter().map(|&v| i128::from(v - mean).pow(2)).sum();
            (sum / x.len() as i128) as u128
        };
        let mut s = 7u64;
        for spread in [1i64, 1000, (1 << 27) - 1, 1 << 27, 1 << 33] {
            // Values from -spread/2 up, the row's extremes exactly `spread` apart.
            let mut row: Vec<i64> = (0..HIDDEN)
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (s >> 11) as i64 % (spread + 1) - spread / 2
                })
                .collect();
            row[0] = -spread / 2;
            row[1] = spread - spread / 2;
            let n = row.len() as i64;
            let mean = (row.iter().sum::<i64>() + n / 2).div_euclid(n);
            assert_eq!(variance(&row, mean), wide(&row, mean), "spread {spread}");
        }
    }

    /// The gathers read the same entries as the scalar lookups and softmax gives the
    /// same probabilities: every GELU input, and score rows whose distances run across
    /// the table, past its 31-shift end and far beyond.
    #[test]
    fn lookups_gather_what_the_scalar_loops_read() {
        if !Simd::Auto.wide_loops() {
            return;
        }
        let gelu: Box<[i16; 1 << 16]> = table(
            (0..1 << 16)
                .map(|i: i32| (i * 7919 % 65521 - 32760) as i16)
                .collect(),
        );
        let inputs: Vec<i16> = (i16::MIN..=i16::MAX).collect();
        let (mut wide, mut narrow) = (inputs.clone(), inputs);
        lookups::gelu(&gelu, &mut wide[..65_533], true);
        lookups::gelu(&gelu, &mut narrow[..65_533], false);
        assert_eq!(wide, narrow);

        let exp2: Box<[u32; EXP_ENTRIES]> = table(
            (0..EXP_ENTRIES as u32)
                .map(|f| EXP_ONE - f * 1000)
                .collect(),
        );
        // Scores whose distances below the greatest run across the table, past its
        // 31-shift end and far beyond, at the extremes of `i32`, in rows of every tail
        // length and of one entry (the factor 2^32 that takes the scalar pass).
        let mut seed = 5u64;
        let mut next = move |span: i64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 16) as i64 % span
        };
        let reqs = [(1, 1), (1 << 10, 10), ((1 << 23) - 1, 30), (3_000_000, 40)];
        for (m, sh) in reqs {
            let att = Requant { m, sh };
            for len in (1..=17).chain([101, 128, 512]) {
                let spans = [1 << 8, 1 << 16, 1 << 31, 1 << 32];
                let rows: Vec<Vec<i32>> = spans
                    .iter()
                    .map(|&span| (0..len).map(|_| (next(span) - span / 2) as i32).collect())
                    .chain([
                        vec![i32::MAX; len],
                        (0..len)
                            .map(|t| if t % 2 == 0 { i32::MIN } else { i32::MAX })
                            .collect(),
                    ])
                    .collect();
                for row in rows {
                    let (mut e, mut wide, mut narrow) = (vec![0; len], vec![0; len], vec![0; len]);
                    let softmax = lookups::Softmax { table: &exp2, att };
                    softmax.row(&row, &mut e, &mut wide, true);
                    softmax.row(&row, &mut e, &mut narrow, false);
                    assert_eq!(wide, narrow, "m {m}, sh {sh}, {row:?}");
                }
            }
        }
    }
}
