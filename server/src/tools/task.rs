//! `task`: hands a side task to a subagent that works in a context of its own (its system
//! prompt, AGENTS.md, the task; not this conversation), with its own tools and step limit.
//! Only its final message comes back as this call's output. Running the child turn is the
//! agent's (`agent::turn::child`), reached through [`ToolContext::subagents`]; a turn that
//! offers no subagents has none, and the call fails.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use agentls_core::subagents::{self, Subagent};
use agentls_core::tool_info::{shorten, ToolKind};

use crate::tools::input::ArgumentProblem;
use crate::tools::registry::{Effect, Prepared, SubagentRunner, Tool, ToolContext, ToolOutcome};

/// Why a `task` call cannot run where no subagent may start.
const NO_SUBAGENTS: &str = "task is not available here: subagents cannot start subagents";

pub struct Task;

/// `task`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskInput {
    pub agent: String,
    pub prompt: String,
    /// `worktree`: this child works apart, as a subagent whose file says
    /// `isolation: worktree` always does.
    pub isolation: Option<TaskIsolation>,
}

/// Where a `task` call's child works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskIsolation {
    // As its subagent's file says (the workspace, unless it asks for a worktree).
    None,
    // In a git worktree of its own, on a branch of its own.
    Worktree,
}

impl TaskInput {
    /// The subagent and the prompt, by the subagents' rules
    /// (`agentls_core::subagents::validate_task`), or the error the model reads.
    fn check<'a>(&self, runner: &'a dyn SubagentRunner) -> Result<(&'a Subagent, String), String> {
        let arguments = serde_json::to_value(self).unwrap_or_default();
        subagents::validate_task(&arguments, runner.agents())
    }
}

#[async_trait::async_trait]
impl Tool for Task {
    const NAME: &'static str = subagents::TASK_TOOL;
    type Input = TaskInput;

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

    /// The subagents' rules say what is missing, in their words (with the subagents' names).
    fn refusal(&self, cx: &ToolContext, arguments: &Value, problem: ArgumentProblem) -> String {
        match &cx.subagents {
            None => NO_SUBAGENTS.to_string(),
            Some(runner) => match subagents::validate_task(arguments, runner.agents()) {
                Err(why) => why,
                Ok(_) => problem.sentence(Self::NAME),
            },
        }
    }

    async fn prepare(&self, cx: &ToolContext, input: &TaskInput) -> Result<Prepared, String> {
        let runner = cx.subagents.as_ref().ok_or(NO_SUBAGENTS)?;
        input.check(runner.as_ref())?;
        Ok(Prepared::Nothing)
    }

    async fn run(&self, cx: &ToolContext, input: TaskInput, _prepared: Prepared) -> ToolOutcome {
        let Some(runner) = cx.subagents.as_ref() else {
            return ToolOutcome::failed(NO_SUBAGENTS);
        };
        let (agent, prompt) = match input.check(runner.as_ref()) {
            Ok(found) => found,
            Err(message) => return ToolOutcome::failed(message),
        };
        // The call may ask for a worktree its subagent's file does not.
        let apart;
        let agent = match input.isolation {
            Some(TaskIsolation::Worktree) if !agent.worktree => {
                apart = Subagent {
                    worktree: true,
                    ..agent.clone()
                };
                &apart
            }
            _ => agent,
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
