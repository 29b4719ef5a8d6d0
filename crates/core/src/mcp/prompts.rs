//! MCP prompts as slash commands: a server's `prompts/list` (its JSON) → [`ServerPrompt`]s,
//! named `mcp__SERVER__PROMPT` like tools ([`offer`]), listed with an argument hint built
//! from their arguments; what the user typed after the name mapped to the prompt's
//! arguments in order ([`arguments`]); and a `prompts/get` result turned into the user's turn
//! ([`render`]): its messages' text joined (embedded resources' text included, images
//! described), cut to a budget and wrapped as untrusted data from that server.

use serde_json::{Map, Value};

use super::names;
use crate::commands::{split_arguments, CommandInfo, Source};
use crate::tokens::TokenizerKind;
use crate::truncate::{truncate_middle, TruncationPolicy};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

/// One prompt of one server, as the server described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPrompt {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
}

/// A server's prompt list (`prompts/list`'s `prompts` array, or the result object holding
/// it): the usable prompts, and one message per entry skipped.
pub fn parse_list(value: &Value) -> (Vec<ServerPrompt>, Vec<String>) {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        Value::Object(map) => map
            .get("prompts")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice),
        _ => &[],
    };
    let text = |item: &Value, key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    let mut prompts = Vec::new();
    let mut notes = Vec::new();
    for item in items {
        let Some(name) = text(item, "name") else {
            notes.push("a prompt without a name skipped".to_string());
            continue;
        };
        let mut arguments = Vec::new();
        for argument in item
            .get("arguments")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
        {
            let Some(arg) = text(argument, "name") else {
                notes.push(format!("prompt {name}: an argument without a name skipped"));
                continue;
            };
            arguments.push(PromptArgument {
                name: arg,
                description: text(argument, "description"),
                required: argument
                    .get("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            });
        }
        prompts.push(ServerPrompt {
            name,
            title: text(item, "title"),
            description: text(item, "description"),
            arguments,
        });
    }
    (prompts, notes)
}

/// A prompt as the user types it: `/mcp__SERVER__PROMPT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    /// `mcp__SERVER__PROMPT`, without the slash.
    pub command: String,
    pub server: String,
    pub prompt: ServerPrompt,
}

/// The prompts of the ready servers as commands, named like tools (sanitised, at most 64
/// characters, collisions resolved), in the stable order; and one note per collision.
pub fn offer(servers: &[(&str, &[ServerPrompt])]) -> (Vec<McpPrompt>, Vec<String>) {
    let pairs: Vec<(String, String)> = servers
        .iter()
        .flat_map(|(server, prompts)| prompts.iter().map(|p| (server.to_string(), p.name.clone())))
        .collect();
    let (named, notes) = names::assign(&pairs);
    let offered = named
        .into_iter()
        .filter_map(|n| {
            let (_, prompts) = servers.iter().find(|(s, _)| *s == n.server)?;
            let prompt = prompts.iter().find(|p| p.name == n.tool)?.clone();
            Some(McpPrompt {
                command: n.name,
                server: n.server,
                prompt,
            })
        })
        .collect();
    (offered, notes)
}

impl McpPrompt {
    /// `<city> [state]`: required arguments in angle brackets, optional ones in square
    /// brackets, in the prompt's order; None for a prompt without arguments.
    pub fn argument_hint(&self) -> Option<String> {
        let parts: Vec<String> = self
            .prompt
            .arguments
            .iter()
            .map(|a| {
                if a.required {
                    format!("<{}>", a.name)
                } else {
                    format!("[{}]", a.name)
                }
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    }

    /// `/mcp__S__P <a> [b]`
    pub fn usage(&self) -> String {
        match self.argument_hint() {
            Some(hint) => format!("/{} {hint}", self.command),
            None => format!("/{}", self.command),
        }
    }

    /// Its row in `agent/session/commands`: the server's description (else its title),
    /// the server named.
    pub fn info(&self) -> CommandInfo {
        let said = self
            .prompt
            .description
            .as_deref()
            .or(self.prompt.title.as_deref())
            .unwrap_or(&self.prompt.name);
        CommandInfo {
            name: self.command.clone(),
            description: format!("{said} ({} MCP)", self.server),
            argument_hint: self.argument_hint(),
            source: Source::Mcp,
        }
    }
}

/// What the user typed after the command, mapped to the prompt's arguments in order:
/// whitespace separates words, quotes group them, and words beyond the last argument join
/// it (so a prompt's last argument can take a sentence). Err (nothing is sent) names a
/// missing required argument, or words given to a prompt that takes none.
pub fn arguments(prompt: &McpPrompt, typed: &str) -> Result<Map<String, Value>, String> {
    let words = split_arguments(typed);
    let declared = &prompt.prompt.arguments;
    if declared.is_empty() {
        if words.is_empty() {
            return Ok(Map::new());
        }
        return Err(format!(
            "/{} takes no arguments (got {:?})",
            prompt.command,
            typed.trim()
        ));
    }
    let mut map = Map::new();
    for (index, argument) in declared.iter().enumerate() {
        let value = if index + 1 == declared.len() && words.len() > declared.len() {
            words[index..].join(" ")
        } else {
            match words.get(index) {
                Some(word) => word.clone(),
                None => continue,
            }
        };
        map.insert(argument.name.clone(), Value::String(value));
    }
    let missing: Vec<String> = declared
        .iter()
        .filter(|a| {
            a.required
                && map
                    .get(&a.name)
                    .and_then(Value::as_str)
                    .is_none_or(|v| v.is_empty())
        })
        .map(|a| match &a.description {
            Some(description) => format!("<{}> ({description})", a.name),
            None => format!("<{}>", a.name),
        })
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "/{} needs {}; usage: {}",
            prompt.command,
            missing.join(" and "),
            prompt.usage()
        ));
    }
    Ok(map)
}

