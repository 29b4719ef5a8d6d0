//! What `edit_file` and `write_file` share: the text a change is planned against (the open
//! buffer, else the disk) and applying a planned change through the host.

use std::path::Path;

use crate::host::FileChange;
use crate::locks::Locked;
use crate::store::files;
use crate::tools::registry::{Effect, Prepared, ToolContext, ToolOutcome};

/// The file a change names, as both file tools plan against it.
pub struct Target {
    /// The file, resolved through the workspace boundary.
    pub path: std::path::PathBuf,
    /// The file's current text (None when it does not exist yet).
    pub current: Option<String>,
    /// The open buffer's version the change is planned against (None: read from disk).
    pub version: Option<i32>,
    /// The path as shown to the model and the user.
    pub shown: String,
}

impl Target {
    /// Refuses a change to a file the model has not read in its current version
    /// (`tools.readBeforeWrite`, `agentls_core::file_reads`). The refusal carries the read
    /// itself (the file's first page, as `read_file` shows it), which now counts as read:
    /// a small model told to read first often gives up instead.
    pub fn check_read(&self, cx: &ToolContext, path: &Path, tool: &str) -> Result<(), String> {
        let (Some(reads), Some(current)) = (&cx.reads, &self.current) else {
            return Ok(());
        };
        let mut reads = reads.locked();
        let Err(unseen) = reads.check(path, Some(current)) else {
            return Ok(());
        };
        let mut refusal = unseen.message(tool, &self.shown);
        if let Ok(page) =
            crate::tools::read_file::page(current, &self.shown, None, None, cx.output_budget)
        {
            reads.saw(path, current);
            refusal.push_str(&format!(
                "\nHere it is, as read_file shows it (this counts as your read):\n{page}"
            ));
        }
        Err(refusal)
    }
}

/// The `path` argument of a call resolved through the boundary, with the file's current
/// text; errors are worded for the model.
pub async fn target(cx: &ToolContext, arg: &str) -> Result<Target, String> {
    let path = cx.boundary.resolve(arg).map_err(|e| e.0)?;
    let (current, version) = current_text(cx, &path).await?;
    Ok(Target {
        shown: cx.boundary.display(&path),
        path,
        current,
        version,
    })
}

/// The file's current text and the open buffer's version (None when read from disk, or
/// when the file does not exist yet).
async fn current_text(
    cx: &ToolContext,
    path: &Path,
) -> Result<(Option<String>, Option<i32>), String> {
    match cx.host.buffer(path).await {
        Some((text, version)) => Ok((Some(text), Some(version))),
        None if path.exists() => {
            let disk = path.to_path_buf();
            let text = tokio::task::spawn_blocking(move || files::read_text(&disk))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|refused| refused.0)?;
            Ok((Some(text), None))
        }
        None => Ok((None, None)),
    }
}

/// Applies the change `prepare` planned (through the editor over LSP, so it is undoable
/// there), file by file; the model is told the summary, or why (and after which files) it
/// was not applied.
pub async fn apply(cx: &ToolContext, prepared: Prepared) -> ToolOutcome {
    let Prepared::Change {
        changes, summary, ..
    } = prepared
    else {
        return ToolOutcome::failed("the change was not planned");
    };
    let mut done = Vec::new();
    for change in changes {
        let path = cx.boundary.display(change.path());
        if let Err(why) = apply_one(cx, change).await {
            let applied = match done.is_empty() {
                true => String::new(),
                false => format!(" ({} was changed before it)", done.join(", ")),
            };
            return ToolOutcome::failed(format!(
                "the edit of {path} was not applied: {why}{applied}"
            ));
        }
        done.push(path);
    }
    ToolOutcome::ok(summary).with_effect(Effect::Changed(done))
}

async fn apply_one(cx: &ToolContext, change: FileChange) -> Result<(), String> {
    // What the model will have seen once the change is made: its next change needs no
    // read. Not so for a file it had not read (one a rename changed): it knows a line of it.
    let seen = cx
        .reads
        .as_ref()
        .filter(|reads| {
            reads
                .locked()
                .check(change.path(), change.original())
                .is_ok()
        })
        .map(|reads| {
            (
                reads.clone(),
                change.path().to_path_buf(),
                change.new_text(),
            )
        });
    // A cancel of the turn stops the wait for the editor (which may then still apply
    // the edit it was sent; the model is told it may have).
    let applied = tokio::select! {
        applied = cx.host.apply(change) => applied,
        () = cx.cancel.cancelled() => Err("the turn was cancelled while the editor was applying it (the editor may still apply it)".to_string()),
    };
    applied?;
    if let Some((reads, changed, text)) = seen {
        reads.locked().saw(&changed, &text);
    }
    Ok(())
}
