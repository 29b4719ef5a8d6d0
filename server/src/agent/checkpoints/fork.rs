//! `agent/session/fork` (and ACP `session/fork`): a new session whose log is the
//! original's events up to a checkpoint (its rewinds resolved), so its history is the
//! original's up to there, item for item: the same stable prefix, the provider's prompt
//! cache reused. The checkpoints it carries stay kept for it in the store.

use std::sync::Arc;

use agentls_core::checkpoints as core;
use agentls_core::event::{Event, ForkLink};

use crate::agent::{Agent, AgentError};
use crate::store::session_log;

impl Agent {
    /// Forks session `id` before `checkpoint_id` (all of it when None); the new session's id.
    pub async fn fork(
        self: &Arc<Self>,
        id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<String, AgentError> {
        let handle = self.handle(id).await?;
        let _live = handle.live.lock().await;
        if checkpoint_id.is_none() {
            let state = handle.state();
            if state.running.is_some() || !state.waiting.is_empty() {
                return Err(AgentError::failed(format!(
                    "a turn of session {id} is running: fork from one of its checkpoints, or once the turn ended"
                )));
            }
        }
        let events = self.events_of(id)?;
        let prefix = core::prefix_before(&events, checkpoint_id).ok_or_else(|| {
            AgentError::invalid_params(format!(
                "unknown checkpoint {:?} in session {id} (agent/session/checkpoints lists them)",
                checkpoint_id.unwrap_or_default()
            ))
        })?;
        let new_id = session_log::new_session_id();
        let forked_from = ForkLink {
            session_id: id.to_string(),
            checkpoint_id: checkpoint_id.map(str::to_string),
        };
        let copied = fork_events(prefix, &new_id, forked_from);
        self.write_fork_log(&new_id, &copied)?;
        self.keep_fork_checkpoints(&new_id, &copied).await?;
        Ok(new_id)
    }

    /// Writes the fork's log, synced: the fork exists once this returns.
    fn write_fork_log(&self, new_id: &str, events: &[Event]) -> Result<(), AgentError> {
        let mut log = self
            .store()?
            .open(new_id)
            .map_err(|e| AgentError::failed(format!("cannot create the fork's log: {e}")))?;
        for event in events {
            log.append(event)
                .map_err(|e| AgentError::failed(format!("cannot write the fork's log: {e}")))?;
        }
        log.sync()
            .map_err(|e| AgentError::failed(format!("cannot write the fork's log: {e}")))
    }

    /// Keeps, for the fork, the trees of the checkpoints its log carries, so they outlive
    /// the original's being dropped. A tree that cannot be kept is logged, not fatal: the
    /// fork's history is already written.
    async fn keep_fork_checkpoints(
        &self,
        new_id: &str,
        events: &[Event],
    ) -> Result<(), AgentError> {
        let checkpoints = self.checkpoint_store()?;
        let kept: Vec<(String, Vec<agentls_core::event::RootTree>)> = core::list(events)
            .into_iter()
            .flat_map(|c| {
                let end = c.end.map(|trees| (format!("{}-end", c.id), trees));
                std::iter::once((c.id, c.trees)).chain(end)
            })
            .collect();
        let session = new_id.to_string();
        tokio::task::spawn_blocking(move || {
            for (name, trees) in kept {
                if let Err(err) = checkpoints.keep(&session, &name, &trees) {
                    tracing::warn!("fork {session}: cannot keep checkpoint {name}: {err}");
                }
            }
        })
        .await
        .map_err(|e| AgentError::failed(e.to_string()))
    }
}

/// The fork's log: the prefix with its session start renamed to the fork and linked to the
/// original (one made when the prefix has none), its rewinds dropped (already resolved).
fn fork_events(prefix: Vec<&Event>, new_id: &str, forked_from: ForkLink) -> Vec<Event> {
    let started = |model: String, workspace: String| Event::SessionStarted {
        session_id: new_id.to_string(),
        model,
        workspace,
        at: session_log::now_millis(),
        parent: None,
        forked_from: Some(forked_from.clone()),
    };
    let mut copied: Vec<Event> = Vec::with_capacity(prefix.len() + 1);
    for event in prefix {
        match event {
            Event::SessionStarted {
                model, workspace, ..
            } => copied.push(started(model.clone(), workspace.clone())),
            Event::Rewind { .. } => {}
            other => copied.push(other.clone()),
        }
    }
    if !matches!(copied.first(), Some(Event::SessionStarted { .. })) {
        copied.insert(0, started(String::new(), String::new()));
    }
    copied
}
