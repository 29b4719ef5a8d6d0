//! `agentls-dev bench keystroke`: the keystroke path measured against its floor.
//!
//! In process, the same single-character edits spread over a generated Rust file go (a)
//! through the document core (LSP position conversion, staged rope edit, `Tree::edit`; the
//! reparse waits for a read, which comes once after the burst) and (b) through a bare ropey
//! `Rope` + an eager tree-sitter reparse per edit, computed by hand.
//!
//! Over LSP, a real agentls child and a tower-lsp server that does nothing (the floor) each
//! receive the same burst of didChange notifications, in alternating order round by round;
//! their CPU per edit is read from the process's CPU-time clock, and agentls is then asked
//! for the document: the time to that answer is what a read after a burst (a paste, a
//! formatter, a replace-all) waits.

use agentls_core::document::{read_chunk, Document, TextChange, DEFAULT_MAX_SYNTAX_BYTES};
use agentls_core::language::Language;
use agentls_core::position::PositionEncoding;
use ropey::Rope;
use std::time::{Duration, Instant};
use tower_lsp::lsp_types::{Position, Range};
use tree_sitter::{InputEdit, Parser, Point};

pub struct KeystrokeOptions {
    pub lines: usize,
    pub edits: usize,
    pub rounds: usize,
    /// Edits of the burst sent over LSP.
    pub lsp_edits: usize,
    /// The agentls binary measured over LSP (another build, to compare); this one if None.
    pub server: Option<std::path::PathBuf>,
    /// agentls's workspace root: the burst waits for its file and symbol indexes.
    pub workspace: Option<std::path::PathBuf>,
}

impl Default for KeystrokeOptions {
    fn default() -> Self {
        KeystrokeOptions {
            lines: 10_000,
            edits: 10_000,
            rounds: 5,
            lsp_edits: 20_000,
            server: None,
            workspace: None,
        }
    }
}

pub struct KeystrokeReport {
    pub file_bytes: usize,
    /// The edits through the document core (no parse).
    pub core: Duration,
    /// The read after them: one reparse of what they changed.
    pub core_read: Duration,
    pub bare: Duration,
}

/// A Rust file of about `lines` lines: structs, impls, functions, comments.
pub fn generate_rust(lines: usize) -> String {
    let mut out = String::with_capacity(lines * 32);
    let mut n = 0;
    while out.lines().count() < lines {
        out.push_str(&format!(
            "/// Item number {n}.\npub struct Item{n} {{\n    id: u64,\n    name: String,\n}}\n\n\
             impl Item{n} {{\n    pub fn new(id: u64) -> Self {{\n        let name = format!(\"item-{{}}\", id);\n        \
             Self {{ id, name }}\n    }}\n\n    pub fn score(&self) -> u64 {{\n        \
             self.id.wrapping_mul({n}).rotate_left(3) + self.name.len() as u64\n    }}\n}}\n\n"
        ));
        n += 1;
    }
    out
}

/// One keystroke: type `typed` at (line, column), or, for None, backspace the character
/// typed there by the keystroke before.
#[derive(Clone, Copy)]
struct Keystroke {
    line: usize,
    column: usize,
    typed: Option<char>,
}

/// Deterministic keystrokes spread over the file: a character typed at a random spot, then
/// backspaced (a typo fixed). Typing only would pile thousands of syntax errors into the
/// file, and tree-sitter's error recovery over them, not the document core, would be
/// measured; real buffers hold a few errors near the cursor.
fn keystrokes(text: &str, edits: usize) -> Vec<Keystroke> {
    let line_lengths: Vec<usize> = text.lines().map(str::len).collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut out = Vec::with_capacity(edits);
    while out.len() < edits {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let line = (seed as usize) % line_lengths.len();
        let column = ((seed >> 32) as usize) % (line_lengths[line] + 1);
        let typed = TYPED[out.len() / 2 % TYPED.len()] as char;
        out.push(Keystroke {
            line,
            column,
            typed: Some(typed),
        });
        if out.len() < edits {
            out.push(Keystroke {
                line,
                column,
                typed: None,
            });
        }
    }
    out
}

const TYPED: &[u8] = b"a_1 ;{";

