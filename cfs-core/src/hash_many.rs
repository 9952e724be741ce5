//! BLAKE3 of many short inputs at once: the text hashes and leaves of a document's
//! chunks, the nodes of a Merkle layer.
//!
//! A chunk's text and encoding are a few hundred bytes to a few kilobytes, so the
//! `blake3` crate hashes each one a 64-byte block at a time, one compression after the
//! other on one lane of the vector unit. Here the BLAKE3 chunks (1 KiB pieces) of all the
//! inputs share the lanes of a vector: each lane compresses a block of its piece, and a
//! lane whose piece is done takes the next (longest first, so that few lanes idle at the
//! end). The pieces' chaining values are then merged a tree level at a time, the parent
//! nodes of every input side by side. The result is BLAKE3's, bit for bit, on every path
//! (checked against the `blake3` crate in the tests); only the speed depends on the CPU.
//!
//! The compression is written over arrays of sixteen lanes and compiled for AVX2 (chosen
//! at run time) and for the target's baseline, which is what other CPUs get (a vector
//! unit there, e.g. NEON, still runs the lanes together); for AVX-512 it is written in
//! its instructions, the state and the message held in its 32 registers.

use std::cmp::Reverse;

use blake3::hazmat::{HasherExt, merge_subtrees_non_root, merge_subtrees_root};

/// How the inputs are hashed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode<'a> {
    /// `blake3::hash`.
    Plain,
    /// `blake3::derive_key` under the context whose key this is
    /// (`blake3::hazmat::hash_derive_key_context`).
    DeriveKey(&'a [u8; 32]),
}

/// Pieces or parents compressed side by side.
const LANES: usize = 16;
/// Fewer pieces or parents than this are hashed one after the other by the `blake3`
/// crate. Sixteen lanes cost about five of its one-lane compressions, but a call of the
/// crate costs more than its compression (a hasher made, finalized): 38-byte inputs in
/// groups of 3, 4 and 5 hash 15%, 31% and 43% faster side by side than one by one, and
/// the roots of 8-leaf trees (a bucket's) 9% faster; groups of 2 are not faster (bench
/// `small_batches`).
const MIN_LANES: usize = 3;
const BLOCK_LEN: usize = 64;
const CHUNK_LEN: usize = 1024;

const CHUNK_START: u32 = 1;
const CHUNK_END: u32 = 2;
const PARENT: u32 = 4;
const ROOT: u32 = 8;
const DERIVE_KEY_MATERIAL: u32 = 64;

const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];

/// The message words each of the seven rounds reads, in order (BLAKE3's permutation
/// applied round after round).
const SCHEDULE: [[usize; 16]; 7] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8],
    [3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1],
    [10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6],
    [12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4],
    [9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7],
    [11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13],
];

/// A chaining value, as words.
type Cv = [u32; 8];
/// One word of every lane.
type Lanes = [u32; LANES];

/// BLAKE3 of each input under `mode`, in input order.
pub(crate) fn hash_many(inputs: &[&[u8]], mode: Mode<'_>) -> Vec<[u8; 32]> {
    let (key, flags) = match mode {
        Mode::Plain => (IV, 0),
        Mode::DeriveKey(key) => (words_of(key), DERIVE_KEY_MATERIAL),
    };
    let pieces = pieces_of(inputs);
    if pieces.len() < MIN_LANES {
        return inputs.iter().map(|input| one(input, mode)).collect();
    }
    let cvs = compress_pieces(&pieces, &key, flags);
    if pieces.len() == inputs.len() {
        // Every input is one piece (at most 1 KiB), its root already: nothing to merge.
        return cvs.iter().map(bytes_of).collect();
    }
    merge_all(inputs, cvs, &key, flags, mode)
        .iter()
        .map(bytes_of)
        .collect()
}

/// BLAKE3 of one input under `mode`, by the `blake3` crate.
fn one(input: &[u8], mode: Mode<'_>) -> [u8; 32] {
    let mut hasher = match mode {
        Mode::Plain => blake3::Hasher::new(),
        Mode::DeriveKey(key) => blake3::Hasher::new_from_context_key(key),
    };
    *hasher.update(input).finalize().as_bytes()
}

