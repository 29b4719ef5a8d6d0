//! One connection to one MCP server, through rmcp: a child process speaking on stdio (in a
//! process group of its own, registered so that agentls's exit kills it) or a streamable-HTTP
//! endpoint. Values are expanded (`${VAR}`) here, at the last moment, and never logged.

use crate::locks::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc::UnboundedSender;

use crate::process_groups::GroupGuard;
use agentls_core::mcp::config::{expand_transport, ServerConfig, Transport};

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
}

/// Connects (spawn or HTTP, then `initialize`). Err is a one-line reason for the user.
pub async fn connect(
    config: &ServerConfig,
    cwd: Option<&Path>,
    hidden_env: &[String],
    changed: UnboundedSender<String>,
) -> Result<Connection, String> {
    let lookup = |name: &str| std::env::var(name).ok();
    let transport = expand_transport(&config.transport, &lookup)?;
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
            connect_stdio(config, child, hidden_env, handler, cleaner).await
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
        crate::store::secrets::redact(&text).into_owned()
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
/// stderr is kept (cleaned) for the reason it stops.
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
    let (transport, child_stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", child.command))?;
    let pid = transport.id();
    let group = GroupGuard::new(pid);
    let stderr = Arc::new(Mutex::new(String::new()));
    let pump = child_stderr.map(|pipe| {
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
    })
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
