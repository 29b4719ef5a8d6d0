//! Diagnostics after an edit: once a call changed files (`edit_file`, `write_file`, a
//! `shell` command), the editor is asked for its diagnostics of them (`Host::diagnostics`),
//! and the errors and warnings in or near the changes (`agentls_core::editor_diagnostics`)
//! are appended to the call's output. A host that cannot answer leaves the output as it was.

use std::ops::Range;
use std::path::PathBuf;

use agentls_core::editor_diagnostics::{changed_lines, report, FileDiagnostics};
use agentls_core::snapshot::ChangeKind;

use crate::agent::turn::Turn;
use crate::host::FileChange;
use crate::tools::registry::{Effect, ToolContext, ToolOutcome};

/// The file a planned change is to and the lines of its new text it changes.
pub(super) fn planned_lines(change: &FileChange) -> (PathBuf, Range<u32>) {
    (
        change.path().to_path_buf(),
        changed_lines(change.original(), &change.new_text()),
    )
}

impl Turn {
    /// `outcome`'s output, followed by the editor's diagnostics of what it changed: near
    /// `planned`'s lines for an edit, whole files for a command's changes.
    pub(super) async fn output_with_diagnostics(
        &self,
        cx: &ToolContext,
        planned: Vec<(PathBuf, Range<u32>)>,
        outcome: &ToolOutcome,
    ) -> String {
        let mut output = outcome.output.clone();
        if !outcome.success {
            return output;
        }
        let wanted: Vec<(PathBuf, Option<Range<u32>>)> = match (&outcome.effect, planned) {
            (Some(Effect::Changed(_)), planned) => planned
                .into_iter()
                .map(|(path, lines)| (path, Some(lines)))
                .collect(),
            (Some(Effect::Ran { changed, .. } | Effect::BackgroundChanged { changed, .. }), _) => {
                changed
                    .iter()
                    .filter(|c| c.change != ChangeKind::Deleted)
                    .filter_map(|c| cx.boundary.resolve(&c.path).ok())
                    .map(|path| (path, None))
                    .collect()
            }
            _ => Vec::new(),
        };
        if wanted.is_empty() {
            return output;
        }
        let paths: Vec<PathBuf> = wanted.iter().map(|(path, _)| path.clone()).collect();
        // A cancel does not wait for the editor's language servers.
        let answered = tokio::select! {
            answered = self.host().diagnostics(&paths) => answered,
            () = cx.cancel.cancelled() => Vec::new(),
        };
        let files: Vec<FileDiagnostics> = wanted
            .into_iter()
            .filter_map(|(path, lines)| {
                let (_, diagnostics) = answered.iter().find(|(p, _)| *p == path)?;
                Some(FileDiagnostics {
                    path: cx.boundary.display(&path),
                    lines,
                    diagnostics: diagnostics.clone(),
                })
            })
            .collect();
        if let Some(text) = report(&files) {
            if !output.ends_with('\n') {
                output.push('\n');
            }
            output.push('\n');
            output.push_str(&text);
        }
        output
    }
}
