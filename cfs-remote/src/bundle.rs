//! Bundles: a remote in one file, for hand-over without a network. A bundle holds the
//! objects a push would have written (docs/format.md, "Bundles"); pulling from it is
//! pulling from a read-only remote. A bundle made `--since` another holds only what that
//! one lacks, and applies to a store that holds the other's state.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use borsh::{BorshDeserialize, BorshSerialize};
use cfs_store::Store;

use crate::error::{RemoteError, Result};
use crate::format::{FORMAT, ObjectName};
use crate::push::{PushOptions, PushReport, push};
use crate::remote::{MemoryRemote, Remote, names_under, short};

const MAGIC: [u8; 16] = *b"cfs bundle\0\0\0\0\0\0";
/// Bytes before the first object: the magic and the format.
const HEADER_LEN: u64 = 20;
/// Most bytes of a bundle's index: a few entries of a name and two numbers each (a
/// bundle holds the objects of one push).
const MAX_INDEX: u64 = 1 << 20;

/// An object's place in a bundle.
#[derive(BorshSerialize, BorshDeserialize, Clone, Debug, PartialEq, Eq)]
struct Entry {
    name: String,
    offset: u64,
    length: u64,
}

/// A bundle file opened as a read-only remote.
#[derive(Debug)]
pub struct BundleRemote {
    path: PathBuf,
    file: Mutex<std::fs::File>,
    len: u64,
    index: BTreeMap<String, (u64, u64)>,
}

