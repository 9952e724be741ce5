//! What a database holds: its repositories with their heads, and the shared rows, in
//! one read-only snapshot (a standby serves as well as the primary).

use cfs_core::{StateRoot, Table};

use crate::content::content_table;
use crate::db::{Database, sql_error};
use crate::error::Result;
use crate::schema;

/// One published repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoStatus {
    /// Its name.
    pub name: String,
    /// The embedder its rows were made with.
    pub model_id: String,
    /// Its head's sequence (the store's).
    pub sequence: u64,
    /// The state root its head names (`None`: the stored root is not 32 bytes;
    /// `cfs verify --db` says more).
    pub state_root: Option<StateRoot>,
    /// When the head last moved, UTC, RFC 3339.
    pub published: String,
    /// Rows of its five tables.
    pub rows: u64,
}

/// What a database holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbStatus {
    /// The repositories, by name.
    pub repos: Vec<RepoStatus>,
    /// Shared rows stored, by table in state-root order (each once, however many
    /// repositories hold it).
    pub shared_rows: [u64; 5],
    /// Vectors stored.
    pub vectors: u64,
    /// Bytes of cfs's tables with their indexes and TOAST.
    pub bytes: u64,
}

/// Reads what `db` holds.
pub fn status(db: &mut Database) -> Result<DbStatus> {
    let (name, mut tx) = schema::read_snapshot(db)?;
    let rows = tx
        .query(
            "SELECT r.name, r.model_id, h.sequence, h.state_root, \
             to_char(h.published AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), \
             (SELECT count(*) FROM cfs_members m WHERE m.repo = r.id) \
             FROM cfs_repos r JOIN cfs_heads h ON h.repo = r.id ORDER BY r.name",
            &[],
        )
        .map_err(sql_error(&name, "read the repositories"))?;
    let repos = rows
        .iter()
        .map(|r| RepoStatus {
            name: r.get(0),
            model_id: r.get(1),
            sequence: r.get::<_, i64>(2) as u64,
            state_root: <[u8; 32]>::try_from(r.get::<_, Vec<u8>>(3))
                .ok()
                .map(StateRoot),
            published: r.get(4),
            rows: r.get::<_, i64>(5) as u64,
        })
        .collect();
    let mut shared_rows = [0; 5];
    for (n, table) in shared_rows.iter_mut().zip(Table::ALL) {
        let sql = format!("SELECT count(*) FROM {}", content_table(table));
        let count: i64 = tx
            .query_one(&sql, &[])
            .map_err(sql_error(&name, "count shared rows"))?
            .get(0);
        *n = count as u64;
    }
    let sizes = tx
        .query_one(
            "SELECT (SELECT count(*) FROM cfs_vectors), \
             (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
              JOIN pg_namespace n ON n.oid = c.relnamespace \
              WHERE c.relkind = 'r' AND c.relname LIKE 'cfs\\_%' AND n.nspname = current_schema())",
            &[],
        )
        .map_err(sql_error(&name, "measure the tables"))?;
    tx.commit().map_err(sql_error(&name, "end the snapshot"))?;
    Ok(DbStatus {
        repos,
        shared_rows,
        vectors: sizes.get::<_, i64>(0) as u64,
        bytes: sizes.get::<_, i64>(1) as u64,
    })
}
