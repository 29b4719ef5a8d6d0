//! Subagents: a side task (a search across the repository, a review) run by the `task` tool
//! in a context of its own, so that only its final answer enters the parent's history.
//! Defined by markdown files in `.agents/agents/` (workspace) and `~/.config/agentls/agents/`
//! (user): front matter `name`, `description`, `tools` (default read-only), `model`; the body
//! is the subagent's system prompt. The built-in `explore` exists without a file (its prompt
//! is `prompts/subagent_explore.md`).
//!
//! Pure: reading the files is `store::subagents`; running a child turn is `agent::turn`'s.

use serde_json::Value;

use crate::commands::{list, Source};
use crate::front_matter::FrontMatter;

/// The tools of a subagent whose file names none: read-only.
pub const DEFAULT_TOOLS: &[&str] = &["read_file", "list_dir", "grep", "find_symbol"];

/// The tool that runs subagents: never offered to a subagent (no nesting).
pub const TASK_TOOL: &str = "task";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subagent {
    pub name: String,
    pub description: String,
    /// The tools it may call.
    pub tools: Vec<String>,
    /// None: the parent session's model.
    pub model: Option<String>,
    /// Its system prompt.
    pub prompt: String,
    pub source: Source,
    /// `isolation: worktree`: it works in a fresh git worktree of the workspace on a branch
    /// of its own, and its parent gets the diff and the branch instead of changed files.
    pub worktree: bool,
}

impl Subagent {
    pub fn allows(&self, tool: &str) -> bool {
        tool != TASK_TOOL && self.tools.iter().any(|t| t == tool)
    }
}

