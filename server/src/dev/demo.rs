//! `agentls demo [DIR] [FILE]`: the main job until the agent exists. Starts this very
//! binary as a language server, drives a scripted LSP session against it over stdio and
//! prints what the server tracked: the file index, a document's outline before and
//! after an incremental edit, the symbol at a position, the AGENTS.md chain, and the
//! context the model would be sent for a prompt made there.

use crate::dev::lsp_client::LspClient;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const PREFERRED_FILES: [&str; 4] = ["server/src/main.rs", "src/main.rs", "src/lib.rs", "main.go"];

pub async fn run(dir: &Path, file: Option<&Path>) -> Result<(), String> {
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
    let file = match file {
        Some(f) => dir.join(f),
        None => {
            pick_file(&dir).ok_or_else(|| format!("no source file found in {}", dir.display()))?
        }
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let client =
        LspClient::spawn(&exe, &[], &[]).map_err(|e| format!("cannot start agentls: {e}"))?;
    let root_uri = url(&dir)?;
    let file_uri = url(&file)?;
    let rpc = |e: crate::dev::lsp_client::RpcError| e.to_string();

    let init = client
        .request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": root_uri,
                "capabilities": {
                    "general": { "positionEncodings": ["utf-16"] },
                    "window": { "workDoneProgress": true },
                    "workspace": { "didChangeWatchedFiles": { "dynamicRegistration": true } }
                }
            }),
        )
        .await
        .map_err(rpc)?;
    println!(
        "server: {} {} (position encoding {})",
        init["serverInfo"]["name"].as_str().unwrap_or("?"),
        init["serverInfo"]["version"].as_str().unwrap_or("?"),
        init["capabilities"]["positionEncoding"]
    );
    client
        .notify("initialized", json!({}))
        .await
        .map_err(|e| e.to_string())?;

    // The index runs in the background; its end arrives as $/progress.
    while let Some(message) = client.wait_for("$/progress").await {
        let value = &message.params["value"];
        if value["kind"] == "end" {
            println!("workspace: {}", value["message"].as_str().unwrap_or(""));
            break;
        }
    }

    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": file_uri, "languageId": "", "version": 1, "text": text}}),
        )
        .await
        .map_err(|e| e.to_string())?;
    let doc = client
        .request("agentls/debug/document", json!({"uri": file_uri}))
        .await
        .map_err(rpc)?;
    let relative = file
        .strip_prefix(&dir)
        .unwrap_or(&file)
        .display()
        .to_string();
    println!(
        "\nopened {relative}: {} lines, language {}, version {}",
        doc["lineCount"], doc["language"], doc["version"]
    );
    print_outline(&doc["outline"], 1);

    // An incremental edit at the end of the file, with an emoji to exercise utf-16.
    let end_line = doc["lineCount"].as_u64().unwrap_or(1).saturating_sub(1);
    let added = "\n/// Added by the demo 🚀\nfn added_by_demo() -> usize {\n    42\n}\n";
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": file_uri, "version": 2},
                "contentChanges": [{"range": {"start": {"line": end_line, "character": 0}, "end": {"line": end_line, "character": 0}}, "text": added}]
            }),
        )
        .await
        .map_err(|e| e.to_string())?;
    let doc = client
        .request("agentls/debug/document", json!({"uri": file_uri}))
        .await
        .map_err(rpc)?;
    println!(
        "\nafter an incremental edit: version {}, {} lines, syntax errors: {}",
        doc["version"], doc["lineCount"], doc["syntaxErrors"]
    );
    if let Some(last) = doc["outline"].as_array().and_then(|o| o.last()) {
        println!(
            "  last symbol: {} [{}]",
            last["name"].as_str().unwrap_or("?"),
            last["kind"].as_str().unwrap_or("?")
        );
    }

    let at = json!({"line": end_line + 3, "character": 4});
    let last_line = doc["lineCount"]
        .as_u64()
        .unwrap_or(1)
        .saturating_sub(1)
        .min(30);
    let syntax = client
        .request(
            "agentls/debug/syntax",
            json!({"uri": file_uri, "position": at, "range": {"start": {"line": 0, "character": 0}, "end": {"line": last_line, "character": 0}}}),
        )
        .await
        .map_err(rpc)?;
    if let Some(symbol) = syntax["enclosingSymbol"].as_object() {
        println!(
            "symbol at {}:{}: {} [{}]",
            end_line + 3,
            4,
            symbol["name"],
            symbol["kind"]
        );
    }
    let names: Vec<&str> = syntax["identifiers"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(|i| i["name"].as_str())
                .take(12)
                .collect()
        })
        .unwrap_or_default();
    println!(
        "identifiers in lines 1-{}: {}",
        last_line + 1,
        names.join(", ")
    );

    let agents = client
        .request("agentls/debug/agentsMd", json!({"uri": file_uri}))
        .await
        .map_err(rpc)?;
    println!(
        "\nAGENTS.md chain for {}:",
        agents["dir"].as_str().unwrap_or("?")
    );
    match agents["files"].as_array() {
        Some(files) if !files.is_empty() => {
            for f in files {
                println!(
                    "  {} ({} bytes)",
                    f["displayPath"].as_str().unwrap_or("?"),
                    f["bytes"]
                );
            }
        }
        _ => println!("  (none)"),
    }

    // What the model would be sent for a prompt made here, section by section.
    let context = client
        .request(
            "agent/session/context",
            json!({"editor": {"uri": file_uri, "position": at}}),
        )
        .await
        .map_err(rpc)?;
    println!(
        "\ncontext the model would see ({} tokens, {:.1}% of {}, {}):",
        context["totalTokens"],
        context["fill"].as_f64().unwrap_or(0.0) * 100.0,
        context["contextWindow"],
        if context["estimated"] == true {
            "estimated"
        } else {
            "provider-reported"
        }
    );
    for section in context["sections"].as_array().into_iter().flatten() {
        println!(
            "  {:<22} {:>7}  {}",
            section["name"].as_str().unwrap_or("?"),
            section["tokens"].as_u64().unwrap_or(0),
            section["trust"].as_str().unwrap_or("")
        );
    }
    let status = client.shutdown().await.map_err(|e| e.to_string())?;
    println!("\nserver exited: {status}");
    Ok(())
}

fn url(path: &Path) -> Result<String, String> {
    tower_lsp::lsp_types::Url::from_file_path(path)
        .map(|u| u.to_string())
        .map_err(|()| format!("{} is not an absolute path", path.display()))
}

fn pick_file(dir: &Path) -> Option<PathBuf> {
    PREFERRED_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
        .or_else(|| {
            ignore::WalkBuilder::new(dir)
                .build()
                .flatten()
                .map(|e| e.into_path())
                .find(|p| {
                    p.extension()
                        .and_then(|e| e.to_str())
                        .and_then(agentls_core::language::Language::from_extension)
                        .is_some()
                })
        })
}

fn print_outline(symbols: &Value, depth: usize) {
    for symbol in symbols.as_array().into_iter().flatten() {
        println!(
            "{}{} [{}] line {}",
            "  ".repeat(depth),
            symbol["name"].as_str().unwrap_or("?"),
            symbol["kind"].as_str().unwrap_or("?"),
            symbol["range"]["start"]["line"].as_u64().unwrap_or(0) + 1
        );
        print_outline(&symbol["children"], depth + 1);
    }
}
