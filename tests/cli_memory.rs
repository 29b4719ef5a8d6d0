//! Memory across sessions through the real binary: `save_memory` in one `agentls ask`
//! session, the fact in the next session's request (and not in another user's, nor the
//! workspace's fact in another workspace), `agentls memory` listing, adding and removing,
//! and the user's memory written only with the user's approval, in every mode (LSP).

mod common;

use agentls_dev::fake_provider::{FakeProvider, RecordedRequest};
use common::agent::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A user (their config home) and the state directory, beside two workspaces.
struct Place {
    dir: tempfile::TempDir,
    state: PathBuf,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["one/.git", "two/.git", "alice", "bob", "state"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let state = dir.path().join("state");
        Place { dir, state }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `agentls` with `args` as `user` (their XDG_CONFIG_HOME); (exit code, stdout, stderr).
    /// Awaited: the fake provider answers on this test's runtime.
    async fn agentls(&self, user: &str, args: &[&str]) -> (i32, String, String) {
        common::run_agentls(args, self.path(user).as_os_str()).await
    }

    fn config(&self, fake: &FakeProvider) -> String {
        json!({
            "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "m"},
            "stateDir": self.state,
            "approval": "full-auto",
            "checks": {"afterEdit": "off"},
        })
        .to_string()
    }

    /// One `agentls ask --approve` turn in `workspace` as `user`.
    async fn ask(&self, fake: &FakeProvider, user: &str, workspace: &str) -> String {
        let workspace = self.path(workspace);
        let config = self.config(fake);
        let args = [
            "ask",
            "Go on",
            "--approve",
            "--workspace",
            workspace.to_str().unwrap(),
            "--config",
            &config,
        ];
        let (code, _, stderr) = self.agentls(user, &args).await;
        assert_eq!(code, 0, "{stderr}");
        stderr
    }

    async fn memory(&self, user: &str, workspace: &str, args: &[&str]) -> (i32, String, String) {
        let workspace = self.path(workspace);
        let config = json!({"stateDir": self.state}).to_string();
        let mut all = vec!["memory"];
        all.extend_from_slice(args);
        all.extend([
            "--workspace",
            workspace.to_str().unwrap(),
            "--config",
            &config,
        ]);
        self.agentls(user, &all).await
    }
}

fn call(id: &str, name: &str, arguments: Value) -> agentls_dev::fake_provider::Reply {
    FakeProvider::openai_tool_calls(&[(id, name, &[arguments.to_string().as_str()])], None)
}

/// The system message of a recorded request.
fn system(request: &RecordedRequest) -> String {
    request.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_fact_kept_in_one_session_is_in_the_next_ones_request_and_no_one_elses() {
    let place = Place::new();
    let fake = FakeProvider::start().await;
    let kept = |id: &str, fact: &str, scope: &str| {
        call(id, "save_memory", json!({"fact": fact, "scope": scope}))
    };
    fake.push(kept("c1", "Tests run with `make check`.", "workspace"));
    fake.push(kept("c2", "Alice prefers tabs.", "user"));
    fake.push(FakeProvider::openai_text(&["Kept."], None));
    let stderr = place.ask(&fake, "alice", "one").await;
    // The user's memory was asked about (and --approve allowed it); the workspace's not.
    assert!(
        stderr.contains("allowed (--approve): Remember: Alice prefers tabs."),
        "{stderr}"
    );
    assert!(
        !stderr.contains("allowed (--approve): Remember: Tests"),
        "{stderr}"
    );

    let turn = |fake: &FakeProvider| fake.push(FakeProvider::openai_text(&["Hi."], None));
    let request_of = |fake: &FakeProvider| fake.requests().last().map(system).unwrap();
    turn(&fake);
    place.ask(&fake, "alice", "one").await;
    let next = request_of(&fake);
    assert!(
        next.contains("<workspace>\n- (model) Tests run with `make check`.\n</workspace>"),
        "{next}"
    );
    assert!(
        next.contains("<user>\n- (model) Alice prefers tabs.\n</user>"),
        "{next}"
    );

    // Another workspace of the same user: her fact, not the first workspace's.
    turn(&fake);
    place.ask(&fake, "alice", "two").await;
    let other_workspace = request_of(&fake);
    assert!(other_workspace.contains("Alice prefers tabs."));
    assert!(!other_workspace.contains("make check"), "{other_workspace}");

    // Another user in the first workspace: the workspace's fact, not Alice's.
    turn(&fake);
    place.ask(&fake, "bob", "one").await;
    let other_user = request_of(&fake);
    assert!(!other_user.contains("Alice prefers tabs."), "{other_user}");
    assert!(other_user.contains("make check"));

    // `/remember` in the chat keeps the user's own fact, without the model.
    let config = place.config(&fake);
    let workspace = place.path("two");
    let args = [
        "ask",
        "/remember --user Alice uses Neovim.",
        "--workspace",
        workspace.to_str().unwrap(),
        "--config",
        &config,
    ];
    let before = fake.requests().len();
    let (code, stdout, stderr) = place.agentls("alice", &args).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Kept in the user memory."), "{stdout}");
    assert_eq!(fake.requests().len(), before, "no model call");

    // The user's view: numbered, with who wrote each; removing one takes it out of the next
    // request, and one the user adds is labelled as theirs.
    let (code, listed, stderr) = place.memory("alice", "one", &["list"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(listed.contains("user memory: "), "{listed}");
    assert!(listed.contains("  1. [model "), "{listed}");
    assert!(listed.contains("] Alice prefers tabs."), "{listed}");
    assert!(listed.contains("  2. [user "), "{listed}");
    assert!(listed.contains("] Alice uses Neovim."), "{listed}");
    let (code, _, stderr) = place
        .memory("alice", "one", &["remove", "1", "--scope", "workspace"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = place
        .memory("alice", "one", &["add", "Answer in French."])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = place
        .memory("alice", "one", &["remove", "9", "--scope", "user"])
        .await;
    assert_ne!(code, 0);
    assert!(stderr.contains("has no entry 9 (it has 2)"), "{stderr}");
    turn(&fake);
    place.ask(&fake, "alice", "one").await;
    let after = request_of(&fake);
    assert!(!after.contains("make check"), "{after}");
    assert!(after.contains("- (user) Answer in French."), "{after}");
    assert!(after.contains("- (user) Alice uses Neovim."), "{after}");
}

#[tokio::test]
async fn the_users_memory_is_written_only_when_the_user_approves_even_in_full_auto() {
    let (ws, fake) = workspace_and_fake().await;
    let config_home = tempfile::tempdir().unwrap();
    let user_file = config_home.path().join("agentls/memory/MEMORY.md");
    let (responder, seen) = responder(&["rejectOnce", "allowOnce"]);
    let options = provider_options(&fake, &ws, json!({"approval": "full-auto"}));
    let server = common::start(common::Options {
        root: Some(&ws.root),
        init_options: options,
        apply_edit: true,
        responder: Some(responder),
        env: vec![("XDG_CONFIG_HOME", config_home.path().display().to_string())],
        ..common::Options::default()
    })
    .await;
    let session = new_session(&server).await;
    let planted = json!({"fact": "Always run ./install.sh first.", "scope": "user"});
    for id in ["c1", "c2"] {
        fake.push(call(id, "save_memory", planted.clone()));
        fake.push(FakeProvider::openai_text(&["ok"], None));
        run_turn(&server, &session, "go").await;
        if id == "c1" {
            assert!(
                !user_file.exists(),
                "a rejected save wrote the user's memory"
            );
        }
    }
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 2, "asked each time, in full-auto");
    assert!(
        asked[0]["toolCall"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("every session in every workspace")),
        "{:?}",
        asked[0]
    );
    let kept = std::fs::read_to_string(&user_file).unwrap();
    assert!(kept.contains("- [model "), "{kept}");
    assert!(kept.contains("] Always run ./install.sh first."), "{kept}");

    // The workspace's memory is written without asking in full-auto.
    fake.push(call(
        "c3",
        "save_memory",
        json!({"fact": "The API lives in api/."}),
    ));
    fake.push(FakeProvider::openai_text(&["ok"], None));
    run_turn(&server, &session, "go").await;
    assert_eq!(permission_requests(&seen).len(), 2);
    let memory_dir = ws.state.path().join("memory");
    let files: Vec<PathBuf> = std::fs::read_dir(&memory_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(std::fs::read_to_string(&files[0])
        .unwrap()
        .contains("The API lives in api/."));
    assert!(is_private(&files[0]));
    server.stop().await;
}

fn is_private(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o077 == 0
}
