//! `agent/session/checkpoints`, `agent/session/rewind`, `agent/session/fork`: thin
//! translations to the agent (`crate::agent::checkpoints`).

use super::session::agent_error;
use super::{invalid_params, Backend};
use crate::agent::AgentError;
use crate::protocol::lsp::{
    SessionCheckpointsResult, SessionForkParams, SessionForkResult, SessionRewindParams,
    SessionRewindResult,
};
use crate::protocol::shapes::SessionIdParams;
use tower_lsp::jsonrpc;

/// An unknown checkpoint is the caller's mistake, as an unknown session is.
fn checkpoint_error(err: AgentError) -> jsonrpc::Error {
    if err.0.starts_with("unknown checkpoint") {
        invalid_params(err.0)
    } else {
        agent_error(err)
    }
}

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
            .map_err(checkpoint_error)
    }

    pub(super) async fn session_fork(
        &self,
        params: SessionForkParams,
    ) -> jsonrpc::Result<SessionForkResult> {
        let session_id = self
            .agent()
            .fork(&params.session_id, params.checkpoint_id.as_deref())
            .await
            .map_err(checkpoint_error)?;
        Ok(SessionForkResult {
            session_id,
            forked_from: params.session_id,
        })
    }
}
