//! `agentls acp` with a client that offers terminals, over its real stdio, against the fake
//! provider: a background command runs in a client terminal, its `shell` call answers while
//! it runs, `shell_output` reads only its new output, `shell_kill` kills and releases the
//! terminal, and `session/close` releases the terminal of one still running. The client
//! here is a small one of raw JSON lines (the official SDK's is tests/acp); its terminals
//! run the command in a process group of their own.

mod common;

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

fn call(id: &str, name: &str, arguments: Value) -> agentls_dev::fake_provider::Reply {
    FakeProvider::openai_tool_calls(&[(id, name, &[&arguments.to_string()])], None)
}

/// One terminal of the client: the command's process, what it printed, the methods asked.
struct Terminal {
    child: std::process::Child,
    output: Arc<Mutex<String>>,
    calls: Vec<String>,
    released: bool,
}

impl Terminal {
    fn kill(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
    }

    fn exit_status(&mut self) -> Option<Value> {
        let status = self.child.try_wait().ok().flatten()?;
        Some(json!({"exitCode": status.code(), "signal": status.signal().map(|s| s.to_string())}))
    }
}

type Terminals = Arc<Mutex<HashMap<String, Terminal>>>;

struct Client {
    to_agent: mpsc::UnboundedSender<String>,
    answers: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
    next_id: Mutex<u64>,
    terminals: Terminals,
    _agent: tokio::process::Child,
}

