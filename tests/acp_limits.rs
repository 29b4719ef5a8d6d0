//! `agentls acp`'s input limit, driven over its real stdio: a line longer than the message
//! limit is refused as it arrives, without being held whole, and the connection goes on.

mod common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// The most memory the process ever held, from `/proc/PID/status` (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/PID/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kib * 1024
}

#[test]
fn a_line_over_the_limit_is_refused_without_being_held_and_the_next_request_answered() {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(common::binary())
        .arg("acp")
        .env("AGENTLS_MAX_FRAME_BYTES", (1 << 20).to_string())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let initialize = |id: u64, padding: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}, "padding": padding}})
        .to_string()
    };

    // 96 MiB in one line: under the old reader the whole line, then its parse, was held.
    let huge = initialize(1, &"a".repeat(96 << 20));
    stdin.write_all(huge.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.write_all(initialize(2, "").as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();

    let mut answers = Vec::new();
    while answers.len() < 2 {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "agentls acp ended early"
        );
        let message: Value = serde_json::from_str(&line).unwrap();
        if message.get("id").is_some() {
            answers.push(message);
        }
    }
    let refused = answers
        .iter()
        .find(|a| a["id"].is_null())
        .expect("an error answer to the line it could not read");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("larger than the limit of 1048576 bytes")
            && message.contains("AGENTLS_MAX_FRAME_BYTES"),
        "{refused}"
    );
    let answered = answers
        .iter()
        .find(|a| a["id"] == 2)
        .expect("id 2 answered");
    assert!(
        answered["result"]["protocolVersion"].is_number(),
        "{answered}"
    );

    let peak = peak_rss(child.id());
    assert!(
        peak < 64 << 20,
        "agentls acp held {} MiB at its peak for a 96 MiB line over a 1 MiB limit",
        peak >> 20
    );
    drop(stdin);
    child.wait().unwrap();
}
