//! The providers' wire: the two request shapes (`openai`, `anthropic`), server-sent-event
//! decoding (`sse`), the assembly of streamed deltas into text, reasoning, tool calls and
//! usage (`stream`), and the fault policy as data (`faults`: error classification, backoff).
//! The HTTP exchange itself is the server's `provider` module; nothing here does IO.

use std::time::Duration;

use serde_json::{json, Value};

use crate::context::Request;
use crate::prompts::Prompts;

pub mod anthropic;
pub mod faults;
pub mod openai;
pub mod sse;
pub mod stream;

pub use crate::provider_kind::{ProviderKind, ANTHROPIC_VERSION};

/// Everything a provider needs; no secret in it (the key is read from `api_key_env` per
/// request), so it may be printed and compared.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    /// A request without a key is refused before it is sent: the preset's own service at
    /// its own URL requires one (a custom `provider.baseUrl` may not).
    pub key_required: bool,
    pub max_output_tokens: Option<usize>,
    /// Connect timeout, and the longest silence tolerated inside a stream.
    pub timeout: Duration,
    pub max_retries: u32,
    pub temperature: Option<f64>,
    /// Whether the model takes images (`provider.images`): when not, an image in the
    /// history is sent as its label only.
    pub images: bool,
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
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ProviderError {
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

/// Anthropic requires `max_tokens`; this is used when `provider.maxOutputTokens` is unset.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: usize = 8192;

/// The one place a request becomes a provider's JSON body (what is posted, streamed).
pub fn body(config: &ProviderConfig, request: &Request<'_>, prompts: &Prompts) -> Value {
    match config.kind {
        ProviderKind::OpenAi => {
            let mut body = json!({
                "model": config.model,
                "messages": openai::messages_for(request, prompts, config.images),
                "stream": true,
                "stream_options": {"include_usage": true},
            });
            if !request.tools.is_empty() {
                body["tools"] = Value::Array(openai::tools(request.tools));
            }
            if let Some(max) = config.max_output_tokens {
                body["max_tokens"] = json!(max);
            }
            if let Some(temperature) = request.temperature.or(config.temperature) {
                body["temperature"] = json!(temperature);
            }
            body
        }
        ProviderKind::Anthropic => {
            let mut body = anthropic::body_for(request, prompts, config.images);
            body["model"] = json!(config.model);
            body["max_tokens"] = json!(config
                .max_output_tokens
                .unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS));
            body["stream"] = json!(true);
            if let Some(temperature) = request.temperature.or(config.temperature) {
                body["temperature"] = json!(temperature);
            }
            body
        }
    }
}

/// What the model reads of `request` in `kind`'s shape, the system prompt first (Anthropic
/// keeps it out of `messages`; it is shown as the first entry all the same).
pub fn messages(kind: ProviderKind, request: &Request<'_>, prompts: &Prompts) -> Vec<Value> {
    match kind {
        ProviderKind::Anthropic => {
            let body = anthropic::body(request, prompts);
            let mut messages = vec![json!({"role": "system", "content": body["system"]})];
            messages.extend(body["messages"].as_array().cloned().unwrap_or_default());
            messages
        }
        ProviderKind::OpenAi => openai::messages(request, prompts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
