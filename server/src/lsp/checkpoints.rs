//! `agent/session/checkpoints`, `agent/session/rewind`, `agent/session/fork`: thin
//! translations to the agent (`crate::agent::checkpoints`).

use super::session::agent_error;
use super::Backend;
use crate::protocol::lsp::{
    SessionChangesParams, SessionChangesResult, SessionCheckpointsResult, SessionForkParams,
    SessionForkResult, SessionRevertChangesParams, SessionRevertChangesResult, SessionRewindParams,
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

    /// `agent/session/changes`: the files the turns changed, hunk by hunk.
    pub(super) async fn session_changes(
        &self,
        params: SessionChangesParams,
    ) -> jsonrpc::Result<SessionChangesResult> {
        self.agent()
            .changes(&params.session_id, params.since_turn_id.as_deref())
            .await
            .map_err(agent_error)
    }

    /// `agent/session/revertChanges`: some of those changes undone.
    pub(super) async fn session_revert_changes(
        &self,
        params: SessionRevertChangesParams,
    ) -> jsonrpc::Result<SessionRevertChangesResult> {
        self.agent()
            .revert_changes(
                &params.session_id,
                params.since_turn_id.as_deref(),
                params.changes,
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
