//! Standing permission rules (`permissions.allow`, `permissions.ask`, `permissions.deny`) in
//! Claude Code's syntax, so a user's rules carry over: `shell(git log:*)`, `Bash(npm test)`,
//! `edit_file(src/**)`, `read_file(~/.ssh/**)`, `mcp__server`, `mcp__server__tool`. Deny wins
//! over ask, ask over allow. A shell rule is matched against every simple command of a line
//! (split at `;`, `&&`, `||`, `|`, newlines, and for deny and ask inside `$(…)`, backquotes and
//! parentheses too), so an allowed prefix cannot carry another command: `git log && rm -rf x`
//! is not allowed by `shell(git log:*)`. A workspace's own settings may add deny and ask rules
//! but never allow (a repository cannot grant itself permission). Pure: the caller resolves
//! the call's path and says where the workspace and the home directory are.
//!
//! Where they apply: `approval::gate` (the one gate of built-in and MCP calls) takes the rule
//! `decide` found; the server reads the user's lists from the settings and the workspace's
//! from `.agents/settings.json` at each call.

use std::path::{Path, PathBuf};

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleAction {
    Allow,
    Ask,
    Deny,
}

impl RuleAction {
    /// The settings key's last word: `allow`, `ask`, `deny`.
    pub fn name(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        }
    }
}

/// Where a rule was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleSource {
    /// The user's own settings (settings file, editor settings, `--config`).
    User,
    /// The workspace's settings: deny and ask only.
    Workspace,
    /// The user's "always" answers in this workspace, kept as rules
    /// (`permissions.rememberAlways: "workspace"`).
    Answers,
}

impl RuleSource {
    /// As `agent/permissions` and refusals name it.
    pub fn name(self) -> &'static str {
        match self {
            RuleSource::User => "user",
            RuleSource::Workspace => "workspace",
            RuleSource::Answers => "answers",
        }
    }

    /// Where the rule came from, as a refusal says it.
    pub fn described(self) -> &'static str {
        match self {
            RuleSource::User => "user settings",
            RuleSource::Workspace => "workspace settings",
            RuleSource::Answers => "an \"always\" answer in this workspace",
        }
    }
}

/// The rule an "always" answer about a call of `tool` stands for: the command prefix the
/// answer covered for `shell` (`shell(cargo test:*)`), else the tool.
pub fn answer_rule(tool: &str, prefix: Option<&str>) -> String {
    match prefix {
        Some(prefix) if tool == "shell" => format!("shell({prefix}:*)"),
        _ => tool.to_string(),
    }
}

/// The workspace's own settings file, relative to its root: only its `permissions` are read,
/// and of those only deny and ask.
pub const WORKSPACE_SETTINGS: &str = ".agents/settings.json";

/// `permissions.{allow, ask, deny}` as one source wrote them (each rule checked when set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionLists {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

impl PermissionLists {
    /// The rules these lists make under `source`, and the problems (`from_settings`).
    pub fn rules(&self, source: RuleSource) -> (Vec<Rule>, Vec<String>) {
        from_settings(&self.allow, &self.ask, &self.deny, source)
    }
}

/// A settings value for one of `permissions.{allow, ask, deny}`: a list of rules that all
/// parse (Err names each one that does not).
pub fn rule_list(value: &Value, action: RuleAction) -> Result<Vec<String>, String> {
    let Some(items) = value.as_array() else {
        return Err(format!(
            "must be a list of rules such as \"shell(git log:*)\", got {value}"
        ));
    };
    let mut texts = Vec::new();
    let mut problems = Vec::new();
    for item in items {
        match item.as_str() {
            Some(text) => match parse_rule(text, action, RuleSource::User) {
                Ok(_) => texts.push(text.to_string()),
                Err(problem) => problems.push(problem),
            },
            None => problems.push(format!("{item} is not a string")),
        }
    }
    if problems.is_empty() {
        Ok(texts)
    } else {
        Err(problems.join("; "))
    }
}

