//! Shared by the agent end-to-end tests: a workspace, a server wired to the fake
//! provider, and readers of the updates a turn sends.

use super::{start, Options, Server};
pub use agentls_dev::fake_provider::FakeProvider;
use agentls_dev::fake_provider::{RecordedRequest, Step};
use agentls_dev::lsp_client::{Answer, Responder, ServerMessage};
use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub struct Workspace {
    pub _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub state: tempfile::TempDir,
}

pub fn workspace() -> Workspace {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::write(
        root.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    41\n}\n",
    )
    .unwrap();
    fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
    let root = root.canonicalize().unwrap();
    Workspace {
        _dir: dir,
        root,
        state: tempfile::tempdir().unwrap(),
    }
}

/// A workspace and a fake provider: the prologue of most agent tests.
pub async fn workspace_and_fake() -> (Workspace, FakeProvider) {
    (workspace(), FakeProvider::start().await)
}

pub fn provider_options(fake: &FakeProvider, ws: &Workspace, extra: Value) -> Value {
    let mut options = json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "test-model", "maxRetries": 2, "timeoutMs": 20000},
        "stateDir": ws.state.path(),
    });
    merge(&mut options, extra);
    options
}

pub fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        for (key, value) in from {
            match into.get_mut(&key) {
                Some(existing) if existing.is_object() && value.is_object() => {
                    merge(existing, value)
                }
                _ => {
                    into.insert(key, value);
                }
            }
        }
    }
}

pub async fn server(ws: &Workspace, init_options: Value, responder: Option<Responder>) -> Server {
    start(Options {
        root: Some(&ws.root),
        init_options,
        apply_edit: true,
        responder,
        ..Options::default()
    })
    .await
}

/// A server wired to `fake` (with the `extra` settings) and a new session in it.
pub async fn session_server(ws: &Workspace, fake: &FakeProvider, extra: Value) -> (Server, String) {
    let server = server(ws, provider_options(fake, ws, extra), None).await;
    let session = new_session(&server).await;
    (server, session)
}

pub async fn new_session(server: &Server) -> String {
    let answer = server
        .client
        .request("agent/session/new", json!({}))
        .await
        .expect("session/new");
    answer["sessionId"].as_str().unwrap().to_string()
}

/// `METHOD {sessionId}`'s answer (load, context, cancel, commands, …); panics on an error.
pub async fn session_request(server: &Server, method: &str, session: &str) -> Value {
    server
        .client
        .request(method, json!({"sessionId": session}))
        .await
        .unwrap_or_else(|e| panic!("{method}: {e:?}"))
}

pub async fn prompt(server: &Server, session: &str, text: &str) -> String {
    let answer = server
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": text}),
        )
        .await
        .expect("session/prompt");
    answer["turnId"].as_str().unwrap().to_string()
}

/// One whole turn: `text` prompted in `session`, then every update until its turnEnd and
/// the other messages seen on the way (`prompt` then `updates_until_end`).
pub async fn run_turn(
    server: &Server,
    session: &str,
    text: &str,
) -> (Vec<Value>, Vec<ServerMessage>) {
    let turn = prompt(server, session, text).await;
    updates_until_end(server, &turn).await
}

/// Every `agent/session/update` of `turn` until its turnEnd, and the other messages seen
/// on the way (status notifications, server requests).
pub async fn updates_until_end(server: &Server, turn: &str) -> (Vec<Value>, Vec<ServerMessage>) {
    let mut updates = Vec::new();
    let mut others = Vec::new();
    loop {
        let message = server
            .client
            .next_message()
            .await
            .expect("server still talking");
        if message.method == "agent/session/update" && message.params["turnId"] == turn {
            let update = message.params["update"].clone();
            let end = update["kind"] == "turnEnd";
            updates.push(update);
            if end {
                return (updates, others);
            }
        } else {
            others.push(message);
        }
    }
}

pub fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .map(|u| u["kind"].as_str().unwrap().to_string())
        .collect()
}

