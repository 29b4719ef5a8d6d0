//! `mcpServers`: the shape Claude Code, Cursor and Gemini CLI already use, from the settings,
//! the workspace's `.mcp.json` or an ACP client. Parsing is lenient per server: a bad entry
//! is reported and skipped, the others are kept. `${VAR}` references stay unexpanded here
//! (so secrets are never part of a parsed, loggable value) and are expanded by `expand` at
//! start-up with a lookup the caller provides.

use serde_json::{json, Map, Value};
use std::time::Duration;

/// Per-call default (`timeoutMs`).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default for `startupTimeoutMs`: spawning plus `initialize` plus `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a server's entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerSource {
    /// The `mcpServers` key of the settings (editor, `--config`, user settings file).
    Settings,
    /// The workspace's `.mcp.json`: starts only once the user approved the entry.
    Workspace,
    /// An ACP client's `session/new` `mcpServers`.
    Client,
}

impl ServerSource {
    pub fn name(self) -> &'static str {
        match self {
            ServerSource::Settings => "settings",
            ServerSource::Workspace => "workspace",
            ServerSource::Client => "client",
        }
    }

    /// Whether `${VAR}` may name one of agentls's secrets (the provider's key, any value
    /// redaction protects). Only the user's own settings may: a workspace's `.mcp.json` is
    /// written by whoever wrote the repository, and an ACP client's entries by the client,
    /// and neither may lift agentls's key into a server's environment or request.
    pub fn expands_secrets(self) -> bool {
        self == ServerSource::Settings
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl Transport {
    /// The values that may be keys (every `env` and header value, once expanded): cut from
    /// whatever the server says before agentls shows or logs it.
    pub fn secret_values(&self) -> Vec<String> {
        let pairs = match self {
            Transport::Stdio { env, .. } => env,
            Transport::Http { headers, .. } => headers,
        };
        pairs.iter().map(|(_, value)| value.clone()).collect()
    }

    /// Every `${VAR}` the transport names, with where: `(field, VAR)`, the field as the
    /// user wrote it (`command`, `args[1]`, `env.NAME`, `cwd`, `url`, `headers.NAME`).
    pub fn references(&self) -> Vec<(String, String)> {
        let mut fields: Vec<(String, &str)> = Vec::new();
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                fields.push(("command".into(), command));
                for (i, arg) in args.iter().enumerate() {
                    fields.push((format!("args[{i}]"), arg));
                }
                for (name, value) in env {
                    fields.push((format!("env.{name}"), value));
                }
                if let Some(cwd) = cwd {
                    fields.push(("cwd".into(), cwd));
                }
            }
            Transport::Http { url, headers } => {
                fields.push(("url".into(), url));
                for (name, value) in headers {
                    fields.push((format!("headers.{name}"), value));
                }
            }
        }
        fields
            .into_iter()
            .flat_map(|(field, text)| {
                variables(text)
                    .into_iter()
                    .map(move |name| (field.clone(), name))
            })
            .collect()
    }
}

/// The variable names of the `${VAR}` / `${VAR:-default}` references in `text` (a bad
/// reference is `expand`'s to report).
fn variables(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let reference = &after[..end];
        let name = reference.split_once(":-").map_or(reference, |(n, _)| n);
        names.push(name.to_string());
        rest = &after[end + 1..];
    }
    names
}

/// `value` as an approval shows it: each `${VAR}` reference kept (a name, never a value),
/// every literal run in between replaced by `…` (it may be a key written in the file).
pub fn mask_literals(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        if start > 0 {
            out.push('…');
        }
        out.push_str(&rest[start..start + end + 1]);
        rest = &rest[start + end + 1..];
    }
    if !rest.is_empty() {
        out.push('…');
    }
    out
}

/// `trust`: whether the server's read-only tools may skip approval under `auto-edit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The default: every call asks, as `shell` does.
    Ask,
    /// Tools annotated `readOnlyHint` run without asking under `auto-edit`.
    ReadOnly,
}

