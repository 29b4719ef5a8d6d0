//! Runtime reminders: short texts for the model, each with a key, placed at the very end of
//! the request where they first become due (the runtime-reminder tier: after the history,
//! never in the stable prefix; once shown they are part of the append-only history, so the
//! next request still extends the previous one byte for byte). A key is shown at most once
//! per session unless its source gives it a new version; the shown keys are session events,
//! so a reload keeps them.
//!
//! Pure: the built-in sources as functions over data (the AGENTS.md chain before and after,
//! the plan and the history, an edit's diff, a compaction, a hook's output), the dedup, the
//! budget and the wrapping. The wording is `prompts/reminders.json`.

use std::collections::BTreeMap;

use crate::history::{History, Item};
use crate::memory;
use crate::prompts::{fill, Prompts, ReminderTexts};
use crate::tokens::TokenizerKind;
use crate::tool_info::PlanEntry;
use crate::truncate::{truncate_middle, TruncationPolicy};

/// One reminder, before it is wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    /// What dedup is about: `agentsMd`, `plan:<step>`, `risky:<rule>`, `compaction:<n>`,
    /// `hook:<event>:<command>`, `stop:<turn>`.
    pub key: String,
    /// A key shown with another version is shown again (the source says it changed).
    pub version: String,
    /// `agentsMd`, `plan`, `risky`, `compaction`, `hook`, `loop`, `memory`: the source, for
    /// the editor.
    pub source: &'static str,
    pub text: String,
}

/// `reminders.*`: each built-in source can be turned off; the budget of one reminder.
#[derive(Debug, Clone, PartialEq)]
pub struct ReminderSettings {
    /// `reminders.agentsMd`.
    pub agents_md: bool,
    /// `reminders.plan`.
    pub plan: bool,
    /// `reminders.riskyPatterns`.
    pub risky: bool,
    /// `reminders.afterCompaction`.
    pub compaction: bool,
    /// `reminders.hooks`: hook stdout and `additionalContext` reach the model.
    pub hooks: bool,
    /// `reminders.maxTokens`: a longer reminder is cut and marked.
    pub max_tokens: usize,
    /// `reminders.planRounds`: tool rounds without `update_plan` before the plan reminder.
    pub plan_rounds: usize,
    /// `reminders.unfinishedChange`: a turn asked for a change that ends without one goes
    /// on once with a reminder (off by default: for small models, `./run`'s local one).
    pub unfinished_change: bool,
    /// `reminders.failingCheck`: a turn that ends while the check after its last change
    /// fails goes on with a reminder, at most [`FAILING_CHECK_REMINDERS`] times; unset: on
    /// for a small model (`Config::failing_check_reminder`).
    pub failing_check: Option<bool>,
}

impl Default for ReminderSettings {
    fn default() -> Self {
        ReminderSettings {
            agents_md: true,
            plan: true,
            risky: true,
            compaction: true,
            hooks: true,
            max_tokens: 200,
            plan_rounds: 5,
            unfinished_change: false,
            failing_check: None,
        }
    }
}

impl ReminderSettings {
    /// Whether reminders of `source` are on. `hooks` is applied where a hook's context is
    /// queued: a hook's block reason (Stop, PostToolUse) is not context but why the loop goes
    /// on, and is always shown.
    pub fn allows(&self, source: &str) -> bool {
        match source {
            "agentsMd" => self.agents_md,
            "plan" => self.plan,
            "risky" => self.risky,
            "compaction" => self.compaction,
            _ => true,
        }
    }
}

/// The candidates that are due: on, and not shown before with the same version (nor twice
/// in this list).
pub fn due(
    shown: &BTreeMap<String, String>,
    settings: &ReminderSettings,
    candidates: Vec<Reminder>,
) -> Vec<Reminder> {
    let mut seen = shown.clone();
    let mut out = Vec::new();
    for reminder in candidates {
        if !settings.allows(reminder.source) || reminder.text.trim().is_empty() {
            continue;
        }
        if seen.get(&reminder.key) == Some(&reminder.version) {
            continue;
        }
        seen.insert(reminder.key.clone(), reminder.version.clone());
        out.push(reminder);
    }
    out
}

