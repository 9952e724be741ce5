//! The integer MiniLM encoder: weights checked and laid out for the kernel, and the
//! forward pass from token ids to an `i16` unit vector. Every step is the integer
//! operation `docs/spec.md` ("minilm-int: the forward pass") names, in its order; the
//! bounds checked at load are the ones that keep every intermediate inside `i64` (and
//! every dot product inside `i32`), so no step can overflow.

#![allow(unsafe_code)]

use super::file::ModelFile;
use super::kernel::{Simd, matmul};
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
/// fixed-point multiplier of each channel and the layer's one shift.
#[derive(Debug)]
struct Channels {
    b: Vec<i64>,
    m: Vec<i64>,
    sh: u32,
}

impl Channels {
    /// `requant(sum_j + b_j)` for every row of `sums` (rows of one value per channel).
    #[inline(always)]
    fn apply<T: Copy + Into<i64>>(&self, sums: &[T], out: &mut Vec<i64>) {
        out.clear();
        for row in sums.chunks_exact(self.b.len()) {
            out.extend(
                row.iter()
                    .zip(&self.b)
                    .zip(&self.m)
                    .map(|((&a, &b), &m)| rshift_round((a.into() + b) * m, self.sh)),
            );
        }
    }
}

/// A linear layer: `i8` weights widened to `i16` rows of `k`, then its [`Channels`].
#[derive(Debug)]
struct Linear {
    w: Vec<i16>,
    out: Channels,
    k: usize,
}

impl Linear {
    fn load(f: &ModelFile<'_>, name: &str, n: usize, k: usize) -> Result<Self, String> {
        let w = f.i8s_as_i16(&format!("{name}.w"), &[n, k])?;
        let b = f.i64s(&format!("{name}.b"), &[n])?;
        let m = f.i64s(&format!("{name}.m"), &[n])?;
        let sh = f.i32s(&format!("{name}.sh"), &[1])?[0];
        for &mj in &m {
            check_multiplier(name, mj, sh)?;
        }
        if b.iter().any(|v| v.unsigned_abs() > 1 << 38) {
            return Err(format!("{name}: bias out of range"));
        }
        Ok(Self {
            w,
            out: Channels {
                b,
                m,
                sh: sh as u32,
            },
            k,
        })
    }

    /// `requant(x . w_j + b_j)` for every row of `x` and channel `j`, into `out`.
    #[inline(always)]
    fn forward(&self, x: &[i16], simd: Simd, out: &mut Vec<i64>) {
        let t_len = x.len() / self.k;
        let mut acc = vec![0i32; t_len * self.out.b.len()];
        matmul(x, &self.w, self.k, &mut acc, simd);
        self.out.apply(&acc, out);
    }
}

/// The second feed-forward product, `k` = 1536 split into blocks of 384 whose `i32`
/// sums are exact; the blocks are added in `i64`.
#[derive(Debug)]
struct BlockedLinear {
    blocks: Vec<Vec<i16>>,
    out: Channels,
}

impl BlockedLinear {
    fn new(lin: Linear) -> Self {
        let blocks = (0..lin.k / FFN_BLOCK)
            .map(|q| {
                let mut block = Vec::with_capacity(lin.w.len() / (lin.k / FFN_BLOCK));
                for row in lin.w.chunks_exact(lin.k) {
                    block.extend_from_slice(&row[q * FFN_BLOCK..(q + 1) * FFN_BLOCK]);
                }
                block
            })
            .collect();
        Self {
            blocks,
            out: lin.out,
        }
    }

