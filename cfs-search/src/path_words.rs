//! Paths as evidence: the words of a file's name (its stem) and of its folder, matched
//! against a query's words. A file named after what a query asks for (`path_router.rs`
//! for "path router", `JsonConvert.cs` for `JsonConvert`) is likely its answer
//! (`docs/spec.md`, "Ranking for code").

use super::intent::Intent;
use super::tokenize::words;

/// Stems that name their folder's module rather than a concept of their own: such a
/// file is named by its folder (`routing/mod.rs` is `routing`).
pub const MODULE_STEMS: [&str; 3] = ["mod", "index", "__init__"];

/// Fixed-point one of [`path_points`].
pub const PATH_ONE: u64 = 1024;
/// The folder's share of [`PATH_ONE`], next to the stem's whole one.
pub const FOLDER_POINTS: u64 = 256;

/// The words of a file's stem and of its folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileWords {
    /// Words of the file's name before its first `.` (leading dots skipped), or of its
    /// folder's name for a [`MODULE_STEMS`] stem.
    pub stem: Vec<String>,
    /// Words of the folder holding the file (of the folder above, for a module stem).
    pub folder: Vec<String>,
}

/// The words of `path` (`/`-separated).
pub fn file_words(path: &str) -> FileWords {
    let (stem, folder) = stem_and_folder(path);
    FileWords {
        stem: words(stem),
        folder: folder.map(words).unwrap_or_default(),
    }
}

/// The text [`FileWords`] splits: the stem and the folder's name.
pub(crate) fn stem_and_folder(path: &str) -> (&str, Option<&str>) {
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    let name = parts.next_back().unwrap_or("");
    let stem = name.trim_start_matches('.');
    let stem = stem.split('.').next().unwrap_or("");
    let folder = parts.next_back();
    match folder {
        Some(f) if MODULE_STEMS.iter().any(|m| stem.eq_ignore_ascii_case(m)) => {
            (f, parts.next_back())
        }
        _ => (stem, folder),
    }
}

/// Whether query word `q` names file word `w`: equal; equal but for a plural `s` or
/// `es` on a word of three or more letters; or one a prefix of the other, the shorter
/// of four or more bytes (`config` and `configuration`, `handle` and `handler`).
pub fn word_matches(q: &str, w: &str) -> bool {
    if q == w {
        return true;
    }
    let (short, long) = if q.len() <= w.len() { (q, w) } else { (w, q) };
    let Some(rest) = long.strip_prefix(short) else {
        return false;
    };
    short.len() >= 4 || short.len() >= 3 && matches!(rest, "s" | "es")
}

/// How much of `file`'s words the query's `words` name, in [`PATH_ONE`] units: the
/// stem's share of words named times [`PATH_ONE`] (for a name query, times the share
/// of the query's words that name a stem word too), plus the folder's share of words
/// named times [`FOLDER_POINTS`]. Integer arithmetic, rounded down at each division.
pub fn path_points(words: &[String], file: &FileWords, intent: Intent) -> u64 {
    let named = |w: &String| words.iter().any(|q| word_matches(q, w));
    let share = |list: &[String], scale: u64| -> u64 {
        let hits = list.iter().filter(|w| named(w)).count() as u64;
        if list.is_empty() {
            0
        } else {
            scale * hits / list.len() as u64
        }
    };
    let mut stem = share(&file.stem, PATH_ONE);
    if intent == Intent::Name && stem > 0 {
        let used = words
            .iter()
            .filter(|q| file.stem.iter().any(|w| word_matches(q, w)))
            .count() as u64;
        stem = stem * used / words.len().max(1) as u64;
    }
    stem + share(&file.folder, FOLDER_POINTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn stems_and_folders() {
        let f = file_words("axum/src/routing/path_router.rs");
        assert_eq!(f.stem, w(&["path", "router"]));
        assert_eq!(f.folder, w(&["routing"]));
        let f = file_words("axum/src/routing/mod.rs");
        assert_eq!(f.stem, w(&["routing"]));
        assert_eq!(f.folder, w(&["src"]));
        assert_eq!(file_words("src/router.test.ts").stem, w(&["router"]));
        assert_eq!(file_words(".eslintrc.js").stem, w(&["eslintrc"]));
        assert_eq!(
            file_words("Src/Newtonsoft.Json/JsonConvert.cs").stem,
            w(&["json", "convert"])
        );
        assert_eq!(
            file_words("Src/Newtonsoft.Json/JsonConvert.cs").folder,
            w(&["newtonsoft", "json"])
        );
        assert_eq!(file_words("index.ts").stem, w(&["index"]));
    }

    #[test]
    fn word_matching() {
        assert!(word_matches("router", "router"));
        assert!(word_matches("routers", "router"));
        assert!(word_matches("box", "boxes"));
        assert!(word_matches("config", "configuration"));
        assert!(word_matches("handle", "handler"));
        assert!(!word_matches("io", "ioutil"));
        assert!(!word_matches("abc", "abcd"));
        assert!(!word_matches("router", "routing"));
        assert!(!word_matches("大", "日本") && !word_matches("日本", "大"));
        assert!(word_matches("日本", "日本語"), "six bytes are four or more");
    }

    #[test]
    fn points() {
        let f = file_words("axum/src/routing/path_router.rs");
        let q = w(&["path", "router", "implementation"]);
        assert_eq!(path_points(&q, &f, Intent::Description), PATH_ONE);
        assert_eq!(
            path_points(&w(&["router"]), &f, Intent::Description),
            PATH_ONE / 2
        );
        let f = file_words("axum-core/src/response/into_response.rs");
        assert_eq!(
            path_points(&w(&["into", "response"]), &f, Intent::Name),
            PATH_ONE + FOLDER_POINTS
        );
        let f = file_words("src/unix/loop.c");
        // A name query's words that no stem word answers lower the stem's points.
        assert_eq!(
            path_points(&w(&["uv", "loop", "init"]), &f, Intent::Name),
            PATH_ONE / 3
        );
        assert_eq!(path_points(&w(&["retry"]), &f, Intent::Description), 0);
    }
}
