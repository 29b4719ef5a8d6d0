//! Compaction planning: plain functions from a history (and a summary, when the model wrote
//! one) to the compacted history, with the figures that decide and verify it. This module is
//! the toolkit; [`plan`] makes every decision of a compaction with it. The agent loop does
//! the IO (the summary call, the log) around these.
//!
//! The pipeline: trim old tool outputs to stubs (enough alone when it reaches the target);
//! else summarize, then rebuild: the recent real user messages verbatim (within a budget),
//! the summary as a user message carrying the ledger, and the last full rounds verbatim.
//! When no summary can be had, a rule-based drop (middle, oldest, or the better of the two)
//! makes room instead, still carrying the ledger. Every result is verified: smaller than
//! before, the ledger present, the history invariants intact.

pub mod plan;

use std::ops::Range;
use std::path::PathBuf;

use crate::history::{item_tokens, normalize, Entry, Item};
use crate::prompts::Prompts;
use crate::tokens::TokenizerKind;
use crate::truncate::{truncate_middle, TruncationPolicy};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// The structured handoff with state labels ([Done], [Failed attempt], …).
    Handoff,
    /// Gemini's `<state_snapshot>` XML.
    StateSnapshot,
    /// Codex's checkpoint JSON (`intent_user_message`, `summary`).
    Checkpoint,
}

impl Style {
    pub fn from_name(name: &str) -> Option<Style> {
        match name {
            "handoff" => Some(Style::Handoff),
            "state_snapshot" => Some(Style::StateSnapshot),
            "checkpoint" => Some(Style::Checkpoint),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Style::Handoff => "handoff",
            Style::StateSnapshot => "state_snapshot",
            Style::Checkpoint => "checkpoint",
        }
    }

    /// This style's summary prompt: the custom one (`compaction.promptFile`) when configured.
    pub fn prompt(self, prompts: &Prompts) -> &str {
        if let Some(custom) = &prompts.compact_custom {
            return custom;
        }
        match self {
            Style::Handoff => &prompts.compact_handoff,
            Style::StateSnapshot => &prompts.compact_state_snapshot,
            Style::Checkpoint => &prompts.compact_checkpoint,
        }
    }
}

/// `compaction.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionConfig {
    /// `compaction.auto`: compact by itself at the threshold (manual, model-switch and
    /// overflow compaction happen either way).
    pub auto: bool,
    /// `compaction.threshold`: fill of the usable window (the window less the output
    /// reserve) at which a model call waits for compaction.
    pub threshold: f64,
    /// `compaction.prepareAt`: fill at which a summary is prepared in the background.
    pub prepare_at: f64,
    /// `compaction.targetFill`: the fill a compaction aims for.
    pub target_fill: f64,
    /// `compaction.style`: `handoff`, `state_snapshot` or `checkpoint`.
    pub style: Style,
    /// `compaction.promptFile`: replaces the built-in compaction prompt.
    pub prompt_file: Option<PathBuf>,
    pub keep_tool_rounds: usize,
    pub user_message_budget: usize,
    pub keep_recent_rounds: usize,
    /// `compaction.ledgerMaxTokens`.
    pub ledger_max_tokens: usize,
    /// `compaction.maxSummaryMs`: a summary the provider would take longer to read its
    /// input for (at the prompt speed measured on this session's calls) is not asked for
    /// during a turn: the extractive summary (rule-based drop and ledger) is used instead.
    pub max_summary_ms: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            auto: true,
            threshold: 0.85,
            prepare_at: 0.70,
            target_fill: 0.35,
            style: Style::Handoff,
            prompt_file: None,
            keep_tool_rounds: 3,
            user_message_budget: 20_000,
            keep_recent_rounds: 2,
            max_summary_ms: 120_000,
            ledger_max_tokens: 4_000,
        }
    }
}

/// What a compaction ended up doing (`strategy` of the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Old tool outputs replaced by stubs; nothing summarized.
    Trim,
    /// A model summary (of the configured style).
    Summary,
    MiddleDrop,
    OldestDrop,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Trim => "trim",
            Strategy::Summary => "summary",
            Strategy::MiddleDrop => "middle_drop",
            Strategy::OldestDrop => "oldest_drop",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub keep_tool_rounds: usize,
    pub user_message_budget: usize,
    pub keep_recent_rounds: usize,
    /// Tokens of history the result should fit in.
    pub target_tokens: usize,
    pub ledger_budget: usize,
}

