//! The bulk loader: rows of new documents wait in memory until their transaction
//! commits (or something reads or removes rows of their tables), then go into each table
//! sorted by key. A table that is empty then (a cold index) receives them as one ordered
//! run through redb's `CursorMut`, which packs every page, and the bucket roots of a
//! committed table are hashed from the same in-memory rows beside the cursor, so the
//! commit does not read them back.

use cfs_core::{Bucket, MerkleRoot, Table, merkle_roots};
use rayon::prelude::*;
use redb::ReadableTableMetadata;

use crate::error::{Result, StoreError};
pub(crate) use crate::rows::Rows;
use crate::spill::{Merge, Run};
use crate::tables;

/// The tables whose rows of new documents wait in memory until the transaction commits
/// (or something reads or removes their rows), and the committed table of each.
pub(crate) const STAGED_TABLES: [(TableDef, Option<Table>); 5] = [
    (tables::CHUNKS, Some(Table::Chunks)),
    (tables::EMBEDDINGS, Some(Table::Embeddings)),
    (tables::EDGES, Some(Table::Edges)),
    (tables::CHUNKS_BY_DOCUMENT, None),
    (tables::EDGES_BY_TARGET, None),
];

/// Where `chunks_by_document` and `edges_by_target` rows wait in `STAGED_TABLES`.
pub(crate) const CHUNK_INDEX_SLOT: usize = 3;
pub(crate) const TARGET_INDEX_SLOT: usize = 4;

/// Where a committed table's new rows wait in `STAGED_TABLES`, if they are staged.
pub(crate) fn staged_slot(table: Table) -> Option<usize> {
    STAGED_TABLES.iter().position(|(_, t)| *t == Some(table))
}

/// Staged rows beyond this many bytes (of heap, by `ROW_HEAP`) are spilled (or, for a
/// table that holds rows already, written), unless the write sets its own budget.
pub(crate) const STAGED_BYTES: usize = 128 << 20;

/// Heap bytes of a staged row besides its key and value bytes, counted as when each row
/// was a pair of `Vec`s (its span in `Rows` is 16): the budget's rows spill as before.
const ROW_HEAP: usize = 80;

pub(crate) type TableDef = redb::TableDefinition<'static, &'static [u8], &'static [u8]>;

/// Rows of new documents held back until commit. A table that is empty when they are
/// written (a cold index) receives them as one ordered run, which redb packs into full
/// pages; rows inserted batch by batch at random keys leave pages about 60% full, and
/// every page they leave is written at commit. Rows staged are counted as added and
/// their buckets as touched when staged (fresh documents' ids are new); the write
/// corrects the count for a key that was present after all.
#[derive(Default)]
pub(crate) struct Staged {
    /// Per entry of `STAGED_TABLES`: (key, value) in the order staged.
    pub(crate) rows: [Rows; 5],
    /// Heap bytes of `rows`.
    pub(crate) bytes: usize,
    /// Per entry of `STAGED_TABLES`: rows spilled earlier, in staging order; only for a
    /// table that is empty (see `spill.rs`).
    pub(crate) runs: [Vec<Run>; 5],
}

impl Staged {
    pub(crate) fn push(&mut self, table: usize, key: &[u8], value: &[u8]) {
        self.bytes += key.len() + value.len() + ROW_HEAP;
        self.rows[table].push(key, value);
    }

    /// Every row of `rows` (one document's), in order.
    pub(crate) fn extend(&mut self, table: usize, rows: &Rows) {
        self.bytes +=
            rows.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() + rows.len() * ROW_HEAP;
        self.rows[table].extend_from(rows);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.iter().all(Rows::is_empty) && self.runs.iter().all(Vec::is_empty)
    }
}

/// What writing one table's staged rows did.
#[derive(Default)]
pub(crate) struct StagedWrite {
    /// Keys that were present already (counted as added when staged).
    pub(crate) present: u64,
    /// Of those, the ones whose value changed.
    pub(crate) differed: u64,
    /// For a committed table that was empty: the root of every bucket it now holds,
    /// hashed from the rows while they were written.
    pub(crate) bucket_roots: Option<Vec<(u16, MerkleRoot)>>,
}