pub fn answer_text(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["kind"] == "agentMessageChunk")
        .map(|u| u["text"].as_str().unwrap())
        .collect()
}

pub fn stop_reason(updates: &[Value]) -> String {
    updates.last().unwrap()["stopReason"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn tool_updates<'a>(updates: &'a [Value], status: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| u["kind"] == "toolCallUpdate" && u["status"] == status)
        .collect()
}

/// Every request body the provider received: each `tool` message answers a tool call of
/// the assistant message before the run of tool messages it belongs to, and every call of
/// that assistant message is answered.
pub fn assert_invariants(requests: &[RecordedRequest]) {
    for request in requests {
        let Some(messages) = request.body["messages"].as_array() else {
            continue;
        };
        let mut open_calls: Vec<String> = Vec::new();
        for message in messages {
            match message["role"].as_str() {
                Some("assistant") => {
                    assert!(
                        open_calls.is_empty(),
                        "calls {open_calls:?} unanswered before an assistant message"
                    );
                    open_calls = message["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| c["id"].as_str().unwrap().to_string())
                        .collect();
                }
                Some("tool") => {
                    let id = message["tool_call_id"].as_str().unwrap();
                    let at = open_calls.iter().position(|c| c == id).unwrap_or_else(|| {
                        panic!(
                            "tool message {id} answers no call of the preceding assistant message"
                        )
                    });
                    open_calls.remove(at);
                }
                _ => assert!(
                    open_calls.is_empty(),
                    "calls {open_calls:?} unanswered before a {} message",
                    message["role"]
                ),
            }
        }
        assert!(
            open_calls.is_empty(),
            "calls {open_calls:?} unanswered at the end"
        );
    }
}

pub fn openai_chunk(delta: Value) -> Step {
    Step::Data(json!({"id": "c", "object": "chat.completion.chunk", "model": "test-model", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string())
}

pub fn openai_finish(reason: &str) -> Step {
    Step::Data(json!({"id": "c", "object": "chat.completion.chunk", "model": "test-model", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string())
}

/// Answers requestPermission with the options of `kinds` in turn, and applyEdit with
/// applied: true; records both.
/// The server requests the client saw: (method, params).
pub type Seen = Arc<Mutex<Vec<(String, Value)>>>;

pub fn responder(kinds: &[&'static str]) -> (Responder, Seen) {
    let seen: Seen = Arc::default();
    let queue = Arc::new(Mutex::new(kinds.to_vec()));
    let record = seen.clone();
    let responder: Responder = Arc::new(move |method: &str, params: &Value| {
        record
            .lock()
            .unwrap()
            .push((method.to_string(), params.clone()));
        match method {
            "agent/session/requestPermission" => {
                let kind = queue
                    .lock()
                    .unwrap()
                    .drain(..1)
                    .next()
                    .unwrap_or("rejectOnce");
                let option = params["options"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["kind"] == kind)
                    .unwrap();
                Answer::Result(json!({"outcome": {"optionId": option["optionId"]}}))
            }
            "workspace/applyEdit" => Answer::Result(json!({"applied": true})),
            _ => Answer::Result(Value::Null),
        }
    });
    (responder, seen)
}

/// The `agent/session/requestPermission` requests a `responder` answered, in order.
pub fn permission_requests(seen: &Seen) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/session/requestPermission")
        .map(|(_, p)| p.clone())
        .collect()
}

/// Returns once process `pid` is gone (or a zombie waiting to be reaped).
pub async fn wait_gone(pid: &str) {
    let pid: u32 = pid.trim().parse().expect("a pid");
    while !agentls::process_groups::gone(pid) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Kills the agentls process with SIGKILL (no code of it runs: what it started is left to its
/// warden) and reaps it.
pub async fn kill9(server: &mut Server) {
    let pid = server.client.child().id().expect("running") as i32;
    // SAFETY: a signal to the child process this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = server.client.child().wait().await;
}

/// The names of the tools a recorded OpenAI request body offers.
pub fn offered_tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The output a recorded OpenAI request body holds for call `call_id`.
pub fn tool_output_in(body: &Value, call_id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .map(|m| m["content"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no tool message for {call_id} in {body}"))
}

/// What the model saw of one background command `bg1` (the same contract for a local
/// process and an ACP client terminal), in the requests after the calls `call_bg` (start:
/// its id and first output, still running), `call_out` (`shell_output`: only what is new)
/// and `call_kill` (`shell_kill`).
pub fn assert_background_round(requests: &[RecordedRequest]) {
    let started = tool_output_in(&requests[1].body, "call_bg");
    assert!(started.contains("\nid: bg1\n"), "{started}");
    assert!(started.contains("started\n"), "{started}");
    assert!(started.contains("[bg1 is still running]"), "{started}");
    assert!(!started.contains("later"), "{started}");
    let read = tool_output_in(&requests[2].body, "call_out");
    assert!(read.contains("later\n"), "{read}");
    assert!(!read.contains("started"), "only what is new: {read}");
    assert!(read.contains("[bg1 is still running]"), "{read}");
    let killed = tool_output_in(&requests[3].body, "call_kill");
    assert!(killed.contains("[bg1 was killed]"), "{killed}");
    assert!(
        killed.contains("[bg1 was stopped by shell_kill]"),
        "{killed}"
    );
}

/// Waits (without a clock: a hang shows as a hang) until the symbol index is ready; its
/// status as `agentls/debug/workspace` reports it.
pub async fn symbols_ready(server: &Server) -> Value {
    loop {
        let ws = server
            .client
            .request("agentls/debug/workspace", json!({}))
            .await
            .expect("workspace");
        if ws["symbols"]["status"] == "ready" {
            return ws["symbols"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The `agent/status` notifications among `messages`.
pub fn statuses(messages: &[ServerMessage]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m.method == "agent/status")
        .map(|m| m.params.clone())
        .collect()
}

/// A reply calling each `(id, tool, arguments)` at once, each call's arguments whole.
pub fn parallel_calls(calls: &[(&str, &str, String)]) -> agentls_dev::fake_provider::Reply {
    let pieces: Vec<[&str; 1]> = calls.iter().map(|(_, _, args)| [args.as_str()]).collect();
    let calls: Vec<(&str, &str, &[&str])> = calls
        .iter()
        .zip(&pieces)
        .map(|((id, name, _), args)| (*id, *name, args.as_slice()))
        .collect();
    FakeProvider::openai_tool_calls(&calls, None)
}

/// A `workspace/applyEdit`'s text edits applied to the files on disk (ASCII).
pub fn apply_to_disk(params: &Value) -> bool {
    let changes = params["edit"]["documentChanges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    changes.iter().all(|change| {
        let uri = change["textDocument"]["uri"]
            .as_str()
            .or(change["uri"].as_str());
        let Some(path) = uri.and_then(|u| u.strip_prefix("file://")) else {
            return false;
        };
        if change["kind"] == "create" {
            return fs::write(path, "").is_ok();
        }
        let Ok(mut text) = fs::read_to_string(path) else {
            return false;
        };
        let offset = |text: &str, position: &Value| -> usize {
            let line = position["line"].as_u64().unwrap_or(0) as usize;
            let column = position["character"].as_u64().unwrap_or(0) as usize;
            let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
            (start + column).min(text.len())
        };
        let mut edits = change["edits"].as_array().cloned().unwrap_or_default();
        edits.sort_by_key(|e| std::cmp::Reverse(offset(&text, &e["range"]["start"])));
        for edit in edits {
            let (start, end) = (
                offset(&text, &edit["range"]["start"]),
                offset(&text, &edit["range"]["end"]),
            );
            text.replace_range(start..end, edit["newText"].as_str().unwrap_or(""));
        }
        fs::write(path, text).is_ok()
    })
}
