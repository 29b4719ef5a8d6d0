//! `agentls-dev demo [DIR] [FILE]`: the main job until the agent existed. Starts agentls as
//! a language server, drives a scripted LSP session against it over stdio and prints what
//! the server tracked: the file index, a document's outline before and after an incremental
//! edit, the symbol at a position, the AGENTS.md chain, and the context the model would be
//! sent for a prompt made there.

use crate::lsp_client::{LspClient, RpcError};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

const PREFERRED_FILES: [&str; 4] = ["server/src/main.rs", "src/main.rs", "src/lib.rs", "main.go"];

/// The demo against the agentls beside this binary, printed on stdout.
pub async fn run(dir: &Path, file: Option<&Path>) -> Result<(), String> {
    let server = crate::lsp_client::agentls_binary()?;
    run_with((&server, &[]), dir, file, &mut std::io::stdout()).await
}

/// The demo against the agentls at `server.0`, started with the environment variables
/// `server.1` added, its report written to `out`.
pub async fn run_with(
    (server, env): (&Path, &[(&str, &str)]),
    dir: &Path,
    file: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), String> {
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
    let client =
        LspClient::spawn(server, &[], env).map_err(|e| format!("cannot start agentls: {e}"))?;
    let file_uri = url(&file)?;
    let mut demo = Demo {
        client,
        file_uri: &file_uri,
        out,
    };
    demo.initialize(&dir).await?;
    let relative = file
        .strip_prefix(&dir)
        .unwrap_or(&file)
        .display()
        .to_string();
    let end_line = demo.open(&relative, &text).await?;
    let at = json!({"line": end_line + 3, "character": 4});
    demo.edit(end_line, &at).await?;
    demo.agents_md().await?;
    demo.context(&at).await?;
    let Demo { client, out, .. } = demo;
    let status = client.shutdown().await.map_err(|e| e.to_string())?;
    writeln!(out, "\nserver exited: {status}").map_err(io)
}

/// One scripted session: the client, the file it opened and where the report goes.
struct Demo<'a> {
    client: LspClient,
    file_uri: &'a str,
    out: &'a mut dyn Write,
}

fn io(e: std::io::Error) -> String {
    format!("cannot write the report: {e}")
}

fn rpc(e: RpcError) -> String {
    e.to_string()
}

