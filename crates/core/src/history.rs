//! The conversation as a provider-neutral list of items, with each item's token count
//! computed once when it is recorded, and the invariants every request relies on.
//!
//! Invariants of what reaches a provider (enforced by [`normalize`], the one place, which
//! every request goes through via [`History::prompt_items`]):
//! - every tool call has an output, placed right after the run of calls it belongs to (a
//!   missing one is answered by a synthetic "aborted" output);
//! - no output without its call (orphans and duplicates are dropped);
//! - internal items never reach the model.
//!
//! Pure data: no IO. The session (agent loop) owns a `History` and persists its items.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::prompts::{AbortReason, Prompts};
use crate::tokens::{TokenizerKind, TOKENS_PER_MESSAGE};
use crate::truncate::{truncate_middle, TruncationPolicy};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum InstructionRole {
    System,
    Developer,
    /// A runtime reminder from agentls (`reminders`): its text is already wrapped.
    Reminder,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Item {
    /// Instructions added during the conversation (the static ones are not history).
    Instructions {
        role: InstructionRole,
        text: String,
    },
    /// What the user typed, and the environment and editor context of that turn, rendered
    /// once when the turn began and never changed afterwards (prompt caching relies on it).
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
    },
    Assistant {
        text: String,
    },
    ToolCall {
        call_id: String,
        name: String,
        /// The arguments as the model wrote them (a JSON object's text).
        arguments: String,
    },
    ToolOutput {
        call_id: String,
        /// The tool's name, repeated from its call so the output can be labelled alone.
        name: String,
        content: String,
        success: bool,
    },
    CompactionSummary {
        text: String,
    },
    /// Images the model sees after the message they belong to: the user's message just
    /// before (`call_id` none) or the output of `call_id` (`read_file` of an image). Kept
    /// apart from the message so older logs, and every item without images, are unchanged.
    Images {
        images: Vec<crate::image::Image>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// Bookkeeping that never reaches the model (markers, boundaries).
    Internal {
        marker: String,
    },
}

impl Item {
    pub fn reaches_model(&self) -> bool {
        !matches!(self, Item::Internal { .. })
    }

    /// Whether the model sees this as data rather than as direction.
    pub fn is_untrusted(&self) -> bool {
        matches!(self, Item::ToolOutput { .. })
    }
}

/// An item and what it costs in the prompt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub item: Item,
    pub tokens: usize,
}

/// The text the model sees for an item: the single definition both token counting and the
/// provider adapters use, so counts and requests cannot disagree.
pub fn model_text<'a>(item: &'a Item, prompts: &Prompts) -> Cow<'a, str> {
    match item {
        Item::Instructions { role, text } => {
            let tag = match role {
                // Wrapped by `reminders::render` already.
                InstructionRole::Reminder => return Cow::Borrowed(text),
                InstructionRole::System => "system_instructions",
                InstructionRole::Developer => "developer_instructions",
            };
            Cow::Owned(format!("<{tag}>\n{text}\n</{tag}>"))
        }
        Item::User {
            text,
            context: Some(context),
        } => Cow::Owned(if text.is_empty() {
            context.clone()
        } else {
            format!("{context}\n\n{text}")
        }),
        Item::User {
            text,
            context: None,
        } => Cow::Borrowed(text),
        Item::Assistant { text } => Cow::Borrowed(text),
        // What a call costs: its name and its arguments (the framing is in the overhead).
        Item::ToolCall {
            name, arguments, ..
        } => Cow::Owned(format!("{name}{arguments}")),
        Item::ToolOutput {
            name,
            content,
            success,
            ..
        } => Cow::Owned(format!(
            "<tool_output tool=\"{name}\" status=\"{}\">\n{}\n{content}\n</tool_output>",
            if *success { "ok" } else { "failed" },
            prompts.data_boundary
        )),
        Item::CompactionSummary { text } => {
            Cow::Owned(format!("{}\n\n{text}", prompts.summary_prefix))
        }
        // What a text-only view (a summary's input, a count) keeps of an image.
        Item::Images { images, .. } => Cow::Owned(
            images
                .iter()
                .map(crate::image::Image::label)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Item::Internal { .. } => Cow::Borrowed(""),
    }
}

