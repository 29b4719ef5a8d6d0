//! Hooks and reminders through the real server and the fake provider. The hook scripts are
//! written as for Claude Code: they read the event's JSON on stdin with `jq` (e.g.
//! `.tool_input.command`) and answer with exit codes or JSON on stdout, so a user's existing
//! scripts work unchanged.

mod common;

use agentls_dev::fake_provider::{FakeProvider, RecordedRequest};
use agentls_dev::lsp_client::Responder;
use common::agent::*;
use common::{start, Options, Server};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// The scripts and the user's config home live beside the workspace, not in it.
fn scripts_dir(ws: &Workspace) -> PathBuf {
    let dir = ws.root.parent().unwrap().join("hook-scripts");
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `body` as a POSIX shell script and returns the command that runs it.
fn script(ws: &Workspace, name: &str, body: &str) -> String {
    let path = scripts_dir(ws).join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    format!("sh {}", path.display())
}

fn jq_present() {
    assert!(
        std::process::Command::new("jq")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "these tests run Claude Code-style hook scripts that need jq"
    );
}

/// A server whose user config home is an empty directory beside the workspace (no hooks
/// file of the real user is read).
async fn hooked_server(
    ws: &Workspace,
    fake: &FakeProvider,
    extra: Value,
    responder: Option<Responder>,
) -> Server {
    jq_present();
    let config_home = ws.root.parent().unwrap().join("config-home");
    fs::create_dir_all(&config_home).unwrap();
    start(Options {
        root: Some(&ws.root),
        init_options: provider_options(fake, ws, extra),
        apply_edit: true,
        responder,
        env: vec![("XDG_CONFIG_HOME", config_home.display().to_string())],
        ..Options::default()
    })
    .await
}

fn hooks_setting(event: &str, matcher: Option<&str>, command: &str, timeout: Option<u64>) -> Value {
    let mut hook = json!({"type": "command", "command": command});
    if let Some(timeout) = timeout {
        hook["timeout"] = json!(timeout);
    }
    let mut group = json!({"hooks": [hook]});
    if let Some(matcher) = matcher {
        group["matcher"] = json!(matcher);
    }
    json!({ event: [group] })
}

fn hook_updates<'a>(updates: &'a [Value], event: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| u["kind"] == "hook" && u["event"] == event)
        .collect()
}

/// A hook that keeps what it reads: its command, and the file its inputs go to (one JSON
/// line each). `then` is the rest of its script, with the input in `$input`.
fn recorder(ws: &Workspace, name: &str, then: &str) -> (String, PathBuf) {
    let log = ws.root.parent().unwrap().join(format!("{name}.jsonl"));
    let command = script(
        ws,
        &format!("{name}.sh"),
        &format!(
            "input=$(cat)\nprintf '%s\\n' \"$input\" >> {}\n{then}",
            log.display()
        ),
    );
    (command, log)
}

/// The inputs a `recorder` got, in order; none when it never ran.
fn inputs(log: &Path) -> Vec<Value> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The hooks setting of several events, each (event, matcher, command).
fn hooks_of(events: &[(&str, Option<&str>, &str)]) -> Value {
    let mut all = json!({});
    for (event, matcher, command) in events {
        all[*event] = hooks_setting(event, *matcher, command, None)[*event].clone();
    }
    all
}

/// The request's messages as text, one string.
fn body_text(request: &RecordedRequest) -> String {
    request.body["messages"].to_string()
}

#[tokio::test]
async fn a_pre_tool_use_hook_exiting_2_blocks_rm_and_the_model_sees_why() {
    let (ws, fake) = workspace_and_fake().await;
    let guard = script(
        &ws,
        "no-rm.sh",
        r#"cmd=$(jq -r '.tool_input.command')
case "$cmd" in
  rm*) echo "Blocked: rm is not allowed in this project ($cmd)" >&2; exit 2 ;;
esac
exit 0"#,
    );
    let rm = json!({"command": "rm -f src/lib.rs"}).to_string();
    let ls = json!({"command": "ls src"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_rm", "shell", &[rm.as_str()])],
        None,
    ));
    fake.push_call_then_text("call_ls", "shell", &ls, "I left the file alone.");
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "full-auto", "hooks": hooks_setting("PreToolUse", Some("shell"), &guard, None)}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Clean up").await;

    assert_eq!(stop_reason(&updates), "endTurn");
    assert!(ws.root.join("src/lib.rs").exists(), "nothing is removed");
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 1, "{updates:?}");
    assert_eq!(failed[0]["toolCallId"], "call_rm");
    let output = failed[0]["output"].as_str().unwrap();
    assert!(
        output.contains("Blocked: rm is not allowed in this project (rm -f src/lib.rs)"),
        "{output}"
    );
    // The other command is not blocked.
    let done = tool_updates(&updates, "completed");
    assert!(
        done[0]["output"].as_str().unwrap().contains("lib.rs"),
        "{done:?}"
    );
    let hooks = hook_updates(&updates, "PreToolUse");
    assert_eq!(hooks.len(), 2, "{updates:?}");
    assert_eq!(hooks[0]["outcome"], "blocked");
    assert_eq!(hooks[0]["command"], guard);
    assert!(hooks[0]["durationMs"].is_u64());
    assert_eq!(hooks[1]["outcome"], "ok");
    // The model got the reason as the failed call's output.
    let requests = fake.requests();
    assert!(body_text(&requests[1]).contains("Blocked: rm is not allowed"));
    assert_invariants(&requests);
    server.stop().await;
}

