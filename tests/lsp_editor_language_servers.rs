//! The `lsp` tool: a client that offers `capabilities.editorLanguageServers` is asked
//! `agent/editor/lsp` with the standard request, and its language servers' answer reaches
//! the model as places with their lines; a rename is approved, applied through
//! `workspace/applyEdit` and undone by a rewind; a client without the capability (or
//! whose language servers fail) gets the symbol index's answer, said to be one.

mod common;

use agentls_dev::lsp_client::{Answer, Responder};
use common::agent::*;
use common::uri;
use serde_json::{json, Value};
use std::fs;
use std::sync::{Arc, Mutex};

const MAIN: &str = "fn main() {\n    println!(\"{}\", answer());\n}\n";
const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";

fn range(line: u32, start: u32, end: u32) -> Value {
    json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": end}})
}

/// An editor whose language server knows `answer` (defined in src/lib.rs line 1, used in
/// src/main.rs line 2), allows every call and applies edits to the disk as one that saves.
fn editor(ws: &Workspace) -> (Responder, Seen) {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let lib = uri(&ws.root.join("src/lib.rs")).to_string();
    let main = uri(&ws.root.join("src/main.rs")).to_string();
    let responder: Responder = Arc::new(move |method: &str, params: &Value| {
        record
            .lock()
            .unwrap()
            .push((method.to_string(), params.clone()));
        match method {
            "agent/session/requestPermission" => {
                Answer::Result(json!({"outcome": {"optionId": "allow-once"}}))
            }
            "workspace/applyEdit" => Answer::Result(json!({"applied": apply_to_disk(params)})),
            "agent/editor/lsp" => Answer::Result(json!({"result": answer(params, &lib, &main)})),
            _ => Answer::Result(Value::Null),
        }
    });
    (responder, seen)
}

fn answer(asked: &Value, lib: &str, main: &str) -> Value {
    let at = |uri: &str, r: Value| json!({"uri": uri, "range": r});
    match asked["method"].as_str().unwrap() {
        "textDocument/definition" => json!([at(lib, range(0, 7, 13))]),
        "textDocument/references" => {
            json!([at(lib, range(0, 7, 13)), at(main, range(1, 19, 25))])
        }
        "textDocument/hover" => {
            json!({"contents": {"kind": "markdown", "value": "```rust\npub fn answer() -> u32\n```"}})
        }
        "textDocument/rename" => {
            let name = asked["params"]["newName"].clone();
            json!({"changes": {
                lib: [{"range": range(0, 7, 13), "newText": name}],
                main: [{"range": range(1, 19, 25), "newText": name}],
            }})
        }
        other => panic!("unexpected {other}"),
    }
}

fn lsp_requests(seen: &Seen) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/editor/lsp")
        .map(|(_, p)| p.clone())
        .collect()
}

fn workspace_with_main() -> (Workspace, String) {
    let ws = workspace();
    fs::write(ws.root.join("src/main.rs"), MAIN).unwrap();
    let main = uri(&ws.root.join("src/main.rs")).to_string();
    (ws, main)
}

/// A server with `settings` and the editor `responder`, a session, and one turn of `prompt`
/// that ends normally (after the symbol index is ready when `index` is set).
async fn one_turn(
    ws: &Workspace,
    fake: &FakeProvider,
    settings: Value,
    responder: Responder,
    index: bool,
    prompt: &str,
) -> (common::Server, String) {
    let server = server(ws, provider_options(fake, ws, settings), Some(responder)).await;
    if index {
        symbols_ready(&server).await;
    }
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, prompt).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    (server, session)
}

fn call(id: &str, arguments: Value) -> (&str, &'static str, String) {
    (id, "lsp", arguments.to_string())
}

