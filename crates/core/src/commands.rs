//! Custom slash commands: markdown files in `.agents/commands/` (workspace) and
//! `~/.config/agentls/commands/` (user). A file's path gives its name (`git/commit.md` →
//! `git:commit`), its optional front matter its `description`, `argument-hint`,
//! `allowed-tools` and `model`, and its body the prompt: `$ARGUMENTS` and `$1`…`$9` are
//! filled from what follows the name, `@path` mentions attach files as in any prompt, and
//! `` !`command` `` spans are replaced by the command's output.
//!
//! Pure: reading the files is `store::commands`; running the `` !`…` `` commands (through
//! the shell tool's approval rules) is the turn's. Expansion is a plan ([`Segment`]s) the
//! server executes, then [`render`] joins.

use serde::Serialize;

use crate::front_matter::FrontMatter;

/// Where a command (or a subagent) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Builtin,
    Workspace,
    User,
    /// An MCP server's prompt (`mcp__SERVER__PROMPT`, `mcp::prompts`).
    Mcp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Without the slash: `review`, `git:commit`.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    /// The tools the command's turn may use; None: the session's.
    pub allowed_tools: Option<Vec<String>>,
    /// The model of the command's turn; None: the session's.
    pub model: Option<String>,
    /// The prompt template.
    pub body: String,
    pub source: Source,
}

/// One entry of `agent/session/commands` and of `/help`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub source: Source,
}

/// The built-in commands (handled by the server, see `prompt_text::slash_command`):
/// (name, argument hint, description).
pub const BUILTIN: &[(&str, Option<&str>, &str)] = &[
    (
        "compact",
        Some("[focus]"),
        "compact the conversation now (focus steers the summary)",
    ),
    ("new", None, "start a new session"),
    (
        "context",
        None,
        "show what the model sees, section by section",
    ),
    ("model", Some("NAME"), "switch the model of this session"),
    (
        "remember",
        Some("[--user] FACT"),
        "keep a fact for later sessions: this workspace's memory, or with --user yours",
    ),
    (
        "review",
        Some("[--base BRANCH | --last-turn] [focus]"),
        "review the changes read-only; findings become diagnostics",
    ),
    ("help", None, "list the commands"),
];

pub fn is_builtin(name: &str) -> bool {
    BUILTIN.iter().any(|(n, _, _)| *n == name)
}

/// The command name of a file's path relative to its commands directory, `/`-separated:
/// `review.md` → `review`, `git/commit.md` → `git:commit`. None for a file that is not
/// markdown or whose name could not be typed after a slash (empty parts, whitespace, `:`).
pub fn name_from_path(relative: &str) -> Option<String> {
    let stem = relative.strip_suffix(".md")?;
    let parts: Vec<&str> = stem.split('/').collect();
    let valid = |part: &&str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    parts.iter().all(valid).then(|| parts.join(":"))
}

