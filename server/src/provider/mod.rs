//! Model providers over HTTP (reqwest): OpenAI Chat Completions and Anthropic Messages,
//! both streamed as server-sent events. The wire shapes of a request live in `openai_wire`
//! and `anthropic_wire`; this module owns the HTTP exchange, SSE decoding, the assembly of
//! streamed deltas into text, reasoning, tool calls and usage, and the fault policy
//! (retries with backoff for 429/5xx, a cut stream, context-length-exceeded, a missing key).
//!
//! Events go out on a channel as they are decoded, so the agent loop can forward a chunk
//! to the editor the moment it arrives. API keys are read from the environment per request
//! and never logged or returned.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use agentls_core::context::Request;
use agentls_core::prompts::Prompts;
use agentls_core::{anthropic_wire, openai_wire};

/// The message of a 200 answer whose stream carried no event at all.
const EMPTY_STREAM: &str = "the provider answered with an empty stream";

fn decoder_saw_nothing(assembler: &Assembler) -> bool {
    !assembler.saw_event
}

/// Anthropic requires `max_tokens`; this is used when `provider.maxOutputTokens` is unset.
const ANTHROPIC_DEFAULT_MAX_TOKENS: usize = 8192;
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Backoff of the first retry; doubled per attempt, with ±25 % jitter, at most MAX_BACKOFF.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A Retry-After longer than this is not waited for: the error is reported instead.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);
/// How much of an error body is quoted in a message.
const ERROR_BODY_CHARS: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
}

