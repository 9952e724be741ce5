//! What a remote can do: read an object whole or a range of it, create an object only
//! where no object of its name is, and list names by prefix. Every remote kind (a
//! folder; object storage and web servers later) is reached through [`Remote`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::bundle::BundleRemote;
use crate::error::{RemoteError, Result};
use crate::folder::FolderRemote;
use crate::http::HttpRemote;
use crate::s3::S3Remote;

/// A place states are published to and pulled from.
pub trait Remote: Send + Sync {
    /// How the remote is named in messages.
    fn describe(&self) -> String;
    /// The object `name` whole, or `None` if there is none.
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>>;
    /// `len` bytes of object `name` from `offset`; an object that ends before them is
    /// `Damaged`.
    fn get_range(&self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>>;
    /// Creates object `name` with `bytes` unless one is there: true if this call made
    /// it. Never overwrites.
    fn create(&self, name: &str, bytes: &[u8]) -> Result<bool>;
    /// Replaces object `name` whole, atomically: only a branch's `latest` hint, which
    /// readers check, is ever replaced.
    fn overwrite_hint(&self, name: &str, bytes: &[u8]) -> Result<()>;
    /// Whether [`Remote::list`] works (a web server cannot list).
    fn lists(&self) -> bool {
        true
    }
    /// The names of the objects right under folder `prefix` (ending in `/`), sorted.
    fn list(&self, prefix: &str) -> Result<Vec<String>>;
    /// Every object whose name starts with `prefix`, at any depth, sorted, with its age
    /// (for `gc`, which never removes what is younger than its grace period).
    fn list_all(&self, prefix: &str) -> Result<Vec<(String, std::time::Duration)>> {
        Err(RemoteError::Invalid(format!(
            "{}: {prefix}: this remote cannot list its objects",
            self.describe()
        )))
    }
    /// Removes object `name` (for `gc` only); one already gone is no error.
    fn delete(&self, name: &str) -> Result<()> {
        Err(RemoteError::Invalid(format!(
            "{}: {name}: this remote is read-only",
            self.describe()
        )))
    }
}

/// The remote a command names: a folder path or a `file://` URL, an `s3://bucket/prefix`
/// URL (S3-compatible object storage, `s3.rs`), an `http://` or `https://` URL to pull
/// from, or a bundle file.
pub fn open(spec: &str) -> Result<Box<dyn Remote>> {
    if let Some(path) = spec.strip_prefix("file://") {
        return Ok(Box::new(FolderRemote::new(path)));
    }
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return Ok(Box::new(HttpRemote::new(spec)));
    }
    if spec.starts_with("s3://") {
        return Ok(Box::new(S3Remote::new(spec)?));
    }
    if std::path::Path::new(spec).is_file() {
        return Ok(Box::new(BundleRemote::open(std::path::Path::new(spec))?));
    }
    if let Some((scheme, _)) = spec.split_once("://") {
        return Err(RemoteError::Invalid(format!(
            "{spec}: remotes of scheme {scheme}:// are not supported by this build (a folder \
             path or file:// URL is)"
        )));
    }
    Ok(Box::new(FolderRemote::new(spec)))
}

/// A remote in memory, for tests of races and damage.
#[derive(Debug, Default)]
pub struct MemoryRemote {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
    /// The age every object reports (none: zero).
    age: Option<std::time::Duration>,
}

impl MemoryRemote {
    /// An empty remote.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty remote whose objects all report being `age` old (tests of `gc`).
    pub fn aged(age: std::time::Duration) -> Self {
        Self {
            age: Some(age),
            ..Self::default()
        }
    }

    /// Puts `bytes` as object `name`, whatever was there (tests damage objects with it).
    pub fn put(&self, name: &str, bytes: Vec<u8>) {
        self.lock().insert(name.to_owned(), bytes);
    }

    /// Removes object `name`.
    pub fn remove(&self, name: &str) {
        self.lock().remove(name);
    }

    /// Every object's name.
    pub fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Remote for MemoryRemote {
    fn describe(&self) -> String {
        "memory".into()
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.lock().get(name).cloned())
    }

    fn get_range(&self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let objects = self.lock();
        let object = objects.get(name).ok_or_else(|| RemoteError::NotFound {
            remote: self.describe(),
            what: name.to_owned(),
        })?;
        slice(object, offset, len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| short(&self.describe(), name, object.len() as u64, offset + len))
    }

    fn create(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let mut objects = self.lock();
        if objects.contains_key(name) {
            return Ok(false);
        }
        objects.insert(name.to_owned(), bytes.to_vec());
        Ok(true)
    }

    fn overwrite_hint(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.put(name, bytes.to_vec());
        Ok(())
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(names_under(&self.lock(), prefix))
    }

    fn list_all(&self, prefix: &str) -> Result<Vec<(String, std::time::Duration)>> {
        let age = self.age.unwrap_or_default();
        Ok(self
            .lock()
            .range(prefix.to_owned()..)
            .take_while(|(name, _)| name.starts_with(prefix))
            .map(|(name, _)| (name.clone(), age))
            .collect())
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.remove(name);
        Ok(())
    }
}

/// Most bytes of an object read whole or of one answer: a remote's word on a size is
/// checked against it before anything is allocated.
pub(crate) const MAX_GET: u64 = 1 << 30;

/// The names in `objects` right under folder `prefix`: what `list` answers for the
/// remotes that hold their names in a map.
pub(crate) fn names_under<V>(objects: &BTreeMap<String, V>, prefix: &str) -> Vec<String> {
    objects
        .range(prefix.to_owned()..)
        .take_while(|(name, _)| name.starts_with(prefix))
        .filter(|(name, _)| !name[prefix.len()..].contains('/'))
        .map(|(name, _)| name.clone())
        .collect()
}

/// `bytes[offset..offset + len]`, if it is within them.
fn slice(bytes: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    bytes.get(start..end)
}

/// An object shorter than a read of it needs.
pub(crate) fn short(remote: &str, name: &str, len: u64, end: u64) -> RemoteError {
    RemoteError::Damaged {
        remote: remote.to_owned(),
        name: name.to_owned(),
        reason: format!("{len} bytes long, a manifest names bytes up to {end}"),
    }
}