/// The root of each bucket of key-ordered committed rows (values start with the leaf), or
/// `None` if a value is too short to hold one (the commit's rehash then reports it).
fn bucket_roots_of(rows: &Rows, kept: &[usize]) -> Option<Vec<(u16, MerkleRoot)>> {
    if kept.iter().any(|&i| rows.value(i).len() < tables::LEAF_LEN) {
        return None;
    }
    let leaves: Vec<(u16, [u8; 32])> = kept
        .iter()
        .map(|&i| {
            let (key, value) = rows.get(i);
            let leaf = value.first_chunk::<{ tables::LEAF_LEN }>();
            (Bucket::of_key(key).0, *leaf.expect("checked above"))
        })
        .collect();
    Some(roots_of_leaves(&leaves))
}

/// The root of each bucket of `leaves` (bucket, leaf), in key order: the buckets' trees
/// hashed a layer of a group of them at a time, the groups in parallel.
fn roots_of_leaves(leaves: &[(u16, [u8; 32])]) -> Vec<(u16, MerkleRoot)> {
    /// Buckets hashed together by one task.
    const GROUP: usize = 128;
    let mut spans: Vec<(u16, usize, usize)> = Vec::new();
    for (at, (bucket, _)) in leaves.iter().enumerate() {
        match spans.last_mut() {
            Some((b, _, end)) if b == bucket => *end = at + 1,
            _ => spans.push((*bucket, at, at + 1)),
        }
    }
    let hashes: Vec<[u8; 32]> = leaves.iter().map(|(_, leaf)| *leaf).collect();
    spans
        .par_chunks(GROUP)
        .flat_map_iter(|group| {
            let trees: Vec<&[[u8; 32]]> = group
                .iter()
                .map(|&(_, from, to)| &hashes[from..to])
                .collect();
            let roots = merkle_roots(&trees);
            group.iter().map(|&(bucket, _, _)| bucket).zip(roots)
        })
        .collect()
}

