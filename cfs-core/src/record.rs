//! The state chain: one record per commit, linking each state root to its parent.
//!
//! Records are history, not state: their timestamps differ between machines, so they are
//! not part of the state root. Two stores with the same files agree on the root whatever
//! path of commits led there.

use borsh::{BorshDeserialize, BorshSerialize};

use crate::encode::Canonical;
use crate::error::CoreError;
use crate::hash::StateRoot;
use crate::table::TableRoots;

/// Rows one commit added, removed and changed in one table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct TableChange {
    /// Keys that were absent before.
    pub added: u64,
    /// Keys that are absent after.
    pub removed: u64,
    /// Keys present before and after with another leaf.
    pub changed: u64,
}

/// What one commit changed, per table, in table order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct ChangeSummary {
    /// Path entries.
    pub paths: TableChange,
    /// Documents.
    pub documents: TableChange,
    /// Chunks.
    pub chunks: TableChange,
    /// Embeddings.
    pub embeddings: TableChange,
    /// Edges.
    pub edges: TableChange,
}

impl ChangeSummary {
    /// Total rows removed over all tables.
    pub fn n_removed(&self) -> u64 {
        [
            self.paths,
            self.documents,
            self.chunks,
            self.embeddings,
            self.edges,
        ]
        .iter()
        .map(|t| t.removed)
        .sum()
    }
}

/// One link of the state chain. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct StateRecord {
    /// 1 for the first commit, then +1 per commit.
    pub sequence: u64,
    /// The state root before the commit (the empty-state root for sequence 1).
    pub parent: StateRoot,
    /// The state root after the commit.
    pub root: StateRoot,
    /// The five table roots that `root` is composed from.
    pub table_roots: TableRoots,
    /// Wall-clock time of the commit, milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// What changed.
    pub summary: ChangeSummary,
}

impl Canonical for StateRecord {
    const KIND: &'static str = "state record";

    fn validate(&self) -> Result<(), CoreError> {
        if self.sequence == 0 {
            return Err(CoreError::invalid(Self::KIND, "sequence starts at 1"));
        }
        if self.table_roots.state_root() != self.root {
            return Err(CoreError::invalid(
                Self::KIND,
                "root is not the state root of its table roots",
            ));
        }
        if self.sequence == 1 && self.parent != TableRoots::empty().state_root() {
            return Err(CoreError::invalid(
                Self::KIND,
                "the first record's parent must be the empty-state root",
            ));
        }
        Ok(())
    }
}