impl ProviderKind {
    pub fn from_name(name: &str) -> Option<ProviderKind> {
        match name {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    pub fn default_api_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    fn endpoint(self, base_url: &str) -> String {
        let base = base_url.trim_end_matches('/');
        match self {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            // The documented base URL has no version; accept one that has it.
            ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
        }
    }
}

/// Everything a provider needs; no secret in it (the key is read from `api_key_env` per
/// request), so it may be printed and compared.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub max_output_tokens: Option<usize>,
    /// Connect timeout, and the longest silence tolerated inside a stream.
    pub timeout: Duration,
    pub max_retries: u32,
    pub temperature: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Prompt tokens as the provider counted them (cached ones included).
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What a stream produces, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    Text(String),
    Reasoning(String),
    /// The model began a tool call (its arguments are still streaming).
    ToolCallStarted {
        id: String,
        name: String,
    },
    /// A complete tool call, sent once the model finished its message.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    Usage(Usage),
    /// An attempt failed with a retryable answer; the next starts after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    /// A line of the stream that is not a usable event (logged, otherwise ignored).
    Skipped {
        line: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Something the user must set (a key, a URL).
    Config,
    Unreachable,
    /// 401/403.
    Auth,
    RateLimited,
    Server,
    /// Any other 4xx.
    BadRequest,
    /// The request is larger than the model's window: compaction can fix it.
    ContextLengthExceeded,
    /// The stream ended before the model finished.
    StreamCut,
    Timeout,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    pub kind: ErrorKind,
    pub message: String,
    /// Whether the same request may succeed later.
    pub retryable: bool,
}

impl ProviderError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> ProviderError {
        let retryable = matches!(
            kind,
            ErrorKind::Unreachable
                | ErrorKind::RateLimited
                | ErrorKind::Server
                | ErrorKind::StreamCut
                | ErrorKind::Timeout
        );
        ProviderError {
            kind,
            message: message.into(),
            retryable,
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// How a stream ended well.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    pub usage: Option<Usage>,
    /// `stop`, `tool_calls`, `length`, `end_turn`, `tool_use`, … as the provider said it.
    pub finish_reason: Option<String>,
}

pub struct Provider {
    config: ProviderConfig,
    client: reqwest::Client,
}

impl Provider {
    pub fn new(config: ProviderConfig) -> Result<Provider, ProviderError> {
        if !(config.base_url.starts_with("http://") || config.base_url.starts_with("https://")) {
            return Err(ProviderError::new(
                ErrorKind::Config,
                format!(
                    "provider.baseUrl {:?} is not an http(s) URL",
                    config.base_url
                ),
            ));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| {
                ProviderError::new(
                    ErrorKind::Config,
                    format!("cannot build the HTTP client: {e}"),
                )
            })?;
        Ok(Provider { config, client })
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The JSON body of `request` for this provider (what `stream` posts).
    pub fn body(&self, request: &Request<'_>, prompts: &Prompts) -> Value {
        match self.config.kind {
            ProviderKind::OpenAi => {
                let mut body = json!({
                    "model": self.config.model,
                    "messages": openai_wire::messages(request, prompts),
                    "stream": true,
                    "stream_options": {"include_usage": true},
                });
                if !request.tools.is_empty() {
                    body["tools"] = Value::Array(openai_wire::tools(request.tools));
                }
                if let Some(max) = self.config.max_output_tokens {
                    body["max_tokens"] = json!(max);
                }
                if let Some(temperature) = self.config.temperature {
                    body["temperature"] = json!(temperature);
                }
                body
            }
            ProviderKind::Anthropic => {
                let mut body = anthropic_wire::body(request, prompts);
                body["model"] = json!(self.config.model);
                body["max_tokens"] = json!(self
                    .config
                    .max_output_tokens
                    .unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS));
                body["stream"] = json!(true);
                if let Some(temperature) = self.config.temperature {
                    body["temperature"] = json!(temperature);
                }
                body
            }
        }
    }

    /// Sends `request` and streams the answer into `events`. Retries 429/5xx and
    /// connection failures up to `max_retries` times before anything was streamed; after
    /// the first event a failure ends the stream (what arrived stays with the caller).
    pub async fn stream(
        &self,
        request: &Request<'_>,
        prompts: &Prompts,
        events: &UnboundedSender<ProviderEvent>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let key = self.api_key()?;
        let body = serde_json::to_vec(&self.body(request, prompts)).map_err(|e| {
            ProviderError::new(ErrorKind::Config, format!("cannot encode the request: {e}"))
        })?;
        let url = self.config.kind.endpoint(&self.config.base_url);
        let mut attempt = 0;
        loop {
            let response = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(cancelled()),
                response = self.send(&url, key.as_deref(), body.clone()) => response,
            };
            let failure = match response {
                Ok(response) => match self.read_stream(response, events, cancel).await {
                    Ok(completion) => return Ok(completion),
                    // Closed empty after the 200: see `dropped` below.
                    Err((error, false))
                        if error.message == EMPTY_STREAM
                            && self.config.kind == ProviderKind::OpenAi =>
                    {
                        Failure {
                            error,
                            retry_after: None,
                            dropped: true,
                        }
                    }
                    // An overload or rate limit reported in the stream before any content
                    // (Anthropic does this after a 200) is retried like an HTTP 529/429.
                    Err((error, false))
                        if matches!(error.kind, ErrorKind::Server | ErrorKind::RateLimited) =>
                    {
                        Failure {
                            error,
                            retry_after: None,
                            dropped: false,
                        }
                    }
                    Err((error, _)) => return Err(error),
                },
                Err(failure) => failure,
            };
            // A server that drops a streamed request it cannot serve, resetting it or closing
            // the stream empty (llama-cpp-python past its window), says why when asked
            // without streaming: once, on a fresh connection.
            if failure.dropped && self.config.kind == ProviderKind::OpenAi {
                return self
                    .complete_without_streaming(
                        request,
                        prompts,
                        &url,
                        key.as_deref(),
                        events,
                        cancel,
                    )
                    .await;
            }
            if !failure.error.retryable || attempt >= self.config.max_retries {
                return Err(failure.error);
            }
            attempt += 1;
            let delay = failure
                .retry_after
                .unwrap_or_else(|| backoff(attempt, jitter_seed()));
            if delay > MAX_RETRY_AFTER {
                return Err(failure.error);
            }
            let _ = events.send(ProviderEvent::Retrying {
                attempt,
                delay,
                reason: failure.error.message.clone(),
            });
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(cancelled()),
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// One non-streamed Chat Completions request; its answer sent as events.
    async fn complete_without_streaming(
        &self,
        request: &Request<'_>,
        prompts: &Prompts,
        url: &str,
        key: Option<&str>,
        events: &UnboundedSender<ProviderEvent>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let mut body = self.body(request, prompts);
        body["stream"] = json!(false);
        if let Some(object) = body.as_object_mut() {
            object.remove("stream_options");
        }
        let body = serde_json::to_vec(&body).map_err(|e| {
            ProviderError::new(ErrorKind::Config, format!("cannot encode the request: {e}"))
        })?;
        // A fresh connection: the pooled one is what the server just dropped.
        let client = reqwest::Client::builder()
            .connect_timeout(self.config.timeout)
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| {
                ProviderError::new(
                    ErrorKind::Config,
                    format!("cannot build the HTTP client: {e}"),
                )
            })?;
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(cancelled()),
            response = self.send_with(&client, url, key, body) => response.map_err(|failure| failure.error)?,
        };
        let text = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(cancelled()),
            text = response.text() => text.map_err(|e| ProviderError::new(ErrorKind::StreamCut, format!("the provider's answer was cut: {e}")))?,
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            ProviderError::new(
                ErrorKind::StreamCut,
                format!("the provider's answer is not JSON: {e}"),
            )
        })?;
        let mut assembler = Assembler::new(self.config.kind);
        for event in assembler.on_openai_message(&value) {
            let _ = events.send(event);
        }
        Ok(assembler.completion(events))
    }

