//! The ACP methods: thin translations to the agent (`crate::agent`) and back. Requests are
//! parsed with `agent-client-protocol-schema`'s types; a request that does not parse gets
//! `invalid params`, an unknown method `method not found`.

use crate::locks::Locked;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use lsp_types::notification::Notification;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::host::{AcpHost, ClientFs};
use super::transport::{Connection, Incoming, Reply, RpcError};
use crate::agent::{Agent, AgentError, AgentErrorKind};
use crate::protocol::acp::{
    Authenticate, Cancel, CloseSession, DeleteSession, ForkSession, ForkSessionParams, Initialize,
    InitializeParams, ListSessions, ListSessionsParams, LoadSession, LoadSessionParams, NewSession,
    NewSessionParams, Prompt, PromptParams, ResumeSession, SessionUpdate, SetConfigOption,
    SetConfigOptionParams, SetMode, SetModeParams,
};
use crate::protocol::shapes::SessionIdParams;
use crate::protocol::{ClientNotification, ClientRequest};
use agentls_core::acp as mapping;
use agentls_core::config::Config;
use agentls_core::prompts::Prompts;
use agentls_core::updates::StopReason;

/// One ACP session: its agent, its host, and the `turnEnd`s its prompts wait for.
struct AcpSession {
    agent: Arc<Agent>,
    host: Arc<AcpHost>,
    ends: tokio::sync::Mutex<mpsc::UnboundedReceiver<(String, StopReason)>>,
}

pub struct State {
    connection: Arc<Connection>,
    config: Result<Config, String>,
    prompts: Arc<Prompts>,
    fs: Mutex<ClientFs>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// The symbol index of each set of roots a session opened, shared by the sessions in
    /// the same directories.
    indexes: Mutex<HashMap<Vec<PathBuf>, crate::symbols::Symbols>>,
}

/// The params of request `R`, or `invalid params` naming the serde error.
fn parse<R: ClientRequest>(params: Value) -> Result<R::Params, RpcError> {
    serde_json::from_value(params).map_err(RpcError::invalid_params)
}

fn parse_notification<N: ClientNotification>(params: Value) -> Result<N::Params, RpcError> {
    serde_json::from_value(params).map_err(RpcError::invalid_params)
}

fn agent_error(err: AgentError) -> RpcError {
    let code = match err.kind {
        AgentErrorKind::UnknownSession => RpcError::NOT_FOUND,
        AgentErrorKind::InvalidParams => RpcError::INVALID_PARAMS,
        AgentErrorKind::Failed => RpcError::INTERNAL,
    };
    RpcError::new(code, err.message)
}

impl State {
    pub fn new(
        connection: Arc<Connection>,
        config: Result<Config, String>,
        prompts: Arc<Prompts>,
    ) -> State {
        State {
            connection,
            config,
            prompts,
            fs: Mutex::new(ClientFs::default()),
            sessions: Mutex::new(HashMap::new()),
            indexes: Mutex::new(HashMap::new()),
        }
    }

    /// agentls is exiting: the client terminals of every open session's background
    /// commands are released at once (the client kills them); how many.
    pub fn release_terminals_at_exit(&self) -> usize {
        let sessions: Vec<_> = self.sessions.locked().values().cloned().collect();
        sessions
            .iter()
            .map(|session| session.agent.release_terminals_at_exit())
            .sum()
    }

