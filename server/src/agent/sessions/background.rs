//! What the editor and the front doors do with a session's background commands (the model's
//! side is `tools::background` and its tools; the session holds the table): list them, stop
//! one, stop all of them when the session ends or is cancelled with "stop all", release
//! their client terminals when agentls exits.

use std::sync::Arc;

use crate::agent::Agent;
use crate::agent::AgentError;
use crate::locks::Locked;
use crate::tools::background::BackgroundInfo;

impl Agent {
    /// Stops every background command of session `id` (its whole process groups) and forgets
    /// them; how many were running (none when it is not loaded). The one call for a
    /// session's end: a subagent's session released, `agent/session/cancel` with
    /// `stopBackground`, ACP `session/close`.
    pub fn stop_background(&self, id: &str) -> usize {
        let handle = self.sessions.locked().get(id).cloned();
        handle.map_or(0, |handle| handle.background.stop_all())
    }

    /// agentls is exiting: the client terminals of every loaded session's background
    /// commands are released at once (`Commands::release_terminals_at_exit`); how many.
    pub fn release_terminals_at_exit(&self) -> usize {
        let handles: Vec<_> = self.sessions.locked().values().cloned().collect();
        handles
            .iter()
            .map(|handle| handle.background.release_terminals_at_exit())
            .sum()
    }

    /// `agent/session/background`: the session's background commands, running and ended
    /// (until the session's end forgets them), in the order they started.
    pub async fn background(self: &Arc<Self>, id: &str) -> Result<Vec<BackgroundInfo>, AgentError> {
        Ok(self.handle(id).await?.background.list())
    }

    /// `agent/session/killBackground`: stops one command (the editor's stop button); whether
    /// it was running. Its last output stays for the model's next `shell_output`.
    pub async fn kill_background(
        self: &Arc<Self>,
        id: &str,
        command_id: &str,
    ) -> Result<bool, AgentError> {
        let handle = self.handle(id).await?;
        handle
            .background
            .stop(command_id)
            .map_err(AgentError::failed)
    }

    /// `agent/session/cancel` with `stopBackground`: the running turn and the queue as a
    /// cancel does, and every background command. Whether anything was stopped.
    pub async fn cancel_all(self: &Arc<Self>, id: &str) -> Result<bool, AgentError> {
        let cancelled = self.cancel(id).await?;
        Ok(self.stop_background(id) > 0 || cancelled)
    }
}
