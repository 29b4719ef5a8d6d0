//! The `agent/session/*` requests: thin translations to the agent (`crate::agent`) and back.

use super::*;
use crate::agent::AgentError;
use crate::gather;
use crate::host::Gathered;
use agentls_core::editor_state::EditorState;
use agentls_core::history::History;
use agentls_core::inspect;
use agentls_core::tokens::Calibration;
use serde::Deserialize;
use serde_json::{json, Value};
use tower_lsp::jsonrpc;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionContextParams {
    #[serde(default)]
    pub(super) session_id: Option<String>,
    #[serde(default)]
    pub(super) editor: Option<EditorState>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionNewParams {
    #[serde(default)]
    pub(super) model: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionListParams {
    #[serde(default)]
    pub(super) include_children: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionIdParams {
    pub(super) session_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionCompactParams {
    pub(super) session_id: String,
    #[serde(default)]
    pub(super) instructions: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionSetModelParams {
    pub(super) session_id: String,
    pub(super) model: String,
    #[serde(default)]
    pub(super) context_window: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionSetModeParams {
    pub(super) session_id: String,
    pub(super) mode: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionPromptParams {
    pub(super) session_id: String,
    pub(super) text: String,
    #[serde(default)]
    pub(super) editor: Option<EditorState>,
}

pub(super) fn agent_error(err: AgentError) -> jsonrpc::Error {
    if err.0.starts_with("unknown session")
        || err.0.starts_with("no model configured")
        || err.0.starts_with("invalid params")
    {
        invalid_params(err.0)
    } else {
        jsonrpc::Error {
            code: jsonrpc::ErrorCode::ServerError(-32803),
            message: err.0.into(),
            data: None,
        }
    }
}

impl Backend {
    pub(super) async fn session_new(
        &self,
        params: Option<SessionNewParams>,
    ) -> jsonrpc::Result<Value> {
        let model = params.unwrap_or_default().model;
        let id = self.agent().new_session(model).await.map_err(agent_error)?;
        Ok(json!({ "sessionId": id }))
    }

    pub(super) async fn session_list(
        &self,
        params: Option<SessionListParams>,
    ) -> jsonrpc::Result<Value> {
        let include_children = params.is_some_and(|p| p.include_children);
        let sessions = self
            .agent()
            .list(include_children)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "sessions": sessions }))
    }

    /// `agent/mcp/status`: the MCP servers, their state and tool count.
    pub(super) async fn mcp_status(&self, _params: Option<Value>) -> jsonrpc::Result<Value> {
        Ok(self.agent().mcp_status())
    }

    /// `agent/mcp/resources {}`: the ready MCP servers' resources, for completion.
    pub(super) async fn mcp_resources(&self, _params: Option<Value>) -> jsonrpc::Result<Value> {
        Ok(self.agent().mcp_resources().await)
    }

    /// `agent/session/commands`: the built-in and custom slash commands, for completion.
    pub(super) async fn session_commands(&self, params: SessionIdParams) -> jsonrpc::Result<Value> {
        let commands = self
            .agent()
            .commands(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "commands": commands }))
    }

    pub(super) async fn session_load(&self, params: SessionIdParams) -> jsonrpc::Result<Value> {
        let items = self
            .agent()
            .load(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "sessionId": params.session_id, "items": items }))
    }

    pub(super) async fn session_prompt(
        &self,
        params: SessionPromptParams,
    ) -> jsonrpc::Result<Value> {
        let turn_id = self
            .agent()
            .prompt(&params.session_id, params.text, params.editor)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "turnId": turn_id }))
    }

    pub(super) async fn session_cancel(&self, params: SessionIdParams) -> jsonrpc::Result<Value> {
        let cancelled = self
            .agent()
            .cancel(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "cancelled": cancelled }))
    }

    pub(super) async fn session_compact(
        &self,
        params: SessionCompactParams,
    ) -> jsonrpc::Result<Value> {
        let outcome = self
            .agent()
            .compact(&params.session_id, params.instructions)
            .await
            .map_err(agent_error)?;
        Ok(json!(outcome))
    }

    pub(super) async fn session_set_model(
        &self,
        params: SessionSetModelParams,
    ) -> jsonrpc::Result<Value> {
        if params.context_window == Some(0) {
            return Err(invalid_params("contextWindow must be a positive integer"));
        }
        let compacted = self
            .agent()
            .set_model(&params.session_id, params.model, params.context_window)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "compacted": compacted }))
    }

    /// `agent/session/setMode`: the session's approval policy (`ask`, `auto-edit`,
    /// `full-auto`), for this session only.
    pub(super) async fn session_set_mode(
        &self,
        params: SessionSetModeParams,
    ) -> jsonrpc::Result<Value> {
        self.agent()
            .set_mode(&params.session_id, &params.mode)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "mode": params.mode }))
    }

    /// `agent/session/context`: what the model would be sent next, section by section.
    pub(super) async fn session_context(
        &self,
        params: Option<SessionContextParams>,
    ) -> jsonrpc::Result<Value> {
        // Absent or null params: a fresh session, no editor.
        let params = params.unwrap_or_default();
        let config = self.state.config();
        let session = match &params.session_id {
            Some(id) => Some(self.agent().history_of(id).await.map_err(agent_error)?),
            None => None,
        };
        let gathered = self
            .gather(params.editor.as_ref())
            .await
            .map_err(invalid_params)?;
        let state = self.state.clone();
        let mcp_tools = self.agent().mcp_tool_specs();
        let report = tokio::task::spawn_blocking(move || {
            // The MCP servers' tools are offered after the built-in ones.
            let mut prompts = (*state.prompts()).clone();
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
            let mut cache = state
                .assembly_cache
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            inspect::report(&inputs, "", &mut cache)
        })
        .await
        .map_err(|err| internal_error(format!("context assembly failed: {err}")))?;
        serde_json::to_value(report).map_err(|err| internal_error(err.to_string()))
    }

    /// The context inputs of a turn: the editor's active document (open buffer, else the
    /// file on disk when it is in the workspace), the other open buffers, the AGENTS.md
    /// chain of the active file's directory (else the first root's), the skills, the
    /// environment. An editor state that names an unusable document is an error.
    pub async fn gather(&self, editor: Option<&EditorState>) -> Result<Gathered, String> {
        gather::gather(self, &self.state.config(), editor).await
    }
}
