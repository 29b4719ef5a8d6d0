//! Configuration: parsed from `initializationOptions`, replaced by each
//! `workspace/didChangeConfiguration`. Pure: the LSP adapter reports the problems.
//!
//! Rules: a settings object is the whole configuration (an absent key takes its default);
//! a key of the wrong type keeps its previous value and is reported; an unknown key is
//! logged and ignored. Settings wrapped as `{ "agentls": { … } }` (what VS Code sends
//! for a section) are unwrapped.

use crate::agents_md;
use crate::document;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `agentsMd.maxBytes`: cap on the AGENTS.md chain's content.
    pub agents_md_max_bytes: usize,
    /// `syntax.maxDocumentBytes`: documents above this get no syntax tree.
    pub syntax_max_document_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            agents_md_max_bytes: agents_md::DEFAULT_MAX_BYTES,
            syntax_max_document_bytes: document::DEFAULT_MAX_SYNTAX_BYTES,
        }
    }
}

/// A key whose value was rejected; the previous value stays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub key: String,
    pub message: String,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ConfigUpdate {
    pub problems: Vec<ConfigProblem>,
    pub unknown_keys: Vec<String>,
}

/// One known key: how to read it from JSON, and how to keep the previous value when the
/// new one is rejected.
struct Key {
    path: &'static str,
    set: fn(&mut Config, &Value) -> Result<(), String>,
    keep: fn(&mut Config, &Config),
}

/// Every known key, by dotted path: one table so validation and defaults cannot drift.
const KEYS: &[Key] = &[
    Key {
        path: "agentsMd.maxBytes",
        set: |c, v| {
            c.agents_md_max_bytes = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.agents_md_max_bytes = p.agents_md_max_bytes,
    },
    Key {
        path: "syntax.maxDocumentBytes",
        set: |c, v| {
            c.syntax_max_document_bytes = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.syntax_max_document_bytes = p.syntax_max_document_bytes,
    },
];

fn non_negative_integer(value: &Value) -> Result<usize, String> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("must be a non-negative integer, got {value}"))
}

impl Config {
    /// The configuration `settings` describes, starting from `previous` for rejected keys.
    pub fn from_settings(previous: &Config, settings: &Value) -> (Config, ConfigUpdate) {
        let mut update = ConfigUpdate::default();
        let mut next = Config::default();
        let settings = match settings {
            Value::Null => &Value::Object(Map::new()),
            Value::Object(map)
                if map.len() == 1 && map.get("agentls").is_some_and(Value::is_object) =>
            {
                &map["agentls"]
            }
            other => other,
        };
        let Value::Object(map) = settings else {
            update.problems.push(ConfigProblem {
                key: "(settings)".into(),
                message: format!("must be an object, got {settings}"),
            });
            return (previous.clone(), update);
        };
        let mut leaves = Vec::new();
        flatten("", map, &mut leaves);
        for (key, value) in leaves {
            match KEYS.iter().find(|known| known.path == key) {
                // null means "the default".
                Some(_) if value.is_null() => {}
                Some(known) => {
                    if let Err(message) = (known.set)(&mut next, value) {
                        (known.keep)(&mut next, previous);
                        update.problems.push(ConfigProblem { key, message });
                    }
                }
                None => update.unknown_keys.push(key),
            }
        }
        (next, update)
    }
}

/// Flattens nested objects into dotted keys, but only as deep as the known keys go: a
/// section object that is not a known prefix is reported whole as one unknown key.
fn flatten<'a>(prefix: &str, map: &'a Map<String, Value>, out: &mut Vec<(String, &'a Value)>) {
    for (name, value) in map {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let is_section = KEYS
            .iter()
            .any(|known| known.path.starts_with(&format!("{key}.")));
        match value {
            Value::Object(inner) if is_section => flatten(&key, inner, out),
            _ => out.push((key, value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_for_empty_or_null_settings() {
        for settings in [json!(null), json!({})] {
            let (config, update) = Config::from_settings(&Config::default(), &settings);
            assert_eq!(config, Config::default());
            assert_eq!(update, ConfigUpdate::default());
        }
    }

    #[test]
    fn known_keys_are_read_and_nested_or_wrapped_forms_agree() {
        let (a, _) = Config::from_settings(
            &Config::default(),
            &json!({"agentsMd": {"maxBytes": 100}, "syntax": {"maxDocumentBytes": 5}}),
        );
        let (b, _) = Config::from_settings(
            &Config::default(),
            &json!({"agentls": {"agentsMd": {"maxBytes": 100}, "syntax": {"maxDocumentBytes": 5}}}),
        );
        assert_eq!(a.agents_md_max_bytes, 100);
        assert_eq!(a.syntax_max_document_bytes, 5);
        assert_eq!(a, b);
    }

    #[test]
    fn wrong_type_keeps_the_previous_value_and_names_the_key() {
        let previous = Config {
            agents_md_max_bytes: 777,
            ..Config::default()
        };
        let (config, update) = Config::from_settings(
            &previous,
            &json!({"agentsMd": {"maxBytes": "lots"}, "syntax": {"maxDocumentBytes": 9}}),
        );
        assert_eq!(config.agents_md_max_bytes, 777);
        assert_eq!(config.syntax_max_document_bytes, 9);
        assert_eq!(update.problems.len(), 1);
        assert_eq!(update.problems[0].key, "agentsMd.maxBytes");
        assert!(update.problems[0].message.contains("\"lots\""));
        let (config, update) =
            Config::from_settings(&previous, &json!({"agentsMd": {"maxBytes": -1}}));
        assert_eq!(config.agents_md_max_bytes, 777);
        assert_eq!(update.problems[0].key, "agentsMd.maxBytes");
    }

    #[test]
    fn absent_keys_return_to_defaults_and_unknown_keys_are_listed() {
        let previous = Config {
            agents_md_max_bytes: 1,
            syntax_max_document_bytes: 2,
        };
        let (config, update) = Config::from_settings(
            &previous,
            &json!({"provider": {"kind": "openai"}, "agentsMd": {"maxBytes": 3, "colour": 1}}),
        );
        assert_eq!(config.agents_md_max_bytes, 3);
        assert_eq!(
            config.syntax_max_document_bytes,
            Config::default().syntax_max_document_bytes
        );
        assert_eq!(update.unknown_keys, ["agentsMd.colour", "provider"]);
    }

    #[test]
    fn a_non_object_is_rejected_whole() {
        let previous = Config {
            agents_md_max_bytes: 5,
            ..Config::default()
        };
        let (config, update) = Config::from_settings(&previous, &json!([1, 2]));
        assert_eq!(config, previous);
        assert_eq!(update.problems[0].key, "(settings)");
    }
}
