//! Model Context Protocol, the pure half: what the user configured (`config`), the names
//! the model sees for servers' tools (`names`), the cleaning of their JSON schemas
//! (`schema`), prompts as slash commands (`prompts`) and `@SERVER:URI` resources
//! (`resources`), a stdio message past the size read (`frame`). The protocol itself (processes, HTTP, rmcp) is the server crate's
//! `mcp/` module; nothing here does IO.

pub mod config;
pub mod frame;
pub mod names;
pub mod output;
pub mod prompts;
pub mod resources;
pub mod schema;
pub mod tools;
