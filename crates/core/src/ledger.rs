//! The ledger: what the next turn must know, kept deterministically from the session's
//! events rather than from the model's memory, and carried verbatim through every
//! compaction. A summarizer that writes a poor summary cannot lose a file path, an exit
//! code, an error, an approval, the plan or a user's "never".
//!
//! Pure: `observe` folds events (live and on replay, like `Session::apply`); `render`
//! writes the block within a token budget, dropping the oldest read-only entries first.
//! Modified files, approvals and the plan never drop.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::event::Event;
use crate::history::Item;
use crate::prompts::Prompts;
use crate::snapshot::ChangeKind;
use crate::tokens::TokenizerKind;
use crate::tool_info::{LedgerRecord, PlanEntry, ToolCatalog};

/// Error messages kept (the newest); each cut to ERROR_CHARS.
const MAX_ERRORS: usize = 5;
const ERROR_CHARS: usize = 600;
/// A user constraint longer than this is cut (it is still verbatim up to the cut).
const CONSTRAINT_CHARS: usize = 400;
const MAX_CONSTRAINTS: usize = 30;
/// Shell commands remembered (the newest).
const MAX_COMMANDS: usize = 40;
const COMMAND_CHARS: usize = 200;
/// Commands named per changed file (the newest), each cut shorter than in the command list.
const COMMANDS_PER_FILE: usize = 3;
const FILE_COMMAND_CHARS: usize = 80;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedFile {
    /// The tools that changed it, in first-use order.
    pub tools: Vec<String>,
    pub added: usize,
    pub removed: usize,
    pub created: bool,
    /// Gone from the disk after the last change seen (a command removed it).
    pub deleted: bool,
    /// Commands that changed it (the newest few), found by the workspace snapshots around
    /// each command: their line counts are unknown.
    pub commands: Vec<String>,
    /// Order of first change (for rendering oldest first).
    pub order: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    pub command: String,
    /// `exit 0`, `exit 3`, `timed out`, `cancelled`, `killed by signal 9`, `not run`.
    pub outcome: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    /// Path → line ranges read (`whole` or `L10-40`), in first-read order.
    pub files_read: Vec<(String, Vec<String>)>,
    pub files_changed: BTreeMap<String, ChangedFile>,
    pub commands: Vec<CommandRun>,
    /// Calls of MCP servers' tools (the newest): the tool's full name and how it ended.
    pub external_calls: Vec<CommandRun>,
    pub errors: Vec<String>,
    /// Remembered approvals (`allowAlways`/`rejectAlways`) with their scope, and the last
    /// one-off decisions.
    pub approvals: Vec<String>,
    pub plan: Vec<PlanEntry>,
    /// Sentences of the user's messages that state a rule (must, never, don't, always…).
    pub constraints: Vec<String>,
    /// Calls seen and not yet answered: id → (tool, arguments).
    pending: HashMap<String, (String, Value)>,
    changes_seen: usize,
}

impl Ledger {
    pub fn observe(&mut self, event: &Event, tools: &dyn ToolCatalog) {
        match event {
            Event::Item { entry, .. } => self.observe_item(&entry.item, tools),
            Event::Permission {
                tool,
                outcome,
                prefix,
                ..
            } => {
                let scope = match prefix {
                    Some(prefix) => format!("shell commands starting `{prefix}`"),
                    None => tool.clone(),
                };
                let line = match outcome.as_str() {
                    "allowAlways" => format!("always allowed for this session: {scope}"),
                    "rejectAlways" => format!("always refused for this session: {scope}"),
                    "allowOnce" => format!("allowed once: {tool}"),
                    "rejectOnce" => format!("refused once: {tool}"),
                    other => format!("{tool}: {other} (no answer)"),
                };
                if matches!(outcome.as_str(), "allowAlways" | "rejectAlways") {
                    // The newest answer for a scope replaces the older one.
                    self.approvals
                        .retain(|a| !a.ends_with(&format!(": {scope}")));
                    self.approvals.push(line);
                } else {
                    // One-off answers: only the last few matter.
                    let one_off = self
                        .approvals
                        .iter()
                        .filter(|a| !a.starts_with("always"))
                        .count();
                    if one_off >= 5 {
                        if let Some(at) =
                            self.approvals.iter().position(|a| !a.starts_with("always"))
                        {
                            self.approvals.remove(at);
                        }
                    }
                    self.approvals.push(line);
                }
            }
            Event::Plan { entries, .. } => self.plan = entries.clone(),
            Event::Error { message, .. } => self.push_error(message.clone()),
            Event::FilesChanged { command, files, .. } => {
                let command = cut(command.trim(), FILE_COMMAND_CHARS);
                for file in files {
                    let change = self.change_of(&file.path);
                    match file.change {
                        ChangeKind::Created => {
                            change.created = true;
                            change.deleted = false;
                        }
                        ChangeKind::Deleted => change.deleted = true,
                        ChangeKind::Modified => change.deleted = false,
                    }
                    change.commands.retain(|c| *c != command);
                    change.commands.push(command.clone());
                    if change.commands.len() > COMMANDS_PER_FILE {
                        change.commands.remove(0);
                    }
                }
            }
            _ => {}
        }
    }

