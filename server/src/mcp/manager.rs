//! Every configured MCP server of this agentls process: its state (`starting`, `ready`,
//! `failed`, `disabled`), its tools, and the calls to them. Servers start in the background
//! (`ensure`, from the first session that needs them: `initialize` never waits), each under
//! a supervisor task that reconnects with backoff when a ready server stops, and is stopped
//! (its process group killed) when its entry goes away or agentls exits.
//!
//! Must not: decide names, schemas or result text (core `mcp`), talk to the editor or the
//! session log (the turn does, through `agent::turn::mcp_calls`).

use crate::locks::Locked;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::{Peer, RoleClient};
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::mcp::connect::{connect, exited, last_line, Connection};
use agentls_core::mcp::config::ServerConfig;
use agentls_core::mcp::prompts::{McpPrompt, ServerPrompt};
use agentls_core::mcp::tools::{offer, parse_list, McpTool, ServerTool};

mod prompts;

/// Restarts in a row (each after a short life) before a server is left `failed`.
const MAX_RESTARTS: u32 = 5;
/// A server that ran this long before stopping starts its restart count again.
const STABLE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Connecting; the message says why again (after a crash).
    Starting(Option<String>),
    Ready,
    Failed(String),
    Disabled,
}

impl State {
    fn name(&self) -> &'static str {
        match self {
            State::Starting(_) => "starting",
            State::Ready => "ready",
            State::Failed(_) => "failed",
            State::Disabled => "disabled",
        }
    }
}

struct Slot {
    config: ServerConfig,
    state: State,
    tools: Vec<ServerTool>,
    /// Its prompts (`prompts/list`; empty when it offers none).
    prompts: Vec<ServerPrompt>,
    peer: Option<Peer<RoleClient>>,
    stop: CancellationToken,
    /// Which supervisor owns the slot (a changed entry gets a new one).
    generation: u64,
}

#[derive(Default)]
struct Inner {
    servers: BTreeMap<String, Slot>,
    /// The offered tools, named, recomputed whenever a server's set changes.
    offered: Vec<McpTool>,
    /// The ready servers' prompts as slash commands, named, recomputed with `offered`.
    offered_prompts: Vec<McpPrompt>,
    generations: u64,
    /// Bumped whenever a server's state or tool set may have changed (`subscribe`).
    changes: watch::Sender<u64>,
}

/// The MCP servers of this process.
pub struct Manager {
    inner: Mutex<Inner>,
    changed: OnceLock<UnboundedSender<String>>,
}

/// Where and how servers start (the workspace root, variables they must not see).
#[derive(Debug, Clone, Default)]
pub struct Launch {
    pub cwd: Option<PathBuf>,
    pub hidden_env: Vec<String>,
}

impl Default for Manager {
    fn default() -> Self {
        Manager {
            inner: Mutex::new(Inner::default()),
            changed: OnceLock::new(),
        }
    }
}

