//! `agentls-dev bench context`: assembling a request for a long session, incrementally (counts
//! cached with the history items and in the CountCache) against tokenizing the whole request
//! from scratch, plus the tokenizers' throughput on code.

use std::time::{Duration, Instant};

use agentls_core::config::Config;
use agentls_core::context::AssemblyCache;
use agentls_core::document::{Document, DEFAULT_MAX_SYNTAX_BYTES};
use agentls_core::editor_state::ResolvedEditor;
use agentls_core::environment::Environment;
use agentls_core::history::{History, Item};
use agentls_core::inspect::{self, ActiveDocument, OtherDocument};
use agentls_core::language::Language;
use agentls_core::prompts::Prompts;
use agentls_core::tokens::{Calibration, TokenizerKind};
use agentls_core::wire::openai;

pub struct ContextOptions {
    pub history_tokens: usize,
    pub buffers: usize,
    pub rounds: usize,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            history_tokens: 150_000,
            buffers: 20,
            rounds: 20,
        }
    }
}

pub struct ContextBenchReport {
    pub history_items: usize,
    pub history_tokens: usize,
    pub request_tokens: usize,
    pub request_bytes: usize,
    /// Per assembly, same editor state as the previous one.
    pub warm: Duration,
    /// Per assembly, the cursor in another function each time.
    pub cursor_moved: Duration,
    /// Per assembly, after recording a new exchange (what a turn costs).
    pub new_turn: Duration,
    /// Per request, every message and tool tokenized from nothing.
    pub scratch: Duration,
    /// Per request, building the OpenAI `messages` JSON (the same with or without caches).
    pub wire: Duration,
    /// (tokenizer, MB/s on code, tokens counted)
    pub throughput: Vec<(&'static str, f64, usize)>,
    pub corpus_bytes: usize,
}

/// Buffer `k`: structs and functions named after `k`, each using the previous buffer's
/// struct, so that definitions are found across buffers.
fn buffer_source(k: usize, items: usize) -> String {
    let mut out = format!(
        "//! Module {k}.\nuse crate::m{}::Shape{};\n\n",
        k.saturating_sub(1),
        k.saturating_sub(1)
    );
    for i in 0..items {
        let prev = k.saturating_sub(1);
        out.push_str(&format!(
            "/// Shape {k}.{i}: what it holds.\npub struct Shape{k}x{i} {{\n    pub width: f64,\n    pub height: f64,\n    pub parent: Shape{prev},\n}}\n\n\
             impl Shape{k}x{i} {{\n    pub fn area(&self) -> f64 {{\n        let base = self.width * self.height;\n        \
             base + self.parent.area() * {i}.0\n    }}\n\n    pub fn scaled(&self, by: f64) -> Shape{prev} {{\n        \
             let mut p = self.parent.clone();\n        p.grow(by);\n        p\n    }}\n}}\n\n"
        ));
    }
    out.push_str(&format!(
        "pub struct Shape{k} {{\n    pub size: f64,\n}}\n\nimpl Shape{k} {{\n    pub fn area(&self) -> f64 {{ self.size }}\n    pub fn grow(&mut self, by: f64) {{ self.size *= by; }}\n}}\n"
    ));
    out
}

fn fixtures(options: &ContextOptions, prompts: &Prompts) -> (Vec<OtherDocument>, History) {
    let buffers: Vec<OtherDocument> = (0..options.buffers.max(1))
        .map(|k| {
            let text = buffer_source(k, 20);
            OtherDocument {
                display_path: format!("src/m{k}.rs"),
                snapshot: Document::new(&text, 1, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES)
                    .snapshot(),
            }
        })
        .collect();
    let tokenizer = TokenizerKind::O200kBase;
    let policy = Config::default().tool_output_limit;
    let mut history = History::new(tokenizer);
    let mut turn = 0;
    while history.tokens() < options.history_tokens {
        let source = buffers[turn % buffers.len()].snapshot.rope.to_string();
        let lines: Vec<&str> = source.lines().collect();
        let start = (turn * 37) % lines.len().saturating_sub(150).max(1);
        let chunk: String = lines[start..(start + 150).min(lines.len())]
            .iter()
            .enumerate()
            .map(|(i, l)| format!("L{}: {l}\n", start + i + 1))
            .collect();
        let call_id = format!("call_{turn}");
        for item in [
            Item::User {
                text: format!("Why does Shape{turn}x1::area add the parent's area? Check src/m{}.rs.", turn % buffers.len()),
                context: Some(format!("<environment_context>\n  <cwd>/w</cwd>\n  <current_date>2026-11-22</current_date>\n</environment_context>\n\nturn {turn}")),
            },
            Item::Assistant {
                text: "I'll read the module first.".into(),
            },
            Item::ToolCall {
                call_id: call_id.clone(),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"src/m{}.rs\",\"offset\":{start}}}", turn % buffers.len()),
            },
            Item::ToolOutput {
                call_id,
                name: "read_file".into(),
                content: chunk,
                success: true,
            },
            Item::Assistant {
                text: "The area of each shape is its own base area plus the parent's area scaled by the \
                       shape's index, so a chain of shapes accumulates the areas of every ancestor. \
                       If you want only the shape's own area, drop the `self.parent.area()` term in \
                       `area` and keep `scaled` as it is; nothing else calls it."
                    .repeat(2),
            },
        ] {
            history.record(item, policy, prompts);
        }
        turn += 1;
    }
    (buffers, history)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

const PROMPT: &str = "What does this do?";

pub fn context(options: &ContextOptions) -> ContextBenchReport {
    let prompts = Prompts::builtin();
    let config = Config::default();
    let tokenizer = config.tokenizer();
    tokenizer.warm();
    let (mut buffers, mut history) = fixtures(options, &prompts);
    let active_doc = buffers.remove(buffers.len() / 2);
    let source = active_doc.snapshot.rope.to_string();
    // Cursor positions: inside each `area` body of the active buffer.
    let cursors: Vec<usize> = source.match_indices("let base").map(|(at, _)| at).collect();
    let environment = environment();
    let mut cache = AssemblyCache::default();
    let active_at = |cursor: usize| active_at(&active_doc, cursor);
    // Assembly as a turn does it: static context, turn block, the request with its counts.
    let assemble = |history: &History, active: &ActiveDocument, cache: &mut AssemblyCache| {
        let inputs = inspect::Inputs {
            config: &config,
            prompts: &prompts,
            environment: &environment,
            agents: None,
            skills: &[],
            active: Some(active),
            others: &buffers,
            workspace: None,
            repo_map: "",
            memory: "",
            history,
            calibration: Calibration::default(),
        };
        let prepared = inspect::prepare(&inputs, cache);
        let request = prepared.request(history, PROMPT, &prompts, cache);
        let wire_start = Instant::now();
        let messages = openai::messages(&request, &prompts);
        (request.total_tokens, messages, wire_start.elapsed())
    };

    // The first request of a session fills the caches.
    let first = active_at(cursors[0]);
    let (request_tokens, messages, _) = assemble(&history, &first, &mut cache);
    let rounds = options.rounds.max(1);
    let (mut warm, mut moved, mut turn, mut scratch, mut wire) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // The measurements are interleaved round by round, so that a slower stretch of the
    // machine affects all of them alike; medians resist the outliers. Building the wire
    // JSON is the same work with or without caches and is reported on its own.
    for round in 0..rounds {
        let start = Instant::now();
        let (_, _, wire_time) = std::hint::black_box(assemble(&history, &first, &mut cache));
        warm.push(start.elapsed() - wire_time);
        wire.push(wire_time);

        let moved_to = active_at(cursors[(round + 1) % cursors.len()]);
        let start = Instant::now();
        let (_, _, wire_time) = std::hint::black_box(assemble(&history, &moved_to, &mut cache));
        moved.push(start.elapsed() - wire_time);

        let start = Instant::now();
        record_exchange(&mut history, round, &config, &prompts);
        let (_, _, wire_time) = std::hint::black_box(assemble(&history, &first, &mut cache));
        turn.push(start.elapsed() - wire_time);

        let start = Instant::now();
        std::hint::black_box(count_from_scratch(&messages, &prompts, tokenizer));
        scratch.push(start.elapsed());
    }

    let corpus = code_corpus();
    let throughput = throughput(&corpus);

    ContextBenchReport {
        history_items: history.len(),
        history_tokens: history.tokens(),
        request_tokens,
        request_bytes: serde_json::to_string(&messages).map_or(0, |s| s.len()),
        warm: median(warm),
        cursor_moved: median(moved),
        new_turn: median(turn),
        scratch: median(scratch),
        wire: median(wire),
        throughput,
        corpus_bytes: corpus.len(),
    }
}

/// `doc` as the active buffer, the cursor at `cursor` and 200 bytes selected from there.
fn active_at(doc: &OtherDocument, cursor: usize) -> ActiveDocument {
    ActiveDocument {
        display_path: doc.display_path.clone(),
        snapshot: doc.snapshot.clone(),
        editor: ResolvedEditor {
            cursor,
            selection: Some(cursor..cursor + 200),
            visible: None,
            diagnostics: Vec::new(),
        },
    }
}

/// The environment block of every assembled request.
fn environment() -> Environment {
    Environment {
        cwd: "/w".into(),
        approval_policy: "ask".into(),
        sandbox_mode: "none".into(),
        network_access: "enabled".into(),
        shell: "bash".into(),
        workspace_roots: vec!["/w".into()],
        date: "2026-11-22".into(),
        background_commands: Vec::new(),
    }
}

/// A user message and its answer: what a new turn adds to the history.
fn record_exchange(history: &mut History, round: usize, config: &Config, prompts: &Prompts) {
    history.record(
        Item::User {
            text: format!("follow-up {round}"),
            context: None,
        },
        config.tool_output_limit,
        prompts,
    );
    history.record(
        Item::Assistant {
            text: format!("answer {round}"),
        },
        config.tool_output_limit,
        prompts,
    );
}

/// Each tokenizer's name, MB/s on `corpus` and its count, the median of five passes (one
/// pass is at the mercy of the machine's drift).
fn throughput(corpus: &str) -> Vec<(&'static str, f64, usize)> {
    [TokenizerKind::O200kBase, TokenizerKind::Cl100kBase]
        .into_iter()
        .map(|kind| {
            kind.warm();
            let mut tokens = 0;
            let times: Vec<Duration> = (0..5)
                .map(|_| {
                    let start = Instant::now();
                    tokens = kind.count(corpus);
                    start.elapsed()
                })
                .collect();
            let seconds = median(times).as_secs_f64();
            (kind.name(), corpus.len() as f64 / 1e6 / seconds, tokens)
        })
        .collect()
}

fn count_from_scratch(
    messages: &[serde_json::Value],
    prompts: &Prompts,
    tokenizer: TokenizerKind,
) -> usize {
    let mut tokens = 0;
    for message in messages {
        if let Some(content) = message["content"].as_str() {
            tokens += tokenizer.count(content);
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            tokens += tokenizer.count(call["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    for tool in &prompts.tools {
        tokens += tokenizer.count(&serde_json::to_string(tool).unwrap_or_default());
    }
    tokens
}

/// Real code: agentls's own sources, repeated to about 1 MB.
fn code_corpus() -> String {
    let sources = [
        include_str!("../../../crates/core/src/syntax.rs"),
        include_str!("../../../server/src/lsp/mod.rs"),
        include_str!("../../../crates/core/src/history.rs"),
        include_str!("../../../crates/core/src/context.rs"),
        include_str!("../../../crates/core/src/document.rs"),
        include_str!("../../../crates/core/src/position.rs"),
    ];
    let one: String = sources.concat();
    one.repeat((1_000_000 / one.len()).max(1))
}

pub fn print_context(options: &ContextOptions, report: &ContextBenchReport) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "context assembly: history {} items / {} tokens, {} open buffers, request {} tokens ({} bytes of messages), {} rounds",
        report.history_items, report.history_tokens, options.buffers, report.request_tokens, report.request_bytes, options.rounds
    );
    println!(
        "  incremental, same editor state   {:>9.3} ms/request",
        ms(report.warm)
    );
    println!(
        "  incremental, cursor moved        {:>9.3} ms/request",
        ms(report.cursor_moved)
    );
    println!(
        "  incremental, after a new turn    {:>9.3} ms/request",
        ms(report.new_turn)
    );
    println!(
        "  tokenizing the request from scratch {:>6.3} ms/request",
        ms(report.scratch)
    );
    println!(
        "  building the OpenAI messages JSON  {:>6.3} ms/request (the same with or without caches; not in the figures above)",
        ms(report.wire)
    );
    println!(
        "  speed-up: {:.0}x (same state), {:.0}x (cursor moved), {:.0}x (new turn)",
        report.scratch.as_secs_f64() / report.warm.as_secs_f64(),
        report.scratch.as_secs_f64() / report.cursor_moved.as_secs_f64(),
        report.scratch.as_secs_f64() / report.new_turn.as_secs_f64(),
    );
    println!("token counting on {} bytes of Rust:", report.corpus_bytes);
    for (name, mbps, tokens) in &report.throughput {
        println!("  {name:<12} {mbps:>6.2} MB/s  ({tokens} tokens)");
    }
}
