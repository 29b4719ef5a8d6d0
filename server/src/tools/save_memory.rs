//! `save_memory`: keeps a fact for later sessions (`agentls_core::memory`, the files in
//! `store::memory`), labelled as the model's. The user's memory, read by every session in
//! every workspace, is only written with the user's approval, in every mode
//! (`Tool::always_asks`): what a repository's text talks the model into stays in that
//! workspace's memory at most.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use agentls_core::memory::{self, Author, Scope};
use agentls_core::prompts::fill;
use agentls_core::tool_info::{shorten, ToolKind};

use crate::store::memory::MemoryFiles;
use crate::tools::registry::{Prepared, Tool, ToolContext, ToolOutcome};

pub struct SaveMemory;

/// `save_memory`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SaveMemoryInput {
    pub fact: String,
    /// Where the fact is kept; the workspace's memory when absent.
    #[serde(default)]
    pub scope: MemoryScope,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    User,
    #[default]
    Workspace,
}

impl MemoryScope {
    fn scope(self) -> Scope {
        match self {
            MemoryScope::User => Scope::User,
            MemoryScope::Workspace => Scope::Workspace,
        }
    }
}

#[async_trait::async_trait]
impl Tool for SaveMemory {
    const NAME: &'static str = "save_memory";
    type Input = SaveMemoryInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, arguments: &Value) -> String {
        match arguments["fact"].as_str() {
            Some(fact) => format!("Remember: {}", shorten(fact)),
            None => "Remember".to_string(),
        }
    }

    fn always_asks(&self, arguments: &Value) -> Option<String> {
        (arguments["scope"] == "user").then(|| {
            "it adds to your own memory, which every session in every workspace reads".to_string()
        })
    }

    async fn prepare(&self, _: &ToolContext, input: &SaveMemoryInput) -> Result<Prepared, String> {
        memory::check_fact(&input.fact)?;
        Ok(Prepared::Nothing)
    }

    async fn run(&self, cx: &ToolContext, input: SaveMemoryInput, _: Prepared) -> ToolOutcome {
        let scope = input.scope.scope();
        let config = cx.host.config();
        if !config.memory_enabled {
            return ToolOutcome::failed("memory is turned off (memory.enabled)".to_string());
        }
        let files = MemoryFiles::new(
            cx.boundary.roots.first().map(|r| r.as_path()),
            config.state_dir.as_deref(),
        );
        let fact = crate::store::secrets::redact(&input.fact).into_owned();
        let texts = cx.host.prompts().tool_outputs.clone();
        let kept = tokio::task::spawn_blocking(move || files.keep(scope, Author::Model, &fact))
            .await
            .unwrap_or_else(|err| Err(err.to_string()));
        match kept {
            Ok((entry, added)) => {
                let template = if added {
                    &texts.memory_saved
                } else {
                    &texts.memory_kept_already
                };
                ToolOutcome::ok(fill(
                    template,
                    &[("scope", scope.name()), ("fact", &entry.text)],
                ))
            }
            Err(why) => ToolOutcome::failed(why),
        }
    }
}
