//! A shell command's process, for the `shell` tool (run to its end, `shell.rs`) and for
//! background commands (`background.rs`): started in the user's shell in a process group of
//! its own, confined and without the hidden variables; its output merged, and kept within
//! bounds; watched until it ends or its group is killed. Apart from `shell.rs` so that
//! `shell` can start a background command without the two files naming each other.

use std::ffi::OsStr;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use agentls_core::position::{ceil_char_boundary, floor_char_boundary};
use agentls_core::sandbox::SandboxPolicy;
use agentls_core::tool_info::{error, ToolError};

use crate::process_groups::GroupGuard;

/// How long output is still read after the shell exited, before whatever it left running in
/// the background (and holding the pipes open) is killed: `server &` must not hang the turn.
const SHELL_EXIT_GRACE: Duration = Duration::from_millis(250);
/// How long output is still read after the process group was killed.
const KILLED_DRAIN: Duration = Duration::from_millis(500);
/// A command's output kept in memory is bounded: `yes` for two minutes must not exhaust it.
const MIN_KEPT_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// Shell output kept in a tool result before the history's own truncation.
pub(crate) const SHELL_OUTPUT_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

/// What a command's process starts with beyond its command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChildSetup<'a> {
    /// Variables it must not see (the provider's key).
    pub hidden_env: &'a [String],
    /// The sandbox it runs in; None: unconfined.
    pub sandbox: Option<&'a SandboxPolicy>,
}

/// The command started in a process group of its own, with no terminal to wait on, without
/// the hidden variables, and confined to the sandbox when there is one.
pub(crate) fn spawn(command: &str, cwd: &Path, setup: ChildSetup<'_>) -> Result<Child, ToolError> {
    let ChildSetup {
        hidden_env,
        sandbox,
    } = setup;
    if !cwd.is_dir() {
        return Err(error(format!(
            "cannot run `{command}`: the working directory {} does not exist",
            cwd.display()
        )));
    }
    let mut shell = tokio::process::Command::new(user_shell());
    // A group of its own, so a kill reaches everything the command started.
    crate::process_groups::own_group(&mut shell);
    // The provider's key must not reach a command (`env` would print it to the model, the
    // editor and the session log).
    for name in hidden_env {
        shell.env_remove(name);
    }
    if let Some(policy) = sandbox {
        crate::sandbox::confine(shell.as_std_mut(), policy).map_err(|err| {
            error(format!(
                "cannot run `{command}`: the sandbox cannot be set up: {err}"
            ))
        })?;
    }
    shell
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Nothing may wait for a human at a terminal: pagers print, git does not prompt.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .spawn()
        .map_err(|err| {
            error(format!(
                "cannot run `{command}` in {}: {err}",
                cwd.display()
            ))
        })
}

/// stdout and stderr as one stream of text chunks, in arrival order, and their readers.
pub(crate) fn merged_output(child: &mut Child) -> (mpsc::Receiver<String>, Vec<JoinHandle<()>>) {
    // A small bound: a command printing faster than the output is consumed waits for it.
    let (sender, receiver) = mpsc::channel::<String>(64);
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, sender.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, sender.clone())));
    }
    (receiver, readers)
}

/// When a command is stopped from outside.
pub(crate) struct Limits<'a> {
    pub(crate) timeout: Duration,
    pub(crate) cancel: &'a CancellationToken,
}

/// What watching a command saw until it ended or was killed.
pub(crate) struct Watched {
    pub(crate) ending: Ending,
    pub(crate) status: Option<ExitStatus>,
    /// Its output pipes were still open (killed, or something it left running holds them).
    pipes_open: bool,
    /// It exited, and what it left running in the background was killed.
    pub(crate) left_running_killed: bool,
}

/// Passes the output on until the command exits with its pipes closed, or the timeout, a
/// cancel or the grace after its exit kills its group. Err only when waiting fails.
pub(crate) async fn watch(
    mut wait: Pin<&mut impl Future<Output = std::io::Result<ExitStatus>>>,
    chunks: &mut mpsc::Receiver<String>,
    take: &mut impl FnMut(&str),
    group: &mut GroupGuard,
    limits: &Limits<'_>,
) -> std::io::Result<Watched> {
    let mut watched = Watched {
        ending: Ending::Exited,
        status: None,
        pipes_open: true,
        left_running_killed: false,
    };
    let deadline = tokio::time::sleep(limits.timeout);
    let grace = tokio::time::sleep(Duration::MAX);
    tokio::pin!(deadline, grace);
    loop {
        if watched.status.is_some() && !watched.pipes_open {
            return Ok(watched);
        }
        tokio::select! {
            biased;
            _ = limits.cancel.cancelled() => {
                group.kill();
                watched.ending = Ending::Cancelled;
                return Ok(watched);
            }
            _ = &mut deadline => {
                group.kill();
                watched.ending = Ending::TimedOut;
                return Ok(watched);
            }
            chunk = chunks.recv(), if watched.pipes_open => match chunk {
                Some(chunk) => take(&chunk),
                None => watched.pipes_open = false,
            },
            exited = &mut wait, if watched.status.is_none() => {
                watched.status = Some(exited?);
                if let Some(deadline) = tokio::time::Instant::now().checked_add(SHELL_EXIT_GRACE) {
                    grace.as_mut().reset(deadline);
                }
            }
            _ = &mut grace, if watched.status.is_some() && watched.pipes_open => {
                group.kill();
                watched.left_running_killed = true;
                return Ok(watched);
            }
        }
    }
}

