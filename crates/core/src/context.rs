//! Context assembly: the one pure function that decides what the model is sent.
//!
//! Order, stable first, so that a provider's prompt cache keeps hitting from turn to turn:
//! tool definitions; the system message (system prompt, developer instructions, AGENTS.md
//! chain, skills index, repository map); the history, append-only; the newest user message
//! last, carrying the turn's environment and editor context. Nothing before the history
//! changes unless the instructions do: no dates, ids or editor state there.
//!
//! Every figure is a count with the session's tokenizer, made once per text (history items
//! carry theirs, static texts go through a [`CountCache`]), scaled by the provider
//! calibration when there is one.

use std::borrow::Cow;

use crate::editor_context::{EditorContext, OutlineCache};
use crate::environment::Environment;
use crate::history::{Entry, History, Item, NormalizeReport};
use crate::prompts::{Prompts, ToolSpec};
use crate::tokens::{
    Calibration, CountCache, TokenizerKind, REPLY_PRIMING_TOKENS, TOKENS_PER_MESSAGE,
};

/// What assembly remembers between requests: token counts of texts seen before and the
/// outlines of open buffers. Owned by whoever assembles repeatedly (the server, a session).
#[derive(Default)]
pub struct AssemblyCache {
    pub counts: CountCache,
    pub outlines: OutlineCache,
}

/// The instructions of a session: the same for every turn until configuration, prompt
/// files, AGENTS.md or skills change.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StaticContext {
    pub tools: Vec<ToolSpec>,
    pub system_prompt: String,
    pub developer_instructions: Option<String>,
    pub agents_md: Option<AgentsMdInstructions>,
    /// The rendered skills index; empty when the workspace has no skills.
    pub skills_index: String,
    /// The memory block (`memory::render`), heading included; empty when there is none.
    pub memory: String,
    /// The repository map (`repo_map`), heading included; empty when off or when nothing
    /// fits. Last: it is the block most likely to change (when the workspace changes
    /// much), and what precedes it stays cached when it does.
    pub repo_map: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentsMdInstructions {
    /// The directory the chain was collected for (the active file's).
    pub dir: String,
    /// The chain's text (`## path` headers and contents).
    pub text: String,
}

impl AgentsMdInstructions {
    pub fn render(&self) -> String {
        format!(
            "# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n{}\n</INSTRUCTIONS>",
            self.dir, self.text
        )
    }
}

/// The per-turn context: rendered once when the turn begins, then stored with the user's
/// message in the history unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnBlock {
    pub text: String,
    pub environment_tokens: usize,
    pub editor: Option<EditorContext>,
}

pub fn turn_block(
    environment: &Environment,
    editor: Option<EditorContext>,
    tokenizer: TokenizerKind,
    cache: &mut CountCache,
) -> TurnBlock {
    let environment_text = environment.render();
    let environment_tokens = cache.count(tokenizer, &environment_text);
    let mut text = environment_text;
    if let Some(editor) = &editor {
        text.push_str("\n\n");
        text.push_str(&editor.text);
    }
    TurnBlock {
        text,
        environment_tokens,
        editor,
    }
}

/// The user message about to be sent: what they typed and the turn's context.
#[derive(Debug, Clone, Copy)]
pub struct Pending<'a> {
    pub text: &'a str,
    pub block: &'a TurnBlock,
}

