//! `agentls-dev bench stream`: the streaming path through a real agentls child and the fake
//! provider on loopback. Two figures:
//! - chunk latency: from the fake provider flushing an SSE chunk to the test client
//!   receiving the `agentMessageChunk` it became (so it includes the provider → agentls
//!   socket, agentls, the stdout pipe and the client's JSON parse), p50 and p99;
//! - time to first token through agentls divided by a direct HTTP request to the same fake
//!   provider with the same scripted answer, rounds alternated.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fake_provider::{openai_chunk, FakeProvider, Reply, Step};
use crate::lsp_client::{start_agentls, LspClient};

pub struct StreamOptions {
    /// Content chunks per streamed answer.
    pub chunks: usize,
    /// Turns (answers) per figure.
    pub turns: usize,
    /// The fake model's thinking time before its first token.
    pub first_token_ms: u64,
    /// Time between two chunks (so that each is its own TCP write).
    pub gap_ms: u64,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            chunks: 200,
            turns: 10,
            first_token_ms: 300,
            gap_ms: 2,
        }
    }
}

pub struct StreamReport {
    pub samples: usize,
    pub latency_p50: Duration,
    pub latency_p99: Duration,
    pub latency_max: Duration,
    pub ttft_agentls: Duration,
    pub ttft_direct: Duration,
}

fn answer(chunks: usize, first_token: Duration, gap: Duration) -> Reply {
    let mut steps = vec![openai_chunk(
        json!({"role": "assistant", "content": ""}),
        None,
    )];
    steps.push(Step::Delay(first_token));
    for i in 0..chunks {
        if i > 0 && !gap.is_zero() {
            steps.push(Step::Delay(gap));
        }
        steps.push(openai_chunk(json!({"content": format!("c{i} ")}), None));
    }
    steps.push(openai_chunk(json!({}), Some("stop")));
    steps.push(Step::Data("[DONE]".into()));
    Reply::Sse { steps }
}

/// The `p` quantile of `sorted` (nearest rank); zero for no samples. Shared by the benches.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    percentile(&values, 0.5)
}

