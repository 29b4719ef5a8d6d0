//! `AcpHost`: the agent loop's host for one ACP session. Its root is the session's `cwd`;
//! updates go out as `session/update`; approvals through `session/request_permission`;
//! reads through `fs/read_text_file` and writes through `fs/write_text_file` when the
//! client offers them (so the agent sees unsaved buffers and the editor applies the
//! change), the disk otherwise.

use crate::locks::Locked;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::transport::Connection;
use crate::host::{
    ClientTerminal, FileChange, Host, Notice, PermissionOutcome, PermissionRequest, TerminalExit,
    TerminalOutcome, TerminalRun, TerminalSnapshot,
};
use crate::protocol::acp::{
    CreateTerminal, KillTerminal, ReadTextFile, ReleaseTerminal, RequestPermission, SessionUpdate,
    TerminalOutput, WaitForTerminalExit, WriteTextFile,
};
use agentls_core::acp as mapping;
use agentls_core::config::Config;
use agentls_core::prompts::Prompts;
use agentls_core::updates::{CompactionPhase, StopReason, Update};

/// What the client said it can do in `initialize`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientFs {
    pub read: bool,
    pub write: bool,
    /// `terminal/*`: the shell tool runs in the client's terminals.
    pub terminal: bool,
    /// `session.compaction`: compactions as `compaction_update`, not as messages.
    pub compaction: bool,
}

pub struct AcpHost {
    pub(super) connection: Arc<Connection>,
    pub(super) config: Mutex<Config>,
    pub(super) prompts: Arc<Prompts>,
    pub(super) root: PathBuf,
    pub(super) fs: ClientFs,
    /// Set once the agent made (or loaded) the session.
    pub(super) session_id: OnceLock<String>,
    /// `turnEnd`s: (turn id, the update), for the prompt request waiting on it.
    pub(super) ends: mpsc::UnboundedSender<(String, StopReason)>,
    /// The client terminal of each tool call that ran in one: its updates embed it.
    pub(super) terminals: Mutex<std::collections::HashMap<String, String>>,
    /// The id of the compaction under way and how many were started (`compaction_update`).
    pub(super) compaction: Mutex<(Option<String>, u32)>,
    /// More roots for the session (`additionalDirectories` of new, load or resume),
    /// canonical, after `root`.
    pub(super) additional_roots: Mutex<Vec<PathBuf>>,
    /// The `messageId`s of message chunks.
    pub(super) message_ids: Mutex<mapping::MessageIds>,
    /// The workspace symbol index of the session's roots, built in the background.
    pub(super) symbols: crate::symbols::Symbols,
}

impl AcpHost {
    fn session_id(&self) -> String {
        self.session_id.get().cloned().unwrap_or_default()
    }

    pub fn set_model(&self, model: &str) {
        self.config.locked().model = Some(model.to_string());
    }

    pub fn send_update(&self, session_id: &str, update: &Value) {
        self.connection.notify(
            SessionUpdate::METHOD,
            json!({"sessionId": session_id, "update": update}),
        );
    }

    /// The client's text of `path` (its buffer, unsaved changes included).
    async fn client_read(&self, path: &Path) -> Result<String, String> {
        let answer = self
            .connection
            .request(
                ReadTextFile::METHOD,
                json!({"sessionId": self.session_id(), "path": path}),
            )
            .await
            .map_err(|e| format!("{} failed: {}", ReadTextFile::METHOD, e.message))?;
        answer["content"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{} answered without content", ReadTextFile::METHOD))
    }
}

impl AcpHost {
    /// Creates a client terminal for `run` (`terminal/create`, through the sandbox's
    /// launcher when there is one) and shows it in the call that runs it. The ACP session
    /// it belongs to (a subagent's command runs in the client's session that started it)
    /// and the terminal's id.
    async fn create_terminal(&self, run: &TerminalRun) -> Result<(String, String), String> {
        let own = self.session_id();
        let session_id = if own.is_empty() {
            run.session_id.clone()
        } else {
            own
        };
        let launcher = match &run.sandbox {
            Some(policy) => Some(crate::sandbox::launcher(policy)?),
            None => None,
        };
        let created = self
            .connection
            .request(
                CreateTerminal::METHOD,
                mapping::terminal_create(
                    &session_id,
                    &run.command,
                    &run.cwd,
                    &run.hidden_env,
                    run.max_output_bytes,
                    launcher.as_ref().map(|(p, a)| (p.as_str(), a.clone())),
                ),
            )
            .await
            .map_err(|e| format!("{} failed: {}", CreateTerminal::METHOD, e.message))?;
        let terminal = created["terminalId"]
            .as_str()
            .ok_or("terminal/create answered without a terminalId")?
            .to_string();
        self.terminals
            .locked()
            .insert(run.tool_call_id.clone(), terminal.clone());
        self.send_update(
            &session_id,
            &mapping::terminal_update(&run.tool_call_id, &terminal),
        );
        Ok((session_id, terminal))
    }