impl Pending<'_> {
    /// The history item this message becomes when the turn is recorded.
    pub fn item(&self) -> Item {
        Item::User {
            text: self.text.to_string(),
            context: Some(self.block.text.clone()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AssemblyConfig {
    pub tokenizer: TokenizerKind,
    pub context_window: usize,
    pub calibration: Calibration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    Trusted,
    Untrusted,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Section {
    pub name: &'static str,
    pub tokens: usize,
    pub trust: Trust,
}

/// Section names in request order. Every request reports all of them (0 when absent), so
/// that a breakdown view keeps its rows.
pub const SECTIONS: [(&str, Trust); 13] = [
    ("tools", Trust::Trusted),
    // The MCP servers' tools (`mcp__…`), apart: what the user's servers cost each request.
    ("mcpTools", Trust::Trusted),
    ("system", Trust::Trusted),
    ("developerInstructions", Trust::Trusted),
    ("agentsMd", Trust::Trusted),
    ("skills", Trust::Trusted),
    // Facts kept from earlier sessions: the model's own notes among them, labelled.
    ("memory", Trust::Untrusted),
    // Signatures from the workspace's files: data, whatever they say.
    ("repoMap", Trust::Untrusted),
    ("conversation", Trust::Trusted),
    ("toolOutputs", Trust::Untrusted),
    ("environment", Trust::Trusted),
    ("editor", Trust::Untrusted),
    ("reminders", Trust::Trusted),
];

/// A request in provider-neutral form; the provider adapters turn it into their wire format.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub tools: &'a [ToolSpec],
    /// The system message: system prompt, developer instructions, AGENTS.md, skills, the
    /// repository map.
    pub system: String,
    /// The normalized history, then the pending user message if any.
    pub items: Vec<Cow<'a, Entry>>,
    pub sections: Vec<Section>,
    /// Tokens of the whole request as the provider is expected to count them.
    pub total_tokens: usize,
    /// Always true for a request not yet sent: provider-reported figures come with usage.
    pub estimated: bool,
    pub context_window: usize,
    pub normalize_report: NormalizeReport,
    /// This request's sampling temperature, over the provider's (a fresh attempt samples:
    /// `reminders::fresh_attempt`).
    pub temperature: Option<f64>,
}

impl Request<'_> {
    pub fn fill(&self) -> f64 {
        if self.context_window == 0 {
            return 1.0;
        }
        self.total_tokens as f64 / self.context_window as f64
    }

    /// Number of items that were already in the history (the stable prefix ends after
    /// them): where a provider puts its cache breakpoint.
    pub fn history_len(&self, pending: bool) -> usize {
        self.items.len() - usize::from(pending)
    }
}

/// The system message's text: each present block, in order, separated by a blank line.
pub fn system_text(static_context: &StaticContext) -> String {
    let mut blocks: Vec<Cow<str>> = vec![Cow::Borrowed(static_context.system_prompt.as_str())];
    if let Some(developer) = &static_context.developer_instructions {
        blocks.push(Cow::Owned(format!(
            "# Developer instructions\n\n{developer}"
        )));
    }
    if let Some(agents) = &static_context.agents_md {
        blocks.push(Cow::Owned(agents.render()));
    }
    if !static_context.skills_index.is_empty() {
        blocks.push(Cow::Borrowed(static_context.skills_index.as_str()));
    }
    if !static_context.memory.is_empty() {
        blocks.push(Cow::Borrowed(static_context.memory.as_str()));
    }
    if !static_context.repo_map.is_empty() {
        blocks.push(Cow::Borrowed(static_context.repo_map.as_str()));
    }
    blocks
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| b.as_ref())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Builds the request. Pure: IO (AGENTS.md, skills, buffers) happened before, in the
/// adapters that filled `static_context` and the turn block.
pub fn assemble<'a>(
    config: &AssemblyConfig,
    static_context: &'a StaticContext,
    history: &'a History,
    pending: Option<Pending<'_>>,
    prompts: &Prompts,
    cache: &mut CountCache,
) -> Request<'a> {
    let tokenizer = config.tokenizer;
    let mut raw = SectionCounts::default();
    raw.count_tools(&static_context.tools, tokenizer, cache);
    let system = system_text(static_context);
    raw.count_system(static_context, &system, tokenizer, cache);
    let (mut items, normalize_report) = history.prompt_items(prompts);
    raw.count_history(&items);
    if let Some(pending) = pending {
        items.push(Cow::Owned(raw.count_pending(pending, tokenizer, cache)));
    }
    let sections = raw.calibrated(&config.calibration);
    let total_tokens = sections.iter().map(|s| s.tokens).sum();
    Request {
        tools: &static_context.tools,
        system,
        items,
        sections,
        total_tokens,
        estimated: true,
        context_window: config.context_window,
        normalize_report,
        temperature: None,
    }
}

/// A request's token counts per section, in [`SECTIONS`] order, before calibration.
#[derive(Default)]
struct SectionCounts([usize; SECTIONS.len()]);

