//! agentls-core: everything agentls knows that is a function over data. Positions and
//! documents, syntax queries, token counts and truncation, the conversation history and its
//! invariants, the editor block, context assembly, the ledger, compaction planning, approval
//! rules, configuration, prompts and the providers' wire formats.
//!
//! Architecture invariant: this crate does no IO. Its Cargo.toml names no async runtime, no
//! HTTP client, no file walker, no libc and no LSP transport; the server crate (`agentls`)
//! holds every edge and calls in here. See ARCHITECTURE.md.

pub mod acp;
pub mod agents_md;
pub mod approval;
pub mod attachments;
pub mod bpe;
pub mod checkpoints;
pub mod checks;
pub mod commands;
pub mod compaction;
pub mod config;
pub mod context;
pub mod document;
pub mod editor_context;
pub mod editor_diagnostics;
pub mod editor_lsp;
pub mod editor_state;
pub mod environment;
pub mod event;
pub mod file_reads;
pub mod front_matter;
pub mod history;
pub mod hooks;
pub mod hunks;
pub mod image;
pub mod inspect;
pub mod language;
pub mod ledger;
pub mod listings;
pub mod mcp;
pub mod memory;
pub mod models;
pub mod near_paths;
pub mod paths;
pub mod permission_rules;
pub mod position;
pub mod prompt_text;
pub mod prompts;
pub mod provider_kind;
pub mod redact;
pub mod reminders;
pub mod repo_map;
pub mod review;
pub mod sandbox;
pub mod session;
pub mod skills;
pub mod snapshot;
pub mod subagents;
pub mod symbol_index;
pub mod syntax;
pub mod tokens;
pub mod tool_info;
pub mod truncate;
pub mod updates;
pub mod wire;
pub mod worktree;

#[cfg(test)]
mod test_support;
