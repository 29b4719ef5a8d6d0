//! One turn: gather the context, record the user's message, then model calls and tool calls
//! until the model stops, `maxSteps`, a cancel or an error; then close the turn (log synced,
//! progress log, `turnEnd`). The order of events and cancellation are decided here; LSP and
//! HTTP details are the host's and the provider's.

use crate::agent::sessions::Prompt;
use crate::agent::sessions::SessionHandle;
use crate::agent::tokenizer_for;
use crate::agent::Agent;
use crate::locks::Locked;
mod dispatch;
mod input;
mod listings;
mod model_step;
mod steering;

pub(in crate::agent) use dispatch::subagents::Scope;

use crate::agent::sessions::live::Durability;
use crate::tools::registry::Registry;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::host::Host;
use crate::store::session_log;
use agentls_core::event::Event;
use agentls_core::history::{Entry, Item};
use agentls_core::inspect;
use agentls_core::prompt_text;
use agentls_core::tokens::Calibration;
use agentls_core::updates::Update;

/// How a turn ended: the `turnEnd` stop reason.
pub(in crate::agent) use agentls_core::updates::StopReason as Stop;

/// What a turn works with once it is open.
struct Opened {
    config: agentls_core::config::Config,
    prompts: Arc<agentls_core::prompts::Prompts>,
    model: String,
    static_context: agentls_core::context::StaticContext,
    provider: Arc<crate::provider::Provider>,
    tokenizer: agentls_core::tokens::TokenizerKind,
}

/// What one model call brought back.
struct ModelReply {
    text: String,
    calls: Vec<Call>,
    usage: Option<agentls_core::wire::Usage>,
    result: Result<(), agentls_core::wire::ProviderError>,
}

/// Whether the turn goes on after a step.
enum Flow {
    Next,
    Done(Stop),
}

pub(in crate::agent) struct Turn {
    pub(in crate::agent) agent: Arc<Agent>,
    pub(in crate::agent) handle: Arc<SessionHandle>,
    pub(in crate::agent) turn_id: String,
    pub(in crate::agent) cancel: CancellationToken,
    pub(in crate::agent) usage: (u64, u64),
    /// The calibrated size of the last request sent (the status at the end of the turn).
    pub(in crate::agent) last_estimate: Option<usize>,
    /// For the progress log: files changed, evidence gathered, problems met.
    pub(in crate::agent) changed: Vec<String>,
    pub(in crate::agent) evidence: Vec<String>,
    pub(in crate::agent) problems: Vec<String>,
    pub(in crate::agent) steps: usize,
    /// The calls whose `toolCall` the client got: each gets its final `toolCallUpdate`,
    /// even after a cancel.
    pub(in crate::agent) announced: std::collections::HashSet<String>,
    /// A Stop hook already made this turn go on once.
    pub(in crate::agent) stop_hook_active: bool,
    /// The user's request as the turn runs it (`reminders.unfinishedChange` reads it).
    pub(in crate::agent) request: String,
    /// The unfinished-change reminder was given in this turn.
    pub(in crate::agent) reminded_unfinished: bool,
    /// The report of the check after this turn's last change, when it failed
    /// (`checks.afterEdit`).
    pub(in crate::agent) failed_check: Option<String>,
    /// Where this turn's attempt at a change starts in the history (after the user's
    /// message), and where the failed listing it retries ends, with that failure's report:
    /// the request of a fresh attempt leaves out what lies between (`listings.rs`).
    pub(in crate::agent) attempt: Attempt,
    /// Failing-check reminders given in this turn (`reminders.failingCheck`).
    pub(in crate::agent) failing_check_reminders: usize,
    /// A hook's `continue: false`: the turn ends after the current calls, with this reason.
    pub(in crate::agent) halt: Option<String>,
    /// When the call being run passed its gate and started: PostToolUse or
    /// PostToolUseFailure follow only such a call (`run_tool`).
    pub(in crate::agent) call_started: Option<std::time::Instant>,
    /// What this turn may use beyond the session's defaults: a custom command's tools and
    /// model, or a subagent's.
    pub(in crate::agent) scope: Scope,
    /// What the window has left for each output of the calls being run (`run_calls`).
    pub(in crate::agent) output_budget: Option<crate::tools::registry::OutputBudget>,
    /// Each call made this turn (name and arguments): its last result's hash and how many
    /// times in a row it gave that result (the repeated-call guard).
    pub(in crate::agent) repeats: std::collections::HashMap<String, (u64, usize)>,
    /// Whether this turn's last compaction made room (`Turn::measure_compaction`).
    pub(in crate::agent) compaction_check: CompactionCheck,
    /// The checkpoint taken before this turn (`agent::checkpoints`): its id and trees.
    pub(in crate::agent) checkpoint: Option<(String, crate::store::checkpoints::Snapshot)>,
    /// How the model counts images when it takes them (set as the turn opens).
    pub(in crate::agent) image_formula: Option<agentls_core::image::TokenFormula>,
    /// Images a call returned, by call id, recorded after its output.
    pub(in crate::agent) pending_images:
        std::sync::Mutex<std::collections::HashMap<String, Vec<agentls_core::image::Image>>>,
    /// A review turn's findings (`report_finding`), listed when it ends.
    pub(in crate::agent) findings: Vec<agentls_core::review::Finding>,
}

