//! The end-to-end tier against real models: llama.cpp's OpenAI-compatible server (the
//! prebuilt xllamacpp wheel, else llama-cpp-python built from source), installed by
//! `scripts/local-model install` (which `./test` runs). Behaviour is asserted, never the
//! model's words or time.
//!
//! SmolLM2-135M (fast, calls no tools) carries the loop's plumbing: a turn streams over LSP
//! with an estimated status; a session driven past the window compacts with the real model
//! and the next call succeeds; a context-length answer is recovered; a cancel stops a long
//! generation. Qwen2.5-Coder-1.5B-Instruct (the default local model, served with the chat
//! template beside scripts/local-model) carries the agent loop: it reads a file through
//! `read_file` and answers with a word only that file holds; an edit request makes an
//! `edit_file` call that agentls applies after approval. Temperature 0 and the server's fixed
//! seed make each outcome reproducible on one build.
//!
//! Skipped only when AGENTLS_SKIP_LOCAL_MODEL=1 is set; otherwise a missing install fails.

mod common;

use common::agent::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The window the server runs with. SmolLM2 takes 8192; 4096 leaves room for agentls's
/// tool definitions and system prompt (about 1,800 of SmolLM2's tokens) and keeps the tier
/// quick. The sessions below configure the same window, and drive past it.
const N_CTX: usize = 4096;

/// One test at a time: the server computes one answer at a time, and a test waiting for
/// another's answers would only measure the queue.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn skip() -> bool {
    if std::env::var("AGENTLS_SKIP_LOCAL_MODEL").as_deref() == Ok("1") {
        eprintln!("skipped: AGENTLS_SKIP_LOCAL_MODEL=1");
        return true;
    }
    false
}

/// The base URL of the SmolLM2 server this test binary shares, started on first use. It
/// dies with the test process (PR_SET_PDEATHSIG on a thread that lives as long as the process).
fn local_model() -> &'static str {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    match URL.get_or_init(|| start_server("smollm2", N_CTX)) {
        Ok(url) => url,
        Err(err) => panic!("{err}"),
    }
}

/// Qwen's window in these tests: agentls's system prompt and tools take about 2,000 of its
/// tokens, the files read here a few dozen.
const QWEN_CTX: usize = 8192;

