//! The BERT tokenizer of all-MiniLM-L6-v2: basic tokenisation (cleaning, CJK spacing,
//! lower-casing, accent stripping, punctuation splitting) and greedy longest-match
//! WordPiece over the model's vocabulary. `docs/spec.md` ("minilm-int: tokens") is
//! normative; the reference tokenizer of the model gives the same ids on every text of
//! the test suite.

use std::cell::RefCell;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// Most tokens of one sequence, `[CLS]` and `[SEP]` included.
pub const MAX_TOKENS: usize = 128;
/// A word of more characters than this is one `[UNK]`.
pub const MAX_WORD_CHARS: usize = 100;

/// The vocabulary: token text to id, and the ids of the special tokens.
#[derive(Debug)]
pub struct Vocab {
    ids: TokenTable,
    cls: u32,
    sep: u32,
    unk: u32,
}

impl Vocab {
    /// The vocabulary of newline-separated tokens (the id of a token is its line number).
    /// `None` if a token is repeated or a special token is missing.
    pub fn parse(text: &str) -> Option<Self> {
        let ids = TokenTable::new(text)?;
        let get = |t: &str| ids.get(t);
        Some(Self {
            cls: get("[CLS]")?,
            sep: get("[SEP]")?,
            unk: get("[UNK]")?,
            ids,
        })
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True if there is no token (never, for a parsed vocabulary).
    pub fn is_empty(&self) -> bool {
        self.ids.len() == 0
    }

    /// The token ids of `text`: `[CLS]`, at most [`MAX_TOKENS`] - 2 word pieces, `[SEP]`.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(MAX_TOKENS + MAX_WORD_CHARS);
        self.tokenize_into(text, &mut ids);
        ids
    }

    /// [`Vocab::tokenize`] into `ids` (cleared first), with this thread's buffers: no
    /// allocation once they and `ids` have grown to the texts' sizes.
    pub fn tokenize_into(&self, text: &str, ids: &mut Vec<u32>) {
        ids.clear();
        ids.push(self.cls);
        BUFFERS.with_borrow_mut(|b| {
            let Buffers { parts, piece } = b;
            for_each_part(text, parts, |part| {
                self.wordpiece(part, piece, ids);
                ids.len() < MAX_TOKENS - 1
            });
        });
        ids.truncate(MAX_TOKENS - 1);
        ids.push(self.sep);
    }

    /// The word pieces of all of `text`, without `[CLS]`, `[SEP]` or a limit.
    pub fn word_pieces(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        let (mut parts, mut piece) = (Parts::default(), String::new());
        for_each_part(text, &mut parts, |part| {
            self.wordpiece(part, &mut piece, &mut ids);
            true
        });
        ids
    }

    /// `ids` cut into sequences of at most [`MAX_TOKENS`] - 2 pieces, each between
    /// `[CLS]` and `[SEP]` (one empty sequence for no ids).
    pub fn sequences(&self, ids: &[u32]) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = ids
            .chunks(MAX_TOKENS - 2)
            .map(|run| {
                let mut seq = Vec::with_capacity(run.len() + 2);
                seq.push(self.cls);
                seq.extend_from_slice(run);
                seq.push(self.sep);
                seq
            })
            .collect();
        if out.is_empty() {
            out.push(vec![self.cls, self.sep]);
        }
        out
    }

    /// Greedy longest-match-first WordPiece of one word into `out`; a word that cannot
    /// be covered is one `[UNK]`.
    fn wordpiece(&self, word: &str, piece: &mut String, out: &mut Vec<u32>) {
        if word.chars().count() > MAX_WORD_CHARS {
            out.push(self.unk);
            return;
        }
        let first = out.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[start..end]);
                if let Some(id) = self.ids.get(piece) {
                    found = Some(id);
                    break;
                }
                end = prev_char_boundary(word, end);
            }
            let Some(id) = found else {
                out.truncate(first);
                out.push(self.unk);
                return;
            };
            out.push(id);
            start = end;
        }
    }
}

/// Token texts to ids in three flat arrays instead of a string per token (a third of
/// the model's memory went to a map of 30,522 strings): the texts end to end, where each
/// ends, and an open-addressing table of ids by the texts' hash (the hash embedder's
/// FNV-1a with a final mix, whose low bits pick the slot).
#[derive(Debug)]
struct TokenTable {
    text: String,
    /// `ends[i]`: where token `i`'s text ends in `text` (it starts where `i - 1`'s ends).
    ends: Vec<u32>,
    /// Token ids, or [`TokenTable::EMPTY`]; a power of two at least twice the tokens.
    slots: Vec<u32>,
}