/// The ranges of tool rounds: a run of calls and the outputs that follow it.
pub fn tool_rounds(entries: &[Entry]) -> Vec<Range<usize>> {
    let mut rounds = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        if matches!(entries[i].item, Item::ToolCall { .. }) {
            let start = i;
            while i < entries.len() && matches!(entries[i].item, Item::ToolCall { .. }) {
                i += 1;
            }
            while i < entries.len() && matches!(entries[i].item, Item::ToolOutput { .. }) {
                i += 1;
            }
            rounds.push(start..i);
        } else {
            i += 1;
        }
    }
    rounds
}

/// Where each round starts: a round is a user message, or one model step (an assistant
/// message and/or its run of tool calls with their outputs). Cutting only here keeps every
/// output with its call.
pub fn round_starts(entries: &[Entry]) -> Vec<usize> {
    let mut starts = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &entries[p].item);
        let starts_here = match &entry.item {
            Item::User { .. } | Item::CompactionSummary { .. } | Item::Instructions { .. } => true,
            Item::Assistant { .. } => true,
            Item::ToolCall { .. } => !matches!(
                previous,
                Some(Item::Assistant { .. }) | Some(Item::ToolCall { .. })
            ),
            Item::ToolOutput { .. } | Item::Images { .. } | Item::Internal { .. } => false,
        };
        if starts_here || i == 0 {
            starts.push(i);
        }
    }
    starts
}

/// The stub an old tool output becomes: which call it answered and how much was removed.
fn stub(name: &str, arguments: &str, removed_tokens: usize) -> String {
    let arguments = if arguments.chars().count() > 160 {
        format!("{}…", arguments.chars().take(160).collect::<String>())
    } else {
        arguments.to_string()
    };
    format!(
        "[compacted: the output of {name} {arguments} ({removed_tokens} tokens) was removed; run it again if it is still needed]"
    )
}