#[tokio::test]
async fn a_permission_decision_allow_runs_read_file_without_asking_under_approval_ask() {
    let (ws, fake) = workspace_and_fake().await;
    let allow = script(
        &ws,
        "allow-reads.sh",
        r#"tool=$(jq -r '.tool_name')
if [ "$tool" = "read_file" ]; then
  jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: "reads are fine here"}}'
fi"#,
    );
    let read = json!({"path": "src/lib.rs"}).to_string();
    fake.push_call_then_text("call_r", "read_file", &read, "It returns 41.");
    // Asked, the client would refuse: the read only runs because the hook allowed it.
    let (responder, seen) = responder(&["rejectOnce"]);
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "ask", "hooks": hooks_setting("PreToolUse", Some(".*"), &allow, None)}),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "What does answer() return?").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert!(permission_requests(&seen).is_empty(), "not asked");
    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 1, "{updates:?}");
    assert!(done[0]["output"].as_str().unwrap().contains("41"));
    let hooks = hook_updates(&updates, "PreToolUse");
    assert_eq!(hooks[0]["outcome"], "ok");
    assert_eq!(hooks[0]["message"], "allow: reads are fine here");
    server.stop().await;
}

#[tokio::test]
async fn a_post_tool_use_hook_formats_the_file_edit_file_changed() {
    let (ws, fake) = workspace_and_fake().await;
    // A "formatter": strips trailing whitespace from the edited file, as a user's
    // `rustfmt "$file"` hook would reformat it.
    let formatter = script(
        &ws,
        "format.sh",
        r#"input=$(cat)
file=$(printf '%s' "$input" | jq -r '.tool_input.path')
ok=$(printf '%s' "$input" | jq -r '.tool_response.success')
cd "$CLAUDE_PROJECT_DIR" || exit 1
sed -i 's/[[:space:]]*$//' "$file"
echo "$file $ok" >> "$AGENTLS_PROJECT_DIR/../formatted.log""#,
    );
    fs::write(
        ws.root.join("src/lib.rs"),
        "pub fn answer() -> u32 {   \n    41\n}  \n",
    )
    .unwrap();
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push_call_then_text("call_e", "edit_file", &edit, "Done.");
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "full-auto", "hooks": hooks_setting("PostToolUse", Some("edit_file|write_file"), &formatter, None)}),
        Some(responder(&[]).0),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Make it 42").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let hooks = hook_updates(&updates, "PostToolUse");
    assert_eq!(hooks.len(), 1, "{updates:?}");
    assert_eq!(hooks[0]["outcome"], "ok", "{hooks:?}");
    // The hook ran after the edit, on the edited file.
    let log = fs::read_to_string(ws.root.parent().unwrap().join("formatted.log")).unwrap();
    assert_eq!(log, "src/lib.rs true\n");
    let text = fs::read_to_string(ws.root.join("src/lib.rs")).unwrap();
    assert!(!text.lines().any(|l| l.ends_with(' ')), "{text:?}");
    // The edit's toolCallUpdate came before the hook ran.
    let edited = updates
        .iter()
        .position(|u| u["kind"] == "toolCallUpdate" && u["status"] == "in_progress")
        .unwrap();
    let hooked = updates.iter().position(|u| u["kind"] == "hook").unwrap();
    assert!(edited < hooked);
    server.stop().await;
}

