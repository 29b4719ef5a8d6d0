//! The Agent Client Protocol's view of the agent: pure mappings between what the agent loop
//! says (the `agent/session/update` payloads of the LSP mode, the transcript of a session)
//! and ACP's wire shapes (protocol version 1). `agentls acp` (server `acp/`) does the IO;
//! every decision about what a client sees is here.
//!
//! The shapes are written as JSON here rather than taken from the
//! `agent-client-protocol-schema` crate: that crate turns on serde_json's `preserve_order`,
//! which Cargo unifies over the workspace and which reorders every JSON object agentls
//! writes (see ARCHITECTURE.md). The end-to-end tests (`scripts/acp-test`) check every
//! message against the official TypeScript library's schema validation.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::session::TranscriptItem;
use crate::tool_info::{PlanEntry, ToolKind};
use crate::updates::{
    AgentStatus, CompactionPhase, FileDiff, PermissionToolCall, StopReason, ToolLocation,
    ToolStatus, Update,
};

/// The approval policies (`approval::POLICIES`, in that order), offered as ACP session
/// modes: (id, name, description).
pub const MODES: [(&str, &str, &str); 4] = [
    (
        "ask",
        "Ask",
        "Ask before every edit and command (reads run freely)",
    ),
    (
        "auto-edit",
        "Auto-edit",
        "Edit files without asking; ask before commands",
    ),
    (
        "full-auto",
        "Full auto",
        "Run edits and commands without asking",
    ),
    (
        "plan",
        "Plan",
        "Read-only: explore and plan; no edits, commands ask and run in a read-only sandbox",
    ),
];

/// `SessionModeState`: the session modes announced in `session/new`, `current` selected.
pub fn modes(current: &str) -> Value {
    json!({
        "currentModeId": current,
        "availableModes": MODES
            .iter()
            .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
            .collect::<Vec<_>>(),
    })
}

/// Whether `id` names a mode (an approval policy).
pub fn is_mode(id: &str) -> bool {
    MODES.iter().any(|(mode, _, _)| *mode == id)
}

/// Models offered in the model picker for a provider kind (the configured one first).
pub fn known_models(provider_kind: &str, configured: &str) -> Vec<String> {
    let listed = crate::provider_kind::Preset::named(provider_kind).map_or(&[][..], |p| p.models);
    let mut models = vec![configured.to_string()];
    models.extend(listed.iter().map(|m| m.to_string()));
    models.retain(|m| !m.is_empty());
    let mut seen = std::collections::HashSet::new();
    models.retain(|m| seen.insert(m.clone()));
    models
}

/// The session config options (`SessionConfigOption`s): the mode (approval policy) and the
/// model.
pub fn config_options(mode: &str, model: &str, models: &[String]) -> Value {
    let modes: Vec<Value> = MODES
        .iter()
        .map(|(id, name, description)| json!({"value": id, "name": name, "description": description}))
        .collect();
    let models: Vec<Value> = models
        .iter()
        .map(|m| json!({"value": m, "name": m}))
        .collect();
    json!([
        {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": mode, "options": modes},
        {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": model, "options": models},
    ])
}

/// A time in milliseconds since the Unix epoch as RFC 3339 (UTC), as `SessionInfo.updatedAt`.
pub fn rfc3339(ms: u64) -> String {
    let seconds = ms / 1000;
    let day = seconds % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        crate::environment::civil_date((seconds / 86_400) as i64),
        day / 3600,
        day % 3600 / 60,
        day % 60
    )
}

/// The slash commands of a session (`commands::infos`: the built-in ones, then the custom
/// ones) as `AvailableCommand`s.
pub fn available_commands(commands: &[crate::commands::CommandInfo]) -> Vec<Value> {
    commands
        .iter()
        .map(|info| {
            let mut command = json!({"name": info.name, "description": info.description});
            if let Some(hint) = &info.argument_hint {
                command["input"] = json!({"hint": hint});
            }
            command
        })
        .collect()
}

/// The ACP status of a tool status named as on the wire (anything else is `pending`).
fn tool_status(status: &str) -> &'static str {
    ToolStatus::deserialize(&json!(status)).map_or("pending", acp_tool_status)
}

fn acp_tool_status(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Pending => "pending",
        ToolStatus::InProgress => "in_progress",
        ToolStatus::Completed => "completed",
        ToolStatus::Failed => "failed",
    }
}

/// ACP's kinds are agentls's, by name.
fn acp_tool_kind(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Search => "search",
        ToolKind::Edit => "edit",
        ToolKind::Execute => "execute",
        ToolKind::Other => "other",
    }
}