    /// The key from the environment. Required by the official endpoints; a custom base URL
    /// (Ollama, llama.cpp, vLLM on localhost) may run without one.
    fn api_key(&self) -> Result<Option<String>, ProviderError> {
        let variable = &self.config.api_key_env;
        let key = std::env::var(variable)
            .ok()
            .filter(|k| !k.trim().is_empty());
        let official =
            self.config.base_url.trim_end_matches('/') == self.config.kind.default_base_url();
        match key {
            Some(key) => Ok(Some(key.trim().to_string())),
            None if official => Err(ProviderError::new(
                ErrorKind::Config,
                format!(
                    "no API key: the environment variable {variable} is not set. Set it before \
                     starting the editor, or set provider.apiKeyEnv to the variable that holds \
                     the key (or provider.baseUrl to a local server)"
                ),
            )),
            None => Ok(None),
        }
    }

    async fn send(
        &self,
        url: &str,
        key: Option<&str>,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, Failure> {
        self.send_with(&self.client, url, key, body).await
    }

    async fn send_with(
        &self,
        client: &reqwest::Client,
        url: &str,
        key: Option<&str>,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, Failure> {
        let mut builder = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body);
        builder = match (self.config.kind, key) {
            (ProviderKind::OpenAi, Some(key)) => builder.bearer_auth(key),
            (ProviderKind::Anthropic, Some(key)) => builder.header("x-api-key", key),
            (_, None) => builder,
        };
        if self.config.kind == ProviderKind::Anthropic {
            builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let response = tokio::time::timeout(self.config.timeout, builder.send())
            .await
            .map_err(|_| Failure {
                error: ProviderError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the provider at {} did not answer within {} ms (provider.timeoutMs)",
                        self.config.base_url,
                        self.config.timeout.as_millis()
                    ),
                ),
                retry_after: None,
                dropped: false,
            })?
            .map_err(|e| Failure {
                error: self.transport_error(&e),
                retry_after: None,
                // A reset can look like a failed connect when the pooled connection was
                // reused: every failure but a timeout counts.
                dropped: !e.is_timeout(),
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let text = tokio::time::timeout(self.config.timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Err(Failure {
            error: http_error(status.as_u16(), &text, &self.config),
            retry_after,
            dropped: false,
        })
    }

    fn transport_error(&self, error: &reqwest::Error) -> ProviderError {
        let mut cause = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(inner) = source {
            cause = inner.to_string();
            source = inner.source();
        }
        ProviderError::new(
            ErrorKind::Unreachable,
            format!(
                "cannot reach the provider at {} ({cause}): check provider.baseUrl and that the \
                 server is running",
                self.config.base_url
            ),
        )
    }

    /// The stream's completion, or its error and whether content had been forwarded.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        events: &UnboundedSender<ProviderEvent>,
        cancel: &CancellationToken,
    ) -> Result<Completion, (ProviderError, bool)> {
        let mut forwarded = false;
        self.read_events(response, events, cancel, &mut forwarded)
            .await
            .map_err(|error| (error, forwarded))
    }

    async fn read_events(
        &self,
        mut response: reqwest::Response,
        events: &UnboundedSender<ProviderEvent>,
        cancel: &CancellationToken,
        forwarded: &mut bool,
    ) -> Result<Completion, ProviderError> {
        let mut decoder = SseDecoder::default();
        let mut assembler = Assembler::new(self.config.kind);
        loop {
            let chunk = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(cancelled()),
                chunk = tokio::time::timeout(self.config.timeout, response.chunk()) => chunk,
            };
            let bytes = match chunk {
                Err(_) => {
                    return Err(ProviderError::new(
                        ErrorKind::StreamCut,
                        format!(
                            "the provider stream went silent for {} ms (provider.timeoutMs)",
                            self.config.timeout.as_millis()
                        ),
                    ))
                }
                Ok(Err(error)) => {
                    return Err(ProviderError::new(
                        ErrorKind::StreamCut,
                        format!("the provider's stream was cut: {error}"),
                    ))
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(bytes))) => bytes,
            };
            for sse in decoder.push(&bytes) {
                for event in assembler.on_event(&sse)? {
                    *forwarded |= matches!(
                        event,
                        ProviderEvent::Text(_)
                            | ProviderEvent::Reasoning(_)
                            | ProviderEvent::ToolCallStarted { .. }
                    );
                    let _ = events.send(event);
                }
                if assembler.done {
                    return Ok(assembler.completion(events));
                }
            }
        }
        for sse in decoder.finish() {
            for event in assembler.on_event(&sse)? {
                let _ = events.send(event);
            }
        }
        if assembler.finished() {
            Ok(assembler.completion(events))
        } else if decoder_saw_nothing(&assembler) {
            Err(ProviderError::new(ErrorKind::StreamCut, EMPTY_STREAM))
        } else {
            Err(ProviderError::new(
                ErrorKind::StreamCut,
                "the provider's stream ended before the answer was complete",
            ))
        }
    }
}

struct Failure {
    error: ProviderError,
    retry_after: Option<Duration>,
    /// The connection was made and then dropped (reset) before an answer came.
    dropped: bool,
}

fn cancelled() -> ProviderError {
    ProviderError::new(ErrorKind::Cancelled, "cancelled")
}