impl SectionCounts {
    fn at(&mut self, name: &str) -> &mut usize {
        let index = SECTIONS
            .iter()
            .position(|(n, _)| *n == name)
            .expect("known section");
        &mut self.0[index]
    }

    /// Each tool's JSON, the MCP servers' tools apart.
    fn count_tools(
        &mut self,
        tools: &[ToolSpec],
        tokenizer: TokenizerKind,
        cache: &mut CountCache,
    ) {
        for tool in tools {
            let json = serde_json::to_string(tool).unwrap_or_default();
            let section = if tool.name.starts_with(crate::mcp::names::PREFIX) {
                "mcpTools"
            } else {
                "tools"
            };
            *self.at(section) += cache.count(tokenizer, &json);
        }
    }

    /// The system message is counted whole (exact, joins included); its blocks are counted
    /// for the breakdown and the rest is the system prompt's.
    fn count_system(
        &mut self,
        static_context: &StaticContext,
        system: &str,
        tokenizer: TokenizerKind,
        cache: &mut CountCache,
    ) {
        let system_total = cache.count(tokenizer, system) + TOKENS_PER_MESSAGE;
        let mut blocks = 0;
        if let Some(developer) = &static_context.developer_instructions {
            let n = cache.count(tokenizer, developer);
            *self.at("developerInstructions") = n;
            blocks += n;
        }
        if let Some(agents) = &static_context.agents_md {
            let n = cache.count(tokenizer, &agents.render());
            *self.at("agentsMd") = n;
            blocks += n;
        }
        if !static_context.skills_index.is_empty() {
            let n = cache.count(tokenizer, &static_context.skills_index);
            *self.at("skills") = n;
            blocks += n;
        }
        if !static_context.memory.is_empty() {
            let n = cache.count(tokenizer, &static_context.memory);
            *self.at("memory") = n;
            blocks += n;
        }
        if !static_context.repo_map.is_empty() {
            let n = cache.count(tokenizer, &static_context.repo_map);
            *self.at("repoMap") = n;
            blocks += n;
        }
        *self.at("system") = system_total.saturating_sub(blocks);
    }

