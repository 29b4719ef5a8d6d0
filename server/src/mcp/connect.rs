//! One connection to one MCP server, through rmcp: a child process speaking on stdio (in a
//! process group of its own, registered so that agentls's exit kills it) or a streamable-HTTP
//! endpoint. Values are expanded (`${VAR}`) here, at the last moment, and never logged; an
//! entry of the workspace or an ACP client that names one of agentls's secrets does not
//! start; every value given to a server joins the redaction set.

use crate::locks::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedSender;

use crate::process_groups::GroupGuard;
use crate::store::secrets;
use agentls_core::mcp::config::{expand_transport, ServerConfig, ServerSource, Transport};
use agentls_core::mcp::frame::{oversized_reply, KEPT_BYTES, MAX_MESSAGE_BYTES};

/// The most of a server's stderr kept for the `failed` message.
const STDERR_TAIL: usize = 2048;
/// How long a failed start waits for the rest of the server's stderr.
const STDERR_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// What the connection tells the manager without being asked.
pub struct Handler {
    info: ClientConfig,
    server: String,
    /// `notifications/tools/list_changed`: the server's name goes to the manager.
    changed: UnboundedSender<String>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(self.server.clone());
    }

    /// `notifications/prompts/list_changed`: the same re-list (tools and prompts).
    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(self.server.clone());
    }
}

/// A live connection: the rmcp service and, for a child process, the guard that kills its
/// process group when the connection is dropped.
pub struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    pub(crate) group: Option<GroupGuard>,
    /// The last lines the server wrote to stderr (why it died, usually).
    pub stderr: Arc<Mutex<String>>,
    /// The child's pid (stdio servers): its death is noticed even when something it started
    /// keeps the pipes open.
    pub pid: Option<u32>,
    /// The child itself (stdio servers), killed and reaped when the connection is dropped.
    pub(crate) process: Option<tokio::process::Child>,
}

/// Connects (spawn or HTTP, then `initialize`). Err is a one-line reason for the user.
pub async fn connect(
    config: &ServerConfig,
    cwd: Option<&Path>,
    hidden_env: &[String],
    changed: UnboundedSender<String>,
) -> Result<Connection, String> {
    // A workspace's `.mcp.json` (or an ACP client) may not lift the provider's key, or any
    // value redaction protects, into what a server is given.
    let is_secret = |name: &str| {
        secrets::secret_name(name.as_bytes())
            || hidden_env.iter().any(|hidden| hidden == name)
            || std::env::var(name).is_ok_and(|value| secrets::is_known(&value))
    };
    if let Some(reason) = config.secret_reference(&is_secret) {
        return Err(reason);
    }
    let lookup = |name: &str| std::env::var(name).ok();
    let transport = expand_transport(&config.transport, &lookup)?;
    // What a server is given may come back in what it answers: cut from tool outputs and
    // logs like the provider's key (values shorter than the redaction minimum excepted).
    for value in transport.secret_values() {
        secrets::remember_long(&value);
    }
    // What the server writes on stderr may carry the keys it was given: cut before it is
    // logged or kept for the `failed` message.
    let cleaner = Cleaner {
        secrets: Arc::new(transport.secret_values()),
    };
    let handler = Handler {
        info: ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentls", env!("CARGO_PKG_VERSION")),
        ),
        server: config.name.clone(),
        changed,
    };
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd: own_cwd,
        } => {
            let child = Child {
                command,
                args,
                env,
                cwd: own_cwd.map(PathBuf::from).or(cwd.map(Into::into)),
            };
            // A server the user did not configure (a workspace's, an ACP client's) gets
            // none of the captured secrets: only what its entry passes, which may not name
            // them. The user's own servers inherit them, as the shell tool's commands do.
            let mut hidden = hidden_env.to_vec();
            if config.source != ServerSource::Settings {
                hidden.extend(secrets::captured_names());
            }
            connect_stdio(config, child, &hidden, handler, cleaner).await
        }
        Transport::Http { url, headers } => {
            connect_http(config, url, headers, handler, &cleaner).await
        }
    }
}

