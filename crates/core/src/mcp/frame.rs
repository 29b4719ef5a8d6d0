//! One stdio message past the size agentls reads: rmcp drops such a line and logs it, so the
//! request it answered would wait out its `timeoutMs` and end as "did not answer". The
//! server's reader (`mcp/connect.rs`) keeps the line's first and last bytes instead, and
//! this turns them into the error answer to the same request, which fails the call at once.

use serde_json::{json, Value};

/// The most of one stdio message agentls reads: rmcp's own line limit.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How much of an oversized line's start and end is kept to find its `id`.
pub const KEPT_BYTES: usize = 4096;

/// The JSON-RPC error answer (one line, no newline) that stands for an answer of `len`
/// bytes past `limit`, to the request whose `id` is found in the line's `head` or `tail`;
/// None when no id is found (a notification, or an id buried mid-line).
pub fn oversized_reply(head: &[u8], tail: &[u8], len: usize, limit: usize) -> Option<String> {
    let id = id_in_head(head).or_else(|| id_in_tail(tail))?;
    let message = format!(
        "the answer was {} MiB, past agentls's limit of {} MiB for one MCP message; \
         it was dropped (ask for less: a narrower query, a page, a file path)",
        mib(len),
        mib(limit)
    );
    Some(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}})
            .to_string(),
    )
}

fn mib(bytes: usize) -> String {
    let mib = bytes as f64 / (1024.0 * 1024.0);
    if mib.fract() == 0.0 {
        format!("{mib:.0}")
    } else {
        format!("{mib:.1}")
    }
}

/// An `"id"` key before the `"result"`/`"error"` one: the top level's (what comes after
/// may be the payload's own `id`s).
fn id_in_head(head: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(head);
    let payload = ["\"result\"", "\"error\""]
        .iter()
        .filter_map(|key| text.find(key))
        .min()
        .unwrap_or(text.len());
    let at = text[..payload].find("\"id\"")?;
    value_after_key(&text[at + 4..])
}

/// An `"id"` key that is the line's last member (`…,"id":7}`).
fn id_in_tail(tail: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(tail);
    let body = text.trim_end().strip_suffix('}')?;
    let at = body.rfind("\"id\"")?;
    let rest = body[at + 4..].trim_start().strip_prefix(':')?;
    id(serde_json::from_str(rest.trim()).ok()?)
}

/// The number or string after `:` that starts `text`.
fn value_after_key(text: &str) -> Option<Value> {
    let text = text.trim_start().strip_prefix(':')?.trim_start();
    let end = match text.strip_prefix('"') {
        Some(inner) => inner.find('"')? + 2,
        None => text
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(text.len()),
    };
    id(serde_json::from_str(&text[..end]).ok()?)
}

/// A request id is a number or a string.
fn id(value: Value) -> Option<Value> {
    matches!(value, Value::Number(_) | Value::String(_)).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_found_before_the_result_or_as_the_last_member() {
        let reply = |head: &str, tail: &str| {
            oversized_reply(
                head.as_bytes(),
                tail.as_bytes(),
                17 << 20,
                MAX_MESSAGE_BYTES,
            )
            .map(|r| serde_json::from_str::<Value>(&r).unwrap())
        };
        let answer = reply(
            r#"{"jsonrpc": "2.0", "id": 7, "result": {"id": 99, "#,
            "x\"}]}}",
        )
        .unwrap();
        assert_eq!(answer["id"], 7);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("the answer was 17 MiB, past agentls's limit of 16 MiB"));
        assert_eq!(reply(r#"{"id":"a-1","result":{"#, "").unwrap()["id"], "a-1");
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","result":{"id":3,"#, r#"xx"]},"id":12}"#).unwrap()["id"],
            12
        );
        // A notification has no id: nothing to answer.
        assert_eq!(
            reply(
                r#"{"jsonrpc":"2.0","method":"notifications/message","#,
                "}}"
            ),
            None
        );
    }
}