    /// The history's entries by what they are, and the priming of the reply.
    fn count_history(&mut self, items: &[Cow<'_, Entry>]) {
        for entry in items {
            let section = if entry.item.is_untrusted() {
                "toolOutputs"
            } else if matches!(
                entry.item,
                Item::Instructions {
                    role: crate::history::InstructionRole::Reminder,
                    ..
                }
            ) {
                "reminders"
            } else {
                "conversation"
            };
            *self.at(section) += entry.tokens;
        }
        *self.at("conversation") += REPLY_PRIMING_TOKENS;
    }

    /// The pending user message's blocks, and its entry with their sum.
    fn count_pending(
        &mut self,
        pending: Pending<'_>,
        tokenizer: TokenizerKind,
        cache: &mut CountCache,
    ) -> Entry {
        let block = pending.block;
        let editor_tokens = block.editor.as_ref().map_or(0, |e| e.tokens);
        *self.at("environment") += block.environment_tokens;
        *self.at("editor") += editor_tokens;
        // The typed text, the separators between the blocks, and the message framing.
        let text_tokens = cache.count(tokenizer, pending.text);
        let separators =
            usize::from(block.editor.is_some()) + usize::from(!pending.text.is_empty());
        *self.at("conversation") += text_tokens + separators + TOKENS_PER_MESSAGE;
        let item = pending.item();
        let tokens = block.environment_tokens
            + editor_tokens
            + text_tokens
            + separators
            + TOKENS_PER_MESSAGE;
        Entry { item, tokens }
    }

    fn calibrated(self, calibration: &Calibration) -> Vec<Section> {
        SECTIONS
            .iter()
            .zip(self.0)
            .map(|(&(name, trust), tokens)| Section {
                name,
                tokens: calibration.apply(tokens),
                trust,
            })
            .collect()
    }
}

/// Tokens of a request with `static_context` and no history: what the stable prefix costs
/// (compaction targets leave room for it).
pub fn static_tokens(
    static_context: &StaticContext,
    tokenizer: TokenizerKind,
    prompts: &Prompts,
    counts: &mut CountCache,
) -> usize {
    let config = AssemblyConfig {
        tokenizer,
        context_window: 1,
        calibration: Calibration::default(),
    };
    let empty = History::new(tokenizer);
    assemble(&config, static_context, &empty, None, prompts, counts).total_tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::truncate::TruncationPolicy;
    use crate::wire::openai;

    const TOK: TokenizerKind = TokenizerKind::O200kBase;

    fn static_context(prompts: &Prompts) -> StaticContext {
        StaticContext {
            tools: prompts.tools.clone(),
            system_prompt: prompts.system.clone(),
            developer_instructions: Some("Answer in English.".into()),
            agents_md: Some(AgentsMdInstructions {
                dir: "/w/src".into(),
                text: "## AGENTS.md\nRun `cargo test` before you finish.".into(),
            }),
            skills_index:
                "## Skills\n- release: cut a release (file: .agents/skills/release/SKILL.md)".into(),
            memory: String::new(),
            repo_map: "## Repository map\n\nsrc/geometry.rs\n  pub struct Point".into(),
        }
    }

    fn environment(date: &str) -> Environment {
        Environment {
            cwd: "/w".into(),
            approval_policy: "ask".into(),
            sandbox_mode: "none".into(),
            network_access: "enabled".into(),
            shell: "bash".into(),
            workspace_roots: vec!["/w".into()],
            date: date.into(),
            background_commands: Vec::new(),
        }
    }

    fn config() -> AssemblyConfig {
        AssemblyConfig {
            tokenizer: TOK,
            context_window: 128_000,
            calibration: Calibration::default(),
        }
    }

    /// The request body as the OpenAI adapter would send it, as bytes.
    fn body(request: &Request, prompts: &Prompts) -> String {
        serde_json::to_string(&openai::messages(request, prompts)).unwrap()
    }

    #[test]
    fn each_turns_request_extends_the_previous_one_byte_for_byte() {
        let prompts = Prompts::builtin();
        let static_context = static_context(&prompts);
        let mut cache = CountCache::default();
        let mut history = History::new(TOK);
        let policy = TruncationPolicy::Tokens(10_000);
        let mut previous: Option<(String, String)> = None;
        for turn in 0..4 {
            // The date and editor state differ on every turn: they live in the turn's own
            // message and so never disturb the prefix.
            let block = turn_block(
                &environment(&format!("2026-11-2{turn}")),
                None,
                TOK,
                &mut cache,
            );
            let text = format!("question {turn}");
            let pending = Pending {
                text: &text,
                block: &block,
            };
            let request = assemble(
                &config(),
                &static_context,
                &history,
                Some(pending),
                &prompts,
                &mut cache,
            );
            let bytes = body(&request, &prompts);
            let last_message =
                serde_json::to_string(openai::messages(&request, &prompts).last().unwrap())
                    .unwrap();
            let without_last = bytes[..bytes.len() - last_message.len() - 1].to_string();
            if let Some((prev_without_last, prev_last)) = &previous {
                assert!(
                    without_last.starts_with(prev_without_last.as_str()),
                    "turn {turn}: prefix changed"
                );
                // The previous turn's user message is now history, unchanged.
                assert!(without_last[prev_without_last.len()..].starts_with(prev_last.as_str()));
            }
            previous = Some((without_last, last_message));
            // The turn runs: the user message, a tool round and an answer are recorded.
            history.record(pending.item(), policy, &prompts);
            history.record(
                Item::ToolCall {
                    call_id: format!("call_{turn}"),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"src/main.rs\"}".into(),
                },
                policy,
                &prompts,
            );
            history.record(
                Item::ToolOutput {
                    call_id: format!("call_{turn}"),
                    name: "read_file".into(),
                    content: "L1: fn main() {}".into(),
                    success: true,
                },
                policy,
                &prompts,
            );
            history.record(
                Item::Assistant {
                    text: format!("answer {turn}"),
                },
                policy,
                &prompts,
            );
        }
    }

    #[test]
    fn sections_add_up_and_match_a_count_from_scratch() {
        let prompts = Prompts::builtin();
        let static_context = static_context(&prompts);
        let mut cache = CountCache::default();
        let mut history = History::new(TOK);
        let policy = TruncationPolicy::Tokens(10_000);
        history.record(
            Item::User {
                text: "hello".into(),
                context: None,
            },
            policy,
            &prompts,
        );
        history.record(
            Item::ToolCall {
                call_id: "c".into(),
                name: "grep".into(),
                arguments: "{\"pattern\":\"fn\"}".into(),
            },
            policy,
            &prompts,
        );
        history.record(
            Item::ToolOutput {
                call_id: "c".into(),
                name: "grep".into(),
                content: "a.rs:1: fn a()".into(),
                success: true,
            },
            policy,
            &prompts,
        );
        let block = turn_block(&environment("2026-11-22"), None, TOK, &mut cache);
        let pending = Pending {
            text: "and now?",
            block: &block,
        };
        let request = assemble(
            &config(),
            &static_context,
            &history,
            Some(pending),
            &prompts,
            &mut cache,
        );
        let sum: usize = request.sections.iter().map(|s| s.tokens).sum();
        assert_eq!(sum, request.total_tokens);
        let by_name = |name: &str| {
            request
                .sections
                .iter()
                .find(|s| s.name == name)
                .unwrap()
                .tokens
        };
        assert!(by_name("toolOutputs") > 0 && by_name("agentsMd") > 0 && by_name("editor") == 0);
        assert_eq!(
            request
                .sections
                .iter()
                .find(|s| s.name == "toolOutputs")
                .unwrap()
                .trust,
            Trust::Untrusted
        );
        // From scratch: every message's content counted now, plus framing, plus the tools.
        let messages = openai::messages(&request, &prompts);
        let mut scratch = REPLY_PRIMING_TOKENS;
        for message in &messages {
            scratch += TOKENS_PER_MESSAGE;
            if let Some(content) = message["content"].as_str() {
                scratch += TOK.count(content);
            }
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                scratch += TOK.count(call["function"]["name"].as_str().unwrap())
                    + TOK.count(call["function"]["arguments"].as_str().unwrap());
            }
        }
        for tool in &prompts.tools {
            scratch += TOK.count(&serde_json::to_string(tool).unwrap());
        }
        // Tool calls are framed inside their assistant message; agentls counts them as
        // messages of their own, a few tokens over.
        let difference = request.total_tokens.abs_diff(scratch);
        assert!(
            difference <= 8,
            "incremental {} vs scratch {scratch}",
            request.total_tokens
        );
    }

