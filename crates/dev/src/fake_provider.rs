//! A scripted model provider for tests and benchmarks: a real HTTP/1.1 server on
//! 127.0.0.1 that answers each request with the next scripted reply, speaking the real wire
//! formats (OpenAI chat-completion chunks and Anthropic message events as server-sent
//! events, chunked transfer encoding) and recording every request it received.
//!
//! It is deliberately small (one request per connection, `Connection: close`), but what
//! reaches the client is byte for byte what a provider sends, including faults: HTTP error
//! statuses with Retry-After, malformed lines, a stream cut without its final chunk, delays.

use agentls::locks::Locked;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One step of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `data: <text>` and a blank line.
    Data(String),
    /// `event: <event>`, `data: <data>` and a blank line (Anthropic's framing).
    Event {
        event: String,
        data: String,
    },
    /// Bytes sent as they are (to send malformed lines).
    Raw(String),
    Delay(Duration),
    /// Close the connection without ending the chunked body: a stream cut mid-way.
    Cut,
    /// Wait until the test calls `FakeProvider::release` (a model thinking as long as the
    /// test needs, without a clock).
    Hold,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200 with `text/event-stream`, each step flushed as its own chunk.
    Sse { steps: Vec<Step> },
    /// A whole non-streamed answer (errors).
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (Null when it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Makes a reply from a request's JSON body.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

#[derive(Default)]
struct Script {
    /// Answers requests containing the needle when no queued reply fits (a summarizer).
    responders: Vec<(String, Responder)>,
    replies: VecDeque<Reply>,
    /// Replies for requests whose body contains the needle, before the common queue (a
    /// summary call racing a turn's call gets the summary).
    routes: Vec<(String, VecDeque<Reply>)>,
    requests: Vec<RecordedRequest>,
    /// When each streamed step was flushed to the socket (for latency benchmarks).
    sent: Vec<Instant>,
    /// Refuse a request carrying a tool call whose arguments are not a JSON object, as
    /// llama.cpp's server does (`refuse_bad_arguments`).
    strict_arguments: bool,
}

pub struct FakeProvider {
    address: std::net::SocketAddr,
    script: Arc<Mutex<Script>>,
    release: Arc<tokio::sync::Semaphore>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeProvider {
    /// Listens on a free loopback port; answers until dropped.
    pub async fn start() -> FakeProvider {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let address = listener.local_addr().expect("local address");
        let script: Arc<Mutex<Script>> = Arc::default();
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let shared = script.clone();
        let shared_release = release.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let script = shared.clone();
                let release = shared_release.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, script, release).await;
                });
            }
        });
        FakeProvider {
            address,
            script,
            release,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT` (an OpenAI base URL adds `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Queues the reply to the next request whose JSON body contains `needle`.
    pub fn push_for(&self, needle: &str, reply: Reply) {
        let mut script = self.lock();
        match script.routes.iter_mut().find(|(n, _)| n == needle) {
            Some((_, queue)) => queue.push_back(reply),
            None => script
                .routes
                .push((needle.to_string(), VecDeque::from([reply]))),
        }
    }

    /// Answers every later request whose body contains `needle`, when no queued reply is
    /// routed to it, with `respond(body)`.
    pub fn respond_to(&self, needle: &str, respond: Responder) {
        self.lock().responders.push((needle.to_string(), respond));
    }

    /// From now on, a request whose messages carry a tool call with arguments that are not
    /// a JSON object gets llama.cpp's answer to it: HTTP 500, "Failed to parse tool call
    /// arguments as JSON" (its server parses them to render the chat template).
    pub fn refuse_bad_arguments(&self) {
        self.lock().strict_arguments = true;
    }

    /// Lets one held stream (`Step::Hold`) go on.
    pub fn release(&self) {
        self.release.add_permits(1);
    }

    /// Queues the reply to the next request.
    pub fn push(&self, reply: Reply) {
        self.lock().replies.push_back(reply);
    }

    /// Queues the two replies of the commonest turn: the model calls `name` with `arguments`
    /// (JSON text) as `call_id`, then answers `text` once it has the call's output.
    pub fn push_call_then_text(&self, call_id: &str, name: &str, arguments: &str, text: &str) {
        self.push(FakeProvider::openai_tool_calls(
            &[(call_id, name, &[arguments])],
            None,
        ));
        self.push(FakeProvider::openai_text(&[text], None));
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// When each data step of every stream so far was flushed, in order.
    pub fn sent_times(&self) -> Vec<Instant> {
        self.lock().sent.clone()
    }

    /// Replies queued and not yet used.
    pub fn pending(&self) -> usize {
        self.lock().replies.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.locked()
    }

    /// An OpenAI stream of text chunks, then `stop`, the usage chunk when given, `[DONE]`.
    pub fn openai_text(chunks: &[&str], usage: Option<(u64, u64)>) -> Reply {
        let mut steps = vec![openai_chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )];
        steps.extend(
            chunks
                .iter()
                .map(|text| openai_chunk(json!({"content": text}), None)),
        );
        steps.push(openai_chunk(json!({}), Some("stop")));
        openai_end(steps, usage)
    }

    /// An OpenAI stream of tool calls `(id, name, argument pieces)`, each call's arguments
    /// split across deltas as given, then `tool_calls`, the usage chunk when given, `[DONE]`.
    pub fn openai_tool_calls(calls: &[(&str, &str, &[&str])], usage: Option<(u64, u64)>) -> Reply {
        let mut steps = vec![openai_chunk(
            json!({"role": "assistant", "content": null}),
            None,
        )];
        for (index, (id, name, pieces)) in calls.iter().enumerate() {
            steps.push(openai_chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
            for piece in pieces.iter() {
                steps.push(openai_chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                ));
            }
        }
        steps.push(openai_chunk(json!({}), Some("tool_calls")));
        openai_end(steps, usage)
    }

    /// `openai_tool_calls` with each call's arguments in one delta: `(id, name, arguments)`.
    pub fn openai_whole_tool_calls(
        calls: &[(String, String, String)],
        usage: Option<(u64, u64)>,
    ) -> Reply {
        let pieces: Vec<[&str; 1]> = calls.iter().map(|(_, _, a)| [a.as_str()]).collect();
        let specs: Vec<(&str, &str, &[&str])> = calls
            .iter()
            .zip(&pieces)
            .map(|((id, name, _), piece)| (id.as_str(), name.as_str(), &piece[..]))
            .collect();
        FakeProvider::openai_tool_calls(&specs, usage)
    }

    /// HTTP 400 with OpenAI's `context_length_exceeded` error.
    pub fn openai_context_length_exceeded() -> Reply {
        Reply::Http {
            status: 400,
            headers: vec![],
            body: json!({"error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 8300 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }})
            .to_string(),
        }
    }

    /// An Anthropic message of text blocks' deltas, with usage when given.
    pub fn anthropic_text(chunks: &[&str], usage: Option<(u64, u64)>) -> Reply {
        let (input, output) = usage.unwrap_or((0, 0));
        let mut steps = vec![anthropic_start(input)];
        steps.push(anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for text in chunks {
            steps.push(anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ));
        }
        steps.push(anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        anthropic_end(steps, "end_turn", output)
    }

    /// An Anthropic message with a text block, then one tool_use block whose input JSON
    /// arrives in the given pieces.
    pub fn anthropic_tool_use(text: &str, id: &str, name: &str, pieces: &[&str]) -> Reply {
        let mut steps = vec![
            anthropic_start(0),
            anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ),
            anthropic_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ),
        ];
        for piece in pieces {
            steps.push(anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        steps.push(anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ));
        anthropic_end(steps, "tool_use", 0)
    }
}

/// One `chat.completion.chunk` with `delta` (and a finish reason).
pub fn openai_chunk(delta: Value, finish_reason: Option<&str>) -> Step {
    Step::Data(
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
        .to_string(),
    )
}

fn openai_end(mut steps: Vec<Step>, usage: Option<(u64, u64)>) -> Reply {
    if let Some((prompt, completion)) = usage {
        steps.push(Step::Data(
            json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "fake",
                "choices": [],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
            })
            .to_string(),
        ));
    }
    steps.push(Step::Data("[DONE]".into()));
    Reply::Sse { steps }
}

