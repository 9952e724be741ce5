//! A repository's posting lists (`cfs_postings`, docs/format.md "PostgreSQL"): for each
//! term its chunks, with the term's count (a definition term's value) and the chunk's
//! length, in one row per slice of the documents ([`slice_of`]), in chunk id order
//! within it. A query reads the rows of its terms, across every repository searched,
//! in one statement, and scores them as a snapshot scores its own postings (the order
//! of the entries does not matter to a sum). Publish rewrites the slices of its changed
//! documents: a one-file change rewrites a 64th of a common term's list (a path's words
//! are in every chunk of the files under it), not the whole list.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cfs_search::DocumentRows;
use postgres::Transaction;

use crate::db::sql_error;
use crate::error::{DbError, Result};

/// Bytes of one posting: chunk id, count, length (both `u32`, little-endian).
const POSTING: usize = 24;

/// Rows read or written per statement.
const TERMS_AT_ONCE: usize = 4_096;

/// The slice of a chunk's postings, one of 64: the top six bits of its document's id
/// (ids are uniform), so that a document's chunks are all in one slice.
fn slice_of(document: &[u8; 16]) -> i16 {
    i16::from(document[0] >> 2)
}

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
        out.entry((repo, term))
            .or_insert_with(Vec::new)
            .extend(list);
    }
    Ok(out)
}

fn damaged(name: &str, repo: i32, term: &str) -> DbError {
    DbError::Damaged {
        database: name.to_owned(),
        what: format!("the posting list of {term:?} in repository {repo} is cut short"),
    }
}

/// A row of a repository's posting lists: its term and slice.
type Key = (String, i16);

/// What a publish changes in a repository's posting lists: the chunks whose postings
/// go (every chunk of a changed document, as the database held it), the (term, slice)
/// rows they are in, and the postings of the documents' chunks now.
#[derive(Debug, Default)]
pub(crate) struct Update {
    removed: BTreeSet<[u8; 16]>,
    old: BTreeSet<Key>,
    added: BTreeMap<Key, Vec<Posting>>,
}

impl Update {
    /// Notes that the postings of `chunk` of `document`, which holds `terms`, go.
    pub(crate) fn drop_chunk(
        &mut self,
        (chunk, document): ([u8; 16], [u8; 16]),
        terms: Vec<String>,
    ) {
        let slice = slice_of(&document);
        self.removed.insert(chunk);
        self.old.extend(terms.into_iter().map(|t| (t, slice)));
    }

    /// Adds the postings of `docs`' chunks.
    pub(crate) fn add(&mut self, docs: &[DocumentRows]) {
        for row in docs.iter().flat_map(|d| &d.chunks) {
            let slice = slice_of(&row.meta.doc.id.0);
            for (term, count) in &row.terms {
                let posting = Posting {
                    chunk: row.meta.id.0,
                    count: *count,
                    length: row.length,
                };
                self.added
                    .entry((term.clone(), slice))
                    .or_default()
                    .push(posting);
            }
        }
    }

    /// Rewrites every (term, slice) row touched: the postings of the dropped chunks
    /// taken out, the new ones put in, in chunk id order; a row left empty is dropped.
    /// A repository without posting lists (a first publish, a repair) reads none. Rows
    /// are read by key, one index probe each.
    pub(crate) fn write(self, tx: &mut Transaction<'_>, name: &str, repo: i32) -> Result<()> {
        let mut keys: BTreeSet<&Key> = self.old.iter().collect();
        keys.extend(self.added.keys());
        let keys: Vec<&Key> = keys.into_iter().collect();
        let any: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM cfs_postings WHERE repo = $1)",
                &[&repo],
            )
            .map_err(sql_error(name, "look for the repository's posting lists"))?
            .get(0);
        for batch in keys.chunks(TERMS_AT_ONCE) {
            let held = match any {
                true => read_some(tx, name, repo, batch)?,
                false => HashMap::new(),
            };
            let (mut gone, mut set, mut lists) = (Vec::new(), Vec::new(), Vec::new());
            for key in batch {
                let mut list: Vec<Posting> = held.get(*key).cloned().unwrap_or_default();
                list.retain(|p| !self.removed.contains(&p.chunk));
                list.extend(self.added.get(*key).into_iter().flatten().copied());
                list.sort_unstable_by_key(|p| p.chunk);
                list.dedup_by_key(|p| p.chunk);
                match list.is_empty() {
                    true => gone.push(*key),
                    false => {
                        set.push(*key);
                        lists.push(encode(&list));
                    }
                }
            }
            write_some(tx, name, repo, (&gone, &set, &lists))?;
        }
        Ok(())
    }
}

/// The terms and slices of `keys`, as two columns.
fn columns<'k>(keys: &[&'k (String, i16)]) -> (Vec<&'k str>, Vec<i16>) {
    keys.iter().map(|k| (k.0.as_str(), k.1)).unzip()
}

/// The rows of `keys` held for `repo`.
fn read_some(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
    keys: &[&Key],
) -> Result<HashMap<Key, Vec<Posting>>> {
    let (terms, slices) = columns(keys);
    let rows = tx
        .query(
            "SELECT k.term, k.slice, x.postings FROM unnest($2::text[], $3::smallint[]) \
             AS k(term, slice) CROSS JOIN LATERAL (SELECT p.postings FROM cfs_postings p \
             WHERE p.repo = $1 AND p.term = k.term AND p.slice = k.slice) x",
            &[&repo, &terms, &slices],
        )
        .map_err(sql_error(name, "read posting lists to change"))?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let term: String = row.get(0);
        let list = decode(row.get(2)).ok_or_else(|| damaged(name, repo, &term))?;
        out.insert((term, row.get(1)), list);
    }
    Ok(out)
}

/// Drops the rows of `gone` and sets those of `set` to `lists`.
fn write_some(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
    (gone, set, lists): (&[&Key], &[&Key], &[Vec<u8>]),
) -> Result<()> {
    if !gone.is_empty() {
        let (terms, slices) = columns(gone);
        tx.execute(
            "DELETE FROM cfs_postings WHERE repo = $1 AND term = ANY($2) \
             AND (term, slice) IN (SELECT * FROM unnest($2::text[], $3::smallint[]))",
            &[&repo, &terms, &slices],
        )
        .map_err(sql_error(name, "drop emptied posting lists"))?;
    }
    let (terms, slices) = columns(set);
    tx.execute(
        "INSERT INTO cfs_postings (repo, term, slice, postings) \
         SELECT $1, * FROM unnest($2::text[], $3::smallint[], $4::bytea[]) \
         ON CONFLICT (repo, term, slice) DO UPDATE SET postings = EXCLUDED.postings",
        &[&repo, &terms, &slices, &lists],
    )
    .map_err(sql_error(name, "write posting lists"))?;
    Ok(())
}
