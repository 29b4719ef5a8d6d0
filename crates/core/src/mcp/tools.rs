//! A server's tools as agentls uses them: read from the `tools/list` JSON (so this crate
//! needs no MCP SDK), filtered by the server's `tools.allow`/`tools.deny`, named
//! `mcp__SERVER__TOOL`, with cleaned schemas, a kind for the editor's UI from the tool's
//! annotations, and the kind the approval gate uses (asks like `shell` unless trusted).

use serde_json::Value;

use super::config::{ServerConfig, Trust};
use super::names;
use crate::prompts::ToolSpec;
use crate::tool_info::ToolKind;

/// One tool of one server, as the server described it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTool {
    pub tool: String,
    pub description: String,
    /// The cleaned input schema.
    pub schema: Value,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
    /// `annotations.destructiveHint` (MCP's default when absent is true; only an explicit
    /// true is shown as an edit).
    pub destructive: bool,
    /// `annotations.title` or `title`.
    pub title: Option<String>,
}

/// A server's tool list (`tools/list`'s `tools` array, or the result object holding it):
/// the usable tools, and one message per tool skipped or schema cleaned.
pub fn parse_list(value: &Value) -> (Vec<ServerTool>, Vec<String>) {
    let mut tools = Vec::new();
    let mut notes = Vec::new();
    let items = match value {
        Value::Array(items) => items.as_slice(),
        Value::Object(map) => map
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice),
        _ => &[],
    };
    for item in items {
        let Some(tool) = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            notes.push("a tool without a name skipped".to_string());
            continue;
        };
        let (schema, cleaned) =
            super::schema::clean(item.get("inputSchema").unwrap_or(&Value::Null));
        if !cleaned.is_empty() {
            notes.push(format!("tool {tool}: {}", cleaned.join(", ")));
        }
        let annotations = item.get("annotations");
        let flag = |key: &str| {
            annotations
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        tools.push(ServerTool {
            tool: tool.to_string(),
            description: item
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            schema,
            read_only: flag("readOnlyHint"),
            destructive: flag("destructiveHint"),
            title: annotations
                .and_then(|a| a.get("title"))
                .or_else(|| item.get("title"))
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
    (tools, notes)
}

/// A tool as offered to the model and looked up when called.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// `mcp__SERVER__TOOL`.
    pub name: String,
    pub server: String,
    pub trust: Trust,
    pub tool: ServerTool,
}

impl McpTool {
    /// The kind the editor shows.
    pub fn kind(&self) -> ToolKind {
        if self.tool.read_only {
            ToolKind::Read
        } else if self.tool.destructive {
            ToolKind::Edit
        } else {
            ToolKind::Other
        }
    }

    /// The kind the approval gate decides by: an MCP tool runs code outside agentls, so it
    /// asks like `shell` (`Execute`), except a read-only tool of a `trust: readOnly` server,
    /// which asks only under `ask` (as edits do). In plan mode (`plan`), which refuses
    /// edits, that tool asks like any command instead: it changes nothing.
    pub fn approval_kind(&self, plan: bool) -> ToolKind {
        if self.trust == Trust::ReadOnly && self.tool.read_only && !plan {
            ToolKind::Edit
        } else {
            ToolKind::Execute
        }
    }

    /// The row's title in the UI: the server and the tool named.
    pub fn title(&self) -> String {
        let label = self.tool.title.as_deref().unwrap_or(&self.tool.tool);
        format!("{label} ({} MCP)", self.server)
    }

    pub fn spec(&self) -> ToolSpec {
        // No sentence of ours (model-facing prose lives in prompts/): the server's title or
        // name when it gave no description.
        let description = if self.tool.description.is_empty() {
            self.tool
                .title
                .clone()
                .unwrap_or_else(|| self.tool.tool.clone())
        } else {
            self.tool.description.clone()
        };
        ToolSpec {
            name: self.name.clone(),
            description,
            parameters: self.tool.schema.clone(),
        }
    }
}

/// The tools of every ready server, in the stable order (server, then tool), filtered by
/// each server's allow/deny lists and named. Returns the tools and the naming notes.
pub fn offer(servers: &[(&ServerConfig, &[ServerTool])]) -> (Vec<McpTool>, Vec<String>) {
    let pairs: Vec<(String, String)> = servers
        .iter()
        .flat_map(|(config, tools)| {
            tools
                .iter()
                .filter(|t| config.offers(&t.tool))
                .map(|t| (config.name.clone(), t.tool.clone()))
        })
        .collect();
    let (named, notes) = names::assign(&pairs);
    let tools = named
        .into_iter()
        .filter_map(|n| {
            let (config, tools) = servers.iter().find(|(c, _)| c.name == n.server)?;
            let tool = tools.iter().find(|t| t.tool == n.tool)?;
            Some(McpTool {
                name: n.name,
                server: n.server,
                trust: config.trust,
                tool: tool.clone(),
            })
        })
        .collect();
    (tools, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::{parse, ServerSource};
    use serde_json::json;

    #[test]
    fn a_list_becomes_named_filtered_tools_with_kinds() {
        let (configs, _) = parse(
            &json!({"every": {"command": "x", "tools": {"deny": ["secret"]}},
                    "time": {"command": "y", "trust": "readOnly"}}),
            ServerSource::Settings,
        );
        let (every, notes) = parse_list(&json!({"tools": [
            {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object",
              "properties": {"message": {"type": "string"}}}},
            {"name": "secret", "inputSchema": {"type": "object"}},
            {"description": "nameless"},
            {"name": "wipe", "annotations": {"destructiveHint": true}, "inputSchema": true}
        ]}));
        assert_eq!(every.len(), 3);
        assert_eq!(notes.len(), 2, "{notes:?}");
        let (time, _) = parse_list(&json!([{"name": "get_current_time",
            "annotations": {"readOnlyHint": true, "title": "Current time"}}]));
        let (tools, _) = offer(&[(&configs[0], &every), (&configs[1], &time)]);
        let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mcp__every__echo",
                "mcp__every__wipe",
                "mcp__time__get_current_time"
            ]
        );
        assert_eq!(tools[0].kind(), ToolKind::Other);
        assert_eq!(tools[0].approval_kind(false), ToolKind::Execute);
        assert_eq!(tools[1].kind(), ToolKind::Edit);
        assert_eq!(tools[2].kind(), ToolKind::Read);
        assert_eq!(tools[2].approval_kind(false), ToolKind::Edit);
        // Plan mode refuses edits: the trusted read-only tool asks there instead.
        assert_eq!(tools[2].approval_kind(true), ToolKind::Execute);
        assert_eq!(tools[2].title(), "Current time (time MCP)");
        assert_eq!(tools[1].spec().parameters["type"], "object");
        assert_eq!(tools[1].spec().description, "wipe");
    }
}