#[tokio::test]
async fn a_user_prompt_submit_hooks_stdout_reaches_the_model_as_a_reminder() {
    let (ws, fake) = workspace_and_fake().await;
    let context = script(
        &ws,
        "context.sh",
        r#"prompt=$(jq -r '.prompt')
echo "Sprint rule: every change needs a test. (prompt was: $prompt)""#,
    );
    fake.push(FakeProvider::openai_text(&["Noted."], None));
    let server = hooked_server(
        &ws,
        &fake,
        json!({"hooks": hooks_setting("UserPromptSubmit", None, &context, None)}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Plan the work").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let reminder = updates
        .iter()
        .find(|u| u["kind"] == "reminder")
        .expect("a reminder update");
    assert_eq!(reminder["source"], "hook");
    let requests = fake.requests();
    let messages = requests[0].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    let text =
        last["content"].as_str().unwrap_or_default().to_string() + &last["content"].to_string();
    assert!(
        text.contains("Sprint rule: every change needs a test. (prompt was: Plan the work)"),
        "{last}"
    );
    assert!(text.contains("<agentls_reminder"), "wrapped: {last}");
    assert!(text.contains("not from the user"), "{last}");
    // The typed prompt comes before the reminder: the reminder is at the very end.
    let body = body_text(&requests[0]);
    assert!(body.find("Plan the work").unwrap() < body.find("Sprint rule").unwrap());
    // agent/session/context shows the reminders as their own trusted section.
    let report = session_request(&server, "agent/session/context", &session).await;
    let section = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "reminders")
        .expect("a reminders section");
    assert_eq!(section["trust"], "trusted");
    assert!(section["tokens"].as_u64().unwrap() > 0, "{section}");
    server.stop().await;
}

#[tokio::test]
async fn a_stop_hook_makes_the_turn_go_on_once_and_not_twice() {
    let (ws, fake) = workspace_and_fake().await;
    let log = ws.root.parent().unwrap().join("stop.log");
    let stop = script(
        &ws,
        "stop.sh",
        &format!(
            r#"jq -r '.stop_hook_active' >> {}
echo "Run the tests before you finish." >&2
exit 2"#,
            log.display()
        ),
    );
    fake.push(FakeProvider::openai_text(&["Done."], None));
    fake.push(FakeProvider::openai_text(&["Tests pass; done."], None));
    let server = hooked_server(
        &ws,
        &fake,
        json!({"hooks": hooks_setting("Stop", None, &stop, None)}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Fix it").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(answer_text(&updates), "Done.Tests pass; done.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one more model call, not two");
    assert!(body_text(&requests[1]).contains("Run the tests before you finish."));
    assert!(!body_text(&requests[0]).contains("Run the tests"));
    // The hook saw stop_hook_active false, then true.
    assert_eq!(fs::read_to_string(&log).unwrap(), "false\ntrue\n");
    let hooks = hook_updates(&updates, "Stop");
    assert_eq!(hooks.len(), 2);
    assert!(hooks.iter().all(|h| h["outcome"] == "blocked"));
    assert!(
        updates
            .iter()
            .any(|u| u["kind"] == "warning" && u["message"].as_str().unwrap().contains("once")),
        "{updates:?}"
    );
    server.stop().await;
}

fn write_workspace_hooks(root: &Path, command: &str) {
    fs::create_dir_all(root.join(".agents")).unwrap();
    fs::write(
        root.join(".agents/hooks.json"),
        json!({"hooks": hooks_setting("UserPromptSubmit", None, command, None)}).to_string(),
    )
    .unwrap();
}

#[tokio::test]
async fn a_workspace_hook_asks_first_and_is_not_run_when_refused() {
    let (ws, fake) = workspace_and_fake().await;
    let marker = ws.root.parent().unwrap().join("workspace-hook-ran");
    let command = format!("touch {} && echo 'from the repository'", marker.display());
    write_workspace_hooks(&ws.root, &command);
    fake.push(FakeProvider::openai_text(&["Hello."], None));
    fake.push(FakeProvider::openai_text(&["Hello again."], None));
    let (responder, seen) = responder(&["rejectOnce"]);
    let server = hooked_server(&ws, &fake, json!({}), Some(responder)).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "hi").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["toolCall"]["kind"], "execute");
    assert_eq!(asked[0]["toolCall"]["input"]["command"], command);
    assert!(!marker.exists(), "a refused hook does not run");
    let hooks = hook_updates(&updates, "UserPromptSubmit");
    assert_eq!(hooks[0]["outcome"], "notApproved");
    assert!(!body_text(&fake.requests()[0]).contains("from the repository"));
    // The refusal holds for this server: not asked again, still not run.
    let _ = run_turn(&server, &session, "hi again").await;
    assert_eq!(permission_requests(&seen).len(), 1);
    assert!(!marker.exists());
    server.stop().await;
}

#[tokio::test]
async fn an_approved_workspace_hook_is_remembered_until_it_changes() {
    let (ws, fake) = workspace_and_fake().await;
    let marker = ws.root.parent().unwrap().join("approved-hook-ran");
    let command = format!("echo run >> {}", marker.display());
    write_workspace_hooks(&ws.root, &command);
    for _ in 0..3 {
        fake.push(FakeProvider::openai_text(&["ok"], None));
    }
    let (responder_a, seen_a) = responder(&["allowAlways"]);
    let server_a = hooked_server(&ws, &fake, json!({}), Some(responder_a)).await;
    let session = new_session(&server_a).await;
    let _ = run_turn(&server_a, &session, "one").await;
    assert_eq!(permission_requests(&seen_a).len(), 1);
    assert_eq!(fs::read_to_string(&marker).unwrap(), "run\n");
    server_a.stop().await;

    // Another server: remembered on disk for this workspace and this hook.
    let (responder_b, seen_b) = responder(&["rejectOnce"]);
    let server_b = hooked_server(&ws, &fake, json!({}), Some(responder_b)).await;
    let session = new_session(&server_b).await;
    let _ = run_turn(&server_b, &session, "two").await;
    assert!(permission_requests(&seen_b).is_empty());
    assert_eq!(fs::read_to_string(&marker).unwrap(), "run\nrun\n");

    // A changed hook is another hook: asked again (and refused here).
    write_workspace_hooks(&ws.root, &format!("{command}; echo changed"));
    let _ = run_turn(&server_b, &session, "three").await;
    assert_eq!(permission_requests(&seen_b).len(), 1);
    assert_eq!(fs::read_to_string(&marker).unwrap(), "run\nrun\n");
    server_b.stop().await;
}

#[tokio::test]
async fn a_hanging_hook_is_killed_at_its_timeout_and_the_turn_goes_on() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.parent().unwrap().join("hang.pid");
    let hang = script(
        &ws,
        "hang.sh",
        &format!("sleep 600 &\necho $! > {}\nwait", pid_file.display()),
    );
    fake.push(FakeProvider::openai_text(&["Still here."], None));
    let server = hooked_server(
        &ws,
        &fake,
        json!({"hooks": hooks_setting("UserPromptSubmit", None, &hang, Some(1))}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "hi").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(answer_text(&updates), "Still here.");
    let hooks = hook_updates(&updates, "UserPromptSubmit");
    assert_eq!(hooks[0]["outcome"], "timeout", "{hooks:?}");
    assert!(updates
        .iter()
        .any(|u| u["kind"] == "warning" && u["message"].as_str().unwrap().contains("timed out")));
    // The hook's whole process group was killed: its `sleep` is gone (or a zombie).
    let pid = fs::read_to_string(&pid_file).unwrap();
    let stat = fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim().chars().next();
    assert!(
        stat.is_empty() || state == Some('Z'),
        "the hook's child still runs: {stat}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_reminder_shown_once_is_not_shown_again_after_a_reload() {
    let (ws, fake) = workspace_and_fake().await;
    let context = script(
        &ws,
        "house-style.sh",
        "echo 'House style: tabs, not spaces.'",
    );
    fake.push(FakeProvider::openai_text(&["ok"], None));
    fake.push(FakeProvider::openai_text(&["ok again"], None));
    let settings = json!({"hooks": hooks_setting("UserPromptSubmit", None, &context, None)});
    let server_a = hooked_server(&ws, &fake, settings.clone(), None).await;
    let session = new_session(&server_a).await;
    let (updates, _) = run_turn(&server_a, &session, "first").await;
    assert_eq!(
        updates.iter().filter(|u| u["kind"] == "reminder").count(),
        1
    );
    server_a.stop().await;

    let server_b = hooked_server(&ws, &fake, settings, None).await;
    let loaded = session_request(&server_b, "agent/session/load", &session).await;
    // The reopened chat shows the hook's run and the reminder, as the live one did.
    let items = loaded["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert_eq!(kinds, ["hook", "user", "reminder", "assistant"], "{loaded}");
    assert_eq!(items[0]["event"], "UserPromptSubmit");
    assert_eq!(items[0]["outcome"], "ok");
    assert_eq!(items[2]["source"], "hook");
    assert!(
        items[2]["text"]
            .as_str()
            .unwrap()
            .ends_with("House style: tabs, not spaces."),
        "{loaded}"
    );
    let (updates, _) = run_turn(&server_b, &session, "second").await;
    // The hook ran again and said the same: the reminder is not repeated.
    assert_eq!(
        hook_updates(&updates, "UserPromptSubmit")[0]["outcome"],
        "ok"
    );
    assert_eq!(
        updates.iter().filter(|u| u["kind"] == "reminder").count(),
        0
    );
    let requests = fake.requests();
    let body = body_text(&requests[1]);
    assert_eq!(
        body.matches("House style: tabs, not spaces.").count(),
        1,
        "{body}"
    );
    server_b.stop().await;
}

#[tokio::test]
async fn a_risky_pattern_is_warned_about_once_per_session() {
    let (ws, fake) = workspace_and_fake().await;
    let write = |path: &str, content: &str| json!({"path": path, "content": content}).to_string();
    let first = write("src/a.py", "x = eval(input())\n");
    let second = write("src/b.py", "y = eval(data)\n");
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_a", "write_file", &[first.as_str()])],
        None,
    ));
    fake.push_call_then_text("call_b", "write_file", &second, "Written.");
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "full-auto"}),
        Some(responder(&[]).0),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "write them").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let reminders: Vec<&Value> = updates.iter().filter(|u| u["kind"] == "reminder").collect();
    assert_eq!(reminders.len(), 1, "{updates:?}");
    assert_eq!(reminders[0]["key"], "risky:eval");
    let requests = fake.requests();
    assert!(!body_text(&requests[0]).contains("calls eval()"));
    assert_eq!(body_text(&requests[2]).matches("calls eval()").count(), 1);
    server.stop().await;
}