impl Manager {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.locked())
    }

    /// Makes the running servers those of `configs`: new or changed entries start in the
    /// background, removed ones stop. Cheap when nothing changed (called at each session
    /// and turn).
    pub fn ensure(self: &Arc<Self>, configs: &[ServerConfig], launch: &Launch) {
        let changed = self
            .changed
            .get_or_init(|| {
                let (tx, rx) = unbounded_channel();
                tokio::spawn(relist(Arc::downgrade(self), rx));
                tx
            })
            .clone();
        let mut starts = Vec::new();
        self.with(|inner| {
            inner.servers.retain(|name, slot| {
                let keep = configs.iter().any(|c| &c.name == name && *c == slot.config);
                if !keep {
                    slot.stop.cancel();
                }
                keep
            });
            for config in configs {
                if inner.servers.contains_key(&config.name) {
                    continue;
                }
                let stop = CancellationToken::new();
                inner.generations += 1;
                let generation = inner.generations;
                let state = if config.enabled {
                    starts.push((config.clone(), stop.clone(), generation));
                    State::Starting(None)
                } else {
                    State::Disabled
                };
                inner.servers.insert(
                    config.name.clone(),
                    Slot {
                        config: config.clone(),
                        state,
                        tools: Vec::new(),
                        prompts: Vec::new(),
                        peer: None,
                        stop,
                        generation,
                    },
                );
            }
            recompute(inner);
        });
        for (config, stop, generation) in starts {
            tracing::info!(server = %config.name, "starting MCP server: {}", config.describe());
            tokio::spawn(supervise(
                Arc::downgrade(self),
                config,
                stop,
                generation,
                launch.clone(),
                changed.clone(),
            ));
        }
    }

    /// `agent/mcp/status`'s answer.
    pub fn status(&self) -> Value {
        self.with(|inner| {
            let servers: Vec<Value> = inner
                .servers
                .values()
                .map(|slot| {
                    let tools = inner
                        .offered
                        .iter()
                        .filter(|t| t.server == slot.config.name)
                        .count();
                    let mut entry = json!({
                        "name": slot.config.name,
                        "state": slot.state.name(),
                        "tools": tools,
                        "source": slot.config.source.name(),
                    });
                    match &slot.state {
                        State::Failed(message) | State::Starting(Some(message)) => {
                            entry["message"] = json!(message);
                        }
                        _ => {}
                    }
                    entry
                })
                .collect();
            json!({ "servers": servers })
        })
    }

    /// Wakes whenever a server's state or tool set may have changed: the receiver reads
    /// `status` again (several changes before it looks are seen as one).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.with(|inner| inner.changes.subscribe())
    }

    /// The tools offered now, in the stable order.
    pub fn tools(&self) -> Vec<McpTool> {
        self.with(|inner| inner.offered.clone())
    }

    /// The offered tool named `name` (`mcp__SERVER__TOOL`).
    pub fn tool(&self, name: &str) -> Option<McpTool> {
        self.with(|inner| inner.offered.iter().find(|t| t.name == name).cloned())
    }

    /// Calls `tool` with `arguments`: the output for the model and whether it succeeded. A
    /// cancel or the server's `timeoutMs` drops the request, which sends
    /// `notifications/cancelled` to the server.
    pub async fn call(
        &self,
        tool: &McpTool,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> (String, bool) {
        let found = self.with(|inner| {
            inner.servers.get(&tool.server).map(|slot| {
                (
                    slot.peer.clone(),
                    slot.state.clone(),
                    slot.config.call_timeout,
                )
            })
        });
        let Some((peer, state, timeout)) = found else {
            return (
                format!("the MCP server {} is no longer configured", tool.server),
                false,
            );
        };
        let Some(peer) = peer else {
            let why = match state {
                State::Failed(message) => format!("it failed: {message}"),
                State::Starting(Some(message)) => format!("it is restarting ({message})"),
                other => format!("it is {}", other.name()),
            };
            return (
                format!("the MCP server {} is not ready: {why}", tool.server),
                false,
            );
        };
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let params = CallToolRequestParams::new(tool.tool.tool.clone()).with_arguments(arguments);
        tokio::select! {
            result = peer.call_tool(params) => match result {
                Ok(result) => {
                    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                    agentls_core::mcp::output::render(&tool.server, &tool.tool.tool, &value)
                }
                Err(err) => (
                    format!(
                        "the MCP server {} failed the call to {}: {err}",
                        tool.server, tool.tool.tool
                    ),
                    false,
                ),
            },
            () = cancel.cancelled() => (
                format!("the call to {} was cancelled", tool.name),
                false,
            ),
            () = tokio::time::sleep(timeout) => (
                format!(
                    "the MCP server {} did not answer {} within {} ms (its timeoutMs); the call was cancelled",
                    tool.server, tool.tool.tool, timeout.as_millis()
                ),
                false,
            ),
        }
    }

    fn set(&self, server: &str, generation: u64, f: impl FnOnce(&mut Slot)) {
        self.with(|inner| {
            // A slot replaced since (the entry changed) is not this supervisor's any more.
            if let Some(slot) = inner
                .servers
                .get_mut(server)
                .filter(|slot| slot.generation == generation)
            {
                f(slot);
                recompute(inner);
            }
        });
    }
}