/// After a kill: what the group wrote before dying, still in the pipes, and its exit status
/// if it comes soon. The status the command ended with.
pub(crate) async fn settle(
    wait: Pin<&mut impl Future<Output = std::io::Result<ExitStatus>>>,
    chunks: &mut mpsc::Receiver<String>,
    take: &mut impl FnMut(&str),
    watched: &Watched,
) -> Option<ExitStatus> {
    if watched.pipes_open {
        let _ = tokio::time::timeout(KILLED_DRAIN, async {
            while let Some(chunk) = chunks.recv().await {
                take(&chunk);
            }
        })
        .await;
    }
    match watched.status {
        Some(status) => Some(status),
        None => tokio::time::timeout(KILLED_DRAIN, wait)
            .await
            .ok()
            .and_then(Result::ok),
    }
}

/// `$SHELL` when it is a POSIX-like shell, which reads `-c` as expected; fish or nushell
/// would not run the same command line, so they fall back to `/bin/sh`.
fn user_shell() -> PathBuf {
    const POSIX_LIKE: [&str; 6] = ["sh", "bash", "zsh", "dash", "ksh", "ash"];
    std::env::var_os("SHELL")
        .map(PathBuf::from)
        .filter(|shell| {
            shell.is_absolute()
                && shell
                    .file_name()
                    .and_then(OsStr::to_str)
                    .is_some_and(|name| POSIX_LIKE.contains(&name))
                && shell.is_file()
        })
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// Reads a pipe to its end, sending text chunks. A multi-byte character split between two
/// reads is held back until it is whole, so no chunk shows a spurious `�`.
async fn pump(mut pipe: impl AsyncRead + Unpin, sender: mpsc::Sender<String>) {
    let mut buffer = vec![0u8; 8192];
    let mut pending = Vec::new();
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                pending.extend_from_slice(&buffer[..read]);
                let text = take_complete_utf8(&mut pending);
                if !text.is_empty() && sender.send(text).await.is_err() {
                    return;
                }
            }
        }
    }
    if !pending.is_empty() {
        let _ = sender
            .send(String::from_utf8_lossy(&pending).into_owned())
            .await;
    }
}

/// The text of `pending` up to an incomplete character at its end, which stays in `pending`.
/// Invalid bytes become `�`.
fn take_complete_utf8(pending: &mut Vec<u8>) -> String {
    let mut text = String::new();
    let mut start = 0;
    loop {
        match std::str::from_utf8(&pending[start..]) {
            Ok(valid) => {
                text.push_str(valid);
                start = pending.len();
                break;
            }
            Err(err) => {
                let valid_end = start + err.valid_up_to();
                text.push_str(&String::from_utf8_lossy(&pending[start..valid_end]));
                match err.error_len() {
                    Some(invalid) => {
                        text.push(char::REPLACEMENT_CHARACTER);
                        start = valid_end + invalid;
                    }
                    None => {
                        start = valid_end;
                        break;
                    }
                }
            }
        }
    }
    pending.drain(..start);
    text
}

/// A command's output held in bounded memory: all of it up to a cap, beyond which the head
/// and a rolling tail are kept and the middle counted.
pub(crate) struct KeptOutput {
    head: String,
    tail: String,
    dropped_bytes: usize,
    half: usize,
}

impl KeptOutput {
    pub(crate) fn new(max_output_bytes: usize) -> KeptOutput {
        KeptOutput {
            head: String::new(),
            tail: String::new(),
            dropped_bytes: 0,
            half: max_output_bytes.max(MIN_KEPT_OUTPUT_BYTES),
        }
    }

    pub(crate) fn push(&mut self, mut chunk: &str) {
        if self.head.len() < self.half {
            let room = floor_char_boundary(chunk, self.half - self.head.len());
            self.head.push_str(&chunk[..room]);
            chunk = &chunk[room..];
        }
        self.tail.push_str(chunk);
        if self.tail.len() > 2 * self.half {
            let cut = ceil_char_boundary(&self.tail, self.tail.len() - self.half);
            self.dropped_bytes += cut;
            self.tail.drain(..cut);
        }
    }

    pub(crate) fn finish(self) -> String {
        if self.dropped_bytes == 0 {
            return self.head + &self.tail;
        }
        format!(
            "{}\n…{} bytes of output not kept…\n{}",
            self.head, self.dropped_bytes, self.tail
        )
    }
}