#[tokio::test]
async fn compaction_runs_pre_compact_and_session_start_and_reminds_of_the_changed_files() {
    let ws = workspace();
    let big: String = (0..150)
        .map(|i| format!("let value_{i} = compute(&inputs[{i}], \"parser stage {i}\");\n"))
        .collect();
    fs::write(ws.root.join("src/big.rs"), big).unwrap();
    let fake = FakeProvider::start().await;
    let log = ws.root.parent().unwrap().join("events.log");
    let record = script(
        &ws,
        "record.sh",
        &format!(
            r#"jq -r '[.hook_event_name, (.source // .trigger)] | join(" ")' >> {}"#,
            log.display()
        ),
    );
    let write = json!({"path": "src/new.rs", "content": "pub fn added() {}\n"}).to_string();
    let read = json!({"path": "src/big.rs"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("w1", "write_file", &[write.as_str()]),
            ("r1", "read_file", &[read.as_str()]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Read and written."], None));
    fake.push_for(
        "CONTEXT CHECKPOINT COMPACTION",
        FakeProvider::openai_text(
            &["# Compaction Handoff\n[Done] wrote src/new.rs\n[Next] go on"],
            None,
        ),
    );
    fake.push(FakeProvider::openai_text(&["Going on."], None));
    fake.push(FakeProvider::openai_text(&["Back again."], None));
    let (post, posts) = recorder(
        &ws,
        "post-compact",
        &format!("printf '%s' \"$input\" | {record}"),
    );
    let mut settings = hooks_setting("SessionStart", None, &record, None);
    settings["PreCompact"] =
        hooks_setting("PreCompact", Some("manual"), &record, None)["PreCompact"].clone();
    settings["PostCompact"] =
        hooks_setting("PostCompact", Some("manual"), &post, None)["PostCompact"].clone();
    let extra = json!({"approval": "full-auto", "hooks": settings});
    let server = hooked_server(&ws, &fake, extra.clone(), Some(responder(&[]).0)).await;
    let session = new_session(&server).await;
    let _ = run_turn(&server, &session, "Read big.rs and add new.rs").await;
    let outcome = session_request(&server, "agent/session/compact", &session).await;
    assert_eq!(outcome["strategy"], "summary", "{outcome}");
    let posts = inputs(&posts);
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0]["trigger"], "manual");
    assert!(
        posts[0]["compact_summary"]
            .as_str()
            .unwrap()
            .contains("[Done] wrote src/new.rs"),
        "{posts:?}"
    );
    let (updates, _) = run_turn(&server, &session, "Go on").await;
    let reminder = updates
        .iter()
        .find(|u| u["kind"] == "reminder" && u["source"] == "compaction")
        .expect("the after-compaction reminder");
    assert!(
        reminder["text"].as_str().unwrap().contains("src/new.rs"),
        "{reminder}"
    );
    let last = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("Read a file again before you edit it"),
        "{last}"
    );
    server.stop().await;

    let server = hooked_server(&ws, &fake, extra, None).await;
    session_request(&server, "agent/session/load", &session).await;
    let _ = run_turn(&server, &session, "Again").await;
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        "SessionStart new\nPreCompact manual\nPostCompact manual\nSessionStart compact\nSessionStart loaded\n"
    );
    server.stop().await;
}

