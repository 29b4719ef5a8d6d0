//! Model providers over HTTP (reqwest): OpenAI Chat Completions and Anthropic Messages,
//! both streamed as server-sent events. The request shapes, SSE decoding, the assembly of
//! streamed deltas and the classification of faults are the core's (`agentls_core::wire`);
//! this module owns the HTTP exchange and the retry loop around them (backoff for 429/5xx,
//! a cut stream, context-length-exceeded, a missing key).
//!
//! Events go out on a channel as they are decoded, so the agent loop can forward a chunk
//! to the editor the moment it arrives. API keys are read per request from
//! `store::secrets` (captured at start-up) or else the environment, and never logged or
//! returned.

pub mod tls;

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::store::secrets;
use agentls_core::context::Request;
use agentls_core::prompts::Prompts;
use agentls_core::wire::faults::{backoff, http_error};
use agentls_core::wire::sse::SseDecoder;
use agentls_core::wire::stream::Assembler;
use agentls_core::wire::{Completion, ErrorKind, ProviderConfig, ProviderError, ProviderEvent};

/// How one request went: ended (answered, or failed for good), or failed in a way that may
/// be retried.
enum Exchange {
    Ended(Result<Completion, ProviderError>),
    Failed(Failure),
}

/// A request body as posted.
fn encode(body: &Value) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body).map_err(|e| {
        ProviderError::new(ErrorKind::Config, format!("cannot encode the request: {e}"))
    })
}

/// The message of a 200 answer whose stream carried no event at all.
const EMPTY_STREAM: &str = "the provider answered with an empty stream";

/// The assembler's last events (finished tool calls, usage) sent on, and the stream's result.
fn complete(assembler: &mut Assembler, events: &UnboundedSender<ProviderEvent>) -> Completion {
    let mut last = Vec::new();
    let completion = assembler.completion(&mut last);
    for event in last {
        let _ = events.send(event);
    }
    completion
}

fn decoder_saw_nothing(assembler: &Assembler) -> bool {
    !assembler.saw_event
}

/// A Retry-After longer than this is not waited for: the error is reported instead.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

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
        tls::install();
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
        agentls_core::wire::body(&self.config, request, prompts)
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
        let body = encode(&self.body(request, prompts))?;
        let url = self.config.kind.endpoint(&self.config.base_url);
        let mut attempt = 0;
        loop {
            let failure = match self
                .exchange(&url, key.as_deref(), &body, events, cancel)
                .await
            {
                Exchange::Ended(result) => return result,
                Exchange::Failed(failure) => failure,
            };
            // A server that drops a streamed request it cannot serve, resetting it or closing
            // the stream empty (llama-cpp-python past its window), says why when asked
            // without streaming: once, on a fresh connection.
            if failure.dropped && self.config.kind.asks_again_unstreamed() {
                let key = key.as_deref();
                return self
                    .complete_without_streaming(request, prompts, &url, key, events, cancel)
                    .await;
            }
            attempt += 1;
            self.before_retry(attempt, failure, events, cancel).await?;
        }
    }

    /// One request and its streamed answer: how it ended, or a failure that may be retried.
    async fn exchange(
        &self,
        url: &str,
        key: Option<&str>,
        body: &[u8],
        events: &UnboundedSender<ProviderEvent>,
        cancel: &CancellationToken,
    ) -> Exchange {
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Exchange::Ended(Err(cancelled())),
            response = self.send(url, key, body.to_vec()) => response,
        };
        let response = match response {
            Ok(response) => response,
            Err(failure) => return Exchange::Failed(failure),
        };
        match self.read_stream(response, events, cancel).await {
            Ok(completion) => Exchange::Ended(Ok(completion)),
            // Closed empty after the 200: see `dropped`.
            Err((error, false))
                if error.message == EMPTY_STREAM && self.config.kind.asks_again_unstreamed() =>
            {
                Exchange::Failed(Failure {
                    error,
                    retry_after: None,
                    dropped: true,
                })
            }
            // An overload or rate limit reported in the stream before any content
            // (Anthropic does this after a 200) is retried like an HTTP 529/429.
            Err((error, false))
                if matches!(error.kind, ErrorKind::Server | ErrorKind::RateLimited) =>
            {
                Exchange::Failed(Failure {
                    error,
                    retry_after: None,
                    dropped: false,
                })
            }
            Err((error, _)) => Exchange::Ended(Err(error)),
        }
    }

    /// Waits before retry number `attempt` (told as a `Retrying` event), or gives the
    /// failure's error back when it is not retried: not retryable, retries used up, a
    /// Retry-After too long, or a cancel.
    async fn before_retry(
        &self,
        attempt: u32,
        failure: Failure,
        events: &UnboundedSender<ProviderEvent>,
        cancel: &CancellationToken,
    ) -> Result<(), ProviderError> {
        if !failure.error.retryable || attempt > self.config.max_retries {
            return Err(failure.error);
        }
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
            () = cancel.cancelled() => Err(cancelled()),
            () = tokio::time::sleep(delay) => Ok(()),
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
        let body = encode(&body)?;
        // A fresh connection: the pooled one is what the server just dropped.
        tls::install();
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
        for event in assembler.on_openai_message(&value)? {
            let _ = events.send(event);
        }
        Ok(complete(&mut assembler, events))
    }

    /// The key: captured from the environment (`store::secrets`: at start-up, or now for a
    /// name without a secret's suffix). Required by the official endpoints; a custom base URL (Ollama, llama.cpp, vLLM
    /// on localhost) may run without one.
    fn api_key(&self) -> Result<Option<String>, ProviderError> {
        let variable = &self.config.api_key_env;
        secrets::capture_named(variable);
        let key = secrets::get(variable).filter(|k| !k.trim().is_empty());
        match key {
            Some(key) => Ok(Some(key.trim().to_string())),
            None if self.config.key_required => Err(ProviderError::new(
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
        for (name, value) in self.config.kind.headers(key) {
            let Ok(mut value) = reqwest::header::HeaderValue::from_str(&value) else {
                return Err(Failure {
                    error: ProviderError::new(
                        ErrorKind::Config,
                        format!("the {name} header cannot carry the configured value"),
                    ),
                    retry_after: None,
                    dropped: false,
                });
            };
            // Kept out of any debug print of the request, as `bearer_auth` does.
            value.set_sensitive(true);
            builder = builder.header(name, value);
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
                    return Ok(complete(&mut assembler, events));
                }
            }
        }
        for sse in decoder.finish() {
            for event in assembler.on_event(&sse)? {
                let _ = events.send(event);
            }
        }
        if assembler.finished() {
            Ok(complete(&mut assembler, events))
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

fn jitter_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    hasher.finish()
}
