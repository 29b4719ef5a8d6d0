//! A small LSP client over a child process's stdio: Content-Length framing, request/response
//! matching, notifications as a stream, and default answers to the server's own requests.
//! Used by `agentls-dev demo`, the benchmarks and the end-to-end tests, which drive the real binary with it.

use agentls::locks::Locked;
use agentls::lsp::transport::{self, Frame, FrameReader};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex};

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for RpcError {}

/// Something the server sent on its own: a notification, or a request we answered.
#[derive(Debug, Clone)]
pub struct ServerMessage {
    pub method: String,
    pub params: Value,
    /// Set when it was a request (we already answered it).
    pub id: Option<Value>,
    /// Its place among every frame the server sent (see `request_ordered`).
    pub seq: u64,
}

/// Waiters for answers: the answer and its place among the frames the server sent.
type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<(Result<Value, RpcError>, u64)>>>>;

/// How the client answers a request from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Result(Value),
    /// The result as JSON text, sent as it is: an answer too large to build as a `Value`.
    RawResult(Arc<str>),
    Error(i64, String),
    /// Never answer (to test the server's timeouts).
    Silence,
}

/// Chooses the answer to a server request from its method and params. The default answers
/// `null`, what a plain editor answers to registerCapability or progress/create.
pub type Responder = Arc<dyn Fn(&str, &Value) -> Answer + Send + Sync>;

pub struct LspClient {
    child: Child,
    /// None once closed by `shutdown`.
    stdin: Arc<AsyncMutex<Option<ChildStdin>>>,
    next_id: AtomicI64,
    pending: Pending,
    messages: AsyncMutex<mpsc::UnboundedReceiver<ServerMessage>>,
    /// Answers to no request of ours (id null, or an id we did not send): whole messages.
    orphans: AsyncMutex<mpsc::UnboundedReceiver<Value>>,
}

