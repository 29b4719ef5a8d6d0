//! What a turn may use (`Scope`: a custom command's tools and model, a subagent's limits)
//! and subagents: the `task` calls of a response run concurrently (at most
//! `subagents.maxConcurrent`), each as a child turn in a session of its own
//! (`parentSessionId`, `parentToolCallId` in its log). A child starts from a fresh context
//! (its system prompt with the data-boundary statement, its tools, AGENTS.md, the task), asks
//! for approvals under the parent's policy in the parent's session (labelled with its name),
//! stops at `subagents.maxSteps`, is cancelled with its parent, and gives back only its
//! final message.

use crate::agent::sessions::{AskedIn, SessionHandle};
use crate::agent::turn::Call;
use crate::agent::turn::Stop;
use crate::agent::turn::Turn;
use crate::agent::Agent;
use crate::store;
use crate::store::session_log;
use crate::tools::registry::{ChildOutcome, Registry, SubagentRunner, ToolOutcome};
use agentls_core::event::Event;
use agentls_core::history::Item;
use agentls_core::inspect;
use agentls_core::tokens::Calibration;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use futures::StreamExt;
use serde_json::Value;

use crate::tools::lsp;
use agentls_core::context::StaticContext;
use agentls_core::event::ParentLink;
use agentls_core::review::REPORT_FINDING_TOOL;
use agentls_core::subagents::{self, Subagent, TASK_TOOL};
use agentls_core::tool_info::ToolKind;
use agentls_core::updates::Update;

/// What a turn may use beyond the session's defaults.
#[derive(Default)]
pub(in crate::agent) struct Scope {
    /// The tools the turn may call; None: every tool.
    pub(in crate::agent) allowed_tools: Option<Vec<String>>,
    /// The turn's model; None: the session's.
    pub(in crate::agent) model: Option<String>,
    /// Set when the turn is a subagent's.
    pub(in crate::agent) child: Option<ChildOf>,
    /// The custom command (or MCP prompt) the prompt invoked.
    pub(in crate::agent) expanded: Option<String>,
    /// The text whose `@mentions` are attached when it is not the prompt's: an MCP
    /// prompt's invocation as typed (the server's text attaches nothing).
    pub(in crate::agent) mentions_from: Option<String>,
    /// The subagents the turn offers (read when it opens).
    pub(in crate::agent) subagents: Arc<Vec<Subagent>>,
    /// Set for a `/review` turn: the block of the diff it reviews (data, after the editor
    /// block). Such a turn runs under plan mode's rules, offers `report_finding` and starts
    /// no subagent.
    pub(in crate::agent) review: Option<String>,
}

/// A subagent's turn: whose it is and where it answers.
pub(in crate::agent) struct ChildOf {
    pub(in crate::agent) parent: Arc<SessionHandle>,
    pub(in crate::agent) parent_turn_id: String,
    pub(in crate::agent) parent_call_id: String,
}

impl Scope {
    pub(in crate::agent) fn allows(&self, tool: &str) -> bool {
        if tool == TASK_TOOL
            && (self.child.is_some() || self.subagents.is_empty() || self.review.is_some())
        {
            return false;
        }
        if tool == REPORT_FINDING_TOOL && self.review.is_none() {
            return false;
        }
        self.allowed_tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|t| t == tool))
    }
}

/// Runs the subagents of one `task` call.
struct Runner {
    agent: Arc<Agent>,
    parent: Arc<SessionHandle>,
    parent_turn_id: String,
    call_id: String,
    cancel: CancellationToken,
    agents: Arc<Vec<Subagent>>,
}

#[async_trait::async_trait]
impl SubagentRunner for Runner {
    fn agents(&self) -> &[Subagent] {
        &self.agents
    }

    async fn run(&self, agent: &Subagent, prompt: &str) -> ChildOutcome {
        let link = ChildOf {
            parent: self.parent.clone(),
            parent_turn_id: self.parent_turn_id.clone(),
            parent_call_id: self.call_id.clone(),
        };
        run_child(&self.agent, link, agent, prompt, self.cancel.child_token()).await
    }
}