impl Demo<'_> {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        self.client.request(method, params).await.map_err(rpc)
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        self.client
            .notify(method, params)
            .await
            .map_err(|e| e.to_string())
    }

    /// initialize, initialized, and the end of the workspace index (a `$/progress`).
    async fn initialize(&mut self, dir: &Path) -> Result<(), String> {
        let init = self
            .request(
                "initialize",
                json!({
                    "processId": std::process::id(),
                    "rootUri": url(dir)?,
                    "capabilities": {
                        "general": { "positionEncodings": ["utf-16"] },
                        "window": { "workDoneProgress": true },
                        "workspace": { "didChangeWatchedFiles": { "dynamicRegistration": true } }
                    }
                }),
            )
            .await?;
        writeln!(
            self.out,
            "server: {} {} (position encoding {})",
            init["serverInfo"]["name"].as_str().unwrap_or("?"),
            init["serverInfo"]["version"].as_str().unwrap_or("?"),
            init["capabilities"]["positionEncoding"]
        )
        .map_err(io)?;
        self.notify("initialized", json!({})).await?;

        // The index runs in the background; its end arrives as $/progress.
        while let Some(message) = self.client.wait_for("$/progress").await {
            let value = &message.params["value"];
            if value["kind"] == "end" {
                writeln!(
                    self.out,
                    "workspace: {}",
                    value["message"].as_str().unwrap_or("")
                )
                .map_err(io)?;
                break;
            }
        }
        Ok(())
    }

    /// Opens the file and prints its outline; returns its last line.
    async fn open(&mut self, relative: &str, text: &str) -> Result<u64, String> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": self.file_uri, "languageId": "", "version": 1, "text": text}}),
        )
        .await?;
        let doc = self
            .request("agentls/debug/document", json!({"uri": self.file_uri}))
            .await?;
        writeln!(
            self.out,
            "\nopened {relative}: {} lines, language {}, version {}",
            doc["lineCount"], doc["language"], doc["version"]
        )
        .map_err(io)?;
        print_outline(self.out, &doc["outline"], 1)?;
        Ok(doc["lineCount"].as_u64().unwrap_or(1).saturating_sub(1))
    }

    /// An incremental edit at the end of the file, with an emoji to exercise utf-16; then
    /// the symbol at `at` and the identifiers of the first lines.
    async fn edit(&mut self, end_line: u64, at: &Value) -> Result<(), String> {
        let added = "\n/// Added by the demo 🚀\nfn added_by_demo() -> usize {\n    42\n}\n";
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": self.file_uri, "version": 2},
                "contentChanges": [{"range": {"start": {"line": end_line, "character": 0}, "end": {"line": end_line, "character": 0}}, "text": added}]
            }),
        )
        .await?;
        let doc = self
            .request("agentls/debug/document", json!({"uri": self.file_uri}))
            .await?;
        writeln!(
            self.out,
            "\nafter an incremental edit: version {}, {} lines, syntax errors: {}",
            doc["version"], doc["lineCount"], doc["syntaxErrors"]
        )
        .map_err(io)?;
        if let Some(last) = doc["outline"].as_array().and_then(|o| o.last()) {
            writeln!(
                self.out,
                "  last symbol: {} [{}]",
                last["name"].as_str().unwrap_or("?"),
                last["kind"].as_str().unwrap_or("?")
            )
            .map_err(io)?;
        }
        let last_line = doc["lineCount"]
            .as_u64()
            .unwrap_or(1)
            .saturating_sub(1)
            .min(30);
        self.syntax(end_line, at, last_line).await
    }

    async fn syntax(&mut self, end_line: u64, at: &Value, last_line: u64) -> Result<(), String> {
        let syntax = self
            .request(
                "agentls/debug/syntax",
                json!({"uri": self.file_uri, "position": at, "range": {"start": {"line": 0, "character": 0}, "end": {"line": last_line, "character": 0}}}),
            )
            .await?;
        if let Some(symbol) = syntax["enclosingSymbol"].as_object() {
            writeln!(
                self.out,
                "symbol at {}:{}: {} [{}]",
                end_line + 3,
                4,
                symbol["name"],
                symbol["kind"]
            )
            .map_err(io)?;
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
        writeln!(
            self.out,
            "identifiers in lines 1-{}: {}",
            last_line + 1,
            names.join(", ")
        )
        .map_err(io)
    }

    async fn agents_md(&mut self) -> Result<(), String> {
        let agents = self
            .request("agentls/debug/agentsMd", json!({"uri": self.file_uri}))
            .await?;
        writeln!(
            self.out,
            "\nAGENTS.md chain for {}:",
            agents["dir"].as_str().unwrap_or("?")
        )
        .map_err(io)?;
        match agents["files"].as_array() {
            Some(files) if !files.is_empty() => {
                for f in files {
                    writeln!(
                        self.out,
                        "  {} ({} bytes)",
                        f["displayPath"].as_str().unwrap_or("?"),
                        f["bytes"]
                    )
                    .map_err(io)?;
                }
                Ok(())
            }
            _ => writeln!(self.out, "  (none)").map_err(io),
        }
    }

    /// What the model would be sent for a prompt made at `at`, section by section.
    async fn context(&mut self, at: &Value) -> Result<(), String> {
        let context = self
            .request(
                "agent/session/context",
                json!({"editor": {"uri": self.file_uri, "position": at}}),
            )
            .await?;
        writeln!(
            self.out,
            "\ncontext the model would see ({} tokens, {:.1}% of {}, {}):",
            context["totalTokens"],
            context["fill"].as_f64().unwrap_or(0.0) * 100.0,
            context["contextWindow"],
            if context["estimated"] == true {
                "estimated"
            } else {
                "provider-reported"
            }
        )
        .map_err(io)?;
        for section in context["sections"].as_array().into_iter().flatten() {
            writeln!(
                self.out,
                "  {:<22} {:>7}  {}",
                section["name"].as_str().unwrap_or("?"),
                section["tokens"].as_u64().unwrap_or(0),
                section["trust"].as_str().unwrap_or("")
            )
            .map_err(io)?;
        }
        Ok(())
    }
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

fn print_outline(out: &mut dyn Write, symbols: &Value, depth: usize) -> Result<(), String> {
    for symbol in symbols.as_array().into_iter().flatten() {
        writeln!(
            out,
            "{}{} [{}] line {}",
            "  ".repeat(depth),
            symbol["name"].as_str().unwrap_or("?"),
            symbol["kind"].as_str().unwrap_or("?"),
            symbol["range"]["start"]["line"].as_u64().unwrap_or(0) + 1
        )
        .map_err(io)?;
        print_outline(out, &symbol["children"], depth + 1)?;
    }
    Ok(())
}