impl LspClient {
    /// Spawns `program args…` with piped stdio; the child's stderr is inherited so its log
    /// shows up beside the caller's output.
    pub fn spawn(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> std::io::Result<LspClient> {
        LspClient::spawn_with(
            program,
            args,
            env,
            Arc::new(|_, _| Answer::Result(Value::Null)),
        )
    }

    /// `spawn`, answering server requests with `responder`.
    pub fn spawn_with(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        responder: Responder,
    ) -> std::io::Result<LspClient> {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn()?;
        let stdin = Arc::new(AsyncMutex::new(child.stdin.take()));
        let stdout = child.stdout.take().expect("piped stdout");
        let pending: Pending = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let (orphans_tx, orphans) = mpsc::unbounded_channel();
        tokio::spawn(read_loop(
            FrameReader::new(stdout, usize::MAX),
            stdin.clone(),
            pending.clone(),
            (tx, orphans_tx),
            responder,
        ));
        Ok(LspClient {
            child,
            stdin,
            next_id: AtomicI64::new(1),
            pending,
            messages: AsyncMutex::new(rx),
            orphans: AsyncMutex::new(orphans),
        })
    }

    /// Writes one framed message with any body, valid JSON or not.
    pub async fn send_raw(&self, body: &[u8]) -> std::io::Result<()> {
        write_frame(&self.stdin, body).await
    }

    /// Writes `bytes` as they are, without framing: headers, bodies, garbage.
    pub async fn send_bytes(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let Some(stdin) = stdin.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            ));
        };
        stdin.write_all(bytes).await?;
        stdin.flush().await
    }

    pub async fn notify(&self, method: &str, params: Value) -> std::io::Result<()> {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(body.to_string().as_bytes()).await
    }

    /// Sends a request and waits for its answer. Err(RpcError) for an error answer, or
    /// code -1 when the server went away first.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.request_ordered(method, params).await.0
    }

    /// `request`, with the answer's place among the frames the server sent: a message with
    /// a larger `seq` was sent after the answer.
    pub async fn request_ordered(
        &self,
        method: &str,
        params: Value,
    ) -> (Result<Value, RpcError>, u64) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.locked().insert(id, tx);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.await_answer(rx, self.send_raw(body.to_string().as_bytes()).await)
            .await
    }

    /// Sends any body as the request with `id` (which must not collide with the client's
    /// own, counted from 1) and waits for the answer to that id.
    pub async fn request_raw(&self, id: i64, body: &[u8]) -> Result<Value, RpcError> {
        let (tx, rx) = oneshot::channel();
        self.pending.locked().insert(id, tx);
        self.await_answer(rx, self.send_raw(body).await).await.0
    }

    async fn await_answer(
        &self,
        answer: oneshot::Receiver<(Result<Value, RpcError>, u64)>,
        sent: std::io::Result<()>,
    ) -> (Result<Value, RpcError>, u64) {
        let gone = |message: String| RpcError { code: -1, message };
        if let Err(e) = sent {
            return (
                Err(gone(format!("cannot write to the server: {e}"))),
                u64::MAX,
            );
        }
        answer.await.unwrap_or_else(|_| {
            (
                Err(gone("the server closed the connection".into())),
                u64::MAX,
            )
        })
    }

    /// The next message the server sent on its own, in order; None once it has exited.
    pub async fn next_message(&self) -> Option<ServerMessage> {
        self.messages.lock().await.recv().await
    }

    /// The next answer the server sent to no request of ours (an id null, a string id, an id
    /// nobody waits for), whole; None once the server has exited.
    pub async fn next_orphan_answer(&self) -> Option<Value> {
        self.orphans.lock().await.recv().await
    }

    /// Skips messages until one with `method` arrives (returned), or the server exits.
    pub async fn wait_for(&self, method: &str) -> Option<ServerMessage> {
        while let Some(message) = self.next_message().await {
            if message.method == method {
                return Some(message);
            }
        }
        None
    }

    /// shutdown + exit, then waits for the process; returns its exit status. Stdin stays
    /// open until the server has exited, so this checks that `exit` alone ends it.
    pub async fn shutdown(mut self) -> std::io::Result<std::process::ExitStatus> {
        // Without params, as editors send it: tower-lsp answers `"params": null` with an
        // error and never runs the server's shutdown.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "shutdown"});
        let _ = self.request_raw(id, body.to_string().as_bytes()).await;
        let _ = self.notify("exit", Value::Null).await;
        let status = self.child.wait().await;
        self.stdin.lock().await.take();
        status
    }

    /// Closes the server's stdin, as a client that dies would.
    pub async fn close_stdin(&self) {
        self.stdin.lock().await.take();
    }

    /// A new agent session (`agent/session/new`); its id.
    pub async fn new_session(&self) -> Result<String, String> {
        let answer = self
            .request("agent/session/new", json!({}))
            .await
            .map_err(|e| e.to_string())?;
        answer["sessionId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("agent/session/new answered {answer}"))
    }

    /// Sends `text` to `session` and returns the turn's updates, up to its `turnEnd`; Err
    /// when the turn did not end with `endTurn`.
    pub async fn prompt_to_end(&self, session: &str, text: &str) -> Result<Vec<Value>, String> {
        let answer = self
            .request(
                "agent/session/prompt",
                json!({"sessionId": session, "text": text}),
            )
            .await
            .map_err(|e| e.to_string())?;
        let turn = answer["turnId"].as_str().unwrap_or_default().to_string();
        let mut updates = Vec::new();
        loop {
            let message = self.next_message().await.ok_or("agentls exited")?;
            if message.params["turnId"] != turn.as_str() {
                continue;
            }
            let update = message.params["update"].clone();
            if update["kind"] == "turnEnd" {
                if update["stopReason"] != "endTurn" {
                    return Err(format!("the turn ended with {update}"));
                }
                return Ok(updates);
            }
            updates.push(update);
        }
    }

    pub fn child_id(&self) -> Option<u32> {
        self.child.id()
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }
}

