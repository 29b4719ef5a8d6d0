//! Reads LSP frames from stdin and decodes each one once, for `serve.rs` to hand to the
//! tower-lsp service. tower-lsp's own codec (not used) ends the whole stream at the first
//! frame it cannot decode, allocates whatever Content-Length says before a byte arrives,
//! and never finds its way back after a Content-Length that is off. Here a body decodes
//! exactly as that codec would decode it, and what it could not decode gets a stand-in:
//! - a frame tower-lsp decodes (valid UTF-8 throughout, a JSON-RPC message with an `i64`,
//!   string or null id) becomes its `Request` or `Response`; a text-sync notification
//!   (`Incoming::Sync`) keeps its params as raw JSON, decoded straight into their type, and
//!   `didChangeWatchedFiles` (`Incoming::Bounded`) and an answer with a result
//!   (`Incoming::Answer`) keep theirs, read entry by entry by `bounded.rs`;
//! - a frame above 1 MiB with more JSON values than `protocol::limits::MAX_MESSAGE_VALUES`
//!   is refused before it is decoded into `Value`s (which take 20–50 times the bytes of
//!   small values): InvalidRequest to a request, an error to the waiter of an answer, a
//!   note for the rest;
//! - a request it cannot decode becomes a request to `agentls/internal/invalidRequest`,
//!   which answers InvalidRequest to the client's id, or to id null when the id is not one
//!   tower-lsp can hold (`1.5`, `1e3`, `9223372036854775808`, `true`, `[]`, …);
//! - anything else becomes the notification `agentls/internal/malformedMessage`, logged.
//!
//! Framing: the body of a frame is read as it arrives (nothing is allocated ahead), a frame
//! above the limit (`AGENTLS_MAX_FRAME_BYTES`) is refused, and after bytes that are not a
//! frame the reader skips to the next `Content-Length` header, as tower-lsp's codec does. A
//! Content-Length a few bytes too long is noticed when the body is one JSON value followed
//! by the start of the next header: the value is the message, the rest is put back.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tower_lsp::jsonrpc::{Id, Request, Response};

use crate::protocol::limits::count_or_refuse;
pub use crate::protocol::limits::{max_frame_bytes, MAX_FRAME_ENV};

pub const INVALID_REQUEST_METHOD: &str = "agentls/internal/invalidRequest";
pub const MALFORMED_MESSAGE_METHOD: &str = "agentls/internal/malformedMessage";

/// A header block longer than this is not one.
const MAX_HEADER_BYTES: usize = 16 * 1024;
/// How long a body may stall before a complete JSON value in it is taken as the message
/// (its Content-Length was too long and nothing follows yet).
const STALLED_BODY: Duration = Duration::from_millis(200);
const HEADER_NAME: &[u8] = b"content-length";

/// Signalled once the input has ended and every frame the client sent has been handed to
/// the service.
#[derive(Clone, Default)]
pub struct InputClosed(Arc<Notify>);

impl InputClosed {
    pub async fn wait(&self) {
        self.0.notified().await;
    }

    pub fn signal(&self) {
        self.0.notify_one();
    }
}

/// One frame read from an LSP byte stream.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Body(Vec<u8>),
    /// Bytes that were not a frame, or a frame refused; why, and what was skipped.
    Skipped(String),
    End,
}

/// Reads frames from an LSP byte stream, resynchronising after anything that is not one.
pub struct FrameReader<R> {
    input: R,
    /// Bytes read; the unread ones start at `pos` (a cursor, so that taking a frame off the
    /// front does not move the rest of the buffer).
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    max_frame: usize,
    /// Set after a refused frame: skip to the next header before reading one.
    discarding: bool,
}

