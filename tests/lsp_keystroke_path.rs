//! The keystroke path seen from a client: text-sync notifications are decoded once, straight
//! into their params, and handed to the document worker in batches. Whatever arrives in
//! one read, every request sees every edit sent before it, in order; odd but valid shapes of
//! a notification are taken as before (an escaped method name, a duplicate key, an id);
//! notifications before `initialize` are still dropped.

mod common;

use agentls_dev::lsp_client::LspClient;
use common::{start, Options};
use serde_json::{json, Value};

fn frame(body: &str) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn type_at(uri: &str, version: i32, column: usize, text: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{
                "range": {
                    "start": {"line": 0, "character": column},
                    "end": {"line": 0, "character": column}
                },
                "text": text
            }]
        }
    })
    .to_string()
}

fn document_request(id: &str, uri: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "agentls/debug/document", "params": {"uri": uri}})
        .to_string()
}

#[tokio::test]
async fn reads_in_the_middle_of_a_burst_see_every_edit_before_them() {
    let server = start(Options::default()).await;
    let uri = "file:///v/burst.txt";
    server.open(uri, "plaintext", 1, "").await;
    // 300 edits, a read, 300 more, a read: one write, so the server reads them in few
    // chunks and batches the edits (more than one batch on each side of the first read).
    let mut bytes = Vec::new();
    for i in 0..300 {
        bytes.extend(frame(&type_at(uri, 2 + i as i32, i, "a")));
    }
    bytes.extend(frame(&document_request("middle", uri)));
    for i in 0..300 {
        bytes.extend(frame(&type_at(uri, 302 + i as i32, 300 + i, "b")));
    }
    bytes.extend(frame(&document_request("end", uri)));
    server.client.send_bytes(&bytes).await.unwrap();

    let mut answers = Vec::new();
    for _ in 0..2 {
        answers.push(server.client.next_orphan_answer().await.unwrap());
    }
    let answer = |id: &str| -> Value {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:?}"))["result"]
            .clone()
    };
    // The middle read sees all 300 edits before it, in order; its handler may run after
    // some of the later edits were applied too (handlers run concurrently, as always), but
    // then it sees them whole and in order: the text matches the version.
    let middle = answer("middle");
    let text = middle["text"].as_str().unwrap();
    let later = text
        .len()
        .checked_sub(300)
        .expect("edits before the read are missing");
    assert_eq!(text, "a".repeat(300) + &"b".repeat(later));
    assert_eq!(middle["version"], 301 + later as i64);
    let end = answer("end");
    assert_eq!(end["text"], "a".repeat(300) + &"b".repeat(300));
    assert_eq!(end["version"], 601);
    server.stop().await;
}

#[tokio::test]
async fn odd_but_valid_sync_notifications_are_taken_as_before() {
    let server = start(Options::default()).await;
    let uri = "file:///v/odd.txt";
    server.open(uri, "plaintext", 1, "").await;

    // An escaped `/` in the method name is the same method.
    let escaped =
        type_at(uri, 2, 0, "x").replace("textDocument/didChange", r"textDocument\/didChange");
    assert!(escaped.contains(r"\/"));
    server.client.send_bytes(&frame(&escaped)).await.unwrap();
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "x");

    // A duplicate key: the last one counts, as in a JSON value.
    let duplicate =
        type_at(uri, 3, 1, "first").replace(r#""text":"first""#, r#""text":"first","text":"last""#);
    assert!(duplicate.contains(r#""text":"last""#), "{duplicate}");
    server.client.send_bytes(&frame(&duplicate)).await.unwrap();
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "xlast");
    assert_eq!(doc["version"], 3);

    // Unknown fields anywhere are ignored.
    let mut extra: Value = serde_json::from_str(&type_at(uri, 4, 5, "!")).unwrap();
    extra["params"]["extra"] = json!({"nested": [1, 2]});
    extra["params"]["contentChanges"][0]["rangeLength"] = json!(0);
    extra["other"] = json!(true);
    server
        .client
        .send_bytes(&frame(&extra.to_string()))
        .await
        .unwrap();

    // Invalid params are ignored and change nothing.
    let mut invalid: Value = serde_json::from_str(&type_at(uri, 5, 0, "?")).unwrap();
    invalid["params"]["textDocument"]["version"] = json!("five");
    server
        .client
        .send_bytes(&frame(&invalid.to_string()))
        .await
        .unwrap();
    let null_params = r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":null}"#;
    server.client.send_bytes(&frame(null_params)).await.unwrap();
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "xlast!");
    assert_eq!(doc["version"], 4);

    // With an id it is a request, which tower-lsp refuses: InvalidRequest, nothing applied.
    let mut request: Value = serde_json::from_str(&type_at(uri, 6, 0, "?")).unwrap();
    request["id"] = json!(9001);
    let err = server
        .client
        .request_raw(9001, request.to_string().as_bytes())
        .await
        .unwrap_err();
    assert_eq!(err.code, -32600, "{err}");
    let mut null_id = request.clone();
    null_id["id"] = Value::Null;
    server
        .client
        .send_bytes(&frame(&null_id.to_string()))
        .await
        .unwrap();
    let answer = server.client.next_orphan_answer().await.unwrap();
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let doc = server.document(uri).await.unwrap();
    assert_eq!(doc["text"], "xlast!");

    // A didClose closes; a didChange after it is ignored.
    server
        .client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        )
        .await
        .unwrap();
    server
        .client
        .send_bytes(&frame(&type_at(uri, 7, 0, "late")))
        .await
        .unwrap();
    let err = server.document(uri).await.unwrap_err();
    assert_eq!(err.code, -32602, "{err}");
    server.stop().await;
}

#[tokio::test]
async fn sync_notifications_before_initialize_are_dropped() {
    let client = LspClient::spawn(&common::binary(), &[], &[("AGENTLS_LOG", "error")]).unwrap();
    let uri = "file:///v/early.rs";
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": "fn early() {}"}}),
        )
        .await
        .unwrap();
    client
        .request("initialize", json!({"capabilities": {}}))
        .await
        .unwrap();
    client.notify("initialized", json!({})).await.unwrap();
    let err = client
        .request("agentls/debug/document", json!({"uri": uri}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602, "{err}");
    // Opened now, it is there.
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": "fn late() {}"}}),
        )
        .await
        .unwrap();
    let doc = client
        .request("agentls/debug/document", json!({"uri": uri}))
        .await
        .unwrap();
    assert_eq!(doc["text"], "fn late() {}");
    let status = client.shutdown().await.unwrap();
    assert!(status.success());
}
