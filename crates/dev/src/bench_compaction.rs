//! `agentls-dev bench compaction`: the non-LLM parts of compaction on a 200K-token history
//! (pure functions, in process), the latency of LSP requests while a slow summary call is
//! in flight (a real agentls child, the fake provider holding the summary for seconds), and
//! the wait a prompt sees at the threshold with a summary prepared ahead against a fresh one.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fake_provider::{openai_chunk, FakeProvider, Reply, Step};
use crate::lsp_client::{start_agentls, LspClient};
use agentls_core::compaction;
use agentls_core::event::Event;
use agentls_core::history::{item_tokens, Entry, Item};
use agentls_core::ledger::Ledger;
use agentls_core::prompts::Prompts;
use agentls_core::tokens::TokenizerKind;

pub struct CompactionBenchOptions {
    pub history_tokens: usize,
    pub rounds: usize,
    /// How long the slow summary call takes.
    pub summary_ms: u64,
}

impl Default for CompactionBenchOptions {
    fn default() -> Self {
        CompactionBenchOptions {
            history_tokens: 200_000,
            rounds: 10,
            summary_ms: 5_000,
        }
    }
}

pub struct CompactionBenchReport {
    pub items: usize,
    pub tokens: usize,
    /// (step, median per run)
    pub pure: Vec<(&'static str, Duration)>,
    pub probes: usize,
    pub probe_p50: Duration,
    pub probe_p99: Duration,
    pub probe_max: Duration,
    pub compact_wall: Duration,
    /// Compaction duration at the threshold: prepared ahead, and fresh.
    pub prepared_wait: Duration,
    pub fresh_wait: Duration,
}

/// A history like a long working session: per turn a request, an answer, a read with a
/// long output, a failing command and an edit.
pub fn history(tokens: usize) -> (Vec<Entry>, Vec<Event>) {
    let prompts = Prompts::builtin();
    let tokenizer = TokenizerKind::O200kBase;
    let mut entries = Vec::new();
    let mut total = 0;
    let mut turn = 0;
    while total < tokens {
        let body: String = (0..120)
            .map(|i| format!("    let v{i} = step_{turn}(&input[{i}])?; // stage {i}\n"))
            .collect();
        let items = [
            Item::User {
                text: format!("Turn {turn}: port module m{turn}; never touch the public API."),
                context: Some(
                    "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>".into(),
                ),
            },
            Item::Assistant {
                text: format!("Reading m{turn}."),
            },
            Item::ToolCall {
                call_id: format!("r{turn}"),
                name: "read_file".into(),
                arguments: json!({"path": format!("src/m{turn}.rs")}).to_string(),
            },
            Item::ToolOutput {
                call_id: format!("r{turn}"),
                name: "read_file".into(),
                content: body,
                success: true,
            },
            Item::ToolCall {
                call_id: format!("s{turn}"),
                name: "shell".into(),
                arguments: json!({"command": "cargo test"}).to_string(),
            },
            Item::ToolOutput {
                call_id: format!("s{turn}"),
                name: "shell".into(),
                content: format!("test m{turn}::parses ... FAILED\n[exit code 101]"),
                success: false,
            },
            Item::ToolCall {
                call_id: format!("e{turn}"),
                name: "edit_file".into(),
                arguments:
                    json!({"path": format!("src/m{turn}.rs"), "old_text": "a", "new_text": "b"})
                        .to_string(),
            },
            Item::ToolOutput {
                call_id: format!("e{turn}"),
                name: "edit_file".into(),
                content: format!("Edited src/m{turn}.rs: replaced 1 line(s) with 1 line(s)."),
                success: true,
            },
            Item::Assistant {
                text: format!("Module m{turn} ported; its test still fails."),
            },
        ];
        for item in items {
            let tokens = item_tokens(&item, &prompts, tokenizer);
            total += tokens;
            entries.push(Entry { item, tokens });
        }
        turn += 1;
    }
    let events = entries
        .iter()
        .map(|entry| Event::Item {
            turn_id: "t".into(),
            entry: entry.clone(),
        })
        .collect();
    (entries, events)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn time<T>(runs: &mut Vec<Duration>, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    runs.push(started.elapsed());
    out
}

pub fn pure(options: &CompactionBenchOptions) -> (usize, usize, Vec<(&'static str, Duration)>) {
    let prompts = Prompts::builtin();
    let tokenizer = TokenizerKind::O200kBase;
    let (entries, events) = history(options.history_tokens);
    let total = compaction::tokens_of(&entries);
    let target = total / 4;
    let mut runs: Vec<(&'static str, Vec<Duration>)> = [
        "ledger (fold every event)",
        "ledger render",
        "trim",
        "tail and user messages",
        "rebuild",
        "verify",
        "rule-based drop",
        "all of the above",
    ]
    .into_iter()
    .map(|name| (name, Vec::new()))
    .collect();
    for _ in 0..options.rounds {
        let all = Instant::now();
        let ledger = time(&mut runs[0].1, || {
            let mut ledger = Ledger::default();
            for event in &events {
                ledger.observe(event, agentls::tools::registry::Registry::builtin());
            }
            ledger
        });
        let ledger_text = time(&mut runs[1].1, || ledger.render(&prompts, 4000, tokenizer));
        let trimmed = time(&mut runs[2].1, || {
            compaction::trim(&entries, 3, &prompts, tokenizer)
        });
        let (tail, users) = time(&mut runs[3].1, || {
            let tail = compaction::kept_tail_start(&trimmed.entries, 2, target / 2);
            let users =
                compaction::select_user_messages(&trimmed.entries[..tail], 20_000, tokenizer);
            (tail, users)
        });
        let rebuilt = time(&mut runs[4].1, || {
            compaction::rebuild(
                &users,
                compaction::summary_text(
                    "# Compaction Handoff\n[Done] ported modules",
                    &ledger_text,
                ),
                &trimmed.entries[tail..],
                &prompts,
                tokenizer,
            )
        });
        time(&mut runs[5].1, || {
            compaction::verify(total, &rebuilt, &ledger_text)
        })
        .ok();
        time(&mut runs[6].1, || {
            compaction::rule_based(&trimmed.entries, target, 2000)
        });
        runs[7].1.push(all.elapsed());
    }
    (
        entries.len(),
        total,
        runs.into_iter()
            .map(|(name, r)| (name, median(r)))
            .collect(),
    )
}

pub async fn run(options: &CompactionBenchOptions) -> Result<CompactionBenchReport, String> {
    let (items, tokens, pure) = pure(options);
    let dir = std::env::temp_dir().join(format!("agentls-bench-compaction-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("project/src")).map_err(|e| e.to_string())?;
    let big: String = (0..150)
        .map(|i| format!("let value_{i} = compute(&inputs[{i}], \"parser stage {i}\");\n"))
        .collect();
    std::fs::write(dir.join("project/src/big.rs"), &big).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("project/src/big2.rs"), &big).map_err(|e| e.to_string())?;
    let result = lsp(options, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    let (probes, probe_p50, probe_p99, probe_max, compact_wall, prepared_wait, fresh_wait) =
        result?;
    Ok(CompactionBenchReport {
        items,
        tokens,
        pure,
        probes,
        probe_p50,
        probe_p99,
        probe_max,
        compact_wall,
        prepared_wait,
        fresh_wait,
    })
}

const SUMMARY_CALL: &str = "CONTEXT CHECKPOINT COMPACTION";

fn slow_summary(delay: Duration) -> Reply {
    Reply::Sse {
        steps: vec![
            Step::Delay(delay),
            openai_chunk(
                json!({"content": "# Compaction Handoff\n[Done] read big.rs\n[Next] continue"}),
                None,
            ),
            openai_chunk(json!({}), Some("stop")),
            Step::Data("[DONE]".into()),
        ],
    }
}

fn read(id: &str, path: &str) -> Reply {
    let arguments = json!({ "path": path }).to_string();
    FakeProvider::openai_tool_calls(&[(id, "read_file", &[arguments.as_str()])], None)
}

async fn start(
    fake: &FakeProvider,
    dir: &std::path::Path,
    extra: Value,
) -> Result<(LspClient, String), String> {
    let root = dir
        .join("project")
        .canonicalize()
        .map_err(|e| e.to_string())?;
    let mut init = json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "bench-model", "maxRetries": 0},
        "stateDir": dir.join("state"),
        "approval": "full-auto",
    });
    if let (Value::Object(init), Value::Object(extra)) = (&mut init, extra) {
        init.extend(extra);
    }
    let client = start_agentls(&root, init, "error").await?;
    let session = client.new_session().await?;
    Ok((client, session))
}

/// Runs a prompt to its end; the `compaction` completed update of the turn, if any.
async fn turn(client: &LspClient, session: &str, text: &str) -> Result<Option<Value>, String> {
    let answer = client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": text}),
        )
        .await
        .map_err(|e| e.to_string())?;
    let turn = answer["turnId"].as_str().unwrap_or_default().to_string();
    let mut completed = None;
    loop {
        let message = client.next_message().await.ok_or("agentls exited")?;
        if message.params["turnId"] != turn.as_str() {
            continue;
        }
        let update = &message.params["update"];
        if update["kind"] == "compaction" && update["phase"] == "completed" {
            completed = Some(update.clone());
        }
        if update["kind"] == "turnEnd" {
            return Ok(completed);
        }
    }
}

type LspFigures = (
    usize,
    Duration,
    Duration,
    Duration,
    Duration,
    Duration,
    Duration,
);

async fn lsp(
    options: &CompactionBenchOptions,
    dir: &std::path::Path,
) -> Result<LspFigures, String> {
    let (probes, p50, p99, max, compact_wall) = during_summary(options, dir).await?;
    let waits = threshold_waits(dir).await?;
    Ok((probes, p50, p99, max, compact_wall, waits[0], waits[1]))
}

/// Requests while a slow summary is in flight: how many, their p50, p99 and max, and the
/// compaction's wall time.
async fn during_summary(
    options: &CompactionBenchOptions,
    dir: &std::path::Path,
) -> Result<(usize, Duration, Duration, Duration, Duration), String> {
    let fake = FakeProvider::start().await;
    fake.push(read("r1", "src/big.rs"));
    fake.push(FakeProvider::openai_text(&["Read it."], None));
    fake.push_for(
        SUMMARY_CALL,
        slow_summary(Duration::from_millis(options.summary_ms)),
    );
    let (client, session) = start(&fake, dir, json!({})).await?;
    turn(&client, &session, "Please read src/big.rs.").await?;
    let uri = tower_lsp::lsp_types::Url::from_file_path(
        dir.join("project/src/big.rs")
            .canonicalize()
            .map_err(|e| e.to_string())?,
    )
    .map_err(|()| "not absolute".to_string())?;
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": "fn main() {}\n"}}),
        )
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let compact = client.request("agent/session/compact", json!({"sessionId": session}));
    let probes = async {
        // Wait until the summary call is out, then probe until it is answered.
        while fake.requests().len() < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let until = Instant::now() + Duration::from_millis(options.summary_ms.saturating_sub(200));
        probe_until(&client, &session, uri.as_str(), until).await
    };
    let (outcome, latencies) = tokio::join!(compact, probes);
    outcome.map_err(|e| e.to_string())?;
    let compact_wall = started.elapsed();
    let mut latencies = latencies?;
    latencies.sort();
    let pick = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    let (p50, p99, max) = (
        pick(0.5),
        pick(0.99),
        latencies.last().copied().unwrap_or_default(),
    );
    let _ = client.shutdown().await;
    Ok((latencies.len(), p50, p99, max, compact_wall))
}

