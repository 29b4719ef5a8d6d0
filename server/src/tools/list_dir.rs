//! `list_dir`: an indented tree of a directory, .gitignore respected.

use std::ffi::OsStr;
use std::path::Path;

use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::tool_info::{error, shorten, ToolError, ToolKind};

use crate::tools::boundary::PathBoundary;
use crate::tools::registry::{blocking, text_arg, Prepared, Tool, ToolContext, ToolOutcome};

pub const DEFAULT_LIST_DEPTH: usize = 2;
pub const MAX_LIST_ENTRIES: usize = 1000;

/// The walk every listing and search shares: .gitignore and .ignore honoured even outside a
/// git repository, hidden files skipped, `.git` never entered, entries in name order.
pub(super) fn walker(path: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(path);
    builder
        .hidden(true)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != OsStr::new(".git"))
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// `list_dir`: the entries under a directory (default `roots[0]`) to `depth` levels, as an
/// indented tree with directories ending in `/`.
pub fn list_dir(
    ws: &PathBoundary,
    path: Option<&str>,
    depth: Option<usize>,
) -> Result<String, ToolError> {
    let (dir, is_dir) = ws.directory_or_file(path)?;
    let shown = ws.display(&dir);
    if !is_dir {
        return Err(error(format!(
            "{shown} is a file, not a directory; read it with read_file"
        )));
    }
    let depth = depth.unwrap_or(DEFAULT_LIST_DEPTH).max(1);
    let mut lines = vec![format!("{}/", shown.trim_end_matches('/'))];
    let mut listed = 0usize;
    let mut not_listed = 0usize;
    // Unreadable entries are skipped: the listing is a map, not an audit.
    for entry in walker(&dir).max_depth(Some(depth)).build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if listed == MAX_LIST_ENTRIES {
            not_listed += 1;
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
        lines.push(format!(
            "{}{}{}",
            "  ".repeat(entry.depth()),
            entry.file_name().to_string_lossy(),
            if is_dir { "/" } else { "" }
        ));
        listed += 1;
    }
    if listed == 0 {
        lines.push("  (empty, or every entry is ignored or hidden)".to_string());
    }
    if not_listed > 0 {
        lines.push(format!(
            "[{not_listed} more entries not listed; list a subdirectory or use a smaller depth]"
        ));
    }
    Ok(lines.join("\n"))
}

pub struct ListDir;

/// `list_dir`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirInput {
    pub path: Option<String>,
    #[schemars(range(min = 1))]
    pub depth: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for ListDir {
    const NAME: &'static str = "list_dir";
    type Input = ListDirInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, arguments: &Value) -> String {
        match text_arg(arguments, "path").map(str::trim) {
            Some(path) if path != "." && path != "./" => {
                let path = shorten(path);
                if path.ends_with('/') {
                    format!("List {path}")
                } else {
                    format!("List {path}/")
                }
            }
            _ => "List the workspace root".to_string(),
        }
    }

    async fn run(&self, cx: &ToolContext, input: ListDirInput, _: Prepared) -> ToolOutcome {
        let boundary = cx.boundary.clone();
        blocking(move || list_dir(&boundary, input.path.as_deref(), input.depth)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::*;

    #[test]
    fn list_dir_honours_gitignore_hides_git_and_limits_depth() {
        let (_dir, ws) = workspace();
        write(&ws, ".gitignore", "ignored.txt\ntarget/\n");
        write(&ws, ".git/config", "[core]\n");
        write(&ws, "ignored.txt", "x");
        write(&ws, "target/debug/app", "x");
        write(&ws, "Cargo.toml", "[package]\n");
        write(&ws, "src/lib.rs", "");
        write(&ws, "src/a/b/deep.rs", "");

        let listing = list_dir(&ws, None, None).unwrap();
        assert_eq!(listing, "./\n  Cargo.toml\n  src/\n    a/\n    lib.rs");

        let deeper = list_dir(&ws, Some("src"), Some(3)).unwrap();
        assert_eq!(deeper, "src/\n  a/\n    b/\n      deep.rs\n  lib.rs");

        let err = list_dir(&ws, Some("Cargo.toml"), None).unwrap_err().0;
        assert!(err.contains("not a directory"), "{err}");
        let err = list_dir(&ws, Some("nowhere"), None).unwrap_err().0;
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn list_dir_caps_entries() {
        let (_dir, ws) = workspace();
        for n in 0..MAX_LIST_ENTRIES + 5 {
            write(&ws, &format!("f{n:04}.txt"), "");
        }
        let listing = list_dir(&ws, None, Some(1)).unwrap();
        assert_eq!(listing.lines().count(), MAX_LIST_ENTRIES + 2);
        assert!(listing
            .ends_with("[5 more entries not listed; list a subdirectory or use a smaller depth]"));
    }
}
