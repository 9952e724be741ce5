//! A search filter as SQL over a repository's search rows (`s`: `cfs_search`, `d`:
//! `cfs_search_docs`): the conditions `cfs_search::Filter::matches` checks on a
//! chunk's metadata, checked by the database before each list's top.

use cfs_search::Filter;
use postgres::types::ToSql;

use crate::error::{DbError, Result};

/// A filter's conditions and their values.
#[derive(Debug, Default)]
pub(crate) struct FilterSql {
    /// Conditions, each with `{}` where its parameter's number goes.
    conditions: Vec<&'static str>,
    values: Vec<String>,
    /// Whether a condition reads the document's row.
    documents: bool,
}

impl FilterSql {
    /// The SQL of `filter`; a collection, which search rows do not keep, is refused.
    pub(crate) fn new(filter: &Filter) -> Result<Self> {
        if filter.collection.is_some() {
            return Err(DbError::Config {
                what: "a collection filter is not kept by search from a database \
                       (filter by path prefix)"
                    .into(),
            });
        }
        let mut sql = Self::default();
        if let Some(prefix) = &filter.path_prefix {
            let prefix = prefix.strip_prefix("./").unwrap_or(prefix);
            sql.push(
                "EXISTS (SELECT 1 FROM unnest(d.paths) AS p WHERE starts_with(p, ${}))",
                prefix,
                true,
            );
        }
        if let Some(language) = &filter.language {
            sql.push("s.language = ${}", language, false);
        }
        if let Some(kind) = &filter.kind {
            sql.push("s.kind = ${}", kind, false);
        }
        if let Some(mime) = &filter.mime_type {
            sql.push("d.mime_type = ${}", mime, true);
        }
        if let Some(role) = filter.role {
            sql.push("d.role = ${}", role.name(), true);
        }
        Ok(sql)
    }

    fn push(&mut self, condition: &'static str, value: &str, documents: bool) {
        self.conditions.push(condition);
        self.values.push(value.to_owned());
        self.documents |= documents;
    }

    /// Whether it has no condition.
    pub(crate) fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// The join a query over `cfs_search s` needs for the conditions.
    pub(crate) fn join(&self) -> &'static str {
        match self.documents {
            true => "JOIN cfs_search_docs d ON d.repo = s.repo AND d.document = s.document",
            false => "",
        }
    }

    /// ` AND condition...`, the parameters numbered from `first`.
    pub(crate) fn clause(&self, first: usize) -> String {
        self.conditions
            .iter()
            .enumerate()
            .map(|(i, c)| format!(" AND {}", c.replace("{}", &(first + i).to_string())))
            .collect()
    }

    /// The conditions' values, in their order.
    pub(crate) fn params(&self) -> impl Iterator<Item = &(dyn ToSql + Sync)> {
        self.values.iter().map(|v| v as &(dyn ToSql + Sync))
    }
}