fn recompute(inner: &mut Inner) {
    let ready: Vec<(&ServerConfig, &[ServerTool])> = inner
        .servers
        .values()
        .filter(|slot| slot.state == State::Ready)
        .map(|slot| (&slot.config, slot.tools.as_slice()))
        .collect();
    let (offered, notes) = offer(&ready);
    for note in notes {
        tracing::info!("{note}");
    }
    inner.offered = offered;
    let ready: Vec<(&str, &[ServerPrompt])> = inner
        .servers
        .values()
        .filter(|slot| slot.state == State::Ready)
        .map(|slot| (slot.config.name.as_str(), slot.prompts.as_slice()))
        .collect();
    let (prompts, notes) = agentls_core::mcp::prompts::offer(&ready);
    for note in notes {
        tracing::info!("{note}");
    }
    inner.offered_prompts = prompts;
    inner.changes.send_modify(|n| *n = n.wrapping_add(1));
}

/// Lists a server's tools (every page).
async fn list_tools(peer: &Peer<RoleClient>, server: &str) -> Result<Vec<ServerTool>, String> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let value = serde_json::to_value(&tools).unwrap_or(Value::Null);
    let (tools, notes) = parse_list(&value);
    for note in notes {
        tracing::info!(server = %server, "MCP {note}");
    }
    Ok(tools)
}

/// One server's life: connect, serve until it stops, reconnect with backoff.
async fn supervise(
    manager: std::sync::Weak<Manager>,
    config: ServerConfig,
    stop: CancellationToken,
    generation: u64,
    launch: Launch,
    changed: UnboundedSender<String>,
) {
    let supervisor = Supervisor {
        manager,
        name: config.name.clone(),
        config,
        stop,
        generation,
        launch,
        changed,
    };
    supervisor.run().await;
}

/// One server's supervisor: what it needs to start the server again, and its slot's
/// address (name and generation) in the manager.
struct Supervisor {
    manager: std::sync::Weak<Manager>,
    name: String,
    config: ServerConfig,
    stop: CancellationToken,
    generation: u64,
    launch: Launch,
    changed: UnboundedSender<String>,
}

/// A server that answered `initialize` and its lists.
struct Started {
    connection: Connection,
    tools: Vec<ServerTool>,
    prompts: Vec<ServerPrompt>,
}

impl Supervisor {
    /// Starts the server, serves it while it runs, restarts it with backoff; returns when
    /// stopped, when the manager is gone, or when the server is left `failed`.
    async fn run(&self) {
        let mut restarts = 0u32;
        loop {
            let started = tokio::select! {
                () = self.stop.cancelled() => return,
                result = self.start() => result,
            };
            let started = match started {
                Ok(started) => started,
                Err(reason) => {
                    tracing::warn!(server = %self.name, "MCP server failed: {reason}");
                    if restarts == 0 || restarts >= MAX_RESTARTS {
                        self.set(|slot| slot.state = State::Failed(reason));
                        return;
                    }
                    restarts += 1;
                    if !self.set(|slot| slot.state = State::Starting(Some(reason.clone())))
                        || backoff(&self.stop, restarts).await
                    {
                        return;
                    }
                    continue;
                }
            };
            let since = Instant::now();
            let Some(reason) = self.serve(started).await else {
                return;
            };
            tracing::warn!(server = %self.name, "MCP {reason}; restarting");
            if since.elapsed() >= STABLE {
                restarts = 0;
            }
            restarts += 1;
            if !self.stopped(reason, restarts) || backoff(&self.stop, restarts).await {
                return;
            }
        }
    }

