//! The memories as the editors see them (`agentls_core::memory`, `store::memory`): both
//! files with their entries, a session's facts offered for keeping, and the user's choice
//! kept. The model keeps facts with `save_memory`; the user with `/remember` or here.

use std::sync::Arc;

use agentls_core::memory::{self, Author, Scope};

use crate::agent::{Agent, AgentError};
use crate::protocol::lsp::{MemoryKeepResult, MemoryOffer, MemoryState};
use crate::store::memory::MemoryFiles;

impl Agent {
    fn memory_files(&self) -> MemoryFiles {
        MemoryFiles::new(
            self.host.roots().first().map(|root| root.as_path()),
            self.host.config().state_dir.as_deref(),
        )
    }

    /// `agent/memory`: each memory's file and entries; with a session, the facts of its
    /// ledger that no memory holds yet.
    pub async fn memory(
        self: &Arc<Self>,
        session: Option<&str>,
    ) -> Result<MemoryState, AgentError> {
        let ledger = match session {
            Some(id) => Some(
                self.handle(id)
                    .await?
                    .live
                    .lock()
                    .await
                    .session
                    .ledger
                    .clone(),
            ),
            None => None,
        };
        let files = self.memory_files();
        tokio::task::spawn_blocking(move || {
            let mut state = crate::store::memory::state(&files);
            if let Some(ledger) = ledger {
                state.offers = memory::offers(&ledger, &files.entries())
                    .into_iter()
                    .map(|offer| MemoryOffer {
                        text: offer.text,
                        source: offer.source.to_string(),
                    })
                    .collect();
            }
            state
        })
        .await
        .map_err(|err| AgentError::failed(err.to_string()))
    }

    /// `agent/memory/keep`: a fact the user chose, kept as theirs (secrets redacted).
    pub async fn keep_memory(
        &self,
        fact: &str,
        scope: Option<&str>,
    ) -> Result<MemoryKeepResult, AgentError> {
        if !self.host.config().memory_enabled {
            return Err(AgentError::invalid_params(
                "memory is turned off (memory.enabled)",
            ));
        }
        let scope = match scope {
            None => Scope::Workspace,
            Some(name) => Scope::from_name(name).ok_or_else(|| {
                AgentError::invalid_params(format!(
                    "unknown memory scope {name:?}: use \"workspace\" or \"user\""
                ))
            })?,
        };
        let fact = crate::store::secrets::redact(fact).into_owned();
        memory::check_fact(&fact).map_err(AgentError::invalid_params)?;
        let files = self.memory_files();
        let Some(path) = files.path(scope).map(|p| p.to_string_lossy().into_owned()) else {
            return Err(AgentError::failed(format!(
                "the {} memory has no place here (no home directory)",
                scope.name()
            )));
        };
        let (_, kept) = tokio::task::spawn_blocking(move || files.keep(scope, Author::User, &fact))
            .await
            .map_err(|err| AgentError::failed(err.to_string()))?
            .map_err(AgentError::failed)?;
        Ok(MemoryKeepResult { kept, path })
    }
}