impl Trust {
    /// As written in the entry.
    pub fn name(self) -> &'static str {
        match self {
            Trust::Ask => "ask",
            Trust::ReadOnly => "readOnly",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    pub call_timeout: Duration,
    pub startup_timeout: Duration,
    /// `tools.allow`: when set, only these tools (by the server's own names).
    pub allow: Option<Vec<String>>,
    /// `tools.deny`: never these tools.
    pub deny: Vec<String>,
    pub trust: Trust,
    pub source: ServerSource,
}

impl ServerConfig {
    /// Whether the server's tool `tool` is offered to the model.
    pub fn offers(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == tool))
            && !self.deny.iter().any(|d| d == tool)
    }

    /// What a workspace approval is remembered for: a changed entry is another entry. Values
    /// are as written (`${VAR}` unexpanded), so no secret is stored.
    pub fn fingerprint(&self) -> String {
        let transport = match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => json!({"command": command, "args": args, "env": env, "cwd": cwd}),
            Transport::Http { url, headers } => json!({"url": url, "headers": headers}),
        };
        // `trust` and `tools` change what is asked and what the model may call: an entry
        // approved without them is not the entry that has them.
        json!({
            "name": self.name,
            "transport": transport,
            "trust": self.trust.name(),
            "tools": {"allow": self.allow, "deny": self.deny},
        })
        .to_string()
    }

    /// The first `${VAR}` that names one of agentls's secrets (`is_secret`) in an entry whose
    /// source may not expand them: the reason it does not start, naming the entry, the field
    /// and the variable (never a value). None for a settings entry or a harmless one.
    pub fn secret_reference(&self, is_secret: &dyn Fn(&str) -> bool) -> Option<String> {
        if self.source.expands_secrets() {
            return None;
        }
        let (field, name) = self
            .transport
            .references()
            .into_iter()
            .find(|(_, name)| is_secret(name))?;
        Some(format!(
            "not started: {field} of the {} entry {} asks for ${{{name}}}, one of agentls's \
             secrets, which only the user's settings may pass to an MCP server",
            self.source.name(),
            self.name
        ))
    }

    /// The `input` of the approval a workspace entry asks for: the whole entry (command,
    /// args, cwd, env names with their values as written, secrets' masked; url and header
    /// names; trust; tools), and the same as lines for an editor to show (`details`).
    /// `${VAR}` stays unexpanded, so no value of the environment is shown.
    pub fn approval_input(&self, file: &str) -> (Value, String) {
        let mut lines = Vec::new();
        let mut input = json!({"server": self.name, "command": self.describe(), "file": file});
        match &self.transport {
            Transport::Stdio { args, env, cwd, .. } => {
                lines.push(format!("command: {}", self.describe()));
                if let Some(cwd) = cwd {
                    lines.push(format!("cwd: {cwd}"));
                }
                let mut shown = Map::new();
                for (name, value) in env {
                    let value = if crate::redact::secret_name(name.as_bytes()) {
                        mask_literals(value)
                    } else {
                        value.clone()
                    };
                    lines.push(format!("env: {name}={value}"));
                    shown.insert(name.clone(), Value::String(value));
                }
                input["args"] = json!(args);
                input["env"] = Value::Object(shown);
                input["cwd"] = json!(cwd);
            }
            Transport::Http { url, headers } => {
                lines.push(format!("url: {url}"));
                for (name, value) in headers {
                    lines.push(format!("header: {name}: {}", mask_literals(value)));
                }
                input["url"] = json!(url);
                input["headers"] = json!(headers.iter().map(|(n, _)| n).collect::<Vec<_>>());
            }
        }
        lines.push(format!("trust: {}", self.trust.name()));
        if let Some(allow) = &self.allow {
            lines.push(format!("tools.allow: {}", allow.join(", ")));
        }
        if !self.deny.is_empty() {
            lines.push(format!("tools.deny: {}", self.deny.join(", ")));
        }
        input["trust"] = json!(self.trust.name());
        input["tools"] = json!({"allow": self.allow, "deny": self.deny});
        (input, lines.join("\n"))
    }

    /// One line for the user (approval prompt, logs): the command or URL, never env values
    /// or header values.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut line = command.clone();
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// The servers of one configuration value: either `{"mcpServers": {...}}` (a `.mcp.json`
/// file) or the name map itself (the `mcpServers` key of agentls's settings). Returns the
/// usable servers, sorted by name, and one message per problem.
pub fn parse(value: &Value, source: ServerSource) -> (Vec<ServerConfig>, Vec<String>) {
    let mut servers = Vec::new();
    let mut problems = Vec::new();
    let map = match value {
        Value::Null => return (servers, problems),
        Value::Object(map) if map.get("mcpServers").is_some_and(Value::is_object) => {
            map["mcpServers"].as_object().expect("checked")
        }
        Value::Object(map) => map,
        other => {
            problems.push(format!("mcpServers must be an object, got {}", kind(other)));
            return (servers, problems);
        }
    };
    for (name, entry) in map {
        match server(name, entry, source) {
            Ok(server) => servers.push(server),
            Err(message) => problems.push(format!("mcpServers.{name}: {message}")),
        }
    }
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    (servers, problems)
}