/// One BLAKE3 chunk of an input: its bytes, its index in the input, and whether it is
/// the whole input (then its output is the root).
struct Piece<'a> {
    bytes: &'a [u8],
    counter: u64,
    root: bool,
}

impl Piece<'_> {
    /// Compressions the piece takes: one a block, at least one.
    fn blocks(&self) -> usize {
        self.bytes.len().div_ceil(BLOCK_LEN).max(1)
    }

    /// Block `b`: its bytes (at most 64) and its flags.
    fn block(&self, b: usize, flags: u32) -> (&[u8], u32) {
        let start = (b * BLOCK_LEN).min(self.bytes.len());
        let end = (start + BLOCK_LEN).min(self.bytes.len());
        let mut f = flags;
        if b == 0 {
            f |= CHUNK_START;
        }
        if b + 1 == self.blocks() {
            f |= CHUNK_END;
            if self.root {
                f |= ROOT;
            }
        }
        (&self.bytes[start..end], f)
    }
}

fn pieces_in(len: usize) -> usize {
    len.div_ceil(CHUNK_LEN).max(1)
}

/// Every input's pieces, input after input.
fn pieces_of<'a>(inputs: &[&'a [u8]]) -> Vec<Piece<'a>> {
    let mut pieces = Vec::with_capacity(inputs.len());
    for input in inputs {
        if pieces_in(input.len()) == 1 {
            pieces.push(Piece {
                bytes: input,
                counter: 0,
                root: true,
            });
            continue;
        }
        for (i, bytes) in input.chunks(CHUNK_LEN).enumerate() {
            pieces.push(Piece {
                bytes,
                counter: i as u64,
                root: false,
            });
        }
    }
    pieces
}

/// Each input's root from its pieces' chaining values (`cvs`, input after input): a
/// tree level at a time, each pair of neighbours merged into its parent (the last of an
/// odd level carried up), every input's parents of a level compressed together. This
/// is BLAKE3's tree: the left subtree holds the largest power of two of chunks. Each
/// input's level is kept in place in `cvs`, at the start of its pieces' span: no
/// allocation per input (a document's leaves are thousands of inputs a call).
fn merge_all(inputs: &[&[u8]], mut cvs: Vec<Cv>, key: &Cv, flags: u32, mode: Mode<'_>) -> Vec<Cv> {
    // Each input's span of `cvs`: where it starts and the width of its level.
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(inputs.len());
    let mut start = 0;
    for input in inputs {
        let width = pieces_in(input.len());
        spans.push((start, width));
        start += width;
    }
    let mut parents: Vec<([u8; BLOCK_LEN], u32)> = Vec::new();
    loop {
        parents.clear();
        for &(start, width) in spans.iter().filter(|(_, width)| *width > 1) {
            let root = if width == 2 { ROOT } else { 0 };
            for pair in cvs[start..start + width].chunks_exact(2) {
                parents.push((block_of(&pair[0], &pair[1]), flags | PARENT | root));
            }
        }
        if parents.is_empty() {
            return spans.iter().map(|&(start, _)| cvs[start]).collect();
        }
        let mut merged = compress_parents(&parents, key, mode).into_iter();
        for (start, width) in spans.iter_mut().filter(|(_, width)| *width > 1) {
            let pairs = *width / 2;
            for (slot, parent) in cvs[*start..*start + pairs].iter_mut().zip(merged.by_ref()) {
                *slot = parent;
            }
            if *width % 2 == 1 {
                cvs[*start + pairs] = cvs[*start + *width - 1];
            }
            *width = pairs + *width % 2;
        }
    }
}