#[tokio::test]
async fn updated_input_replaces_the_arguments_and_a_failed_call_fires_post_tool_use_failure() {
    let (ws, fake) = workspace_and_fake().await;
    let redirect = script(
        &ws,
        "redirect.sh",
        r#"path=$(jq -r '.tool_input.path')
if [ "$path" = "src/old_name.rs" ]; then
  jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", updatedInput: {path: "src/lib.rs"}}}'
fi"#,
    );
    let log = ws.root.parent().unwrap().join("post.log");
    let post = script(
        &ws,
        "post.sh",
        &format!(
            r#"jq -r '[.tool_input.path, (.tool_response.success | tostring), ((.tool_response.error // "") | length > 0 | tostring)] | join(" ")' >> {}"#,
            log.display()
        ),
    );
    let renamed = json!({"path": "src/old_name.rs"}).to_string();
    let missing = json!({"path": "src/missing.rs"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("c1", "read_file", &[renamed.as_str()]),
            ("c2", "read_file", &[missing.as_str()]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Read one."], None));
    // Claude Code's PostToolUseFailure: exit 2 shows stderr to the model.
    let (failure, failures) = recorder(
        &ws,
        "failure",
        "echo 'src/missing.rs is generated: run make first' >&2\nexit 2",
    );
    let hooks = hooks_of(&[
        ("PreToolUse", Some("read_file"), &redirect),
        ("PostToolUse", Some("read_file"), &post),
        ("PostToolUseFailure", Some("read_file"), &failure),
    ]);
    let server = hooked_server(&ws, &fake, json!({"hooks": hooks}), None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Read them").await;
    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 1, "{updates:?}");
    assert_eq!(done[0]["toolCallId"], "c1");
    assert!(
        done[0]["output"].as_str().unwrap().contains("41"),
        "the rewritten path was read"
    );
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed[0]["toolCallId"], "c2");
    // PostToolUse for the call that succeeded only; the failed one fires
    // PostToolUseFailure instead, with the error the model got.
    assert_eq!(fs::read_to_string(&log).unwrap(), "src/lib.rs true false\n");
    let failures = inputs(&failures);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let input = &failures[0];
    assert_eq!(input["hook_event_name"], "PostToolUseFailure");
    assert_eq!(input["session_id"], session);
    assert_eq!(input["tool_name"], "read_file");
    assert_eq!(input["tool_input"], json!({"path": "src/missing.rs"}));
    assert_eq!(input["tool_use_id"], "c2");
    assert_eq!(input["error"], failed[0]["output"]);
    assert!(input["duration_ms"].is_u64(), "{input}");
    assert!(input.get("tool_response").is_none(), "{input}");
    let hooks = hook_updates(&updates, "PostToolUseFailure");
    assert_eq!(hooks.len(), 1, "{updates:?}");
    assert!(body_text(&fake.requests()[1]).contains("src/missing.rs is generated: run make first"));
    server.stop().await;
}

#[tokio::test]
async fn a_call_that_never_ran_fires_no_post_tool_hook() {
    let (ws, fake) = workspace_and_fake().await;
    let (post, posts) = recorder(&ws, "post", "");
    let (failure, failures) = recorder(&ws, "failure", "");
    let guard = script(&ws, "guard.sh", "echo 'not here' >&2\nexit 2");
    let blocked = json!({"command": "rm -rf src"}).to_string();
    let rejected = json!({"command": "touch x"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("c_blocked", "shell", &[blocked.as_str()]),
            ("c_rejected", "shell", &[rejected.as_str()]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Nothing ran."], None));
    let hooks = hooks_of(&[
        (
            "PreToolUse",
            Some("shell"),
            &format!(
                "jq -e '.tool_input.command | startswith(\"rm\")' >/dev/null || exit 0; {guard}"
            ),
        ),
        ("PostToolUse", None, &post),
        ("PostToolUseFailure", None, &failure),
    ]);
    let (responder, seen) = responder(&["rejectOnce"]);
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "ask", "hooks": hooks}),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Try both").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(tool_updates(&updates, "failed").len(), 2, "{updates:?}");
    assert_eq!(permission_requests(&seen).len(), 1, "the second was asked");
    // A block and a rejection are not failures of a call that ran (Claude Code: they fire
    // neither PostToolUse nor PostToolUseFailure).
    assert!(inputs(&posts).is_empty());
    assert!(inputs(&failures).is_empty());
    server.stop().await;
}

#[tokio::test]
async fn a_permission_request_hook_allows_a_call_unasked_and_no_permission_prompt_is_notified() {
    let (ws, fake) = workspace_and_fake().await;
    let (allow, asked) = recorder(
        &ws,
        "permission",
        r#"jq -n '{hookSpecificOutput: {hookEventName: "PermissionRequest", decision: {behavior: "allow"}}}'"#,
    );
    let (notify, notified) = recorder(&ws, "notify", "");
    let echo = json!({"command": "echo hooked-allow"}).to_string();
    fake.push_call_then_text("c1", "shell", &echo, "Echoed.");
    // Asked, the client would refuse: the command runs only because the hook allowed it.
    let (responder, seen) = responder(&["rejectOnce"]);
    let hooks = hooks_of(&[
        ("PermissionRequest", Some("shell"), &allow),
        ("Notification", None, &notify),
    ]);
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "ask", "hooks": hooks}),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Echo it").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert!(permission_requests(&seen).is_empty(), "not asked");
    let done = tool_updates(&updates, "completed");
    assert!(
        done[0]["output"].as_str().unwrap().contains("hooked-allow"),
        "{updates:?}"
    );
    let asked = inputs(&asked);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["hook_event_name"], "PermissionRequest");
    assert_eq!(asked[0]["session_id"], session);
    assert_eq!(asked[0]["tool_name"], "shell");
    assert_eq!(
        asked[0]["tool_input"],
        json!({"command": "echo hooked-allow"})
    );
    assert!(asked[0].get("tool_use_id").is_none(), "{}", asked[0]);
    // Claude Code does not notify of a prompt a hook answered; the turn's end is notified.
    let notified = inputs(&notified);
    let types: Vec<&Value> = notified.iter().map(|n| &n["notification_type"]).collect();
    assert_eq!(types, ["idle_prompt"], "{notified:?}");
    assert_eq!(notified[0]["hook_event_name"], "Notification");
    assert!(notified[0]["message"]
        .as_str()
        .unwrap()
        .contains("waiting for your input"));
    assert!(notified[0]["title"].is_string());
    server.stop().await;
}

