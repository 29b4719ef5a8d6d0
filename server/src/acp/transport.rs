//! ACP's transport: newline-delimited JSON-RPC 2.0 over stdio. One task reads lines and
//! dispatches them (each request handled in a task of its own, so a handler that waits for
//! the client — a permission, a file — never blocks the read loop); one task writes, in the
//! order messages were queued. Requests to the client get ids here and their answers are
//! routed back to the waiter. A line that is not a JSON-RPC message gets an error answer and
//! the loop goes on; so does a line longer than the message limit
//! (`protocol::limits`, `AGENTLS_MAX_FRAME_BYTES`), which is skipped as it arrives, never
//! held whole.

use crate::locks::Locked;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    /// ACP's `auth_required`: no provider key.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP's `resource_not_found`.
    pub const NOT_FOUND: i64 = -32002;

    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl std::fmt::Display) -> RpcError {
        RpcError::new(
            RpcError::INVALID_PARAMS,
            format!("invalid params: {message}"),
        )
    }

    fn to_value(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

/// ACP's `$/cancel_request`, both ways.
pub const CANCEL_REQUEST: &str =
    <crate::protocol::acp::CancelRequest as crate::protocol::ClientNotification>::METHOD;

/// One side of the connection: sends notifications, answers and requests.
pub struct Connection {
    out: mpsc::UnboundedSender<String>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>,
    next_id: AtomicU64,
    /// The client's requests being handled, by id: `$/cancel_request` cancels the token.
    incoming: Mutex<HashMap<String, tokio_util::sync::CancellationToken>>,
}

impl Connection {
    /// Queues a notification (sent in queue order).
    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}),
        };
        self.send(message);
    }

    fn send(&self, message: Value) {
        let _ = self.out.send(message.to_string());
    }

    /// Sends a request to the client and waits for its answer (Err: the client's error, or
    /// the connection closed). Dropped before the answer (a timeout, a cancelled turn), the
    /// request is withdrawn with `$/cancel_request`, so the client closes its dialog.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.locked().insert(id, tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut waiting = Waiting {
            connection: self,
            id,
            answered: false,
        };
        let answer = rx
            .await
            .unwrap_or_else(|_| Err(RpcError::new(RpcError::INTERNAL, "the connection closed")));
        waiting.answered = true;
        answer
    }

    /// Sends a request whose answer nobody waits for (agentls is exiting; an answer that
    /// still comes is ignored as one to no pending request).
    pub fn request_unanswered(&self, method: &str, params: Value) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// The token `$/cancel_request` cancels for the client's request `id` (handled now).
    fn track(&self, id: &Value) -> tokio_util::sync::CancellationToken {
        let token = tokio_util::sync::CancellationToken::new();
        self.incoming.locked().insert(id.to_string(), token.clone());
        token
    }

    fn untrack(&self, id: &Value) {
        self.incoming.locked().remove(&id.to_string());
    }

    /// The client's `$/cancel_request`: the request's handler sees its token cancelled.
    fn cancel_incoming(&self, params: &Value) {
        let token = self
            .incoming
            .locked()
            .get(&params["requestId"].to_string())
            .cloned();
        match token {
            Some(token) => token.cancel(),
            None => tracing::debug!("acp: $/cancel_request for no pending request: {params}"),
        }
    }

    fn route_answer(&self, message: &Value) {
        let Some(id) = message["id"].as_u64() else {
            tracing::warn!("acp: an answer with an id we never sent: {message}");
            return;
        };
        let waiter = self.pending.locked().remove(&id);
        let Some(waiter) = waiter else {
            if id < self.next_id.load(Ordering::Relaxed) {
                // A request withdrawn with `$/cancel_request` (or answered twice).
                tracing::debug!("acp: a late answer to request {id}, no longer waited for");
            } else {
                tracing::warn!("acp: an answer to no pending request (id {id})");
            }
            return;
        };
        let answer = match message.get("error") {
            Some(error) => Err(RpcError::new(
                error["code"].as_i64().unwrap_or(RpcError::INTERNAL),
                error["message"].as_str().unwrap_or("error").to_string(),
            )),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(answer);
    }
}

