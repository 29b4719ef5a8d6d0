//! `agentls acp` keeps the workspace symbol index too: built in the background over the
//! session's `cwd` (session/new answers first), persisted, and read by `find_symbol`, items
//! written inside a macro invocation included. Driven over the real stdio with raw JSON
//! lines against the fake provider.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::agent::*;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

struct Client {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Client {
    /// Sends a request and reads until its answer; notifications are skipped, and a request
    /// of the agent is refused (this client offers no capability).
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&message).await;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("agentls acp ended");
            let message: Value = serde_json::from_str(&line).unwrap();
            match (message.get("method"), message.get("id")) {
                (Some(_), Some(request)) => {
                    let refusal = json!({"jsonrpc": "2.0", "id": request,
                        "error": {"code": -32601, "message": "not offered"}});
                    self.send(&refusal).await;
                }
                (None, Some(answer)) if answer == id => {
                    assert!(message.get("error").is_none(), "{method}: {message}");
                    return message["result"].clone();
                }
                _ => {}
            }
        }
    }

    async fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }
}

/// Whether the state directory holds a persisted symbol index (written when a build ends).
fn persisted_index(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        (name.starts_with("symbols-") && name.ends_with(".bin"))
            || (path.is_dir() && persisted_index(&path))
    })
}

#[tokio::test]
async fn an_acp_session_finds_symbols_of_its_workspace_macro_items_included() {
    let (ws, fake) = workspace_and_fake().await;
    std::fs::write(
        ws.root.join("src/widget.rs"),
        "pub struct Widget;\ncfg_gadgets! {\n    /// Makes a gadget.\n    pub fn make_gadget() -> Widget { Widget }\n}\n",
    )
    .unwrap();
    fake.push_call_then_text(
        "call_find",
        "find_symbol",
        &json!({"name": "make_gadget"}).to_string(),
        "Found it.",
    );
    let config = provider_options(&fake, &ws, json!({}));
    let mut agent = tokio::process::Command::new(common::binary())
        .arg("acp")
        .arg("--config")
        .arg(config.to_string())
        .env("HOME", ws.state.path())
        .env("XDG_CONFIG_HOME", ws.state.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut client = Client {
        stdin: agent.stdin.take().unwrap(),
        lines: BufReader::new(agent.stdout.take().unwrap()).lines(),
        next_id: 0,
    };
    client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let session = client
        .call("session/new", json!({"cwd": ws.root, "mcpServers": []}))
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // The index is built in the background; it is saved when the build ends.
    while !persisted_index(ws.state.path()) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    client
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "full-auto"}),
        )
        .await;
    let answer = client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "Where is make_gadget?"}]}),
        )
        .await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let requests = fake.requests();
    let output = tool_output_in(&requests[1].body, "call_find");
    assert!(
        output.contains("1 definition of `make_gadget`:\nsrc/widget.rs:4 function\n"),
        "{output}"
    );
    assert!(output.contains("/// Makes a gadget."), "{output}");
}
