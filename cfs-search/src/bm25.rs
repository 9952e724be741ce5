//! BM25 in integer arithmetic, so that text scores are bit-identical everywhere.
//!
//! `idf(t) = log2((N + 1) / (df + 0.5))` and
//! `tf part = tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))` with `k1 = 1.2`,
//! `b = 0.75`, `avgdl = total / N`. The logarithm is computed bit by bit with 16
//! fractional bits and the tf part as a rational with 16 fractional bits; a term's score
//! is their product (32 fractional bits), a chunk's score the sum over distinct query
//! terms. docs/spec.md ("Text scoring") is the reference.

/// Fractional bits of [`log2_fixed`] and of the tf part.
pub const FRACTION_BITS: u32 = 16;

/// `log2(n)` with [`FRACTION_BITS`] fractional bits, rounded down; `n >= 1`.
pub fn log2_fixed(n: u64) -> u64 {
    debug_assert!(n >= 1);
    let n = n.max(1);
    let int = u64::from(63 - n.leading_zeros());
    // x in [2^62, 2^63) stands for n / 2^int in [1, 2).
    let mut x: u128 = if int <= 62 {
        u128::from(n) << (62 - int)
    } else {
        u128::from(n) >> (int - 62)
    };
    let mut frac = 0u64;
    for bit in (0..FRACTION_BITS).rev() {
        x = (x * x) >> 62;
        if x >= 1 << 63 {
            x >>= 1;
            frac |= 1 << bit;
        }
    }
    (int << FRACTION_BITS) | frac
}

/// The inverse document frequency of a term in `df` of `n` chunks (`df <= n`).
pub fn idf(n: u64, df: u64) -> u64 {
    // (N + 1) / (df + 0.5) = (2N + 2) / (2 df + 1)
    log2_fixed(2 * n + 2).saturating_sub(log2_fixed(2 * df + 1))
}

/// The saturated term-frequency part for `tf` occurrences in a chunk of `dl` tokens, in
/// a collection of `n` chunks with `total` tokens.
pub fn tf_part(tf: u64, dl: u64, n: u64, total: u64) -> u64 {
    if total == 0 || n == 0 {
        return 0;
    }
    // tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl * n / total)), both sides times 10 * total.
    let (tf, dl, n, total) = (
        u128::from(tf),
        u128::from(dl),
        u128::from(n),
        u128::from(total),
    );
    let num = (22 * tf * total) << FRACTION_BITS;
    let den = 10 * tf * total + 3 * total + 9 * dl * n;
    u64::try_from(num / den).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_is_exact_at_powers_and_close_elsewhere() {
        for k in 0..63 {
            assert_eq!(log2_fixed(1 << k), k << FRACTION_BITS);
        }
        for n in [3u64, 5, 7, 10, 1000, 123_456_789, u64::MAX] {
            let exact = (n as f64).log2() * f64::from(1u32 << FRACTION_BITS);
            let got = log2_fixed(n) as f64;
            assert!(
                got <= exact + 1e-6 && exact - got < 2.0,
                "{n}: {got} vs {exact}"
            );
        }
    }

    #[test]
    fn rarer_terms_and_more_occurrences_score_higher() {
        assert!(idf(1000, 1) > idf(1000, 10));
        assert!(idf(1000, 10) > idf(1000, 1000));
        assert!(tf_part(3, 100, 10, 1000) > tf_part(1, 100, 10, 1000));
        // Longer chunks score lower for the same tf.
        assert!(tf_part(1, 50, 10, 1000) > tf_part(1, 500, 10, 1000));
        // Saturation: at most k1 + 1 = 2.2.
        assert!(tf_part(1_000_000, 1, 1, 1) < (22 << FRACTION_BITS) / 10 + 1);
    }
}
