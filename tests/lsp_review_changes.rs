//! A turn's changes reviewed and partly undone through the real server and the fake
//! provider (`agent/session/changes`, `agent/session/revertChanges`): the user keeps one
//! hunk of a file and undoes the other, undoes a whole file, keeps the rest; an open file is
//! undone through the editor; a file the user changed since is a conflict; a rewind to the
//! undo's checkpoint takes the undo back.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use agentls_dev::lsp_client::{Answer, Responder};
use common::agent::*;
use common::Server;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs;
use std::sync::{Arc, Mutex};

/// The editor's open buffers, by URI: what `workspace/applyEdit` changed in them.
type Buffers = Arc<Mutex<HashMap<String, String>>>;

/// An editor that applies `workspace/applyEdit` to its buffers (when the file is open in
/// it) or to the disk (when it is not, as an editor opens, edits and saves it).
fn editor(buffers: Buffers) -> Responder {
    Arc::new(move |method: &str, params: &Value| match method {
        "workspace/applyEdit" => {
            let changes = params["edit"]["documentChanges"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let applied = changes.iter().all(|change| {
                let uri = change["textDocument"]["uri"]
                    .as_str()
                    .or(change["uri"].as_str());
                let Some(uri) = uri else { return false };
                let path = uri.strip_prefix("file://").unwrap_or(uri).to_string();
                if change["kind"] == "create" {
                    return fs::write(&path, "").is_ok();
                }
                let mut open = buffers.lock().unwrap();
                let text = match open.get(uri) {
                    Some(text) => text.clone(),
                    None => fs::read_to_string(&path).unwrap_or_default(),
                };
                let edits = change["edits"].as_array().cloned().unwrap_or_default();
                let text = apply(&text, edits);
                match open.get_mut(uri) {
                    Some(buffer) => *buffer = text,
                    None => fs::write(&path, text).unwrap(),
                }
                true
            });
            Answer::Result(json!({"applied": applied}))
        }
        _ => Answer::Result(Value::Null),
    })
}

/// Text edits applied to `text` (ASCII, so columns are bytes).
fn apply(text: &str, mut edits: Vec<Value>) -> String {
    let offset = |text: &str, position: &Value| -> usize {
        let line = position["line"].as_u64().unwrap() as usize;
        let column = position["character"].as_u64().unwrap() as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        (start + column).min(text.len())
    };
    let mut text = text.to_string();
    edits.sort_by_key(|e| std::cmp::Reverse(offset(&text, &e["range"]["start"])));
    for edit in edits {
        let start = offset(&text, &edit["range"]["start"]);
        let end = offset(&text, &edit["range"]["end"]);
        text.replace_range(start..end, edit["newText"].as_str().unwrap());
    }
    text
}

fn lines(prefix: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{prefix}{i}\n")).collect()
}

async fn request(server: &Server, method: &str, params: Value) -> Result<Value, String> {
    server
        .client
        .request(method, params)
        .await
        .map_err(|e| format!("{e:?}"))
}

/// A server on `ws` under full-auto, whose editor applies edits to `Buffers`, and a
/// session in it.
async fn review_server(ws: &Workspace) -> (FakeProvider, Buffers, Server, String) {
    let fake = FakeProvider::start().await;
    let buffers: Buffers = Arc::default();
    let options = provider_options(
        &fake,
        ws,
        json!({"approval": "full-auto", "tools": {"readBeforeWrite": false}, "checks": {"afterEdit": "off"}}),
    );
    let server = server(ws, options, Some(editor(buffers.clone()))).await;
    let session = new_session(&server).await;
    (fake, buffers, server, session)
}

/// The turn: two far-apart edits of a.txt, b.txt rewritten, c.txt created.
async fn three_file_turn(server: &Server, fake: &FakeProvider, session: &str) {
    let edit = |id: &'static str, old: &str, new: &str| {
        (
            id,
            "edit_file",
            json!({"path": "a.txt", "old_text": old, "new_text": new}).to_string(),
        )
    };
    let calls = [
        edit("e1", "a2\n", "A2\n"),
        edit("e2", "a18\n", "A18\nadded\n"),
        (
            "w1",
            "write_file",
            json!({"path": "b.txt", "content": "b1\nB2\nb3\n"}).to_string(),
        ),
        (
            "w2",
            "write_file",
            json!({"path": "c.txt", "content": "new\n"}).to_string(),
        ),
    ];
    fake.push(parallel_calls(&calls));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (updates, _) = run_turn(server, session, "Change the three files.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
}

#[tokio::test]
async fn a_turns_changes_are_kept_or_undone_per_file_and_hunk() {
    let ws = workspace();
    let a = lines("a", 20);
    let b = "b1\nb2\nb3\n";
    fs::write(ws.root.join("a.txt"), &a).unwrap();
    fs::write(ws.root.join("b.txt"), b).unwrap();
    let (fake, buffers, server, session) = review_server(&ws).await;
    three_file_turn(&server, &fake, &session).await;
    let after_a = a.replace("a2\n", "A2\n").replace("a18\n", "A18\nadded\n");
    assert_eq!(fs::read_to_string(ws.root.join("a.txt")).unwrap(), after_a);

    let listed = request(
        &server,
        "agent/session/changes",
        json!({"sessionId": session}),
    )
    .await
    .unwrap();
    let files = listed["files"].as_array().unwrap();
    let summary: Vec<(&str, &str, usize)> = files
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap(),
                f["status"].as_str().unwrap(),
                f["hunks"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a.txt", "modified", 2),
            ("b.txt", "modified", 1),
            ("c.txt", "added", 1)
        ]
    );
    let a_hunks = files[0]["hunks"].as_array().unwrap();
    assert_eq!(
        (
            a_hunks[1]["oldStart"].as_u64(),
            a_hunks[1]["oldLines"].as_u64()
        ),
        (Some(18), Some(1))
    );
    assert_eq!(
        (
            a_hunks[1]["newStart"].as_u64(),
            a_hunks[1]["newLines"].as_u64()
        ),
        (Some(18), Some(2))
    );
    assert!(
        a_hunks[0]["diff"].as_str().unwrap().contains("-a2\n+A2\n"),
        "{}",
        a_hunks[0]["diff"]
    );
    assert!(files.iter().all(|f| f["changedSince"] == false));

    // a.txt is open in the editor now: its undo goes through the buffer.
    let a_uri = format!("file://{}", ws.root.join("a.txt").display());
    buffers
        .lock()
        .unwrap()
        .insert(a_uri.clone(), after_a.clone());
    server.open(&a_uri, "plaintext", 1, &after_a).await;
    // Keep a.txt's first hunk, undo its second; undo b.txt whole; keep c.txt.
    let done = request(
        &server,
        "agent/session/revertChanges",
        json!({"sessionId": session, "changes": [
            {"path": "a.txt", "hunkIds": [a_hunks[1]["id"]]},
            {"path": "b.txt"},
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(done["reverted"], json!(["a.txt", "b.txt"]), "{done}");
    assert_eq!(done["conflicts"], json!([]));
    let expected_a = a.replace("a2\n", "A2\n");
    assert_eq!(
        fs::read_to_string(ws.root.join("a.txt")).unwrap(),
        expected_a
    );
    assert_eq!(
        buffers.lock().unwrap()[&a_uri],
        expected_a,
        "the buffer matches the disk"
    );
    assert_eq!(fs::read_to_string(ws.root.join("b.txt")).unwrap(), b);
    assert_eq!(fs::read_to_string(ws.root.join("c.txt")).unwrap(), "new\n");
    // As an editor does after applying an edit: the buffer's new text back to the server.
    server
        .client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": a_uri, "version": 2}, "contentChanges": [{"text": expected_a}]}),
        )
        .await
        .unwrap();

    // What is left of the turn's changes: a.txt's first hunk and c.txt.
    let left = request(
        &server,
        "agent/session/changes",
        json!({"sessionId": session}),
    )
    .await
    .unwrap();
    let left: Vec<(String, usize)> = left["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["hunks"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(left, [("a.txt".to_string(), 1), ("c.txt".to_string(), 1)]);

    // A rewind of the code to the undo's checkpoint takes the undo back.
    let checkpoint = done["checkpointId"].as_str().unwrap();
    let listed = request(
        &server,
        "agent/session/checkpoints",
        json!({"sessionId": session}),
    )
    .await
    .unwrap();
    let undo = listed["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == checkpoint)
        .unwrap_or_else(|| panic!("the undo's checkpoint is listed: {listed}"));
    assert!(
        undo["message"]
            .as_str()
            .unwrap()
            .contains("undo of the agent's changes to a.txt, b.txt"),
        "{undo}"
    );
    let rewound = request(
        &server,
        "agent/session/rewind",
        json!({"sessionId": session, "checkpointId": checkpoint, "restore": "code"}),
    )
    .await
    .unwrap();
    assert_eq!(rewound["conflicts"], json!([]), "{rewound}");
    assert_eq!(fs::read_to_string(ws.root.join("a.txt")).unwrap(), after_a);
    assert_eq!(
        buffers.lock().unwrap()[&a_uri],
        after_a,
        "through the editor"
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("b.txt")).unwrap(),
        "b1\nB2\nb3\n"
    );
}

#[tokio::test]
async fn an_undo_over_the_users_later_change_is_a_conflict_left_alone() {
    let ws = workspace();
    let a = lines("a", 20);
    fs::write(ws.root.join("a.txt"), &a).unwrap();
    fs::write(ws.root.join("b.txt"), "b1\nb2\nb3\n").unwrap();
    let (fake, _, server, session) = review_server(&ws).await;
    three_file_turn(&server, &fake, &session).await;
    let listed = request(
        &server,
        "agent/session/changes",
        json!({"sessionId": session}),
    )
    .await
    .unwrap();
    let a_hunks = listed["files"][0]["hunks"].as_array().unwrap().clone();

    // The user rewrites the line of the second hunk, and b.txt.
    let mine = a.replace("a2\n", "A2\n").replace("a18\n", "A18\nmine\n");
    fs::write(ws.root.join("a.txt"), &mine).unwrap();
    fs::write(ws.root.join("b.txt"), "mine\n").unwrap();
    let listed = request(
        &server,
        "agent/session/changes",
        json!({"sessionId": session}),
    )
    .await
    .unwrap();
    assert_eq!(listed["files"][0]["changedSince"], true);
    let done = request(
        &server,
        "agent/session/revertChanges",
        json!({"sessionId": session, "changes": [
            {"path": "a.txt", "hunkIds": [a_hunks[1]["id"]]},
            {"path": "b.txt"},
            {"path": "src/lib.rs"},
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(done["reverted"], json!([]));
    let conflicts: Vec<(&str, &str)> = done["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(conflicts.len(), 3, "{done}");
    assert!(
        conflicts[0]
            .1
            .contains("were changed after the agent's change"),
        "{conflicts:?}"
    );
    assert!(
        conflicts[1]
            .1
            .contains("changed after the agent's last change"),
        "{conflicts:?}"
    );
    assert!(
        conflicts[2].1.contains("did not change this file"),
        "{conflicts:?}"
    );
    assert!(
        done.get("checkpointId").is_none(),
        "nothing written, no checkpoint"
    );
    assert_eq!(fs::read_to_string(ws.root.join("a.txt")).unwrap(), mine);
    assert_eq!(fs::read_to_string(ws.root.join("b.txt")).unwrap(), "mine\n");

    // The first hunk's lines are the agent's still: it can go.
    let done = request(
        &server,
        "agent/session/revertChanges",
        json!({"sessionId": session, "changes": [{"path": "a.txt", "hunkIds": [a_hunks[0]["id"]]}]}),
    )
    .await
    .unwrap();
    assert_eq!(done["reverted"], json!(["a.txt"]), "{done}");
    assert_eq!(
        fs::read_to_string(ws.root.join("a.txt")).unwrap(),
        mine.replace("A2\n", "a2\n")
    );

    // Bad input: clear errors.
    let unknown = request(
        &server,
        "agent/session/changes",
        json!({"sessionId": "nope"}),
    )
    .await
    .unwrap_err();
    assert!(unknown.contains("nope"), "{unknown}");
    let turn = request(
        &server,
        "agent/session/changes",
        json!({"sessionId": session, "sinceTurnId": "turn-x"}),
    )
    .await
    .unwrap_err();
    assert!(turn.contains("unknown turn"), "{turn}");
    let malformed = request(
        &server,
        "agent/session/revertChanges",
        json!({"sessionId": session, "changes": [{"file": "a.txt"}]}),
    )
    .await
    .unwrap_err();
    assert!(malformed.contains("path"), "{malformed}");
}

#[tokio::test]
async fn an_edit_the_editor_applied_but_has_not_told_of_yet_is_the_turns_change() {
    // An editor that holds its didChange back (Neovim does, 150 ms): the turn's end must
    // still see what the agent wrote into the open buffer.
    let ws = workspace();
    fs::write(ws.root.join("b.txt"), "b1\nb2\nb3\n").unwrap();
    let (fake, buffers, server, session) = review_server(&ws).await;
    let b_uri = format!("file://{}", ws.root.join("b.txt").display());
    buffers
        .lock()
        .unwrap()
        .insert(b_uri.clone(), "b1\nb2\nb3\n".into());
    server.open(&b_uri, "plaintext", 1, "b1\nb2\nb3\n").await;
    let edit = json!({"path": "b.txt", "old_text": "b2\n", "new_text": "B2\n"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("e1", "edit_file", &[edit.as_str()])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (updates, _) = run_turn(&server, &session, "Change b.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(buffers.lock().unwrap()[&b_uri], "b1\nB2\nb3\n");

    let listed = request(
        &server,
        "agent/session/changes",
        json!({"sessionId": session}),
    )
    .await
    .unwrap();
    let files = listed["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{listed}");
    assert_eq!(files[0]["path"], "b.txt");
    assert!(
        files[0]["hunks"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("-b2\n+B2\n"),
        "{listed}"
    );
}
