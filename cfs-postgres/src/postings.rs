//! A repository's posting lists (`cfs_postings`, docs/format.md "PostgreSQL"): for each
//! term its chunks, with the term's count (a definition term's value) and the chunk's
//! length, in chunk id order, in one row. A query reads the rows of its terms, across
//! every repository searched, in one statement, and scores them as a snapshot scores
//! its own postings. Publish rewrites the rows of the terms its changed documents had
//! or have.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cfs_search::DocumentRows;
use postgres::Transaction;

use crate::db::sql_error;
use crate::error::{DbError, Result};

/// Bytes of one posting: chunk id, count, length (both `u32`, little-endian).
const POSTING: usize = 24;

/// Terms read or written per statement.
const TERMS_AT_ONCE: usize = 4_096;

/// One chunk under a term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posting {
    pub chunk: [u8; 16],
    pub count: u32,
    pub length: u32,
}

/// The postings of a row (`None` when its length is not a whole number of postings).
pub(crate) fn decode(bytes: &[u8]) -> Option<Vec<Posting>> {
    if !bytes.len().is_multiple_of(POSTING) {
        return None;
    }
    let u32_at = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
    Some(
        bytes
            .chunks_exact(POSTING)
            .map(|p| Posting {
                chunk: p[..16].try_into().expect("16 bytes"),
                count: u32_at(&p[16..20]),
                length: u32_at(&p[20..24]),
            })
            .collect(),
    )
}

fn encode(postings: &[Posting]) -> Vec<u8> {
    let mut out = Vec::with_capacity(postings.len() * POSTING);
    for p in postings {
        out.extend_from_slice(&p.chunk);
        out.extend_from_slice(&p.count.to_le_bytes());
        out.extend_from_slice(&p.length.to_le_bytes());
    }
    out
}

/// The posting lists of `terms` in each of `repos`, by (repository, term).
pub(crate) fn read(
    tx: &mut Transaction<'_>,
    name: &str,
    repos: &[i32],
    terms: &[String],
) -> Result<HashMap<(i32, String), Vec<Posting>>> {
    let rows = tx
        .query(
            "SELECT repo, term, postings FROM cfs_postings \
             WHERE repo = ANY($1) AND term = ANY($2)",
            &[&repos, &terms],
        )
        .map_err(sql_error(name, "read the query's posting lists"))?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let (repo, term): (i32, String) = (row.get(0), row.get(1));
        let list = decode(row.get(2)).ok_or_else(|| damaged(name, repo, &term))?;
        out.insert((repo, term), list);
    }
    Ok(out)
}

fn damaged(name: &str, repo: i32, term: &str) -> DbError {
    DbError::Damaged {
        database: name.to_owned(),
        what: format!("the posting list of {term:?} in repository {repo} is cut short"),
    }
}

/// What a publish changes in a repository's posting lists: the chunks whose postings
/// go (every chunk of a changed document, as the database held it), the terms they
/// had, and the postings of the documents' chunks now.
#[derive(Debug, Default)]
pub(crate) struct Update {
    removed: BTreeSet<[u8; 16]>,
    old_terms: BTreeSet<String>,
    added: BTreeMap<String, Vec<Posting>>,
}

impl Update {
    /// An update dropping the postings of `chunks`, which held `terms`.
    pub(crate) fn dropping(chunks: BTreeSet<[u8; 16]>, terms: BTreeSet<String>) -> Self {
        Self {
            removed: chunks,
            old_terms: terms,
            added: BTreeMap::new(),
        }
    }

    /// Adds the postings of `docs`' chunks.
    pub(crate) fn add(&mut self, docs: &[DocumentRows]) {
        for row in docs.iter().flat_map(|d| &d.chunks) {
            for (term, count) in &row.terms {
                self.added.entry(term.clone()).or_default().push(Posting {
                    chunk: row.meta.id.0,
                    count: *count,
                    length: row.length,
                });
            }
        }
    }

    /// Rewrites the rows of every term touched: the postings of the dropped chunks
    /// taken out, the new ones put in, in chunk id order; a row left empty is dropped.
    pub(crate) fn write(self, tx: &mut Transaction<'_>, name: &str, repo: i32) -> Result<()> {
        let mut terms: BTreeSet<&String> = self.old_terms.iter().collect();
        terms.extend(self.added.keys());
        let terms: Vec<&String> = terms.into_iter().collect();
        for batch in terms.chunks(TERMS_AT_ONCE) {
            let held = read_some(tx, name, repo, batch)?;
            let (mut gone, mut set, mut lists) = (Vec::new(), Vec::new(), Vec::new());
            for term in batch {
                let mut list: Vec<Posting> = held.get(*term).cloned().unwrap_or_default();
                list.retain(|p| !self.removed.contains(&p.chunk));
                list.extend(self.added.get(*term).into_iter().flatten().copied());
                list.sort_unstable_by_key(|p| p.chunk);
                list.dedup_by_key(|p| p.chunk);
                match list.is_empty() {
                    true => gone.push(term.as_str()),
                    false => {
                        set.push(term.as_str());
                        lists.push(encode(&list));
                    }
                }
            }
            write_some(tx, name, repo, (&gone, &set, &lists))?;
        }
        Ok(())
    }
}

/// The posting lists of `terms` held for `repo`, by term.
fn read_some(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
    terms: &[&String],
) -> Result<HashMap<String, Vec<Posting>>> {
    let rows = tx
        .query(
            "SELECT term, postings FROM cfs_postings WHERE repo = $1 AND term = ANY($2)",
            &[&repo, &terms],
        )
        .map_err(sql_error(name, "read posting lists to change"))?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let term: String = row.get(0);
        let list = decode(row.get(1)).ok_or_else(|| damaged(name, repo, &term))?;
        out.insert(term, list);
    }
    Ok(out)
}

/// Drops the rows of `gone` and sets those of `set` to `lists`.
fn write_some(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
    (gone, set, lists): (&[&str], &[&str], &[Vec<u8>]),
) -> Result<()> {
    if !gone.is_empty() {
        tx.execute(
            "DELETE FROM cfs_postings WHERE repo = $1 AND term = ANY($2)",
            &[&repo, &gone],
        )
        .map_err(sql_error(name, "drop emptied posting lists"))?;
    }
    tx.execute(
        "INSERT INTO cfs_postings (repo, term, postings) \
         SELECT $1, * FROM unnest($2::text[], $3::bytea[]) \
         ON CONFLICT (repo, term) DO UPDATE SET postings = EXCLUDED.postings",
        &[&repo, &set, &lists],
    )
    .map_err(sql_error(name, "write posting lists"))?;
    Ok(())
}