fn anthropic_event(event: &str, data: Value) -> Step {
    Step::Event {
        event: event.to_string(),
        data: data.to_string(),
    }
}

fn anthropic_start(input_tokens: u64) -> Step {
    anthropic_event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "content": [],
            "model": "fake", "stop_reason": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }}),
    )
}

fn anthropic_end(mut steps: Vec<Step>, stop_reason: &str, output_tokens: u64) -> Reply {
    steps.push(anthropic_event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
    ));
    steps.push(anthropic_event(
        "message_stop",
        json!({"type": "message_stop"}),
    ));
    Reply::Sse { steps }
}

/// Reads one request, records it, writes the next reply.
async fn serve(
    mut stream: TcpStream,
    script: Arc<Mutex<Script>>,
    release: Arc<tokio::sync::Semaphore>,
) -> std::io::Result<()> {
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    if request.path.starts_with("/__") {
        let (status, answer) = control(&request, &script, &release);
        let body = answer.to_string();
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            reason(status),
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.flush().await?;
        return Ok(());
    }
    let reply = next_reply(&script, request);
    match reply {
        Reply::Http {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                reason(status),
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
        Reply::Sse { steps } => {
            if !write_sse(&mut stream, steps, &script, &release).await? {
                return Ok(());
            }
        }
    }
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok(())
}

/// The reply to `request` (recorded first): a routed one whose needle its body holds, else a
/// responder's, else the next in line, else a 500 that says nothing was scripted.
fn next_reply(script: &Mutex<Script>, request: RecordedRequest) -> Reply {
    let reply = {
        let mut script = script.locked();
        let body = request.body.to_string();
        let bad_arguments = script.strict_arguments && has_bad_arguments(&request.body);
        script.requests.push(request);
        if bad_arguments {
            return Reply::Http {
                status: 500,
                headers: vec![],
                body: json!({"error": {"code": 500, "message": "Failed to parse tool call arguments as JSON", "type": "server_error"}}).to_string(),
            };
        }
        let routed = script
            .routes
            .iter_mut()
            .find(|(needle, queue)| !queue.is_empty() && body.contains(needle.as_str()))
            .and_then(|(_, queue)| queue.pop_front());
        let dynamic = || {
            script
                .responders
                .iter()
                .find(|(needle, _)| body.contains(needle.as_str()))
                .map(|(_, respond)| respond.clone())
        };
        match routed {
            Some(reply) => Some(reply),
            None => match dynamic() {
                Some(respond) => Some(respond(&serde_json::from_str(&body).unwrap_or(Value::Null))),
                None => script.replies.pop_front(),
            },
        }
    };
    reply.unwrap_or_else(|| Reply::Http {
        status: 500,
        headers: vec![],
        body:
            json!({"error": {"message": "fake provider: no reply was scripted for this request"}})
                .to_string(),
    })
}

/// Whether an OpenAI request's messages carry a tool call whose arguments are not a JSON
/// object.
fn has_bad_arguments(body: &Value) -> bool {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .any(|call| {
            let arguments = call["function"]["arguments"].as_str().unwrap_or("");
            !matches!(
                serde_json::from_str::<Value>(arguments),
                Ok(Value::Object(_))
            )
        })
}

/// Streams `steps` as a chunked SSE body; false when a `Step::Cut` broke it off.
async fn write_sse(
    stream: &mut TcpStream,
    steps: Vec<Step>,
    script: &Mutex<Script>,
    release: &tokio::sync::Semaphore,
) -> std::io::Result<bool> {
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        )
        .await?;
    for step in steps {
        let bytes = match step {
            Step::Data(data) => format!("data: {data}\n\n"),
            Step::Event { event, data } => format!("event: {event}\ndata: {data}\n\n"),
            Step::Raw(raw) => raw,
            Step::Delay(delay) => {
                tokio::time::sleep(delay).await;
                continue;
            }
            Step::Hold => {
                if let Ok(permit) = release.acquire().await {
                    permit.forget();
                }
                continue;
            }
            Step::Cut => {
                // Abrupt: no final chunk, so the client sees a broken body.
                stream.flush().await?;
                return Ok(false);
            }
        };
        let chunk = format!("{:x}\r\n{bytes}\r\n", bytes.len());
        stream.write_all(chunk.as_bytes()).await?;
        stream.flush().await?;
        script.locked().sent.push(Instant::now());
    }
    stream.write_all(b"0\r\n\r\n").await?;
    Ok(true)
}

