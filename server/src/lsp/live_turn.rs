//! The live turn's requests: steering a running turn, the queue, background commands;
//! thin translations to the agent (`agent::sessions::steering`, `agent::sessions::background`).

use super::session::agent_error;
use super::Backend;
use crate::protocol::lsp::{
    SessionBackgroundResult, SessionKillBackgroundParams, SessionKillBackgroundResult,
    SessionQueueResult, SessionSteerParams, SessionSteerResult, SessionUnqueueParams,
    SessionUnqueueResult,
};
use crate::protocol::shapes::SessionIdParams;
use tower_lsp::jsonrpc;

impl Backend {
    /// `agent/session/steer`: into the running turn at its next step, else a prompt.
    pub(super) async fn session_steer(
        &self,
        params: SessionSteerParams,
    ) -> jsonrpc::Result<SessionSteerResult> {
        self.agent()
            .steer(
                &params.session_id,
                params.text,
                params.attachments,
                params.editor,
            )
            .await
            .map_err(agent_error)
    }

    /// `agent/session/unqueue`: a steering message or a queued prompt withdrawn.
    pub(super) async fn session_unqueue(
        &self,
        params: SessionUnqueueParams,
    ) -> jsonrpc::Result<SessionUnqueueResult> {
        let removed = self
            .agent()
            .unqueue(&params.session_id, &params.id)
            .await
            .map_err(agent_error)?;
        Ok(SessionUnqueueResult { removed })
    }

    /// `agent/session/queue`: what waits (as the last `queue` update said).
    pub(super) async fn session_queue(
        &self,
        params: SessionIdParams,
    ) -> jsonrpc::Result<SessionQueueResult> {
        let items = self
            .agent()
            .queue(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(SessionQueueResult { items })
    }

    /// `agent/session/background`: the session's background commands.
    pub(super) async fn session_background(
        &self,
        params: SessionIdParams,
    ) -> jsonrpc::Result<SessionBackgroundResult> {
        let commands = self
            .agent()
            .background(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(SessionBackgroundResult { commands })
    }

    /// `agent/session/killBackground`: the editor's stop button.
    pub(super) async fn session_kill_background(
        &self,
        params: SessionKillBackgroundParams,
    ) -> jsonrpc::Result<SessionKillBackgroundResult> {
        let killed = self
            .agent()
            .kill_background(&params.session_id, &params.id)
            .await
            .map_err(agent_error)?;
        Ok(SessionKillBackgroundResult { killed })
    }
}
