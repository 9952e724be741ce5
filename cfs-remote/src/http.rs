//! A remote on a web server, for pulls: a static file server over the remote's folder is
//! enough. Objects are read with GET, ranges with a `Range` header (a server that
//! ignores it and sends the whole object is answered by cutting the range out); a web
//! server cannot list, so a branch's newest ref is found from its `latest` hint and the
//! refs after it (`refs.rs`). Nothing is ever written.

use std::time::Duration;

use crate::error::{RemoteError, Result};
use crate::remote::{Remote, short};

/// The longest any one request may take.
const TIMEOUT: Duration = Duration::from_secs(300);
/// The most an answer may hold (a manifest, or a range read of `fetch.rs`, is far less).
const MAX_BODY: u64 = crate::remote::MAX_GET;

/// A remote at an `http://` or `https://` URL.
#[derive(Debug)]
pub struct HttpRemote {
    base: String,
    agent: ureq::Agent,
}

impl HttpRemote {
    /// The remote whose folder is served at `base`.
    pub fn new(base: &str) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(TIMEOUT))
            .build();
        Self {
            base: base.trim_end_matches('/').to_owned(),
            agent: config.into(),
        }
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    fn io(&self, name: &str, what: impl std::fmt::Display) -> RemoteError {
        RemoteError::Io {
            remote: self.describe(),
            name: name.to_owned(),
            source: std::io::Error::other(what.to_string()),
        }
    }

    /// GET `name` (with `range`, if any): the status and the body.
    fn fetch(&self, name: &str, range: Option<(u64, u64)>) -> Result<(u16, Vec<u8>)> {
        let mut request = self.agent.get(&self.url(name));
        if let Some((offset, len)) = range {
            let last = offset + len - 1;
            request = request.header("Range", &format!("bytes={offset}-{last}"));
        }
        let (status, body) = status_and_body(request.call()).map_err(|e| self.io(name, e))?;
        match (200..300).contains(&status) {
            true => Ok((status, body)),
            false => Ok((status, Vec::new())),
        }
    }
}

/// Bytes `offset..offset + len` of object `name` from a 200, 206 or 416 answer to a
/// request for them: a 206's body, or cut out of a 200's whole object (a server that
/// ignores `Range`); `Damaged` when the object ends before them (and for 416).
pub(crate) fn range_of(
    remote: &str,
    name: &str,
    (status, body): (u16, Vec<u8>),
    offset: u64,
    len: u64,
) -> Result<Vec<u8>> {
    let end = offset.saturating_add(len);
    let part = match status {
        206 if body.len() as u64 == len => Ok(body),
        206 => Err(offset + body.len() as u64),
        200 => usize::try_from(offset)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(a, b)| body.get(a..b).map(<[u8]>::to_vec))
            .ok_or(body.len() as u64),
        _ => Err(offset),
    };
    part.map_err(|object_len| short(remote, name, object_len, end))
}

/// The status of an answer and its body, read whole (up to 1 GiB).
pub(crate) fn status_and_body(
    response: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> std::result::Result<(u16, Vec<u8>), ureq::Error> {
    let mut response = response?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .read_to_vec()?;
    Ok((status, body))
}

impl Remote for HttpRemote {
    fn describe(&self) -> String {
        self.base.clone()
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self.fetch(name, None)? {
            (200, body) => Ok(Some(body)),
            (404 | 410, _) => Ok(None),
            (status, _) => Err(self.io(name, format!("HTTP status {status}"))),
        }
    }

    fn get_range(&self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let (status, body) = self.fetch(name, Some((offset, len)))?;
        match status {
            200 | 206 | 416 => range_of(&self.describe(), name, (status, body), offset, len),
            404 | 410 => Err(RemoteError::NotFound {
                remote: self.describe(),
                what: name.to_owned(),
            }),
            status => Err(self.io(name, format!("HTTP status {status}"))),
        }
    }

    fn create(&self, name: &str, _bytes: &[u8]) -> Result<bool> {
        Err(read_only(self, name))
    }

    fn overwrite_hint(&self, name: &str, _bytes: &[u8]) -> Result<()> {
        Err(read_only(self, name))
    }

    fn lists(&self) -> bool {
        false
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Err(self.io(prefix, "a web server cannot list"))
    }
}

fn read_only(remote: &HttpRemote, name: &str) -> RemoteError {
    RemoteError::Invalid(format!(
        "{}: {name}: an HTTP remote is read-only: push to its folder, or to object storage",
        remote.describe()
    ))
}
