//! `agentls-dev bench flood`: agentls's peak memory while a sandboxed `shell` call floods
//! its output (`yes` for N seconds, issue 41's eighth hole: every chunk was forwarded to the
//! editor, and the queue grew to gigabytes), beside the same turn with a quiet command. A
//! real agentls child, the fake provider scripting the call, read from /proc (VmHWM).

use serde_json::json;

use crate::fake_provider::FakeProvider;
use crate::lsp_client::start_agentls;

pub struct FloodReport {
    pub seconds: u32,
    /// Peak RSS (KiB) of the turn whose command prints nothing.
    pub quiet_peak_kib: u64,
    /// Peak RSS (KiB) of the turn whose command floods.
    pub flood_peak_kib: u64,
    /// Bytes of the flooded call's output that reached the editor in updates.
    pub streamed_bytes: usize,
}

/// Peak RSS of a fresh agentls that runs `command` as one `shell` call; with the bytes of
/// `toolCallUpdate` output it streamed.
async fn peak_of(command: &str, dir: &std::path::Path) -> Result<(u64, usize), String> {
    let root = dir.join("project");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let fake = FakeProvider::start().await;
    let arguments = json!({"command": command, "timeout_ms": 600_000}).to_string();
    fake.push_call_then_text("call_1", "shell", &arguments, "Done.");
    let options = json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "bench-model"},
        "stateDir": dir.join("state"),
        "approval": "full-auto",
    });
    let client = start_agentls(&root, options, "error").await?;
    let pid = client.child_id().ok_or("agentls is not running")?;
    let session = client.new_session().await?;
    let updates = client.prompt_to_end(&session, "Run it.").await?;
    let streamed = updates
        .iter()
        .filter(|u| u["kind"] == "toolCallUpdate" && u["status"] == "in_progress")
        .filter_map(|u| u["output"].as_str())
        .map(str::len)
        .sum();
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or("no VmHWM in /proc/PID/status")?;
    Ok((peak, streamed))
}

pub async fn run(seconds: u32) -> Result<FloodReport, String> {
    let dir = std::env::temp_dir().join(format!("agentls-bench-flood-{}", std::process::id()));
    let result = async {
        let (quiet_peak_kib, _) = peak_of(&format!("sleep {seconds}"), &dir.join("quiet")).await?;
        let (flood_peak_kib, streamed_bytes) =
            peak_of(&format!("timeout {seconds} yes; true"), &dir.join("flood")).await?;
        Ok(FloodReport {
            seconds,
            quiet_peak_kib,
            flood_peak_kib,
            streamed_bytes,
        })
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

pub fn print(report: &FloodReport) {
    println!(
        "agentls peak RSS, one shell call of {} s: quiet (sleep) {:.1} MB; flooding (yes) {:.1} MB; streamed to the editor {} KiB",
        report.seconds,
        report.quiet_peak_kib as f64 / 1024.0,
        report.flood_peak_kib as f64 / 1024.0,
        report.streamed_bytes / 1024
    );
}
