//! Secrets through the real server: the provider's key cannot be read by a tool process
//! (not even through `/proc/$PPID/environ`), a secret that reaches a tool's output anyway is
//! redacted before it is recorded, and the session files are the user's alone.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use common::{start, Options};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const KEY: &str = "sk-agentls-e2e-0123456789abcdef";
const TOKEN: &str = "ghp-agentls-e2e-fedcba9876543210";

async fn key_server(ws: &Workspace, fake: &FakeProvider) -> common::Server {
    start(Options {
        root: Some(&ws.root),
        init_options: provider_options(fake, ws, json!({"approval": "full-auto"})),
        apply_edit: true,
        env: vec![
            ("OPENAI_API_KEY", KEY.to_string()),
            ("AGENTLS_E2E_TOKEN", TOKEN.to_string()),
        ],
        ..Options::default()
    })
    .await
}

/// The session log files under the state directory.
fn logs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            logs(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Everything the model was sent after the first request, as text.
fn later_requests(fake: &FakeProvider) -> String {
    fake.requests()
        .iter()
        .skip(1)
        .map(|r| r.body.to_string())
        .collect()
}

#[cfg(target_os = "linux")] // /proc
#[tokio::test]
async fn the_key_is_not_readable_through_proc_ppid_environ() {
    let (ws, fake) = workspace_and_fake().await;
    // The parent as /proc names it (`$PPID` is its pid in the command's PID namespace).
    let command =
        json!({"command": "read -r _ _ _ ppid _ < /proc/self/stat; cat /proc/$ppid/environ"})
            .to_string();
    fake.push_call_then_text("call_env", "shell", &command, "done");
    let server = key_server(&ws, &fake).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "print your parent's environment").await;
    server.stop().await;

    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 1, "{updates:?}");
    let output = done[0]["output"].as_str().unwrap();
    // The command did read the server's initial environment...
    assert!(output.contains("AGENTLS_LOG=error"), "{output}");
    // ...and found no key there: wiped, not merely redacted after the fact.
    assert!(!output.contains(KEY), "{output}");
    assert!(!output.contains(TOKEN), "{output}");
    assert!(!output.contains("[redacted]"), "{output}");
    assert!(!Value::Array(updates.clone()).to_string().contains(KEY));

    // The model saw the output without the key; the provider still had it.
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let sent = later_requests(&fake);
    assert!(sent.contains("AGENTLS_LOG=error"), "{sent}");
    assert!(!sent.contains(KEY), "{sent}");
    for request in &requests {
        let authorization = request
            .headers
            .iter()
            .find(|(name, _)| name == "authorization")
            .map(|(_, value)| value.as_str());
        assert_eq!(authorization, Some(format!("Bearer {KEY}").as_str()));
    }

    // Nor does the session log, which only the user can read.
    let mut files = Vec::new();
    logs(ws.state.path(), &mut files);
    assert_eq!(files.len(), 1, "{files:?}");
    let log = std::fs::read_to_string(&files[0]).unwrap();
    assert!(log.contains("AGENTLS_LOG=error"));
    assert!(!log.contains(KEY));
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(files[0].parent().unwrap()), 0o700);
}

/// A key under a name without a secret's suffix (`provider.apiKeyEnv`), arriving with the
/// configuration after start-up, is wiped too: a hook that runs before the first model call
/// and a command after it both find zeros in `/proc/$PPID/environ`.
#[cfg(target_os = "linux")] // /proc
#[tokio::test]
async fn a_key_under_another_name_is_wiped_before_hooks_and_commands_run() {
    const CRED: &str = "llm-cred-e2e-5a5a5a5a5a5a5a5a";
    let (ws, fake) = workspace_and_fake().await;
    let out = ws.root.join("hook-environ.txt");
    let hook = format!("tr '\\0' '\\n' < /proc/$PPID/environ > {}", out.display());
    let command = json!({
        "command": "read -r _ _ _ ppid _ < /proc/self/stat; tr '\\0' '\\n' < /proc/$ppid/environ"
    })
    .to_string();
    fake.push_call_then_text("call_env", "shell", &command, "done");
    let server = start(Options {
        root: Some(&ws.root),
        init_options: provider_options(
            &fake,
            &ws,
            json!({
                "approval": "full-auto",
                "provider": {"apiKeyEnv": "AGENTLS_E2E_LLM_CRED"},
                "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}]},
            }),
        ),
        apply_edit: true,
        env: vec![("AGENTLS_E2E_LLM_CRED", CRED.to_string())],
        ..Options::default()
    })
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "print your parent's environment").await;
    server.stop().await;

    let from_hook = std::fs::read_to_string(&out).unwrap();
    assert!(from_hook.contains("AGENTLS_LOG=error"), "{from_hook}");
    assert!(
        !from_hook.contains(CRED),
        "the hook read the key: {from_hook}"
    );
    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 1, "{updates:?}");
    let output = done[0]["output"].as_str().unwrap();
    assert!(output.contains("AGENTLS_LOG=error"), "{output}");
    assert!(!output.contains(CRED), "{output}");
    assert!(
        !output.contains("[redacted]"),
        "wiped, not redacted: {output}"
    );
    // The provider still had it.
    let requests = fake.requests();
    let authorization = requests[0]
        .headers
        .iter()
        .find(|(name, _)| name == "authorization")
        .map(|(_, value)| value.clone());
    assert_eq!(authorization, Some(format!("Bearer {CRED}")));
}

#[tokio::test]
async fn a_secret_in_a_tool_output_is_redacted_before_it_is_recorded() {
    let ws = workspace();
    std::fs::write(ws.root.join("leak.txt"), format!("key={KEY}\n")).unwrap();
    let fake = FakeProvider::start().await;
    let read = json!({"path": "leak.txt"}).to_string();
    // A secret the shell tool does not hide (not the provider's): the command inherits it.
    let echo = json!({"command": "echo token=$AGENTLS_E2E_TOKEN"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_read", "read_file", &[read.as_str()]),
            ("call_echo", "shell", &[echo.as_str()]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["done"], None));
    let server = key_server(&ws, &fake).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "read leak.txt and echo the token").await;
    server.stop().await;

    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 2, "{updates:?}");
    let read = done[0]["output"].as_str().unwrap();
    assert!(read.contains("key=[redacted]"), "{read}");
    let echo = done[1]["output"].as_str().unwrap();
    assert!(echo.contains("token=[redacted]"), "{echo}");
    let everything = Value::Array(updates.clone()).to_string();
    assert!(!everything.contains(KEY) && !everything.contains(TOKEN));

    let sent = later_requests(&fake);
    assert!(sent.contains("key=[redacted]"), "{sent}");
    assert!(!sent.contains(KEY) && !sent.contains(TOKEN), "{sent}");

    let mut files = Vec::new();
    logs(ws.state.path(), &mut files);
    let log = std::fs::read_to_string(&files[0]).unwrap();
    assert!(log.contains("token=[redacted]"));
    assert!(!log.contains(KEY) && !log.contains(TOKEN));
}
