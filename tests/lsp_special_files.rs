//! Configuration and instruction files a repository commits as links to something else
//! (issue 29, items 1 and 3), against the real binary over stdio and the fake provider.
//!
//! Special files: `AGENTS.md`, `.agents/hooks.json`, `.mcp.json`, a command, a subagent and
//! a skill, each linked to `/dev/stdin` (the server's own protocol input), to a FIFO
//! nobody writes and to `/dev/zero`: the server keeps answering (a turn ends,
//! `agent/session/list` answers) and says why it skipped the file where it has a place to
//! say it. Files out of the workspace: `AGENTS.md` or a command linked to a private key
//! outside the workspace or to `/proc/self/environ` never reach the model; a link that
//! stays inside the workspace still works.
//!
//! A server that stops answering is the failure these tests look for, and the LSP client
//! has no request timeout of its own: every wait here is bounded by `HANG`, far above what
//! any answer takes, so a hang fails the test (naming the case) instead of stalling CI.

mod common;

use std::future::Future;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use common::agent::{
    provider_options, run_turn, server, session_request, stop_reason, workspace, FakeProvider,
    Workspace,
};
use common::{start, uri, Options, Server};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// `future`'s output. No wall-clock bound (tests never assert on time): a server that stops
/// answering leaves the test waiting, and the case and the request it waits for are named
/// on stderr first, so a hang says where it is.
async fn within<T>(case: &str, what: &str, future: impl Future<Output = T>) -> Result<T, String> {
    eprintln!("{case}: waiting for {what}");
    Ok(future.await)
}

/// The special files, by where a repository puts them.
const KINDS: [&str; 6] = [
    "AGENTS.md",
    ".agents/hooks.json",
    ".mcp.json",
    ".agents/commands/x.md",
    ".agents/agents/x.md",
    ".agents/skills/x/SKILL.md",
];

/// What the special files link to.
#[derive(Clone, Copy, Debug)]
enum Target {
    Stdin,
    Fifo,
    Zero,
}

const TARGETS: [Target; 3] = [Target::Stdin, Target::Fifo, Target::Zero];

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path the test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Commits `file` (relative to the workspace) as a link to `target`; a FIFO is made in the
/// temporary directory beside the workspace.
fn link_special(ws: &Workspace, file: &str, target: Target) {
    let path = ws.root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let to = match target {
        Target::Stdin => PathBuf::from("/dev/stdin"),
        Target::Zero => PathBuf::from("/dev/zero"),
        Target::Fifo => {
            let fifo = ws.root.parent().unwrap().join("fifo");
            mkfifo(&fifo);
            fifo
        }
    };
    symlink(to, path).unwrap();
}

