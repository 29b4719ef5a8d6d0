//! Bad input gets a clear error or is logged and ignored; the server stays up and keeps
//! its state. Also: configuration errors, progress, a 20 MB document, binary files.

mod common;

use common::{start, start_in, uri, Options};
use serde_json::{json, Value};

#[tokio::test]
async fn invalid_params_are_invalid_params_errors() {
    let server = start(Options::default()).await;
    for params in [
        json!({}),
        json!({"uri": 42}),
        json!("nonsense"),
        json!({"uri": "not a uri"}),
    ] {
        let err = server
            .client
            .request("agentls/debug/document", params.clone())
            .await
            .unwrap_err();
        assert_eq!(err.code, -32602, "{params}: {err}");
    }
    let err = server
        .client
        .request("agentls/no/such/method", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32601);
    server.stop().await;
}

#[tokio::test]
async fn malformed_messages_and_notifications_do_not_hurt_state() {
    let server = start(Options::default()).await;
    let uri = "file:///v/keep.rs";
    server.open(uri, "rust", 1, "fn keep() {}\n").await;
    // Not JSON at all, then a notification with garbage params, then one with the wrong shape.
    server.client.send_raw(b"{this is not json").await.unwrap();
    server
        .client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": 5, "contentChanges": "x"}),
        )
        .await
        .unwrap();
    server
        .client
        .notify("textDocument/didOpen", json!(null))
        .await
        .unwrap();
    server
        .client
        .notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"range": {"start": 1}, "text": "x"}]}))
        .await
        .unwrap();
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "fn keep() {}\n");
    assert_eq!(doc["version"], 1);
    // The unparsable frame is reported in the client's log, not silently dropped.
    let log = server.client.wait_for("window/logMessage").await.unwrap();
    assert!(
        log.params["message"].as_str().unwrap().contains("not JSON"),
        "{}",
        log.params
    );
    // Requests of the wrong shape still get an answer to their id.
    let err = server
        .client
        .request_raw(4242, br#"{"jsonrpc":"2.0","id":4242,"method":["x"]}"#)
        .await
        .unwrap_err();
    assert_eq!(err.code, -32600, "{err}");
    let err = server
        .client
        .request_raw(4243, br#"{"jsonrpc":"2.0","id":4243,"params":{}}"#)
        .await
        .unwrap_err();
    assert_eq!(err.code, -32601, "{err}");
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["version"], 1);
    server.stop().await;
}

#[tokio::test]
async fn positions_past_the_end_clamp_or_fail_with_the_uri_and_position() {
    let server = start(Options::default()).await;
    let uri = "file:///v/pos.rs";
    server
        .open(uri, "rust", 1, "fn a() {}\r\nfn b() {}\r\n")
        .await;
    // A column past the end of a line clamps to the line end (before the CRLF).
    server.edit(uri, 2, [0, 500, 0, 900], " // end").await;
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "fn a() {} // end\r\nfn b() {}\r\n");
    // A line past the end of the file: the change is ignored, nothing is corrupted.
    server.edit(uri, 3, [7, 0, 7, 0], "lost").await;
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "fn a() {} // end\r\nfn b() {}\r\n");
    assert_eq!(doc["version"], 2);
    // In a request it is an InvalidParams error naming the uri and the position.
    let err = server
        .client
        .request(
            "agentls/debug/syntax",
            json!({"uri": uri, "position": {"line": 9, "character": 3}}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains(uri), "{}", err.message);
    assert!(err.message.contains("9:3"), "{}", err.message);
    // A column past the end in a request clamps like in an edit.
    let answer = server
        .client
        .request(
            "agentls/debug/syntax",
            json!({"uri": uri, "position": {"line": 1, "character": 99}}),
        )
        .await
        .unwrap();
    assert_eq!(answer["enclosingSymbol"]["name"], "b");
    server.stop().await;
}

#[tokio::test]
async fn a_20_mb_document_is_tracked_without_a_syntax_tree() {
    let server = start(Options::default()).await;
    let uri = "file:///v/huge.rs";
    let line = "pub const VALUE: &str = \"0123456789abcdef0123456789abcdef0123456789\";\n";
    let text = line.repeat(20 * 1024 * 1024 / line.len() + 1);
    assert!(text.len() > 20 * 1024 * 1024);
    server.open(uri, "rust", 1, &text).await;
    server.edit(uri, 2, [0, 0, 0, 0], "// head\n").await;
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["hasSyntaxTree"], false);
    assert_eq!(doc["version"], 2);
    assert_eq!(doc["text"].as_str().unwrap().len(), text.len() + 8);
    assert!(doc["text"]
        .as_str()
        .unwrap()
        .starts_with("// head\npub const"));
    // The server is still responsive for other documents.
    server
        .open("file:///v/small.rs", "rust", 1, "fn s() {}")
        .await;
    let small = server.document("file:///v/small.rs").await.unwrap();
    assert_eq!(small["outline"][0]["name"], "s");
    server.stop().await;
}