impl BundleRemote {
    /// Opens the bundle at `path`, checking its header and index.
    pub fn open(path: &Path) -> Result<Self> {
        let io = |source| RemoteError::Io {
            remote: path.display().to_string(),
            name: String::new(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut head = [0u8; HEADER_LEN as usize];
        let mut tail = [0u8; 8];
        let fits = len >= HEADER_LEN + 8;
        if fits {
            file.read_exact(&mut head).map_err(io)?;
            file.seek(SeekFrom::Start(len - 8)).map_err(io)?;
            file.read_exact(&mut tail).map_err(io)?;
        }
        let damaged = |reason: &str| RemoteError::Damaged {
            remote: path.display().to_string(),
            name: "the bundle".into(),
            reason: reason.into(),
        };
        if !fits || head[..16] != MAGIC {
            return Err(damaged("not a cfs bundle"));
        }
        let format = u32::from_le_bytes(head[16..20].try_into().expect("4 bytes"));
        if format != FORMAT {
            return Err(RemoteError::Version {
                remote: path.display().to_string(),
                what: format!("a bundle of format {format}; this build reads {FORMAT}"),
            });
        }
        let at = u64::from_le_bytes(tail);
        if !(HEADER_LEN..=len - 8).contains(&at) {
            return Err(damaged("its index lies outside it"));
        }
        if len - 8 - at > MAX_INDEX {
            // Read before anything in it is checked: its size is bounded first.
            return Err(damaged(&format!(
                "its index is {} bytes, more than a bundle's index can be",
                len - 8 - at
            )));
        }
        let mut bytes = vec![0u8; (len - 8 - at) as usize];
        file.seek(SeekFrom::Start(at)).map_err(io)?;
        file.read_exact(&mut bytes).map_err(io)?;
        let entries: Vec<Entry> =
            borsh::from_slice(&bytes).map_err(|e| damaged(&format!("its index: {e}")))?;
        let mut index = BTreeMap::new();
        for e in entries {
            let inside = e.offset >= HEADER_LEN
                && e.offset.checked_add(e.length).is_some_and(|end| end <= at);
            if !inside || index.insert(e.name, (e.offset, e.length)).is_some() {
                return Err(damaged(
                    "its index names bytes outside its objects, or a name twice",
                ));
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            len,
            index,
        })
    }

    /// The names of its objects.
    pub fn names(&self) -> Vec<String> {
        self.index.keys().cloned().collect()
    }

    fn read(&self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let io = |source| RemoteError::Io {
            remote: self.describe(),
            name: name.to_owned(),
            source,
        };
        let mut out = vec![
            0u8;
            usize::try_from(len).map_err(|_| short(
                &self.describe(),
                name,
                self.len,
                offset
            ))?
        ];
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        file.read_exact(&mut out).map_err(io)?;
        Ok(out)
    }
}

impl Remote for BundleRemote {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self.index.get(name) {
            Some(&(offset, len)) => self.read(name, offset, len).map(Some),
            None => Ok(None),
        }
    }

    fn get_range(&self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let &(start, object_len) = self.index.get(name).ok_or_else(|| RemoteError::Damaged {
            remote: self.describe(),
            name: name.to_owned(),
            reason: "not in the bundle (apply the bundle it was made since first)".into(),
        })?;
        let end = offset.saturating_add(len);
        if end > object_len {
            return Err(short(&self.describe(), name, object_len, end));
        }
        self.read(name, start + offset, len)
    }

    fn create(&self, name: &str, _bytes: &[u8]) -> Result<bool> {
        Err(RemoteError::Invalid(format!(
            "{}: {name}: a bundle is read-only",
            self.describe()
        )))
    }

    fn overwrite_hint(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.create(name, bytes).map(drop)
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(names_under(&self.index, prefix))
    }
}

/// What [`create_bundle`] wrote.
#[derive(Clone, Debug)]
pub struct BundleReport {
    /// The push into the bundle.
    pub push: PushReport,
    /// Objects in the bundle.
    pub objects: usize,
    /// The bundle's bytes.
    pub bytes: u64,
    /// The manifest of the bundle it was made since.
    pub since: Option<ObjectName>,
}

/// Writes a bundle of `store`'s state to `path` (replacing it atomically), holding only
/// what the bundle `since` lacks when one is given.
pub fn create_bundle(
    store: &Store,
    path: &Path,
    since: Option<&Path>,
    options: &PushOptions,
) -> Result<BundleReport> {
    let memory = MemoryRemote::new();
    let mut before = Vec::new();
    let mut since_manifest = None;
    if let Some(previous) = since {
        let previous = BundleRemote::open(previous)?;
        for name in previous.names() {
            let bytes = previous.get(&name)?.expect("a name of its index");
            memory.put(&name, bytes);
            before.push(name);
        }
        since_manifest = crate::refs::newest(&previous, &options.branch)?.map(|n| n.1);
    }
    let push = push(store, &memory, options)?;
    let mut objects = BTreeMap::new();
    for name in memory.names() {
        let fresh = !before.contains(&name) || name == "cfs-remote" || name.starts_with("latest/");
        if fresh {
            objects.insert(name.clone(), memory.get(&name)?.expect("a listed name"));
        }
    }
    let bytes = write_bundle(path, &objects)?;
    Ok(BundleReport {
        push,
        objects: objects.len(),
        bytes,
        since: since_manifest,
    })
}

/// Writes `objects` as a bundle at `path`, replacing it whole
/// ([`cfs_store::replace_file`]). Returns its length.
fn write_bundle(path: &Path, objects: &BTreeMap<String, Vec<u8>>) -> Result<u64> {
    let io = |source| RemoteError::Io {
        remote: path.display().to_string(),
        name: String::new(),
        source,
    };
    let mut bytes = MAGIC.to_vec();
    bytes.extend(FORMAT.to_le_bytes());
    let mut entries = Vec::with_capacity(objects.len());
    for (name, object) in objects {
        entries.push(Entry {
            name: name.clone(),
            offset: bytes.len() as u64,
            length: object.len() as u64,
        });
        bytes.extend_from_slice(object);
    }
    let at = bytes.len() as u64;
    bytes.extend(borsh::to_vec(&entries).expect("an index in memory encodes"));
    bytes.extend(at.to_le_bytes());
    cfs_store::replace_file(path, io, |f| f.write_all(&bytes).map_err(io))?;
    Ok(bytes.len() as u64)
}