/// One case: the server answers a turn, the commands, the AGENTS.md chain and the session
/// list, and names the skipped file where it can. Err says what failed.
async fn special_file_case(file: &'static str, target: Target) -> Result<(), String> {
    let case = format!("{file} -> {target:?}");
    let ws = workspace();
    link_special(&ws, file, target);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let server = server(&ws, provider_options(&fake, &ws, json!({})), None).await;
    let session = within(
        &case,
        "agent/session/new",
        common::agent::new_session(&server),
    )
    .await?;
    let (updates, _) = within(&case, "a turn", run_turn(&server, &session, "hello")).await?;
    if stop_reason(&updates) != "endTurn" {
        return Err(format!("{case}: the turn ended with {updates:?}"));
    }
    let warned = |name: &str| {
        updates.iter().any(|u| {
            u["kind"] == "warning"
                && u["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("skipping") && m.contains(name))
        })
    };
    if file == ".agents/hooks.json" && !warned("hooks.json") {
        return Err(format!(
            "{case}: no warning names the skipped file: {updates:?}"
        ));
    }
    let commands = session_request(&server, "agent/session/commands", &session);
    within(&case, "agent/session/commands", commands).await?;
    let chain = within(&case, "agentls/debug/agentsMd", async {
        server.agents_md(&uri(&ws.root.join("src/lib.rs"))).await
    })
    .await?;
    if file == "AGENTS.md" && !chain_warns(&chain) {
        return Err(format!("{case}: the chain does not say why: {chain}"));
    }
    let list = server.client.request("agent/session/list", json!({}));
    within(&case, "agent/session/list", list)
        .await?
        .map_err(|e| format!("{case}: agent/session/list: {e}"))?;
    let peak = peak_resident_bytes(server.client.child_id().expect("running"));
    if peak > MAX_PEAK_BYTES {
        return Err(format!(
            "{case}: the server's memory peaked at {peak} bytes"
        ));
    }
    server.stop().await;
    Ok(())
}

/// Far above what a debug server holds (about 100 MB); a server that reads `/dev/zero`
/// whole goes on until its allocations fail.
const MAX_PEAK_BYTES: u64 = 1 << 30;

/// The most resident memory process `pid` has held (`VmHWM`).
fn peak_resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn chain_warns(chain: &Value) -> bool {
    chain["warnings"].as_array().is_some_and(|w| {
        w.iter().any(|w| {
            w.as_str()
                .is_some_and(|w| w.starts_with("skipping") && w.contains("AGENTS.md: it is a link"))
        })
    })
}

/// Every target for `file`, each in a task of its own so a panic (a server that died) is a
/// failed case, not the end of the others; panics with every failed case named.
async fn every_target(file: &'static str) {
    let mut failures = Vec::new();
    for target in TARGETS {
        let outcome = tokio::spawn(special_file_case(file, target)).await;
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(why)) => failures.push(why),
            Err(panic) => failures.push(format!("{file} -> {target:?}: panicked: {panic}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn agents_md_linked_to_stdin_a_fifo_or_dev_zero_is_skipped_and_the_server_answers() {
    every_target(KINDS[0]).await;
}

#[tokio::test]
async fn hooks_json_linked_to_stdin_a_fifo_or_dev_zero_is_skipped_and_the_server_answers() {
    every_target(KINDS[1]).await;
}

#[tokio::test]
async fn mcp_json_linked_to_stdin_a_fifo_or_dev_zero_is_skipped_and_the_server_answers() {
    every_target(KINDS[2]).await;
}

#[tokio::test]
async fn a_command_linked_to_stdin_a_fifo_or_dev_zero_is_skipped_and_the_server_answers() {
    every_target(KINDS[3]).await;
}

#[tokio::test]
async fn a_subagent_linked_to_stdin_a_fifo_or_dev_zero_is_skipped_and_the_server_answers() {
    every_target(KINDS[4]).await;
}

#[tokio::test]
async fn a_skill_linked_to_stdin_a_fifo_or_dev_zero_is_skipped_and_the_server_answers() {
    every_target(KINDS[5]).await;
}

/// `read_file` on a FIFO inside the workspace (the path boundary lets it through: it is
/// inside) or on a link to `/dev/stdin`: the call fails with the reason and the turn ends.
#[tokio::test]
async fn read_file_on_a_fifo_or_stdin_fails_the_call_and_the_turn_ends() {
    for (name, why) in [("pipe.txt", "FIFO"), ("stdin.txt", "outside the workspace")] {
        let case = format!("read_file {name}");
        let ws = workspace();
        match name {
            "pipe.txt" => mkfifo(&ws.root.join(name)),
            _ => symlink("/dev/stdin", ws.root.join(name)).unwrap(),
        }
        let fake = FakeProvider::start().await;
        let arguments = json!({"path": name}).to_string();
        fake.push_call_then_text("call_r", "read_file", &arguments, "Done.");
        let server = server(&ws, provider_options(&fake, &ws, json!({})), None).await;
        let session = common::agent::new_session(&server).await;
        let (updates, _) = within(&case, "a turn", run_turn(&server, &session, "read it"))
            .await
            .unwrap();
        assert_eq!(stop_reason(&updates), "endTurn", "{case}: {updates:?}");
        let failed = common::agent::tool_updates(&updates, "failed");
        let output = failed.first().map(|u| u.to_string()).unwrap_or_default();
        assert!(output.contains(why), "{case}: {updates:?}");
        server.stop().await;
    }
}

// ---- files out of the workspace ----

const KEY_MATERIAL: &str = "FAKEKEYb3BlbnNzaC1rZXktdjEAAAAA";
const DATABASE_URL: &str = "postgres://u:hunter2@h/db";

/// A server on `ws` with `DATABASE_URL` in its environment, and a session.
async fn leaky_server(ws: &Workspace, fake: &FakeProvider) -> (Server, String) {
    let server = start(Options {
        root: Some(&ws.root),
        init_options: provider_options(fake, ws, json!({})),
        env: vec![("DATABASE_URL", DATABASE_URL.to_string())],
        ..Options::default()
    })
    .await;
    let session = common::agent::new_session(&server).await;
    (server, session)
}

/// A private key beside the workspace (`../outside/id_rsa` from its root).
fn outside_key(ws: &Workspace) -> PathBuf {
    let outside = ws.root.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let key = outside.join("id_rsa");
    let text = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_MATERIAL}\n-----END OPENSSH PRIVATE KEY-----\n"
    );
    std::fs::write(&key, text).unwrap();
    key
}

/// Each request body the provider recorded, as text.
fn bodies(fake: &FakeProvider) -> Vec<String> {
    fake.requests().iter().map(|r| r.body.to_string()).collect()
}

#[tokio::test]
async fn agents_md_linked_out_of_the_workspace_or_to_proc_never_reaches_the_model() {
    for (case, target) in [
        ("AGENTS.md -> ../outside/id_rsa", None),
        (
            "AGENTS.md -> /proc/self/environ",
            Some("/proc/self/environ"),
        ),
    ] {
        let ws = workspace();
        let key = outside_key(&ws);
        let target = target.map_or_else(|| PathBuf::from("../outside/id_rsa"), PathBuf::from);
        assert!(ws.root.join(&target).exists() && key.exists());
        symlink(&target, ws.root.join("AGENTS.md")).unwrap();
        let fake = FakeProvider::start().await;
        fake.push(FakeProvider::openai_text(&["Done."], None));
        let (server, session) = leaky_server(&ws, &fake).await;
        let (updates, _) = within(case, "a turn", run_turn(&server, &session, "hello"))
            .await
            .unwrap();
        assert_eq!(stop_reason(&updates), "endTurn", "{case}");
        let sent = bodies(&fake);
        assert_eq!(sent.len(), 1, "{case}");
        for secret in [KEY_MATERIAL, "hunter2"] {
            assert!(
                !sent[0].contains(secret),
                "{case}: {secret} was sent: {}",
                sent[0]
            );
        }
        let chain = server.agents_md(&uri(&ws.root.join("src/lib.rs"))).await;
        let warning = chain["warnings"][0].as_str().unwrap_or_default();
        assert!(warning.contains("it leads to"), "{case}: {chain}");
        server.stop().await;
    }
}

#[tokio::test]
async fn a_command_linked_out_of_the_workspace_or_to_proc_never_reaches_the_model() {
    for (case, target) in [
        ("x.md -> ../../../outside/id_rsa", "../../../outside/id_rsa"),
        ("x.md -> /proc/self/environ", "/proc/self/environ"),
    ] {
        let ws = workspace();
        outside_key(&ws);
        let commands = ws.root.join(".agents/commands");
        std::fs::create_dir_all(&commands).unwrap();
        symlink(target, commands.join("x.md")).unwrap();
        assert!(commands.join("x.md").exists(), "{case}");
        let fake = FakeProvider::start().await;
        fake.push(FakeProvider::openai_text(&["Done."], None));
        let (server, session) = leaky_server(&ws, &fake).await;
        let (updates, _) = within(case, "a turn", run_turn(&server, &session, "/x go"))
            .await
            .unwrap();
        assert!(!updates.is_empty(), "{case}");
        for body in bodies(&fake) {
            for secret in [KEY_MATERIAL, "hunter2"] {
                assert!(!body.contains(secret), "{case}: {secret} was sent: {body}");
            }
        }
        let listed = session_request(&server, "agent/session/commands", &session);
        let listed = within(case, "agent/session/commands", listed)
            .await
            .unwrap();
        assert!(!listed.to_string().contains("\"x\""), "{case}: {listed}");
        server.stop().await;
    }
}

#[tokio::test]
async fn links_that_stay_inside_the_workspace_still_work() {
    let ws = workspace();
    let docs = ws.root.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("AGENTS.md"), "Indent with INSIDE_RULE_TABS.\n").unwrap();
    std::fs::write(
        docs.join("x.md"),
        "Run the INSIDE_COMMAND_CHECK on $ARGUMENTS.\n",
    )
    .unwrap();
    symlink("docs/AGENTS.md", ws.root.join("AGENTS.md")).unwrap();
    let commands = ws.root.join(".agents/commands");
    std::fs::create_dir_all(&commands).unwrap();
    symlink("../../docs/x.md", commands.join("x.md")).unwrap();
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (server, session) = leaky_server(&ws, &fake).await;
    let (updates, _) = within("inside", "a turn", run_turn(&server, &session, "/x src"))
        .await
        .unwrap();
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let sent = bodies(&fake);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].contains("INSIDE_RULE_TABS"), "{}", sent[0]);
    assert!(
        sent[0].contains("Run the INSIDE_COMMAND_CHECK on src."),
        "{}",
        sent[0]
    );
    server.stop().await;
}

