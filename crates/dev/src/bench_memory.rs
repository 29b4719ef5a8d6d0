//! `agentls-dev bench memory`: the resident memory of a real agentls child, idle after
//! `initialize`, and loaded: 50 open buffers of 5,000 lines and a session of 200K tokens
//! (written as a session log beforehand, then loaded over LSP). Read from /proc (VmRSS now,
//! VmHWM the peak).

use serde_json::json;

use crate::lsp_client::{start_agentls, LspClient};
use agentls::store::session_log::{self, SessionStore};
use agentls_core::event::Event;

pub struct MemoryOptions {
    pub buffers: usize,
    pub lines: usize,
    pub history_tokens: usize,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        MemoryOptions {
            buffers: 50,
            lines: 5_000,
            history_tokens: 200_000,
        }
    }
}

pub struct MemoryReport {
    /// (VmRSS, VmHWM) in KiB.
    pub idle: (u64, u64),
    /// Idle (RssAnon, RssFile) in KiB: what agentls allocated, and the pages of its program
    /// and libraries mapped in (shared with other processes running them; their count moves
    /// with code layout and the kernel's fault-around).
    pub idle_split: (u64, u64),
    /// After the buffers were opened (and their text read back: parsed).
    pub buffers: (u64, u64),
    /// After the session was loaded too.
    pub session: (u64, u64),
    /// After the session's context was assembled too.
    pub loaded: (u64, u64),
    pub buffer_bytes: usize,
    pub history_items: usize,
}

fn rss(pid: u32) -> Result<(u64, u64), String> {
    status_fields(pid, "VmRSS:", "VmHWM:")
}

/// Two KiB fields of /proc/PID/status.
fn status_fields(pid: u32, first: &str, second: &str) -> Result<(u64, u64), String> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok((field(first), field(second)))
}

pub async fn run(options: &MemoryOptions) -> Result<MemoryReport, String> {
    let dir = std::env::temp_dir().join(format!("agentls-bench-memory-{}", std::process::id()));
    let result = measure(options, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure(options: &MemoryOptions, dir: &std::path::Path) -> Result<MemoryReport, String> {
    let root = dir.join("project");
    std::fs::create_dir_all(root.join("src")).map_err(|e| e.to_string())?;
    let root = root.canonicalize().map_err(|e| e.to_string())?;
    let state = dir.join("state");
    let (id, history_items) = write_session(options.history_tokens, &state, &root)?;

    let client = start_agentls(
        &root,
        json!({"stateDir": state, "provider": {"model": "bench-model"}}),
        "error",
    )
    .await?;
    let pid = client.child_id().ok_or("no child pid")?;
    // Idle as a user's editor sees it: initialized, the index built and the model's
    // vocabulary built (its warm-up at `initialized`), nothing open.
    loop {
        let ws = client
            .request("agentls/debug/workspace", json!({}))
            .await
            .map_err(|e| e.to_string())?;
        if ws["status"] == "ready" && ws["tokenizer"]["built"] == true {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let idle = rss(pid)?;
    let idle_split = status_fields(pid, "RssAnon:", "RssFile:")?;

    let buffer_bytes = open_buffers(&client, &root, options).await?;
    let buffers_rss = rss(pid)?;
    let loaded = client
        .request("agent/session/load", json!({"sessionId": id}))
        .await
        .map_err(|e| e.to_string())?;
    if loaded["items"].as_array().map_or(0, Vec::len) == 0 {
        return Err("the session did not load".into());
    }
    let session_rss = rss(pid)?;
    // What the model would be sent: the whole history assembled once.
    client
        .request("agent/session/context", json!({"sessionId": id}))
        .await
        .map_err(|e| e.to_string())?;
    let loaded_rss = rss(pid)?;
    let _ = client.shutdown().await;
    Ok(MemoryReport {
        idle,
        idle_split,
        buffers: buffers_rss,
        session: session_rss,
        loaded: loaded_rss,
        buffer_bytes,
        history_items,
    })
}

/// A session of about `tokens` tokens, written the way the server writes it: its id and
/// how many items it holds.
fn write_session(
    tokens: usize,
    state: &std::path::Path,
    root: &std::path::Path,
) -> Result<(String, usize), String> {
    let (entries, _) = crate::bench_compaction::history(tokens);
    let store = SessionStore::for_workspace(state, root);
    let id = session_log::new_session_id();
    let mut log = store.open(&id).map_err(|e| e.to_string())?;
    log.append(&Event::SessionStarted {
        session_id: id.clone(),
        model: "bench-model".into(),
        workspace: root.to_string_lossy().into_owned(),
        at: session_log::now_millis(),
        parent: None,
        forked_from: None,
    })
    .map_err(|e| e.to_string())?;
    for entry in &entries {
        log.append(&Event::Item {
            turn_id: "t".into(),
            entry: entry.clone(),
        })
        .map_err(|e| e.to_string())?;
    }
    log.sync().map_err(|e| e.to_string())?;
    Ok((id, entries.len()))
}

/// Opens `options.buffers` generated buffers and reads each once; their bytes.
async fn open_buffers(
    client: &LspClient,
    root: &std::path::Path,
    options: &MemoryOptions,
) -> Result<usize, String> {
    let mut buffer_bytes = 0;
    for b in 0..options.buffers {
        let text: String = (0..options.lines)
            .map(|i| format!("fn f_{b}_{i}(x: u32) -> u32 {{ x.wrapping_add({i}) }}\n"))
            .collect();
        buffer_bytes += text.len();
        let uri = tower_lsp::lsp_types::Url::from_file_path(root.join(format!("src/m{b}.rs")))
            .map_err(|()| "not absolute".to_string())?;
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": text}}),
            )
            .await
            .map_err(|e| e.to_string())?;
    }
    // What the server holds for a buffer once something read it (the syntax tree is built
    // lazily, at the first read).
    for b in 0..options.buffers {
        let uri = tower_lsp::lsp_types::Url::from_file_path(root.join(format!("src/m{b}.rs")))
            .map_err(|()| "not absolute".to_string())?;
        client
            .request(
                "agentls/debug/syntax",
                json!({"uri": uri, "position": {"line": 1, "character": 3}}),
            )
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(buffer_bytes)
}

pub fn print(options: &MemoryOptions, report: &MemoryReport) {
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!("memory of agentls (VmRSS now / VmHWM peak):");
    println!(
        "  idle: initialized, indexed, vocabulary built  {:>7.1} MB / {:>7.1} MB",
        mb(report.idle.0),
        mb(report.idle.1)
    );
    println!(
        "    of which allocated (RssAnon) {:.1} MB, program and libraries mapped (RssFile) {:.1} MB",
        mb(report.idle_split.0),
        mb(report.idle_split.1)
    );
    println!(
        "  + {} buffers × {} lines ({:.1} MB of text), parsed  {:>7.1} MB / {:>7.1} MB",
        options.buffers,
        options.lines,
        report.buffer_bytes as f64 / 1_048_576.0,
        mb(report.buffers.0),
        mb(report.buffers.1)
    );
    println!(
        "  + a session of {} items / {} tokens, loaded  {:>7.1} MB / {:>7.1} MB",
        report.history_items,
        options.history_tokens,
        mb(report.session.0),
        mb(report.session.1)
    );
    println!(
        "  + its context assembled (all of the above: loaded)  {:>7.1} MB / {:>7.1} MB",
        mb(report.loaded.0),
        mb(report.loaded.1)
    );
}
