//! The end of a session's life: `close` (its turn cancelled, its memory freed; its log
//! stays) and `delete` (closed, then its log and progress log removed), and the title a
//! client shows once the first message named it.

use std::sync::Arc;

use crate::agent::{Agent, AgentError};
use crate::locks::Locked;

impl Agent {
    /// Closes session `id`: its running turn is cancelled (as `session/cancel` would), its
    /// queued prompts dropped, its SessionEnd hooks run, its in-memory state freed (the
    /// worker ends with its handle). Unknown or not loaded: nothing to do. Whether it was
    /// loaded.
    pub async fn close(self: &Arc<Self>, id: &str) -> Result<bool, AgentError> {
        let loaded = self.sessions.locked().get(id).cloned();
        let Some(handle) = loaded else {
            return Ok(false);
        };
        self.cancel(id).await?;
        self.session_end_hooks(&handle).await;
        // The session's background commands stop with it: `release` calls
        // `Agent::stop_background(id)`.
        self.release(id);
        Ok(true)
    }

    /// Deletes session `id`: closed, then its log and progress log removed. An id with no
    /// log is no error (ACP: deleting an unknown session succeeds). Whether a log existed.
    pub async fn delete(self: &Arc<Self>, id: &str) -> Result<bool, AgentError> {
        if !crate::store::session_log::valid_session_id(id) {
            return Ok(false);
        }
        let worktree = match self.handle(id).await {
            Ok(handle) => handle.live.lock().await.session.worktree.clone(),
            Err(_) => None,
        };
        self.close(id).await?;
        if let Some(link) = worktree {
            self.remove_worktree_of(&link);
        }
        let store = self.store()?;
        // Its checkpoints go with it; a store that cannot drop them keeps them for the
        // size cap to drop later (the log's removal is what the client asked for).
        let checkpoints = crate::store::checkpoints::CheckpointStore::beside(&store);
        if let Err(err) = checkpoints.forget_session(id) {
            tracing::warn!("session {id}: its checkpoints stay in the store: {err}");
        }
        store
            .delete(id)
            .map_err(|e| AgentError::failed(format!("cannot delete session {id}: {e}")))
    }

    /// The session's title (its first message, shortened), once it has one.
    pub async fn title(self: &Arc<Self>, id: &str) -> Option<String> {
        let handle = self.handle(id).await.ok()?;
        let live = handle.live.lock().await;
        Some(live.session.title.clone()).filter(|t| !t.is_empty())
    }
}