/// The user's turn for a `prompts/get` result: what the user typed, then the messages'
/// content (text joined; embedded resources' text included; images, audio and binary
/// resources described) cut head-and-tail to `budget`, wrapped as untrusted data from
/// `server`. A message not from the user role is marked with its role.
pub fn render(
    server: &str,
    prompt: &str,
    typed: &str,
    result: &Value,
    budget: TruncationPolicy,
    tokenizer: TokenizerKind,
) -> String {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut parts = Vec::new();
    for message in messages {
        let blocks: Vec<&Value> = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().collect(),
            Some(block) => vec![block],
            None => Vec::new(),
        };
        let text: Vec<String> = blocks.into_iter().map(super::output::describe).collect();
        let text = text.join("\n");
        match message.get("role").and_then(Value::as_str) {
            Some("user") | None => parts.push(text),
            Some(role) => parts.push(format!("[{role}]\n{text}")),
        }
    }
    let body = if parts.is_empty() {
        "(no content)".to_string()
    } else {
        parts.join("\n\n")
    };
    // One cut (it tokenizes only the kept head and tail of a long text).
    let body = truncate_middle(&body, budget, tokenizer).text;
    format!(
        "{}\n\n<mcp_prompt server=\"{}\" prompt=\"{}\" trust=\"untrusted\">\n{}\n</mcp_prompt>",
        typed.trim(),
        super::output::attr(server),
        super::output::attr(prompt),
        body.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;
    use serde_json::json;

    /// The everything server's list, as it answers `prompts/list`.
    fn everything() -> Vec<ServerPrompt> {
        let (prompts, notes) = parse_list(&json!({"prompts": [
            {"name": "simple-prompt", "title": "Simple Prompt", "description": "A prompt with no arguments"},
            {"name": "args-prompt", "description": "A prompt with two arguments, one required and one optional",
             "arguments": [
                {"name": "city", "description": "Name of the city", "required": true},
                {"name": "state", "description": "Name of the state", "required": false}]},
            {"name": "", "description": "nameless"},
            {"name": "odd", "arguments": [{"description": "no name"}]},
        ]}));
        assert_eq!(
            notes,
            [
                "a prompt without a name skipped",
                "prompt odd: an argument without a name skipped"
            ]
        );
        prompts
    }

    fn offered() -> Vec<McpPrompt> {
        let prompts = everything();
        offer(&[("every thing", &prompts)]).0
    }

    #[test]
    fn prompts_are_named_like_tools_and_listed_with_a_hint() {
        let offered = offered();
        let names: Vec<_> = offered.iter().map(|p| p.command.as_str()).collect();
        assert_eq!(
            names,
            [
                "mcp__every_thing__args-prompt",
                "mcp__every_thing__odd",
                "mcp__every_thing__simple-prompt"
            ]
        );
        let rows: Vec<Value> = offered
            .iter()
            .map(|p| serde_json::to_value(p.info()).unwrap())
            .collect();
        expect![[r#"
            [
              {
                "argumentHint": "<city> [state]",
                "description": "A prompt with two arguments, one required and one optional (every thing MCP)",
                "name": "mcp__every_thing__args-prompt",
                "source": "mcp"
              },
              {
                "argumentHint": null,
                "description": "odd (every thing MCP)",
                "name": "mcp__every_thing__odd",
                "source": "mcp"
              },
              {
                "argumentHint": null,
                "description": "A prompt with no arguments (every thing MCP)",
                "name": "mcp__every_thing__simple-prompt",
                "source": "mcp"
              }
            ]"#]]
        .assert_eq(&serde_json::to_string_pretty(&rows).unwrap());
    }

    #[test]
    fn words_map_to_arguments_in_order_and_a_missing_required_one_is_refused() {
        let offered = offered();
        let args = &offered[0];
        assert_eq!(
            Value::Object(arguments(args, "Paris").unwrap()),
            json!({"city": "Paris"})
        );
        assert_eq!(
            Value::Object(arguments(args, "'New York' NY").unwrap()),
            json!({"city": "New York", "state": "NY"})
        );
        // Words beyond the last argument join it.
        assert_eq!(
            Value::Object(arguments(args, "Springfield the one in Illinois").unwrap()),
            json!({"city": "Springfield", "state": "the one in Illinois"})
        );
        expect![[r#"/mcp__every_thing__args-prompt needs <city> (Name of the city); usage: /mcp__every_thing__args-prompt <city> [state]"#]]
        .assert_eq(&arguments(args, "  ").unwrap_err());
        assert!(arguments(args, "\"\"").is_err(), "an empty required value");
        let simple = &offered[2];
        assert_eq!(arguments(simple, "").unwrap(), Map::new());
        expect![[r#"/mcp__every_thing__simple-prompt takes no arguments (got "extra words")"#]]
            .assert_eq(&arguments(simple, " extra words ").unwrap_err());
    }

    #[test]
    fn a_result_becomes_the_users_turn_wrapped_as_untrusted_data() {
        let result = json!({"description": "d", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Please analyze the following resource:"}},
            {"role": "user", "content": {"type": "resource", "resource":
                {"uri": "demo://resource/dynamic/text/1", "mimeType": "text/plain", "text": "Resource 1: plain"}}},
            {"role": "assistant", "content": {"type": "image", "mimeType": "image/png", "data": "AAAA"}},
        ]});
        let text = render(
            "everything",
            "resource-prompt",
            " /mcp__everything__resource-prompt Text 1 ",
            &result,
            TruncationPolicy::Tokens(1000),
            TokenizerKind::O200kBase,
        );
        expect![[r#"
            /mcp__everything__resource-prompt Text 1

            <mcp_prompt server="everything" prompt="resource-prompt" trust="untrusted">
            Please analyze the following resource:

            [resource demo://resource/dynamic/text/1]
            Resource 1: plain

            [assistant]
            [image image/png, 3 bytes, not shown]
            </mcp_prompt>"#]]
        .assert_eq(&text);
        let long = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "word ".repeat(5000)}]}]});
        let text = render(
            "s",
            "p\"q",
            "/x",
            &long,
            TruncationPolicy::Tokens(200),
            TokenizerKind::O200kBase,
        );
        assert!(text.contains("tokens truncated"), "{text}");
        assert!(text.len() < 2000, "{}", text.len());
        assert!(text.contains("prompt=\"p&quot;q\"") && text.ends_with("</mcp_prompt>"));
        assert!(render(
            "s",
            "p",
            "/x",
            &json!({}),
            TruncationPolicy::Tokens(10),
            TokenizerKind::O200kBase
        )
        .contains("(no content)"));
    }
}