/// What the request after a compaction of the turn showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(in crate::agent) enum CompactionCheck {
    /// No compaction in this turn yet.
    #[default]
    None,
    /// Compacted: the next request measures it.
    Measure,
    Helped,
    /// The fill stayed near the threshold: no more compactions in this turn.
    NoRoom,
}

/// A turn's attempts at a change by file listing (`listings.rs`).
#[derive(Debug, Default)]
pub(in crate::agent) struct Attempt {
    /// The history's length once the user's message was recorded.
    pub(in crate::agent) base: Option<usize>,
    /// The failed listing a fresh attempt retries.
    pub(in crate::agent) failed: Option<FailedListing>,
    /// Fresh attempts made in this turn.
    pub(in crate::agent) fresh: usize,
    /// The active file the editor block showed whole, its path and its text then: a block
    /// listed under no known path that keeps that file's definitions is that file.
    pub(in crate::agent) in_view: Option<(String, String)>,
}

/// A listing that failed, as a fresh attempt is told of it.
#[derive(Debug)]
pub(in crate::agent) struct FailedListing {
    /// The history's length after it.
    pub(in crate::agent) end: usize,
    /// The file it listed.
    pub(in crate::agent) path: String,
    /// How it failed: the check's report, the refusal, or that it was cut.
    pub(in crate::agent) report: String,
}

/// A tool call the model asked for.
pub(in crate::agent) struct Call {
    pub(in crate::agent) id: String,
    pub(in crate::agent) name: String,
    pub(in crate::agent) arguments: String,
}

impl Agent {
    /// A prompt's job on the session's worker: its turn, unless a cancel dropped it. Here
    /// rather than in `sessions`, as `compact_job` is in `compact`: the sessions' worker only
    /// calls it, so sessions do not name the turn (which names them).
    pub(in crate::agent) async fn run_turn(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        prompt: Prompt,
    ) {
        let listed = handle.state().texts.remove(&prompt.turn_id).is_some();
        let started = handle.start(&prompt.turn_id);
        if listed {
            // It left the queue the editor shows (to run, or dropped).
            self.announce_queue(handle);
        }
        let Some(cancel) = started else {
            return;
        };
        let mut turn = Turn::new(
            self.clone(),
            handle.clone(),
            prompt.turn_id.clone(),
            cancel,
            Default::default(),
        );
        let stop = turn.run(prompt).await;
        turn.finish(stop).await;
    }
}

