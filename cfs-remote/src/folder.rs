//! A remote in a folder (a local disk, a mounted share): objects are files, created
//! through a temporary file that is synced and then linked to its name, which fails if
//! the name exists, so a name is never overwritten and never names half an object.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{RemoteError, Result};
use crate::remote::{MAX_GET, Remote, short};

/// A remote in the folder at a path.
#[derive(Clone, Debug)]
pub struct FolderRemote {
    root: PathBuf,
}

impl FolderRemote {
    /// The remote in folder `root` (made at the first push).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn io(&self, name: &str) -> impl Fn(std::io::Error) -> RemoteError + '_ {
        let name = name.to_owned();
        move |source| RemoteError::Io {
            remote: self.describe(),
            name: name.clone(),
            source,
        }
    }

    /// Writes `bytes` to a temporary file, synced, and lets `place` move it to the path
    /// of `name` (both folders made first); the temporary file never outlives the call.
    fn place(
        &self,
        name: &str,
        bytes: &[u8],
        place: impl FnOnce(&Path, &Path) -> std::io::Result<bool>,
    ) -> Result<bool> {
        let io = self.io(name);
        let target = self.path(name);
        let tmp = self.temporary();
        for dir in [tmp.parent(), target.parent()].into_iter().flatten() {
            std::fs::create_dir_all(dir).map_err(&io)?;
        }
        let placed = write_synced(&tmp, bytes).and_then(|()| place(&tmp, &target));
        let _ = std::fs::remove_file(&tmp);
        placed.map_err(&io)
    }

    /// A name of this process's own under `tmp/` for an object being written.
    fn temporary(&self) -> PathBuf {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.root
            .join("tmp")
            .join(format!("{}.{n}", std::process::id()))
    }
}

impl Remote for FolderRemote {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let file = match std::fs::File::open(self.path(name)) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(name)(e)),
        };
        // Read whole (a manifest, a ref, a hint, the mark), so bounded as an HTTP or S3
        // answer is, before any byte of it is checked.
        let size = file.metadata().map_err(self.io(name))?.len();
        if size > MAX_GET {
            return Err(RemoteError::Damaged {
                remote: self.describe(),
                name: name.to_owned(),
                reason: format!("{size} bytes, more than an object read whole can be"),
            });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(MAX_GET)
            .read_to_end(&mut bytes)
            .map_err(self.io(name))?;
        Ok(Some(bytes))
    }

    fn get_range(&self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let io = self.io(name);
        let mut file = std::fs::File::open(self.path(name)).map_err(&io)?;
        let size = file.metadata().map_err(&io)?.len();
        let end = offset.saturating_add(len);
        let wanted = usize::try_from(len).ok().filter(|_| end <= size);
        let Some(wanted) = wanted else {
            return Err(short(&self.describe(), name, size, end));
        };
        let mut out = vec![0u8; wanted];
        file.seek(SeekFrom::Start(offset)).map_err(&io)?;
        file.read_exact(&mut out).map_err(&io)?;
        Ok(out)
    }

    fn create(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let target = self.path(name);
        if target.exists() {
            return Ok(false);
        }
        let made = self.place(name, bytes, |tmp, target| {
            match std::fs::hard_link(tmp, target) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            }
        })?;
        if let Some(dir) = target.parent() {
            sync_folder(dir).map_err(self.io(name))?;
        }
        Ok(made)
    }

    fn overwrite_hint(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.place(name, bytes, |tmp, target| {
            std::fs::rename(tmp, target).map(|()| true)
        })
        .map(drop)
    }

    fn list_all(&self, prefix: &str) -> Result<Vec<(String, std::time::Duration)>> {
        let mut out = Vec::new();
        let mut stack = vec![prefix.trim_end_matches('/').to_owned()];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(self.path(&dir)) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.io(&dir)(e)),
            };
            for entry in entries {
                let entry = entry.map_err(self.io(&dir))?;
                let Some(name) = entry.file_name().to_str().map(|n| format!("{dir}/{n}")) else {
                    continue;
                };
                let meta = entry.metadata().map_err(self.io(&name))?;
                if meta.is_dir() {
                    stack.push(name);
                } else {
                    let age = meta.modified().ok().and_then(|m| m.elapsed().ok());
                    out.push((name, age.unwrap_or_default()));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn delete(&self, name: &str) -> Result<()> {
        match std::fs::remove_file(self.path(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(name)(e)),
            _ => Ok(()),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let entries = match std::fs::read_dir(self.path(prefix)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(prefix)(e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(self.io(prefix))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(format!("{prefix}{name}"));
            }
        }
        names.sort();
        Ok(names)
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    std::io::Write::write_all(&mut file, bytes)?;
    file.sync_all()
}

fn sync_folder(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}
