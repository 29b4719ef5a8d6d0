//! agentls: a language server that is the backend of an LLM coding agent in the editor.
//! This crate holds the edges around the pure core (`agentls_core`); see ARCHITECTURE.md for
//! the map.
//!
//! - `acp`: the Agent Client Protocol front door (`agentls acp`);
//! - `lsp`: the tower-lsp adapter and the transport in front of it;
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
//! - `cli`: `agentls ask` and `agentls context`.
//!
//! What only tests and benchmarks use (fake provider, LSP test client, demo, benchmarks, the
//! compaction eval) is the `agentls-dev` crate (crates/dev), outside the shipped binary.

pub mod acp;
pub mod agent;
pub mod cli;
pub mod host;
pub mod lsp;
pub mod mcp;
pub mod process_groups;
pub mod provider;
pub mod store;
pub mod tools;

/// The layering rules of ARCHITECTURE.md that the compiler cannot see, checked over the
/// sources: only `lsp/` speaks LSP transport.
#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Each source file of the crate, relative to `src/`, with its code before any test
    /// module (tests may reach anything).
    fn non_test_code() -> Vec<(String, String)> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        files
            .into_iter()
            .filter(|path| {
                !matches!(
                    path.file_name().and_then(|n| n.to_str()),
                    Some("tests.rs" | "test_support.rs")
                )
            })
            .map(|path| {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = match text.find("#[cfg(test)]\nmod tests") {
                    Some(at) => text[..at].to_string(),
                    None => text,
                };
                let name = path
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                (name, code)
            })
            .collect()
    }

    #[test]
    fn only_the_lsp_adapter_names_tower_lsp() {
        let offenders: Vec<String> = non_test_code()
            .into_iter()
            .filter(|(name, code)| {
                !(name.starts_with("lsp/") || name == "main.rs") && code.contains("tower_lsp")
            })
            .map(|(name, _)| name)
            .collect();
        assert!(
            offenders.is_empty(),
            "tower_lsp outside lsp/: {offenders:?}"
        );
        assert!(
            non_test_code().len() > 40,
            "the sources were read from src/"
        );
    }
}