    #[test]
    fn calibration_scales_every_section() {
        let prompts = Prompts::builtin();
        let static_context = static_context(&prompts);
        let history = History::new(TOK);
        let mut cache = CountCache::default();
        let plain = assemble(
            &config(),
            &static_context,
            &history,
            None,
            &prompts,
            &mut cache,
        );
        let mut calibrated = config();
        calibrated.calibration = Calibration {
            ratio: 1.5,
            samples: 1,
        };
        let scaled = assemble(
            &calibrated,
            &static_context,
            &history,
            None,
            &prompts,
            &mut cache,
        );
        for (a, b) in plain.sections.iter().zip(&scaled.sections) {
            assert_eq!(
                b.tokens,
                (a.tokens as f64 * 1.5).round() as usize,
                "{}",
                a.name
            );
        }
        assert!(scaled.fill() > plain.fill());
    }

    #[test]
    fn the_system_message_holds_the_trusted_instructions_in_order() {
        let prompts = Prompts::builtin();
        let text = system_text(&static_context(&prompts));
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle} missing"))
        };
        assert!(at("You are agentls") < at("# Developer instructions"));
        assert!(
            at("# Developer instructions")
                < at("# AGENTS.md instructions for /w/src\n\n<INSTRUCTIONS>\n")
        );
        assert!(at("</INSTRUCTIONS>") < at("## Skills"));
        let bare = system_text(&StaticContext {
            system_prompt: "S".into(),
            ..StaticContext::default()
        });
        assert_eq!(bare, "S");
    }
}