fn run_core(text: &str, keys: &[Keystroke]) -> (Duration, Duration, String) {
    let mut doc = Document::new(text, 0, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
    doc.snapshot();
    let started = Instant::now();
    for (i, key) in keys.iter().enumerate() {
        let start = Position::new(key.line as u32, key.column as u32);
        // Typing replaces nothing; a backspace replaces the typed character with nothing.
        let (end, text) = match key.typed {
            Some(c) => (start, c.to_string()),
            None => (
                Position::new(start.line, start.character + 1),
                String::new(),
            ),
        };
        let change = TextChange {
            range: Some(Range::new(start, end)),
            text,
        };
        if let Err(err) = doc.apply_changes(std::slice::from_ref(&change), PositionEncoding::Utf16)
        {
            panic!("bench edit {i} failed: {err}");
        }
    }
    let edits = started.elapsed();
    let read = Instant::now();
    let snapshot = doc.snapshot();
    let read = read.elapsed();
    assert!(snapshot.tree.is_some(), "the read has a tree");
    (edits, read, doc.rope().to_string())
}

fn run_bare(text: &str, keys: &[Keystroke]) -> (Duration, String) {
    let mut rope = Rope::from_str(text);
    let mut parser = Parser::new();
    let grammar = Language::Rust.grammar().expect("rust grammar");
    parser.set_language(&grammar).expect("load rust grammar");
    let mut tree = parser.parse(text, None).expect("parse");
    let started = Instant::now();
    for key in keys {
        let char_idx = rope.line_to_char(key.line) + key.column;
        let byte = rope.char_to_byte(char_idx);
        let at = Point::new(key.line, key.column);
        let after = Point::new(key.line, key.column + 1);
        let edit = match key.typed {
            Some(c) => {
                rope.insert_char(char_idx, c);
                InputEdit {
                    start_byte: byte,
                    old_end_byte: byte,
                    new_end_byte: byte + 1,
                    start_position: at,
                    old_end_position: at,
                    new_end_position: after,
                }
            }
            None => {
                rope.remove(char_idx..char_idx + 1);
                InputEdit {
                    start_byte: byte,
                    old_end_byte: byte + 1,
                    new_end_byte: byte,
                    start_position: at,
                    old_end_position: after,
                    new_end_position: at,
                }
            }
        };
        tree.edit(&edit);
        let r = &rope;
        tree = parser
            .parse_with_options(&mut |b, _| read_chunk(r, b), Some(&tree), None)
            .expect("reparse");
    }
    (started.elapsed(), rope.to_string())
}

pub fn keystroke(options: &KeystrokeOptions) -> KeystrokeReport {
    let text = generate_rust(options.lines);
    let keys = keystrokes(&text, options.edits);
    let mut core_times = Vec::new();
    let mut read_times = Vec::new();
    let mut bare_times = Vec::new();
    for round in 0..options.rounds.max(1) {
        // Alternate the order so neither side always runs second, on a warm cache.
        let ((bare, bare_text), (core, read, core_text)) = if round % 2 == 0 {
            (run_bare(&text, &keys), run_core(&text, &keys))
        } else {
            let core = run_core(&text, &keys);
            (run_bare(&text, &keys), core)
        };
        assert_eq!(
            core_text, bare_text,
            "both paths must produce the same text"
        );
        core_times.push(core);
        read_times.push(read);
        bare_times.push(bare);
    }
    core_times.sort();
    read_times.sort();
    bare_times.sort();
    KeystrokeReport {
        file_bytes: text.len(),
        core: core_times[core_times.len() / 2],
        core_read: read_times[read_times.len() / 2],
        bare: bare_times[bare_times.len() / 2],
    }
}

pub fn print_keystroke(options: &KeystrokeOptions, report: &KeystrokeReport) {
    let per = |d: Duration| d.as_secs_f64() * 1e6 / options.edits.max(1) as f64;
    println!(
        "keystroke: {} edits over a {}-line Rust file ({} bytes), median of {} rounds",
        options.edits,
        options.lines,
        report.file_bytes,
        options.rounds.max(1)
    );
    println!(
        "  document core (positions + rope + Tree::edit, no parse):  {:>8.1} ms total, {:>7.1} µs/edit",
        report.core.as_secs_f64() * 1e3,
        per(report.core)
    );
    println!(
        "  then one read (an incremental reparse of what changed):   {:>8.1} ms",
        report.core_read.as_secs_f64() * 1e3
    );
    println!(
        "  eager: bare ropey Rope + tree-sitter reparse per edit:    {:>8.1} ms total, {:>7.1} µs/edit",
        report.bare.as_secs_f64() * 1e3,
        per(report.bare)
    );
    println!(
        "  core + read / eager: {:.3}x",
        (report.core + report.core_read).as_secs_f64()
            / report.bare.as_secs_f64().max(f64::MIN_POSITIVE)
    );
}

/// The burst over LSP: CPU per edit of agentls and of a do-nothing tower-lsp server, and
/// the wait of a read that comes right after the burst.
pub struct LspKeystrokeReport {
    pub agentls_cpu_per_edit: Duration,
    pub floor_cpu_per_edit: Duration,
    pub read_after_burst: Duration,
    pub parses: u64,
    /// Each round's agentls and floor CPU per edit, in the order run.
    pub rounds: Vec<(Duration, Duration)>,
}

/// CPU time used so far by process `pid`, every thread's, to the nanosecond: the
/// process's CPU-time clock (`clock_getcpuclockid`); else user + system time from
/// `/proc/PID/stat`, in clock ticks (10 ms).
fn cpu_time(pid: u32) -> Result<Duration, String> {
    let mut clock: libc::clockid_t = 0;
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both calls only write through the pointers given, which point at locals.
    let precise = unsafe {
        libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) == 0
            && libc::clock_gettime(clock, &mut now) == 0
    };
    if precise {
        return Ok(Duration::new(now.tv_sec as u64, now.tv_nsec as u32));
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("cannot read the CPU time of {pid}: {e}"))?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let fields: Vec<&str> = text
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let (Some(utime), Some(stime)) = (tick(11), tick(12)) else {
        return Err(format!("unexpected /proc/{pid}/stat: {text:?}"));
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(Duration::from_micros((utime + stime) * 1_000_000 / hz))
}

/// Sends the burst to a server started with `args` and returns its CPU for the burst, the
/// wait of the request that follows it, and that request's answer. With a `workspace`
/// (agentls only), the burst waits until its file and symbol indexes are built.
async fn burst(
    exe: &std::path::Path,
    args: &[&str],
    workspace: Option<&std::path::Path>,
    text: &str,
    keys: &[Keystroke],
    read: (&str, serde_json::Value),
    then: Option<(&str, serde_json::Value)>,
) -> Result<(Duration, Duration, serde_json::Value), String> {
    use crate::lsp_client::LspClient;
    use serde_json::json;
    let client =
        LspClient::spawn(exe, args, &[("AGENTLS_LOG", "error")]).map_err(|e| e.to_string())?;
    let pid = client.child_id().ok_or("the server has no pid")?;
    let uri = "file:///bench/keystroke.rs";
    let mut initialize = json!({"capabilities": {"general": {"positionEncodings": ["utf-16"]}}});
    if let Some(root) = workspace {
        let root = tower_lsp::lsp_types::Url::from_directory_path(root)
            .map_err(|()| format!("{} is not an absolute directory", root.display()))?;
        initialize["rootUri"] = json!(root);
    }
    client
        .request("initialize", initialize)
        .await
        .map_err(|e| e.to_string())?;
    client
        .notify("initialized", json!({}))
        .await
        .map_err(|e| e.to_string())?;
    if workspace.is_some() {
        indexes_built(&client).await?;
    }
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": text}}),
        )
        .await
        .map_err(|e| e.to_string())?;
    // Settle: the open (and agentls's first parse) is not part of the burst.
    let _ = client.request(read.0, read.1.clone()).await;
    let before = cpu_time(pid)?;
    for (i, key) in keys.iter().enumerate() {
        let end = key.column + usize::from(key.typed.is_none());
        let change = json!({
            "range": {
                "start": {"line": key.line, "character": key.column},
                "end": {"line": key.line, "character": end},
            },
            "text": key.typed.map(String::from).unwrap_or_default(),
        });
        client
            .notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": 2 + i}, "contentChanges": [change]}),
            )
            .await
            .map_err(|e| e.to_string())?;
    }
    let started = Instant::now();
    let mut answer = client.request(read.0, read.1).await.unwrap_or_default();
    let wait = started.elapsed();
    let cpu = cpu_time(pid)?.saturating_sub(before);
    if let Some((method, params)) = then {
        answer = client.request(method, params).await.unwrap_or_default();
    }
    // Dropped, not shut down: the child is killed (a bare tower-lsp server refuses the
    // `"params": null` of the client's shutdown and exit).
    drop(client);
    Ok((cpu, wait, answer))
}

