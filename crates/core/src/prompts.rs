//! The prompt files of `prompts/`: embedded at build time, each overridable by a file of the
//! same name in the user's prompt directory. The overrides come in as data
//! (`Prompts::from_sources`); reading them from disk is `store::prompts`.

/// A tool as the model is told about it: the provider adapters map this to their format.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prompts {
    /// The system prompt: who the agent is and how it works.
    pub system: String,
    /// Put before untrusted content (files, tool outputs, diagnostics): it is data.
    pub data_boundary: String,
    /// Heads the skills index.
    pub skills: String,
    /// Heads a compaction summary in the history.
    pub summary_prefix: String,
    pub tools: Vec<ToolSpec>,
    /// Compaction prompts, by style.
    pub compact_handoff: String,
    pub compact_state_snapshot: String,
    pub compact_checkpoint: String,
    /// Introduces the user's focus of a manual compaction.
    pub compact_focus: String,
}

/// (file name, built-in content): one table so a new prompt cannot miss its override.
const BUILTIN: &[(&str, &str)] = &[
    ("system.md", include_str!("../../../prompts/system.md")),
    (
        "data_boundary.md",
        include_str!("../../../prompts/data_boundary.md"),
    ),
    ("skills.md", include_str!("../../../prompts/skills.md")),
    (
        "summary_prefix.md",
        include_str!("../../../prompts/summary_prefix.md"),
    ),
    ("tools.json", include_str!("../../../prompts/tools.json")),
    (
        "compact_handoff.md",
        include_str!("../../../prompts/compact_handoff.md"),
    ),
    (
        "compact_state_snapshot.md",
        include_str!("../../../prompts/compact_state_snapshot.md"),
    ),
    (
        "compact_checkpoint.md",
        include_str!("../../../prompts/compact_checkpoint.md"),
    ),
    (
        "compact_focus.md",
        include_str!("../../../prompts/compact_focus.md"),
    ),
];

impl Default for Prompts {
    fn default() -> Self {
        Prompts::builtin()
    }
}

impl Prompts {
    pub fn builtin() -> Prompts {
        let (prompts, problems) = Prompts::from_sources(|_| None);
        debug_assert!(problems.is_empty(), "built-in prompts: {problems:?}");
        prompts
    }

    /// The built-in prompts with each file that `read` returns (by file name) taking the
    /// place of its built-in; problems (invalid tools.json) keep the built-in.
    pub fn from_sources(mut read: impl FnMut(&str) -> Option<String>) -> (Prompts, Vec<String>) {
        let mut problems = Vec::new();
        let mut text = |name: &str| -> String {
            let builtin = BUILTIN
                .iter()
                .find(|(file, _)| *file == name)
                .map(|(_, text)| *text)
                .unwrap_or_default();
            read(name)
                .unwrap_or_else(|| builtin.to_string())
                .trim_end()
                .to_string()
        };
        let system = text("system.md");
        let data_boundary = text("data_boundary.md");
        let skills = text("skills.md");
        let summary_prefix = text("summary_prefix.md");
        let tools_json = text("tools.json");
        let compact_handoff = text("compact_handoff.md");
        let compact_state_snapshot = text("compact_state_snapshot.md");
        let compact_checkpoint = text("compact_checkpoint.md");
        let compact_focus = text("compact_focus.md");
        let tools = match serde_json::from_str::<Vec<ToolSpec>>(&tools_json) {
            Ok(tools) => tools,
            Err(err) => {
                problems.push(format!(
                    "tools.json is not a list of tools ({err}); using the built-in"
                ));
                serde_json::from_str(BUILTIN[4].1).expect("built-in tools.json is valid")
            }
        };
        (
            Prompts {
                system,
                data_boundary,
                skills,
                summary_prefix,
                tools,
                compact_handoff,
                compact_state_snapshot,
                compact_checkpoint,
                compact_focus,
            },
            problems,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prompts_are_complete() {
        let prompts = Prompts::builtin();
        assert!(prompts.system.contains("agentls"));
        assert!(!prompts.data_boundary.is_empty());
        let names: Vec<_> = prompts.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "grep",
                "edit_file",
                "write_file",
                "shell",
                "update_plan"
            ]
        );
        for tool in &prompts.tools {
            assert_eq!(tool.parameters["type"], "object", "{}", tool.name);
        }
    }

    #[test]
    fn an_override_replaces_its_builtin_only() {
        let (prompts, problems) = Prompts::from_sources(|name| match name {
            "system.md" => Some("You are a test.\n".to_string()),
            "tools.json" => Some("{not json".to_string()),
            _ => None,
        });
        assert_eq!(prompts.system, "You are a test.");
        assert_eq!(prompts.data_boundary, Prompts::builtin().data_boundary);
        assert_eq!(prompts.tools, Prompts::builtin().tools);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("tools.json"), "{problems:?}");
    }
}