/// `agentls-dev fake-provider [--script FILE]`: a fake provider as a process, for the editor
/// plugins' tests. The script (JSON) is `{"replies": [R, …], "routes": {"needle": [R, …]}}`
/// with replies as `reply_from_json` reads them; more can be pushed at `/__push`. Prints
/// the base URL on stdout, then serves until stdin closes.
pub async fn run_process(script: Option<&str>) -> Result<(), String> {
    let fake = FakeProvider::start().await;
    if let Some(path) = script {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|e| format!("{path} is not JSON: {e}"))?;
        for reply in value["replies"].as_array().into_iter().flatten() {
            fake.push(reply_from_json(reply)?);
        }
        for (needle, replies) in value["routes"].as_object().into_iter().flatten() {
            for reply in replies.as_array().into_iter().flatten() {
                fake.push_for(needle, reply_from_json(reply)?);
            }
        }
    }
    {
        use std::io::Write;
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "{}/v1", fake.base_url());
        let _ = stdout.flush();
    }
    // Until whoever started us closes our stdin (or exits).
    let mut stdin = tokio::io::stdin();
    let mut buffer = [0u8; 256];
    while stdin
        .read(&mut buffer)
        .await
        .map(|n| n > 0)
        .unwrap_or(false)
    {}
    Ok(())
}

