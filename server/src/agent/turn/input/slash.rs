//! Slash commands (`/compact`, `/model`, `/context`, …): handled by the server without the
//! model.

use crate::agent::compact;
use crate::agent::turn::Stop;
use crate::agent::turn::Turn;

use agentls_core::commands;
use agentls_core::prompt_text::SlashCommand;
use agentls_core::updates::Update;

impl Turn {
    pub(in crate::agent) async fn slash(&mut self, command: SlashCommand) -> Stop {
        let roots = self.host().roots();
        let custom =
            tokio::task::spawn_blocking(move || crate::store::commands::load_commands(&roots))
                .await
                .unwrap_or_default();
        let mcp: Vec<_> = self.agent.mcp.prompts().iter().map(|p| p.info()).collect();
        let reply = match command {
            SlashCommand::Help => format!("Commands:\n{}", commands::help(&custom, &mcp)),
            SlashCommand::Invalid(why) => {
                format!("{why}. Commands:\n{}", commands::help(&custom, &mcp))
            }
            SlashCommand::Compact(focus) => {
                let static_context = match self.agent.static_context_now().await {
                    Ok(context) => context,
                    Err(err) => {
                        self.fail(err.message, false, None).await;
                        return Stop::Error;
                    }
                };
                let window = {
                    let live = self.handle.live.lock().await;
                    self.agent.window_of(&live.session)
                };
                match self
                    .agent
                    .compact_now(
                        &self.handle,
                        &self.turn_id,
                        compact::Trigger::Manual,
                        focus,
                        &static_context,
                        window,
                        &self.cancel,
                    )
                    .await
                {
                    Ok(outcome) => format!(
                        "Compacted: {} → {} tokens of history ({}).",
                        outcome.tokens_before, outcome.tokens_after, outcome.strategy
                    ),
                    Err(err) => format!("Compaction failed: {}", err.message),
                }
            }
            SlashCommand::Model(model) => {
                match self
                    .agent
                    .switch_model(&self.handle, &self.turn_id, model.clone(), None, &self.cancel)
                    .await
                {
                    Ok(true) => format!(
                        "This session now uses {model}; the conversation was compacted first to fit its window."
                    ),
                    Ok(false) => format!("This session now uses {model}."),
                    Err(err) => err.message,
                }
            }
            SlashCommand::Remember { fact, user } => self.remember(&fact, user).await,
            // Taken before (`Turn::review`): a review is a model turn.
            SlashCommand::Review(_) => "/review runs as a turn of its own.".into(),
            SlashCommand::New => match self.agent.new_session(None).await {
                Ok(id) => format!("Started a new session: {id}"),
                Err(err) => err.message,
            },
            SlashCommand::Context => {
                let live = self.handle.live.lock().await;
                let window = self.agent.window_of(&live.session).context_window;
                format!(
                    "This session holds {} history items, about {} tokens of a {}-token window (estimated). Ask agent/session/context for the full breakdown.",
                    live.session.history.len(),
                    live.session.calibration.apply(live.session.history.tokens()),
                    window
                )
            }
        };
        self.update(Update::AgentMessageChunk { text: reply });
        Stop::EndTurn
    }

    /// `/remember`: the fact kept as the user's own, the reply saying where.
    async fn remember(&self, fact: &str, user: bool) -> String {
        use agentls_core::memory::{Author, Scope};
        let config = self.host().config();
        if !config.memory_enabled {
            return "Memory is turned off (memory.enabled).".into();
        }
        let scope = if user { Scope::User } else { Scope::Workspace };
        let files = crate::store::memory::MemoryFiles::new(
            self.host().roots().first().map(|root| root.as_path()),
            config.state_dir.as_deref(),
        );
        let fact = fact.to_string();
        let kept = tokio::task::spawn_blocking(move || files.keep(scope, Author::User, &fact))
            .await
            .unwrap_or_else(|err| Err(err.to_string()));
        match kept {
            Ok((_, true)) => format!("Kept in the {} memory.", scope.name()),
            Ok((_, false)) => format!("The {} memory holds this fact already.", scope.name()),
            Err(why) => format!("Not kept: {why}."),
        }
    }
}