#[tokio::test]
async fn definition_references_and_hover_are_the_editors_language_servers_answers() {
    let (ws, main) = workspace_with_main();
    let fake = FakeProvider::start().await;
    fake.push(parallel_calls(&[
        call(
            "call_d",
            json!({"operation": "definition", "path": "src/main.rs", "line": 2, "symbol": "answer"}),
        ),
        call(
            "call_r",
            json!({"operation": "references", "path": "src/main.rs", "line": 2, "character": 20}),
        ),
        // A column off the named symbol is moved onto it.
        call(
            "call_h",
            json!({"operation": "hover", "path": "src/main.rs", "line": 2, "character": 3, "symbol": "answer"}),
        ),
    ]));
    fake.push(FakeProvider::openai_text(&["Found."], None));
    let (responder, seen) = editor(&ws);
    let (server, _) = one_turn(
        &ws,
        &fake,
        json!({"capabilities": {"editorLanguageServers": true}}),
        responder,
        false,
        "Where is answer defined?",
    )
    .await;

    let requests = fake.requests();
    assert!(offered_tool_names(&requests[0].body).contains(&"lsp".to_string()));
    let asked = lsp_requests(&seen);
    let methods: Vec<&str> = asked
        .iter()
        .map(|a| a["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "textDocument/definition",
            "textDocument/references",
            "textDocument/hover"
        ]
    );
    for request in &asked {
        assert_eq!(request["params"]["textDocument"]["uri"], main.as_str());
        assert_eq!(
            request["params"]["position"],
            json!({"line": 1, "character": 19})
        );
    }
    assert_eq!(asked[1]["params"]["context"]["includeDeclaration"], true);

    let definition = tool_output_in(&requests[1].body, "call_d");
    assert!(
        definition.contains("1 definition of `answer` at src/main.rs:2:20 (the editor's language server):\nsrc/lib.rs:1:8\n    pub fn answer() -> u32 {"),
        "{definition}"
    );
    let references = tool_output_in(&requests[1].body, "call_r");
    assert!(
        references.contains("2 references to `answer` at src/main.rs:2:20 in 2 files"),
        "{references}"
    );
    assert!(
        references.contains("src/main.rs:2:20: println!(\"{}\", answer());"),
        "{references}"
    );
    let hover = tool_output_in(&requests[1].body, "call_h");
    assert!(hover.contains("pub fn answer() -> u32"), "{hover}");
    server.stop().await;
}

#[tokio::test]
async fn a_rename_is_approved_applied_to_every_file_and_undone_by_a_rewind() {
    let (ws, _) = workspace_with_main();
    let fake = FakeProvider::start().await;
    fake.push_call_then_text(
        "call_n",
        "lsp",
        &json!({"operation": "rename", "path": "src/lib.rs", "line": 1, "symbol": "answer", "new_name": "reply"}).to_string(),
        "Renamed.",
    );
    let (responder, seen) = editor(&ws);
    let (server, session) = one_turn(
        &ws,
        &fake,
        json!({"capabilities": {"editorLanguageServers": true}, "approval": "ask"}),
        responder,
        false,
        "Rename answer to reply",
    )
    .await;

    let asked = permission_requests(&seen);
    assert_eq!(
        asked.len(),
        1,
        "one question for the whole rename: {asked:?}"
    );
    let question = asked[0].to_string();
    assert!(question.contains("-pub fn answer() -> u32 {"), "{question}");
    assert!(
        question.contains("+    println!(\\\"{}\\\", reply());"),
        "{question}"
    );
    let output = tool_output_in(&fake.requests()[1].body, "call_n");
    assert!(
        output.contains(
            "Renamed `answer` to `reply`: 2 edit(s) in 2 file(s): src/lib.rs, src/main.rs."
        ),
        "{output}"
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        LIB.replace("answer", "reply")
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("src/main.rs")).unwrap(),
        MAIN.replace("answer", "reply")
    );

    // The ledger learns which files the rename changed (the session log's event).
    let log = session_log_text(&ws);
    assert!(
        log.contains(r#""command":"Rename answer to reply""#) && log.contains("src/main.rs"),
        "{log}"
    );

    // The turn's checkpoint was taken before the rename: a rewind of the code undoes it.
    let listed = server
        .client
        .request("agent/session/checkpoints", json!({"sessionId": session}))
        .await
        .unwrap();
    let checkpoint = listed["checkpoints"][0]["id"].clone();
    let done = server
        .client
        .request(
            "agent/session/rewind",
            json!({"sessionId": session, "checkpointId": checkpoint, "restore": "code"}),
        )
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        LIB,
        "{done} {listed}"
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("src/main.rs")).unwrap(),
        MAIN
    );
    server.stop().await;
}