fn is_stub(content: &str) -> bool {
    content.starts_with("[compacted: the output of ")
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trimmed {
    pub entries: Vec<Entry>,
    pub outputs_trimmed: usize,
    pub tool_rounds_kept: usize,
}

/// Step 1: tool outputs older than the last `keep` tool rounds become one-line stubs (the
/// call and its output stay, so the invariants hold).
pub fn trim(
    entries: &[Entry],
    keep: usize,
    prompts: &Prompts,
    tokenizer: TokenizerKind,
) -> Trimmed {
    let rounds = tool_rounds(entries);
    let old = rounds.len().saturating_sub(keep);
    let mut out = entries.to_vec();
    let mut trimmed = 0;
    for round in &rounds[..old] {
        for i in round.clone() {
            let Item::ToolOutput {
                call_id,
                name,
                content,
                success,
            } = &out[i].item
            else {
                continue;
            };
            if is_stub(content) {
                continue;
            }
            let arguments = entries[round.clone()]
                .iter()
                .find_map(|e| match &e.item {
                    Item::ToolCall {
                        call_id: id,
                        arguments,
                        ..
                    } if id == call_id => Some(arguments.as_str()),
                    _ => None,
                })
                .unwrap_or("");
            let item = Item::ToolOutput {
                call_id: call_id.clone(),
                name: name.clone(),
                content: stub(name, arguments, out[i].tokens),
                success: *success,
            };
            let tokens = item_tokens(&item, prompts, tokenizer);
            if tokens < out[i].tokens {
                out[i] = Entry { item, tokens };
                trimmed += 1;
            }
        }
    }
    Trimmed {
        entries: out,
        outputs_trimmed: trimmed,
        tool_rounds_kept: rounds.len().min(keep),
    }
}

pub fn tokens_of(entries: &[Entry]) -> usize {
    entries.iter().map(|e| e.tokens).sum()
}

/// Where the kept tail starts: the last `keep_rounds` rounds, fewer when they alone would
/// not leave room (`max_tokens`), but at least the last round.
pub fn kept_tail_start(entries: &[Entry], keep_rounds: usize, max_tokens: usize) -> usize {
    let starts = round_starts(entries);
    let mut start = entries.len();
    for (taken, &candidate) in starts.iter().rev().enumerate() {
        if taken >= keep_rounds {
            break;
        }
        if taken > 0 && tokens_of(&entries[candidate..]) > max_tokens {
            break;
        }
        start = candidate;
    }
    start
}

/// The history's last round (one model step with its calls and outputs, or a user message)
/// with its tool outputs cut head and tail so that the round fits `budget` tokens: what the
/// running turn needs next survives a compaction however large it was. Nothing when the
/// round's other items alone exceed the budget.
pub fn last_round_within(
    entries: &[Entry],
    budget: usize,
    prompts: &Prompts,
    tokenizer: TokenizerKind,
) -> Vec<Entry> {
    let start = round_starts(entries).last().copied().unwrap_or(0);
    let round = &entries[start..];
    let outputs = round
        .iter()
        .filter(|e| matches!(e.item, Item::ToolOutput { .. }))
        .count();
    let others: usize = round
        .iter()
        .filter(|e| !matches!(e.item, Item::ToolOutput { .. }))
        .map(|e| e.tokens)
        .sum();
    if tokens_of(round) <= budget {
        return round.to_vec();
    }
    if outputs == 0 || others >= budget {
        return Vec::new();
    }
    // Each output's share, less what its framing costs (the item's tokens beyond its text).
    let share = (budget - others) / outputs;
    round
        .iter()
        .map(|entry| match &entry.item {
            Item::ToolOutput {
                call_id,
                name,
                content,
                success,
            } if entry.tokens > share => {
                let framing = entry.tokens.saturating_sub(tokenizer.count(content));
                let text = share.saturating_sub(framing + 16).max(1);
                let item = Item::ToolOutput {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content: truncate_middle(content, TruncationPolicy::Tokens(text), tokenizer)
                        .text,
                    success: *success,
                };
                let tokens = item_tokens(&item, prompts, tokenizer);
                Entry { item, tokens }
            }
            _ => entry.clone(),
        })
        .collect()
}

/// The real user messages of `entries` (what the user typed, not the turn's context
/// block), newest first within `budget` tokens, the one crossing it cut to what is left;
/// returned oldest first.
pub fn select_user_messages(
    entries: &[Entry],
    budget: usize,
    tokenizer: TokenizerKind,
) -> Vec<String> {
    let mut selected = Vec::new();
    let mut left = budget;
    for index in (0..entries.len()).rev() {
        let Some(text) = user_text_with_images(entries, index) else {
            continue;
        };
        let text = &text;
        if text.trim().is_empty() || selected.contains(text) {
            continue;
        }
        if left == 0 {
            break;
        }
        let tokens = tokenizer.count(text);
        if tokens <= left {
            selected.push(text.clone());
            left -= tokens;
        } else {
            let cut = truncate_middle(text, TruncationPolicy::Tokens(left), tokenizer).text;
            selected.push(cut);
            break;
        }
    }
    selected.reverse();
    selected
}

/// The user's message at `index` as compaction keeps it: its text, and the labels of the
/// images that came with it (`[image: NAME, WxH]`, one a line), so a rebuilt history still
/// says what the user showed. None when `index` is not a user message.
fn user_text_with_images(entries: &[Entry], index: usize) -> Option<String> {
    let Item::User { text, .. } = &entries[index].item else {
        return None;
    };
    match entries.get(index + 1).map(|e| &e.item) {
        Some(Item::Images {
            images,
            call_id: None,
        }) => {
            let mut text = text.clone();
            for image in images {
                text.push('\n');
                text.push_str(&image.label());
            }
            Some(text)
        }
        _ => Some(text.clone()),
    }
}

/// What a summarizer reads of `entries`: each image becomes its `[image: NAME, WxH]` line
/// (a user message), its bytes dropped, so a summary request costs text only and the
/// summary can still say what was shown.
pub fn without_image_bytes(
    entries: &[Entry],
    prompts: &Prompts,
    tokenizer: TokenizerKind,
) -> Vec<Entry> {
    entries
        .iter()
        .map(|entry| match &entry.item {
            Item::Images { .. } => {
                let item = Item::User {
                    text: crate::history::model_text(&entry.item, prompts).into_owned(),
                    context: None,
                };
                let tokens = item_tokens(&item, prompts, tokenizer);
                Entry { item, tokens }
            }
            _ => entry.clone(),
        })
        .collect()
}

/// The text of the summary item: the summary (or the fallback's note) and the ledger.
pub fn summary_text(summary: &str, ledger: &str) -> String {
    let summary = summary.trim();
    if ledger.is_empty() {
        summary.to_string()
    } else {
        format!("{summary}\n\n{ledger}")
    }
}

/// Step 3: the compacted history: preserved user messages, the summary item, the tail.
pub fn rebuild(
    user_messages: &[String],
    summary_item_text: String,
    tail: &[Entry],
    prompts: &Prompts,
    tokenizer: TokenizerKind,
) -> Vec<Entry> {
    let tail_users: Vec<String> = (0..tail.len())
        .filter_map(|index| user_text_with_images(tail, index))
        .collect();
    let mut out = Vec::new();
    for text in user_messages {
        // A message the kept tail holds anyway is not repeated.
        if tail_users.contains(text) {
            continue;
        }
        let item = Item::User {
            text: text.clone(),
            context: None,
        };
        let tokens = item_tokens(&item, prompts, tokenizer);
        out.push(Entry { item, tokens });
    }
    let item = Item::CompactionSummary {
        text: summary_item_text,
    };
    let tokens = item_tokens(&item, prompts, tokenizer);
    out.push(Entry { item, tokens });
    out.extend(
        tail.iter()
            .filter(|e| !matches!(e.item, Item::CompactionSummary { .. }))
            .cloned(),
    );
    out
}

/// Step 4: why a result must be discarded, if it must.
pub fn verify(before_tokens: usize, after: &[Entry], ledger: &str) -> Result<(), String> {
    let after_tokens = tokens_of(after);
    if after_tokens >= before_tokens {
        return Err(format!(
            "the result is not smaller ({after_tokens} tokens after, {before_tokens} before)"
        ));
    }
    if !ledger.is_empty() {
        let carried = after.iter().any(|e| match &e.item {
            Item::CompactionSummary { text } => text.contains(ledger),
            _ => false,
        });
        if !carried {
            return Err("the ledger is missing from the result".into());
        }
    }
    let (_, report) = normalize(after);
    if !report.is_clean() {
        return Err(format!(
            "the result breaks the history invariants: {report:?}"
        ));
    }
    Ok(())
}

/// The history to summarize when the full one does not fit the summarizer: the oldest
/// `drop` rounds removed (cut at a round start, so no output loses its call).
pub fn drop_oldest_rounds(entries: &[Entry], drop: usize) -> &[Entry] {
    let starts = round_starts(entries);
    match starts.get(drop) {
        Some(&start) => &entries[start..],
        None => &entries[entries.len()..],
    }
}

/// The summary the model wrote, made usable for `style`: a checkpoint must be the JSON
/// object of its schema (then rendered as text); the others must not be empty.
pub fn parse_summary(style: Style, answer: &str) -> Result<String, String> {
    let answer = answer.trim();
    if answer.is_empty() {
        return Err("the summary is empty".into());
    }
    match style {
        Style::Handoff | Style::StateSnapshot => Ok(answer.to_string()),
        Style::Checkpoint => {
            // Models wrap JSON in fences despite being told not to.
            let json = answer
                .strip_prefix("```json")
                .or_else(|| answer.strip_prefix("```"))
                .and_then(|rest| rest.trim_end().strip_suffix("```"))
                .unwrap_or(answer)
                .trim();
            let value: serde_json::Value = serde_json::from_str(json)
                .map_err(|e| format!("the checkpoint is not JSON: {e}"))?;
            let intent = value["intent_user_message"]
                .as_str()
                .ok_or("the checkpoint has no intent_user_message string")?;
            let summary = value["summary"]
                .as_str()
                .ok_or("the checkpoint has no summary string")?;
            Ok(format!("## Intent\n{intent}\n\n## Summary\n{summary}"))
        }
    }
}

/// A rule-based compaction (no model): the strategy, and the entries it keeps before and
/// after the dropped part.
#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    pub strategy: Strategy,
    pub head: Vec<Entry>,
    pub tail: Vec<Entry>,
    pub dropped_items: usize,
}

