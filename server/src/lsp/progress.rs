//! `$/progress` for long work (indexing, compaction), when the client can show it.

use super::State;
use crate::locks::ReadWriteLocked;
use std::sync::atomic::Ordering;
use tower_lsp::lsp_types::notification::Progress;
use tower_lsp::lsp_types::request::WorkDoneProgressCreate;
use tower_lsp::lsp_types::*;
use tower_lsp::Client;

/// `$/progress` for one piece of work, or nothing when the client cannot show progress.
pub(super) struct Progressor {
    pub(super) token: Option<NumberOrString>,
}

impl Progressor {
    pub(super) async fn start(client: &Client, state: &State, title: &str) -> Progressor {
        let support = *state.support.read_locked();
        if !support.work_done_progress {
            return Progressor { token: None };
        }
        let n = state.progress_tokens.fetch_add(1, Ordering::Relaxed);
        let token = NumberOrString::String(format!("agentls/progress/{n}"));
        let created = super::client_request::send::<WorkDoneProgressCreate>(
            client,
            WorkDoneProgressCreateParams {
                token: token.clone(),
            },
        )
        .get()
        .await;
        if let Err(err) = created {
            tracing::debug!("client refused a progress token: {err}");
            return Progressor { token: None };
        }
        let progress = Progressor { token: Some(token) };
        progress
            .send(
                client,
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title: title.into(),
                    cancellable: Some(false),
                    message: None,
                    percentage: None,
                }),
            )
            .await;
        progress
    }

    pub(super) async fn send(&self, client: &Client, value: WorkDoneProgress) {
        if let Some(token) = &self.token {
            client
                .send_notification::<Progress>(ProgressParams {
                    token: token.clone(),
                    value: ProgressParamsValue::WorkDone(value),
                })
                .await;
        }
    }

    pub(super) async fn report(&self, client: &Client, message: String) {
        self.send(
            client,
            WorkDoneProgress::Report(WorkDoneProgressReport {
                cancellable: None,
                message: Some(message),
                percentage: None,
            }),
        )
        .await;
    }

    pub(super) async fn end(&self, client: &Client, message: String) {
        self.send(
            client,
            WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(message),
            }),
        )
        .await;
    }
}