#[tokio::test]
async fn a_permission_request_hooks_deny_refuses_the_call_with_its_message() {
    let (ws, fake) = workspace_and_fake().await;
    let deny = script(
        &ws,
        "deny.sh",
        r#"jq -n '{hookSpecificOutput: {hookEventName: "PermissionRequest", decision: {behavior: "deny", message: "no shell on Fridays"}}}'"#,
    );
    let touch = json!({"command": "touch denied-marker"}).to_string();
    fake.push_call_then_text("c1", "shell", &touch, "Refused.");
    let (responder, seen) = responder(&["allowOnce"]);
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "ask", "hooks": hooks_setting("PermissionRequest", None, &deny, None)}),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Touch it").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert!(permission_requests(&seen).is_empty(), "not asked");
    assert!(!ws.root.join("denied-marker").exists(), "not run");
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 1, "{updates:?}");
    assert_eq!(
        failed[0]["output"],
        "denied by a PermissionRequest hook: no shell on Fridays"
    );
    assert!(body_text(&fake.requests()[1]).contains("no shell on Fridays"));
    assert_eq!(
        hook_updates(&updates, "PermissionRequest")[0]["outcome"],
        "blocked"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_permission_request_hook_without_a_decision_leaves_the_question_and_it_is_notified() {
    let (ws, fake) = workspace_and_fake().await;
    let (silent, asked) = recorder(&ws, "permission", "exit 2");
    let (notify, notified) = recorder(&ws, "notify", "");
    let echo = json!({"command": "echo asked-anyway"}).to_string();
    fake.push_call_then_text("c1", "shell", &echo, "Echoed.");
    let (responder, seen) = responder(&["allowOnce"]);
    let hooks = hooks_of(&[
        ("PermissionRequest", None, &silent),
        ("Notification", Some("permission_prompt"), &notify),
    ]);
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "ask", "hooks": hooks}),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Echo it").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    // Exit 2 is not a decision (Claude Code ignores it here): the user was asked.
    assert_eq!(inputs(&asked).len(), 1);
    assert_eq!(permission_requests(&seen).len(), 1);
    assert_eq!(tool_updates(&updates, "completed").len(), 1, "{updates:?}");
    // The matcher keeps the permission prompt only: not the turn's end.
    let notified = inputs(&notified);
    assert_eq!(notified.len(), 1, "{notified:?}");
    assert_eq!(notified[0]["notification_type"], "permission_prompt");
    assert_eq!(notified[0]["session_id"], session);
    assert!(
        notified[0]["message"].as_str().unwrap().contains("shell"),
        "{notified:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_provider_error_fires_stop_failure_instead_of_stop() {
    let (ws, fake) = workspace_and_fake().await;
    let (failure, failures) = recorder(&ws, "stop-failure", "exit 2");
    let (stop, stops) = recorder(&ws, "stop", "");
    fake.push(agentls_dev::fake_provider::Reply::Http {
        status: 401,
        headers: vec![],
        body: json!({"error": {"message": "Incorrect API key provided"}}).to_string(),
    });
    let hooks = hooks_of(&[
        ("StopFailure", Some("authentication_failed"), &failure),
        ("Stop", None, &stop),
    ]);
    let server = hooked_server(&ws, &fake, json!({"hooks": hooks}), None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "hi").await;
    assert_eq!(stop_reason(&updates), "error");
    let error = updates.iter().find(|u| u["kind"] == "error").unwrap();
    let failures = inputs(&failures);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let input = &failures[0];
    assert_eq!(input["hook_event_name"], "StopFailure");
    assert_eq!(input["error"], "authentication_failed");
    assert!(
        input["error_details"]
            .as_str()
            .unwrap()
            .contains("Incorrect API key"),
        "{input}"
    );
    assert_eq!(input["last_assistant_message"], error["message"]);
    assert!(inputs(&stops).is_empty(), "no Stop after an error");
    // Its exit code is ignored: no block.
    assert_eq!(hook_updates(&updates, "StopFailure")[0]["outcome"], "ok");
    server.stop().await;
}