/// `locations` as agentls sends them (absolute paths, 1-based lines) in ACP's shape (0-based
/// lines, as ACP clients jump to them). None when there are none to show.
fn acp_locations(list: &[ToolLocation]) -> Option<Value> {
    if list.is_empty() {
        return None;
    }
    Some(Value::Array(
        list.iter()
            .map(|location| {
                let mut out = json!({"path": location.path});
                if let Some(line) = location.line {
                    out["line"] = json!(line.saturating_sub(1));
                }
                out
            })
            .collect(),
    ))
}

/// An edit's change as a diff content item.
fn diff_content(diff: &FileDiff) -> Value {
    let mut item = json!({"type": "diff", "path": diff.path, "newText": diff.new_text});
    if let Some(old) = &diff.old_text {
        item["oldText"] = json!(old);
    }
    item
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": text_block(text)})
}

fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": text_block(text)})
}

/// The `session/update` an agentls update becomes; None for the ones ACP has no place for
/// (`turnEnd` answers the prompt request instead; `queued`, `hook`, `reminder` are the
/// LSP panels' own).
pub fn session_update(update: &Update) -> Option<Value> {
    match update {
        Update::AgentMessageChunk { text } => Some(chunk("agent_message_chunk", text)),
        Update::AgentThoughtChunk { text } => Some(chunk("agent_thought_chunk", text)),
        Update::ToolCall {
            tool_call_id,
            title,
            tool_kind,
            status,
            input,
            locations,
            ..
        } => {
            let mut call = json!({
                "sessionUpdate": "tool_call",
                "toolCallId": tool_call_id,
                "title": title,
                "kind": acp_tool_kind(*tool_kind),
                "status": acp_tool_status(*status),
                "rawInput": input,
            });
            if let Some(locations) = acp_locations(locations) {
                call["locations"] = locations;
            }
            Some(call)
        }
        Update::ToolCallUpdate {
            tool_call_id,
            status,
            output,
            diff,
        } => Some(tool_call_update(
            tool_call_id,
            *status,
            output.as_deref(),
            diff.as_ref(),
        )),
        Update::Plan { entries } => Some(plan(entries)),
        Update::Warning { message } => Some(chunk(
            "agent_message_chunk",
            &format!("\n\n> agentls: {message}\n\n"),
        )),
        Update::Error { message, .. } => Some(chunk(
            "agent_message_chunk",
            &format!("\n\n> agentls error: {message}\n\n"),
        )),
        Update::Compaction {
            phase,
            tokens_before,
            tokens_after,
            message,
            ..
        } => Some(chunk(
            "agent_message_chunk",
            &compaction_message(*phase, *tokens_before, *tokens_after, message.as_deref()),
        )),
        Update::Queued
        | Update::Hook(_)
        | Update::Reminder(_)
        | Update::TurnEnd { .. }
        | Update::Queue { .. }
        | Update::Steered { .. }
        | Update::Background { .. } => None,
    }
}

/// A call's `tool_call_update`: an edit's diff, and the output once the call is done.
fn tool_call_update(
    tool_call_id: &str,
    status: ToolStatus,
    output: Option<&str>,
    diff: Option<&FileDiff>,
) -> Value {
    let mut out = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": tool_call_id,
        "status": acp_tool_status(status),
    });
    let mut content: Vec<Value> = diff.map(diff_content).into_iter().collect();
    // Streamed output chunks stay in the LSP mode's panels (an ACP content list replaces
    // the previous one); the final output is sent whole.
    let done = matches!(status, ToolStatus::Completed | ToolStatus::Failed);
    if let Some(output) = output.filter(|_| done) {
        content.push(text_content(output));
    }
    if !content.is_empty() {
        out["content"] = Value::Array(content);
    }
    out
}

/// A compaction as a message (for clients without the `compaction_update` kind).
fn compaction_message(
    phase: CompactionPhase,
    tokens_before: usize,
    tokens_after: Option<usize>,
    message: Option<&str>,
) -> String {
    match phase {
        CompactionPhase::Started => {
            format!("\n\n> agentls: compacting the conversation ({tokens_before} tokens)…\n\n")
        }
        CompactionPhase::Completed => format!(
            "\n\n> agentls: conversation compacted: {tokens_before} → {} tokens\n\n",
            tokens_after.unwrap_or(0)
        ),
        CompactionPhase::Failed => format!(
            "\n\n> agentls: compaction failed: {}\n\n",
            message.unwrap_or("")
        ),
    }
}

/// A compaction as `compaction_update` (for clients that advertise
/// `clientCapabilities.session.compaction`): `compaction_id` names it from its start to its
/// end. None for what is not a compaction.
pub fn compaction_update(update: &Update, compaction_id: &str) -> Option<Value> {
    let Update::Compaction { phase, message, .. } = update else {
        return None;
    };
    let status = match phase {
        CompactionPhase::Started => "in_progress",
        CompactionPhase::Completed => "completed",
        CompactionPhase::Failed => "failed",
    };
    let mut out = json!({
        "sessionUpdate": "compaction_update",
        "compactionId": compaction_id,
        "status": status,
    });
    if let Some(message) = message.as_deref().filter(|_| status == "failed") {
        out["error"] = json!(message);
    }
    Some(out)
}

