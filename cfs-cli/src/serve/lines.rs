//! The lines between the client and the MCP library. Each message the client sends is
//! read whole and looked at before the library sees it, so that what the library would
//! drop without an answer (a line that is not JSON, a batch, a line too long, a last
//! line without its newline) gets a JSON-RPC error, and what it would take for the end
//! of the session (a notification or response before the session began) is set aside
//! with a note on standard error. Everything else passes unchanged; the library's
//! answers and these errors reach standard output a whole line at a time.

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

/// The longest message read: a longer one is answered with an error and skipped.
pub const MAX_LINE: usize = 16 << 20;

/// What becomes of one line the client sent.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Given to the library as it is.
    Pass,
    /// Answered here with this JSON-RPC error; the library never sees it.
    Answer(Value),
    /// Set aside, with this note for standard error (empty: nothing to say).
    Drop(String),
}

/// Whether the session began (a request other than `ping` reached the library), after
/// which notifications and responses are the library's to judge; and the server's tools.
#[derive(Debug)]
pub struct Session {
    began: bool,
    tools: Vec<String>,
}

impl Session {
    /// A session of a server of `tools`.
    pub fn new(tools: Vec<String>) -> Self {
        Self {
            began: false,
            tools,
        }
    }

    /// The verdict on `line` (without its newline).
    pub fn judge(&mut self, line: &[u8]) -> Verdict {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Verdict::Drop(String::new());
        }
        let message: Value = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(e) => {
                return Verdict::Answer(error(&Value::Null, -32700, &format!("parse error: {e}")));
            }
        };
        let Value::Object(fields) = &message else {
            let what = match message.is_array() {
                true => "batches are not supported: send one message a line",
                false => "a message is a JSON object",
            };
            return Verdict::Answer(error(&Value::Null, -32600, what));
        };
        let (id, method) = (fields.get("id"), fields.get("method"));
        let Some(id) = id.filter(|_| method.is_some()) else {
            // A notification, or a response to a request of the server's.
            return match self.began {
                true => Verdict::Pass,
                false => Verdict::Drop(format!(
                    "cfs: ignored a message before the session began (send initialize first): {}",
                    clipped(line)
                )),
            };
        };
        if let Some(reason) = bad_request(id, method, fields.get("params"), &self.tools) {
            return Verdict::Answer(error(id, reason.0, &reason.1));
        }
        self.began |= method.and_then(Value::as_str) != Some("ping");
        Verdict::Pass
    }
}

/// Why a request cannot be served as it is (the JSON-RPC code and a sentence), for the
/// faults the library would answer without the request's id or with the wrong code.
fn bad_request(
    id: &Value,
    method: Option<&Value>,
    params: Option<&Value>,
    tools: &[String],
) -> Option<(i64, String)> {
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return Some((-32600, "an id is a string or an integer".into()));
    }
    let Some(method) = method.and_then(Value::as_str) else {
        return Some((-32600, "a method is a string".into()));
    };
    match params {
        Some(p) if !p.is_object() && !p.is_null() => {
            Some((-32602, format!("{method}: params is an object")))
        }
        _ if method != "tools/call" => None,
        _ => {
            let params = params.and_then(Value::as_object);
            let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
            let arguments = params.and_then(|p| p.get("arguments"));
            match (name, arguments) {
                (None, _) => Some((-32602, "tools/call: params.name names the tool".into())),
                (Some(name), _) if !tools.is_empty() && !tools.iter().any(|t| t == name) => {
                    let known = tools.join(", ");
                    Some((
                        -32602,
                        format!("tools/call: no tool {name:?}; the tools are {known}"),
                    ))
                }
                (_, Some(a)) if !a.is_object() && !a.is_null() => {
                    Some((-32602, "tools/call: params.arguments is an object".into()))
                }
                _ => None,
            }
        }
    }
}

/// A JSON-RPC error answer.
fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The start of a line, for a note.
fn clipped(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]);
    text.chars().filter(|c| !c.is_control()).collect()
}

/// One line of `input`, at most [`MAX_LINE`] bytes kept (`None` at the end of input);
/// a longer one is read to its end and given as `Err` with its length.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<Result<(), usize>>> {
    line.clear();
    let mut length = 0;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok((length > 0).then_some(ok_or_long(length)));
        }
        let (part, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], at + 1),
            None => (buf, buf.len()),
        };
        length += part.len();
        if length <= MAX_LINE {
            line.extend_from_slice(part);
        }
        let ended = done > part.len();
        input.consume(done);
        if ended {
            return Ok(Some(ok_or_long(length)));
        }
    }
}

fn ok_or_long(length: usize) -> Result<(), usize> {
    match length <= MAX_LINE {
        true => Ok(()),
        false => Err(length),
    }
}