/// The least a read asks for: a burst of small frames arrives in few reads.
const READ_CHUNK: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(input: R, max_frame: usize) -> Self {
        FrameReader {
            input,
            buf: Vec::new(),
            pos: 0,
            eof: false,
            max_frame,
            discarding: false,
        }
    }

    /// The bytes read and not yet taken.
    fn unread(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Takes `n` unread bytes off the front.
    fn consume(&mut self, n: usize) {
        self.pos += n;
        debug_assert!(self.pos <= self.buf.len());
    }

    /// Reads more input into the buffer; false at the end of the input.
    async fn fill(&mut self, want: usize) -> bool {
        if self.eof {
            return false;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.reserve(want.clamp(READ_CHUNK, 1 << 20));
        match self.input.read_buf(&mut self.buf).await {
            Ok(0) | Err(_) => {
                self.eof = true;
                false
            }
            Ok(_) => true,
        }
    }

    /// The next frame, or End when the input ends (a torn last frame is dropped).
    pub async fn next(&mut self) -> Frame {
        if self.discarding {
            self.discarding = false;
            let (skipped, preview) = match self.skip_to_header(0).await {
                Some(skipped) => skipped,
                None => return Frame::End,
            };
            if skipped > 0 {
                tracing::warn!("skipped {skipped} bytes of a refused frame: {preview}");
            }
        }
        loop {
            let start = self
                .unread()
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(self.unread().len());
            self.consume(start);
            match parse_headers(self.unread()) {
                Headers::Incomplete if self.unread().len() <= MAX_HEADER_BYTES => {
                    if !self.fill(4096).await {
                        return Frame::End;
                    }
                }
                Headers::Incomplete => {
                    return self.resync("a header block without an end").await;
                }
                Headers::Invalid(why) => return self.resync(&why).await,
                Headers::Complete { len, length } => {
                    self.consume(len);
                    return self.body(length).await;
                }
            }
        }
    }

    async fn resync(&mut self, why: &str) -> Frame {
        match self.skip_to_header(1).await {
            Some((skipped, preview)) => Frame::Skipped(format!(
                "{why}: skipped {skipped} bytes up to the next Content-Length header: {preview}"
            )),
            None => Frame::End,
        }
    }

    /// Drops bytes up to the next `Content-Length` at or after `from`, reading as needed;
    /// the count and the start of what was dropped, or None when the input ends first.
    async fn skip_to_header(&mut self, from: usize) -> Option<(u64, String)> {
        let mut skipped = 0u64;
        let mut preview = Vec::new();
        let mut from = from;
        loop {
            if let Some(at) = find_header_name(self.unread(), from) {
                keep_preview(&mut preview, &self.unread()[..at]);
                self.consume(at);
                return Some((skipped + at as u64, show(&preview)));
            }
            // Keep what could be the start of the header name.
            let unread = self.unread().len();
            let keep = (HEADER_NAME.len() - 1).min(unread.saturating_sub(from));
            let cut = unread - keep;
            keep_preview(&mut preview, &self.unread()[..cut]);
            skipped += cut as u64;
            self.consume(cut);
            from = 0;
            if !self.fill(64 * 1024).await {
                tracing::warn!("input ended after {skipped} bytes that were not a frame");
                return None;
            }
        }
    }

    async fn body(&mut self, length: usize) -> Frame {
        if length > self.max_frame {
            self.discarding = true;
            return Frame::Skipped(format!(
                "refused a frame of {length} bytes: larger than the limit of {} bytes ({MAX_FRAME_ENV})",
                self.max_frame
            ));
        }
        let mut checked = 0;
        while self.unread().len() < length {
            let want = length - self.unread().len();
            match tokio::time::timeout(STALLED_BODY, self.fill(want)).await {
                Ok(true) => {}
                Ok(false) => return Frame::End,
                Err(_) if checked != self.unread().len() => {
                    // Stalled: a complete message and nothing after it means the length
                    // was too long and the client waits for an answer.
                    checked = self.unread().len();
                    if let Some(end) = one_value(self.unread())
                        .filter(|&end| self.unread()[end..].iter().all(u8::is_ascii_whitespace))
                    {
                        tracing::warn!(
                            "Content-Length {length} but the message ended after {end} bytes and nothing followed"
                        );
                        let body = self.unread()[..end].to_vec();
                        self.consume(end);
                        return Frame::Body(body);
                    }
                }
                Err(_) => {}
            }
        }
        let big = length >= READ_CHUNK;
        let mut body = if big {
            // A big frame (a whole file in a didOpen): the buffer becomes the body rather
            // than being copied, and the reader does not keep megabytes of capacity.
            let rest = self.buf.split_off(self.pos + length);
            let mut body = std::mem::replace(&mut self.buf, rest);
            body.drain(..self.pos);
            self.pos = 0;
            body
        } else {
            let body = self.unread()[..length].to_vec();
            self.consume(length);
            body
        };
        // Too long: one JSON value, then the start of the next frame. (A body that ends
        // its value where it should is left to the decoder.)
        let last = body.iter().rev().find(|b| !b.is_ascii_whitespace());
        if !matches!(last, Some(b'}' | b']')) {
            if let Some(end) = one_value(&body) {
                let tail = body.len() - end;
                if !body[end..].iter().all(u8::is_ascii_whitespace) {
                    tracing::warn!(
                        "Content-Length {length} was {tail} bytes too long; resynchronising"
                    );
                    if big {
                        let mut unread = body.split_off(end);
                        unread.extend_from_slice(&self.buf);
                        self.buf = unread;
                    } else {
                        // Still in the buffer, just before the cursor: unread it.
                        body.truncate(end);
                        self.pos -= tail;
                    }
                }
            }
        }
        Frame::Body(body)
    }
}

/// Where the first JSON value of `bytes` ends, if it is a complete object or array.
fn one_value(bytes: &[u8]) -> Option<usize> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if !matches!(first, Some(b'{' | b'[')) {
        return None;
    }
    let mut values =
        serde_json::Deserializer::from_slice(bytes).into_iter::<serde::de::IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => Some(values.byte_offset()),
        _ => None,
    }
}