/// The text the model sees: the reminder within its budget (cut in the middle and marked
/// beyond), opened by who it is from, in `<agentls_reminder>` tags.
pub fn render(
    reminder: &Reminder,
    prompts: &Prompts,
    tokenizer: TokenizerKind,
    max_tokens: usize,
) -> String {
    let body = truncate_middle(
        reminder.text.trim(),
        TruncationPolicy::Tokens(max_tokens.max(1)),
        tokenizer,
    )
    .text;
    format!(
        "<agentls_reminder source=\"{}\">\n{}\n{}\n</agentls_reminder>",
        reminder.source, prompts.reminders.intro, body
    )
}

/// A stable, short version string for a text (FNV-1a).
pub fn version_of(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

const MAX_CHANGED_LINES: usize = 12;

/// (1) The AGENTS.md chain's text changed since `before`: the lines removed and added.
pub fn agents_md_changed(before: &str, after: &str, texts: &ReminderTexts) -> Option<Reminder> {
    if before == after {
        return None;
    }
    let old: Vec<&str> = before.lines().filter(|l| !l.trim().is_empty()).collect();
    let new: Vec<&str> = after.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut changes: Vec<String> = old
        .iter()
        .filter(|l| !new.contains(l))
        .map(|l| format!("- {l}"))
        .chain(
            new.iter()
                .filter(|l| !old.contains(l))
                .map(|l| format!("+ {l}")),
        )
        .collect();
    if changes.is_empty() {
        changes.push("(the order of lines)".into());
    }
    if changes.len() > MAX_CHANGED_LINES {
        let more = changes.len() - MAX_CHANGED_LINES;
        changes.truncate(MAX_CHANGED_LINES);
        changes.push(format!("… {more} more changed lines"));
    }
    Some(Reminder {
        key: "agentsMd".into(),
        version: version_of(after),
        source: "agentsMd",
        text: fill(
            &texts.agents_md_changed,
            &[("changes", &changes.join("\n"))],
        ),
    })
}

/// Tool rounds (runs of calls) since the last call of `plan_tool`; None when it was never
/// called.
fn rounds_since(history: &History, plan_tool: &str) -> Option<usize> {
    let entries = history.entries();
    let last = entries
        .iter()
        .rposition(|e| matches!(&e.item, Item::ToolCall { name, .. } if name == plan_tool))?;
    let mut rounds = 0;
    for pair in entries[last..].windows(2) {
        let starts_run = matches!(pair[1].item, Item::ToolCall { .. })
            && !matches!(pair[0].item, Item::ToolCall { .. });
        rounds += usize::from(starts_run);
    }
    Some(rounds)
}

/// (2) The plan has an `in_progress` step and `threshold` tool rounds went by without
/// `plan_tool` (the server names it: the core matches no tool name).
pub fn plan_stale(
    plan: &[PlanEntry],
    history: &History,
    plan_tool: &str,
    threshold: usize,
    texts: &ReminderTexts,
) -> Option<Reminder> {
    let step = plan.iter().find(|e| e.status == "in_progress")?;
    let rounds = rounds_since(history, plan_tool)?;
    if rounds < threshold.max(1) {
        return None;
    }
    Some(Reminder {
        key: format!("plan:{}", step.content),
        version: String::new(),
        source: "plan",
        text: fill(
            &texts.plan_stale,
            &[("step", &step.content), ("rounds", &rounds.to_string())],
        ),
    })
}

/// The risky-pattern rules: (name, regular expression over an added line). Their warnings
/// are `reminders.json`'s `risky`.
pub const RISKY: &[(&str, &str)] = &[
    (
        "child_process_exec",
        r"child_process\.exec\b|\bexecSync\s*\(",
    ),
    ("eval", r"(?:^|[^.\w])eval\s*\("),
    ("exec", r"(?:^|[^.\w])exec\s*\("),
    ("pickle", r"\bpickle\.loads?\s*\("),
    ("dangerously_set_inner_html", r"dangerouslySetInnerHTML"),
    ("unsafe_block", r"\bunsafe\s*\{"),
    (
        "sql_string_format",
        r#"(?i)(?:["'](?:select|insert\s+into|update|delete\s+from)\b[^"']*["']\s*(?:%|\+|\.format\s*\()|\bf["'](?:select|insert\s+into|update|delete\s+from)\b[^"']*\{|format!\(\s*"(?:select|insert\s+into|update|delete\s+from)\b[^"]*\{)"#,
    ),
    ("os_system", r"\bos\.system\s*\("),
];

/// (3) The rules an edit's unified diff trips on its added lines, one reminder per rule
/// (keyed by the rule: once per session).
pub fn risky(diff: &str, texts: &ReminderTexts) -> Vec<Reminder> {
    let added: Vec<&str> = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .map(|l| &l[1..])
        .collect();
    RISKY
        .iter()
        .filter(|(_, pattern)| {
            let re = regex::Regex::new(pattern).expect("a valid rule");
            added.iter().any(|line| re.is_match(line))
        })
        .filter_map(|(name, _)| {
            Some(Reminder {
                key: format!("risky:{name}"),
                version: String::new(),
                source: "risky",
                text: texts.risky.get(*name)?.clone(),
            })
        })
        .collect()
}

/// (4) After compaction number `generation`: the files modified in the session.
pub fn after_compaction(generation: u64, files: &[String], texts: &ReminderTexts) -> Reminder {
    let files = if files.is_empty() {
        "none".to_string()
    } else {
        files.join(", ")
    };
    Reminder {
        key: format!("compaction:{generation}"),
        version: String::new(),
        source: "compaction",
        text: fill(&texts.after_compaction, &[("files", &files)]),
    }
}

/// (5) A hook's `additionalContext` or stdout: a new text of the same hook is shown again.
pub fn from_hook(event: &str, command: &str, text: &str, texts: &ReminderTexts) -> Reminder {
    Reminder {
        key: format!("hook:{event}:{command}"),
        version: version_of(text),
        source: "hook",
        text: fill(
            &texts.hook,
            &[
                ("event", event),
                ("command", command),
                ("text", text.trim()),
            ],
        ),
    }
}

/// The model made the same call (`tool`, same arguments) `count` times with the same result; the turn
/// stops at `limit`.
pub fn repeated_call(
    turn_id: &str,
    tool: &str,
    count: usize,
    limit: usize,
    texts: &ReminderTexts,
) -> Reminder {
    Reminder {
        key: format!("repeat:{turn_id}:{tool}:{count}"),
        version: String::new(),
        source: "loop",
        text: fill(
            &texts.repeated_call,
            &[
                ("tool", tool),
                ("count", &count.to_string()),
                ("limit", &limit.to_string()),
            ],
        ),
    }
}

/// (6) What the model must know of the session's mode (`approval::POLICIES`): in plan mode
/// the plan-mode text (`prompts/plan_mode.md`), once each time the session enters it and
/// again after each compaction (a summary may drop the first); after leaving plan mode,
/// once, the mode it left for (`plan_mode_left.md`). None in a session never in plan mode,
/// so its requests do not change. `shown` is the session's shown keys, `compactions` its
/// compaction count.
pub fn mode(
    mode: &str,
    shown: &BTreeMap<String, String>,
    compactions: u32,
    prompts: &Prompts,
) -> Option<Reminder> {
    let reminder = |version: String, text: String| Reminder {
        key: "mode".into(),
        version,
        source: "mode",
        text,
    };
    if mode == crate::approval::PLAN {
        return Some(reminder(
            format!("{mode}:{compactions}"),
            prompts.plan_mode.clone(),
        ));
    }
    let planned = shown
        .get("mode")
        .is_some_and(|version| version.starts_with(crate::approval::PLAN));
    planned.then(|| {
        reminder(
            mode.to_string(),
            fill(&prompts.plan_mode_left, &[("mode", mode)]),
        )
    })
}

/// A Stop hook's reason to go on: one per turn.
pub fn stop_continue(turn_id: &str, reason: &str, texts: &ReminderTexts) -> Reminder {
    Reminder {
        key: format!("stop:{turn_id}"),
        version: String::new(),
        source: "hook",
        text: fill(&texts.stop_hook, &[("reason", reason.trim())]),
    }
}

/// Words of a request that asks for files to change (`asks_for_change`).
const CHANGE_WORDS: [&str; 14] = [
    "implement",
    "modify",
    "fix",
    "change",
    "add",
    "write",
    "create",
    "refactor",
    "update",
    "rename",
    "remove",
    "delete",
    "edit",
    "solve",
];

/// Whether a request asks for files to change: one of `CHANGE_WORDS` as a word. A rough
/// reading, which is why `unfinished_change` costs at most one more model call a turn.
pub fn asks_for_change(request: &str) -> bool {
    request
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| CHANGE_WORDS.contains(&word))
}