#[tokio::test]
async fn instructions_loaded_fires_for_each_agents_md_file_as_it_joins_the_chain() {
    let (ws, fake) = workspace_and_fake().await;
    fs::write(ws.root.join("AGENTS.md"), "Use tabs.\n").unwrap();
    fs::write(ws.root.join("src/AGENTS.md"), "Library code: no panics.\n").unwrap();
    let (loaded, log) = recorder(&ws, "instructions", "");
    for _ in 0..3 {
        fake.push(FakeProvider::openai_text(&["ok"], None));
    }
    let server = hooked_server(
        &ws,
        &fake,
        json!({"hooks": hooks_setting("InstructionsLoaded", None, &loaded, None)}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let _ = run_turn(&server, &session, "one").await;
    let at_lib = |text: &str| {
        json!({"sessionId": session, "text": text, "editor": {
            "uri": common::uri(&ws.root.join("src/lib.rs")),
            "position": {"line": 0, "character": 0},
        }})
    };
    for text in ["two", "three"] {
        let turn = server
            .client
            .request("agent/session/prompt", at_lib(text))
            .await
            .unwrap();
        let (updates, _) = updates_until_end(&server, turn["turnId"].as_str().unwrap()).await;
        assert_eq!(stop_reason(&updates), "endTurn");
    }
    let loads = inputs(&log);
    let seen: Vec<(&str, &str)> = loads
        .iter()
        .map(|l| {
            (
                l["file_path"].as_str().unwrap(),
                l["load_reason"].as_str().unwrap(),
            )
        })
        .collect();
    let root_file = ws.root.join("AGENTS.md").display().to_string();
    let nested = ws.root.join("src/AGENTS.md").display().to_string();
    // The root file at the first turn; the nested one when the active file brought it in,
    // once.
    assert_eq!(
        seen,
        [
            (root_file.as_str(), "session_start"),
            (nested.as_str(), "nested_traversal")
        ],
        "{loads:?}"
    );
    assert!(loads.iter().all(|l| l["memory_type"] == "Project"
        && l["hook_event_name"] == "InstructionsLoaded"
        && l["session_id"] == session.as_str()));
    server.stop().await;
}

#[tokio::test]
async fn session_end_fires_at_shutdown_for_the_sessions_that_started() {
    let (ws, fake) = workspace_and_fake().await;
    let (end, log) = recorder(&ws, "session-end", "");
    fake.push(FakeProvider::openai_text(&["ok"], None));
    let server = hooked_server(
        &ws,
        &fake,
        json!({"hooks": hooks_setting("SessionEnd", None, &end, None)}),
        None,
    )
    .await;
    let used = new_session(&server).await;
    let _idle = new_session(&server).await;
    let _ = run_turn(&server, &used, "hi").await;
    assert!(inputs(&log).is_empty(), "not before the end");
    server.stop().await;
    let ends = inputs(&log);
    // The session that never had a turn never started: it does not end.
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["hook_event_name"], "SessionEnd");
    assert_eq!(ends[0]["session_id"], used);
    assert_eq!(ends[0]["reason"], "other");
    assert!(ends[0]["transcript_path"]
        .as_str()
        .unwrap()
        .ends_with(".jsonl"));
}

#[tokio::test]
async fn subagent_start_and_stop_fire_for_a_task_and_a_subagent_stop_block_makes_it_go_on() {
    let (ws, fake) = workspace_and_fake().await;
    let agents = ws.root.join(".agents/agents");
    fs::create_dir_all(&agents).unwrap();
    fs::write(
        agents.join("checker.md"),
        "---\nname: checker\ndescription: Checks things\ntools: read_file\n---\nYou are the CHECKERAGENT.\n",
    )
    .unwrap();
    let (start, starts) = recorder(
        &ws,
        "subagent-start",
        r#"jq -n '{hookSpecificOutput: {hookEventName: "SubagentStart", additionalContext: "CHECKER-RULE: cite line numbers"}}'"#,
    );
    // Blocks once, as a Stop hook would: the subagent goes on with the reason.
    let (stop, stops) = recorder(
        &ws,
        "subagent-stop",
        r#"if [ "$(tail -n 1 "$0.log" 2>/dev/null)" != blocked ]; then echo blocked >> "$0.log"; echo 'also check the tests' >&2; exit 2; fi"#,
    );
    let (parent_stop, parent_stops) = recorder(&ws, "stop", "");
    let task = json!({"agent": "checker", "prompt": "Check answer()"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_task", "task", &[task.as_str()])],
        None,
    ));
    fake.push_for(
        "CHECKERAGENT",
        FakeProvider::openai_text(&["First look done."], None),
    );
    fake.push_for(
        "CHECKERAGENT",
        FakeProvider::openai_text(&["Tests checked too."], None),
    );
    fake.push(FakeProvider::openai_text(&["The checker is done."], None));
    let hooks = hooks_of(&[
        ("SubagentStart", Some("checker"), &start),
        ("SubagentStop", Some("checker"), &stop),
        ("Stop", None, &parent_stop),
    ]);
    let server = hooked_server(&ws, &fake, json!({"hooks": hooks}), None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Check it with the checker").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let done = tool_updates(&updates, "completed");
    assert_eq!(done[0]["output"], "Tests checked too.", "{updates:?}");

    let starts = inputs(&starts);
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["hook_event_name"], "SubagentStart");
    assert_eq!(starts[0]["agent_type"], "checker");
    // The subagent is part of the user's session: its own session is `agent_id`.
    assert_eq!(starts[0]["session_id"], session);
    let agent_id = starts[0]["agent_id"].as_str().unwrap().to_string();
    assert_ne!(agent_id, session);
    let stops = inputs(&stops);
    assert_eq!(stops.len(), 2, "blocked once, then let go: {stops:?}");
    assert_eq!(stops[0]["hook_event_name"], "SubagentStop");
    assert_eq!(stops[0]["agent_id"], agent_id.as_str());
    assert_eq!(stops[0]["agent_type"], "checker");
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[1]["stop_hook_active"], true);
    assert_eq!(stops[0]["last_assistant_message"], "First look done.");
    assert_eq!(stops[1]["last_assistant_message"], "Tests checked too.");
    assert_ne!(
        stops[0]["agent_transcript_path"],
        stops[0]["transcript_path"]
    );
    assert!(stops[0]["agent_transcript_path"]
        .as_str()
        .unwrap()
        .contains(&agent_id));
    // The subagent's requests: the start hook's context in the first, the stop hook's
    // reason in the second; the parent never sees either.
    let requests = fake.requests();
    let child: Vec<String> = requests
        .iter()
        .map(body_text)
        .filter(|b| b.contains("CHECKERAGENT"))
        .collect();
    assert_eq!(child.len(), 2);
    assert!(child[0].contains("CHECKER-RULE: cite line numbers"));
    assert!(child[1].contains("also check the tests"));
    assert!(!body_text(requests.last().unwrap()).contains("CHECKER-RULE"));
    // Stop is the parent's: once, at its own end, not at the subagent's.
    let parent_stops = inputs(&parent_stops);
    assert_eq!(parent_stops.len(), 1, "{parent_stops:?}");
    assert_eq!(
        parent_stops[0]["last_assistant_message"],
        "The checker is done."
    );
    server.stop().await;
}

