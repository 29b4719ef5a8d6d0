//! Diagnostics after an edit: a client that offers `capabilities.editorDiagnostics` is asked
//! `agent/editor/diagnostics` for the files a tool call changed, and the errors and warnings
//! near the change reach the output the model reads; a client without it is never asked.

mod common;

use agentls_dev::lsp_client::{Answer, Responder};
use common::agent::*;
use common::uri;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

const HEADING: &str = "Diagnostics the editor reports after this change:";

fn lsp_diagnostic(line: u32, severity: u8, message: &str) -> Value {
    json!({
        "range": {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 6}},
        "severity": severity,
        "message": message,
        "source": "rustc",
    })
}

/// Allows every call and applies edits, and answers `agent/editor/diagnostics` with
/// `diagnostics(params)`.
fn editor_answering(
    diagnostics: impl Fn(&Value) -> Answer + Send + Sync + 'static,
) -> (Responder, Seen) {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let responder: Responder = Arc::new(move |method: &str, params: &Value| {
        record
            .lock()
            .unwrap()
            .push((method.to_string(), params.clone()));
        match method {
            "agent/session/requestPermission" => {
                Answer::Result(json!({"outcome": {"optionId": "allow-once"}}))
            }
            "workspace/applyEdit" => Answer::Result(json!({"applied": true})),
            "agent/editor/diagnostics" => diagnostics(params),
            _ => Answer::Result(Value::Null),
        }
    });
    (responder, seen)
}

/// An editor that answers for each uri with an error on line 2 (1-based), a warning on line
/// 41 and a hint.
fn editor() -> (Responder, Seen) {
    editor_answering(|params| {
        let items: Vec<Value> = params["uris"]
            .as_array()
            .unwrap()
            .iter()
            .map(|uri| {
                json!({"uri": uri, "version": 4, "diagnostics": [
                    lsp_diagnostic(40, 2, "far from the change"),
                    lsp_diagnostic(1, 1, "mismatched types: expected `u32`, found `&str`"),
                    lsp_diagnostic(1, 4, "a hint, left out"),
                ]})
            })
            .collect();
        Answer::Result(json!({"items": items}))
    })
}

fn asked(seen: &Seen) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/editor/diagnostics")
        .map(|(_, p)| p.clone())
        .collect()
}

#[tokio::test]
async fn an_edit_gets_the_editors_diagnostics_near_the_changed_line() {
    let (ws, fake) = workspace_and_fake().await;
    let edit = json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    \"42\"\n"})
        .to_string();
    fake.push_call_then_text("call_e", "edit_file", &edit, "Done.");
    let (responder, seen) = editor();
    let options = provider_options(
        &fake,
        &ws,
        json!({"capabilities": {"editorDiagnostics": true}, "diagnostics": {"settleMs": 200}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let lib = uri(&ws.root.join("src/lib.rs"));
    server
        .open(&lib, "rust", 3, "pub fn answer() -> u32 {\n    41\n}\n")
        .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Make it 42").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");

    let asked = asked(&seen);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["uris"], json!([lib.as_str()]));
    assert_eq!(asked[0]["settleMs"], 200);
    let output = tool_output_in(&fake.requests()[1].body, "call_e");
    assert!(output.contains("Edited src/lib.rs"), "{output}");
    assert!(output.contains(HEADING), "{output}");
    assert!(
        output.contains(
            "src/lib.rs:2:5 error mismatched types: expected `u32`, found `&str` [rustc]"
        ),
        "{output}"
    );
    assert!(!output.contains("far from the change"), "{output}");
    assert!(!output.contains("a hint"), "{output}");
    server.stop().await;
}

#[tokio::test]
async fn a_shell_command_that_changed_a_file_gets_its_whole_files_diagnostics() {
    let (ws, fake) = workspace_and_fake().await;
    let shell = json!({"command": "printf 'fn x() {}\\n' > src/new.rs"}).to_string();
    fake.push_call_then_text("call_s", "shell", &shell, "Done.");
    let (responder, seen) = editor();
    let options = provider_options(
        &fake,
        &ws,
        json!({"capabilities": {"editorDiagnostics": true}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Add a file").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");

    let asked = asked(&seen);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["uris"],
        json!([uri(&ws.root.join("src/new.rs")).as_str()])
    );
    assert_eq!(asked[0]["settleMs"], 1500, "the default");
    let output = tool_output_in(&fake.requests()[1].body, "call_s");
    let errors = output.find("src/new.rs:2:5 error").expect(&output);
    let warning = output.find("src/new.rs:41:5 warning far").expect(&output);
    assert!(errors < warning, "errors first: {output}");
    server.stop().await;
}

#[tokio::test]
async fn a_client_without_the_capability_is_not_asked_and_the_output_is_unchanged() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push_call_then_text("call_e", "edit_file", &edit, "Done.");
    let (responder, seen) = editor();
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Make it 42").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert!(asked(&seen).is_empty());
    let output = tool_output_in(&fake.requests()[1].body, "call_e");
    assert!(output.contains("Edited src/lib.rs"), "{output}");
    assert!(!output.contains(HEADING), "{output}");
    server.stop().await;
}

