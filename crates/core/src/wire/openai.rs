//! The OpenAI Chat Completions shape of a request: `messages` and `tools`. Used by the
//! `agent/session/context` inspection (what would be sent) and by the OpenAI provider.

use serde_json::{json, Value};

use crate::context::Request;
use crate::history::{model_text, Item};
use crate::prompts::{Prompts, ToolSpec};

/// The request's `messages`: the system message, then the items, with each run of tool
/// calls folded into the assistant message before it (or a content-less one).
pub fn messages(request: &Request, prompts: &Prompts) -> Vec<Value> {
    messages_for(request, prompts, true)
}

/// [`messages`] for a model that takes images (`images`) or not: then an image is only its
/// label, so its bytes never reach a provider that would refuse them.
pub fn messages_for(request: &Request, prompts: &Prompts, images: bool) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.items.len() + 1);
    out.push(json!({"role": "system", "content": request.system}));
    let items: Vec<&Item> = request.items.iter().map(|e| &e.item).collect();
    let mut i = 0;
    while i < items.len() {
        match items[i] {
            Item::Assistant { text } => {
                let calls = tool_calls(&items[i + 1..]);
                i += 1 + calls.len();
                out.push(assistant(Some(text), calls));
            }
            Item::ToolCall { .. } => {
                let calls = tool_calls(&items[i..]);
                i += calls.len();
                out.push(assistant(None, calls));
            }
            Item::ToolOutput { call_id, .. } => {
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": model_text(items[i], prompts),
                }));
                i += 1;
            }
            Item::User { .. } | Item::Instructions { .. } | Item::CompactionSummary { .. } => {
                out.push(json!({"role": "user", "content": model_text(items[i], prompts)}));
                i += 1;
            }
            Item::Images {
                images: attached,
                call_id,
            } => {
                let parts = image_parts(attached, call_id.as_deref(), images);
                // The user's own images join the user's message; a tool's follow the tool
                // messages (a `tool` message takes text only).
                match out.last_mut() {
                    Some(last) if call_id.is_none() && last["role"] == "user" => {
                        if let Value::String(text) = last["content"].take() {
                            last["content"] = json!([{"type": "text", "text": text}]);
                        }
                        if let Some(content) = last["content"].as_array_mut() {
                            content.extend(parts);
                        }
                    }
                    _ => out.push(json!({"role": "user", "content": parts})),
                }
                i += 1;
            }
            Item::Internal { .. } => i += 1,
        }
    }
    out
}

/// Each image as its label then, for a model that sees images, an `image_url` part with a
/// `data:` URL at high detail (the detail the token count assumes).
fn image_parts(
    images: &[crate::image::Image],
    call_id: Option<&str>,
    send_bytes: bool,
) -> Vec<Value> {
    let mut parts = Vec::new();
    for image in images {
        let mut label = image.label();
        if let Some(call_id) = call_id {
            label.push_str(&format!(" (from tool call {call_id})"));
        }
        if !send_bytes {
            label.push_str(" (not shown: this model does not take images)");
        }
        parts.push(json!({"type": "text", "text": label}));
        if send_bytes {
            parts.push(json!({
                "type": "image_url",
                "image_url": {"url": image.data_url(), "detail": "high"},
            }));
        }
    }
    parts
}

fn tool_calls<'a>(items: &[&'a Item]) -> Vec<&'a Item> {
    items
        .iter()
        .take_while(|item| matches!(item, Item::ToolCall { .. }))
        .copied()
        .collect()
}

fn assistant(text: Option<&str>, calls: Vec<&Item>) -> Value {
    let mut message = json!({"role": "assistant", "content": text.filter(|t| !t.is_empty())});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|call| {
                let Item::ToolCall {
                    call_id,
                    name,
                    arguments,
                } = call
                else {
                    unreachable!("tool_calls holds calls only")
                };
                // Arguments that are not a JSON object (a call cut by the output limit)
                // are sent as `{}`: servers that parse them (llama.cpp) refuse the whole
                // request otherwise, and the session could never send another one. The
                // call's output already told the model what was wrong.
                let arguments = match serde_json::from_str::<Value>(arguments) {
                    Ok(Value::Object(_)) => arguments.as_str(),
                    _ => "{}",
                };
                json!({
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                })
            })
            .collect();
    }
    message
}

pub fn tools(tools: &[ToolSpec]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{assemble, AssemblyConfig, StaticContext};
    use crate::history::History;
    use crate::tokens::{Calibration, CountCache, TokenizerKind};
    use crate::truncate::TruncationPolicy;

    #[test]
    fn tool_calls_fold_into_the_assistant_message_and_outputs_follow() {
        let prompts = Prompts::builtin();
        let mut history = History::new(TokenizerKind::O200kBase);
        let policy = TruncationPolicy::Tokens(100);
        for item in [
            Item::User {
                text: "q".into(),
                context: None,
            },
            Item::Assistant {
                text: "looking".into(),
            },
            Item::ToolCall {
                call_id: "a".into(),
                name: "grep".into(),
                arguments: "{}".into(),
            },
            Item::ToolCall {
                call_id: "b".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
            Item::ToolOutput {
                call_id: "a".into(),
                name: "grep".into(),
                content: "x".into(),
                success: true,
            },
            Item::ToolCall {
                call_id: "c".into(),
                name: "shell".into(),
                arguments: "{}".into(),
            },
            Item::Assistant {
                text: "done".into(),
            },
        ] {
            history.record(item, policy, &prompts);
        }
        let static_context = StaticContext {
            system_prompt: "S".into(),
            ..Default::default()
        };
        let config = AssemblyConfig {
            tokenizer: TokenizerKind::O200kBase,
            context_window: 1000,
            calibration: Calibration::default(),
        };
        let request = assemble(
            &config,
            &static_context,
            &history,
            None,
            &prompts,
            &mut CountCache::default(),
        );
        let messages = messages(&request, &prompts);
        let roles: Vec<String> = messages
            .iter()
            .map(|m| {
                let calls = m["tool_calls"].as_array().map_or(0, Vec::len);
                let id = m["tool_call_id"].as_str().unwrap_or("");
                format!(
                    "{}{}{}",
                    m["role"].as_str().unwrap(),
                    if calls > 0 {
                        format!("+{calls}")
                    } else {
                        String::new()
                    },
                    id
                )
            })
            .collect();
        // b and c never got outputs: the normalization answered them as aborted.
        assert_eq!(
            roles,
            [
                "system",
                "user",
                "assistant+2",
                "toola",
                "toolb",
                "assistant+1",
                "toolc",
                "assistant"
            ]
        );
        assert_eq!(messages[5]["content"], Value::Null);
        assert!(messages[4]["content"].as_str().unwrap().contains("aborted"));
        assert_eq!(tools(&prompts.tools)[0]["function"]["name"], "read_file");
    }

    #[test]
    fn arguments_that_are_not_an_object_are_sent_as_an_empty_object() {
        let cut = Item::ToolCall {
            call_id: "a".into(),
            name: "write_file".into(),
            arguments: "{\"path\": \"a.py\", \"content\": \"def f(".into(),
        };
        let whole = Item::ToolCall {
            call_id: "b".into(),
            name: "read_file".into(),
            arguments: "{\"path\": \"a.py\"}".into(),
        };
        let message = assistant(None, vec![&cut, &whole]);
        assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{}");
        assert_eq!(
            message["tool_calls"][1]["function"]["arguments"],
            "{\"path\": \"a.py\"}"
        );
    }
}
