//! Bytes to canonical text.
//!
//! In order: a byte-order mark decides (UTF-8, UTF-16 LE or BE); else valid UTF-8 is
//! taken as it is; else UTF-16 without a BOM is recognised by its zero bytes; else the
//! charset is guessed by chardetng and decoded by encoding_rs. The canonical text then has
//! every CRLF and lone CR turned into LF, and no BOM. Chunk offsets refer to this text.

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE};

/// A decoded file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The canonical text.
    pub text: String,
    /// Name of the encoding the bytes were read as (e.g. `UTF-8`, `windows-1252`).
    pub encoding: &'static str,
}

/// Why bytes could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeFailure(pub String);

/// Decodes `bytes` into canonical text.
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeFailure> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return match std::str::from_utf8(rest) {
            Ok(text) => Ok(canonical(text, "UTF-8")),
            Err(e) => Err(DecodeFailure(format!(
                "UTF-8 byte-order mark, but invalid UTF-8 at byte {}",
                e.valid_up_to() + 3
            ))),
        };
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, UTF_16LE);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, UTF_16BE);
    }
    // One scan for both bytes that ask for a closer look (most files have neither):
    // NUL (binary, or UTF-16) and CR (line ends to canonicalize).
    let plain = memchr::memchr2(0, b'\r', bytes).is_none();
    if !plain && memchr::memchr(0, bytes).is_some() {
        // ASCII-range UTF-16 is also valid UTF-8 (full of NULs): decide it first.
        return match utf16_without_bom(bytes) {
            Some(encoding) => utf16(bytes, encoding),
            None => Err(DecodeFailure("binary: contains NUL bytes".into())),
        };
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        if plain {
            // Canonical already: no CR, and a BOM was taken care of above.
            return Ok(Decoded {
                text: text.to_owned(),
                encoding: "UTF-8",
            });
        }
        return Ok(canonical(text, "UTF-8"));
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    let encoding = detector.guess(None, chardetng::Utf8Detection::Deny);
    let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
    if had_errors {
        return Err(DecodeFailure(format!(
            "not valid UTF-8, and not valid {} either",
            encoding.name()
        )));
    }
    Ok(canonical(&text, encoding.name()))
}

fn utf16(bytes: &[u8], encoding: &'static Encoding) -> Result<Decoded, DecodeFailure> {
    if !bytes.len().is_multiple_of(2) {
        return Err(DecodeFailure(format!(
            "{} with an odd number of bytes",
            encoding.name()
        )));
    }
    let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
    if had_errors {
        return Err(DecodeFailure(format!("malformed {}", encoding.name())));
    }
    if text.contains('\0') {
        return Err(DecodeFailure(format!(
            "binary: NUL characters in {}",
            encoding.name()
        )));
    }
    Ok(canonical(&text, encoding.name()))
}

/// UTF-16 without a BOM: even length, and in the first 4 KiB at least 70% of the bytes
/// at one parity are zero and at most 5% at the other (ASCII-range text in UTF-16).
pub(crate) fn utf16_without_bom(bytes: &[u8]) -> Option<&'static Encoding> {
    if bytes.len() < 4 || !bytes.len().is_multiple_of(2) {
        return None;
    }
    let sample = &bytes[..bytes.len().min(4096)];
    let pairs = sample.len() / 2;
    let zero_even = sample.iter().step_by(2).filter(|b| **b == 0).count();
    let zero_odd = sample
        .iter()
        .skip(1)
        .step_by(2)
        .filter(|b| **b == 0)
        .count();
    let mostly = |n: usize| n * 10 >= pairs * 7;
    let rarely = |n: usize| n * 20 <= pairs;
    if mostly(zero_odd) && rarely(zero_even) {
        Some(UTF_16LE)
    } else if mostly(zero_even) && rarely(zero_odd) {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// CRLF and CR to LF, leading U+FEFF dropped.
fn canonical(text: &str, encoding: &'static str) -> Decoded {
    Decoded {
        text: canonicalize(text),
        encoding,
    }
}

/// The canonical form of decoded text: leading U+FEFF dropped, CRLF and CR to LF.
pub(crate) fn canonicalize(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boms_and_line_endings() {
        assert_eq!(decode(b"\xEF\xBB\xBFa\r\nb\rc").unwrap().text, "a\nb\nc");
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("hé\r\n".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(
            decode(&le).unwrap(),
            Decoded {
                text: "hé\n".into(),
                encoding: "UTF-16LE"
            }
        );
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("hé".encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode(&be).unwrap().text, "hé");
    }

    #[test]
    fn utf16_without_bom_is_recognised() {
        let text = "fn main() { println!(\"hello\"); }\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(decode(&le).unwrap().text, text);
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(decode(&be).unwrap().text, text);
    }

    #[test]
    fn legacy_charsets_are_detected() {
        // "café crème" in windows-1252.
        let bytes = b"caf\xe9 cr\xe8me, d\xe9j\xe0 vu, na\xefve fa\xe7ade \xe0 la fran\xe7aise";
        let decoded = decode(bytes).unwrap();
        assert!(decoded.text.starts_with("café crème"), "{decoded:?}");
    }

    #[test]
    fn binary_and_broken_input_fail() {
        assert!(decode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").is_err());
        assert!(decode(b"\xEF\xBB\xBF\xff").is_err());
        assert!(decode(b"\xFF\xFEa").is_err());
        assert_eq!(decode(b"").unwrap().text, "");
    }
}
