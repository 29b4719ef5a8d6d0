//! AGENTS.md tracking through the real server: discovery on disk, precedence, the cap,
//! unsaved buffers, and disk changes signalled by didChangeWatchedFiles.

mod common;

use common::{start, start_in, uri, Options};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn file_names(chain: &Value) -> Vec<String> {
    chain["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["displayPath"].as_str().unwrap().to_owned())
        .collect()
}

/// A repository: git root with AGENTS.md, a/ with both files (the override wins), a/b/
/// with AGENTS.md, and a source file in a/b/.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join(".git")).unwrap();
    write(&root.join("AGENTS.md"), "Use tabs.\n");
    write(&root.join("a/AGENTS.md"), "ignored: the override wins\n");
    write(
        &root.join("a/AGENTS.override.md"),
        "Run ./test before committing.\n",
    );
    write(&root.join("a/b/AGENTS.md"), "This crate is no_std.\n");
    write(&root.join("a/b/lib.rs"), "pub fn f() {}\n");
    dir
}

#[tokio::test]
async fn nested_chain_root_to_leaf_with_override_precedence() {
    let repo = repository();
    let root = repo.path().canonicalize().unwrap();
    let server = start_in(&root).await;
    let chain = server.agents_md(&uri(&root.join("a/b/lib.rs"))).await;
    assert_eq!(
        file_names(&chain),
        ["AGENTS.md", "a/AGENTS.override.md", "a/b/AGENTS.md"]
    );
    assert_eq!(chain["gitRoot"], root.to_str().unwrap());
    assert_eq!(
        chain["text"],
        "## AGENTS.md\nUse tabs.\n\n## a/AGENTS.override.md\nRun ./test before committing.\n\n## a/b/AGENTS.md\nThis crate is no_std."
    );
    // For the root directory itself only the root file applies.
    let chain = server.agents_md(&uri(&root)).await;
    assert_eq!(file_names(&chain), ["AGENTS.md"]);
    server.stop().await;
}

#[tokio::test]
async fn without_a_git_root_only_the_directory_itself_counts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root.join("AGENTS.md"), "top\n");
    write(&root.join("sub/AGENTS.md"), "sub\n");
    write(&root.join("sub/x.py"), "x = 1\n");
    let server = start_in(&root).await;
    let chain = server.agents_md(&uri(&root.join("sub/x.py"))).await;
    assert_eq!(chain["gitRoot"], Value::Null);
    assert_eq!(file_names(&chain), ["sub/AGENTS.md"]);
    server.stop().await;
}

