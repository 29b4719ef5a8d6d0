//! The disk and the process environment, as thin adapters around the core's data: session
//! logs, reading workspace files, the workspace's file index, prompt overrides, AGENTS.md
//! files, skills, the environment block's facts (shell, date), and the secrets of the process
//! environment (`secrets`), the user settings file (`settings`), and where the user's own
//! configuration lives (`user_config`), and the one way a configuration or instruction file
//! is opened (`untrusted_file`: a regular file inside its root, capped), and the one way a
//! rewind writes beneath a root (`beneath`: through directory descriptors, never a link).

pub mod agents_md;
pub mod answered_rules;
pub mod beneath;
pub mod checkpoint_watch;
pub mod checkpoints;
pub mod commands;
pub mod environment;
pub mod file_index;
pub mod files;
pub mod memory;
pub mod prompts;
pub mod secrets;
pub mod session_log;
pub mod settings;
pub mod skills;
pub mod untrusted_file;
pub mod user_config;
pub mod workspace_state;