/// The base URL of the Qwen server this test binary shares, started on first use.
fn qwen_model() -> &'static str {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    match URL.get_or_init(|| start_server("qwen2.5-coder-1.5b", QWEN_CTX)) {
        Ok(url) => url,
        Err(err) => panic!("{err}"),
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Starts `scripts/local-model exec` with `model` (AGENTLS_LOCAL_MODEL) on a free port.
fn start_server(model: &'static str, n_ctx: usize) -> Result<String, String> {
    let paths = std::process::Command::new(repo().join("scripts/local-model"))
        .arg("paths")
        .env("AGENTLS_LOCAL_MODEL", model)
        .output()
        .map_err(|e| format!("cannot run scripts/local-model: {e}"))?;
    if !paths.status.success() {
        return Err(format!("the local model {model} is not installed: run `scripts/local-model install qwen2.5-coder-1.5b smollm2` (./test does), or set AGENTLS_SKIP_LOCAL_MODEL=1 to skip this tier"));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let log = std::env::temp_dir().join(format!("agentls-local-model-{model}-{port}.log"));
    let (started, ready) = std::sync::mpsc::channel();
    let spawn_log = log.clone();
    std::thread::spawn(move || {
        use std::os::unix::process::CommandExt;
        let log_file = std::fs::File::create(&spawn_log).expect("log file");
        // The script execs the installed server (prebuilt or built from source), so the
        // death signal below reaches the server itself. One request at a time: a new one
        // never cuts the one running (a summary prepared in the background runs beside
        // the turn's own call).
        let mut command = std::process::Command::new(repo().join("scripts/local-model"));
        command
            .args(["exec", &port.to_string(), &n_ctx.to_string()])
            .env("AGENTLS_LOCAL_MODEL", model)
            .stdout(log_file.try_clone().expect("log file"))
            .stderr(log_file);
        // SAFETY: prctl in the child before exec; no allocation, no locks.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command.spawn();
        let _ = started.send(child.as_ref().map(|_| ()).map_err(|e| e.to_string()));
        // This thread lives as long as the process: its death kills the server.
        let _child = child;
        loop {
            std::thread::park();
        }
    });
    ready.recv().map_err(|e| e.to_string())??;
    // Qwen's 1.1 GB load takes seconds, longer on a busy machine.
    for _ in 0..3000 {
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let request = format!(
                "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            );
            let mut answer = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut answer).is_ok()
                && answer.starts_with("HTTP/1.1 200")
            {
                return Ok(format!("http://127.0.0.1:{port}/v1"));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(format!(
        "the local model server ({model}) did not answer in 300 s; see {}",
        log.display()
    ))
}

fn options(ws: &Workspace, extra: Value) -> Value {
    let mut options = json!({
        "provider": {"kind": "openai", "baseUrl": local_model(), "model": "smollm2", "contextWindow": N_CTX, "maxOutputTokens": 96, "maxRetries": 1, "timeoutMs": 120000, "temperature": 0},
        "stateDir": ws.state.path(),
        "approval": "full-auto",
    });
    merge(&mut options, extra);
    options
}

/// What a test runs against: the server on a fresh workspace, a session, and this test's
/// turn at the shared model. Bind every field (a dropped guard lets another test in, a
/// dropped workspace deletes its files).
struct Local {
    _serial: tokio::sync::MutexGuard<'static, ()>,
    _ws: Workspace,
    server: common::Server,
    session: String,
}

/// A server configured with `extra` over the defaults and a new session; None when the
/// tier is skipped.
async fn local_session(extra: Value) -> Option<Local> {
    if skip() {
        return None;
    }
    let serial = SERIAL.lock().await;
    let ws = workspace();
    let server = server(&ws, options(&ws, extra), None).await;
    let session = new_session(&server).await;
    Some(Local {
        _serial: serial,
        _ws: ws,
        server,
        session,
    })
}

async fn turn(server: &common::Server, session: &str, text: &str) -> (Vec<Value>, Vec<Value>) {
    let turn = prompt(server, session, text).await;
    let (updates, others) = updates_until_end(server, &turn).await;
    let statuses = others
        .into_iter()
        .filter(|m| m.method == "agent/status")
        .map(|m| m.params)
        .collect();
    (updates, statuses)
}

#[tokio::test]
async fn a_turn_streams_from_the_real_model_with_an_estimated_status() {
    let Some(Local {
        server,
        session,
        _serial,
        _ws,
    }) = local_session(json!({})).await
    else {
        return;
    };
    let (updates, statuses) = turn(&server, &session, "Say hello in one short sentence.").await;
    assert!(
        matches!(stop_reason(&updates).as_str(), "endTurn" | "maxSteps"),
        "{updates:?}"
    );
    assert!(!updates.iter().any(|u| u["kind"] == "error"), "{updates:?}");
    let chunks = updates
        .iter()
        .filter(|u| u["kind"] == "agentMessageChunk")
        .count();
    let calls = updates.iter().filter(|u| u["kind"] == "toolCall").count();
    assert!(
        chunks > 0 || calls > 0,
        "the model said something: {updates:?}"
    );
    // Before the model call the figure is agentls's estimate. llama.cpp's own server
    // (xllamacpp) then reports usage, which replaces it; llama-cpp-python's streams report
    // none, so there every figure stays an estimate.
    assert!(!statuses.is_empty());
    assert_eq!(statuses[0]["estimated"], true, "{statuses:?}");
    for status in statuses.iter().filter(|s| s["estimated"] == false) {
        assert!(status["usedTokens"].as_u64().unwrap() > 0, "{statuses:?}");
    }
    let last = statuses.last().unwrap();
    assert_eq!(last["contextWindow"], N_CTX);
    assert!(last["fill"].as_f64().unwrap() > 0.0);
    server.stop().await;
}

/// About 500 tokens of text, with a rule and a file path planted in the first one.
fn long_message(i: usize) -> String {
    let filler =
        "The parser reads tokens, builds nodes, and reports errors with their spans. ".repeat(30);
    if i == 0 {
        format!("Never delete tests/golden.txt. Keep this in mind. {filler}")
    } else {
        format!("Part {i} of the notes: {filler} Reply with one word.")
    }
}

#[tokio::test]
async fn a_session_driven_past_the_window_compacts_with_the_real_model() {
    let Some(Local {
        server,
        session,
        _serial,
        _ws,
    }) = local_session(json!({"compaction": {"prepareAt": 0.99}})).await
    else {
        return;
    };
    let mut compacted = None;
    for i in 0..10 {
        let (updates, _) = turn(&server, &session, &long_message(i)).await;
        assert!(
            !updates.iter().any(|u| u["kind"] == "error"),
            "turn {i}: {updates:?}"
        );
        if let Some(done) = updates
            .iter()
            .find(|u| u["kind"] == "compaction" && u["phase"] == "completed")
        {
            compacted = Some(done.clone());
            break;
        }
    }
    let compacted = compacted.expect("the session compacted before 10 turns");
    assert!(compacted["tokensAfter"].as_u64() < compacted["tokensBefore"].as_u64());
    // Whatever the 135M model wrote, the ledger and the user's rule are in what is sent.
    let context = session_request(&server, "agent/session/context", &session).await;
    let sent = context["messages"].to_string();
    assert!(sent.contains("<ledger>"), "{sent}");
    assert!(sent.contains("Never delete tests/golden.txt."), "{sent}");
    // The next call succeeds.
    let (updates, _) = turn(&server, &session, "Thanks. What is the rule about tests?").await;
    assert!(!updates.iter().any(|u| u["kind"] == "error"), "{updates:?}");
    assert_ne!(stop_reason(&updates), "error");
    server.stop().await;
}

#[tokio::test]
async fn a_context_length_answer_from_the_real_server_is_recovered() {
    // agentls believes in a large window; llama.cpp knows better.
    let Some(Local {
        server,
        session,
        _serial,
        _ws,
    }) =
        local_session(json!({"provider": {"contextWindow": 32000}, "compaction": {"auto": false}}))
            .await
    else {
        return;
    };
    let (updates, _) = turn(&server, &session, &long_message(0)).await;
    assert!(!updates.iter().any(|u| u["kind"] == "error"), "{updates:?}");
    let huge = format!("{} Summarize that in one word.", long_message(1).repeat(8));
    let (updates, statuses) = turn(&server, &session, &huge).await;
    let compaction = updates
        .iter()
        .find(|u| u["kind"] == "compaction" && u["phase"] == "completed")
        .unwrap_or_else(|| panic!("compacted after the context-length answer: {updates:?}"));
    assert_eq!(compaction["trigger"], "overflow");
    assert!(
        updates.iter().any(|u| u["kind"] == "warning"
            && u["message"].as_str().unwrap().contains(&N_CTX.to_string())),
        "the real window was learned: {updates:?}"
    );
    assert!(!updates.iter().any(|u| u["kind"] == "error"), "{updates:?}");
    assert_eq!(statuses.last().unwrap()["contextWindow"], N_CTX);
    server.stop().await;
}

#[tokio::test]
async fn a_cancel_mid_stream_stops_the_real_generation() {
    let Some(Local {
        server,
        session,
        _serial,
        _ws,
    }) = local_session(json!({"provider": {"maxOutputTokens": 1500}})).await
    else {
        return;
    };
    let turn_id = prompt(
        &server,
        &session,
        "Count from 1 to 400, one number per line.",
    )
    .await;
    loop {
        let message = server.client.next_message().await.unwrap();
        if message.params["turnId"] == turn_id.as_str() {
            let kind = message.params["update"]["kind"].clone();
            if kind == "agentMessageChunk" {
                break;
            }
            assert_ne!(kind, "turnEnd", "the model ended before streaming anything");
        }
    }
    let (answer, answered_at) = server
        .client
        .request_ordered("agent/session/cancel", json!({"sessionId": session}))
        .await;
    assert_eq!(answer.unwrap()["cancelled"], true);
    // What the server sent after its answer to the cancel: turnEnd only. (Chunks sent
    // before the answer may still be waiting in this client's queue.)
    let mut after = Vec::new();
    loop {
        let message = server.client.next_message().await.unwrap();
        if message.params["turnId"] != turn_id.as_str() || message.seq < answered_at {
            continue;
        }
        let update = message.params["update"].clone();
        let end = update["kind"] == "turnEnd";
        after.push(update);
        if end {
            break;
        }
    }
    assert_eq!(kinds(&after), ["turnEnd"], "{after:?}");
    assert_eq!(stop_reason(&after), "cancelled");
    // The server is free again: the next turn runs to its end.
    let (updates, _) = turn(&server, &session, "Say yes.").await;
    assert_ne!(stop_reason(&updates), "error", "{updates:?}");
    server.stop().await;
}

/// A server on Qwen over a fresh workspace holding `files`, with `responder` answering the
/// server's requests (approvals), and a new session.
async fn qwen_session(
    files: &[(&str, &str)],
    approval: &str,
    responder: Option<agentls_dev::lsp_client::Responder>,
) -> Option<Local> {
    if skip() {
        return None;
    }
    let serial = SERIAL.lock().await;
    let ws = workspace();
    for (path, text) in files {
        let path = ws.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    // No wall-clock limit that matters: the first request (about 2,000 tokens of system
    // prompt and tools) takes minutes on a busy CPU; later ones reuse the server's prompt
    // cache. maxSteps bounds a model that would not stop.
    let options = json!({
        "provider": {"kind": "openai", "baseUrl": qwen_model(), "model": "qwen2.5-coder-1.5b", "contextWindow": QWEN_CTX, "maxOutputTokens": 256, "maxRetries": 1, "timeoutMs": 1_800_000, "temperature": 0},
        "stateDir": ws.state.path(),
        "approval": approval,
        "maxSteps": 6,
    });
    let server = server(&ws, options, responder).await;
    let session = new_session(&server).await;
    Some(Local {
        _serial: serial,
        _ws: ws,
        server,
        session,
    })
}

/// Answers every requestPermission with allowOnce and applyEdit with applied: true, and
/// records both (a model may ask more than once; the shared `responder` runs out).
fn allow_all() -> (agentls_dev::lsp_client::Responder, Seen) {
    use agentls_dev::lsp_client::Answer;
    let seen: Seen = Default::default();
    let record = seen.clone();
    let responder: agentls_dev::lsp_client::Responder =
        std::sync::Arc::new(move |method: &str, params: &Value| {
            record
                .lock()
                .unwrap()
                .push((method.to_string(), params.clone()));
            match method {
                "agent/session/requestPermission" => {
                    Answer::Result(json!({"outcome": {"optionId": "allow-once"}}))
                }
                // Applied to the disk as an editor would: a model that edits again then
                // sees the file it changed, not the old one.
                "workspace/applyEdit" => Answer::Result(json!({"applied": apply_to_disk(params)})),
                _ => Answer::Result(Value::Null),
            }
        });
    (responder, seen)
}

/// The calls of `name` the model made (their `toolCall` updates).
fn calls<'a>(updates: &'a [Value], name: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| u["kind"] == "toolCall" && u["name"] == name)
        .collect()
}

#[tokio::test]
async fn the_real_model_reads_a_file_through_read_file_and_answers_from_it() {
    // A word no model knows and no prompt holds: only the file does.
    let notes = "# Release notes\n\nThe codename of the next release is Quillfeather.\nIt ships in spring.\n";
    let Some(Local {
        server,
        session,
        _serial,
        _ws,
    }) = qwen_session(&[("docs/release.md", notes)], "full-auto", None).await
    else {
        return;
    };
    let (updates, _) = turn(
        &server,
        &session,
        "Read docs/release.md and tell me the codename of the next release.",
    )
    .await;
    assert!(!updates.iter().any(|u| u["kind"] == "error"), "{updates:?}");
    let reads = calls(&updates, "read_file");
    assert!(!reads.is_empty(), "the model called read_file: {updates:?}");
    assert!(
        reads.iter().any(|c| c["input"]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("docs/release.md"))),
        "{reads:?}"
    );
    assert!(
        tool_updates(&updates, "completed")
            .iter()
            .any(|u| u["output"].as_str().unwrap_or("").contains("Quillfeather")),
        "the file was read: {updates:?}"
    );
    let answer = answer_text(&updates);
    assert!(answer.contains("Quillfeather"), "answer: {answer}");
    server.stop().await;
}

/// `./run`'s own question, asked the way `./run` asks it (`agentls ask` on this repository,
/// no approval, stdin not a terminal), to the default local model: it must have read
/// `server/src/main.rs` (through `read_file`, or the file `grep` shows when its pattern is
/// that path) and say what the file does. The model's first move used to be `grep` for the
/// path, "No matches", and "the file does not exist".
#[tokio::test]
async fn runs_own_question_is_answered_from_the_file() {
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let repository = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let state = tempfile::tempdir().unwrap();
    let events = state.path().join("events.jsonl");
    let config = json!({
        "provider": {"kind": "openai", "baseUrl": qwen_model(), "model": "qwen2.5-coder-1.5b", "contextWindow": QWEN_CTX, "maxOutputTokens": 1024, "maxRetries": 1, "timeoutMs": 1_800_000, "temperature": 0},
        "stateDir": state.path(),
        "maxSteps": 6,
    });
    let out = std::process::Command::new(common::binary())
        .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
        .env("AGENTLS_LOG", "error")
        .args(["ask", "What does server/src/main.rs do?", "--workspace"])
        .arg(&repository)
        .arg("--config")
        .arg(config.to_string())
        .arg("--events")
        .arg(&events)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let updates: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["update"].clone())
        .collect();
    // The file's own first line reached the model in a call's output.
    let main = std::fs::read_to_string(repository.join("server/src/main.rs")).unwrap();
    let first_line = format!("L1: {}", main.lines().next().unwrap());
    assert!(
        tool_updates(&updates, "completed")
            .iter()
            .any(|u| u["output"].as_str().unwrap_or("").contains(&first_line)),
        "server/src/main.rs was never read: {stderr}"
    );
    let answer = stdout.to_lowercase();
    assert!(
        [
            "language server",
            "lsp",
            "stdio",
            "stdin",
            "subcommand",
            "acp",
            "`ask`"
        ]
        .iter()
        .any(|what| answer.contains(what)),
        "the answer does not say what the file does: {stdout}\n{stderr}"
    );
    // The result line shows what the call returned, never only its id.
    assert!(stderr.contains("  ✓ ") && stderr.contains(": "), "{stderr}");
}

