//! Publish: a store's committed state into a database as one repository's head. The
//! bucket roots the database holds for the repository are compared with the store's;
//! the buckets that differ send the rows the repository lacks and drop the ones it no
//! longer holds, by their keys; the bucket roots and the head move with them in one
//! transaction, the head by a compare-and-swap on its old root.

use std::collections::{BTreeMap, BTreeSet};

use cfs_core::{MerkleRoot, N_BUCKETS, StateRoot, Table, TableRoots, TopTree};
use cfs_store::{ReadTxn, RowPayload, Settings, Store};
use postgres::Transaction;

use crate::content::{self, Written};
use crate::db::{Database, sql_error};
use crate::error::{DbError, Result};
use crate::schema::{self, Lock};
use crate::search_rows::{self, Touched};

/// How many times a publish starts again after the head moved under it.
const TRIES: u32 = 5;

/// Buckets whose rows a publish holds in memory at once: a sixteenth of a table (a first
/// publish of 104,836 chunks peaked at 166 MB holding whole tables).
const BUCKETS_AT_ONCE: usize = N_BUCKETS / 16;

/// What to publish.
#[derive(Clone, Debug, Default)]
pub struct PublishOptions {
    /// The repository's name in the database.
    pub repo: String,
    /// Repair what `verify` found: compare every bucket's rows, not only the buckets
    /// whose stored roots differ, and rewrite every row the repository holds from the
    /// store (each checked against its leaf), shared rows included.
    pub repair: bool,
}

/// How far a publish is: buckets of the five tables compared and brought to the
/// store's, of those whose roots differ (every bucket for a repair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublishProgress {
    /// Buckets done.
    pub done: usize,
    /// Buckets to do.
    pub total: usize,
}

/// What a publish did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishReport {
    /// The repository.
    pub repo: String,
    /// The state root its head names now.
    pub root: StateRoot,
    /// The root its head named before (`None`: it was new).
    pub previous: Option<StateRoot>,
    /// Buckets whose roots differed (of the five tables).
    pub buckets: usize,
    /// Rows the repository gained (rows of its tables).
    pub rows_added: usize,
    /// Rows it no longer holds.
    pub rows_removed: usize,
    /// Shared rows written: the database held them for no repository.
    pub rows_sent: usize,
    /// Rows it gained that the database held already (for another repository, or
    /// left by an earlier publish).
    pub rows_shared: usize,
    /// Vectors written.
    pub vectors_sent: usize,
    /// Bytes of the values written (encodings, texts, vectors, keys and leaves), not
    /// counting the protocol's framing.
    pub bytes_sent: u64,
    /// Chunks whose search rows were written (those of every document whose rows
    /// moved).
    pub search_rows: usize,
    /// Times the head moved under the publish before it landed.
    pub retries: u32,
}

impl PublishReport {
    fn new(repo: &str, root: StateRoot, retries: u32) -> Self {
        Self {
            repo: repo.to_owned(),
            root,
            previous: None,
            buckets: 0,
            rows_added: 0,
            rows_removed: 0,
            rows_sent: 0,
            rows_shared: 0,
            vectors_sent: 0,
            bytes_sent: 0,
            search_rows: 0,
            retries,
        }
    }

    fn add(&mut self, w: Written) {
        self.rows_sent += w.rows;
        self.rows_shared += w.shared;
        self.vectors_sent += w.vectors;
        self.bytes_sent += w.bytes;
    }
}

