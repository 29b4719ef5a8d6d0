//! The turn's side of steering: at each step boundary (every call of the last step has its
//! output, the next model request is not assembled yet) the messages steered in since are
//! taken, each passed through UserPromptSubmit, recorded as a user message (`Event::Item`,
//! so a reload puts it back in place) and shown (a `steered` update). A message never lands
//! between a tool call and its output: the boundary is the only place one is taken.

use serde_json::json;

use crate::agent::turn::{Opened, Stop, Turn};
use agentls_core::history::Item;
use agentls_core::hooks::HookEvent;
use agentls_core::updates::Update;

impl Turn {
    /// Whether a steering message waits for this turn.
    pub(in crate::agent::turn) fn steering_waits(&self) -> bool {
        !self.handle.state().steering.is_empty()
    }

    /// Takes the steering messages waiting for this turn into its history. Err ends the
    /// turn (the log cannot take them).
    pub(in crate::agent::turn) async fn take_steering(
        &mut self,
        opened: &Opened,
    ) -> Result<(), Stop> {
        let taken = std::mem::take(&mut self.handle.state().steering);
        if taken.is_empty() {
            return Ok(());
        }
        self.agent.announce_queue(&self.handle);
        for steering in taken {
            if self.cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            let verdict = self
                .agent
                .run_hooks(
                    &self.handle,
                    &self.turn_id,
                    HookEvent::UserPromptSubmit,
                    None,
                    json!({"prompt": steering.text}),
                    &self.cancel,
                )
                .await;
            if let Some(reason) = verdict.block.or(verdict.stop) {
                self.warn(format!(
                    "a UserPromptSubmit hook blocked the steered message: {reason}"
                ));
                self.update(Update::Steered {
                    id: steering.id.clone(),
                    text: steering.text.clone(),
                    blocked: Some(true),
                });
                continue;
            }
            let text = self
                .fit_to_window(&steering.text, &opened.config, &opened.model)
                .await;
            let no_block = agentls_core::context::TurnBlock {
                text: String::new(),
                environment_tokens: 0,
                editor: None,
            };
            let attached = self
                .attachments(
                    &steering.text,
                    None,
                    &no_block,
                    &opened.config,
                    &opened.prompts,
                )
                .await;
            let item = Item::User {
                text,
                context: (!attached.is_empty()).then_some(attached),
            };
            if let Err(message) = self.record_item(item).await {
                self.fail(message, false, None).await;
                return Err(Stop::Error);
            }
            self.update(Update::Steered {
                id: steering.id.clone(),
                text: steering.text.clone(),
                blocked: None,
            });
        }
        Ok(())
    }
}