/// A comma- or space-separated list of names (`read_file, grep`).
pub fn list(value: &str) -> Vec<String> {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// A command from its file: `name` from [`name_from_path`]. Without a `description`, the
/// body's first non-empty line stands for it.
pub fn parse(name: &str, source: Source, text: &str) -> Command {
    let front = FrontMatter::parse(text);
    let (field, body) = (|key: &str| front.get(key), front.body);
    let description = front.description();
    Command {
        name: name.to_string(),
        description,
        argument_hint: field("argument-hint"),
        allowed_tools: field("allowed-tools").map(|v| list(&v)),
        model: field("model"),
        body: body.to_string(),
        source,
    }
}

/// The commands a session offers: the workspace's win over the user's of the same name;
/// sorted by name.
pub fn merge(workspace: Vec<Command>, user: Vec<Command>) -> Vec<Command> {
    let mut merged = workspace;
    for command in user {
        if !merged.iter().any(|c| c.name == command.name) {
            merged.push(command);
        }
    }
    merged.sort_by(|a, b| a.name.cmp(&b.name));
    merged
}

/// Every command a user can type: the built-ins, then the custom ones (a custom command
/// named like a built-in is shadowed by it and not listed).
pub fn infos(custom: &[Command]) -> Vec<CommandInfo> {
    let builtin = BUILTIN.iter().map(|(name, hint, description)| CommandInfo {
        name: name.to_string(),
        description: description.to_string(),
        argument_hint: hint.map(String::from),
        source: Source::Builtin,
    });
    let custom = custom
        .iter()
        .filter(|c| !is_builtin(&c.name))
        .map(|c| CommandInfo {
            name: c.name.clone(),
            description: c.description.clone(),
            argument_hint: c.argument_hint.clone(),
            source: c.source,
        });
    builtin.chain(custom).collect()
}

/// The `/help` text: one line per command; `mcp`, the MCP servers' prompts
/// (`mcp::prompts::McpPrompt::info`), last.
pub fn help(custom: &[Command], mcp: &[CommandInfo]) -> String {
    let mut infos = infos(custom);
    infos.extend(mcp.iter().cloned());
    let rows: Vec<(String, &CommandInfo)> = infos
        .iter()
        .map(|info| {
            let usage = match &info.argument_hint {
                Some(hint) => format!("/{} {hint}", info.name),
                None => format!("/{}", info.name),
            };
            (usage, info)
        })
        .collect();
    let width = rows
        .iter()
        .map(|(u, _)| u.chars().count())
        .max()
        .unwrap_or(0);
    let line = |(usage, info): &(String, &CommandInfo)| {
        let from = match info.source {
            Source::Builtin => String::new(),
            Source::Workspace => " (workspace)".into(),
            Source::User => " (user)".into(),
            Source::Mcp => String::new(),
        };
        format!("{usage:<width$}  {}{from}", info.description, width = width)
    };
    let builtin: Vec<String> = rows
        .iter()
        .filter(|(_, i)| i.source == Source::Builtin)
        .map(line)
        .collect();
    let custom: Vec<String> = rows
        .iter()
        .filter(|(_, i)| matches!(i.source, Source::Workspace | Source::User))
        .map(line)
        .collect();
    let prompts: Vec<String> = rows
        .iter()
        .filter(|(_, i)| i.source == Source::Mcp)
        .map(line)
        .collect();
    let mut text = builtin.join("\n");
    if !custom.is_empty() {
        text.push_str("\n\nCustom commands:\n");
        text.push_str(&custom.join("\n"));
    }
    if !prompts.is_empty() {
        text.push_str("\n\nMCP prompts:\n");
        text.push_str(&prompts.join("\n"));
    }
    text
}

/// The name and arguments of a prompt that starts with `/name`: None for text, a bare `/`
/// or a path (`/usr/bin/env …`).
pub fn invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim().strip_prefix('/')?;
    let (name, arguments) = match rest.split_once(char::is_whitespace) {
        Some((name, arguments)) => (name, arguments.trim()),
        None => (rest, ""),
    };
    (!name.is_empty() && !name.contains('/')).then_some((name, arguments))
}

/// The arguments split like a shell would, without expansions: whitespace separates,
/// quotes group.
pub fn split_arguments(arguments: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in arguments.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            (None, c) => {
                current.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(current);
    }
    out
}

/// The body with `$ARGUMENTS` (all of them, as typed) and `$1`…`$9` (one each; missing
/// ones are empty) filled. A body that uses neither gets the arguments on a line of their
/// own at the end, so nothing typed is lost.
pub fn expand(body: &str, arguments: &str) -> String {
    let positional = split_arguments(arguments);
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            used = true;
            rest = tail;
        } else if let Some(d) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let index = d as usize - '1' as usize;
            out.push_str(positional.get(index).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !arguments.is_empty() {
        out = format!("{}\n\n{arguments}", out.trim_end());
    }
    out
}

/// A piece of an expanded command: text as is, or a command whose output goes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    Shell(String),
}

/// The expanded text cut at its `` !`command` `` spans. An unclosed span is text.
pub fn plan(expanded: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut text = String::new();
    let mut rest = expanded;
    while let Some(at) = rest.find("!`") {
        let after = &rest[at + 2..];
        let Some(end) = after.find('`') else { break };
        let command = after[..end].trim();
        text.push_str(&rest[..at]);
        if command.is_empty() {
            text.push_str(&rest[at..at + 2 + end + 1]);
        } else {
            if !text.is_empty() {
                segments.push(Segment::Text(std::mem::take(&mut text)));
            }
            segments.push(Segment::Shell(command.to_string()));
        }
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        segments.push(Segment::Text(text));
    }
    segments
}

