//! Collection: the shared rows no repository holds any more, and the vectors no
//! embedding names, dropped by their keys under the lock every publish holds shared.

use cfs_core::Table;

use crate::content::content_table;
use crate::db::{Database, sql_error};
use crate::error::Result;
use crate::publish::tag_of;
use crate::schema::{self, Lock};

/// What a collection dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Shared rows dropped, by table in state-root order.
    pub rows: [u64; 5],
    /// Vectors dropped.
    pub vectors: u64,
}

/// Drops the shared rows of `db` that no repository holds, then the vectors no
/// embedding names, in one transaction that waits for publishes in flight.
pub fn gc(db: &mut Database) -> Result<GcReport> {
    schema::ensure(db)?;
    let name = db.describe().to_owned();
    let mut tx = db
        .client()
        .transaction()
        .map_err(sql_error(&name, "begin"))?;
    schema::lock(&mut tx, &name, Lock::Collection)?;
    let mut report = GcReport::default();
    for (i, table) in Table::ALL.into_iter().enumerate() {
        let t = content_table(table);
        let unheld: Vec<Vec<u8>> = tx
            .query(
                &format!(
                    "SELECT c.leaf FROM {t} c WHERE NOT EXISTS \
                     (SELECT 1 FROM cfs_members m WHERE m.leaf = c.leaf AND m.tag = $1)"
                ),
                &[&tag_of(table)],
            )
            .map_err(sql_error(&name, "find unheld rows"))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for batch in unheld.chunks(10_000) {
            let n = tx
                .execute(&format!("DELETE FROM {t} WHERE leaf = ANY($1)"), &[&batch])
                .map_err(sql_error(&name, "drop unheld rows"))?;
            report.rows[i] += n;
        }
    }
    let unnamed: Vec<Vec<u8>> = tx
        .query(
            "SELECT v.hash FROM cfs_vectors v WHERE NOT EXISTS \
             (SELECT 1 FROM cfs_embeddings e WHERE e.vector_hash = v.hash)",
            &[],
        )
        .map_err(sql_error(&name, "find unnamed vectors"))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for batch in unnamed.chunks(10_000) {
        report.vectors += tx
            .execute("DELETE FROM cfs_vectors WHERE hash = ANY($1)", &[&batch])
            .map_err(sql_error(&name, "drop unnamed vectors"))?;
    }
    tx.commit()
        .map_err(sql_error(&name, "commit the collection"))?;
    Ok(report)
}