/// (7) The model ends a turn whose request asked for a change (`asks_for_change`) having
/// changed no file (`reminders.unfinishedChange`): once a turn, the turn goes on with this.
/// A small model often reads the file it was asked to change and then answers with a
/// sentence instead of the change.
pub fn unfinished_change(
    turn_id: &str,
    request: &str,
    files_changed: usize,
    form: ChangeForm,
    texts: &ReminderTexts,
) -> Option<Reminder> {
    (files_changed == 0 && asks_for_change(request)).then(|| Reminder {
        key: format!("unfinished:{turn_id}"),
        version: String::new(),
        source: "loop",
        text: match form {
            ChangeForm::Calls => texts.unfinished_change.clone(),
            ChangeForm::Listings => texts.unfinished_change_listing.clone(),
        },
    })
}

/// How the model changes a file, which a reminder to change one names: by `write_file` and
/// `edit_file` calls, or by a file listing in its reply (`tools.fileListings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeForm {
    Calls,
    Listings,
}

/// How many times a turn `failing_check` makes it go on: enough for a small model to try
/// two more fixes, bounded so a check it cannot pass does not hold the turn.
pub const FAILING_CHECK_REMINDERS: usize = 2;

/// (9) The model ends a turn while the check after its last change fails
/// (`reminders.failingCheck`): the turn goes on with this, `given` times already. A small
/// model reads the failure in the change's result and answers "done" anyway.
pub fn failing_check(
    turn_id: &str,
    last_check_failed: bool,
    given: usize,
    form: ChangeForm,
    texts: &ReminderTexts,
) -> Option<Reminder> {
    (last_check_failed && given < FAILING_CHECK_REMINDERS).then(|| Reminder {
        key: format!("failing-check:{turn_id}:{given}"),
        version: String::new(),
        source: "loop",
        text: match form {
            ChangeForm::Calls => texts.failing_check.clone(),
            ChangeForm::Listings => texts.failing_check_listing.clone(),
        },
    })
}