fn plan(entries: &[PlanEntry]) -> Value {
    let entries: Vec<Value> = entries
        .iter()
        .map(|entry| {
            let status = match entry.status.as_str() {
                "completed" => "completed",
                "in_progress" => "in_progress",
                _ => "pending",
            };
            json!({
                "content": entry.content,
                "priority": "medium",
                "status": status,
            })
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// `usage_update {used, size}` from an `agent/status` payload.
pub fn usage_update(status: &AgentStatus) -> Value {
    json!({"sessionUpdate": "usage_update", "used": status.used_tokens, "size": status.context_window})
}

/// `current_mode_update`.
pub fn mode_update(mode: &str) -> Value {
    json!({"sessionUpdate": "current_mode_update", "currentModeId": mode})
}

/// `available_commands_update` with the session's slash commands.
pub fn commands_update(commands: &[crate::commands::CommandInfo]) -> Value {
    json!({"sessionUpdate": "available_commands_update", "availableCommands": available_commands(commands)})
}

/// `terminal/create` params for a `shell` command: the command through `sh -c` in `cwd`,
/// the hidden variables set empty, the output kept to `max_output_bytes`.
pub fn terminal_create(
    session_id: &str,
    command: &str,
    cwd: &Path,
    hidden_env: &[String],
    max_output_bytes: usize,
    launcher: Option<(&str, Vec<String>)>,
) -> Value {
    let env: Vec<Value> = hidden_env
        .iter()
        .map(|name| json!({"name": name, "value": ""}))
        .collect();
    let shell_args = ["sh".to_string(), "-c".to_string(), command.to_string()];
    // A sandboxed command runs through its launcher (`agentls sandbox --policy … --`).
    let (program, args) = match launcher {
        Some((program, mut args)) => {
            args.extend(shell_args);
            (program.to_string(), args)
        }
        None => (shell_args[0].clone(), shell_args[1..].to_vec()),
    };
    json!({
        "sessionId": session_id,
        "command": program,
        "args": args,
        "cwd": cwd,
        "env": env,
        "outputByteLimit": max_output_bytes,
    })
}

/// The `tool_call_update` that shows a call's terminal.
pub fn terminal_update(tool_call_id: &str, terminal_id: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": tool_call_id,
        "status": "in_progress",
        "content": [{"type": "terminal", "terminalId": terminal_id}],
    })
}

/// Keeps a call's terminal first in the content of its later updates (an ACP content list
/// replaces the one before).
pub fn embed_terminal(update: &mut Value, terminal_id: &str) {
    if update["sessionUpdate"] != "tool_call_update" {
        return;
    }
    let terminal = json!({"type": "terminal", "terminalId": terminal_id});
    match update["content"].as_array_mut() {
        Some(content) => content.insert(0, terminal),
        None => update["content"] = json!([terminal]),
    }
}

/// How much of a terminal's earlier output anchors the search for where it was last read.
const TERMINAL_ANCHOR_BYTES: usize = 64;
/// At most this many places of the anchor are checked (a repetitive log has many).
const TERMINAL_ANCHOR_TRIES: usize = 16;

/// What a client terminal printed since it was last read: `seen` is its output then and
/// `now` its output now (`terminal/output`). A terminal's output only grows at its end, but
/// the client drops its start beyond `outputByteLimit`, so `now` may begin inside `seen`.
/// Returns the new text and whether some of it may be lost (the client dropped output
/// that was never read; the whole of `now` is then new).
pub fn terminal_news<'a>(seen: &str, now: &'a str) -> (&'a str, bool) {
    if let Some(rest) = now.strip_prefix(seen) {
        return (rest, false);
    }
    let start = crate::position::ceil_char_boundary(
        seen,
        seen.len() - seen.len().min(TERMINAL_ANCHOR_BYTES),
    );
    let anchor = &seen[start..];
    // The latest place where `now`'s beginning is the end of `seen`: the least new text.
    let mut limit = now.len();
    for _ in 0..TERMINAL_ANCHOR_TRIES {
        let Some(at) = now[..limit].rfind(anchor) else {
            break;
        };
        let end = at + anchor.len();
        if seen.ends_with(&now[..end]) {
            return (&now[end..], false);
        }
        limit = crate::position::floor_char_boundary(now, end - 1);
    }
    (now, true)
}

/// (exit code, signal) of a `TerminalExitStatus` (`{exitCode?, signal?}`).
pub fn exit_status(status: &Value) -> (Option<i32>, Option<String>) {
    (
        status["exitCode"]
            .as_u64()
            .and_then(|c| i32::try_from(c).ok()),
        status["signal"].as_str().map(str::to_string),
    )
}

