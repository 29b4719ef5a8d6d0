//! The memory files (`agentls_core::memory`): the user's at
//! `$XDG_CONFIG_HOME/agentls/memory/MEMORY.md`, a workspace's under agentls's state
//! (`<stateDir>/memory/<root's digest>.md`), never in the repository, so a repository
//! cannot plant an entry. Private like the session logs (0700 directory, 0600 file), written
//! whole and renamed.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use agentls_core::memory::{self, Entry, Scope};

use super::untrusted_file::{read_config_file, ConfigRead};

/// A memory file larger than this is not read (it is the user's to trim).
const MAX_MEMORY_FILE_BYTES: u64 = 256 * 1024;

/// Where the memories of a workspace are: the user's file, and the workspace's.
#[derive(Debug, Clone)]
pub struct MemoryFiles {
    pub user: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
}

impl MemoryFiles {
    /// The files for the workspace whose first root is `root`, with session state under
    /// `state_dir` (`stateDir`).
    pub fn new(root: Option<&Path>, state_dir: Option<&Path>) -> MemoryFiles {
        let workspace = root.map(|root| {
            let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
            super::session_log::state_dir(state_dir)
                .join("memory")
                .join(format!(
                    "{}-{}.md",
                    readable_name(&root),
                    root_digest(&root)
                ))
        });
        MemoryFiles {
            user: super::user_config::path("memory/MEMORY.md"),
            workspace,
        }
    }

    pub fn path(&self, scope: Scope) -> Option<&Path> {
        match scope {
            Scope::User => self.user.as_deref(),
            Scope::Workspace => self.workspace.as_deref(),
        }
    }

    /// Each scope's entries (none for a file that is missing or cannot be read: the
    /// problem is logged).
    pub fn entries(&self) -> Vec<(Scope, Vec<Entry>)> {
        Scope::ALL
            .into_iter()
            .map(|scope| {
                let entries = match self.read(scope) {
                    Ok(text) => memory::parse(&text),
                    Err(why) => {
                        tracing::warn!("memory: {why}");
                        Vec::new()
                    }
                };
                (scope, entries)
            })
            .collect()
    }

    /// The text of a scope's file; empty when it does not exist.
    pub fn read(&self, scope: Scope) -> Result<String, String> {
        let Some(path) = self.path(scope) else {
            return Ok(String::new());
        };
        let root = path.parent().unwrap_or(path);
        match read_config_file(path, Some(root), MAX_MEMORY_FILE_BYTES) {
            ConfigRead::Text(text) => Ok(text),
            ConfigRead::Missing => Ok(String::new()),
            ConfigRead::Refused(why) => Err(format!("cannot read {}: {why}", path.display())),
        }
    }

    /// Keeps `entry` in `scope`'s file; Ok(false) when the same fact is kept already.
    pub fn add(&self, scope: Scope, entry: &Entry) -> Result<bool, String> {
        let text = self.read(scope)?;
        match memory::with_entry(&text, scope, entry) {
            Some(next) => self.write(scope, &next).map(|()| true),
            None => Ok(false),
        }
    }

    /// Removes the `index`th entry (0-based) of `scope`'s file; the entry removed.
    pub fn remove(&self, scope: Scope, index: usize) -> Result<Entry, String> {
        let text = self.read(scope)?;
        let entries = memory::parse(&text);
        let (Some(entry), Some(next)) = (entries.get(index), memory::without_entry(&text, index))
        else {
            return Err(format!(
                "the {} memory has no entry {} (it has {})",
                scope.name(),
                index + 1,
                entries.len()
            ));
        };
        self.write(scope, &next)?;
        Ok(entry.clone())
    }

    fn write(&self, scope: Scope, text: &str) -> Result<(), String> {
        let Some(path) = self.path(scope) else {
            return Err(format!(
                "there is no place for the {} memory (no home directory)",
                scope.name()
            ));
        };
        let dir = path.parent().unwrap_or(path);
        let shown = |err: std::io::Error| format!("cannot write {}: {err}", path.display());
        super::session_log::private_dir(dir, None).map_err(shown)?;
        let temporary = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name().unwrap_or_default().to_string_lossy(),
            std::process::id()
        ));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)
            .map_err(shown)?;
        let written = file
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_all());
        if let Err(err) = written.and_then(|()| std::fs::rename(&temporary, path)) {
            let _ = std::fs::remove_file(&temporary);
            return Err(shown(err));
        }
        Ok(())
    }
}

/// Today's date as `YYYY-MM-DD` (UTC), the date an entry is kept with.
pub fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0);
    agentls_core::environment::civil_date(days as i64)
}

/// The root's folder name as a file name can hold it, so the user can tell the files apart.
fn readable_name(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if name.is_empty() {
        "root".into()
    } else {
        name
    }
}

/// The name of a workspace's memory file: a digest of its root's path.
fn root_digest(root: &Path) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(root.to_string_lossy().as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What `agent/memory` answers: each scope's file and entries.
pub fn state(files: &MemoryFiles) -> crate::protocol::lsp::MemoryState {
    use crate::protocol::lsp::{MemoryEntry, MemoryScopeState};
    let scopes = files
        .entries()
        .into_iter()
        .map(|(scope, entries)| MemoryScopeState {
            scope: scope.name().to_string(),
            path: files.path(scope).map(|p| p.to_string_lossy().into_owned()),
            entries: entries
                .into_iter()
                .map(|entry| MemoryEntry {
                    author: entry.author.name().to_string(),
                    date: entry.date,
                    text: entry.text,
                })
                .collect(),
        })
        .collect();
    crate::protocol::lsp::MemoryState { scopes }
}
