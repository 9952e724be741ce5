//! A connection to a database, named in errors by its URL without a password.

use std::str::FromStr;

use postgres::config::{Host, SslMode};
use postgres::{Client, Config, NoTls};

use crate::error::{DbError, Result};
use crate::tls;

/// A connection to a PostgreSQL database.
pub struct Database {
    client: Client,
    describe: String,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("describe", &self.describe)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Connects to `url` (`postgresql://user@host:port/dbname`, or a key-value string),
    /// over TLS as its `sslmode` and `sslrootcert` say, with libpq's meanings
    /// (`crate::tls`).
    pub fn connect(url: &str) -> Result<Self> {
        let split = tls::split(url)?;
        let mut config = Config::from_str(&split.rest).map_err(|e| DbError::Config {
            what: format!("cannot read the database URL: {e}"),
        })?;
        config.ssl_mode(split.mode);
        if config.get_application_name().is_none() {
            config.application_name("cfs");
        }
        let describe = describe(&config);
        let client = match split.mode {
            SslMode::Disable => config.connect(NoTls),
            _ => config.connect(tls::connector(&split)?),
        }
        .map_err(sql_error(&describe, "connect"))?;
        Ok(Self { client, describe })
    }

    /// The database as errors and reports name it: user, host, port and database, never
    /// a password.
    pub fn describe(&self) -> &str {
        &self.describe
    }

    /// The connection.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// `postgresql://user@host:port/dbname` of `config`.
fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("");
    let dbname = config.get_dbname().unwrap_or(user);
    format!("postgresql://{user}@{host}:{port}/{dbname}")
}

/// Column `i` of `row` as an array without NULL elements, `None` when it is not one (a
/// NULL element, another dimension): damage to report, never a panic. Array columns
/// take NULL elements whatever their constraints say of the column.
pub(crate) fn array<'r, T: postgres::types::FromSql<'r>>(
    row: &'r postgres::Row,
    i: usize,
) -> Option<Vec<T>> {
    row.try_get::<_, Vec<Option<T>>>(i)
        .ok()?
        .into_iter()
        .collect()
}

/// Maps a database error to [`DbError::Sql`] naming `database` and `what` was done.
pub(crate) fn sql_error(database: &str, what: &str) -> impl FnOnce(postgres::Error) -> DbError {
    let (database, what) = (database.to_owned(), what.to_owned());
    move |source| DbError::Sql {
        database,
        what,
        source,
    }
}
