//! Requests from the server to the client (`agent/session/requestPermission`,
//! `workspace/applyEdit`, `window/workDoneProgress/create`, `client/registerCapability`),
//! each sent from a task of its own.
//!
//! tower-lsp 0.20 registers the waiter of a server request when it is sent and panics
//! ("receiver already dropped", the whole server exits) if the client's answer arrives
//! after the future that sent it was dropped: a timed-out or cancelled wait must never drop
//! it. The task lives until the client answers; whoever waited may have gone, and then the
//! late answer is logged and nothing else.

use tokio::sync::oneshot;
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types::request::Request;
use tower_lsp::Client;

/// Sends request `R`; its answer arrives on the receiver. Dropping the receiver (a timeout,
/// a cancel) is safe: the answer, when it comes, is logged and dropped.
pub(super) fn send<R>(client: &Client, params: R::Params) -> Answer<R::Result>
where
    R: Request,
    R::Params: Send + 'static,
    R::Result: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let client = client.clone();
    tokio::spawn(async move {
        let answer = client.send_request::<R>(params).await;
        if tx.send(answer).is_err() {
            tracing::info!(
                "the client answered {} after the server stopped waiting; the answer is ignored",
                R::METHOD
            );
        }
    });
    Answer(rx)
}

/// The client's answer to one request.
pub(super) struct Answer<T>(oneshot::Receiver<jsonrpc::Result<T>>);

impl<T> Answer<T> {
    pub(super) async fn get(self) -> jsonrpc::Result<T> {
        self.0
            .await
            .unwrap_or_else(|_| Err(jsonrpc::Error::internal_error()))
    }
}