/// The built-in `explore`: read-only, finds where something is done and reports paths and
/// lines.
pub fn explore(prompt: &str) -> Subagent {
    Subagent {
        name: "explore".into(),
        description: "Read-only search of the workspace: finds where something is done and reports the paths and lines".into(),
        tools: DEFAULT_TOOLS.iter().map(|t| t.to_string()).collect(),
        model: None,
        prompt: prompt.trim().to_string(),
        source: Source::Builtin,
        worktree: false,
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

/// A subagent from its file (`stem`: the file name without `.md`, the name when the front
/// matter gives none). `known_tools` are the tools that exist; one that does not, or
/// `task`, is a problem (and left out). An invalid name or an empty body is an error.
pub fn parse(
    stem: &str,
    source: Source,
    text: &str,
    known_tools: &[&str],
) -> Result<(Subagent, Vec<String>), String> {
    let front = FrontMatter::parse(text);
    let (field, body) = (|key: &str| front.get(key), front.body);
    let name = field("name").unwrap_or_else(|| stem.to_string());
    if !valid_name(&name) {
        return Err(format!(
            "the subagent name {name:?} may hold only letters, digits, `-` and `_`"
        ));
    }
    let prompt = body.trim();
    if prompt.is_empty() {
        return Err(format!(
            "the subagent {name} has no body (its system prompt)"
        ));
    }
    let mut problems = Vec::new();
    let tools = match field("tools") {
        None => DEFAULT_TOOLS.iter().map(|t| t.to_string()).collect(),
        Some(value) => list(&value)
            .into_iter()
            .filter(|tool| {
                if tool == TASK_TOOL {
                    problems.push(format!("{name}: a subagent cannot use `task`"));
                    false
                } else if !known_tools.contains(&tool.as_str()) {
                    problems.push(format!("{name}: unknown tool `{tool}` left out"));
                    false
                } else {
                    true
                }
            })
            .collect(),
    };
    let worktree = match field("isolation").as_deref() {
        None | Some("" | "none") => false,
        Some("worktree") => true,
        Some(other) => {
            problems.push(format!(
                "{name}: unknown isolation `{other}` (only `worktree`): it runs in the workspace"
            ));
            false
        }
    };
    let description = front.description();
    Ok((
        Subagent {
            name,
            description,
            tools,
            model: field("model"),
            prompt: prompt.to_string(),
            source,
            worktree,
        },
        problems,
    ))
}

/// The subagents of a session: the user's over the built-in ones, the workspace's over the
/// user's; sorted by name. A workspace subagent never takes a built-in's name: a repository
/// could otherwise swap the read-only `explore` for one with `shell` and write tools, which
/// the parent model would call believing it safe. It is left out, with the problem to show.
pub fn merge(
    builtin: Vec<Subagent>,
    workspace: Vec<Subagent>,
    user: Vec<Subagent>,
) -> (Vec<Subagent>, Vec<String>) {
    let mut problems = Vec::new();
    let workspace = workspace.into_iter().filter(|agent| {
        let taken = builtin.iter().any(|b| b.name == agent.name);
        if taken {
            problems.push(format!(
                "the workspace's subagent `{}` has the name of a built-in subagent: it is not \
                 used (rename its file in .agents/agents/ to use it)",
                agent.name
            ));
        }
        !taken
    });
    let mut merged: Vec<Subagent> = Vec::new();
    for agent in workspace
        .collect::<Vec<_>>()
        .into_iter()
        .chain(user)
        .chain(builtin)
    {
        if !merged.iter().any(|a| a.name == agent.name) {
            merged.push(agent);
        }
    }
    merged.sort_by(|a, b| a.name.cmp(&b.name));
    (merged, problems)
}

/// A `task` call's arguments checked against the subagents: the subagent and the prompt,
/// or the error the model reads.
pub fn validate_task<'a>(
    arguments: &Value,
    agents: &'a [Subagent],
) -> Result<(&'a Subagent, String), String> {
    let names = || {
        agents
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let agent = arguments["agent"]
        .as_str()
        .filter(|a| !a.trim().is_empty())
        .ok_or_else(|| format!("task needs `agent`, one of: {}", names()))?;
    let prompt = arguments["prompt"]
        .as_str()
        .filter(|p| !p.trim().is_empty())
        .ok_or("task needs `prompt`: what the subagent should do")?;
    let found = agents
        .iter()
        .find(|a| a.name == agent.trim())
        .ok_or_else(|| format!("unknown subagent {agent}; the subagents are: {}", names()))?;
    Ok((found, prompt.to_string()))
}

/// The line of the task tool's description that names the subagents (the model picks one
/// by it).
pub fn roster(agents: &[Subagent]) -> String {
    agents
        .iter()
        .map(|a| format!("- {}: {}", a.name, a.description))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KNOWN: &[&str] = &["read_file", "list_dir", "grep", "edit_file", "shell"];

    #[test]
    fn a_file_gives_name_tools_model_and_prompt() {
        let (agent, problems) = parse(
            "rev",
            Source::Workspace,
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: read_file, edit_file, task, web\nmodel: big\n---\nYou review.\n",
            KNOWN,
        )
        .unwrap();
        assert_eq!(agent.name, "reviewer");
        assert_eq!(agent.tools, ["read_file", "edit_file"]);
        assert_eq!(agent.model.as_deref(), Some("big"));
        assert_eq!(agent.prompt, "You review.");
        assert_eq!(
            problems,
            [
                "reviewer: a subagent cannot use `task`",
                "reviewer: unknown tool `web` left out"
            ]
        );
        assert!(agent.allows("edit_file") && !agent.allows("shell") && !agent.allows("task"));
        assert!(!agent.worktree);
        let isolated = |value: &str| {
            parse(
                "iso",
                Source::User,
                &format!("---\nisolation: {value}\n---\nWork."),
                KNOWN,
            )
            .unwrap()
        };
        assert!(isolated("worktree").0.worktree);
        let (odd, said) = isolated("container");
        assert!(!odd.worktree);
        assert_eq!(
            said,
            ["iso: unknown isolation `container` (only `worktree`): it runs in the workspace"]
        );

        let (plain, _) = parse("finder", Source::User, "# Finds things\nLook.", KNOWN).unwrap();
        assert_eq!(plain.name, "finder");
        assert_eq!(plain.tools, DEFAULT_TOOLS);
        assert_eq!(plain.description, "Finds things");
        assert!(parse("bad name", Source::User, "x", KNOWN).is_err());
        assert!(
            parse("empty", Source::User, "---\nname: e\n---\n  \n", KNOWN)
                .unwrap_err()
                .contains("no body")
        );
    }

    #[test]
    fn merging_and_validating_task_calls() {
        let ws = parse("explore", Source::Workspace, "Mine.", KNOWN)
            .unwrap()
            .0;
        let ws_b = parse("b", Source::Workspace, "B.", KNOWN).unwrap().0;
        let user = parse("b", Source::User, "B.", KNOWN).unwrap().0;
        let (agents, problems) = merge(vec![explore("Built in.")], vec![ws, ws_b], vec![user]);
        let shown: Vec<_> = agents.iter().map(|a| (a.name.as_str(), a.source)).collect();
        assert_eq!(
            shown,
            [("b", Source::Workspace), ("explore", Source::Builtin)]
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("`explore` has the name of a built-in"));
        let user_explore = parse("explore", Source::User, "Mine.", KNOWN).unwrap().0;
        let (own, problems) = merge(vec![explore("Built in.")], vec![], vec![user_explore]);
        assert_eq!(own[0].source, Source::User, "the user's own may replace it");
        assert!(problems.is_empty());

        let (agent, prompt) =
            validate_task(&json!({"agent": "b", "prompt": "find x"}), &agents).unwrap();
        assert_eq!((agent.name.as_str(), prompt.as_str()), ("b", "find x"));
        assert_eq!(
            validate_task(&json!({"agent": "z", "prompt": "p"}), &agents).unwrap_err(),
            "unknown subagent z; the subagents are: b, explore"
        );
        assert!(validate_task(&json!({"agent": "b"}), &agents)
            .unwrap_err()
            .contains("needs `prompt`"));
        assert!(validate_task(&json!({}), &agents)
            .unwrap_err()
            .contains("needs `agent`"));
        assert_eq!(roster(&agents[..1]), "- b: B.");
    }
}
