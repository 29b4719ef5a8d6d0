//! `agentls acp`: the Agent Client Protocol front door (Zed, JetBrains, CodeCompanion, avante,
//! any ACP client), over the same agent loop as the LSP mode.
//!
//! - `transport`: newline-delimited JSON-RPC 2.0 over stdio (requests both ways);
//! - `host`: `AcpHost`, the loop's host for one session (its `cwd`, its mode);
//! - `methods`: the ACP methods, translated to `crate::agent` calls.
//!
//! Each ACP session has its own `Agent` over its own `AcpHost`, so sessions in different
//! `cwd`s have their own roots and session stores (the same store the LSP mode uses for that
//! workspace). Every mapping of data to ACP's shapes is the core's (`agentls_core::acp`).

mod host;
mod methods;
pub mod transport;

use std::sync::Arc;

use agentls_core::config::Config;

/// Serves ACP on stdin/stdout until stdin closes. `config` is Err when no provider is
/// configured: `initialize` still answers, and `session/new` says why it cannot start.
pub async fn serve_stdio(config: Result<Config, String>) {
    let prompts = {
        let base = config.clone().unwrap_or_default();
        let (prompts, problems) = crate::store::prompts::load(
            crate::store::prompts::override_dir(base.prompts_dir.as_deref()).as_deref(),
            base.compaction.prompt_file.as_deref(),
        );
        for problem in problems {
            tracing::warn!("{problem}");
        }
        Arc::new(prompts)
    };
    // Kept past the connection's end: its sessions' background commands are released then.
    let kept = Arc::new(std::sync::OnceLock::new());
    let slot = kept.clone();
    transport::serve(tokio::io::stdin(), tokio::io::stdout(), move |connection| {
        let state = Arc::new(methods::State::new(connection, config, prompts));
        let _ = slot.set(state.clone());
        move |incoming| {
            let state = state.clone();
            async move { state.handle(incoming).await }
        }
    })
    .await;
    // The client terminals of background commands are the client's to kill: tell it.
    let released = kept
        .get()
        .map_or(0, |state| state.release_terminals_at_exit());
    if released > 0 {
        // The writer is a task of its own: a moment to send the releases before the exit.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
