//! The command line: --version, --help, bad arguments, `context`, `ask`, and the demo (the
//! main job: agentls-dev's, driving this agentls). The dev commands' own grammar and the fake
//! provider as a process are tested in dev_cli.rs.

mod common;

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(common::binary())
        .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
        .args(args)
        .output()
        .expect("run agentls")
}

/// A workspace with a `.git` (so it is its own root) and `files` (path, text) in it; the
/// directory lives as long as the returned guard.
fn git_workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    (dir, root)
}

#[test]
fn version_and_help() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    // The version, and the commit it was built from (this checkout's HEAD).
    let version = String::from_utf8(out.stdout).unwrap();
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    let expected = match head {
        Some(head) => format!("agentls {} ({head})\n", env!("CARGO_PKG_VERSION")),
        None => format!("agentls {}\n", env!("CARGO_PKG_VERSION")),
    };
    assert_eq!(version, expected);
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("ask")
            && help.contains("acp")
            && help.contains("context")
            && help.contains("AGENTLS_LOG"),
        "{help}"
    );
    // The dev kit is agentls-dev's, not the shipped binary's.
    for dev in ["demo", "bench", "fake-provider", "eval-compaction"] {
        assert!(!help.contains(dev), "{dev} in: {help}");
    }
}

/// Every subcommand has its own --help, naming its flags and their defaults.
#[test]
fn every_subcommand_has_a_help() {
    for (args, expected) in [
        (&["ask", "--help"][..], "--approve"),
        (&["acp", "--help"], "--config"),
        (&["context", "--help"], "--json"),
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
        (&["ask", "   "], "the question is empty"),
        (&["ask", "one", "two"], "unexpected argument 'two'"),
        (&["context"], "FILE[:LINE[:COL]]"),
        (&["bench", "keystroke"], "unrecognized subcommand 'bench'"),
        (
            &["fake-provider"],
            "unrecognized subcommand 'fake-provider'",
        ),
    ] {
        let out = run(args);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `agentls-dev demo`'s session, run here against this agentls binary.
#[tokio::test]
async fn demo_drives_a_real_session_and_prints_what_it_tracked() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Be brief.\n").unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "struct Config;\n\nimpl Config {\n    fn load() -> Self { Config }\n}\n\nfn main() {}\n",
    )
    .unwrap();
    let env = [
        ("XDG_CONFIG_HOME", common::NO_USER_CONFIG),
        ("AGENTLS_LOG", "error"),
    ];
    let mut out = Vec::new();
    let result = agentls_dev::demo::run_with((&common::binary(), &env), root, None, &mut out).await;
    let stdout = String::from_utf8(out).unwrap();
    assert!(result.is_ok(), "{stdout}\n{result:?}");
    for expected in [
        "position encoding \"utf-16\"",
        "workspace: Indexed 2 files",
        "opened src/main.rs: 8 lines, language \"rust\", version 1",
        "  impl Config [impl] line 3",
        "    load [method] line 4",
        "version 2, 13 lines, syntax errors: false",
        "last symbol: added_by_demo [function]",
        "symbol at 10:4: \"added_by_demo\" [\"function\"]",
        "  AGENTS.md (10 bytes)",
        "context the model would see (",
        "% of 128000, estimated):",
        "  editor",
        "server exited: exit status: 0",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

/// `agentls context`: the same report as the LSP request, for a file on disk.
#[test]
fn context_shows_sections_and_the_editor_parts_for_a_file_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Keep functions short.\n").unwrap();
    std::fs::write(
        root.join("lib.rs"),
        "pub fn double(x: u32) -> u32 {\n    x * 2\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("blob.bin"), [1u8, 0, 2, 0]).unwrap();
    let file = root.join("lib.rs");
    let target = format!("{}:2:5", file.display());

    let out = run(&["context", &target, "--workspace", root.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("context for lib.rs:2:5 in "), "{text}");
    for row in [
        "tools",
        "system",
        "agentsMd",
        "environment",
        "editor",
        "total",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(row)),
            "no {row} row: {text}"
        );
    }
    // A file this small is shown whole, in place of its enclosing symbol.
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("file ")),
        "{text}"
    );

    let out = run(&["context", &target, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let turn = report["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        turn.contains("cursor=\"2:5\"") && turn.contains("pub fn double"),
        "{turn}"
    );
    let system = report["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Keep functions short."), "{system}");

    let out = run(&["context", root.join("blob.bin").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("blob.bin is a binary file"), "{err}");

    let elsewhere = tempfile::tempdir().unwrap();
    let out = run(&[
        "context",
        target.as_str(),
        "--workspace",
        elsewhere.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("outside the workspace"));
}

/// `agentls context` builds the workspace's symbol index on the spot: a definition the code
/// at the cursor uses, from a file that is not open anywhere, is in the editor block, with
/// its doc comment, its signature on its own line and its path; a name the active file
/// defines itself is not looked up elsewhere.
#[test]
fn context_shows_a_definition_from_an_unopened_file() {
    let (_dir, root) = git_workspace(&[
        (
            "src/net/retry.rs",
            "/// How often to try again.\npub struct RetryPolicy {\n    pub attempts: u32,\n    pub backoff_ms: u64,\n}\n\npub fn helper() {}\n",
        ),
        ("src/other.rs", "pub fn helper() {}\n"),
        (
            "src/main.rs",
            "fn helper() {}\n\nfn run(policy: RetryPolicy) -> u32 {\n    helper();\n    policy.attempts\n}\n",
        ),
    ]);
    let target = format!("{}:4:5", root.join("src/main.rs").display());
    let out = run(&["context", &target, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let turn = report["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    let start = turn.find("<definitions>").expect("a definitions part");
    let end = turn.find("</definitions>").unwrap();
    let definitions = &turn[start..end];
    assert!(
        definitions.contains(
            "<definition name=\"RetryPolicy\" kind=\"struct\" path=\"src/net/retry.rs\" lines=\"2-5\">\n/// How often to try again.\nL2: pub struct RetryPolicy\n    pub attempts: u32\n    pub backoff_ms: u64\n</definition>"
        ),
        "{definitions}"
    );
    // `helper` is the active file's own: neither file's other `helper` is shown.
    assert!(!definitions.contains("name=\"helper\""), "{definitions}");
    let parts = report["editorParts"].as_array().unwrap();
    let part = parts.iter().find(|p| p["name"] == "definitions").unwrap();
    assert!(part["tokens"].as_u64().unwrap() > 0, "{part}");
}

/// `agentls context --repo-map-tokens N`: the repository map ends the system message, the
/// `repoMap` row counts it; without the flag (the setting's default, 0) there is none.
#[test]
fn context_shows_the_repository_map_with_its_tokens() {
    let (_dir, root) = git_workspace(&[
        (
            "src/net/retry.rs",
            "pub struct RetryPolicy {\n    pub attempts: u32,\n}\n",
        ),
        ("src/jobs.rs", "pub fn schedule(policy: &RetryPolicy) {}\n"),
        ("src/main.rs", "fn main() {}\n"),
    ]);
    let target = root.join("src/main.rs").display().to_string();
    let system_and_row = |extra: &[&str]| {
        let mut args = vec!["context", target.as_str(), "--json"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let system = report["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string();
        let row = report["sections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "repoMap")
            .expect("a repoMap section")
            .clone();
        (system, row)
    };
    let (system, row) = system_and_row(&["--repo-map-tokens", "512"]);
    let map = &system[system.find("## Repository map").expect("a map")..];
    assert!(
        map.contains("\n\nsrc/net/retry.rs\n  pub struct RetryPolicy"),
        "{map}"
    );
    let tokens = row["tokens"].as_u64().unwrap();
    assert!(tokens > 0 && tokens <= 512, "{row}");
    let (system, row) = system_and_row(&[]);
    assert!(!system.contains("Repository map"), "{system}");
    assert_eq!(row["tokens"], 0, "{row}");
}

/// `agentls ask` against the fake provider over real HTTP: the answer on stdout, the tool
/// call on stderr, the edit refused without a terminal to ask on, the session persisted and
/// continued with --session.
#[tokio::test]
async fn ask_runs_one_turn_without_an_editor_and_persists_the_session() {
    use agentls_dev::fake_provider::FakeProvider;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    41\n}\n",
    )
    .unwrap();
    let state = dir.path().join("state");
    let fake = FakeProvider::start().await;
    let edit =
        serde_json::json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("c1", "read_file", &["{\"path\":\"src/lib.rs\"}"])],
        None,
    ));
    fake.push(FakeProvider::openai_tool_calls(
        &[("c2", "edit_file", &[edit.as_str()])],
        None,
    ));
    fake.push(FakeProvider::openai_text(
        &["It returns ", "41."],
        Some((300, 4)),
    ));
    fake.push(FakeProvider::openai_text(&["Still 41."], None));
    let config = serde_json::json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "m"},
        "stateDir": state,
    })
    .to_string();
    let ask = |args: Vec<String>| {
        tokio::process::Command::new(common::binary())
            .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
            .args(args)
            .env("AGENTLS_LOG", "error")
            .stdin(std::process::Stdio::null())
            .output()
    };
    let workspace = root.to_str().unwrap().to_string();
    let out = ask(vec![
        "ask".into(),
        "What does answer() return?".into(),
        "--workspace".into(),
        workspace.clone(),
        "--config".into(),
        config.clone(),
    ])
    .await
    .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "It returns 41.", "{stderr}");
    assert!(stderr.contains("→ Read src/lib.rs"), "{stderr}");
    assert!(stderr.contains("stdin is not a terminal"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 {\n    41\n}\n",
        "the edit was refused, the file is unchanged"
    );
    let session = stderr
        .lines()
        .find_map(|l| l.strip_prefix("agentls: session "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the session id on stderr")
        .to_string();

    // The same session continues: its history is in the next request.
    let out = ask(vec![
        "ask".into(),
        "And now?".into(),
        "--workspace".into(),
        workspace,
        "--config".into(),
        config,
        "--session".into(),
        session,
    ])
    .await
    .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "Still 41.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    let history: Vec<String> = requests[3].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        history.iter().any(|c| c.contains("It returns 41.")),
        "{history:?}"
    );
}

#[tokio::test]
async fn ask_in_a_worktree_leaves_the_working_tree_and_commits_on_its_branch() {
    use agentls_dev::fake_provider::FakeProvider;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    let lib = "pub fn answer() -> u32 {\n    41\n}\n";
    std::fs::write(root.join("src/lib.rs"), lib).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "--quiet", "-b", "main"]);
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "--quiet",
        "-m",
        "start",
    ]);
    let fake = FakeProvider::start().await;
    let edit =
        serde_json::json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("c1", "edit_file", &[edit.as_str()])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Changed."], None));
    let config = serde_json::json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "m"},
        "stateDir": dir.path().join("state"),
        "checks": {"afterEdit": "off"},
    })
    .to_string();
    let out = tokio::process::Command::new(common::binary())
        .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
        .env("AGENTLS_LOG", "error")
        .args([
            "ask",
            "Make it 42",
            "--approve",
            "--worktree",
            "--workspace",
        ])
        .arg(&root)
        .args(["--config", &config])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        lib,
        "the working tree is as it was: {stderr}"
    );
    let branch = stderr
        .split("on branch ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .expect("the branch on stderr")
        .to_string();
    assert!(stderr.contains(&format!("git merge {branch}")), "{stderr}");
    assert_eq!(
        git(&["show", &format!("{branch}:src/lib.rs")]),
        lib.replace("41", "42"),
        "committed on its branch"
    );
    assert_eq!(git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
}

#[test]
fn ask_without_a_provider_says_how_to_configure_one() {
    let out = Command::new(common::binary())
        .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
        .args(["ask", "hello"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no provider configured") && err.contains("OPENAI_API_KEY"),
        "{err}"
    );
}

#[test]
fn sandbox_runs_a_command_confined_and_passes_its_exit_code_on() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let sandboxed = |script: &str| {
        Command::new(common::binary())
            .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
            .env("HOME", home.path())
            .current_dir(dir.path())
            .args(["sandbox", "--", "sh", "-c", script])
            .output()
            .expect("run agentls sandbox")
    };
    let out = sandboxed("touch here.txt && exit 7");
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert!(dir.path().join("here.txt").exists());
    let out = sandboxed("touch \"$HOME/out.txt\"");
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert!(!home.path().join("out.txt").exists());

    let bad = run(&["sandbox", "--policy", "{not json", "--", "true"]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8(bad.stderr).unwrap();
    assert!(stderr.contains("the policy is not valid"), "{stderr}");
}

#[test]
fn context_into_a_closed_pipe_ends_quietly() {
    // `agentls context FILE | head`: the reader is gone before the report is written.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("main.rs");
    std::fs::write(&file, "fn main() {}\n").unwrap();
    let mut child = Command::new(common::binary())
        .args(["context", file.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
}