/// The control endpoints, for a fake provider run as a process (`agentls-dev fake-provider`)
/// by tests in other languages: `POST /__push {"reply": R, "route"?: needle}` queues a
/// reply, `GET /__requests` lists what was received, `POST /__release` lets a held
/// stream go on.
fn control(
    request: &RecordedRequest,
    script: &Arc<Mutex<Script>>,
    release: &Arc<tokio::sync::Semaphore>,
) -> (u16, Value) {
    let mut script = script.locked();
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/__push") => match reply_from_json(&request.body["reply"]) {
            Ok(reply) => {
                match request.body["route"].as_str() {
                    Some(needle) => match script.routes.iter_mut().find(|(n, _)| n == needle) {
                        Some((_, queue)) => queue.push_back(reply),
                        None => script
                            .routes
                            .push((needle.to_string(), VecDeque::from([reply]))),
                    },
                    None => script.replies.push_back(reply),
                }
                (200, json!({"queued": script.replies.len()}))
            }
            Err(why) => (400, json!({"error": {"message": why}})),
        },
        ("GET", "/__requests") => (
            200,
            Value::Array(
                script
                    .requests
                    .iter()
                    .map(|r| json!({"method": r.method, "path": r.path, "body": r.body}))
                    .collect(),
            ),
        ),
        ("POST", "/__release") => {
            release.add_permits(1);
            (200, json!({"released": true}))
        }
        _ => (
            404,
            json!({"error": {"message": format!("no control endpoint {} {}", request.method, request.path)}}),
        ),
    }
}

