//! What a command answers: one typed report, printed as JSON with `--json` and as text
//! for people otherwise, both from the same fields. Every `--json` output of `cfs` is a
//! [`Report`]'s (or a list of them), so the fields docs/cli.md documents are the types'
//! fields; a test holds the two together.

use std::io::Write;
use std::process::ExitCode;

use schemars::JsonSchema;
use serde::Serialize;

/// A command's answer.
pub trait Report: Serialize {
    /// The text form, for people.
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()>;

    /// Whether the answer is a success (exit 0); a report that finds a problem (damage,
    /// an invalid proof, an index that disagrees) says no, and the command exits 1.
    fn ok(&self) -> bool {
        true
    }
}

/// Prints `report` on stdout (JSON with `json`, else its text form) and gives the exit
/// code it calls for.
pub fn emit(report: &impl Report, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        print_json(report)?;
    } else {
        let mut out = Printable::new(std::io::stdout().lock());
        report.write_text(&mut out)?;
        out.flush()?;
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Prints `value` on stdout as indented JSON, its keys in alphabetical order at every
/// level (the order of every JSON document cfs prints, whatever the fields' order in
/// the type).
pub fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &serde_json::to_value(value)?)?;
    writeln!(out)?;
    Ok(())
}

/// `value` as one line of JSON (keys in alphabetical order, as [`print_json`]), for
/// outputs of one document per line.
pub fn json_line(value: &impl Serialize) -> serde_json::Result<String> {
    Ok(serde_json::to_value(value)?.to_string())
}

/// How the text reports name the kernels' path: ` (integer kernels: avx2)`, or nothing
/// where minilm-int did not run.
pub fn kernels_note(simd: Option<&str>) -> String {
    simd.map_or(String::new(), |s| format!(" (integer kernels: {s})"))
}

/// A code chunk's symbol in JSON, one shape for every command (`chunks`, `show`): the
/// qualified name is beside it as `symbol` (`parent::name`, as search results give it).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SymbolInfo {
    pub kind: &'static str,
    pub name: String,
    pub parent: Option<String>,
    pub signature: String,
    pub window: Option<WindowInfo>,
}

/// Which window of a split symbol a chunk is.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WindowInfo {
    pub index: u32,
    pub count: u32,
}

/// The JSON fields of a code chunk's kind: its language, its symbol's qualified name
/// and the symbol's details (both null for code outside any symbol).
#[derive(Debug, Serialize, JsonSchema)]
pub struct CodeFields {
    pub language: String,
    pub symbol: Option<String>,
    pub symbol_info: Option<SymbolInfo>,
}

impl CodeFields {
    /// The fields of `kind`, when it is code.
    pub fn of(kind: &cfs_core::ChunkKind) -> Option<Self> {
        let cfs_core::ChunkKind::Code { language, symbol } = kind else {
            return None;
        };
        let info = symbol.as_ref().map(|s| SymbolInfo {
            kind: s.kind.name(),
            name: s.name.clone(),
            parent: s.parent.clone(),
            signature: s.signature.clone(),
            window: s.window.map(|w| WindowInfo {
                index: w.index,
                count: w.count,
            }),
        });
        Some(Self {
            language: language.clone(),
            symbol: symbol.as_ref().map(|s| s.qualified_name()),
            symbol_info: info,
        })
    }
}

/// Text written with its control characters shown, not obeyed: paths and chunk texts
/// come from the files indexed, and an escape sequence in one could move the cursor,
/// recolour or retitle the terminal that prints it. The C0 controls but tab and
/// newline, DEL and the C1 controls (U+0080 to U+009F, which some terminals obey) are
/// written as `\u{..}`; every other byte as it is.
pub struct Printable<W: Write> {
    inner: W,
    /// The last byte given was 0xC2, the first of a C1 control's two in UTF-8.
    pending: bool,
}

impl<W: Write> Printable<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            pending: false,
        }
    }
}

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut out = Vec::with_capacity(buf.len());
        let shown = |out: &mut Vec<u8>, b: u8| out.extend(format!("\\u{{{b:x}}}").bytes());
        for &b in buf {
            if std::mem::take(&mut self.pending) {
                if (0x80..=0x9f).contains(&b) {
                    shown(&mut out, b);
                    continue;
                }
                out.push(0xc2);
            }
            match b {
                0xc2 => self.pending = true,
                b'\t' | b'\n' => out.push(b),
                0x00..=0x1f | 0x7f => shown(&mut out, b),
                _ => out.push(b),
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if std::mem::take(&mut self.pending) {
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Escapes, carriage returns and C1 controls are shown; tabs, newlines and every
    /// other character (two-byte ones beginning 0xC2 among them) pass, also when a
    /// character is split between two writes.
    #[test]
    fn control_characters_are_shown_not_obeyed() {
        let text = "a\u{1b}[31mred\r\tb\nc\u{9b}2J \u{a0}\u{bf}\u{7f}\u{0}é";
        let whole = {
            let mut p = Printable::new(Vec::new());
            p.write_all(text.as_bytes()).unwrap();
            p.flush().unwrap();
            String::from_utf8(p.inner).unwrap()
        };
        assert_eq!(
            whole,
            "a\\u{1b}[31mred\\u{d}\tb\nc\\u{9b}2J \u{a0}\u{bf}\\u{7f}\\u{0}é"
        );
        for cut in 0..text.len() {
            let mut p = Printable::new(Vec::new());
            p.write_all(&text.as_bytes()[..cut]).unwrap();
            p.write_all(&text.as_bytes()[cut..]).unwrap();
            p.flush().unwrap();
            assert_eq!(String::from_utf8(p.inner).unwrap(), whole, "cut at {cut}");
        }
    }
}
