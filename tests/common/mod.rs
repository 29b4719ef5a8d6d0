//! Shared by the end-to-end tests: start the real `agentls` binary and talk LSP to it.
#![allow(dead_code)] // each test binary uses a different part of this

pub mod agent;
pub mod mcp;

use agentls_dev::lsp_client::{Answer, LspClient, Responder, RpcError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The binary under test: this build's, or `AGENTLS_TEST_BINARY` (an older build, to show
/// that a new test fails on it).
pub fn binary() -> PathBuf {
    std::env::var_os("AGENTLS_TEST_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_agentls")))
}

pub fn uri(path: &Path) -> String {
    tower_lsp::lsp_types::Url::from_file_path(path)
        .expect("absolute path")
        .to_string()
}

pub struct Options<'a> {
    pub root: Option<&'a Path>,
    pub encodings: &'a [&'a str],
    pub init_options: Value,
    pub progress: bool,
    pub watch_files: bool,
    /// Advertise workspace/applyEdit with documentChanges and file creation.
    pub apply_edit: bool,
    /// Answers the server's requests (default: null to everything).
    pub responder: Option<Responder>,
    pub env: Vec<(&'a str, String)>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            root: None,
            encodings: &["utf-16"],
            init_options: Value::Null,
            progress: false,
            watch_files: false,
            apply_edit: false,
            responder: None,
            env: Vec::new(),
        }
    }
}

pub struct Server {
    pub client: LspClient,
    pub init: Value,
}

/// A config home that does not exist: no user settings, hooks, commands or prompts.
pub const NO_USER_CONFIG: &str = "/nonexistent/agentls-tests-config-home";

/// Spawns agentls and completes initialize/initialized.
pub async fn start(options: Options<'_>) -> Server {
    let mut env: Vec<(&str, &str)> = vec![("AGENTLS_LOG", "error")];
    // The user's own configuration (settings, hooks, commands, prompts) must not leak into
    // a test: unless a test gives one, the config home is a directory that does not exist.
    if options.env.iter().all(|(k, _)| *k != "XDG_CONFIG_HOME") {
        env.push(("XDG_CONFIG_HOME", NO_USER_CONFIG));
    }
    env.extend(options.env.iter().map(|(k, v)| (*k, v.as_str())));
    let responder = options
        .responder
        .clone()
        .unwrap_or_else(|| std::sync::Arc::new(|_: &str, _: &Value| Answer::Result(Value::Null)));
    let client = LspClient::spawn_with(&binary(), &[], &env, responder).expect("spawn agentls");
    let init = client
        .request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": options.root.map(uri),
                "initializationOptions": options.init_options,
                "capabilities": {
                    "general": { "positionEncodings": options.encodings },
                    "window": { "workDoneProgress": options.progress },
                    "workspace": {
                        "didChangeWatchedFiles": { "dynamicRegistration": options.watch_files },
                        "applyEdit": options.apply_edit,
                        "workspaceEdit": {
                            "documentChanges": options.apply_edit,
                            "resourceOperations": if options.apply_edit { json!(["create"]) } else { json!([]) }
                        }
                    }
                }
            }),
        )
        .await
        .expect("initialize");
    client.notify("initialized", json!({})).await.unwrap();
    Server { client, init }
}

/// Spawns agentls on the workspace `root` with the default options.
pub async fn start_in(root: &Path) -> Server {
    start(Options {
        root: Some(root),
        ..Options::default()
    })
    .await
}

impl Server {
    pub async fn open(&self, uri: &str, language_id: &str, version: i32, text: &str) {
        self.client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}}),
            )
            .await
            .unwrap();
    }

    /// One didChange with one ranged change.
    pub async fn edit(&self, uri: &str, version: i32, range: [u32; 4], text: &str) {
        self.client
            .notify(
                "textDocument/didChange",
                json!({
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": range_json(range), "text": text}]
                }),
            )
            .await
            .unwrap();
    }

    pub async fn document(&self, uri: &str) -> Result<Value, RpcError> {
        self.client
            .request("agentls/debug/document", json!({"uri": uri, "sexp": true}))
            .await
    }

    pub async fn agents_md(&self, uri: &str) -> Value {
        self.client
            .request("agentls/debug/agentsMd", json!({"uri": uri}))
            .await
            .expect("agentsMd")
    }

    /// Waits until the workspace index is ready (polling the debug request).
    pub async fn index_ready(&self) -> Value {
        loop {
            let ws = self
                .client
                .request("agentls/debug/workspace", json!({}))
                .await
                .expect("workspace");
            if ws["status"] == "ready" {
                return ws;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// The server's peak resident memory so far (VmHWM), in MiB.
    pub fn peak_rss_mib(&self) -> u64 {
        let pid = self.client.child_id().expect("agentls runs");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.split_whitespace().next())
            .and_then(|value| value.parse().ok())
            .expect("VmHWM");
        kib / 1024
    }

    pub async fn stop(self) {
        let status = self.client.shutdown().await.expect("wait for agentls");
        assert!(status.success(), "agentls exited with {status}");
    }
}

pub fn range_json([l1, c1, l2, c2]: [u32; 4]) -> Value {
    json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}})
}

/// The s-expression of a fresh, non-incremental parse of `text`.
pub fn fresh_sexp(language: tree_sitter::Language, text: &str) -> String {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&language).unwrap();
    parser.parse(text, None).unwrap().root_node().to_sexp()
}

/// Runs `git ARGS` in `root` as a test author; panics when it fails.
pub fn git(root: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// Runs the agentls binary with `args` and `config_home` as its XDG_CONFIG_HOME, stdin
/// closed; (exit code, stdout, stderr). Awaited, so a fake provider on the test's runtime
/// can answer it.
#[allow(dead_code)] // not every test binary runs the command line
pub async fn run_agentls(
    args: &[impl AsRef<std::ffi::OsStr>],
    config_home: &std::ffi::OsStr,
) -> (i32, String, String) {
    let out = tokio::process::Command::new(binary())
        .env("XDG_CONFIG_HOME", config_home)
        .env("AGENTLS_LOG", "error")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}