enum Headers {
    Incomplete,
    Invalid(String),
    Complete { len: usize, length: usize },
}

/// Parses a header block at the start of `buf`: `Name: value` lines up to an empty line
/// (CRLF or LF), one of them a Content-Length (the last one wins).
fn parse_headers(buf: &[u8]) -> Headers {
    let mut length = None;
    let mut at = 0;
    loop {
        let Some(nl) = buf[at..].iter().position(|&b| b == b'\n') else {
            // A partial line that cannot become a header is garbage now, not later. A read may
            // end between the `\r` and the `\n` of a line: that `\r` is not garbage.
            let partial = &buf[at..];
            let partial = partial.strip_suffix(b"\r").unwrap_or(partial);
            let name_end = partial
                .iter()
                .position(|&b| b == b':')
                .unwrap_or(partial.len());
            if !partial[..name_end].iter().all(|&b| is_token(b)) {
                return Headers::Invalid("bytes that are not a header".into());
            }
            return Headers::Incomplete;
        };
        let line = &buf[at..at + nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        at += nl + 1;
        if line.is_empty() {
            return match length {
                Some(Ok(length)) => Headers::Complete { len: at, length },
                Some(Err(value)) => Headers::Invalid(format!("invalid Content-Length {value:?}")),
                None => Headers::Invalid("a header without a Content-Length".into()),
            };
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Headers::Invalid("bytes that are not a header".into());
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
            return Headers::Invalid("bytes that are not a header".into());
        }
        if name.eq_ignore_ascii_case(HEADER_NAME) {
            // Read in place; only a value that is not a length is copied (for the message).
            let parsed = std::str::from_utf8(value)
                .ok()
                .and_then(|value| value.trim().parse::<usize>().ok());
            length = Some(parsed.ok_or_else(|| String::from_utf8_lossy(value).trim().to_string()));
        }
    }
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn find_header_name(buf: &[u8], from: usize) -> Option<usize> {
    if buf.len() < HEADER_NAME.len() {
        return None;
    }
    (from..=buf.len() - HEADER_NAME.len())
        .find(|&i| buf[i..i + HEADER_NAME.len()].eq_ignore_ascii_case(HEADER_NAME))
}

fn keep_preview(preview: &mut Vec<u8>, bytes: &[u8]) {
    let room = 64usize.saturating_sub(preview.len());
    preview.extend_from_slice(&bytes[..room.min(bytes.len())]);
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
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

/// A message read from the client, decoded once: what the tower-lsp service or its client
/// socket takes.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request or a notification, or what stands in for one that could not be decoded.
    Request(Request),
    /// An answer to a request of ours.
    Response(Response),
    /// A text-sync notification (one of `SYNC_METHODS`), its params left as raw JSON for
    /// the document sync to decode straight into their type: the keystroke path builds no
    /// `Value`. Exactly the notifications that would decode as a `Request` with this method
    /// and these params.
    Sync {
        method: &'static str,
        params: &'a RawValue,
    },
    /// A notification whose list the client may make as long as it likes (one of
    /// `BOUNDED_METHODS`), its params left raw to be read entry by entry (`bounded.rs`).
    Bounded {
        method: &'static str,
        params: &'a RawValue,
    },
    /// An answer to a request of ours with a result, left raw to be read as the request
    /// needs (`bounded.rs`). Exactly the answers that would decode as a successful
    /// `Response` with this id and this result.
    Answer { id: Id, result: &'a RawValue },
}

/// The text-sync notifications, which `decode` leaves raw (see `Incoming::Sync`).
pub const SYNC_METHODS: [&str; 3] = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
];

/// The frame of a text-sync notification, as far as telling one needs.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: &'a RawValue,
    /// Present at all (even `null`): a request, not a notification.
    #[serde(default, deserialize_with = "present")]
    id: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(value: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(value).map(|_| true)
}

/// The notifications whose params are read entry by entry (see `Incoming::Bounded`).
pub const BOUNDED_METHODS: [&str; 1] = ["workspace/didChangeWatchedFiles"];

/// A text-sync or bounded notification's method and raw params, if `text` is one.
fn raw_notification(text: &str) -> Option<Incoming<'_>> {
    let envelope = serde_json::from_str::<Envelope>(text).ok()?;
    if envelope.jsonrpc != "2.0" || envelope.id {
        return None;
    }
    let params = envelope.params;
    if let Some(method) = SYNC_METHODS.into_iter().find(|m| *m == envelope.method) {
        return Some(Incoming::Sync { method, params });
    }
    let method = BOUNDED_METHODS
        .into_iter()
        .find(|m| *m == envelope.method)?;
    Some(Incoming::Bounded { method, params })
}

/// The frame of an answer with a result, as tower-lsp's `Response` reads it (other fields,
/// `error` or `method` among them, are not looked at: the result wins).
#[derive(Deserialize)]
struct AnswerEnvelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Id,
    #[serde(borrow)]
    result: &'a RawValue,
}

