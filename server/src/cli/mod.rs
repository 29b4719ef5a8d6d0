//! The command-line front ends other than the language server: `agentls ask` (one agent turn
//! in the terminal) and `agentls context` (what the model would receive).

pub mod args;
pub mod ask;
pub mod context;
