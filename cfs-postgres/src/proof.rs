//! `--check-answers`: a search result proved against its repository's head in the
//! search's snapshot. The chunk's row and the row of the path the result names are each
//! re-hashed from their encodings; their buckets' leaves make the stored bucket roots;
//! the stored bucket roots make the head's table roots, which make its state root, the
//! root the result names. The chunk's encoding says the result's lines and text, and
//! the path's names the chunk's document.

use cfs_core::{
    Chunk, Entity, MerkleRoot, PathEntry, PathId, StateRoot, Table, TableRoots, TopTree,
    merkle_root,
};
use cfs_search::Hit;
use postgres::Transaction;

use crate::db::sql_error;
use crate::error::{DbError, Result};
use crate::publish::{root_of, stored_bucket_roots, tag_of};

/// What proved a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The chunk row's leaf.
    pub chunk_leaf: [u8; 32],
    /// The leaf of the row of the path the result names.
    pub path_leaf: [u8; 32],
    /// Leaves hashed into bucket roots (both rows' buckets).
    pub leaves: usize,
    /// The state root proved.
    pub root: StateRoot,
}

/// Proves `hit` (of repository `repo`, whose head names `root`) in `tx`'s snapshot.
pub(crate) fn prove(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: (i32, &str),
    root: &StateRoot,
    hit: &Hit,
) -> Result<Proof> {
    let fail = |what: String| DbError::Unproven {
        database: name.to_owned(),
        repo: repo.1.to_owned(),
        what: format!("{}:{}-{}: {what}", hit.path, hit.start_line, hit.end_line),
    };
    let table_roots = head_roots(tx, name, repo.0, root).map_err(|e| match e {
        Ok(what) => fail(what),
        Err(e) => e,
    })?;
    let (stored, _) = stored_bucket_roots(tx, name, repo.0)?;
    let mut leaves = 0;
    let mut row = |table: Table, key: &[u8]| -> Result<Row> {
        let tag = tag_of(table) as usize;
        let held = TopTree::from_bucket_roots(&stored[tag])
            .expect("1,024 roots")
            .root();
        if held != table_roots.get(table) {
            return Err(fail(format!(
                "the stored {} bucket roots do not make the head's",
                table.name()
            )));
        }
        let (found, n) = bucket_row(tx, name, repo.0, table, key, &stored[tag])?;
        leaves += n;
        found.ok_or_else(|| fail(format!("its {} row is not in its bucket", table.name())))
    };
    let (encoding, chunk_leaf) = row(Table::Chunks, &hit.chunk_id.0)?;
    let chunk = checked::<Chunk>(&encoding, &chunk_leaf).map_err(&fail)?;
    // A member's key is not in its leaf: the row found under the answer's id must be
    // that chunk's own.
    if chunk.id != hit.chunk_id
        || chunk.text != hit.text
        || (chunk.start_line, chunk.end_line) != (hit.start_line, hit.end_line)
    {
        return Err(fail("its id, lines or text are not its chunk row's".into()));
    }
    let (encoding, path_leaf) = row(Table::Paths, &PathId::derive(&hit.path).0)?;
    let path = checked::<PathEntry>(&encoding, &path_leaf).map_err(&fail)?;
    if path.path != hit.path || path.document_id != chunk.document_id {
        return Err(fail("its path row names another document".into()));
    }
    Ok(Proof {
        chunk_leaf,
        path_leaf,
        leaves,
        root: *root,
    })
}

/// The head's table roots, checked to make `root` (the root the search read): an
/// `Ok(what)` error is a failed proof, an `Err` a failed read.
fn head_roots(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
    root: &StateRoot,
) -> std::result::Result<TableRoots, std::result::Result<String, DbError>> {
    let row = tx
        .query_one(
            "SELECT state_root, table_roots FROM cfs_heads WHERE repo = $1",
            &[&repo],
        )
        .map_err(|e| Err(sql_error(name, "read the head")(e)))?;
    let held: Vec<Vec<u8>> = crate::db::array(&row, 1)
        .ok_or_else(|| Ok("the head's table roots hold a NULL".to_owned()))?;
    let mut roots = Vec::with_capacity(held.len());
    for r in held {
        roots.push(MerkleRoot(
            root_of(name, "a head's table root", r).map_err(Err)?,
        ));
    }
    let [paths, documents, chunks, embeddings, edges] = roots[..] else {
        return Err(Ok("the head does not hold five table roots".into()));
    };
    let roots = TableRoots {
        paths,
        documents,
        chunks,
        embeddings,
        edges,
    };
    let state = root_of(name, "the head's state root", row.get(0)).map_err(Err)?;
    if roots.state_root() != *root || state != root.0 {
        return Err(Ok(
            "the head's table roots do not make the state root searched".into(),
        ));
    }
    Ok(roots)
}

/// The encoding and leaf of the row `key` of `table`, if its bucket holds it, after
/// checking that the bucket's leaves make its stored root; with the leaves hashed.
fn bucket_row(
    tx: &mut Transaction<'_>,
    name: &str,
    repo: i32,
    table: Table,
    key: &[u8],
    stored: &[MerkleRoot],
) -> Result<(Option<Row>, usize)> {
    let bucket = cfs_core::Bucket::of_key(key).0;
    let content = crate::content::content_table(table);
    let sql = format!(
        "SELECT m.key, m.leaf, CASE WHEN m.key = $4 THEN c.encoding END \
         FROM cfs_members m LEFT JOIN {content} c ON c.leaf = m.leaf \
         WHERE m.repo = $1 AND m.tag = $2 AND m.bucket = $3 ORDER BY m.key"
    );
    let rows = tx
        .query(&sql, &[&repo, &tag_of(table), &(bucket as i16), &key])
        .map_err(sql_error(name, "read a result's bucket"))?;
    let mut leaves = Vec::with_capacity(rows.len());
    let mut found = None;
    for row in &rows {
        let leaf = root_of(name, "a member's leaf", row.get(1))?;
        leaves.push(leaf);
        if row.get::<_, Vec<u8>>(0) == key {
            let encoding: Option<Vec<u8>> = row.get(2);
            found = encoding.map(|e| (e, leaf));
        }
    }
    if merkle_root(&leaves) != stored[usize::from(bucket)] {
        return Err(DbError::Damaged {
            database: name.to_owned(),
            what: format!(
                "the {} bucket {bucket}'s leaves do not make its stored root",
                table.name()
            ),
        });
    }
    Ok((found, leaves.len()))
}

/// A row's encoding and leaf.
type Row = (Vec<u8>, [u8; 32]);

/// `encoding` decoded as an `E`, checked to hash to `leaf`.
fn checked<E: Entity>(encoding: &[u8], leaf: &[u8; 32]) -> std::result::Result<E, String> {
    if E::leaf_of_encoding(encoding).0 != *leaf {
        return Err("its row's encoding does not hash to its leaf".into());
    }
    E::decode(encoding).map_err(|e| format!("its row does not decode: {e}"))
}