#[tokio::test]
async fn an_editor_that_fails_to_answer_leaves_the_output_as_it_was() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push_call_then_text("call_e", "edit_file", &edit, "Done.");
    let (responder, _) = editor_answering(|_| Answer::Error(-32603, "no diagnostics today".into()));
    let options = provider_options(
        &fake,
        &ws,
        json!({"capabilities": {"editorDiagnostics": true}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Make it 42").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 1, "the call still succeeds: {updates:?}");
    let output = tool_output_in(&fake.requests()[1].body, "call_e");
    assert!(output.contains("Edited src/lib.rs"), "{output}");
    assert!(!output.contains(HEADING), "{output}");
    server.stop().await;
}

#[tokio::test]
async fn an_editor_that_never_answers_is_waited_for_settle_ms_and_a_margin_only() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push_call_then_text("call_e", "edit_file", &edit, "Done.");
    let (responder, _) = editor_answering(|_| Answer::Silence);
    // settleMs 0: the server's bound is its margin alone.
    let options = provider_options(
        &fake,
        &ws,
        json!({"capabilities": {"editorDiagnostics": true}, "diagnostics": {"settleMs": 0}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Make it 42").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(tool_updates(&updates, "completed").len(), 1, "{updates:?}");
    let output = tool_output_in(&fake.requests()[1].body, "call_e");
    assert!(output.contains("Edited src/lib.rs"), "{output}");
    assert!(!output.contains(HEADING), "{output}");
    server.stop().await;
}

/// Issue 41's eleventh hole: an answer of 1,000,000 diagnostics (124 MB, under the frame
/// limit) was decoded into `Value`s whole, twice over, and took the server to 5.4 GB. It
/// is read entry by entry now: the first `MAX_ANSWER_DIAGNOSTICS` errors and warnings are
/// kept, the rest skipped as they are read, and the server's memory stays near the frame's
/// size. The error at the top of the list still reaches the output, errors first.
#[tokio::test]
async fn an_answer_of_a_million_diagnostics_is_read_bounded() {
    use agentls::protocol::limits::MAX_ANSWER_DIAGNOSTICS;
    use agentls_core::editor_diagnostics::MAX_ITEMS;
    let (ws, fake) = workspace_and_fake().await;
    let shell = json!({"command": "printf 'fn x() {}\\n' > src/new.rs"}).to_string();
    fake.push_call_then_text("call_s", "shell", &shell, "Done.");
    let (responder, _) = editor_answering(|params| {
        let uri = params["uris"][0].as_str().unwrap();
        let far = lsp_diagnostic(40, 2, "far").to_string();
        let mut answer = format!(
            r#"{{"items": [{{"uri": "{uri}", "version": 4, "diagnostics": [{}"#,
            lsp_diagnostic(1, 1, "the error that matters")
        );
        for _ in 1..1_000_000 {
            answer.push(',');
            answer.push_str(&far);
        }
        answer.push_str("]}]}");
        Answer::RawResult(answer.into())
    });
    let options = provider_options(
        &fake,
        &ws,
        json!({"capabilities": {"editorDiagnostics": true}, "diagnostics": {"settleMs": 600000}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Add a file").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let peak = server.peak_rss_mib();
    eprintln!("peak RSS of agentls after an answer of 1,000,000 diagnostics: {peak} MiB");

    let output = tool_output_in(&fake.requests()[1].body, "call_s");
    assert!(
        output.contains("src/new.rs:2:5 error the error that matters [rustc]"),
        "{output}"
    );
    let rest = MAX_ANSWER_DIAGNOSTICS - MAX_ITEMS;
    assert!(output.contains(&format!("… and {rest} more")), "{output}");
    assert!(peak < 1024, "{peak} MiB");
    server.stop().await;
}
