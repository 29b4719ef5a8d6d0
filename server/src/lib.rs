//! agentls: a language server that is the backend of an LLM coding agent in the editor.
//! This crate holds the edges around the pure core (`agentls_core`); see ARCHITECTURE.md for
//! the map.
//!
//! - `lsp`: the tower-lsp adapter and the transport in front of it;
//! - `agent`: sessions, their queues, the turn loop, tool calls, compaction jobs, the gather
//!   recipe, and the `Host` trait every front end implements;
//! - `tools`: the model's tools, one file each, and their registry;
//! - `provider`: the HTTP exchange with model providers;
//! - `store`: the disk (session logs, files, the workspace's file index, prompt overrides,
//!   AGENTS.md, skills) and the process environment;
//! - `cli`: `agentls ask` and `agentls context`;
//! - `dev`: what only tests and benchmarks use (fake provider, LSP test client, demo,
//!   benchmarks, the compaction eval).

pub mod agent;
pub mod cli;
pub mod dev;
pub mod lsp;
pub mod provider;
pub mod store;
pub mod tools;