    /// Runs a `shell` command in a client terminal (`terminal/create`), shown in the tool
    /// call; waits for it, kills it on timeout or cancel, reads its output, releases it.
    async fn terminal(
        &self,
        run: TerminalRun,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<TerminalOutcome, String> {
        let request = |method: &'static str, params: Value| {
            let connection = self.connection.clone();
            async move {
                connection
                    .request(method, params)
                    .await
                    .map_err(|e| format!("{method} failed: {}", e.message))
            }
        };
        let (session_id, terminal) = self.create_terminal(&run).await?;
        let ids = json!({"sessionId": session_id, "terminalId": terminal});
        let waited = tokio::select! {
            exit = request(WaitForTerminalExit::METHOD, ids.clone()) => Some(exit),
            () = tokio::time::sleep(run.timeout) => None,
            () = cancel.cancelled() => None,
        };
        let (timed_out, cancelled) = match &waited {
            Some(_) => (false, false),
            None => (!cancel.is_cancelled(), cancel.is_cancelled()),
        };
        if waited.is_none() {
            if let Err(err) = request(KillTerminal::METHOD, ids.clone()).await {
                tracing::warn!("{err}");
            }
        }
        let output = request(TerminalOutput::METHOD, ids.clone()).await;
        if let Err(err) = request(ReleaseTerminal::METHOD, ids).await {
            tracing::warn!("{err}");
        }
        let output = output?;
        let status = match waited {
            Some(exit) => exit?,
            None => output["exitStatus"].clone(),
        };
        let (exit_code, signal) = mapping::exit_status(&status);
        Ok(TerminalOutcome {
            output: output["output"].as_str().unwrap_or_default().to_string(),
            exit_code,
            signal,
            timed_out,
            cancelled,
        })
    }
}

/// How long agentls waits for the client's answer about a background command's terminal:
/// a client that never answers must not hold a turn (`shell_output`, `shell_kill`).
const TERMINAL_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A background command's client terminal (`Host::open_terminal`).
struct AcpTerminal {
    connection: Arc<Connection>,
    session_id: String,
    id: String,
}

impl AcpTerminal {
    fn ids(&self) -> Value {
        json!({"sessionId": self.session_id, "terminalId": self.id})
    }

    /// `method` about this terminal; waits for the answer at most `TERMINAL_ANSWER_TIMEOUT`
    /// unless `patient`.
    async fn request(&self, method: &'static str, patient: bool) -> Result<Value, String> {
        let answer = self.connection.request(method, self.ids());
        let answer = if patient {
            answer.await
        } else {
            tokio::time::timeout(TERMINAL_ANSWER_TIMEOUT, answer)
                .await
                .map_err(|_| format!("{method} got no answer in {TERMINAL_ANSWER_TIMEOUT:?}"))?
        };
        answer.map_err(|e| format!("{method} failed: {}", e.message))
    }
}

fn terminal_exit(status: &Value) -> TerminalExit {
    let (code, signal) = mapping::exit_status(status);
    TerminalExit { code, signal }
}

#[async_trait::async_trait]
impl ClientTerminal for AcpTerminal {
    fn id(&self) -> &str {
        &self.id
    }

    async fn output(&self) -> Result<TerminalSnapshot, String> {
        let answer = self.request(TerminalOutput::METHOD, false).await?;
        Ok(TerminalSnapshot {
            output: answer["output"].as_str().unwrap_or_default().to_string(),
            exit: answer
                .get("exitStatus")
                .filter(|status| !status.is_null())
                .map(terminal_exit),
        })
    }

    async fn wait_for_exit(&self) -> Result<TerminalExit, String> {
        let answer = self.request(WaitForTerminalExit::METHOD, true).await?;
        Ok(terminal_exit(&answer))
    }

    async fn kill(&self) -> Result<(), String> {
        self.request(KillTerminal::METHOD, false).await.map(|_| ())
    }

    async fn release(&self) -> Result<(), String> {
        self.request(ReleaseTerminal::METHOD, false)
            .await
            .map(|_| ())
    }

    fn abandon(&self) {
        self.connection
            .request_unanswered(ReleaseTerminal::METHOD, self.ids());
    }
}

#[async_trait::async_trait]
impl Host for AcpHost {
    fn config(&self) -> Config {
        self.config.locked().clone()
    }

    fn prompts(&self) -> Arc<Prompts> {
        self.prompts.clone()
    }

    fn roots(&self) -> Vec<PathBuf> {
        let mut roots = vec![self.root.clone()];
        roots.extend(self.additional_roots.locked().iter().cloned());
        roots
    }

    /// Files changed on disk since they were indexed are read again when a result names
    /// them (`Symbols::definitions_limited`); none is watched.
    async fn symbols(&self) -> Option<crate::symbols::Symbols> {
        Some(self.symbols.clone())
    }

