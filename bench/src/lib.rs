//! Peer benchmarks of cfs (see `benches/` and `src/bin/`), and the retrieval-quality
//! corpus shared by the search benchmarks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cfs_ingest::{Embedder, HashEmbedder};
use cfs_search::{Hit, Ranking};
use cfs_store::{Settings, Store, SyncOptions};

/// A query and where its answer is.
pub struct Label {
    /// The file holding the item.
    pub path: String,
    /// The item's name.
    pub item: String,
    /// The first paragraph of its doc comment.
    pub query: String,
}

/// Resident memory of this process.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The resident set after the allocator has returned its free pages to the system
/// (glibc's `malloc_trim`): what live data holds, not what an earlier phase freed (a
/// load that reuses freed pages would otherwise look smaller than it is, and one that
/// leaves its own temporaries free in the heap larger).
pub fn trimmed_rss_bytes() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free memory of the allocator to the system.
    unsafe {
        libc::malloc_trim(0);
    }
    rss_bytes()
}

/// The exact top `k` of `all` for the query `q` by cfs's score (the integer dot product
/// over the norms), ties by index; scored on every core.
pub fn exact_top(all: &[Vec<i16>], q: &[i16], k: usize) -> Vec<usize> {
    use rayon::prelude::*;
    let qn = cfs_search::norm2(q);
    let mut s: Vec<(i64, usize)> = all
        .par_iter()
        .enumerate()
        .map(|(i, v)| (-cfs_search::dot(q, v, qn, cfs_search::norm2(v)), i))
        .collect();
    s.par_sort_unstable();
    s.into_iter().take(k).map(|(_, i)| i).collect()
}

/// The share of the `exact` answers' items that the `found` answers hold.
pub fn recall(exact: &[Vec<usize>], found: &[Vec<usize>]) -> f64 {
    let (mut hit, mut total) = (0, 0);
    for (e, f) in exact.iter().zip(found) {
        total += e.len();
        hit += e.iter().filter(|i| f.contains(i)).count();
    }
    hit as f64 / total.max(1) as f64
}

/// The value after `--name` on a command line, if the flag is there.
pub fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The `p` quantile of sorted durations, in milliseconds.
pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// The item a line declares: the identifier after `fn`, `struct`, `enum`, `trait`,
/// `type`, `const`, `static`, `mod`, `union` or `macro_rules!`.
pub fn declared_item(line: &str) -> Option<String> {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!'))
        .filter(|w| !w.is_empty())
        .collect();
    let keywords = [
        "fn",
        "struct",
        "enum",
        "trait",
        "type",
        "const",
        "static",
        "mod",
        "union",
        "macro_rules!",
    ];
    let at = words.iter().position(|w| keywords.contains(w))?;
    let name = words.get(at + 1)?;
    let name = name.trim_end_matches('!');
    (name.chars().next()?.is_alphabetic() || name.starts_with('_')).then(|| name.to_owned())
}

/// Copies `.rs` files of `src` (path order) up to `budget` bytes into `dst` without
/// their `///` lines, and returns the labels.
pub fn make_corpus(src: &Path, dst: &Path, budget: u64) -> (u64, usize, Vec<Label>) {
    copy_corpus(src, dst, budget, |p| p.ends_with(".rs"), strip_doc_comments)
}

/// Copies the files of `src` that `wanted` names (path order) up to `budget` bytes into
/// `dst` as `strip` leaves them, and returns the bytes, the files and the labels, each
/// (item, query) of `strip` labelled with its file.
fn copy_corpus(
    src: &Path,
    dst: &Path,
    budget: u64,
    wanted: impl Fn(&str) -> bool,
    strip: impl Fn(&str) -> (String, Vec<(String, String)>),
) -> (u64, usize, Vec<Label>) {
    let walk = cfs_ingest::walk(src).expect("walk SRC");
    let mut files: Vec<_> = walk.files.iter().filter(|f| wanted(&f.rel_path)).collect();
    files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    let (mut bytes, mut n, mut labels) = (0, 0, Vec::new());
    for f in files {
        if bytes >= budget {
            break;
        }
        let Ok(text) = std::fs::read_to_string(src.join(&f.rel_path)) else {
            continue;
        };
        let (kept, found) = strip(&text);
        labels.extend(found.into_iter().map(|(item, query)| Label {
            path: f.rel_path.clone(),
            item,
            query,
        }));
        let out = dst.join(&f.rel_path);
        std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
        std::fs::write(&out, &kept).expect("write corpus file");
        bytes += kept.len() as u64;
        n += 1;
    }
    (bytes, n, labels)
}

