//! The workspace symbol index through the real server: built in the background after
//! `initialized`, found by the model's `find_symbol` in a real turn (fake provider over real
//! HTTP), kept current by `workspace/didChangeWatchedFiles`, persisted and reused on a
//! restart, rebuilt when its file is damaged, and robust to hostile files in the workspace.

mod common;

use common::agent::*;
use common::{start, uri, Options, Server};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

async fn symbols_status(server: &Server) -> Value {
    server
        .client
        .request("agentls/debug/workspace", json!({}))
        .await
        .expect("workspace")["symbols"]
        .clone()
}

fn write(root: &Path, relative: &str, text: &str) -> PathBuf {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

/// A small project of several languages; `src/lib.rs` uses what `src/settings.rs` defines.
fn project(ws: &Workspace) {
    write(
        &ws.root,
        "src/settings.rs",
        "/// What the user chose.\npub struct Settings {\n    pub name: String,\n}\n\npub fn load_settings(path: &str) -> Settings {\n    Settings { name: path.into() }\n}\n",
    );
    write(
        &ws.root,
        "src/lib.rs",
        "mod settings;\nuse settings::load_settings;\n\npub fn answer() -> u32 {\n    let s = load_settings(\"x\");\n    s.name.len() as u32\n}\n",
    );
    write(
        &ws.root,
        "tools/report.py",
        "class Report:\n    \"\"\"A report.\"\"\"\n    def render(self):\n        return load_settings()\n",
    );
}

async fn find_symbol_output(
    ws: &Workspace,
    fake: &FakeProvider,
    server: &Server,
    session: &str,
    arguments: Value,
) -> String {
    let before = fake.requests().len();
    // The session's history holds the earlier calls: each gets its own id.
    let call_id = format!("call_fs_{before}");
    fake.push_call_then_text(&call_id, "find_symbol", &arguments.to_string(), "Found it.");
    let (updates, _) = run_turn(server, session, "Where is it defined?").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let _ = ws;
    let requests = fake.requests();
    assert!(requests.len() >= before + 2, "a tool round and the answer");
    let body = &requests.last().unwrap().body;
    tool_output_in(body, &call_id)
}

#[tokio::test]
async fn find_symbol_finds_a_definition_in_an_unopened_file_and_its_references() {
    let (ws, fake) = workspace_and_fake().await;
    project(&ws);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let status = symbols_ready(&server).await;
    assert_eq!(status["files"], 3, "{status}");

    // Nothing is open in the editor: the definition comes from the index.
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "load_settings", "references": true}),
    )
    .await;
    assert!(
        output.contains("1 definition of `load_settings`"),
        "{output}"
    );
    assert!(output.contains("src/settings.rs:6 function"), "{output}");
    assert!(
        output.contains("pub fn load_settings(path: &str) -> Settings {"),
        "{output}"
    );
    assert!(
        output.contains("src/lib.rs:2: use settings::load_settings;"),
        "{output}"
    );
    assert!(
        output.contains("src/lib.rs:5: let s = load_settings(\"x\");"),
        "{output}"
    );
    assert!(
        output.contains("tools/report.py:4: return load_settings()"),
        "{output}"
    );
    assert!(
        output.contains("3 references to `load_settings` in 2 files"),
        "{output}"
    );

    // A type with its doc comment and fields; a kind and a path narrow the search.
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "Settings", "kind": "struct", "path": "src"}),
    )
    .await;
    assert!(output.contains("src/settings.rs:2 struct"), "{output}");
    assert!(output.contains("/// What the user chose."), "{output}");
    assert!(output.contains("pub name: String,"), "{output}");
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "Settings", "path": "tools", "references": true, "limit": 1}),
    )
    .await;
    assert!(output.contains("No definition of `Settings`"), "{output}");

    // Cut to the limit, with the count of the rest.
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "load_settings", "references": true, "limit": 1}),
    )
    .await;
    assert!(output.contains("[2 more references not shown"), "{output}");

    // A bad kind is a clear error the model reads.
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "Settings", "kind": "potato"}),
    )
    .await;
    assert!(output.contains("unknown kind `potato`"), "{output}");
    server.stop().await;
}

