//! TypeScript declarations from the protocol's JSON Schemas: the VS Code extension's
//! `src/protocol.generated.ts`. The test fails when that file differs from what the Rust
//! types give; `UPDATE_EXPECT=1 cargo test -p agentls --lib protocol` rewrites it.
//!
//! The converter covers the schema forms schemars emits for these types (objects, tagged and
//! untagged enums, string enums, options, arrays, maps, `$ref`s); another form panics so it
//! is never turned into something wrong.

use std::fmt::Write;

use serde_json::{Map, Value};

use super::catalog::{self, Direction};

/// The whole generated file.
pub fn generate() -> String {
    let methods = super::lsp::methods();
    let schemas = catalog::schemas(&methods);
    let mut out = String::from(
        "// Generated from server/src/protocol/lsp.rs (the Rust types are the source): do not edit.\n\
         // `UPDATE_EXPECT=1 cargo test -p agentls --lib protocol` writes it again.\n",
    );
    for (name, schema) in &schemas.definitions {
        out.push('\n');
        declaration(&mut out, name, schema);
    }
    out.push_str(
        "\n/** The method names, by the Rust type of each method. */\nexport const Methods = {\n",
    );
    for method in &methods {
        let _ = writeln!(
            out,
            "  {}: '{}',",
            lower_camel(method.type_name),
            method.method
        );
    }
    out.push_str("} as const;\n");
    for (direction, is_request, title) in [
        (Direction::ClientToServer, true, "ClientRequests"),
        (Direction::ServerToClient, true, "ServerRequests"),
        (Direction::ServerToClient, false, "ServerNotifications"),
    ] {
        let _ = writeln!(out, "\nexport interface {title} {{");
        for (method, (params, result)) in methods.iter().zip(&schemas.roots) {
            if method.direction != direction || method.is_request != is_request {
                continue;
            }
            let params = ts_type(params.as_value());
            match result {
                Some(result) => {
                    let result = ts_type(result.as_value());
                    let _ = writeln!(
                        out,
                        "  '{}': {{ params: {params}; result: {result} }};",
                        method.method
                    );
                }
                None => {
                    let _ = writeln!(out, "  '{}': {{ params: {params} }};", method.method);
                }
            }
        }
        out.push_str("}\n");
    }
    out
}

fn lower_camel(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

fn doc_comment(out: &mut String, indent: &str, schema: &Value) {
    if let Some(text) = schema.get("description").and_then(Value::as_str) {
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() == 1 {
            let _ = writeln!(out, "{indent}/** {} */", lines[0]);
        } else {
            let _ = writeln!(out, "{indent}/**");
            for line in lines {
                let _ = writeln!(out, "{indent} * {line}");
            }
            let _ = writeln!(out, "{indent} */");
        }
    }
}

fn declaration(out: &mut String, name: &str, schema: &Value) {
    doc_comment(out, "", schema);
    let is_plain_object = schema.get("properties").is_some()
        && ["oneOf", "anyOf", "allOf"]
            .iter()
            .all(|k| schema.get(*k).is_none());
    if is_plain_object {
        let _ = writeln!(out, "export interface {name} {}", object(schema, ""));
    } else {
        let ty = ts_type(schema);
        let members = top_level(&ty, " | ");
        if ty.len() > 90 && members.len() > 1 {
            let _ = write!(out, "export type {name} =");
            for member in members {
                let _ = write!(out, "\n  | {member}");
            }
            out.push_str(";\n");
        } else {
            let _ = writeln!(out, "export type {name} = {ty};");
        }
    }
}

/// `{ field: T; … }` of an object schema's properties, one per line at `indent`.
fn object(schema: &Value, indent: &str) -> String {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("{\n");
    let inner = format!("{indent}  ");
    for (key, property) in &properties {
        doc_comment(&mut out, &inner, property);
        let (key, ty) = field(key, property, &required);
        let _ = writeln!(out, "{inner}{key}: {ty};");
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// A property's name and type. An optional one (`key?`) never carries null: the server
/// leaves out what it has not (`skip_serializing_if`), and what it reads may be left out.
fn field(key: &str, property: &Value, required: &[&str]) -> (String, String) {
    let ty = ts_type(property);
    if required.contains(&key) {
        return (key.to_string(), ty);
    }
    let members: Vec<String> = top_level(&ty, " | ")
        .into_iter()
        .filter(|m| m != "null")
        .collect();
    (format!("{key}?"), members.join(" | "))
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// `a | b | …`, a member that is a union itself spread out, a repeated one once.
fn union(members: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for member in members.iter().flat_map(|m| top_level(m, " | ")) {
        if !unique.contains(&member) {
            unique.push(member);
        }
    }
    unique.join(" | ")
}

/// The parts of a type split at `separator` outside brackets.
fn top_level(ty: &str, separator: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in ty.char_indices() {
        match c {
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => depth -= 1,
            _ if depth == 0 && ty[at..].starts_with(separator) => {
                parts.push(ty[start..at].to_string());
                start = at + separator.len();
            }
            _ => {}
        }
    }
    parts.push(ty[start..].to_string());
    parts
}

/// `ty` as one operand of `&` or `[]`.
fn parenthesized(ty: String) -> String {
    if top_level(&ty, " | ").len() > 1 || top_level(&ty, " & ").len() > 1 {
        format!("({ty})")
    } else {
        ty
    }
}

/// The TypeScript type of a schema.
fn ts_type(schema: &Value) -> String {
    let object = match schema {
        Value::Bool(true) => return "unknown".into(),
        Value::Object(object) => object,
        other => panic!("a schema form the generator does not know: {other}"),
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let name = reference
            .rsplit('/')
            .next()
            .unwrap_or(reference)
            .to_string();
        // Properties beside the reference (an enum's newtype variant and its tag): both hold.
        return match object.get("properties") {
            Some(_) => format!("{name} & {}", shape(object)),
            None => name,
        };
    }
    if let Some(value) = object.get("const") {
        return literal(value);
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(literal).collect());
    }
    let alternatives = ["oneOf", "anyOf"]
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_array));
    if let Some(alternatives) = alternatives {
        let members = union(alternatives.iter().map(ts_type).collect());
        // Properties beside the alternatives (a flattened enum): both hold.
        return match object.get("properties") {
            Some(_) => format!("{} & ({members})", shape(object)),
            None => members,
        };
    }
    if let Some(all) = object.get("allOf").and_then(Value::as_array) {
        return all
            .iter()
            .map(|a| parenthesized(ts_type(a)))
            .collect::<Vec<_>>()
            .join(" & ");
    }
    shape(object)
}

/// The type of a schema by its `type` keyword (several types: their union).
fn shape(object: &Map<String, Value>) -> String {
    match object.get("type") {
        Some(Value::String(kind)) => of_kind(kind, object),
        Some(Value::Array(kinds)) => union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| of_kind(kind, object))
                .collect(),
        ),
        None if object.is_empty()
            || object.keys().all(|k| k == "description" || k == "default") =>
        {
            "unknown".into()
        }
        _ => panic!("a schema form the generator does not know: {object:?}"),
    }
}

