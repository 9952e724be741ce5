//! State diffs: which keys two canonical states do not share, per table.
//!
//! A diff is computed from content (keys and leaf hashes), never from timestamps, so an
//! edit is seen however quickly it follows the last one. Runtime indexes and snapshots
//! update from it.

use std::collections::BTreeMap;

use crate::chunk::Chunk;
use crate::document::Document;
use crate::edge::Edge;
use crate::embedding::Embedding;
use crate::id::{ChunkId, DocumentId, EmbeddingId, PathId};
use crate::path::PathEntry;
use crate::record::{ChangeSummary, TableChange};
use crate::state::CanonicalState;
use crate::table::Entity;

/// Keys added, removed and changed in one table, each sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDiff<K> {
    /// Keys only in the new state.
    pub added: Vec<K>,
    /// Keys only in the old state.
    pub removed: Vec<K>,
    /// Keys in both whose entities differ.
    pub changed: Vec<K>,
}

impl<K> Default for TableDiff<K> {
    fn default() -> Self {
        Self {
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
        }
    }
}

impl<K: Ord + Copy> TableDiff<K> {
    /// The diff between two maps of one table.
    pub fn between<E: Entity<Key = K> + PartialEq>(
        old: &BTreeMap<K, E>,
        new: &BTreeMap<K, E>,
    ) -> Self {
        let mut diff = Self::default();
        let mut old_iter = old.iter().peekable();
        let mut new_iter = new.iter().peekable();
        loop {
            match (old_iter.peek(), new_iter.peek()) {
                (None, None) => break,
                (Some((k, _)), None) => {
                    diff.removed.push(**k);
                    old_iter.next();
                }
                (None, Some((k, _))) => {
                    diff.added.push(**k);
                    new_iter.next();
                }
                (Some((ko, vo)), Some((kn, vn))) => match ko.cmp(kn) {
                    std::cmp::Ordering::Less => {
                        diff.removed.push(**ko);
                        old_iter.next();
                    }
                    std::cmp::Ordering::Greater => {
                        diff.added.push(**kn);
                        new_iter.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if vo != vn {
                            diff.changed.push(**ko);
                        }
                        old_iter.next();
                        new_iter.next();
                    }
                },
            }
        }
        diff
    }

    /// True if nothing differs.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// The counts of this diff.
    pub fn counts(&self) -> TableChange {
        TableChange {
            added: self.added.len() as u64,
            removed: self.removed.len() as u64,
            changed: self.changed.len() as u64,
        }
    }
}

/// The per-table diffs between two canonical states.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateDiff {
    /// Path entries.
    pub paths: TableDiff<PathId>,
    /// Documents.
    pub documents: TableDiff<DocumentId>,
    /// Chunks.
    pub chunks: TableDiff<ChunkId>,
    /// Embeddings.
    pub embeddings: TableDiff<EmbeddingId>,
    /// Edges (an edge is its own key, so edges are only added or removed).
    pub edges: TableDiff<Edge>,
}

impl StateDiff {
    /// What changed from `old` to `new`.
    pub fn between(old: &CanonicalState, new: &CanonicalState) -> Self {
        Self {
            paths: TableDiff::<PathId>::between::<PathEntry>(old.paths(), new.paths()),
            documents: TableDiff::<DocumentId>::between::<Document>(
                old.documents(),
                new.documents(),
            ),
            chunks: TableDiff::<ChunkId>::between::<Chunk>(old.chunks(), new.chunks()),
            embeddings: TableDiff::<EmbeddingId>::between::<Embedding>(
                old.embeddings(),
                new.embeddings(),
            ),
            edges: TableDiff::<Edge>::between::<Edge>(old.edges(), new.edges()),
        }
    }

    /// True if the two states are identical.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
            && self.documents.is_empty()
            && self.chunks.is_empty()
            && self.embeddings.is_empty()
            && self.edges.is_empty()
    }

    /// The counts of this diff, as recorded in the state chain.
    pub fn summary(&self) -> ChangeSummary {
        ChangeSummary {
            paths: self.paths.counts(),
            documents: self.documents.counts(),
            chunks: self.chunks.counts(),
            embeddings: self.embeddings.counts(),
            edges: self.edges.counts(),
        }
    }
}
