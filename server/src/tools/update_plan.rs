//! `update_plan`: the model's plan of the task, recorded and shown in the editor.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use agentls_core::tool_info::{parse_plan, ToolKind};

use crate::tools::input::ArgumentProblem;
use crate::tools::registry::{Effect, Prepared, Tool, ToolContext, ToolOutcome};

pub struct UpdatePlan;

/// `update_plan`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct UpdatePlanInput {
    pub entries: Vec<PlanStep>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    pub content: String,
    pub status: PlanStatus,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

#[async_trait::async_trait]
impl Tool for UpdatePlan {
    const NAME: &'static str = "update_plan";
    type Input = UpdatePlanInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, _: &Value) -> String {
        "Update plan".to_string()
    }

    /// The plan's rules (`agentls_core::tool_info::parse_plan`) say what is wrong with it, in
    /// their words: which entry, which status.
    fn refusal(&self, _: &ToolContext, arguments: &Value, problem: ArgumentProblem) -> String {
        match parse_plan(arguments) {
            Err(why) => why.0,
            Ok(_) => problem.sentence(Self::NAME),
        }
    }

    async fn run(&self, cx: &ToolContext, input: UpdatePlanInput, _: Prepared) -> ToolOutcome {
        // The typed plan through the same rules: a step must say what it is.
        let plan = serde_json::to_value(&input).unwrap_or_default();
        match parse_plan(&plan) {
            Ok(entries) => ToolOutcome::ok(cx.host.prompts().tool_outputs.plan_updated.clone())
                .with_effect(Effect::Plan(entries)),
            Err(err) => ToolOutcome::failed(err.0),
        }
    }
}