/// The sampling temperature of a fresh attempt: the first is greedy for a small model,
/// and greedy again it would write the same file.
pub const FRESH_ATTEMPT_TEMPERATURE: f64 = 0.7;

/// The end of a failed check's report a fresh attempt is told of.
const FRESH_ATTEMPT_REPORT_CHARS: usize = 1_500;

/// (10) A fresh attempt at a change (`tools.fileListings`): a model that lists files and
/// whose listing failed the check is asked again without its failed attempt in the request
/// (the turn's entries after `base`, the user's message, are left out of it) and told how
/// it failed, sampled at [`FRESH_ATTEMPT_TEMPERATURE`]. Shown its own failed file, the 1.5B
/// local model wrote it again unchanged (replayed: two samples of three at temperature 1).
/// The reminder names the file (`path`): left with no listing in view but its prompt's
/// example, the model listed the example's file instead. The request's entries:
/// `entries[..base]`, then the reminder. The history keeps it all.
pub fn fresh_attempt(
    entries: &[crate::history::Entry],
    base: usize,
    path: &str,
    report: &str,
    texts: &ReminderTexts,
) -> (Vec<crate::history::Entry>, Reminder) {
    let start = report
        .char_indices()
        .rev()
        .nth(FRESH_ATTEMPT_REPORT_CHARS)
        .map_or(0, |(at, _)| at);
    let reminder = Reminder {
        key: String::new(),
        version: String::new(),
        source: "loop",
        text: fill(
            &texts.fresh_attempt,
            &[("path", path), ("report", report[start..].trim())],
        ),
    };
    (entries[..base.min(entries.len())].to_vec(), reminder)
}