/// The prompt: the plan's text with each command replaced by its output (`outputs` in the
/// order of the plan's commands; trailing newlines dropped).
pub fn render(segments: &[Segment], outputs: &[String]) -> String {
    let mut outputs = outputs.iter();
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Text(text) => out.push_str(text),
            Segment::Shell(_) => {
                if let Some(output) = outputs.next() {
                    out.push_str(output.trim_end_matches(['\n', '\r']));
                }
            }
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn names_come_from_paths() {
        assert_eq!(name_from_path("review.md").as_deref(), Some("review"));
        assert_eq!(
            name_from_path("git/commit.md").as_deref(),
            Some("git:commit")
        );
        assert_eq!(name_from_path("a/b/c.md").as_deref(), Some("a:b:c"));
        assert_eq!(name_from_path("notes.txt"), None);
        assert_eq!(name_from_path("has space.md"), None);
        assert_eq!(name_from_path(".hidden.md"), None);
        assert_eq!(name_from_path("x:y.md"), None);
    }

    #[test]
    fn front_matter_fields_and_body() {
        let command = parse(
            "git:commit",
            Source::Workspace,
            "---\ndescription: \"Commit the staged work\"\nargument-hint: [message]\nallowed-tools: [read_file, 'shell']\nmodel: small-model\n---\nCommit with $ARGUMENTS\n",
        );
        assert_eq!(command.description, "Commit the staged work");
        assert_eq!(command.argument_hint.as_deref(), Some("message"));
        assert_eq!(
            command.allowed_tools,
            Some(vec!["read_file".to_string(), "shell".to_string()])
        );
        assert_eq!(command.model.as_deref(), Some("small-model"));
        assert_eq!(command.body, "Commit with $ARGUMENTS\n");

        let listed = parse(
            "x",
            Source::User,
            "---\nallowed-tools:\n  - grep\n  - read_file\n---\n# Find things\nbody",
        );
        assert_eq!(
            listed.allowed_tools,
            Some(vec!["grep".to_string(), "read_file".to_string()])
        );
        assert_eq!(listed.description, "Find things");
        let plain = parse("y", Source::User, "Just a prompt");
        assert_eq!(plain.body, "Just a prompt");
        assert_eq!(plain.allowed_tools, None);
        assert_eq!(
            list("read_file  grep,shell"),
            ["read_file", "grep", "shell"]
        );
    }

    #[test]
    fn the_workspace_wins_and_builtins_shadow() {
        let ws = vec![parse("lint", Source::Workspace, "ws lint")];
        let user = vec![
            parse("lint", Source::User, "user lint"),
            parse("help", Source::User, "mine"),
            parse("a", Source::User, "---\nargument-hint: FILE\n---\nan a"),
        ];
        let merged = merge(ws, user);
        let names: Vec<_> = merged.iter().map(|c| (c.name.as_str(), c.source)).collect();
        assert_eq!(
            names,
            [
                ("a", Source::User),
                ("help", Source::User),
                ("lint", Source::Workspace)
            ]
        );
        expect![[r#"
            /compact [focus]                               compact the conversation now (focus steers the summary)
            /new                                           start a new session
            /context                                       show what the model sees, section by section
            /model NAME                                    switch the model of this session
            /remember [--user] FACT                        keep a fact for later sessions: this workspace's memory, or with --user yours
            /review [--base BRANCH | --last-turn] [focus]  review the changes read-only; findings become diagnostics
            /help                                          list the commands

            Custom commands:
            /a FILE                                        an a (user)
            /lint                                          ws lint (workspace)"#]]
        .assert_eq(&help(&merged, &[]));
        let mcp = CommandInfo {
            name: "mcp__time__convert".into(),
            description: "Convert a time (time MCP)".into(),
            argument_hint: Some("<time> [zone]".into()),
            source: Source::Mcp,
        };
        let with_mcp = help(&merged, &[mcp]);
        expect![[r#"
            Custom commands:
            /a FILE                                        an a (user)
            /lint                                          ws lint (workspace)

            MCP prompts:
            /mcp__time__convert <time> [zone]              Convert a time (time MCP)"#]]
        .assert_eq(&with_mcp[with_mcp.find("Custom").unwrap()..]);
        let json = serde_json::to_value(&infos(&merged)[7]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"name": "a", "description": "an a", "argumentHint": "FILE", "source": "user"})
        );
    }

    #[test]
    fn arguments_fill_the_template() {
        assert_eq!(
            invocation("/git:commit fix the bug "),
            Some(("git:commit", "fix the bug"))
        );
        assert_eq!(invocation("/usr/bin/env"), None);
        assert_eq!(invocation("hello /x"), None);
        assert_eq!(
            expand("Review $1 against $2 ($ARGUMENTS) $3.$", "a.rs \"b c.rs\""),
            "Review a.rs against b c.rs (a.rs \"b c.rs\") .$"
        );
        assert_eq!(expand("Cost: $5 and $X", ""), "Cost:  and $X");
        assert_eq!(
            expand("Explain this.\n", "in French"),
            "Explain this.\n\nin French"
        );
        assert_eq!(expand("Explain this.", ""), "Explain this.");
        assert_eq!(split_arguments(" a 'b c'  \"\" d"), ["a", "b c", "", "d"]);
    }

    #[test]
    fn shell_spans_are_planned_and_rendered_in_order() {
        let segments =
            plan("Status:\n!`git status --short`\nLog: !`git log -1` and !`` and !`open");
        assert_eq!(
            segments,
            [
                Segment::Text("Status:\n".into()),
                Segment::Shell("git status --short".into()),
                Segment::Text("\nLog: ".into()),
                Segment::Shell("git log -1".into()),
                Segment::Text(" and !`` and !`open".into()),
            ]
        );
        assert_eq!(
            render(&segments, &[" M a.rs\n".into(), "abc".into()]),
            "Status:\n M a.rs\nLog: abc and !`` and !`open"
        );
        assert_eq!(plan("no commands"), [Segment::Text("no commands".into())]);
    }
}
