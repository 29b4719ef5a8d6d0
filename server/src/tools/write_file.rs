//! `write_file`: a whole file created or replaced, planned (with its diff) for the host to
//! approve and apply.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use agentls_core::prompts::fill;
use agentls_core::tool_info::{error, shorten, LedgerRecord, ToolError, ToolKind};

use crate::host::FileChange;
use crate::tools::boundary::PathBoundary;
use crate::tools::diff::unified_diff;
use crate::tools::file_change;
use crate::tools::registry::{text_arg, Prepared, Tool, ToolContext, ToolOutcome};

/// A `write_file` call checked and computed, for the host to approve and apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWrite {
    pub path: PathBuf,
    pub content: String,
    /// Unified diff against the current text, or against nothing (`--- /dev/null`).
    pub diff: String,
    pub created: bool,
}

/// `write_file`: the whole new content of a file. `current` is its text (open buffer or disk),
/// `None` when the file does not exist yet.
pub fn plan_write(
    ws: &PathBoundary,
    path: &str,
    current: Option<&str>,
    content: &str,
) -> Result<PlannedWrite, ToolError> {
    let resolved = ws.resolve(path)?;
    let shown = ws.display(&resolved);
    if resolved.is_dir() {
        return Err(error(format!(
            "{shown} is a directory; write_file needs a file path"
        )));
    }
    let new_header = format!("b/{shown}");
    let (diff, created) = match current {
        None => (unified_diff("", content, "/dev/null", &new_header), true),
        Some(current) => (
            unified_diff(current, content, &format!("a/{shown}"), &new_header),
            false,
        ),
    };
    Ok(PlannedWrite {
        path: resolved,
        content: content.to_string(),
        diff,
        created,
    })
}

pub struct WriteFile;

/// `write_file`'s arguments (described to the model in `prompts/tools.json`; a file listing
/// in a reply becomes them: `agent::turn::listings`).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct WriteFileInput {
    pub path: String,
    pub content: String,
}

#[async_trait::async_trait]
impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    type Input = WriteFileInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn title(&self, arguments: &Value) -> String {
        text_arg(arguments, "path").map_or("Write a file".to_string(), |path| {
            format!("Write {}", shorten(path))
        })
    }

    fn ledger_record(&self) -> LedgerRecord {
        LedgerRecord::FileWrite
    }

    /// Planned before the approval, like an edit: the user sees the diff.
    async fn prepare(&self, cx: &ToolContext, input: &WriteFileInput) -> Result<Prepared, String> {
        let target = file_change::target(cx, &input.path).await?;
        target.check_read(cx, &target.path, Self::NAME)?;
        let file_change::Target {
            current,
            version,
            shown,
            ..
        } = target;
        let content = &input.content;
        // The same text again: a small model rewrites a file it failed to fix, unchanged.
        if current.as_deref() == Some(content.as_str()) {
            return Err(format!(
                "not run: {shown} already holds exactly this content, so writing it changes nothing. If a check or a test failed, change the code so that it passes; if the file is right, answer."
            ));
        }
        let planned =
            plan_write(&cx.boundary, &input.path, current.as_deref(), content).map_err(|e| e.0)?;
        let texts = &cx.host.prompts().tool_outputs;
        let summary = fill(
            if planned.created {
                &texts.file_created
            } else {
                &texts.file_replaced
            },
            &[
                ("path", &shown),
                ("lines", &content.lines().count().to_string()),
            ],
        );
        Ok(Prepared::Change {
            changes: vec![FileChange::Write {
                path: planned.path.clone(),
                version,
                original: current,
                content: planned.content.clone(),
            }],
            diff: planned.diff,
            summary,
        })
    }

    async fn run(&self, cx: &ToolContext, _: WriteFileInput, prepared: Prepared) -> ToolOutcome {
        file_change::apply(cx, prepared).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::*;

    #[test]
    fn plan_write_creates_or_replaces() {
        let (_dir, ws) = workspace();
        let created = plan_write(&ws, "src/new.rs", None, "fn new() {}\n").unwrap();
        assert!(created.created);
        assert_eq!(created.path, root(&ws).join("src/new.rs"));
        assert!(
            created
                .diff
                .starts_with("--- /dev/null\n+++ b/src/new.rs\n"),
            "{}",
            created.diff
        );
        assert!(created.diff.contains("+fn new() {}"), "{}", created.diff);

        write(&ws, "old.rs", "fn old() {}\n");
        let replaced = plan_write(&ws, "old.rs", Some("fn old() {}\n"), "fn new() {}\n").unwrap();
        assert!(!replaced.created);
        assert!(
            replaced.diff.contains("--- a/old.rs\n+++ b/old.rs\n"),
            "{}",
            replaced.diff
        );
        assert!(
            replaced.diff.contains("-fn old() {}\n+fn new() {}\n"),
            "{}",
            replaced.diff
        );

        std::fs::create_dir(root(&ws).join("dir")).unwrap();
        assert!(plan_write(&ws, "dir", None, "x")
            .unwrap_err()
            .0
            .contains("directory"));
        assert!(plan_write(&ws, "../evil.rs", None, "x")
            .unwrap_err()
            .0
            .contains("outside"));
    }
}