/// The rules of a workspace settings file's JSON (`WORKSPACE_SETTINGS`): its
/// `permissions.deny` and `permissions.ask`; an allow rule, a key other than `permissions`
/// and a rule that does not parse are problems, the rest still holds.
pub fn from_workspace_settings(value: &Value) -> (Vec<Rule>, Vec<String>) {
    let Some(object) = value.as_object() else {
        return (Vec::new(), vec!["is not a JSON object".into()]);
    };
    let mut problems: Vec<String> = object
        .keys()
        .filter(|key| *key != "permissions")
        .map(|key| format!("{key:?} ignored: only \"permissions\" is read from a workspace"))
        .collect();
    let permissions = &object.get("permissions").cloned().unwrap_or(Value::Null);
    let list = |name: &str, problems: &mut Vec<String>| -> Vec<String> {
        match &permissions[name] {
            Value::Null => Vec::new(),
            Value::Array(items) => items
                .iter()
                .filter_map(|item| {
                    let text = item.as_str().map(str::to_string);
                    if text.is_none() {
                        problems.push(format!("permissions.{name}: {item} is not a string"));
                    }
                    text
                })
                .collect(),
            other => {
                problems.push(format!("permissions.{name} must be a list, got {other}"));
                Vec::new()
            }
        }
    };
    let lists = PermissionLists {
        allow: list("allow", &mut problems),
        ask: list("ask", &mut problems),
        deny: list("deny", &mut problems),
    };
    let (rules, more) = lists.rules(RuleSource::Workspace);
    problems.extend(more);
    (rules, problems)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Every call of these tools.
    Tools(Vec<String>),
    /// Every tool of an MCP server (`mcp__server`).
    McpServer(String),
    /// `shell` calls whose simple commands match.
    Command(CommandPattern),
    /// Calls of these file tools whose path matches the glob.
    Path { tools: Vec<String>, glob: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum CommandPattern {
    /// `git log:*`: these words, then anything (or nothing).
    Prefix(Vec<String>),
    /// `npm test`: exactly these words.
    Exact(Vec<String>),
    /// `* --version`: a glob over the whole simple command (`*` any characters).
    Glob(String),
}

/// One rule, as written and as understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub action: RuleAction,
    pub source: RuleSource,
    /// The rule as the user wrote it, for `agent/status` and refusals.
    pub text: String,
    target: Target,
}

/// What a rule is matched against: the tool, and for `shell` its command line, for the file
/// tools the absolute path the call names.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub tool: &'a str,
    pub command: Option<&'a str>,
    pub path: Option<&'a Path>,
}

/// Where relative patterns start (`src/**`: the workspace root) and what `~/` means.
#[derive(Debug, Clone)]
pub struct Places {
    pub root: PathBuf,
    pub home: Option<PathBuf>,
}

/// Claude Code's tool names for agentls's: its Read rules cover every read tool, its Edit
/// rules every tool that writes a file.
fn tool_names(name: &str) -> Vec<String> {
    let names: &[&str] = match name {
        "Bash" => &["shell"],
        "Read" => &["read_file", "grep", "list_dir"],
        "Edit" => &["edit_file", "write_file"],
        "Write" => &["write_file"],
        "Grep" => &["grep"],
        "Glob" | "LS" => &["list_dir"],
        "Task" => &["task"],
        other => return vec![other.to_string()],
    };
    names.iter().map(|n| n.to_string()).collect()
}

const PATH_TOOLS: [&str; 5] = ["read_file", "edit_file", "write_file", "grep", "list_dir"];

