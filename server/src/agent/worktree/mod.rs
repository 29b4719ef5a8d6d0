//! Subagents that work apart (`isolation: worktree`): the child's session gets a host whose
//! one root is a fresh git worktree of the workspace (`git.rs`), so its tools, its sandbox's
//! writable root and its context are that worktree's; it writes the disk there, never the
//! user's buffers or terminal. At its end the parent gets the diff and the branch, and the
//! main tree is untouched until the parent (or the user) applies it.

mod git;
mod session;

use std::path::PathBuf;
use std::sync::Arc;

use agentls_core::config::Config;
use agentls_core::editor_state::EditorState;
use agentls_core::prompts::Prompts;

use crate::agent::{Agent, AgentError};
use crate::host::{Gathered, Host, Notice, PermissionOutcome, PermissionRequest};

/// The parent's host with one root, the worktree: no editor buffers, terminal or editor
/// diagnostics (they are the main tree's); the user is asked and told through the parent's.
pub(in crate::agent) struct WorktreeHost {
    inner: Arc<dyn Host>,
    root: PathBuf,
}

#[async_trait::async_trait]
impl Host for WorktreeHost {
    fn config(&self) -> Config {
        self.inner.config()
    }
    fn prompts(&self) -> Arc<Prompts> {
        self.inner.prompts()
    }
    fn roots(&self) -> Vec<PathBuf> {
        vec![self.root.clone()]
    }
    async fn request_permission(&self, request: PermissionRequest) -> PermissionOutcome {
        self.inner.request_permission(request).await
    }
    fn notify(&self, notice: Notice) {
        self.inner.notify(notice)
    }
    fn progress(&self, id: &str, title: &str, end: Option<String>) {
        self.inner.progress(id, title, end)
    }
    fn show_warning(&self, message: String) {
        self.inner.show_warning(message)
    }
    async fn flush(&self) {
        self.inner.flush().await
    }
    /// The gather over the worktree's disk, with the editor's state (which names a file of
    /// the workspace) moved to that file's place in the worktree.
    async fn gather(&self, editor: Option<&EditorState>) -> Result<Gathered, String> {
        let editor = editor.and_then(|e| self.in_worktree(e));
        let source = crate::gather::DiskSource {
            roots: self.roots(),
            symbols: self.symbols().await,
        };
        crate::gather::gather(&source, &self.config(), &self.prompts(), editor.as_ref()).await
    }
}

impl WorktreeHost {
    /// The editor shows the workspace: a file of its repository is, for this session, the
    /// worktree's file at the same place (the user's cursor and selection over the
    /// worktree's text). None (no editor state) for a file the worktree does not have or
    /// one outside the repository the worktree was made from.
    fn in_worktree(&self, editor: &EditorState) -> Option<EditorState> {
        let path = editor.uri.to_file_path().ok()?;
        if path.starts_with(&self.root) {
            return Some(editor.clone());
        }
        let main = self.inner.roots().into_iter().next()?;
        let top = main.ancestors().find(|dir| dir.join(".git").exists())?;
        if !path.starts_with(&main) {
            return None;
        }
        let moved = self.root.join(path.strip_prefix(top).ok()?);
        if !moved.is_file() {
            return None;
        }
        let mut editor = editor.clone();
        editor.uri = lsp_types::Url::from_file_path(&moved).ok()?;
        Some(editor)
    }
}

/// A child's worktree while it runs.
pub(in crate::agent) struct Isolated {
    pub(in crate::agent) host: Arc<dyn Host>,
    worktree: git::Worktree,
}

impl Agent {
    fn worktrees_dir(&self) -> Result<PathBuf, AgentError> {
        Ok(git::dir_beside(self.store()?.dir()))
    }

    /// A worktree for the child named `name` (its parent's call), with its host. Err: why
    /// the child cannot work apart (no repository, no commit, a config that runs programs).
    pub(in crate::agent) async fn isolate(&self, name: &str) -> Result<Isolated, String> {
        let root = self
            .host
            .roots()
            .first()
            .cloned()
            .ok_or("isolation: worktree needs a workspace root")?;
        let dir = self.worktrees_dir().map_err(|e| e.message)?;
        let name = name.to_string();
        let worktree = tokio::task::spawn_blocking(move || {
            git::create(&root, &dir, &name, git::Keeper::Process)
        })
        .await
        .map_err(|e| e.to_string())??;
        let host: Arc<dyn Host> = Arc::new(WorktreeHost {
            inner: self.host.clone(),
            root: worktree
                .path
                .canonicalize()
                .unwrap_or(worktree.path.clone()),
        });
        Ok(Isolated { host, worktree })
    }

    /// The child's work committed on its branch, the worktree removed: what the parent's
    /// `task` output says after the child's answer.
    pub(in crate::agent) async fn finish_isolated(
        &self,
        isolated: Isolated,
        agent: &str,
    ) -> String {
        let worktree = isolated.worktree;
        let branch = worktree.branch.clone();
        let message = format!("agentls: the work of the subagent {agent}");
        let finished = tokio::task::spawn_blocking(move || git::finish(&worktree, &message))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
        match finished {
            Ok(f) if f.stat.trim().is_empty() => {
                "It worked in a git worktree of its own and changed no file.".to_string()
            }
            Ok(f) => format!(
                "It worked in a git worktree of its own: its changes are on branch `{branch}`, not in the working tree. To apply them: `git diff HEAD...{branch} | git apply` (or `git merge {branch}`); to leave them, do nothing.\n{}\n{}{}",
                f.stat.trim_end(),
                f.diff,
                if f.cut { "\n[diff cut: the branch has all of it]" } else { "" }
            ),
            Err(why) => format!("Its worktree could not be finished: {why}. Its work may be on branch `{branch}`."),
        }
    }

    /// Worktrees a killed server left: removed, once a process (at its first session).
    pub(in crate::agent) fn sweep_worktrees(&self) {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        let mut first = false;
        SWEPT.call_once(|| first = true);
        if !first {
            return;
        }
        let (Some(root), Ok(dir)) = (self.host.roots().first().cloned(), self.worktrees_dir())
        else {
            return;
        };
        if !dir.exists() {
            return;
        }
        std::thread::spawn(move || {
            let removed = git::sweep(&root, &dir);
            if removed > 0 {
                tracing::info!("removed {removed} worktree(s) a previous run left");
            }
        });
    }
}