/// The chaining value of each parent node (its message words and flags): sixteen at a
/// time, the few left over one at a time.
fn compress_parents(parents: &[([u8; BLOCK_LEN], u32)], key: &Cv, mode: Mode<'_>) -> Vec<Cv> {
    let mut out = Vec::with_capacity(parents.len());
    let lanes = parents.len() / LANES * LANES;
    let lanes = if parents.len() - lanes >= MIN_LANES {
        parents.len()
    } else {
        lanes
    };
    for group in parents[..lanes].chunks(LANES) {
        let mut state = State::new();
        let mut blocks: [&[u8]; LANES] = [&[]; LANES];
        for (lane, (block, flags)) in group.iter().enumerate() {
            state.start(lane, key, 0);
            state.set(lane, BLOCK_LEN, *flags);
            blocks[lane] = block;
        }
        compress(&mut state, &blocks);
        out.extend((0..group.len()).map(|lane| state.cv_of(lane)));
    }
    let mode = match mode {
        Mode::Plain => blake3::hazmat::Mode::Hash,
        Mode::DeriveKey(key) => blake3::hazmat::Mode::DeriveKeyMaterial(key),
    };
    out.extend(parents[lanes..].iter().map(|(block, flags)| {
        let (left, right) = block.split_at(32);
        let (left, right) = (to_32(left), to_32(right));
        if flags & ROOT != 0 {
            words_of(merge_subtrees_root(&left, &right, mode).as_bytes())
        } else {
            words_of(&merge_subtrees_non_root(&left, &right, mode))
        }
    }));
    out
}

/// A parent node's message: the two children's chaining values.
fn block_of(left: &Cv, right: &Cv) -> [u8; BLOCK_LEN] {
    let mut block = [0; BLOCK_LEN];
    block[..32].copy_from_slice(&bytes_of(left));
    block[32..].copy_from_slice(&bytes_of(right));
    block
}

fn to_32(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(bytes);
    out
}

/// The lanes' chaining values and the counters, lengths and flags of their next
/// compression, word by word. Each row is one vector of sixteen lanes, aligned to a
/// cache line so that its load and store never straddle two.
#[repr(C, align(64))]
struct State {
    cv: [Lanes; 8],
    counter_low: Lanes,
    counter_high: Lanes,
    block_len: Lanes,
    flags: Lanes,
}

impl State {
    fn new() -> Self {
        Self {
            cv: [[0; LANES]; 8],
            counter_low: [0; LANES],
            counter_high: [0; LANES],
            block_len: [0; LANES],
            flags: [0; LANES],
        }
    }

    /// Starts a new piece on `lane`: the key as its chaining value.
    fn start(&mut self, lane: usize, key: &Cv, counter: u64) {
        for (w, word) in key.iter().enumerate() {
            self.cv[w][lane] = *word;
        }
        self.counter_low[lane] = counter as u32;
        self.counter_high[lane] = (counter >> 32) as u32;
    }

    /// Sets the length and flags of `lane`'s next block.
    fn set(&mut self, lane: usize, len: usize, flags: u32) {
        self.block_len[lane] = len as u32;
        self.flags[lane] = flags;
    }

    fn cv_of(&self, lane: usize) -> Cv {
        std::array::from_fn(|w| self.cv[w][lane])
    }
}

