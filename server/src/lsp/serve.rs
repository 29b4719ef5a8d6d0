//! The server loop over stdio, in place of tower-lsp's `Server`: frames are read and decoded
//! once (transport.rs) and handed straight to the tower-lsp service, with no second parse
//! and no pipe in between. What tower-lsp's loop does is kept: requests run at most
//! `MAX_CONCURRENCY` at a time, their answers and the server's own requests to the client
//! are written as they come, the client's answers go back to tower-lsp's client socket,
//! and reading stops once the service has exited.
//!
//! A call the service answers at once (a text-sync notification routed by `OrderedSync`)
//! skips the handler pool. Before the loop waits for input it calls `idle` (which hands the
//! document worker the edits read so far as one batch).

use super::transport::{self, Frame, FrameReader, Incoming, InputClosed};
use futures::channel::mpsc;
use futures::future::{Either, Ready};
use futures::{future, stream, FutureExt, SinkExt, StreamExt};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::future::Future;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tower_lsp::jsonrpc::{Request, Response};
use tower_lsp::ClientSocket;
use tower_service::Service;

/// Requests handled at once (tower-lsp's default).
const MAX_CONCURRENCY: usize = 4;
/// Requests read ahead of the handlers (tower-lsp's queue).
const QUEUE: usize = 100;

/// What the server writes: an answer, or a request or notification of its own.
#[derive(Serialize)]
#[serde(untagged)]
enum Outgoing {
    Response(Response),
    Request(Request),
}

/// A service that takes a text-sync notification straight from its raw params.
pub trait SyncNow {
    /// Applies the notification now, in read order; false when the service must have it as
    /// a request instead (before `initialize` has answered).
    fn sync_now(&mut self, method: &str, params: &RawValue) -> bool;
}

/// Serves `service` with the frames of `input` until the input ends or the service exits;
/// signals `closed` once every frame read has been handed to the service.
pub async fn serve<I, O, S, E, F>(
    input: I,
    output: O,
    max_frame: usize,
    mut service: S,
    socket: ClientSocket,
    closed: InputClosed,
    mut idle: impl FnMut(),
) where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
    S: Service<
        Request,
        Response = Option<Response>,
        Error = E,
        Future = Either<Ready<Result<Option<Response>, E>>, F>,
    >,
    S: SyncNow,
    E: std::fmt::Display,
    F: Future<Output = Result<Option<Response>, E>>,
{
    let (client_requests, mut client_responses) = socket.split();
    let (client_requests, client_abort) = stream::abortable(client_requests);
    let (mut responses_tx, responses_rx) = mpsc::channel::<Response>(0);
    let (mut tasks_tx, tasks_rx) = mpsc::channel(QUEUE);

    let run_tasks = tasks_rx
        .buffer_unordered(MAX_CONCURRENCY)
        .filter_map(future::ready)
        .map(Ok)
        .forward(responses_tx.clone().sink_map_err(|_| ()))
        .map(|_| ());

    let write_output = async {
        let mut out = BufWriter::new(output);
        let mut messages = stream::select(
            responses_rx.map(Outgoing::Response),
            client_requests.map(Outgoing::Request),
        );
        while let Some(message) = messages.next().await {
            if write(&mut out, &message).await.is_err() {
                return;
            }
            // Write what else is ready, then flush once.
            while let Some(Some(message)) = messages.next().now_or_never() {
                if write(&mut out, &message).await.is_err() {
                    return;
                }
            }
            if out.flush().await.is_err() {
                return;
            }
        }
    };

    let read_input = async {
        let mut reader = FrameReader::new(input, max_frame);
        loop {
            if !reader.has_frame_buffered() {
                idle();
            }
            let frame = reader.next().await;
            let request = match &frame {
                Frame::End => break,
                Frame::Skipped(why) => {
                    tracing::warn!("{why}");
                    transport::malformed(why)
                }
                Frame::Body(body) => match transport::decode(body) {
                    Incoming::Request(request) => request,
                    Incoming::Response(response) => {
                        if let Err(err) = client_responses.send(response).await {
                            tracing::error!("cannot hand a response to tower-lsp: {err}");
                            break;
                        }
                        continue;
                    }
                    Incoming::Sync { method, params } => {
                        if let Err(err) = future::poll_fn(|cx| service.poll_ready(cx)).await {
                            tracing::info!("{err}");
                            break;
                        }
                        if service.sync_now(method, params) {
                            continue;
                        }
                        let params =
                            serde_json::from_str::<Value>(params.get()).unwrap_or_default();
                        Request::build(method).params(params).finish()
                    }
                },
            };
            if let Err(err) = future::poll_fn(|cx| service.poll_ready(cx)).await {
                // The service has exited: nothing more is read.
                tracing::info!("{err}");
                break;
            }
            match service.call(request) {
                Either::Left(ready) => match ready.into_inner() {
                    Ok(None) => {}
                    Ok(Some(response)) => {
                        if responses_tx.send(response).await.is_err() {
                            break;
                        }
                    }
                    Err(err) => tracing::error!("{err}"),
                },
                Either::Right(pending) => {
                    let task = pending.map(|answer| {
                        answer.unwrap_or_else(|err| {
                            tracing::error!("{err}");
                            None
                        })
                    });
                    if tasks_tx.send(task).await.is_err() {
                        break;
                    }
                }
            }
        }
        idle();
        closed.signal();
        tasks_tx.disconnect();
        responses_tx.disconnect();
        client_abort.abort();
    };

    futures::join!(write_output, read_input, run_tasks);
}

async fn write<W: AsyncWrite + Unpin>(out: &mut W, message: &Outgoing) -> std::io::Result<()> {
    let body = match serde_json::to_vec(message) {
        Ok(body) => body,
        Err(err) => {
            tracing::error!("cannot encode a message: {err}");
            return Ok(());
        }
    };
    out.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    out.write_all(&body).await
}
