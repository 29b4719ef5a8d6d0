//! `prompts/tools.json` (the schema the model is told, with its descriptions) against the
//! schema derived from each tool's input type: the same fields, JSON types, required fields,
//! enum values and minimums. Descriptions are not compared: they live only in `prompts/`.

use serde_json::Value;

/// What differs between `derived` (from a tool's input type) and `described` (its
/// `parameters` in tools.json), one line per difference; empty when they agree.
pub fn differences(derived: &Value, described: &Value) -> Vec<String> {
    let mut found = Vec::new();
    compare(derived, derived, described, "arguments", &mut found);
    found
}

fn compare(root: &Value, derived: &Value, described: &Value, at: &str, found: &mut Vec<String>) {
    let derived = resolve(root, derived);
    let (ours, theirs) = (types(derived), types(described));
    if ours != theirs {
        found.push(format!(
            "{at}: type {ours:?} in the input type, {theirs:?} in tools.json"
        ));
        return;
    }
    if derived.get("enum") != described.get("enum") {
        found.push(format!(
            "{at}: enum {} in the input type, {} in tools.json",
            derived["enum"], described["enum"]
        ));
    }
    if minimum(derived) != minimum(described) {
        found.push(format!(
            "{at}: minimum {:?} in the input type, {:?} in tools.json",
            minimum(derived),
            minimum(described)
        ));
    }
    if ours.contains(&"object") {
        compare_objects(root, derived, described, at, found);
    }
    if ours.contains(&"array") {
        compare(
            root,
            &derived["items"],
            &described["items"],
            &format!("{at}[]"),
            found,
        );
    }
}

fn compare_objects(
    root: &Value,
    derived: &Value,
    described: &Value,
    at: &str,
    found: &mut Vec<String>,
) {
    let empty = serde_json::Map::new();
    let ours = derived["properties"].as_object().unwrap_or(&empty);
    let theirs = described["properties"].as_object().unwrap_or(&empty);
    for name in ours.keys().filter(|name| !theirs.contains_key(*name)) {
        found.push(format!("{at}.{name}: in the input type, not in tools.json"));
    }
    for name in theirs.keys().filter(|name| !ours.contains_key(*name)) {
        found.push(format!("{at}.{name}: in tools.json, not in the input type"));
    }
    for (name, property) in ours {
        if let Some(told) = theirs.get(name) {
            compare(root, property, told, &format!("{at}.{name}"), found);
        }
    }
    let (ours, theirs) = (required(derived), required(described));
    if ours != theirs {
        found.push(format!(
            "{at}: required {ours:?} in the input type, {theirs:?} in tools.json"
        ));
    }
}

/// A `$ref` to the root's `$defs` followed (schemars writes nested types that way), and an
/// optional one's `anyOf: [$ref, null]` read as the type it refers to.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    if let Some([one, other]) = schema["anyOf"].as_array().map(Vec::as_slice) {
        match (one["type"] == "null", other["type"] == "null") {
            (false, true) => return resolve(root, one),
            (true, false) => return resolve(root, other),
            _ => {}
        }
    }
    match schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        Some(name) => resolve(root, &root["$defs"][name]),
        None => schema,
    }
}

/// The JSON types, sorted, without "null" (an optional field is one not required).
fn types(schema: &Value) -> Vec<&str> {
    let mut types: Vec<&str> = match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    types.retain(|kind| *kind != "null");
    types.sort_unstable();
    types
}

/// The minimum, where it says more than "not negative" (schemars writes 0 for unsigned).
fn minimum(schema: &Value) -> Option<f64> {
    schema["minimum"].as_f64().filter(|min| *min != 0.0)
}

fn required(schema: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::input::schema_of;
    use crate::tools::registry::Registry;
    use agentls_core::prompts::Prompts;
    use serde_json::json;

    #[test]
    fn every_tools_json_schema_matches_its_input_type_field_by_field() {
        let prompts = Prompts::builtin();
        for spec in &prompts.tools {
            let tool = Registry::builtin().get(&spec.name).unwrap();
            let found = differences(&tool.input_schema(), &spec.parameters);
            assert!(found.is_empty(), "{}: {found:#?}", spec.name);
        }
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Input {
        path: String,
        #[schemars(range(min = 1))]
        limit: Option<u32>,
        steps: Vec<Step>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Step {
        status: Status,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Status {
        Pending,
        Done,
    }

    /// The check can fail: each kind of difference is found, in a deliberately wrong
    /// description of `Input`.
    #[test]
    fn a_description_that_differs_from_the_input_type_is_caught() {
        let agreeing = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where."},
                "limit": {"type": "integer", "minimum": 1},
                "steps": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"status": {"type": "string", "enum": ["pending", "done"]}},
                    "required": ["status"]
                }}
            },
            "required": ["path", "steps"]
        });
        assert_eq!(
            differences(&schema_of::<Input>(), &agreeing),
            Vec::<String>::new()
        );

        let wrong = json!({
            "type": "object",
            "properties": {
                "file": {"type": "string"},
                "limit": {"type": "string"},
                "steps": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"status": {"type": "string", "enum": ["pending", "completed"]}},
                    "required": []
                }}
            },
            "required": ["file", "steps"]
        });
        let mut minimum = agreeing.clone();
        minimum["properties"]["limit"]["minimum"] = json!(2);
        assert_eq!(
            [
                differences(&schema_of::<Input>(), &wrong),
                differences(&schema_of::<Input>(), &minimum),
            ],
            [
                vec![
                    "arguments.path: in the input type, not in tools.json",
                    "arguments.file: in tools.json, not in the input type",
                    "arguments.limit: type [\"integer\"] in the input type, [\"string\"] in tools.json",
                    "arguments.steps[].status: enum [\"pending\",\"done\"] in the input type, [\"pending\",\"completed\"] in tools.json",
                    "arguments.steps[]: required [\"status\"] in the input type, [] in tools.json",
                    "arguments: required [\"path\", \"steps\"] in the input type, [\"file\", \"steps\"] in tools.json",
                ],
                vec!["arguments.limit: minimum Some(1.0) in the input type, Some(2.0) in tools.json"],
            ]
        );
    }
}
