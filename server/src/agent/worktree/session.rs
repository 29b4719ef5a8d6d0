//! Sessions that work apart: a whole session in a git worktree of the workspace's repository,
//! on a branch of its own (`agent/session/new` with `worktree`, `agentls ask --worktree`).
//! The worktree is recorded in the session's log (`Event::Worktree`), so a reload works
//! there again; it outlives the server (`sweep` leaves it) and goes with its session. Its
//! changes reach the workspace only when asked (`apply`), through the editor, file by file,
//! never over a file the user changed since (`agentls_core::worktree::step`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls_core::event::{Event, WorktreeLink};
use agentls_core::worktree::{step, Status, Step};

use super::git::{self, FileStatus, Keeper};
use super::WorktreeHost;
use crate::agent::sessions::live::Durability;
use crate::agent::sessions::SessionHandle;
use crate::agent::{Agent, AgentError};
use crate::host::FileChange;
use crate::protocol::lsp::{RevertConflict, SessionApplyWorktreeResult};
use crate::store::files::read_text;
use crate::tools::registry::Registry;

impl Agent {
    /// A new session that works in a worktree of its own; Err: why it cannot (no
    /// repository, no commit), and no session is left behind.
    pub async fn new_session_apart(
        self: &Arc<Self>,
        model: Option<String>,
    ) -> Result<(String, WorktreeLink), AgentError> {
        let root = self
            .host
            .roots()
            .first()
            .cloned()
            .ok_or_else(|| AgentError::invalid_params("a worktree needs a workspace folder"))?;
        let dir = self.worktrees_dir()?;
        let id = self.new_session(model).await?;
        let name = format!("session-{id}");
        let made =
            tokio::task::spawn_blocking(move || git::create(&root, &dir, &name, Keeper::Session))
                .await
                .map_err(|e| e.to_string())
                .and_then(|made| made);
        let worktree = match made {
            Ok(worktree) => worktree,
            Err(why) => {
                let _ = self.delete(&id).await;
                let why = why.replace("isolation: worktree", "a session in a worktree");
                return Err(AgentError::invalid_params(why));
            }
        };
        let link = WorktreeLink {
            path: worktree.path.to_string_lossy().into_owned(),
            branch: worktree.branch,
            base: worktree.base,
        };
        let handle = self.handle(&id).await?;
        handle
            .live
            .lock()
            .await
            .record(
                &Event::Worktree(link.clone()),
                Durability::Synced,
                Registry::builtin(),
            )
            .map_err(AgentError::failed)?;
        self.work_in(&handle, &link);
        Ok((id, link))
    }

    /// The session's host is its worktree's (made again from its branch when a cleanup
    /// removed the directory).
    pub(in crate::agent) fn work_in(&self, handle: &SessionHandle, link: &WorktreeLink) {
        let path = PathBuf::from(&link.path);
        if !path.exists() {
            if let Some(root) = self.host.roots().first() {
                if let Err(why) = git::restore(root, &path, &link.branch) {
                    tracing::warn!("session {}: its worktree is gone: {why}", handle.id);
                }
            }
        }
        let _ = handle.host.set(Arc::new(WorktreeHost {
            inner: self.host.clone(),
            root: path.canonicalize().unwrap_or(path),
        }));
    }

