//! A session's durable state as a fold over its events. The same `apply` runs live (after the
//! event is written to the log) and on reload (replaying the log), so a reloaded session is
//! the session that was running: history, plan, approvals, calibration, usage.
//!
//! Pure: the log file is `session_log`'s business.

use std::collections::BTreeSet;

use crate::event::{CompactionMetrics, Event, ParentLink};
use crate::history::{Entry, History, Item};
use crate::ledger::Ledger;
use crate::tokens::{Calibration, TokenizerKind};
use crate::tool_info::{PlanEntry, ToolCatalog};

/// Approvals remembered for the session (allowAlways / rejectAlways).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Approvals {
    pub allowed_tools: BTreeSet<String>,
    pub rejected_tools: BTreeSet<String>,
    /// Shell command prefixes, e.g. `cargo test`.
    pub allowed_commands: BTreeSet<String>,
    pub rejected_commands: BTreeSet<String>,
    /// Command prefixes the user lets run outside the sandbox (`approval::UNSANDBOXED`
    /// answered "always"), and those never to be offered that.
    pub unsandboxed_commands: BTreeSet<String>,
    pub sandboxed_only_commands: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    pub model: String,
    pub workspace: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub history: History,
    pub plan: Vec<PlanEntry>,
    pub approvals: Approvals,
    pub calibration: Calibration,
    /// The last provider-reported usage, if any since the last history change.
    pub last_usage: Option<LastUsage>,
    pub turns: u32,
    /// The first user message, shortened: what a session list shows.
    pub title: String,
    /// The turn that started and has not ended (a crash leaves one open).
    pub open_turn: Option<String>,
    pub errors: Vec<String>,
    /// What compaction must carry, folded from every event.
    pub ledger: Ledger,
    pub compactions: u32,
    /// Consecutive compactions that saved less than 10 %.
    pub low_yield_compactions: u32,
    /// The window of the session's model when set with the switch.
    pub context_window: Option<usize>,
    /// Bumped by every compaction: a summary prepared before it is stale.
    pub generation: u64,
    /// Set for a subagent's session.
    pub parent: Option<ParentLink>,
    /// Set for a fork (`agent/session/fork`).
    pub forked_from: Option<crate::event::ForkLink>,
    /// Reminder key → the version shown (`reminders::due` skips what is here).
    pub reminders_shown: std::collections::BTreeMap<String, String>,
    /// Set for a session that works apart, in a git worktree.
    pub worktree: Option<crate::event::WorktreeLink>,
}

const TITLE_CHARS: usize = 60;

impl Session {
    pub fn new(id: &str, model: &str, workspace: &str, tokenizer: TokenizerKind) -> Session {
        Session {
            id: id.to_string(),
            model: model.to_string(),
            workspace: workspace.to_string(),
            created_at: 0,
            updated_at: 0,
            history: History::new(tokenizer),
            plan: Vec::new(),
            approvals: Approvals::default(),
            calibration: Calibration::default(),
            last_usage: None,
            turns: 0,
            title: String::new(),
            open_turn: None,
            errors: Vec::new(),
            ledger: Ledger::default(),
            compactions: 0,
            low_yield_compactions: 0,
            context_window: None,
            generation: 0,
            parent: None,
            forked_from: None,
            reminders_shown: Default::default(),
            worktree: None,
        }
    }

    /// Replays a log (its conversation rewinds resolved: `checkpoints::resolve_rewinds`).
    /// The entries' recorded counts are trusted when they were made with `tokenizer`; the
    /// caller recounts after a tokenizer change.
    pub fn replay(
        id: &str,
        events: &[Event],
        tokenizer: TokenizerKind,
        tools: &dyn ToolCatalog,
    ) -> Session {
        let mut session = Session::new(id, "", "", tokenizer);
        for event in crate::checkpoints::resolve_rewinds(events) {
            session.apply(event, tools);
        }
        session
    }