/// The text without its `///` lines, and (item, first paragraph) of each that documents
/// a named item.
fn strip_doc_comments(text: &str) -> (String, Vec<(String, String)>) {
    let mut kept = String::with_capacity(text.len());
    let mut found = Vec::new();
    let mut doc: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(d) = t.strip_prefix("///") {
            doc.push(d.trim().to_owned());
            continue;
        }
        if !doc.is_empty() && !t.starts_with("#[") {
            // The first paragraph of the comment, without code examples.
            let para: Vec<&str> = doc
                .iter()
                .map(String::as_str)
                .take_while(|l| !l.is_empty() && !l.starts_with("```") && !l.starts_with('#'))
                .collect();
            let query = para.join(" ");
            if let Some(item) = declared_item(t)
                && query.split_whitespace().count() >= 4
            {
                found.push((item, query));
            }
            doc.clear();
        }
        kept.push_str(line);
        kept.push('\n');
    }
    (kept, found)
}

/// Whether a search hit is the label's item.
pub fn is_target(hit: &Hit, label: &Label) -> bool {
    is_target_parts(&hit.paths, hit.symbol.as_deref(), label)
}

/// Whether a chunk with these paths and symbol is the label's item.
pub fn is_target_parts<P: AsRef<str>>(paths: &[P], symbol: Option<&str>, label: &Label) -> bool {
    paths.iter().any(|p| p.as_ref() == label.path)
        && symbol
            .is_some_and(|s| s == label.item || s.rsplit("::").next() == Some(label.item.as_str()))
}

/// A new store at `path` with the default chunk sizes and embedder, with that embedder
/// and the default sync options.
pub fn new_store(path: &Path) -> (Store, HashEmbedder, SyncOptions) {
    let embedder = HashEmbedder::default();
    let options = SyncOptions::default();
    let settings = Settings {
        chunk: options.config.chunk,
        model_id: embedder.model_id().into(),
    };
    let store = Store::create(path, settings).expect("create the store");
    (store, embedder, options)
}

/// The labelled corpus of [`make_corpus`] in a temporary folder, synced into a store
/// beside it.
pub struct IndexedCorpus {
    /// Holds the tree and the store; both go when it is dropped.
    pub dir: tempfile::TempDir,
    /// The corpus.
    pub tree: PathBuf,
    /// Bytes copied.
    pub bytes: u64,
    /// Files copied.
    pub files: usize,
    /// Its queries.
    pub labels: Vec<Label>,
    /// The store, synced with `tree`.
    pub store: Store,
    /// The store's embedder.
    pub embedder: HashEmbedder,
    /// The sync options used.
    pub options: SyncOptions,
}

/// Copies the corpus (see [`make_corpus`]) and syncs it into a new store.
pub fn indexed_corpus(src: &Path, budget: u64) -> IndexedCorpus {
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = dir.path().join("tree");
    let (bytes, files, labels) = make_corpus(src, &tree, budget);
    let (store, embedder, options) = new_store(&dir.path().join("store.redb"));
    store
        .sync(&tree, &options, &embedder, &|_| {})
        .expect("sync the corpus");
    IndexedCorpus {
        dir,
        tree,
        bytes,
        files,
        labels,
        store,
        embedder,
        options,
    }
}

/// The Python suite, built like [`make_corpus`]: `.py` files of `src` (path order) up to
/// `budget` bytes are copied with the docstrings of top-level functions and classes
/// replaced by `pass`; each docstring's first paragraph (at least four words) is a query
/// whose answer is that function or class.
pub fn make_python_corpus(src: &Path, dst: &Path, budget: u64) -> (u64, usize, Vec<Label>) {
    let wanted = |p: &str| p.ends_with(".py") && !p.contains("test");
    copy_corpus(src, dst, budget, wanted, strip_docstrings)
}

