//! The agent loop: sessions, their prompt queues, and turns (model ↔ tools) driven through a
//! [`Host`]. Each session has one worker task that runs its turns in order; a turn's
//! events are written to the session log before the client hears of them.
//!
//! - `sessions`: the sessions of a server, their queues and workers, loading and repair;
//! - `live`: a session's state in memory with its log, and `Live::record`, the one way state
//!   changes (append to the log, then apply);
//! - `turn`: one turn, from the prompt to `turnEnd`, and its tool calls, attachments and
//!   slash commands;
//! - `compact`: compaction jobs (triggers, the summary call, the swap);
//! - `gather`: the one recipe that gathers a turn's context inputs;
//! - `host`: what the loop needs from whoever runs it.

use crate::locks::Locked;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::host::{Host, Notice};
use crate::provider::Provider;
use crate::store::session_log::{self, SessionStore};
use agentls_core::context::AssemblyCache;
use agentls_core::session::Session;
use agentls_core::updates::{AgentStatus, ParentCall, Update};
use agentls_core::wire::ProviderConfig;

mod checkpoints;
mod compact;
mod hooks;
pub mod images;
mod mcp_servers;
mod memory;
mod permissions;
mod sessions;
#[cfg(test)]
mod tests;
mod turn;
mod workspace_scripts;
mod worktree;

pub use compact::CompactionOutcome;
use sessions::SessionHandle;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentError {
    pub kind: AgentErrorKind,
    /// What the user is told, as it is.
    pub message: String,
}

/// What a front door answers an agent error with (a JSON-RPC code: `lsp::session` and
/// `acp::methods` map it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentErrorKind {
    /// The id names no session of this server.
    UnknownSession,
    /// The request cannot be served as asked: a bad parameter, no model configured.
    InvalidParams,
    /// The request was fine and the work failed: the disk, a provider, a cancel.
    Failed,
}

