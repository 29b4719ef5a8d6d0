//! A `tools/call` result (its JSON) as the text the model reads: text content joined,
//! images, audio and resources described (their bytes are not sent), structured content as
//! JSON when there is no text, the whole labelled as untrusted data from that server.

use serde_json::Value;

use crate::truncate::{truncate_middle, TruncationPolicy};

/// The most of a result's body kept (head and tail) before the turn's own truncation to
/// `toolOutputLimit`: a server answering 10 MB costs a byte cut, not a tokenization of it.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// The output and whether the call succeeded (`isError` is a failed call).
pub fn render(server: &str, tool: &str, result: &Value) -> (String, bool) {
    let failed = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        parts.push(describe(block));
    }
    let has_text = !parts.is_empty();
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        // Servers that send both put the same data in the text; only add it when it is the
        // only payload.
        if !has_text {
            parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
        }
    }
    let body = if parts.is_empty() {
        "(no content)".to_string()
    } else {
        parts.join("\n")
    };
    let body = truncate_middle(
        &body,
        TruncationPolicy::Bytes(MAX_BODY_BYTES),
        Default::default(),
    )
    .text;
    (
        format!(
            "<mcp_result server=\"{}\" tool=\"{}\" trust=\"untrusted\">\n{body}\n</mcp_result>",
            attr(server),
            attr(tool)
        ),
        !failed,
    )
}

/// One content block described (also a prompt message's, `prompts::render`).
pub(crate) fn describe(block: &Value) -> String {
    let field = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    let size = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .map_or(0, |d| d.len() * 3 / 4)
    };
    match field("type") {
        "text" => field("text").to_string(),
        "image" => format!(
            "[image {}, {} bytes, not shown]",
            field("mimeType"),
            size("data")
        ),
        "audio" => format!(
            "[audio {}, {} bytes, not shown]",
            field("mimeType"),
            size("data")
        ),
        "resource_link" => format!(
            "[resource link {} {}]",
            field("uri"),
            block
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = resource
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!(
                    "[resource {uri}, {} bytes of {}, not shown]",
                    resource
                        .get("blob")
                        .and_then(Value::as_str)
                        .map_or(0, |b| b.len() * 3 / 4),
                    resource
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("binary data")
                ),
            }
        }
        other => format!(
            "[{} content]",
            if other.is_empty() { "unknown" } else { other }
        ),
    }
}

pub(crate) fn attr(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_is_joined_described_and_labelled() {
        let result = json!({"content": [
            {"type": "text", "text": "Echo: hi"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "test://1", "text": "body"}},
            {"type": "resource", "resource": {"uri": "test://2", "blob": "AAAAAAAA"}},
        ]});
        let (text, ok) = render("every", "echo", &result);
        assert!(ok);
        expect_test::expect![[r#"
            <mcp_result server="every" tool="echo" trust="untrusted">
            Echo: hi
            [image image/png, 3 bytes, not shown]
            [resource test://1]
            body
            [resource test://2, 6 bytes of binary data, not shown]
            </mcp_result>"#]]
        .assert_eq(&text);
    }

    #[test]
    fn is_error_fails_and_structured_content_is_json_when_alone() {
        let (text, ok) = render(
            "s",
            "t",
            &json!({"isError": true,
            "content": [{"type": "text", "text": "boom"}]}),
        );
        assert!(!ok);
        assert!(text.contains("boom"));
        let (text, ok) = render("s", "t", &json!({"structuredContent": {"sum": 3}}));
        assert!(ok);
        assert!(text.contains("\"sum\": 3"), "{text}");
        let big = "y".repeat(3 * MAX_BODY_BYTES);
        let (text, _) = render(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": big}]}),
        );
        assert!(text.len() < MAX_BODY_BYTES + 200, "{}", text.len());
        assert!(text.ends_with("</mcp_result>"));
        let (text, _) = render("s\"x", "t", &json!({}));
        assert!(text.contains("(no content)") && text.contains("s&quot;x"));
    }
}
