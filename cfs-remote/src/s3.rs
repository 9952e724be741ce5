//! A remote in S3-compatible object storage (`s3://bucket/prefix`): requests are signed
//! with rusty-s3 (AWS signature version 4, presigned) and sent with ureq. Objects are
//! created with `If-None-Match: *`, which the store refuses (412) where the name is
//! taken; ranges are read with `Range`. The endpoint, region and credentials come from
//! AWS's usual environment variables: `AWS_ENDPOINT_URL` (an S3-compatible server;
//! then path-style URLs), `AWS_REGION` or `AWS_DEFAULT_REGION` (default `us-east-1`),
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (without them,
//! requests go unsigned: a public bucket can be pulled from).

use std::time::Duration;

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

use crate::error::{RemoteError, Result};
use crate::http::range_of;
use crate::remote::Remote;

/// How long a signed request stays valid.
const SIGNED_FOR: Duration = Duration::from_secs(600);
/// The longest any one request may take.
const TIMEOUT: Duration = Duration::from_secs(300);

/// A remote at `s3://bucket/prefix`.
#[derive(Debug)]
pub struct S3Remote {
    spec: String,
    bucket: Bucket,
    prefix: String,
    credentials: Option<Credentials>,
    agent: ureq::Agent,
}

/// Where and as whom an S3 remote is reached.
#[derive(Clone, Debug, Default)]
pub struct S3Config {
    /// An S3-compatible server's URL (path-style requests); `None`: AWS's.
    pub endpoint: Option<String>,
    /// The region (`us-east-1` when `None`).
    pub region: Option<String>,
    /// Access key id, secret and session token; `None`: unsigned requests.
    pub credentials: Option<(String, String, Option<String>)>,
}

impl S3Config {
    /// The configuration AWS's environment variables give (see the module's opening).
    pub fn from_env() -> Self {
        let env = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
        let credentials = env("AWS_ACCESS_KEY_ID")
            .zip(env("AWS_SECRET_ACCESS_KEY"))
            .map(|(key, secret)| (key, secret, env("AWS_SESSION_TOKEN")));
        Self {
            endpoint: env("AWS_ENDPOINT_URL_S3").or_else(|| env("AWS_ENDPOINT_URL")),
            region: env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")),
            credentials,
        }
    }
}

impl S3Remote {
    /// The remote `spec` (`s3://bucket` or `s3://bucket/prefix`), reached as the
    /// environment says (see the module's opening).
    pub fn new(spec: &str) -> Result<Self> {
        Self::with_config(spec, &S3Config::from_env())
    }

    /// The remote `spec` reached as `config` says.
    pub fn with_config(spec: &str, config: &S3Config) -> Result<Self> {
        let invalid = |why: &str| RemoteError::Invalid(format!("{spec}: {why}"));
        let rest = spec
            .strip_prefix("s3://")
            .ok_or_else(|| invalid("not an s3:// URL"))?;
        let (name, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if name.is_empty() {
            return Err(invalid("names no bucket"));
        }
        let region = config.region.clone().unwrap_or_else(|| "us-east-1".into());
        let (endpoint, style) = match &config.endpoint {
            Some(url) => (url.clone(), UrlStyle::Path),
            None => (
                format!("https://s3.{region}.amazonaws.com"),
                UrlStyle::VirtualHost,
            ),
        };
        let endpoint = endpoint
            .parse()
            .map_err(|e| invalid(&format!("endpoint {endpoint}: {e}")))?;
        let bucket = Bucket::new(endpoint, style, name.to_owned(), region)
            .map_err(|e| invalid(&e.to_string()))?;
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(TIMEOUT))
            .build();
        let credentials = config
            .credentials
            .as_ref()
            .map(|(key, secret, token)| match token {
                Some(token) => {
                    Credentials::new_with_token(key.clone(), secret.clone(), token.clone())
                }
                None => Credentials::new(key.clone(), secret.clone()),
            });
        Ok(Self {
            spec: spec.trim_end_matches('/').to_owned(),
            bucket,
            prefix: prefix.trim_matches('/').to_owned(),
            credentials,
            agent: agent.into(),
        })
    }

    /// Creates the bucket unless it is there (for a first push to a new bucket, and for
    /// tests against a fresh server).
    pub fn create_bucket(&self) -> Result<()> {
        let credentials = self.credentials.as_ref().ok_or_else(|| {
            RemoteError::Invalid(format!(
                "{}: creating a bucket needs credentials",
                self.spec
            ))
        })?;
        let url = self.bucket.create_bucket(credentials).sign(SIGNED_FOR);
        match self.answer("", self.agent.put(url.as_str()).send_empty())? {
            (200..=299 | 409, _) => Ok(()),
            (status, body) => Err(self.failed("", status, &body)),
        }
    }

    /// The object key of remote name `name`.
    fn key(&self, name: &str) -> String {
        match self.prefix.is_empty() {
            true => name.to_owned(),
            false => format!("{}/{name}", self.prefix),
        }
    }

    /// The remote name of object key `key`.
    fn name<'k>(&self, key: &'k str) -> &'k str {
        match self.prefix.is_empty() {
            true => key,
            false => key
                .strip_prefix(&self.prefix)
                .and_then(|k| k.strip_prefix('/'))
                .unwrap_or(key),
        }
    }

    fn io(&self, name: &str, what: impl std::fmt::Display) -> RemoteError {
        RemoteError::Io {
            remote: self.spec.clone(),
            name: name.to_owned(),
            source: std::io::Error::other(what.to_string()),
        }
    }

    /// The status and body of `response`, read whole when it succeeded.
    fn answer(
        &self,
        name: &str,
        response: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(u16, Vec<u8>)> {
        crate::http::status_and_body(response).map_err(|e| self.io(name, e))
    }

    fn failed(&self, name: &str, status: u16, body: &[u8]) -> RemoteError {
        let text = String::from_utf8_lossy(body);
        let code = text
            .split("<Code>")
            .nth(1)
            .and_then(|t| t.split("</Code>").next())
            .unwrap_or("");
        self.io(name, format!("S3 answered {status} {code}"))
    }

    /// Lists every key under `prefix` (a remote name), with `/` as the delimiter when
    /// `shallow`: the keys and their last-modified times.
    fn list_keys(&self, prefix: &str, shallow: bool) -> Result<Vec<(String, Option<String>)>> {
        let key_prefix = self.key(prefix);
        let mut token: Option<String> = None;
        let mut out = Vec::new();
        loop {
            let mut action = self.bucket.list_objects_v2(self.credentials.as_ref());
            action.with_prefix(key_prefix.as_str());
            if shallow {
                action.with_delimiter("/");
            }
            if let Some(t) = &token {
                action.with_continuation_token(t.as_str());
            }
            let url = action.sign(SIGNED_FOR);
            let (status, body) = self.answer(prefix, self.agent.get(url.as_str()).call())?;
            if status != 200 {
                return Err(self.failed(prefix, status, &body));
            }
            let text = String::from_utf8_lossy(&body);
            let page = rusty_s3::actions::ListObjectsV2::parse_response(&text)
                .map_err(|e| self.io(prefix, format!("a listing that does not parse: {e}")))?;
            // Only keys under the prefix asked for: a listing is the server's word, and
            // what is done with the names (gc deletes some) must stay inside it.
            let under = page
                .contents
                .into_iter()
                .filter(|c| c.key.starts_with(&key_prefix));
            out.extend(under.map(|c| (c.key, c.last_modified)));
            match page.next_continuation_token {
                Some(t) if token.as_ref() == Some(&t) => {
                    return Err(self.io(prefix, "a listing that gives the same page again"));
                }
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
    }

    fn put(&self, name: &str, bytes: &[u8], only_if_absent: bool) -> Result<u16> {
        let key = self.key(name);
        let mut action = self.bucket.put_object(self.credentials.as_ref(), &key);
        if only_if_absent {
            action.headers_mut().insert("if-none-match", "*");
        }
        let url = action.sign(SIGNED_FOR);
        let mut request = self.agent.put(url.as_str());
        if only_if_absent {
            request = request.header("if-none-match", "*");
        }
        let (status, body) = self.answer(name, request.send(bytes))?;
        match status {
            200..=299 | 409 | 412 => Ok(status),
            _ => Err(self.failed(name, status, &body)),
        }
    }
}

impl Remote for S3Remote {
    fn describe(&self) -> String {
        self.spec.clone()
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let url = self
            .bucket
            .get_object(self.credentials.as_ref(), &self.key(name))
            .sign(SIGNED_FOR);
        match self.answer(name, self.agent.get(url.as_str()).call())? {
            (200, body) => Ok(Some(body)),
            (404, _) => Ok(None),
            (status, body) => Err(self.failed(name, status, &body)),
        }
    }

    fn get_range(&self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let end = offset.saturating_add(len);
        let url = self
            .bucket
            .get_object(self.credentials.as_ref(), &self.key(name))
            .sign(SIGNED_FOR);
        let range = format!("bytes={offset}-{}", end - 1);
        let request = self.agent.get(url.as_str()).header("range", &range);
        match self.answer(name, request.call())? {
            (404, _) => Err(RemoteError::NotFound {
                remote: self.spec.clone(),
                what: name.to_owned(),
            }),
            (status @ (200 | 206 | 416), body) => {
                range_of(&self.spec, name, (status, body), offset, len)
            }
            (status, body) => Err(self.failed(name, status, &body)),
        }
    }

    fn create(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        // 412: the name is taken; 409: another conditional write to it is under way,
        // which wins or fails on its own: either way this one did not make it.
        Ok(matches!(self.put(name, bytes, true)?, 200..=299))
    }

    fn overwrite_hint(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.put(name, bytes, false).map(drop)
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let mut names: Vec<String> = self
            .list_keys(prefix, true)?
            .into_iter()
            .map(|(key, _)| self.name(&key).to_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    fn list_all(&self, prefix: &str) -> Result<Vec<(String, Duration)>> {
        let now = std::time::SystemTime::now();
        let mut out: Vec<(String, Duration)> = self
            .list_keys(prefix, false)?
            .into_iter()
            .map(|(key, modified)| {
                let age = modified
                    .as_deref()
                    .and_then(parse_time)
                    .and_then(|t| now.duration_since(t).ok())
                    .unwrap_or_default();
                (self.name(&key).to_owned(), age)
            })
            .collect();
        out.sort();
        Ok(out)
    }

    fn delete(&self, name: &str) -> Result<()> {
        let url = self
            .bucket
            .delete_object(self.credentials.as_ref(), &self.key(name))
            .sign(SIGNED_FOR);
        match self.answer(name, self.agent.delete(url.as_str()).call())? {
            (200..=299 | 404, _) => Ok(()),
            (status, body) => Err(self.failed(name, status, &body)),
        }
    }
}

/// An S3 time (`2026-11-27T17:15:44.000Z`), or `None` for anything else: an object of
/// unknown age counts as new, which `gc` keeps.
fn parse_time(text: &str) -> Option<std::time::SystemTime> {
    let (date, time) = text.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = time.trim_end_matches('Z');
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let s = t.next()?.split('.').next()?.parse::<i64>().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3600 + min * 60 + s).ok()?;
    Some(std::time::UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_times_parse_to_the_unix_clock() {
        let t = parse_time("2026-11-27T17:15:44.000Z").unwrap();
        let secs = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(secs, 1_795_799_744);
        assert_eq!(
            parse_time("1970-01-01T00:00:00Z"),
            Some(std::time::UNIX_EPOCH)
        );
        assert_eq!(parse_time("yesterday"), None);
    }
}