/// Parses one rule: `TOOL` or `TOOL(PATTERN)`.
pub fn parse_rule(text: &str, action: RuleAction, source: RuleSource) -> Result<Rule, String> {
    let written = text.trim();
    let (name, pattern) = match written.split_once('(') {
        Some((name, rest)) => {
            let Some(pattern) = rest.strip_suffix(')') else {
                return Err(format!(
                    "permission rule {written:?}: no closing parenthesis"
                ));
            };
            (name.trim(), Some(pattern.trim()))
        }
        None => (written, None),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("permission rule {written:?}: not a tool name"));
    }
    let tools = tool_names(name);
    let target = match pattern.filter(|p| !p.is_empty() && *p != "*") {
        None => match name.strip_prefix("mcp__") {
            Some(rest) if !rest.contains("__") => Target::McpServer(rest.to_string()),
            _ => Target::Tools(tools),
        },
        Some(pattern) if tools == ["shell"] => Target::Command(command_pattern(pattern)),
        Some(pattern) if tools.iter().all(|t| PATH_TOOLS.contains(&t.as_str())) => Target::Path {
            tools,
            glob: pattern.to_string(),
        },
        Some(_) => {
            return Err(format!(
                "permission rule {written:?}: {name} takes no pattern (only shell and the file tools do)"
            ))
        }
    };
    Ok(Rule {
        action,
        source,
        text: written.to_string(),
        target,
    })
}

fn command_pattern(pattern: &str) -> CommandPattern {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    if let Some(prefix) = pattern.strip_suffix(":*") {
        return CommandPattern::Prefix(words(prefix));
    }
    if let Some(prefix) = pattern.strip_suffix(" *") {
        if !prefix.contains('*') {
            return CommandPattern::Prefix(words(prefix));
        }
    }
    if pattern.contains('*') {
        return CommandPattern::Glob(pattern.to_string());
    }
    CommandPattern::Exact(words(pattern))
}

/// The rules of one settings source; the problems found (a rule that does not parse, an
/// allow rule from a workspace), each said once by the caller.
pub fn from_settings(
    allow: &[String],
    ask: &[String],
    deny: &[String],
    source: RuleSource,
) -> (Vec<Rule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut problems = Vec::new();
    for (action, texts) in [
        (RuleAction::Deny, deny),
        (RuleAction::Ask, ask),
        (RuleAction::Allow, allow),
    ] {
        for text in texts {
            if action == RuleAction::Allow && source == RuleSource::Workspace {
                problems.push(format!(
                    "permission rule {text:?} ignored: a workspace's settings may deny or ask, never allow"
                ));
                continue;
            }
            match parse_rule(text, action, source) {
                Ok(rule) => rules.push(rule),
                Err(problem) => problems.push(problem),
            }
        }
    }
    (rules, problems)
}

/// The rule that decides `call`, if any: the first deny that matches, else the first ask,
/// else the first allow.
pub fn decide<'r>(rules: &'r [Rule], call: &Call, places: &Places) -> Option<&'r Rule> {
    [RuleAction::Deny, RuleAction::Ask, RuleAction::Allow]
        .into_iter()
        .find_map(|action| {
            rules
                .iter()
                .filter(|rule| rule.action == action)
                .find(|rule| matches(rule, call, places))
        })
}

fn matches(rule: &Rule, call: &Call, places: &Places) -> bool {
    match &rule.target {
        Target::Tools(tools) => tools.iter().any(|t| t == call.tool),
        Target::McpServer(server) => call
            .tool
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .is_some_and(|(name, _)| name == server),
        Target::Command(pattern) => {
            call.tool == "shell"
                && call
                    .command
                    .is_some_and(|line| command_matches(pattern, line, rule.action))
        }
        Target::Path { tools, glob } => {
            tools.iter().any(|t| t == call.tool)
                && call
                    .path
                    .is_some_and(|path| path_matches(glob, path, places))
        }
    }
}