/// How a turn ended, as the prompt's `stopReason`: Err for a turn that failed (ACP has no
/// stop reason for an error: the prompt request gets a JSON-RPC error).
pub fn stop_reason(reason: StopReason) -> Result<&'static str, String> {
    match reason {
        StopReason::EndTurn => Ok("end_turn"),
        StopReason::Cancelled => Ok("cancelled"),
        StopReason::MaxSteps => Ok("max_turn_requests"),
        StopReason::Error => Err("the turn ended with error".to_string()),
    }
}

/// The ACP kind of an agentls permission option kind (`allowOnce` → `allow_once`).
pub fn acp_permission_kind(kind: &str) -> &'static str {
    match kind {
        "allowOnce" => "allow_once",
        "allowAlways" => "allow_always",
        "rejectOnce" => "reject_once",
        _ => "reject_always",
    }
}

/// `session/request_permission` params from the LSP mode's permission request: the tool
/// call as a `ToolCallUpdate` (the edit's diff, else the details, as its content), the
/// options with ACP's kinds.
pub fn permission_request(
    session_id: &str,
    tool_call: &PermissionToolCall,
    options: &[(String, String, String)],
) -> Value {
    let mut call = json!({
        "toolCallId": tool_call.tool_call_id,
        "title": tool_call.title,
        "kind": acp_tool_kind(tool_call.kind),
        "status": "pending",
        "rawInput": tool_call.input,
    });
    if let Some(diff) = &tool_call.edit {
        call["content"] = json!([diff_content(diff)]);
    } else if let Some(details) = &tool_call.details {
        // A workspace MCP server's whole entry, shown as text where clients show content.
        call["content"] = json!([text_content(details)]);
    }
    if let Some(locations) = &tool_call.locations {
        call["locations"] = acp_locations(locations).unwrap_or_else(|| json!([]));
    }
    let options: Vec<Value> = options
        .iter()
        .map(|(id, kind, name)| json!({"optionId": id, "name": name, "kind": acp_permission_kind(kind)}))
        .collect();
    json!({"sessionId": session_id, "toolCall": call, "options": options})
}

/// The chosen option id of a `session/request_permission` answer; None when cancelled or
/// not understood.
pub fn permission_choice(answer: &Value) -> Option<&str> {
    match answer["outcome"]["outcome"].as_str() {
        Some("selected") => answer["outcome"]["optionId"].as_str(),
        _ => None,
    }
}

/// ACP's `messageId` of message chunks: the chunks of one message share an id; a new one
/// starts with a new turn, after any other update (a tool call), or when agent text turns
/// into thought or back.
#[derive(Debug, Default)]
pub struct MessageIds {
    /// The turn, the chunk kind and the id of the message being streamed.
    current: Option<(String, String, String)>,
    count: u64,
}

impl MessageIds {
    /// Sets `messageId` on `update` (an ACP `session/update`'s `update`) when it is a
    /// message chunk; any other update ends the current message.
    pub fn assign(&mut self, turn_id: &str, update: &mut Value) {
        let kind = update["sessionUpdate"].as_str().unwrap_or_default();
        if !matches!(kind, "agent_message_chunk" | "agent_thought_chunk") {
            self.current = None;
            return;
        }
        let same = matches!(&self.current, Some((turn, k, _)) if turn == turn_id && k == kind);
        if !same {
            self.count += 1;
            let id = format!("{turn_id}-m{}", self.count);
            self.current = Some((turn_id.to_string(), kind.to_string(), id));
        }
        if let Some((_, _, id)) = &self.current {
            update["messageId"] = json!(id);
        }
    }
}

/// `session_info_update`: the session's title (its first message, shortened).
pub fn session_info_update(title: &str) -> Value {
    json!({"sessionUpdate": "session_info_update", "title": title})
}

/// A prompt content block (`ContentBlock`), as far as agentls reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ResourceLink {
        name: String,
        uri: String,
    },
    Resource {
        resource: EmbeddedResource,
    },
    /// ACP's `ImageContent`: base64 `data` and its `mimeType` (a `uri` is not read).
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Audio {},
}

/// The prompt's images as `(mimeType, base64 data)`, in order: the turn checks them
/// (format, size, count) and refuses them for a model that takes none.
pub fn prompt_images(blocks: &[ContentBlock]) -> Vec<(String, String)> {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image { data, mime_type } => Some((mime_type.clone(), data.clone())),
            _ => None,
        })
        .collect()
}