    /// The entry of a changed file, made (in the order of first change) if new.
    fn change_of(&mut self, path: &str) -> &mut ChangedFile {
        let order = self.changes_seen;
        self.changes_seen += 1;
        self.files_changed
            .entry(path.to_string())
            .or_insert_with(|| ChangedFile {
                order,
                ..ChangedFile::default()
            })
    }

    fn observe_item(&mut self, item: &Item, tools: &dyn ToolCatalog) {
        match item {
            Item::User { text, .. } => {
                for sentence in constraint_sentences(text) {
                    if !self.constraints.contains(&sentence) {
                        self.constraints.push(sentence);
                    }
                }
                if self.constraints.len() > MAX_CONSTRAINTS {
                    let extra = self.constraints.len() - MAX_CONSTRAINTS;
                    self.constraints.drain(..extra);
                }
            }
            Item::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                let arguments = serde_json::from_str(arguments).unwrap_or(Value::Null);
                self.pending
                    .insert(call_id.clone(), (name.clone(), arguments));
            }
            Item::ToolOutput {
                call_id,
                content,
                success,
                ..
            } => {
                let Some((tool, arguments)) = self.pending.remove(call_id) else {
                    return;
                };
                let record = tools.ledger_record(&tool);
                self.observe_result(&tool, record, &arguments, content, *success);
            }
            _ => {}
        }
    }

    fn observe_result(
        &mut self,
        tool: &str,
        record: LedgerRecord,
        arguments: &Value,
        content: &str,
        success: bool,
    ) {
        match (record, success) {
            (LedgerRecord::FileRead, true) => self.record_read(arguments),
            (LedgerRecord::FileEdit, true) | (LedgerRecord::FileWrite, true) => {
                self.record_change(tool, record, arguments, content)
            }
            (LedgerRecord::Command, _) => self.record_command(tool, arguments, content, success),
            (LedgerRecord::ExternalCall, _) => self.record_external_call(tool, content, success),
            (_, false) => self.push_error(format!("{tool}: {content}")),
            _ => {}
        }
    }

    /// A file read: the lines read (`offset`, `limit`) join the ranges of its path.
    fn record_read(&mut self, arguments: &Value) {
        let path = arguments["path"].as_str().unwrap_or("").to_string();
        let range = match (arguments["offset"].as_u64(), arguments["limit"].as_u64()) {
            (None, None) => "whole".to_string(),
            (offset, limit) => {
                let start = offset.unwrap_or(1).max(1);
                match limit {
                    Some(limit) => format!("L{start}-{}", start + limit.max(1) - 1),
                    None => format!("L{start}-end"),
                }
            }
        };
        match self.files_read.iter_mut().find(|(p, _)| *p == path) {
            Some((_, ranges)) => {
                if !ranges.contains(&range) {
                    ranges.push(range);
                }
            }
            None => self.files_read.push((path, vec![range])),
        }
    }

    /// A file edited or written: its lines added and removed, and whether it was created.
    fn record_change(
        &mut self,
        tool: &str,
        record: LedgerRecord,
        arguments: &Value,
        content: &str,
    ) {
        let path = arguments["path"].as_str().unwrap_or("").to_string();
        let (added, removed, created) = if record == LedgerRecord::FileEdit {
            (
                line_count(arguments["new_text"].as_str().unwrap_or("")),
                line_count(arguments["old_text"].as_str().unwrap_or("")),
                false,
            )
        } else {
            (
                line_count(arguments["content"].as_str().unwrap_or("")),
                0,
                content.starts_with("Created "),
            )
        };
        let change = self.change_of(&path);
        if change.tools.iter().all(|t| t != tool) {
            change.tools.push(tool.to_string());
        }
        change.added += added;
        change.removed += removed;
        change.created |= created;
        change.deleted = false;
    }

    fn record_command(&mut self, tool: &str, arguments: &Value, content: &str, success: bool) {
        let command = cut(arguments["command"].as_str().unwrap_or(""), COMMAND_CHARS);
        self.commands.push(CommandRun {
            command,
            outcome: shell_outcome(content, success),
        });
        if self.commands.len() > MAX_COMMANDS {
            self.commands.remove(0);
        }
        if !success {
            self.push_error(format!("{tool}: {content}"));
        }
    }

    fn record_external_call(&mut self, tool: &str, content: &str, success: bool) {
        let outcome = if success {
            "ok".to_string()
        } else {
            format!("failed: {}", cut(content.lines().next().unwrap_or(""), 120))
        };
        self.external_calls.push(CommandRun {
            command: tool.to_string(),
            outcome,
        });
        if self.external_calls.len() > MAX_COMMANDS {
            self.external_calls.remove(0);
        }
        if !success {
            self.push_error(format!("{tool}: {content}"));
        }
    }

    fn push_error(&mut self, message: String) {
        let message = cut_keep_tail(&message, ERROR_CHARS);
        self.errors.retain(|e| *e != message);
        self.errors.push(message);
        if self.errors.len() > MAX_ERRORS {
            self.errors.remove(0);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.files_read.is_empty()
            && self.files_changed.is_empty()
            && self.commands.is_empty()
            && self.external_calls.is_empty()
            && self.errors.is_empty()
            && self.approvals.is_empty()
            && self.plan.is_empty()
            && self.constraints.is_empty()
    }

    /// The ledger block, within `max_tokens` when it can be: the oldest files read go
    /// first, then the oldest commands, the oldest MCP calls, then the oldest errors. What never drops (files
    /// changed, approvals, plan, constraints) is always written, even over budget.
    pub fn render(&self, prompts: &Prompts, max_tokens: usize, tokenizer: TokenizerKind) -> String {
        let mut read_from = 0;
        let mut commands_from = 0;
        let mut external_from = 0;
        let mut errors_from = 0;
        loop {
            let text = self.render_from(
                prompts,
                read_from,
                commands_from,
                external_from,
                errors_from,
            );
            if tokenizer.count(&text) <= max_tokens {
                return text;
            }
            if read_from < self.files_read.len() {
                read_from += 1;
            } else if commands_from < self.commands.len() {
                commands_from += 1;
            } else if external_from < self.external_calls.len() {
                external_from += 1;
            } else if errors_from < self.errors.len() {
                errors_from += 1;
            } else {
                return text;
            }
        }
    }

    fn render_from(
        &self,
        prompts: &Prompts,
        read_from: usize,
        commands_from: usize,
        external_from: usize,
        errors_from: usize,
    ) -> String {
        // The tag and the section titles are the block's structure; the sentence is a prompt.
        let mut out = format!("<ledger>\n{}\n", prompts.ledger_header);
        let mut changed: Vec<(&String, &ChangedFile)> = self.files_changed.iter().collect();
        changed.sort_by_key(|(_, c)| c.order);
        let changed = changed
            .into_iter()
            .map(|(path, c)| changed_file_line(path, c))
            .collect();
        push_section(&mut out, "Files modified", changed, 0);
        let read = self.files_read[read_from..]
            .iter()
            .map(|(path, ranges)| format!("{path} ({})", ranges.join(", ")))
            .collect();
        push_section(&mut out, "Files read", read, read_from);
        let commands = run_lines(&self.commands[commands_from..]);
        push_section(&mut out, "Shell commands", commands, commands_from);
        let external = run_lines(&self.external_calls[external_from..]);
        push_section(&mut out, "MCP calls", external, external_from);
        let errors = self.errors[errors_from..]
            .iter()
            .map(|e| e.replace('\n', "\n  "))
            .collect();
        push_section(&mut out, "Latest errors (verbatim)", errors, errors_from);
        push_section(&mut out, "Approvals", self.approvals.clone(), 0);
        let plan = self.plan.iter().map(plan_line).collect();
        push_section(&mut out, "Plan", plan, 0);
        let constraints = self
            .constraints
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect();
        push_section(&mut out, "User constraints (verbatim)", constraints, 0);
        out.push_str("</ledger>");
        out
    }
}

