//! Staged rows beyond the write's memory budget, sorted and spilled to a scratch file
//! beside the store, and merged back in key order when they are written: a cold index
//! holds at most its budget of staged rows, and every table that was empty still
//! receives one ordered run (packed pages), as if every row had waited in memory.
//!
//! A run is a sequence of records `key length (u32 LE) ‖ value length (u32 LE) ‖ key ‖
//! value` in key order, equal keys in the order staged. It lives in an unnamed file
//! (removed by the system when closed, also after a crash) and is never part of the
//! store's state.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::rows::Rows;

/// Bytes buffered per run while writing it and per run while merging.
const WRITE_BUFFER: usize = 1 << 20;
const READ_BUFFER: usize = 256 << 10;

/// One sorted run of rows in its scratch file.
pub(crate) struct Run {
    file: File,
    rows: u64,
    /// Where the file is (for errors).
    dir: PathBuf,
}

impl Run {
    /// Writes `rows[i]` for each `i` of `order` (key order) to a new scratch file in `dir`.
    pub(crate) fn write(
        dir: &Path,
        rows: &Rows,
        order: impl Iterator<Item = usize>,
    ) -> Result<Self> {
        let scratch = |e: std::io::Error| StoreError::Io {
            path: dir.to_path_buf(),
            source: e,
        };
        let mut out =
            BufWriter::with_capacity(WRITE_BUFFER, tempfile::tempfile_in(dir).map_err(scratch)?);
        let mut count = 0u64;
        for i in order {
            let (key, value) = rows.get(i);
            out.write_all(&len32(key.len())?.to_le_bytes())
                .map_err(scratch)?;
            out.write_all(&len32(value.len())?.to_le_bytes())
                .map_err(scratch)?;
            out.write_all(key).map_err(scratch)?;
            out.write_all(value).map_err(scratch)?;
            count += 1;
        }
        let mut file = out.into_inner().map_err(|e| scratch(e.into_error()))?;
        file.rewind().map_err(scratch)?;
        Ok(Self {
            file,
            rows: count,
            dir: dir.to_path_buf(),
        })
    }
}

fn len32(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| StoreError::Internal(format!("a staged row of {len} bytes")))
}

/// A run being read back.
struct Reader {
    input: BufReader<File>,
    left: u64,
    dir: PathBuf,
}

impl Reader {
    fn next(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let io = |e: std::io::Error| StoreError::Io {
            path: self.dir.clone(),
            source: e,
        };
        let mut lengths = [0u8; 8];
        self.input.read_exact(&mut lengths).map_err(io)?;
        let (k, v) = lengths.split_at(4);
        let klen = u32::from_le_bytes(k.try_into().expect("4 bytes")) as usize;
        let vlen = u32::from_le_bytes(v.try_into().expect("4 bytes")) as usize;
        let mut key = vec![0u8; klen];
        let mut value = vec![0u8; vlen];
        self.input.read_exact(&mut key).map_err(io)?;
        self.input.read_exact(&mut value).map_err(io)?;
        Ok(Some((key, value)))
    }
}

/// The rows of several runs in key order; rows with equal keys by run, and within a
/// run in its order (the order they were staged, when runs are in staging order).
pub(crate) struct Merge {
    readers: Vec<Reader>,
    /// The head row of each run with rows left, by (key, run).
    heads: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
    values: Vec<Vec<u8>>,
}

impl Merge {
    pub(crate) fn new(runs: Vec<Run>) -> Result<Self> {
        let mut merge = Self {
            readers: Vec::with_capacity(runs.len()),
            heads: BinaryHeap::with_capacity(runs.len()),
            values: vec![Vec::new(); runs.len()],
        };
        for (n, run) in runs.into_iter().enumerate() {
            merge.readers.push(Reader {
                input: BufReader::with_capacity(READ_BUFFER, run.file),
                left: run.rows,
                dir: run.dir,
            });
            merge.advance(n)?;
        }
        Ok(merge)
    }

    /// Reads the next row of run `n` into the heads.
    fn advance(&mut self, n: usize) -> Result<()> {
        if let Some((key, value)) = self.readers[n].next()? {
            self.values[n] = value;
            self.heads.push(Reverse((key, n)));
        }
        Ok(())
    }

    /// The value of the next row if its key is `key` (a later row of a key just read).
    pub(crate) fn next_value_of(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.heads.peek() {
            Some(Reverse((next, _))) if next.as_slice() == key => {
                Ok(self.next_row()?.map(|(_, value)| value))
            }
            _ => Ok(None),
        }
    }

    /// The next row in (key, run) order.
    pub(crate) fn next_row(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some(Reverse((key, n))) = self.heads.pop() else {
            return Ok(None);
        };
        let value = std::mem::take(&mut self.values[n]);
        self.advance(n)?;
        Ok(Some((key, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(keys: &[(u8, u8)]) -> Rows {
        keys.iter().map(|&(k, v)| (vec![k], vec![v; 3])).collect()
    }

    fn merged(runs: Vec<Run>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut merge = Merge::new(runs).unwrap();
        let mut out = Vec::new();
        while let Some(row) = merge.next_row().unwrap() {
            out.push(row);
        }
        out
    }

    #[test]
    fn runs_merge_in_key_order_and_equal_keys_in_run_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = rows(&[(1, 10), (4, 11), (4, 12), (9, 13)]);
        let b = rows(&[(2, 20), (4, 21), (8, 22)]);
        let c = Rows::default();
        let d = rows(&[(0, 40), (4, 41)]);
        let runs: Vec<Run> = [&a, &b, &c, &d]
            .into_iter()
            .map(|r| Run::write(dir.path(), r, 0..r.len()).unwrap())
            .collect();
        assert_eq!(
            runs.iter().map(|r| r.rows).collect::<Vec<_>>(),
            [4, 3, 0, 2]
        );
        let order: Vec<(u8, u8)> = merged(runs).iter().map(|(k, v)| (k[0], v[0])).collect();
        assert_eq!(
            order,
            [
                (0, 40),
                (1, 10),
                (2, 20),
                (4, 11),
                (4, 12),
                (4, 21),
                (4, 41),
                (8, 22),
                (9, 13)
            ]
        );
    }

    #[test]
    fn long_keys_and_empty_values_come_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![
            (vec![7u8; 300], Vec::new()),
            (vec![8u8; 5], vec![1u8; 70_000]),
        ];
        let staged: Rows = rows.iter().cloned().collect();
        let back = merged(vec![Run::write(dir.path(), &staged, 0..2).unwrap()]);
        assert_eq!(back, rows);
        assert!(merged(Vec::new()).is_empty());
    }
}
