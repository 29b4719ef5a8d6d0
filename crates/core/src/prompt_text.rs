//! What the server reads in a prompt's text before the model does: slash commands at the
//! start, and `@path` / `@path:START-END` file mentions. Pure; the agent loop acts on them,
//! so every editor gets the same behaviour.

use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/compact [focus]`
    Compact(Option<String>),
    New,
    Context,
    /// `/model NAME`
    Model(String),
    /// `/remember [--user] FACT`: the user keeps a fact in the workspace's memory (or, with
    /// `--user`, their own).
    Remember {
        fact: String,
        user: bool,
    },
    Help,
    /// `/review [--base BRANCH | --last-turn] [focus]`: a read-only review turn
    /// (`review::parse_request` reads the arguments).
    Review(Option<String>),
    /// An unknown command, or a known one used wrongly: the message says which.
    Invalid(String),
}

// The list of built-in commands (for `/help` and `agent/session/commands`) is
// `commands::BUILTIN`.

/// The slash command `text` starts with, if any. Only the start of the prompt counts, so a
/// path like `/usr/bin` later in a sentence is text.
pub fn slash_command(text: &str) -> Option<SlashCommand> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    let (name, argument) = match rest.split_once(char::is_whitespace) {
        Some((name, argument)) => (name, argument.trim()),
        None => (rest, ""),
    };
    // `/` alone, or a path (`/usr/bin/env …`), is not a command.
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let argument = (!argument.is_empty()).then(|| argument.to_string());
    Some(match (name, argument) {
        ("compact", focus) => SlashCommand::Compact(focus),
        ("new", None) => SlashCommand::New,
        ("context", None) => SlashCommand::Context,
        ("help", None) => SlashCommand::Help,
        ("review", arguments) => SlashCommand::Review(arguments),
        ("model", Some(model)) => SlashCommand::Model(model),
        ("model", None) => SlashCommand::Invalid("/model needs a model name".into()),
        ("remember", Some(argument)) => match argument.strip_prefix("--user") {
            Some(fact) if fact.is_empty() || fact.starts_with(char::is_whitespace) => {
                match fact.trim() {
                    "" => SlashCommand::Invalid("/remember --user needs a fact".into()),
                    fact => SlashCommand::Remember {
                        fact: fact.to_string(),
                        user: true,
                    },
                }
            }
            _ => SlashCommand::Remember {
                fact: argument,
                user: false,
            },
        },
        ("remember", None) => SlashCommand::Invalid("/remember needs a fact".into()),
        ("new" | "context" | "help", Some(_)) => {
            SlashCommand::Invalid(format!("/{name} takes no argument"))
        }
        (other, _) => SlashCommand::Invalid(format!("unknown command /{other}")),
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// As written, relative to the workspace.
    pub path: String,
    /// 1-based inclusive line range of `@path:START-END`.
    pub lines: Option<(usize, usize)>,
    /// Where the mention is in the prompt text (bytes, including the `@`).
    pub span: Range<usize>,
}

/// The `@path` and `@path:START-END` mentions of a prompt, in order. An `@` counts only at
/// the start or after whitespace or an opening bracket (so `user@example.com` is text);
/// trailing punctuation is not part of the path.
pub fn mentions(text: &str) -> Vec<Mention> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices('@') {
        let starts_token = at == 0
            || matches!(
                bytes[at - 1],
                b' ' | b'\t' | b'\n' | b'\r' | b'(' | b'[' | b'"' | b'\'' | b'`'
            );
        if !starts_token {
            continue;
        }
        let rest = &text[at + 1..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | ']' | '"' | '\'' | '`' | ','))
            .unwrap_or(rest.len());
        let mut token = &rest[..end];
        token = token.trim_end_matches(['.', ';', '!', '?', ':']);
        if token.is_empty() {
            continue;
        }
        let (path, lines) = match token.rsplit_once(':') {
            Some((path, range)) => match parse_range(range) {
                Some(lines) if !path.is_empty() => (path, Some(lines)),
                _ => (token, None),
            },
            None => (token, None),
        };
        found.push(Mention {
            path: path.to_string(),
            lines,
            span: at..at + 1 + token.len(),
        });
    }
    found
}

fn parse_range(range: &str) -> Option<(usize, usize)> {
    let (start, end) = match range.split_once('-') {
        Some((start, end)) => (start.parse().ok()?, end.parse().ok()?),
        None => {
            let line = range.parse().ok()?;
            (line, line)
        }
    };
    (start >= 1 && end >= start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_commands_at_the_start_only() {
        assert_eq!(slash_command("/compact"), Some(SlashCommand::Compact(None)));
        assert_eq!(
            slash_command("  /compact keep the API notes "),
            Some(SlashCommand::Compact(Some("keep the API notes".into())))
        );
        assert_eq!(
            slash_command("/model gpt-4o"),
            Some(SlashCommand::Model("gpt-4o".into()))
        );
        assert_eq!(slash_command("/new"), Some(SlashCommand::New));
        assert_eq!(slash_command("/context"), Some(SlashCommand::Context));
        assert_eq!(slash_command("/help"), Some(SlashCommand::Help));
        assert!(
            matches!(slash_command("/model"), Some(SlashCommand::Invalid(m)) if m.contains("needs a model"))
        );
        assert!(
            matches!(slash_command("/frobnicate x"), Some(SlashCommand::Invalid(m)) if m == "unknown command /frobnicate")
        );
        let remember = |fact: &str, user| {
            Some(SlashCommand::Remember {
                fact: fact.into(),
                user,
            })
        };
        assert_eq!(
            slash_command("/remember Use tabs"),
            remember("Use tabs", false)
        );
        assert_eq!(
            slash_command("/remember --user  Answer in French"),
            remember("Answer in French", true)
        );
        assert_eq!(
            slash_command("/remember --username is x"),
            remember("--username is x", false)
        );
        assert!(matches!(
            slash_command("/remember"),
            Some(SlashCommand::Invalid(_))
        ));
        assert!(matches!(
            slash_command("/remember --user"),
            Some(SlashCommand::Invalid(_))
        ));
        assert_eq!(slash_command("what does /compact do?"), None);
        assert_eq!(slash_command("/usr/bin/env is missing"), None);
        assert_eq!(slash_command("/"), None);
    }

    #[test]
    fn mentions_with_and_without_line_ranges() {
        let text = "Compare @src/lib.rs and @server/src/main.rs:10-20, then (@README.md:3). Mail me@example.com";
        let found = mentions(text);
        let shown: Vec<_> = found.iter().map(|m| (m.path.as_str(), m.lines)).collect();
        assert_eq!(
            shown,
            [
                ("src/lib.rs", None),
                ("server/src/main.rs", Some((10, 20))),
                ("README.md", Some((3, 3)))
            ]
        );
        assert_eq!(&text[found[1].span.clone()], "@server/src/main.rs:10-20");
        // A reversed range is not a range; a bare @ is nothing.
        assert_eq!(mentions("@a.rs:9-3")[0].path, "a.rs:9-3");
        assert!(mentions("@ alone").is_empty());
    }
}