/// The id and raw result of `text`, if it is an answer with a result.
fn answer(text: &str) -> Option<Incoming<'_>> {
    let envelope = serde_json::from_str::<AnswerEnvelope>(text).ok()?;
    if envelope.jsonrpc != "2.0" {
        return None;
    }
    Some(Incoming::Answer {
        id: envelope.id,
        result: envelope.result,
    })
}

/// What stands in for a message refused by `count_or_refuse`: an InvalidRequest answer to a
/// request's id, an error for our own waiter of an answer, else a note to log.
fn refused(text: &str, why: &str) -> Incoming<'static> {
    #[derive(Deserialize)]
    struct Outline<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<IgnoredAny>,
        error: Option<IgnoredAny>,
    }
    tracing::warn!("{why}");
    let Ok(outline) = serde_json::from_str::<Outline>(text) else {
        return Incoming::Request(malformed(why));
    };
    let id = outline
        .id
        .and_then(|id| serde_json::from_str::<Id>(id.get()).ok());
    match (id, outline.method, outline.error) {
        (Some(id), None, Some(_)) => {
            let error = tower_lsp::jsonrpc::Error {
                code: tower_lsp::jsonrpc::ErrorCode::InvalidRequest,
                message: why.to_string().into(),
                data: None,
            };
            Incoming::Response(Response::from_error(id, error))
        }
        (id, Some(_), _) if outline.id.is_some() => Incoming::Request(
            Request::build(INVALID_REQUEST_METHOD)
                .id(id.unwrap_or(Id::Null))
                .params(json!({ "error": why }))
                .finish(),
        ),
        _ => Incoming::Request(malformed(why)),
    }
}

/// The notification that stands in for what could not be decoded nor answered.
pub fn malformed(why: &str) -> Request {
    Request::build(MALFORMED_MESSAGE_METHOD)
        .params(json!({ "error": why }))
        .finish()
}

/// What tower-lsp's codec decodes a frame into (its own type is private).
#[derive(Deserialize)]
#[serde(untagged)]
enum Message {
    Response(Response),
    Request(Request),
}

