//! Steering and the visible queue: `agent/session/steer` adds a message to the running turn
//! (taken at its next step boundary by `turn::steering`), `agent/session/unqueue` withdraws
//! a queued prompt or a steering message before it is used, and every change of what waits
//! is told to the editor as a `queue` update.
//!
//! Rules: a steering message waits in `QueueState::steering` under the same lock as the
//! running turn, so it is either taken by that turn or, when the turn ends first, queued as a
//! prompt of its own under its id (`end_running`): it is never lost and never used twice.

use std::sync::Arc;

use crate::agent::sessions::{Job, Prompt, SessionHandle};
use crate::agent::Agent;
use crate::agent::AgentError;
use crate::protocol::lsp::QueueItem as QueuedMessage;
use crate::protocol::lsp::SessionSteerResult as Steered;
use crate::store::session_log;
use agentls_core::editor_state::EditorState;
use agentls_core::updates::Update;

/// A message for the running turn, not taken yet.
#[derive(Debug, Clone)]
pub(in crate::agent) struct Steering {
    pub(in crate::agent) id: String,
    pub(in crate::agent) text: String,
    pub(in crate::agent) editor: Option<EditorState>,
}

impl Agent {
    /// `agent/session/steer`: `text` joins the running turn at its next step boundary; with
    /// no turn running it is an ordinary prompt. `attachments` are paths, attached as
    /// `@path` mentions are.
    pub async fn steer(
        self: &Arc<Self>,
        id: &str,
        text: String,
        attachments: Vec<String>,
        editor: Option<EditorState>,
    ) -> Result<Steered, AgentError> {
        let handle = self.handle(id).await?;
        let mut text = text;
        for path in attachments {
            text.push_str(&format!("\n@{path}"));
        }
        let steer_id = format!("steer-{}", session_log::new_session_id());
        let joined = {
            let mut state = handle.state();
            let running = state
                .running
                .as_ref()
                .filter(|(_, token)| !token.is_cancelled())
                .map(|(turn_id, _)| turn_id.clone());
            if running.is_some() {
                state.steering.push(Steering {
                    id: steer_id.clone(),
                    text: text.clone(),
                    editor: editor.clone(),
                });
            }
            running
        };
        match joined {
            Some(turn_id) => {
                self.announce_queue(&handle);
                Ok(Steered {
                    id: steer_id,
                    turn_id,
                    steered: true,
                })
            }
            None => {
                let turn_id = self.prompt(id, text, editor).await?;
                Ok(Steered {
                    id: turn_id.clone(),
                    turn_id,
                    steered: false,
                })
            }
        }
    }

    /// `agent/session/unqueue`: withdraws a steering message or a queued prompt (its turn
    /// ends `cancelled` without having started). Whether one was withdrawn: false when `id`
    /// was already used, withdrawn, or never known.
    pub async fn unqueue(self: &Arc<Self>, id: &str, message: &str) -> Result<bool, AgentError> {
        let handle = self.handle(id).await?;
        let queued_turn = {
            let mut state = handle.state();
            if let Some(at) = state.steering.iter().position(|s| s.id == message) {
                state.steering.remove(at);
                Some(None)
            } else if state.waiting.iter().any(|t| t == message) {
                state.waiting.retain(|t| t != message);
                state.texts.remove(message);
                // The worker skips it when it gets to it.
                state.dropped.insert(message.to_string());
                Some(Some(message.to_string()))
            } else {
                None
            }
        };
        let Some(queued_turn) = queued_turn else {
            return Ok(false);
        };
        if let Some(turn_id) = queued_turn {
            self.update(id, &turn_id, Update::cancelled_before_start());
        }
        self.announce_queue(&handle);
        Ok(true)
    }

    /// `agent/session/queue`: what waits in session `id`.
    pub async fn queue(self: &Arc<Self>, id: &str) -> Result<Vec<QueuedMessage>, AgentError> {
        let handle = self.handle(id).await?;
        Ok(Agent::queue_of(&handle).1)
    }

    /// What waits in a session: its steering messages, then its queued prompts.
    pub(in crate::agent) fn queue_of(handle: &SessionHandle) -> (String, Vec<QueuedMessage>) {
        let state = handle.state();
        let running = state
            .running
            .as_ref()
            .map(|(turn_id, _)| turn_id.clone())
            .unwrap_or_default();
        let mut items: Vec<QueuedMessage> = state
            .steering
            .iter()
            .map(|s| QueuedMessage {
                id: s.id.clone(),
                kind: "steering".into(),
                text: s.text.clone(),
            })
            .collect();
        for turn_id in &state.waiting {
            if let Some(text) = state.texts.get(turn_id) {
                items.push(QueuedMessage {
                    id: turn_id.clone(),
                    kind: "queued".into(),
                    text: text.clone(),
                });
            }
        }
        (running, items)
    }

    /// Tells the editor what waits now (a `queue` update, under the running turn's id).
    pub(in crate::agent) fn announce_queue(&self, handle: &SessionHandle) {
        let (running, items) = Agent::queue_of(handle);
        self.update(&handle.id, &running, Update::Queue { items });
    }

    /// The running turn ends: not running any more, and the steering messages it did not
    /// take (it ended before its next step boundary) queued as prompts of their own, under
    /// their ids, in one step with the end (a steer after it finds no turn running).
    pub(in crate::agent) fn end_running(&self, handle: &SessionHandle) {
        let leftovers = {
            let mut state = handle.state();
            state.running = None;
            let leftovers = std::mem::take(&mut state.steering);
            for steering in &leftovers {
                state.waiting.push(steering.id.clone());
                state
                    .texts
                    .insert(steering.id.clone(), steering.text.clone());
            }
            leftovers
        };
        if leftovers.is_empty() {
            return;
        }
        for steering in leftovers {
            let sent = handle.queue.send(Job::Prompt(Prompt {
                turn_id: steering.id.clone(),
                text: steering.text,
                editor: steering.editor,
                images: Vec::new(),
            }));
            if sent.is_err() {
                tracing::warn!(
                    "session {}: a steering message was lost: the session is shutting down",
                    handle.id
                );
            }
        }
        self.announce_queue(handle);
    }
}