/// Cuts the server's secrets (and the process's) out of a text about it.
#[derive(Clone)]
struct Cleaner {
    secrets: Arc<Vec<String>>,
}

impl Cleaner {
    fn clean(&self, text: &str) -> String {
        let text = agentls_core::redact::redact(text, &self.secrets);
        secrets::redact(&text).into_owned()
    }
}

/// A stdio server's process, its values expanded.
struct Child {
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
}

/// Spawns the server in a process group of its own and initializes it over its stdio; its
/// stderr is kept (cleaned) for the reason it stops. Its stdout reaches rmcp through
/// `bounded_lines`, so an answer too big to read fails its request instead of vanishing.
async fn connect_stdio(
    config: &ServerConfig,
    child: Child,
    hidden_env: &[String],
    handler: Handler,
    cleaner: Cleaner,
) -> Result<Connection, String> {
    let mut cmd = tokio::process::Command::new(&child.command);
    cmd.args(&child.args);
    for name in hidden_env {
        cmd.env_remove(name);
    }
    cmd.envs(child.env);
    if let Some(dir) = child.cwd {
        cmd.current_dir(dir);
    }
    crate::process_groups::own_group(&mut cmd);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", child.command))?;
    let pid = process.id();
    let group = GroupGuard::new(pid);
    let (Some(stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
        return Err("the server's stdio could not be opened".into());
    };
    let (reader, writer) = tokio::io::duplex(64 * 1024);
    let name = config.name.clone();
    tokio::spawn(bounded_lines(stdout, writer, name, MAX_MESSAGE_BYTES));
    let transport =
        rmcp::transport::async_rw::AsyncRwTransport::<RoleClient, _, _>::new_client(reader, stdin);
    let stderr = Arc::new(Mutex::new(String::new()));
    let pump = process.stderr.take().map(|pipe| {
        tokio::spawn(keep_stderr(
            pipe,
            stderr.clone(),
            config.name.clone(),
            cleaner,
        ))
    });
    let service = match handler.serve(transport).await {
        Ok(service) => service,
        Err(e) => {
            // A server that dies at start says why on stderr: read it to its end (the
            // process is gone, so it ends at once; a child it left holding the pipe gets
            // half a second).
            if let Some(pump) = pump {
                let _ = tokio::time::timeout(STDERR_GRACE, pump).await;
            }
            let tail = last_line(&stderr.locked());
            return Err(match tail {
                Some(line) => format!("initialize failed: {e} (stderr: {line})"),
                None => format!("initialize failed: {e}"),
            });
        }
    };
    Ok(Connection {
        service,
        group: Some(group),
        stderr,
        pid,
        process: Some(process),
    })
}

/// The line being read past `MAX_MESSAGE_BYTES`: its start and end (where its `id` is), and
/// its length so far.
struct Oversized {
    head: Vec<u8>,
    tail: Vec<u8>,
    len: usize,
}

impl Oversized {
    fn new(line: &[u8]) -> Oversized {
        Oversized {
            head: line[..KEPT_BYTES.min(line.len())].to_vec(),
            tail: line[line.len().saturating_sub(KEPT_BYTES)..].to_vec(),
            len: line.len(),
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.len += chunk.len();
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * KEPT_BYTES {
            self.tail.drain(..self.tail.len() - KEPT_BYTES);
        }
    }
}

/// Copies the server's stdout to `out` line by line; a line past `limit` bytes
/// (`MAX_MESSAGE_BYTES`) is not copied (rmcp would drop it, and its request would wait out
/// `timeoutMs`) but answered in its place by an error to the same request id
/// (`frame::oversized_reply`).
async fn bounded_lines(
    stdout: impl AsyncRead + Unpin,
    mut out: impl tokio::io::AsyncWrite + Unpin,
    server: String,
    limit: usize,
) {
    let mut reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut over: Option<Oversized> = None;
    loop {
        let (used, end) = match reader.fill_buf().await {
            Ok([]) | Err(_) => return,
            Ok(buf) => {
                let (chunk, end) = match buf.iter().position(|&b| b == b'\n') {
                    Some(i) => (&buf[..=i], true),
                    None => (buf, false),
                };
                match &mut over {
                    Some(over) => over.push(chunk),
                    None => {
                        line.extend_from_slice(chunk);
                        if line.len() > limit {
                            over = Some(Oversized::new(&line));
                            line = Vec::new();
                        }
                    }
                }
                (chunk.len(), end)
            }
        };
        reader.consume(used);
        if !end {
            continue;
        }
        let written = match over.take() {
            None => out.write_all(&line).await,
            Some(over) => match oversized_reply(&over.head, &over.tail, over.len, limit) {
                Some(reply) => out.write_all(format!("{reply}\n").as_bytes()).await,
                None => {
                    tracing::warn!(server = %server, bytes = over.len, "MCP message past the limit without a request id dropped");
                    Ok(())
                }
            },
        };
        line.clear();
        line.shrink_to(64 * 1024);
        if written.is_err() {
            return;
        }
    }
}

/// Reads the server's stderr to its end: logged (cleaned), its last `STDERR_TAIL` bytes
/// kept in `tail`.
async fn keep_stderr(
    mut pipe: impl AsyncRead + Unpin,
    tail: Arc<Mutex<String>>,
    server: String,
    cleaner: Cleaner,
) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&buf[..n]);
        tracing::debug!(server = %server, "MCP stderr: {}", cleaner.clean(&text).trim_end());
        let mut tail = tail.locked();
        tail.push_str(&text);
        // Whole again: a key split between two reads is cut too.
        *tail = cleaner.clean(&tail);
        if tail.len() > STDERR_TAIL {
            let mut cut = tail.len() - STDERR_TAIL;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    }
}