impl TokenTable {
    const EMPTY: u32 = u32::MAX;

    /// The table of newline-separated tokens; `None` if one is repeated.
    fn new(text: &str) -> Option<Self> {
        let count = text.split('\n').count();
        let mut table = Self {
            text: String::with_capacity(text.len()),
            ends: Vec::with_capacity(count),
            slots: vec![Self::EMPTY; (2 * count).next_power_of_two()],
        };
        for token in text.split('\n') {
            let id = u32::try_from(table.ends.len())
                .ok()
                .filter(|&id| id != Self::EMPTY)?;
            let slot = match table.find(token) {
                Ok(_) => return None,
                Err(slot) => slot,
            };
            table.text.push_str(token);
            table.ends.push(u32::try_from(table.text.len()).ok()?);
            table.slots[slot] = id;
        }
        Some(table)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, token: &str) -> Option<u32> {
        self.find(token).ok()
    }

    /// The id of `token`, or the empty slot where it would go.
    fn find(&self, token: &str) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut slot = crate::embed::feature_hash(0, token) as usize & mask;
        loop {
            let id = self.slots[slot];
            if id == Self::EMPTY {
                return Err(slot);
            }
            if self.token(id) == token {
                return Ok(id);
            }
            slot = (slot + 1) & mask;
        }
    }

    fn token(&self, id: u32) -> &str {
        let id = id as usize;
        let start = if id == 0 {
            0
        } else {
            self.ends[id - 1] as usize
        };
        &self.text[start..self.ends[id] as usize]
    }
}

/// The byte index of the char boundary before `i` (`i` > 0, on a boundary).
fn prev_char_boundary(s: &str, i: usize) -> usize {
    let mut j = i - 1;
    while !s.is_char_boundary(j) {
        j -= 1;
    }
    j
}

thread_local! {
    /// Each thread's tokenizer buffers, kept from one text to the next.
    static BUFFERS: RefCell<Buffers> = RefCell::default();
}

#[derive(Default)]
struct Buffers {
    parts: Parts,
    /// The word piece being looked up.
    piece: String,
}

/// The buffers of [`for_each_part`]: the cleaned text and the word being normalised.
#[derive(Default)]
struct Parts {
    cleaned: String,
    word: String,
}

/// Drops NUL, U+FFFD and control characters, maps white space to ' ', and puts spaces
/// around CJK ideographs; into `out`, cleared first.
fn clean(text: &str, out: &mut String) {
    out.clear();
    out.reserve(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            out.push(' ');
        } else if is_cjk(c) {
            out.push(' ');
            out.push(c);
            out.push(' ');
        } else {
            out.push(c);
        }
    }
}

/// The parts of `text` BERT's basic tokenizer gives, in order, to `f` until it returns
/// false: the cleaned text's words, each lower-cased, in NFD without non-spacing marks,
/// every punctuation character a part of its own. In the two buffers of `parts`.
fn for_each_part(text: &str, parts: &mut Parts, mut f: impl FnMut(&str) -> bool) {
    let Parts { cleaned, word } = parts;
    clean(text, cleaned);
    for raw in cleaned.split(' ').filter(|w| !w.is_empty()) {
        word.clear();
        normalize_word(raw, word);
        let mut start = 0;
        for (i, c) in word.char_indices() {
            if !is_punctuation(c) {
                continue;
            }
            let end = i + c.len_utf8();
            if (start < i && !f(&word[start..i])) || !f(&word[i..end]) {
                return;
            }
            start = end;
        }
        if start < word.len() && !f(&word[start..]) {
            return;
        }
    }
}

/// `word` lower-cased (full Unicode mapping), in NFD, with non-spacing marks removed,
/// appended to `out`. `str::to_lowercase` differs from lower-casing each character only
/// for a capital sigma (final or not by its neighbours): such words take that path.
fn normalize_word(word: &str, out: &mut String) {
    let keep = |c: &char| get_general_category(*c) != GeneralCategory::NonspacingMark;
    if word.contains('\u{3a3}') {
        out.extend(word.to_lowercase().nfd().filter(keep));
    } else {
        out.extend(word.chars().flat_map(char::to_lowercase).nfd().filter(keep));
    }
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
        || get_general_category(c) == GeneralCategory::SpaceSeparator
}