impl Turn {
    /// A turn that has done nothing yet, within `scope`.
    pub(in crate::agent) fn new(
        agent: Arc<Agent>,
        handle: Arc<SessionHandle>,
        turn_id: String,
        cancel: CancellationToken,
        scope: Scope,
    ) -> Turn {
        Turn {
            agent,
            handle,
            turn_id,
            cancel,
            usage: (0, 0),
            last_estimate: None,
            changed: Vec::new(),
            evidence: Vec::new(),
            problems: Vec::new(),
            steps: 0,
            announced: Default::default(),
            stop_hook_active: false,
            request: String::new(),
            reminded_unfinished: false,
            failed_check: None,
            attempt: Attempt::default(),
            failing_check_reminders: 0,
            halt: None,
            call_started: None,
            scope,
            output_budget: None,
            repeats: Default::default(),
            compaction_check: CompactionCheck::None,
            checkpoint: None,
            image_formula: None,
            pending_images: Default::default(),
            findings: Vec::new(),
        }
    }

    pub(in crate::agent) fn host(&self) -> &Arc<dyn Host> {
        self.handle.host.get().unwrap_or(&self.agent.host)
    }

    /// Tells the client; nothing after a cancel (its remaining updates are the final
    /// `toolCallUpdate` of calls it was told of, then `turnEnd`). Whether it was sent.
    pub(in crate::agent) fn update(&self, update: Update) -> bool {
        say(
            &self.agent,
            &self.handle,
            &self.turn_id,
            &self.cancel,
            update,
        )
    }

    /// Writes the event, then applies it: what the client hears about is on disk first.
    pub(in crate::agent) async fn record(&self, event: Event) -> Result<(), String> {
        let mut live = self.handle.live.lock().await;
        live.record(&event, Durability::Buffered, Registry::builtin())
    }

    pub(in crate::agent) async fn record_item(&self, item: Item) -> Result<Entry, String> {
        let config = self.host().config();
        let prompts = self.host().prompts();
        let entry = {
            let live = self.handle.live.lock().await;
            let policy = match self.output_budget {
                Some(budget) => config.tool_output_limit.at_most_tokens(budget.tokens),
                None => config.tool_output_limit,
            };
            live.session.history.entry_for(item, policy, &prompts)
        };
        self.record(Event::Item {
            turn_id: self.turn_id.clone(),
            entry: entry.clone(),
        })
        .await?;
        Ok(entry)
    }

    /// Records the error, then tells the client (even when the log cannot take it: the
    /// user must hear of a failure). `code` names errors a client can act on.
    pub(in crate::agent) async fn fail(
        &mut self,
        message: impl Into<String>,
        retryable: bool,
        code: Option<&str>,
    ) {
        let message = message.into();
        self.problems.push(message.clone());
        let _ = self
            .record(Event::Error {
                turn_id: self.turn_id.clone(),
                message: message.clone(),
                retryable,
            })
            .await;
        self.update(Update::Error {
            message,
            retryable,
            code: code.map(str::to_string),
        });
    }

    pub(in crate::agent) fn warn(&self, message: String) {
        self.update(Update::warning(message));
    }

    pub(in crate::agent) async fn run(&mut self, mut prompt: Prompt) -> Stop {
        // A custom command becomes its expanded prompt (a built-in name stays built-in).
        if let Err(stop) = self.custom_command(&mut prompt).await {
            return stop;
        }
        // `/mcp__SERVER__PROMPT`: the server's prompt (a custom command of that name wins).
        if self.scope.expanded.is_none() {
            if let Err(stop) = self.mcp_prompt(&mut prompt).await {
                return stop;
            }
        }
        if self.scope.expanded.is_none() {
            match prompt_text::slash_command(&prompt.text) {
                // `/review`: the prompt becomes the review's, with its diff as data.
                Some(prompt_text::SlashCommand::Review(arguments)) => {
                    if let Err(stop) = self.review(&mut prompt, arguments.as_deref()).await {
                        return stop;
                    }
                }
                Some(command) => return self.slash(command).await,
                None => {}
            }
        }
        self.request = prompt.text.clone();
        let opened = match self.open(&prompt).await {
            Ok(opened) => opened,
            Err(stop) => return stop,
        };
        let stop = self.drive(&opened).await;
        if self.scope.review.is_some() && stop != Stop::Cancelled {
            self.update(Update::AgentMessageChunk {
                text: format!("\n\n{}", agentls_core::review::listing(&self.findings)),
            });
        }
        stop
    }