    pub async fn handle(self: Arc<Self>, incoming: Incoming) -> Result<Reply, RpcError> {
        match incoming {
            // A withdrawn prompt ends as `session/cancel` ends it: `cancelled`.
            Incoming::Request {
                method,
                params,
                cancel,
            } if method == <Prompt as ClientRequest>::METHOD => {
                self.prompt(parse::<Prompt>(params)?, cancel).await
            }
            Incoming::Request {
                method,
                params,
                cancel,
            } => tokio::select! {
                answer = self.request(&method, params) => answer,
                () = cancel.cancelled() => Err(RpcError::new(
                    super::transport::REQUEST_CANCELLED,
                    format!("{method}: the request was cancelled"),
                )),
            },
            Incoming::Notification { method, params } => self.notification(&method, params).await,
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Reply, RpcError> {
        match method {
            <Initialize as ClientRequest>::METHOD => self.initialize(parse::<Initialize>(params)?),
            <Authenticate as ClientRequest>::METHOD => Ok(Reply::new(json!({}))),
            <NewSession as ClientRequest>::METHOD => {
                self.new_session(parse::<NewSession>(params)?).await
            }
            <LoadSession as ClientRequest>::METHOD => {
                self.load_session(parse::<LoadSession>(params)?).await
            }
            <ResumeSession as ClientRequest>::METHOD => {
                self.resume_session(parse::<ResumeSession>(params)?).await
            }
            <ForkSession as ClientRequest>::METHOD => {
                self.fork_session(parse::<ForkSession>(params)?).await
            }
            <ListSessions as ClientRequest>::METHOD => {
                self.list_sessions(parse::<ListSessions>(params)?).await
            }
            <CloseSession as ClientRequest>::METHOD => {
                self.close_session(parse::<CloseSession>(params)?).await
            }
            <DeleteSession as ClientRequest>::METHOD => {
                self.delete_session(parse::<DeleteSession>(params)?).await
            }
            <SetMode as ClientRequest>::METHOD => self.set_mode(parse::<SetMode>(params)?).await,
            <SetConfigOption as ClientRequest>::METHOD => {
                self.set_config_option(parse::<SetConfigOption>(params)?)
                    .await
            }
            other => Err(RpcError::new(
                RpcError::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }

    async fn notification(&self, method: &str, params: Value) -> Result<Reply, RpcError> {
        match method {
            <Cancel as ClientNotification>::METHOD => {
                let params = parse_notification::<Cancel>(params)?;
                let session = self.session(&params.session_id)?;
                session
                    .agent
                    .cancel(&params.session_id)
                    .await
                    .map_err(agent_error)?;
                Ok(Reply::new(Value::Null))
            }
            other => {
                tracing::debug!("acp: notification {other} ignored");
                Ok(Reply::new(Value::Null))
            }
        }
    }

    fn initialize(&self, params: InitializeParams) -> Result<Reply, RpcError> {
        *self.fs.locked() = ClientFs {
            read: params.client_capabilities.fs.read_text_file,
            write: params.client_capabilities.fs.write_text_file,
            terminal: params.client_capabilities.terminal,
            compaction: !params.client_capabilities.session["compaction"].is_null(),
        };
        if params.protocol_version != 1 {
            tracing::info!(
                "acp: the client speaks protocol version {}; agentls answers with 1",
                params.protocol_version
            );
        }
        // Images only when the configured model takes them (`provider.images`).
        let image = self.config.as_ref().is_ok_and(|config| {
            agentls_core::models::takes_images(
                config.images,
                config.model.as_deref().unwrap_or_default(),
            )
        });
        Ok(Reply::new(json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": image, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": false},
                "sessionCapabilities": {
                    "list": {},
                    "resume": {},
                    "fork": {},
                    "close": {},
                    "delete": {},
                    "additionalDirectories": {},
                },
            },
            "authMethods": [],
            "agentInfo": {"name": "agentls", "version": env!("CARGO_PKG_VERSION")},
        })))
    }

    fn config(&self) -> Result<Config, RpcError> {
        self.config.clone().map_err(|why| {
            let code = if why.starts_with("no provider configured") {
                RpcError::AUTH_REQUIRED
            } else {
                RpcError::INTERNAL
            };
            RpcError::new(code, why)
        })
    }

    fn session(&self, id: &str) -> Result<Arc<AcpSession>, RpcError> {
        self.sessions
            .locked()
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::new(RpcError::NOT_FOUND, format!("unknown session {id}")))
    }

    /// A host and agent for a session in `cwd` (not yet registered).
    fn open(&self, cwd: &std::path::Path) -> Result<AcpSession, RpcError> {
        self.open_with(cwd, &[])
    }