    pub fn apply(&mut self, event: &Event, tools: &dyn ToolCatalog) {
        self.ledger.observe(event, tools);
        match event {
            Event::SessionStarted {
                session_id,
                model,
                workspace,
                at,
                parent,
                forked_from,
            } => {
                self.forked_from = forked_from.clone();
                self.start(session_id, model, workspace, *at, parent)
            }
            Event::TurnStarted { turn_id, at } => {
                self.turns += 1;
                self.open_turn = Some(turn_id.clone());
                self.updated_at = *at;
            }
            Event::Item { entry, .. } => self.record_item(entry),
            Event::Permission {
                tool,
                outcome,
                prefix,
                ..
            } => self.approvals.remember(tool, outcome, prefix.as_deref()),
            Event::Plan { entries, .. } => self.plan = entries.clone(),
            Event::Usage {
                input_tokens,
                output_tokens,
                estimated_input,
                ..
            } => self.record_usage(*estimated_input, *input_tokens, *output_tokens),
            Event::Error { message, .. } => self.errors.push(message.clone()),
            Event::ModelChanged {
                model,
                context_window,
            } => {
                self.model = model.clone();
                self.context_window = *context_window;
            }
            Event::Compacted {
                entries, metrics, ..
            } => self.record_compaction(entries, metrics),
            Event::TurnEnded { at, .. } => {
                self.open_turn = None;
                self.updated_at = *at;
            }
            // The ledger's alone (observed above).
            Event::FilesChanged { .. } => {}
            Event::Reminder {
                shown,
                version,
                entry,
                ..
            } => {
                self.reminders_shown
                    .insert(shown.key.clone(), version.clone());
                self.history.push_recorded(entry.clone());
                self.last_usage = None;
            }
            Event::Hook { .. } => {}
            Event::Worktree(link) => self.worktree = Some(link.clone()),
            // What they change is the log's prefix (`replay` resolves rewinds; a live rewind
            // replays the log again), or nothing of the session's state (the trees).
            Event::Checkpoint { .. } | Event::TurnSnapshot { .. } | Event::Rewind { .. } => {}
        }
    }

    fn start(
        &mut self,
        session_id: &str,
        model: &str,
        workspace: &str,
        at: u64,
        parent: &Option<ParentLink>,
    ) {
        self.parent = parent.clone();
        // The id is the log's file name; one written inside the file is not trusted.
        if self.id.is_empty() {
            self.id = session_id.to_string();
        }
        self.model = model.to_string();
        self.workspace = workspace.to_string();
        self.created_at = at;
        self.updated_at = at;
    }

    /// An item enters the history; the first user message names the session.
    fn record_item(&mut self, entry: &Entry) {
        if self.title.is_empty() {
            if let Item::User { text, .. } = &entry.item {
                self.title = shorten(text);
            }
        }
        // Counted when recorded; appended as is (a reload must not recount 150K tokens).
        self.history.push_recorded(entry.clone());
        self.last_usage = None;
    }

    fn record_usage(&mut self, estimated_input: u64, input_tokens: u64, output_tokens: u64) {
        self.calibration
            .observe(estimated_input as usize, input_tokens as usize);
        self.last_usage = Some(LastUsage {
            input_tokens,
            output_tokens,
        });
    }

    /// The history becomes the rebuilt one; a compaction that saved less than 10 % counts
    /// towards the low-yield run.
    fn record_compaction(&mut self, entries: &[Entry], metrics: &CompactionMetrics) {
        self.history = History::from_entries(self.history.tokenizer(), entries.to_vec());
        self.last_usage = None;
        self.compactions += 1;
        self.generation += 1;
        let saved = 1.0 - metrics.tokens_after as f64 / metrics.tokens_before.max(1) as f64;
        if saved < 0.10 {
            self.low_yield_compactions += 1;
        } else {
            self.low_yield_compactions = 0;
        }
    }
}

/// The tool name a "run it outside the sandbox" answer is recorded under (with the
/// command's prefix): it never counts as an approval of `shell` itself.
pub const UNSANDBOXED: &str = "shell (outside the sandbox)";

impl Approvals {
    /// Remembers an `allowAlways` or `rejectAlways` answer (for shell, per command prefix);
    /// the newer answer for a tool or prefix replaces the older. Other outcomes change
    /// nothing.
    fn remember(&mut self, tool: &str, outcome: &str, prefix: Option<&str>) {
        let (allowed, rejected, key) = match prefix {
            Some(prefix) if tool == UNSANDBOXED => (
                &mut self.unsandboxed_commands,
                &mut self.sandboxed_only_commands,
                prefix,
            ),
            Some(prefix) => (
                &mut self.allowed_commands,
                &mut self.rejected_commands,
                prefix,
            ),
            // "Outside the sandbox" is only ever answered for a command.
            None if tool == UNSANDBOXED => return,
            None => (&mut self.allowed_tools, &mut self.rejected_tools, tool),
        };
        let (kept, dropped) = match outcome {
            "allowAlways" => (allowed, rejected),
            "rejectAlways" => (rejected, allowed),
            _ => return,
        };
        kept.insert(key.to_string());
        dropped.remove(key);
    }
}

