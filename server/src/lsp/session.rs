//! The `agent/session/*` requests: thin translations to the agent (`crate::agent`) and back.

use super::{internal_error, invalid_params, Backend};
use crate::agent::{AgentError, AgentErrorKind};
use crate::gather;
use crate::host::Gathered;
use crate::locks::Locked;
use crate::protocol::lsp::{
    McpResourceList, McpServers, SessionApplyWorktreeResult, SessionCancelParams,
    SessionCancelResult, SessionCommandsResult, SessionCompactParams, SessionCompactResult,
    SessionContextParams, SessionListParams, SessionListResult, SessionLoadResult,
    SessionNewParams, SessionNewResult, SessionPromptParams, SessionPromptResult,
    SessionSetModeParams, SessionSetModeResult, SessionSetModelParams, SessionSetModelResult,
    SessionWorktree,
};
use crate::protocol::shapes::SessionIdParams;
use crate::protocol::Json;
use agentls_core::editor_state::EditorState;
use agentls_core::history::History;
use agentls_core::inspect::{self, ContextReport};
use agentls_core::tokens::Calibration;
use serde_json::Value;
use tower_lsp::jsonrpc;

pub(super) fn agent_error(err: AgentError) -> jsonrpc::Error {
    match err.kind {
        AgentErrorKind::UnknownSession | AgentErrorKind::InvalidParams => {
            invalid_params(err.message)
        }
        AgentErrorKind::Failed => jsonrpc::Error {
            code: jsonrpc::ErrorCode::ServerError(-32803),
            message: err.message.into(),
            data: None,
        },
    }
}

impl Backend {
    pub(super) async fn session_new(
        &self,
        params: Option<SessionNewParams>,
    ) -> jsonrpc::Result<SessionNewResult> {
        let params = params.unwrap_or_default();
        if params.worktree {
            let (session_id, link) = self
                .agent()
                .new_session_apart(params.model)
                .await
                .map_err(agent_error)?;
            return Ok(SessionNewResult {
                session_id,
                worktree: Some(SessionWorktree {
                    path: link.path,
                    branch: link.branch,
                }),
            });
        }
        let session_id = self
            .agent()
            .new_session(params.model)
            .await
            .map_err(agent_error)?;
        Ok(SessionNewResult {
            session_id,
            worktree: None,
        })
    }

    /// `agent/session/applyWorktree`: a session's worktree brought into the workspace.
    pub(super) async fn session_apply_worktree(
        &self,
        params: SessionIdParams,
    ) -> jsonrpc::Result<SessionApplyWorktreeResult> {
        self.agent()
            .apply_worktree(&params.session_id)
            .await
            .map_err(agent_error)
    }

    pub(super) async fn session_list(
        &self,
        params: Option<SessionListParams>,
    ) -> jsonrpc::Result<SessionListResult> {
        let include_children = params.is_some_and(|p| p.include_children);
        let sessions = self
            .agent()
            .list(include_children)
            .await
            .map_err(agent_error)?;
        Ok(SessionListResult { sessions })
    }

    /// `agent/mcp/status`: the MCP servers, their state and tool count.
    pub(super) async fn mcp_status(
        &self,
        _params: Option<Value>,
    ) -> jsonrpc::Result<Json<McpServers>> {
        Ok(Json::new(self.agent().mcp_status()))
    }

    /// `agent/sandbox/status {}`: the command sandbox the settings ask for and this machine
    /// gives.
    pub(super) async fn sandbox_status(
        &self,
        _params: Option<Value>,
    ) -> jsonrpc::Result<crate::protocol::lsp::SandboxState> {
        Ok(crate::sandbox::status(&self.state.config().sandbox))
    }

    /// `agent/permissions {}`: the standing permission rules in force and the ignored ones.
    pub(super) async fn permissions(
        &self,
        _params: Option<Value>,
    ) -> jsonrpc::Result<crate::protocol::lsp::PermissionRules> {
        Ok(self.agent().permissions())
    }

    /// `agent/memory {sessionId?}`: the memory files and their entries, and the session's
    /// facts offered for keeping.
    pub(super) async fn memory(
        &self,
        params: Option<crate::protocol::lsp::MemoryParams>,
    ) -> jsonrpc::Result<crate::protocol::lsp::MemoryState> {
        let params = params.unwrap_or_default();
        self.agent()
            .memory(params.session_id.as_deref())
            .await
            .map_err(agent_error)
    }

    /// `agent/memory/keep {fact, scope?}`: a fact the user chose, kept as theirs.
    pub(super) async fn memory_keep(
        &self,
        params: crate::protocol::lsp::MemoryKeepParams,
    ) -> jsonrpc::Result<crate::protocol::lsp::MemoryKeepResult> {
        self.agent()
            .keep_memory(&params.fact, params.scope.as_deref())
            .await
            .map_err(agent_error)
    }

    /// `agent/mcp/resources {}`: the ready MCP servers' resources, for completion.
    pub(super) async fn mcp_resources(
        &self,
        _params: Option<Value>,
    ) -> jsonrpc::Result<Json<McpResourceList>> {
        Ok(Json::new(self.agent().mcp_resources().await))
    }

