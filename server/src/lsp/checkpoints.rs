//! `agent/session/checkpoints`, `agent/session/rewind`, `agent/session/fork`: thin
//! translations to the agent (`crate::agent::checkpoints`).

use super::session::agent_error;
use super::Backend;
use crate::protocol::lsp::{
    SessionCheckpointsResult, SessionForkParams, SessionForkResult, SessionRewindParams,
    SessionRewindResult,
};
use crate::protocol::shapes::SessionIdParams;
use tower_lsp::jsonrpc;

impl Backend {
    pub(super) async fn session_checkpoints(
        &self,
        params: SessionIdParams,
    ) -> jsonrpc::Result<SessionCheckpointsResult> {
        let checkpoints = self
            .agent()
            .checkpoints(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(SessionCheckpointsResult { checkpoints })
    }

    pub(super) async fn session_rewind(
        &self,
        params: SessionRewindParams,
    ) -> jsonrpc::Result<SessionRewindResult> {
        self.agent()
            .rewind(
                &params.session_id,
                &params.checkpoint_id,
                &params.restore,
                params.dry_run,
                params.force,
            )
            .await
            .map_err(agent_error)
    }

    pub(super) async fn session_fork(
        &self,
        params: SessionForkParams,
    ) -> jsonrpc::Result<SessionForkResult> {
        let session_id = self
            .agent()
            .fork(&params.session_id, params.checkpoint_id.as_deref())
            .await
            .map_err(agent_error)?;
        Ok(SessionForkResult {
            session_id,
            forked_from: params.session_id,
        })
    }
}