#[tokio::test]
async fn wrong_config_types_are_shown_to_the_user_and_the_previous_value_stays() {
    let server = start(Options {
        init_options: json!({"agentsMd": {"maxBytes": 100}, "unknownSection": true}),
        ..Options::default()
    })
    .await;
    server
        .client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"agentsMd": {"maxBytes": "a lot"}, "syntax": {"maxDocumentBytes": 1000}}}),
        )
        .await
        .unwrap();
    let message = server.client.wait_for("window/showMessage").await.unwrap();
    let text = message.params["message"].as_str().unwrap();
    assert!(text.contains("agentsMd.maxBytes"), "{text}");
    assert_eq!(message.params["type"], 2); // Warning
    let ws = server
        .client
        .request("agentls/debug/workspace", json!({}))
        .await
        .unwrap();
    assert_eq!(ws["config"]["agentsMd"]["maxBytes"], 100);
    assert_eq!(ws["config"]["syntax"]["maxDocumentBytes"], 1000);
    // VS Code's section-wrapped form works the same.
    server
        .client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"agentls": {"agentsMd": {"maxBytes": 7}}}}),
        )
        .await
        .unwrap();
    let ws = server
        .client
        .request("agentls/debug/workspace", json!({}))
        .await
        .unwrap();
    assert_eq!(ws["config"]["agentsMd"]["maxBytes"], 7);
    server.stop().await;
}

#[tokio::test]
async fn indexing_reports_progress_skips_ignored_files_and_tolerates_binaries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("build/out.o"), "x").unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
    std::fs::write(root.join("blob.bin"), &binary).unwrap();
    std::fs::write(root.join("AGENTS.md"), &binary).unwrap();
    let server = start(Options {
        root: Some(&root),
        progress: true,
        ..Options::default()
    })
    .await;
    // workDoneProgress/create comes first, then begin … end on that token.
    let create = server
        .client
        .wait_for("window/workDoneProgress/create")
        .await
        .unwrap();
    let token = create.params["token"].clone();
    let mut kinds = Vec::new();
    let mut end_message = String::new();
    while let Some(progress) = server.client.wait_for("$/progress").await {
        assert_eq!(progress.params["token"], token);
        let value = &progress.params["value"];
        kinds.push(value["kind"].as_str().unwrap().to_owned());
        if value["kind"] == "end" {
            end_message = value["message"].as_str().unwrap().to_owned();
            break;
        }
    }
    assert_eq!(kinds.first().map(String::as_str), Some("begin"));
    assert!(end_message.starts_with("Indexed 3 files"), "{end_message}");
    let ws = server.index_ready().await;
    assert_eq!(ws["fileCount"], 3); // AGENTS.md, blob.bin, src/main.rs
    assert_eq!(ws["roots"], json!([root.to_str().unwrap()]));
    // The binary AGENTS.md is skipped, not fatal.
    let chain = server.agents_md(&uri(&root.join("src/main.rs"))).await;
    assert_eq!(chain["files"], json!([]));
    let chain = server.agents_md(&uri(&root)).await;
    assert_eq!(chain["files"], json!([]));
    assert_eq!(chain["text"], "");
    assert!(!chain["warnings"].as_array().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn workspace_folders_can_change_at_run_time() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let a_root = a.path().canonicalize().unwrap();
    let b_root = b.path().canonicalize().unwrap();
    std::fs::write(a_root.join("one.rs"), "").unwrap();
    std::fs::write(b_root.join("two.rs"), "").unwrap();
    std::fs::write(b_root.join("three.rs"), "").unwrap();
    let server = start_in(&a_root).await;
    assert_eq!(server.index_ready().await["fileCount"], 1);
    server
        .client
        .notify(
            "workspace/didChangeWorkspaceFolders",
            json!({"event": {
                "added": [{"uri": uri(&b_root), "name": "b"}],
                "removed": [{"uri": uri(&a_root), "name": "a"}]
            }}),
        )
        .await
        .unwrap();
    // The notification is handled asynchronously: wait for the new roots to be indexed.
    let ws: Value = loop {
        let ws = server.index_ready().await;
        if ws["roots"] == json!([b_root.to_str().unwrap()]) {
            break ws;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(ws["fileCount"], 2);
    server.stop().await;
}

#[tokio::test]
async fn requests_before_initialize_are_refused_and_the_server_survives() {
    let client = agentls_dev::lsp_client::LspClient::spawn(
        &common::binary(),
        &[],
        &[("AGENTLS_LOG", "error")],
    )
    .unwrap();
    let err = client
        .request("agentls/debug/workspace", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32002); // ServerNotInitialized
    let init = client
        .request("initialize", json!({"capabilities": {}}))
        .await
        .unwrap();
    // No positionEncodings offered: the LSP default, utf-16.
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-16");
    let status = client.shutdown().await.unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn exit_without_shutdown_is_code_1_and_a_vanished_client_ends_the_server() {
    let mut server = start(Options::default()).await;
    server.client.notify("exit", json!(null)).await.unwrap();
    let status = server.client.child().wait().await.unwrap();
    assert_eq!(status.code(), Some(1));

    let mut server = start(Options::default()).await;
    server.open("file:///v/a.rs", "rust", 1, "fn a() {}").await;
    server.client.close_stdin().await;
    let status = server.client.child().wait().await.unwrap();
    assert_eq!(status.code(), Some(1));
}
