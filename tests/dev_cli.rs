//! agentls-dev's command line: --version, --help, bad arguments, and the fake provider as the
//! process the editor tiers start. The demo's session is tested in cli.rs, against agentls.

use std::process::Command;

/// A config home that does not exist: no user settings, hooks, commands or prompts.
const NO_USER_CONFIG: &str = "/nonexistent/agentls-tests-config-home";

fn binary() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_agentls-dev"))
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(binary())
        .env("XDG_CONFIG_HOME", NO_USER_CONFIG)
        .args(args)
        .output()
        .expect("run agentls-dev")
}

#[test]
fn version_and_help() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("agentls-dev {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for command in ["demo", "bench", "eval-compaction", "fake-provider"] {
        assert!(help.contains(command), "{command} in: {help}");
    }
}

/// Every subcommand has its own --help, naming its flags and their defaults.
#[test]
fn every_subcommand_has_a_help() {
    for (args, expected) in [
        (&["demo", "--help"][..], "[DIR]"),
        (&["eval-compaction", "--help"], "--window"),
        (&["fake-provider", "--help"], "--script"),
        (&["bench", "--help"], "keystroke"),
        (&["bench", "keystroke", "--help"], "[default: 10000]"),
        (&["bench", "context", "--help"], "--history-tokens"),
        (&["bench", "stream", "--help"], "--first-token-ms"),
        (&["bench", "ttft", "--help"], "--base-url"),
        (&["bench", "compaction", "--help"], "--summary-ms"),
        (&["bench", "memory", "--help"], "--buffers"),
        (&["bench", "startup", "--help"], "--files"),
    ] {
        let out = run(args);
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(help.contains(expected), "{args:?}: {help}");
    }
}

/// A bad value or an unknown flag is refused with a clear message and exit code 2, never
/// replaced by a default (`--turns x` used to run with 10).
#[test]
fn bad_arguments_fail_with_exit_code_2_and_say_why() {
    for (args, expected) in [
        (&["--frobnicate"][..], "unexpected argument '--frobnicate'"),
        (
            &["bench", "keystroke", "--lines", "many"],
            "invalid value 'many' for '--lines <LINES>'",
        ),
        (
            &[
                "bench",
                "ttft",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--turns",
                "x",
            ],
            "invalid value 'x' for '--turns <TURNS>'",
        ),
        (&["bench", "context", "--rounds", "0"], "must be at least 1"),
        (&["bench", "ttft"], "--base-url <URL>"),
        (
            &["bench", "memory", "--lines"],
            "a value is required for '--lines <LINES>'",
        ),
        (&["fake-provider", "--script"], "a value is required"),
        (
            &["bench", "frobnicate"],
            "unrecognized subcommand 'frobnicate'",
        ),
        // agentls's own commands are not the dev kit's.
        (&["ask", "hello"], "unrecognized subcommand 'ask'"),
    ] {
        let out = run(args);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `agentls-dev fake-provider` as a process: scripted from a file and over `/__push`, answers
/// in the real SSE format, lists what it received, exits when its stdin closes.
#[tokio::test]
async fn the_fake_provider_runs_as_a_process_for_other_test_suites() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"replies": [{"text": ["Hello", " there"], "usage": [10, 2]}]})
            .to_string(),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(binary())
        .env("XDG_CONFIG_HOME", NO_USER_CONFIG)
        .args(["fake-provider", "--script", script.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let base = lines.next_line().await.unwrap().unwrap();
    assert!(
        base.starts_with("http://127.0.0.1:") && base.ends_with("/v1"),
        "{base}"
    );
    // reqwest is built without a crypto provider: the process installs ring first.
    agentls::provider::tls::install();
    let http = reqwest::Client::new();
    let ask = || async {
        http.post(format!("{base}/chat/completions"))
            .header("content-type", "application/json")
            .body(r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#)
            .send()
            .await
            .unwrap()
    };
    let first = ask().await.text().await.unwrap();
    assert!(
        first.contains("\"content\":\"Hello\"") && first.contains("[DONE]"),
        "{first}"
    );
    let root = base.trim_end_matches("/v1");
    let pushed = http
        .post(format!("{root}/__push"))
        .body(r#"{"reply": {"http": {"status": 429, "body": "slow down"}}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(pushed.status(), 200);
    assert_eq!(ask().await.status(), 429);
    let bad = http
        .post(format!("{root}/__push"))
        .body(r#"{"reply": {"what": 1}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let seen: serde_json::Value = serde_json::from_str(
        &http
            .get(format!("{root}/__requests"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(seen.as_array().unwrap().len(), 2);
    assert_eq!(seen[0]["path"], "/v1/chat/completions");
    drop(child.stdin.take());
    assert!(child.wait().await.unwrap().success());
}