#[tokio::test]
async fn an_open_buffer_is_indexed_from_its_text_when_the_index_is_read() {
    let (ws, fake) = workspace_and_fake().await;
    project(&ws);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    symbols_ready(&server).await;
    // Unsaved text in the editor defines a function the disk does not have.
    let lib = ws.root.join("src/lib.rs");
    server
        .open(&uri(&lib), "rust", 1, "pub fn only_in_the_buffer() {}\n")
        .await;
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "only_in_the_buffer"}),
    )
    .await;
    assert!(output.contains("src/lib.rs:1 function"), "{output}");
    server.stop().await;
}

/// Issue 41's ninth hole: the index looked each definition's node up from the root, so a
/// file of nested modules cost the square of its depth (a 195 KB one 55 s of CPU), and every
/// query that brought the open buffers up to date waited for it after each keystroke. With
/// 200,000 nested modules (1.6 MB) open and just edited, a context for another file and two
/// `find_symbol`s answer, and the innermost function is found at its line. (The old server
/// does not answer within hours: this test hangs there.)
#[tokio::test]
async fn a_deeply_nested_open_file_is_indexed_whole_and_other_queries_answer() {
    let (ws, fake) = workspace_and_fake().await;
    project(&ws);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    symbols_ready(&server).await;
    let depth = 200_000;
    let text = format!(
        "{}pub fn deepest_of_all() {{}}\n{}",
        "mod m {\n".repeat(depth),
        "}\n".repeat(depth)
    );
    // Written after the build: it is indexed from the editor's buffer.
    let deep = uri(&write(&ws.root, "src/deep.rs", &text));
    server.open(&deep, "rust", 1, &text).await;
    let end = 2 * depth as u32 + 1;
    server
        .edit(&deep, 2, [end, 0, end, 0], "// the end\n")
        .await;

    let lib = uri(&ws.root.join("src/lib.rs"));
    let editor = json!({"uri": lib, "position": {"line": 4, "character": 14}});
    let report = server
        .client
        .request(
            "agent/session/context",
            json!({"sessionId": session, "editor": editor}),
        )
        .await
        .expect("context");
    let parts = report["editorParts"].as_array().unwrap();
    let definitions = parts
        .iter()
        .find(|p| p["name"] == "definitions")
        .unwrap_or_else(|| panic!("no definitions part: {parts:?}"));
    assert!(definitions["tokens"].as_u64().unwrap() > 0, "{definitions}");

    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "load_settings"}),
    )
    .await;
    assert!(output.contains("src/settings.rs:6 function"), "{output}");
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "deepest_of_all"}),
    )
    .await;
    assert!(
        output.contains(&format!("src/deep.rs:{} function", depth + 1)),
        "{output}"
    );
    assert!(output.contains("pub fn deepest_of_all() {}"), "{output}");
    server.stop().await;
}

