//! The Anthropic Messages shape of a request: `system`, `messages` and `tools`, with prompt
//! caching breakpoints (`cache_control`) at the end of the stable prefix: after the system
//! block (tools and system are cached together) and after the last history message before
//! the pending user message. Pure.

use serde_json::{json, Value};

use crate::context::Request;
use crate::history::{model_text, Item};
use crate::prompts::{Prompts, ToolSpec};

/// `system`, `messages` and `tools` of the request body (model, max_tokens and stream are
/// the provider's).
pub fn body(request: &Request<'_>, prompts: &Prompts) -> Value {
    body_for(request, prompts, true)
}

/// [`body`] for a model that takes images (`images`) or not: then an image is only its
/// label, so its bytes never reach a provider that would refuse them.
pub fn body_for(request: &Request<'_>, prompts: &Prompts, images: bool) -> Value {
    let mut body = json!({
        "system": [{
            "type": "text",
            "text": request.system,
            "cache_control": {"type": "ephemeral"},
        }],
        "messages": messages_for(request, prompts, images),
    });
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(tools(request.tools));
    }
    body
}

/// The conversation as alternating user/assistant messages of content blocks. Tool calls
/// are `tool_use` blocks of the assistant message; their outputs are `tool_result` blocks
/// of the next user message. Consecutive messages of one role are merged, as the API
/// requires alternation.
pub fn messages(request: &Request<'_>, prompts: &Prompts) -> Vec<Value> {
    messages_for(request, prompts, true)
}

fn messages_for(request: &Request<'_>, prompts: &Prompts, images: bool) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // Index in `out` of the message holding the last item of the stable prefix.
    let prefix_items = request.items.len().saturating_sub(1);
    let mut prefix_end: Option<(usize, usize)> = None;
    for (index, entry) in request.items.iter().enumerate() {
        let (role, blocks) = match &entry.item {
            Item::Images {
                images: attached,
                call_id,
            } => ("user", image_blocks(attached, call_id.as_deref(), images)),
            item => match block_for(item, prompts) {
                Some((role, block)) => (role, vec![block]),
                None => continue,
            },
        };
        // The API wants roles to alternate: consecutive blocks of one role share a message.
        match out.last_mut() {
            Some((last_role, existing)) if *last_role == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
        if index < prefix_items {
            let message = out.len() - 1;
            prefix_end = Some((message, out[message].1.len() - 1));
        }
    }
    if let Some((message, block)) = prefix_end {
        out[message].1[block]["cache_control"] = json!({"type": "ephemeral"});
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// The role and content block of an item other than images; None for one the model does
/// not see (internal, or with no text).
fn block_for(item: &Item, prompts: &Prompts) -> Option<(&'static str, Value)> {
    match item {
        Item::Assistant { text } => {
            if text.is_empty() {
                return None;
            }
            Some(("assistant", json!({"type": "text", "text": text})))
        }
        Item::ToolCall {
            call_id,
            name,
            arguments,
        } => {
            let input = match serde_json::from_str::<Value>(arguments) {
                Ok(value @ Value::Object(_)) => value,
                // The model wrote something that is not an object; the API only takes
                // objects, and the tool already answered that the arguments were bad.
                _ => json!({}),
            };
            Some((
                "assistant",
                json!({"type": "tool_use", "id": call_id, "name": name, "input": input}),
            ))
        }
        Item::ToolOutput {
            call_id, success, ..
        } => Some((
            "user",
            json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": model_text(item, prompts),
                "is_error": !success,
            }),
        )),
        Item::User { .. } | Item::Instructions { .. } | Item::CompactionSummary { .. } => {
            let text = model_text(item, prompts);
            if text.is_empty() {
                return None;
            }
            Some(("user", json!({"type": "text", "text": text})))
        }
        // Images become several blocks: `messages_for` builds them with `image_blocks`.
        Item::Images { .. } | Item::Internal { .. } => None,
    }
}

/// Each image as its label then, for a model that sees images, an `image` block with a
/// base64 source (never empty: an `Images` item holds at least one image's label).
fn image_blocks(
    images: &[crate::image::Image],
    call_id: Option<&str>,
    send_bytes: bool,
) -> Vec<Value> {
    let mut blocks = Vec::new();
    for image in images {
        let mut label = image.label();
        if let Some(call_id) = call_id {
            label.push_str(&format!(" (from tool call {call_id})"));
        }
        if !send_bytes {
            label.push_str(" (not shown: this model does not take images)");
        }
        blocks.push(json!({"type": "text", "text": label}));
        if send_bytes {
            blocks.push(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
            }));
        }
    }
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": "[no image]"}));
    }
    blocks
}

pub fn tools(tools: &[ToolSpec]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.parameters,
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
    fn tool_use_and_results_alternate_and_the_prefix_end_is_cached() {
        let prompts = Prompts::builtin();
        let mut history = History::new(TokenizerKind::O200kBase);
        let policy = TruncationPolicy::Tokens(100);
        for item in [
            Item::User {
                text: "where?".into(),
                context: None,
            },
            Item::Assistant {
                text: "Looking.".into(),
            },
            Item::ToolCall {
                call_id: "t1".into(),
                name: "grep".into(),
                arguments: "{\"pattern\":\"x\"}".into(),
            },
            Item::ToolCall {
                call_id: "t2".into(),
                name: "read_file".into(),
                arguments: "not json".into(),
            },
            Item::ToolOutput {
                call_id: "t1".into(),
                name: "grep".into(),
                content: "a.rs:1: x".into(),
                success: true,
            },
            Item::ToolOutput {
                call_id: "t2".into(),
                name: "read_file".into(),
                content: "bad arguments".into(),
                success: false,
            },
            Item::User {
                text: "thanks".into(),
                context: None,
            },
        ] {
            history.record(item, policy, &prompts);
        }
        let static_context = StaticContext {
            tools: prompts.tools.clone(),
            system_prompt: "sys".into(),
            developer_instructions: None,
            agents_md: None,
            skills_index: String::new(),
            memory: String::new(),
            repo_map: String::new(),
        };
        let config = AssemblyConfig {
            tokenizer: TokenizerKind::O200kBase,
            context_window: 100_000,
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
        let body = body(&request, &prompts);
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        let assistant = messages[1]["content"].as_array().unwrap();
        assert_eq!(assistant[0]["text"], "Looking.");
        assert_eq!(assistant[1]["type"], "tool_use");
        assert_eq!(assistant[1]["input"], json!({"pattern": "x"}));
        assert_eq!(assistant[2]["input"], json!({}));
        let user = messages[2]["content"].as_array().unwrap();
        assert_eq!(user[0]["tool_use_id"], "t1");
        assert_eq!(user[1]["is_error"], true);
        // The tool result before the last user text closes the stable prefix.
        assert_eq!(user[1]["cache_control"]["type"], "ephemeral");
        assert!(user[2].get("cache_control").is_none());
        assert_eq!(user[2]["text"], "thanks");
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }
}