    /// Model calls and tool calls until the model stops, the step limit, a cancel or an
    /// error.
    async fn drive(&mut self, opened: &Opened) -> Stop {
        // Compaction (at the threshold, or after a context-length answer) happens at most
        // once per model call, so a history that cannot shrink does not loop.
        let mut compacted_for_this_call = false;
        loop {
            if self.cancel.is_cancelled() {
                return Stop::Cancelled;
            }
            if self.steps >= opened.config.max_steps {
                return Stop::MaxSteps;
            }
            // A step boundary: every call of the last step has its output.
            if let Err(stop) = self.take_steering(opened).await {
                return stop;
            }
            match self.step(opened, &mut compacted_for_this_call).await {
                Flow::Next => {}
                // A message steered in while the model answered: the turn goes on with it.
                Flow::Done(Stop::EndTurn) if self.steering_waits() => {}
                Flow::Done(stop) => return stop,
            }
        }
    }

    /// Gathers the turn's context and records its start and the user's message; an error
    /// here ends the turn before any model call.
    async fn open(&mut self, prompt: &Prompt) -> Result<Opened, Stop> {
        let host = self.host().clone();
        let config = host.config();
        let prompts = host.prompts();
        let mut gathered = match host.gather(prompt.editor.as_ref()).await {
            Ok(gathered) => gathered,
            Err(message) => return Err(self.refuse(message).await),
        };
        // The environment block states this session's mode and sandbox, not the settings'.
        gathered.environment = self
            .agent
            .environment_for(&gathered.environment, &self.mode());
        gathered.environment.background_commands = self.handle.background.running();
        let model = match &self.scope.model {
            Some(model) => model.clone(),
            None => self.handle.live.lock().await.session.model.clone(),
        };
        self.note_agents_md(gathered.agents.as_ref().map_or("", |a| a.text.as_str()));
        self.note_memory(&gathered.memory_left_out, &prompt.text);
        // The turn block and the static context do not read the history: no copy of it.
        let no_history = agentls_core::history::History::new(config.tokenizer());
        let inputs = gathered.inputs(&config, &prompts, &no_history, Calibration::default());
        let (mut block, static_context) = {
            let mut cache = self.agent.cache.locked();
            (
                inspect::turn_block(&inputs, &mut cache),
                inspect::static_context(&inputs),
            )
        };
        let shows_whole_file = block
            .editor
            .as_ref()
            .is_some_and(|editor| editor.shows_whole_file());
        if shows_whole_file {
            if let Some(active) = &gathered.active {
                self.note_read_whole(active);
            }
        }
        let static_context = self.offer_tools(static_context, &prompts).await;
        let static_context = self.listing_only(static_context, shows_whole_file);
        // @mentions (and the active file's tests): attached as data, within what the editor
        // block left of its budget.
        let mentioned = (self.scope.mentions_from.clone()).unwrap_or_else(|| prompt.text.clone());
        let tests = self.tests_to_attach(gathered.active.as_ref(), shows_whole_file);
        let attachments = self
            .attachments(&mentioned, tests, &block, &config, &prompts)
            .await;
        if !attachments.is_empty() {
            block.text.push_str("\n\n");
            block.text.push_str(&attachments);
        }
        if let Some(diff) = &self.scope.review {
            block.text.push_str("\n\n");
            block.text.push_str(diff);
        }
        self.take_checkpoint().await;
        let instructions: Vec<std::path::PathBuf> = gathered
            .agents
            .as_ref()
            .map(|chain| chain.files.iter().map(|f| f.path.clone()).collect())
            .unwrap_or_default();
        self.record_prompt(prompt, block.text, &instructions, &config, &model)
            .await?;
        self.attempt.base = Some(self.handle.live.lock().await.session.history.len());
        self.opened(config, prompts, model, static_context).await
    }