#[tokio::test]
async fn a_file_changed_on_disk_is_reindexed_on_did_change_watched_files() {
    let (ws, fake) = workspace_and_fake().await;
    project(&ws);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let before = symbols_ready(&server).await;
    assert_eq!(before["files"], 3);

    let created = write(&ws.root, "src/extra.rs", "pub fn brand_new() {}\n");
    fs::remove_file(ws.root.join("tools/report.py")).unwrap();
    server
        .client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [
                {"uri": uri(&created), "type": 1},
                {"uri": uri(&ws.root.join("tools/report.py")), "type": 3},
            ]}),
        )
        .await
        .unwrap();
    // The update runs in the background: wait for it to show.
    loop {
        let status = symbols_status(&server).await;
        if status["parsesTotal"].as_u64() > before["parsesTotal"].as_u64() && status["files"] == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let output =
        find_symbol_output(&ws, &fake, &server, &session, json!({"name": "brand_new"})).await;
    assert!(output.contains("src/extra.rs:1 function"), "{output}");
    let output = find_symbol_output(&ws, &fake, &server, &session, json!({"name": "Report"})).await;
    assert!(output.contains("No definition of `Report`"), "{output}");

    // A change the client did not report is seen by modification time when read.
    write(
        &ws.root,
        "src/extra.rs",
        "// moved down\n\npub fn brand_new() {}\n",
    );
    let output =
        find_symbol_output(&ws, &fake, &server, &session, json!({"name": "brand_new"})).await;
    assert!(output.contains("src/extra.rs:3 function"), "{output}");
    server.stop().await;
}

