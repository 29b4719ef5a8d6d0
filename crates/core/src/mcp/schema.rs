//! A server's tool `inputSchema`, cleaned of what OpenAI and Anthropic reject, so that one
//! odd server cannot make every model call of a session fail. Both want an object schema at
//! the top (`type: "object"`, no top-level `oneOf`/`anyOf`/`allOf`/`not`/`enum`), and both
//! choke on some meta keys (`$schema`, `$id`) on some models. What is removed only loosens
//! the schema: the server still validates its own arguments.

use serde_json::{json, Map, Value};

/// Keys removed at every depth.
const META: &[&str] = &["$schema", "$id", "$comment"];
/// Keys removed at the top only (providers reject them there; nested they are fine).
const TOP_ONLY: &[&str] = &[
    "oneOf", "anyOf", "allOf", "not", "enum", "const", "if", "then", "else",
];

/// The cleaned schema, and what was changed (for the log), empty when nothing was.
pub fn clean(schema: &Value) -> (Value, Vec<String>) {
    let mut notes = Vec::new();
    let Value::Object(map) = schema else {
        notes.push("the input schema is not an object: replaced by an empty object schema".into());
        return (json!({"type": "object", "properties": {}}), notes);
    };
    let mut map = map.clone();
    for key in TOP_ONLY {
        if map.remove(*key).is_some() {
            notes.push(format!("top-level {key} removed"));
        }
    }
    match map.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            notes.push(format!("top-level type {other} replaced by \"object\""));
            map.insert("type".into(), json!("object"));
        }
        None => {
            map.insert("type".into(), json!("object"));
        }
    }
    if !map.get("properties").is_some_and(Value::is_object) {
        if map.contains_key("properties") {
            notes.push("properties is not an object: replaced by {}".into());
        }
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    // `required` may only name declared properties, as strings.
    if let Some(required) = map.get("required").cloned() {
        let properties = map["properties"].as_object().expect("set above");
        let kept: Vec<Value> = match &required {
            Value::Array(items) => items
                .iter()
                .filter(|item| item.as_str().is_some_and(|n| properties.contains_key(n)))
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        if kept.len() != required.as_array().map_or(usize::MAX, Vec::len) {
            notes.push("required entries naming no property removed".into());
        }
        map.insert("required".into(), Value::Array(kept));
    }
    let mut value = Value::Object(map);
    strip_meta(&mut value, &mut notes);
    (value, notes)
}

fn strip_meta(value: &mut Value, notes: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for key in META {
                if map.remove(*key).is_some() && !notes.iter().any(|n| n.contains(key)) {
                    notes.push(format!("{key} removed"));
                }
            }
            for (key, inner) in map.iter_mut() {
                // Property names are data, not schema keywords: recurse into their schemas.
                if key == "properties" {
                    if let Value::Object(props) = inner {
                        for schema in props.values_mut() {
                            strip_meta(schema, notes);
                        }
                    }
                } else {
                    strip_meta(inner, notes);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| strip_meta(i, notes)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_schema_is_unchanged() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}},
                            "required": ["a"]});
        assert_eq!(clean(&schema), (schema, vec![]));
    }

    #[test]
    fn what_providers_reject_is_removed() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            "properties": {"a": {"type": "string", "$comment": "x"},
                           "$schema": {"type": "string"}},
            "required": ["a", "ghost", 3]
        });
        let (cleaned, notes) = clean(&schema);
        assert_eq!(
            cleaned,
            json!({"type": "object",
                   "properties": {"a": {"type": "string"}, "$schema": {"type": "string"}},
                   "required": ["a"]})
        );
        assert_eq!(notes.len(), 4, "{notes:?}");
    }

    #[test]
    fn a_non_object_schema_becomes_an_empty_object_schema() {
        for bad in [json!(true), json!("x"), json!({"type": "string"})] {
            let (cleaned, notes) = clean(&bad);
            assert_eq!(cleaned["type"], "object");
            assert!(cleaned["properties"].is_object());
            assert!(!notes.is_empty());
        }
    }
}