/// A section of the block: its title, a line on the `dropped` oldest entries left out, and
/// its lines; nothing when it has neither.
fn push_section(out: &mut String, title: &str, lines: Vec<String>, dropped: usize) {
    if lines.is_empty() && dropped == 0 {
        return;
    }
    out.push_str(&format!("## {title}\n"));
    if dropped > 0 {
        out.push_str(&format!("- ({dropped} older entries omitted)\n"));
    }
    for line in lines {
        out.push_str(&format!("- {line}\n"));
    }
}

/// `path (created, deleted, tools, +A −R lines, by `command`…)`, the parts it has.
fn changed_file_line(path: &str, c: &ChangedFile) -> String {
    let mut parts: Vec<String> = Vec::new();
    if c.created {
        parts.push("created".into());
    }
    if c.deleted {
        parts.push("deleted".into());
    }
    if !c.tools.is_empty() {
        parts.push(c.tools.join(", "));
        parts.push(format!("+{} −{} lines", c.added, c.removed));
    }
    parts.extend(c.commands.iter().map(|command| format!("by `{command}`")));
    format!("{path} ({})", parts.join(", "))
}

fn run_lines(runs: &[CommandRun]) -> Vec<String> {
    runs.iter()
        .map(|c| format!("`{}` → {}", c.command, c.outcome))
        .collect()
}

