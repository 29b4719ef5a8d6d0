//! The workspace's folders: indexing them, the AGENTS.md watchers, and the check that a path
//! the client names lies inside.

use super::progress::Progressor;
use super::{invalid_params, Backend};
use crate::locks::ReadWriteLocked;
use crate::store::file_index;
use agentls_core::agents_md;
use std::path::{Path, PathBuf};
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types::*;

pub(super) fn roots_from(params: &InitializeParams) -> Vec<PathBuf> {
    #[allow(deprecated)] // rootPath: still sent by old clients
    let uris: Vec<Url> = match (
        &params.workspace_folders,
        &params.root_uri,
        &params.root_path,
    ) {
        (Some(folders), _, _) if !folders.is_empty() => {
            folders.iter().map(|f| f.uri.clone()).collect()
        }
        (_, Some(uri), _) => vec![uri.clone()],
        (_, _, Some(path)) => Url::from_file_path(path).into_iter().collect(),
        _ => Vec::new(),
    };
    uris.iter().filter_map(uri_to_dir).collect()
}

pub(super) fn uri_to_dir(uri: &Url) -> Option<PathBuf> {
    match uri.to_file_path() {
        Ok(path) => Some(path),
        Err(()) => {
            tracing::warn!("workspace folder {uri} is not a file: uri; skipped");
            None
        }
    }
}

impl Backend {
    pub(super) async fn register_agents_md_watchers(&self) {
        let support = *self.state.support.read_locked();
        if !support.watched_files_registration {
            tracing::info!(
                "client cannot watch files for us: AGENTS.md is re-read at every lookup"
            );
            return;
        }
        let watchers = agents_md::FILE_NAMES
            .iter()
            .map(|name| FileSystemWatcher {
                glob_pattern: GlobPattern::String(format!("**/{name}")),
                kind: None,
            })
            .collect();
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = Registration {
            id: "agentls-agents-md".into(),
            method: "workspace/didChangeWatchedFiles".into(),
            register_options: serde_json::to_value(options).ok(),
        };
        // Not waited for: indexing must not depend on when (or whether) the client
        // answers. Until it does, AGENTS.md is re-read at every lookup.
        let answer = super::client_request::send::<request::RegisterCapability>(
            &self.client,
            RegistrationParams {
                registrations: vec![registration],
            },
        );
        let state = self.state.clone();
        tokio::spawn(async move {
            match answer.get().await {
                Ok(()) => state.agents_disk.enable_cache(),
                Err(err) => tracing::warn!("registering AGENTS.md watchers failed: {err}"),
            }
        });
    }

    /// Indexes `roots` in the background, reporting `$/progress` when the client can show
    /// it. Returns once the walk has started, not when it ends.
    pub(super) async fn reindex(&self, roots: Vec<PathBuf>) {
        let generation = self.state.index.begin(roots.clone());
        let client = self.client.clone();
        let state = self.state.clone();
        tokio::spawn(async move {
            let progress = Progressor::start(&client, &state, "Indexing workspace").await;
            let (counts, mut counted) = tokio::sync::mpsc::unbounded_channel();
            let walk = tokio::task::spawn_blocking(move || {
                file_index::walk(&roots, |n| {
                    let _ = counts.send(n);
                })
            });
            while let Some(n) = counted.recv().await {
                progress.report(&client, format!("{n} files")).await;
            }
            let message = match walk.await {
                Ok((files, elapsed_ms)) => {
                    let message = format!("Indexed {} files in {elapsed_ms} ms", files.len());
                    if state.index.finish(generation, files, elapsed_ms) {
                        tracing::info!("{message}");
                    }
                    message
                }
                Err(err) => {
                    tracing::error!("workspace index failed: {err}");
                    state.index.finish(generation, Vec::new(), 0);
                    "Indexing failed".to_string()
                }
            };
            progress.end(&client, message).await;
        });
    }

    /// A path the client named must lie in the workspace (when there is one).
    pub(super) fn check_in_workspace(&self, path: &Path) -> jsonrpc::Result<()> {
        let roots = self.state.index.roots();
        if roots.is_empty() || self.state.index.root_of(path).is_some() {
            Ok(())
        } else {
            Err(invalid_params(format!(
                "{} is outside the workspace ({})",
                path.display(),
                roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }
}