async fn write_frame(stdin: &AsyncMutex<Option<ChildStdin>>, body: &[u8]) -> std::io::Result<()> {
    let mut stdin = stdin.lock().await;
    let Some(stdin) = stdin.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "stdin is closed",
        ));
    };
    transport::write_frame(stdin, body).await
}

/// Reads frames until EOF: answers go to their waiting request, server requests get a
/// default answer and are passed on, notifications are passed on.
async fn read_loop(
    mut stdout: FrameReader<tokio::process::ChildStdout>,
    stdin: Arc<AsyncMutex<Option<ChildStdin>>>,
    pending: Pending,
    (messages, orphans): (
        mpsc::UnboundedSender<ServerMessage>,
        mpsc::UnboundedSender<Value>,
    ),
    responder: Responder,
) {
    let mut seq: u64 = 0;
    loop {
        let body = match stdout.next().await {
            Frame::Body(body) => {
                seq += 1;
                body
            }
            Frame::Skipped(why) => {
                eprintln!("lsp client: {why}");
                continue;
            }
            Frame::End => break,
        };
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            eprintln!("lsp client: unreadable frame from the server");
            continue;
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").cloned();
        match (method, id) {
            (Some(method), id) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                if let Some(id) = &id {
                    if let Some(answer) = answer(&responder, id, &method, &params) {
                        let _ = write_frame(&stdin, answer.as_bytes()).await;
                    }
                }
                let _ = messages.send(ServerMessage {
                    method,
                    params,
                    id,
                    seq,
                });
            }
            (None, Some(id)) => {
                let waiter = id.as_i64().and_then(|id| pending.locked().remove(&id));
                let Some(waiter) = waiter else {
                    let _ = orphans.send(message);
                    continue;
                };
                let _ = waiter.send((outcome(&message), seq));
            }
            (None, None) => eprintln!("lsp client: a frame with neither method nor id"),
        }
    }
    // Wake every waiter: the server is gone.
    pending.locked().clear();
}

/// The client's answer to the server's request `id`, as `responder` chooses (none: silence).
fn answer(responder: &Responder, id: &Value, method: &str, params: &Value) -> Option<String> {
    let answer = match responder(method, params) {
        Answer::Result(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Answer::RawResult(result) => {
            return Some(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
            ))
        }
        Answer::Error(code, text) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}})
        }
        Answer::Silence => return None,
    };
    Some(answer.to_string())
}

/// A response's result, or its error.
fn outcome(message: &Value) -> Result<Value, RpcError> {
    match message.get("error") {
        Some(error) => Err(RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }),
        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
    }
}

/// The `agentls` binary the dev kit drives: `$AGENTLS_BIN` when set, else the `agentls`
/// beside this executable (cargo builds both into the same target directory).
pub fn agentls_binary() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("AGENTLS_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = exe.with_file_name(format!("agentls{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "no agentls binary at {} (cargo build -p agentls, or set AGENTLS_BIN)",
            bin.display()
        ))
    }
}

/// agentls as an LSP server on the workspace `root`, initialized with `options`
/// (`initializationOptions`) and its log at `log_level`: how the benchmarks start agentls.
pub async fn start_agentls(
    root: &std::path::Path,
    options: Value,
    log_level: &str,
) -> Result<LspClient, String> {
    let exe = agentls_binary()?;
    let client =
        LspClient::spawn(&exe, &[], &[("AGENTLS_LOG", log_level)]).map_err(|e| e.to_string())?;
    let root_uri = tower_lsp::lsp_types::Url::from_file_path(root)
        .map_err(|()| format!("{} is not an absolute path", root.display()))?;
    client
        .request(
            "initialize",
            json!({"rootUri": root_uri, "capabilities": {}, "initializationOptions": options}),
        )
        .await
        .map_err(|e| e.to_string())?;
    client
        .notify("initialized", json!({}))
        .await
        .map_err(|e| e.to_string())?;
    Ok(client)
}
