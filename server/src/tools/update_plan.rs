//! `update_plan`: the model's plan of the task, recorded and shown in the editor.

use serde_json::Value;

use agentls_core::tool_info::{parse_plan, ToolKind};

use super::registry::{Effect, Prepared, Tool, ToolContext, ToolOutcome};

pub struct UpdatePlan;

#[async_trait::async_trait]
impl Tool for UpdatePlan {
    fn name(&self) -> &'static str {
        "update_plan"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, _: &Value) -> String {
        "Update plan".to_string()
    }

    async fn run(&self, _: &ToolContext, arguments: &Value, _: Prepared) -> ToolOutcome {
        match parse_plan(arguments) {
            Ok(entries) => ToolOutcome::ok("Plan updated.").with_effect(Effect::Plan(entries)),
            Err(err) => ToolOutcome::failed(err.0),
        }
    }
}