    /// The editor block showed the active file whole: the model has read it, in the version
    /// the block showed (a write over it is not refused for want of a read), and it is the
    /// file in view of this turn's attempts.
    fn note_read_whole(&mut self, active: &agentls_core::inspect::ActiveDocument) {
        let boundary = crate::tools::boundary::PathBoundary {
            roots: self.host().roots(),
        };
        let text = active.snapshot.rope.to_string();
        if let Ok(path) = boundary.resolve(&active.display_path) {
            self.handle.reads.locked().saw(&path, &text);
        }
        self.attempt.in_view = Some((active.display_path.clone(), text));
    }

    /// Records the turn's start and the user's message, with its context block and images,
    /// once the UserPromptSubmit hooks let it through (`instructions`: the AGENTS.md files
    /// of the turn, for InstructionsLoaded); a failure ends the turn, told.
    async fn record_prompt(
        &mut self,
        prompt: &Prompt,
        context: String,
        instructions: &[std::path::PathBuf],
        config: &agentls_core::config::Config,
        model: &str,
    ) -> Result<(), Stop> {
        let started = self
            .record(Event::TurnStarted {
                turn_id: self.turn_id.clone(),
                at: session_log::now_millis(),
            })
            .await;
        let started = match started {
            Ok(()) => match self.prompt_hooks(&prompt.text, instructions).await {
                Ok(()) => Ok(()),
                Err(reason) => {
                    self.fail(
                        format!("a UserPromptSubmit hook blocked the prompt: {reason}"),
                        false,
                        Some("blockedByHook"),
                    )
                    .await;
                    return Err(Stop::Error);
                }
            },
            Err(message) => Err(message),
        };
        let text = self.fit_to_window(&prompt.text, config, model).await;
        let recorded = match started {
            Ok(()) => self
                .record_item(Item::User {
                    text,
                    context: Some(context),
                })
                .await
                .map(|_| ()),
            Err(message) => Err(message),
        };
        // The user's images follow the message they came with.
        let recorded = match recorded {
            Ok(()) if !prompt.images.is_empty() => self
                .record_item(Item::Images {
                    images: prompt.images.clone(),
                    call_id: None,
                })
                .await
                .map(|_| ()),
            other => other,
        };
        if let Err(message) = recorded {
            self.fail(message, false, None).await;
            return Err(Stop::Error);
        }
        Ok(())
    }

    /// The user's message as it is recorded: one larger than half of what the model's window
    /// leaves for input is cut head and tail with a marker (and the user told), so a pasted
    /// log never makes every later request larger than the window.
    async fn fit_to_window(
        &self,
        text: &str,
        config: &agentls_core::config::Config,
        model: &str,
    ) -> String {
        use agentls_core::truncate::{truncate_middle, TruncationPolicy};
        let window = {
            let live = self.handle.live.lock().await;
            self.agent.window_of(&live.session)
        };
        let limit = (window.estimated(window.usable) / 2).max(1);
        let cut = truncate_middle(
            text,
            TruncationPolicy::Tokens(limit),
            tokenizer_for(config, model),
        );
        if cut.removed > 0 {
            self.warn(format!(
                "your message is larger than half of the model's {}-token window: its middle was cut ({} tokens left out)",
                window.context_window, cut.removed
            ));
        }
        cut.text
    }

    /// Ends a turn that sent nothing: its start and the error recorded, the error told.
    pub(in crate::agent) async fn refuse(&mut self, message: String) -> Stop {
        let _ = self
            .record(Event::TurnStarted {
                turn_id: self.turn_id.clone(),
                at: session_log::now_millis(),
            })
            .await;
        self.fail(message, false, None).await;
        Stop::Error
    }

    /// The turn's provider and tokenizer for `model`, with the rest of what it works with
    /// (a top-level turn's `open` and a subagent's turn end here).
    async fn opened(
        &mut self,
        config: agentls_core::config::Config,
        prompts: Arc<agentls_core::prompts::Prompts>,
        model: String,
        static_context: agentls_core::context::StaticContext,
    ) -> Result<Opened, Stop> {
        let provider = match self.agent.provider(&model) {
            Ok(provider) => provider,
            Err(err) => {
                self.fail(err.message, false, None).await;
                return Err(Stop::Error);
            }
        };
        let tokenizer = tokenizer_for(&config, &model);
        self.image_formula = self
            .agent
            .takes_images(&model)
            .then(|| self.agent.image_formula());
        Ok(Opened {
            config,
            prompts,
            model,
            static_context,
            provider,
            tokenizer,
        })
    }