/// A request to the client being waited for: dropped unanswered, it is withdrawn.
struct Waiting<'a> {
    connection: &'a Connection,
    id: u64,
    answered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        if self.connection.pending.locked().remove(&self.id).is_some() {
            self.connection
                .notify(CANCEL_REQUEST, json!({"requestId": self.id}));
        }
    }
}

/// ACP's `request_cancelled` error: the answer to a request the client withdrew.
pub const REQUEST_CANCELLED: i64 = -32800;

/// A request's answer, and the notifications to send right after it (`session/new`'s
/// `available_commands_update`: the client knows the session only once it has the answer).
pub struct Reply {
    pub result: Value,
    pub then: Vec<(String, Value)>,
}

impl Reply {
    pub fn new(result: impl serde::Serialize) -> Reply {
        Reply {
            result: serde_json::to_value(result).unwrap_or(Value::Null),
            then: Vec::new(),
        }
    }
}

/// What the dispatcher gets: a request (answered with what the handler returns) or a
/// notification.
pub enum Incoming {
    /// `cancel` is cancelled by the client's `$/cancel_request` for this request.
    Request {
        method: String,
        params: Value,
        cancel: tokio_util::sync::CancellationToken,
    },
    Notification {
        method: String,
        params: Value,
    },
}

/// Serves `input`/`output` until `input` ends: `handle` gets every request and
/// notification, each in a task of its own; requests are answered with its result.
pub async fn serve<R, W, H, F>(input: R, output: W, make_handler: impl FnOnce(Arc<Connection>) -> H)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    H: Fn(Incoming) -> F + Send + Sync + 'static,
    F: Future<Output = Result<Reply, RpcError>> + Send + 'static,
{
    let (out, queue) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(write_lines(output, queue));
    let connection = Arc::new(Connection {
        out,
        pending: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        incoming: Mutex::new(HashMap::new()),
    });
    let handler = Arc::new(make_handler(connection.clone()));
    let mut input = BufReader::new(input);
    let max_line = crate::protocol::limits::max_frame_bytes();
    let mut line = Vec::new();
    loop {
        // A line that is not UTF-8 or not JSON gets the same parse error.
        let parsed = match read_line(&mut input, max_line, &mut line).await {
            Ok(Line::End) => break,
            Ok(Line::TooLong(length)) => Err(format!(
                "a message of {length} bytes or more: larger than the limit of {max_line} bytes ({}); refused",
                crate::protocol::limits::MAX_FRAME_ENV
            )),
            Ok(Line::Text) if line.trim_ascii().is_empty() => continue,
            Ok(Line::Text) => crate::protocol::limits::count_or_refuse(&line)
                .and_then(|()| serde_json::from_slice::<Value>(&line).map_err(|e| e.to_string())),
            Err(err) => {
                tracing::warn!("acp: unreadable input: {err}");
                break;
            }
        };
        let message = match parsed {
            Ok(message) => message,
            Err(err) => {
                connection.respond(
                    Value::Null,
                    Err(RpcError::new(
                        RpcError::PARSE,
                        format!("parse error: {err}"),
                    )),
                );
                continue;
            }
        };
        dispatch(&connection, &*handler, message);
    }
    // The client is gone: waiters get an error, the writer ends once the handlers drop
    // their senders.
    connection.pending.locked().clear();
    drop(connection);
    drop(handler);
    // Queued messages are left: nobody reads them any more.
    drop(writer);
}

/// What `read_line` found.
#[derive(Debug, PartialEq)]
enum Line {
    /// A line (without its newline) is in the buffer.
    Text,
    /// A line longer than the limit, skipped as it arrived: at least this many bytes.
    TooLong(usize),
    /// The input ended.
    End,
}

/// Reads one line into `line`, holding at most `max` bytes of it: the rest of a longer line
/// is read and dropped as it arrives, so a huge line costs no more memory than the limit.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    max: usize,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    line.clear();
    let mut dropped = 0usize;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (dropped, line.is_empty()) {
                (0, true) => Line::End,
                (0, false) => Line::Text,
                _ => Line::TooLong(dropped),
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if dropped == 0 && line.len() + chunk.len() <= max {
            line.extend_from_slice(chunk);
        } else {
            dropped += line.len() + chunk.len();
            line.clear();
            line.shrink_to(0);
        }
        let consumed = chunk.len() + usize::from(newline.is_some());
        input.consume(consumed);
        if newline.is_some() {
            return Ok(if dropped > 0 {
                Line::TooLong(dropped)
            } else {
                Line::Text
            });
        }
    }
}