fn plan_line(entry: &PlanEntry) -> String {
    let mark = match entry.status.as_str() {
        "completed" => "[x]",
        "in_progress" => "[~]",
        _ => "[ ]",
    };
    format!("{mark} {}", entry.content)
}

fn line_count(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.lines().count().max(1)
    }
}

/// The outcome of a shell call from the status line its output ends with.
fn shell_outcome(content: &str, success: bool) -> String {
    let last = content.trim_end().lines().last().unwrap_or("").trim();
    if let Some(code) = last
        .strip_prefix("[exit code ")
        .and_then(|r| r.strip_suffix(']'))
    {
        return format!("exit {code}");
    }
    if let Some(killed) = last
        .strip_prefix("[killed")
        .and_then(|r| r.strip_suffix(']'))
    {
        return format!("killed{killed}");
    }
    if success {
        "ok".into()
    } else {
        format!(
            "not run: {}",
            cut(content.lines().next().unwrap_or(""), 120)
        )
    }
}

fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let kept: String = text.chars().take(chars).collect();
    format!("{kept}…")
}

/// Errors say what failed at the end (the assertion, the exit code): keep the tail.
fn cut_keep_tail(text: &str, chars: usize) -> String {
    let count = text.chars().count();
    if count <= chars {
        return text.to_string();
    }
    let head: String = text.chars().take(chars / 3).collect();
    let tail: String = text.chars().skip(count - (chars - chars / 3)).collect();
    format!("{head}\n…\n{tail}")
}

/// Words that make a sentence a rule the user set.
const CONSTRAINT_WORDS: &[&str] = &[
    "must",
    "never",
    "don't",
    "dont",
    "do not",
    "always",
    "mustn't",
    "should not",
    "shouldn't",
    "only",
    "avoid",
];

/// The sentences (or lines) of `text` that state a constraint, verbatim.
pub fn constraint_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let end_of_sentence = matches!(b, b'.' | b'!' | b'?' | b';')
                && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
            if end_of_sentence {
                push_if_constraint(&line[start..=i], &mut out);
                start = i + 1;
            }
        }
        push_if_constraint(&line[start..], &mut out);
    }
    out
}