    /// Ends the turn: the log records it (and is synced), the progress log gets its entry,
    /// the client gets `turnEnd` and an idle status.
    pub(in crate::agent) async fn finish(&mut self, stop: Stop) {
        // A cancel that arrived after the last call finished still answered `cancelled:
        // true`: the turn ends as cancelled.
        let stop = if self.cancel.is_cancelled() && stop == Stop::EndTurn {
            Stop::Cancelled
        } else {
            stop
        };
        // The user is needed again (Claude Code's `idle_prompt`); not after a cancel, which
        // the user gave, nor at a subagent's end, which its parent's turn takes.
        if stop != Stop::Cancelled && !self.cancel.is_cancelled() && self.scope.child.is_none() {
            self.notification_hooks(
                "idle_prompt",
                "agentls is waiting for your input",
                "Waiting for input",
            )
            .await;
        }
        let at = session_log::now_millis();
        let started = self.handle.live.lock().await.session.open_turn.as_deref()
            == Some(self.turn_id.as_str());
        self.take_turn_snapshot().await;
        if started {
            let _ = self
                .record(Event::TurnEnded {
                    turn_id: self.turn_id.clone(),
                    stop_reason: stop.name().into(),
                    at,
                })
                .await;
        }
        let (session_id, plan) = {
            let mut live = self.handle.live.lock().await;
            if let Err(err) = live.log.sync() {
                tracing::error!("cannot sync session log: {err}");
            }
            self.agent.idle_status(&live.session, self.last_estimate);
            (live.session.id.clone(), live.session.plan.clone())
        };
        if started {
            let next = plan
                .iter()
                .find(|e| e.status != "completed")
                .map(|e| e.content.clone())
                .unwrap_or_else(|| "none recorded".into());
            let section = format!(
                "## Turn {} — {} ({})\n- Checkpoint: {} model call(s)\n- What changed: {}\n- Evidence: {}\n- Open issues: {}\n- Next action: {}\n\n",
                self.turn_id,
                agentls_core::environment::civil_date((at / 86_400_000) as i64),
                stop.name(),
                self.steps,
                list_or(&self.changed, "no files changed"),
                list_or(&self.evidence, "none"),
                list_or(&self.problems, "none"),
                next
            );
            if let Ok(store) = self.agent.store() {
                if let Err(err) = store.append_progress(&session_id, &section) {
                    tracing::warn!("cannot append to the progress log: {err}");
                }
            }
        }
        let end = Update::TurnEnd {
            stop_reason: stop,
            usage: (self.usage != (0, 0)).then_some(agentls_core::updates::Usage {
                input_tokens: self.usage.0,
                output_tokens: self.usage.1,
            }),
            model_calls: Some(self.steps),
        };
        // Not running any more before the client hears so: a cancel after this is a no-op;
        // steering messages it did not take become prompts of their own.
        self.agent.end_running(&self.handle);
        self.agent.update(&self.handle.id, &self.turn_id, end);
    }
}

/// Sends one update of a turn, unless the turn was cancelled: then its only remaining
/// updates are the final `toolCallUpdate`s (`Turn::finish_call`) and `turnEnd`. The lock
/// makes the check and the send one step for `cancel`. Whether it was sent.
pub(in crate::agent) fn say(
    agent: &Agent,
    handle: &SessionHandle,
    turn_id: &str,
    cancel: &CancellationToken,
    update: Update,
) -> bool {
    let _quiet = handle.updates.locked();
    if cancel.is_cancelled() {
        return false;
    }
    agent.update(&handle.id, turn_id, update);
    true
}

pub(in crate::agent) fn list_or(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join("; ")
    }
}
