//! A turn's tool calls: announced, prepared, gated by the approval rules (asking the user
//! when they say so), run through the tool registry, and recorded with their effects.
//! MCP tools (`mcp`) and subagents (`subagents`, the `task` tool) take the same path.

use crate::agent::turn::say;
use crate::agent::turn::Call;
use crate::agent::turn::Stop;
use crate::agent::turn::Turn;
use crate::locks::Locked;
mod asking;
mod checks;
use checks::CheckVerdict;
mod diagnostics;
pub(in crate::agent) mod mcp;
mod plan_mode;
mod sandbox;
pub(in crate::agent) mod subagents;

use crate::tools::edit_file::EditFile;
use crate::tools::registry::{AnyTool, Effect, OutputBudget, Registry, Tool, ToolContext};

/// The same call with the same result this many times in a turn (in a row, or in a cycle
/// with other calls): the model is reminded that its result will not change.
const REPEAT_REMINDER: usize = 3;
/// This many times: the call is not run and the turn ends (a small model that alternates
/// a read and an edit that changes nothing would otherwise run to `maxSteps`).
const REPEAT_LIMIT: usize = 5;
use agentls_core::tool_info::ToolCatalog;
use std::sync::Arc;

use serde_json::Value;

use crate::store::secrets;
use crate::tools::boundary::PathBoundary;
use agentls_core::approval::Gate;
use agentls_core::event::{ChangedPath, Event};
use agentls_core::history::Item;
use agentls_core::hooks::Permission;
use agentls_core::mcp::tools::McpTool;
use agentls_core::snapshot::ChangeKind;
use agentls_core::tool_info::LedgerRecord;
use agentls_core::tool_info::ToolKind;
use agentls_core::truncate::{truncate_middle, TruncationPolicy};
use agentls_core::updates::{ToolStatus, Update};

