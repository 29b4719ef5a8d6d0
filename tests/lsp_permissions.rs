//! Standing permission rules (`permissions.allow/ask/deny`, and a workspace's
//! `.agents/settings.json`) through the real server and the fake provider: what runs, what
//! asks, what is refused, and what `agent/permissions` lists.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use serde_json::{json, Value};
use std::fs;

/// One turn in which the model makes one call of `tool` with `arguments`, then answers.
async fn one_call_turn(
    server: &common::Server,
    fake: &FakeProvider,
    session: &str,
    id: &str,
    tool: &str,
    arguments: Value,
) -> String {
    let arguments = arguments.to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[(id, tool, &[arguments.as_str()])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["done"], None));
    let before = fake.requests().len();
    run_turn(server, session, "go").await;
    let requests = fake.requests();
    assert_eq!(requests.len(), before + 2, "one call, one answer");
    tool_output_in(&requests[before + 1].body, id)
}

async fn permissions(server: &common::Server) -> Value {
    server
        .client
        .request("agent/permissions", json!({}))
        .await
        .expect("agent/permissions")
}

/// Sends `settings` as the whole configuration and waits until `agent/permissions` shows
/// `rules` rules in force.
async fn reconfigure(server: &common::Server, settings: Value, rules: usize) {
    server
        .client
        .notify(
            "workspace/didChangeConfiguration",
            json!({ "settings": settings }),
        )
        .await
        .unwrap();
    while permissions(server).await["rules"].as_array().unwrap().len() != rules {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_deny_rule_stops_a_call_that_an_always_answer_allowed() {
    let (ws, fake) = workspace_and_fake().await;
    let (responder, seen) = responder(&["allowAlways"]);
    let options = provider_options(&fake, &ws, json!({}));
    let server = server(&ws, options.clone(), Some(responder)).await;
    let session = new_session(&server).await;
    let touch = |name: &str| json!({"command": format!("touch {name}")});
    let output = one_call_turn(&server, &fake, &session, "c1", "shell", touch("one")).await;
    assert!(ws.root.join("one").exists(), "{output}");
    assert_eq!(permission_requests(&seen).len(), 1);

    let mut denied = options.clone();
    merge(
        &mut denied,
        json!({"permissions": {"deny": ["shell(touch:*)"]}}),
    );
    reconfigure(&server, denied, 1).await;
    let output = one_call_turn(&server, &fake, &session, "c2", "shell", touch("two")).await;
    assert!(
        output.contains("not run: the permission rule `shell(touch:*)` (user settings) denies it"),
        "{output}"
    );
    assert!(!ws.root.join("two").exists());
    // Hidden in a line it is refused too, and nobody is asked.
    let hidden = json!({"command": "echo ok; (cd src && touch three)"});
    let output = one_call_turn(&server, &fake, &session, "c3", "shell", hidden).await;
    assert!(output.contains("denies it"), "{output}");
    assert!(!ws.root.join("src/three").exists());
    assert_eq!(permission_requests(&seen).len(), 1);
    assert_eq!(
        permissions(&server).await,
        json!({"rules": [{"action": "deny", "rule": "shell(touch:*)", "source": "user"}], "problems": []})
    );
    server.stop().await;
}

#[tokio::test]
async fn an_allowed_prefix_runs_alone_and_asks_when_it_carries_another_command() {
    let (ws, fake) = workspace_and_fake().await;
    fs::write(ws.root.join("x"), "keep\n").unwrap();
    let (responder, seen) = responder(&["rejectOnce"]);
    let options = provider_options(
        &fake,
        &ws,
        json!({"permissions": {"allow": ["shell(git log:*)"]}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    let git_log = json!({"command": "git log -1"});
    one_call_turn(&server, &fake, &session, "c1", "shell", git_log).await;
    assert!(
        permission_requests(&seen).is_empty(),
        "the allowed command ran without asking"
    );
    let carried = json!({"command": "git log -1 && rm -rf x"});
    let output = one_call_turn(&server, &fake, &session, "c2", "shell", carried).await;
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 1, "{output}");
    assert!(
        asked[0]["toolCall"]["input"]["command"]
            .as_str()
            .is_some_and(|c| c.contains("rm -rf x")),
        "{asked:?}"
    );
    assert_eq!(fs::read_to_string(ws.root.join("x")).unwrap(), "keep\n");
    server.stop().await;
}

#[tokio::test]
async fn an_ask_rule_asks_in_full_auto_and_a_path_rule_matches_the_file_a_call_names() {
    let (ws, fake) = workspace_and_fake().await;
    let (responder, seen) = responder(&["rejectOnce"]);
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "permissions": {"ask": ["write_file(src/**)"]}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    let outside_src = json!({"path": "notes.md", "content": "free\n"});
    // The edits go to the editor (workspace/applyEdit), which the test client answers.
    let edits = || {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(method, _)| method == "workspace/applyEdit")
            .map(|(_, params)| params.to_string())
            .collect::<Vec<_>>()
    };
    one_call_turn(&server, &fake, &session, "c1", "write_file", outside_src).await;
    assert!(permission_requests(&seen).is_empty());
    assert!(edits()[0].contains("notes.md"), "{:?}", edits());
    let inside_src = json!({"path": "src/new.rs", "content": "fn x() {}\n"});
    let output = one_call_turn(&server, &fake, &session, "c2", "write_file", inside_src).await;
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 1, "{output}");
    assert_eq!(asked[0]["toolCall"]["input"]["path"], "src/new.rs");
    assert_eq!(
        edits().len(),
        1,
        "the rejected write never reached the editor"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_workspace_may_deny_and_ask_but_its_allow_rules_are_ignored_and_said() {
    let (ws, fake) = workspace_and_fake().await;
    fs::create_dir_all(ws.root.join(".agents")).unwrap();
    fs::create_dir_all(ws.root.join("secrets")).unwrap();
    fs::write(ws.root.join("secrets/key.txt"), "TOPSECRET\n").unwrap();
    fs::write(
        ws.root.join(".agents/settings.json"),
        json!({
            "permissions": {"allow": ["shell", "read_file"], "deny": ["Read(secrets/**)"]},
            "approval": "full-auto"
        })
        .to_string(),
    )
    .unwrap();
    let (responder, seen) = responder(&["rejectOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;

    let read = json!({"path": "secrets/key.txt"});
    let output = one_call_turn(&server, &fake, &session, "c1", "read_file", read).await;
    assert!(
        output.contains("`Read(secrets/**)` (workspace settings) denies it"),
        "{output}"
    );
    assert!(!output.contains("TOPSECRET"));
    let listed = json!({"path": "secrets"});
    let output = one_call_turn(&server, &fake, &session, "c2", "list_dir", listed).await;
    assert!(output.contains("denies it"), "{output}");

    // The workspace's allow of `shell` grants nothing: the command still asks.
    let command = json!({"command": "touch made"});
    one_call_turn(&server, &fake, &session, "c3", "shell", command).await;
    assert_eq!(permission_requests(&seen).len(), 1);
    assert!(!ws.root.join("made").exists());

    let status = permissions(&server).await;
    assert_eq!(
        status["rules"],
        json!([{"action": "deny", "rule": "Read(secrets/**)", "source": "workspace"}])
    );
    let problems = status["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.as_str().unwrap().contains(
                "\"shell\" ignored: a workspace's settings may deny or ask, never allow"
            )),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.as_str().unwrap().contains("\"approval\" ignored")),
        "{problems:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_settings_list_with_a_bad_rule_is_refused_whole_and_reported() {
    let (ws, fake) = workspace_and_fake().await;
    let options = provider_options(
        &fake,
        &ws,
        json!({"permissions": {"deny": ["shell(git push:*)"]}}),
    );
    let server = server(&ws, options.clone(), None).await;
    let mut bad = options.clone();
    merge(
        &mut bad,
        json!({"permissions": {"deny": ["shell(git push:*", "read_file(.env)"]}}),
    );
    server
        .client
        .notify(
            "workspace/didChangeConfiguration",
            json!({ "settings": bad }),
        )
        .await
        .unwrap();
    let said = loop {
        let message = server.client.wait_for("window/showMessage").await.unwrap();
        let text = message.params["message"].as_str().unwrap().to_string();
        if text.contains("permissions.deny") {
            break text;
        }
    };
    assert!(said.contains("no closing parenthesis"), "{said}");
    // The previous list stays in force.
    assert_eq!(
        permissions(&server).await["rules"],
        json!([{"action": "deny", "rule": "shell(git push:*)", "source": "user"}])
    );
    server.stop().await;
}

#[tokio::test]
async fn an_always_answer_kept_in_the_workspace_holds_in_a_later_session() {
    let (ws, fake) = workspace_and_fake().await;
    let (responder, seen) = responder(&["allowAlways", "rejectAlways"]);
    let options = provider_options(
        &fake,
        &ws,
        json!({"permissions": {"rememberAlways": "workspace"}}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let first = new_session(&server).await;
    // `touch ./one`: the answer covers `touch` (a path is not a subcommand).
    let touch = |name: &str| json!({"command": format!("touch ./{name}")});
    one_call_turn(&server, &fake, &first, "c1", "shell", touch("one")).await;
    let remove = json!({"command": "rm -f ./one"});
    one_call_turn(&server, &fake, &first, "c2", "shell", remove.clone()).await;
    assert_eq!(permission_requests(&seen).len(), 2);
    assert!(ws.root.join("one").exists(), "the rm was refused");

    // A new session has none of the first one's answers, but the workspace's rules.
    let second = new_session(&server).await;
    one_call_turn(&server, &fake, &second, "c3", "shell", touch("two")).await;
    assert!(ws.root.join("two").exists());
    let output = one_call_turn(&server, &fake, &second, "c4", "shell", remove).await;
    assert!(
        output.contains("`shell(rm:*)` (an \"always\" answer in this workspace) denies it"),
        "{output}"
    );
    assert_eq!(
        permission_requests(&seen).len(),
        2,
        "nothing more was asked"
    );
    assert_eq!(
        permissions(&server).await["rules"],
        json!([
            {"action": "deny", "rule": "shell(rm:*)", "source": "answers"},
            {"action": "allow", "rule": "shell(touch:*)", "source": "answers"}
        ])
    );
    // Kept outside the repository, private.
    let kept: Vec<_> = fs::read_dir(ws.state.path().join("permissions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&kept[0]).unwrap().permissions().mode() & 0o077,
        0
    );
    server.stop().await;
}
