//! Guards tower-lsp's stdin. Its codec (through tokio-util's `FramedRead`) ends the whole
//! stream at the first frame it cannot decode, so one malformed message would kill the
//! server. This task re-frames stdin and replaces every frame tower-lsp would choke on
//! with a message it can handle:
//! - valid JSON with a usable `id` → a request to `agentls/internal/invalidRequest`, which
//!   answers the client's id with an InvalidRequest error;
//! - anything else → the notification `agentls/internal/malformedMessage`, logged.

use serde_json::{json, Value};
use std::borrow::Cow;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tower_lsp::jsonrpc::{Request, Response};

pub const INVALID_REQUEST_METHOD: &str = "agentls/internal/invalidRequest";
pub const MALFORMED_MESSAGE_METHOD: &str = "agentls/internal/malformedMessage";

/// Returns a reader that yields `input`'s frames, each one decodable by tower-lsp.
pub fn sanitized<R>(input: R) -> impl AsyncRead + Unpin + Send + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (reader, writer) = tokio::io::duplex(256 * 1024);
    tokio::spawn(pump(BufReader::new(input), writer));
    reader
}

async fn pump<R, W>(mut input: BufReader<R>, mut output: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let body = match read_frame(&mut input).await {
            Frame::Body(body) => body,
            Frame::BadHeader(why) => {
                tracing::warn!("dropping a frame: {why}");
                let note = malformed(&why);
                if write_frame(&mut output, &note).await.is_err() {
                    return;
                }
                continue;
            }
            Frame::End => return,
        };
        let body = sanitize(&body);
        if write_frame(&mut output, &body).await.is_err() {
            return;
        }
    }
}

/// One frame read from an LSP byte stream.
pub enum Frame {
    Body(Vec<u8>),
    BadHeader(String),
    End,
}

/// Reads the next frame: headers up to a blank line, then Content-Length bytes.
pub async fn read_frame<R: AsyncRead + Unpin>(input: &mut BufReader<R>) -> Frame {
    let mut length: Option<usize> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return Frame::End,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if !saw_header {
                continue; // stray blank line between frames
            }
            break;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok();
            }
        }
    }
    let Some(length) = length else {
        return Frame::BadHeader("header without a valid Content-Length".into());
    };
    let mut body = vec![0; length];
    match input.read_exact(&mut body).await {
        Ok(_) => Frame::Body(body),
        Err(_) => Frame::End,
    }
}

/// Writes `body` as one frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    output: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    output
        .write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    output.write_all(body).await?;
    output.flush().await
}

fn malformed(why: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "method": MALFORMED_MESSAGE_METHOD, "params": {"error": why}})
        .to_string()
        .into_bytes()
}

/// The body itself when tower-lsp can decode it, else its replacement.
fn sanitize(body: &[u8]) -> Cow<'_, [u8]> {
    let decodable = serde_json::from_slice::<Request>(body).is_ok()
        || serde_json::from_slice::<Response>(body).is_ok();
    if decodable {
        return Cow::Borrowed(body);
    }
    let replacement = match serde_json::from_slice::<Value>(body) {
        Ok(value) => match value.get("id") {
            Some(id @ (Value::Number(_) | Value::String(_))) => {
                tracing::warn!("invalid JSON-RPC request with id {id}");
                json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": INVALID_REQUEST_METHOD,
                    "params": {"error": "not a valid JSON-RPC 2.0 request (needs \"jsonrpc\": \"2.0\" and a string \"method\")"}
                })
                .to_string()
                .into_bytes()
            }
            _ => {
                tracing::warn!("dropping a message that is not JSON-RPC 2.0");
                malformed("not a JSON-RPC 2.0 message")
            }
        },
        Err(err) => {
            tracing::warn!("dropping a message that is not JSON: {err}");
            malformed(&format!("not JSON: {err}"))
        }
    };
    Cow::Owned(replacement)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn through(input: &'static [u8]) -> Vec<Value> {
        let mut reader = BufReader::new(sanitized(input));
        let mut out = Vec::new();
        while let Frame::Body(body) = read_frame(&mut reader).await {
            out.push(serde_json::from_slice(&body).unwrap());
        }
        out
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[tokio::test]
    async fn valid_frames_pass_unchanged() {
        let input = frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#)
            + &frame(r#"{"jsonrpc":"2.0","id":7,"result":null}"#);
        let out = through(Box::leak(input.into_boxed_str()).as_bytes()).await;
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["method"], "initialize");
        assert_eq!(out[1]["id"], 7);
    }

    #[tokio::test]
    async fn bad_frames_become_messages_tower_lsp_can_handle() {
        let input = frame("{not json")
            + &frame(r#"{"jsonrpc":"2.0","id":"x-1","method":5}"#)
            + "Content-Type: nothing-else\r\n\r\n"
            + &frame(r#"{"jsonrpc":"2.0","method":"after"}"#);
        let out = through(Box::leak(input.into_boxed_str()).as_bytes()).await;
        assert_eq!(out.len(), 4);
        assert_eq!(out[0]["method"], MALFORMED_MESSAGE_METHOD);
        assert!(out[0]["params"]["error"]
            .as_str()
            .unwrap()
            .starts_with("not JSON"));
        assert_eq!(out[1]["method"], INVALID_REQUEST_METHOD);
        assert_eq!(out[1]["id"], "x-1");
        assert_eq!(out[2]["method"], MALFORMED_MESSAGE_METHOD);
        assert_eq!(out[3]["method"], "after");
    }

    #[tokio::test]
    async fn a_torn_last_frame_ends_the_stream() {
        let out = through(b"Content-Length: 50\r\n\r\n{\"jsonrpc\"").await;
        assert!(out.is_empty());
    }
}
