//! The symbol index: every code chunk that defines a symbol is posted under a
//! *definition term*, its symbol's name key behind a prefix no text token can have, so
//! that a name in a query finds the chunks that define it (not the many that use it) by
//! one postings lookup. The definitions a query names form a ranked list that fusion
//! weighs like the text and vector lists (`docs/spec.md`, "Ranking for code").

use cfs_core::SymbolKind;
use cfs_ingest::{Role, is_word_char};

use super::intent::Identifier;
use super::query::{At, Filter, Scored, top};
use super::segment::ChunkMeta;
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

/// The definition term of a chunk: [`DEFINITION_PREFIX`] and its symbol's name key, for
/// a symbol chunk that is not a later window of a split symbol.
pub(crate) fn definition_term(meta: &ChunkMeta) -> Option<String> {
    if meta.continued {
        return None;
    }
    let key = name_key(meta.name()?, meta.symbol_kind)?;
    Some(format!("{DEFINITION_PREFIX}{key}"))
}

/// How well a kind of symbol answers a name: types first, then functions and macros,
/// methods, modules and values, implementations last (smaller is better).
pub fn kind_rank(kind: Option<SymbolKind>) -> u64 {
    use SymbolKind::*;
    match kind {
        Some(Struct | Class | Interface | Trait | Enum | Type) => 0,
        Some(Function | Macro) => 1,
        Some(Method) => 2,
        Some(Module | Const | Var) => 3,
        Some(Impl) | None => 4,
    }
}

/// How a definition matches an identifier: 3 its parent is the identifier's qualifier;
/// 2 its name key is the identifier's, and its name (cut as for the key) is the
/// identifier's name case and all; 1 the key alone (or a qualifier its parent does not
/// match).
pub fn match_level(meta: &ChunkMeta, ident: &Identifier) -> u64 {
    let Some(name) = meta.name() else { return 0 };
    if let Some(q) = &ident.qualifier {
        let parent_key = meta.parent().and_then(|p| name_key(p, None));
        return if parent_key.as_deref() == Some(q.as_str()) {
            3
        } else {
            1
        };
    }
    let exact = name_head(name, meta.symbol_kind) == ident.name;
    if exact { 2 } else { 1 }
}

/// The score a definition is ordered by: match level, then the role's place in
/// [`Role::ALL`] (source first), then [`kind_rank`]; larger is better.
fn definition_score(level: u64, role: Role, kind: Option<SymbolKind>) -> u64 {
    let role_place = Role::ALL.iter().position(|r| *r == role).unwrap_or(7) as u64;
    level << 16 | (7 - role_place) << 8 | (4 - kind_rank(kind))
}

/// The live chunks passing `filter` that define one of `idents`, best first (by
/// [`definition_score`], then chunk id), at most `k`.
pub(crate) fn definitions(
    snap: &Snapshot,
    idents: &[Identifier],
    k: usize,
    filter: &Filter,
) -> Vec<Scored<u64>> {
    let mut best: std::collections::HashMap<At, u64> = std::collections::HashMap::new();
    for ident in idents {
        let term = format!("{DEFINITION_PREFIX}{}", ident.key);
        for (s, live) in snap.segments.iter().enumerate() {
            let Some(postings) = live.segment.postings(&term) else {
                continue;
            };
            for &[i, _] in postings {
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
                let score =
                    definition_score(match_level(&meta, ident), meta.doc.role, meta.symbol_kind);
                let at = At::new(s, i);
                let e = best.entry(at).or_insert(score);
                *e = (*e).max(score);
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