/// Exponential backoff for retry `attempt` (1-based) with ±25 % jitter from `seed`.
pub fn backoff(attempt: u32, seed: u64) -> Duration {
    let base = FIRST_BACKOFF
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    // seed → a factor in [0.75, 1.25)
    let factor = 0.75 + (seed % 1000) as f64 / 2000.0;
    base.mul_f64(factor)
}

fn jitter_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    hasher.finish()
}

/// The error for a non-2xx answer: status, the provider's own message, and what to do.
pub fn http_error(status: u16, body: &str, config: &ProviderConfig) -> ProviderError {
    let detail = error_detail(body);
    let shown = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    if is_context_length_exceeded(status, body) {
        return ProviderError::new(
            ErrorKind::ContextLengthExceeded,
            format!("the request exceeds the model's context length (HTTP {status}){shown}"),
        );
    }
    match status {
        401 | 403 => ProviderError::new(
            ErrorKind::Auth,
            format!(
                "the provider refused the API key (HTTP {status}){shown}; check the key in {}",
                config.api_key_env
            ),
        ),
        404 => ProviderError::new(
            ErrorKind::BadRequest,
            format!(
                "HTTP 404 from {}{shown}; check provider.baseUrl and provider.model ({})",
                config.base_url, config.model
            ),
        ),
        429 => ProviderError::new(
            ErrorKind::RateLimited,
            format!("rate limited (HTTP 429){shown}"),
        ),
        500..=599 => ProviderError::new(
            ErrorKind::Server,
            format!("the provider failed (HTTP {status}){shown}"),
        ),
        _ => ProviderError::new(
            ErrorKind::BadRequest,
            format!("the provider rejected the request (HTTP {status}){shown}"),
        ),
    }
}

/// OpenAI's `context_length_exceeded` code, Anthropic's "prompt is too long", and the
/// wordings of compatible servers (llama.cpp, vLLM, Ollama).
fn is_context_length_exceeded(status: u16, body: &str) -> bool {
    if !matches!(status, 400 | 413 | 422) {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "exceed_context_size",
        "exceeds the context",
        "context window",
        "too many tokens",
        "context length",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// What a context-length error says about the request: (tokens of the request as the
/// provider counted them, the model's limit), when it says. The first is the best
/// calibration sample there is (the provider's own count of what agentls estimated); the
/// second is the real window when the configured one was wrong.
pub fn context_figures(message: &str) -> (Option<usize>, Option<usize>) {
    use std::sync::OnceLock;
    static PATTERNS: OnceLock<Vec<(regex::Regex, bool)>> = OnceLock::new();
    // (pattern, whether the first group is the request and the second the limit)
    let patterns = PATTERNS.get_or_init(|| {
        [
            // llama-cpp-python
            (r"(?i)requested tokens \((\d+)\) exceed context window of (\d+)", true),
            // Anthropic
            (r"(?i)prompt is too long: (\d+) tokens > (\d+) maximum", true),
            // OpenAI, vLLM
            (r"(?i)maximum context length is (\d+) tokens.*?(?:messages resulted in|\((\d+) in the messages|requested) ?(\d+)?", false),
        ]
        .into_iter()
        .filter_map(|(p, order)| regex::Regex::new(p).ok().map(|r| (r, order)))
        .collect()
    });
    let number = |m: Option<regex::Match>| m.and_then(|m| m.as_str().parse::<usize>().ok());
    for (pattern, request_first) in patterns {
        if let Some(captures) = pattern.captures(message) {
            return if *request_first {
                (number(captures.get(1)), number(captures.get(2)))
            } else {
                let requested = number(captures.get(2)).or(number(captures.get(3)));
                (requested, number(captures.get(1)))
            };
        }
    }
    (None, None)
}

/// The provider's error message from a JSON error body, else the body's start.
fn error_detail(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v["error"]["message"]
            .as_str()
            .or_else(|| v["error"].as_str())
            .or_else(|| v["message"].as_str())
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    if text.chars().count() > ERROR_BODY_CHARS {
        let cut: String = text.chars().take(ERROR_BODY_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// One server-sent event: its `event:` name (empty when absent) and its data lines joined.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
    /// Lines that were neither a field nor a comment (reported, not fatal).
    pub unknown: Vec<String>,
}

/// Incremental SSE decoding (the WHATWG event-stream format): bytes in, whole events out.
/// Lines end with LF, CRLF or CR; a blank line ends an event.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    current: SseEvent,
    has_data: bool,
    /// The previous chunk ended with CR: an LF starting this one belongs to it.
    after_cr: bool,
}

impl SseDecoder {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = bytes;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' | b'\r' => {
                    self.buffer.extend_from_slice(&bytes[start..i]);
                    let line = std::mem::take(&mut self.buffer);
                    self.line(&line, &mut out);
                    if bytes[i] == b'\r' {
                        if i + 1 == bytes.len() {
                            self.after_cr = true;
                        } else if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        self.buffer.extend_from_slice(&bytes[start..]);
        out
    }

    /// The end of the stream: a last event without its blank line still counts.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.buffer.is_empty() {
            let line = std::mem::take(&mut self.buffer);
            self.line(&line, &mut out);
        }
        self.line(b"", &mut out);
        out
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data || !self.current.unknown.is_empty() {
                out.push(std::mem::take(&mut self.current));
            }
            self.current = SseEvent::default();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return; // a comment (keep-alive)
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = value.to_string(),
            "id" | "retry" => {}
            _ => self.current.unknown.push(line.into_owned()),
        }
    }
}