/// Whether two values of one key hold the same row: for a committed table, the same
/// leaf (a chunk row written again names another copy of the same encoding in the
/// chunk log); for the others, the same bytes.
fn same_row(committed: bool, a: &[u8], b: &[u8]) -> bool {
    match (
        committed,
        a.get(..crate::tables::LEAF_LEN),
        b.get(..crate::tables::LEAF_LEN),
    ) {
        (true, Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// Writes one table's staged rows: as one ordered run through a cursor if the table is
/// empty, by key otherwise. For a committed table (`committed`) that was empty, its bucket
/// roots are hashed from the rows at the same time.
pub(crate) fn write_staged(
    txn: &redb::WriteTransaction,
    def: TableDef,
    committed: bool,
    rows: Rows,
) -> Result<StagedWrite> {
    let mut out = StagedWrite::default();
    if rows.is_empty() {
        return Ok(out);
    }
    // Of two rows with one key, the later one is kept, as inserts would have it.
    let mut kept: Vec<usize> = Vec::with_capacity(rows.len());
    for (i, same_key) in key_order(&rows) {
        match kept.last_mut() {
            Some(last) if same_key => {
                out.present += 1;
                out.differed += u64::from(!same_row(committed, rows.value(*last), rows.value(i)));
                *last = i;
            }
            _ => kept.push(i),
        }
    }
    let mut t = txn.open_table(def)?;
    if t.is_empty()? {
        let (written, roots) = rayon::join(
            || append_ordered(&mut t, kept.iter().map(|&i| Ok(rows.get(i)))),
            || committed.then(|| bucket_roots_of(&rows, &kept)).flatten(),
        );
        written?;
        out.bucket_roots = roots;
    } else {
        for &i in &kept {
            let (key, value) = rows.get(i);
            if let Some(old) = t.insert(key, value)? {
                out.present += 1;
                out.differed += u64::from(!same_row(committed, old.value(), value));
            }
        }
    }
    Ok(out)
}

/// Appends `rows` after the last row of `t` (an empty table, for a cold load) through
/// one cursor, which packs every page. The cursor appends as told, and a key not above
/// the one before would corrupt the table's order: each is checked.
pub(crate) fn append_ordered<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    t: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    rows: impl IntoIterator<Item = Result<(K, V)>>,
) -> Result<()> {
    let mut cursor = t.upper_bound_mut(std::ops::Bound::<&[u8]>::Unbounded)?;
    let mut last: Option<K> = None;
    for row in rows {
        let (key, value) = row?;
        assert!(
            last.as_ref().is_none_or(|l| l.as_ref() < key.as_ref()),
            "an appended run is in strictly ascending key order"
        );
        cursor.insert_before(key.as_ref(), value.as_ref())?;
        last = Some(key);
    }
    cursor.close()?;
    Ok(())
}

/// One staged table's destination: the transaction, the table, whether it is a
/// committed table (each value starts with its leaf), and the folder its spilled runs
/// go to.
pub(crate) struct TableLoad<'a> {
    pub(crate) txn: &'a redb::WriteTransaction,
    pub(crate) def: TableDef,
    pub(crate) committed: bool,
    pub(crate) dir: &'a std::path::Path,
}

/// `TableLoad::spill` or `TableLoad::write`: one table's staged rows and runs.
pub(crate) type LoadStaged = fn(&TableLoad<'_>, Rows, &mut Vec<Run>) -> Result<StagedWrite>;

impl TableLoad<'_> {
    /// Where the table's staged rows go when the staged rows outgrow their budget: for
    /// an empty table, sorted into a run (appended to `runs`), to be merged when the
    /// table is written; for a table that holds rows, inserted now.
    pub(crate) fn spill(&self, rows: Rows, runs: &mut Vec<Run>) -> Result<StagedWrite> {
        if rows.is_empty() {
            return Ok(StagedWrite::default());
        }
        if runs.is_empty() && !self.txn.open_table(self.def)?.is_empty()? {
            return write_staged(self.txn, self.def, self.committed, rows);
        }
        runs.push(sorted_run(rows, self.dir)?);
        Ok(StagedWrite::default())
    }

    /// Writes the table's staged rows, those spilled into `runs` before them included
    /// (the runs are taken): with runs, every row goes through the merge into the
    /// table, which is still empty.
    pub(crate) fn write(&self, rows: Rows, runs: &mut Vec<Run>) -> Result<StagedWrite> {
        let runs = std::mem::take(runs);
        if runs.is_empty() {
            return write_staged(self.txn, self.def, self.committed, rows);
        }
        write_merged(self, rows, runs)
    }
}

/// `rows` in key order (equal keys in the order staged) in a new run in `dir`.
fn sorted_run(rows: Rows, dir: &std::path::Path) -> Result<Run> {
    let order = key_order(&rows);
    Run::write(dir, &rows, order.into_iter().map(|(i, _)| i))
}

/// `TableLoad::write` with runs: the staged rows become one more run, and the merge of
/// all of them fills the empty table in key order.
fn write_merged(load: &TableLoad<'_>, rows: Rows, mut runs: Vec<Run>) -> Result<StagedWrite> {
    if !rows.is_empty() {
        runs.push(sorted_run(rows, load.dir)?);
    }
    let mut t = load.txn.open_table(load.def)?;
    if !t.is_empty()? {
        return Err(StoreError::Internal(
            "rows spilled for an empty table, and the table has rows".into(),
        ));
    }
    let mut merged = MergedRows {
        merge: Merge::new(runs)?,
        out: StagedWrite::default(),
        leaves: load.committed.then(Vec::new),
    };
    append_ordered(
        &mut t,
        std::iter::from_fn(|| merged.next_kept().transpose()),
    )?;
    let mut out = merged.out;
    out.bucket_roots = merged.leaves.map(|leaves| roots_of_leaves(&leaves));
    Ok(out)
}

/// The merged rows of one table, the last of each key kept, as the in-memory write
/// does; the leaves of the kept rows of a committed table collected on the way.
struct MergedRows {
    merge: Merge,
    out: StagedWrite,
    /// `None` once a value is too short to hold a leaf (the commit's rehash reports it).
    leaves: Option<Vec<(u16, [u8; 32])>>,
}

impl MergedRows {
    fn next_kept(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some((key, mut value)) = self.merge.next_row()? else {
            return Ok(None);
        };
        while let Some(later) = self.merge.next_value_of(&key)? {
            self.out.present += 1;
            self.out.differed += u64::from(!same_row(self.leaves.is_some(), &later, &value));
            value = later;
        }
        if let Some(leaves) = &mut self.leaves {
            match value.first_chunk::<{ tables::LEAF_LEN }>() {
                Some(leaf) => leaves.push((Bucket::of_key(&key).0, *leaf)),
                None => self.leaves = None,
            }
        }
        Ok(Some((key, value)))
    }
}

/// The indexes of `rows` in key order, equal keys in the order staged, each with whether
/// its key equals the one before. Keys are sorted as big-endian integers made of their
/// first 34 bytes (every staged table's keys fit), so the sort compares integers next to
/// each other instead of chasing a pointer per comparison.
fn key_order(rows: &Rows) -> Vec<(usize, bool)> {
    const INLINE: usize = 34;
    if rows.iter().any(|(key, _)| key.len() > INLINE) {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.par_sort_by(|&a, &b| rows.key(a).cmp(rows.key(b)));
        return (0..order.len())
            .map(|j| {
                (
                    order[j],
                    j > 0 && rows.key(order[j - 1]) == rows.key(order[j]),
                )
            })
            .collect();
    }
    // (bytes 0..16, bytes 16..32, bytes 32..34, length, index): zero padding ties a key
    // with its extensions by zeros, and the length breaks the tie the way byte order does.
    let mut keys: Vec<(u128, u128, u16, u8, u32)> = (0..rows.len())
        .into_par_iter()
        .map(|i| {
            let key = rows.key(i);
            let mut inline = [0u8; INLINE];
            inline[..key.len()].copy_from_slice(key);
            let (a, rest) = inline.split_first_chunk::<16>().expect("34 bytes");
            let (b, c) = rest.split_first_chunk::<16>().expect("18 bytes");
            let c: [u8; 2] = c.try_into().expect("2 bytes");
            (
                u128::from_be_bytes(*a),
                u128::from_be_bytes(*b),
                u16::from_be_bytes(c),
                key.len() as u8,
                i as u32,
            )
        })
        .collect();
    keys.par_sort_unstable();
    (0..keys.len())
        .map(|j| {
            let (a, b, c, len, i) = keys[j];
            let same = j > 0 && {
                let p = keys[j - 1];
                (p.0, p.1, p.2, p.3) == (a, b, c, len)
            };
            (i as usize, same)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

    use super::{Rows, StagedWrite, TableLoad, key_order, write_staged};

    const T: TableDefinition<'static, &'static [u8], &'static [u8]> = TableDefinition::new("t");

    fn table_rows(db: &redb::Database) -> Vec<(Vec<u8>, Vec<u8>)> {
        let read = db.begin_read().unwrap();
        let t = read.open_table(T).unwrap();
        t.iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.value().to_vec(), v.value().to_vec())
            })
            .collect()
    }

    /// A new database in a temporary folder (kept alive by the returned guard).
    fn database() -> (tempfile::TempDir, redb::Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        (dir, db)
    }

    /// A pseudo-random 16-byte key (ids are uniformly spread).
    fn key(i: u64) -> Vec<u8> {
        let mut k = blake3::hash(&i.to_le_bytes()).as_bytes()[..16].to_vec();
        k[15] = 0;
        k
    }

    #[test]
    fn an_empty_table_gets_one_packed_ordered_run_and_the_last_value_of_a_key() {
        let (_dir, db) = database();
        let mut rows: Rows = (0..20_000u64)
            .map(|i| (key(i), vec![i as u8; 200]))
            .collect();
        rows.push(&key(7), b"later"); // a second value for one key
        rows.push(&key(8), &[8; 200]); // the same value again
        let txn = db.begin_write().unwrap();
        let written = write_staged(&txn, T, false, rows).unwrap();
        assert_eq!((written.present, written.differed), (2, 1));
        assert!(written.bucket_roots.is_none(), "not a committed table");
        txn.commit().unwrap();
        let stored = table_rows(&db);
        assert_eq!(stored.len(), 20_000);
        assert!(stored.windows(2).all(|w| w[0].0 < w[1].0));
        let get = |k: &[u8]| stored.iter().find(|(key, _)| key == k).unwrap().1.clone();
        assert_eq!(get(&key(7)), b"later");
        assert_eq!(get(&key(9)), vec![9u8; 200]);
        // Packed: the pages hold little but rows (random inserts leave about 40% unused).
        let read = db.begin_read().unwrap();
        let stats = read.open_table(T).unwrap().stats().unwrap();
        assert!(
            stats.fragmented_bytes() * 10 < stats.stored_bytes(),
            "{} unused for {} stored",
            stats.fragmented_bytes(),
            stats.stored_bytes()
        );
    }

    #[test]
    fn a_table_with_rows_gets_inserts_that_count_what_was_present() {
        let (_dir, db) = database();
        let txn = db.begin_write().unwrap();
        let first: Rows = (0..100u64).map(|i| (key(i), vec![1])).collect();
        let written = write_staged(&txn, T, true, first).unwrap();
        assert_eq!((written.present, written.differed), (0, 0));
        assert!(
            written.bucket_roots.is_none(),
            "values too short to hold a leaf"
        );
        // 50 present (25 of them with another value), 50 new.
        let second: Rows = (50..150u64)
            .map(|i| (key(i), vec![if i < 75 { 2 } else { 1 }]))
            .collect();
        let written = write_staged(&txn, T, true, second).unwrap();
        assert_eq!((written.present, written.differed), (50, 25));
        assert!(written.bucket_roots.is_none(), "a table with rows");
        txn.commit().unwrap();
        let stored = table_rows(&db);
        assert_eq!(stored.len(), 150);
        let read = db.begin_read().unwrap();
        let t = read.open_table(T).unwrap();
        assert_eq!(t.get(key(60).as_slice()).unwrap().unwrap().value(), [2]);
        assert_eq!(t.get(key(80).as_slice()).unwrap().unwrap().value(), [1]);
        assert_eq!(t.len().unwrap(), 150);
    }

    #[test]
    fn bucket_roots_of_a_loaded_table_are_those_of_its_rows() {
        let (_dir, db) = database();
        // Committed rows: the value starts with the leaf.
        let rows: Rows = (0..5_000u64)
            .map(|i| {
                let leaf = *blake3::hash(&[i.to_le_bytes(), [1; 8]].concat()).as_bytes();
                (key(i), [leaf.as_slice(), b"payload"].concat())
            })
            .collect();
        let txn = db.begin_write().unwrap();
        let written = write_staged(&txn, T, true, rows).unwrap();
        txn.commit().unwrap();
        let roots = written.bucket_roots.unwrap();
        let stored = table_rows(&db);
        let mut expected: std::collections::BTreeMap<u16, Vec<[u8; 32]>> = Default::default();
        for (k, v) in &stored {
            let bucket = cfs_core::Bucket::of_key(k).0;
            expected
                .entry(bucket)
                .or_default()
                .push(v[..32].try_into().unwrap());
        }
        assert_eq!(roots.len(), expected.len());
        for (bucket, root) in roots {
            assert_eq!(root, cfs_core::merkle_root(&expected[&bucket]), "{bucket}");
        }
    }

    /// Committed rows (the value starts with a leaf) for keys `range`, `tag` in values.
    fn leaf_rows(range: std::ops::Range<u64>, tag: u8) -> Rows {
        range
            .map(|i| {
                let leaf = *blake3::hash(&[i.to_le_bytes(), [tag; 8]].concat()).as_bytes();
                (key(i), [leaf.as_slice(), &[tag; 40]].concat())
            })
            .collect()
    }

    /// `parts`' rows one after the other.
    fn concat(parts: &[Rows]) -> Rows {
        let mut all = Rows::default();
        for part in parts {
            all.extend_from(part);
        }
        all
    }

    #[test]
    fn rows_spilled_in_runs_load_as_if_written_at_once() {
        // Three spills and a rest, with keys repeated across them: key 10..20 again with
        // the same value, 30..40 with another one, 5 three times.
        let parts = [
            leaf_rows(0..3_000, 1),
            concat(&[leaf_rows(3_000..6_000, 1), leaf_rows(10..20, 1)]),
            concat(&[
                leaf_rows(6_000..9_000, 1),
                leaf_rows(30..40, 2),
                leaf_rows(5..6, 3),
            ]),
            concat(&[leaf_rows(9_000..9_500, 1), leaf_rows(5..6, 1)]),
        ];
        let (_dir, at_once) = database();
        let txn = at_once.begin_write().unwrap();
        let whole = write_staged(&txn, T, true, concat(&parts)).unwrap();
        txn.commit().unwrap();

        let (dir, spilled) = database();
        let txn = spilled.begin_write().unwrap();
        let mut runs = Vec::new();
        let load = TableLoad {
            txn: &txn,
            def: T,
            committed: true,
            dir: dir.path(),
        };
        for part in &parts[..3] {
            let none = load.spill(part.clone(), &mut runs).unwrap();
            assert_eq!(
                (none.present, none.differed, none.bucket_roots),
                (0, 0, None)
            );
        }
        assert_eq!(runs.len(), 3);
        let rest = parts[3].clone();
        let merged = load.write(rest, &mut runs).unwrap();
        assert!(runs.is_empty(), "the runs are taken");
        txn.commit().unwrap();

        let counts = |w: &StagedWrite| (w.present, w.differed);
        assert_eq!(counts(&merged), counts(&whole));
        assert_eq!(counts(&whole), (22, 12));
        assert_eq!(merged.bucket_roots, whole.bucket_roots);
        assert!(whole.bucket_roots.is_some());
        assert_eq!(table_rows(&spilled), table_rows(&at_once));
        let read = spilled.begin_read().unwrap();
        let stats = read.open_table(T).unwrap().stats().unwrap();
        assert!(
            stats.fragmented_bytes() * 10 < stats.stored_bytes(),
            "packed"
        );
    }

    #[test]
    fn a_spill_into_a_table_with_rows_inserts_them() {
        let (dir, db) = database();
        let txn = db.begin_write().unwrap();
        write_staged(&txn, T, true, leaf_rows(0..100, 1)).unwrap();
        let mut runs = Vec::new();
        let rows = leaf_rows(50..150, 2);
        let load = TableLoad {
            txn: &txn,
            def: T,
            committed: true,
            dir: dir.path(),
        };
        let written = load.spill(rows, &mut runs).unwrap();
        assert!(runs.is_empty(), "no run for a table that holds rows");
        assert_eq!((written.present, written.differed), (50, 50));
        txn.commit().unwrap();
        assert_eq!(table_rows(&db).len(), 150);
    }

    #[test]
    fn key_order_is_byte_order_whatever_the_lengths() {
        let keys: [&[u8]; 7] = [b"b", b"ab\0", b"ab", b"", b"a", b"ab", b"\xff"];
        let rows: Rows = keys.iter().map(|k| (k.to_vec(), Vec::new())).collect();
        let order = key_order(&rows);
        let sorted: Vec<(&[u8], bool)> =
            order.iter().map(|&(i, same)| (rows.key(i), same)).collect();
        assert_eq!(
            sorted,
            [
                (&b""[..], false),
                (b"a", false),
                (b"ab", false),
                (b"ab", true),
                (b"ab\0", false),
                (b"b", false),
                (b"\xff", false)
            ]
        );
        // Equal keys keep the order they were staged in.
        let pos = |i: usize| order.iter().position(|&(x, _)| x == i).unwrap();
        assert!(pos(2) < pos(5));
        // Keys that differ only at byte 15, 16, 31, 32 or 33 of 34.
        let deep: Rows = [15usize, 16, 31, 32, 33]
            .into_iter()
            .map(|at| {
                let mut k = vec![0u8; 34];
                k[at] = 1;
                (k, Vec::new())
            })
            .collect();
        let order: Vec<usize> = key_order(&deep).into_iter().map(|(i, _)| i).collect();
        assert_eq!(order, [4, 3, 2, 1, 0]);
        // Keys longer than the inline prefix take the general sort.
        let long: Rows = [vec![1u8; 40], vec![0u8; 41], vec![1u8; 39], vec![1u8; 40]]
            .into_iter()
            .map(|k| (k, Vec::new()))
            .collect();
        assert_eq!(
            key_order(&long),
            [(1, false), (2, false), (0, false), (3, true)]
        );
    }
}
