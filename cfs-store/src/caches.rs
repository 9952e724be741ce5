//! The store's two caches behind typed methods: the stat cache (path -> size, mtime,
//! content hash, failure) that lets a sync skip unchanged files, and the embedding cache
//! ((model, text) -> vector) that embeds a text once per store. Neither is committed
//! state: both are written in the same transaction as the rows they vouch for.

use std::collections::BTreeMap;

use cfs_core::{ModelHash, TextHash};
use redb::ReadableTable;

use crate::error::Result;
use crate::read::ReadTxn;
use crate::tables::{self, Stat};
use crate::vectors::{self, VectorHash};
use crate::write::WriteTxn;

/// A stat row by path: `None` for a value of another shape (not trusted), and no entry
/// for a key that is not UTF-8.
type StatRow = (String, Option<Stat>);

fn stat_rows<'a>(
    rows: impl Iterator<
        Item = std::result::Result<
            (
                redb::AccessGuard<'a, &'static [u8]>,
                redb::AccessGuard<'a, &'static [u8]>,
            ),
            redb::StorageError,
        >,
    >,
) -> Result<Vec<StatRow>> {
    let mut out = Vec::new();
    for row in rows {
        let (k, v) = row?;
        if let Ok(path) = std::str::from_utf8(k.value()) {
            out.push((path.to_owned(), Stat::decode(v.value())));
        }
    }
    Ok(out)
}

impl ReadTxn {
    /// Every stat-cache row, by path.
    pub(crate) fn stats(&self) -> Result<BTreeMap<String, Stat>> {
        let t = self.raw().open_table(tables::STAT_CACHE)?;
        Ok(stat_rows(t.iter()?)?
            .into_iter()
            .filter_map(|(path, stat)| Some((path, stat?)))
            .collect())
    }

    /// The stat-cache rows of `path` and of everything under the folder `path` (one key
    /// range: the cache is keyed by path).
    pub(crate) fn stats_at(&self, path: &str) -> Result<Vec<StatRow>> {
        let t = self.raw().open_table(tables::STAT_CACHE)?;
        let mut out = Vec::new();
        if let Some(v) = t.get(path.as_bytes())? {
            out.push((path.to_owned(), Stat::decode(v.value())));
        }
        let (lo, hi) = tables::under_folder(path);
        out.extend(stat_rows(t.range::<&[u8]>(lo.as_bytes()..hi.as_bytes())?)?);
        Ok(out)
    }
}

impl WriteTxn<'_> {
    /// Records `vector` as the embedding of text `text` by `model` in the embedding cache.
    pub fn cache_vector(
        &mut self,
        model: &ModelHash,
        text: &TextHash,
        vector: &[i16],
    ) -> Result<()> {
        let encoded = cfs_core::encode_vector(vector);
        let hash = vectors::vector_hash(&encoded);
        self.cache_encoded(model, [(text, &hash, encoded.as_slice())])
    }

    /// Records the stat row of `path`.
    pub(crate) fn put_stat(&self, path: &str, stat: &Stat) -> Result<()> {
        self.put_stats([(path, stat)])
    }

    /// Records the stat rows of many paths, the table opened once.
    pub(crate) fn put_stats<'p>(
        &self,
        stats: impl IntoIterator<Item = (&'p str, &'p Stat)>,
    ) -> Result<()> {
        let mut t = self.raw().open_table(tables::STAT_CACHE)?;
        for (path, stat) in stats {
            t.insert(path.as_bytes(), stat.encode().as_slice())?;
        }
        Ok(())
    }

    /// Drops the stat rows of `paths` (an explicit list).
    pub(crate) fn remove_stats<'p>(&self, paths: impl IntoIterator<Item = &'p str>) -> Result<()> {
        let mut t = self.raw().open_table(tables::STAT_CACHE)?;
        for path in paths {
            t.remove(path.as_bytes())?;
        }
        Ok(())
    }

    /// Whether the embedding cache holds any vector by `model`.
    pub(crate) fn caches_vectors_of(&self, model: &ModelHash) -> Result<bool> {
        let cache = self.raw().open_table(tables::EMBEDDING_CACHE)?;
        let first = cache.range::<&[u8]>(&model.0[..]..)?.next().transpose()?;
        Ok(first.is_some_and(|(key, _)| key.value().starts_with(&model.0)))
    }

    /// The cached vectors of `texts` by `model`; a cache entry whose vector is unreadable
    /// is a miss, not an error.
    pub(crate) fn cached_vectors<'h>(
        &self,
        model: &ModelHash,
        texts: impl IntoIterator<Item = &'h TextHash>,
    ) -> Result<BTreeMap<TextHash, Vec<i16>>> {
        let cache = self.raw().open_table(tables::EMBEDDING_CACHE)?;
        let stored = self.raw().open_table(tables::VECTORS)?;
        let mut out = BTreeMap::new();
        for text in texts {
            let Some(hash) = cache.get(&tables::cache_key(model, text)[..])? else {
                continue;
            };
            if let Ok(hash) = VectorHash::try_from(hash.value())
                && let Ok(Some(v)) = vectors::get_vector(&stored, &hash)
            {
                out.insert(*text, v);
            }
        }
        Ok(out)
    }

    /// Records vectors computed for texts by `model`: each the vector's hash and its
    /// encoding (`cfs_core::encode_vector`), stored once whatever the number of texts.
    pub(crate) fn cache_encoded<'v>(
        &self,
        model: &ModelHash,
        computed: impl IntoIterator<Item = (&'v TextHash, &'v VectorHash, &'v [u8])>,
    ) -> Result<()> {
        let mut cache = self.raw().open_table(tables::EMBEDDING_CACHE)?;
        let mut stored = self.raw().open_table(tables::VECTORS)?;
        for (text, hash, encoded) in computed {
            if stored.get(&hash[..])?.is_none() {
                stored.insert(&hash[..], encoded)?;
            }
            cache.insert(&tables::cache_key(model, text)[..], &hash[..])?;
        }
        Ok(())
    }
}