/// The chaining value of each piece: every lane compresses a block of its piece at
/// each step, and a lane whose piece is done takes the next, longest first.
fn compress_pieces(pieces: &[Piece<'_>], key: &Cv, flags: u32) -> Vec<Cv> {
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_key(|&i| Reverse(pieces[i].blocks()));
    let mut queue = order.into_iter();
    let mut cvs = vec![[0; 8]; pieces.len()];
    let mut state = State::new();
    // Each lane's piece and the block it is at.
    let mut lanes: [Option<(usize, usize)>; LANES] = [None; LANES];
    loop {
        let mut blocks: [&[u8]; LANES] = [&[]; LANES];
        for (lane, at) in lanes.iter_mut().enumerate() {
            if at.is_none()
                && let Some(i) = queue.next()
            {
                state.start(lane, key, pieces[i].counter);
                *at = Some((i, 0));
            }
            if let Some((i, b)) = *at {
                let (bytes, f) = pieces[i].block(b, flags);
                state.set(lane, bytes.len(), f);
                blocks[lane] = bytes;
            }
        }
        if lanes.iter().all(Option::is_none) {
            return cvs;
        }
        compress(&mut state, &blocks);
        for (lane, at) in lanes.iter_mut().enumerate() {
            if let Some((i, b)) = *at {
                *at = if b + 1 == pieces[i].blocks() {
                    cvs[i] = state.cv_of(lane);
                    None
                } else {
                    Some((i, b + 1))
                };
            }
        }
    }
}

/// The compression of every lane (`blocks`: each lane's block, at most 64 bytes, zeros
/// after), on the widest vector unit the CPU has.
fn compress(state: &mut State, blocks: &[&[u8]; LANES]) {
    #[cfg(target_arch = "x86_64")]
    {
        let cpu = crate::cpu::features();
        if cpu.avx512 {
            return simd::compress_avx512(state, blocks);
        }
        if cpu.avx2 {
            return simd::compress_avx2(state, blocks);
        }
    }
    compress_lanes(state, &words_by_lane(blocks));
}

#[cfg(target_arch = "x86_64")]
#[expect(unsafe_code)]
mod simd {
    use std::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_loadu_si512, _mm512_maskz_loadu_epi8, _mm512_ror_epi32,
        _mm512_set1_epi32, _mm512_setzero_si512, _mm512_shuffle_i32x4, _mm512_storeu_si512,
        _mm512_unpackhi_epi32, _mm512_unpackhi_epi64, _mm512_unpacklo_epi32, _mm512_unpacklo_epi64,
        _mm512_xor_si512,
    };

    use super::{BLOCK_LEN, IV, LANES, Lanes, SCHEDULE, State, compress_lanes, words_by_lane};

    pub(super) fn compress_avx512(state: &mut State, blocks: &[&[u8]; LANES]) {
        // SAFETY: called only where `cpu::features()` (or the test's detection) found
        // AVX-512 F, BW, DQ and VL.
        unsafe { avx512(state, blocks) }
    }

    pub(super) fn compress_avx2(state: &mut State, blocks: &[&[u8]; LANES]) {
        // SAFETY: called only where `cpu::features()` (or the test's detection) found AVX2.
        unsafe { avx2(state, blocks) }
    }

    /// BLAKE3's compression of the sixteen lanes in the vector registers: the sixteen
    /// state rows and the sixteen message words are the 32 registers AVX-512 has.
    /// (Left to the compiler, the same arithmetic over `[u32; 16]` arrays compiled to
    /// code whose speed depended on what else the crate held: a change to `merge_all`
    /// made the chunk leaves of bench `leaf_hashing` 28% slower, the message stored
    /// and reloaded through the stack, the chaining values scattered.)
    #[target_feature(enable = "avx512f,avx512bw")]
    fn avx512(state: &mut State, blocks: &[&[u8]; LANES]) {
        let m = load16(blocks);
        // SAFETY: each row of the state is 64 bytes, read unaligned.
        let row = |r: &Lanes| unsafe { _mm512_loadu_si512(r.as_ptr().cast()) };
        let iv = |w: usize| _mm512_set1_epi32(IV[w] as i32);
        let cv = &state.cv;
        let mut v = [
            row(&cv[0]),
            row(&cv[1]),
            row(&cv[2]),
            row(&cv[3]),
            row(&cv[4]),
            row(&cv[5]),
            row(&cv[6]),
            row(&cv[7]),
            iv(0),
            iv(1),
            iv(2),
            iv(3),
            row(&state.counter_low),
            row(&state.counter_high),
            row(&state.block_len),
            row(&state.flags),
        ];
        // Seven rounds written out, so that every index is a constant and the state and
        // message stay in registers.
        round(&mut v, &m, &SCHEDULE[0]);
        round(&mut v, &m, &SCHEDULE[1]);
        round(&mut v, &m, &SCHEDULE[2]);
        round(&mut v, &m, &SCHEDULE[3]);
        round(&mut v, &m, &SCHEDULE[4]);
        round(&mut v, &m, &SCHEDULE[5]);
        round(&mut v, &m, &SCHEDULE[6]);
        for (w, out) in state.cv.iter_mut().enumerate() {
            // SAFETY: each row of the state is 64 bytes, written unaligned.
            unsafe {
                _mm512_storeu_si512(out.as_mut_ptr().cast(), _mm512_xor_si512(v[w], v[w + 8]))
            };
        }
    }

    /// One round: `G` on the columns, then on the diagonals.
    #[inline(always)]
    fn round(v: &mut [__m512i; 16], m: &[__m512i; 16], s: &[usize; 16]) {
        g(v, [0, 4, 8, 12], m[s[0]], m[s[1]]);
        g(v, [1, 5, 9, 13], m[s[2]], m[s[3]]);
        g(v, [2, 6, 10, 14], m[s[4]], m[s[5]]);
        g(v, [3, 7, 11, 15], m[s[6]], m[s[7]]);
        g(v, [0, 5, 10, 15], m[s[8]], m[s[9]]);
        g(v, [1, 6, 11, 12], m[s[10]], m[s[11]]);
        g(v, [2, 7, 8, 13], m[s[12]], m[s[13]]);
        g(v, [3, 4, 9, 14], m[s[14]], m[s[15]]);
    }

    /// BLAKE3's quarter-round `G` on every lane.
    #[inline(always)]
    fn g(v: &mut [__m512i; 16], [a, b, c, d]: [usize; 4], x: __m512i, y: __m512i) {
        // SAFETY (all of it): register arithmetic of AVX-512F, which the callers enable.
        unsafe {
            v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), x);
            v[d] = _mm512_ror_epi32::<16>(_mm512_xor_si512(v[d], v[a]));
            v[c] = _mm512_add_epi32(v[c], v[d]);
            v[b] = _mm512_ror_epi32::<12>(_mm512_xor_si512(v[b], v[c]));
            v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), y);
            v[d] = _mm512_ror_epi32::<8>(_mm512_xor_si512(v[d], v[a]));
            v[c] = _mm512_add_epi32(v[c], v[d]);
            v[b] = _mm512_ror_epi32::<7>(_mm512_xor_si512(v[b], v[c]));
        }
    }

    #[target_feature(enable = "avx2")]
    fn avx2(state: &mut State, blocks: &[&[u8]; LANES]) {
        compress_lanes(state, &words_by_lane(blocks));
    }

    /// The sixteen lanes' blocks, word by word: each block read into a register (a
    /// short one by a masked read, zeros after its end), then turned in registers:
    /// 32-bit and 64-bit interleaves within each 128-bit quarter, then two shuffles of
    /// the quarters.
    #[target_feature(enable = "avx512f,avx512bw")]
    fn load16(blocks: &[&[u8]; LANES]) -> [__m512i; 16] {
        let r: [__m512i; 16] = std::array::from_fn(|i| {
            let block = blocks[i];
            assert!(block.len() <= BLOCK_LEN);
            if block.len() == BLOCK_LEN {
                // SAFETY: the block has 64 readable bytes; the read is unaligned.
                unsafe { _mm512_loadu_si512(block.as_ptr().cast()) }
            } else if block.is_empty() {
                // An idle lane (a masked read of a dangling pointer costs a microcode
                // assist on some CPUs).
                _mm512_setzero_si512()
            } else {
                // SAFETY: only the first `len` bytes (the mask's bits) are read; the
                // others are neither read nor faulted on, and come back as zeros.
                let mask = (1u64 << block.len()) - 1;
                unsafe { _mm512_maskz_loadu_epi8(mask, block.as_ptr().cast()) }
            }
        });
        // t[4k..4k+4]: rows 4k..4k+4 interleaved by 32 bits.
        let t = interleave(&r, [(0, 1), (2, 3)], |a, b| {
            (_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b))
        });
        // u[4k+j]: in each quarter q, word 4q+j of rows 4k..4k+4.
        let u = interleave(&t, [(0, 2), (1, 3)], |a, b| {
            (_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b))
        });
        let mut out = [_mm512_setzero_si512(); 16];
        for j in 0..4 {
            let even_low = _mm512_shuffle_i32x4::<0x88>(u[j], u[4 + j]);
            let odd_low = _mm512_shuffle_i32x4::<0xDD>(u[j], u[4 + j]);
            let even_high = _mm512_shuffle_i32x4::<0x88>(u[8 + j], u[12 + j]);
            let odd_high = _mm512_shuffle_i32x4::<0xDD>(u[8 + j], u[12 + j]);
            let words = [
                (j, _mm512_shuffle_i32x4::<0x88>(even_low, even_high)),
                (4 + j, _mm512_shuffle_i32x4::<0x88>(odd_low, odd_high)),
                (8 + j, _mm512_shuffle_i32x4::<0xDD>(even_low, even_high)),
                (12 + j, _mm512_shuffle_i32x4::<0xDD>(odd_low, odd_high)),
            ];
            for (w, v) in words {
                out[w] = v;
            }
        }
        out
    }

    /// One interleave step of the transpose, within each group of four registers
    /// `4k..4k+4`: for each of the two `pairs` of positions in the group, the low and
    /// high halves `step` gives of that pair, in positions `4k + 2p` and `4k + 2p + 1`.
    #[target_feature(enable = "avx512f")]
    fn interleave(
        v: &[__m512i; 16],
        pairs: [(usize, usize); 2],
        step: impl Fn(__m512i, __m512i) -> (__m512i, __m512i),
    ) -> [__m512i; 16] {
        let mut out = *v;
        for k in (0..16).step_by(4) {
            for (p, (a, b)) in pairs.into_iter().enumerate() {
                (out[k + 2 * p], out[k + 2 * p + 1]) = step(v[k + a], v[k + b]);
            }
        }
        out
    }
}

