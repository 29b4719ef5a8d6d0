//! A session in memory with its log, and the one way its state changes.

use agentls_core::event::Event;
use agentls_core::session::Session;
use agentls_core::tool_info::ToolCatalog;

use crate::store::session_log::SessionLog;

pub(in crate::agent) struct Live {
    pub(in crate::agent) session: Session,
    pub(in crate::agent) log: SessionLog,
}

/// When a recorded event must be on disk: at once (a session's first line, a compaction
/// boundary, a model switch), or when the turn ends (the turn syncs its log then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum Durability {
    Synced,
    Buffered,
}

impl Live {
    /// Every state change of a session goes through here: the event is appended to the log
    /// first, then applied to the session by the same `Session::apply` a reload replays, so
    /// what the client hears about is on disk and a reload rebuilds the same state. On a
    /// write error nothing is applied and the error names the log.
    pub(in crate::agent) fn record(
        &mut self,
        event: &Event,
        durability: Durability,
        tools: &dyn ToolCatalog,
    ) -> Result<(), String> {
        let written = self.log.append(event).and_then(|()| match durability {
            Durability::Synced => self.log.sync(),
            Durability::Buffered => Ok(()),
        });
        written.map_err(|e| {
            format!(
                "cannot write the session log {}: {e}",
                self.log.path().display()
            )
        })?;
        self.session.apply(event, tools);
        Ok(())
    }
}