/// The innermost workspace root of `roots` that holds `dir` (else the first).
pub(crate) fn root_holding<'a>(roots: &'a [PathBuf], dir: &Path) -> &'a Path {
    roots
        .iter()
        .filter(|root| dir.starts_with(root))
        .max_by_key(|root| root.as_os_str().len())
        .unwrap_or(&roots[0])
}

/// A protected path as it was before a sandboxed command, where the mount namespace cannot
/// hold it: one that is not there cannot be made read-only (one the command creates is
/// removed after it), and a symlink's mount holds where it leads, not the link (a link the
/// command replaces, e.g. `.git/hooks` pointing at a shared hooks directory, is put back).
#[derive(Debug, Clone)]
pub(crate) enum ProtectedBefore {
    Absent(PathBuf),
    Link { path: PathBuf, target: PathBuf },
}

/// The protected paths the command could create or replace, as they are before it.
pub(crate) fn protected_before(sandbox: Option<&SandboxPolicy>) -> Vec<ProtectedBefore> {
    let Some(policy) = sandbox else {
        return Vec::new();
    };
    policy
        .protected
        .iter()
        .filter_map(|path| match std::fs::symlink_metadata(path) {
            Err(_) => Some(ProtectedBefore::Absent(path.clone())),
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(path).ok()?;
                Some(ProtectedBefore::Link {
                    path: path.clone(),
                    target,
                })
            }
            Ok(_) => None,
        })
        .collect()
}

/// What the sandbox undid after a command: the paths it created (removed) and the links it
/// replaced (put back).
#[derive(Debug, Default)]
pub(crate) struct PutBack {
    pub removed: Vec<PathBuf>,
    pub relinked: Vec<PathBuf>,
}

impl PutBack {
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.relinked.is_empty()
    }

    /// The note for the model and the user, e.g. `[the sandbox removed .git/hooks/x: …]`.
    pub fn note(&self) -> String {
        let names = |paths: &[PathBuf]| -> String {
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            names.join(", ")
        };
        let mut done = Vec::new();
        if !self.removed.is_empty() {
            done.push(format!("removed {}", names(&self.removed)));
        }
        if !self.relinked.is_empty() {
            done.push(format!("put back the link {}", names(&self.relinked)));
        }
        format!(
            "[the sandbox {}: a sandboxed command may not create or replace git's hooks or config, .agents/ or .mcp.json]",
            done.join(" and ")
        )
    }

    /// Why the call failed, for `sandbox_denied`.
    pub fn denial(&self) -> String {
        let all: Vec<String> = self
            .removed
            .iter()
            .chain(&self.relinked)
            .map(|p| p.display().to_string())
            .collect();
        format!(
            "the command created or replaced {}, which a sandboxed command may not",
            all.join(", ")
        )
    }
}

/// Undoes what the command did to the protected paths of `before`.
pub(crate) fn put_back_protected(before: &[ProtectedBefore]) -> PutBack {
    let mut done = PutBack::default();
    for state in before {
        match state {
            ProtectedBefore::Absent(path) => {
                if std::fs::symlink_metadata(path).is_err() {
                    continue;
                }
                match remove_any(path) {
                    Ok(()) => done.removed.push(path.clone()),
                    Err(err) => tracing::warn!(
                        "a sandboxed command created {}, which cannot be removed: {err}",
                        path.display()
                    ),
                }
            }
            ProtectedBefore::Link { path, target } => {
                if std::fs::read_link(path).is_ok_and(|now| now == *target) {
                    continue;
                }
                let relinked = remove_any(path)
                    .or_else(|e| {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    })
                    .and_then(|()| std::os::unix::fs::symlink(target, path));
                match relinked {
                    Ok(()) => done.relinked.push(path.clone()),
                    Err(err) => tracing::warn!(
                        "a sandboxed command replaced the link {}, which cannot be put back: {err}",
                        path.display()
                    ),
                }
            }
        }
    }
    done
}

/// Removes a file, link or directory tree (a link is removed, never followed).
fn remove_any(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_are_held_back_until_whole() {
        let bytes = "é€".as_bytes();
        let mut pending = bytes[..1].to_vec();
        assert_eq!(take_complete_utf8(&mut pending), "");
        pending.extend_from_slice(&bytes[1..3]);
        assert_eq!(take_complete_utf8(&mut pending), "é");
        pending.extend_from_slice(&bytes[3..]);
        pending.extend_from_slice(b"\xffok");
        assert_eq!(take_complete_utf8(&mut pending), "€\u{fffd}ok");
        assert!(pending.is_empty());
    }

    #[test]
    fn kept_output_is_bounded() {
        let mut kept = KeptOutput::new(0);
        let line = "y\n".repeat(1024);
        for _ in 0..(6 * MIN_KEPT_OUTPUT_BYTES / line.len()) {
            kept.push(&line);
        }
        let text = kept.finish();
        assert!(text.len() <= 3 * MIN_KEPT_OUTPUT_BYTES + 100);
        assert!(text.contains("bytes of output not kept"));
    }
}
