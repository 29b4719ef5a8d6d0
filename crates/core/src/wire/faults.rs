//! The fault policy as data: which answers are which errors (and whether a retry may help),
//! what a context-length error says about the request, and the backoff between retries.

use std::time::Duration;

use serde_json::Value;

use super::{ErrorKind, ProviderConfig, ProviderError};

/// Backoff of the first retry; doubled per attempt, with ±25 % jitter, at most MAX_BACKOFF.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How much of an error body is quoted in a message.
const ERROR_BODY_CHARS: usize = 400;

/// Exponential backoff for retry `attempt` (1-based) with ±25 % jitter from `seed`.
pub fn backoff(attempt: u32, seed: u64) -> Duration {
    let base = FIRST_BACKOFF
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    // seed → a factor in [0.75, 1.25)
    let factor = 0.75 + (seed % 1000) as f64 / 2000.0;
    base.mul_f64(factor)
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
pub fn is_context_length_exceeded(status: u16, body: &str) -> bool {
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
            // llama.cpp's own server (llama-server, xllamacpp)
            (r"(?i)request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", true),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sse::SseEvent;
    use crate::wire::stream::Assembler;
    use crate::wire::ProviderKind;
    use serde_json::json;

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
            key_required: false,
            max_output_tokens: None,
            timeout: Duration::from_secs(1),
            max_retries: 0,
            temperature: None,
            images: false,
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
        assert_eq!(
            context_figures("request (3031 tokens) exceeds the available context size (1024 tokens), try increasing it"),
            (Some(3031), Some(1024))
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
}
