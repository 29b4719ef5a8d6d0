//! Custom slash commands (`.agents/commands/*.md`, `~/.config/agentls/commands/*.md`): the
//! prompt `/name arguments` becomes the command's expanded body before the turn opens. Its
//! `` !`command` `` spans run first, each as a `shell` call through the approval rules (the
//! user approves it under `ask`), and their outputs, redacted and truncated like a tool's,
//! take their place; `@path` mentions are then attached as in any prompt. The command's
//! `allowed-tools` and `model` hold for this turn.

use crate::agent::sessions::Prompt;
use crate::agent::turn::Call;
use crate::agent::turn::Stop;
use crate::agent::turn::Turn;
use crate::store;
use crate::store::secrets;
use crate::tools::registry::Registry;

use serde_json::json;

use agentls_core::commands::{self, Segment};
use agentls_core::truncate::truncate_middle;

impl Turn {
    /// Expands `prompt` in place when it invokes a custom command; Err ends the turn (a
    /// command that was not run: nothing is sent).
    pub(in crate::agent) async fn custom_command(
        &mut self,
        prompt: &mut Prompt,
    ) -> Result<(), Stop> {
        let Some((name, arguments)) = commands::invocation(&prompt.text) else {
            return Ok(());
        };
        if commands::is_builtin(name) {
            return Ok(());
        }
        let roots = self.host().roots();
        let custom = tokio::task::spawn_blocking(move || store::commands::load_commands(&roots))
            .await
            .unwrap_or_default();
        let Some(command) = custom.into_iter().find(|c| c.name == name) else {
            return Ok(());
        };
        let name = name.to_string();
        let plan = commands::plan(&commands::expand(&command.body, arguments));
        let config = self.host().config();
        let prompts = self.host().prompts();
        let mut outputs = Vec::new();
        for (index, segment) in plan.iter().enumerate() {
            let Segment::Shell(line) = segment else {
                continue;
            };
            let call = Call {
                id: format!("{}-command-{index}", self.turn_id),
                name: "shell".into(),
                arguments: json!({ "command": line }).to_string(),
            };
            let (output, success) = self.run_tool(&call).await;
            let output = secrets::redact(&output).into_owned();
            let refused = self.cancel.is_cancelled()
                || output == prompts.tool_rejected
                || output.starts_with("not run:");
            let shown = truncate_middle(&output, config.tool_output_limit, Default::default()).text;
            self.tell_call_ended(&call.id, success && !refused, shown.clone());
            if refused {
                if self.cancel.is_cancelled() {
                    return Err(Stop::Cancelled);
                }
                return Err(self
                    .refuse(format!(
                        "/{name}: `{line}` was not run, so the prompt was not sent"
                    ))
                    .await);
            }
            outputs.push(shown);
        }
        prompt.text = commands::render(&plan, &outputs);
        if let Some(tools) = &command.allowed_tools {
            let registry = Registry::builtin();
            for tool in tools {
                if registry.get(tool).is_none() {
                    self.warn(format!(
                        "/{name}: allowed-tools names `{tool}`, which is not a tool (the tools are: {})",
                        registry.names().join(", ")
                    ));
                }
            }
        }
        self.scope.allowed_tools = command.allowed_tools;
        self.scope.model = command.model;
        self.scope.expanded = Some(name);
        Ok(())
    }
}