pub async fn keystroke_over_lsp(options: &KeystrokeOptions) -> Result<LspKeystrokeReport, String> {
    use serde_json::json;
    let text = generate_rust(options.lines);
    let keys = keystrokes(&text, options.lsp_edits.max(1));
    let per = |d: Duration| d / keys.len() as u32;
    // The read after the burst needs the syntax where the last edit was: it waits for every
    // edit and the reparse of what they changed, and answers a few lines (not the whole
    // document: the CPU of dumping 186 KB of text and its outline is no keystroke's).
    let uri = "file:///bench/keystroke.rs";
    let last = keys.last().ok_or("no keystrokes")?;
    let at = json!({"line": last.line, "character": last.column});
    let syntax = (
        "agentls/debug/syntax",
        json!({"uri": uri, "position": at, "range": {"start": at, "end": at}}),
    );
    // Afterwards (not counted): how many parses it took.
    let document = ("agentls/debug/document", json!({ "uri": uri }));
    let server = match &options.server {
        Some(path) => path.clone(),
        None => crate::lsp_client::agentls_binary()?,
    };
    let mut rounds = Vec::new();
    for round in 0..options.rounds.max(1) {
        // Alternate which server goes first: the machine may be busy with something else.
        let agentls_first = round % 2 == 0;
        let mut floor = None;
        if !agentls_first {
            floor = Some(null_burst(&text, &keys).await?);
        }
        let (agentls, wait, answer) = burst(
            &server,
            &[],
            options.workspace.as_deref(),
            &text,
            &keys,
            syntax.clone(),
            Some(document.clone()),
        )
        .await?;
        let floor = match floor {
            Some(floor) => floor,
            None => null_burst(&text, &keys).await?,
        };
        rounds.push((
            per(agentls),
            per(floor),
            wait,
            answer["parses"].as_u64().unwrap_or(0),
        ));
    }
    let median = |mut values: Vec<Duration>| {
        values.sort();
        values[values.len() / 2]
    };
    Ok(LspKeystrokeReport {
        agentls_cpu_per_edit: median(rounds.iter().map(|r| r.0).collect()),
        floor_cpu_per_edit: median(rounds.iter().map(|r| r.1).collect()),
        read_after_burst: median(rounds.iter().map(|r| r.2).collect()),
        parses: rounds.iter().map(|r| r.3).max().unwrap_or(0),
        rounds: rounds.iter().map(|r| (r.0, r.1)).collect(),
    })
}