// ---- ACP ----

/// `agentls acp` over its stdio: one JSON-RPC message per line.
struct Acp {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: i64,
}

impl Acp {
    fn spawn(ws: &Workspace, fake: &FakeProvider) -> Acp {
        let config = json!({
            "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "test-model"},
            "stateDir": ws.state.path(),
        });
        let mut child = tokio::process::Command::new(common::binary())
            .args(["acp", "--config", &config.to_string()])
            .env("AGENTLS_LOG", "error")
            .env("XDG_CONFIG_HOME", common::NO_USER_CONFIG)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn agentls acp");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Acp {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    /// Sends a request and returns its answer (notifications on the way are skipped).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("agentls acp still talking");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}

/// One ACP case: `session/new`, a turn and a second `session/new` all answer.
async fn acp_case(file: &'static str) -> Result<(), String> {
    let case = format!("acp: {file} -> /dev/stdin");
    let ws = workspace();
    link_special(&ws, file, Target::Stdin);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let mut acp = Acp::spawn(&ws, &fake);
    let init = json!({"protocolVersion": 1, "clientCapabilities": {}});
    within(&case, "initialize", acp.request("initialize", init)).await?;
    let new = json!({"cwd": ws.root, "mcpServers": []});
    let answer = within(
        &case,
        "session/new",
        acp.request("session/new", new.clone()),
    )
    .await?;
    let Some(session) = answer["result"]["sessionId"].as_str() else {
        return Err(format!("{case}: session/new answered {answer}"));
    };
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]});
    let answer = within(
        &case,
        "session/prompt",
        acp.request("session/prompt", prompt),
    )
    .await?;
    if answer["result"]["stopReason"] != "end_turn" {
        return Err(format!("{case}: session/prompt answered {answer}"));
    }
    let again = within(
        &case,
        "a second session/new",
        acp.request("session/new", new),
    )
    .await?;
    if !again["result"]["sessionId"].is_string() {
        return Err(format!("{case}: the second session/new answered {again}"));
    }
    acp.child.kill().await.unwrap();
    Ok(())
}

#[tokio::test]
async fn acp_agents_md_or_a_command_linked_to_stdin_leaves_session_new_answering() {
    let mut failures = Vec::new();
    for file in ["AGENTS.md", ".agents/commands/x.md"] {
        match tokio::spawn(acp_case(file)).await {
            Ok(Ok(())) => {}
            Ok(Err(why)) => failures.push(why),
            Err(panic) => failures.push(format!("acp: {file}: panicked: {panic}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