impl Turn {
    /// Records the model's calls, then runs them in order; the calls a cancel leaves get
    /// an "aborted" output, so the history never holds a call without its output.
    pub(in crate::agent::turn) async fn run_calls(&mut self, calls: &[Call]) -> Option<Stop> {
        self.output_budget = Some(self.room_for_outputs(calls.len()).await);
        for call in calls {
            if let Err(message) = self
                .record_item(Item::ToolCall {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .await
            {
                self.fail(message, false, None).await;
                return Some(Stop::Error);
            }
        }
        let mut index = 0;
        while index < calls.len() {
            if self.cancel.is_cancelled() {
                for skipped in &calls[index..] {
                    let _ = self
                        .finish_call(
                            skipped,
                            self.host()
                                .prompts()
                                .aborted(agentls_core::prompts::AbortReason::CancelledBeforeRun),
                            false,
                        )
                        .await;
                }
                return Some(Stop::Cancelled);
            }
            // `task` calls next to each other run at the same time; their outputs are
            // recorded in call order.
            let tasks = calls[index..]
                .iter()
                .take_while(|c| c.name == agentls_core::subagents::TASK_TOOL)
                .count();
            let batch = &calls[index..index + tasks.max(1)];
            if tasks == 0 {
                if let Some(stop) = self.refuse_repeated(&calls[index..]).await {
                    return Some(stop);
                }
            }
            let results = if tasks > 0 {
                self.run_tasks(batch).await
            } else {
                vec![self.run_tool(&batch[0]).await]
            };
            for (call, (output, success)) in batch.iter().zip(results) {
                self.note_result(call, &output);
                if let Err(message) = self.finish_call(call, output, success).await {
                    self.fail(message, false, None).await;
                    return Some(Stop::Error);
                }
            }
            index += batch.len();
        }
        None
    }

    /// What the window has left for each of `calls` outputs: the room below the fill at which
    /// a summary starts being prepared (`compaction.prepareAt`: on a local model that request
    /// would queue before the turn's own; the usable window when automatic compaction is off)
    /// after the last request
    /// and an allowance for the model's reply, shared between the calls; never less than an
    /// eighth of the window (a read must bring something; a compaction keeps the latest
    /// outputs, cut), never more than `toolOutputLimit` allows.
    async fn room_for_outputs(&self, calls: usize) -> OutputBudget {
        let config = self.host().config();
        let (window, tokenizer) = {
            let live = self.handle.live.lock().await;
            (
                self.agent.window_of(&live.session),
                live.session.history.tokenizer(),
            )
        };
        let ceiling = if config.compaction.auto {
            (config.compaction.prepare_at * window.usable as f64) as usize
        } else {
            window.usable
        };
        let used = self.last_estimate.unwrap_or(0) + window.usable / 20;
        let room = window.estimated(ceiling.saturating_sub(used)) / calls.max(1);
        let floor = window.estimated(window.usable) / 8;
        let tokens = match config.tool_output_limit {
            TruncationPolicy::Tokens(limit) => room.max(floor).min(limit),
            TruncationPolicy::Bytes(_) => room.max(floor),
        };
        OutputBudget { tokens, tokenizer }
    }

    /// The repeated-call guard, before `calls[0]` runs: a call (name and arguments) whose
    /// earlier runs in this turn gave the same result each time is counted, whatever ran in
    /// between; at `REPEAT_REMINDER` the model gets a reminder, at `REPEAT_LIMIT` the call is
    /// not run (nor the calls after it) and the turn ends with `repeatedToolCall`. A call
    /// whose result changed (a read after an edit) starts counting again.
    async fn refuse_repeated(&mut self, calls: &[Call]) -> Option<Stop> {
        let call = &calls[0];
        let count = self
            .repeats
            .get(&signature(call))
            .map_or(1, |(_, times)| times + 1);
        if count == REPEAT_REMINDER {
            let texts = self.host().prompts().reminders.clone();
            self.agent.hooks.queue(
                &self.handle.id,
                agentls_core::reminders::repeated_call(
                    &self.turn_id,
                    &call.name,
                    count,
                    REPEAT_LIMIT,
                    &texts,
                ),
            );
        }
        if count < REPEAT_LIMIT {
            return None;
        }
        let message = format!(
            "the model called {} {count} times with the same arguments and got the same result each time: the turn was stopped",
            call.name
        );
        for skipped in calls {
            let _ = self
                .finish_call(skipped, format!("not run: {message}"), false)
                .await;
        }
        self.fail(message, false, Some("repeatedToolCall")).await;
        Some(Stop::Error)
    }

    /// Counts `call`'s result for the repeated-call guard: the same result as its last run
    /// adds one, another result starts again at one.
    fn note_result(&mut self, call: &Call, output: &str) {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        output.hash(&mut hasher);
        let result = hasher.finish();
        let entry = self.repeats.entry(signature(call)).or_insert((result, 0));
        if entry.0 == result {
            entry.1 += 1;
        } else {
            *entry = (result, 1);
        }
    }

    /// Records a call's output and tells the client it finished. Known secret values are
    /// redacted first (`store::secrets::redact`): what is recorded reaches the log, the
    /// editor and the model. A call the client was told of always gets this final update,
    /// even after a cancel (its row must not stay `in_progress`), and before `turnEnd`: the
    /// turn sends both.
    pub(in crate::agent) async fn finish_call(
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
        recorded?;
        // A tool's images follow its output (`Item::Images` names the call).
        let images = self.pending_images.locked().remove(&call.id);
        if let Some(images) = images {
            self.record_item(Item::Images {
                images,
                call_id: Some(call.id.clone()),
            })
            .await?;
        }
        Ok(())
    }

    /// The final `toolCallUpdate` of a call the client was told of (even after a cancel:
    /// its row must not stay `in_progress`).
    pub(in crate::agent) fn tell_call_ended(&self, call_id: &str, success: bool, output: String) {
        if self.announced.contains(call_id) {
            self.agent.update(
                &self.handle.id,
                &self.turn_id,
                Update::ToolCallUpdate {
                    tool_call_id: call_id.to_string(),
                    status: ToolStatus::ended(success),
                    output: Some(output),
                    diff: None,
                },
            );
        }
    }

    /// Runs one tool call, asking for approval when the policy says so, with its PreToolUse
    /// and PostToolUse (or PostToolUseFailure) hooks. Returns the output for the model and
    /// whether the call succeeded.
    pub(in crate::agent) async fn run_tool(&mut self, call: &Call) -> (String, bool) {
        let mut post = None;
        self.call_started = None;
        let (output, success) = self.run_tool_inner(call, &mut post).await;
        // Only after a call that ran, as Claude Code fires them: not after a block, a
        // refusal, a rejection or a failed preparation, nor after a cancel.
        let started = self.call_started.take();
        if let (Some(arguments), Some(started)) = (post, started) {
            if !self.cancel.is_cancelled() {
                self.post_tool_hooks(call, &arguments, &output, success, started.elapsed())
                    .await;
            }
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
            .map_or_else(|| tools.kind(&call.name, &Value::Null), McpTool::kind);
        let arguments = match object_arguments(call) {
            Ok(arguments) => arguments,
            Err(message) => {
                self.announce(call, kind, &Value::Null);
                return (message, false);
            }
        };
        let kind = match mcp {
            None => tools.kind(&call.name, &arguments),
            Some(_) => kind,
        };
        self.announce(call, kind, &arguments);
        // The mode's refusal before the hooks: a tool the turn does not offer never runs.
        if self.scope.allows(&call.name) {
            if let Some(refusal) = self.withheld_by_mode(&call.name) {
                return (refusal, false);
            }
        }
        // A built-in call that cannot run fails before its hooks.
        let builtin = match mcp {
            Some(_) => None,
            None => {
                let tool = match self.offered_tool(call, tools) {
                    Ok(tool) => tool,
                    Err(message) => return (message, false),
                };
                let cx = self.tool_context(call);
                if cx.boundary.roots.is_empty() && kind != ToolKind::Other {
                    return (
                        "there is no workspace folder: tools that touch files cannot run".into(),
                        false,
                    );
                }
                Some((tool, cx))
            }
        };
        // One pipeline from here: PreToolUse, then the gate and the question, then the run.
        let (arguments, permission) = match self.pre_tool_hooks(call, &arguments).await {
            Ok(go) => go,
            Err(reason) => return (reason, false),
        };
        *post = Some(arguments.clone());
        let (tool, mut cx) = match (mcp, builtin) {
            (Some(tool), _) => return self.run_mcp_tool(call, tool, arguments, permission).await,
            (None, Some(builtin)) => builtin,
            (None, None) => unreachable!("a call is built-in when it is not MCP"),
        };
        self.unconfine_if_allowed(&mut cx, tool.command(&arguments))
            .await;
        match self
            .approve_and_run(call, kind, tool, &cx, &arguments, permission)
            .await
        {
            Ok(outcome) | Err(outcome) => outcome,
        }
    }

    /// The built-in tool a call names, if this turn's scope offers it; else the output that
    /// says which tools there are.
    fn offered_tool<'r>(
        &self,
        call: &Call,
        tools: &'r Registry,
    ) -> Result<&'r dyn AnyTool, String> {
        let offered = || {
            tools
                .names()
                .into_iter()
                .filter(|name| self.offers(name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(tool) = tools.get(&call.name) else {
            return Err(format!(
                "unknown tool {}; the tools are: {}",
                call.name,
                offered()
            ));
        };
        if !self.scope.allows(&call.name) {
            return Err(format!(
                "not run: {} is not available in this turn; the tools are: {}",
                call.name,
                offered()
            ));
        }
        Ok(tool)
    }

    /// A built-in call after its hooks: prepared (the approval shows an edit's diff, and a
    /// bad call fails before anyone is asked), gated, run, its effect applied. Err is an
    /// output that ends the call early.
    async fn approve_and_run(
        &mut self,
        call: &Call,
        kind: ToolKind,
        tool: &dyn AnyTool,
        cx: &ToolContext,
        arguments: &Value,
        permission: Option<Permission>,
    ) -> Result<(String, bool), (String, bool)> {
        if let Some(refusal) = self.sandbox_refusal(kind) {
            return Err((refusal, false));
        }
        let ready = tool.prepare(cx, arguments).await.map_err(|m| (m, false))?;
        let command = tool.command(arguments);
        let path = asking::rule_path(&cx.boundary, arguments);
        let mut gate = self
            .gate(&call.name, kind, command, path.as_deref(), permission)
            .await;
        let diff = ready.prepared.diff().map(str::to_string);
        let changes = ready.prepared.changes();
        let planned: Vec<_> = changes.iter().map(diagnostics::planned_lines).collect();
        // The planned change of one file as {path, oldText, newText}: ACP's diff content
        // item, and the LSP panels' jump-to-change (a change of several shows its diff).
        let edit = match changes {
            [change] => Some(change.as_diff()),
            _ => None,
        };
        let reason = changes
            .iter()
            .find_map(|change| self.agent.protected_write(change.path()));
        // A change of files besides the call's `path` (a rename) is gated as an edit of each.
        for change in changes.iter().filter(|c| Some(c.path()) != path.as_deref()) {
            let each = self
                .gate(
                    EditFile::NAME,
                    ToolKind::Edit,
                    None,
                    Some(change.path()),
                    permission,
                )
                .await;
            gate = gate.strictest(each);
        }
        let reason = reason.or_else(|| tool.always_asks(arguments));
        if reason.is_some() && gate == Gate::Run {
            gate = Gate::Ask;
        }
        let shown = asking::Shown {
            diff: diff.clone(),
            edit: edit.clone(),
            reason,
            outside_sandbox: None,
        };
        self.settle_gate(call, gate, kind, arguments, command, shown)
            .await
            .map_err(|m| (m, false))?;
        self.update(Update::call_running(&call.id, None, edit));
        self.call_started = Some(std::time::Instant::now());
        let mut outcome = tool.run(cx, ready).await;
        if outcome.sandbox_denied.is_some() {
            outcome = self
                .offer_to_leave_sandbox(call, tool, arguments, outcome)
                .await;
        }
        if let Some(diff) = diff.filter(|_| outcome.success) {
            self.note_diff(&diff);
        }
        let output = self.output_with_diagnostics(cx, planned, &outcome).await;
        let (output, check) = self.output_with_check(cx, &outcome, output).await;
        if let Some(check) = check {
            self.failed_check = match check {
                CheckVerdict::Failed(report) => Some(report),
                CheckVerdict::Passed => None,
            };
        }
        self.apply_effect(call, command, outcome.effect).await;
        Ok((output, outcome.success))
    }

    /// Files a call changed, kept for the progress log. A change the ledger cannot read
    /// from the call itself (a rename's files) is recorded as the files it changed, under
    /// the call's title.
    async fn note_changed(&mut self, call: &Call, paths: Vec<String>) {
        self.changed.extend(paths.iter().cloned());
        let tools = Registry::builtin();
        if tools.ledger_record(&call.name) != LedgerRecord::Nothing {
            return;
        }
        let arguments = serde_json::from_str(&call.arguments).unwrap_or_default();
        let files = paths
            .into_iter()
            .map(|path| ChangedPath {
                path,
                change: ChangeKind::Modified,
            })
            .collect();
        let _ = self
            .record(Event::FilesChanged {
                turn_id: self.turn_id.clone(),
                tool_call_id: call.id.clone(),
                command: tools.title(&call.name, &arguments),
                files,
            })
            .await;
    }

    /// What a call did beyond its output: kept for the progress log, recorded, told.
    pub(in crate::agent) async fn apply_effect(
        &mut self,
        call: &Call,
        command: Option<&str>,
        effect: Option<Effect>,
    ) {
        match effect {
            Some(Effect::Changed(paths)) => self.note_changed(call, paths).await,
            // Recorded after the call's output (`finish_call`).
            Some(Effect::Images(images)) => {
                self.pending_images.locked().insert(call.id.clone(), images);
            }
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
            Some(Effect::BackgroundChanged { command, changed }) => {
                self.changed.extend(changed.iter().map(|c| c.path.clone()));
                let _ = self
                    .record(Event::FilesChanged {
                        turn_id: self.turn_id.clone(),
                        tool_call_id: call.id.clone(),
                        command,
                        files: changed,
                    })
                    .await;
            }
            Some(Effect::Plan(entries)) => {
                let _ = self
                    .record(Event::Plan {
                        turn_id: self.turn_id.clone(),
                        entries: entries.clone(),
                    })
                    .await;
                self.update(Update::Plan { entries });
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
            // Published at once (the editor's diagnostics), listed when the turn ends.
            Some(Effect::Finding(finding)) => {
                self.host().publish_finding(&self.handle.id, &finding);
                self.findings.push(finding);
            }
            None => {}
        }
    }

    /// What a call of this turn may use: the workspace boundary, the host, the turn's
    /// cancellation, and a way to stream its output to the editor.
    pub(in crate::agent) fn tool_context(&self, call: &Call) -> ToolContext {
        let agent = self.agent.clone();
        let handle = self.handle.clone();
        let turn_id = self.turn_id.clone();
        let cancel = self.cancel.clone();
        let call_id = call.id.clone();
        let streamed = std::sync::Mutex::new(agentls_core::truncate::StreamedOutput::default());
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
                // split across two chunks is not caught here, only in `finish_call`). Up to
                // a budget: the queue of notifications must not outgrow a noisy command.
                let chunk = secrets::redact(chunk);
                let Some(chunk) = streamed.locked().admit(&chunk) else {
                    return;
                };
                say(
                    &agent,
                    &handle,
                    &turn_id,
                    &cancel,
                    Update::call_running(&call_id, Some(chunk), None),
                );
            }),
            subagents: self.subagent_runner(call),
            output_budget: self.output_budget,
            sandbox: self.sandbox_policy(),
            images: self.image_formula,
            reads: config_reads(&self.host().config(), &self.handle.reads),
            background: self.handle.background.clone(),
        }
    }

    pub(in crate::agent) fn announce(&mut self, call: &Call, kind: ToolKind, arguments: &Value) {
        let boundary = PathBoundary {
            roots: self.host().roots(),
        };
        let told = self.update(Update::ToolCall {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            title: self.title_of(&call.name, arguments),
            tool_kind: kind,
            status: ToolStatus::Pending,
            input: arguments.as_object().cloned(),
            locations: asking::locations(&boundary, arguments),
        });
        if told {
            self.announced.insert(call.id.clone());
        }
    }
}

/// A call's name and arguments (normalized JSON), what the repeated-call guard compares.
fn signature(call: &Call) -> String {
    format!(
        "{}\u{0}{}",
        call.name,
        serde_json::from_str::<Value>(&call.arguments)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| call.arguments.clone())
    )
}

/// The session's record of what was read, when `tools.readBeforeWrite` asks for the rule.
fn config_reads(
    config: &agentls_core::config::Config,
    reads: &Arc<std::sync::Mutex<agentls_core::file_reads::FileReads>>,
) -> Option<Arc<std::sync::Mutex<agentls_core::file_reads::FileReads>>> {
    config.read_before_write.then(|| reads.clone())
}

/// A call's arguments as a JSON object, or the output that says they are not one: a call
/// cut short (the reply reached its output limit) is told so, with what to do instead, so a
/// small model writes smaller pieces rather than the same long call again.
fn object_arguments(call: &Call) -> Result<Value, String> {
    let shown = || {
        truncate_middle(
            &call.arguments,
            TruncationPolicy::Bytes(200),
            Default::default(),
        )
        .text
    };
    match serde_json::from_str(&call.arguments) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Err(err) if err.is_eof() && !call.arguments.trim().is_empty() => Err(format!(
            "not run: the arguments of {} were cut off before they ended (the reply reached its output limit), so the call was not made. Make smaller calls: change an existing file with edit_file, one function at a time, or write a short first version with write_file and add to it with edit_file. The cut arguments began: {}",
            call.name,
            shown()
        )),
        Ok(_) | Err(_) => Err(format!(
            "the arguments of {} are not a JSON object: {}",
            call.name,
            shown()
        )),
    }
}