/// Writes the queued lines in order until the queue closes or the output fails.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut queue: mpsc::UnboundedReceiver<String>,
) {
    while let Some(line) = queue.recv().await {
        if output.write_all(line.as_bytes()).await.is_err()
            || output.write_all(b"\n").await.is_err()
            || output.flush().await.is_err()
        {
            break;
        }
    }
}

/// Routes one message: an answer to its waiter, a request or notification to `handler` in
/// a task of its own (a request answered with its result), anything else an error answer.
fn dispatch<H, F>(connection: &Arc<Connection>, handler: &H, message: Value)
where
    H: Fn(Incoming) -> F,
    F: Future<Output = Result<Reply, RpcError>> + Send + 'static,
{
    match classify(&message) {
        Kind::Answer => connection.route_answer(&message),
        Kind::Request(id, method) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let cancel = connection.track(&id);
            let future = handler(Incoming::Request {
                method,
                params,
                cancel,
            });
            let connection = connection.clone();
            tokio::spawn(async move {
                let answer = future.await;
                connection.untrack(&id);
                match answer {
                    Ok(reply) => {
                        connection.respond(id, Ok(reply.result));
                        for (method, params) in reply.then {
                            connection.notify(&method, params);
                        }
                    }
                    Err(err) => connection.respond(id, Err(err)),
                }
            });
        }
        Kind::Notification(method) if method == CANCEL_REQUEST => {
            connection.cancel_incoming(&message["params"]);
        }
        Kind::Notification(method) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let future = handler(Incoming::Notification {
                method: method.clone(),
                params,
            });
            tokio::spawn(async move {
                if let Err(err) = future.await {
                    tracing::warn!("acp: notification {method} failed: {}", err.message);
                }
            });
        }
        Kind::Invalid(id, why) => {
            connection.respond(id, Err(RpcError::new(RpcError::INVALID_REQUEST, why)))
        }
    }
}

enum Kind {
    Answer,
    Request(Value, String),
    Notification(String),
    Invalid(Value, String),
}

/// What a parsed JSON value is, as JSON-RPC 2.0 reads it.
fn classify(message: &Value) -> Kind {
    let Some(object) = message.as_object() else {
        return Kind::Invalid(Value::Null, "invalid request: not a JSON-RPC object".into());
    };
    let id = object.get("id").cloned();
    let valid_id = |id: &Value| id.is_string() || id.is_number();
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Kind::Invalid(
            id.filter(valid_id).unwrap_or(Value::Null),
            "invalid request: jsonrpc must be \"2.0\"".into(),
        );
    }
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) if valid_id(&id) => {
            Kind::Request(id, method.clone())
        }
        (Some(Value::String(method)), None) => Kind::Notification(method.clone()),
        (Some(_), id) => Kind::Invalid(
            id.filter(valid_id).unwrap_or(Value::Null),
            "invalid request: method must be a string and id a string or number".into(),
        ),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => {
            Kind::Answer
        }
        (None, id) => Kind::Invalid(
            id.filter(valid_id).unwrap_or(Value::Null),
            "invalid request: no method".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{read_line, Line};

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_and_the_next_one_read() {
        let input = format!("{}\n{{\"a\":1}}\r\nlast", "x".repeat(100));
        let mut input = tokio::io::BufReader::with_capacity(7, input.as_bytes());
        let mut line = Vec::new();
        assert_eq!(
            read_line(&mut input, 16, &mut line).await.unwrap(),
            Line::TooLong(100)
        );
        assert!(line.capacity() <= 16, "held {} bytes", line.capacity());
        assert_eq!(
            read_line(&mut input, 16, &mut line).await.unwrap(),
            Line::Text
        );
        assert_eq!(line, b"{\"a\":1}\r");
        assert_eq!(
            read_line(&mut input, 16, &mut line).await.unwrap(),
            Line::Text
        );
        assert_eq!(line, b"last");
        assert_eq!(
            read_line(&mut input, 16, &mut line).await.unwrap(),
            Line::End
        );
    }
}
