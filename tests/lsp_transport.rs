//! The transport never ends the session: request ids tower-lsp cannot represent, invalid
//! UTF-8, oversized or lying Content-Lengths, a client that closes stdin while a server
//! request is unanswered; and a fixed-seed fuzz over frames and params after each case of
//! which the server must still answer a valid request correctly.

mod common;

use agentls_dev::lsp_client::Answer;
use common::{start, Options, Server};
use serde_json::{json, Value};
use std::future::Future;

const KEPT_URI: &str = "file:///v/kept.rs";
const KEPT_TEXT: &str = "fn kept() {}\n";

/// Awaits what the server should answer. No clock: a deaf server leaves the test waiting
/// (the suite's own limit ends it); `what` says what was awaited, in the log.
async fn guard<T>(what: &str, future: impl Future<Output = T>) -> T {
    eprintln!("awaiting: {what}");
    future.await
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The server answers a valid request correctly and has not exited.
async fn assert_alive(server: &mut Server, what: &str) {
    let doc = guard(what, server.document(KEPT_URI))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(doc["text"], KEPT_TEXT, "{what}");
    assert_eq!(doc["version"], 1, "{what}");
    assert!(
        server.client.child().try_wait().unwrap().is_none(),
        "{what}: the server exited"
    );
}

/// Waits for a `window/logMessage` whose text contains `needle`; returns the text.
async fn log_containing(server: &Server, needle: &str) -> String {
    guard(&format!("a log line with {needle:?}"), async {
        loop {
            let Some(log) = server.client.wait_for("window/logMessage").await else {
                panic!("the server exited before logging {needle:?}");
            };
            let text = log.params["message"].as_str().unwrap_or_default();
            if text.contains(needle) {
                return text.to_string();
            }
        }
    })
    .await
}

async fn started(env: Vec<(&'static str, String)>) -> Server {
    let server = start(Options {
        env,
        ..Options::default()
    })
    .await;
    server.open(KEPT_URI, "rust", 1, KEPT_TEXT).await;
    server
}

#[tokio::test]
async fn request_ids_tower_lsp_cannot_hold_get_invalid_request_with_a_null_id() {
    let mut server = started(Vec::new()).await;
    for id in [
        "1.5",
        "1e3",
        "-0.0",
        "9223372036854775808",
        "-9223372036854775809",
        "18446744073709551616",
        "true",
        "[1]",
        r#"{"a":1}"#,
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"agentls/debug/workspace"}}"#);
        server.client.send_raw(body.as_bytes()).await.unwrap();
        let answer = guard(id, server.client.next_orphan_answer())
            .await
            .unwrap_or_else(|| panic!("id {id}: the server exited"));
        assert_eq!(answer["id"], Value::Null, "id {id}: {answer}");
        assert_eq!(answer["error"]["code"], -32600, "id {id}: {answer}");
        assert_alive(&mut server, &format!("after id {id}")).await;
    }
    // A response with such an id is not answered (nobody waits for it), only logged.
    server
        .client
        .send_raw(br#"{"jsonrpc":"2.0","id":1.5,"result":null}"#)
        .await
        .unwrap();
    assert_alive(&mut server, "after a response with id 1.5").await;
    server.stop().await;
}

#[tokio::test]
async fn invalid_utf8_anywhere_in_a_frame_is_answered_or_logged() {
    let mut server = started(Vec::new()).await;
    // In an unknown field of a request: its id gets InvalidRequest.
    let err = guard(
        "request with invalid UTF-8",
        server.client.request_raw(
            7001,
            b"{\"jsonrpc\":\"2.0\",\"id\":7001,\"method\":\"agentls/debug/workspace\",\"x\":\"\xff\xfe\"}",
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, -32600, "{err}");
    assert!(err.message.contains("UTF-8"), "{err}");
    assert_alive(&mut server, "after a request with invalid UTF-8").await;
    // In the text of a change to a buffer: the change is dropped and logged.
    server
        .client
        .send_raw(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{\"uri\":\"file:///v/kept.rs\",\"version\":2},\"contentChanges\":[{\"text\":\"\xc3\x28\"}]}}",
        )
        .await
        .unwrap();
    log_containing(&server, "UTF-8").await;
    assert_alive(&mut server, "after a notification with invalid UTF-8").await;
    // A bare invalid byte between frames is skipped.
    server.client.send_bytes(b"\xff").await.unwrap();
    assert_alive(&mut server, "after a stray invalid byte").await;
    server.stop().await;
}

#[tokio::test]
async fn oversized_content_lengths_are_refused_without_allocating() {
    let mut server = started(Vec::new()).await;
    for length in [
        "1099511627776",
        "18446744073709551615",
        "18446744073709551616",
    ] {
        let mut bytes = format!("Content-Length: {length}\r\n\r\n").into_bytes();
        bytes.extend_from_slice(br#"{"jsonrpc":"2.0","method":"x"}"#);
        server.client.send_bytes(&bytes).await.unwrap();
        assert_alive(&mut server, &format!("after Content-Length {length}")).await;
    }
    server.stop().await;

    // The limit is a setting of the process (the transport reads frames before any
    // configuration arrives): a frame above it is refused with a logged error.
    let mut server = started(vec![("AGENTLS_MAX_FRAME_BYTES", "4096".into())]).await;
    let big = "x".repeat(8192);
    server.open("file:///v/big.rs", "rust", 1, &big).await;
    log_containing(&server, "4096").await;
    assert_alive(&mut server, "after a frame over the limit").await;
    let err = server.document("file:///v/big.rs").await.unwrap_err();
    assert_eq!(err.code, -32602, "{err}");
    // Frames under the limit still pass.
    server
        .open("file:///v/small.rs", "rust", 1, "fn s() {}")
        .await;
    let small = server.document("file:///v/small.rs").await.unwrap();
    assert_eq!(small["text"], "fn s() {}");
    server.stop().await;
}

#[tokio::test]
async fn a_content_length_a_few_bytes_off_resynchronises_on_the_next_header() {
    let mut server = started(Vec::new()).await;
    let body = br#"{"jsonrpc":"2.0","id":"long","method":"agentls/debug/workspace","params":{}}"#;
    for off in [1usize, 3, 16] {
        // Too long: the message is answered and the next frame's header is found again.
        let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len() + off).into_bytes();
        bytes.extend_from_slice(body);
        server.client.send_bytes(&bytes).await.unwrap();
        assert_alive(
            &mut server,
            &format!("after a Content-Length {off} too long"),
        )
        .await;
        let answer = guard("the long frame", server.client.next_orphan_answer())
            .await
            .unwrap();
        assert_eq!(answer["id"], "long", "{answer}");
        assert!(answer["result"]["status"].is_string(), "{answer}");
        // Too short: the torn message is logged, the bytes up to the next header skipped.
        let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len() - off).into_bytes();
        bytes.extend_from_slice(body);
        server.client.send_bytes(&bytes).await.unwrap();
        assert_alive(
            &mut server,
            &format!("after a Content-Length {off} too short"),
        )
        .await;
    }
    log_containing(&server, "skipped").await;
    server.stop().await;
}

#[tokio::test]
async fn stdin_closing_while_a_registration_is_unanswered_ends_the_process_with_code_1() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut server = start(Options {
        root: Some(&root),
        watch_files: true,
        responder: Some(std::sync::Arc::new(|method: &str, _: &Value| {
            if method == "client/registerCapability" {
                Answer::Silence
            } else {
                Answer::Result(Value::Null)
            }
        })),
        ..Options::default()
    })
    .await;
    guard(
        "the registration request",
        server.client.wait_for("client/registerCapability"),
    )
    .await
    .unwrap();
    // Indexing does not wait for the client's answer.
    let ws = guard("indexing", server.index_ready()).await;
    assert_eq!(ws["fileCount"], 1);
    server.client.close_stdin().await;
    let status = guard("exit after EOF", server.client.child().wait())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(1));
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Known methods, requests and notifications, but never `shutdown` or `exit` (they end the
/// session by design).
const METHODS: &[&str] = &[
    "initialize",
    "initialized",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
    "textDocument/didSave",
    "textDocument/codeAction",
    "workspace/didChangeWatchedFiles",
    "workspace/didChangeConfiguration",
    "workspace/didChangeWorkspaceFolders",
    "agentls/debug/document",
    "agentls/debug/syntax",
    "agentls/debug/agentsMd",
    "agentls/debug/workspace",
    "agent/session/context",
    "agent/session/new",
    "agent/session/list",
    "agent/session/load",
    "agent/session/prompt",
    "agent/session/cancel",
    "agent/session/compact",
    "agent/session/setModel",
    "$/cancelRequest",
    "$/setTrace",
    "agentls/internal/invalidRequest",
    "agentls/internal/malformedMessage",
    "no/such/method",
];

/// Any JSON value, of every type, nested a little; strings never name a real file.
fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.chance(2)),
        2 => json!(rng.next() as i64),
        3 => json!((rng.next() as f64) / 7.0),
        4 => json!(*rng.pick(&["", "x", "file:///v/other.rs", "é\u{0}\n", "2.0"])),
        5 => json!(rng.below(1 << 20) as i64 - (1 << 19)),
        6 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "textDocument",
                "uri",
                "version",
                "contentChanges",
                "range",
                "text",
                "position",
                "settings",
                "id",
                "sessionId",
                "event",
                "changes",
                "capabilities",
            ];
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(4) {
                map.insert(rng.pick(&keys).to_string(), random_value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

/// An id of any JSON type, usable or not.
fn random_id(rng: &mut Rng) -> String {
    rng.pick(&[
        "1.5",
        "1e3",
        "-0.0",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "18446744073709551616",
        "1e400",
        "true",
        "false",
        "null",
        "[]",
        "[1]",
        "{}",
        r#"{"a":1}"#,
        r#""""#,
        r#""s""#,
        "0",
        "-1",
        "42",
    ])
    .to_string()
}

/// A message of a known method with params of any type, with or without an id.
fn random_message(rng: &mut Rng) -> Vec<u8> {
    let method = rng.pick(METHODS);
    let params = random_value(rng, 0).to_string();
    let id = match rng.below(3) {
        0 => String::new(),
        1 => format!(r#""id":{},"#, 100_000 + rng.below(1000)),
        _ => format!(r#""id":{},"#, random_id(rng)),
    };
    let version = if rng.chance(20) { "1.0" } else { "2.0" };
    format!(r#"{{"jsonrpc":"{version}",{id}"method":"{method}","params":{params}}}"#).into_bytes()
}

/// One fuzz case: the bytes to write, and a label for failures.
fn random_case(rng: &mut Rng, max_frame: usize) -> (&'static str, Vec<u8>) {
    let body = random_message(rng);
    match rng.below(10) {
        0 => ("message", frame(&body)),
        1 => {
            let mut body = body;
            let at = rng.below(body.len() + 1);
            body.truncate(at);
            ("truncated JSON", frame(&body))
        }
        2 => {
            let mut body = body;
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(body.len());
                body.insert(at, 0x80 + rng.below(0x80) as u8);
            }
            ("invalid UTF-8", frame(&body))
        }
        3 => {
            let mut body = body;
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(body.len());
                body[at] = rng.next() as u8;
            }
            ("flipped bytes", frame(&body))
        }
        4 => {
            let off = 1 + rng.below(16);
            let length = if rng.chance(2) {
                body.len() + off
            } else {
                body.len().saturating_sub(off)
            };
            let mut bytes = format!("Content-Length: {length}\r\n\r\n").into_bytes();
            bytes.extend_from_slice(&body);
            ("Content-Length off by a few bytes", bytes)
        }
        5 => {
            let length = rng
                .pick(&[
                    (max_frame + 1).to_string(),
                    "1099511627776".into(),
                    "18446744073709551615".into(),
                    "18446744073709551616".into(),
                    "99999999999999999999999".into(),
                ])
                .clone();
            let mut bytes = format!("Content-Length: {length}\r\n\r\n").into_bytes();
            bytes.extend_from_slice(&body);
            ("oversized Content-Length", bytes)
        }
        6 => {
            let header = rng
                .pick(&[
                    "Content-Length: \r\n",
                    "Content-Length: abc\r\n",
                    "Content-Length: -5\r\n",
                    "Content-Length: 1.5\r\n",
                    "Content-Length: 0x10\r\n",
                    "Content-Type: application/vscode-jsonrpc\r\n",
                    "content-length 12\r\n",
                    "Content-Length: 0\r\n",
                ])
                .to_string();
            let mut bytes = (header + "\r\n").into_bytes();
            bytes.extend_from_slice(&body);
            ("bad header", bytes)
        }
        7 => {
            let garbage: Vec<u8> = (0..rng.below(64))
                .map(|_| *rng.pick(b"{}[]\":,0123456789abcxyz \r\n\t\xff\x00"))
                .collect();
            ("garbage between frames", garbage)
        }
        8 => {
            let id = random_id(rng);
            let method = rng.pick(METHODS);
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#);
            ("a bad id", frame(body.as_bytes()))
        }
        _ => {
            let id = random_id(rng);
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#);
            ("a response with a bad id", frame(body.as_bytes()))
        }
    }
}

#[tokio::test]
async fn fuzzed_frames_and_params_never_end_the_session() {
    const CASES: usize = 3000;
    const MAX_FRAME: usize = 64 * 1024;
    let home = tempfile::tempdir().unwrap();
    let home_dir = home.path().to_str().unwrap().to_string();
    let mut server = started(vec![
        ("AGENTLS_LOG", "off".into()),
        ("AGENTLS_MAX_FRAME_BYTES", MAX_FRAME.to_string()),
        // Whatever a fuzzed configuration resets stays in here.
        ("HOME", home_dir.clone()),
        ("XDG_STATE_HOME", home_dir.clone()),
        ("XDG_CONFIG_HOME", home_dir),
        ("OPENAI_API_KEY", String::new()),
    ])
    .await;
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut answered_after = 0usize;
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for case in 0..CASES {
        let (kind, bytes) = random_case(&mut rng, MAX_FRAME);
        *kinds.entry(kind).or_default() += 1;
        server.client.send_bytes(&bytes).await.unwrap();
        // A lying frame may swallow the next one: that is a request of its own (answered or
        // not), then the check.
        let probe = format!(
            r#"{{"jsonrpc":"2.0","id":"probe-{case}","method":"agentls/debug/workspace"}}"#
        );
        server
            .client
            .send_bytes(&frame(probe.as_bytes()))
            .await
            .unwrap();
        let what = format!(
            "case {case} ({kind}): {:?}",
            String::from_utf8_lossy(&bytes)
        );
        assert_alive(&mut server, &what).await;
        answered_after += 1;
    }
    assert_eq!(answered_after, CASES);
    eprintln!(
        "fuzz: {CASES} cases {kinds:?}; the server answered after each one; 0 sessions ended"
    );
    server.stop().await;
}
