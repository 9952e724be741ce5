//! Files replaced whole, so that a reader sees the old file or the new one and a crash
//! or a full disk leaves no part of either: the index file here, a bundle in
//! `cfs-remote`.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Writes a file through `write` into a temporary file beside `path` (a name of this
/// process's own, so processes saving at once never write one file), syncs it, renames
/// it over `path` and syncs the folder. A failed write leaves nothing behind; `io` turns
/// the I/O errors of the steps around `write` into `E`.
pub fn replace_file<E>(
    path: &Path,
    io: impl Fn(std::io::Error) -> E,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>,
) -> Result<(), E> {
    static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".tmp.{}.{n}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = (|| {
        let file = File::create(&tmp).map_err(&io)?;
        let mut f = BufWriter::with_capacity(1 << 20, file);
        write(&mut f)?;
        let f = f.into_inner().map_err(|e| io(e.into_error()))?;
        f.sync_all().map_err(&io)?;
        std::fs::rename(&tmp, path).map_err(&io)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}