fn is_control(c: char) -> bool {
    use GeneralCategory as G;
    !matches!(c, '\t' | '\n' | '\r')
        && matches!(
            get_general_category(c),
            G::Control | G::Format | G::Surrogate | G::PrivateUse | G::Unassigned
        )
}

fn is_punctuation(c: char) -> bool {
    use GeneralCategory as G;
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            G::ConnectorPunctuation
                | G::DashPunctuation
                | G::OpenPunctuation
                | G::ClosePunctuation
                | G::InitialPunctuation
                | G::FinalPunctuation
                | G::OtherPunctuation
        )
}

fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocab {
        let tokens = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "hello", ",", "!", "cafe",
            "東",
        ];
        Vocab::parse(&tokens.join("\n")).expect("vocab")
    }

    #[test]
    fn wordpiece_longest_match_and_unknown() {
        let v = vocab();
        assert_eq!(v.tokenize("unaffable"), [2, 4, 5, 6, 3]);
        assert_eq!(v.tokenize("Hello, CAFÉ!"), [2, 7, 8, 10, 9, 3]);
        assert_eq!(v.tokenize("unx hello"), [2, 1, 7, 3]);
        assert_eq!(v.tokenize("東京"), [2, 11, 1, 3]);
        assert_eq!(v.tokenize(""), [2, 3]);
        assert_eq!(v.tokenize("\0\u{fffd}\u{200b}"), [2, 3]);
    }

    #[test]
    fn long_texts_are_cut_to_max_tokens() {
        let v = vocab();
        let ids = v.tokenize(&"hello ".repeat(1000));
        assert_eq!(ids.len(), MAX_TOKENS);
        assert_eq!(ids.last(), Some(&3));
        let long_word = "a".repeat(MAX_WORD_CHARS + 1);
        assert_eq!(v.tokenize(&long_word), [2, 1, 3]);
    }

    /// The tokenizer as first written (a string per word and per part): the reference
    /// the allocation-free one is held to.
    fn reference_parts(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cleaned = String::new();
        clean(text, &mut cleaned);
        for word in cleaned.split(' ').filter(|w| !w.is_empty()) {
            let word: String = word
                .to_lowercase()
                .nfd()
                .filter(|&c| get_general_category(c) != GeneralCategory::NonspacingMark)
                .collect();
            let mut current = String::new();
            for c in word.chars() {
                if is_punctuation(c) {
                    if !current.is_empty() {
                        out.push(std::mem::take(&mut current));
                    }
                    out.push(c.to_string());
                } else {
                    current.push(c);
                }
            }
            if !current.is_empty() {
                out.push(current);
            }
        }
        out
    }

    #[test]
    fn words_split_as_the_reference_splits_them() {
        let texts = [
            "Hello, CAFÉ! naïve résumé",
            "ΟΔΥΣΣΕΥΣ Σ σΣ ΣΑΣ. ΑΣ, ΣΑ",
            "İstanbul ǅemal Ⅻ ﬁ ß ẞ",
            "東京タワー(とうきょう) 한국어 — «quotes» ‘x’",
            "fn main() { let x = a::<b>(c)?; } // ~!@#$%^&*",
            "\t tabs\u{a0}nbsp\u{2003}em\u{200b}zw \u{0301}lonely mark",
            "",
            "   ",
        ];
        let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/embed.rs"))
            .expect("source");
        let mut buffers = Parts::default();
        for text in texts.iter().copied().chain([source.as_str()]) {
            // Buffers kept from the text before, as the tokenizer keeps them.
            let mut parts = Vec::new();
            for_each_part(text, &mut buffers, |p| {
                parts.push(p.to_owned());
                true
            });
            assert_eq!(parts, reference_parts(text), "{text:?}");
        }
    }

    #[test]
    fn duplicate_or_incomplete_vocabularies_are_refused() {
        assert!(Vocab::parse("[CLS]\n[SEP]\n[UNK]\n[UNK]").is_none());
        assert!(Vocab::parse("[CLS]\n[SEP]").is_none());
    }
}