/// Decodes one frame's body as tower-lsp's codec would (the whole body UTF-8, then a
/// message); what it cannot decode becomes a stand-in request (see the module's comment).
pub fn decode(body: &[u8]) -> Incoming<'_> {
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(err) => {
            let why = format!("invalid UTF-8 at byte {}", err.valid_up_to());
            let lossy = String::from_utf8_lossy(body);
            if let Err(too_many) = count_or_refuse(lossy.as_bytes()) {
                return refused(&lossy, &format!("{too_many} ({why})"));
            }
            return Incoming::Request(match serde_json::from_str::<Value>(&lossy) {
                Ok(value) => replacement(&value, &why),
                Err(_) => {
                    tracing::warn!("dropping a message: {why}");
                    malformed(&why)
                }
            });
        }
    };
    if let Some(raw) = raw_notification(text).or_else(|| answer(text)) {
        return raw;
    }
    if let Err(why) = count_or_refuse(body) {
        return refused(text, &why);
    }
    match serde_json::from_str::<Message>(text) {
        Ok(Message::Request(request)) => return Incoming::Request(request),
        Ok(Message::Response(response)) => return Incoming::Response(response),
        Err(_) => {}
    }
    Incoming::Request(match serde_json::from_str::<Value>(text) {
        Ok(value) => replacement(
            &value,
            "not a valid JSON-RPC 2.0 request (needs \"jsonrpc\": \"2.0\", a string \"method\" and an integer or string \"id\")",
        ),
        Err(err) => {
            tracing::warn!("dropping a message that is not JSON: {err}");
            malformed(&format!("not JSON: {err}"))
        }
    })
}