/// The first line of `text`, at most TITLE_CHARS characters, with … when cut.
pub fn shorten(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= TITLE_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// One row of the transcript a client renders (`agent/session/load`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum TranscriptItem {
    User {
        text: String,
        /// The checkpoint taken before this message's turn (`agent/session/rewind`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint_id: Option<String>,
    },
    Assistant {
        text: String,
    },
    ToolCall {
        tool_call_id: String,
        name: String,
        title: String,
        tool_kind: crate::tool_info::ToolKind,
        input: serde_json::Value,
        /// `completed`, `failed`, or `pending` when no output was ever recorded.
        status: String,
        output: Option<String>,
    },
    Plan {
        entries: Vec<PlanEntry>,
    },
    Compaction {
        summary: String,
        tokens_before: usize,
        tokens_after: usize,
        strategy: String,
    },
    Error {
        message: String,
    },
    /// A hook ran: the `hook` update's type.
    Hook(crate::updates::HookRun),
    /// A reminder reached the model: the `reminder` update's type.
    Reminder(crate::updates::ReminderShown),
}

/// The transcript of a session's events, in order.
pub fn transcript(events: &[Event], tools: &dyn ToolCatalog) -> Vec<TranscriptItem> {
    let mut items: Vec<TranscriptItem> = Vec::new();
    // The last checkpoint's turn and id: the user message of that turn carries it.
    let mut checkpoint: Option<(&str, &str)> = None;
    for event in crate::checkpoints::resolve_rewinds(events) {
        match event {
            Event::Checkpoint {
                turn_id,
                checkpoint_id,
                ..
            } => checkpoint = Some((turn_id, checkpoint_id)),
            Event::Item { entry, turn_id } => {
                push_item(&mut items, &entry.item, tools);
                if let (Some(TranscriptItem::User { checkpoint_id, .. }), Some((turn, id))) =
                    (items.last_mut(), checkpoint)
                {
                    if turn == turn_id {
                        *checkpoint_id = Some(id.to_string());
                        checkpoint = None;
                    }
                }
            }
            Event::Compacted {
                summary, metrics, ..
            } => items.push(TranscriptItem::Compaction {
                summary: summary.clone(),
                tokens_before: metrics.tokens_before,
                tokens_after: metrics.tokens_after,
                strategy: metrics.strategy.clone(),
            }),
            Event::Plan { entries, .. } => items.push(TranscriptItem::Plan {
                entries: entries.clone(),
            }),
            Event::Error { message, .. } => items.push(TranscriptItem::Error {
                message: message.clone(),
            }),
            Event::Hook {
                hook_event,
                command,
                outcome,
                duration_ms,
                message,
                ..
            } => items.push(TranscriptItem::Hook(crate::updates::HookRun {
                event: hook_event.clone(),
                command: command.clone(),
                outcome: outcome.clone(),
                duration_ms: *duration_ms,
                message: message.clone(),
            })),
            Event::Reminder { shown, .. } => items.push(TranscriptItem::Reminder(shown.clone())),
            _ => {}
        }
    }
    items
}

/// A history item's row; a tool output completes its call's row instead.
fn push_item(items: &mut Vec<TranscriptItem>, item: &Item, tools: &dyn ToolCatalog) {
    match item {
        Item::User { text, .. } => items.push(TranscriptItem::User {
            text: text.clone(),
            checkpoint_id: None,
        }),
        Item::Assistant { text } => items.push(TranscriptItem::Assistant { text: text.clone() }),
        Item::ToolCall {
            call_id,
            name,
            arguments,
        } => {
            let input: serde_json::Value =
                serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
            items.push(TranscriptItem::ToolCall {
                tool_call_id: call_id.clone(),
                name: name.clone(),
                title: tools.title(name, &input),
                tool_kind: tools.kind(name, &input),
                input,
                status: "pending".into(),
                output: None,
            })
        }
        Item::ToolOutput {
            call_id,
            content,
            success,
            ..
        } => complete_call(items, call_id, content, *success),
        // The user's images: their labels under the message they came with.
        Item::Images {
            images,
            call_id: None,
        } => {
            if let Some(TranscriptItem::User { text, .. }) = items.last_mut() {
                for image in images {
                    text.push('\n');
                    text.push_str(&image.label());
                }
            }
        }
        // A tool's images: its output already says what it read.
        Item::Images { .. } => {}
        // Shown once, from its boundary event.
        Item::CompactionSummary { .. } | Item::Instructions { .. } | Item::Internal { .. } => {}
    }
}

