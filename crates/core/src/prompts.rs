//! The prompt files of `prompts/`: embedded at build time, each overridable by a file of the
//! same name in the user's prompt directory. The overrides come in as data
//! (`Prompts::from_sources`); reading them from disk is `store::prompts`.

use std::collections::BTreeMap;

/// A tool as the model is told about it: the provider adapters map this to their format.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prompts {
    /// The system prompt: who the agent is and how it works.
    pub system: String,
    /// The system prompt of a small model (`provider.profile`): short, one way to work.
    pub system_small: String,
    /// The tools a small model is offered, with their short descriptions and the arguments
    /// it is told of (`small_model.json`); see [`Prompts::small_model_tools`].
    pub small_model: BTreeMap<String, SmallModelTool>,
    /// Put before untrusted content (files, tool outputs, diagnostics): it is data.
    pub data_boundary: String,
    /// Heads the skills index.
    pub skills: String,
    /// Heads the repository map (`context.repoMap.maxTokens`).
    pub repo_map: String,
    /// Heads the memory block (`memory`): who wrote the entries, and when to keep one.
    pub memory: String,
    /// Heads a compaction summary in the history.
    pub summary_prefix: String,
    pub tools: Vec<ToolSpec>,
    /// Compaction prompts, by style.
    pub compact_handoff: String,
    pub compact_state_snapshot: String,
    pub compact_checkpoint: String,
    /// Introduces the user's focus of a manual compaction.
    pub compact_focus: String,
    /// The file named by `compaction.promptFile`: replaces the prompt of every style.
    pub compact_custom: Option<String>,
    /// The note that stands for a summary when none could be made (`{reason}`, `{dropped}`,
    /// `{strategy}` are filled).
    pub compact_fallback: String,
    /// The output of a tool call that did not complete: see [`Prompts::aborted`].
    pub tool_aborted: ToolAborted,
    /// The output of a tool call the user rejected.
    pub tool_rejected: String,
    /// The sentence under `<ledger>`: where the ledger comes from.
    pub ledger_header: String,
    /// The markers of an `@path` attachment block.
    pub attachments: AttachmentMarkers,
    /// The texts of the runtime reminders (`reminders.json`).
    pub reminders: ReminderTexts,
    /// The system prompt of the built-in `explore` subagent.
    pub subagent_explore: String,
    /// What the built-in tools tell the model on success (`tool_outputs.json`).
    pub tool_outputs: ToolOutputTexts,
    /// Tells the model the session is in plan mode (read-only): a reminder.
    pub plan_mode: String,
    /// Tells the model the session left plan mode (`{mode}`: the mode it is in now).
    pub plan_mode_left: String,
    /// The user message of a `/review` turn: `{target}` (what it covers), `{focus}`.
    pub review: String,
    /// The prompt of a review finding's "Fix with agent": `{location}`, `{severity}`,
    /// `{message}`, `{suggestion}`.
    pub review_fix: String,
}

/// `tool_outputs.json`: the sentences a built-in tool's output is made of (its errors are
/// written where they are found).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOutputTexts {
    /// `update_plan`'s answer.
    pub plan_updated: String,
    /// `save_memory` kept the fact: `{scope}`, `{fact}`.
    pub memory_saved: String,
    /// `save_memory` found the fact kept already: `{scope}`, `{fact}`.
    pub memory_kept_already: String,
    /// `grep` found nothing: `{pattern}`.
    pub no_matches: String,
    /// Ends a `grep` output cut at its cap: `{shown}`, `{total}`.
    pub matches_capped: String,
    /// `write_file` made a new file: `{path}`, `{lines}`.
    pub file_created: String,
    /// `write_file` replaced a file's content: `{path}`, `{lines}`.
    pub file_replaced: String,
    /// `edit_file` applied: `{path}`, `{old}` and `{new}` line counts.
    pub file_edited: String,
    /// `lsp`'s rename applied: `{old}`, `{new}`, `{edits}`, `{files}` and their `{list}`.
    pub symbol_renamed: String,
    /// Opens the output of `shell` with `background: true`: `{id}`, `{command}`.
    pub background_started: String,
    /// Ends a background command's output while it runs: `{id}`.
    pub background_running: String,
    /// Ends the output of `shell_kill`: `{id}`.
    pub background_stopped: String,
    /// `report_finding`'s answer: `{location}`.
    pub finding_reported: String,
}

