//! One connection to one MCP server, through rmcp: a child process speaking on stdio (in a
//! process group of its own, registered so that agentls's exit kills it) or a streamable-HTTP
//! endpoint. Values are expanded (`${VAR}`) here, at the last moment, and never logged.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;
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
    cwd: Option<&std::path::Path>,
    hidden_env: &[String],
    changed: UnboundedSender<String>,
) -> Result<Connection, String> {
    let lookup = |name: &str| std::env::var(name).ok();
    let transport = expand_transport(&config.transport, &lookup)?;
    // What the server writes on stderr may carry the keys it was given: cut before it is
    // logged or kept for the `failed` message.
    let secrets = transport.secret_values();
    let clean = move |text: &str| -> String {
        let text = agentls_core::redact::redact(text, &secrets);
        crate::store::secrets::redact(&text).into_owned()
    };
    let handler = Handler {
        info: ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentls", env!("CARGO_PKG_VERSION")),
        ),
        server: config.name.clone(),
        changed,
    };
    let stderr = Arc::new(Mutex::new(String::new()));
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd: own_cwd,
        } => {
            let mut cmd = tokio::process::Command::new(&command);
            cmd.args(&args);
            for name in hidden_env {
                cmd.env_remove(name);
            }
            cmd.envs(env);
            if let Some(dir) = own_cwd
                .map(std::path::PathBuf::from)
                .or(cwd.map(Into::into))
            {
                cmd.current_dir(dir);
            }
            cmd.process_group(0).kill_on_drop(true);
            let (transport, child_stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let pid = transport.id();
            let group = GroupGuard::new(pid);
            let mut pump = None;
            if let Some(mut pipe) = child_stderr {
                let tail = stderr.clone();
                let name = config.name.clone();
                let clean = clean.clone();
                pump = Some(tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while let Ok(n) = pipe.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let text = String::from_utf8_lossy(&buf[..n]);
                        tracing::debug!(server = %name, "MCP stderr: {}", clean(&text).trim_end());
                        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                        tail.push_str(&text);
                        // Whole again: a key split between two reads is cut too.
                        *tail = clean(&tail);
                        if tail.len() > STDERR_TAIL {
                            let mut cut = tail.len() - STDERR_TAIL;
                            while !tail.is_char_boundary(cut) {
                                cut += 1;
                            }
                            tail.drain(..cut);
                        }
                    }
                }));
            }
            let service = match handler.serve(transport).await {
                Ok(service) => service,
                Err(e) => {
                    // A server that dies at start says why on stderr: read it to its end
                    // (the process is gone, so it ends at once; a child it left holding the
                    // pipe gets half a second).
                    if let Some(pump) = pump {
                        let _ = tokio::time::timeout(STDERR_GRACE, pump).await;
                    }
                    let tail = last_line(&stderr.lock().unwrap_or_else(|e| e.into_inner()));
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
        Transport::Http { url, headers } => {
            crate::provider::tls::install();
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| format!("header {name:?}: {e}"))?;
                let value = reqwest::header::HeaderValue::from_str(&value)
                    .map_err(|_| format!("header {name}: the value is not a valid header"))?;
                custom.insert(name, value);
            }
            let http = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
                .custom_headers(custom);
            let transport = rmcp::transport::StreamableHttpClientTransport::from_config(http);
            let service = handler
                .serve(transport)
                .await
                // The URL as written (`${VAR}` unexpanded): a key in it stays out of the message.
                .map_err(|e| clean(&format!("initialize failed at {}: {e}", config.describe())))?;
            Ok(Connection {
                service,
                group: None,
                stderr,
                pid: None,
            })
        }
    }
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
