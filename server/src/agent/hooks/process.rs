//! One hook command run: `sh -c` in the workspace with the event's JSON on stdin, in a
//! process group of its own (killed on timeout or cancel), its output read up to a cap.

use std::path::Path;
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::MAX_OUTPUT_BYTES;
use crate::process_groups::GroupGuard;
use agentls_core::hooks::{Finished, Hook};

/// One hook process: `sh -c command` in `root`, `stdin` written, stdout and stderr read
/// (each up to `MAX_OUTPUT_BYTES`), killed with its process group at the timeout or on
/// cancel. Never waits past either: a hook that leaves a child holding its pipes is killed
/// with its group once it exits.
pub(super) async fn run_one(
    hook: &Hook,
    stdin: &str,
    root: &Path,
    hidden_env: &[String],
    cancel: &CancellationToken,
) -> Finished {
    let mut command = tokio::process::Command::new("sh");
    for name in hidden_env {
        command.env_remove(name);
    }
    crate::process_groups::own_group(&mut command);
    let spawned = command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(root)
        .env("AGENTLS_PROJECT_DIR", root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            return Finished {
                spawn_error: Some(err.to_string()),
                ..Finished::default()
            }
        }
    };
    let mut group = GroupGuard::new(child.id());
    if let Some(mut pipe) = child.stdin.take() {
        let input = stdin.as_bytes().to_vec();
        // A hook that does not read its input must not block on a full pipe.
        tokio::spawn(async move {
            let _ = pipe.write_all(&input).await;
        });
    }
    let stdout = child.stdout.take().map(|p| tokio::spawn(read_capped(p)));
    let stderr = child.stderr.take().map(|p| tokio::spawn(read_capped(p)));
    let mut finished = Finished::default();
    tokio::select! {
        status = child.wait() => {
            finished.code = status.ok().and_then(|s| s.code());
        }
        () = tokio::time::sleep(hook.timeout) => finished.timed_out = true,
        () = cancel.cancelled() => finished.cancelled = true,
    }
    // Whatever is left of the group goes: the readers then see the pipes close.
    group.kill();
    let _ = child.wait().await;
    group.disarm();
    if let Some(reader) = stdout {
        finished.stdout = reader.await.unwrap_or_default();
    }
    if let Some(reader) = stderr {
        finished.stderr = reader.await.unwrap_or_default();
    }
    finished
}

async fn read_capped(mut pipe: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
