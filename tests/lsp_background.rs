//! Background commands through the real server, the fake provider and the real shell (under
//! the default sandbox): `shell` with `background: true` returns while its command runs,
//! `shell_output` reads its later output (and what it changed enters the log's ledger
//! events), `shell_kill`, "stop all" and a kill -9 of agentls end it, the editor lists and
//! stops them, and the next turn's environment block names the running ones.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use serde_json::{json, Value};
use std::path::Path;

fn call(id: &str, name: &str, arguments: Value) -> agentls_dev::fake_provider::Reply {
    FakeProvider::openai_tool_calls(&[(id, name, &[&arguments.to_string()])], None)
}

async fn wait_for_file(path: &Path) -> String {
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A background command that writes its shell's pid (as agentls sees it: `$$` is its pid in
/// its own PID namespace) to `pid`, prints `started`, then (after
/// `later_after` seconds) writes `later.txt` and prints `later`, then sleeps for 1000 s.
fn sleeper(pid: &Path, later_after: &str) -> String {
    format!(
        "read -r pid _ < /proc/self/stat; echo $pid > {}; echo started; sleep {later_after}; echo made > later.txt; echo later; sleep 1000",
        pid.display()
    )
}

async fn background_list(server: &common::Server, session: &str) -> Vec<Value> {
    session_request(server, "agent/session/background", session).await["commands"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_background_command_returns_at_once_and_is_read_and_killed_later() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.join("bg.pid");
    fake.push(call(
        "call_bg",
        "shell",
        json!({"command": sleeper(&pid_file, "0.5"), "background": true}),
    ));
    fake.push(call(
        "call_out",
        "shell_output",
        json!({"id": "bg1", "wait_ms": 30000}),
    ));
    fake.push(call("call_kill", "shell_kill", json!({"id": "bg1"})));
    fake.push(FakeProvider::openai_text(&["Stopped it."], None));
    let (server, session) = session_server(&ws, &fake, json!({"approval": "full-auto"})).await;
    let (updates, others) = run_turn(&server, &session, "Start the sleeper.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);

    // The start returned while the command ran; shell_output read only what was new;
    // shell_kill ended it.
    assert_background_round(&requests);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    wait_gone(pid.trim()).await;
    assert_invariants(&requests);

    // The editor was told of the list as it changed: running, then exited.
    let lists: Vec<&Value> = others
        .iter()
        .filter(|m| {
            m.method == "agent/session/update" && m.params["update"]["kind"] == "background"
        })
        .map(|m| &m.params["update"]["commands"])
        .collect();
    assert!(
        lists.iter().any(|l| l[0]["state"] == "running"),
        "{lists:?}"
    );
    assert!(lists.iter().any(|l| l[0]["state"] == "exited"), "{lists:?}");
    let listed = background_list(&server, &session).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], "bg1");
    assert_eq!(listed[0]["state"], "exited");

    // What it wrote entered the log when its output was read, under its command.
    let store = std::fs::read_dir(ws.state.path())
        .unwrap()
        .flatten()
        .flat_map(|d| walk(&d.path()))
        .find(|p| {
            p.to_string_lossy().contains(&session) && p.extension().is_some_and(|e| e == "jsonl")
        })
        .expect("the session log");
    let log = std::fs::read_to_string(store).unwrap();
    let changed = log
        .lines()
        .find(|l| l.contains("filesChanged") && l.contains("later.txt"))
        .unwrap_or_else(|| panic!("no filesChanged for later.txt in {log}"));
    assert!(changed.contains("sleep 1000"), "{changed}");
    server.stop().await;
}

fn walk(path: &Path) -> Vec<std::path::PathBuf> {
    if path.is_dir() {
        std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .flat_map(|d| walk(&d.path()))
            .collect()
    } else {
        vec![path.to_path_buf()]
    }
}

#[tokio::test]
async fn stop_all_ends_the_sessions_background_commands_and_the_next_turn_is_reminded() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.join("bg.pid");
    fake.push(call(
        "call_bg",
        "shell",
        json!({"command": sleeper(&pid_file, "1000"), "background": true}),
    ));
    fake.push(FakeProvider::openai_text(&["Started."], None));
    fake.push(FakeProvider::openai_text(&["Still there."], None));
    let (server, session) = session_server(&ws, &fake, json!({"approval": "full-auto"})).await;
    let (updates, _) = run_turn(&server, &session, "Start it.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let pid = wait_for_file(&pid_file).await;
    // It outlived its turn; the next turn's environment block names it.
    let (next, _) = run_turn(&server, &session, "Anything running?").await;
    assert_eq!(answer_text(&next), "Still there.");
    let body = fake.requests()[2].body.to_string();
    assert!(
        body.contains(r#"<command id=\"bg1\" state=\"running\">"#),
        "{body}"
    );
    assert_eq!(
        background_list(&server, &session).await[0]["state"],
        "running"
    );
    assert!(!agentls::process_groups::gone(pid.trim().parse().unwrap()));

    let cancelled = server
        .client
        .request(
            "agent/session/cancel",
            json!({"sessionId": session, "stopBackground": true}),
        )
        .await
        .unwrap();
    assert_eq!(cancelled["cancelled"], true);
    wait_gone(pid.trim()).await;
    assert!(background_list(&server, &session).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn the_editors_stop_button_kills_one_command() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.join("bg.pid");
    fake.push(call(
        "call_bg",
        "shell",
        json!({"command": sleeper(&pid_file, "1000"), "background": true}),
    ));
    fake.push(FakeProvider::openai_text(&["Started."], None));
    let (server, session) = session_server(&ws, &fake, json!({"approval": "full-auto"})).await;
    run_turn(&server, &session, "Start it.").await;
    let pid = wait_for_file(&pid_file).await;
    let killed = server
        .client
        .request(
            "agent/session/killBackground",
            json!({"sessionId": session, "id": "bg1"}),
        )
        .await
        .unwrap();
    assert_eq!(killed["killed"], true);
    wait_gone(pid.trim()).await;
    let unknown = server
        .client
        .request(
            "agent/session/killBackground",
            json!({"sessionId": session, "id": "bg9"}),
        )
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_kill_9_of_agentls_leaves_no_background_command_behind() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.join("bg.pid");
    fake.push(call(
        "call_bg",
        "shell",
        json!({"command": sleeper(&pid_file, "1000"), "background": true}),
    ));
    fake.push(FakeProvider::openai_text(&["Started."], None));
    let (mut server, session) = session_server(&ws, &fake, json!({"approval": "full-auto"})).await;
    run_turn(&server, &session, "Start it.").await;
    let pid = wait_for_file(&pid_file).await;
    kill9(&mut server).await;
    // A regression leaves `sleep 1000` running: this test then hangs instead of passing.
    wait_gone(pid.trim()).await;
}

/// Issue 41's tenth hole: what a background command detaches (`setsid`) is out of its
/// process group, and outlived a kill -9 of agentls. It ends with the command's PID
/// namespace when the warden kills the command.
#[tokio::test]
async fn a_kill_9_of_agentls_leaves_nothing_a_background_command_detached() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.join("bg.pid");
    let detached_file = ws.root.join("detached.pid");
    let detach = format!(
        "setsid sh -c 'read -r pid _ < /proc/self/stat; echo $pid > {}; exec sleep 1000' >/dev/null 2>&1 </dev/null &",
        detached_file.display()
    );
    fake.push(call(
        "call_bg",
        "shell",
        json!({"command": format!("{detach} {}", sleeper(&pid_file, "1000")), "background": true}),
    ));
    fake.push(FakeProvider::openai_text(&["Started."], None));
    let (mut server, session) = session_server(&ws, &fake, json!({"approval": "full-auto"})).await;
    run_turn(&server, &session, "Start it.").await;
    let pid = wait_for_file(&pid_file).await;
    let detached = wait_for_file(&detached_file).await;
    kill9(&mut server).await;
    wait_gone(pid.trim()).await;
    // A regression leaves the detached `sleep 1000` running: this test then hangs.
    wait_gone(detached.trim()).await;
}

#[tokio::test]
async fn at_most_shell_max_background_run_at_once() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(call(
        "call_1",
        "shell",
        json!({"command": "sleep 1000", "background": true}),
    ));
    fake.push(call(
        "call_2",
        "shell",
        json!({"command": "sleep 1000", "background": true}),
    ));
    fake.push(FakeProvider::openai_text(&["One only."], None));
    let (server, session) = session_server(
        &ws,
        &fake,
        json!({"approval": "full-auto", "shell": {"maxBackground": 1}}),
    )
    .await;
    run_turn(&server, &session, "Start two.").await;
    let second = tool_output_in(&fake.requests()[2].body, "call_2");
    assert!(second.contains("shell.maxBackground = 1"), "{second}");
    assert_eq!(background_list(&server, &session).await.len(), 1);
    server.stop().await;
}