/// The latency of each request of a round of context, code action and session list, sent
/// every 10 ms until `until`.
async fn probe_until(
    client: &LspClient,
    session: &str,
    uri: &str,
    until: Instant,
) -> Result<Vec<Duration>, String> {
    let mut latencies = Vec::new();
    let mut i = 0u32;
    while Instant::now() < until {
        let probe = Instant::now();
        let result = match i % 3 {
            0 => client.request("agent/session/context", json!({"sessionId": session})).await,
            1 => client
                .request(
                    "textDocument/codeAction",
                    json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}, "context": {"diagnostics": []}}),
                )
                .await,
            _ => client.request("agent/session/list", json!({})).await,
        };
        result.map_err(|e| e.to_string())?;
        latencies.push(probe.elapsed());
        i += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(latencies)
}

/// The wait at the threshold: prepared ahead versus computed then (each summary call
/// takes a second).
async fn threshold_waits(dir: &std::path::Path) -> Result<Vec<Duration>, String> {
    let mut waits = Vec::new();
    for prepare_at in [0.5, 0.99] {
        let fake = FakeProvider::start().await;
        fake.push(read("r1", "src/big.rs"));
        fake.push(FakeProvider::openai_text(&["Read it."], None));
        fake.push(read("r2", "src/big2.rs"));
        fake.push(FakeProvider::openai_text(&["Read the second."], None));
        fake.push_for(SUMMARY_CALL, slow_summary(Duration::from_secs(1)));
        let state = dir.join(format!("state-{prepare_at}"));
        let (client, session) = start(
            &fake,
            dir,
            json!({"stateDir": state, "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "bench-model", "maxRetries": 0, "contextWindow": 12000}, "compaction": {"prepareAt": prepare_at}}),
        )
        .await?;
        turn(&client, &session, "Please read src/big.rs.").await?;
        if prepare_at < 0.9 {
            // Let the background summary finish, as it would while the user reads.
            while fake.requests().len() < 3 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(1200)).await;
        }
        let completed = turn(&client, &session, "Now read src/big2.rs.")
            .await?
            .ok_or("no compaction at the threshold")?;
        waits.push(Duration::from_millis(
            completed["durationMs"].as_u64().unwrap_or(0),
        ));
        let _ = client.shutdown().await;
    }
    Ok(waits)
}

pub fn print(options: &CompactionBenchOptions, report: &CompactionBenchReport) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "compaction, non-LLM parts: history of {} items / {} tokens, median of {} runs",
        report.items, report.tokens, options.rounds
    );
    for (name, duration) in &report.pure {
        println!("  {name:<28} {:>9.3} ms", ms(*duration));
    }
    println!(
        "LSP requests while a {} ms summary call is in flight: {} requests (context, codeAction, list), p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; the compaction took {:.0} ms",
        options.summary_ms,
        report.probes,
        ms(report.probe_p50),
        ms(report.probe_p99),
        ms(report.probe_max),
        ms(report.compact_wall)
    );
    println!(
        "wait at the threshold (summary call 1000 ms): prepared ahead {:.0} ms, computed then {:.0} ms",
        ms(report.prepared_wait),
        ms(report.fresh_wait)
    );
}