    async fn buffer(&self, path: &Path) -> Option<(String, i32)> {
        if !self.fs.read || self.session_id.get().is_none() || !path.is_file() {
            return None;
        }
        match self.client_read(path).await {
            Ok(text) => Some((text, 0)),
            Err(err) => {
                tracing::warn!("{err}; reading {} from disk", path.display());
                None
            }
        }
    }

    async fn apply(&self, change: FileChange) -> Result<(), String> {
        if !self.fs.write {
            return tokio::task::spawn_blocking(move || change.write_to_disk())
                .await
                .map_err(|e| e.to_string())?;
        }
        let path = change.path().to_path_buf();
        let agentls_core::updates::FileDiff {
            old_text: original,
            new_text: content,
            ..
        } = change.as_diff();
        // The change was planned against `original`: refused if the text moved since.
        if let Some(original) = &original {
            let current = if self.fs.read {
                self.client_read(&path).await?
            } else {
                // Through the one reader: a FIFO or device in the workspace must not block.
                crate::store::files::read_text(&path).map_err(|refused| refused.0)?
            };
            if &current != original {
                return Err(format!(
                    "{} changed since it was read; read it again",
                    path.display()
                ));
            }
        }
        self.connection
            .request(
                WriteTextFile::METHOD,
                json!({"sessionId": self.session_id(), "path": path, "content": content}),
            )
            .await
            .map(|_| ())
            .map_err(|e| format!("{} failed: {}", WriteTextFile::METHOD, e.message))
    }

    async fn run_in_terminal(
        &self,
        run: TerminalRun,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Result<TerminalOutcome, String>> {
        if !self.fs.terminal {
            return None;
        }
        Some(self.terminal(run, cancel).await)
    }

    async fn open_terminal(
        &self,
        run: TerminalRun,
    ) -> Option<Result<Arc<dyn ClientTerminal>, String>> {
        if !self.fs.terminal {
            return None;
        }
        Some(self.create_terminal(&run).await.map(|(session_id, id)| {
            Arc::new(AcpTerminal {
                connection: self.connection.clone(),
                session_id,
                id,
            }) as Arc<dyn ClientTerminal>
        }))
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionOutcome {
        let options: Vec<(String, String, String)> = request
            .options
            .iter()
            .map(|o| (o.option_id.clone(), o.kind.clone(), o.name.clone()))
            .collect();
        let params = mapping::permission_request(&request.session_id, &request.tool_call, &options);
        let timeout = std::time::Duration::from_millis(self.config().approval_timeout_ms);
        let answer = tokio::time::timeout(
            timeout,
            self.connection.request(RequestPermission::METHOD, params),
        )
        .await
        .map(|answer| {
            answer
                .map(|answer| mapping::permission_choice(&answer).map(str::to_string))
                .map_err(|err| err.message)
        });
        PermissionOutcome::from_answer(answer, &request.options, RequestPermission::METHOD, timeout)
    }

    fn notify(&self, notice: Notice) {
        match notice {
            Notice::Update {
                session_id,
                turn_id,
                update,
                ..
            } => {
                // A subagent's session is this agentls's, not the client's: its tool calls
                // are shown in the ACP session that started it (ACP has no nesting); its
                // text, plan and turn end stay inside (the `task` call's output carries its
                // answer).
                let own = self.session_id();
                let session_id = if session_id == own || own.is_empty() {
                    session_id
                } else if update.tool_call_id().is_some() {
                    own
                } else {
                    return;
                };
                match &update {
                    Update::TurnEnd { stop_reason, .. } => {
                        let _ = self.ends.send((turn_id, *stop_reason));
                    }
                    Update::Compaction { phase, .. } if self.fs.compaction => {
                        let started = *phase == CompactionPhase::Started;
                        let id = {
                            let mut current = self.compaction.locked();
                            if started || current.0.is_none() {
                                current.1 += 1;
                                current.0 = Some(format!("compaction-{}", current.1));
                            }
                            let id = current.0.clone().unwrap_or_default();
                            if !started {
                                current.0 = None;
                            }
                            id
                        };
                        if let Some(mapped) = mapping::compaction_update(&update, &id) {
                            self.send_update(&session_id, &mapped);
                        }
                    }
                    _ => {
                        if let Some(mut mapped) = mapping::session_update(&update) {
                            let terminal = update
                                .tool_call_id()
                                .and_then(|id| self.terminals.locked().get(id).cloned());
                            if let Some(terminal) = terminal {
                                mapping::embed_terminal(&mut mapped, &terminal);
                            }
                            self.message_ids.locked().assign(&turn_id, &mut mapped);
                            self.send_update(&session_id, &mapped);
                        }
                    }
                }
            }
            Notice::Status(status) => {
                self.send_update(&status.session_id, &mapping::usage_update(&status));
            }
        }
    }

    fn progress(&self, _id: &str, _title: &str, _end: Option<String>) {}

    fn show_warning(&self, message: String) {
        tracing::warn!("{message}");
        if let Some(id) = self.session_id.get() {
            if let Some(update) = mapping::session_update(&Update::warning(message)) {
                self.send_update(id, &update);
            }
        }
    }
}