/// The text without the docstrings of its top-level `def`s and `class`es, and (name,
/// first paragraph) of each.
fn strip_docstrings(text: &str) -> (String, Vec<(String, String)>) {
    let lines: Vec<&str> = text.lines().collect();
    let (mut kept, mut found) = (String::with_capacity(text.len()), Vec::new());
    let mut pending: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        let top = line.len() == t.len();
        if top && let Some(name) = python_item(t) {
            pending = (line.trim_end().ends_with(':')).then_some(name);
        } else if let Some(name) = pending.take()
            && let Some(quote) = ["\"\"\"", "'''"].into_iter().find(|q| t.starts_with(q))
        {
            let indent = &line[..line.len() - t.len()];
            let mut doc = vec![t[3..].to_owned()];
            let mut end = i;
            while !doc.last().expect("a line").contains(quote) && end + 1 < lines.len() {
                end += 1;
                doc.push(lines[end].trim().to_owned());
            }
            let para: Vec<String> = doc
                .iter()
                .map(|l| l.split(quote).next().unwrap_or("").trim().to_owned())
                .take_while(|l| !l.is_empty())
                .collect();
            let query = para.join(" ");
            if query.split_whitespace().count() >= 4 {
                found.push((name, query));
            }
            kept.push_str(indent);
            kept.push_str("pass\n");
            i = end + 1;
            continue;
        } else if !t.is_empty() {
            pending = None;
        }
        kept.push_str(line);
        kept.push('\n');
        i += 1;
    }
    (kept, found)
}

/// The name a top-level `def`, `async def` or `class` line declares.
fn python_item(t: &str) -> Option<String> {
    let rest = t
        .strip_prefix("def ")
        .or_else(|| t.strip_prefix("async def "))
        .or_else(|| t.strip_prefix("class "))?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The ranking stack of a variant's name.
pub fn variant(name: &str) -> Ranking {
    let full = Ranking::default();
    match name {
        "full" => full,
        "plain" => Ranking::plain(),
        "-definitions" => Ranking {
            definitions: false,
            ..full
        },
        "-variants" => Ranking {
            variants: false,
            ..full
        },
        "-coverage" => Ranking {
            coverage: false,
            ..full
        },
        "-paths" => Ranking {
            paths: false,
            ..full
        },
        "-roles" => Ranking {
            roles: false,
            ..full
        },
        "-files" => Ranking {
            files: false,
            ..full
        },
        "-intent" => Ranking {
            name: full.description,
            mixed: full.description,
            ..full
        },
        "-file-vector" => with_settings(full, "mixed.file_vector=0;description.file_vector=0"),
        "-file-text" => with_settings(full, "description.file_text=0"),
        other => match other.strip_prefix("set:") {
            Some(settings) => with_settings(full, settings),
            None => panic!("unknown variant {other}"),
        },
    }
}

/// `ranking` with `key=value` settings separated by `;`: `name.text`, `name.vector`,
/// `name.definitions`, `name.path`, `name.coverage`, `name.file_vector`,
/// `name.file_text` (and the same under `mixed.` and `description.`), `priors` (eight
/// percentages joined by `/`), `file_bonus_cap`.
fn with_settings(mut r: Ranking, settings: &str) -> Ranking {
    for setting in settings.split(';').filter(|s| !s.is_empty()) {
        let (key, value) = setting.split_once('=').expect("key=value");
        let num = || value.parse::<u32>().expect("a number");
        let list = || -> [u32; 8] {
            let v: Vec<u32> = value
                .split('/')
                .map(|x| x.parse().expect("number"))
                .collect();
            v.try_into().expect("eight numbers")
        };
        match key {
            "priors" => r.priors = list(),
            "file_bonus_cap" => r.file_bonus_cap = num(),
            _ => {
                let (intent, field) = key.split_once('.').expect("intent.field");
                let w = match intent {
                    "name" => &mut r.name,
                    "mixed" => &mut r.mixed,
                    "description" => &mut r.description,
                    _ => panic!("unknown intent {intent}"),
                };
                match field {
                    "text" => w.text = num(),
                    "vector" => w.vector = num(),
                    "definitions" => w.definitions = num(),
                    "path" => w.path = num(),
                    "coverage" => w.coverage = num(),
                    "file_vector" => w.file_vector = num(),
                    "file_text" => w.file_text = num(),
                    _ => panic!("unknown weight {field}"),
                }
            }
        }
    }
    r
}