    #[inline(always)]
    fn forward(&self, x: &[i16], simd: Simd, out: &mut Vec<i64>) {
        let k = FFN_BLOCK * self.blocks.len();
        let t_len = x.len() / k;
        let n = self.out.b.len();
        let mut sums = vec![0i64; t_len * n];
        let mut part = vec![0i32; t_len * n];
        let mut xs = vec![0i16; t_len * FFN_BLOCK];
        for (q, w) in self.blocks.iter().enumerate() {
            for (dst, row) in xs.chunks_exact_mut(FFN_BLOCK).zip(x.chunks_exact(k)) {
                dst.copy_from_slice(&row[q * FFN_BLOCK..(q + 1) * FFN_BLOCK]);
            }
            matmul(&xs, w, FFN_BLOCK, &mut part, simd);
            for (s, &p) in sums.iter_mut().zip(&part) {
                *s += i64::from(p);
            }
        }
        self.out.apply(&sums, out);
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
        let var: i128 =
            x.iter().map(|&v| i128::from(v - mean).pow(2)).sum::<i128>() / i128::from(n);
        let std = crate::embed::isqrt(var as u128) as i64;
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
    gelu: Vec<i16>,
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
            gelu: f.i16s(&p("gelu"), &[1 << 16])?,
            f2: BlockedLinear::new(Linear::load(f, &p("f2"), HIDDEN, FFN)?),
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
    word_m: Vec<i64>,
    pos: Vec<i8>,
    pos_m: Vec<i64>,
    emb_ln: LayerNorm,
    exp2: Vec<u32>,
    layers: Vec<Layer>,
}

/// Buffers of one forward pass.
struct Scratch {
    acc: Vec<i64>,
    q: Vec<i16>,
    k: Vec<i16>,
    v: Vec<i16>,
    ctx: Vec<i16>,
    h1: Vec<i16>,
    g: Vec<i16>,
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
            word_m: word_m.into_iter().map(i64::from).collect(),
            pos,
            pos_m: pos_m.into_iter().map(i64::from).collect(),
            emb_ln: LayerNorm::load(f, "emb.ln")?,
            exp2,
            layers,
        })
    }

    /// The unit vector of a text: tokens, encoder, mean pooling, L2 normalisation.
    pub fn embed(&self, text: &str, simd: Simd) -> Vec<i16> {
        self.embed_ids(&self.vocab.tokenize(text), simd)
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

    /// The unit vector of a token sequence (1 to [`POSITIONS`] ids, each in the vocabulary).
    pub fn embed_ids(&self, ids: &[u32], simd: Simd) -> Vec<i16> {
        let mut pooled = vec![0i64; HIDDEN];
        add_rows(&mut pooled, &self.encode(ids, simd));
        crate::embed::normalize(&pooled)
    }

    /// The last hidden states, `ids.len()` rows of [`HIDDEN`].
    pub fn encode(&self, ids: &[u32], simd: Simd) -> Vec<i16> {
        assert!(
            !ids.is_empty() && ids.len() <= POSITIONS,
            "{} tokens",
            ids.len()
        );
        let t_len = ids.len();
        let mut x = vec![0i16; t_len * HIDDEN];
        let mut emb = Vec::with_capacity(t_len * HIDDEN);
        for (t, &id) in ids.iter().enumerate() {
            let id = id as usize;
            let word = &self.word[id * HIDDEN..(id + 1) * HIDDEN];
            let pos = &self.pos[t * HIDDEN..(t + 1) * HIDDEN];
            emb.extend(
                word.iter()
                    .zip(pos)
                    .map(|(&w, &p)| i64::from(w) * self.word_m[id] + i64::from(p) * self.pos_m[t]),
            );
        }
        self.emb_ln.forward(&emb, &mut x);
        let mut s = Scratch {
            acc: Vec::new(),
            q: Vec::new(),
            k: Vec::new(),
            v: Vec::new(),
            ctx: vec![0; t_len * HIDDEN],
            h1: vec![0; t_len * HIDDEN],
            g: Vec::new(),
        };
        for layer in &self.layers {
            self.run_layer(layer, &mut x, &mut s, simd);
        }
        x
    }

    /// One layer, its loops compiled for the best instruction set the CPU has (the
    /// same integer operations, so the same bits; `Simd::Off` runs the portable build).
    fn run_layer(&self, layer: &Layer, x: &mut [i16], s: &mut Scratch, simd: Simd) {
        #[cfg(target_arch = "x86_64")]
        if simd == Simd::Auto {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("avx512vl")
            {
                // SAFETY: the CPU has every feature `layer_avx512` is compiled for.
                unsafe { self.layer_avx512(layer, x, s, simd) };
                return;
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                unsafe { self.layer_avx2(layer, x, s, simd) };
                return;
            }
        }
        self.layer(layer, x, s, simd);
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
        let narrow = |acc: &[i64], bits: u32, out: &mut Vec<i16>| {
            out.clear();
            out.extend(acc.iter().map(|&a| saturate(a, bits) as i16));
        };
        // Attention.
        layer.q.forward(x, simd, &mut s.acc);
        narrow(&s.acc, 8, &mut s.q);
        layer.k.forward(x, simd, &mut s.acc);
        narrow(&s.acc, 8, &mut s.k);
        layer.v.forward(x, simd, &mut s.acc);
        narrow(&s.acc, 8, &mut s.v);
        self.attention(layer, s, simd);
        layer.o.forward(&s.ctx, simd, &mut s.acc);
        for (a, &r) in s.acc.iter_mut().zip(x.iter()) {
            *a = saturate(*a + layer.res1.apply(i64::from(r)), 32);
        }
        layer.ln1.forward(&s.acc, &mut s.h1);
        // Feed-forward.
        layer.f1.forward(&s.h1, simd, &mut s.acc);
        s.g.clear();
        s.g.extend(
            s.acc
                .iter()
                .map(|&a| layer.gelu[(saturate(a, 16) + 32768) as usize]),
        );
        layer.f2.forward(&s.g, simd, &mut s.acc);
        for (a, &r) in s.acc.iter_mut().zip(s.h1.iter()) {
            *a = saturate(*a + layer.res2.apply(i64::from(r)), 32);
        }
        layer.ln2.forward(&s.acc, x);
    }

    /// Integer softmax attention of every head, into `s.ctx`.
    #[inline(always)]
    fn attention(&self, layer: &Layer, s: &mut Scratch, simd: Simd) {
        let t_len = s.q.len() / HIDDEN;
        let t_pad = t_len.next_multiple_of(super::kernel::K_STEP);
        let mut qh = vec![0i16; t_len * HEAD_DIM];
        let mut kh = vec![0i16; t_len * HEAD_DIM];
        let mut vt = vec![0i16; HEAD_DIM * t_pad];
        let mut scores = vec![0i32; t_len * t_len];
        let mut probs = vec![0i16; t_len * t_pad];
        let mut ctx = vec![0i32; t_len * HEAD_DIM];
        let mut e = vec![0i64; t_len];
        for h in 0..HEADS {
            let cols = h * HEAD_DIM..(h + 1) * HEAD_DIM;
            for t in 0..t_len {
                let src = t * HIDDEN + cols.start..t * HIDDEN + cols.end;
                qh[t * HEAD_DIM..(t + 1) * HEAD_DIM].copy_from_slice(&s.q[src.clone()]);
                kh[t * HEAD_DIM..(t + 1) * HEAD_DIM].copy_from_slice(&s.k[src.clone()]);
                for (d, &v) in s.v[src].iter().enumerate() {
                    vt[d * t_pad + t] = v;
                }
            }
            matmul(&qh, &kh, HEAD_DIM, &mut scores, simd);
            for (row, prow) in scores
                .chunks_exact(t_len)
                .zip(probs.chunks_exact_mut(t_pad))
            {
                self.softmax_row(layer.att, row, &mut e, prow);
            }
            matmul(&probs, &vt, t_pad, &mut ctx, simd);
            for t in 0..t_len {
                for d in 0..HEAD_DIM {
                    let c = layer.ctx.apply(i64::from(ctx[t * HEAD_DIM + d]));
                    s.ctx[t * HIDDEN + cols.start + d] = saturate(c, 8) as i16;
                }
            }
        }
    }

    /// Scores to log2 units (10 fractional bits), `2^-x` from the table, probabilities
    /// at 2^15 through one division per row.
    #[inline(always)]
    fn softmax_row(&self, att: Requant, row: &[i32], e: &mut [i64], out: &mut [i16]) {
        for (ej, &a) in e.iter_mut().zip(row) {
            *ej = att.apply(i64::from(a));
        }
        let max = e.iter().copied().max().unwrap_or(0);
        let mut total = 0i64;
        for ej in e.iter_mut() {
            let d = max - *ej;
            // exp2[f] <= 2^30, so a shift of 31 or more gives 0, as the spec says.
            let (n, f) = ((d >> 10).min(31) as u32, (d & 1023) as usize);
            *ej = i64::from(self.exp2[f] >> n);
            total += *ej;
        }
        let factor = (1i64 << 62) / total;
        for (o, &ej) in out.iter_mut().zip(e.iter()) {
            *o = rshift_round(ej * factor, 47).min(32767) as i16;
        }
    }
}

/// Adds every row of [`HIDDEN`] hidden states to `pooled`, column by column.
fn add_rows(pooled: &mut [i64], hidden: &[i16]) {
    for row in hidden.chunks_exact(HIDDEN) {
        for (p, &v) in pooled.iter_mut().zip(row) {
            *p += i64::from(v);
        }
    }
}