#[tokio::test]
async fn an_edit_request_makes_an_edit_file_call_applied_after_approval() {
    let (responder, seen) = allow_all();
    let Some(Local {
        server,
        session,
        _serial,
        _ws,
    }) = qwen_session(&[], "ask", Some(responder)).await
    else {
        return;
    };
    // The workspace's src/lib.rs returns 41.
    let (updates, _) = turn(
        &server,
        &session,
        "In src/lib.rs, change the number 41 to 42. Use edit_file.",
    )
    .await;
    // The only error a turn may end with here is the repeated-call guard, after the edit
    // was made: with the three tools this batch added, Qwen 1.5B sometimes repeats an
    // edit it made, even when told it was already made (the guard is what stops it).
    let errors: Vec<&Value> = updates.iter().filter(|u| u["kind"] == "error").collect();
    assert!(
        errors.iter().all(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("times with the same arguments"))),
        "{updates:?}"
    );
    let edits = calls(&updates, "edit_file");
    assert!(!edits.is_empty(), "the model called edit_file: {updates:?}");
    let seen = seen.lock().unwrap().clone();
    let permission = seen
        .iter()
        .find(|(m, p)| {
            m == "agent/session/requestPermission" && p["toolCall"]["name"] == "edit_file"
        })
        .unwrap_or_else(|| panic!("the edit was asked for approval: {seen:?}"));
    assert!(
        permission.1["toolCall"]["diff"]
            .as_str()
            .is_some_and(|d| d.contains("+    42")),
        "{permission:?}"
    );
    let applied = seen
        .iter()
        .find(|(m, _)| m == "workspace/applyEdit")
        .unwrap_or_else(|| panic!("the approved edit was applied: {seen:?}"));
    assert!(applied.1.to_string().contains("42"), "{applied:?}");
    assert!(
        tool_updates(&updates, "completed")
            .iter()
            .any(|u| u["output"]
                .as_str()
                .unwrap_or("")
                .starts_with("Edited src/lib.rs")),
        "{updates:?}"
    );
    server.stop().await;
}