#[tokio::test]
async fn the_cap_from_configuration_truncates_and_says_so() {
    let repo = repository();
    let root = repo.path().canonicalize().unwrap();
    let server = start(Options {
        root: Some(&root),
        init_options: json!({"agentsMd": {"maxBytes": 20}}),
        ..Options::default()
    })
    .await;
    let chain = server.agents_md(&uri(&root.join("a/b/lib.rs"))).await;
    // "Use tabs.\n" is 10 bytes; 10 more of the override's 30; nothing of the leaf's 22.
    assert_eq!(chain["omittedBytes"], 20 + 22);
    let text = chain["text"].as_str().unwrap();
    assert!(
        text.contains("## a/AGENTS.override.md\nRun ./test"),
        "{text}"
    );
    assert!(!text.contains("no_std"), "{text}");
    assert!(
        text.ends_with("[truncated: 42 bytes of AGENTS.md omitted]"),
        "{text}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_open_buffer_wins_over_disk_and_edits_are_live() {
    let repo = repository();
    let root = repo.path().canonicalize().unwrap();
    let server = start_in(&root).await;
    let agents_uri = uri(&root.join("a/b/AGENTS.md"));
    let file_uri = uri(&root.join("a/b/lib.rs"));
    server
        .open(&agents_uri, "markdown", 1, "This crate is no_std.\n")
        .await;
    server
        .edit(&agents_uri, 2, [0, 14, 0, 20], "std-only")
        .await;
    let chain = server.agents_md(&file_uri).await;
    assert!(chain["text"]
        .as_str()
        .unwrap()
        .ends_with("This crate is std-only."));
    assert_eq!(chain["files"][2]["fromBuffer"], true);
    // An unsaved AGENTS.override.md that exists only in the editor counts too.
    let override_uri = uri(&root.join("a/b/AGENTS.override.md"));
    server
        .open(&override_uri, "markdown", 1, "Unsaved override.\n")
        .await;
    let chain = server.agents_md(&file_uri).await;
    assert!(chain["text"]
        .as_str()
        .unwrap()
        .ends_with("## a/b/AGENTS.override.md\nUnsaved override."));
    // Closing both falls back to the disk.
    for u in [&agents_uri, &override_uri] {
        server
            .client
            .notify("textDocument/didClose", json!({"textDocument": {"uri": u}}))
            .await
            .unwrap();
    }
    let chain = server.agents_md(&file_uri).await;
    assert!(chain["text"]
        .as_str()
        .unwrap()
        .ends_with("This crate is no_std."));
    assert_eq!(chain["files"][2]["fromBuffer"], false);
    server.stop().await;
}

#[tokio::test]
async fn watched_file_changes_refresh_the_cached_disk_content() {
    let repo = repository();
    let root = repo.path().canonicalize().unwrap();
    let server = start(Options {
        root: Some(&root),
        watch_files: true,
        ..Options::default()
    })
    .await;
    // The server registers its watchers with the client.
    let registration = server
        .client
        .wait_for("client/registerCapability")
        .await
        .unwrap();
    let registered = &registration.params["registrations"][0];
    assert_eq!(registered["method"], "workspace/didChangeWatchedFiles");
    let globs: Vec<&str> = registered["registerOptions"]["watchers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["globPattern"].as_str().unwrap())
        .collect();
    assert_eq!(globs, ["**/AGENTS.override.md", "**/AGENTS.md"]);
    server.index_ready().await;

    let file_uri = uri(&root.join("a/b/lib.rs"));
    let leaf = root.join("a/b/AGENTS.md");
    assert!(server.agents_md(&file_uri).await["text"]
        .as_str()
        .unwrap()
        .ends_with("no_std."));
    fs::write(&leaf, "Now with alloc.\n").unwrap();
    // With a watcher the server trusts its cache until the client reports the change…
    assert!(server.agents_md(&file_uri).await["text"]
        .as_str()
        .unwrap()
        .ends_with("no_std."));
    server
        .client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": uri(&leaf), "type": 2}]}),
        )
        .await
        .unwrap();
    // …and picks it up on the next lookup, without a restart.
    assert!(server.agents_md(&file_uri).await["text"]
        .as_str()
        .unwrap()
        .ends_with("Now with alloc."));
    // A deleted file drops out of the chain.
    fs::remove_file(&leaf).unwrap();
    server
        .client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": uri(&leaf), "type": 3}]}),
        )
        .await
        .unwrap();
    assert_eq!(
        file_names(&server.agents_md(&file_uri).await),
        ["AGENTS.md", "a/AGENTS.override.md"]
    );
    server.stop().await;
}

#[tokio::test]
async fn without_a_watcher_every_lookup_reads_the_disk() {
    let repo = repository();
    let root = repo.path().canonicalize().unwrap();
    let server = start_in(&root).await;
    let file_uri = uri(&root.join("a/b/lib.rs"));
    assert!(server.agents_md(&file_uri).await["text"]
        .as_str()
        .unwrap()
        .ends_with("no_std."));
    fs::write(root.join("a/b/AGENTS.md"), "Edited outside the editor.\n").unwrap();
    assert!(server.agents_md(&file_uri).await["text"]
        .as_str()
        .unwrap()
        .ends_with("Edited outside the editor."));
    server.stop().await;
}

#[tokio::test]
async fn a_non_utf8_agents_md_is_skipped_and_the_rest_still_served() {
    let repo = repository();
    let root = repo.path().canonicalize().unwrap();
    fs::write(
        root.join("a/AGENTS.override.md"),
        [0xff, 0xfe, b'x', 0x00, 0x80],
    )
    .unwrap();
    let server = start_in(&root).await;
    let chain = server.agents_md(&uri(&root.join("a/b/lib.rs"))).await;
    // The broken override is skipped with a warning; a/AGENTS.md is the next candidate.
    assert_eq!(
        file_names(&chain),
        ["AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md"]
    );
    assert!(chain["warnings"][0]
        .as_str()
        .unwrap()
        .contains("not valid UTF-8"));
    server.stop().await;
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused() {
    let repo = repository();
    let root = repo.path().canonicalize().unwrap();
    let server = start(Options {
        root: Some(&root.join("a")),
        ..Options::default()
    })
    .await;
    let err = server
        .client
        .request(
            "agentls/debug/agentsMd",
            json!({"uri": uri(Path::new("/etc/passwd"))}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(
        err.message.contains("outside the workspace"),
        "{}",
        err.message
    );
    // The workspace is a/, so the git root's AGENTS.md shows with its absolute path.
    let chain = server.agents_md(&uri(&root.join("a/b/lib.rs"))).await;
    let names = file_names(&chain);
    assert_eq!(names[0], root.join("AGENTS.md").to_str().unwrap());
    assert_eq!(&names[1..], ["AGENTS.override.md", "b/AGENTS.md"]);
    server.stop().await;
}