#[derive(Debug, Default, Clone)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Turns a provider's events into `ProviderEvent`s: text and reasoning at once, tool calls
/// when complete, usage at the end. Pure.
#[derive(Debug)]
pub struct Assembler {
    kind: ProviderKind,
    /// Tool calls in order of first appearance, with the provider's index.
    calls: Vec<(u64, PartialCall)>,
    /// Makes ids unique for calls the provider sent without one.
    nonce: String,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// The provider said the stream is over (`[DONE]`, `message_stop`).
    pub done: bool,
    /// Any event with data arrived.
    pub saw_event: bool,
}

impl Assembler {
    pub fn new(kind: ProviderKind) -> Assembler {
        Assembler {
            kind,
            calls: Vec::new(),
            nonce: {
                use std::hash::{BuildHasher, Hasher};
                let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
                hasher.write_u8(0);
                format!("{:08x}", hasher.finish() as u32)
            },
            usage: None,
            finish_reason: None,
            done: false,
            saw_event: false,
        }
    }

    /// Whether the model finished its message (so an end of stream now is not a cut).
    pub fn finished(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    /// The events of one SSE event, or the error the provider reported in the stream.
    pub fn on_event(&mut self, sse: &SseEvent) -> Result<Vec<ProviderEvent>, ProviderError> {
        let mut out: Vec<ProviderEvent> = sse
            .unknown
            .iter()
            .map(|line| ProviderEvent::Skipped { line: line.clone() })
            .collect();
        if sse.data.is_empty() && sse.event.is_empty() {
            return Ok(out);
        }
        self.saw_event = true;
        if self.kind == ProviderKind::OpenAi && sse.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(out);
        }
        let value: Value = match serde_json::from_str(&sse.data) {
            Ok(value) => value,
            Err(_) => {
                out.push(ProviderEvent::Skipped {
                    line: format!("data: {}", sse.data),
                });
                return Ok(out);
            }
        };
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(error));
        }
        match self.kind {
            ProviderKind::OpenAi => self.openai(&value, &mut out),
            ProviderKind::Anthropic => self.anthropic(&sse.event, &value, &mut out),
        }
        Ok(out)
    }

    /// A whole (non-streamed) Chat Completions answer: the same parts as a stream's deltas,
    /// so its tool calls get the same ids and defaults. Ends the answer.
    pub fn on_openai_message(&mut self, value: &Value) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        self.openai_usage(value);
        let choice = &value["choices"][0];
        let message = &choice["message"];
        openai_text_parts(message, &mut out);
        for (position, call) in message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let id = call["id"].as_str().unwrap_or("");
            let (_, partial) = self.call_with_id(position as u64, id);
            partial.id = id.to_string();
            partial.name = call["function"]["name"].as_str().unwrap_or("").to_string();
            partial.arguments = call["function"]["arguments"]
                .as_str()
                .unwrap_or("")
                .to_string();
        }
        self.finish_reason = choice["finish_reason"].as_str().map(str::to_string);
        self.done = true;
        out
    }

    fn openai_usage(&mut self, value: &Value) {
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            });
        }
    }

    fn openai(&mut self, value: &Value, out: &mut Vec<ProviderEvent>) {
        self.openai_usage(value);
        let Some(choice) = value["choices"].get(0) else {
            return;
        };
        let delta = &choice["delta"];
        openai_text_parts(delta, out);
        for (position, call) in delta["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = call["index"].as_u64().unwrap_or(position as u64);
            let function = &call["function"];
            let id = call["id"].as_str().unwrap_or("");
            let name = function["name"].as_str().unwrap_or("");
            let arguments = function["arguments"].as_str().unwrap_or("");
            // Some servers (Ollama) give every parallel call index 0: a new id on a known
            // index starts a new call.
            let (started, partial) = self.call_with_id(index, id);
            if !id.is_empty() {
                partial.id = id.to_string();
            }
            partial.name.push_str(name);
            partial.arguments.push_str(arguments);
            if started && !partial.name.is_empty() {
                out.push(ProviderEvent::ToolCallStarted {
                    id: partial.id.clone(),
                    name: partial.name.clone(),
                });
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
    }

    fn anthropic(&mut self, event: &str, value: &Value, out: &mut Vec<ProviderEvent>) {
        let kind = value["type"].as_str().unwrap_or(event);
        match kind {
            "message_start" => {
                let usage = &value["message"]["usage"];
                let input = [
                    "input_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                ]
                .iter()
                .map(|k| usage[*k].as_u64().unwrap_or(0))
                .sum();
                self.usage = Some(Usage {
                    input_tokens: input,
                    output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
                });
            }
            "content_block_start" => {
                let block = &value["content_block"];
                let index = value["index"].as_u64().unwrap_or(0);
                match block["type"].as_str() {
                    Some("tool_use") => {
                        let (_, partial) = self.call(index);
                        partial.id = block["id"].as_str().unwrap_or("").to_string();
                        partial.name = block["name"].as_str().unwrap_or("").to_string();
                        let (id, name) = (partial.id.clone(), partial.name.clone());
                        out.push(ProviderEvent::ToolCallStarted { id, name });
                    }
                    Some("text") => {
                        if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(ProviderEvent::Text(text.to_string()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = &value["delta"];
                let index = value["index"].as_u64().unwrap_or(0);
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        if let Some(text) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(ProviderEvent::Text(text.to_string()));
                        }
                    }
                    Some("thinking_delta") => {
                        if let Some(text) = delta["thinking"].as_str().filter(|t| !t.is_empty()) {
                            out.push(ProviderEvent::Reasoning(text.to_string()));
                        }
                    }
                    Some("input_json_delta") => {
                        let json = delta["partial_json"].as_str().unwrap_or("");
                        self.call(index).1.arguments.push_str(json);
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.finish_reason = Some(reason.to_string());
                }
                if let Some(output) = value["usage"]["output_tokens"].as_u64() {
                    let usage = self.usage.get_or_insert_with(Usage::default);
                    usage.output_tokens = output;
                    if let Some(input) = value["usage"]["input_tokens"].as_u64() {
                        usage.input_tokens = usage.input_tokens.max(input);
                    }
                }
            }
            "message_stop" => self.done = true,
            _ => {} // ping, content_block_stop
        }
    }

    /// The latest partial call at `index`, unless `id` names a different call; and whether
    /// it was just created.
    fn call_with_id(&mut self, index: u64, id: &str) -> (bool, &mut PartialCall) {
        let latest = self.calls.iter().rposition(|(i, _)| *i == index);
        match latest {
            Some(at)
                if id.is_empty() || self.calls[at].1.id.is_empty() || self.calls[at].1.id == id =>
            {
                (false, &mut self.calls[at].1)
            }
            _ => {
                self.calls.push((index, PartialCall::default()));
                (true, &mut self.calls.last_mut().expect("just pushed").1)
            }
        }
    }

    /// The partial call at `index`, and whether it was just created.
    fn call(&mut self, index: u64) -> (bool, &mut PartialCall) {
        match self.calls.iter().position(|(i, _)| *i == index) {
            Some(at) => (false, &mut self.calls[at].1),
            None => {
                self.calls.push((index, PartialCall::default()));
                (true, &mut self.calls.last_mut().expect("just pushed").1)
            }
        }
    }

    /// Sends the finished tool calls and the usage; the stream's result.
    pub fn completion(&mut self, events: &UnboundedSender<ProviderEvent>) -> Completion {
        for (position, (_, call)) in self.calls.drain(..).enumerate() {
            let id = if call.id.is_empty() {
                format!("call_{}_{position}", self.nonce)
            } else {
                call.id
            };
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                call.arguments
            };
            let _ = events.send(ProviderEvent::ToolCall {
                id,
                name: call.name,
                arguments,
            });
        }
        if let Some(usage) = self.usage {
            let _ = events.send(ProviderEvent::Usage(usage));
        }
        Completion {
            usage: self.usage,
            finish_reason: self.finish_reason.clone(),
        }
    }
}

/// The reasoning and the text of an OpenAI message or delta (compatible servers name the
/// reasoning either way).
fn openai_text_parts(message: &Value, out: &mut Vec<ProviderEvent>) {
    for key in ["reasoning_content", "reasoning"] {
        if let Some(text) = message[key].as_str().filter(|t| !t.is_empty()) {
            out.push(ProviderEvent::Reasoning(text.to_string()));
        }
    }
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        out.push(ProviderEvent::Text(text.to_string()));
    }
}

/// An `error` object inside a stream (OpenAI-compatible servers and Anthropic's `error`
/// event): overloads are retryable, a too-long prompt is context-length-exceeded.
fn stream_error(error: &Value) -> ProviderError {
    let message = error["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    let kind_name = error["type"]
        .as_str()
        .or_else(|| error["code"].as_str())
        .unwrap_or("");
    if is_context_length_exceeded(400, &format!("{kind_name} {message}")) {
        return ProviderError::new(
            ErrorKind::ContextLengthExceeded,
            format!("the request exceeds the model's context length: {message}"),
        );
    }
    let kind = match kind_name {
        "overloaded_error" | "api_error" | "server_error" => ErrorKind::Server,
        "rate_limit_error" => ErrorKind::RateLimited,
        _ => ErrorKind::StreamCut,
    };
    ProviderError::new(
        kind,
        format!("the provider reported an error mid-stream: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(decoder.push(chunk));
        }
        out.extend(decoder.finish());
        out
    }

    #[test]
    fn sse_events_survive_any_split_and_any_line_ending() {
        let stream = b"event: a\r\ndata: {\"x\":1}\r\n\r\n: keep-alive\n\ndata: one\ndata: two\n\nevent: b\rdata: 3\r\r";
        let whole = decode_all(&[stream]);
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert_eq!(whole[0].event, "a");
        assert_eq!(whole[0].data, "{\"x\":1}");
        assert_eq!(whole[1].data, "one\ntwo");
        assert_eq!(whole[2].event, "b");
        assert_eq!(whole[2].data, "3");
        // Every split point, including inside CRLF, gives the same events.
        for at in 0..stream.len() {
            let (a, b) = stream.split_at(at);
            assert_eq!(decode_all(&[a, b]), whole, "split at {at}");
        }
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_kept_and_unknown_lines_reported() {
        let events = decode_all(&[b"garbage line\n\ndata: [DONE]"]);
        assert_eq!(events[0].unknown, ["garbage line"]);
        assert_eq!(events[1].data, "[DONE]");
    }

    fn sse(data: Value) -> SseEvent {
        SseEvent {
            event: String::new(),
            data: data.to_string(),
            unknown: Vec::new(),
        }
    }

    fn run(kind: ProviderKind, events: &[SseEvent]) -> (Vec<ProviderEvent>, Completion, bool) {
        let mut assembler = Assembler::new(kind);
        let mut out = Vec::new();
        for event in events {
            out.extend(assembler.on_event(event).unwrap());
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let finished = assembler.finished();
        let completion = assembler.completion(&tx);
        while let Ok(event) = rx.try_recv() {
            out.push(event);
        }
        (out, completion, finished)
    }

    #[test]
    fn openai_deltas_assemble_text_reasoning_parallel_tool_calls_and_usage() {
        let events = [
            sse(
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "hmm"}}]}),
            ),
            sse(json!({"choices": [{"index": 0, "delta": {"content": "Look"}}]})),
            sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "grep", "arguments": "{\"pat"}}]}}]}),
            ),
            sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "read_file", "arguments": ""}}]}}]}),
            ),
            sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "tern\":\"x\"}"}}]}}]}),
            ),
            sse(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
            sse(json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 7}})),
            SseEvent {
                data: "[DONE]".into(),
                ..Default::default()
            },
        ];
        let (out, completion, finished) = run(ProviderKind::OpenAi, &events);
        assert!(finished);
        assert_eq!(
            out,
            [
                ProviderEvent::Reasoning("hmm".into()),
                ProviderEvent::Text("Look".into()),
                ProviderEvent::ToolCallStarted {
                    id: "a".into(),
                    name: "grep".into()
                },
                ProviderEvent::ToolCallStarted {
                    id: "b".into(),
                    name: "read_file".into()
                },
                ProviderEvent::ToolCall {
                    id: "a".into(),
                    name: "grep".into(),
                    arguments: "{\"pattern\":\"x\"}".into()
                },
                ProviderEvent::ToolCall {
                    id: "b".into(),
                    name: "read_file".into(),
                    arguments: "{}".into()
                },
                ProviderEvent::Usage(Usage {
                    input_tokens: 50,
                    output_tokens: 7
                }),
            ]
        );
        assert_eq!(completion.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn a_whole_answer_gives_the_events_of_a_stream() {
        let mut assembler = Assembler::new(ProviderKind::OpenAi);
        let mut out = assembler.on_openai_message(&json!({
            "choices": [{"message": {"content": "Reading.", "tool_calls": [
                {"type": "function", "function": {"name": "read_file", "arguments": ""}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        }));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let completion = assembler.completion(&tx);
        while let Ok(event) = rx.try_recv() {
            out.push(event);
        }
        assert_eq!(out[0], ProviderEvent::Text("Reading.".into()));
        // The same id and argument defaults as a streamed call without an id.
        assert!(
            matches!(&out[1], ProviderEvent::ToolCall { id, arguments, .. } if id.starts_with("call_") && id.len() > 7 && arguments == "{}"),
            "{out:?}"
        );
        assert_eq!(
            completion.usage,
            Some(Usage {
                input_tokens: 7,
                output_tokens: 3
            })
        );
        assert_eq!(completion.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn calls_sharing_an_index_stay_apart_and_calls_without_ids_get_unique_ones() {
        // Ollama: every parallel call at index 0, each with its own id.
        let events = [
            sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "x", "function": {"name": "read_file", "arguments": "{}"}}]}}]}),
            ),
            sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "y", "function": {"name": "grep", "arguments": "{\"pattern\":\"a\"}"}}]}}]}),
            ),
            sse(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        ];
        let (out, _, _) = run(ProviderKind::OpenAi, &events);
        let calls: Vec<&ProviderEvent> = out
            .iter()
            .filter(|e| matches!(e, ProviderEvent::ToolCall { .. }))
            .collect();
        assert_eq!(calls.len(), 2, "{out:?}");
        // No ids at all: two streams never produce the same id.
        let anonymous = [
            sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "list_dir", "arguments": "{}"}}]}}]}),
            ),
            sse(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        ];
        let id = |out: Vec<ProviderEvent>| {
            out.into_iter()
                .find_map(|e| match e {
                    ProviderEvent::ToolCall { id, .. } => Some(id),
                    _ => None,
                })
                .unwrap()
        };
        assert_ne!(
            id(run(ProviderKind::OpenAi, &anonymous).0),
            id(run(ProviderKind::OpenAi, &anonymous).0)
        );
    }

    #[test]
    fn anthropic_blocks_assemble_and_cached_input_counts_as_input() {
        let event = |name: &str, data: Value| SseEvent {
            event: name.into(),
            data: data.to_string(),
            unknown: Vec::new(),
        };
        let events = [
            event(
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 1}}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "plan"}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}}),
            ),
            event("ping", json!({"type": "ping"})),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"pattern\":"}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"x\"}"}}),
            ),
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ];
        let (out, completion, finished) = run(ProviderKind::Anthropic, &events);
        assert!(finished);
        assert_eq!(out[0], ProviderEvent::Reasoning("plan".into()));
        assert_eq!(out[1], ProviderEvent::Text("Hi".into()));
        assert_eq!(
            out[3],
            ProviderEvent::ToolCall {
                id: "toolu_1".into(),
                name: "grep".into(),
                arguments: "{\"pattern\":\"x\"}".into()
            }
        );
        assert_eq!(
            completion.usage,
            Some(Usage {
                input_tokens: 100,
                output_tokens: 30
            })
        );
    }

    #[test]
    fn malformed_data_is_skipped_and_a_missing_finish_is_not_finished() {
        let events = [
            sse(json!({"choices": [{"index": 0, "delta": {"content": "a"}}]})),
            SseEvent {
                data: "{not json".into(),
                ..Default::default()
            },
        ];
        let (out, _, finished) = run(ProviderKind::OpenAi, &events);
        assert!(!finished, "no finish_reason and no [DONE]: a cut");
        assert!(matches!(&out[1], ProviderEvent::Skipped { line } if line.contains("{not json")));
    }

    #[test]
    fn errors_in_a_stream_and_in_http_answers_are_classified() {
        let mut assembler = Assembler::new(ProviderKind::Anthropic);
        let overloaded = SseEvent { event: "error".into(), data: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string(), unknown: vec![] };
        let err = assembler.on_event(&overloaded).unwrap_err();
        assert_eq!((err.kind, err.retryable), (ErrorKind::Server, true));

        let config = ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url: "http://x/v1".into(),
            model: "m".into(),
            api_key_env: "KEY_VAR".into(),
            max_output_tokens: None,
            timeout: Duration::from_secs(1),
            max_retries: 0,
            temperature: None,
        };
        let exceeded = http_error(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
            &config,
        );
        assert_eq!(exceeded.kind, ErrorKind::ContextLengthExceeded);
        assert!(!exceeded.retryable);
        let anthropic = http_error(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            &config,
        );
        assert_eq!(anthropic.kind, ErrorKind::ContextLengthExceeded);
        let auth = http_error(401, r#"{"error":{"message":"bad key"}}"#, &config);
        assert!(auth.message.contains("KEY_VAR") && auth.message.contains("bad key"));
        assert!(http_error(503, "", &config).retryable);
        assert!(http_error(429, "", &config).retryable);
        assert!(!http_error(400, r#"{"error":{"message":"bad tool schema"}}"#, &config).retryable);
    }

    #[test]
    fn context_errors_tell_the_real_request_size_and_window() {
        assert_eq!(
            context_figures("Requested tokens (2345) exceed context window of 2048"),
            (Some(2345), Some(2048))
        );
        assert_eq!(
            context_figures("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."),
            (Some(9000), Some(8192))
        );
        assert_eq!(
            context_figures("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."),
            (Some(5000), Some(4096))
        );
        assert_eq!(
            context_figures("prompt is too long: 210000 tokens > 200000 maximum"),
            (Some(210000), Some(200000))
        );
        assert_eq!(context_figures("context_length_exceeded"), (None, None));
    }

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        for seed in [0, 499, 999, 123_456] {
            let first = backoff(1, seed);
            assert!(first >= Duration::from_millis(375) && first < Duration::from_millis(625));
            let third = backoff(3, seed);
            assert!(third >= Duration::from_millis(1500) && third < Duration::from_millis(2500));
            assert!(backoff(30, seed) <= MAX_BACKOFF.mul_f64(1.25));
        }
    }

    #[test]
    fn endpoints_follow_each_providers_convention() {
        assert_eq!(
            ProviderKind::OpenAi.endpoint("http://h:1/v1/"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(
            ProviderKind::Anthropic.endpoint("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            ProviderKind::Anthropic.endpoint("http://h/v1"),
            "http://h/v1/messages"
        );
    }
}
