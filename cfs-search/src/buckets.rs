//! A map from 16-byte ids to values, split in the 1024 buckets of the first 10 key
//! bits, each bucket a sorted vector behind an `Arc`: a new snapshot shares every
//! bucket it did not change. A map opened over an index file fills a bucket from the
//! file the first time it is read, so opening costs nothing per row.

use std::sync::{Arc, OnceLock};

use cfs_core::{Bucket, N_BUCKETS};

/// The rows of one bucket: (key, value), sorted by key.
pub(crate) type Rows<V> = Vec<([u8; 16], V)>;

/// Where the rows of a bucket not read yet come from.
pub(crate) trait Source<V>: Send + Sync {
    /// The rows of bucket `b`, sorted by key.
    fn rows(&self, b: usize) -> Rows<V>;
    /// How many rows bucket `b` has.
    fn count(&self, b: usize) -> usize;
}

/// One bucket: filled at once, or from the source on first read.
type Slot<V> = Arc<OnceLock<Arc<Rows<V>>>>;

fn filled<V>(rows: Arc<Rows<V>>) -> Slot<V> {
    Arc::new(OnceLock::from(rows))
}

#[derive(Clone)]
pub(crate) struct BucketMap<V> {
    buckets: Vec<Slot<V>>,
    source: Option<Arc<dyn Source<V>>>,
}

impl<V> std::fmt::Debug for BucketMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let read = self.buckets.iter().filter(|b| b.get().is_some()).count();
        f.debug_struct("BucketMap")
            .field("buckets_read", &read)
            .finish_non_exhaustive()
    }
}

impl<V: Clone> BucketMap<V> {
    pub(crate) fn new() -> Self {
        Self {
            buckets: (0..N_BUCKETS)
                .map(|_| filled(Arc::new(Vec::new())))
                .collect(),
            source: None,
        }
    }

    /// A map whose buckets are read from `source` when first needed.
    pub(crate) fn lazy(source: Arc<dyn Source<V>>) -> Self {
        Self {
            buckets: (0..N_BUCKETS).map(|_| Arc::new(OnceLock::new())).collect(),
            source: Some(source),
        }
    }

    fn rows(&self, b: usize) -> &Arc<Rows<V>> {
        self.buckets[b]
            .get_or_init(|| Arc::new(self.source.as_ref().map(|s| s.rows(b)).unwrap_or_default()))
    }

    pub fn get(&self, key: &[u8; 16]) -> Option<&V> {
        let b = self.rows(usize::from(Bucket::of_key(key).0));
        b.binary_search_by(|(k, _)| k.cmp(key))
            .ok()
            .map(|i| &b[i].1)
    }

    pub(crate) fn bucket(&self, b: usize) -> &[([u8; 16], V)] {
        self.rows(b)
    }

    pub(crate) fn set_bucket(&mut self, b: usize, rows: Rows<V>) {
        self.buckets[b] = filled(Arc::new(rows));
    }

    /// Changes bucket `b` through `f` (copying it first if another map shares it).
    fn change(&mut self, b: usize, f: impl FnOnce(&mut Rows<V>)) {
        let mut rows = Arc::clone(self.rows(b));
        self.buckets[b] = Arc::new(OnceLock::new());
        f(Arc::make_mut(&mut rows));
        self.buckets[b] = filled(rows);
    }

    pub(crate) fn insert(&mut self, key: [u8; 16], value: V) {
        self.change(usize::from(Bucket::of_key(&key).0), |b| {
            match b.binary_search_by(|(k, _)| k.cmp(&key)) {
                Ok(i) => b[i].1 = value,
                Err(i) => b.insert(i, (key, value)),
            }
        });
    }

    pub(crate) fn remove(&mut self, key: &[u8; 16]) {
        self.change(usize::from(Bucket::of_key(key).0), |b| {
            if let Ok(i) = b.binary_search_by(|(k, _)| k.cmp(key)) {
                b.remove(i);
            }
        });
    }

    /// Number of rows (buckets not read yet are counted by their source).
    pub(crate) fn len(&self) -> usize {
        (0..N_BUCKETS)
            .map(|b| match (self.buckets[b].get(), &self.source) {
                (Some(rows), _) => rows.len(),
                (None, Some(source)) => source.count(b),
                (None, None) => 0,
            })
            .sum()
    }

    /// Every (key, value), in key order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&[u8; 16], &V)> {
        (0..N_BUCKETS).flat_map(|b| self.rows(b).iter().map(|(k, v)| (k, v)))
    }

    /// Every value, in key order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        (0..N_BUCKETS).flat_map(|b| self.rows(b).iter().map(|(_, v)| v))
    }
}
