//! The assembly of a provider's streamed (or whole) answer into `ProviderEvent`s.

use serde_json::Value;

use super::faults::is_context_length_exceeded;
use super::sse::SseEvent;
use super::{Completion, ErrorKind, ProviderError, ProviderEvent, ProviderKind, Usage};

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
            return Err(provider_error(error, "mid-stream"));
        }
        match self.kind {
            ProviderKind::OpenAi => self.openai(&value, &mut out),
            ProviderKind::Anthropic => self.anthropic(&sse.event, &value, &mut out),
        }
        Ok(out)
    }

    /// A whole (non-streamed) Chat Completions answer: the same parts as a stream's deltas,
    /// so its tool calls get the same ids and defaults. Ends the answer. An `error` object
    /// (servers answer errors with a 200 too) or an answer without a message is the
    /// provider's error, as in a stream: never an empty answer.
    pub fn on_openai_message(
        &mut self,
        value: &Value,
    ) -> Result<Vec<ProviderEvent>, ProviderError> {
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            return Err(provider_error(error, "in its answer"));
        }
        let choice = &value["choices"][0];
        let message = &choice["message"];
        if !message.is_object() {
            let mut shown = value.to_string();
            if shown.chars().count() > 200 {
                shown = shown.chars().take(200).collect::<String>() + "…";
            }
            return Err(ProviderError::new(
                ErrorKind::BadRequest,
                format!("the provider's answer holds no message: {shown}"),
            ));
        }
        let mut out = Vec::new();
        self.openai_usage(value);
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
        Ok(out)
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
    pub fn completion(&mut self, events: &mut Vec<ProviderEvent>) -> Completion {
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
            events.push(ProviderEvent::ToolCall {
                id,
                name: call.name,
                arguments,
            });
        }
        if let Some(usage) = self.usage {
            events.push(ProviderEvent::Usage(usage));
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

/// An `error` object inside a stream or a whole answer (OpenAI-compatible servers and
/// Anthropic's `error` event): overloads are retryable, a too-long prompt is
/// context-length-exceeded. `place` says where it was reported.
fn provider_error(error: &Value, place: &str) -> ProviderError {
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
        format!("the provider reported an error {place}: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let finished = assembler.finished();
        let completion = assembler.completion(&mut out);
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
    fn a_whole_answer_that_is_an_error_or_empty_is_an_error() {
        let mut assembler = Assembler::new(ProviderKind::OpenAi);
        let error = assembler
            .on_openai_message(
                &json!({"error": {"message": "model not loaded", "type": "server_error"}}),
            )
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::Server);
        assert!(error.message.contains("model not loaded"), "{error:?}");
        let error = Assembler::new(ProviderKind::OpenAi)
            .on_openai_message(&json!({}))
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::BadRequest);
        assert!(error.message.contains("no message"), "{error:?}");
    }

    #[test]
    fn a_whole_answer_gives_the_events_of_a_stream() {
        let mut assembler = Assembler::new(ProviderKind::OpenAi);
        let mut out = assembler
            .on_openai_message(&json!({
                "choices": [{"message": {"content": "Reading.", "tool_calls": [
                    {"type": "function", "function": {"name": "read_file", "arguments": ""}}
                ]}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3},
            }))
            .unwrap();
        let completion = assembler.completion(&mut out);
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
}
