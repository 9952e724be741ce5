//! The delta file: what a snapshot changed since the index file it was opened from,
//! written beside that file so that the next process maps both instead of bringing the
//! base forward again (`docs/format.md`, "The delta file").
//!
//! A snapshot opened from an index file remembers that file (its header hash and its
//! mapped segment) and which buckets of documents and paths moved since. Its delta is
//! the base's tombstones (positions), the other segments merged into one, the documents
//! and paths of the moved buckets, and the documents the merged chunks name; it is
//! written in the index file's own format, its header naming the base by hash. Opening
//! lays the delta over the base: the tombstones kill base chunks, the delta's segment
//! joins as a second segment, and a moved bucket is read from the delta, any other from
//! the base. A delta of another base (the base was rewritten since) is ignored.

use std::collections::BTreeMap;
use std::sync::Arc;

use cfs_core::{DocumentId, N_BUCKETS, PathEntry};

use super::buckets::{Rows, Source};
use super::format::{BucketBits, bit};
use super::meta::DocInfo;
use super::segment::{Live, Segment};
use super::snapshot::{FileBase, Snapshot};

/// What a delta file holds, gathered from a snapshot.
pub(crate) struct DeltaParts<'a> {
    /// The chunks of every segment but the base's, merged.
    pub segment: Segment,
    /// The documents of the moved buckets and those the merged chunks name, by id.
    pub docs: Vec<Arc<DocInfo>>,
    /// The paths of the moved buckets, by id.
    pub paths: Vec<(&'a [u8; 16], &'a PathEntry)>,
    /// The base chunks that are gone, ascending.
    pub dead: Vec<u32>,
}

/// The delta of `snap` over its base file.
pub(crate) fn delta_parts<'a>(snap: &'a Snapshot, base: &FileBase) -> DeltaParts<'a> {
    let others: Vec<Live> = snap
        .segments
        .iter()
        .filter(|l| !base.is_base(l))
        .cloned()
        .collect();
    let segment = Segment::merge(&others);
    let dead = match snap.segments.iter().find(|l| base.is_base(l)) {
        Some(live) => (0..live.segment.len())
            .filter(|&i| live.is_dead(i))
            .map(|i| i as u32)
            .collect(),
        // Every base chunk is gone (a segment without live chunks is dropped).
        None => (0..base.segment.as_ref().map_or(0, |s| s.len()))
            .map(|i| i as u32)
            .collect(),
    };
    let mut docs: BTreeMap<DocumentId, Arc<DocInfo>> = BTreeMap::new();
    for b in (0..N_BUCKETS).filter(|&b| bit(&base.doc_buckets, b)) {
        docs.extend(
            snap.docs
                .bucket(b)
                .iter()
                .map(|(_, d)| (d.id, Arc::clone(d))),
        );
    }
    if let Some(owned) = segment.owned() {
        for meta in &owned.metas {
            docs.entry(meta.doc.id)
                .or_insert_with(|| Arc::clone(&meta.doc));
        }
    }
    let paths = (0..N_BUCKETS)
        .filter(|&b| bit(&base.path_buckets, b))
        .flat_map(|b| snap.paths.bucket(b).iter().map(|(k, v)| (k, v)))
        .collect();
    DeltaParts {
        segment,
        docs: docs.into_values().collect(),
        paths,
        dead,
    }
}

/// A map's buckets read from the delta where they moved, from the base elsewhere.
pub(crate) struct Overlay<V> {
    pub base: Arc<dyn Source<V>>,
    pub delta: Arc<dyn Source<V>>,
    pub moved: BucketBits,
}

impl<V> Overlay<V> {
    fn of(&self, b: usize) -> &dyn Source<V> {
        if bit(&self.moved, b) {
            &*self.delta
        } else {
            &*self.base
        }
    }
}

impl<V> Source<V> for Overlay<V> {
    fn rows(&self, b: usize) -> Rows<V> {
        self.of(b).rows(b)
    }

    fn count(&self, b: usize) -> usize {
        self.of(b).count(b)
    }
}
