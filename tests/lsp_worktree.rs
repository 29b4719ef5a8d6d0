//! Subagents that work apart (`isolation: worktree`) through the real server and the fake
//! provider: two of them edit the same file at once, each in a git worktree of its own, the
//! main tree untouched; the parent gets each one's branch and diff and applies one; the
//! worktrees are gone after, and one a killed server left is swept at the next start; a
//! workspace without git is refused clearly.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use serde_json::json;
use std::fs;
use std::path::Path;
use std::process::Command;

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The workspace as a repository with one commit, and two workers that may work apart.
fn repository(ws: &Workspace) {
    fs::remove_dir_all(ws.root.join(".git")).unwrap();
    git(&ws.root, &["init", "--quiet", "-b", "main"]);
    for worker in ["a", "b"] {
        let file = ws.root.join(format!(".agents/agents/worker-{worker}.md"));
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(
            &file,
            format!("---\ndescription: Changes code\ntools: read_file, edit_file\nisolation: worktree\n---\nYou are WORKER-{worker}. Make the change.\n"),
        )
        .unwrap();
    }
    git(&ws.root, &["add", "-A"]);
    git(
        &ws.root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "--quiet",
            "-m",
            "start",
        ],
    );
}

fn task(id: &'static str, agent: &str) -> (&'static str, &'static str, String) {
    (
        id,
        "task",
        json!({"agent": agent, "prompt": "Change the answer."}).to_string(),
    )
}

fn edit(value: &str) -> String {
    json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": format!("    {value}\n")})
        .to_string()
}