/// Offered only while `memory.enabled` holds.
const SAVE_MEMORY: &str = "save_memory";

impl Turn {
    /// The tools this turn offers the model: the turn's scope and the session's mode
    /// applied (`Turn::offers`), and `task` described with the subagents (read now, so an
    /// edited file counts at once).
    pub(in crate::agent) async fn offer_tools(
        &mut self,
        mut static_context: StaticContext,
        prompts: &agentls_core::prompts::Prompts,
    ) -> StaticContext {
        if self.scope.child.is_none() {
            let roots = self.host().roots();
            let explore = prompts.subagent_explore.clone();
            let loaded = tokio::task::spawn_blocking(move || {
                store::commands::load_subagents(&roots, &explore, &Registry::builtin().names())
            })
            .await
            .unwrap_or_default();
            for problem in loaded.1 {
                self.warn(format!("subagent: {problem}"));
            }
            self.scope.subagents = Arc::new(loaded.0);
        }
        let roster = subagents::roster(&self.scope.subagents);
        let memory = self.host().config().memory_enabled;
        // `lsp` is described only where the editor's language servers answer it; a call of
        // it elsewhere (a session resumed from the terminal) still answers, from the index.
        let language_servers = self.host().editor_language_servers().is_some();
        static_context.tools.retain(|tool| {
            self.offers(&tool.name)
                && (memory || tool.name != SAVE_MEMORY)
                && lsp::described(&tool.name, language_servers)
        });
        for tool in &mut static_context.tools {
            if tool.name == TASK_TOOL {
                tool.description =
                    agentls_core::prompts::fill(&tool.description, &[("subagents", &roster)]);
            }
        }
        // The MCP servers' tools after the built-in ones: the cached prefix changes only
        // when their set does.
        let mcp = self.mcp_specs().await;
        static_context.tools.extend(mcp);
        static_context
    }

    /// The runner a `task` call uses, when this turn may start subagents.
    pub(in crate::agent) fn subagent_runner(&self, call: &Call) -> Option<Arc<dyn SubagentRunner>> {
        if !self.scope.allows(TASK_TOOL) {
            return None;
        }
        Some(Arc::new(Runner {
            agent: self.agent.clone(),
            parent: self.handle.clone(),
            parent_turn_id: self.turn_id.clone(),
            call_id: call.id.clone(),
            cancel: self.cancel.clone(),
            agents: self.scope.subagents.clone(),
        }))
    }

    /// Runs `task` calls at the same time (at most `subagents.maxConcurrent`): announced and
    /// checked in order, run together, their effects applied in order. Outputs in call
    /// order.
    pub(in crate::agent) async fn run_tasks(&mut self, calls: &[Call]) -> Vec<(String, bool)> {
        let registry = Registry::builtin();
        let Some(task) = registry.get(TASK_TOOL) else {
            return calls
                .iter()
                .map(|_| ("task is not a tool of this server".to_string(), false))
                .collect();
        };
        let max = self.host().config().subagent_max_concurrent.max(1);
        let mut jobs = Vec::new();
        for call in calls {
            let arguments: Value = match serde_json::from_str(&call.arguments) {
                Ok(value @ Value::Object(_)) => value,
                _ => {
                    self.announce(call, ToolKind::Other, &Value::Null);
                    jobs.push(Err((
                        format!(
                            "the arguments of task are not a JSON object: {}",
                            call.arguments
                        ),
                        false,
                    )));
                    continue;
                }
            };
            self.announce(call, ToolKind::Other, &arguments);
            if !self.scope.allows(TASK_TOOL) {
                jobs.push(Err((
                    "not run: task is not available in this turn".to_string(),
                    false,
                )));
                continue;
            }
            let cx = self.tool_context(call);
            match task.prepare(&cx, &arguments).await {
                Ok(ready) => jobs.push(Ok((call.id.clone(), cx, ready))),
                Err(message) => jobs.push(Err((message, false))),
            }
        }
        // A task is `in_progress` when its child starts, not when it is queued behind
        // `maxConcurrent` others: the editor sees which ones run.
        let this = &*self;
        let outcomes: Vec<Result<ToolOutcome, (String, bool)>> =
            futures::stream::iter(jobs.into_iter().map(|job| async move {
                let (call_id, cx, ready) = job?;
                this.update(Update::call_running(&call_id, None, None));
                Ok(task.run(&cx, ready).await)
            }))
            .buffered(max)
            .collect()
            .await;
        let mut results = Vec::new();
        for (call, outcome) in calls.iter().zip(outcomes) {
            match outcome {
                Ok(outcome) => {
                    self.apply_effect(call, None, outcome.effect).await;
                    results.push((outcome.output, outcome.success));
                }
                Err(failed) => results.push(failed),
            }
        }
        results
    }

