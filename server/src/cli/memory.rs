//! `agentls memory`: the user's view of the memory files (`store::memory`) from the
//! terminal: list both scopes' entries, add one as the user's, remove one by its number.

use std::path::{Path, PathBuf};

use agentls_core::memory::{Author, Scope};

use crate::store::memory::MemoryFiles;

/// What `agentls memory` was asked to do.
#[derive(Debug)]
pub enum MemoryAction {
    List,
    Add { fact: String, scope: Scope },
    Remove { number: usize, scope: Scope },
}

/// Runs `agentls memory`; the text for stdout.
pub fn run(
    action: &MemoryAction,
    workspace: Option<&Path>,
    config_flag: Option<&str>,
) -> Result<String, String> {
    let config = crate::cli::ask::settings_config(config_flag)?;
    let root = workspace_root(workspace)?;
    let files = MemoryFiles::new(Some(&root), config.state_dir.as_deref());
    match action {
        MemoryAction::List => Ok(list(&files)),
        MemoryAction::Add { fact, scope } => {
            let (entry, added) = files.keep(*scope, Author::User, fact)?;
            Ok(if added {
                format!("kept in the {} memory: {}", scope.name(), entry.text)
            } else {
                format!("the {} memory holds this fact already", scope.name())
            })
        }
        MemoryAction::Remove { number, scope } => {
            let index = number
                .checked_sub(1)
                .ok_or("entries are numbered from 1 (see `agentls memory list`)")?;
            let entry = files.remove(*scope, index)?;
            Ok(format!(
                "removed from the {} memory: {}",
                scope.name(),
                entry.text
            ))
        }
    }
}

/// Each scope's file and its numbered entries, with who wrote each.
fn list(files: &MemoryFiles) -> String {
    let mut out = String::new();
    for (scope, entries) in files.entries() {
        let place = files
            .path(scope)
            .map_or("(no place: no home directory)".to_string(), |p| {
                p.display().to_string()
            });
        out.push_str(&format!("{} memory: {place}\n", scope.name()));
        if entries.is_empty() {
            out.push_str("  (none)\n");
        }
        for (i, entry) in entries.iter().enumerate() {
            let date = if entry.date.is_empty() {
                String::new()
            } else {
                format!(" {}", entry.date)
            };
            out.push_str(&format!(
                "  {}. [{}{date}] {}\n",
                i + 1,
                entry.author.name(),
                entry.text
            ));
        }
    }
    out.trim_end().to_string()
}

/// `--workspace`, else the current directory, as the agent's first root.
fn workspace_root(workspace: Option<&Path>) -> Result<PathBuf, String> {
    let dir = match workspace {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    dir.canonicalize()
        .map_err(|e| format!("cannot use workspace {}: {e}", dir.display()))
}
