//! `agent/mcp/didChangeStatus`: the MCP servers' status pushed to the client whenever a
//! server's state, message or tool count changes, so editors need not poll
//! `agent/mcp/status`. The payload is that request's answer. Changes that land before the
//! forwarder looks are sent as one notification, and an unchanged status is never sent again.

use std::sync::Arc;

use serde_json::json;
use tower_lsp::Client;

use crate::agent::Agent;
use crate::protocol::lsp::McpDidChangeStatus;
use crate::protocol::Json;

/// Spawns the task that forwards `agent`'s MCP status changes to `client`. It ends with the
/// agent (its manager's channel closes).
pub(super) fn forward(client: Client, agent: &Arc<Agent>) {
    let mut changes = agent.mcp_changes();
    let agent = Arc::downgrade(agent);
    tokio::spawn(async move {
        // Nothing configured is what a client assumes before the first notification.
        let mut last = json!({ "servers": [] });
        while changes.changed().await.is_ok() {
            // Let changes made together (several servers set at once) land first.
            tokio::task::yield_now().await;
            changes.borrow_and_update();
            let Some(agent) = agent.upgrade() else {
                return;
            };
            let status = agent.mcp_status();
            drop(agent);
            if status != last {
                client
                    .send_notification::<McpDidChangeStatus>(Json::new(status.clone()))
                    .await;
                last = status;
            }
        }
    });
}