    /// A subagent's turn: its own context (system prompt, tools, AGENTS.md, the task), then
    /// the loop.
    async fn run_subagent(&mut self, agent: &Subagent, prompt: &str) -> Stop {
        let host = self.host().clone();
        let mut config = host.config();
        config.max_steps = config.subagent_max_steps;
        let prompts = host.prompts();
        let started = self
            .record(Event::TurnStarted {
                turn_id: self.turn_id.clone(),
                at: session_log::now_millis(),
            })
            .await;
        if let Err(message) = started {
            self.fail(message, false, None).await;
            return Stop::Error;
        }
        self.subagent_start_hooks().await;
        let gathered = match host.gather(None).await {
            Ok(gathered) => gathered,
            Err(message) => {
                self.fail(message, false, None).await;
                return Stop::Error;
            }
        };
        let no_history = agentls_core::history::History::new(config.tokenizer());
        let inputs = gathered.inputs(&config, &prompts, &no_history, Calibration::default());
        let base = inspect::static_context(&inputs);
        let static_context = StaticContext {
            system_prompt: format!("{}\n\n{}", agent.prompt, prompts.data_boundary.trim()),
            skills_index: String::new(),
            ..base
        };
        let static_context = self.offer_tools(static_context, &prompts).await;
        if let Err(message) = self
            .record_item(Item::User {
                text: prompt.to_string(),
                context: None,
            })
            .await
        {
            self.fail(message, false, None).await;
            return Stop::Error;
        }
        let model = self.scope.model.clone().unwrap_or_default();
        match self.opened(config, prompts, model, static_context).await {
            Ok(opened) => self.drive(&opened).await,
            Err(stop) => stop,
        }
    }
}

