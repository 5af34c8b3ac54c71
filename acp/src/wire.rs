//! JSON-RPC 2.0 as ACP frames it: one message per line of the agent's stdout
//! and stdin. Reads a line with a bound on what is kept, tells a message's
//! kind apart (an answer to us, a request to us, a notification), and writes
//! the client's own messages.
//!
//! Knows no method and keeps no state. An id is kept as the JSON the agent
//! sent, whatever its type: agents number their requests from 0, and 0 is an
//! id like any other.

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line kept (a reply chunk with a pasted file can be long); the
/// rest of a longer line is read and dropped, and the line is malformed.
pub const MAX_LINE: usize = 8 << 20;

/// One line the agent wrote, as JSON-RPC sees it.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// The answer to one of our requests (our ids are integers).
    Answer {
        id: u64,
        outcome: Result<Value, RpcError>,
    },
    /// A request the agent makes of us: it waits for an answer with `id`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// Not JSON-RPC at all: the agent broke the protocol.
    Malformed(String),
    /// A blank line, which is no message.
    Blank,
}

/// An error the agent answered.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// JSON-RPC's "method not found", our answer to what we do not offer.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// ACP's "authentication required".
pub const AUTH_REQUIRED: i64 = -32000;

/// What one line says.
pub fn classify(line: &[u8]) -> Incoming {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return Incoming::Blank;
    }
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) else {
        return Incoming::Malformed(head(text));
    };
    let method = m.get("method").and_then(Value::as_str).map(str::to_string);
    let params = m.get("params").cloned().unwrap_or(Value::Null);
    match (method, m.get("id")) {
        (Some(method), Some(id)) if !id.is_null() => Incoming::Request {
            id: id.clone(),
            method,
            params,
        },
        (Some(method), _) => Incoming::Notification { method, params },
        (None, Some(id)) => {
            let Some(id) = id.as_u64() else {
                return Incoming::Malformed(head(text));
            };
            let outcome = match (m.get("result"), m.get("error")) {
                (_, Some(e)) if !e.is_null() => Err(RpcError {
                    code: e["code"].as_i64().unwrap_or_default(),
                    message: e["message"].as_str().unwrap_or_default().to_string(),
                    data: e.get("data").cloned(),
                }),
                (Some(r), _) => Ok(r.clone()),
                _ => return Incoming::Malformed(head(text)),
            };
            Incoming::Answer { id, outcome }
        }
        (None, None) => Incoming::Malformed(head(text)),
    }
}

/// The first 200 characters of a line, for the words of a failure.
fn head(text: &str) -> String {
    let mut h: String = text.chars().take(200).collect();
    if h.len() < text.len() {
        h.push('…');
    }
    h
}

pub fn request(id: u64, method: &str, params: impl serde::Serialize) -> Vec<u8> {
    line(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

pub fn notification(method: &str, params: impl serde::Serialize) -> Vec<u8> {
    line(json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

pub fn answer(id: &Value, result: impl serde::Serialize) -> Vec<u8> {
    line(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

pub fn error(id: &Value, code: i64, message: &str) -> Vec<u8> {
    line(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

fn line(v: Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&v).expect("a JSON value always serialises");
    bytes.push(b'\n');
    bytes
}

/// Reads one line into `line` (without its newline), keeping at most
/// `MAX_LINE` bytes; `None` at the end of the stream, `Some(true)` when the
/// line was longer than that.
pub async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, line: &mut Vec<u8>) -> Option<bool> {
    line.clear();
    let mut over = false;
    let mut any = false;
    loop {
        let buf = match r.fill_buf().await {
            Ok(b) => b,
            Err(_) => return any.then_some(over),
        };
        if buf.is_empty() {
            return any.then_some(over);
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = MAX_LINE.saturating_sub(line.len());
        over |= chunk.len() > room;
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            return Some(over);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_of_zero_is_a_request_and_our_answers_are_matched_by_number() {
        let asked = classify(
            br#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}"#,
        );
        assert!(matches!(asked, Incoming::Request { ref id, .. } if *id == json!(0)));
        let said = classify(br#"{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s"}}"#);
        assert_eq!(
            said,
            Incoming::Answer {
                id: 3,
                outcome: Ok(json!({"sessionId": "s"}))
            }
        );
        let refused = classify(br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"Authentication required"}}"#);
        assert!(matches!(
            refused,
            Incoming::Answer {
                id: 4,
                outcome: Err(RpcError { code: -32000, .. })
            }
        ));
        let note = classify(br#"{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}"#);
        assert!(
            matches!(note, Incoming::Notification { ref method, .. } if method == "session/update")
        );
        // `null` as a result is an answer (session/load's, for some agents).
        let null = classify(br#"{"jsonrpc":"2.0","id":5,"result":null}"#);
        assert_eq!(
            null,
            Incoming::Answer {
                id: 5,
                outcome: Ok(Value::Null)
            }
        );
    }

    #[test]
    fn what_is_not_json_rpc_is_malformed_and_blank_lines_are_nothing() {
        assert!(matches!(
            classify(b"this is not json {"),
            Incoming::Malformed(_)
        ));
        assert!(matches!(classify(b"[1,2]"), Incoming::Malformed(_)));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"x","result":1}"#),
            Incoming::Malformed(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":7}"#),
            Incoming::Malformed(_)
        ));
        assert_eq!(classify(b"  \r"), Incoming::Blank);
    }

    #[tokio::test]
    async fn a_line_past_the_bound_is_cut_and_said_so() {
        let mut long = vec![b'x'; MAX_LINE + 10];
        long.extend_from_slice(b"\nnext\nlast");
        let mut r = tokio::io::BufReader::new(&long[..]);
        let mut line = Vec::new();
        assert_eq!(read_line(&mut r, &mut line).await, Some(true));
        assert_eq!(line.len(), MAX_LINE);
        assert_eq!(read_line(&mut r, &mut line).await, Some(false));
        assert_eq!(line, b"next");
        assert_eq!(read_line(&mut r, &mut line).await, Some(false));
        assert_eq!(line, b"last");
        assert_eq!(read_line(&mut r, &mut line).await, None);
    }
}