/// Entries per message that `memory_recalled` brings back.
pub const MEMORY_RECALLED_PER_MESSAGE: usize = 3;

/// (8) The memory entries left out of the memory block that `message` names
/// (`memory::recall`): each once a session, as the agent's note, with who wrote it.
pub fn memory_recalled(
    left_out: &[(memory::Scope, memory::Entry)],
    message: &str,
    texts: &ReminderTexts,
) -> Vec<Reminder> {
    memory::recall(left_out, message, MEMORY_RECALLED_PER_MESSAGE)
        .into_iter()
        .map(|(scope, entry)| Reminder {
            key: format!("memory:{}", version_of(&entry.text)),
            version: String::new(),
            source: "memory",
            text: fill(
                &texts.memory_recalled,
                &[
                    ("scope", scope.name()),
                    ("author", entry.author.name()),
                    ("fact", &entry.text),
                ],
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Entry;

    #[test]
    fn a_turn_that_asked_for_a_change_and_made_none_is_reminded() {
        let texts = texts();
        let ask = "Use the above instructions to modify the supplied files: bob.py";
        assert!(unfinished_change("t1", ask, 0, ChangeForm::Calls, &texts).is_some());
        assert!(unfinished_change("t1", ask, 1, ChangeForm::Calls, &texts).is_none());
        assert!(unfinished_change(
            "t1",
            "What does server/src/main.rs do?",
            0,
            ChangeForm::Calls,
            &texts
        )
        .is_none());
    }

    #[test]
    fn a_turn_ending_on_a_failing_check_goes_on_twice_at_most() {
        let texts = crate::prompts::Prompts::builtin().reminders;
        let first = failing_check("t1", true, 0, ChangeForm::Calls, &texts).unwrap();
        let second = failing_check("t1", true, 1, ChangeForm::Listings, &texts).unwrap();
        assert_ne!(first.key, second.key);
        assert!(first.text.contains("fails"));
        // To a model that lists files, the reminder asks for a listing, not a call.
        assert!(first.text.contains("write_file") && !second.text.contains("write_file"));
        assert!(second.text.contains("fenced block"));
        assert!(failing_check(
            "t1",
            true,
            FAILING_CHECK_REMINDERS,
            ChangeForm::Calls,
            &texts
        )
        .is_none());
        assert!(failing_check("t1", false, 0, ChangeForm::Calls, &texts).is_none());
        // A fresh attempt leaves the failed one out and says how it failed, its end only.
        let entries: Vec<Entry> = ["ask", "first try", "its result"]
            .iter()
            .map(|text| Entry {
                item: crate::history::Item::User {
                    text: text.to_string(),
                    context: None,
                },
                tokens: 1,
            })
            .collect();
        let report = format!("{}E   assert 1 == 2", "x".repeat(5_000));
        let (view, reminder) = fresh_attempt(&entries, 1, "camicia.py", &report, &texts);
        assert_eq!(view, entries[..1]);
        assert!(reminder.text.contains("E   assert 1 == 2"));
        assert!(
            reminder.text.contains("Write camicia.py again"),
            "{}",
            reminder.text
        );
        assert!(reminder.text.len() < 2_000);
        // Words, not parts of words: "prefix" is no "fix", "address" no "add".
        assert!(!asks_for_change("What is the prefix of this address?"));
        assert!(asks_for_change("Please fix the failing test."));
    }
    use expect_test::expect;

    fn texts() -> ReminderTexts {
        Prompts::builtin().reminders
    }

    #[test]
    fn every_risky_rule_has_a_warning_and_each_fires_once_on_added_lines() {
        let texts = texts();
        for (name, pattern) in RISKY {
            assert!(texts.risky.contains_key(*name), "{name} has no warning");
            regex::Regex::new(pattern).unwrap();
        }
        assert_eq!(texts.risky.len(), RISKY.len());
        let diff = "--- a/x.py\n+++ b/x.py\n-eval(old)\n+x = eval(data)\n+y = eval(more)\n+rows = db.execute(\"SELECT * FROM t WHERE id = %s\" % uid)\n+obj = pickle.loads(blob)\n re.exec(y)\n";
        let keys: Vec<String> = risky(diff, &texts).into_iter().map(|r| r.key).collect();
        expect![[r#"
            [
                "risky:eval",
                "risky:pickle",
                "risky:sql_string_format",
            ]
        "#]]
        .assert_debug_eq(&keys);
        // Removed or context lines, and method calls named exec, are not new code.
        assert!(risky("-unsafe { x }\n regex.exec(s)\n+let a = 1;\n", &texts).is_empty());
        assert_eq!(
            risky("+    let p = unsafe { &*ptr };\n", &texts)[0].key,
            "risky:unsafe_block"
        );
        assert_eq!(
            risky("+child_process.exec(cmd)\n", &texts)[0].key,
            "risky:child_process_exec"
        );
    }

    #[test]
    fn due_drops_what_was_shown_unless_its_version_changed() {
        let settings = ReminderSettings::default();
        let texts = texts();
        let a = from_hook("UserPromptSubmit", "ctx.sh", "use tabs", &texts);
        let b = from_hook("UserPromptSubmit", "ctx.sh", "use spaces", &texts);
        let mut shown = BTreeMap::new();
        assert_eq!(due(&shown, &settings, vec![a.clone(), a.clone()]).len(), 1);
        shown.insert(a.key.clone(), a.version.clone());
        assert!(due(&shown, &settings, vec![a.clone()]).is_empty());
        assert_eq!(due(&shown, &settings, vec![b]).len(), 1);
        let off = ReminderSettings {
            risky: false,
            ..ReminderSettings::default()
        };
        let risky = risky("+eval(x)\n", &texts);
        assert!(due(&BTreeMap::new(), &off, risky).is_empty());
    }

    #[test]
    fn plan_mode_is_told_on_entry_and_after_a_compaction_and_leaving_it_once() {
        let prompts = Prompts::builtin();
        let settings = ReminderSettings::default();
        let mut shown = BTreeMap::new();
        // Never in plan mode: nothing is said, so the requests stay as they were.
        assert_eq!(mode("ask", &shown, 0, &prompts), None);
        let step = |policy: &str, compactions: u32, shown: &mut BTreeMap<String, String>| {
            let due = due(
                shown,
                &settings,
                mode(policy, shown, compactions, &prompts)
                    .into_iter()
                    .collect(),
            );
            for reminder in &due {
                shown.insert(reminder.key.clone(), reminder.version.clone());
            }
            due.into_iter().map(|r| r.text).collect::<Vec<_>>()
        };
        let entered = step("plan", 0, &mut shown);
        assert_eq!(entered.len(), 1);
        assert_eq!(entered[0], prompts.plan_mode);
        assert!(
            entered[0].starts_with("You are in plan mode"),
            "{entered:?}"
        );
        assert!(step("plan", 0, &mut shown).is_empty(), "once per entry");
        assert_eq!(
            step("plan", 1, &mut shown).len(),
            1,
            "again after a compaction"
        );
        let left = step("auto-edit", 1, &mut shown);
        assert_eq!(left.len(), 1);
        assert!(left[0].contains("now in auto-edit mode"), "{left:?}");
        assert!(step("auto-edit", 1, &mut shown).is_empty(), "told once");
        assert!(
            step("full-auto", 1, &mut shown).is_empty(),
            "only leaving plan mode is told"
        );
        assert_eq!(step("plan", 1, &mut shown).len(), 1, "entered again");
        // The text fits a reminder's default budget: it is never cut.
        assert!(
            TokenizerKind::O200kBase.count(&prompts.plan_mode) < settings.max_tokens,
            "plan_mode.md is longer than a reminder's budget"
        );
    }

    #[test]
    fn a_long_reminder_is_cut_and_marked_and_always_wrapped() {
        let prompts = Prompts::builtin();
        let long = "word ".repeat(2000);
        let reminder = from_hook("SessionStart", "big.sh", &long, &prompts.reminders);
        let text = render(&reminder, &prompts, TokenizerKind::O200kBase, 50);
        assert!(text
            .starts_with("<agentls_reminder source=\"hook\">\nThis reminder comes from agentls"));
        assert!(text.ends_with("</agentls_reminder>"));
        assert!(text.contains("truncated"), "{text}");
        assert!(TokenizerKind::O200kBase.count(&text) < 120);
    }

    #[test]
    fn agents_md_changes_list_the_lines() {
        let r = agents_md_changed(
            "## AGENTS.md\nUse tabs.",
            "## AGENTS.md\nUse spaces.",
            &texts(),
        )
        .unwrap();
        expect![[r#"
            The AGENTS.md instructions changed during this session; the instructions above are the current ones. What changed:
            - Use tabs.
            + Use spaces."#]]
        .assert_eq(&r.text);
        assert!(agents_md_changed("same", "same", &texts()).is_none());
    }

    #[test]
    fn the_plan_reminder_counts_tool_rounds_since_update_plan() {
        let mut history = History::new(TokenizerKind::O200kBase);
        let push = |h: &mut History, item: Item| h.push_recorded(Entry { item, tokens: 1 });
        let call = |name: &str| Item::ToolCall {
            call_id: name.into(),
            name: name.into(),
            arguments: "{}".into(),
        };
        let output = |name: &str| Item::ToolOutput {
            call_id: name.into(),
            name: name.into(),
            content: "ok".into(),
            success: true,
        };
        push(&mut history, call("update_plan"));
        push(&mut history, output("update_plan"));
        for _ in 0..3 {
            push(&mut history, Item::Assistant { text: "x".into() });
            push(&mut history, call("read_file"));
            push(&mut history, output("read_file"));
        }
        let plan = vec![PlanEntry {
            content: "fix it".into(),
            status: "in_progress".into(),
        }];
        assert!(plan_stale(&plan, &history, "update_plan", 4, &texts()).is_none());
        let r = plan_stale(&plan, &history, "update_plan", 3, &texts()).unwrap();
        assert_eq!(r.key, "plan:fix it");
        assert!(r.text.contains("3 tool rounds"), "{}", r.text);
        let done = vec![PlanEntry {
            content: "fix it".into(),
            status: "completed".into(),
        }];
        assert!(plan_stale(&done, &history, "update_plan", 1, &texts()).is_none());
    }
}
