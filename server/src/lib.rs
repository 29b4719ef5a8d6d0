//! agentls: a language server that is the backend of an LLM coding agent in the editor.
//! See ARCHITECTURE.md for the map; `server` is the LSP edge, the rest is the core.

pub mod agents_md;
pub mod bench;
pub mod config;
pub mod demo;
pub mod document;
pub mod documents;
pub mod history;
pub mod language;
pub mod lsp_client;
pub mod position;
pub mod prompts;
pub mod server;
pub mod syntax;
pub mod tokens;
pub mod transport;
pub mod truncate;
pub mod workspace;