/// Waits until agentls's file index and symbol index are built (a hang here shows as a
/// hang: nothing to measure without them); says what the symbol index holds.
async fn indexes_built(client: &crate::lsp_client::LspClient) -> Result<(), String> {
    loop {
        let ws = client
            .request("agentls/debug/workspace", serde_json::json!({}))
            .await
            .map_err(|e| e.to_string())?;
        let symbols = &ws["symbols"];
        if ws["status"] == "ready" && (symbols.is_null() || symbols["status"] == "ready") {
            eprintln!(
                "  (workspace: {} files indexed; symbol index: {} files, {} definitions)",
                ws["fileCount"], symbols["files"], symbols["definitions"]
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The floor's CPU for the burst.
async fn null_burst(text: &str, keys: &[Keystroke]) -> Result<Duration, String> {
    let hover = ("textDocument/hover", serde_json::json!({}));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let args = ["bench", "null-server"];
    let (cpu, _, _) = burst(&exe, &args, None, text, keys, hover, None).await?;
    Ok(cpu)
}

pub fn print_keystroke_over_lsp(options: &KeystrokeOptions, report: &LspKeystrokeReport) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "keystroke over LSP: a burst of {} didChange notifications, server CPU (its CPU-time clock), median of {} rounds",
        options.lsp_edits.max(1),
        report.rounds.len()
    );
    println!(
        "  agentls:                        {:>8.1} µs CPU/edit (the read after the burst included)",
        us(report.agentls_cpu_per_edit)
    );
    println!(
        "  do-nothing tower-lsp server:    {:>8.1} µs CPU/edit (the floor)",
        us(report.floor_cpu_per_edit)
    );
    println!(
        "  agentls / floor: {:.2}x (goal: at most 2x)",
        report.agentls_cpu_per_edit.as_secs_f64()
            / report
                .floor_cpu_per_edit
                .as_secs_f64()
                .max(f64::MIN_POSITIVE)
    );
    let each: Vec<String> = report
        .rounds
        .iter()
        .map(|(agentls, floor)| {
            format!(
                "{:.1}/{:.1} µs ({:.2}x)",
                us(*agentls),
                us(*floor),
                agentls.as_secs_f64() / floor.as_secs_f64().max(f64::MIN_POSITIVE)
            )
        })
        .collect();
    println!("  rounds, agentls/floor: {}", each.join(", "));
    println!(
        "  a read right after the burst (agentls/debug/syntax): {:.1} ms (goal: under 100 ms); parses so far: {}",
        report.read_after_burst.as_secs_f64() * 1e3,
        report.parses
    );
}

/// `agentls-dev bench startup`: how long `initialize` takes and how long the background index
/// takes, on a generated workspace of `files` files (100 per directory).
pub struct StartupReport {
    pub initialize: Duration,
    pub until_indexed: Duration,
    pub server_index_millis: u64,
    pub indexed_files: u64,
}

pub async fn startup(files: usize) -> Result<StartupReport, String> {
    use serde_json::json;
    let root = std::env::temp_dir().join(format!("agentls-bench-startup-{}", std::process::id()));
    let result = async {
        for i in 0..files {
            let dir = root.join(format!("d{:04}", i / 100));
            if i % 100 == 0 {
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            }
            std::fs::write(dir.join(format!("f{i}.rs")), "fn f() {}\n")
                .map_err(|e| e.to_string())?;
        }
        let exe = crate::lsp_client::agentls_binary()?;
        let client = crate::lsp_client::LspClient::spawn(&exe, &[], &[("AGENTLS_LOG", "warn")])
            .map_err(|e| e.to_string())?;
        let root_uri = tower_lsp::lsp_types::Url::from_file_path(&root)
            .map_err(|()| "temp dir is not absolute".to_string())?;
        let started = Instant::now();
        client
            .request(
                "initialize",
                json!({"rootUri": root_uri, "capabilities": {}}),
            )
            .await
            .map_err(|e| e.to_string())?;
        let initialize = started.elapsed();
        client
            .notify("initialized", json!({}))
            .await
            .map_err(|e| e.to_string())?;
        let workspace = loop {
            let ws = client
                .request("agentls/debug/workspace", json!({}))
                .await
                .map_err(|e| e.to_string())?;
            if ws["status"] == "ready" {
                break ws;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let until_indexed = started.elapsed();
        let _ = client.shutdown().await;
        Ok(StartupReport {
            initialize,
            until_indexed,
            server_index_millis: workspace["indexMillis"].as_u64().unwrap_or(0),
            indexed_files: workspace["fileCount"].as_u64().unwrap_or(0),
        })
    }
    .await;
    let _ = std::fs::remove_dir_all(&root);
    result
}

pub fn print_startup(report: &StartupReport) {
    println!("startup: workspace of {} files", report.indexed_files);
    println!(
        "  initialize round trip:            {:>8.2} ms",
        report.initialize.as_secs_f64() * 1e3
    );
    println!(
        "  initialize → index ready:         {:>8.1} ms (server-side walk {} ms)",
        report.until_indexed.as_secs_f64() * 1e3,
        report.server_index_millis
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_file_has_the_requested_lines_and_parses_cleanly() {
        let text = generate_rust(200);
        assert!(text.lines().count() >= 200);
        let mut doc = Document::new(&text, 0, Language::Rust, DEFAULT_MAX_SYNTAX_BYTES);
        assert!(!doc.tree().unwrap().root_node().has_error());
    }

    #[test]
    fn both_paths_apply_the_same_edits() {
        let text = generate_rust(50);
        let keys = keystrokes(&text, 201);
        let (_, _, core) = run_core(&text, &keys);
        let (_, bare) = run_bare(&text, &keys);
        assert_eq!(core, bare);
        // 100 typos fixed, one left standing.
        assert_eq!(core.len(), text.len() + 1);
    }
}
