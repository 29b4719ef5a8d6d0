//! Custom slash commands and subagents on disk: `.agents/commands/` and `.agents/agents/` of
//! each workspace root, and the user's `~/.config/agentls/commands/` and
//! `~/.config/agentls/agents/` (`$XDG_CONFIG_HOME/agentls/…`). Parsed by the core's
//! `commands` and `subagents`. Read each time they are used (a prompt, `/help`,
//! `agent/session/commands`), so an edited, added or removed file counts at once.

use std::path::{Path, PathBuf};

use super::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
use agentls_core::commands::{self, Command, Source};
use agentls_core::subagents::{self, Subagent};

/// `$XDG_CONFIG_HOME/agentls/<kind>` (`~/.config/agentls/<kind>`).
pub fn user_dir(kind: &str) -> Option<PathBuf> {
    super::user_config::path(kind)
}

/// Every `*.md` under `dir` (recursively, sorted), as (path relative to `dir` with `/`,
/// text). Only regular files inside `root` (the workspace root, or the user's configuration
/// directory) are read: a committed link to /dev/stdin, a FIFO or a file out of the tree,
/// or `dir` itself linked elsewhere (`.agents/commands -> /etc`), is skipped with a log line
/// and returned as a problem.
fn markdown_files(dir: &Path, root: &Path) -> (Vec<(String, String)>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                // Depth is bounded by what a user writes; symlinked dirs are not followed.
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let Ok(relative) = path.strip_prefix(dir) else {
                    continue;
                };
                let relative = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                match read_config_file(&path, Some(root), MAX_CONFIG_FILE_BYTES) {
                    ConfigRead::Text(text) => found.push((relative, text)),
                    ConfigRead::Missing => {}
                    ConfigRead::Refused(why) => {
                        let problem = format!("skipping {}: {why}", path.display());
                        tracing::warn!("{problem}");
                        problems.push(problem);
                    }
                }
            }
        }
    }
    found.sort();
    (found, problems)
}

/// The folder a user file must stay in: the user's configuration directory above `dir`.
fn user_root(dir: &Path) -> &Path {
    dir.parent().unwrap_or(dir)
}

fn commands_in(dir: &Path, root: &Path, source: Source) -> Vec<Command> {
    markdown_files(dir, root)
        .0
        .into_iter()
        .filter_map(|(relative, text)| match commands::name_from_path(&relative) {
            Some(name) => Some(commands::parse(&name, source, &text)),
            None => {
                tracing::warn!(
                    "skipping the command file {relative} in {}: its name cannot be typed after `/`",
                    dir.display()
                );
                None
            }
        })
        .collect()
}

/// The custom commands of the workspace (every root; the first root wins a clash) over the
/// user's.
pub fn load_commands(roots: &[PathBuf]) -> Vec<Command> {
    load_commands_from(roots, user_dir("commands").as_deref())
}

pub fn load_commands_from(roots: &[PathBuf], user: Option<&Path>) -> Vec<Command> {
    let mut workspace: Vec<Command> = Vec::new();
    for root in roots {
        let dir = root.join(".agents").join("commands");
        for command in commands_in(&dir, root, Source::Workspace) {
            if !workspace.iter().any(|c| c.name == command.name) {
                workspace.push(command);
            }
        }
    }
    let user = user.map_or_else(Vec::new, |dir| {
        commands_in(dir, user_root(dir), Source::User)
    });
    commands::merge(workspace, user)
}

fn subagents_in(
    (dir, root): (&Path, &Path),
    source: Source,
    known_tools: &[&str],
    problems: &mut Vec<String>,
) -> Vec<Subagent> {
    let mut found = Vec::new();
    let (files, mut refused) = markdown_files(dir, root);
    problems.append(&mut refused);
    for (relative, text) in files {
        if relative.contains('/') {
            continue;
        }
        let stem = relative.trim_end_matches(".md");
        match subagents::parse(stem, source, &text, known_tools) {
            Ok((agent, mut more)) => {
                problems.append(&mut more);
                found.push(agent);
            }
            Err(err) => problems.push(format!("{}: {err}", dir.join(&relative).display())),
        }
    }
    found
}