#[tokio::test]
async fn a_user_prompt_submit_block_keeps_the_prompt_from_the_model() {
    let (ws, fake) = workspace_and_fake().await;
    let guard = script(
        &ws,
        "no-secrets.sh",
        r#"if jq -r '.prompt' | grep -q 'password'; then
  echo '{"decision": "block", "reason": "prompts must not contain passwords"}'
fi"#,
    );
    fake.push(FakeProvider::openai_text(&["Fine."], None));
    let server = hooked_server(
        &ws,
        &fake,
        json!({"hooks": hooks_setting("UserPromptSubmit", None, &guard, None)}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "my password is hunter2").await;
    assert_eq!(stop_reason(&updates), "error");
    let error = updates.iter().find(|u| u["kind"] == "error").unwrap();
    assert_eq!(error["code"], "blockedByHook");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("prompts must not contain passwords"));
    assert!(fake.requests().is_empty(), "nothing was sent");
    // The next prompt goes through, and the blocked one is not in its history.
    let (updates, _) = run_turn(&server, &session, "hello").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert!(!body_text(&fake.requests()[0]).contains("hunter2"));
    server.stop().await;
}

#[tokio::test]
async fn a_cancel_kills_a_running_hook_and_ends_the_turn() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.parent().unwrap().join("slow.pid");
    let slow = script(
        &ws,
        "slow.sh",
        &format!(
            "sleep 600 &\necho $! > {}.tmp\nmv {0}.tmp {0}\nwait",
            pid_file.display()
        ),
    );
    let server = hooked_server(
        &ws,
        &fake,
        json!({"hooks": hooks_setting("UserPromptSubmit", None, &slow, None)}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let turn = prompt(&server, &session, "hi").await;
    // Wait until the hook runs (a condition, not a duration).
    while !pid_file.exists() {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let cancelled = session_request(&server, "agent/session/cancel", &session).await;
    assert_eq!(cancelled["cancelled"], true);
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "cancelled");
    assert!(fake.requests().is_empty(), "no model call after the cancel");
    let pid = fs::read_to_string(&pid_file).unwrap();
    let stat = fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim().chars().next();
    assert!(
        stat.is_empty() || state == Some('Z'),
        "the hook's child still runs: {stat}"
    );
    server.stop().await;
}

/// Issue 41, hole 5: the user's own hook that runs a workspace script (`sh scripts/fmt.sh`)
/// ran the script a full-auto command had just rewritten, unconfined and unasked. A script
/// that changed since the hook last ran is asked, whoever changed it.
#[tokio::test]
async fn a_users_hook_whose_workspace_script_changed_since_it_ran_is_asked_first() {
    let (ws, fake) = workspace_and_fake().await;
    let marker = ws.root.parent().unwrap().join("fmt-ran");
    fs::create_dir_all(ws.root.join("scripts")).unwrap();
    fs::write(
        ws.root.join("scripts/fmt.sh"),
        format!("echo v1 >> {}\n", marker.display()),
    )
    .unwrap();
    let hooks = hooks_setting("PostToolUse", Some("shell"), "sh scripts/fmt.sh", None);
    let (responder, seen) = responder(&["rejectOnce"]);
    let server = hooked_server(
        &ws,
        &fake,
        json!({"approval": "full-auto", "hooks": hooks}),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let echo = json!({"command": "echo hi"}).to_string();
    fake.push_call_then_text("c1", "shell", &echo, "ok");
    let (updates, _) = run_turn(&server, &session, "one").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert!(
        permission_requests(&seen).is_empty(),
        "the user's hook runs unasked"
    );
    assert_eq!(fs::read_to_string(&marker).unwrap(), "v1\n");

    let rewrite = json!({
        "command": format!("echo 'echo v2 >> {}' > scripts/fmt.sh", marker.display())
    })
    .to_string();
    fake.push_call_then_text("c2", "shell", &rewrite, "ok");
    let (updates, _) = run_turn(&server, &session, "two").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("changed since it last ran"),
        "{asked:?}"
    );
    assert_eq!(
        asked[0]["toolCall"]["input"]["scripts"],
        json!(["scripts/fmt.sh"])
    );
    assert_eq!(
        fs::read_to_string(&marker).unwrap(),
        "v1\n",
        "the rewritten script ran"
    );
    let hooks = hook_updates(&updates, "PostToolUse");
    assert_eq!(hooks[0]["outcome"], "notApproved", "{hooks:?}");
    server.stop().await;
}
