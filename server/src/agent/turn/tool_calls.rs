//! A turn's tool calls: announced, prepared, gated by the approval rules (asking the user
//! when they say so), run through the tool registry, and recorded with their effects.

use super::*;
use crate::agent::live::Durability;
use crate::tools::registry::{Effect, Registry, ToolContext};
use agentls_core::tool_info::ToolCatalog;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::host::{PermissionOption, PermissionRequest};
use crate::store::secrets;
use crate::tools::boundary::PathBoundary;
use agentls_core::approval::{self, Gate};
use agentls_core::event::Event;
use agentls_core::history::Item;
use agentls_core::hooks::Permission;
use agentls_core::mcp::tools::McpTool;
use agentls_core::tool_info::ToolKind;
use agentls_core::truncate::{truncate_middle, TruncationPolicy};

impl Turn {
    /// Records a call's output and tells the client it finished. Known secret values are
    /// redacted first (`store::secrets::redact`): what is recorded reaches the log, the
    /// editor and the model. A call the client was told of always gets this final update,
    /// even after a cancel (its row must not stay `in_progress`), and before `turnEnd`: the
    /// turn sends both.
    pub(super) async fn finish_call(
        &self,
        call: &Call,
        output: String,
        success: bool,
    ) -> Result<(), String> {
        let output = match secrets::redact(&output) {
            std::borrow::Cow::Owned(redacted) => redacted,
            std::borrow::Cow::Borrowed(_) => output,
        };
        let recorded = self
            .record_item(Item::ToolOutput {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: output,
                success,
            })
            .await;
        let (status, shown) = match &recorded {
            Ok(entry) => match &entry.item {
                Item::ToolOutput { content, .. } => (success, content.clone()),
                _ => (success, String::new()),
            },
            Err(message) => (false, message.clone()),
        };
        self.tell_call_ended(&call.id, status, shown);
        recorded.map(|_| ())
    }

    /// The final `toolCallUpdate` of a call the client was told of (even after a cancel:
    /// its row must not stay `in_progress`).
    pub(super) fn tell_call_ended(&self, call_id: &str, success: bool, output: String) {
        if self.announced.contains(call_id) {
            self.agent.update(
                &self.handle.id,
                &self.turn_id,
                json!({
                    "kind": "toolCallUpdate",
                    "toolCallId": call_id,
                    "status": if success { "completed" } else { "failed" },
                    "output": output,
                }),
            );
        }
    }

    /// Runs one tool call, asking for approval when the policy says so, with its PreToolUse
    /// and PostToolUse hooks. Returns the output for the model and whether the call
    /// succeeded.
    pub(super) async fn run_tool(&mut self, call: &Call) -> (String, bool) {
        let mut post = None;
        let (output, success) = self.run_tool_inner(call, &mut post).await;
        // After a call that ran or failed; not after one a PreToolUse hook blocked.
        if let Some(arguments) = post {
            self.post_tool_hooks(call, &arguments, &output, success)
                .await;
        }
        (output, success)
    }