/// A reply described in JSON (for `agentls-dev fake-provider` and its `/__push`):
/// - `{"text": ["Hel", "lo"], "usage"?: [input, output], "chunkDelayMs"?: n, "firstDelayMs"?: n}`
/// - `{"toolCalls": [{"id", "name", "arguments": string or object}], "usage"?: [i, o]}`
/// - `{"http": {"status": 500, "body": "…", "headers"?: {"Retry-After": "1"}}}`
/// - `{"contextLengthExceeded": true}`
/// - `{"steps": [{"data": "…"} | {"raw": "…"} | {"delayMs": n} | {"cut": true} | {"hold": true}]}`
pub fn reply_from_json(value: &Value) -> Result<Reply, String> {
    let usage = value["usage"]
        .as_array()
        .and_then(|pair| Some((pair.first()?.as_u64()?, pair.get(1)?.as_u64()?)));
    if let Some(chunks) = value["text"].as_array() {
        return Ok(timed_text(value, chunks, usage));
    }
    if let Some(calls) = value["toolCalls"].as_array() {
        let owned: Vec<(String, String, String)> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let arguments = match &c["arguments"] {
                    Value::String(text) => text.clone(),
                    Value::Null => "{}".to_string(),
                    other => other.to_string(),
                };
                (
                    c["id"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("call_{i}")),
                    c["name"].as_str().unwrap_or("").to_string(),
                    arguments,
                )
            })
            .collect();
        return Ok(FakeProvider::openai_whole_tool_calls(&owned, usage));
    }
    if let Some(http) = value.get("http") {
        return Ok(http_from_json(http));
    }
    if value["contextLengthExceeded"] == true {
        return Ok(FakeProvider::openai_context_length_exceeded());
    }
    if let Some(steps) = value["steps"].as_array() {
        let steps = steps
            .iter()
            .map(step_from_json)
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Reply::Sse { steps });
    }
    Err(format!(
        "unknown reply {value}: use text, toolCalls, http, contextLengthExceeded or steps"
    ))
}

/// `{"text": [...]}`: streamed chunks, with `firstDelayMs` before the first content chunk
/// and `chunkDelayMs` between the next ones.
fn timed_text(value: &Value, chunks: &[Value], usage: Option<(u64, u64)>) -> Reply {
    let chunks: Vec<&str> = chunks.iter().filter_map(Value::as_str).collect();
    let Reply::Sse { steps } = FakeProvider::openai_text(&chunks, usage) else {
        unreachable!("openai_text streams")
    };
    let between = value["chunkDelayMs"].as_u64().map(Duration::from_millis);
    let first = value["firstDelayMs"].as_u64().map(Duration::from_millis);
    let mut timed = Vec::new();
    for (i, step) in steps.into_iter().enumerate() {
        // Step 0 is the role chunk; content chunks follow.
        if i == 1 {
            if let Some(first) = first {
                timed.push(Step::Delay(first));
            }
        } else if i > 1 && i <= chunks.len() {
            if let Some(between) = between {
                timed.push(Step::Delay(between));
            }
        }
        timed.push(step);
    }
    Reply::Sse { steps: timed }
}

/// `{"http": {"status", "headers", "body"}}`: a whole HTTP answer.
fn http_from_json(http: &Value) -> Reply {
    Reply::Http {
        status: http["status"].as_u64().unwrap_or(500) as u16,
        headers: http["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default(),
        body: match &http["body"] {
            Value::String(text) => text.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        },
    }
}

/// One step of `{"steps": [...]}`.
fn step_from_json(step: &Value) -> Result<Step, String> {
    if let Some(data) = step["data"].as_str() {
        Ok(Step::Data(data.to_string()))
    } else if let Some(raw) = step["raw"].as_str() {
        Ok(Step::Raw(raw.to_string()))
    } else if let Some(ms) = step["delayMs"].as_u64() {
        Ok(Step::Delay(Duration::from_millis(ms)))
    } else if step["cut"] == true {
        Ok(Step::Cut)
    } else if step["hold"] == true {
        Ok(Step::Hold)
    } else {
        Err(format!("unknown step {step}"))
    }
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