/// `reminders.json`: the sentences of the runtime reminders (the `<agentls_reminder>` tags
/// around them are structure, written by `reminders`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReminderTexts {
    /// Opens every reminder: who it is from.
    pub intro: String,
    /// `{changes}`: the lines added and removed.
    pub agents_md_changed: String,
    /// `{step}`, `{rounds}`.
    pub plan_stale: String,
    /// `{files}`.
    pub after_compaction: String,
    /// `{event}`, `{command}`, `{text}`.
    pub hook: String,
    /// `{reason}`.
    pub stop_hook: String,
    /// `{tool}`, `{count}`, `{limit}`: the model repeats one call.
    pub repeated_call: String,
    /// The model ends a turn that asked for a change without changing a file.
    pub unfinished_change: String,
    /// The same, to a model that changes files by listing them (`tools.fileListings`).
    pub unfinished_change_listing: String,
    /// The turn ends while the check after the last change fails (`reminders.failingCheck`).
    pub failing_check: String,
    /// The same, to a model that changes files by listing them.
    pub failing_check_listing: String,
    /// `{path}`, `{report}`: what a fresh attempt is told of the failed one
    /// (`reminders::fresh_attempt`).
    pub fresh_attempt: String,
    /// `{path}`: the report of a listing cut by the output limit (`listings::cut`).
    pub listing_cut: String,
    /// `{scope}`, `{author}`, `{fact}`: a memory entry over the budget a message names.
    pub memory_recalled: String,
    /// Risky-pattern rule name → its warning (every rule of `reminders::RISKY` has one).
    pub risky: std::collections::BTreeMap<String, String>,
}

/// `tool_aborted.json`: one template (`{reason}` is filled) and the reasons.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolAborted {
    pub template: String,
    pub reasons: AbortReasons,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbortReasons {
    pub incomplete: String,
    pub server_stopped: String,
    pub cancelled_before_run: String,
    pub cancelled_awaiting_approval: String,
}

/// Why a tool call has no real output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortReason {
    /// Found unanswered in the history (a lost or interrupted call).
    Incomplete,
    /// The server stopped while the call ran (answered when the session is loaded again).
    ServerStopped,
    /// The turn was cancelled before the call started.
    CancelledBeforeRun,
    /// The turn was cancelled while the call waited for the user's approval.
    CancelledAwaitingApproval,
}

/// A tool as a small model is offered it (`small_model.json`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmallModelTool {
    /// Replaces the tool's description.
    pub description: String,
    /// The arguments kept in its schema (the required ones always are); the others are
    /// not described, and take their defaults.
    pub parameters: Vec<String>,
}

/// `attachments.json`: the sentences of an `@path` attachment block (its XML tags are
/// structure, written by `attachments`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentMarkers {
    /// Opens a file's text that was cut to fit the budget.
    pub cut: String,
    /// Stands for a file left out; `{mention}` is the path as the user wrote it.
    pub omitted: String,
}

