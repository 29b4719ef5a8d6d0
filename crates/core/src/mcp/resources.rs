//! MCP resources attached with `@SERVER:URI`: which mentions name a resource (a configured
//! server's name, then `:`, then the URI; `@path:START-END` stays a file mention), a
//! `resources/read` result as the text attached, and a `resources/list` answer as the rows
//! of `agent/mcp/resources`.

use serde_json::{json, Value};

use crate::prompt_text::Mention;

/// The server and URI a mention names, when it is `@SERVER:URI` with `SERVER` one of
/// `servers` (the configured names) and a URI after it. A mention with a line range is a
/// file's (`@src/lib.rs:3-9`), whatever its name.
pub fn resource_mention<'a>(mention: &'a Mention, servers: &[&str]) -> Option<(&'a str, &'a str)> {
    if mention.lines.is_some() {
        return None;
    }
    let (server, uri) = mention.path.split_once(':')?;
    (!uri.is_empty() && servers.contains(&server)).then_some((server, uri))
}

/// A `resources/read` result's text: each content's text, a binary one described (its bytes
/// are not sent), several joined with their URIs, cut head-and-tail to
/// `output::MAX_BODY_BYTES` (the attachment block then fits it to its token budget). Err
/// when it holds nothing.
pub fn contents_text(uri: &str, result: &Value) -> Result<String, String> {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if contents.is_empty() {
        return Err(format!("the server returned no content for {uri}"));
    }
    let one = contents.len() == 1;
    let parts: Vec<String> = contents
        .iter()
        .map(|content| {
            let field = |key: &str| content.get(key).and_then(Value::as_str);
            let body = match (field("text"), field("blob")) {
                (Some(text), _) => text.to_string(),
                (None, Some(blob)) => format!(
                    "[{} bytes of {}, not shown]",
                    blob.len() * 3 / 4,
                    field("mimeType").unwrap_or("binary data")
                ),
                (None, None) => "(no content)".to_string(),
            };
            if one {
                body
            } else {
                format!("[resource {}]\n{body}", field("uri").unwrap_or(uri))
            }
        })
        .collect();
    let text = parts.join("\n\n");
    Ok(crate::truncate::truncate_middle(
        &text,
        crate::truncate::TruncationPolicy::Bytes(super::output::MAX_BODY_BYTES),
        Default::default(),
    )
    .text)
}

/// The rows of `agent/mcp/resources` for one server's `resources/list` answer (the array, or
/// the result object holding it): `{server, uri, name, description?, mimeType?}`; entries
/// without a URI are skipped.
pub fn rows(server: &str, value: &Value) -> Vec<Value> {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        Value::Object(map) => map
            .get("resources")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice),
        _ => &[],
    };
    items
        .iter()
        .filter_map(|item| {
            let uri = item.get("uri").and_then(Value::as_str)?;
            let mut row = json!({
                "server": server,
                "uri": uri,
                "name": item.get("name").and_then(Value::as_str).unwrap_or(uri),
            });
            for key in ["description", "mimeType"] {
                if let Some(value) = item.get(key).and_then(Value::as_str) {
                    row[key] = json!(value);
                }
            }
            Some(row)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt_text::mentions;

    #[test]
    fn a_configured_server_and_a_colon_name_a_resource_and_line_ranges_stay_files() {
        let text = "See @everything:demo://resource/static/document/architecture.md, \
                    @src/lib.rs:3-9, @other:x://y, @everything:12 and @everything:";
        let found = mentions(text);
        let servers = ["everything", "time"];
        let named: Vec<_> = found
            .iter()
            .map(|m| resource_mention(m, &servers))
            .collect();
        assert_eq!(
            named,
            [
                Some((
                    "everything",
                    "demo://resource/static/document/architecture.md"
                )),
                None,
                None,
                None,
                None
            ]
        );
    }

    #[test]
    fn contents_become_text_and_binary_is_described() {
        let one =
            json!({"contents": [{"uri": "demo://a", "mimeType": "text/plain", "text": "hello"}]});
        assert_eq!(contents_text("demo://a", &one).unwrap(), "hello");
        let two = json!({"contents": [
            {"uri": "demo://a", "text": "hello"},
            {"uri": "demo://b", "mimeType": "image/png", "blob": "AAAAAAAA"}]});
        expect_test::expect![[r#"
            [resource demo://a]
            hello

            [resource demo://b]
            [6 bytes of image/png, not shown]"#]]
        .assert_eq(&contents_text("demo://a", &two).unwrap());
        let big = "z".repeat(3 * super::super::output::MAX_BODY_BYTES);
        let cut = contents_text("demo://big", &json!({"contents": [{"text": big}]})).unwrap();
        assert!(
            cut.len() < super::super::output::MAX_BODY_BYTES + 200 && cut.contains("truncated"),
            "{}",
            cut.len()
        );
        assert_eq!(
            contents_text("demo://x", &json!({"contents": []})).unwrap_err(),
            "the server returned no content for demo://x"
        );
    }

    #[test]
    fn list_rows_name_the_server() {
        let listed = json!({"resources": [
            {"uri": "demo://a", "name": "a.md", "mimeType": "text/markdown", "description": "A"},
            {"uri": "demo://b"},
            {"name": "no uri"}]});
        assert_eq!(
            rows("everything", &listed),
            [
                json!({"server": "everything", "uri": "demo://a", "name": "a.md", "mimeType": "text/markdown", "description": "A"}),
                json!({"server": "everything", "uri": "demo://b", "name": "demo://b"}),
            ]
        );
    }
}