/// The newest row of the call `call_id` gets its status and output.
fn complete_call(items: &mut [TranscriptItem], call_id: &str, content: &str, success: bool) {
    for item in items.iter_mut().rev() {
        if let TranscriptItem::ToolCall {
            tool_call_id,
            status,
            output,
            ..
        } = item
        {
            if tool_call_id == call_id {
                *status = if success { "completed" } else { "failed" }.into();
                *output = Some(content.to_string());
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::item_tokens;
    use crate::prompts::Prompts;
    use crate::test_support::TestTools;

    fn entry(item: Item) -> Entry {
        let tokens = item_tokens(&item, &Prompts::builtin(), TokenizerKind::O200kBase);
        Entry { item, tokens }
    }

    fn events() -> Vec<Event> {
        vec![
            Event::SessionStarted {
                session_id: "s1".into(),
                model: "gpt-4o".into(),
                workspace: "/w".into(),
                at: 10,
                parent: None,
                forked_from: None,
            },
            Event::TurnStarted {
                turn_id: "t1".into(),
                at: 11,
            },
            Event::Item {
                turn_id: "t1".into(),
                entry: entry(Item::User {
                    text:
                        "Fix the failing test in src/lib.rs please, it has been broken since Monday"
                            .into(),
                    context: Some("<environment_context/>".into()),
                }),
            },
            Event::Item {
                turn_id: "t1".into(),
                entry: entry(Item::ToolCall {
                    call_id: "c1".into(),
                    name: "shell".into(),
                    arguments: "{\"command\":\"cargo test\"}".into(),
                }),
            },
            Event::Permission {
                turn_id: "t1".into(),
                tool_call_id: "c1".into(),
                tool: "shell".into(),
                outcome: "allowAlways".into(),
                prefix: Some("cargo test".into()),
            },
            Event::Item {
                turn_id: "t1".into(),
                entry: entry(Item::ToolOutput {
                    call_id: "c1".into(),
                    name: "shell".into(),
                    content: "ok\n[exit code 0]".into(),
                    success: true,
                }),
            },
            Event::Plan {
                turn_id: "t1".into(),
                entries: vec![PlanEntry {
                    content: "fix it".into(),
                    status: "in_progress".into(),
                }],
            },
            Event::Usage {
                turn_id: "t1".into(),
                input_tokens: 1100,
                output_tokens: 20,
                estimated_input: 1000,
            },
            Event::Item {
                turn_id: "t1".into(),
                entry: entry(Item::ToolCall {
                    call_id: "c2".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"src/lib.rs\"}".into(),
                }),
            },
        ]
    }

    /// The log's `reminder` event carries the update's own type; a log written before it
    /// kept the reminder's text still loads.
    #[test]
    fn the_reminder_event_is_the_updates_type_and_old_logs_still_load() {
        let old = [
            r#"{"event":"hook","turnId":"t1","hookEvent":"PreToolUse","command":"./check","outcome":"ok","durationMs":12}"#,
            r#"{"event":"reminder","turnId":"t1","key":"k1","version":"v1","source":"loop","entry":{"item":{"type":"instructions","role":"reminder","text":"<r>"},"tokens":3}}"#,
        ];
        let events: Vec<Event> = old
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let transcript = transcript(&events, &TestTools);
        let session = Session::replay("s1", &events, TokenizerKind::O200kBase, &TestTools);
        assert_eq!(
            session.reminders_shown.get("k1").map(String::as_str),
            Some("v1")
        );
        assert_eq!(transcript.len(), 2, "{transcript:?}");
    }

    #[test]
    fn replay_rebuilds_history_plan_approvals_and_calibration() {
        let session = Session::replay("s1", &events(), TokenizerKind::O200kBase, &TestTools);
        assert_eq!(session.model, "gpt-4o");
        assert_eq!(session.turns, 1);
        assert_eq!(
            session.open_turn.as_deref(),
            Some("t1"),
            "no TurnEnded: the crash left it open"
        );
        assert_eq!(session.history.len(), 4);
        assert_eq!(
            session.title, "Fix the failing test in src/lib.rs please, it has been brok…",
            "59 characters and the ellipsis"
        );
        assert!(session.approvals.allowed_commands.contains("cargo test"));
        assert_eq!(session.plan[0].status, "in_progress");
        assert!(session.calibration.is_calibrated());
        assert!((session.calibration.ratio - 1.1).abs() < 1e-9);
        // The call that never got an output is answered as aborted before any request.
        let (items, report) = session.history.prompt_items(&Prompts::builtin());
        assert_eq!(report.aborted_calls, ["c2"]);
        assert_eq!(items.len(), 5);
    }

    #[test]
    fn leaving_the_sandbox_is_remembered_apart_from_the_commands_approval() {
        let answer = |tool: &str, outcome: &str| Event::Permission {
            turn_id: "t1".into(),
            tool_call_id: "c1".into(),
            tool: tool.into(),
            outcome: outcome.into(),
            prefix: Some("touch".into()),
        };
        let mut session = Session::replay("s1", &events(), TokenizerKind::O200kBase, &TestTools);
        session.apply(&answer(UNSANDBOXED, "allowAlways"), &TestTools);
        let approvals = &session.approvals;
        assert!(approvals.unsandboxed_commands.contains("touch"));
        assert!(!approvals.allowed_commands.contains("touch"));
        session.apply(&answer(UNSANDBOXED, "rejectAlways"), &TestTools);
        assert!(!session.approvals.unsandboxed_commands.contains("touch"));
        assert!(session.approvals.sandboxed_only_commands.contains("touch"));
        session.apply(&answer("shell", "allowAlways"), &TestTools);
        assert!(session.approvals.allowed_commands.contains("touch"));
        assert!(session.approvals.sandboxed_only_commands.contains("touch"));
    }

    #[test]
    fn two_low_yield_compactions_in_a_row_are_counted_and_a_good_one_resets() {
        let compacted = |before: usize, after: usize| Event::Compacted {
            turn_id: None,
            entries: Vec::new(),
            summary: String::new(),
            metrics: CompactionMetrics {
                tokens_before: before,
                tokens_after: after,
                ..Default::default()
            },
        };
        let mut session = Session::replay("s1", &events(), TokenizerKind::O200kBase, &TestTools);
        session.apply(&compacted(1000, 950), &TestTools);
        assert_eq!((session.compactions, session.low_yield_compactions), (1, 1));
        assert!(
            session.history.is_empty(),
            "the boundary replaces the history"
        );
        session.apply(&compacted(1000, 500), &TestTools);
        assert_eq!(session.low_yield_compactions, 0);
        session.apply(&compacted(1000, 920), &TestTools);
        session.apply(&compacted(1000, 990), &TestTools);
        assert_eq!((session.compactions, session.low_yield_compactions), (4, 2));
        assert!(
            session.ledger.approvals[0].contains("cargo test"),
            "the ledger outlives compactions"
        );
    }

    #[test]
    fn events_round_trip_through_json_lines() {
        for event in events() {
            let line = serde_json::to_string(&event).unwrap();
            assert!(!line.contains('\n'));
            assert_eq!(serde_json::from_str::<Event>(&line).unwrap(), event);
        }
        let line = serde_json::to_string(&events()[4]).unwrap();
        assert!(
            line.starts_with("{\"event\":\"permission\",\"turnId\":\"t1\""),
            "{line}"
        );
    }

    #[test]
    fn the_transcript_shows_calls_with_their_status() {
        let transcript = transcript(&events(), &TestTools);
        let json = serde_json::to_value(&transcript).unwrap();
        assert_eq!(json[0]["kind"], "user");
        assert_eq!(json[1]["kind"], "toolCall");
        assert_eq!(json[1]["status"], "completed");
        assert_eq!(json[1]["title"], "shell", "the catalog's title");
        assert_eq!(json[1]["toolKind"], "execute", "the catalog's kind");
        assert_eq!(json[2]["kind"], "plan");
        assert_eq!(json[3]["status"], "pending");
    }
}