/// Tokens an item adds to a request: its text plus the framing of the message it becomes.
pub fn item_tokens(item: &Item, prompts: &Prompts, tokenizer: TokenizerKind) -> usize {
    if !item.reaches_model() {
        return 0;
    }
    if let Item::Images { images, .. } = item {
        // The provider's formula, computed when the image was checked.
        return images.iter().map(|i| i.tokens).sum::<usize>() + TOKENS_PER_MESSAGE;
    }
    tokenizer.count(&model_text(item, prompts)) + TOKENS_PER_MESSAGE
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    tokenizer: TokenizerKind,
    entries: Vec<Entry>,
    tokens: usize,
}

impl History {
    pub fn new(tokenizer: TokenizerKind) -> History {
        History {
            tokenizer,
            entries: Vec::new(),
            tokens: 0,
        }
    }

    /// A history from entries recorded earlier (a session log), trusting their counts when
    /// they were made with `tokenizer`.
    pub fn from_entries(tokenizer: TokenizerKind, entries: Vec<Entry>) -> History {
        let tokens = entries.iter().map(|e| e.tokens).sum();
        History {
            tokenizer,
            entries,
            tokens,
        }
    }

    pub fn tokenizer(&self) -> TokenizerKind {
        self.tokenizer
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sum of the recorded entries' counts (not normalized: see `prompt_items`).
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Appends an item: a tool output is cut to `policy` first, then the item is counted
    /// once. Returns the recorded entry.
    pub fn record(&mut self, item: Item, policy: TruncationPolicy, prompts: &Prompts) -> &Entry {
        let entry = self.entry_for(item, policy, prompts);
        self.push_recorded(entry);
        self.entries.last().expect("just pushed")
    }

    /// The entry `item` becomes when recorded (cut to `policy` if a tool output, counted),
    /// without recording it: a session writes it to its log first.
    pub fn entry_for(&self, item: Item, policy: TruncationPolicy, prompts: &Prompts) -> Entry {
        let item = match item {
            Item::ToolOutput {
                call_id,
                name,
                content,
                success,
            } => Item::ToolOutput {
                call_id,
                name,
                content: truncate_middle(&content, policy, self.tokenizer).text,
                success,
            },
            other => other,
        };
        let tokens = item_tokens(&item, prompts, self.tokenizer);
        Entry { item, tokens }
    }

    /// Appends an entry made by `entry_for` (or read back from a session log) as it is.
    pub fn push_recorded(&mut self, entry: Entry) {
        self.tokens += entry.tokens;
        self.entries.push(entry);
    }

    /// Recounts every entry, e.g. after the model (and so the tokenizer) changed.
    pub fn retokenize(&mut self, tokenizer: TokenizerKind, prompts: &Prompts) {
        self.tokenizer = tokenizer;
        for entry in &mut self.entries {
            entry.tokens = item_tokens(&entry.item, prompts, tokenizer);
        }
        self.tokens = self.entries.iter().map(|e| e.tokens).sum();
    }

    /// Replaces the whole history (compaction).
    pub fn replace(&mut self, entries: Vec<Entry>) {
        self.tokens = entries.iter().map(|e| e.tokens).sum();
        self.entries = entries;
    }

    /// The entries a request carries: normalized, with synthetic outputs counted.
    pub fn prompt_items(&self, prompts: &Prompts) -> (Vec<Cow<'_, Entry>>, NormalizeReport) {
        let (items, report) = normalize(&self.entries);
        let entries = items
            .into_iter()
            .map(|item| match item {
                Normalized::Recorded(entry) => Cow::Borrowed(entry),
                Normalized::Aborted { call_id, name } => {
                    let item = Item::ToolOutput {
                        call_id,
                        name,
                        content: prompts.aborted(AbortReason::Incomplete),
                        success: false,
                    };
                    let tokens = item_tokens(&item, prompts, self.tokenizer);
                    Cow::Owned(Entry { item, tokens })
                }
            })
            .collect();
        (entries, report)
    }

    /// Applies the normalization to the stored history, so that what was synthesized for a
    /// request is also what the session log says happened.
    pub fn repair(&mut self, prompts: &Prompts) -> NormalizeReport {
        let (entries, report) = self.prompt_items(prompts);
        if report.is_clean() {
            return report;
        }
        let entries = entries.into_iter().map(Cow::into_owned).collect();
        self.replace(entries);
        report
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NormalizeReport {
    /// Calls that got a synthetic "aborted" output.
    pub aborted_calls: Vec<String>,
    /// Outputs dropped: no earlier call with their id, or a second output for one call.
    pub dropped_outputs: Vec<String>,
    /// Outputs moved up to follow their call (something else came between them).
    pub moved_outputs: Vec<String>,
    pub internal_items: usize,
}

impl NormalizeReport {
    /// Nothing had to change for the model (internal items are expected and not a repair).
    pub fn is_clean(&self) -> bool {
        self.aborted_calls.is_empty()
            && self.dropped_outputs.is_empty()
            && self.moved_outputs.is_empty()
    }
}

pub enum Normalized<'a> {
    Recorded(&'a Entry),
    /// A call without an output: answered by the aborted output (`Prompts::aborted`).
    Aborted {
        call_id: String,
        name: String,
    },
}

/// The history as a provider may receive it. Each run of consecutive tool calls is followed
/// by the outputs of those calls in call order (each call's first output recorded after it,
/// or a synthetic aborted output); outputs anywhere else are dropped; internal items go.
pub fn normalize(entries: &[Entry]) -> (Vec<Normalized<'_>>, NormalizeReport) {
    let mut report = NormalizeReport::default();
    // Each call's first output recorded after it.
    let mut call_seen = HashSet::new();
    let mut output_of: HashMap<&str, usize> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        match &entry.item {
            Item::ToolCall { call_id, .. } => {
                call_seen.insert(call_id.as_str());
            }
            Item::ToolOutput { call_id, .. } if call_seen.contains(call_id.as_str()) => {
                output_of.entry(call_id.as_str()).or_insert(index);
            }
            _ => {}
        }
    }
    let mut placed = HashSet::new();
    let mut out = Vec::with_capacity(entries.len());
    let mut index = 0;
    while index < entries.len() {
        let entry = &entries[index];
        match &entry.item {
            Item::ToolCall { .. } => {
                let run_end = entries[index..]
                    .iter()
                    .position(|e| !matches!(e.item, Item::ToolCall { .. }))
                    .map_or(entries.len(), |offset| index + offset);
                let run = &entries[index..run_end];
                out.extend(run.iter().map(Normalized::Recorded));
                let mut expected_position = run_end;
                // A tool's images recorded after its output sit between outputs: not a move.
                let skip_images = |mut at: usize| {
                    while matches!(entries.get(at).map(|e| &e.item), Some(Item::Images { .. })) {
                        at += 1;
                    }
                    at
                };
                for call in run {
                    expected_position = skip_images(expected_position);
                    let Item::ToolCall { call_id, name, .. } = &call.item else {
                        unreachable!("the run holds calls only");
                    };
                    match output_of.get(call_id.as_str()) {
                        Some(&at) if !placed.contains(&at) => {
                            placed.insert(at);
                            if at != expected_position {
                                report.moved_outputs.push(call_id.clone());
                            }
                            expected_position = at + 1;
                            out.push(Normalized::Recorded(&entries[at]));
                        }
                        _ => {
                            report.aborted_calls.push(call_id.clone());
                            out.push(Normalized::Aborted {
                                call_id: call_id.clone(),
                                name: name.clone(),
                            });
                        }
                    }
                }
                index = run_end;
            }
            Item::ToolOutput { call_id, .. } => {
                if !placed.contains(&index) {
                    report.dropped_outputs.push(call_id.clone());
                }
                index += 1;
            }
            Item::Internal { .. } => {
                report.internal_items += 1;
                index += 1;
            }
            _ => {
                out.push(Normalized::Recorded(entry));
                index += 1;
            }
        }
    }
    (out, report)
}

/// Tool-call ids are kept short and plain: what every provider accepts back (Anthropic:
/// `[a-zA-Z0-9_-]+`; OpenAI: at most 40 characters).
const MAX_CALL_ID_CHARS: usize = 40;

/// Session-unique ids for the calls of one model answer. A provider's id is untrusted input:
/// servers that number calls per response (`call_0`, `call_1`) repeat them across turns,
/// and two calls with one id would let one's output answer the other. The provider's id is
/// kept where it is plain and unused (in `history` and among these calls); otherwise it
/// becomes `{id}_{n}` (or `call_{n}`), the first such that is free.
pub fn unique_call_ids(history: &History, proposed: &[String]) -> Vec<String> {
    let mut taken: std::collections::HashSet<String> = history
        .entries()
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolCall { call_id, .. } | Item::ToolOutput { call_id, .. } => {
                Some(call_id.clone())
            }
            _ => None,
        })
        .collect();
    proposed
        .iter()
        .map(|id| {
            let plain: String = id
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .take(MAX_CALL_ID_CHARS - 8)
                .collect();
            let id = if !plain.is_empty() && plain == *id && !taken.contains(&plain) {
                plain
            } else {
                let base = if plain.is_empty() {
                    "call".to_string()
                } else {
                    plain
                };
                (2..)
                    .map(|n| format!("{base}_{n}"))
                    .find(|candidate| !taken.contains(candidate))
                    .expect("an unused id")
            };
            taken.insert(id.clone());
            id
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOK: TokenizerKind = TokenizerKind::O200kBase;

    fn user(text: &str) -> Item {
        Item::User {
            text: text.into(),
            context: None,
        }
    }
    fn call(id: &str) -> Item {
        Item::ToolCall {
            call_id: id.into(),
            name: "read_file".into(),
            arguments: format!("{{\"path\":\"{id}.rs\"}}"),
        }
    }
    fn output(id: &str) -> Item {
        Item::ToolOutput {
            call_id: id.into(),
            name: "read_file".into(),
            content: format!("contents of {id}"),
            success: true,
        }
    }
    fn history(items: Vec<Item>) -> History {
        let prompts = Prompts::builtin();
        let mut history = History::new(TOK);
        for item in items {
            history.record(item, TruncationPolicy::Tokens(10_000), &prompts);
        }
        history
    }
    /// A compact picture of the normalized items: U(text) A(text) C(id) O(id) O!(id) S.
    fn shape(history: &History) -> (Vec<String>, NormalizeReport) {
        let (items, report) = history.prompt_items(&Prompts::builtin());
        let shape = items
            .iter()
            .map(|entry| match &entry.item {
                Item::User { text, .. } => format!("U({text})"),
                Item::Assistant { text } => format!("A({text})"),
                Item::ToolCall { call_id, .. } => format!("C({call_id})"),
                Item::ToolOutput {
                    call_id, content, ..
                } if *content == Prompts::builtin().aborted(AbortReason::Incomplete) => {
                    format!("O!({call_id})")
                }
                Item::ToolOutput { call_id, .. } => format!("O({call_id})"),
                Item::CompactionSummary { .. } => "S".into(),
                Item::Instructions { .. } => "I".into(),
                Item::Images { call_id, .. } => format!("P({})", call_id.as_deref().unwrap_or("")),
                Item::Internal { .. } => "X".into(),
            })
            .collect();
        (shape, report)
    }

    #[test]
    fn a_well_formed_history_is_unchanged() {
        let h = history(vec![
            user("q"),
            Item::Assistant {
                text: "let me look".into(),
            },
            call("a"),
            call("b"),
            output("a"),
            output("b"),
            Item::Assistant {
                text: "done".into(),
            },
        ]);
        let (got, report) = shape(&h);
        assert_eq!(
            got,
            [
                "U(q)",
                "A(let me look)",
                "C(a)",
                "C(b)",
                "O(a)",
                "O(b)",
                "A(done)"
            ]
        );
        assert!(report.is_clean());
    }

    #[test]
    fn every_call_gets_an_output_and_a_missing_one_is_aborted_in_place() {
        let h = history(vec![
            user("q"),
            call("a"),
            call("b"),
            output("b"),
            user("next"),
        ]);
        let (got, report) = shape(&h);
        assert_eq!(got, ["U(q)", "C(a)", "C(b)", "O!(a)", "O(b)", "U(next)"]);
        assert_eq!(report.aborted_calls, ["a"]);
        // A call at the very end (crash mid-tool) is answered too.
        let h = history(vec![user("q"), call("z")]);
        assert_eq!(shape(&h).0, ["U(q)", "C(z)", "O!(z)"]);
    }

    #[test]
    fn no_output_without_its_call() {
        let h = history(vec![
            output("ghost"),
            user("q"),
            call("a"),
            output("a"),
            output("a"),
            output("later"),
            call("later"),
        ]);
        let (got, report) = shape(&h);
        // The output recorded before its call does not answer it.
        assert_eq!(got, ["U(q)", "C(a)", "O(a)", "C(later)", "O!(later)"]);
        assert_eq!(report.dropped_outputs, ["ghost", "a", "later"]);
    }

    fn images(call_id: Option<&str>) -> Item {
        let png = crate::image::test_png(1024, 1024);
        let image = crate::image::check("shot.png", None, &png, crate::image::TokenFormula::OpenAi)
            .unwrap();
        Item::Images {
            images: vec![image],
            call_id: call_id.map(String::from),
        }
    }

    #[test]
    fn a_tools_images_follow_the_outputs_of_its_run_without_a_repair() {
        let h = history(vec![
            user("q"),
            images(None),
            call("a"),
            call("b"),
            output("a"),
            images(Some("a")),
            output("b"),
        ]);
        let (got, report) = shape(&h);
        // Every output of the run first (OpenAI wants them right after the calls), then the
        // images, and the stored history needs no repair.
        assert_eq!(got, ["U(q)", "P()", "C(a)", "C(b)", "O(a)", "O(b)", "P(a)"]);
        assert!(report.is_clean(), "{report:?}");
    }

    #[test]
    fn an_image_costs_its_formula_and_shows_as_its_label() {
        let prompts = Prompts::builtin();
        let item = images(None);
        // 1024x1024 under OpenAI's formula: 765, plus the message's framing.
        assert_eq!(
            item_tokens(&item, &prompts, TokenizerKind::O200kBase),
            765 + TOKENS_PER_MESSAGE
        );
        assert_eq!(model_text(&item, &prompts), "[image: shot.png, 1024x1024]");
        // Old logs (no images) and new ones read alike: the variant is additive.
        let line = serde_json::to_string(&item).unwrap();
        assert!(line.starts_with("{\"type\":\"images\""), "{line}");
        assert_eq!(serde_json::from_str::<Item>(&line).unwrap(), item);
    }

    #[test]
    fn an_output_separated_from_its_call_moves_up_to_it() {
        let h = history(vec![
            call("a"),
            user("typed while the tool ran"),
            output("a"),
        ]);
        let (got, report) = shape(&h);
        assert_eq!(got, ["C(a)", "O(a)", "U(typed while the tool ran)"]);
        assert_eq!(report.moved_outputs, ["a"]);
    }

    #[test]
    fn internal_items_never_reach_the_model_and_cost_nothing() {
        let h = history(vec![
            user("q"),
            Item::Internal {
                marker: "turn-start".into(),
            },
            Item::Assistant { text: "a".into() },
        ]);
        assert_eq!(h.entries()[1].tokens, 0);
        let (got, report) = shape(&h);
        assert_eq!(got, ["U(q)", "A(a)"]);
        assert_eq!(report.internal_items, 1);
        assert!(report.is_clean());
    }

    #[test]
    fn repair_writes_the_normalization_back() {
        let mut h = history(vec![user("q"), call("a"), output("ghost")]);
        let before = h.tokens();
        let report = h.repair(&Prompts::builtin());
        assert_eq!(report.aborted_calls, ["a"]);
        assert_eq!(shape(&h).0, ["U(q)", "C(a)", "O!(a)"]);
        assert!(shape(&h).1.is_clean());
        assert_eq!(
            h.tokens(),
            h.entries().iter().map(|e| e.tokens).sum::<usize>()
        );
        assert_ne!(h.tokens(), before);
    }

    #[test]
    fn tool_outputs_are_truncated_when_recorded_and_counted_once() {
        let prompts = Prompts::builtin();
        let mut h = History::new(TOK);
        h.record(call("big"), TruncationPolicy::Tokens(100), &prompts);
        let long: String = (0..5000).map(|i| format!("row {i}\n")).collect();
        let entry = h
            .record(
                Item::ToolOutput {
                    call_id: "big".into(),
                    name: "shell".into(),
                    content: long,
                    success: true,
                },
                TruncationPolicy::Tokens(100),
                &prompts,
            )
            .clone();
        let Item::ToolOutput { content, .. } = &entry.item else {
            panic!()
        };
        assert!(content.starts_with("Total output lines: 5000\n\nrow 0\n"));
        assert!(content.contains("tokens truncated…"));
        assert!(content.ends_with("row 4999\n"));
        assert_eq!(entry.tokens, item_tokens(&entry.item, &prompts, TOK));
        assert!(entry.tokens < 200, "{}", entry.tokens);
        // A user message is never truncated.
        let text = "x ".repeat(5000);
        h.record(user(&text), TruncationPolicy::Tokens(10), &prompts);
        assert!(matches!(&h.entries()[2].item, Item::User { text: t, .. } if *t == text));
    }

    #[test]
    fn tool_outputs_are_labelled_as_data_and_items_round_trip_through_json() {
        let prompts = Prompts::builtin();
        let item = output("a");
        let text = model_text(&item, &prompts);
        assert!(text.starts_with("<tool_output tool=\"read_file\" status=\"ok\">\n"));
        assert!(text.contains(&prompts.data_boundary));
        let entry = history(vec![call("a")]).entries()[0].clone();
        let json = serde_json::to_string(&entry).unwrap();
        assert!(json.contains("\"type\":\"toolCall\"") && json.contains("\"callId\":\"a\""));
        assert_eq!(serde_json::from_str::<Entry>(&json).unwrap(), entry);
    }

    #[test]
    fn call_ids_are_unique_in_the_session_and_plain() {
        let mut history = History::new(TokenizerKind::O200kBase);
        let prompts = Prompts::builtin();
        for item in [
            Item::ToolCall {
                call_id: "call_0".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
            Item::ToolOutput {
                call_id: "call_0".into(),
                name: "read_file".into(),
                content: "x".into(),
                success: true,
            },
        ] {
            let entry = history.entry_for(item, TruncationPolicy::Tokens(1000), &prompts);
            history.push_recorded(entry);
        }
        let ids = |proposed: &[&str]| {
            let proposed: Vec<String> = proposed.iter().map(|s| s.to_string()).collect();
            unique_call_ids(&history, &proposed)
        };
        assert_eq!(ids(&["call_1", "toolu_01A"]), ["call_1", "toolu_01A"]);
        assert_eq!(
            ids(&["call_0", "call_1"]),
            ["call_0_2", "call_1"],
            "used before"
        );
        assert_eq!(
            ids(&["call_1", "call_1"]),
            ["call_1", "call_1_2"],
            "twice at once"
        );
        assert_eq!(ids(&["", "a b:c"]), ["call_2", "abc_2"], "empty, not plain");
        let long = "x".repeat(100);
        assert!(ids(&[long.as_str()])[0].len() <= MAX_CALL_ID_CHARS);
    }
}