/// Seed 001's score: token reduction weighs 0.6, message retention 0.4.
pub fn efficiency(
    before_tokens: usize,
    after_tokens: usize,
    before_items: usize,
    after_items: usize,
) -> f64 {
    let reduction = 1.0 - after_tokens as f64 / before_tokens.max(1) as f64;
    let retention = after_items as f64 / before_items.max(1) as f64;
    reduction * 0.6 + retention * 0.4
}

/// Middle drop keeps the head (the task's framing) and the tail (the current work); oldest
/// drop keeps only the newest rounds. Both cut at round starts and fit `target` tokens
/// (less `reserve` for the summary item) when they can; the better by `efficiency` wins,
/// with the decision table of seed 001 breaking the obvious cases.
pub fn rule_based(entries: &[Entry], target: usize, reserve: usize) -> Dropped {
    let budget = target.saturating_sub(reserve);
    let starts = round_starts(entries);
    let total = tokens_of(entries);
    // Oldest drop: the longest suffix that fits (at least the last round).
    let mut oldest_start = *starts.last().unwrap_or(&0);
    for &start in starts.iter().rev() {
        if tokens_of(&entries[start..]) > budget {
            break;
        }
        oldest_start = start;
    }
    let oldest = Dropped {
        strategy: Strategy::OldestDrop,
        head: Vec::new(),
        tail: entries[oldest_start..].to_vec(),
        dropped_items: oldest_start,
    };
    // Middle drop: the first round (the task's statement) and the longest suffix that fits
    // beside it.
    let head_end = starts.get(1).copied().unwrap_or(entries.len());
    let head_tokens = tokens_of(&entries[..head_end]);
    let mut middle_start = entries.len();
    for &start in starts.iter().rev() {
        if start < head_end || tokens_of(&entries[start..]) + head_tokens > budget {
            break;
        }
        middle_start = start;
    }
    if middle_start == entries.len() {
        middle_start = (*starts.last().unwrap_or(&0)).max(head_end);
    }
    let middle = Dropped {
        strategy: Strategy::MiddleDrop,
        head: entries[..head_end].to_vec(),
        tail: entries[middle_start..].to_vec(),
        dropped_items: middle_start - head_end,
    };
    // Seed 001's table: a light compaction of a short dialogue, or a tail that dominates
    // the tokens, keeps head and tail; a heavy one of a very long dialogue keeps the newest.
    let heavy = total > 0 && (budget as f64) < 0.3 * total as f64;
    let long = starts.len() > 40;
    let recent_dominates = tokens_of(&entries[*starts.last().unwrap_or(&0)..]) * 2 > total;
    if middle.dropped_items == 0 || (heavy && long && !recent_dominates) {
        return oldest;
    }
    if !heavy && !long || recent_dominates {
        return middle;
    }
    let score = |d: &Dropped| {
        let kept = d.head.len() + d.tail.len();
        efficiency(
            total,
            tokens_of(&d.head) + tokens_of(&d.tail),
            entries.len(),
            kept,
        )
    };
    if score(&middle) >= score(&oldest) {
        middle
    } else {
        oldest
    }
}