/// The servers an ACP client offers in `session/new`/`session/load` (`mcpServers`: an array
/// of `{name, command, args, env: [{name, value}]}` or `{type: "http", name, url, headers:
/// [{name, value}]}`), as `ServerSource::Client` entries.
pub fn parse_acp(list: &Value) -> (Vec<ServerConfig>, Vec<String>) {
    let Value::Array(items) = list else {
        return (
            Vec::new(),
            vec![format!("mcpServers must be an array, got {}", kind(list))],
        );
    };
    let mut map = Map::new();
    let mut problems = Vec::new();
    for item in items {
        let Some(name) = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            problems.push("an MCP server without a name skipped".to_string());
            continue;
        };
        let mut entry = item.as_object().cloned().unwrap_or_default();
        entry.remove("name");
        for key in ["env", "headers"] {
            if let Some(Value::Array(pairs)) = entry.get(key) {
                let object: Map<String, Value> = pairs
                    .iter()
                    .filter_map(|p| {
                        Some((
                            p.get("name")?.as_str()?.to_string(),
                            p.get("value")?.clone(),
                        ))
                    })
                    .collect();
                entry.insert(key.to_string(), Value::Object(object));
            }
        }
        map.insert(name.to_string(), Value::Object(entry));
    }
    let (servers, more) = parse(&Value::Object(map), ServerSource::Client);
    problems.extend(more);
    (servers, problems)
}

/// `extra` added to `base`; an entry of `extra` replaces `base`'s entry of the same name
/// (an ACP client's server wins over the settings' one).
pub fn overlay(base: &[ServerConfig], extra: &[ServerConfig]) -> Vec<ServerConfig> {
    let mut out: Vec<ServerConfig> = base
        .iter()
        .filter(|b| !extra.iter().any(|e| e.name == b.name))
        .cloned()
        .collect();
    out.extend(extra.iter().cloned());
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn server(name: &str, entry: &Value, source: ServerSource) -> Result<ServerConfig, String> {
    if name.is_empty() {
        return Err("a server needs a name".into());
    }
    let Value::Object(entry) = entry else {
        return Err(format!("must be an object, got {}", kind(entry)));
    };
    let kind_field = optional_string(entry, "type")?;
    let transport = match kind_field.as_deref() {
        Some("http") | Some("streamable-http") | Some("streamableHttp") => http(entry)?,
        None if entry.contains_key("url") && !entry.contains_key("command") => http(entry)?,
        Some("stdio") | None => stdio(entry)?,
        Some("sse") => {
            return Err(
                "type \"sse\" (the deprecated HTTP+SSE transport) is not supported; \
                 use \"http\" (streamable HTTP)"
                    .into(),
            )
        }
        Some(other) => return Err(format!("unknown type {other:?} (stdio or http)")),
    };
    let enabled = match entry.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("enabled must be a boolean, got {}", kind(other))),
    };
    // Claude Code's `disabled: true` (Cursor, Cline) means the same.
    let enabled = enabled && !matches!(entry.get("disabled"), Some(Value::Bool(true)));
    let call_timeout = millis(entry, "timeoutMs")?.unwrap_or(DEFAULT_CALL_TIMEOUT);
    let startup_timeout = millis(entry, "startupTimeoutMs")?.unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    let (allow, deny) = match entry.get("tools") {
        None | Some(Value::Null) => (None, Vec::new()),
        Some(Value::Object(tools)) => {
            let allow = match tools.get("allow") {
                None | Some(Value::Null) => None,
                Some(v) => Some(strings(v, "tools.allow")?),
            };
            let deny = match tools.get("deny") {
                None | Some(Value::Null) => Vec::new(),
                Some(v) => strings(v, "tools.deny")?,
            };
            (allow, deny)
        }
        Some(other) => return Err(format!("tools must be an object, got {}", kind(other))),
    };
    let trust = match optional_string(entry, "trust")?.as_deref() {
        None | Some("ask") => Trust::Ask,
        Some("readOnly") => Trust::ReadOnly,
        Some(other) => return Err(format!("unknown trust {other:?} (ask or readOnly)")),
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled,
        call_timeout,
        startup_timeout,
        allow,
        deny,
        trust,
        source,
    })
}

