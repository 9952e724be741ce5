//! The symbol index: every code chunk that defines a symbol is posted under a
//! *definition term*, its symbol's name key behind a prefix no text token can have, so
//! that a name in a query finds the chunks that define it (not the many that use it) by
//! one postings lookup. The definitions a query names form a ranked list that fusion
//! weighs like the text and vector lists (`docs/spec.md`, "Ranking for code").

use cfs_core::SymbolKind;
use cfs_ingest::{Role, is_word_char};

use super::declared::for_each_declared;
use super::intent::Identifier;
use super::meta::ChunkMeta;
use super::query::{At, Filter, Scored, top};
use super::snapshot::Snapshot;

/// The first character of every definition term: a control character, which the
/// tokenizer never puts in a token, so definition terms and text tokens never meet.
pub const DEFINITION_PREFIX: char = '\u{1}';

/// The head of a name, as a name is looked up: for an `impl` named `<trait> for
/// <type>`, the type; then the name cut at its first `<`, `(`, `[` or whitespace; the
/// segment after its last `::`, `.` or `\`; its leading word characters. Case kept.
pub fn name_head(name: &str, kind: Option<SymbolKind>) -> &str {
    let name = match (kind, name.rfind(" for ")) {
        (Some(SymbolKind::Impl), Some(at)) => &name[at + 5..],
        _ => name,
    };
    let name = name.trim_start_matches(['&', '*', ' ']);
    let cut = name
        .find(|c: char| matches!(c, '<' | '(' | '[') || c.is_whitespace())
        .unwrap_or(name.len());
    let name = &name[..cut];
    let last = name
        .rfind("::")
        .map(|i| i + 2)
        .into_iter()
        .chain(name.rfind(['.', '\\']).map(|i| i + 1))
        .max()
        .unwrap_or(0);
    let name = &name[last..];
    let end = name.find(|c: char| !is_word_char(c)).unwrap_or(name.len());
    &name[..end]
}

/// The key a name is looked up by: its [`name_head`], lower-cased; `None` when that is
/// empty or longer than a token may be.
pub fn name_key(name: &str, kind: Option<SymbolKind>) -> Option<String> {
    let key: String = name_head(name, kind)
        .chars()
        .flat_map(char::to_lowercase)
        .collect();
    (!key.is_empty() && key.len() <= super::tokenize::MAX_TOKEN_BYTES).then_some(key)
}

/// The first character of the terms of names a chunk's lines declare
/// ([`super::declared`]): `DECLARED_PREFIX` and the name's key, and, when the
/// declaration is qualified (or the chunk's own symbol holds it), also
/// `DECLARED_PREFIX`, the qualifier's key, `::` and the name's key.
pub const DECLARED_PREFIX: char = '\u{2}';

/// The definition terms of a chunk, sorted, each once, with the value its posting
/// carries: its symbol's ([`DEFINITION_PREFIX`] and the key of its name; value 1), for a
/// symbol chunk that is not a later window of a split symbol; for a code chunk, the
/// names its lines declare ([`DECLARED_PREFIX`]; value the declaration's kind tag plus
/// one), but not its own symbol's name again, unless it is configuration or style.
pub fn definition_terms(meta: &ChunkMeta, text: &str) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    if meta.continued {
        return out;
    }
    let own = meta.name().and_then(|n| name_key(n, meta.symbol_kind));
    if let Some(key) = &own {
        out.push((format!("{DEFINITION_PREFIX}{key}"), 1));
    }
    if meta.kind != "code" || meta.language.as_deref().is_some_and(is_config_or_style) {
        return out;
    }
    for_each_declared(text, |d| {
        let Some(key) = name_key(d.name, None) else {
            return;
        };
        if own.as_deref() == Some(key.as_str()) {
            return;
        }
        let value = d.kind as u32 + 1;
        let qualifier = d
            .qualifier
            .map(|q| name_key(q, None))
            .unwrap_or_else(|| own.clone());
        if let Some(q) = &qualifier {
            out.push((format!("{DECLARED_PREFIX}{q}::{key}"), value));
        }
        out.push((format!("{DECLARED_PREFIX}{key}"), value));
    });
    // Each term once, the first declaration's value kept.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|b, a| a.0 == b.0);
    out
}

/// True for the configuration and style languages, whose lines declare nothing: a
/// `url(...)` in CSS or a `type: object` in YAML is not a definition.
fn is_config_or_style(language: &str) -> bool {
    matches!(language, "yaml" | "toml" | "hcl" | "css")
}

/// How well a kind of symbol answers a name: types first, then functions and macros,
/// methods, modules, values and configuration keys and style rules, implementations last (smaller is better).
pub fn kind_rank(kind: Option<SymbolKind>) -> u64 {
    use SymbolKind::*;
    match kind {
        Some(Struct | Class | Interface | Trait | Enum | Type) => 0,
        Some(Function | Macro) => 1,
        Some(Method) => 2,
        Some(Module | Const | Var | Section | Key | Rule) => 3,
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
pub fn match_level(meta: &ChunkMeta, ident: &Identifier, own: bool, qualified: bool) -> u64 {
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
/// [`Role::ALL`] (source first), then [`kind_rank`]; larger is better.
fn definition_score(level: u64, role: Role, kind: Option<SymbolKind>) -> u64 {
    let role_place = Role::ALL.iter().position(|r| *r == role).unwrap_or(7) as u64;
    level << 16 | (7 - role_place) << 8 | (4 - kind_rank(kind))
}

/// The terms an identifier is looked up by: its own-symbol term, its declared term,
/// and (qualified) its qualified declared term; with whether each is an own symbol's
/// and whether it is qualified.
fn lookup_terms(ident: &Identifier) -> Vec<(String, bool, bool)> {
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
                    let Some(meta) = live.segment.meta(i) else {
                        continue;
                    };
                    if !filter.matches(&meta) {
                        continue;
                    }
                    let kind = match own {
                        true => meta.symbol_kind,
                        false => value
                            .checked_sub(1)
                            .and_then(|t| SymbolKind::ALL.get(t as usize).copied()),
                    };
                    let level = match_level(&meta, ident, own, qualified);
                    let score = definition_score(level, meta.doc.role, kind);
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
    use super::*;

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