/// The fill at which compaction triggers, as tokens: `threshold` of the window less the
/// output reserved for the answer.
pub fn usable_window(context_window: usize, max_output_tokens: Option<usize>) -> usize {
    let reserved = max_output_tokens.unwrap_or(4096).min(context_window / 4);
    context_window.saturating_sub(reserved)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn entry(item: Item) -> Entry {
        let tokens = item_tokens(&item, &Prompts::builtin(), TokenizerKind::O200kBase);
        Entry { item, tokens }
    }

    pub(super) fn user(text: &str) -> Entry {
        entry(Item::User {
            text: text.into(),
            context: Some("<environment_context/>".into()),
        })
    }

    pub(super) fn assistant(text: &str) -> Entry {
        entry(Item::Assistant { text: text.into() })
    }

    #[test]
    fn a_summary_reads_an_images_label_not_its_bytes() {
        let prompts = Prompts::builtin();
        let png = crate::image::test_png(800, 600);
        let image =
            crate::image::check("bug.png", None, &png, crate::image::TokenFormula::Anthropic)
                .unwrap();
        let entries = vec![
            user("what is wrong here?"),
            entry(Item::Images {
                images: vec![image],
                call_id: None,
            }),
            assistant("the button overlaps"),
        ];
        let input = without_image_bytes(&entries, &prompts, TokenizerKind::O200kBase);
        let text: Vec<String> = input
            .iter()
            .map(|e| crate::history::model_text(&e.item, &prompts).into_owned())
            .collect();
        assert!(
            text.contains(&"[image: bug.png, 800x600]".to_string()),
            "{text:?}"
        );
        assert!(
            !format!("{input:?}").contains("iVBORw0KGgo"),
            "no bytes are left"
        );
        // The image never starts a round: a cut keeps it with its message.
        assert_eq!(round_starts(&entries), [0, 2]);
        // A rebuilt history keeps the user's message with the image's label.
        assert_eq!(
            select_user_messages(&entries, 1000, TokenizerKind::O200kBase),
            ["what is wrong here?\n[image: bug.png, 800x600]"]
        );
    }

    pub(super) fn call(id: &str, path: &str) -> Entry {
        entry(Item::ToolCall {
            call_id: id.into(),
            name: "read_file".into(),
            arguments: format!("{{\"path\":\"{path}\"}}"),
        })
    }

    pub(super) fn output(id: &str, text: &str) -> Entry {
        entry(Item::ToolOutput {
            call_id: id.into(),
            name: "read_file".into(),
            content: text.into(),
            success: true,
        })
    }

    /// A session of `turns` turns, each: user, assistant, two calls, two long outputs.
    pub(super) fn session(turns: usize) -> Vec<Entry> {
        let mut entries = Vec::new();
        for t in 0..turns {
            entries.push(user(&format!("request {t}: fix module {t}")));
            entries.push(assistant(&format!("Looking at module {t}.")));
            entries.push(call(&format!("a{t}"), &format!("src/m{t}.rs")));
            entries.push(call(&format!("b{t}"), &format!("src/n{t}.rs")));
            entries.push(output(
                &format!("a{t}"),
                &"fn body() { work(); }\n".repeat(60),
            ));
            entries.push(output(&format!("b{t}"), &"let x = compute();\n".repeat(60)));
            entries.push(assistant(&format!("Module {t} is fixed.")));
        }
        entries
    }

    #[test]
    fn rounds_never_separate_an_output_from_its_call() {
        let entries = session(2);
        assert_eq!(tool_rounds(&entries), [2..6, 9..13]);
        assert_eq!(round_starts(&entries), [0, 1, 6, 7, 8, 13]);
    }

    #[test]
    fn trim_stubs_old_outputs_and_keeps_the_last_rounds() {
        let prompts = Prompts::builtin();
        let entries = session(5);
        let trimmed = trim(&entries, 3, &prompts, TokenizerKind::O200kBase);
        assert_eq!(trimmed.outputs_trimmed, 4);
        assert_eq!(trimmed.tool_rounds_kept, 3);
        assert!(tokens_of(&trimmed.entries) < tokens_of(&entries));
        let Item::ToolOutput { content, .. } = &trimmed.entries[4].item else {
            panic!()
        };
        assert!(
            content.starts_with("[compacted: the output of read_file {\"path\":\"src/m0.rs\"}"),
            "{content}"
        );
        assert_eq!(
            trimmed.entries[4 + 14].item,
            entries[4 + 14].item,
            "round 3 of 5 is kept"
        );
        // Trimming again changes nothing.
        let again = trim(&trimmed.entries, 3, &prompts, TokenizerKind::O200kBase);
        assert_eq!(again.outputs_trimmed, 0);
        assert!(verify(tokens_of(&entries), &trimmed.entries, "").is_ok());
    }

    #[test]
    fn user_messages_are_kept_newest_first_within_the_budget() {
        let mut entries = session(3);
        entries.push(user(&"word ".repeat(500)));
        let all = select_user_messages(&entries, 100_000, TokenizerKind::O200kBase);
        assert_eq!(all.len(), 4);
        assert_eq!(all[0], "request 0: fix module 0");
        let some = select_user_messages(&entries, 300, TokenizerKind::O200kBase);
        assert_eq!(
            some.len(),
            1,
            "the long newest message crosses the budget and is cut"
        );
        assert!(some[0].contains("tokens truncated"));
    }

    #[test]
    fn rebuild_puts_users_then_summary_with_ledger_then_the_tail() {
        let prompts = Prompts::builtin();
        let entries = session(4);
        let tail_start = kept_tail_start(&entries, 2, 100_000);
        assert_eq!(
            tail_start,
            entries.len() - 6,
            "two rounds: the last step with its calls, and the answer"
        );
        let users = select_user_messages(&entries[..tail_start], 20_000, TokenizerKind::O200kBase);
        let ledger = "<ledger>\n## Files modified\n- src/m3.rs\n</ledger>";
        let rebuilt = rebuild(
            &users,
            summary_text("[Done] modules 0-3", ledger),
            &entries[tail_start..],
            &prompts,
            TokenizerKind::O200kBase,
        );
        let kinds: Vec<&str> = rebuilt
            .iter()
            .map(|e| match &e.item {
                Item::User { .. } => "user",
                Item::CompactionSummary { .. } => "summary",
                Item::ToolCall { .. } => "call",
                Item::ToolOutput { .. } => "output",
                Item::Assistant { .. } => "assistant",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user",
                "user",
                "user",
                "user",
                "summary",
                "assistant",
                "call",
                "call",
                "output",
                "output",
                "assistant"
            ]
        );
        assert!(verify(tokens_of(&entries), &rebuilt, ledger).is_ok());
        // A tail cut inside a round would orphan outputs: verify refuses it.
        let orphaned = rebuild(
            &users,
            summary_text("s", ledger),
            &entries[entries.len() - 2..],
            &prompts,
            TokenizerKind::O200kBase,
        );
        assert!(verify(tokens_of(&entries), &orphaned, ledger)
            .unwrap_err()
            .contains("invariants"));
        assert!(
            verify(tokens_of(&entries), &rebuilt, "<ledger>other</ledger>")
                .unwrap_err()
                .contains("ledger")
        );
        assert!(verify(1, &rebuilt, ledger)
            .unwrap_err()
            .contains("not smaller"));
    }

    #[test]
    fn checkpoints_must_be_json_of_their_schema() {
        let ok = parse_summary(Style::Checkpoint, "```json\n{\"intent_user_message\": \"fix it\", \"summary\": \"RESUME_AT: tests\"}\n```").unwrap();
        assert!(ok.contains("fix it") && ok.contains("RESUME_AT"));
        assert!(parse_summary(Style::Checkpoint, "Here is a summary").is_err());
        assert!(parse_summary(Style::Checkpoint, "{\"summary\": \"x\"}").is_err());
        assert!(parse_summary(Style::Handoff, "  ").is_err());
    }

    #[test]
    fn rule_based_drops_fit_the_target_and_keep_whole_rounds() {
        let entries = session(10);
        let total = tokens_of(&entries);
        let dropped = rule_based(&entries, total / 3, 50);
        let kept = tokens_of(&dropped.head) + tokens_of(&dropped.tail);
        assert!(kept <= total / 3, "{kept} > {}", total / 3);
        assert!(dropped.dropped_items > 0);
        let mut rebuilt = dropped.head.clone();
        rebuilt.push(entry(Item::CompactionSummary {
            text: "note".into(),
        }));
        rebuilt.extend(dropped.tail.clone());
        assert!(
            verify(total, &rebuilt, "").is_ok(),
            "{:?}",
            dropped.strategy
        );
        // A light compaction of a short dialogue keeps the head: the middle goes.
        let light = rule_based(&session(3), tokens_of(&session(3)) * 3 / 4, 10);
        assert_eq!(light.strategy, Strategy::MiddleDrop);
        assert_eq!(light.head[0].item, session(3)[0].item);
    }

    #[test]
    fn the_usable_window_reserves_the_output() {
        assert_eq!(usable_window(8192, None), 8192 - 2048);
        assert_eq!(usable_window(128_000, None), 128_000 - 4096);
        assert_eq!(usable_window(128_000, Some(16_000)), 112_000);
    }

    #[test]
    fn a_custom_compaction_prompt_replaces_every_style() {
        let prompts = Prompts::builtin();
        assert_eq!(Style::Handoff.prompt(&prompts), prompts.compact_handoff);
        assert_eq!(
            Style::Checkpoint.prompt(&prompts),
            prompts.compact_checkpoint
        );
        let prompts = prompts.with_compact_custom("Summarize.\n\n");
        for style in [Style::Handoff, Style::StateSnapshot, Style::Checkpoint] {
            assert_eq!(style.prompt(&prompts), "Summarize.");
        }
    }
}
