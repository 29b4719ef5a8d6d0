//! The command-line front ends other than the language server: `agentls ask` (one agent turn
//! in the terminal), `agentls context` (what the model would receive) and `agentls memory`
//! (the kept facts), and `process`, what
//! every agentls executable does first.

pub mod args;
pub mod ask;
pub mod context;
pub mod memory;
pub mod process;
