//! Healing a damaged store: the canonical state is a function of the files, so a store
//! is rebuilt from its tree; what costs hours to recompute (the vectors of a model) is
//! salvaged from the damaged file first, each vector kept only when it matches the hash
//! it is stored under.

use std::path::Path;

use cfs_core::{ModelHash, TextHash};
use redb::{ReadableDatabase, ReadableTable};

use crate::error::Result;
use crate::store::Store;
use crate::tables;
use crate::vectors::{VectorHash, vector_hash};

/// A vector of the embedding cache: (model, text hash) -> vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SalvagedVector {
    /// The model that computed it.
    pub model: ModelHash,
    /// The hash of the text it embeds.
    pub text: TextHash,
    /// The vector.
    pub vector: Vec<i16>,
}

/// What [`salvage_vectors`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Salvage {
    /// The vectors that verify.
    pub vectors: Vec<SalvagedVector>,
    /// Cache rows whose vector was missing, undecodable or not its hash.
    pub rejected: usize,
    /// Why reading stopped early (the file could not be opened, or a read failed or
    /// panicked on damaged bytes); `None` when every row was read.
    pub stopped: Option<String>,
}

/// The embedding-cache vectors of the store file at `path` that verify, read with
/// redb's read-only handle (the file is not written). Damage stops the reading, never
/// the process: what was read before it is kept.
pub fn salvage_vectors(path: &Path) -> Salvage {
    let mut salvage = Salvage::default();
    let read = crate::error::guard(path, || read_cache(path, &mut salvage));
    salvage.stopped = read.err().map(|e| e.to_string());
    salvage
}

fn read_cache(path: &Path, salvage: &mut Salvage) -> Result<()> {
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open_read_only(path)?;
    let txn = db.begin_read()?;
    let cache = txn.open_table(tables::EMBEDDING_CACHE)?;
    let vectors = txn.open_table(tables::VECTORS)?;
    for row in cache.iter()? {
        let (key, value) = row?;
        match salvage_row(&vectors, key.value(), value.value())? {
            Some(v) => salvage.vectors.push(v),
            None => salvage.rejected += 1,
        }
    }
    Ok(())
}

/// One cache row, when its key has the right shape and its vector verifies.
fn salvage_row<T: ReadableTable<&'static [u8], &'static [u8]>>(
    vectors: &T,
    key: &[u8],
    value: &[u8],
) -> Result<Option<SalvagedVector>> {
    let (Some(model), Some(text), Ok(hash)) = (
        key.get(..32).and_then(|b| b.try_into().ok()),
        key.get(32..).and_then(|b| b.try_into().ok()),
        VectorHash::try_from(value),
    ) else {
        return Ok(None);
    };
    let Some(encoded) = vectors.get(&hash[..])? else {
        return Ok(None);
    };
    if vector_hash(encoded.value()) != hash {
        return Ok(None);
    }
    let Ok(vector) = cfs_core::decode_vector(encoded.value()) else {
        return Ok(None);
    };
    Ok(Some(SalvagedVector {
        model: ModelHash(model),
        text: TextHash(text),
        vector,
    }))
}

impl Store {
    /// Puts salvaged vectors into this store's embedding cache (one transaction), so
    /// that a sync embeds only the texts they do not cover.
    pub fn cache_salvaged(&self, vectors: &[SalvagedVector]) -> Result<usize> {
        let mut txn = self.begin_write()?;
        for v in vectors {
            txn.cache_vector(&v.model, &v.text, &v.vector)?;
        }
        txn.commit()?;
        Ok(vectors.len())
    }
}