/// The lanes' blocks, word by word (little-endian words, zeros after a block's end).
#[inline(always)]
fn words_by_lane(blocks: &[&[u8]; LANES]) -> [Lanes; 16] {
    let mut m = [[0; LANES]; 16];
    for (l, block) in blocks.iter().enumerate() {
        let mut padded = [0u8; BLOCK_LEN];
        padded[..block.len()].copy_from_slice(block);
        for (w, b) in padded.chunks_exact(4).enumerate() {
            m[w][l] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
    }
    m
}

/// BLAKE3's compression function on every lane, word by word (`m`, the message): inlined
/// into each caller, so that each compiles it for its own instruction set.
#[inline(always)]
fn compress_lanes(state: &mut State, m: &[Lanes; 16]) {
    let iv = |w: usize| [IV[w]; LANES];
    let cv = &state.cv;
    let mut v: [Lanes; 16] = [
        cv[0],
        cv[1],
        cv[2],
        cv[3],
        cv[4],
        cv[5],
        cv[6],
        cv[7],
        iv(0),
        iv(1),
        iv(2),
        iv(3),
        state.counter_low,
        state.counter_high,
        state.block_len,
        state.flags,
    ];
    // Seven rounds written out, so that every index is a constant and the state stays
    // in registers.
    round_lanes(&mut v, m, &SCHEDULE[0]);
    round_lanes(&mut v, m, &SCHEDULE[1]);
    round_lanes(&mut v, m, &SCHEDULE[2]);
    round_lanes(&mut v, m, &SCHEDULE[3]);
    round_lanes(&mut v, m, &SCHEDULE[4]);
    round_lanes(&mut v, m, &SCHEDULE[5]);
    round_lanes(&mut v, m, &SCHEDULE[6]);
    state.cv = std::array::from_fn(|w| xor(&v[w], &v[w + 8]));
}

#[inline(always)]
fn xor(a: &Lanes, b: &Lanes) -> Lanes {
    std::array::from_fn(|l| a[l] ^ b[l])
}

/// One round: `G` on the columns, then on the diagonals.
#[inline(always)]
fn round_lanes(v: &mut [Lanes; 16], m: &[Lanes; 16], s: &[usize; 16]) {
    g(v, [0, 4, 8, 12], &m[s[0]], &m[s[1]]);
    g(v, [1, 5, 9, 13], &m[s[2]], &m[s[3]]);
    g(v, [2, 6, 10, 14], &m[s[4]], &m[s[5]]);
    g(v, [3, 7, 11, 15], &m[s[6]], &m[s[7]]);
    g(v, [0, 5, 10, 15], &m[s[8]], &m[s[9]]);
    g(v, [1, 6, 11, 12], &m[s[10]], &m[s[11]]);
    g(v, [2, 7, 8, 13], &m[s[12]], &m[s[13]]);
    g(v, [3, 4, 9, 14], &m[s[14]], &m[s[15]]);
}

/// BLAKE3's quarter-round `G` on every lane.
#[inline(always)]
fn g(v: &mut [Lanes; 16], [a, b, c, d]: [usize; 4], x: &Lanes, y: &Lanes) {
    for l in 0..LANES {
        v[a][l] = v[a][l].wrapping_add(v[b][l]).wrapping_add(x[l]);
        v[d][l] = (v[d][l] ^ v[a][l]).rotate_right(16);
        v[c][l] = v[c][l].wrapping_add(v[d][l]);
        v[b][l] = (v[b][l] ^ v[c][l]).rotate_right(12);
        v[a][l] = v[a][l].wrapping_add(v[b][l]).wrapping_add(y[l]);
        v[d][l] = (v[d][l] ^ v[a][l]).rotate_right(8);
        v[c][l] = v[c][l].wrapping_add(v[d][l]);
        v[b][l] = (v[b][l] ^ v[c][l]).rotate_right(7);
    }
}

fn words_of(bytes: &[u8; 32]) -> Cv {
    std::array::from_fn(|w| {
        u32::from_le_bytes([
            bytes[4 * w],
            bytes[4 * w + 1],
            bytes[4 * w + 2],
            bytes[4 * w + 3],
        ])
    })
}

fn bytes_of(words: &Cv) -> [u8; 32] {
    let mut out = [0; 32];
    for (w, word) in words.iter().enumerate() {
        out[4 * w..4 * w + 4].copy_from_slice(&word.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs of every length around the block and chunk edges, and a few long ones.
    fn inputs() -> Vec<Vec<u8>> {
        let mut lens: Vec<usize> = (0..=140).collect();
        for edge in [1024, 2048, 3072, 4096, 5120, 8192] {
            lens.extend(edge - 65..=edge + 65);
        }
        lens.extend([10_000, 16 * 1024 + 7, 100_000]);
        lens.iter()
            .map(|&n| (0..n).map(|i| (i * 31 + n) as u8).collect())
            .collect()
    }

    /// `hash_many` of the inputs, all at once and in batches of each size up to 20 (so
    /// that every lane width and a queue of every length is taken), against `expected`.
    fn check(mode: Mode<'_>, expected: impl Fn(&[u8]) -> [u8; 32]) {
        let inputs = inputs();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let want: Vec<[u8; 32]> = refs.iter().map(|i| expected(i)).collect();
        assert_eq!(hash_many(&refs, mode), want);
        for size in 1..=20 {
            for (batch, want) in refs.chunks(size).zip(want.chunks(size)) {
                assert_eq!(hash_many(batch, mode), want, "batches of {size}");
            }
        }
        assert!(hash_many(&[], mode).is_empty());
    }

    #[test]
    fn plain_is_blake3() {
        check(Mode::Plain, |i| *blake3::hash(i).as_bytes());
    }

    #[test]
    fn derive_key_is_blake3() {
        let context = "cfs v1 2026-11-22 leaf chunk";
        let key = blake3::hazmat::hash_derive_key_context(context);
        check(Mode::DeriveKey(&key), |i| blake3::derive_key(context, i));
    }

    /// Each instruction set's compression gives the portable one's bits.
    #[test]
    fn every_path_agrees() {
        // Each lane's block length under three patterns: growing (0 to 61 bytes), every
        // lane full, and idle lanes (empty) between full and short ones.
        let patterns: [fn(usize) -> usize; 3] = [
            |lane| lane * 4 + 1,
            |_| BLOCK_LEN,
            |lane| [0, BLOCK_LEN, 3, 0][lane % 4],
        ];
        for (p, len_of) in patterns.iter().enumerate() {
            let bytes: Vec<Vec<u8>> = (0..LANES)
                .map(|lane| {
                    (0..len_of(lane))
                        .map(|i| (i * 7 + lane + p) as u8)
                        .collect()
                })
                .collect();
            let blocks: [&[u8]; LANES] = std::array::from_fn(|lane| bytes[lane].as_slice());
            let state = || {
                let mut state = State::new();
                for (lane, block) in blocks.iter().enumerate() {
                    state.start(lane, &IV, lane as u64 * 0x1_0000_0001);
                    state.set(lane, block.len(), (lane as u32) & 0x7f);
                }
                state
            };
            let mut portable = state();
            compress_lanes(&mut portable, &words_by_lane(&blocks));
            #[cfg(target_arch = "x86_64")]
            {
                let cpu = crate::cpu::Features::detected();
                if cpu.avx512 {
                    let mut s = state();
                    simd::compress_avx512(&mut s, &blocks);
                    assert_eq!(s.cv, portable.cv, "pattern {p}");
                }
                if cpu.avx2 {
                    let mut s = state();
                    simd::compress_avx2(&mut s, &blocks);
                    assert_eq!(s.cv, portable.cv, "pattern {p}");
                }
            }
        }
    }
}