fn of_kind(kind: &str, object: &Map<String, Value>) -> String {
    match kind {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => match object.get("items") {
            Some(items) => format!("{}[]", parenthesized(ts_type(items))),
            None => "unknown[]".into(),
        },
        "object" => {
            if object.contains_key("properties") {
                object_inline(object)
            } else {
                match object.get("additionalProperties") {
                    Some(Value::Bool(false)) => "Record<string, never>".into(),
                    Some(values @ Value::Object(_)) => {
                        format!("Record<string, {}>", ts_type(values))
                    }
                    _ => "Record<string, unknown>".into(),
                }
            }
        }
        other => panic!("a JSON Schema type the generator does not know: {other}"),
    }
}

fn object_inline(object: &Map<String, Value>) -> String {
    let schema = Value::Object(object.clone());
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .iter()
                .map(|(key, property)| {
                    let (key, ty) = field(key, property, &required);
                    format!("{key}: {ty}")
                })
                .collect()
        })
        .unwrap_or_default();
    if fields.is_empty() {
        "Record<string, never>".into()
    } else {
        format!("{{ {} }}", fields.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_vscode_extension_types_are_generated_from_the_rust_types() {
        expect_test::expect_file!["../../../editors/vscode/src/protocol.generated.ts"]
            .assert_eq(&generate());
    }

    #[test]
    fn schema_forms_become_their_typescript() {
        let tagged = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "text": {"type": "string"}}, "required": ["kind", "text"]},
            {"type": "object", "properties": {"kind": {"type": "string", "const": "b"}}, "required": ["kind"]},
        ]});
        assert_eq!(
            ts_type(&tagged),
            "{ kind: 'a'; text: string } | { kind: 'b' }"
        );
        let optional = json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"type": ["string", "null"]}}, "required": ["b"]});
        assert_eq!(ts_type(&optional), "{ a?: string; b: string | null }");
        let option = json!({"anyOf": [{"$ref": "#/$defs/Range"}, {"type": "null"}]});
        assert_eq!(ts_type(&option), "Range | null");
        let strings = json!({"type": "array", "items": {"type": ["string", "null"]}});
        assert_eq!(ts_type(&strings), "(string | null)[]");
        assert_eq!(
            ts_type(&json!({"type": "string", "enum": ["x", "y"]})),
            "'x' | 'y'"
        );
        assert_eq!(ts_type(&json!(true)), "unknown");
        let nested = json!({"oneOf": [{"enum": ["a", "b"]}, {"const": "c"}]});
        assert_eq!(ts_type(&nested), "'a' | 'b' | 'c'");
        let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        assert_eq!(ts_type(&map), "Record<string, number>");
    }
}