#[tokio::test]
async fn plan_mode_refuses_a_rename_and_applies_nothing() {
    let (ws, _) = workspace_with_main();
    let fake = FakeProvider::start().await;
    fake.push_call_then_text(
        "call_n",
        "lsp",
        &json!({"operation": "rename", "path": "src/lib.rs", "line": 1, "character": 8, "new_name": "reply"}).to_string(),
        "Planned.",
    );
    let (responder, seen) = editor(&ws);
    let (server, _) = one_turn(
        &ws,
        &fake,
        json!({"capabilities": {"editorLanguageServers": true}, "approval": "plan"}),
        responder,
        false,
        "Rename answer to reply",
    )
    .await;
    let output = tool_output_in(&fake.requests()[1].body, "call_n");
    assert!(output.contains("plan mode is read-only"), "{output}");
    assert!(!seen
        .lock()
        .unwrap()
        .iter()
        .any(|(m, _)| m == "workspace/applyEdit"));
    assert_eq!(fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(), LIB);
    server.stop().await;
}

#[tokio::test]
async fn without_the_capability_the_symbol_index_answers_and_says_so() {
    let (ws, _) = workspace_with_main();
    let fake = FakeProvider::start().await;
    fake.push(parallel_calls(&[
        call(
            "call_d",
            json!({"operation": "definition", "path": "src/main.rs", "line": 2, "symbol": "answer"}),
        ),
        call(
            "call_n",
            json!({"operation": "rename", "path": "src/lib.rs", "line": 1, "symbol": "answer", "new_name": "reply"}),
        ),
    ]));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (responder, seen) = editor(&ws);
    let (server, _) = one_turn(&ws, &fake, json!({}), responder, true, "Where is answer?").await;

    let requests = fake.requests();
    assert!(
        !offered_tool_names(&requests[0].body).contains(&"lsp".to_string()),
        "described only where the editor answers"
    );
    assert!(lsp_requests(&seen).is_empty(), "never asked");
    let definition = tool_output_in(&requests[1].body, "call_d");
    assert!(
        definition.contains("[no editor language server answers here (the client does not offer them); this answer is from the workspace symbol index, which matches by name]"),
        "{definition}"
    );
    assert!(definition.contains("src/lib.rs:1 function"), "{definition}");
    let rename = tool_output_in(&requests[1].body, "call_n");
    assert!(
        rename.contains("rename needs the editor's language servers"),
        "{rename}"
    );
    assert_eq!(fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(), LIB);
    server.stop().await;
}

#[tokio::test]
async fn a_file_no_language_server_serves_gets_the_index_answer_with_the_editors_reason() {
    let (ws, _) = workspace_with_main();
    let fake = FakeProvider::start().await;
    fake.push_call_then_text(
        "call_d",
        "lsp",
        &json!({"operation": "definition", "path": "src/main.rs", "line": 2, "symbol": "answer"})
            .to_string(),
        "Done.",
    );
    let responder: Responder = Arc::new(|method: &str, _: &Value| match method {
        "agent/editor/lsp" => Answer::Error(-32603, "no language server serves src/main.rs".into()),
        _ => Answer::Result(Value::Null),
    });
    let (server, _) = one_turn(
        &ws,
        &fake,
        json!({"capabilities": {"editorLanguageServers": true}}),
        responder,
        true,
        "Where is answer?",
    )
    .await;
    let output = tool_output_in(&fake.requests()[1].body, "call_d");
    assert!(
        output.contains("[the editor's language servers did not answer: no language server serves src/main.rs; this answer is from the workspace symbol index"),
        "{output}"
    );
    assert!(output.contains("src/lib.rs:1 function"), "{output}");
    server.stop().await;
}

/// Every session log of the workspace's state directory, as one text.
fn session_log_text(ws: &Workspace) -> String {
    let mut text = String::new();
    let mut dirs = vec![ws.state.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                text.push_str(&fs::read_to_string(path).unwrap_or_default());
            }
        }
    }
    text
}
