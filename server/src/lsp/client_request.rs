//! Requests from the server to the client (`agent/session/requestPermission`,
//! `workspace/applyEdit`, `window/workDoneProgress/create`, `client/registerCapability`),
//! each sent from a task of its own.
//!
//! tower-lsp 0.20 registers the waiter of a server request when it is sent and panics
//! ("receiver already dropped", the whole server exits) if the client's answer arrives
//! after the future that sent it was dropped: a timed-out or cancelled wait must never drop
//! it. The task lives until the client answers; whoever waited may have gone, and then the
//! late answer is logged and nothing else.
//!
//! A request whose waiter gives up before the answer (a permission request after the
//! turn's cancel or its timeout, an applyEdit past `lsp.applyEditTimeoutMs`) is withdrawn
//! with `$/cancelRequest`, so that the editor closes its dialog. tower-lsp picks the ids:
//! the writer notes the id of each such request as it goes out (`note_sent`), found again
//! by a digest of its method and params.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use tokio::sync::oneshot;
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types::request::Request;
use tower_lsp::Client;

use crate::locks::Locked;

/// Requests that are withdrawn when nobody waits for their answer any more.
const WITHDRAWN_WHEN_ABANDONED: [&str; 2] =
    ["agent/session/requestPermission", "workspace/applyEdit"];

/// The ids the writer saw go out, by digest (only the requests above, until answered).
static SENT: Mutex<Option<HashMap<u64, jsonrpc::Id>>> = Mutex::new(None);

/// Requests whose answers are read entry by entry, bounded (`bounded.rs`).
const READ_BOUNDED: [&str; 1] = ["agent/editor/diagnostics"];

/// The method of each request of `READ_BOUNDED` gone out and not answered yet, by id.
static AWAITED: Mutex<Option<HashMap<jsonrpc::Id, &'static str>>> = Mutex::new(None);

/// The method of the request an answer with `id` answers, when it is one of `READ_BOUNDED`.
pub(super) fn answered(id: &jsonrpc::Id) -> Option<&'static str> {
    AWAITED
        .locked()
        .as_mut()
        .and_then(|awaited| awaited.remove(id))
}

fn digest(method: &str, params: &serde_json::Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    method.hash(&mut hasher);
    params.to_string().hash(&mut hasher);
    hasher.finish()
}

/// The writer's note of a server request going out (`serve.rs`).
pub(super) fn note_sent(request: &jsonrpc::Request) {
    let (Some(id), method) = (request.id(), request.method()) else {
        return;
    };
    if let Some(bounded) = READ_BOUNDED.into_iter().find(|m| *m == method) {
        AWAITED
            .locked()
            .get_or_insert_with(HashMap::new)
            .insert(id.clone(), bounded);
    }
    if !WITHDRAWN_WHEN_ABANDONED.contains(&method) {
        return;
    }
    let params = request.params().cloned().unwrap_or(serde_json::Value::Null);
    SENT.locked()
        .get_or_insert_with(HashMap::new)
        .insert(digest(method, &params), id.clone());
}

fn forget(key: u64) -> Option<jsonrpc::Id> {
    SENT.locked().as_mut().and_then(|sent| sent.remove(&key))
}

/// Sends request `R`; its answer arrives on the receiver. Dropping the receiver (a timeout,
/// a cancel) is safe: the answer, when it comes, is logged and dropped.
pub(super) fn send<R>(client: &Client, params: R::Params) -> Answer<R::Result>
where
    R: Request,
    R::Params: Send + 'static,
    R::Result: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let key = serde_json::to_value(&params)
        .ok()
        .map(|value| digest(R::METHOD, &value));
    let sender = client.clone();
    tokio::spawn(async move {
        let answer = sender.send_request::<R>(params).await;
        if let Some(key) = key {
            forget(key);
        }
        if tx.send(answer).is_err() {
            tracing::info!(
                "the client answered {} after the server stopped waiting; the answer is ignored",
                R::METHOD
            );
        }
    });
    Answer {
        answer: Some(rx),
        withdraw: key
            .filter(|_| WITHDRAWN_WHEN_ABANDONED.contains(&R::METHOD))
            .map(|key| (client.clone(), key)),
    }
}

/// The client's answer to one request; dropped unanswered, the request is withdrawn.
pub(super) struct Answer<T> {
    answer: Option<oneshot::Receiver<jsonrpc::Result<T>>>,
    withdraw: Option<(Client, u64)>,
}

impl<T> Answer<T> {
    pub(super) async fn get(mut self) -> jsonrpc::Result<T> {
        let answer = self.answer.take().expect("an answer is waited for once");
        let answer = answer
            .await
            .unwrap_or_else(|_| Err(jsonrpc::Error::internal_error()));
        self.withdraw = None;
        answer
    }
}

impl<T> Drop for Answer<T> {
    fn drop(&mut self) {
        let Some((client, key)) = self.withdraw.take() else {
            return;
        };
        let Some(id) = forget(key) else {
            return;
        };
        let id = match id {
            jsonrpc::Id::Number(n) => tower_lsp::lsp_types::NumberOrString::Number(n as i32),
            jsonrpc::Id::String(s) => tower_lsp::lsp_types::NumberOrString::String(s),
            jsonrpc::Id::Null => return,
        };
        tracing::info!("withdrawing an unanswered request ({id:?}) with $/cancelRequest");
        tokio::spawn(async move {
            client
                .send_notification::<tower_lsp::lsp_types::notification::Cancel>(
                    tower_lsp::lsp_types::CancelParams { id },
                )
                .await;
        });
    }
}