fn stdio(entry: &Map<String, Value>) -> Result<Transport, String> {
    let command = optional_string(entry, "command")?
        .filter(|c| !c.trim().is_empty())
        .ok_or("a stdio server needs a command")?;
    let args = match entry.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => strings(v, "args")?,
    };
    Ok(Transport::Stdio {
        command,
        args,
        env: pairs(entry, "env")?,
        cwd: optional_string(entry, "cwd")?,
    })
}

fn http(entry: &Map<String, Value>) -> Result<Transport, String> {
    let url = optional_string(entry, "url")?.ok_or("an http server needs a url")?;
    if !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("${")) {
        return Err(format!("url {url:?} is not an http(s) URL"));
    }
    Ok(Transport::Http {
        url,
        headers: pairs(entry, "headers")?,
    })
}

fn optional_string(entry: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("{key} must be a string, got {}", kind(other))),
    }
}

fn strings(value: &Value, key: &str) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "{key} must be an array of strings, got {}",
            kind(value)
        ));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!("{key} must hold strings, got {}", kind(other))),
        })
        .collect()
}

fn pairs(entry: &Map<String, Value>, key: &str) -> Result<Vec<(String, String)>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                other => Err(format!("{key}.{k} must be a string, got {}", kind(other))),
            })
            .collect(),
        Some(other) => Err(format!("{key} must be an object, got {}", kind(other))),
    }
}