#[tokio::test]
async fn two_isolated_subagents_edit_one_file_apart_and_the_parent_applies_one() {
    let ws = workspace();
    repository(&ws);
    let fake = FakeProvider::start().await;
    let calls = [task("t1", "worker-a"), task("t2", "worker-b")];
    fake.push(parallel_calls(&calls));
    for (worker, value) in [("WORKER-a", "42"), ("WORKER-b", "43")] {
        let arguments = edit(value);
        fake.push_for(
            worker,
            FakeProvider::openai_tool_calls(&[("e1", "edit_file", &[arguments.as_str()])], None),
        );
        fake.push_for(worker, FakeProvider::openai_text(&["Changed it."], None));
    }
    let apply = json!({"command": "git diff HEAD...agentls/task-t1 | git apply"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("s1", "shell", &[apply.as_str()])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Applied the first."], None));
    let (server, session) = session_server(
        &ws,
        &fake,
        json!({"approval": "full-auto", "checks": {"afterEdit": "off"}}),
    )
    .await;
    let (updates, _) = run_turn(&server, &session, "Have both workers change the answer.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");

    // Each task's output: the child's answer, its branch and its diff.
    let requests = fake.requests();
    let after_tasks = requests
        .iter()
        .find(|r| {
            r.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["tool_call_id"] == "t1")
        })
        .expect("a request with the tasks' outputs");
    for (id, value) in [("t1", "42"), ("t2", "43")] {
        let output = tool_output_in(&after_tasks.body, id);
        assert!(output.contains("Changed it."), "{output}");
        assert!(
            output.contains(&format!("branch `agentls/task-{id}`")),
            "{output}"
        );
        assert!(output.contains(&format!("+    {value}")), "{output}");
    }
    // The parent applied the first; the second stays on its branch.
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    assert_eq!(
        git(&ws.root, &["show", "agentls/task-t2:src/lib.rs"]),
        LIB.replace("41", "43")
    );
    assert_eq!(
        git(&ws.root, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    let worktrees = git(&ws.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "the children's worktrees are gone: {worktrees}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_task_call_may_ask_for_a_worktree_its_subagents_file_does_not() {
    let ws = workspace();
    repository(&ws);
    let file = ws.root.join(".agents/agents/worker-c.md");
    fs::write(
        &file,
        "---\ndescription: Changes code\ntools: read_file, edit_file\n---\nYou are WORKER-c. Make the change.\n",
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    let arguments =
        json!({"agent": "worker-c", "prompt": "Change the answer.", "isolation": "worktree"})
            .to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("t3", "task", &[arguments.as_str()])],
        None,
    ));
    let change = edit("44");
    fake.push_for(
        "WORKER-c",
        FakeProvider::openai_tool_calls(&[("e1", "edit_file", &[change.as_str()])], None),
    );
    fake.push_for(
        "WORKER-c",
        FakeProvider::openai_text(&["Changed it."], None),
    );
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (server, session) = session_server(
        &ws,
        &fake,
        json!({"approval": "full-auto", "checks": {"afterEdit": "off"}}),
    )
    .await;
    let (updates, _) = run_turn(&server, &session, "Have worker c change it apart.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let output = tool_output_in(&fake.requests().last().unwrap().body, "t3");
    assert!(output.contains("branch `agentls/task-t3`"), "{output}");
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        LIB,
        "the main tree is untouched"
    );
    assert_eq!(
        git(&ws.root, &["show", "agentls/task-t3:src/lib.rs"]),
        LIB.replace("41", "44")
    );
    server.stop().await;
}

/// Allows every call and applies `workspace/applyEdit` to the disk, as an editor that saves.
fn saving_editor() -> agentls_dev::lsp_client::Responder {
    std::sync::Arc::new(|method: &str, params: &serde_json::Value| match method {
        "agent/session/requestPermission" => {
            agentls_dev::lsp_client::Answer::Result(json!({"outcome": {"optionId": "allow-once"}}))
        }
        "workspace/applyEdit" => {
            agentls_dev::lsp_client::Answer::Result(json!({"applied": apply_to_disk(params)}))
        }
        _ => agentls_dev::lsp_client::Answer::Result(serde_json::Value::Null),
    })
}

#[tokio::test]
async fn a_session_works_in_a_worktree_across_a_restart_and_its_changes_are_applied_later() {
    let ws = workspace();
    fs::write(ws.root.join("src/b.rs"), "pub const B: u32 = 1;\n").unwrap();
    repository(&ws);
    let fake = FakeProvider::start().await;
    let create = json!({"path": "src/new.rs", "content": "pub fn new() {}\n"}).to_string();
    let change_b = json!({"path": "src/b.rs", "old_text": "1;", "new_text": "2;"}).to_string();
    fake.push(parallel_calls(&[
        ("e1", "edit_file", edit("42")),
        ("w1", "write_file", create),
        ("e2", "edit_file", change_b),
    ]));
    fake.push(FakeProvider::openai_text(&["Done apart."], None));
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "checks": {"afterEdit": "off"}}),
    );
    let first = server(&ws, options.clone(), Some(saving_editor())).await;
    let made = first
        .client
        .request("agent/session/new", json!({"worktree": true}))
        .await
        .unwrap();
    let session = made["sessionId"].as_str().unwrap().to_string();
    let worktree = Path::new(made["worktree"]["path"].as_str().unwrap()).to_path_buf();
    let branch = made["worktree"]["branch"].as_str().unwrap().to_string();
    assert_eq!(branch, format!("agentls/session-{session}"));
    let (updates, _) = run_turn(&first, &session, "Change it apart.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    // The work is in the worktree; the workspace is as it was.
    assert_eq!(
        fs::read_to_string(worktree.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    assert!(worktree.join("src/new.rs").exists());
    assert_eq!(fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(), LIB);
    assert!(!ws.root.join("src/new.rs").exists());
    first.stop().await;

    // Meanwhile the user changes b.rs in the workspace.
    fs::write(ws.root.join("src/b.rs"), "pub const B: u32 = 7;\n").unwrap();
    // A new server (whose first session sweeps the worktrees of dead servers) keeps it,
    // and brings its changes over; b.rs is the user's and stays.
    let server = server(&ws, options, Some(saving_editor())).await;
    new_session(&server).await;
    let applied = server
        .client
        .request("agent/session/applyWorktree", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(applied["branch"], branch.as_str());
    assert_eq!(
        applied["applied"],
        json!(["src/lib.rs", "src/new.rs"]),
        "{applied}"
    );
    assert_eq!(applied["conflicts"][0]["path"], "src/b.rs", "{applied}");
    assert!(applied["conflicts"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("changed in the workspace"));
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("src/new.rs")).unwrap(),
        "pub fn new() {}\n"
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("src/b.rs")).unwrap(),
        "pub const B: u32 = 7;\n"
    );
    // Applied twice: nothing more to write.
    let again = server
        .client
        .request("agent/session/applyWorktree", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(again["applied"], json!([]), "{again}");
    // A session that does not work apart is refused clearly.
    let plain = new_session(&server).await;
    let refused = server
        .client
        .request("agent/session/applyWorktree", json!({"sessionId": plain}))
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("does not work in a worktree"),
        "{refused:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn without_git_an_isolated_subagent_is_refused_and_a_killed_servers_worktree_is_swept() {
    // No repository: a clear refusal, nothing written.
    let plain = workspace();
    fs::remove_dir_all(plain.root.join(".git")).unwrap();
    let file = plain.root.join(".agents/agents/worker-a.md");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(
        &file,
        "---\nisolation: worktree\ntools: edit_file\n---\nWORKER-a.\n",
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    let calls = [task("t1", "worker-a")];
    let arguments = calls[0].2.clone();
    fake.push(FakeProvider::openai_tool_calls(
        &[("t1", "task", &[arguments.as_str()])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["OK."], None));
    let (server, session) = session_server(&plain, &fake, json!({"approval": "full-auto"})).await;
    run_turn(&server, &session, "Work apart.").await;
    let output = tool_output_in(&fake.requests().last().unwrap().body, "t1");
    assert!(
        output.contains("isolation: worktree needs a git repository"),
        "{output}"
    );
    server.stop().await;

    // A worktree a killed server (a process id that is not running) left is removed at
    // the next start; its branch stays.
    let ws = workspace();
    repository(&ws);
    let fake = FakeProvider::start().await;
    let (server, _) = session_server(&ws, &fake, json!({})).await;
    server.stop().await;
    let sessions = walk(ws.state.path())
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "sessions"))
        .expect("the session logs' directory");
    let stale = sessions
        .parent()
        .unwrap()
        .join("worktrees/999999999-task-old");
    git(
        &ws.root,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "agentls/task-old",
            stale.to_str().unwrap(),
        ],
    );
    let (server, _) = session_server(&ws, &fake, json!({})).await;
    // The sweep runs beside the session's start: wait for it (no clock in the test).
    while stale.exists() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    git(&ws.root, &["rev-parse", "--verify", "agentls/task-old"]);
    server.stop().await;
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.push(path.clone());
                pending.push(path);
            }
        }
    }
    found
}