    /// `run_tool` without PostToolUse; `post` gets the arguments once PreToolUse let the call
    /// go on.
    async fn run_tool_inner(&mut self, call: &Call, post: &mut Option<Value>) -> (String, bool) {
        let tools = Registry::builtin();
        let mcp = self.mcp_tool(&call.name);
        let kind = mcp
            .as_ref()
            .map_or_else(|| tools.kind(&call.name), McpTool::kind);
        let arguments: Value = match serde_json::from_str(&call.arguments) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) | Err(_) => {
                self.announce(call, kind, &Value::Null);
                return (
                    format!(
                        "the arguments of {} are not a JSON object: {}",
                        call.name,
                        truncate_middle(
                            &call.arguments,
                            TruncationPolicy::Bytes(200),
                            Default::default()
                        )
                        .text
                    ),
                    false,
                );
            }
        };
        self.announce(call, kind, &arguments);
        if let Some(tool) = mcp {
            return self.run_mcp_tool(call, tool, arguments, post).await;
        }
        let offered = || {
            tools
                .names()
                .into_iter()
                .filter(|name| self.scope.allows(name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(tool) = tools.get(&call.name) else {
            return (
                format!("unknown tool {}; the tools are: {}", call.name, offered()),
                false,
            );
        };
        if !self.scope.allows(&call.name) {
            return (
                format!(
                    "not run: {} is not available in this turn; the tools are: {}",
                    call.name,
                    offered()
                ),
                false,
            );
        }
        let cx = self.tool_context(call);
        if cx.boundary.roots.is_empty() && kind != ToolKind::Other {
            return (
                "there is no workspace folder: tools that touch files cannot run".into(),
                false,
            );
        }
        let (arguments, permission) = match self.pre_tool_hooks(call, &arguments).await {
            Ok(go) => go,
            Err(reason) => return (reason, false),
        };
        *post = Some(arguments.clone());
        // Prepared first: the approval shows an edit's diff, and a bad call fails before
        // anyone is asked.
        let prepared = match tool.prepare(&cx, &arguments).await {
            Ok(prepared) => prepared,
            Err(message) => return (message, false),
        };
        let command = tool.command(&arguments);
        let gate = self.gate(&call.name, kind, command, permission).await;
        let diff = prepared.diff().map(str::to_string);
        // The planned change as {path, oldText, newText}: ACP's diff content item, and the
        // LSP panels' jump-to-change.
        let edit = match &prepared {
            crate::tools::registry::Prepared::Change { change, .. } => Some(change.as_diff()),
            crate::tools::registry::Prepared::Nothing => None,
        };
        match gate {
            Gate::Run => {}
            Gate::Refuse(why) => return (format!("not run: {why}"), false),
            Gate::Ask => {
                if let Err(message) = self
                    .ask(call, kind, &arguments, command, diff.clone(), edit.clone())
                    .await
                {
                    return (message, false);
                }
            }
        }
        let mut running =
            json!({"kind": "toolCallUpdate", "toolCallId": call.id, "status": "in_progress"});
        if let Some(edit) = &edit {
            running["diff"] = edit.clone();
        }
        self.update(running);
        let outcome = tool.run(&cx, &arguments, prepared).await;
        if let Some(diff) = diff.filter(|_| outcome.success) {
            self.note_diff(&diff);
        }
        self.apply_effect(call, command, outcome.effect).await;
        (outcome.output, outcome.success)
    }

    /// What a call did beyond its output: kept for the progress log, recorded, told.
    pub(super) async fn apply_effect(
        &mut self,
        call: &Call,
        command: Option<&str>,
        effect: Option<Effect>,
    ) {
        match effect {
            Some(Effect::Changed(path)) => self.changed.push(path),
            Some(Effect::Ran { evidence, changed }) => {
                self.evidence.push(evidence);
                if !changed.is_empty() {
                    self.changed.extend(changed.iter().map(|c| c.path.clone()));
                    let _ = self
                        .record(Event::FilesChanged {
                            turn_id: self.turn_id.clone(),
                            tool_call_id: call.id.clone(),
                            command: command.unwrap_or_default().to_string(),
                            files: changed,
                        })
                        .await;
                }
            }
            Some(Effect::Plan(entries)) => {
                let _ = self
                    .record(Event::Plan {
                        turn_id: self.turn_id.clone(),
                        entries: entries.clone(),
                    })
                    .await;
                self.update(json!({"kind": "plan", "entries": entries}));
            }
            // What a subagent changed counts as this session's change (the ledger keeps it).
            Some(Effect::SubagentChanged { agent, files }) => {
                self.changed.extend(files.iter().cloned());
                let _ = self
                    .record(Event::FilesChanged {
                        turn_id: self.turn_id.clone(),
                        tool_call_id: call.id.clone(),
                        command: format!("task ({agent})"),
                        files: files
                            .into_iter()
                            .map(|path| agentls_core::event::ChangedPath {
                                path,
                                change: agentls_core::snapshot::ChangeKind::Modified,
                            })
                            .collect(),
                    })
                    .await;
            }
            None => {}
        }
    }

    /// The approvals the gate reads: the session's, or for a subagent its parent's.
    /// Whether a call runs, asks or is refused: a PreToolUse hook's `permissionDecision`
    /// first (deny never gets here), else the approval rules under the session's policy (a
    /// subagent runs under its parent's, with its parent's remembered answers). The one gate
    /// of built-in and MCP calls.
    pub(super) async fn gate(
        &self,
        tool: &str,
        kind: ToolKind,
        command: Option<&str>,
        permission: Option<Permission>,
    ) -> Gate {
        match permission {
            Some(Permission::Allow) => Gate::Run,
            Some(Permission::Ask) => Gate::Ask,
            _ => {
                let approvals = self.approvals().await;
                let session = self
                    .scope
                    .child
                    .as_ref()
                    .map_or(self.handle.id.as_str(), |child| child.parent.id.as_str());
                approval::gate(
                    &self.agent.mode_of(session),
                    tool,
                    kind,
                    command,
                    &approvals,
                )
            }
        }
    }

    async fn approvals(&self) -> agentls_core::session::Approvals {
        match &self.scope.child {
            Some(child) => child.parent.live.lock().await.session.approvals.clone(),
            None => self.handle.live.lock().await.session.approvals.clone(),
        }
    }

    /// What a call of this turn may use: the workspace boundary, the host, the turn's
    /// cancellation, and a way to stream its output to the editor.
    pub(super) fn tool_context(&self, call: &Call) -> ToolContext {
        let agent = self.agent.clone();
        let handle = self.handle.clone();
        let turn_id = self.turn_id.clone();
        let cancel = self.cancel.clone();
        let call_id = call.id.clone();
        ToolContext {
            session_id: self.handle.id.clone(),
            call_id: call.id.clone(),
            boundary: PathBoundary {
                roots: self.host().roots(),
            },
            host: self.host().clone(),
            cancel: self.cancel.clone(),
            hidden_env: self.agent.hidden_env(),
            on_output: Arc::new(move |chunk: &str| {
                // Streamed to the editor only; redacted like the recorded output (a secret
                // split across two chunks is not caught here, only in `finish_call`).
                let chunk = secrets::redact(chunk);
                say(
                    &agent,
                    &handle,
                    &turn_id,
                    &cancel,
                    json!({"kind": "toolCallUpdate", "toolCallId": call_id, "status": "in_progress", "output": chunk}),
                );
            }),
            subagents: self.subagent_runner(call),
        }
    }

    pub(super) fn announce(&mut self, call: &Call, kind: ToolKind, arguments: &Value) {
        let boundary = PathBoundary {
            roots: self.host().roots(),
        };
        let told = self.update(json!({
            "kind": "toolCall",
            "toolCallId": call.id,
            "name": call.name,
            "title": self.title_of(&call.name, arguments),
            "toolKind": kind,
            "status": "pending",
            "input": arguments,
            "locations": locations(&boundary, arguments),
        }));
        if told {
            self.announced.insert(call.id.clone());
        }
    }

    /// Asks the user; Err(output for the model) when the answer is no.
    pub(super) async fn ask(
        &mut self,
        call: &Call,
        kind: ToolKind,
        arguments: &Value,
        command: Option<&str>,
        diff: Option<String>,
        edit: Option<Value>,
    ) -> Result<(), String> {
        let always = match command {
            Some(command) => format!(
                "Always allow `{}` commands in this session",
                approval::command_prefix(command)
            ),
            None => format!("Always allow {} in this session", call.name),
        };
        let never = match command {
            Some(command) => format!(
                "Never allow `{}` commands in this session",
                approval::command_prefix(command)
            ),
            None => format!("Never allow {} in this session", call.name),
        };
        let options =
            PermissionOption::four("Allow".to_string(), always, "Reject".to_string(), never);
        let mut tool_call = json!({
            "toolCallId": call.id,
            "name": call.name,
            "title": self.title_of(&call.name, arguments),
            "kind": kind,
            "input": arguments,
        });
        if let Some(diff) = diff {
            tool_call["diff"] = Value::String(diff);
        }
        if let Some(edit) = edit {
            tool_call["edit"] = edit;
        }
        tool_call["locations"] = locations(
            &PathBoundary {
                roots: self.host().roots(),
            },
            arguments,
        );
        // A subagent's call is asked in its parent's session, labelled with its name.
        let (session_id, turn_id) = match &self.scope.child {
            Some(child) => {
                tool_call["title"] = json!(format!(
                    "{}: {}",
                    child.agent,
                    self.title_of(&call.name, arguments)
                ));
                tool_call["subagent"] = json!(child.agent);
                tool_call["subagentSessionId"] = json!(self.handle.id);
                tool_call["parentToolCallId"] = json!(child.parent_call_id);
                (child.parent.id.clone(), child.parent_turn_id.clone())
            }
            None => (self.handle.id.clone(), self.turn_id.clone()),
        };
        let request = PermissionRequest {
            session_id,
            turn_id,
            tool_call,
            options,
        };
        let outcome = tokio::select! {
            outcome = self.host().request_permission(request) => outcome,
            () = self.cancel.cancelled() => crate::host::PermissionOutcome { kind: "cancelled".into() },
        };
        let prefix = command
            .filter(|_| matches!(outcome.kind.as_str(), "allowAlways" | "rejectAlways"))
            .map(approval::command_prefix);
        let answer = Event::Permission {
            turn_id: self.turn_id.clone(),
            tool_call_id: call.id.clone(),
            tool: call.name.clone(),
            outcome: outcome.kind.clone(),
            prefix,
        };
        // A subagent's approval was the parent's user's answer: the parent's session keeps
        // it too (its "always" answers hold for the parent and its later subagents).
        if let (
            Some(child),
            Event::Permission {
                tool_call_id,
                tool,
                outcome,
                prefix,
                ..
            },
        ) = (&self.scope.child, &answer)
        {
            let event = Event::Permission {
                turn_id: child.parent_turn_id.clone(),
                tool_call_id: tool_call_id.clone(),
                tool: tool.clone(),
                outcome: outcome.clone(),
                prefix: prefix.clone(),
            };
            let mut parent = child.parent.live.lock().await;
            if let Err(err) = parent.record(&event, Durability::Buffered, Registry::builtin()) {
                tracing::warn!("cannot record a subagent's approval in its parent's log: {err}");
            }
        }
        let _ = self.record(answer).await;
        if outcome.allows() {
            Ok(())
        } else if self.cancel.is_cancelled() {
            Err(self
                .host()
                .prompts()
                .aborted(agentls_core::prompts::AbortReason::CancelledAwaitingApproval))
        } else {
            self.problems.push(format!(
                "{} was rejected by the user",
                self.title_of(&call.name, arguments)
            ));
            Err(self.host().prompts().tool_rejected.clone())
        }
    }
}

/// Where a call works, for the editor to jump to: its `path` argument resolved in the
/// workspace (absolute), with its 1-based `offset` line when it has one (`read_file`).
fn locations(boundary: &PathBoundary, arguments: &Value) -> Value {
    let Some(path) = arguments["path"].as_str() else {
        return json!([]);
    };
    match boundary.resolve(path) {
        Ok(resolved) => {
            let mut location = json!({"path": resolved});
            if let Some(line) = arguments["offset"].as_u64().filter(|&l| l > 0) {
                location["line"] = json!(line);
            }
            json!([location])
        }
        Err(_) => json!([]),
    }
}