/// Issue 41's eleventh hole, its second half: a `didChangeWatchedFiles` of a million changes
/// (64 MB, under the frame limit) was decoded into `Value`s, then typed, whole (1.1 GB). Past `MAX_WATCHED_CHANGES` the list is counted, not held: many files changed, so
/// the workspace is indexed again by modification time, which finds the file created and
/// the one deleted among them, and the server's memory stays near the frame's size.
#[tokio::test]
async fn a_million_watched_file_changes_reindex_the_workspace_in_bounded_memory() {
    let (ws, fake) = workspace_and_fake().await;
    project(&ws);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let before = symbols_ready(&server).await;
    assert_eq!(before["files"], 3);

    let created = write(&ws.root, "src/extra.rs", "pub fn after_the_flood() {}\n");
    let deleted = ws.root.join("tools/report.py");
    fs::remove_file(&deleted).unwrap();
    let mut body = String::from(
        r#"{"jsonrpc":"2.0","method":"workspace/didChangeWatchedFiles","params":{"changes":["#,
    );
    for i in 0..1_000_000 {
        body.push_str(&format!(
            r#"{{"uri":"file:///nonexistent/agentls-flood/f{i}.rs","type":2}},"#
        ));
    }
    body.push_str(&format!(
        r#"{{"uri":"{}","type":1}},{{"uri":"{}","type":3}}]}}}}"#,
        uri(&created),
        uri(&deleted)
    ));
    server.client.send_raw(body.as_bytes()).await.unwrap();
    drop(body);
    // The update runs in the background: wait for it to show.
    loop {
        let status = symbols_status(&server).await;
        if status["parsesTotal"].as_u64() > before["parsesTotal"].as_u64() && status["files"] == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let output = find_symbol_output(
        &ws,
        &fake,
        &server,
        &session,
        json!({"name": "after_the_flood"}),
    )
    .await;
    assert!(output.contains("src/extra.rs:1 function"), "{output}");
    let output = find_symbol_output(&ws, &fake, &server, &session, json!({"name": "Report"})).await;
    assert!(output.contains("No definition of `Report`"), "{output}");
    let peak = server.peak_rss_mib();
    eprintln!("peak RSS of agentls after 1,000,000 watched-file changes: {peak} MiB");
    assert!(peak < 512, "{peak} MiB");
    server.stop().await;
}

fn persisted_files(state: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in fs::read_dir(state).unwrap().flatten() {
        if let Ok(entries) = fs::read_dir(dir.path()) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("symbols-") && name.ends_with(".bin") {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

async fn restart(ws: &Workspace) -> Server {
    start(Options {
        root: Some(&ws.root),
        init_options: json!({"stateDir": ws.state.path()}),
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn the_persisted_index_is_reused_on_restart_and_a_changed_file_reparsed() {
    let ws = workspace();
    project(&ws);
    let server = restart(&ws).await;
    let first = symbols_ready(&server).await;
    assert_eq!(first["parsed"], 3, "{first}");
    assert_eq!(first["reused"], 0, "{first}");
    assert_eq!(first["persisted"], "missing", "{first}");
    server.stop().await;

    let stored = persisted_files(ws.state.path());
    assert_eq!(stored.len(), 1, "{stored:?}");
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&stored[0]), 0o600);
    assert_eq!(mode(stored[0].parent().unwrap()), 0o700);

    write(
        &ws.root,
        "src/settings.rs",
        "pub fn load_settings() {}\npub fn also_new() {}\n",
    );
    let server = restart(&ws).await;
    let second = symbols_ready(&server).await;
    assert_eq!(second["persisted"], "loaded", "{second}");
    assert_eq!(second["reused"], 2, "{second}");
    assert_eq!(second["parsed"], 1, "{second}");
    assert_eq!(second["files"], 3, "{second}");
    server.stop().await;

    // Damage: the checksum catches it, the index is rebuilt from the files, never trusted.
    let mut bytes = fs::read(&stored[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&stored[0], &bytes).unwrap();
    let server = restart(&ws).await;
    let third = symbols_ready(&server).await;
    assert_eq!(
        third["persisted"]["rebuilt"], "checksum mismatch",
        "{third}"
    );
    assert_eq!(third["parsed"], 3, "{third}");
    assert_eq!(third["reused"], 0, "{third}");
    server.stop().await;

    // Not an index at all (truncated to nothing): rebuilt too.
    fs::write(&stored[0], b"").unwrap();
    let server = restart(&ws).await;
    let fourth = symbols_ready(&server).await;
    assert_eq!(
        fourth["persisted"]["rebuilt"], "not a symbol index file",
        "{fourth}"
    );
    assert_eq!(fourth["files"], 3, "{fourth}");
    server.stop().await;
}

#[tokio::test]
async fn hostile_files_are_skipped_and_counted_and_the_index_is_still_built() {
    let ws = workspace();
    project(&ws);
    let root = &ws.root;
    // Over syntax.maxDocumentBytes (8 MiB by default): 50 MB.
    let big = fs::File::create(root.join("big.rs")).unwrap();
    big.set_len(50 * 1024 * 1024).unwrap();
    write(root, "latin.py", "");
    fs::write(root.join("latin.py"), b"name = '\xe9t\xe9'\n").unwrap();
    fs::write(root.join("blob.rs"), b"fn a() {}\0\0\0").unwrap();
    write(
        root,
        "gen.go",
        "// Code generated by protoc. DO NOT EDIT.\npackage gen\nfunc G() {}\n",
    );
    write(root, "app.min.js", "function a(){}");
    std::os::unix::fs::symlink("loop.rs", root.join("loop.rs")).unwrap();
    std::os::unix::fs::symlink("/dev/stdin", root.join("stdin.rs")).unwrap();
    let fifo = std::ffi::CString::new(root.join("pipe.rs").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let secret = write(root, "secret.rs", "pub fn hidden() {}\n");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads a 0000 file anyway: then it is indexed, not skipped.
    let readable_anyway = fs::read(&secret).is_ok();

    let server = restart(&ws).await;
    let status = symbols_ready(&server).await;
    let skipped = &status["skipped"];
    assert_eq!(skipped["tooLarge"], 1, "{status}");
    assert_eq!(skipped["notUtf8"], 1, "{status}");
    assert_eq!(skipped["binary"], 1, "{status}");
    assert_eq!(skipped["generated"], 2, "{status}");
    assert_eq!(skipped["special"], 3, "links and the FIFO: {status}");
    let (unreadable, files) = if readable_anyway { (0, 4) } else { (1, 3) };
    assert_eq!(skipped["unreadable"], unreadable, "{status}");
    assert_eq!(status["files"], files, "{status}");
    assert_eq!(status["skippedTotal"], 8 + unreadable, "{status}");
    assert!(status["definitions"].as_u64().unwrap() >= 4, "{status}");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o644)).unwrap();
    server.stop().await;
}
