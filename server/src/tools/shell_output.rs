//! `shell_output`: what a background command (`shell` with `background: true`) printed
//! since the last read, and its exit status once it ended; the files it changed since the
//! last read enter the ledger (`Effect::BackgroundChanged`).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::tool_info::ToolKind;

use crate::tools::background::MAX_WAIT_MS;
use crate::tools::registry::{text_arg, Effect, Prepared, Tool, ToolContext, ToolOutcome};

pub struct ShellOutput;

/// `shell_output`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShellOutputInput {
    pub id: String,
    #[schemars(range(min = 0))]
    pub wait_ms: Option<u64>,
}

#[async_trait::async_trait]
impl Tool for ShellOutput {
    const NAME: &'static str = "shell_output";
    type Input = ShellOutputInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, arguments: &Value) -> String {
        match text_arg(arguments, "id") {
            Some(id) => format!("Read the output of {id}"),
            None => "Read a background command's output".to_string(),
        }
    }

    async fn run(&self, cx: &ToolContext, input: ShellOutputInput, _: Prepared) -> ToolOutcome {
        let wait = Duration::from_millis(input.wait_ms.unwrap_or(0).min(MAX_WAIT_MS));
        let prompts = cx.host.prompts();
        let read = tokio::select! {
            read = cx.background.read(&input.id, wait, &prompts) => read,
            // A cancel ends the wait, not the command.
            _ = cx.cancel.cancelled() => cx.background.read(&input.id, Duration::ZERO, &prompts).await,
        };
        match read {
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