impl Client {
    fn start(fake: &FakeProvider, ws: &Workspace) -> Client {
        let config = provider_options(fake, ws, json!({}));
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
        let mut stdin = agent.stdin.take().unwrap();
        let stdout = agent.stdout.take().unwrap();
        let (to_agent, mut queue) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = queue.recv().await {
                if stdin
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        let answers: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>> = Default::default();
        let terminals: Terminals = Default::default();
        let (answers_in, terminals_in, replies) =
            (answers.clone(), terminals.clone(), to_agent.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let message: Value = serde_json::from_str(&line).unwrap();
                match (message.get("method"), message["id"].as_u64()) {
                    (Some(_), _) if message.get("id").is_some() => {
                        serve(&message, &terminals_in, &replies)
                    }
                    (Some(_), _) => {}
                    (None, Some(id)) => {
                        if let Some(waiter) = answers_in.lock().unwrap().remove(&id) {
                            let _ = waiter.send(message);
                        }
                    }
                    (None, None) => panic!("an answer without an id: {message}"),
                }
            }
        });
        Client {
            to_agent,
            answers,
            next_id: Mutex::new(0),
            terminals,
            _agent: agent,
        }
    }

    /// Sends a request; its answer (the whole message) when it comes.
    fn request(&self, method: &str, params: Value) -> oneshot::Receiver<Value> {
        let id = {
            let mut next = self.next_id.lock().unwrap();
            *next += 1;
            *next
        };
        let (sender, receiver) = oneshot::channel();
        self.answers.lock().unwrap().insert(id, sender);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.to_agent.send(message.to_string()).unwrap();
        receiver
    }

    async fn call(&self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params).await.unwrap();
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// Waits until terminal `id` passes `test` (a hang, were it never to, shows as one).
    async fn until(&self, id: &str, test: impl Fn(&Terminal) -> bool) {
        while !self.terminals.lock().unwrap().get(id).is_some_and(&test) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// Answers the agent's request `message` (terminal/*; nothing else is expected).
fn serve(message: &Value, terminals: &Terminals, replies: &mpsc::UnboundedSender<String>) {
    let id = message["id"].clone();
    let params = &message["params"];
    let method = message["method"].as_str().unwrap().to_string();
    let answer =
        move |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    if method == "terminal/create" {
        let terminal = format!("term-{}", terminals.lock().unwrap().len() + 1);
        let args: Vec<String> = serde_json::from_value(params["args"].clone()).unwrap();
        let mut child = std::process::Command::new(params["command"].as_str().unwrap())
            .args(args)
            .current_dir(params["cwd"].as_str().unwrap())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let pipes: [Box<dyn Read + Send>; 2] = [
            Box::new(child.stdout.take().unwrap()),
            Box::new(child.stderr.take().unwrap()),
        ];
        for mut pipe in pipes {
            let output = output.clone();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                while let Ok(read @ 1..) = pipe.read(&mut buffer) {
                    output
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buffer[..read]));
                }
            });
        }
        terminals.lock().unwrap().insert(
            terminal.clone(),
            Terminal {
                child,
                output,
                calls: vec!["create".into()],
                released: false,
            },
        );
        let _ = replies.send(answer(json!({"terminalId": terminal})));
        return;
    }
    let terminal = params["terminalId"].as_str().unwrap().to_string();
    let short = method.trim_start_matches("terminal/").to_string();
    {
        let mut all = terminals.lock().unwrap();
        let t = all.get_mut(&terminal).expect("a known terminal");
        t.calls.push(short.clone());
        assert!(!t.released, "{method} of released {terminal}");
    }
    let (terminals, replies) = (terminals.clone(), replies.clone());
    // wait_for_exit answers once the command ended: not on the reading task.
    tokio::spawn(async move {
        let result = loop {
            if let Some(result) = terminal_answer(&terminals, &terminal, &short) {
                break result;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        let _ = replies.send(answer(result));
    });
}

/// The answer to `terminal/{method}` of `terminal`, None while it cannot be given yet.
fn terminal_answer(terminals: &Terminals, terminal: &str, method: &str) -> Option<Value> {
    let mut all = terminals.lock().unwrap();
    let t = all.get_mut(terminal).unwrap();
    match method {
        "output" => {
            let mut result = json!({"output": *t.output.lock().unwrap(), "truncated": false});
            if let Some(status) = t.exit_status() {
                result["exitStatus"] = status;
            }
            Some(result)
        }
        "wait_for_exit" => t.exit_status(),
        "kill" => {
            t.kill();
            Some(json!({}))
        }
        "release" => {
            t.released = true;
            t.kill();
            Some(json!({}))
        }
        other => panic!("unexpected terminal/{other}"),
    }
}

#[tokio::test]
async fn a_background_command_runs_in_the_clients_terminal_and_is_read_killed_and_released() {
    let (ws, fake) = workspace_and_fake().await;
    let go = ws.root.join("go");
    let command = "read -r pid _ < /proc/self/stat; echo $pid > bg.pid; echo started; while [ ! -f go ]; do sleep 0.05; done; echo later; sleep 1000";
    fake.push(call(
        "call_bg",
        "shell",
        json!({"command": command, "background": true}),
    ));
    fake.push(call(
        "call_out",
        "shell_output",
        json!({"id": "bg1", "wait_ms": 30000}),
    ));
    fake.push(call("call_kill", "shell_kill", json!({"id": "bg1"})));
    fake.push(FakeProvider::openai_text(&["Stopped it."], None));
    fake.push(call(
        "call_bg2",
        "shell",
        json!({"command": "read -r pid _ < /proc/self/stat; echo $pid > bg2.pid; echo up; sleep 1000", "background": true}),
    ));
    fake.push(FakeProvider::openai_text(&["Left it running."], None));

    let client = Client::start(&fake, &ws);
    client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}),
        )
        .await;
    let session = client
        .call("session/new", json!({"cwd": ws.root, "mcpServers": []}))
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    client
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "full-auto"}),
        )
        .await;
    let prompt = |text: &str| {
        client.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    };

    let answer = prompt("Start it, read it, stop it.");
    // The model has the start's answer while the command waits for `go`.
    while fake.requests().len() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    std::fs::write(&go, "").unwrap();
    let answer = answer.await.unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let requests = fake.requests();
    // The start returned while the command ran; shell_output read only what was new;
    // shell_kill ended it.
    assert_background_round(&requests);
    {
        let all = client.terminals.lock().unwrap();
        assert_eq!(all.len(), 1, "the command ran in the client's terminal");
        let calls: Vec<&str> = all["term-1"]
            .calls
            .iter()
            .map(String::as_str)
            .filter(|m| !matches!(*m, "output" | "wait_for_exit"))
            .collect();
        assert_eq!(
            calls,
            ["create", "kill", "release"],
            "{:?}",
            all["term-1"].calls
        );
    }
    wait_gone(&std::fs::read_to_string(ws.root.join("bg.pid")).unwrap()).await;

    // One left running when the turn ends: session/close kills and releases its terminal.
    let answer = prompt("Start another.").await.unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let requests = fake.requests();
    let started = tool_output_in(&requests[5].body, "call_bg2");
    assert!(
        started.contains("\nid: bg2\n") && started.contains("up\n"),
        "{started}"
    );
    client.until("term-2", |t| !t.released).await;
    client
        .call("session/close", json!({"sessionId": session}))
        .await;
    client.until("term-2", |t| t.released).await;
    assert!(client.terminals.lock().unwrap()["term-2"]
        .calls
        .contains(&"kill".to_string()));
    wait_gone(&std::fs::read_to_string(ws.root.join("bg2.pid")).unwrap()).await;
}
