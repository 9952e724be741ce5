//! The symbol index: every code chunk that defines a symbol is posted under a
//! *definition term*, its symbol's name key behind a prefix no text token can have, so
//! that a name in a query finds the chunks that define it (not the many that use it) by
//! one postings lookup. The definitions a query names form a ranked list that fusion
//! weighs like the text and vector lists (`docs/spec.md`, "Ranking for code").

use cfs_core::SymbolKind;
use cfs_ingest::Role;

use super::definition_terms::{DECLARED_PREFIX, DEFINITION_PREFIX, name_head, name_key};
use super::intent::Identifier;
use super::meta::MetaView;
use super::path_words::{stem_and_folder, word_matches};
use super::query::{At, Filter, Scored, top};
use super::snapshot::Snapshot;
use super::tokenize::words;

/// How well a kind of symbol answers a name: types and database tables first, then
/// functions, macros and triggers, methods, modules, values, indexes, configuration keys
/// and style rules, implementations last (smaller is better).
pub fn kind_rank(kind: Option<SymbolKind>) -> u64 {
    use SymbolKind::*;
    match kind {
        Some(Struct | Class | Interface | Trait | Enum | Type | Table) => 0,
        Some(Function | Macro | Trigger) => 1,
        Some(Method) => 2,
        Some(Module | Const | Var | Section | Key | Rule | Index) => 3,
        Some(Impl) | None => 4,
    }
}

/// How a chunk found under a definition term matches an identifier (larger is
/// better). Its own symbol (a [`DEFINITION_PREFIX`] term): 6 when the identifier's
/// qualifier is the key of the symbol's parent or of its file's stem, 3 when the
/// identifier has another qualifier, else 5 when the name's head is the identifier's
/// name case and all, 4 when only the keys agree. A name its lines declare (a
/// [`DECLARED_PREFIX`] term): 5 when the qualified term matched or the qualifier is its
/// file's stem, 2 when the identifier has another qualifier, else 3.
pub fn match_level(meta: &MetaView<'_>, ident: &Identifier, own: bool, qualified: bool) -> u64 {
    let stem_key = || {
        let path = meta.doc.paths.first().map_or("", |p| &*p.path);
        let name = path.rsplit('/').next().unwrap_or(path);
        name_key(name.split('.').next().unwrap_or(""), None)
    };
    let q = ident.qualifier.as_deref();
    let q_is_stem = q.is_some() && stem_key().as_deref() == q;
    if !own {
        return match q {
            Some(_) if qualified || q_is_stem => 5,
            Some(_) => 2,
            None => 3,
        };
    }
    let Some(name) = meta.name() else { return 0 };
    if let Some(q) = q {
        let parent_key = meta.parent().and_then(|p| name_key(p, None));
        return if parent_key.as_deref() == Some(q) || q_is_stem {
            6
        } else {
            3
        };
    }
    if name_head(name, meta.symbol_kind) == ident.name {
        5
    } else {
        4
    }
}

/// The best match level ([`match_level`]).
pub const MAX_LEVEL: u64 = 6;

/// The match level of a definition's score ([`definition_score`]).
pub fn definition_level(score: u64) -> u64 {
    score >> 16
}

/// The score a definition is ordered by: match level, then the role's place in
/// [`Role::ALL`] (source first), then [`kind_rank`], then whether its file is named
/// after the identifier ([`named_after`]); larger is better.
fn definition_score(level: u64, role: Role, kind: Option<SymbolKind>, named: bool) -> u64 {
    let role_place = role.place() as u64;
    level << 16 | (7 - role_place) << 8 | (4 - kind_rank(kind)) << 1 | u64::from(named)
}

/// Whether the file at `path` is named after an identifier called `name`: its stem has
/// words ([`file_words`](super::path_words::file_words)) and each names one of the name's words ([`word_matches`]), as
/// `request.ts` and `routing/mod.rs` are named after `HonoRequest` and `Routing`.
pub fn named_after(path: &str, name: &str) -> bool {
    file_named_by(path, &words(name))
}

/// [`named_after`] for a name already split into its words.
fn file_named_by(path: &str, name: &[String]) -> bool {
    // A stem word and the name word naming it begin alike: a stem that does not hold
    // the first three letters of one of the name's words (all of a shorter one) is not
    // named, and need not be split into words (a wide name such as `new` meets
    // thousands of definitions).
    let (stem, _) = stem_and_folder(path);
    let ascii = stem.is_ascii() && name.iter().all(|q| q.is_ascii());
    let holds = |q: &String| {
        let start = &q.as_bytes()[..q.len().min(3)];
        stem.as_bytes()
            .windows(start.len())
            .any(|w| w.eq_ignore_ascii_case(start))
    };
    if ascii && !name.iter().any(holds) {
        return false;
    }
    // The stem's words, as `file_words` splits them (its folder is not needed).
    stem_named_by(&words(stem), name)
}

/// Whether a word of `name` names each of the `stem` words, which are not none.
fn stem_named_by(stem: &[String], name: &[String]) -> bool {
    !stem.is_empty() && stem.iter().all(|w| name.iter().any(|q| word_matches(q, w)))
}