fn push_if_constraint(sentence: &str, out: &mut Vec<String>) {
    let sentence = sentence.trim();
    if sentence.is_empty() {
        return;
    }
    let lower = sentence.to_lowercase().replace('’', "'");
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let joined = words.join(" ");
    let is_rule = CONSTRAINT_WORDS.iter().any(|rule| {
        if rule.contains(' ') {
            format!(" {joined} ").contains(&format!(" {rule} "))
        } else {
            words.contains(rule)
        }
    });
    if is_rule {
        out.push(cut(sentence, CONSTRAINT_CHARS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Entry;
    use crate::test_support::TestTools;

    fn item(turn: &str, item: Item) -> Event {
        Event::Item {
            turn_id: turn.into(),
            entry: Entry { item, tokens: 1 },
        }
    }

    fn call(id: &str, name: &str, arguments: Value) -> Event {
        item(
            "t",
            Item::ToolCall {
                call_id: id.into(),
                name: name.into(),
                arguments: arguments.to_string(),
            },
        )
    }

    fn output(id: &str, name: &str, content: &str, success: bool) -> Event {
        item(
            "t",
            Item::ToolOutput {
                call_id: id.into(),
                name: name.into(),
                content: content.into(),
                success,
            },
        )
    }

    fn session_events() -> Vec<Event> {
        use serde_json::json;
        vec![
            item(
                "t",
                Item::User {
                    text: "Fix the parser. Never touch the public API! Tests must pass; thanks.\nAlso check docs".into(),
                    context: None,
                },
            ),
            call("1", "read_file", json!({"path": "src/parser.rs"})),
            output("1", "read_file", "L1: …", true),
            call("2", "read_file", json!({"path": "src/parser.rs", "offset": 40, "limit": 20})),
            output("2", "read_file", "L40: …", true),
            call("3", "edit_file", json!({"path": "src/parser.rs", "old_text": "a\nb", "new_text": "c"})),
            output("3", "edit_file", "Edited src/parser.rs: replaced 2 line(s) with 1 line(s).", true),
            call("4", "write_file", json!({"path": "tests/new.rs", "content": "x\ny\nz\n"})),
            output("4", "write_file", "Created tests/new.rs (3 lines).", true),
            call("5", "shell", json!({"command": "cargo test"})),
            Event::Permission {
                turn_id: "t".into(),
                tool_call_id: "5".into(),
                tool: "shell".into(),
                outcome: "allowAlways".into(),
                prefix: Some("cargo test".into()),
            },
            output("5", "shell", "test parse_empty ... FAILED\nassertion failed: left == right\n[exit code 101]", false),
            call("6", "read_file", json!({"path": "../secret"})),
            output("6", "read_file", "../secret is outside the workspace", false),
            Event::Plan {
                turn_id: "t".into(),
                entries: vec![PlanEntry {
                    content: "fix parse_empty".into(),
                    status: "in_progress".into(),
                }],
            },
        ]
    }

    #[test]
    fn the_ledger_keeps_files_commands_errors_approvals_plan_and_constraints() {
        let mut ledger = Ledger::default();
        for event in session_events() {
            ledger.observe(&event, &TestTools);
        }
        let text = ledger.render(&Prompts::builtin(), 10_000, TokenizerKind::O200kBase);
        expect_test::expect![[r#"
            <ledger>
            Kept by agentls from the session's events (not from memory); it is exact.
            ## Files modified
            - src/parser.rs (edit_file, +1 −2 lines)
            - tests/new.rs (created, write_file, +3 −0 lines)
            ## Files read
            - src/parser.rs (whole, L40-59)
            ## Shell commands
            - `cargo test` → exit 101
            ## Latest errors (verbatim)
            - shell: test parse_empty ... FAILED
              assertion failed: left == right
              [exit code 101]
            - read_file: ../secret is outside the workspace
            ## Approvals
            - always allowed for this session: shell commands starting `cargo test`
            ## Plan
            - [~] fix parse_empty
            ## User constraints (verbatim)
            - "Never touch the public API!"
            - "Tests must pass;"
            </ledger>"#]]
        .assert_eq(&text);
    }

    #[test]
    fn over_budget_the_oldest_reads_drop_first_and_changes_never_drop() {
        use serde_json::json;
        let mut ledger = Ledger::default();
        for i in 0..50 {
            ledger.observe(
                &call(
                    &format!("r{i}"),
                    "read_file",
                    json!({"path": format!("src/file_{i}.rs")}),
                ),
                &TestTools,
            );
            ledger.observe(
                &output(&format!("r{i}"), "read_file", "…", true),
                &TestTools,
            );
        }
        for event in session_events() {
            ledger.observe(&event, &TestTools);
        }
        let full = ledger.render(&Prompts::builtin(), 100_000, TokenizerKind::O200kBase);
        let small = ledger.render(&Prompts::builtin(), 250, TokenizerKind::O200kBase);
        assert!(full.contains("src/file_0.rs"));
        assert!(!small.contains("src/file_0.rs"), "{small}");
        assert!(small.contains("older entries omitted"));
        for kept in [
            "tests/new.rs",
            "cargo test",
            "fix parse_empty",
            "Never touch the public API!",
        ] {
            assert!(small.contains(kept), "{kept} dropped:\n{small}");
        }
        // Nothing left to drop: the block is written whole even over budget.
        let tiny = ledger.render(&Prompts::builtin(), 1, TokenizerKind::O200kBase);
        assert!(tiny.contains("tests/new.rs") && tiny.contains("always allowed"));
    }

    #[test]
    fn files_a_command_changed_are_modified_files_that_never_drop() {
        use crate::event::ChangedPath;
        let changed = |command: &str, files: &[(&str, ChangeKind)]| Event::FilesChanged {
            turn_id: "t".into(),
            tool_call_id: "c".into(),
            command: command.into(),
            files: files
                .iter()
                .map(|(path, change)| ChangedPath {
                    path: path.to_string(),
                    change: *change,
                })
                .collect(),
        };
        let mut ledger = Ledger::default();
        for event in session_events() {
            ledger.observe(&event, &TestTools);
        }
        for event in [
            changed(
                "sed -i 's/a/b/' src/parser.rs",
                &[("src/parser.rs", ChangeKind::Modified)],
            ),
            changed(
                "python gen.py",
                &[
                    ("gen/out.rs", ChangeKind::Created),
                    ("gen/old.rs", ChangeKind::Deleted),
                ],
            ),
            changed("rm tests/new.rs", &[("tests/new.rs", ChangeKind::Deleted)]),
        ] {
            ledger.observe(&event, &TestTools);
        }
        let text = ledger.render(&Prompts::builtin(), 1, TokenizerKind::O200kBase);
        let modified: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != "## Files modified")
            .skip(1)
            .take_while(|l| !l.starts_with("##"))
            .collect();
        expect_test::expect![[r#"
            [
                "- src/parser.rs (edit_file, +1 −2 lines, by `sed -i 's/a/b/' src/parser.rs`)",
                "- tests/new.rs (created, deleted, write_file, +3 −0 lines, by `rm tests/new.rs`)",
                "- gen/out.rs (created, by `python gen.py`)",
                "- gen/old.rs (deleted, by `python gen.py`)",
            ]
        "#]]
        .assert_debug_eq(&modified);
    }

    #[test]
    fn mcp_calls_are_kept_with_their_tool_and_outcome() {
        use serde_json::json;
        let mut ledger = Ledger::default();
        for event in [
            call(
                "m1",
                "mcp__time__get_current_time",
                json!({"timezone": "UTC"}),
            ),
            output(
                "m1",
                "mcp__time__get_current_time",
                "{\"datetime\": \"…\"}",
                true,
            ),
            call("m2", "mcp__github__create_issue", json!({"title": "x"})),
            output(
                "m2",
                "mcp__github__create_issue",
                "401 Unauthorized\nmore",
                false,
            ),
        ] {
            ledger.observe(&event, &TestTools);
        }
        let text = ledger.render(&Prompts::builtin(), 10_000, TokenizerKind::O200kBase);
        expect_test::expect![[r#"
            <ledger>
            Kept by agentls from the session's events (not from memory); it is exact.
            ## MCP calls
            - `mcp__time__get_current_time` → ok
            - `mcp__github__create_issue` → failed: 401 Unauthorized
            ## Latest errors (verbatim)
            - mcp__github__create_issue: 401 Unauthorized
              more
            </ledger>"#]]
        .assert_eq(&text);
    }

    #[test]
    fn constraints_are_whole_sentences_with_a_rule_word() {
        assert_eq!(
            constraint_sentences("Please don't use unwrap. Keep it short.\nAlways run clippy"),
            ["Please don't use unwrap.", "Always run clippy"]
        );
        assert!(constraint_sentences("The mustard is in src/food.rs").is_empty());
        assert_eq!(
            constraint_sentences("Do not push to main."),
            ["Do not push to main."]
        );
    }

    #[test]
    fn the_newest_always_answer_for_a_scope_wins() {
        let permission = |outcome: &str| Event::Permission {
            turn_id: "t".into(),
            tool_call_id: "c".into(),
            tool: "write_file".into(),
            outcome: outcome.into(),
            prefix: None,
        };
        let mut ledger = Ledger::default();
        ledger.observe(&permission("allowAlways"), &TestTools);
        ledger.observe(&permission("rejectAlways"), &TestTools);
        assert_eq!(
            ledger.approvals,
            ["always refused for this session: write_file"]
        );
    }
}
