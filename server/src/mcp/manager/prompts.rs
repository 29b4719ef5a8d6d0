//! The servers' prompts and resources: `prompts/list` at connect and on
//! `notifications/prompts/list_changed`, `prompts/get` for a `/mcp__SERVER__PROMPT` command,
//! `resources/read` for an `@SERVER:URI` mention and `resources/list` for
//! `agent/mcp/resources`. Each request is bounded by the server's `timeoutMs` and dropped on
//! cancel (rmcp then sends `notifications/cancelled`). What the answers mean (names,
//! arguments, the text sent) is the core's `mcp::prompts` and `mcp::resources`.

use std::time::Duration;

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::{Peer, RoleClient};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use agentls_core::mcp::prompts::{McpPrompt, ServerPrompt};

use crate::mcp::manager::{Manager, State};

/// A server's prompts (every page); none when it does not offer prompts or the list fails
/// (logged: its tools still work).
pub(super) async fn list_prompts(peer: &Peer<RoleClient>, server: &str) -> Vec<ServerPrompt> {
    let offers = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.prompts.is_some());
    if !offers {
        return Vec::new();
    }
    match peer.list_all_prompts().await {
        Ok(prompts) => {
            let value = serde_json::to_value(&prompts).unwrap_or(Value::Null);
            let (prompts, notes) = agentls_core::mcp::prompts::parse_list(&value);
            for note in notes {
                tracing::info!(server = %server, "MCP {note}");
            }
            prompts
        }
        Err(err) => {
            tracing::warn!(server = %server, "MCP prompts/list failed: {err}");
            Vec::new()
        }
    }
}

impl Manager {
    /// The ready servers' prompts as slash commands, in the stable order.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        self.with(|inner| inner.offered_prompts.clone())
    }

    /// The configured servers' names (whatever their state).
    pub fn server_names(&self) -> Vec<String> {
        self.with(|inner| inner.servers.keys().cloned().collect())
    }

    /// Waits until no server (`only` that one, when named) is on its first start (each is
    /// bounded by its `startupTimeoutMs`), or the cancel.
    pub async fn first_starts(&self, only: Option<&str>, cancel: &CancellationToken) {
        // Subscribed before the check, so a change between the two is not missed.
        let mut changes = self.subscribe();
        loop {
            let starting = self.with(|inner| {
                inner
                    .servers
                    .values()
                    .filter(|slot| only.is_none_or(|name| slot.config.name == name))
                    .any(|slot| slot.state == State::Starting(None))
            });
            if !starting {
                return;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = cancel.cancelled() => return,
            }
        }
    }

    /// The connection to `server` once it is ready (a first start is waited for), with its
    /// `timeoutMs`; Err says why there is none.
    async fn ready(
        &self,
        server: &str,
        cancel: &CancellationToken,
    ) -> Result<(Peer<RoleClient>, Duration), String> {
        self.first_starts(Some(server), cancel).await;
        let found = self.with(|inner| {
            inner.servers.get(server).map(|slot| {
                (
                    slot.peer.clone(),
                    slot.state.clone(),
                    slot.config.call_timeout,
                )
            })
        });
        let Some((peer, state, timeout)) = found else {
            return Err(format!("no MCP server is named {server}"));
        };
        match peer {
            Some(peer) => Ok((peer, timeout)),
            None => Err(match state {
                State::Failed(message) => {
                    format!("the MCP server {server} is not ready: it failed: {message}")
                }
                State::Starting(Some(message)) => {
                    format!("the MCP server {server} is not ready: it is restarting ({message})")
                }
                other => format!(
                    "the MCP server {server} is not ready: it is {}",
                    other.name()
                ),
            }),
        }
    }

    /// `prompts/get` of `prompt` with `arguments`: the result as JSON, or why not.
    pub async fn get_prompt(
        &self,
        prompt: &McpPrompt,
        arguments: serde_json::Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let (peer, timeout) = self.ready(&prompt.server, cancel).await?;
        let mut params = GetPromptRequestParams::new(prompt.prompt.name.clone());
        params.arguments = Some(arguments);
        let what = format!("prompt {}", prompt.prompt.name);
        bounded(&prompt.server, &what, timeout, cancel, async {
            peer.get_prompt(params)
                .await
                .map(|result| serde_json::to_value(&result).unwrap_or(Value::Null))
        })
        .await
    }

    /// `resources/read` of `uri` on `server`: the result as JSON, or why not.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let (peer, timeout) = self.ready(server, cancel).await?;
        let what = format!("resource {uri}");
        bounded(server, &what, timeout, cancel, async {
            peer.read_resource(ReadResourceRequestParams::new(uri))
                .await
                .map(|result| serde_json::to_value(&result).unwrap_or(Value::Null))
        })
        .await
    }

    /// `agent/mcp/resources`: the resources every ready server lists (a server whose list
    /// fails is logged and left out), in server order.
    pub async fn resources(&self) -> Value {
        let peers: Vec<(String, Peer<RoleClient>, Duration)> = self.with(|inner| {
            inner
                .servers
                .values()
                .filter_map(|slot| {
                    Some((
                        slot.config.name.clone(),
                        slot.peer.clone()?,
                        slot.config.call_timeout,
                    ))
                })
                .collect()
        });
        let mut rows = Vec::new();
        let never = CancellationToken::new();
        for (server, peer, timeout) in peers {
            let offers = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.resources.is_some());
            if !offers {
                continue;
            }
            let listed = bounded(&server, "the resource list", timeout, &never, async {
                peer.list_all_resources()
                    .await
                    .map(|list| serde_json::to_value(&list).unwrap_or(Value::Null))
            })
            .await;
            match listed {
                Ok(list) => rows.extend(agentls_core::mcp::resources::rows(&server, &list)),
                Err(err) => tracing::warn!(server = %server, "MCP {err}"),
            }
        }
        json!({ "resources": rows })
    }
}

/// `request` within `timeout`, dropped on `cancel`; an error names the server and `what`.
async fn bounded<E: std::fmt::Display>(
    server: &str,
    what: &str,
    timeout: Duration,
    cancel: &CancellationToken,
    request: impl std::future::Future<Output = Result<Value, E>>,
) -> Result<Value, String> {
    tokio::select! {
        result = request => result.map_err(|err| format!("the MCP server {server} failed to get {what}: {err}")),
        () = cancel.cancelled() => Err(format!("getting {what} from {server} was cancelled")),
        () = tokio::time::sleep(timeout) => Err(format!(
            "the MCP server {server} did not answer for {what} within {} ms (its timeoutMs)",
            timeout.as_millis()
        )),
    }
}
