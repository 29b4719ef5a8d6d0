//! agentls: a language server that is the backend of an LLM coding agent in the editor.
//! See ARCHITECTURE.md for the map; `server` is the LSP edge, the rest is the core.

pub mod agents_md;
pub mod bench;
pub mod bench_context;
pub mod config;
pub mod context;
pub mod context_cli;
pub mod demo;
pub mod document;
pub mod documents;
pub mod editor_context;
pub mod editor_state;
pub mod environment;
pub mod files;
pub mod history;
pub mod inspect;
pub mod language;
pub mod lsp_client;
pub mod models;
pub mod openai_wire;
pub mod position;
pub mod prompts;
pub mod server;
pub mod skills;
pub mod syntax;
pub mod tokens;
pub mod transport;
pub mod truncate;
pub mod workspace;