impl AgentError {
    pub fn failed(message: impl Into<String>) -> AgentError {
        AgentError {
            kind: AgentErrorKind::Failed,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> AgentError {
        AgentError {
            kind: AgentErrorKind::InvalidParams,
            message: message.into(),
        }
    }

    pub fn unknown_session(id: &str) -> AgentError {
        AgentError {
            kind: AgentErrorKind::UnknownSession,
            message: format!("unknown session {id:?}"),
        }
    }
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub struct Agent {
    host: Arc<dyn Host>,
    sessions: Mutex<HashMap<String, Arc<SessionHandle>>>,
    cache: Arc<Mutex<AssemblyCache>>,
    provider: Mutex<Option<(String, Arc<Provider>)>>,
    /// Hook approvals of this server's life, SessionStart done, pending reminders.
    hooks: hooks::HookState,
    /// Approval policies chosen per session (`modes`); the others follow `approval`.
    modes: Mutex<HashMap<String, String>>,
    /// The user's MCP servers (started by the first turn that offers tools).
    mcp: Arc<crate::mcp::Manager>,
    /// The MCP servers an ACP client offered (they win over configured ones of their name).
    client_mcp: Mutex<Vec<agentls_core::mcp::config::ServerConfig>>,
    /// Per model: the slowest prompt speed seen (input tokens per second to the first
    /// streamed event), which decides whether a summary is worth asking for mid-turn.
    prompt_speeds: Mutex<HashMap<String, f64>>,
}

impl Agent {
    pub fn new(host: Arc<dyn Host>) -> Arc<Agent> {
        Arc::new(Agent {
            host,
            sessions: Mutex::new(HashMap::new()),
            cache: Arc::new(Mutex::new(AssemblyCache::default())),
            provider: Mutex::new(None),
            hooks: hooks::HookState::default(),
            modes: Mutex::new(HashMap::new()),
            mcp: Arc::new(crate::mcp::Manager::default()),
            client_mcp: Mutex::new(Vec::new()),
            prompt_speeds: Mutex::new(HashMap::new()),
        })
    }

    /// Notes a call of `model` that read `input_tokens` before its first streamed event
    /// after `first_event`; the slowest speed is kept (cached prefixes make later calls look
    /// faster than a summary's uncached prompt will be).
    pub(in crate::agent) fn note_prompt_speed(
        &self,
        model: &str,
        input_tokens: u64,
        first_event: std::time::Duration,
    ) {
        let seconds = first_event.as_secs_f64();
        if input_tokens == 0 || seconds <= 0.0 {
            return;
        }
        let speed = input_tokens as f64 / seconds;
        let mut speeds = self.prompt_speeds.locked();
        let slowest = speeds.entry(model.to_string()).or_insert(speed);
        *slowest = slowest.min(speed);
    }

    /// The slowest prompt speed seen for `model`, tokens per second.
    pub(in crate::agent) fn prompt_speed(&self, model: &str) -> Option<f64> {
        self.prompt_speeds.locked().get(model).copied()
    }

    fn store(&self) -> Result<SessionStore, AgentError> {
        let roots = self.host.roots();
        let workspace = roots
            .first()
            .cloned()
            .or_else(|| std::env::current_dir().ok())
            .ok_or_else(|| AgentError::failed("no workspace root and no current directory"))?;
        let state = session_log::state_dir(self.host.config().state_dir.as_deref());
        Ok(SessionStore::for_workspace(&state, &workspace))
    }

    fn default_model(&self) -> String {
        self.host.config().model.unwrap_or_default()
    }

    fn update(&self, session_id: &str, turn_id: &str, update: Update) {
        // A subagent's updates say whose `task` call they belong to.
        let parent = self
            .sessions
            .locked()
            .get(session_id)
            .and_then(|handle| handle.parent.clone())
            .map(|parent| ParentCall {
                parent_session_id: Some(parent.parent_session_id),
                parent_tool_call_id: Some(parent.parent_tool_call_id),
            })
            .unwrap_or_default();
        self.host.notify(Notice::Update {
            session_id: session_id.to_string(),
            turn_id: turn_id.to_string(),
            update,
            parent,
        });
    }

    fn status(&self, session: &Session, state: &str, used: usize, estimated: bool) {
        // The status is the chat's (its fill, its state): a subagent's session has none of
        // its own to show.
        if session.parent.is_some() {
            return;
        }
        let window = self.window_of(session).context_window;
        let mode = self.mode_of(&session.id);
        self.host.notify(Notice::Status(AgentStatus {
            session_id: session.id.clone(),
            used_tokens: used,
            context_window: window,
            fill: if window == 0 {
                1.0
            } else {
                used as f64 / window as f64
            },
            estimated,
            state: state.to_string(),
            compactions: session.compactions,
            sandbox: self.sandbox_state(&mode),
            mode,
        }));
    }

    /// The sandbox the commands of a session in `mode` run in, as the editor and the model
    /// are told: the settings', or in plan mode the read-only one without network.
    pub fn sandbox_state(&self, mode: &str) -> crate::protocol::lsp::SandboxState {
        let mut settings = self.host.config().sandbox;
        if mode == agentls_core::approval::PLAN {
            settings = agentls_core::sandbox::plan_mode(&settings);
        }
        crate::sandbox::status(&settings)
    }

    /// `environment` as a session in `mode` works: its mode and its sandbox, not the
    /// settings' (the gather recipe knows no session).
    pub fn environment_for(
        &self,
        environment: &agentls_core::environment::Environment,
        mode: &str,
    ) -> agentls_core::environment::Environment {
        crate::store::environment::current(
            environment.cwd.clone(),
            environment.workspace_roots.clone(),
            mode,
            &self.sandbox_state(mode),
        )
    }

    /// Environment variables a shell command must not see: the provider keys.
    fn hidden_env(&self) -> Vec<String> {
        let config = self.host.config();
        let mut names: Vec<String> = agentls_core::provider_kind::PRESETS
            .iter()
            .map(|preset| preset.api_key_env.to_string())
            .collect();
        if let Some(name) = config.api_key_env {
            // Wiped from /proc/self/environ before the first child that could read it.
            crate::store::secrets::capture_named(&name);
            names.push(name);
        }
        names
    }

    fn provider(&self, model: &str) -> Result<Arc<Provider>, AgentError> {
        let config = self.host.config();
        let preset = config.preset();
        if model.is_empty() {
            return Err(AgentError::invalid_params(
                "no model configured: set provider.model (or pass a model to agent/session/new)",
            ));
        }
        let base_url = config
            .base_url
            .clone()
            .unwrap_or_else(|| preset.base_url.to_string());
        let provider_config = ProviderConfig {
            kind: preset.wire,
            key_required: preset.key_required && base_url.trim_end_matches('/') == preset.base_url,
            base_url,
            model: model.to_string(),
            api_key_env: config
                .api_key_env
                .clone()
                .unwrap_or_else(|| preset.api_key_env.to_string()),
            max_output_tokens: config.max_output_tokens,
            timeout: Duration::from_millis(config.timeout_ms),
            max_retries: config.max_retries,
            temperature: config.sampling_temperature(),
            images: agentls_core::models::takes_images(config.images, model),
        };
        let key = format!("{provider_config:?}");
        let mut cached = self.provider.locked();
        if let Some((cached_key, provider)) = cached.as_ref() {
            if *cached_key == key {
                return Ok(provider.clone());
            }
        }
        let provider =
            Arc::new(Provider::new(provider_config).map_err(|e| AgentError::failed(e.message))?);
        *cached = Some((key, provider.clone()));
        Ok(provider)
    }
}

fn tokenizer_for(
    config: &agentls_core::config::Config,
    model: &str,
) -> agentls_core::tokens::TokenizerKind {
    config.tokenizer.unwrap_or_else(|| {
        if model.is_empty() {
            config.tokenizer()
        } else {
            agentls_core::tokens::TokenizerKind::for_model(model)
        }
    })
}