    /// `open` with more roots (`additionalDirectories`): absolute and existing, each.
    fn open_with(
        &self,
        cwd: &std::path::Path,
        additional: &[PathBuf],
    ) -> Result<AcpSession, RpcError> {
        let additional_roots = canonical_roots(additional)?;
        let config = self.config()?;
        if !cwd.is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "cwd must be an absolute path: {}",
                cwd.display()
            )));
        }
        let root = cwd.canonicalize().map_err(|e| {
            RpcError::invalid_params(format!("cannot use cwd {}: {e}", cwd.display()))
        })?;
        let roots: Vec<PathBuf> = std::iter::once(root.clone())
            .chain(additional_roots.iter().cloned())
            .collect();
        let symbols = self
            .indexes
            .locked()
            .entry(roots.clone())
            .or_insert_with(|| crate::symbols::Symbols::open_in_background(&roots, &config))
            .clone();
        let (ends_tx, ends) = mpsc::unbounded_channel();
        let host = Arc::new(AcpHost {
            connection: self.connection.clone(),
            symbols,
            config: Mutex::new(config),
            prompts: self.prompts.clone(),
            root,
            fs: *self.fs.locked(),
            session_id: OnceLock::new(),
            ends: ends_tx,
            terminals: Mutex::new(HashMap::new()),
            compaction: Mutex::new((None, 0)),
            additional_roots: Mutex::new(additional_roots),
            message_ids: Mutex::new(mapping::MessageIds::default()),
        });
        Ok(AcpSession {
            agent: Agent::new(host.clone()),
            host,
            ends: tokio::sync::Mutex::new(ends),
        })
    }

    fn register(&self, id: &str, session: AcpSession) -> Arc<AcpSession> {
        let _ = session.host.session_id.set(id.to_string());
        let session = Arc::new(session);
        self.sessions
            .locked()
            .insert(id.to_string(), session.clone());
        session
    }

    fn config_options(session: &AcpSession, id: &str) -> Value {
        let config = session.host.config.locked().clone();
        let model = config.model.clone().unwrap_or_default();
        mapping::config_options(
            &session.agent.mode_of(id),
            &model,
            &mapping::known_models(&config.provider_kind, &model),
        )
    }

    /// `available_commands_update` with the session's slash commands, built-in and custom
    /// (read now); an error reading them is logged and the built-in ones are sent.
    async fn commands_update(session: &AcpSession, id: &str) -> (String, Value) {
        let commands = match session.agent.commands(id).await {
            Ok(commands) => commands,
            Err(err) => {
                tracing::warn!("acp: the commands of {id}: {err}");
                agentls_core::commands::infos(&[])
            }
        };
        (
            SessionUpdate::METHOD.into(),
            json!({"sessionId": id, "update": mapping::commands_update(&commands)}),
        )
    }

    /// `{modes, configOptions}` of a session (the answer of new, load and resume).
    fn session_state(session: &AcpSession, id: &str) -> Value {
        json!({
            "modes": mapping::modes(&session.agent.mode_of(id)),
            "configOptions": Self::config_options(session, id),
        })
    }

    async fn new_session(&self, params: NewSessionParams) -> Result<Reply, RpcError> {
        let session = self.open_with(&params.cwd, &params.additional_directories)?;
        // The client's MCP servers, beside the configured ones (the client's win a clash).
        session
            .agent
            .set_client_mcp(&Value::Array(params.mcp_servers.clone()));
        let id = session.agent.new_session(None).await.map_err(agent_error)?;
        let session = self.register(&id, session);
        let mut state = Self::session_state(&session, &id);
        state["sessionId"] = json!(id);
        let mut reply = Reply::new(state);
        reply.then.push(Self::commands_update(&session, &id).await);
        Self::commands_after_mcp_starts(&session, &id);
        Ok(reply)
    }

    /// Sends `available_commands_update` again once the MCP servers' first starts are over,
    /// when they offer prompts (`/mcp__SERVER__PROMPT` commands): the list sent with the
    /// answer was made while they were starting.
    fn commands_after_mcp_starts(session: &Arc<AcpSession>, id: &str) {
        let (session, id) = (session.clone(), id.to_string());
        tokio::spawn(async move {
            if session.agent.mcp_prompts_after_first_starts().await {
                let (_, params) = Self::commands_update(&session, &id).await;
                session.host.send_update(&id, &params["update"]);
            }
        });
    }

    /// A session of `cwd` known to this process, or loaded from its log.
    async fn reopen(&self, id: &str, cwd: &std::path::Path) -> Result<Arc<AcpSession>, RpcError> {
        if let Ok(session) = self.session(id) {
            return Ok(session);
        }
        let session = self.open(cwd)?;
        // Fails when the log does not exist in this cwd's store.
        session.agent.history_of(id).await.map_err(agent_error)?;
        Ok(self.register(id, session))
    }

    async fn load_session(&self, params: LoadSessionParams) -> Result<Reply, RpcError> {
        let id = params.session_id;
        let session = self.reopen(&id, &params.cwd).await?;
        Self::set_additional_roots(&session, params.additional_directories.as_deref())?;
        if let Some(servers) = params.mcp_servers {
            session.agent.set_client_mcp(&Value::Array(servers));
        }
        let items = session.agent.load(&id).await.map_err(agent_error)?;
        // The history first, as updates; then the answer.
        for update in mapping::replay(&items) {
            session.host.send_update(&id, &update);
        }
        let mut reply = Reply::new(Self::session_state(&session, &id));
        reply.then.push(Self::commands_update(&session, &id).await);
        Self::commands_after_mcp_starts(&session, &id);
        Ok(reply)
    }

    async fn resume_session(&self, params: LoadSessionParams) -> Result<Reply, RpcError> {
        let id = params.session_id;
        let session = self.reopen(&id, &params.cwd).await?;
        Self::set_additional_roots(&session, params.additional_directories.as_deref())?;
        if let Some(servers) = params.mcp_servers {
            session.agent.set_client_mcp(&Value::Array(servers));
        }
        // Not loaded (no replay), but about to be used: its MCP servers start now.
        session.agent.ensure_mcp();
        let mut reply = Reply::new(Self::session_state(&session, &id));
        reply.then.push(Self::commands_update(&session, &id).await);
        Self::commands_after_mcp_starts(&session, &id);
        Ok(reply)
    }

    /// `session/fork`: the source session (of this process, or loaded from its log in
    /// `cwd`'s store) forked by its agent; the fork gets a host and agent of its own, as a
    /// new session does.
    async fn fork_session(&self, params: ForkSessionParams) -> Result<Reply, RpcError> {
        let source = self.reopen(&params.session_id, &params.cwd).await?;
        let id = source
            .agent
            .fork(&params.session_id, params.checkpoint_id.as_deref())
            .await
            .map_err(agent_error)?;
        let session = self.open(&params.cwd)?;
        if let Some(servers) = params.mcp_servers {
            session.agent.set_client_mcp(&Value::Array(servers));
        }
        let session = self.register(&id, session);
        session.agent.ensure_mcp();
        let mut state = Self::session_state(&session, &id);
        state["sessionId"] = json!(id);
        let mut reply = Reply::new(state);
        reply.then.push(Self::commands_update(&session, &id).await);
        Self::commands_after_mcp_starts(&session, &id);
        Ok(reply)
    }

    /// The stores are per workspace: with a cwd, that one; without, every cwd of this
    /// process's sessions and the current directory.
    fn known_cwds(&self, cwd: Option<&std::path::Path>) -> Vec<PathBuf> {
        let mut cwds: Vec<PathBuf> = match cwd {
            Some(cwd) => vec![cwd.to_path_buf()],
            None => {
                let mut cwds: Vec<PathBuf> = self
                    .sessions
                    .locked()
                    .values()
                    .map(|s| s.host.root.clone())
                    .collect();
                cwds.extend(std::env::current_dir().ok());
                cwds
            }
        };
        cwds.sort();
        cwds.dedup();
        cwds
    }

    async fn list_sessions(&self, params: ListSessionsParams) -> Result<Reply, RpcError> {
        let mut sessions = Vec::new();
        for cwd in self.known_cwds(params.cwd.as_deref()) {
            let Ok(session) = self.open(&cwd) else {
                continue;
            };
            for summary in session.agent.list(false).await.map_err(agent_error)? {
                sessions.push((
                    summary.updated_at,
                    json!({
                        "sessionId": summary.session_id,
                        "cwd": session.host.root,
                        "title": summary.title,
                        "updatedAt": mapping::rfc3339(summary.updated_at),
                    }),
                ));
            }
        }
        sessions.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        let sessions: Vec<Value> = sessions.into_iter().map(|(_, info)| info).collect();
        Ok(Reply::new(json!({ "sessions": sessions })))
    }

    /// `session/prompt`: answered when its turn ends. `withdrawn` (the client's
    /// `$/cancel_request` for it) cancels the turn, which then ends `cancelled`.
    async fn prompt(
        &self,
        params: PromptParams,
        withdrawn: tokio_util::sync::CancellationToken,
    ) -> Result<Reply, RpcError> {
        let id = params.session_id;
        let session = self.session(&id)?;
        let text = mapping::prompt_text(
            &params.prompt,
            &session.host.root,
            &self.prompts.data_boundary,
        )
        .map_err(RpcError::invalid_params)?;
        let images = mapping::prompt_images(&params.prompt)
            .into_iter()
            .map(|(mime_type, data)| crate::agent::images::ImageInput {
                mime_type: Some(mime_type),
                data: Some(data),
                path: None,
            })
            .collect();
        let untitled = session.agent.title(&id).await.is_none();
        // One prompt waits at a time: the ends arrive in turn order.
        let mut ends = session.ends.lock().await;
        let turn = session
            .agent
            .prompt_with_images(&id, text, None, images)
            .await
            .map_err(agent_error)?;
        let mut cancel_sent = false;
        loop {
            let next = tokio::select! {
                next = ends.recv() => next,
                () = withdrawn.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    session.agent.cancel(&id).await.map_err(agent_error)?;
                    continue;
                }
            };
            match next {
                Some((turn_id, end)) if turn_id == turn => {
                    let reason = mapping::stop_reason(end)
                        .map_err(|message| RpcError::new(RpcError::INTERNAL, message))?;
                    // The title, once the first message gave the session one.
                    if untitled {
                        if let Some(title) = session.agent.title(&id).await {
                            session
                                .host
                                .send_update(&id, &mapping::session_info_update(&title));
                        }
                    }
                    return Ok(Reply::new(json!({ "stopReason": reason })));
                }
                Some(_) => continue,
                None => {
                    return Err(RpcError::new(
                        RpcError::INTERNAL,
                        "the agent stopped unexpectedly",
                    ))
                }
            }
        }
    }

    fn set_additional_roots(
        session: &AcpSession,
        additional: Option<&[PathBuf]>,
    ) -> Result<(), RpcError> {
        if let Some(additional) = additional {
            *session.host.additional_roots.locked() = canonical_roots(additional)?;
        }
        Ok(())
    }

    /// `session/close`: the turn cancelled, the session's MCP servers and background
    /// commands stopped, its memory freed; its log stays (`session/load` reopens it). An
    /// unknown id is `resource_not_found`.
    async fn close_session(&self, params: SessionIdParams) -> Result<Reply, RpcError> {
        let id = params.session_id;
        let session = self.session(&id)?;
        session.agent.close(&id).await.map_err(agent_error)?;
        session.agent.stop_mcp();
        self.sessions.locked().remove(&id);
        Ok(Reply::new(json!({})))
    }

    /// `session/delete`: closed if open, its log (and checkpoints) removed from the store of
    /// its workspace; an unknown id succeeds (nothing to delete).
    async fn delete_session(&self, params: SessionIdParams) -> Result<Reply, RpcError> {
        let id = params.session_id;
        let open = self.sessions.locked().get(&id).cloned();
        if let Some(session) = open {
            session.agent.stop_mcp();
            session.agent.delete(&id).await.map_err(agent_error)?;
            self.sessions.locked().remove(&id);
            return Ok(Reply::new(json!({})));
        }
        // Not open here: the stores this process knows (as `session/list` reads them).
        for cwd in self.known_cwds(None) {
            let Ok(session) = self.open(&cwd) else {
                continue;
            };
            session.agent.delete(&id).await.map_err(agent_error)?;
        }
        Ok(Reply::new(json!({})))
    }

    async fn set_mode(&self, params: SetModeParams) -> Result<Reply, RpcError> {
        let id = params.session_id;
        let mode = params.mode_id;
        let session = self.session(&id)?;
        session
            .agent
            .set_mode(&id, &mode)
            .await
            .map_err(agent_error)?;
        session.host.send_update(&id, &mapping::mode_update(&mode));
        Ok(Reply::new(json!({})))
    }

    async fn set_config_option(&self, params: SetConfigOptionParams) -> Result<Reply, RpcError> {
        let id = params.session_id;
        // A select's value: the id itself, or `{type, value}`.
        let value = match &params.value {
            Value::String(value) => value.clone(),
            other => other["value"]
                .as_str()
                .ok_or_else(|| RpcError::invalid_params("value must be a string"))?
                .to_string(),
        };
        let session = self.session(&id)?;
        match params.config_id.as_str() {
            "mode" => {
                session
                    .agent
                    .set_mode(&id, &value)
                    .await
                    .map_err(agent_error)?;
                session.host.send_update(&id, &mapping::mode_update(&value));
            }
            "model" => {
                if value.trim().is_empty() {
                    return Err(RpcError::invalid_params("the model name is empty"));
                }
                session
                    .agent
                    .set_model(&id, value.clone(), None)
                    .await
                    .map_err(agent_error)?;
                session.host.set_model(&value);
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "unknown config option {other}: the options are mode and model"
                )))
            }
        }
        Ok(Reply::new(
            json!({ "configOptions": Self::config_options(&session, &id) }),
        ))
    }
}

/// `additionalDirectories` as roots: each absolute and an existing directory, canonical.
fn canonical_roots(paths: &[PathBuf]) -> Result<Vec<PathBuf>, RpcError> {
    paths
        .iter()
        .map(|path| {
            if !path.is_absolute() {
                return Err(RpcError::invalid_params(format!(
                    "additionalDirectories must be absolute paths: {}",
                    path.display()
                )));
            }
            match path.canonicalize() {
                Ok(root) if root.is_dir() => Ok(root),
                Ok(_) => Err(RpcError::invalid_params(format!(
                    "additional directory {} is not a directory",
                    path.display()
                ))),
                Err(e) => Err(RpcError::invalid_params(format!(
                    "cannot use additional directory {}: {e}",
                    path.display()
                ))),
            }
        })
        .collect()
}