fn millis(entry: &Map<String, Value>, key: &str) -> Result<Option<Duration>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| *n > 0)
            .map(|n| Some(Duration::from_millis(n)))
            .ok_or_else(|| format!("{key} must be a positive integer, got {v}")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `text` with each `${VAR}` replaced by `lookup(VAR)` and `${VAR:-default}` by the default
/// when VAR is unset or empty. An unset variable without a default is an error naming it (the
/// server does not start with a half-built key); `$$` is not special, only `${`.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed ${{ in {text:?}"));
        };
        let reference = &after[..end];
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("${{{reference}}} is not a variable name"));
        }
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("environment variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The transport with every `${VAR}` expanded (command, args, env values, cwd, url, header
/// values).
pub fn expand_transport(
    transport: &Transport,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Transport, String> {
    let pairs = |pairs: &[(String, String)]| -> Result<Vec<(String, String)>, String> {
        pairs
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand(v, lookup)?)))
            .collect()
    };
    Ok(match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => Transport::Stdio {
            command: expand(command, lookup)?,
            args: args
                .iter()
                .map(|a| expand(a, lookup))
                .collect::<Result<_, _>>()?,
            env: pairs(env)?,
            cwd: cwd.as_deref().map(|c| expand(c, lookup)).transpose()?,
        },
        Transport::Http { url, headers } => Transport::Http {
            url: expand(url, lookup)?,
            headers: pairs(headers)?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_shapes_parse_and_bad_entries_are_reported_alone() {
        let value = json!({"mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
            "docs": {"type": "http", "url": "https://example.com/mcp",
                     "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "bare": {"url": "http://localhost:3001/mcp"},
            "off": {"command": "x", "enabled": false, "trust": "readOnly",
                    "timeoutMs": 5000, "tools": {"allow": ["a", "b"], "deny": ["b"]}},
            "broken": {"args": []},
            "old": {"type": "sse", "url": "http://x"},
            "weird": {"command": "x", "trust": "always"}
        }});
        let (servers, problems) = parse(&value, ServerSource::Workspace);
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["bare", "docs", "off", "time"]);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("mcpServers.broken: a stdio server needs a command"));
        assert!(problems[1].contains("sse"));
        assert!(problems[2].contains("unknown trust"));
        let off = &servers[2];
        assert!(!off.enabled);
        assert_eq!(off.trust, Trust::ReadOnly);
        assert_eq!(off.call_timeout, Duration::from_millis(5000));
        assert!(off.offers("a") && !off.offers("b") && !off.offers("c"));
        assert_eq!(servers[3].call_timeout, DEFAULT_CALL_TIMEOUT);
        assert!(servers[3].offers("anything"));
        assert!(matches!(servers[0].transport, Transport::Http { .. }));
        assert_eq!(servers[3].describe(), "uvx mcp-server-time");
        assert!(!servers[1].fingerprint().contains("secret"));
    }

    #[test]
    fn a_client_entry_wins_over_a_settings_entry_of_the_same_name() {
        let (base, _) = parse(
            &json!({"a": {"command": "one"}, "b": {"command": "two"}}),
            ServerSource::Settings,
        );
        let (extra, _) = parse(&json!({"b": {"command": "three"}}), ServerSource::Client);
        let all = overlay(&base, &extra);
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].describe(), "three");
        assert_eq!(all[1].source, ServerSource::Client);
    }

    #[test]
    fn an_acp_clients_servers_are_read_from_its_array_shape() {
        let (servers, problems) = parse_acp(&json!([
            {"name": "fs", "command": "/bin/mcp-fs", "args": ["--root", "/w"],
             "env": [{"name": "TOKEN", "value": "t"}]},
            {"type": "http", "name": "web", "url": "https://x/mcp",
             "headers": [{"name": "Authorization", "value": "Bearer t"}]},
            {"command": "nameless"}
        ]));
        assert_eq!(problems, ["an MCP server without a name skipped"]);
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].source, ServerSource::Client);
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "/bin/mcp-fs".into(),
                args: vec!["--root".into(), "/w".into()],
                env: vec![("TOKEN".into(), "t".into())],
                cwd: None,
            }
        );
        assert_eq!(
            servers[1].transport,
            Transport::Http {
                url: "https://x/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer t".into())],
            }
        );
    }

    #[test]
    fn variables_expand_with_defaults_and_an_unset_one_is_an_error() {
        let lookup = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
        assert_eq!(expand("Bearer ${TOKEN}", &lookup).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${PORT:-3001}/x", &lookup).unwrap(), "3001/x");
        assert_eq!(
            expand("${MISSING}", &lookup).unwrap_err(),
            "environment variable MISSING is not set"
        );
        assert!(expand("${open", &lookup).is_err());
        assert_eq!(expand("no vars $HOME", &lookup).unwrap(), "no vars $HOME");
        let t = Transport::Http {
            url: "https://x/${TOKEN}".into(),
            headers: vec![("A".into(), "${TOKEN}".into())],
        };
        assert_eq!(
            expand_transport(&t, &lookup).unwrap(),
            Transport::Http {
                url: "https://x/s3cret".into(),
                headers: vec![("A".into(), "s3cret".into())],
            }
        );
    }

    #[test]
    fn a_non_object_is_one_problem() {
        let (servers, problems) = parse(&json!([1]), ServerSource::Settings);
        assert!(servers.is_empty());
        assert_eq!(problems, ["mcpServers must be an object, got an array"]);
    }

    #[test]
    fn env_and_header_values_are_the_secrets_to_cut() {
        let stdio = Transport::Stdio {
            command: "srv".into(),
            args: vec!["--flag".into()],
            env: vec![("TOKEN".into(), "t-123456789".into())],
            cwd: None,
        };
        assert_eq!(stdio.secret_values(), ["t-123456789"]);
        let http = Transport::Http {
            url: "https://x".into(),
            headers: vec![("Authorization".into(), "Bearer abcdefgh".into())],
        };
        assert_eq!(http.secret_values(), ["Bearer abcdefgh"]);
    }

    #[test]
    fn trust_and_tools_are_part_of_what_an_approval_is_for() {
        let entry = |extra: Value| {
            let mut entry = json!({"command": "srv", "env": {"A": "${TOKEN}"}});
            entry
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            parse(&json!({ "s": entry }), ServerSource::Workspace)
                .0
                .remove(0)
        };
        let plain = entry(json!({})).fingerprint();
        assert_eq!(plain, entry(json!({"trust": "ask"})).fingerprint());
        for changed in [
            json!({"trust": "readOnly"}),
            json!({"tools": {"allow": ["a"]}}),
            json!({"tools": {"deny": ["a"]}}),
            json!({"args": ["x"]}),
            json!({"cwd": "/tmp"}),
            json!({"env": {"A": "${OTHER}"}}),
        ] {
            assert_ne!(plain, entry(changed.clone()).fingerprint(), "{changed}");
        }
    }

    #[test]
    fn only_a_settings_entry_may_name_a_secret_and_the_reason_names_field_and_variable() {
        let text = json!({"w": {"command": "srv", "args": ["--key=${DEMO_KEY}"],
                                 "env": {"TZ": "${TZ}", "X": "a ${OPENAI_API_KEY:-none}"}},
                          "h": {"url": "https://x/mcp", "headers": {"Auth": "Bearer ${OPENAI_API_KEY}"}}});
        let is_secret = |name: &str| name.ends_with("_KEY");
        let (workspace, _) = parse(&text, ServerSource::Workspace);
        assert_eq!(
            workspace[1].secret_reference(&is_secret).unwrap(),
            "not started: args[0] of the workspace entry w asks for ${DEMO_KEY}, one of \
             agentls's secrets, which only the user's settings may pass to an MCP server"
        );
        assert!(workspace[0]
            .secret_reference(&is_secret)
            .unwrap()
            .starts_with(
                "not started: headers.Auth of the workspace entry h asks for ${OPENAI_API_KEY}"
            ));
        let (client, _) = parse(&text, ServerSource::Client);
        assert!(client[1].secret_reference(&is_secret).is_some());
        let (settings, _) = parse(&text, ServerSource::Settings);
        assert!(settings
            .iter()
            .all(|s| s.secret_reference(&is_secret).is_none()));
        assert_eq!(
            workspace[1].transport.references(),
            [
                ("args[0]".to_string(), "DEMO_KEY".to_string()),
                ("env.TZ".to_string(), "TZ".to_string()),
                ("env.X".to_string(), "OPENAI_API_KEY".to_string()),
            ]
        );
    }

    #[test]
    fn the_approval_shows_the_whole_entry_with_literal_secrets_masked() {
        let (servers, _) = parse(
            &json!({"s": {"command": "srv", "args": ["-v"], "cwd": "sub",
                          "env": {"TZ": "UTC", "API_TOKEN": "lit-${T}-eral", "B": "${OPENAI_API_KEY}"},
                          "trust": "readOnly", "tools": {"deny": ["rm"]}},
                    "h": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer sk-literal"}}}),
            ServerSource::Workspace,
        );
        let (input, details) = servers[1].approval_input(".mcp.json");
        assert_eq!(
            input["env"],
            json!({"API_TOKEN": "…${T}…", "B": "${OPENAI_API_KEY}", "TZ": "UTC"})
        );
        assert_eq!(input["args"], json!(["-v"]));
        assert_eq!(input["trust"], "readOnly");
        assert_eq!(input["tools"], json!({"allow": null, "deny": ["rm"]}));
        assert_eq!(
            details,
            "command: srv -v\ncwd: sub\nenv: API_TOKEN=…${T}…\nenv: B=${OPENAI_API_KEY}\n\
             env: TZ=UTC\ntrust: readOnly\ntools.deny: rm"
        );
        let (input, details) = servers[0].approval_input(".mcp.json");
        assert_eq!(input["headers"], json!(["Authorization"]));
        assert!(!input.to_string().contains("sk-literal"), "{input}");
        assert_eq!(
            details,
            "url: https://x/mcp\nheader: Authorization: …\ntrust: ask"
        );
        assert_eq!(mask_literals("${A}${B}"), "${A}${B}");
        assert_eq!(mask_literals(""), "");
    }
}
