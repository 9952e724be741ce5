//! The terms a chunk is posted under for the names it defines: its own symbol's name
//! behind [`DEFINITION_PREFIX`], and the names its lines declare behind
//! [`DECLARED_PREFIX`], each by the key a name is looked up by. Written when a segment
//! is built; `symbols.rs` looks them up at query time.

use cfs_core::SymbolKind;
use cfs_ingest::is_word_char;

use super::declared::for_each_declared;
use super::meta::ChunkMeta;

/// The first character of every definition term: a control character, which the
/// tokenizer never puts in a token, so definition terms and text tokens never meet.
pub const DEFINITION_PREFIX: char = '\u{1}';

/// The head of a name, as a name is looked up: for an `impl` named `<trait> for
/// <type>`, the type; then the name cut at its first `<`, `(`, `[` or whitespace; the
/// segment after its last `::`, `.` or `\`; past any leading `$` (part of a name in
/// JavaScript, `$constructor`, and a query's pieces are trimmed of it), its leading word
/// characters. Case kept.
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
    let name = name[last..].trim_start_matches('$');
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
