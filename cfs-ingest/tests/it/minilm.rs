//! minilm-int: the same bits on every path (SIMD on and off, one or two threads, alone
//! or in a batch), clear errors for a missing or damaged model file, and vectors that
//! carry meaning. The vectors themselves are pinned by `test-vectors/minilm.json`.

use std::path::Path;

use cfs_ingest::minilm::{MINILM_FILE_NAME, Simd, default_model_dirs};
use cfs_ingest::{Embedder, MiniLmInt};

use crate::support::minilm;

/// Texts of every length from this repository's sources: pieces of 50 to 3,000 bytes.
fn sample_texts() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    for (file, sizes) in [
        ("src/embed.rs", [50usize, 400, 3000]),
        ("src/markdown.rs", [120, 900, 2000]),
        ("../docs/spec.md", [60, 700, 2500]),
    ] {
        let text = std::fs::read_to_string(root.join(file)).expect("source file");
        let mut start = 0;
        for size in sizes {
            let mut end = (start + size).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            texts.push(text[start..end].to_owned());
            start = end;
        }
    }
    texts
}

#[test]
fn simd_threads_and_batches_give_the_same_bits() {
    let model = minilm();
    let texts = sample_texts();
    // Texts of two tokens (`[CLS]`, `[SEP]`) and three beside the long ones: a forward
    // pass takes several texts of any lengths together.
    let refs: Vec<&str> = texts.iter().map(String::as_str).chain(["", "x"]).collect();
    let scalar = model.with_simd(Simd::Portable);
    let one_by_one: Vec<Vec<i16>> = refs.iter().map(|t| scalar.embed(t)).collect();
    let batch = scalar.embed_batch(&refs).expect("embed");
    assert_eq!(batch, one_by_one, "scalar, in passes of several texts");
    let mut all = vec![0; refs.len() * 384];
    model.embed_batch_into(&refs, &mut all);
    assert_eq!(all, one_by_one.concat(), "every text in one pass");
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let batch = pool.install(|| model.embed_batch(&refs)).expect("embed");
        assert_eq!(
            batch, one_by_one,
            "{threads} threads, SIMD auto vs scalar alone"
        );
    }
    for path in [
        Simd::Avx2,
        Simd::AvxVnni,
        Simd::Avx512Vnni,
        Simd::Amx,
        Simd::Neon,
    ] {
        if path.resolve().is_ok() {
            let forced = model.with_simd(path).embed_batch(&refs).expect("embed");
            assert_eq!(forced, one_by_one, "{path:?} vs scalar");
        }
    }
    let reversed: Vec<&str> = refs.iter().rev().copied().collect();
    let mut back = model.embed_batch(&reversed).expect("embed");
    back.reverse();
    assert_eq!(back, one_by_one, "batch order");
}

#[test]
fn vectors_are_unit_length_and_carry_meaning() {
    let model = minilm();
    let dot = |a: &[i16], b: &[i16]| -> i64 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| i64::from(x) * i64::from(y))
            .sum()
    };
    let unit = 32767i64 * 32767;
    for text in ["", "x", "fn main() {}"] {
        let v = model.embed(text);
        assert_eq!(v.len(), 384);
        assert!((dot(&v, &v) - unit).abs() < unit / 500, "{text:?}");
    }
    // Meaning, not words: the query shares no word with the right answer.
    let query = model.embed("read a file from disk into a string");
    let right =
        model.embed("fn load(p: &Path) -> io::Result<String> { std::fs::read_to_string(p) }");
    let wrong = model.embed("fn area(r: f64) -> f64 { std::f64::consts::PI * r * r }");
    assert!(dot(&query, &right) > dot(&query, &wrong) + unit / 10);
}

#[test]
fn missing_and_damaged_model_files_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join(MINILM_FILE_NAME);
    let err = MiniLmInt::load(&missing).expect_err("missing").to_string();
    assert!(
        err.contains(MINILM_FILE_NAME) && err.contains("unavailable"),
        "{err}"
    );

    let source = default_model_dirs()
        .into_iter()
        .map(|d| d.join(MINILM_FILE_NAME))
        .find(|p| p.is_file())
        .expect("model file (scripts/fetch-model)");
    let mut bytes = std::fs::read(source).expect("read");
    let flipped = dir.path().join("flipped.cfsm");
    bytes[1000] ^= 1;
    std::fs::write(&flipped, &bytes).expect("write");
    let err = MiniLmInt::load(&flipped).expect_err("flipped").to_string();
    assert!(
        err.contains("fetch-model") && err.contains("BLAKE3"),
        "{err}"
    );
    bytes[1000] ^= 1;

    // Without the hash check, the decoder still refuses every truncation and never panics.
    for cut in [0, 7, 16, 100, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            MiniLmInt::from_bytes(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    assert!(MiniLmInt::from_bytes(&bytes).is_ok());
}

#[test]
fn the_lazy_embedder_names_the_model_without_reading_it_and_embeds_the_same_bits() {
    let lazy = cfs_ingest::LazyMiniLmInt::default();
    let model = minilm();
    // Known before any load: the one model file this cfs accepts.
    assert_eq!(lazy.model_id(), model.model_id());
    assert_eq!(lazy.model_id(), cfs_ingest::minilm::minilm_model_id());
    assert_eq!(lazy.dimension(), model.dimension());
    assert_eq!(lazy.fusion_weight(), model.fusion_weight());
    assert_eq!(lazy.model_hash(), model.model_hash());
    assert!(lazy.embed_batch(&[]).unwrap().is_empty());
    let texts: Vec<String> = sample_texts().into_iter().take(3).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    assert_eq!(
        lazy.embed_batch(&texts).unwrap(),
        model.embed_batch(&texts).unwrap()
    );
}

/// The whole-text embedding measured against the default (docs/bench-log/04-code-ranking-languages.md, "Every
/// token of a chunk"): the first sequence is the default's, and more pool the rest.
#[test]
fn a_whole_text_embedding_starts_where_the_default_stops() {
    let model = minilm();
    for text in sample_texts() {
        let ids = model.tokenize(&text);
        assert_eq!(model.embed_long(&text, 1), model.embed(&text));
        let long = model.embed_long(&text, 64);
        // Texts within one sequence give the default vector; longer ones pool more.
        assert_eq!(
            ids.len() < 128,
            long == model.embed(&text),
            "{} tokens",
            ids.len()
        );
    }
}
