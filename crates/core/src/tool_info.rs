//! What the core knows of the tools without running them: their kinds (for approvals and
//! the editor's icons), what the ledger keeps of their calls, the plan's shape, and the error
//! text the model reads when a call fails. The tools themselves are declared by the server's
//! registry (one file per tool); the core reads them through [`ToolCatalog`].

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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Read,
    Search,
    Edit,
    Execute,
    Other,
}

/// What the ledger keeps of a tool's successful calls (a failed call is kept as an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerRecord {
    /// Nothing beyond its errors.
    Nothing,
    /// A file read: its `path` and the lines (`offset`, `limit`).
    FileRead,
    /// A file changed in place: its `path` and lines added and removed (`new_text`,
    /// `old_text`).
    FileEdit,
    /// A file written whole: its `path`, its lines (`content`), and whether it was created
    /// (the output starts with `Created `).
    FileWrite,
    /// A command run (`command`) and how it ended; a failed one is also an error.
    Command,
    /// A call of another program's tool (an MCP server's `mcp__SERVER__TOOL`) and how it
    /// ended; a failed one is also an error.
    ExternalCall,
}

/// The tools as the core sees them, declared once by the server's tool registry: the
/// session's fold, the ledger and the transcript read a call's kind, title and record from
/// here, so adding a tool changes nothing in the core.
pub trait ToolCatalog {
    /// A call's kind: most tools have one, some decide by their arguments (`lsp`'s
    /// `rename` is an edit); `Value::Null` asks for the tool's own.
    fn kind(&self, tool: &str, arguments: &Value) -> ToolKind;
    /// A short title for a call's row in the UI. The arguments come from the model and may be
    /// anything: a missing or mistyped field gives a vaguer title, never a panic.
    fn title(&self, tool: &str, arguments: &Value) -> String;
    fn ledger_record(&self, tool: &str) -> LedgerRecord;
}

/// One line for a title: whitespace runs (newlines of a script) become one space, and a long
/// text is cut with `…`.
pub fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAX_TITLE_CHARS - 1) {
        Some((cut, _)) if one_line.chars().count() > MAX_TITLE_CHARS => {
            format!("{}…", &one_line[..cut])
        }
        _ => one_line,
    }
}

/// One step of the model's plan (`update_plan`).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
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
    fn kinds_serialize_lowercase_and_titles_stay_one_short_line() {
        assert_eq!(serde_json::to_value(ToolKind::Execute).unwrap(), "execute");
        assert_eq!(shorten("cargo\n  test"), "cargo test");
        let long = shorten(&"echo ".repeat(100));
        assert!(long.ends_with('…'), "{long}");
        assert_eq!(long.chars().count(), MAX_TITLE_CHARS);
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