    /// `agent/session/commands`: the built-in and custom slash commands, for completion.
    pub(super) async fn session_commands(
        &self,
        params: SessionIdParams,
    ) -> jsonrpc::Result<SessionCommandsResult> {
        let commands = self
            .agent()
            .commands(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(SessionCommandsResult { commands })
    }

    pub(super) async fn session_load(
        &self,
        params: SessionIdParams,
    ) -> jsonrpc::Result<SessionLoadResult> {
        let items = self
            .agent()
            .load(&params.session_id)
            .await
            .map_err(agent_error)?;
        let worktree = self
            .agent()
            .worktree_of(&params.session_id)
            .await
            .map_err(agent_error)?
            .map(|link| SessionWorktree {
                path: link.path,
                branch: link.branch,
            });
        Ok(SessionLoadResult {
            session_id: params.session_id,
            items,
            worktree,
        })
    }

    pub(super) async fn session_prompt(
        &self,
        params: SessionPromptParams,
    ) -> jsonrpc::Result<SessionPromptResult> {
        let images = params
            .images
            .into_iter()
            .map(|image| crate::agent::images::ImageInput {
                mime_type: image.mime_type,
                data: image.data,
                path: image.path,
            })
            .collect();
        let turn_id = self
            .agent()
            .prompt_with_images(&params.session_id, params.text, params.editor, images)
            .await
            .map_err(agent_error)?;
        Ok(SessionPromptResult { turn_id })
    }

    pub(super) async fn session_cancel(
        &self,
        params: SessionCancelParams,
    ) -> jsonrpc::Result<SessionCancelResult> {
        let agent = self.agent();
        let cancelled = if params.stop_background {
            agent.cancel_all(&params.session_id).await
        } else {
            agent.cancel(&params.session_id).await
        }
        .map_err(agent_error)?;
        Ok(SessionCancelResult { cancelled })
    }

    pub(super) async fn session_compact(
        &self,
        params: SessionCompactParams,
    ) -> jsonrpc::Result<SessionCompactResult> {
        self.agent()
            .compact(&params.session_id, params.instructions)
            .await
            .map_err(agent_error)
    }

    pub(super) async fn session_set_model(
        &self,
        params: SessionSetModelParams,
    ) -> jsonrpc::Result<SessionSetModelResult> {
        if params.context_window == Some(0) {
            return Err(invalid_params("contextWindow must be a positive integer"));
        }
        let compacted = self
            .agent()
            .set_model(&params.session_id, params.model, params.context_window)
            .await
            .map_err(agent_error)?;
        Ok(SessionSetModelResult { compacted })
    }

    /// `agent/session/setMode`: the session's approval policy (`ask`, `auto-edit`,
    /// `full-auto`, `plan`), for this session only.
    pub(super) async fn session_set_mode(
        &self,
        params: SessionSetModeParams,
    ) -> jsonrpc::Result<SessionSetModeResult> {
        self.agent()
            .set_mode(&params.session_id, &params.mode)
            .await
            .map_err(agent_error)?;
        Ok(SessionSetModeResult { mode: params.mode })
    }

    /// `agent/session/context`: what the model would be sent next, section by section.
    pub(super) async fn session_context(
        &self,
        params: Option<SessionContextParams>,
    ) -> jsonrpc::Result<ContextReport> {
        // Absent or null params: a fresh session, no editor.
        let params = params.unwrap_or_default();
        let config = self.state.config();
        let session = match &params.session_id {
            Some(id) => Some(self.agent().history_of(id).await.map_err(agent_error)?),
            None => None,
        };
        let mut gathered = self
            .gather(params.editor.as_ref())
            .await
            .map_err(invalid_params)?;
        // As the session's next turn works (`setMode` wins over the setting): its environment
        // block, and the tools its mode offers.
        let agent = self.agent();
        let mode = match &params.session_id {
            Some(id) => agent.mode_of(id),
            None => config.approval.clone(),
        };
        gathered.environment = agent.environment_for(&gathered.environment, &mode);
        let state = self.state.clone();
        let mut mcp_tools = agent.mcp_tool_specs();
        mcp_tools.retain(|tool| agent.withheld_in_mode(&mode, &tool.name).is_none());
        let mut builtin = state.prompts().tools.clone();
        let language_servers = {
            use crate::locks::ReadWriteLocked;
            self.state.support.read_locked().editor_language_servers
        };
        builtin.retain(|tool| {
            agent.withheld_in_mode(&mode, &tool.name).is_none()
                && crate::tools::lsp::described(&tool.name, language_servers)
        });
        tokio::task::spawn_blocking(move || {
            // The MCP servers' tools are offered after the built-in ones.
            let mut prompts = (*state.prompts()).clone();
            prompts.tools = builtin;
            prompts.tools.extend(mcp_tools);
            let (history, calibration, config) = match session {
                Some((history, calibration, model)) => {
                    let mut config = config;
                    if !model.is_empty() {
                        config.model = Some(model);
                    }
                    (history, calibration, config)
                }
                None => (
                    History::new(config.tokenizer()),
                    Calibration::default(),
                    config,
                ),
            };
            let inputs = gathered.inputs(&config, &prompts, &history, calibration);
            let mut cache = state.assembly_cache.locked();
            inspect::report(&inputs, "", &mut cache)
        })
        .await
        .map_err(|err| internal_error(format!("context assembly failed: {err}")))
    }

    /// The context inputs of a turn: the editor's active document (open buffer, else the
    /// file on disk when it is in the workspace), the other open buffers, the AGENTS.md
    /// chain of the active file's directory (else the first root's), the skills, the
    /// environment. An editor state that names an unusable document is an error.
    pub async fn gather(&self, editor: Option<&EditorState>) -> Result<Gathered, String> {
        gather::gather(self, &self.state.config(), &self.state.prompts(), editor).await
    }
}
