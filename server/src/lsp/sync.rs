//! Document sync in transport order: didOpen/didChange/didClose go to the document worker
//! synchronously, before tower-lsp's concurrent handler pool could reorder them (tower-lsp
//! issue #284).

use super::Lifecycle;
use crate::lsp::document_store::DocumentStore;
use agentls_core::document::TextChange;
use futures::future::{self, Either, Ready};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
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
    /// The uri of the last didChange read raw, as sent and parsed (see `LastUri`).
    pub(super) last_uri: LastUri,
    /// Told of each document synced: a review finding in it may have gone stale.
    pub(super) findings: Arc<super::review::Findings>,
}

/// The uri of the last didChange read raw: its text as the client sent it and its parsed
/// `Url`. A burst of keystrokes names one document again and again; its uri is compared as
/// text rather than parsed for every frame.
#[derive(Default)]
pub(super) struct LastUri(Option<(String, Url)>);

impl LastUri {
    /// The `Url` of `text`, parsed only when it is not the last one's; None when it is not
    /// a url.
    fn get(&mut self, text: &str) -> Option<Url> {
        match &self.0 {
            Some((last, uri)) if last == text => Some(uri.clone()),
            _ => {
                let uri = Url::parse(text).ok()?;
                self.0 = Some((text.to_owned(), uri.clone()));
                Some(uri)
            }
        }
    }
}

use super::transport::SYNC_METHODS;

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
        if let Some(uri) =
            route_sync_notification(&self.documents, &method, params.unwrap_or(Value::Null))
        {
            self.findings.touched(&uri);
        }
        Either::Left(future::ready(Ok(None)))
    }
}

impl<S> super::serve::SyncNow for OrderedSync<S> {
    fn sync_now(&mut self, method: &str, params: &RawValue) -> bool {
        if !self.accepting.load(Ordering::Acquire) {
            return false;
        }
        let raw = if method == "textDocument/didChange" {
            change_raw(&self.documents, &mut self.last_uri, params)
        } else {
            None
        };
        let uri = raw.or_else(|| route(&self.documents, method, Params::Raw(params)));
        if let Some(uri) = uri {
            self.findings.touched(&uri);
        }
        true
    }
}

/// A didChange's params with the uri left as text (for `LastUri`); otherwise
/// `DidChangeTextDocumentParams` field for field, with the same names and types.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDidChange<'a> {
    #[serde(borrow)]
    text_document: RawVersionedDocument<'a>,
    content_changes: Vec<TextDocumentContentChangeEvent>,
}

#[derive(Deserialize)]
struct RawVersionedDocument<'a> {
    #[serde(borrow)]
    uri: Cow<'a, str>,
    version: i32,
}

/// The keystroke path: a didChange decoded from its JSON text with its uri looked up in
/// `last_uri`: the document's uri. None when the params are not a valid didChange's as read
/// this way: the caller takes the usual road, which gives the usual warning (or, for a
/// duplicate key, the usual reading).
fn change_raw(documents: &DocumentStore, last_uri: &mut LastUri, params: &RawValue) -> Option<Url> {
    let p = serde_json::from_str::<RawDidChange>(params.get()).ok()?;
    let uri = last_uri.get(&p.text_document.uri)?;
    documents.change(
        uri.clone(),
        p.text_document.version,
        text_changes(p.content_changes),
    );
    Some(uri)
}

fn text_changes(changes: Vec<TextDocumentContentChangeEvent>) -> Vec<TextChange> {
    changes
        .into_iter()
        .map(|c| TextChange {
            range: c.range,
            text: c.text,
        })
        .collect()
}

/// The document's uri when the notification was handed on.
pub(super) fn route_sync_notification(
    documents: &DocumentStore,
    method: &str,
    params: Value,
) -> Option<Url> {
    route(documents, method, Params::Value(params))
}

/// A notification's params, decoded or still JSON text.
enum Params<'a> {
    Value(Value),
    Raw(&'a RawValue),
}

impl Params<'_> {
    fn parse<T: DeserializeOwned>(self, method: &str) -> Option<T> {
        match self {
            Params::Value(value) => parse_value(method, value),
            Params::Raw(raw) => parse_raw(method, raw),
        }
    }
}

fn parse_value<T: DeserializeOwned>(method: &str, params: Value) -> Option<T> {
    serde_json::from_value(params)
        .map_err(|err| tracing::warn!("{method} with invalid params ignored: {err}"))
        .ok()
}

/// Params decoded straight from their JSON text. What that refuses is decoded through a
/// `Value` as before, so every input gets the same answer and the same warning as from
/// `parse_value` (a duplicate key, refused by the typed read, is the last one's there).
fn parse_raw<T: DeserializeOwned>(method: &str, params: &RawValue) -> Option<T> {
    serde_json::from_str(params.get()).ok().or_else(|| {
        parse_value(
            method,
            serde_json::from_str(params.get()).unwrap_or_default(),
        )
    })
}

/// Hands one text-sync notification to the document worker (invalid params: logged); the
/// document's uri when it did.
fn route(documents: &DocumentStore, method: &str, params: Params) -> Option<Url> {
    match method {
        "textDocument/didOpen" => {
            let d = params
                .parse::<DidOpenTextDocumentParams>(method)?
                .text_document;
            documents.open(d.uri.clone(), d.language_id, d.version, d.text);
            Some(d.uri)
        }
        "textDocument/didChange" => {
            let p = params.parse::<DidChangeTextDocumentParams>(method)?;
            let changes = text_changes(p.content_changes);
            let uri = p.text_document.uri;
            documents.change(uri.clone(), p.text_document.version, changes);
            Some(uri)
        }
        "textDocument/didClose" => {
            let uri = params
                .parse::<DidCloseTextDocumentParams>(method)?
                .text_document
                .uri;
            documents.close(uri.clone());
            Some(uri)
        }
        _ => None,
    }
}
