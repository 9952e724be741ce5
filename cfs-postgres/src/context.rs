//! A query's answer from a database's repositories as context for a model, within a
//! budget of tokens (`cfs_search::pack`, as a store's): the best files of all of them,
//! each repository ranked as its store would rank it and the files merged by score, each
//! span cited `[REPO] PATH:LINES`. Read in one snapshot, with each ranked chunk's
//! neighbours, so that chunks are widened to whole lines as a store's context widens
//! them: one repository's context is its store's.

use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::ChunkId;
use cfs_ingest::Embedder;
use cfs_search::{ChunkMeta, ChunkSource, Packed, Query, RankedFile};
use cfs_store::StoreError;
use postgres::Transaction;

use crate::db::{Database, sql_error};
use crate::error::{DbError, Result};
use crate::resolve;
use crate::schema;
use crate::search::{Repo, SearchedRepo, is_standby, rank_repos};

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
    cfs_search::check_budget(budget)?;
    let (name, mut tx) = schema::read_snapshot(db)?;
    let standby = is_standby(&mut tx, &name)?;
    let (read, ranked) = rank_repos(&mut tx, (&name, repos), query, embedder, true)?;
    // The best files of all the repositories: by score, ties by repository, then rank.
    let mut best: Vec<(u64, usize, usize, RankedFile)> = Vec::new();
    for (place, files) in ranked.into_iter().enumerate() {
        let files = files.into_iter().enumerate();
        best.extend(files.map(|(rank, f)| (f.score, place, rank, f)));
    }
    best.sort_by_key(|e| (std::cmp::Reverse(e.0), e.1, e.2));
    best.truncate(query.k);
    let source = read_chunks(&mut tx, &name, &best, &read)?;
    let labels: Vec<&str> = best.iter().map(|e| read[e.1].name.as_str()).collect();
    let files: Vec<RankedFile> = best.into_iter().map(|e| e.3).collect();
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

/// The ranked files' chunks and each one's neighbours (to widen a chunk to whole lines,
/// as a store's context does), read at once: their texts, and the neighbours' metadata.
/// A chunk id names the same text and place in every repository that holds it (ids are
/// of the document and the text), so one map serves them all.
struct Chunks {
    texts: HashMap<ChunkId, String>,
    neighbours: HashMap<ChunkId, Arc<ChunkMeta>>,
}

/// The best files' chunks of `best` (of the repositories `read`), with their neighbours;
/// a chunk without its text is damage, named with its repository.
fn read_chunks(
    tx: &mut Transaction<'_>,
    name: &str,
    best: &[(u64, usize, usize, RankedFile)],
    read: &[Repo],
) -> Result<Chunks> {
    let mut ranked: Vec<(i32, ChunkId)> = Vec::new();
    let mut beside: Vec<(i32, ChunkId)> = Vec::new();
    for (_, place, _, file) in best {
        let repo = read[*place].id;
        for c in &file.chunks {
            ranked.push((repo, c.meta.id));
            let order = &c.meta.doc.chunks;
            let at = c.meta.sequence as usize;
            let near = [at.checked_sub(1), at.checked_add(1)];
            beside.extend(
                near.into_iter()
                    .flatten()
                    .filter_map(|i| order.get(i))
                    .map(|id| (repo, *id)),
            );
        }
    }
    let neighbours = resolve::chunks(tx, name, beside.clone())?;
    let mut wanted = ranked.clone();
    wanted.extend(beside.into_iter().filter(|k| neighbours.contains_key(k)));
    wanted.sort_unstable();
    wanted.dedup();
    let texts = resolve::texts(tx, name, &wanted)?;
    if let Some((repo, id)) = ranked.iter().find(|k| !texts.contains_key(k)) {
        let repo = read
            .iter()
            .find(|r| r.id == *repo)
            .map_or("?", |r| r.name.as_str());
        return Err(DbError::Damaged {
            database: name.to_owned(),
            what: format!("chunk {id} of repository {repo:?} has a search row but no text"),
        });
    }
    Ok(Chunks {
        texts: texts
            .into_iter()
            .map(|((_, id), text)| (id, text))
            .collect(),
        neighbours: neighbours
            .into_iter()
            .map(|((_, id), meta)| (id, meta))
            .collect(),
    })
}

impl ChunkSource for Chunks {
    fn text(&self, id: &ChunkId) -> cfs_store::Result<String> {
        self.texts.get(id).cloned().ok_or_else(|| {
            StoreError::Corrupted(format!("chunk {id} has a search row but no text"))
        })
    }

    fn neighbour(&self, id: &ChunkId) -> Option<Arc<ChunkMeta>> {
        self.neighbours.get(id).cloned()
    }
}