    /// One start: connect, `initialize`, the tools and prompts listed, within
    /// `startupTimeoutMs`.
    async fn start(&self) -> Result<Started, String> {
        let attempt = async {
            let connection = connect(
                &self.config,
                self.launch.cwd.as_deref(),
                &self.launch.hidden_env,
                self.changed.clone(),
            )
            .await?;
            let tools = list_tools(connection.service.peer(), &self.name).await?;
            let prompts = prompts::list_prompts(connection.service.peer(), &self.name).await;
            Ok(Started {
                connection,
                tools,
                prompts,
            })
        };
        tokio::time::timeout(self.config.startup_timeout, attempt)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "did not start within {} ms (startupTimeoutMs)",
                    self.config.startup_timeout.as_millis()
                ))
            })
    }

    /// The server ready in its slot until its connection ends: why it stopped, or None
    /// when it was stopped (or the manager is gone).
    async fn serve(&self, started: Started) -> Option<String> {
        let Started {
            connection,
            tools,
            prompts,
        } = started;
        let peer = connection.service.peer().clone();
        tracing::info!(server = %self.name, tools = tools.len(), "MCP server ready");
        let set = self.set(|slot| {
            slot.state = State::Ready;
            slot.tools = tools;
            slot.prompts = prompts;
            slot.peer = Some(peer);
        });
        if !set {
            return None;
        }
        let ended = connection.service.cancellation_token();
        let stderr = connection.stderr.clone();
        // The child and its group go together, once the connection ended or was stopped.
        let group = (connection.group, connection.process);
        let pid = connection.pid;
        tokio::select! {
            () = self.stop.cancelled() => {
                ended.cancel();
                drop(group);
                return None;
            }
            _ = connection.service.waiting() => {}
            // The process died while something it started holds its stdout open: no EOF
            // comes, so its death ends the connection (and fails the calls in flight).
            () = exited(pid) => ended.cancel(),
        }
        drop(group);
        let reason = match last_line(&stderr.locked()) {
            Some(line) => format!("the server stopped ({line})"),
            None => "the server stopped".to_string(),
        };
        Some(reason)
    }

    /// The slot after the server stopped for `reason`, its `restarts`-th time in a row:
    /// `starting` again, or `failed` past `MAX_RESTARTS`. False when it is not restarted.
    fn stopped(&self, reason: String, restarts: u32) -> bool {
        if restarts > MAX_RESTARTS {
            self.set(|slot| {
                slot.state = State::Failed(format!(
                    "{reason}; stopped {MAX_RESTARTS} times in a row, not restarted"
                ));
                slot.peer = None;
            });
            return false;
        }
        self.set(|slot| {
            slot.state = State::Starting(Some(reason));
            slot.peer = None;
            slot.tools.clear();
            slot.prompts.clear();
        })
    }

    /// Changes this supervisor's slot; false when the manager is gone.
    fn set(&self, f: impl FnOnce(&mut Slot)) -> bool {
        match self.manager.upgrade() {
            Some(manager) => {
                manager.set(&self.name, self.generation, f);
                true
            }
            None => false,
        }
    }
}

/// Waits before restart `n` (0.5 s, 1 s, 2 s, … up to 30 s); true when stopped meanwhile.
async fn backoff(stop: &CancellationToken, n: u32) -> bool {
    let delay = Duration::from_millis(500u64.saturating_mul(1 << n.saturating_sub(1).min(6)))
        .min(Duration::from_secs(30));
    tokio::select! {
        () = stop.cancelled() => true,
        () = tokio::time::sleep(delay) => false,
    }
}

/// Re-lists the tools and prompts of a server that sent `notifications/tools/list_changed`
/// or `notifications/prompts/list_changed`: the new set is offered from the next model
/// request (the prompts from the next `agent/session/commands` and prompt).
async fn relist(manager: std::sync::Weak<Manager>, mut names: UnboundedReceiver<String>) {
    while let Some(name) = names.recv().await {
        let Some(this) = manager.upgrade() else {
            return;
        };
        let peer = this.with(|inner| inner.servers.get(&name).and_then(|s| s.peer.clone()));
        drop(this);
        let Some(peer) = peer else { continue };
        let prompts = prompts::list_prompts(&peer, &name).await;
        match list_tools(&peer, &name).await {
            Ok(tools) => {
                let Some(this) = manager.upgrade() else {
                    return;
                };
                this.with(|inner| {
                    if let Some(slot) = inner.servers.get_mut(&name) {
                        slot.tools = tools;
                        slot.prompts = prompts;
                    }
                    recompute(inner);
                });
            }
            Err(err) => tracing::warn!(server = %name, "MCP {err}"),
        }
    }
}
