//! The check after a change (`checks.afterEdit`, `agentls_core::checks`): after an
//! `edit_file` or `write_file` that changed a file, the project's check command runs in the
//! command sandbox and its verdict (its failing output's end) is appended to the change's
//! result. It runs only where the session's rules would run that command without asking
//! (a check is a command like any other: a repository's tests are its code), and, when
//! `auto`, only where no editor reports diagnostics (the editor's are the check there).

use std::path::Path;
use std::time::Duration;

use agentls_core::approval::Gate;
use agentls_core::checks::{self, AfterEdit};
use agentls_core::tool_info::ToolKind;

use crate::agent::turn::Turn;
use crate::tools::registry::{Effect, ToolContext, ToolOutcome};
use crate::tools::shell::run_shell;
use crate::tools::shell_process::ChildSetup;

/// A check's output kept in memory (its end is what the model reads).
const CHECK_OUTPUT_BYTES: usize = 256 * 1024;

/// What the check after a change found: a reason for the turn to go on
/// (`reminders.failingCheck`, a fresh attempt), or none. A check that could not run is not
/// a failure of the code; one stopped at `checks.timeoutMs` is (`checks::failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::agent) enum CheckVerdict {
    Passed,
    /// Its report, as appended to the change's result.
    Failed(String),
}

impl Turn {
    /// `output` followed by the check's verdict, when a check applies to what `outcome`
    /// changed; and the verdict, when a check ran.
    pub(super) async fn output_with_check(
        &self,
        cx: &ToolContext,
        outcome: &ToolOutcome,
        output: String,
    ) -> (String, Option<CheckVerdict>) {
        let Some(Effect::Changed(changed)) = outcome.effect.as_ref().filter(|_| outcome.success)
        else {
            return (output, None);
        };
        let Some(root) = cx.boundary.roots.first() else {
            return (output, None);
        };
        let Some(command) = self.check_command(changed, root).await else {
            return (output, None);
        };
        if self
            .gate("shell", ToolKind::Execute, Some(&command), None, None)
            .await
            != Gate::Run
        {
            return (output, None);
        }
        let limit = Duration::from_millis(self.host().config().check_timeout_ms);
        let ran = run_shell(
            &command,
            root,
            limit,
            CHECK_OUTPUT_BYTES,
            |_: &str| {},
            &cx.cancel,
            ChildSetup {
                hidden_env: &cx.hidden_env,
                sandbox: cx.sandbox.as_ref(),
            },
        )
        .await;
        let (verdict, failed) = match ran {
            Ok(ran) => (
                checks::report(
                    &command,
                    ran.exit_code,
                    ran.timed_out.then_some(limit),
                    &ran.output,
                ),
                checks::failed(ran.exit_code, ran.timed_out, &command),
            ),
            Err(err) => (
                Some(format!(
                    "[check after this change: `{command}` could not run: {}]",
                    err.0
                )),
                false,
            ),
        };
        let Some(verdict) = verdict else {
            return (output, Some(CheckVerdict::Passed));
        };
        let mut output = output;
        if !output.ends_with('\n') {
            output.push('\n');
        }
        output.push('\n');
        output.push_str(&verdict);
        let verdict = if failed {
            CheckVerdict::Failed(verdict)
        } else {
            CheckVerdict::Passed
        };
        (output, Some(verdict))
    }

    /// The check `checks.afterEdit` runs after a change to `changed`, if any.
    async fn check_command(&self, changed: &[String], root: &Path) -> Option<String> {
        match self.host().config().after_edit {
            AfterEdit::Off => None,
            AfterEdit::Command(command) => Some(command),
            AfterEdit::Auto if self.host().has_editor_diagnostics() => None,
            AfterEdit::Auto => {
                let root = root.to_path_buf();
                let files = tokio::task::spawn_blocking(move || project_files(&root))
                    .await
                    .unwrap_or_default();
                changed.iter().find_map(|path| checks::detect(path, &files))
            }
        }
    }
}

/// The project's files in its top two levels (relative paths), hidden ones skipped: enough
/// for `checks::detect` to see what kind of project it is, cheap on any tree.
fn project_files(root: &Path) -> Vec<String> {
    const MAX_ENTRIES: usize = 2_000;
    let mut files = Vec::new();
    let Ok(top) = std::fs::read_dir(root) else {
        return files;
    };
    for entry in top.flatten().take(MAX_ENTRIES) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        // Not followed through links: the check only needs the project's own shape.
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => {
                if let Ok(inner) = std::fs::read_dir(entry.path()) {
                    files.extend(
                        inner
                            .flatten()
                            .take(MAX_ENTRIES)
                            .map(|e| format!("{name}/{}", e.file_name().to_string_lossy())),
                    );
                }
            }
            Ok(_) => files.push(name),
            Err(_) => {}
        }
    }
    files
}
