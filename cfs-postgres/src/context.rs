//! A query's answer from a database's repositories as context for a model, within a
//! budget of tokens (`cfs_search::pack`, as a store's): the best files of all of them,
//! each repository ranked as its store would rank it and the files merged by score, each
//! span cited `REPO/PATH:LINES`. Read in one snapshot. Chunks are not widened to whole
//! lines here (their neighbours are not read): a window of a long symbol keeps its ends.

use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::ChunkId;
use cfs_ingest::Embedder;
use cfs_search::{ChunkMeta, ChunkSource, MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS, Packed, Query};
use cfs_store::StoreError;

use crate::db::{Database, sql_error};
use crate::error::Result;
use crate::resolve;
use crate::schema;
use crate::search::{SearchedRepo, is_standby, rank_repos};

/// What a context from the database holds.
#[derive(Clone, Debug, PartialEq)]
pub struct DbContext {
    /// The database, as [`Database::describe`] names it.
    pub database: String,
    /// Whether it is a standby.
    pub standby: bool,
    /// The repositories read, with their heads.
    pub repos: Vec<SearchedRepo>,
    /// The budget asked for.
    pub budget: u32,
    /// The files packed, each naming its repository.
    pub packed: Packed,
}

/// The context of `query` within `budget` tokens from the repositories `repos` of `db`
/// (every one when empty): the best `query.k` files of all of them.
pub fn context(
    db: &mut Database,
    query: &Query,
    embedder: &dyn Embedder,
    repos: &[String],
    budget: u32,
) -> Result<DbContext> {
    if !(MIN_CONTEXT_TOKENS..=MAX_CONTEXT_TOKENS).contains(&budget) {
        return Err(StoreError::InvalidInput(format!(
            "a context's budget is {MIN_CONTEXT_TOKENS} to {MAX_CONTEXT_TOKENS} tokens, not {budget}"
        ))
        .into());
    }
    let (name, mut tx) = schema::read_snapshot(db)?;
    let standby = is_standby(&mut tx, &name)?;
    let (read, ranked) = rank_repos(&mut tx, (&name, repos), query, embedder, true)?;
    // The best files of all the repositories: by score, ties by repository, then rank.
    let mut best: Vec<(u64, usize, usize, cfs_search::RankedFile)> = Vec::new();
    for (place, files) in ranked.into_iter().enumerate() {
        let files = files.into_iter().enumerate();
        best.extend(files.map(|(rank, f)| (f.score, place, rank, f)));
    }
    best.sort_by_key(|e| (std::cmp::Reverse(e.0), e.1, e.2));
    best.truncate(query.k);
    let ids: Vec<(i32, ChunkId)> = best
        .iter()
        .flat_map(|(_, place, _, f)| f.chunks.iter().map(|c| (read[*place].id, c.meta.id)))
        .collect();
    let texts = resolve::texts(&mut tx, &name, &ids)?;
    let source = Texts {
        texts: texts
            .into_iter()
            .map(|((_, id), text)| (id, text))
            .collect(),
    };
    let labels: Vec<&str> = best.iter().map(|e| read[e.1].name.as_str()).collect();
    let files: Vec<cfs_search::RankedFile> = best.iter().map(|e| e.3.clone()).collect();
    let packed = cfs_search::pack(&source, &files, &labels, budget)?;
    tx.commit().map_err(sql_error(&name, "end the snapshot"))?;
    Ok(DbContext {
        database: name,
        standby,
        repos: read.into_iter().map(SearchedRepo::from).collect(),
        budget,
        packed,
    })
}

/// The texts of the ranked files' chunks, read at once. A chunk id names the same text
/// in every repository that holds it (ids are of content), so one map serves them all.
struct Texts {
    texts: HashMap<ChunkId, String>,
}

impl ChunkSource for Texts {
    fn text(&self, id: &ChunkId) -> cfs_store::Result<String> {
        self.texts.get(id).cloned().ok_or_else(|| {
            StoreError::Corrupted(format!("chunk {id} has a search row but no text"))
        })
    }

    fn neighbour(&self, _: &ChunkId) -> Option<Arc<ChunkMeta>> {
        None
    }
}