/// The terms an identifier is looked up by: its own-symbol term, its declared term,
/// and (qualified) its qualified declared term; with whether each is an own symbol's
/// and whether it is qualified.
pub fn lookup_terms(ident: &Identifier) -> Vec<(String, bool, bool)> {
    let k = &ident.key;
    let mut terms = vec![
        (format!("{DEFINITION_PREFIX}{k}"), true, false),
        (format!("{DECLARED_PREFIX}{k}"), false, false),
    ];
    if let Some(q) = &ident.qualifier {
        terms.push((format!("{DECLARED_PREFIX}{q}::{k}"), false, true));
    }
    terms
}

/// The score of `meta` found under one of `ident`'s [`lookup_terms`] (`own` and
/// `qualified` as it says) with the posting value `value` (a declared kind's place in
/// [`SymbolKind::ALL`] plus one, for a declared name).
pub fn definition_found(
    meta: &MetaView<'_>,
    ident: &Identifier,
    (own, qualified): (bool, bool),
    value: u32,
) -> u64 {
    let kind = match own {
        true => meta.symbol_kind,
        false => value
            .checked_sub(1)
            .and_then(|t| SymbolKind::ALL.get(t as usize).copied()),
    };
    let level = match_level(meta, ident, own, qualified);
    let path = meta.doc.paths.first().map_or("", |p| &*p.path);
    let named = file_named_by(path, &ident.words);
    definition_score(level, meta.doc.role, kind, named)
}

/// The live chunks passing `filter` that define one of `idents`, best first (by
/// [`definition_score`], then chunk id), at most `k`. A chunk found several ways keeps
/// its best score.
pub(crate) fn definitions(
    snap: &Snapshot,
    idents: &[Identifier],
    k: usize,
    filter: &Filter,
) -> Vec<Scored<u64>> {
    let mut best: std::collections::HashMap<At, u64> = std::collections::HashMap::new();
    for ident in idents {
        for (term, own, qualified) in lookup_terms(ident) {
            for (s, live) in snap.segments.iter().enumerate() {
                let Some(postings) = live.segment.postings(&term) else {
                    continue;
                };
                for &[i, value] in postings {
                    let i = i as usize;
                    if i >= live.segment.len() || live.is_dead(i) {
                        continue;
                    }
                    let found = live.segment.with_view(i, |meta| {
                        filter
                            .matches_view(meta)
                            .then(|| definition_found(meta, ident, (own, qualified), value))
                    });
                    let Some(score) = found.flatten() else {
                        continue;
                    };
                    let e = best.entry(At::new(s, i)).or_insert(score);
                    *e = (*e).max(score);
                }
            }
        }
    }
    top(snap, best.into_iter().map(|(at, s)| (s, at)).collect(), k)
}

#[cfg(test)]
mod tests {
    use super::super::path_words::file_words;
    use super::*;

    #[test]
    fn the_quick_test_of_a_named_file_never_changes_the_answer() {
        let paths = [
            "src/request.ts",
            "src/client/types.ts",
            "axum/src/routing/mod.rs",
            "src/handlers/configuration.rs",
            "lib/HTTPServer.java",
            "src/new.rs",
            "src/renewal.rs",
            "src/News_feed.rs",
            "src/boxes.rs",
            "src/ab.rs",
            "src/größe.rs",
            "src/.rs",
            "index.ts",
            "src/__init__.py",
        ];
        let names = [
            "HonoRequest",
            "new",
            "Routing",
            "HandlerConfig",
            "HttpServer",
            "Box",
            "ab",
            "Größe",
            "Renew",
            "NewsFeed",
            "Index",
            "x",
        ];
        let mut named = 0;
        for path in paths {
            for name in names {
                let want = stem_named_by(&file_words(path).stem, &words(name));
                assert_eq!(file_named_by(path, &words(name)), want, "{path} {name}");
                assert_eq!(named_after(path, name), want, "{path} {name}");
                named += usize::from(want);
            }
        }
        assert!(named >= 8, "{named}");
    }

    #[test]
    fn name_keys() {
        let key = |n: &str, k| name_key(n, k);
        assert_eq!(
            key("IntoResponse", Some(SymbolKind::Trait)).as_deref(),
            Some("intoresponse")
        );
        assert_eq!(
            key("Router<S>", Some(SymbolKind::Impl)).as_deref(),
            Some("router")
        );
        assert_eq!(
            key("IntoResponse for Html<T>", Some(SymbolKind::Impl)).as_deref(),
            Some("html")
        );
        assert_eq!(
            key("fmt::Debug for Router", Some(SymbolKind::Impl)).as_deref(),
            Some("router")
        );
        assert_eq!(
            key("a for b", Some(SymbolKind::Function)).as_deref(),
            Some("a")
        );
        assert_eq!(key("axum::Router", None).as_deref(), Some("router"));
        assert_eq!(
            key("__init__", Some(SymbolKind::Method)).as_deref(),
            Some("__init__")
        );
        assert_eq!(key("&'a str", None), None);
        assert_eq!(key("", None), None);
        assert_eq!(key(&"x".repeat(65), None), None);
        assert_eq!(key("Grüße", None).as_deref(), Some("grüße"));
    }
}