/// The simple commands of a command line, split at `;`, `&`, `|` and newlines (so at `&&`
/// and `||` too), and whether the line is plain: no command substitution, backquote,
/// redirection, subshell or variable expansion, whose effect a prefix cannot describe.
pub fn simple_commands(command: &str) -> (Vec<String>, bool) {
    let plain = !command.contains("$(")
        && !command.contains('`')
        && !command.contains('>')
        && !command.contains('<')
        && !command.contains('(')
        && !command.contains('$');
    let parts = command
        .split([';', '&', '|', '\n'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(String::from)
        .collect();
    (parts, plain)
}

/// An allow rule covers a line only when every simple command matches and the line is
/// plain (no substitution or redirection whose effect a pattern cannot describe); a deny or
/// ask rule holds when any command matches, those inside substitutions included.
fn command_matches(pattern: &CommandPattern, line: &str, action: RuleAction) -> bool {
    if action == RuleAction::Allow {
        let (parts, plain) = simple_commands(line);
        return plain && !parts.is_empty() && parts.iter().all(|p| one_command(pattern, p));
    }
    line.split([';', '&', '|', '\n', '(', ')', '`', '{', '}'])
        .map(|part| part.trim().trim_start_matches('$').trim())
        .filter(|part| !part.is_empty())
        .any(|part| one_command(pattern, part))
}

fn one_command(pattern: &CommandPattern, command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    // `sudo`, `env X=1`, `time`, `nohup` in front do not hide the program from a rule.
    let words = strip_wrappers(&words);
    match pattern {
        CommandPattern::Prefix(prefix) => {
            words.len() >= prefix.len() && prefix.iter().zip(words).all(|(p, w)| p == w)
        }
        CommandPattern::Exact(exact) => {
            words.len() == exact.len() && exact.iter().zip(words).all(|(p, w)| p == w)
        }
        CommandPattern::Glob(glob) => glob_matches(glob, &words.join(" "), false),
    }
}

fn strip_wrappers<'a, 'w>(words: &'a [&'w str]) -> &'a [&'w str] {
    let mut at = 0;
    while at < words.len() {
        let word = words[at];
        let assignment = word.contains('=') && !word.starts_with('=') && !word.starts_with('-');
        if matches!(word, "sudo" | "env" | "time" | "nohup" | "command" | "exec") || assignment {
            at += 1;
        } else {
            break;
        }
    }
    &words[at..]
}

/// A path glob: `~/x` under the home directory, `//x` absolute, anything else relative to
/// the workspace root; `**` crosses directories, `*` and `?` do not. A glob without a slash
/// matches a file of that name at any depth (as in `.gitignore`).
fn path_matches(glob: &str, path: &Path, places: &Places) -> bool {
    let (base, rest) = if let Some(rest) = glob.strip_prefix("~/") {
        match &places.home {
            Some(home) => (home.clone(), rest),
            None => return false,
        }
    } else if let Some(rest) = glob.strip_prefix("//") {
        (PathBuf::from("/"), rest)
    } else {
        (
            places.root.clone(),
            glob.trim_start_matches("./").trim_start_matches('/'),
        )
    };
    let Ok(relative) = path.strip_prefix(&base) else {
        return false;
    };
    let relative = relative.to_string_lossy();
    if !rest.contains('/') {
        let name = relative.rsplit('/').next().unwrap_or(&relative);
        return glob_matches(rest, name, true) || glob_matches(rest, &relative, true);
    }
    // `dir/`, `dir` and `dir/**` cover the directory and what is beneath it (a search of
    // the directory reads what is in it).
    let rest = rest.trim_end_matches('/');
    let dir = rest.strip_suffix("/**").unwrap_or(rest);
    glob_matches(rest, &relative, true)
        || glob_matches(dir, &relative, true)
        || glob_matches(&format!("{dir}/**"), &relative, true)
}