/// Checks a repository name: 1-200 bytes of letters, digits and `-_./@:`, not
/// starting with a dot.
pub fn check_name(name: &str) -> Result<()> {
    let refuse = |reason| {
        Err(DbError::Name {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() || name.len() > 200 {
        return refuse("a name is 1 to 200 bytes");
    }
    if name.starts_with('.') {
        return refuse("a name does not start with a dot");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./@:".contains(&b))
    {
        return refuse("a name is letters, digits and - _ . / @ :");
    }
    Ok(())
}

/// The store's side: the bucket roots of its five tables, its table roots and sequence.
struct Local {
    roots: Vec<Vec<MerkleRoot>>,
    table_roots: TableRoots,
    sequence: u64,
}

impl Local {
    fn read(txn: &ReadTxn) -> Result<Self> {
        let roots = Table::ALL
            .iter()
            .map(|&t| txn.bucket_roots(t))
            .collect::<cfs_store::Result<Vec<_>>>()?;
        Ok(Self {
            roots,
            table_roots: txn.table_roots()?,
            sequence: txn.sequence()?,
        })
    }
}

/// Publishes `store`'s committed state as the head of repository `options.repo` in
/// `db`, making cfs's tables if the database has none. On any failure the database is
/// as it was.
pub fn publish(
    store: &Store,
    db: &mut Database,
    options: &PublishOptions,
) -> Result<PublishReport> {
    publish_with(store, db, options, &|_| {})
}

/// [`publish`], telling `progress` the buckets to do, then after each group of them.
pub fn publish_with(
    store: &Store,
    db: &mut Database,
    options: &PublishOptions,
    progress: &dyn Fn(PublishProgress),
) -> Result<PublishReport> {
    check_name(&options.repo)?;
    schema::ensure(db)?;
    let txn = store.begin_read()?;
    let local = Local::read(&txn)?;
    let name = db.describe().to_owned();
    for retries in 0..TRIES {
        let tx = db
            .client()
            .transaction()
            .map_err(sql_error(&name, "begin"))?;
        let mut attempt = Attempt {
            tx,
            name: &name,
            txn: &txn,
            local: &local,
            report: PublishReport::new(&options.repo, local.table_roots.state_root(), retries),
            overwrite: false,
            progress,
            done: 0,
            touched: Touched::default(),
        };
        match attempt.run(store.settings(), options.repair) {
            Ok(Some(report)) => {
                attempt
                    .tx
                    .commit()
                    .map_err(sql_error(&name, "commit the publish"))?;
                return Ok(report);
            }
            Ok(None) => {}
            // Another publisher's shared rows crossed this one's: start again.
            Err(e) if is_transient(&e) => {}
            Err(e) => return Err(e),
        }
        attempt
            .tx
            .rollback()
            .map_err(sql_error(&name, "roll back"))?;
    }
    Err(DbError::Race {
        database: name,
        repo: options.repo.clone(),
        tries: TRIES,
    })
}

/// Whether `e` is a deadlock or serialization failure, which a new attempt resolves.
fn is_transient(e: &DbError) -> bool {
    let DbError::Sql { source, .. } = e else {
        return false;
    };
    source.code().is_some_and(|c| {
        *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
            || *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
    })
}

/// One try at moving the head, in one transaction.
struct Attempt<'a> {
    tx: Transaction<'a>,
    name: &'a str,
    txn: &'a ReadTxn,
    local: &'a Local,
    report: PublishReport,
    /// Rewrite every row of the buckets compared (a repair).
    overwrite: bool,
    /// Told after each group of buckets.
    progress: &'a dyn Fn(PublishProgress),
    /// Buckets done.
    done: usize,
    /// The documents whose search rows the member changes touch.
    touched: Touched,
}

impl Attempt<'_> {
    /// Writes everything and moves the head; `None` if the head moved under it.
    fn run(&mut self, settings: &Settings, repair: bool) -> Result<Option<PublishReport>> {
        let repo = self.lock(settings)?;
        let head = self.head(repo, repair)?;
        self.report.previous = head
            .as_deref()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .map(StateRoot);
        // A repair starts from nothing: the stored roots and members may be what is
        // damaged.
        let stored = if repair {
            self.clear(repo)?;
            None
        } else {
            Some(read_bucket_roots(&mut self.tx, self.name, repo)?)
        };
        self.overwrite = repair;
        let differing: Vec<Vec<u16>> = Table::ALL
            .iter()
            .enumerate()
            .map(|(tag, _)| {
                let local = &self.local.roots[tag];
                (0..N_BUCKETS as u16)
                    .filter(|&b| {
                        let b = usize::from(b);
                        stored.as_ref().is_none_or(|s| s[tag][b] != local[b])
                    })
                    .collect()
            })
            .collect();
        self.report.buckets = differing.iter().map(Vec::len).sum();
        (self.progress)(PublishProgress {
            done: 0,
            total: self.report.buckets,
        });
        for (table, buckets) in Table::ALL.into_iter().zip(&differing) {
            self.sync_table(repo, table, buckets)?;
        }
        let mut target = search_rows::Target {
            tx: &mut self.tx,
            name: self.name,
            repo,
        };
        let model = cfs_core::ModelHash::of(&settings.model_id);
        let touched = std::mem::take(&mut self.touched);
        self.report.search_rows = search_rows::refresh(&mut target, self.txn, &model, touched)?;
        self.check_roots(repo)?;
        Ok(self
            .move_head(repo, head, repair)?
            .then(|| self.report.clone()))
    }

    /// Drops the repository's members and bucket roots, by its key, for a repair to
    /// write them all again.
    fn clear(&mut self, repo: i32) -> Result<()> {
        let name = self.name;
        let removed = self
            .tx
            .execute("DELETE FROM cfs_members WHERE repo = $1", &[&repo])
            .map_err(sql_error(name, "drop the repository's rows for a repair"))?;
        self.report.rows_removed += removed as usize;
        for table in ["cfs_search", "cfs_search_docs", "cfs_postings"] {
            let sql = format!("DELETE FROM {table} WHERE repo = $1");
            self.tx.execute(&sql, &[&repo]).map_err(sql_error(
                name,
                "drop the repository's search rows for a repair",
            ))?;
        }
        self.tx
            .execute("DELETE FROM cfs_bucket_roots WHERE repo = $1", &[&repo])
            .map_err(sql_error(
                name,
                "drop the repository's bucket roots for a repair",
            ))?;
        Ok(())
    }

    /// Takes the locks (collection shared; the repository's alone) and gives the
    /// repository's id, adding the repository if it is new.
    fn lock(&mut self, settings: &Settings) -> Result<i32> {
        schema::lock(&mut self.tx, self.name, Lock::CollectionShared)?;
        let repo = self.repo_id(settings)?;
        schema::lock(&mut self.tx, self.name, Lock::Repository(repo))?;
        Ok(repo)
    }

    /// Brings the buckets `differing` of `table` to the store's, a few at a time, and
    /// writes their roots.
    fn sync_table(&mut self, repo: i32, table: Table, differing: &[u16]) -> Result<()> {
        if differing.is_empty() {
            return Ok(());
        }
        for some in differing.chunks(BUCKETS_AT_ONCE) {
            self.sync_buckets(repo, table, some)?;
            self.done += some.len();
            (self.progress)(PublishProgress {
                done: self.done,
                total: self.report.buckets,
            });
        }
        self.write_roots(repo, table, differing)
    }

    /// The repository's id, adding it if it is new; its settings must be the store's.
    fn repo_id(&mut self, settings: &Settings) -> Result<i32> {
        let name = self.name;
        let repo = &self.report.repo;
        let sizes = chunk_sizes(settings);
        let known = self
            .tx
            .query_opt("SELECT id FROM cfs_repos WHERE name = $1", &[repo])
            .map_err(sql_error(name, "read the repository"))?;
        if known.is_none() {
            self.tx
                .execute(
                    "INSERT INTO cfs_repos (name, model_id, chunk_sizes) VALUES ($1, $2, $3) \
                     ON CONFLICT (name) DO NOTHING",
                    &[repo, &settings.model_id, &sizes],
                )
                .map_err(sql_error(name, "add the repository"))?;
        }
        let row = self
            .tx
            .query_one(
                "SELECT id, model_id, chunk_sizes FROM cfs_repos WHERE name = $1",
                &[repo],
            )
            .map_err(sql_error(name, "read the repository"))?;
        let model: String = row.get(1);
        let held: Vec<i32> = crate::db::array(&row, 2).ok_or_else(|| DbError::Damaged {
            database: name.to_owned(),
            what: format!("repository {repo:?}'s chunk sizes hold a NULL"),
        })?;
        if model != settings.model_id || held != sizes {
            return Err(DbError::Settings {
                database: name.to_owned(),
                what: format!(
                    "repository {repo:?} is published with embedder {model} and chunk sizes \
                     {held:?}, the store has {} and {sizes:?}; a repository never mixes them \
                     (publish under another name)",
                    settings.model_id
                ),
            });
        }
        Ok(row.get(0))
    }

    /// The state root the repository's head names, if it has one.
    /// The state root the repository's head names, as stored (a repair takes one that
    /// is not 32 bytes, to replace it; a publish refuses it).
    fn head(&mut self, repo: i32, repair: bool) -> Result<Option<Vec<u8>>> {
        let row = self
            .tx
            .query_opt("SELECT state_root FROM cfs_heads WHERE repo = $1", &[&repo])
            .map_err(sql_error(self.name, "read the head"))?;
        let stored: Option<Vec<u8>> = row.map(|r| r.get(0));
        if let Some(bytes) = &stored
            && !repair
        {
            root_of(self.name, "the head's state root", bytes.clone())?;
        }
        Ok(stored)
    }

    /// Brings the repository's rows of `table` in the buckets `differing` to the store's.
    fn sync_buckets(&mut self, repo: i32, table: Table, differing: &[u16]) -> Result<()> {
        let name = self.name;
        let tag = tag_of(table);
        let buckets: Vec<i16> = differing.iter().map(|&b| b as i16).collect();
        let held: BTreeMap<Vec<u8>, Vec<u8>> = self
            .tx
            .query(
                "SELECT key, leaf FROM cfs_members WHERE repo = $1 AND tag = $2 AND bucket = ANY($3)",
                &[&repo, &tag, &buckets],
            )
            .map_err(sql_error(name, "read the repository's rows"))?
            .into_iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let mut local: BTreeMap<Vec<u8>, [u8; 32]> = BTreeMap::new();
        for &b in differing {
            local.extend(
                self.txn
                    .bucket_leaves(table, b)?
                    .into_iter()
                    .map(|r| (r.key, r.leaf)),
            );
        }
        let dropped: Vec<(&[u8], &[u8])> = held
            .iter()
            .filter(|(k, leaf)| local.get(*k).is_none_or(|l| l[..] != leaf[..]))
            .map(|(k, leaf)| (&k[..], &leaf[..]))
            .collect();
        let removed: Vec<&[u8]> = dropped.iter().map(|d| d.0).collect();
        let added: BTreeSet<&[u8]> = local
            .iter()
            .filter(|(k, leaf)| held.get(*k).is_none_or(|l| l[..] != leaf[..]))
            .map(|(k, _)| &k[..])
            .collect();
        let mut rows = self.rows_to_write(table, differing, &added)?;
        let mut writer = content::Writer {
            tx: &mut self.tx,
            name,
            txn: self.txn,
            overwrite: self.overwrite,
        };
        self.report.add(writer.write(table, &rows)?);
        rows.retain(|r| added.contains(&r.key[..]));
        self.touched.note(table, &dropped, &rows)?;
        self.report.rows_removed += removed.len();
        self.report.rows_added += rows.len();
        if !removed.is_empty() {
            self.tx
                .execute(
                    "DELETE FROM cfs_members WHERE repo = $1 AND tag = $2 AND key = ANY($3)",
                    &[&repo, &tag, &removed],
                )
                .map_err(sql_error(
                    name,
                    "drop the rows the repository no longer holds",
                ))?;
        }
        self.add_members(repo, tag, &rows)
    }

    /// The store's rows whose content a sync of `differing` writes: those `added`, or
    /// when overwriting, every row of those buckets.
    fn rows_to_write(
        &self,
        table: Table,
        differing: &[u16],
        added: &BTreeSet<&[u8]>,
    ) -> Result<Vec<RowPayload>> {
        let read: BTreeSet<u16> = if self.overwrite {
            differing.iter().copied().collect()
        } else {
            added
                .iter()
                .map(|k| cfs_core::Bucket::of_key(k).0)
                .collect()
        };
        let mut rows = Vec::with_capacity(added.len());
        for b in read {
            let payloads = self.txn.bucket_payloads(table, b)?;
            let wanted = |r: &RowPayload| self.overwrite || added.contains(&r.key[..]);
            rows.extend(payloads.into_iter().filter(wanted));
        }
        Ok(rows)
    }

    /// Adds `rows` to the repository's table `tag`.
    fn add_members(&mut self, repo: i32, tag: i16, rows: &[RowPayload]) -> Result<()> {
        for batch in rows.chunks(5_000) {
            let keys: Vec<&[u8]> = batch.iter().map(|r| &r.key[..]).collect();
            let buckets: Vec<i16> = batch
                .iter()
                .map(|r| cfs_core::Bucket::of_key(&r.key).0 as i16)
                .collect();
            let leaves: Vec<&[u8]> = batch.iter().map(|r| &r.leaf[..]).collect();
            self.tx
                .execute(
                    "INSERT INTO cfs_members (repo, tag, key, bucket, leaf) \
                     SELECT $1, $2, * FROM unnest($3::bytea[], $4::smallint[], $5::bytea[])",
                    &[&repo, &tag, &keys, &buckets, &leaves],
                )
                .map_err(sql_error(self.name, "add the repository's rows"))?;
            self.report.bytes_sent += batch.iter().map(|r| (r.key.len() + 34) as u64).sum::<u64>();
        }
        Ok(())
    }

    /// Writes the store's roots of the buckets `differing` of `table`: an empty
    /// bucket's row is dropped (by its key), another's set.
    fn write_roots(&mut self, repo: i32, table: Table, differing: &[u16]) -> Result<()> {
        let roots = &self.local.roots[index_of(table)];
        let empty = MerkleRoot::empty();
        let (gone, set): (Vec<u16>, Vec<u16>) = differing
            .iter()
            .partition(|&&b| roots[usize::from(b)] == empty);
        let tag = tag_of(table);
        let name = self.name;
        if !gone.is_empty() {
            let gone: Vec<i16> = gone.iter().map(|&b| b as i16).collect();
            self.tx
                .execute(
                    "DELETE FROM cfs_bucket_roots WHERE repo = $1 AND tag = $2 AND bucket = ANY($3)",
                    &[&repo, &tag, &gone],
                )
                .map_err(sql_error(name, "drop emptied bucket roots"))?;
        }
        let buckets: Vec<i16> = set.iter().map(|&b| b as i16).collect();
        let values: Vec<&[u8]> = set.iter().map(|&b| &roots[usize::from(b)].0[..]).collect();
        self.tx
            .execute(
                "INSERT INTO cfs_bucket_roots (repo, tag, bucket, root) \
                 SELECT $1, $2, * FROM unnest($3::smallint[], $4::bytea[]) \
                 ON CONFLICT (repo, tag, bucket) DO UPDATE SET root = EXCLUDED.root",
                &[&repo, &tag, &buckets, &values],
            )
            .map_err(sql_error(name, "write bucket roots"))?;
        self.report.bytes_sent += 34 * set.len() as u64;
        Ok(())
    }

    /// What the head will promise: the bucket roots the database now holds for the
    /// repository make the store's table roots and state root.
    fn check_roots(&mut self, repo: i32) -> Result<()> {
        let held = read_bucket_roots(&mut self.tx, self.name, repo)?;
        for (tag, table) in Table::ALL.into_iter().enumerate() {
            let root = TopTree::from_bucket_roots(&held[tag])
                .expect("1,024 roots")
                .root();
            // Another writer of the bucket roots (one that does not take the
            // repository's lock) can make them disagree: the publish fails, rolled back.
            if root != self.local.table_roots.get(table) {
                return Err(DbError::Damaged {
                    database: self.name.to_owned(),
                    what: format!(
                        "the {} bucket roots written for {} do not make the store's table \
                         root (did another writer change them?); nothing was published",
                        table.name(),
                        self.report.repo
                    ),
                });
            }
        }
        Ok(())
    }

    /// Moves the head from `old` (its stored root) to the store's state, rewriting all
    /// of it for a repair; `false` if another publisher moved it first.
    fn move_head(&mut self, repo: i32, old: Option<Vec<u8>>, repair: bool) -> Result<bool> {
        let t = &self.local.table_roots;
        let roots: Vec<Vec<u8>> = Table::ALL.iter().map(|&x| t.get(x).0.to_vec()).collect();
        let root = &self.report.root.0[..];
        let sequence = self.local.sequence as i64;
        let moved = match old {
            Some(old) if old == root && !repair => self.tx.execute(
                "UPDATE cfs_heads SET sequence = $2 WHERE repo = $1 AND state_root = $3",
                &[&repo, &sequence, &root],
            ),
            Some(old) => self.tx.execute(
                "UPDATE cfs_heads SET sequence = $2, state_root = $3, table_roots = $4, \
                 published = now() WHERE repo = $1 AND state_root = $5",
                &[&repo, &sequence, &root, &roots, &old],
            ),
            None => self.tx.execute(
                "INSERT INTO cfs_heads (repo, sequence, state_root, table_roots) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (repo) DO NOTHING",
                &[&repo, &sequence, &root, &roots],
            ),
        };
        let moved = moved.map_err(sql_error(self.name, "move the head"))?;
        Ok(moved == 1)
    }
}

/// A table's place in the state root.
fn index_of(table: Table) -> usize {
    Table::ALL
        .iter()
        .position(|&t| t == table)
        .expect("a table")
}

/// A table's tag in `cfs_members` and `cfs_bucket_roots`: its place in the state root.
pub(crate) fn tag_of(table: Table) -> i16 {
    index_of(table) as i16
}

/// The chunk sizes a repository is recorded with: target, max, overlap.
fn chunk_sizes(settings: &Settings) -> Vec<i32> {
    let c = &settings.chunk;
    [c.target_bytes, c.max_bytes, c.overlap_bytes]
        .iter()
        .map(|&x| x as i32)
        .collect()
}

/// A stored 32-byte root, or a damaged-database error naming `what`.
pub(crate) fn root_of(name: &str, what: &str, bytes: Vec<u8>) -> Result<[u8; 32]> {
    bytes.try_into().map_err(|b: Vec<u8>| DbError::Damaged {
        database: name.to_owned(),
        what: format!("{what} is {} bytes, not 32", b.len()),
    })
}

/// The bucket roots the database holds for `repo`, by tag (five tables), and what is
/// wrong with the rows that cannot be one (a tag or bucket out of range, a root not of
/// 32 bytes).
pub(crate) fn stored_bucket_roots(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
) -> Result<(Vec<Vec<MerkleRoot>>, Vec<String>)> {
    let mut roots = vec![vec![MerkleRoot::empty(); N_BUCKETS]; Table::ALL.len()];
    let mut wrong = Vec::new();
    let rows = tx
        .query(
            "SELECT tag, bucket, root FROM cfs_bucket_roots WHERE repo = $1",
            &[&repo],
        )
        .map_err(sql_error(name, "read bucket roots"))?;
    for row in rows {
        let (tag, bucket): (i16, i16) = (row.get(0), row.get(1));
        let slot = usize::try_from(tag)
            .ok()
            .zip(usize::try_from(bucket).ok())
            .and_then(|(t, b)| roots.get_mut(t)?.get_mut(b));
        let root = <[u8; 32]>::try_from(row.get::<_, Vec<u8>>(2));
        match (slot, root) {
            (Some(slot), Ok(root)) => *slot = MerkleRoot(root),
            (None, _) => wrong.push(format!("cfs_bucket_roots holds tag {tag} bucket {bucket}")),
            (_, Err(b)) => wrong.push(format!(
                "the root of tag {tag} bucket {bucket} is {} bytes, not 32",
                b.len()
            )),
        }
    }
    Ok((roots, wrong))
}

/// [`stored_bucket_roots`], any wrong row refused: what a publish builds on.
fn read_bucket_roots(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
) -> Result<Vec<Vec<MerkleRoot>>> {
    let (roots, wrong) = stored_bucket_roots(tx, name, repo)?;
    match wrong.into_iter().next() {
        None => Ok(roots),
        Some(what) => Err(DbError::Damaged {
            database: name.to_owned(),
            what: format!("{what} (`cfs publish --repair` rewrites them)"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names of letters, digits and `-_./@:` up to 200 bytes pass; empty, too long,
    /// dot-first, spaces, quotes and other punctuation are refused with the reason.
    #[test]
    fn repository_names_are_checked() {
        for good in ["cfs", "org/repo", "a.b-c_d@main:1", &"x".repeat(200)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a b", "a'b", "a;b", "é", &"x".repeat(201)] {
            let refused = check_name(bad).unwrap_err();
            assert!(matches!(refused, DbError::Name { .. }), "{bad:?}");
        }
    }
}
