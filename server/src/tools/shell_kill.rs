//! `shell_kill`: stops a background command (its whole process group) and returns what it
//! printed since the last read, with how it ended.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::tool_info::ToolKind;

use crate::tools::registry::{text_arg, Effect, Prepared, Tool, ToolContext, ToolOutcome};

pub struct ShellKill;

/// `shell_kill`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShellKillInput {
    pub id: String,
}

#[async_trait::async_trait]
impl Tool for ShellKill {
    const NAME: &'static str = "shell_kill";
    type Input = ShellKillInput;

    /// Stopping a command the agent started asks no one: it only ends what was approved.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, arguments: &Value) -> String {
        match text_arg(arguments, "id") {
            Some(id) => format!("Stop {id}"),
            None => "Stop a background command".to_string(),
        }
    }

    async fn run(&self, cx: &ToolContext, input: ShellKillInput, _: Prepared) -> ToolOutcome {
        let prompts = cx.host.prompts();
        match cx.background.kill(&input.id, &prompts).await {
            Ok(read) => {
                let outcome = ToolOutcome::ok(read.output);
                if read.changed.is_empty() {
                    outcome
                } else {
                    outcome.with_effect(Effect::BackgroundChanged {
                        command: read.command,
                        changed: read.changed,
                    })
                }
            }
            Err(err) => ToolOutcome::failed(err),
        }
    }
}
