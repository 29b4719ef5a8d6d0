//! The memory files (`agentls_core::memory`): the user's at
//! `$XDG_CONFIG_HOME/agentls/memory/MEMORY.md`, a workspace's under agentls's state
//! (`<stateDir>/memory/<root's digest>.md`), never in the repository, so a repository
//! cannot plant an entry. Private like the session logs (0700 directory, 0600 file), written
//! whole and renamed.

use std::path::{Path, PathBuf};

use agentls_core::memory::{self, Author, Entry, Scope};

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
        let workspace =
            root.map(|root| super::workspace_state::file(state_dir, root, "memory", ".md"));
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

    /// Keeps `fact` (checked, `memory::check_fact`) as `author`'s entry of today in `scope`'s
    /// file: the entry, and false when the same fact was kept already.
    pub fn keep(&self, scope: Scope, author: Author, fact: &str) -> Result<(Entry, bool), String> {
        let entry = Entry {
            author,
            date: today(),
            text: memory::check_fact(fact)?,
        };
        let added = self.add(scope, &entry)?;
        Ok((entry, added))
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
        super::workspace_state::write_private(path, text)
            .map_err(|err| format!("cannot write {}: {err}", path.display()))
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
    crate::protocol::lsp::MemoryState {
        scopes,
        offers: Vec::new(),
    }
}
