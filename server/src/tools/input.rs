//! A tool's arguments as its typed input: parsed once from the model's JSON by serde, and
//! when they do not parse, the problem named (which field, missing or of which type) from
//! the input type's derived JSON Schema, so the model reads a sentence it can act on rather
//! than serde's.
//!
//! The schema the model sees is `prompts/tools.json` (its descriptions are model-facing
//! text); `schema_check` holds it equal, field by field, to the one derived here.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Why a call's arguments are not its tool's input.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgumentProblem {
    /// The arguments are not a JSON object.
    NotAnObject,
    /// A required field is absent (or null).
    Missing {
        field: String,
        expected: &'static str,
    },
    /// A field holds a value of another JSON type (`got` as the model sent it, cut).
    WrongType {
        field: String,
        expected: &'static str,
        got: String,
    },
    /// Anything else serde refused (an unknown enum value, a nested field): its words.
    Invalid(String),
}

impl ArgumentProblem {
    /// The sentence the model reads, for `tool`: "edit_file needs an `old_text` string".
    pub fn sentence(&self, tool: &str) -> String {
        match self {
            ArgumentProblem::NotAnObject => {
                format!("the arguments of {tool} are not a JSON object")
            }
            ArgumentProblem::Missing { field, expected } => {
                format!("{tool} needs {} `{field}` {expected}", article(field))
            }
            ArgumentProblem::WrongType {
                field,
                expected,
                got,
            } => format!(
                "{tool} needs {} `{field}` {expected}, not {got}",
                article(field)
            ),
            ArgumentProblem::Invalid(why) => format!("the arguments of {tool} are invalid: {why}"),
        }
    }

    /// The field the problem is about, if it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ArgumentProblem::Missing { field, .. } | ArgumentProblem::WrongType { field, .. } => {
                Some(field)
            }
            ArgumentProblem::NotAnObject | ArgumentProblem::Invalid(_) => None,
        }
    }
}

/// "an" before a field name that starts with a vowel (`old_text`), else "a".
fn article(field: &str) -> &'static str {
    match field.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// The JSON Schema derived from `I`, as JSON.
pub fn schema_of<I: JsonSchema>() -> Value {
    schemars::schema_for!(I).to_value()
}

/// `arguments` as `I`. Serde decides; the schema of `I` is read only to word a refusal.
pub fn parse<I: DeserializeOwned + JsonSchema>(arguments: &Value) -> Result<I, ArgumentProblem> {
    let Value::Object(fields) = arguments else {
        return Err(ArgumentProblem::NotAnObject);
    };
    serde_json::from_value(arguments.clone()).map_err(|err| {
        diagnose(&schema_of::<I>(), fields).unwrap_or(ArgumentProblem::Invalid(err.to_string()))
    })
}

/// The first required field missing (in the input's declaration order), else the first field
/// whose JSON type the schema does not allow.
fn diagnose(schema: &Value, fields: &Map<String, Value>) -> Option<ArgumentProblem> {
    let properties = schema["properties"].as_object()?;
    let required = schema["required"].as_array().into_iter().flatten();
    for field in required.filter_map(Value::as_str) {
        if fields.get(field).is_none_or(Value::is_null) {
            return Some(ArgumentProblem::Missing {
                field: field.to_string(),
                expected: noun(&properties[field]),
            });
        }
    }
    properties.iter().find_map(|(field, property)| {
        let value = fields.get(field)?;
        (!allows(property, value)).then(|| ArgumentProblem::WrongType {
            field: field.clone(),
            expected: noun(property),
            got: shown(value),
        })
    })
}

/// The JSON types a property's schema names (`Option<T>` adds "null"); none for a `$ref`.
fn types(property: &Value) -> Vec<&str> {
    match &property["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether `value`'s JSON type is one the property allows (what is inside it is serde's).
fn allows(property: &Value, value: &Value) -> bool {
    let types = types(property);
    types.is_empty()
        || types.iter().any(|&kind| match kind {
            "string" => value.is_string(),
            // A negative number for an unsigned field is refused too (schemars writes
            // `minimum: 0` for those).
            "integer" if property["minimum"].as_f64().is_some_and(|min| min >= 0.0) => {
                value.is_u64()
            }
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => true,
        })
}

/// The property's type as the model's sentence names it.
fn noun(property: &Value) -> &'static str {
    let types = types(property);
    match types.iter().find(|&&kind| kind != "null") {
        Some(&"string") => "string",
        Some(&"integer") if property["minimum"].as_f64().is_some_and(|min| min >= 0.0) => {
            "whole number"
        }
        Some(&"integer") => "integer",
        Some(&"number") => "number",
        Some(&"boolean") => "boolean (true or false)",
        Some(&"array") => "list",
        Some(&"object") => "object",
        _ => "value",
    }
}

/// A value as the refusal quotes it: its JSON, cut to a short line.
fn shown(value: &Value) -> String {
    const MAX_CHARS: usize = 60;
    let json = value.to_string();
    match json.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &json[..cut]),
        None => json,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, serde::Deserialize, JsonSchema)]
    struct Example {
        path: String,
        old_text: String,
        #[schemars(range(min = 1))]
        limit: Option<u32>,
        tags: Option<Vec<String>>,
    }

    fn refusal(arguments: Value) -> String {
        parse::<Example>(&arguments)
            .unwrap_err()
            .sentence("example")
    }

    #[test]
    fn arguments_parse_into_the_input_or_say_which_field_is_wrong() {
        assert_eq!(
            parse::<Example>(&json!({"path": "a.rs", "old_text": "x", "limit": 3, "extra": 1})),
            Ok(Example {
                path: "a.rs".into(),
                old_text: "x".into(),
                limit: Some(3),
                tags: None,
            })
        );
        // Missing: the first in declaration order, with its article.
        assert_eq!(refusal(json!({})), "example needs a `path` string");
        assert_eq!(
            refusal(json!({"path": "a.rs", "old_text": null})),
            "example needs an `old_text` string"
        );
        assert_eq!(
            refusal(json!({"path": 3, "old_text": "x"})),
            "example needs a `path` string, not 3"
        );
        assert_eq!(
            refusal(json!({"path": "a", "old_text": "x", "limit": "ten"})),
            "example needs a `limit` whole number, not \"ten\""
        );
        assert_eq!(
            refusal(json!({"path": "a", "old_text": "x", "limit": -1})),
            "example needs a `limit` whole number, not -1"
        );
        assert_eq!(
            refusal(json!({"path": "a", "old_text": "x", "tags": "t"})),
            "example needs a `tags` list, not \"t\""
        );
        // Inside a field: serde's words.
        assert_eq!(
            refusal(json!({"path": "a", "old_text": "x", "tags": [1]})),
            "the arguments of example are invalid: invalid type: integer `1`, expected a string"
        );
        assert_eq!(
            refusal(json!(["a.rs", "x"])),
            "the arguments of example are not a JSON object"
        );
        let long = refusal(json!({"path": "x".repeat(100), "old_text": 1, "limit": 1}));
        assert_eq!(long, "example needs an `old_text` string, not 1");
        let long = refusal(json!({"path": ["x".repeat(100)], "old_text": "x"}));
        assert!(long.ends_with("…"), "{long}");
    }
}