/// (file name, built-in content): one table so a new prompt cannot miss its override.
const BUILTIN: &[(&str, &str)] = &[
    ("system.md", include_str!("../../../prompts/system.md")),
    (
        "system_small.md",
        include_str!("../../../prompts/system_small.md"),
    ),
    (
        "small_model.json",
        include_str!("../../../prompts/small_model.json"),
    ),
    (
        "data_boundary.md",
        include_str!("../../../prompts/data_boundary.md"),
    ),
    ("skills.md", include_str!("../../../prompts/skills.md")),
    ("repo_map.md", include_str!("../../../prompts/repo_map.md")),
    ("memory.md", include_str!("../../../prompts/memory.md")),
    (
        "summary_prefix.md",
        include_str!("../../../prompts/summary_prefix.md"),
    ),
    ("tools.json", include_str!("../../../prompts/tools.json")),
    (
        "compact_handoff.md",
        include_str!("../../../prompts/compact_handoff.md"),
    ),
    (
        "compact_state_snapshot.md",
        include_str!("../../../prompts/compact_state_snapshot.md"),
    ),
    (
        "compact_checkpoint.md",
        include_str!("../../../prompts/compact_checkpoint.md"),
    ),
    (
        "compact_focus.md",
        include_str!("../../../prompts/compact_focus.md"),
    ),
    (
        "compact_fallback.md",
        include_str!("../../../prompts/compact_fallback.md"),
    ),
    (
        "tool_aborted.json",
        include_str!("../../../prompts/tool_aborted.json"),
    ),
    (
        "tool_rejected.md",
        include_str!("../../../prompts/tool_rejected.md"),
    ),
    ("ledger.md", include_str!("../../../prompts/ledger.md")),
    (
        "attachments.json",
        include_str!("../../../prompts/attachments.json"),
    ),
    (
        "reminders.json",
        include_str!("../../../prompts/reminders.json"),
    ),
    (
        "subagent_explore.md",
        include_str!("../../../prompts/subagent_explore.md"),
    ),
    (
        "tool_outputs.json",
        include_str!("../../../prompts/tool_outputs.json"),
    ),
    (
        "plan_mode.md",
        include_str!("../../../prompts/plan_mode.md"),
    ),
    (
        "plan_mode_left.md",
        include_str!("../../../prompts/plan_mode_left.md"),
    ),
    ("review.md", include_str!("../../../prompts/review.md")),
    (
        "review_fix.md",
        include_str!("../../../prompts/review_fix.md"),
    ),
];

fn builtin(name: &str) -> &'static str {
    BUILTIN
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| panic!("{name} is not a built-in prompt"))
}

/// A prompt's text as it is used: trailing whitespace (the file's last newline) removed.
fn prompt_text(raw: &str) -> String {
    raw.trim_end().to_string()
}

/// `template` with each `{name}` of `values` replaced by its value, in one pass (a value is
/// not searched for placeholders); a `{name}` not in `values` is left as it is.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let name = &after[..close];
            values
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value, close))
        });
        match value {
            Some((value, close)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts::builtin()
    }
}

impl Prompts {
    pub fn builtin() -> Prompts {
        let (prompts, problems) = Prompts::from_sources(|_| None);
        debug_assert!(problems.is_empty(), "built-in prompts: {problems:?}");
        prompts
    }

    /// The built-in prompts with each file that `read` returns (by file name) taking the
    /// place of its built-in; problems (an invalid JSON file) keep the built-in.
    pub fn from_sources(mut read: impl FnMut(&str) -> Option<String>) -> (Prompts, Vec<String>) {
        let mut problems = Vec::new();
        let mut text = |name: &str| -> String {
            prompt_text(&read(name).unwrap_or_else(|| builtin(name).to_string()))
        };
        let small_model_json = text("small_model.json");
        let tools_json = text("tools.json");
        let tool_aborted_json = text("tool_aborted.json");
        let attachments_json = text("attachments.json");
        let reminders_json = text("reminders.json");
        let tool_outputs_json = text("tool_outputs.json");
        let tools = parse_json(&mut problems, "tools.json", "a list of tools", &tools_json);
        let small_model = parse_json(
            &mut problems,
            "small_model.json",
            "an object of tool names to their description and arguments",
            &small_model_json,
        );
        let tool_aborted = parse_json(
            &mut problems,
            "tool_aborted.json",
            "an object of a template and the reasons",
            &tool_aborted_json,
        );
        let attachments = parse_json(
            &mut problems,
            "attachments.json",
            "an object of the attachment markers",
            &attachments_json,
        );
        let reminders = parse_json(
            &mut problems,
            "reminders.json",
            "an object of the reminder texts",
            &reminders_json,
        );
        let tool_outputs = parse_json(
            &mut problems,
            "tool_outputs.json",
            "an object of the tool output texts",
            &tool_outputs_json,
        );
        (
            Prompts {
                system: text("system.md"),
                system_small: text("system_small.md"),
                small_model,
                data_boundary: text("data_boundary.md"),
                skills: text("skills.md"),
                repo_map: text("repo_map.md"),
                memory: text("memory.md"),
                summary_prefix: text("summary_prefix.md"),
                tools,
                compact_handoff: text("compact_handoff.md"),
                compact_state_snapshot: text("compact_state_snapshot.md"),
                compact_checkpoint: text("compact_checkpoint.md"),
                compact_focus: text("compact_focus.md"),
                compact_custom: None,
                tool_aborted,
                compact_fallback: text("compact_fallback.md"),
                tool_rejected: text("tool_rejected.md"),
                ledger_header: text("ledger.md"),
                attachments,
                subagent_explore: text("subagent_explore.md"),
                reminders,
                tool_outputs,
                plan_mode: text("plan_mode.md"),
                plan_mode_left: text("plan_mode_left.md"),
                review: text("review.md"),
                review_fix: text("review_fix.md"),
            },
            problems,
        )
    }

