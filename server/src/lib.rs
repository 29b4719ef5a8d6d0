//! agentls: a language server that is the backend of an LLM coding agent in the editor.
//! This crate holds the edges around the pure core (`agentls_core`); see ARCHITECTURE.md for
//! the map.
//!
//! - `acp`: the Agent Client Protocol front door (`agentls acp`);
//! - `lsp`: the tower-lsp adapter and the transport in front of it;
//! - `protocol`: the custom LSP methods and the ACP methods as types (name, params,
//!   result), the floor both front doors stand on;
//! - `agent`: sessions, their queues, the turn loop, tool calls, compaction jobs, the gather
//!   recipe;
//! - `host`: the `Host` trait every front end implements and the types tools and the store
//!   share with it (`FileChange`, permission requests): the floor under `tools` and `store`;
//! - `tools`: the model's tools, one file each, and their registry;
//! - `mcp`: the MCP client (servers' connections and their supervisor);
//! - `process_groups`: every child's process group, and the warden that kills them after a
//!   crash of agentls;
//! - `provider`: the HTTP exchange with model providers;
//! - `store`: the disk (session logs, files, the workspace's file index, prompt overrides,
//!   AGENTS.md, skills) and the process environment;
//! - `cli`: `agentls ask` and `agentls context`;
//! - `dev`: what only tests and benchmarks use (fake provider, LSP test client, demo,
//!   benchmarks, the compaction eval).

pub mod acp;
pub mod agent;
pub mod cli;
pub mod dev;
pub mod gather;
pub mod host;
pub mod locks;
pub mod lsp;
pub mod mcp;
pub mod process_groups;
pub mod protocol;
pub mod provider;
pub mod store;
pub mod tools;

/// The layering rules of ARCHITECTURE.md that the compiler cannot see, checked over the
/// sources of both crates.
#[cfg(test)]
mod architecture;
