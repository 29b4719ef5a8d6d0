//! What the core knows of the tools without running them: their kinds (for approvals and
//! the editor's icons), the one-line titles of their calls, the plan's shape, and the error
//! text the model reads when a call fails.

use serde_json::Value;

const MAX_TITLE_CHARS: usize = 80;
const PLAN_STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

/// Why a tool call failed, worded for the model: it reads the message and retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

pub fn error(message: impl Into<String>) -> ToolError {
    ToolError(message.into())
}

/// What a tool does, for the editor's UI and for the approval policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Read,
    Search,
    Edit,
    Execute,
    Other,
}

pub fn kind_of(tool_name: &str) -> ToolKind {
    match tool_name {
        "read_file" | "list_dir" => ToolKind::Read,
        "grep" => ToolKind::Search,
        "edit_file" | "write_file" => ToolKind::Edit,
        "shell" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// A short title for a tool call's row in the UI. The arguments come from the model and may be
/// anything: a missing or mistyped field gives a vaguer title, never a panic.
pub fn title(tool_name: &str, arguments: &Value) -> String {
    let text = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .filter(|value| !value.trim().is_empty())
    };
    let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
    match tool_name {
        "read_file" => {
            let Some(path) = text("path") else {
                return "Read a file".to_string();
            };
            let path = shorten(path);
            match (number("offset"), number("limit")) {
                (None, None) => format!("Read {path}"),
                (offset, Some(limit)) => {
                    let first = offset.unwrap_or(1).max(1);
                    let last = first.saturating_add(limit.max(1) - 1);
                    format!("Read {path} (lines {first}–{last})")
                }
                (Some(offset), None) => format!("Read {path} (from line {offset})"),
            }
        }
        "list_dir" => match text("path").map(str::trim) {
            Some(path) if path != "." && path != "./" => {
                let path = shorten(path);
                if path.ends_with('/') {
                    format!("List {path}")
                } else {
                    format!("List {path}/")
                }
            }
            _ => "List the workspace root".to_string(),
        },
        "grep" => {
            let mut title = match text("pattern") {
                Some(pattern) => format!("Grep `{}`", shorten(pattern)),
                None => "Grep".to_string(),
            };
            if let Some(path) = text("path") {
                title.push_str(&format!(" in {}", shorten(path)));
            }
            if let Some(glob) = text("glob") {
                title.push_str(&format!(" ({})", shorten(glob)));
            }
            title
        }
        "edit_file" => text("path").map_or("Edit a file".to_string(), |path| {
            format!("Edit {}", shorten(path))
        }),
        "write_file" => text("path").map_or("Write a file".to_string(), |path| {
            format!("Write {}", shorten(path))
        }),
        "shell" => {
            let Some(command) = text("command") else {
                return "Run a command".to_string();
            };
            match text("cwd").map(str::trim) {
                Some(cwd) if cwd != "." && cwd != "./" => {
                    format!("Run `{}` in {}", shorten(command), shorten(cwd))
                }
                _ => format!("Run `{}`", shorten(command)),
            }
        }
        "update_plan" => "Update plan".to_string(),
        "" => "Unknown tool".to_string(),
        other => shorten(other),
    }
}

/// One line for a title: whitespace runs (newlines of a script) become one space, and a long
/// text is cut with `…`.
fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAX_TITLE_CHARS - 1) {
        Some((cut, _)) if one_line.chars().count() > MAX_TITLE_CHARS => {
            format!("{}…", &one_line[..cut])
        }
        _ => one_line,
    }
}

