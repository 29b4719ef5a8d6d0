//! The workspace's folders: indexing them, the AGENTS.md watchers, and the check that a path
//! the client names lies inside.

use super::progress::Progressor;
use super::{invalid_params, Backend, State};
use crate::locks::ReadWriteLocked;
use crate::store::file_index;
use crate::symbols::{BuildOptions, Symbols};
use agentls_core::agents_md;
use agentls_core::document::DocumentSnapshot;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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

/// Builds the symbol index of `roots` on its own thread (see `symbols`), with `$/progress`.
async fn index_symbols(client: tower_lsp::Client, state: Arc<State>, roots: Vec<PathBuf>) {
    let config = state.config();
    let store = crate::symbols::disk::store_path(
        &crate::store::session_log::state_dir(config.state_dir.as_deref()),
        &roots
            .iter()
            .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone()))
            .collect::<Vec<_>>(),
    );
    let options = BuildOptions {
        roots,
        max_file_bytes: config.syntax_max_document_bytes as u64,
        store,
        threads: BuildOptions::default_threads(),
    };
    let progress = Progressor::start(&client, &state, "Indexing symbols").await;
    let (counts, mut counted) = tokio::sync::mpsc::unbounded_channel();
    let symbols = state.symbols.clone();
    let (done, finished) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("agentls-symbols".into())
        .spawn(move || {
            let status = symbols.build(options, &|done, total| {
                let _ = counts.send((done, total));
            });
            let _ = done.send(status);
        });
    if let Err(err) = spawned {
        tracing::error!("cannot start the symbol indexer: {err}");
        progress.end(&client, "Symbol indexing failed".into()).await;
        return;
    }
    while let Some((done, total)) = counted.recv().await {
        progress
            .report(&client, format!("{done}/{total} files parsed"))
            .await;
    }
    let message = match finished.await {
        Ok(status) => {
            let message = status.summary();
            tracing::info!("{message}");
            message
        }
        Err(_) => "Symbol indexing stopped".to_string(),
    };
    progress.end(&client, message).await;
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
        // answers. Until it does, AGENTS.md is re-read at every lookup and the symbol
        // index checks files by modification time. One request for both, AGENTS.md first.
        let answer = super::client_request::send::<request::RegisterCapability>(
            &self.client,
            RegistrationParams {
                registrations: vec![registration, source_watchers()],
            },
        );
        let state = self.state.clone();
        tokio::spawn(async move {
            match answer.get().await {
                Ok(()) => state.agents_disk.enable_cache(),
                Err(err) => tracing::warn!("registering the file watchers failed: {err}"),
            }
        });
    }

    /// Indexes `roots` in the background, reporting `$/progress` when the client can show
    /// it. Returns once the walk has started, not when it ends.
    pub(super) async fn reindex(&self, roots: Vec<PathBuf>) {
        let generation = self.state.index.begin(roots.clone());
        let client = self.client.clone();
        let state = self.state.clone();
        let roots_for_symbols = roots.clone();
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
            let mut current = false;
            let message = match walk.await {
                Ok((files, elapsed_ms)) => {
                    let message = format!("Indexed {} files in {elapsed_ms} ms", files.len());
                    if state.index.finish(generation, files, elapsed_ms) {
                        tracing::info!("{message}");
                        current = true;
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
            if current {
                index_symbols(client, state, roots_for_symbols).await;
            }
        });
    }

    /// The symbol index with the open buffers brought up to date (their changed versions
    /// extracted from the trees the document worker already has).
    pub(super) async fn symbols_current(&self) -> Symbols {
        let symbols = self.state.symbols.clone();
        let buffers: Vec<(PathBuf, DocumentSnapshot)> = self
            .state
            .documents
            .matching(|_| true)
            .await
            .into_iter()
            .filter_map(|(uri, snapshot)| Some((uri.to_file_path().ok()?, snapshot)))
            .collect();
        if buffers.is_empty() {
            return symbols;
        }
        let syncing = symbols.clone();
        let _ = tokio::task::spawn_blocking(move || syncing.sync_buffers(&buffers)).await;
        symbols
    }

    /// More files changed than are read one by one (`bounded::ManyFilesChanged`): every
    /// AGENTS.md is read again when next needed, and the workspace is indexed again, the
    /// symbol index re-reading the files whose modification time or size changed.
    pub(super) async fn many_files_changed(&self, params: super::bounded::ManyFilesChangedParams) {
        tracing::info!(
            "{} files changed on disk: indexing the workspace again",
            params.changes
        );
        self.state.agents_disk.invalidate_all();
        self.reindex(self.state.index.roots()).await;
    }

    /// Files changed on disk: their entries in the symbol index are read again (in the
    /// background), then the index is saved.
    pub(super) fn symbols_changed_on_disk(&self, paths: Vec<PathBuf>) {
        let paths: Vec<PathBuf> = paths
            .into_iter()
            .filter(|path| crate::symbols::build::language_of(path).is_some())
            .collect();
        if paths.is_empty() {
            return;
        }
        let symbols = self.state.symbols.clone();
        tokio::task::spawn_blocking(move || {
            symbols.refresh(&paths);
            let _ = symbols.save();
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

/// The watchers of source files on disk, for the symbol index.
fn source_watchers() -> Registration {
    let watchers = vec![FileSystemWatcher {
        glob_pattern: GlobPattern::String(
            "**/*.{rs,py,pyi,pyw,ts,mts,cts,tsx,js,mjs,cjs,jsx,go}".into(),
        ),
        kind: None,
    }];
    Registration {
        id: "agentls-symbols".into(),
        method: "workspace/didChangeWatchedFiles".into(),
        register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions {
            watchers,
        })
        .ok(),
    }
}
