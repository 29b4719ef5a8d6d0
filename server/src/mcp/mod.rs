//! The MCP client: the user's Model Context Protocol servers, started in the background,
//! their tools offered to the model after the built-in ones and called through the turn's
//! one tool path (approval, cancel, truncation, the session log). The protocol is the
//! official SDK's (`rmcp`); what is decided about servers' configuration, names, schemas and
//! results is pure and lives in `agentls_core::mcp`.
//!
//! - `connect`: one connection, over a child process (its own process group, killed with
//!   agentls) or streamable HTTP; `${VAR}` expanded here, never logged.
//! - `manager`: every configured server's state (`starting`, `ready`, `failed`), restarts
//!   after a crash with backoff, the tool set, and calls with cancel and timeout.

pub mod connect;
pub mod manager;

pub use manager::Manager;
