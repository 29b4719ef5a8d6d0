//! MCP prompts and resources in a user's prompt. `/mcp__SERVER__PROMPT words…` becomes the
//! server's prompt: the words mapped to its arguments (core `mcp::prompts::arguments`; a
//! missing required one ends the turn with an error and sends nothing), `prompts/get` asked,
//! and its messages (redacted, cut to `toolOutputLimit`, wrapped as untrusted data from the
//! server) are the user's turn: recorded, so the transcript and a reload show what was sent.
//! `@SERVER:URI` mentions are read here through `resources/read` for `attachments.rs`.

use crate::agent::sessions::Prompt;
use crate::agent::turn::Stop;
use crate::agent::turn::Turn;
use crate::agent::Agent;
use crate::store::secrets;

use agentls_core::commands;
use agentls_core::mcp::names::PREFIX;
use agentls_core::mcp::prompts::{arguments, render};

impl Turn {
    /// Replaces `prompt`'s text by the MCP prompt it invokes, if any; Err ends the turn (the
    /// error told, nothing sent). Runs after custom commands: a custom command of the same
    /// name wins.
    pub(in crate::agent) async fn mcp_prompt(&mut self, prompt: &mut Prompt) -> Result<(), Stop> {
        let Some((name, typed)) = commands::invocation(&prompt.text) else {
            return Ok(());
        };
        if !name.starts_with(PREFIX) {
            return Ok(());
        }
        let (name, typed) = (name.to_string(), typed.to_string());
        self.agent.ensure_mcp();
        let find = |agent: &Agent| agent.mcp.prompts().into_iter().find(|p| p.command == name);
        let mut found = find(&self.agent);
        if found.is_none() {
            // A server on its first start may still bring it.
            self.agent.mcp.first_starts(None, &self.cancel).await;
            found = find(&self.agent);
        }
        let Some(mcp) = found else {
            if self.cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            let known: Vec<String> = self
                .agent
                .mcp
                .prompts()
                .iter()
                .map(|p| format!("/{}", p.command))
                .collect();
            let known = if known.is_empty() {
                "no ready MCP server offers prompts".to_string()
            } else {
                format!("the MCP prompts are: {}", known.join(", "))
            };
            return Err(self
                .refuse(format!(
                    "/{name} is not a prompt of a ready MCP server ({known}); nothing was sent"
                ))
                .await);
        };
        let values = match arguments(&mcp, &typed) {
            Ok(values) => values,
            Err(why) => return Err(self.refuse(format!("{why}; nothing was sent")).await),
        };
        let cancel = self.cancel.clone();
        let result = match self.agent.mcp.get_prompt(&mcp, values, &cancel).await {
            Ok(result) => result,
            Err(_) if self.cancel.is_cancelled() => return Err(Stop::Cancelled),
            Err(why) => {
                return Err(self
                    .refuse(format!("/{name}: {why}; nothing was sent"))
                    .await)
            }
        };
        let config = self.host().config();
        let text = render(
            &mcp.server,
            &mcp.prompt.name,
            &prompt.text,
            &result,
            config.tool_output_limit,
            config.tokenizer(),
        );
        // What the user typed is theirs: its @mentions are attached, the server's are not.
        self.scope.mentions_from = Some(std::mem::replace(
            &mut prompt.text,
            secrets::redact(&text).into_owned(),
        ));
        self.scope.expanded = Some(name);
        Ok(())
    }

    /// The text of resource `uri` of MCP server `server` (`@SERVER:URI`), redacted; Err
    /// says why it could not be read.
    pub(in crate::agent) async fn mcp_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<String, String> {
        let result = self
            .agent
            .mcp
            .read_resource(server, uri, &self.cancel)
            .await?;
        let text = agentls_core::mcp::resources::contents_text(uri, &result)?;
        Ok(secrets::redact(&text).into_owned())
    }
}