/// Initializes a streamable-HTTP server at `url`, sending `headers` with every request.
async fn connect_http(
    config: &ServerConfig,
    url: String,
    headers: Vec<(String, String)>,
    handler: Handler,
    cleaner: &Cleaner,
) -> Result<Connection, String> {
    crate::provider::tls::install();
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header {name:?}: {e}"))?;
        let value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| format!("header {name}: the value is not a valid header"))?;
        custom.insert(name, value);
    }
    let http = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(http);
    let service = handler
        .serve(transport)
        .await
        // The URL as written (`${VAR}` unexpanded): a key in it stays out of the message.
        .map_err(|e| cleaner.clean(&format!("initialize failed at {}: {e}", config.describe())))?;
    Ok(Connection {
        service,
        group: None,
        stderr: Arc::new(Mutex::new(String::new())),
        pid: None,
        process: None,
    })
}

/// The last non-blank line of `text`, shortened.
pub fn last_line(text: &str) -> Option<String> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    Some(agentls_core::tool_info::shorten(line))
}

/// Returns once process `pid` has exited (gone, or a zombie not reaped yet); never for None.
/// Polled through /proc: the child is owned by the transport, which waits for it only when
/// dropped.
pub async fn exited(pid: Option<u32>) {
    let Some(pid) = pid else {
        return std::future::pending().await;
    };
    while !crate::process_groups::gone(pid) {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::bounded_lines;

    #[tokio::test]
    async fn a_line_past_the_limit_becomes_an_error_to_its_request_and_the_others_pass() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\"{}\"}}\n",
            "x".repeat(300_000)
        );
        let stdout = format!(
            "{{\"id\":1}}\n{big}{{\"method\":\"{}\"}}\n{{\"id\":5}}\n",
            "y".repeat(300_000)
        );
        let mut out = Vec::new();
        bounded_lines(stdout.as_bytes(), &mut out, "s".into(), 100_000).await;
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines.len(),
            3,
            "the notification past the limit is dropped: {lines:?}"
        );
        assert_eq!(lines[0]["id"], 1);
        assert_eq!(lines[1]["id"], 4);
        let message = lines[1]["error"]["message"].as_str().unwrap();
        assert!(message.contains("past agentls's limit"), "{message}");
        assert_eq!(lines[2]["id"], 5);
    }
}
