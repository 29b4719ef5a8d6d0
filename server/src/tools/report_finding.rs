//! `report_finding`: a review turn's finding (`/review`), checked against its file (inside
//! the workspace, its lines within the file as the editor has it now) and handed to the
//! turn, which publishes it (`Effect::Finding`). Offered only in a review turn.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use agentls_core::review::{self, Severity};
use agentls_core::tool_info::ToolKind;

use crate::store::files::read_text;
use crate::tools::registry::{text_arg, Effect, Prepared, Tool, ToolContext, ToolOutcome};

pub struct ReportFinding;

/// `report_finding`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportFindingInput {
    pub path: String,
    #[schemars(range(min = 1))]
    pub line: usize,
    #[schemars(range(min = 1))]
    pub end_line: Option<usize>,
    pub severity: Severity,
    pub message: String,
    pub suggestion: Option<String>,
}

#[async_trait::async_trait]
impl Tool for ReportFinding {
    const NAME: &'static str = review::REPORT_FINDING_TOOL;
    type Input = ReportFindingInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, arguments: &Value) -> String {
        let line = arguments.get("line").and_then(Value::as_u64);
        match (text_arg(arguments, "path"), line) {
            (Some(path), Some(line)) => format!("Finding at {path}:{line}"),
            (Some(path), None) => format!("Finding in {path}"),
            _ => "Finding".to_string(),
        }
    }

    async fn run(&self, cx: &ToolContext, input: ReportFindingInput, _: Prepared) -> ToolOutcome {
        let file = match cx.boundary.resolve(&input.path) {
            Ok(file) => file,
            Err(refused) => return ToolOutcome::failed(format!("report_finding: {}", refused.0)),
        };
        let text = match cx.host.buffer(&file).await {
            Some((text, _)) => text,
            None => {
                let path = file.clone();
                match tokio::task::spawn_blocking(move || read_text(&path)).await {
                    Ok(Ok(text)) => text,
                    Ok(Err(refused)) => {
                        return ToolOutcome::failed(format!("report_finding: {}", refused.0))
                    }
                    Err(err) => return ToolOutcome::failed(err.to_string()),
                }
            }
        };
        let shown = cx.boundary.display(&file);
        match review::check(
            file,
            &shown,
            &text,
            input.line,
            input.end_line,
            input.severity,
            &input.message,
            input.suggestion.as_deref(),
        ) {
            Ok(finding) => {
                let output = agentls_core::prompts::fill(
                    &cx.host.prompts().tool_outputs.finding_reported,
                    &[("location", &finding.location())],
                );
                ToolOutcome::ok(output).with_effect(Effect::Finding(finding))
            }
            Err(why) => ToolOutcome::failed(why),
        }
    }
}
