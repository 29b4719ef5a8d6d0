//! `lsp`'s `rename`: the editor's language server computes the workspace edit; agentls
//! plans it as one change of each file it touches (against the open buffer, else the disk),
//! so that it is shown, approved, applied and checkpointed like `edit_file`'s.

use lsp_types::Url;

use agentls_core::editor_lsp::{self, Operation};
use agentls_core::prompts::fill;

use crate::host::FileChange;
use crate::tools::diff::unified_diff;
use crate::tools::file_change;
use crate::tools::lsp_position::{locate, LspInput};
use crate::tools::registry::{Prepared, ToolContext};

/// The rename planned: every file's change and their diff. Err is what the model reads.
pub async fn plan_rename(cx: &ToolContext, input: &LspInput) -> Result<Prepared, String> {
    let new_name = input
        .new_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or("rename needs `new_name`")?;
    if new_name.contains(char::is_whitespace) {
        return Err(format!("`{new_name}` is not a name: it holds a space"));
    }
    let Some(encoding) = cx.host.editor_language_servers() else {
        return Err(NO_SERVER.to_string());
    };
    let at = locate(cx, input).await?;
    let params = editor_lsp::params(
        Operation::Rename,
        Some(&at.uri),
        at.position(encoding),
        "",
        new_name,
    );
    let result = cx
        .host
        .editor_lsp(Operation::Rename.method(), params)
        .await
        .map_err(|why| {
            format!(
                "the editor's language server could not rename at {}: {why}",
                at.place()
            )
        })?;
    let files = editor_lsp::workspace_edit(&result)?;
    if files.iter().all(|(_, edits)| edits.is_empty()) {
        return Err(format!(
            "the language server found nothing to rename at {}",
            at.place()
        ));
    }
    let mut changes = Vec::new();
    let mut diffs = String::new();
    let mut edits = 0;
    for (uri, file_edits) in files.iter().filter(|(_, e)| !e.is_empty()) {
        let (change, diff) = plan_file(cx, uri, file_edits, encoding).await?;
        edits += file_edits.len();
        diffs.push_str(&diff);
        changes.push(change);
    }
    let shown: Vec<String> = changes
        .iter()
        .map(|c| cx.boundary.display(c.path()))
        .collect();
    let old_name = at.word.clone().unwrap_or_else(|| at.place());
    let summary = fill(
        &cx.host.prompts().tool_outputs.symbol_renamed,
        &[
            ("old", &old_name),
            ("new", new_name),
            ("edits", &edits.to_string()),
            ("files", &changes.len().to_string()),
            ("list", &shown.join(", ")),
        ],
    );
    Ok(Prepared::Change {
        changes,
        diff: diffs,
        summary,
    })
}

/// Said when no language server can rename: the model is told how else to do it.
const NO_SERVER: &str = "rename needs the editor's language servers, and none answers here (the client did not offer them, or this is the terminal or an ACP client). Find the uses with find_symbol (references: true) and change each with edit_file";

/// One file's edits planned against its text now.
async fn plan_file(
    cx: &ToolContext,
    uri: &Url,
    edits: &[lsp_types::TextEdit],
    encoding: agentls_core::position::PositionEncoding,
) -> Result<(FileChange, String), String> {
    let path = uri
        .to_file_path()
        .map_err(|()| format!("the rename would change {uri}, which is not a file"))?;
    let target = file_change::target(cx, &path.to_string_lossy())
        .await
        .map_err(|why| {
            format!(
                "the rename would change {}: {why}; nothing was changed",
                path.display()
            )
        })?;
    let Some(current) = target.current else {
        return Err(format!(
            "the rename would change {}, which does not exist",
            target.shown
        ));
    };
    let (range, new_text) = editor_lsp::apply_edits(&current, edits, encoding).map_err(|why| {
        format!(
            "the rename's edits of {} do not fit it: {why}",
            target.shown
        )
    })?;
    let change = FileChange::Edit {
        path: target.path,
        version: target.version,
        original: current.clone(),
        range,
        new_text,
    };
    let diff = unified_diff(
        &current,
        &change.new_text(),
        &format!("a/{}", target.shown),
        &format!("b/{}", target.shown),
    );
    Ok((change, diff))
}
