//! Document sync in transport order: didOpen/didChange/didClose go to the document worker
//! synchronously, before tower-lsp's concurrent handler pool could reorder them (tower-lsp
//! issue #284).

use super::*;
use crate::lsp::document_store::DocumentStore;
use agentls_core::document::TextChange;
use futures::future::{self, Either, Ready};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_lsp::jsonrpc::{Request, Response};
use tower_lsp::lsp_types::*;
use tower_service::Service;

/// Routes didOpen/didChange/didClose to the document worker *synchronously*, in the order
/// the transport read them, before tower-lsp's concurrent handler pool can reorder them
/// (tower-lsp issue #284). Everything else goes to the tower-lsp service unchanged.
pub(super) struct OrderedSync<S> {
    pub(super) inner: S,
    pub(super) documents: DocumentStore,
    /// False until `initialize` has answered: before that, LSP says to drop notifications,
    /// which the inner service does.
    pub(super) accepting: Arc<AtomicBool>,
    pub(super) lifecycle: Arc<Lifecycle>,
}

pub(super) const SYNC_METHODS: [&str; 3] = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
];

impl<S> Service<Request> for OrderedSync<S>
where
    S: Service<Request, Response = Option<Response>>,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = Either<Ready<Result<Option<Response>, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match request.method() {
            "shutdown" => self
                .lifecycle
                .shutdown_requested
                .store(true, Ordering::Release),
            "exit" => self.lifecycle.exited.notify_one(),
            _ => {}
        }
        let is_sync = request.id().is_none() && SYNC_METHODS.contains(&request.method());
        if !is_sync || !self.accepting.load(Ordering::Acquire) {
            return Either::Right(self.inner.call(request));
        }
        let (method, _, params) = request.into_parts();
        route_sync_notification(&self.documents, &method, params.unwrap_or(Value::Null));
        Either::Left(future::ready(Ok(None)))
    }
}

pub(super) fn route_sync_notification(documents: &DocumentStore, method: &str, params: Value) {
    fn parse<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Option<T> {
        serde_json::from_value(params)
            .map_err(|err| tracing::warn!("{method} with invalid params ignored: {err}"))
            .ok()
    }
    match method {
        "textDocument/didOpen" => {
            if let Some(p) = parse::<DidOpenTextDocumentParams>(method, params) {
                let d = p.text_document;
                documents.open(d.uri, d.language_id, d.version, d.text);
            }
        }
        "textDocument/didChange" => {
            if let Some(p) = parse::<DidChangeTextDocumentParams>(method, params) {
                let changes = p
                    .content_changes
                    .into_iter()
                    .map(|c| TextChange {
                        range: c.range,
                        text: c.text,
                    })
                    .collect();
                documents.change(p.text_document.uri, p.text_document.version, changes);
            }
        }
        "textDocument/didClose" => {
            if let Some(p) = parse::<DidCloseTextDocumentParams>(method, params) {
                documents.close(p.text_document.uri);
            }
        }
        _ => {}
    }
}
