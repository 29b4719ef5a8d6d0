//! agentls: a language server that is the backend of an LLM coding agent in the editor.
//! This crate holds the edges around the pure core (`agentls_core`); see ARCHITECTURE.md for
//! the map.
//!
//! In layers, top first (a module names only modules below it; `architecture` checks it):
//! - `lsp`, `acp`, `cli`: the front doors (the tower-lsp adapter, the Agent Client
//!   Protocol, `agentls ask` and `agentls context`);
//! - `agent`: sessions, their queues, the turn and its rooms (model step, tool dispatch,
//!   prompt input, hooks, compaction jobs);
//! - `tools`, `mcp`: the model's tools (one file each, and their list), the MCP client;
//! - `host`: the `Host` trait every front door implements and what crosses it;
//! - `gather`, `provider`: the one gather recipe; the HTTP exchange with model providers;
//! - `sandbox`, `symbols`: the command sandbox (the probe, a policy's places, confining a
//!   child); the workspace symbol index (walk, threads, disk, the `Symbols` handle);
//! - `process_groups`, `store`: every child's process group and the warden; the disk and
//!   the process environment;
//! - `locks`, `protocol`: the one way to take a std lock; the protocol's types.
//!
//! What only tests and benchmarks use (fake provider, LSP test client, demo, benchmarks, the
//! compaction eval) is the `agentls-dev` crate (crates/dev), outside the shipped binary.

pub mod acp;
pub mod agent;
pub mod cli;
pub mod gather;
pub mod host;
pub mod locks;
pub mod lsp;
pub mod mcp;
pub mod process_groups;
pub mod protocol;
pub mod provider;
pub mod sandbox;
pub mod store;
pub mod symbols;
pub mod tools;

/// The layering rules of ARCHITECTURE.md that the compiler cannot see, checked over the
/// sources of both crates.
#[cfg(test)]
mod architecture;