    /// What a session that works apart changed, committed on its branch (as agentls), its
    /// worktree kept for the session to go on: None for a session that does not.
    pub async fn commit_worktree(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Option<WorktreeLink>, AgentError> {
        let handle = self.handle(id).await?;
        let Some(link) = handle.live.lock().await.session.worktree.clone() else {
            return Ok(None);
        };
        let path = PathBuf::from(&link.path);
        let message = format!("agentls: the work of session {id}");
        tokio::task::spawn_blocking(move || git::commit_all(&path, &message))
            .await
            .map_err(|e| AgentError::failed(e.to_string()))?
            .map_err(AgentError::failed)?;
        Ok(Some(link))
    }

    /// Where session `id` works when it works apart (None: in the workspace).
    pub async fn worktree_of(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Option<WorktreeLink>, AgentError> {
        let handle = self.handle(id).await?;
        let link = handle.live.lock().await.session.worktree.clone();
        Ok(link)
    }

    /// The session's worktree removed with the session (its branch stays).
    pub(in crate::agent) fn remove_worktree_of(&self, link: &WorktreeLink) {
        if let Some(root) = self.host.roots().first() {
            if let Err(why) = git::remove_path(root, Path::new(&link.path)) {
                tracing::warn!("the worktree {} stays: {why}", link.path);
            }
        }
    }

    /// `agent/session/applyWorktree`: what the session changed in its worktree, brought
    /// into the workspace through the host, file by file.
    pub async fn apply_worktree(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<SessionApplyWorktreeResult, AgentError> {
        let handle = self.handle(id).await?;
        handle.refuse_while_running("applying its worktree")?;
        let link = handle.live.lock().await.session.worktree.clone();
        let link = link.ok_or_else(|| {
            AgentError::invalid_params(format!("session {id} does not work in a worktree"))
        })?;
        let root = self.host.roots().first().cloned().unwrap_or_default();
        let (repo, files) = {
            let (path, base) = (PathBuf::from(&link.path), link.base.clone());
            tokio::task::spawn_blocking(move || {
                Ok::<_, String>((git::top_level(&root)?, git::changed_files(&path, &base)?))
            })
            .await
            .map_err(|e| AgentError::failed(e.to_string()))?
            .map_err(AgentError::failed)?
        };
        let mut result = SessionApplyWorktreeResult {
            branch: link.branch.clone(),
            ..Default::default()
        };
        for file in files {
            let main = repo.join(&file.path);
            let conflict = |reason: String| RevertConflict {
                path: file.path.clone(),
                reason,
            };
            match self.apply_one(&link, &repo, &file, &main).await {
                Ok(true) => result.applied.push(file.path.clone()),
                Ok(false) => result.unchanged.push(file.path.clone()),
                Err(reason) => result.conflicts.push(conflict(reason)),
            }
        }
        Ok(result)
    }

    /// One file brought over: Ok(true) written, Ok(false) already there, Err why not.
    async fn apply_one(
        &self,
        link: &WorktreeLink,
        repo: &Path,
        file: &git::ChangedFile,
        main: &Path,
    ) -> Result<bool, String> {
        if !self.host.roots().iter().any(|root| main.starts_with(root)) {
            return Err("outside the workspace folders".into());
        }
        let status = match file.status {
            FileStatus::Added => Status::Added,
            FileStatus::Modified => Status::Modified,
            FileStatus::Deleted => Status::Deleted,
        };
        let (base, new) = {
            let (repo, base, rel) = (repo.to_path_buf(), link.base.clone(), file.path.clone());
            let worktree_file = Path::new(&link.path).join(&file.path);
            tokio::task::spawn_blocking(move || {
                (
                    git::text_at(&repo, &base, &rel),
                    read_text(&worktree_file).ok(),
                )
            })
            .await
            .map_err(|e| e.to_string())?
        };
        let (current, version) = match self.host.buffer(main).await {
            Some((text, version)) => (Some(text), Some(version)),
            None if main.exists() => match read_text(main) {
                Ok(text) => (Some(text), None),
                Err(_) => return Err("not a text file in the workspace".into()),
            },
            None => (None, None),
        };
        match step(status, base.as_deref(), new.as_deref(), current.as_deref()) {
            Step::AlreadyThere => Ok(false),
            Step::Conflict(why) => Err(why),
            Step::Write(content) => {
                let change = FileChange::Write {
                    path: main.to_path_buf(),
                    version,
                    original: current,
                    content,
                };
                self.host.apply(change).await.map(|()| true)
            }
        }
    }
}
