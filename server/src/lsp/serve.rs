//! The server loop over stdio, in place of tower-lsp's `Server`: frames are read and decoded
//! once (transport.rs) and handed straight to the tower-lsp service, with no second parse
//! and no pipe in between. What tower-lsp's loop does is kept: requests run at most
//! `MAX_CONCURRENCY` at a time, their answers and the server's own requests to the client
//! are written as they come, the client's answers go back to tower-lsp's client socket,
//! and reading stops once the service has exited.
//!
//! A call the service answers at once (a text-sync notification routed by `OrderedSync`)
//! skips the handler pool.

use super::transport::{self, Frame, FrameReader, Incoming, InputClosed};
use futures::channel::mpsc;
use futures::future::{Either, Ready};
use futures::{future, stream, FutureExt, Sink, SinkExt, Stream, StreamExt};
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

    let write_output = write_output(
        output,
        stream::select(
            responses_rx.map(Outgoing::Response),
            client_requests.map(|request| {
                super::client_request::note_sent(&request);
                Outgoing::Request(request)
            }),
        ),
    );

    let read_input = async {
        let mut reader = FrameReader::new(input, max_frame);
        loop {
            let frame = reader.next().await;
            let request = match next_request(frame, &mut service, &mut client_responses).await {
                Step::Call(request) => request,
                Step::Handled => continue,
                Step::Stop => break,
            };
            if !call(&mut service, request, &mut responses_tx, &mut tasks_tx).await {
                break;
            }
        }
        closed.signal();
        tasks_tx.disconnect();
        responses_tx.disconnect();
        client_abort.abort();
    };

    futures::join!(write_output, read_input, run_tasks);
}

/// A pending answer of the service, its error logged.
type Answer<F, E> = future::Map<F, fn(Result<Option<Response>, E>) -> Option<Response>>;

fn logged<E: std::fmt::Display>(answer: Result<Option<Response>, E>) -> Option<Response> {
    answer.unwrap_or_else(|err| {
        tracing::error!("{err}");
        None
    })
}

/// Hands `request` to the service once it is ready: an answer at hand is queued for
/// writing, a pending one joins the running tasks. False when the service exited or the
/// output or the tasks are gone: nothing more is read.
async fn call<S, E, F>(
    service: &mut S,
    request: Request,
    responses: &mut mpsc::Sender<Response>,
    tasks: &mut mpsc::Sender<Answer<F, E>>,
) -> bool
where
    S: Service<
        Request,
        Response = Option<Response>,
        Error = E,
        Future = Either<Ready<Result<Option<Response>, E>>, F>,
    >,
    E: std::fmt::Display,
    F: Future<Output = Result<Option<Response>, E>>,
{
    if let Err(err) = future::poll_fn(|cx| service.poll_ready(cx)).await {
        tracing::info!("{err}");
        return false;
    }
    match service.call(request) {
        Either::Left(ready) => match ready.into_inner() {
            Ok(None) => true,
            Ok(Some(response)) => responses.send(response).await.is_ok(),
            Err(err) => {
                tracing::error!("{err}");
                true
            }
        },
        Either::Right(pending) => {
            let logged: fn(Result<Option<Response>, E>) -> Option<Response> = logged::<E>;
            tasks.send(pending.map(logged)).await.is_ok()
        }
    }
}

/// Writes the messages as they come; what is ready together is flushed once.
async fn write_output<O: AsyncWrite + Unpin>(
    output: O,
    mut messages: impl Stream<Item = Outgoing> + Unpin,
) {
    let mut out = BufWriter::new(output);
    while let Some(message) = messages.next().await {
        if write(&mut out, &message).await.is_err() {
            return;
        }
        while let Some(Some(message)) = messages.next().now_or_never() {
            if write(&mut out, &message).await.is_err() {
                return;
            }
        }
        if out.flush().await.is_err() {
            return;
        }
    }
}

/// What a frame asks of the read loop.
enum Step {
    /// A request or notification for the service.
    Call(Request),
    /// Handled here: a client's answer passed on, a text sync applied.
    Handled,
    /// The input ended or the service is gone.
    Stop,
}

/// The request a frame holds for the service. Answers to the server's requests go to
/// tower-lsp; text syncs are applied at once when the service can (`SyncNow`); what is not
/// a message becomes the transport's stand-in (`transport::malformed`).
async fn next_request<S, E>(
    frame: Frame,
    service: &mut S,
    client_responses: &mut (impl Sink<Response, Error = impl std::fmt::Display> + Unpin),
) -> Step
where
    S: Service<Request, Error = E> + SyncNow,
    E: std::fmt::Display,
{
    match &frame {
        Frame::End => Step::Stop,
        Frame::Skipped(why) => {
            tracing::warn!("{why}");
            Step::Call(transport::malformed(why))
        }
        Frame::Body(body) => match transport::decode(body) {
            Incoming::Request(request) => Step::Call(request),
            Incoming::Response(response) => answered(response, client_responses).await,
            Incoming::Answer { id, result } => {
                let method = super::client_request::answered(&id);
                let response = super::bounded::answer(id, method, result);
                answered(response, client_responses).await
            }
            Incoming::Bounded { method, params } => {
                Step::Call(super::bounded::notification(method, params))
            }
            Incoming::Sync { method, params } => {
                if let Err(err) = future::poll_fn(|cx| service.poll_ready(cx)).await {
                    tracing::info!("{err}");
                    return Step::Stop;
                }
                if service.sync_now(method, params) {
                    return Step::Handled;
                }
                let params = serde_json::from_str::<Value>(params.get()).unwrap_or_default();
                Step::Call(Request::build(method).params(params).finish())
            }
        },
    }
}

/// Hands the client's answer to tower-lsp's waiter.
async fn answered(
    response: Response,
    client_responses: &mut (impl Sink<Response, Error = impl std::fmt::Display> + Unpin),
) -> Step {
    match client_responses.send(response).await {
        Ok(()) => Step::Handled,
        Err(err) => {
            tracing::error!("cannot hand a response to tower-lsp: {err}");
            Step::Stop
        }
    }
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
