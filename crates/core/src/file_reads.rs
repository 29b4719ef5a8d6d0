//! What the model has seen of each file in a session: the text it last read (or wrote),
//! by hash. A whole-file write over an existing file it has not read, or read in an older
//! version, is refused with a message to read it first (Claude Code's rule for its Write
//! tool): a small model otherwise rewrites a file it never saw, renaming what other code
//! imports. An edit needs no such rule: its old_text must match the file exactly, which
//! shows the model has the text it changes.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// The texts the model has seen, by path.
#[derive(Debug, Default, Clone)]
pub struct FileReads {
    seen: HashMap<PathBuf, u64>,
}

/// Why a change to a file is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unseen {
    /// The model never read this file in the session.
    NeverRead,
    /// It read it, but the file changed since (the user, a command, a formatter).
    ChangedSinceRead,
}

impl FileReads {
    /// The model saw `text` as the whole content of `path` (it read it, or its own change
    /// made it so).
    pub fn saw(&mut self, path: &Path, text: &str) {
        self.seen.insert(path.to_path_buf(), digest(text));
    }

    /// Whether the model may change `path`, whose text is now `current` (None: it does not
    /// exist). A new file, or an empty one, needs no read: nothing of it can be lost.
    pub fn check(&self, path: &Path, current: Option<&str>) -> Result<(), Unseen> {
        let Some(current) = current.filter(|text| !text.trim().is_empty()) else {
            return Ok(());
        };
        match self.seen.get(path) {
            None => Err(Unseen::NeverRead),
            Some(&seen) if seen != digest(current) => Err(Unseen::ChangedSinceRead),
            Some(_) => Ok(()),
        }
    }
}

impl Unseen {
    /// The refusal the model reads, naming the file as it knows it.
    pub fn message(&self, tool: &str, shown: &str) -> String {
        match self {
            Unseen::NeverRead => format!(
                "not run: {shown} exists and you had not read it in this session. Make your change again with {tool} once you have its text: keep the names other code uses (functions, classes, constants, imports)."
            ),
            Unseen::ChangedSinceRead => format!(
                "not run: {shown} changed since you last read it (the user, a command or a formatter changed it). Make your change again with {tool} against its current text."
            ),
        }
    }
}

/// The tools whose successful call puts a file's text in the model's context.
const READ_OR_WRITTEN: [&str; 3] = ["read_file", "write_file", "edit_file"];

/// The paths (as the model gave them) of the files a session's history shows it read or
/// changed with success: a session resumed in a new process starts with those files counted
/// as read in their current version (their text is in the context the model has).
pub fn read_in_history(history: &crate::history::History) -> Vec<String> {
    use crate::history::Item;
    let entries = history.entries();
    let succeeded = |call: &str| {
        entries.iter().any(|e| {
            matches!(&e.item, Item::ToolOutput { call_id, success: true, .. } if call_id == call)
        })
    };
    let mut paths: Vec<String> = entries
        .iter()
        .filter_map(|e| match &e.item {
            Item::ToolCall {
                call_id,
                name,
                arguments,
            } if READ_OR_WRITTEN.contains(&name.as_str()) && succeeded(call_id) => {
                serde_json::from_str::<serde_json::Value>(arguments)
                    .ok()?
                    .get("path")?
                    .as_str()
                    .map(str::to_string)
            }
            _ => None,
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn digest(text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_needs_the_current_text_read() {
        let mut reads = FileReads::default();
        let path = Path::new("/w/a.py");
        // New or empty: nothing to lose.
        assert_eq!(reads.check(path, None), Ok(()));
        assert_eq!(reads.check(path, Some(" \n")), Ok(()));
        assert_eq!(
            reads.check(path, Some("def f(): pass\n")),
            Err(Unseen::NeverRead)
        );
        reads.saw(path, "def f(): pass\n");
        assert_eq!(reads.check(path, Some("def f(): pass\n")), Ok(()));
        assert_eq!(
            reads.check(path, Some("def g(): pass\n")),
            Err(Unseen::ChangedSinceRead)
        );
        // Another file is not covered by this one's read.
        assert_eq!(
            reads.check(Path::new("/w/b.py"), Some("x = 1\n")),
            Err(Unseen::NeverRead)
        );
    }

    #[test]
    fn the_files_a_history_read_are_found() {
        use crate::history::{History, Item};
        let prompts = crate::prompts::Prompts::builtin();
        let mut history = History::new(crate::tokens::TokenizerKind::O200kBase);
        let policy = crate::truncate::TruncationPolicy::Tokens(1000);
        for (id, path, success) in [("a", "bob.py", true), ("b", "missing.py", false)] {
            history.record(
                Item::ToolCall {
                    call_id: id.into(),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\": \"{path}\"}}"),
                },
                policy,
                &prompts,
            );
            history.record(
                Item::ToolOutput {
                    call_id: id.into(),
                    name: "read_file".into(),
                    content: "L1: x".into(),
                    success,
                },
                policy,
                &prompts,
            );
        }
        assert_eq!(read_in_history(&history), ["bob.py"]);
    }

    #[test]
    fn the_refusal_says_what_to_do() {
        let text = Unseen::NeverRead.message("write_file", "src/a.py");
        assert!(
            text.contains("had not read it") && text.contains("src/a.py"),
            "{text}"
        );
        let text = Unseen::ChangedSinceRead.message("edit_file", "src/a.py");
        assert!(text.contains("changed since"), "{text}");
    }
}