    /// These prompts with `text` (the file of `compaction.promptFile`) as the compaction
    /// prompt of every style.
    pub fn with_compact_custom(mut self, text: &str) -> Prompts {
        self.compact_custom = Some(prompt_text(text));
        self
    }

    /// The tools of `small_model.json`, in `tools.json`'s order: each with its short
    /// description and only the arguments named there (and the required ones).
    pub fn small_model_tools(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter_map(|tool| {
                let small = self.small_model.get(&tool.name)?;
                let mut parameters = tool.parameters.clone();
                let required: Vec<String> = parameters["required"]
                    .as_array()
                    .map(|names| {
                        names
                            .iter()
                            .filter_map(|n| n.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(properties) = parameters
                    .get_mut("properties")
                    .and_then(|p| p.as_object_mut())
                {
                    properties.retain(|name, _| {
                        small.parameters.contains(name) || required.contains(name)
                    });
                }
                Some(ToolSpec {
                    name: tool.name.clone(),
                    description: small.description.clone(),
                    parameters,
                })
            })
            .collect()
    }

    /// The output recorded for a tool call that did not complete, for `reason`.
    pub fn aborted(&self, reason: AbortReason) -> String {
        let reasons = &self.tool_aborted.reasons;
        let reason = match reason {
            AbortReason::Incomplete => &reasons.incomplete,
            AbortReason::ServerStopped => &reasons.server_stopped,
            AbortReason::CancelledBeforeRun => &reasons.cancelled_before_run,
            AbortReason::CancelledAwaitingApproval => &reasons.cancelled_awaiting_approval,
        };
        fill(&self.tool_aborted.template, &[("reason", reason)])
    }
}

/// The JSON prompt file `name` as `T`; when `text` is not one, the problem is reported and
/// the built-in is used.
fn parse_json<T: serde::de::DeserializeOwned>(
    problems: &mut Vec<String>,
    name: &str,
    what: &str,
    text: &str,
) -> T {
    serde_json::from_str(text).unwrap_or_else(|err| {
        problems.push(format!("{name} is not {what} ({err}); using the built-in"));
        serde_json::from_str(builtin(name)).expect("the built-in is valid")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_model_is_offered_its_tools_shortly_and_their_required_arguments() {
        let prompts = Prompts::builtin();
        let small = prompts.small_model_tools();
        let names: Vec<&str> = small.iter().map(|t| t.name.as_str()).collect();
        // It changes files by listing them in its reply (`tools.fileListings`).
        assert_eq!(names, ["read_file", "list_dir", "grep", "shell"]);
        for tool in &small {
            let full = prompts.tools.iter().find(|t| t.name == tool.name).unwrap();
            assert!(
                tool.description.len() < full.description.len(),
                "{}",
                tool.name
            );
            for required in full.parameters["required"].as_array().into_iter().flatten() {
                let name = required.as_str().unwrap();
                assert!(tool.parameters["properties"].get(name).is_some(), "{name}");
            }
        }
        let shell = small.iter().find(|t| t.name == "shell").unwrap();
        let arguments: Vec<&String> = shell.parameters["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(arguments, ["command"]);
        // Every tool it names is a tool, and the short prompt is short.
        for name in prompts.small_model.keys() {
            assert!(prompts.tools.iter().any(|t| &t.name == name), "{name}");
        }
        assert!(prompts.system_small.len() * 2 < prompts.system.len());
    }

    #[test]
    fn builtin_prompts_are_complete() {
        let prompts = Prompts::builtin();
        assert!(prompts.system.contains("agentls"));
        assert!(!prompts.data_boundary.is_empty());
        let names: Vec<_> = prompts.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "grep",
                "find_symbol",
                "lsp",
                "edit_file",
                "write_file",
                "shell",
                "shell_output",
                "shell_kill",
                "update_plan",
                "save_memory",
                "task",
                "report_finding"
            ]
        );
        for tool in &prompts.tools {
            assert_eq!(tool.parameters["type"], "object", "{}", tool.name);
        }
    }

    #[test]
    fn an_override_replaces_its_builtin_only() {
        let (prompts, problems) = Prompts::from_sources(|name| match name {
            "system.md" => Some("You are a test.\n".to_string()),
            "tools.json" => Some("{not json".to_string()),
            _ => None,
        });
        assert_eq!(prompts.system, "You are a test.");
        assert_eq!(prompts.data_boundary, Prompts::builtin().data_boundary);
        assert_eq!(prompts.tools, Prompts::builtin().tools);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("tools.json"), "{problems:?}");
    }

    #[test]
    fn fill_replaces_known_placeholders_once_and_leaves_the_rest() {
        assert_eq!(
            fill("aborted: {reason}", &[("reason", "why")]),
            "aborted: why"
        );
        assert_eq!(
            fill("{a} {b} {a} {unknown}", &[("a", "1"), ("b", "2")]),
            "1 2 1 {unknown}"
        );
        // A value is not searched again; braces without a known name stay.
        assert_eq!(fill("{a}", &[("a", "{b}"), ("b", "no")]), "{b}");
        assert_eq!(fill("{{a}} {", &[("a", "x")]), "{x} {");
        assert_eq!(fill("no placeholder", &[("a", "x")]), "no placeholder");
        assert_eq!(fill("{}", &[]), "{}");
        assert_eq!(fill("é{a}é", &[("a", "ü")]), "éüé");
    }

    #[test]
    fn the_aborted_outputs_are_one_template_with_named_reasons() {
        let prompts = Prompts::builtin();
        assert_eq!(
            [
                AbortReason::Incomplete,
                AbortReason::ServerStopped,
                AbortReason::CancelledBeforeRun,
                AbortReason::CancelledAwaitingApproval,
            ]
            .map(|reason| prompts.aborted(reason)),
            [
                "aborted: the tool call did not complete",
                "aborted: the server stopped before this tool call completed",
                "aborted: the turn was cancelled before this tool call ran",
                "aborted: the turn was cancelled while waiting for approval",
            ]
        );
        let (prompts, problems) = Prompts::from_sources(|name| match name {
            "tool_aborted.json" => Some(
                r#"{"template": "stopped ({reason})", "reasons": {
                "incomplete": "a", "server_stopped": "b", "cancelled_before_run": "c",
                "cancelled_awaiting_approval": "d"}}"#
                    .to_string(),
            ),
            _ => None,
        });
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(prompts.aborted(AbortReason::ServerStopped), "stopped (b)");
        // A reason missing: the whole built-in file is kept, and that is reported.
        let (prompts, problems) = Prompts::from_sources(|name| match name {
            "tool_aborted.json" => Some(r#"{"template": "x {reason}", "reasons": {}}"#.into()),
            _ => None,
        });
        assert_eq!(prompts.tool_aborted, Prompts::builtin().tool_aborted);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("tool_aborted.json is not"),
            "{problems:?}"
        );
    }

    #[test]
    fn every_file_of_the_prompt_directory_is_built_in_and_back() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../prompts");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".md") || name.ends_with(".json"))
            .filter(|name| name != "README.md")
            .collect();
        on_disk.sort();
        let mut built_in: Vec<String> = BUILTIN.iter().map(|(name, _)| name.to_string()).collect();
        built_in.sort();
        assert_eq!(on_disk, built_in);
        for (name, text) in BUILTIN {
            let file = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
            assert_eq!(file, *text, "{name} embeds its own file");
        }
        // And every one is read: an override of each changes the prompts or is reported.
        for (name, _) in BUILTIN {
            let (prompts, problems) =
                Prompts::from_sources(|asked| (asked == *name).then(|| "[]".into()));
            assert!(
                prompts != Prompts::builtin() || problems.iter().any(|p| p.starts_with(name)),
                "{name} is never read"
            );
        }
    }
}