pub async fn stream(options: &StreamOptions) -> Result<StreamReport, String> {
    let dir = tempfile_dir()?;
    let result = run(options, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("agentls-bench-stream-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("project/src")).map_err(|e| e.to_string())?;
    std::fs::write(
        dir.join("project/src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    )
    .map_err(|e| e.to_string())?;
    Ok(dir)
}

async fn run(options: &StreamOptions, dir: &std::path::Path) -> Result<StreamReport, String> {
    let fake = FakeProvider::start().await;
    let first_token = Duration::from_millis(options.first_token_ms);
    let gap = Duration::from_millis(options.gap_ms);
    let root = dir
        .join("project")
        .canonicalize()
        .map_err(|e| e.to_string())?;
    let client = start_agentls(
        &root,
        json!({
            "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "bench-model"},
            "stateDir": dir.join("state"),
        }),
        "warn",
    )
    .await?;
    let session = client.new_session().await?;

    // Chunk latency: answers with no thinking time, many chunks.
    let mut latencies = chunk_latencies(&client, &session, &fake, options).await?;
    latencies.sort();

    // Time to first token, agentls and direct alternated.
    agentls::provider::tls::install();
    let http = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", fake.base_url());
    let mut through = Vec::new();
    let mut direct = Vec::new();
    for _ in 0..options.turns {
        fake.push(answer(3, first_token, gap));
        let started = Instant::now();
        let turn = prompt(&client, &session, "first token please").await?;
        let mut first = None;
        loop {
            let message = client.next_message().await.ok_or("agentls exited")?;
            if message.params["turnId"] != turn.as_str() {
                continue;
            }
            match message.params["update"]["kind"].as_str() {
                Some("agentMessageChunk") if first.is_none() => first = Some(started.elapsed()),
                Some("turnEnd") => break,
                _ => {}
            }
        }
        through.push(first.ok_or("no chunk arrived")?);

        fake.push(answer(3, first_token, gap));
        direct.push(direct_first_token(&http, &url).await?);
    }
    let _ = client.shutdown().await;
    Ok(StreamReport {
        samples: latencies.len(),
        latency_p50: percentile(&latencies, 0.50),
        latency_p99: percentile(&latencies, 0.99),
        latency_max: latencies.last().copied().unwrap_or_default(),
        ttft_agentls: median(through),
        ttft_direct: median(direct),
    })
}

/// The delay from the fake provider's flush of each content chunk to its arrival as an
/// `agentMessageChunk`, over `options.turns` answers of `options.chunks` chunks.
async fn chunk_latencies(
    client: &LspClient,
    session: &str,
    fake: &FakeProvider,
    options: &StreamOptions,
) -> Result<Vec<Duration>, String> {
    let gap = Duration::from_millis(options.gap_ms);
    let mut latencies = Vec::new();
    for _ in 0..options.turns {
        let offset = fake.sent_times().len();
        fake.push(answer(options.chunks, Duration::ZERO, gap));
        let turn = prompt(client, session, "stream please").await?;
        let mut received: Vec<(usize, Instant)> = Vec::new();
        loop {
            let message = client.next_message().await.ok_or("agentls exited")?;
            let at = Instant::now();
            if message.params["turnId"] != turn.as_str() {
                continue;
            }
            let update = &message.params["update"];
            match update["kind"].as_str() {
                Some("agentMessageChunk") => {
                    let text = update["text"].as_str().unwrap_or("");
                    if let Some(i) = text
                        .trim()
                        .strip_prefix('c')
                        .and_then(|n| n.parse::<usize>().ok())
                    {
                        received.push((i, at));
                    }
                }
                Some("turnEnd") => break,
                Some("error") => return Err(format!("the turn failed: {}", update["message"])),
                _ => {}
            }
        }
        let sent = fake.sent_times();
        for (i, at) in received {
            // Step 0 is the role chunk; content chunk i is data step i + 1.
            if let Some(flushed) = sent.get(offset + 1 + i) {
                latencies.push(at.saturating_duration_since(*flushed));
            }
        }
    }
    Ok(latencies)
}

/// Time to the first content chunk of the fake provider's next answer, asked directly.
async fn direct_first_token(http: &reqwest::Client, url: &str) -> Result<Duration, String> {
    let started = Instant::now();
    let mut response = http
        .post(url)
        .header("content-type", "application/json")
        .body(json!({"model": "bench-model", "stream": true, "messages": [{"role": "user", "content": "first token please"}]}).to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let mut seen = Vec::new();
    let mut first = None;
    while let Some(bytes) = response.chunk().await.map_err(|e| e.to_string())? {
        seen.extend_from_slice(&bytes);
        if first.is_none() && contains(&seen, b"\"c0 \"") {
            first = Some(started.elapsed());
        }
    }
    first.ok_or_else(|| "no chunk arrived directly".to_string())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn prompt(client: &LspClient, session: &str, text: &str) -> Result<String, String> {
    let answer: Value = client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": text}),
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(answer["turnId"].as_str().unwrap_or_default().to_string())
}

pub fn print_stream(options: &StreamOptions, report: &StreamReport) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "stream: {} turns × {} chunks ({} ms apart) through agentls from the fake provider",
        options.turns, options.chunks, options.gap_ms
    );
    println!(
        "  SSE chunk flushed → agentMessageChunk received: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} samples)",
        ms(report.latency_p50),
        ms(report.latency_p99),
        ms(report.latency_max),
        report.samples
    );
    println!(
        "  time to first token (model thinks {} ms): through agentls {:.2} ms, direct HTTP {:.2} ms, ratio {:.3} (+{:.2} ms)",
        options.first_token_ms,
        ms(report.ttft_agentls),
        ms(report.ttft_direct),
        report.ttft_agentls.as_secs_f64() / report.ttft_direct.as_secs_f64().max(1e-9),
        ms(report.ttft_agentls.saturating_sub(report.ttft_direct))
    );
}

/// Time to first token through agentls and directly, against a real OpenAI-compatible
/// server (`agentls-dev bench ttft --base-url URL`): the same messages both ways (the direct
/// request sends what `agent/session/context` says agentls would send), rounds alternated,
/// medians. Returns (through agentls, direct, rounds).
pub async fn ttft_real(
    base_url: &str,
    model: &str,
    turns: usize,
) -> Result<(Duration, Duration, usize), String> {
    let dir = tempfile_dir()?;
    let result = ttft_real_in(base_url, model, turns, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Time from `started` to `turn`'s first `agentMessageChunk` (none if it ended without one);
/// an error update fails.
async fn first_chunk(
    client: &LspClient,
    turn: &str,
    started: Instant,
) -> Result<Option<Duration>, String> {
    let mut first = None;
    loop {
        let message = client.next_message().await.ok_or("agentls exited")?;
        if message.params["turnId"] != turn {
            continue;
        }
        match message.params["update"]["kind"].as_str() {
            Some("agentMessageChunk") if first.is_none() => first = Some(started.elapsed()),
            Some("turnEnd") => return Ok(first),
            Some("error") => {
                return Err(format!(
                    "the turn failed: {}",
                    message.params["update"]["message"]
                ))
            }
            _ => {}
        }
    }
}

async fn ttft_real_in(
    base_url: &str,
    model: &str,
    turns: usize,
    dir: &std::path::Path,
) -> Result<(Duration, Duration, usize), String> {
    let root = dir
        .join("project")
        .canonicalize()
        .map_err(|e| e.to_string())?;
    let client = start_agentls(
        &root,
        json!({
            "provider": {"kind": "openai", "baseUrl": base_url, "model": model, "maxOutputTokens": 8, "temperature": 0, "contextWindow": 4096},
            "stateDir": dir.join("state"),
            "compaction": {"auto": false},
        }),
        "warn",
    )
    .await?;
    let prompts = agentls_core::prompts::Prompts::builtin();
    let tools = agentls_core::wire::openai::tools(&prompts.tools);
    agentls::provider::tls::install();
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
    let mut through = Vec::new();
    let mut direct = Vec::new();
    for round in 0..turns {
        // A fresh session each round, so both sides send the same short conversation.
        let session = client.new_session().await?;
        let text = format!("Say the number {round}.");
        let started = Instant::now();
        let turn = prompt(&client, &session, &text).await?;
        let Some(first) = first_chunk(&client, &turn, started).await? else {
            continue;
        };
        through.push(first);

        // Directly: the messages agentls sent for that turn.
        let context = client
            .request("agent/session/context", json!({"sessionId": session}))
            .await
            .map_err(|e| e.to_string())?;
        let mut messages = context["messages"].as_array().cloned().unwrap_or_default();
        // The inspection shows the next request: drop its empty last user message and the
        // answer, keep the request as it was sent.
        messages.truncate(messages.len().saturating_sub(2));
        // Not the very same text: a server with a prompt cache would answer a repeat from
        // its cache. Both requests then share the prefix and differ at the end.
        if let Some(last) = messages.last_mut() {
            if let Some(content) = last["content"].as_str() {
                last["content"] =
                    json!(content.replace(&text, &format!("Say the number {}.", round + 1000)));
            }
        }
        let body = json!({"model": model, "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 8, "temperature": 0, "messages": messages, "tools": tools});
        let started = Instant::now();
        let mut response = http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let mut seen = Vec::new();
        let mut first = None;
        while let Some(bytes) = response.chunk().await.map_err(|e| e.to_string())? {
            seen.extend_from_slice(&bytes);
            if first.is_none() && contains(&seen, b"\"content\": \"")
                || first.is_none() && contains(&seen, b"\"content\":\"")
            {
                first = Some(started.elapsed());
            }
        }
        direct.push(first.ok_or("no content chunk arrived directly")?);
    }
    let _ = client.shutdown().await;
    let rounds = through.len().min(direct.len());
    Ok((median(through), median(direct), rounds))
}
