//! `task`: hands a side task to a subagent that works in a context of its own (its system
//! prompt, AGENTS.md, the task; not this conversation), with its own tools and step limit.
//! Only its final message comes back as this call's output. Running the child turn is the
//! agent's (`agent::turn::child`), reached through [`ToolContext::subagents`]; a turn that
//! offers no subagents has none, and the call fails.

use serde_json::Value;

use agentls_core::subagents::{self, Subagent};
use agentls_core::tool_info::{shorten, ToolKind};

use super::registry::{Effect, Prepared, Tool, ToolContext, ToolOutcome};

/// What a child turn brought back.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildOutcome {
    /// Its final message, or why it failed.
    pub answer: Result<String, String>,
    /// Files it changed (as shown to the model).
    pub changed: Vec<String>,
}

/// Runs subagents for one `task` call (its id and the parent's turn are the runner's).
#[async_trait::async_trait]
pub trait SubagentRunner: Send + Sync {
    /// The subagents this turn offers.
    fn agents(&self) -> &[Subagent];
    async fn run(&self, agent: &Subagent, prompt: &str) -> ChildOutcome;
}

pub struct Task;

#[async_trait::async_trait]
impl Tool for Task {
    fn name(&self) -> &'static str {
        subagents::TASK_TOOL
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, arguments: &Value) -> String {
        match (arguments["agent"].as_str(), arguments["prompt"].as_str()) {
            (Some(agent), Some(prompt)) => shorten(&format!("{agent}: {prompt}")),
            (Some(agent), None) => format!("Task for {}", shorten(agent)),
            _ => "Task".to_string(),
        }
    }

    async fn prepare(&self, cx: &ToolContext, arguments: &Value) -> Result<Prepared, String> {
        let runner = cx
            .subagents
            .as_ref()
            .ok_or("task is not available here: subagents cannot start subagents")?;
        subagents::validate_task(arguments, runner.agents())?;
        Ok(Prepared::Nothing)
    }

    async fn run(&self, cx: &ToolContext, arguments: &Value, _prepared: Prepared) -> ToolOutcome {
        let Some(runner) = cx.subagents.as_ref() else {
            return ToolOutcome::failed(
                "task is not available here: subagents cannot start subagents",
            );
        };
        let (agent, prompt) = match subagents::validate_task(arguments, runner.agents()) {
            Ok(found) => found,
            Err(message) => return ToolOutcome::failed(message),
        };
        let outcome = runner.run(agent, &prompt).await;
        let result = match outcome.answer {
            Ok(answer) => ToolOutcome::ok(answer),
            Err(why) => ToolOutcome::failed(why),
        };
        if outcome.changed.is_empty() {
            result
        } else {
            result.with_effect(Effect::SubagentChanged {
                agent: agent.name.clone(),
                files: outcome.changed,
            })
        }
    }
}