/// The subagents: the workspace's over the user's over the built-in `explore` (whose
/// prompt is given); with the problems of files that could not be used as they are.
pub fn load_subagents(
    roots: &[PathBuf],
    explore_prompt: &str,
    known_tools: &[&str],
) -> (Vec<Subagent>, Vec<String>) {
    load_subagents_from(
        roots,
        user_dir("agents").as_deref(),
        explore_prompt,
        known_tools,
    )
}

pub fn load_subagents_from(
    roots: &[PathBuf],
    user: Option<&Path>,
    explore_prompt: &str,
    known_tools: &[&str],
) -> (Vec<Subagent>, Vec<String>) {
    let mut problems = Vec::new();
    let mut workspace = Vec::new();
    for root in roots {
        workspace.extend(subagents_in(
            (&root.join(".agents").join("agents"), root),
            Source::Workspace,
            known_tools,
            &mut problems,
        ));
    }
    let user = user.map_or_else(Vec::new, |dir| {
        subagents_in(
            (dir, user_root(dir)),
            Source::User,
            known_tools,
            &mut problems,
        )
    });
    let (merged, mut taken) =
        subagents::merge(vec![subagents::explore(explore_prompt)], workspace, user);
    problems.append(&mut taken);
    (merged, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_found_recursively_and_the_workspace_wins() {
        let root = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        let dir = root.path().join(".agents/commands");
        std::fs::create_dir_all(dir.join("git")).unwrap();
        std::fs::write(dir.join("git/commit.md"), "Commit $ARGUMENTS").unwrap();
        std::fs::write(dir.join("review.md"), "ws").unwrap();
        std::fs::write(dir.join("notes.txt"), "not a command").unwrap();
        std::fs::write(user.path().join("review.md"), "user").unwrap();
        std::fs::write(user.path().join("mine.md"), "mine").unwrap();
        let commands = load_commands_from(&[root.path().to_path_buf()], Some(user.path()));
        let shown: Vec<_> = commands
            .iter()
            .map(|c| (c.name.as_str(), c.source, c.body.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("git:commit", Source::Workspace, "Commit $ARGUMENTS"),
                ("mine", Source::User, "mine"),
                ("review", Source::Workspace, "ws"),
            ]
        );
    }

    #[test]
    fn a_commands_folder_linked_out_of_the_workspace_is_not_read() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("x.md"), "not ours").unwrap();
        std::fs::create_dir_all(root.path().join(".agents")).unwrap();
        for kind in ["commands", "agents"] {
            let link = root.path().join(".agents").join(kind);
            std::os::unix::fs::symlink(elsewhere.path(), link).unwrap();
        }
        assert!(load_commands_from(&[root.path().to_path_buf()], None).is_empty());
        let roots = [root.path().to_path_buf()];
        let (agents, problems) = load_subagents_from(&roots, None, "Explore.", &[]);
        assert_eq!(agents.len(), 1, "only the built-in");
        assert!(problems[0].contains("x.md: it leads to "), "{problems:?}");
    }

    #[test]
    fn subagents_with_problems_and_the_builtin() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(".agents/agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("rev.md"),
            "---\ntools: read_file, nope\n---\nReview.",
        )
        .unwrap();
        std::fs::write(dir.join("empty.md"), "---\nname: e\n---\n").unwrap();
        let (agents, problems) = load_subagents_from(
            &[root.path().to_path_buf()],
            None,
            "Explore.",
            &["read_file"],
        );
        let names: Vec<_> = agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["explore", "rev"]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("no body"), "{problems:?}");
        assert!(problems[1].contains("unknown tool `nope`"), "{problems:?}");
    }
}