/// Runs `agent` on `prompt` in a new child session of `link.parent`; its final message, or
/// why there is none.
async fn run_child(
    owner: &Arc<Agent>,
    link: ChildOf,
    agent: &Subagent,
    prompt: &str,
    cancel: CancellationToken,
) -> ChildOutcome {
    let failed = |why: String| ChildOutcome {
        answer: Err(why),
        changed: Vec::new(),
    };
    let parent_model = link.parent.live.lock().await.session.model.clone();
    let model = agent.model.clone().unwrap_or(parent_model);
    let parent = ParentLink {
        parent_session_id: link.parent.id.clone(),
        parent_tool_call_id: link.parent_call_id.clone(),
    };
    let started = async {
        let id = owner
            .create_session(Some(model.clone()), Some(parent))
            .await?;
        owner.handle(&id).await
    };
    let handle = match started.await {
        Ok(handle) => handle,
        Err(err) => {
            return failed(format!(
                "the subagent {} could not start: {err}",
                agent.name
            ))
        }
    };
    let isolated = match work_apart(owner, &handle, agent, &link.parent_call_id).await {
        Ok(isolated) => isolated,
        Err(why) => {
            owner.release(&handle.id);
            return failed(format!("the subagent {} did not start: {why}", agent.name));
        }
    };
    let _ = handle.asks_in.set(AskedIn {
        agent: agent.name.clone(),
        parent_session_id: link.parent.id.clone(),
        parent_turn_id: link.parent_turn_id.clone(),
        parent_call_id: link.parent_call_id.clone(),
    });
    let mut turn = Turn::new(
        owner.clone(),
        handle.clone(),
        format!("turn-{}", session_log::new_session_id()),
        cancel,
        Scope {
            allowed_tools: Some(agent.tools.clone()),
            model: Some(model),
            child: Some(link),
            expanded: None,
            mentions_from: None,
            subagents: Arc::default(),
            review: None,
        },
    );
    let stop = turn.run_subagent(agent, prompt).await;
    let cancelled = turn.cancel.is_cancelled();
    turn.finish(stop).await;
    let (answer, errors) = {
        let live = handle.live.lock().await;
        (last_answer(&live.session), live.session.errors.clone())
    };
    let changed = std::mem::take(&mut turn.changed);
    // The child's history stays in its log, not in memory for the rest of the server's life.
    drop(turn);
    owner.release(&handle.id);
    let answer = verdict(&agent.name, stop, cancelled, answer, &errors);
    match isolated {
        Some(isolated) => with_branch(owner, isolated, &agent.name, answer).await,
        None => ChildOutcome { answer, changed },
    }
}

/// `isolation: worktree`: the child's host gets its worktree as its one root. None for a
/// subagent that works in the workspace; Err: why it cannot work apart.
async fn work_apart(
    owner: &Arc<Agent>,
    handle: &SessionHandle,
    agent: &Subagent,
    call_id: &str,
) -> Result<Option<crate::agent::worktree::Isolated>, String> {
    if !agent.worktree {
        return Ok(None);
    }
    let isolated = owner.isolate(&format!("task-{call_id}")).await?;
    let _ = handle.host.set(isolated.host.clone());
    Ok(Some(isolated))
}

/// A child that worked apart: the main tree is untouched, so the parent gets its branch and
/// diff after its answer (or why it has none), and no changed file.
async fn with_branch(
    owner: &Arc<Agent>,
    isolated: crate::agent::worktree::Isolated,
    name: &str,
    mut answer: Result<String, String>,
) -> ChildOutcome {
    let branch = owner.finish_isolated(isolated, name).await;
    match &mut answer {
        Ok(text) | Err(text) => {
            text.push_str("\n\n");
            text.push_str(&branch);
        }
    }
    ChildOutcome {
        answer,
        changed: Vec::new(),
    }
}

/// The child's final message: the last non-empty assistant text since its prompt.
fn last_answer(session: &agentls_core::session::Session) -> Option<String> {
    session
        .history
        .entries()
        .iter()
        .rev()
        .take_while(|e| !matches!(e.item, Item::User { .. }))
        .find_map(|e| match &e.item {
            Item::Assistant { text } if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        })
}

/// What the parent's `task` call gets: the child's answer, or why there is none.
fn verdict(
    name: &str,
    stop: Stop,
    cancelled: bool,
    answer: Option<String>,
    errors: &[String],
) -> Result<String, String> {
    match (stop, answer) {
        (Stop::EndTurn, Some(answer)) if !cancelled => Ok(answer),
        (Stop::EndTurn, None) if !cancelled => {
            Err(format!("the subagent {name} ended without an answer"))
        }
        (_, _) if cancelled => Err(format!("the subagent {name} was cancelled")),
        (Stop::MaxSteps, _) => Err(format!(
            "the subagent {name} stopped at its step limit (subagents.maxSteps) without a final answer"
        )),
        (stop, _) => Err(format!(
            "the subagent {name} failed ({}): {}",
            stop.name(),
            errors.last().map_or("no error recorded", String::as_str)
        )),
    }
}