/// For a message tower-lsp cannot take: a request answered with InvalidRequest (to its id
/// when tower-lsp can hold it, else to id null), or a note to log.
fn replacement(value: &Value, why: &str) -> Request {
    let is_response = value.get("method").is_none()
        && (value.get("result").is_some() || value.get("error").is_some());
    let id = match value.get("id") {
        None => None,
        Some(_) if is_response => None,
        Some(Value::String(id)) => Some(Id::String(id.clone())),
        Some(Value::Number(n)) if n.is_i64() => n.as_i64().map(Id::Number),
        Some(_) => Some(Id::Null),
    };
    match id {
        Some(id) => {
            tracing::warn!("invalid JSON-RPC request with id {}: {why}", value["id"]);
            Request::build(INVALID_REQUEST_METHOD)
                .id(id)
                .params(json!({ "error": why }))
                .finish()
        }
        None if is_response => {
            tracing::warn!("dropping a response tower-lsp cannot read: {why}");
            malformed(&format!("a response that cannot be read: {why}"))
        }
        None => {
            tracing::warn!("dropping a message that is not JSON-RPC 2.0: {why}");
            malformed(&format!("not a JSON-RPC 2.0 message: {why}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::limits::{COUNTED_ABOVE_BYTES, MAX_MESSAGE_VALUES};

    /// What the service would be handed for `input`, as JSON.
    async fn through(input: &'static [u8]) -> Vec<Value> {
        let mut reader = FrameReader::new(input, 1024);
        let mut out = Vec::new();
        loop {
            let message = match reader.next().await {
                Frame::Body(body) => match decode(&body) {
                    Incoming::Request(request) => serde_json::to_value(request),
                    Incoming::Response(response) => serde_json::to_value(response),
                    Incoming::Sync { method, params } | Incoming::Bounded { method, params } => {
                        Ok(json!({
                            "jsonrpc": "2.0",
                            "method": method,
                            "params": serde_json::from_str::<Value>(params.get()).unwrap(),
                        }))
                    }
                    Incoming::Answer { id, result } => serde_json::to_value(Response::from_ok(
                        id,
                        serde_json::from_str(result.get()).unwrap(),
                    )),
                },
                Frame::Skipped(why) => serde_json::to_value(malformed(&why)),
                Frame::End => return out,
            };
            out.push(message.unwrap());
        }
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    fn leak(s: String) -> &'static [u8] {
        Box::leak(s.into_boxed_str()).as_bytes()
    }

    #[tokio::test]
    async fn valid_frames_pass_unchanged() {
        let input = frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#)
            + &frame(r#"{"jsonrpc":"2.0","id":7,"result":null}"#);
        let out = through(leak(input)).await;
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["method"], "initialize");
        assert_eq!(out[1]["id"], 7);
    }

    #[tokio::test]
    async fn bad_frames_become_messages_tower_lsp_can_handle() {
        let input = frame("{not json")
            + &frame(r#"{"jsonrpc":"2.0","id":"x-1","method":5}"#)
            + "Content-Type: nothing-else\r\n\r\n"
            + &frame(r#"{"jsonrpc":"2.0","method":"after"}"#)
            + &frame(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#);
        let out = through(leak(input)).await;
        assert_eq!(out.len(), 5);
        assert_eq!(out[0]["method"], MALFORMED_MESSAGE_METHOD);
        assert!(out[0]["params"]["error"]
            .as_str()
            .unwrap()
            .starts_with("not JSON"));
        assert_eq!(out[1]["method"], INVALID_REQUEST_METHOD);
        assert_eq!(out[1]["id"], "x-1");
        assert_eq!(out[2]["method"], MALFORMED_MESSAGE_METHOD);
        assert_eq!(out[3]["method"], "after");
        assert_eq!(out[4]["method"], INVALID_REQUEST_METHOD);
        assert_eq!(out[4]["id"], Value::Null);
    }

    #[tokio::test]
    async fn a_torn_last_frame_ends_the_stream() {
        let out = through(b"Content-Length: 50\r\n\r\n{\"jsonrpc\"").await;
        assert!(out.is_empty());
    }

    #[test]
    fn a_header_block_cut_anywhere_is_incomplete_not_garbage() {
        let block = b"Content-Length: 12\r\n\r\n";
        for cut in 0..block.len() {
            assert!(
                matches!(parse_headers(&block[..cut]), Headers::Incomplete),
                "cut at {cut}: {:?}",
                String::from_utf8_lossy(&block[..cut])
            );
        }
        assert!(matches!(
            parse_headers(block),
            Headers::Complete {
                len: 22,
                length: 12
            }
        ));
    }

    #[tokio::test]
    async fn lengths_off_by_a_few_bytes_and_oversized_frames_resynchronise() {
        let a = r#"{"jsonrpc":"2.0","method":"a"}"#;
        let b = r#"{"jsonrpc":"2.0","method":"b"}"#;
        let input = format!("Content-Length: {}\r\n\r\n{a}", a.len() + 4)
            + &frame(b)
            + &format!("Content-Length: {}\r\n\r\n{a}", a.len() - 4)
            + &frame(b)
            + "Content-Length: 99999999999\r\n\r\n{\"x\": 1}"
            + &frame(b);
        let out = through(leak(input)).await;
        let methods: Vec<&str> = out.iter().map(|m| m["method"].as_str().unwrap()).collect();
        assert_eq!(
            methods,
            [
                "a",
                "b",
                MALFORMED_MESSAGE_METHOD, // the torn `a`
                MALFORMED_MESSAGE_METHOD, // its last bytes skipped
                "b",
                MALFORMED_MESSAGE_METHOD, // refused
                "b"
            ]
        );
    }

    #[test]
    fn text_sync_notifications_are_left_raw_and_nothing_else_is() {
        let change = r#"{"params":{"textDocument":{"uri":"file:///a","version":2},"contentChanges":[]},"method":"textDocument/didChange","jsonrpc":"2.0"}"#;
        match decode(change.as_bytes()) {
            Incoming::Sync { method, params } => {
                assert_eq!(method, "textDocument/didChange");
                assert!(params.get().starts_with(r#"{"textDocument""#));
            }
            other => panic!("{other:?}"),
        }
        // With an id (even null) it is a request; another version is not JSON-RPC 2.0;
        // another method is not text sync; without params it is left to tower-lsp.
        for body in [
            change.replace(r#""jsonrpc""#, r#""id":null,"jsonrpc""#),
            change.replace(r#""jsonrpc""#, r#""id":4,"jsonrpc""#),
            change.replace(r#""2.0""#, r#""1.0""#),
            change.replace("didChange", "didSave"),
            r#"{"jsonrpc":"2.0","method":"textDocument/didClose"}"#.to_string(),
            // A duplicate key: tower-lsp's reading decides.
            change.replace(r#""jsonrpc""#, r#""method":"x","jsonrpc""#),
        ] {
            assert!(
                matches!(decode(body.as_bytes()), Incoming::Request(_)),
                "{body}"
            );
        }
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":3,"result":null}"#),
            Incoming::Answer { .. }
        ));
        let watched = r#"{"jsonrpc":"2.0","method":"workspace/didChangeWatchedFiles","params":{"changes":[]}}"#;
        assert!(matches!(
            decode(watched.as_bytes()),
            Incoming::Bounded {
                method: "workspace/didChangeWatchedFiles",
                ..
            }
        ));
        let with_id = watched.replace(r#""jsonrpc""#, r#""id":4,"jsonrpc""#);
        assert!(matches!(decode(with_id.as_bytes()), Incoming::Request(_)));
    }

    /// An answer left raw is exactly one tower-lsp's codec reads as a successful response,
    /// with the same id and result; every other answer is left to that codec.
    #[test]
    fn answers_are_left_raw_exactly_when_tower_lsp_reads_a_result() {
        let answers = [
            r#"{"jsonrpc":"2.0","id":3,"result":{"items":[1,2]}}"#,
            r#"{"id":"s-1","result":null,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":[]}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
            r#"{"jsonrpc":"1.0","id":3,"result":1}"#,
            r#"{"id":3,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":1,"result":2}"#,
            r#"{"jsonrpc":"2.0","id":3,"id":4,"result":1}"#,
            r#"{"jsonrpc":"2.0","result":1}"#,
        ];
        for body in answers {
            let codec = serde_json::from_str::<Message>(body).ok();
            match (decode(body.as_bytes()), codec) {
                (Incoming::Answer { id, result }, Some(Message::Response(response))) => {
                    let result: Value = serde_json::from_str(result.get()).unwrap();
                    assert_eq!(response.id(), &id, "{body}");
                    assert_eq!(response.result(), Some(&result), "{body}");
                }
                (Incoming::Answer { .. }, _) => panic!("not an answer to tower-lsp: {body}"),
                (Incoming::Response(ours), Some(Message::Response(theirs))) => {
                    assert!(ours == theirs, "{body}");
                }
                (Incoming::Request(_), Some(Message::Response(response))) => {
                    panic!("tower-lsp reads {response:?} from {body}")
                }
                _ => {}
            }
        }
    }

    /// A large message of many small values is refused before it is decoded: a request
    /// gets InvalidRequest, an error answer becomes an error for its waiter, a notification
    /// a note; a large message of few values passes.
    #[test]
    fn many_values_are_refused_before_they_are_decoded() {
        let many = format!("[{}0]", "0,".repeat(3 * MAX_MESSAGE_VALUES));
        assert!(many.len() > COUNTED_ABOVE_BYTES);
        let request = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"m","params":{many}}}"#);
        match decode(request.as_bytes()) {
            Incoming::Request(r) => {
                assert_eq!(r.method(), INVALID_REQUEST_METHOD);
                assert_eq!(r.id(), Some(&Id::Number(7)));
                let why = r.params().unwrap()["error"].as_str().unwrap();
                assert!(why.contains("JSON values"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        let error = format!(
            r#"{{"jsonrpc":"2.0","id":8,"error":{{"code":1,"message":"x","data":{many}}}}}"#
        );
        match decode(error.as_bytes()) {
            Incoming::Response(r) => {
                assert_eq!(r.id(), &Id::Number(8));
                assert!(r.error().unwrap().message.contains("JSON values"));
            }
            other => panic!("{other:?}"),
        }
        let note = format!(r#"{{"jsonrpc":"2.0","method":"m","params":{many}}}"#);
        match decode(note.as_bytes()) {
            Incoming::Request(r) => assert_eq!(r.method(), MALFORMED_MESSAGE_METHOD),
            other => panic!("{other:?}"),
        }
        let few = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"m","params":["{}"]}}"#,
            "x".repeat(2 * COUNTED_ABOVE_BYTES)
        );
        match decode(few.as_bytes()) {
            Incoming::Request(r) => assert_eq!(r.method(), "m"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn big_frames_come_whole_and_a_length_too_long_resynchronises_after_one() {
        let pad = "x".repeat(READ_CHUNK * 3);
        let big = format!(r#"{{"jsonrpc":"2.0","method":"big","params":"{pad}"}}"#);
        let b = r#"{"jsonrpc":"2.0","method":"b"}"#;
        let input = frame(&big)
            + &frame(b)
            + &format!("Content-Length: {}\r\n\r\n{big}", big.len() + 4)
            + &frame(b);
        let mut reader = FrameReader::new(leak(input), usize::MAX);
        let mut bodies = Vec::new();
        loop {
            match reader.next().await {
                Frame::Body(body) => bodies.push(String::from_utf8(body).unwrap()),
                Frame::Skipped(why) => panic!("{why}"),
                Frame::End => break,
            }
        }
        assert_eq!(bodies, [big.as_str(), b, big.as_str(), b]);
        assert!(
            reader.buf.capacity() < READ_CHUNK * 3,
            "the reader kept the big buffer"
        );
    }
}