/// Reads the client's lines from `input` and gives those that pass to `library`,
/// sending the answers made here to `answers`; ends at the end of input, which the
/// library then sees.
pub async fn judge_input<R: AsyncBufRead + Unpin>(
    mut input: R,
    mut session: Session,
    mut library: DuplexStream,
    answers: mpsc::UnboundedSender<Value>,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    while let Some(read) = read_line(&mut input, &mut line).await? {
        let verdict = match read {
            Ok(()) => session.judge(&line),
            Err(length) => {
                let what = format!("a message of {length} bytes, more than {MAX_LINE}");
                Verdict::Answer(error(&Value::Null, -32600, &what))
            }
        };
        match verdict {
            Verdict::Pass => {
                line.push(b'\n');
                library.write_all(&line).await?;
            }
            Verdict::Answer(answer) => drop(answers.send(answer)),
            Verdict::Drop(note) if note.is_empty() => {}
            Verdict::Drop(note) => eprintln!("{note}"),
        }
    }
    library.shutdown().await
}

/// Writes the library's lines from `library` and the answers made here to `output`, a
/// whole line at a time, until both have ended.
pub async fn write_output<W: AsyncWrite + Unpin>(
    library: DuplexStream,
    mut answers: mpsc::UnboundedReceiver<Value>,
    mut output: W,
) -> std::io::Result<()> {
    let mut lines = tokio::io::BufReader::new(library).lines();
    let (mut library_open, mut answers_open) = (true, true);
    while library_open || answers_open {
        let line = tokio::select! {
            line = lines.next_line(), if library_open => match line? {
                Some(line) => line,
                None => {
                    library_open = false;
                    continue;
                }
            },
            answer = answers.recv(), if answers_open => match answer {
                Some(answer) => answer.to_string(),
                None => {
                    answers_open = false;
                    continue;
                }
            },
        };
        output.write_all(format!("{line}\n").as_bytes()).await?;
        output.flush().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(v: &Verdict) -> Option<(i64, Value)> {
        match v {
            Verdict::Answer(a) => Some((a["error"]["code"].as_i64()?, a["id"].clone())),
            _ => None,
        }
    }

    /// What the library would drop unanswered gets an error; what it would take for the
    /// end before the session began is set aside; what it serves passes.
    #[test]
    fn lines_are_judged_before_the_library_sees_them() {
        let mut s = Session::new(vec!["search".into(), "status".into()]);
        let judge = |s: &mut Session, line: &str| s.judge(line.as_bytes());
        assert_eq!(
            code(&judge(&mut s, "not json")),
            Some((-32700, Value::Null))
        );
        assert_eq!(
            code(&judge(&mut s, r#"[{"jsonrpc":"2.0"}]"#)),
            Some((-32600, Value::Null))
        );
        assert_eq!(code(&judge(&mut s, "5")), Some((-32600, Value::Null)));
        assert_eq!(judge(&mut s, "  "), Verdict::Drop(String::new()));
        let early = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(
            matches!(judge(&mut s, early), Verdict::Drop(n) if n.contains("before the session"))
        );
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(judge(&mut s, ping), Verdict::Pass);
        assert!(
            matches!(judge(&mut s, early), Verdict::Drop(_)),
            "ping does not begin it"
        );
        let bad = r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":5}"#;
        assert_eq!(code(&judge(&mut s, bad)), Some((-32602, json!("a"))));
        let init = r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#;
        assert_eq!(judge(&mut s, init), Verdict::Pass);
        assert_eq!(judge(&mut s, early), Verdict::Pass);
        for (call, id) in [
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#,
                json!(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}"#,
                json!(4),
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":[1]}}"#,
                json!(5),
            ),
        ] {
            assert_eq!(code(&judge(&mut s, call)), Some((-32602, id)), "{call}");
        }
        let unknown = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"grep"}}"#;
        let named = judge(&mut s, unknown);
        assert_eq!(code(&named), Some((-32602, json!(7))));
        let Verdict::Answer(a) = named else {
            unreachable!()
        };
        let message = a["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("\"grep\"; the tools are search, status"),
            "{message}"
        );
        let good = r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}"#;
        assert_eq!(judge(&mut s, good), Verdict::Pass);
        let float_id = r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#;
        assert_eq!(code(&judge(&mut s, float_id)), Some((-32600, json!(1.5))));
    }

    /// Lines are cut at newlines across reads; the last one without its newline is a
    /// line; one past the limit is read through and reported by its length.
    #[test]
    fn lines_are_read_whole_and_bounded() {
        let long = "x".repeat(MAX_LINE + 10);
        let input = format!("a\n\nb{long}\nc");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = runtime.block_on(async {
            let mut reader = tokio::io::BufReader::with_capacity(7, input.as_bytes());
            let mut line = Vec::new();
            let mut got = Vec::new();
            while let Some(read) = read_line(&mut reader, &mut line).await.unwrap() {
                got.push((read, String::from_utf8(line.clone()).unwrap().len().min(3)));
            }
            got
        });
        assert_eq!(
            got,
            [
                (Ok(()), 1),
                (Ok(()), 0),
                (Err(MAX_LINE + 11), 3),
                (Ok(()), 1)
            ]
        );
    }
}