/// An embedded resource's contents: text, or a binary `blob`.
#[derive(Debug, Clone, Deserialize)]
pub struct EmbeddedResource {
    pub uri: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// The text of a prompt's content blocks: text as it is; a `resource_link` to a file under
/// `root` becomes an `@path` mention (attached by the turn as untrusted data, like the
/// LSP mode's mentions); other links are named; an embedded text resource becomes an
/// `<attached_resource>` block labelled untrusted, introduced by `data_boundary`; images
/// are the prompt's images (`prompt_images`), not text. Blocks the agent cannot take
/// (audio, binary resources) are listed in the Err.
pub fn prompt_text(
    blocks: &[ContentBlock],
    root: &Path,
    data_boundary: &str,
) -> Result<String, String> {
    let mut text = String::new();
    let mut resources = String::new();
    let mut refused = Vec::new();
    let separate = |text: &mut String| {
        if !text.is_empty() && !text.ends_with(char::is_whitespace) {
            text.push(' ');
        }
    };
    for block in blocks {
        match block {
            ContentBlock::Text { text: content } => {
                separate(&mut text);
                text.push_str(content);
            }
            ContentBlock::ResourceLink { name, uri } => {
                let mention = file_path(uri)
                    .and_then(|path| path.strip_prefix(root).ok().map(Path::to_path_buf))
                    .map(|rel| format!("@{}", rel.display()));
                separate(&mut text);
                match mention {
                    Some(mention) => text.push_str(&mention),
                    None => text.push_str(&format!("[{name}]({uri})")),
                }
            }
            ContentBlock::Resource { resource } => match &resource.text {
                Some(contents) => resources.push_str(&format!(
                    "<attached_resource uri=\"{}\" trust=\"untrusted\">\n{}\n</attached_resource>\n",
                    resource.uri.replace('"', "&quot;"),
                    contents
                )),
                None => refused.push("a binary resource"),
            },
            ContentBlock::Image { .. } => {}
            ContentBlock::Audio {} => refused.push("audio"),
        }
    }
    if !refused.is_empty() {
        return Err(format!(
            "agentls cannot take {} in a prompt (text, resource links and embedded text resources only)",
            refused.join(", ")
        ));
    }
    if !resources.is_empty() {
        text = format!(
            "{text}\n\n<attached_resources>\n{data_boundary}\n{resources}</attached_resources>"
        );
    }
    Ok(text)
}

/// The path of a `file://` URI.
pub fn file_path(uri: &str) -> Option<PathBuf> {
    let url = lsp_types::Url::parse(uri).ok()?;
    url.to_file_path().ok()
}

/// A session's history replayed as `session/update`s (for `session/load`).
pub fn replay(items: &[TranscriptItem]) -> Vec<Value> {
    let mut updates = Vec::new();
    for item in items {
        match item {
            TranscriptItem::User { text, .. } => updates.push(chunk("user_message_chunk", text)),
            TranscriptItem::Assistant { text } => {
                updates.push(chunk("agent_message_chunk", text))
            }
            TranscriptItem::ToolCall {
                tool_call_id,
                title,
                tool_kind: kind,
                input,
                status,
                output,
                ..
            } => {
                let mut call = json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": tool_call_id,
                    "title": title,
                    "kind": acp_tool_kind(*kind),
                    "status": tool_status(status),
                    "rawInput": input,
                });
                if let Some(output) = output {
                    call["content"] = json!([text_content(output)]);
                }
                updates.push(call);
            }
            TranscriptItem::Plan { entries } => {
                updates.push(plan(entries))
            }
            TranscriptItem::Compaction {
                tokens_before,
                tokens_after,
                ..
            } => updates.push(chunk(
                "agent_message_chunk",
                &format!(
                    "\n\n> agentls: conversation compacted: {tokens_before} → {tokens_after} tokens\n\n"
                ),
            )),
            TranscriptItem::Error { message } => updates.push(chunk(
                "agent_message_chunk",
                &format!("\n\n> agentls error: {message}\n\n"),
            )),
            // Live, ACP has no update for these either.
            TranscriptItem::Hook(_) | TranscriptItem::Reminder(_) => {}
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;
    use serde_json::{json, Map};

    #[test]
    fn terminal_news_is_what_follows_the_last_read() {
        assert_eq!(terminal_news("", "one\n"), ("one\n", false));
        assert_eq!(terminal_news("one\n", "one\ntwo\n"), ("two\n", false));
        assert_eq!(terminal_news("one\n", "one\n"), ("", false));
        // The client dropped the start (its outputByteLimit): the read ends where `seen` did.
        let seen = format!("{}end\n", "é".repeat(100));
        let now = format!("{}more", &seen[20..]);
        assert_eq!(terminal_news(&seen, &now), ("more", false));
        let seen: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let now = format!("{}line 200\n", &seen[900..]);
        assert_eq!(terminal_news(&seen, &now), ("line 200\n", false));
        // A repetitive log: the latest consistent place, the least new text.
        let seen = format!("ab{}", "x".repeat(300));
        assert_eq!(
            terminal_news(&seen, &format!("{}y", "x".repeat(300))),
            ("y", false)
        );
        // Nothing of what was read is left: all of it is new, and some may be lost.
        assert_eq!(terminal_news("old\n", "new\n"), ("new\n", true));
    }

    /// An update as the editor would receive it.
    fn typed(wire: Value) -> Update {
        serde_json::from_value(wire).unwrap()
    }

    fn wire(update: Option<Value>) -> String {
        serde_json::to_string(&update).unwrap()
    }

    #[test]
    fn message_and_thought_chunks_are_text_blocks() {
        expect![[
            r#"{"content":{"text":"Hi","type":"text"},"sessionUpdate":"agent_message_chunk"}"#
        ]]
        .assert_eq(&wire(session_update(&typed(
            json!({"kind": "agentMessageChunk", "text": "Hi"}),
        ))));
        expect![[
            r#"{"content":{"text":"hmm","type":"text"},"sessionUpdate":"agent_thought_chunk"}"#
        ]]
        .assert_eq(&wire(session_update(&typed(
            json!({"kind": "agentThoughtChunk", "text": "hmm"}),
        ))));
    }

    #[test]
    fn a_tool_call_carries_kind_status_and_locations() {
        let update = typed(json!({
            "kind": "toolCall", "toolCallId": "c1", "name": "read_file", "title": "Read a.rs",
            "toolKind": "read", "status": "pending", "input": {"path": "a.rs"},
            "locations": [{"path": "/w/a.rs", "line": 3}],
        }));
        expect![[r#"{"kind":"read","locations":[{"line":2,"path":"/w/a.rs"}],"rawInput":{"path":"a.rs"},"sessionUpdate":"tool_call","status":"pending","title":"Read a.rs","toolCallId":"c1"}"#]]
            .assert_eq(&wire(session_update(&update)));
    }

    #[test]
    fn an_edit_update_carries_its_diff_and_the_final_output() {
        let update = typed(json!({
            "kind": "toolCallUpdate", "toolCallId": "c2", "status": "completed",
            "output": "edited a.rs",
            "diff": {"path": "/w/a.rs", "oldText": "a\n", "newText": "b\n"},
        }));
        expect![[r#"{"content":[{"newText":"b\n","oldText":"a\n","path":"/w/a.rs","type":"diff"},{"content":{"text":"edited a.rs","type":"text"},"type":"content"}],"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"c2"}"#]]
            .assert_eq(&wire(session_update(&update)));
        // A streamed chunk of output is not sent as the call's content.
        let streaming = typed(
            json!({"kind": "toolCallUpdate", "toolCallId": "c3", "status": "in_progress", "output": "part"}),
        );
        expect![[
            r#"{"sessionUpdate":"tool_call_update","status":"in_progress","toolCallId":"c3"}"#
        ]]
        .assert_eq(&wire(session_update(&streaming)));
        // A new file has no old text.
        let created = typed(
            json!({"kind": "toolCallUpdate", "toolCallId": "c4", "status": "in_progress", "diff": {"path": "/w/n.rs", "oldText": null, "newText": "n"}}),
        );
        expect![[r#"{"content":[{"newText":"n","path":"/w/n.rs","type":"diff"}],"sessionUpdate":"tool_call_update","status":"in_progress","toolCallId":"c4"}"#]]
            .assert_eq(&wire(session_update(&created)));
    }

    #[test]
    fn plans_usage_and_unmapped_kinds() {
        let update = typed(
            json!({"kind": "plan", "entries": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "pending"}]}),
        );
        expect![[r#"{"entries":[{"content":"a","priority":"medium","status":"in_progress"},{"content":"b","priority":"medium","status":"pending"}],"sessionUpdate":"plan"}"#]]
            .assert_eq(&wire(session_update(&update)));
        expect![[r#"{"sessionUpdate":"usage_update","size":128000,"used":1200}"#]]
            .assert_eq(&wire(Some(usage_update(
            &serde_json::from_value(json!({
                "sessionId": "s", "usedTokens": 1200, "contextWindow": 128000, "fill": 0.01,
                "estimated": false, "state": "idle", "compactions": 0, "mode": "ask",
                "sandbox": {"mode": "off", "available": false, "network": true, "enforced": false},
            }))
            .unwrap(),
        ))));
        assert!(
            session_update(&typed(json!({"kind": "turnEnd", "stopReason": "endTurn"}))).is_none()
        );
        assert!(session_update(&typed(json!({"kind": "queued"}))).is_none());
    }

    #[test]
    fn stop_reasons_map_and_errors_are_errors() {
        // agentls's four stop reasons (`maxTokens` and `refusal`, which it never sends, are
        // no longer mapped: the type has no such value).
        let reason = |name: &str| stop_reason(serde_json::from_value(json!(name)).unwrap());
        assert_eq!(reason("endTurn"), Ok("end_turn"));
        assert_eq!(reason("cancelled"), Ok("cancelled"));
        assert_eq!(reason("maxSteps"), Ok("max_turn_requests"));
        assert_eq!(
            reason("error"),
            Err("the turn ended with error".to_string())
        );
    }

    #[test]
    fn permission_requests_carry_the_diff_and_acp_kinds() {
        let options: Vec<(String, String, String)> =
            ["allowOnce", "allowAlways", "rejectOnce", "rejectAlways"]
                .iter()
                .map(|k| (format!("id-{k}"), k.to_string(), format!("name {k}")))
                .collect();
        let mut edit =
            PermissionToolCall::new("c1", "edit_file", "Edit a.rs", ToolKind::Edit, Map::new());
        edit.edit = Some(FileDiff {
            path: "/w/a.rs".into(),
            old_text: Some("a".into()),
            new_text: "b".into(),
        });
        edit.locations = Some(vec![ToolLocation {
            path: "/w/a.rs".into(),
            line: None,
        }]);
        let request = permission_request("s1", &edit, &options);
        expect![[r#"{"options":[{"kind":"allow_once","name":"name allowOnce","optionId":"id-allowOnce"},{"kind":"allow_always","name":"name allowAlways","optionId":"id-allowAlways"},{"kind":"reject_once","name":"name rejectOnce","optionId":"id-rejectOnce"},{"kind":"reject_always","name":"name rejectAlways","optionId":"id-rejectAlways"}],"sessionId":"s1","toolCall":{"content":[{"newText":"b","oldText":"a","path":"/w/a.rs","type":"diff"}],"kind":"edit","locations":[{"path":"/w/a.rs"}],"rawInput":{},"status":"pending","title":"Edit a.rs","toolCallId":"c1"}}"#]]
            .assert_eq(&request.to_string());
        assert_eq!(
            permission_choice(&json!({"outcome": {"outcome": "selected", "optionId": "x"}})),
            Some("x")
        );
        assert_eq!(
            permission_choice(&json!({"outcome": {"outcome": "cancelled"}})),
            None
        );
        assert_eq!(permission_choice(&json!({"outcome": "cancelled"})), None);
        let input = json!({"server": "x"}).as_object().cloned().unwrap();
        let mut server = PermissionToolCall::new(
            "m",
            "mcpServer",
            "Workspace MCP server x: srv",
            ToolKind::Execute,
            input,
        );
        server.details = Some("command: srv\ntrust: ask".into());
        let server = permission_request("s1", &server, &options);
        assert_eq!(
            server["toolCall"]["content"],
            json!([{"type": "content", "content": {"type": "text", "text": "command: srv\ntrust: ask"}}])
        );
    }

    #[test]
    fn prompt_blocks_become_text_mentions_and_untrusted_resources() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "Explain"},
            {"type": "resource_link", "name": "a.rs", "uri": "file:///w/src/a.rs"},
            {"type": "resource_link", "name": "doc", "uri": "https://example.com/doc"},
            {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}},
        ]))
        .unwrap();
        expect![[r#"
            Explain @src/a.rs [doc](https://example.com/doc)

            <attached_resources>
            BOUNDARY
            <attached_resource uri="file:///w/b.rs" trust="untrusted">
            fn b() {}
            </attached_resource>
            </attached_resources>"#]]
        .assert_eq(&prompt_text(&blocks, Path::new("/w"), "BOUNDARY").unwrap());
        let refused: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "image", "data": "", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///w/x.bin", "blob": "AAAA"}},
        ]))
        .unwrap();
        expect!["agentls cannot take a binary resource in a prompt (text, resource links and embedded text resources only)"]
            .assert_eq(&prompt_text(&refused, Path::new("/w"), "").unwrap_err());
        assert_eq!(
            prompt_images(&refused),
            [("image/png".to_string(), String::new())]
        );
    }

    #[test]
    fn message_chunks_share_an_id_until_another_update_or_turn() {
        let mut ids = MessageIds::default();
        let mut assign = |turn: &str, update: Value| {
            let mut update = update;
            ids.assign(turn, &mut update);
            update["messageId"].as_str().map(str::to_string)
        };
        let text = || json!({"sessionUpdate": "agent_message_chunk"});
        let thought = || json!({"sessionUpdate": "agent_thought_chunk"});
        let a = assign("t1", text());
        assert_eq!(assign("t1", text()), a, "one message");
        let b = assign("t1", thought());
        assert_ne!(b, a, "a thought is another message");
        assert_eq!(assign("t1", json!({"sessionUpdate": "tool_call"})), None);
        let c = assign("t1", text());
        assert!(
            c.is_some() && c != a,
            "text after a tool call is a new message"
        );
        assert_ne!(assign("t2", text()), c, "a new turn, a new message");
    }

    #[test]
    fn shell_commands_go_to_a_client_terminal_embedded_in_the_call() {
        expect![[r#"{"args":["-c","cargo test"],"command":"sh","cwd":"/w","env":[{"name":"OPENAI_API_KEY","value":""}],"outputByteLimit":1000,"sessionId":"s"}"#]]
            .assert_eq(&terminal_create("s", "cargo test", Path::new("/w"), &["OPENAI_API_KEY".into()], 1000, None).to_string());
        let mut done = session_update(&typed(json!({"kind": "toolCallUpdate", "toolCallId": "c", "status": "completed", "output": "ok"}))).unwrap();
        embed_terminal(&mut done, "t1");
        expect![[r#"{"content":[{"terminalId":"t1","type":"terminal"},{"content":{"text":"ok","type":"text"},"type":"content"}],"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"c"}"#]]
            .assert_eq(&done.to_string());
        let mut running = session_update(&typed(
            json!({"kind": "toolCallUpdate", "toolCallId": "c", "status": "in_progress"}),
        ))
        .unwrap();
        embed_terminal(&mut running, "t1");
        assert_eq!(
            running["content"],
            json!([{"type": "terminal", "terminalId": "t1"}])
        );
        assert_eq!(exit_status(&json!({"exitCode": 2})), (Some(2), None));
        assert_eq!(
            exit_status(&json!({"exitCode": null, "signal": "SIGKILL"})),
            (None, Some("SIGKILL".into()))
        );
    }

    #[test]
    fn compactions_become_compaction_updates_for_clients_that_take_them() {
        let started = typed(
            json!({"kind": "compaction", "phase": "started", "tokensBefore": 9000, "trigger": "manual"}),
        );
        expect![[
            r#"{"compactionId":"k1","sessionUpdate":"compaction_update","status":"in_progress"}"#
        ]]
        .assert_eq(&wire(compaction_update(&started, "k1")));
        let failed = typed(
            json!({"kind": "compaction", "phase": "failed", "tokensBefore": 9000, "message": "the summary call failed"}),
        );
        expect![[r#"{"compactionId":"k1","error":"the summary call failed","sessionUpdate":"compaction_update","status":"failed"}"#]]
            .assert_eq(&wire(compaction_update(&failed, "k1")));
        let completed = typed(
            json!({"kind": "compaction", "phase": "completed", "tokensBefore": 9000, "tokensAfter": 2000}),
        );
        assert_eq!(
            compaction_update(&completed, "k1").unwrap()["status"],
            "completed"
        );
        // Without the capability: a message.
        expect![[r#"{"content":{"text":"\n\n> agentls: conversation compacted: 9000 → 2000 tokens\n\n","type":"text"},"sessionUpdate":"agent_message_chunk"}"#]]
        .assert_eq(&wire(session_update(&completed)));
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn commands_modes_and_config_options_are_listed() {
        let builtin = available_commands(&crate::commands::infos(&[]));
        let names: Vec<&str> = builtin
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["compact", "new", "context", "model", "remember", "review", "help"]
        );
        expect![[r#"{"description":"compact the conversation now (focus steers the summary)","input":{"hint":"[focus]"},"name":"compact"}"#]]
            .assert_eq(&builtin[0].to_string());
        let custom = crate::commands::parse(
            "inspect",
            crate::commands::Source::Workspace,
            "---\ndescription: Inspect the diff\nargument-hint: PATH\n---\nInspect $ARGUMENTS",
        );
        let all = available_commands(&crate::commands::infos(&[custom]));
        expect![[r#"{"description":"Inspect the diff","input":{"hint":"PATH"},"name":"inspect"}"#]]
            .assert_eq(&all[7].to_string());
        let state = modes("auto-edit");
        assert_eq!(state["currentModeId"], "auto-edit");
        let ids: Vec<&str> = state["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, crate::approval::POLICIES);
        assert!(is_mode("full-auto") && is_mode("plan") && !is_mode("yolo"));
        assert_eq!(
            known_models("openai", "gpt-4o"),
            ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-5"]
        );
        let options = config_options("ask", "m", &known_models("anthropic", "m"));
        assert_eq!(options[0]["currentValue"], "ask");
        assert_eq!(options[0]["options"][3]["value"], "plan");
        assert_eq!(options[1]["options"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn a_transcript_replays_as_updates() {
        let items = vec![
            TranscriptItem::User {
                text: "hi".into(),
                checkpoint_id: None,
            },
            TranscriptItem::Assistant {
                text: "hello".into(),
            },
        ];
        expect![[r#"[{"content":{"text":"hi","type":"text"},"sessionUpdate":"user_message_chunk"},{"content":{"text":"hello","type":"text"},"sessionUpdate":"agent_message_chunk"}]"#]]
            .assert_eq(&serde_json::to_string(&replay(&items)).unwrap());
    }
}