#[tokio::test]
async fn a_session_that_works_apart_reads_the_editors_file_in_its_worktree() {
    // The editor shows the workspace: a prompt's editor state names the workspace's file,
    // which this session sees in its worktree (the user's change there is not its text);
    // a file the worktree does not have is left out, and the turn goes on either way.
    let ws = workspace();
    fs::write(ws.root.join("src/b.rs"), "pub const B: u32 = 1;\n").unwrap();
    repository(&ws);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["Seen."], None));
    fake.push(FakeProvider::openai_text(&["Seen too."], None));
    let options = provider_options(&fake, &ws, json!({"approval": "full-auto"}));
    let server = server(&ws, options, Some(saving_editor())).await;
    let made = server
        .client
        .request("agent/session/new", json!({"worktree": true}))
        .await
        .unwrap();
    let session = made["sessionId"].as_str().unwrap().to_string();
    fs::write(ws.root.join("src/b.rs"), "pub const B: u32 = 7;\n").unwrap();
    fs::write(ws.root.join("src/mine.rs"), "pub const MINE: u32 = 3;\n").unwrap();
    let ask = |file: &str| {
        let uri = format!("file://{}", ws.root.join(file).display());
        json!({"sessionId": session, "text": "What is this?", "editor": {"uri": uri, "position": {"line": 0, "character": 10}}})
    };
    for (file, answer) in [("src/b.rs", "Seen."), ("src/mine.rs", "Seen too.")] {
        let turn = server
            .client
            .request("agent/session/prompt", ask(file))
            .await
            .unwrap();
        let (updates, _) = updates_until_end(&server, turn["turnId"].as_str().unwrap()).await;
        assert_eq!(stop_reason(&updates), "endTurn", "{file}: {updates:?}");
        assert_eq!(answer_text(&updates), answer);
    }
    let requests = fake.requests();
    let first = requests[0].body.to_string();
    assert!(
        first.contains("src/b.rs") && first.contains("B: u32 = 1;"),
        "{first}"
    );
    assert!(
        !first.contains("B: u32 = 7;"),
        "the worktree's text, not the user's: {first}"
    );
    let second = requests[1].body.to_string();
    assert!(
        !second.contains("MINE"),
        "no file the worktree lacks: {second}"
    );
    // A client that loads the session learns where it works.
    let loaded = server
        .client
        .request("agent/session/load", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(loaded["worktree"], made["worktree"], "{loaded}");
    let plain = new_session(&server).await;
    let loaded = server
        .client
        .request("agent/session/load", json!({"sessionId": plain}))
        .await
        .unwrap();
    assert!(loaded.get("worktree").is_none(), "{loaded}");
    server.stop().await;
}