/// Glob matching: `*` any run of characters (not `/` when `paths`), `**` any run including
/// `/`, `?` one character.
fn glob_matches(glob: &str, text: &str, paths: bool) -> bool {
    fn go(g: &[char], t: &[char], paths: bool) -> bool {
        match g.first() {
            None => t.is_empty(),
            Some('*') if g.get(1) == Some(&'*') => {
                let rest = if g.get(2) == Some(&'/') {
                    &g[3..]
                } else {
                    &g[2..]
                };
                (0..=t.len()).any(|i| go(rest, &t[i..], paths))
            }
            Some('*') => {
                for i in 0..=t.len() {
                    if go(&g[1..], &t[i..], paths) {
                        return true;
                    }
                    if paths && t.get(i) == Some(&'/') {
                        break;
                    }
                }
                false
            }
            Some('?') => !t.is_empty() && (!paths || t[0] != '/') && go(&g[1..], &t[1..], paths),
            Some(c) => t.first() == Some(c) && go(&g[1..], &t[1..], paths),
        }
    }
    let g: Vec<char> = glob.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&g, &t, paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places {
            root: PathBuf::from("/w/p"),
            home: Some(PathBuf::from("/home/u")),
        }
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Vec<Rule> {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (rules, problems) =
            from_settings(&owned(allow), &owned(ask), &owned(deny), RuleSource::User);
        assert!(problems.is_empty(), "{problems:?}");
        rules
    }

    fn shell(command: &str) -> Call<'_> {
        Call {
            tool: "shell",
            command: Some(command),
            path: None,
        }
    }

    fn decided(rules: &[Rule], call: Call) -> Option<(RuleAction, String)> {
        decide(rules, &call, &places()).map(|r| (r.action, r.text.clone()))
    }

    #[test]
    fn an_allowed_prefix_covers_its_commands_and_carries_no_other() {
        let rules = rules(&["shell(git log:*)"], &[], &[]);
        let allowed = |c| decided(&rules, shell(c)).map(|d| d.0);
        assert_eq!(allowed("git log"), Some(RuleAction::Allow));
        assert_eq!(allowed("git log --oneline -5"), Some(RuleAction::Allow));
        assert_eq!(
            allowed("git log | head && git log -1"),
            None,
            "head is not git log"
        );
        assert_eq!(allowed("git log && rm -rf x"), None);
        assert_eq!(allowed("git log; rm -rf x"), None);
        assert_eq!(allowed("git log $(rm -rf x)"), None);
        assert_eq!(allowed("git log > out.txt"), None);
        assert_eq!(allowed("git logs"), None);
        assert_eq!(allowed("git push"), None);
    }

    #[test]
    fn a_deny_holds_anywhere_in_the_line_and_wins_over_allow() {
        let rules = rules(
            &["shell(git:*)", "Bash"],
            &[],
            &["Bash(git push:*)", "shell(rm -rf:*)"],
        );
        let action = |c| decided(&rules, shell(c)).map(|d| d.0);
        assert_eq!(action("git status"), Some(RuleAction::Allow));
        assert_eq!(action("git push origin main"), Some(RuleAction::Deny));
        assert_eq!(action("git status && git push"), Some(RuleAction::Deny));
        assert_eq!(action("echo $(git push)"), Some(RuleAction::Deny));
        assert_eq!(action("echo `rm -rf /`"), Some(RuleAction::Deny));
        assert_eq!(action("sudo rm -rf /"), Some(RuleAction::Deny));
        assert_eq!(action("FOO=1 git push"), Some(RuleAction::Deny));
        assert_eq!(action("(cd x && git push)"), Some(RuleAction::Deny));
    }

    #[test]
    fn ask_sits_between_deny_and_allow() {
        let rules = rules(&["shell"], &["shell(npm publish)"], &[]);
        let action = |c| decided(&rules, shell(c)).map(|d| d.0);
        assert_eq!(action("npm publish"), Some(RuleAction::Ask));
        assert_eq!(
            action("npm publish --tag x"),
            Some(RuleAction::Allow),
            "exact words only"
        );
        assert_eq!(action("npm test"), Some(RuleAction::Allow));
    }

    #[test]
    fn path_rules_follow_gitignore_like_globs_from_the_root_home_or_slash() {
        let rules = rules(
            &["edit_file(src/**)"],
            &[],
            &["Read(~/.ssh/**)", "read_file(//etc/shadow)", "Edit(*.lock)"],
        );
        let call = |tool, path: &'static str| Call {
            tool,
            command: None,
            path: Some(Path::new(path)),
        };
        let action = |tool, path| decided(&rules, call(tool, path)).map(|d| d.0);
        assert_eq!(
            action("edit_file", "/w/p/src/a/b.rs"),
            Some(RuleAction::Allow)
        );
        assert_eq!(action("edit_file", "/w/p/tests/a.rs"), None);
        assert_eq!(
            action("edit_file", "/w/p/src/Cargo.lock"),
            Some(RuleAction::Deny)
        );
        assert_eq!(
            action("write_file", "/w/p/Cargo.lock"),
            Some(RuleAction::Deny)
        );
        assert_eq!(
            action("read_file", "/home/u/.ssh/id_ed25519"),
            Some(RuleAction::Deny)
        );
        assert_eq!(
            action("grep", "/home/u/.ssh"),
            Some(RuleAction::Deny),
            "Read covers grep"
        );
        assert_eq!(action("read_file", "/home/u/.sshx"), None);
        assert_eq!(action("read_file", "/etc/shadow"), Some(RuleAction::Deny));
        assert_eq!(action("read_file", "/etc/passwd"), None);
    }

    #[test]
    fn mcp_rules_name_a_server_or_one_tool() {
        let rules = rules(&["mcp__docs"], &[], &["mcp__db__drop_table"]);
        let call = |tool| Call {
            tool,
            command: None,
            path: None,
        };
        let action = |tool| decided(&rules, call(tool)).map(|d| d.0);
        assert_eq!(action("mcp__docs__search"), Some(RuleAction::Allow));
        assert_eq!(action("mcp__docsx__search"), None);
        assert_eq!(action("mcp__db__drop_table"), Some(RuleAction::Deny));
        assert_eq!(action("mcp__db__select"), None);
    }

    #[test]
    fn a_workspace_cannot_allow_and_bad_rules_are_said() {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (rules, problems) = from_settings(
            &owned(&["shell"]),
            &owned(&["shell(curl:*)"]),
            &owned(&["read_file(.env)", "shell(git", "task(x)"]),
            RuleSource::Workspace,
        );
        let kept: Vec<(RuleAction, &str)> =
            rules.iter().map(|r| (r.action, r.text.as_str())).collect();
        assert_eq!(
            kept,
            [
                (RuleAction::Deny, "read_file(.env)"),
                (RuleAction::Ask, "shell(curl:*)")
            ]
        );
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("never allow")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("no closing parenthesis")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("takes no pattern")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_settings_list_is_checked_whole_and_a_workspace_file_gives_deny_and_ask_only() {
        use serde_json::json;
        assert_eq!(
            rule_list(&json!(["shell(git log:*)", "read_file"]), RuleAction::Allow),
            Ok(vec![
                "shell(git log:*)".to_string(),
                "read_file".to_string()
            ])
        );
        let bad = rule_list(&json!(["shell(git", 3]), RuleAction::Deny).unwrap_err();
        assert!(bad.contains("no closing parenthesis") && bad.contains("3 is not a string"));
        assert!(rule_list(&json!("shell"), RuleAction::Ask).is_err());

        let file = json!({
            "permissions": {"allow": ["shell"], "deny": ["shell(git push:*)"], "ask": "x"},
            "approval": "full-auto"
        });
        let (rules, problems) = from_workspace_settings(&file);
        let kept: Vec<(RuleAction, RuleSource, &str)> = rules
            .iter()
            .map(|r| (r.action, r.source, r.text.as_str()))
            .collect();
        assert_eq!(
            kept,
            [(RuleAction::Deny, RuleSource::Workspace, "shell(git push:*)")]
        );
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("\"approval\" ignored")));
        assert!(problems
            .iter()
            .any(|p| p.contains("permissions.ask must be a list")));
        assert!(problems.iter().any(|p| p.contains("never allow")));
    }

    #[test]
    fn an_always_answer_stands_for_its_prefix_or_its_tool() {
        assert_eq!(
            answer_rule("shell", Some("cargo test")),
            "shell(cargo test:*)"
        );
        assert_eq!(answer_rule("write_file", None), "write_file");
        assert_eq!(answer_rule("mcp__db__query", None), "mcp__db__query");
        let rule = answer_rule("shell", Some("cargo test"));
        let (rules, problems) = from_settings(&[rule], &[], &[], RuleSource::Answers);
        assert!(problems.is_empty());
        let call = Call {
            tool: "shell",
            command: Some("cargo test -p x && cargo test --doc"),
            path: None,
        };
        let places = Places {
            root: PathBuf::from("/w"),
            home: None,
        };
        assert_eq!(
            decide(&rules, &call, &places).map(|r| r.action),
            Some(RuleAction::Allow)
        );
    }
}