/// One step of the model's plan (`update_plan`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanEntry {
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// The plan in `update_plan`'s arguments: `{"entries": [{"content", "status"}]}`.
pub fn parse_plan(arguments: &Value) -> Result<Vec<PlanEntry>, ToolError> {
    let statuses = PLAN_STATUSES.join(", ");
    let entries = arguments
        .get("entries")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            error("update_plan needs `entries`: a list of {\"content\": …, \"status\": …} objects")
        })?;
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let number = index + 1;
            let content = entry
                .get("content")
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default();
            if content.is_empty() {
                return Err(error(format!(
                    "plan entry {number} has no content: say what the step is"
                )));
            }
            let status = match entry.get("status") {
                Some(Value::String(status)) => status.as_str(),
                Some(other) => {
                    return Err(error(format!(
                        "plan entry {number} has the status {other}, which is not one of {statuses}"
                    )))
                }
                None => {
                    return Err(error(format!(
                        "plan entry {number} has no status: use one of {statuses}"
                    )))
                }
            };
            if !PLAN_STATUSES.contains(&status) {
                return Err(error(format!(
                    "plan entry {number} has the status `{status}`, which is not one of {statuses}"
                )));
            }
            Ok(PlanEntry {
                content: content.to_string(),
                status: status.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_titles() {
        assert_eq!(kind_of("read_file"), ToolKind::Read);
        assert_eq!(kind_of("list_dir"), ToolKind::Read);
        assert_eq!(kind_of("grep"), ToolKind::Search);
        assert_eq!(kind_of("edit_file"), ToolKind::Edit);
        assert_eq!(kind_of("write_file"), ToolKind::Edit);
        assert_eq!(kind_of("shell"), ToolKind::Execute);
        assert_eq!(kind_of("update_plan"), ToolKind::Other);
        assert_eq!(kind_of("nope"), ToolKind::Other);
        assert_eq!(serde_json::to_value(ToolKind::Execute).unwrap(), "execute");

        let t = |name: &str, args: Value| title(name, &args);
        assert_eq!(
            t("read_file", serde_json::json!({"path": "src/lib.rs"})),
            "Read src/lib.rs"
        );
        assert_eq!(
            t(
                "read_file",
                serde_json::json!({"path": "src/lib.rs", "offset": 10, "limit": 31})
            ),
            "Read src/lib.rs (lines 10–40)"
        );
        assert_eq!(
            t("list_dir", serde_json::json!({"path": "src"})),
            "List src/"
        );
        assert_eq!(
            t(
                "grep",
                serde_json::json!({"pattern": "fn answer", "path": "src/"})
            ),
            "Grep `fn answer` in src/"
        );
        assert_eq!(
            t("edit_file", serde_json::json!({"path": "src/lib.rs"})),
            "Edit src/lib.rs"
        );
        assert_eq!(
            t("write_file", serde_json::json!({"path": "src/new.rs"})),
            "Write src/new.rs"
        );
        assert_eq!(
            t("shell", serde_json::json!({"command": "cargo test"})),
            "Run `cargo test`"
        );
        assert_eq!(t("update_plan", Value::Null), "Update plan");
        for name in [
            "read_file",
            "list_dir",
            "grep",
            "edit_file",
            "write_file",
            "shell",
            "x",
            "",
        ] {
            assert!(!t(name, Value::Null).is_empty());
            assert!(!t(name, serde_json::json!({"path": 3, "offset": "x"})).is_empty());
        }
        let long = t("shell", serde_json::json!({"command": "echo ".repeat(100)}));
        assert!(long.ends_with("…`"), "{long}");
        assert!(long.chars().count() < 100, "{long}");
    }

    #[test]
    fn plans_are_parsed_and_bad_entries_refused() {
        let plan = parse_plan(&serde_json::json!({"entries": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix it", "status": "in_progress"},
            {"content": "Test it", "status": "pending"},
        ]}))
        .unwrap();
        assert_eq!(plan.len(), 3);
        assert_eq!(
            plan[1],
            PlanEntry {
                content: "Fix it".into(),
                status: "in_progress".into()
            }
        );

        let err = parse_plan(&Value::Null).unwrap_err().0;
        assert!(err.contains("entries"), "{err}");
        let err = parse_plan(&serde_json::json!({"entries": [{"content": "x", "status": "done"}]}))
            .unwrap_err()
            .0;
        assert!(
            err.contains("`done`") && err.contains("in_progress"),
            "{err}"
        );
        let err = parse_plan(&serde_json::json!({"entries": [{"content": "x"}]}))
            .unwrap_err()
            .0;
        assert!(err.contains("no status"), "{err}");
        let err =
            parse_plan(&serde_json::json!({"entries": [{"content": " ", "status": "pending"}]}))
                .unwrap_err()
                .0;
        assert!(err.contains("no content"), "{err}");
    }
}
