//! `shell`: a command in the user's shell, in its own process group, output streamed and kept
//! within bounds, killed whole on timeout or cancel.

use std::ffi::OsStr;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use agentls_core::position::{ceil_char_boundary, floor_char_boundary};
use agentls_core::tool_info::{error, shorten, LedgerRecord, ToolError, ToolKind};
use agentls_core::truncate::{truncate_middle, TruncationPolicy};

use crate::host::{TerminalOutcome, TerminalRun};
use crate::process_groups::GroupGuard;
use crate::tools::registry::{text_arg, Effect, Prepared, Tool, ToolContext, ToolOutcome};
use crate::tools::snapshot;
use agentls_core::sandbox::SandboxPolicy;

/// How long output is still read after the shell exited, before whatever it left running in
/// the background (and holding the pipes open) is killed: `server &` must not hang the turn.
const SHELL_EXIT_GRACE: Duration = Duration::from_millis(250);
/// How long output is still read after the process group was killed.
const KILLED_DRAIN: Duration = Duration::from_millis(500);
/// A command's output kept in memory is bounded: `yes` for two minutes must not exhaust it.
const MIN_KEPT_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// How a `shell` call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutcome {
    /// stdout and stderr merged, cut head and tail, ending with a status line.
    pub output: String,
    /// `None` when the process was killed (timeout, cancellation, signal).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

/// `shell`: run `command` with the user's shell (`-c`) in `cwd`, stdin closed, stdout and
/// stderr merged in arrival order and passed to `on_output` as they come. The command runs in
/// its own process group, which is killed whole on timeout or cancellation. Err only when the
/// process cannot be started.
pub async fn run_shell(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    max_output_bytes: usize,
    on_output: impl Fn(&str) + Send + Sync + 'static,
    cancel: &CancellationToken,
    setup: ChildSetup<'_>,
) -> Result<ShellOutcome, ToolError> {
    let mut child = spawn(command, cwd, setup)?;
    // If this future is dropped mid-run (the turn's task aborted), the group dies with it.
    let mut group = GroupGuard::new(child.id());
    let (mut chunks, readers) = merged_output(&mut child);
    let mut kept = KeptOutput::new(max_output_bytes);
    let mut take = |chunk: &str| {
        on_output(chunk);
        kept.push(chunk);
    };
    let wait = child.wait();
    tokio::pin!(wait);
    let limits = Limits { timeout, cancel };
    let watched = watch(wait.as_mut(), &mut chunks, &mut take, &mut group, &limits)
        .await
        .map_err(|err| error(format!("waiting for `{command}` failed: {err}")))?;
    let status = settle(wait, &mut chunks, &mut take, &watched).await;
    // A process that left the group may hold a pipe open forever: stop reading it.
    for reader in readers {
        reader.abort();
    }
    // Killed already, or exited with the pipes closed: nothing is left for the guard.
    group.disarm();
    Ok(finish(
        kept.finish(),
        max_output_bytes,
        &watched,
        status,
        timeout,
    ))
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

/// The outcome: the kept output cut head and tail, then the status line.
fn finish(
    kept: String,
    max_output_bytes: usize,
    watched: &Watched,
    status: Option<ExitStatus>,
    timeout: Duration,
) -> ShellOutcome {
    let mut output = truncate_middle(
        &kept,
        TruncationPolicy::Bytes(max_output_bytes),
        agentls_core::tokens::TokenizerKind::default(),
    )
    .text;
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    if watched.left_running_killed {
        output.push_str("[processes the command left running in the background were killed]\n");
    }
    let ending = watched.ending;
    let exit_code = match ending {
        Ending::Exited => status.and_then(|status| status.code()),
        Ending::TimedOut | Ending::Cancelled => None,
    };
    output.push_str(&match ending {
        Ending::TimedOut => format!("[killed: timed out after {}s]", timeout.as_secs_f64()),
        Ending::Cancelled => "[killed: the turn was cancelled]".to_string(),
        Ending::Exited => match (exit_code, status) {
            (Some(code), _) => format!("[exit code {code}]"),
            (None, Some(status)) => {
                use std::os::unix::process::ExitStatusExt;
                match status.signal() {
                    Some(signal) => format!("[killed by signal {signal}]"),
                    None => "[exit status unknown]".to_string(),
                }
            }
            (None, None) => "[exit status unknown]".to_string(),
        },
    });
    ShellOutcome {
        output,
        exit_code,
        timed_out: ending == Ending::TimedOut,
        cancelled: ending == Ending::Cancelled,
    }
}

/// A command run in the editor's terminal, worded like one run here: its output cut head and
/// tail, then the status line.
fn terminal_outcome(ran: TerminalOutcome) -> ShellOutcome {
    let mut output = truncate_middle(
        &ran.output,
        TruncationPolicy::Bytes(SHELL_OUTPUT_BYTES),
        agentls_core::tokens::TokenizerKind::default(),
    )
    .text;
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(&if ran.timed_out {
        "[killed: timed out]".to_string()
    } else if ran.cancelled {
        "[killed: the turn was cancelled]".to_string()
    } else {
        match (ran.exit_code, &ran.signal) {
            (Some(code), _) => format!("[exit code {code}]"),
            (None, Some(signal)) => format!("[killed by signal {signal}]"),
            (None, None) => "[exit status unknown]".to_string(),
        }
    });
    ShellOutcome {
        output,
        exit_code: ran.exit_code.filter(|_| !ran.timed_out && !ran.cancelled),
        timed_out: ran.timed_out,
        cancelled: ran.cancelled,
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

/// Shell output kept in a tool result before the history's own truncation.
pub(crate) const SHELL_OUTPUT_BYTES: usize = 64 * 1024;
const SHELL_DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

pub struct Shell;

/// `shell`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShellInput {
    pub command: String,
    pub cwd: Option<String>,
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Start it and return at once with its id and first output (`tools::background`).
    pub background: Option<bool>,
}

#[async_trait::async_trait]
impl Tool for Shell {
    const NAME: &'static str = "shell";
    type Input = ShellInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn title(&self, arguments: &Value) -> String {
        let Some(command) = text_arg(arguments, "command") else {
            return "Run a command".to_string();
        };
        if arguments["background"] == Value::Bool(true) {
            return format!("Start `{}` in the background", shorten(command));
        }
        match text_arg(arguments, "cwd").map(str::trim) {
            Some(cwd) if cwd != "." && cwd != "./" => {
                format!("Run `{}` in {}", shorten(command), shorten(cwd))
            }
            _ => format!("Run `{}`", shorten(command)),
        }
    }

    fn ledger_record(&self) -> LedgerRecord {
        LedgerRecord::Command
    }

    /// The approval rules remember shell answers per command prefix.
    fn command<'a>(&self, arguments: &'a Value) -> Option<&'a str> {
        Some(arguments["command"].as_str().unwrap_or(""))
    }

    async fn run(&self, cx: &ToolContext, input: ShellInput, _: Prepared) -> ToolOutcome {
        let cwd = match &input.cwd {
            Some(dir) => match cx.boundary.resolve(dir) {
                Ok(dir) => dir,
                Err(err) => return ToolOutcome::failed(err.0),
            },
            None => cx.boundary.roots[0].clone(),
        };
        if input.background == Some(true) {
            return start_background(cx, &input.command, cwd).await;
        }
        let timeout = input
            .timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(SHELL_DEFAULT_TIMEOUT);
        // The workspace root the command runs in, snapshotted around it: what it changes on
        // disk (`rm`, `sed -i`, a generator, `git checkout`) goes into the ledger.
        let before = snapshot::before(root_holding(cx, &cwd)).await;
        let absent = absent_protected(cx.sandbox.as_ref());
        let ran = execute(cx, &input.command, cwd, timeout).await;
        let planted = remove_planted(&absent);
        // Also after a failure, a timeout or a cancel: the files may have changed before.
        let changed = match before {
            Some(before) => snapshot::changes_since(before, &cx.boundary.roots).await,
            None => Vec::new(),
        };
        match ran {
            Ok(outcome) => {
                let mut outcome = ran_outcome(&input.command, outcome, changed);
                if let Some(policy) = &cx.sandbox {
                    mark_denial(&mut outcome, policy, &planted);
                }
                outcome
            }
            Err(err) => ToolOutcome::failed(err.0),
        }
    }
}

/// `background: true`: started, and the call answered with its id and first output.
async fn start_background(cx: &ToolContext, command: &str, cwd: PathBuf) -> ToolOutcome {
    match crate::tools::background::start(cx, command, cwd).await {
        Ok(output) => ToolOutcome::ok(output).with_effect(Effect::Ran {
            evidence: format!("`{command}` started in the background"),
            changed: Vec::new(),
        }),
        Err(err) => ToolOutcome::failed(err.0),
    }
}

/// The innermost workspace root that holds `dir` (else the first).
pub(crate) fn root_holding<'a>(cx: &'a ToolContext, dir: &Path) -> &'a Path {
    cx.boundary
        .roots
        .iter()
        .filter(|root| dir.starts_with(root))
        .max_by_key(|root| root.as_os_str().len())
        .unwrap_or(&cx.boundary.roots[0])
}

/// Runs the command in the editor's terminal when the host has one (an ACP client that
/// offers terminals), else here.
async fn execute(
    cx: &ToolContext,
    command: &str,
    cwd: PathBuf,
    timeout: Duration,
) -> Result<ShellOutcome, ToolError> {
    let run = TerminalRun {
        session_id: cx.session_id.clone(),
        tool_call_id: cx.call_id.clone(),
        command: command.to_string(),
        cwd: cwd.clone(),
        timeout,
        max_output_bytes: SHELL_OUTPUT_BYTES,
        hidden_env: cx.hidden_env.clone(),
        sandbox: cx.sandbox.clone(),
    };
    if let Some(result) = cx.host.run_in_terminal(run, &cx.cancel).await {
        return result.map(terminal_outcome).map_err(error);
    }
    let on_output = cx.on_output.clone();
    run_shell(
        command,
        &cwd,
        timeout,
        SHELL_OUTPUT_BYTES,
        move |chunk: &str| on_output(chunk),
        &cx.cancel,
        ChildSetup {
            hidden_env: &cx.hidden_env,
            sandbox: cx.sandbox.as_ref(),
        },
    )
    .await
}

/// The protected paths that are not there before a sandboxed command: the mount namespace
/// cannot make a missing path read-only, so one the command creates is removed after it.
pub(crate) fn absent_protected(sandbox: Option<&SandboxPolicy>) -> Vec<PathBuf> {
    sandbox.map_or_else(Vec::new, |policy| {
        policy
            .protected
            .iter()
            .filter(|path| std::fs::symlink_metadata(path).is_err())
            .cloned()
            .collect()
    })
}

/// Removes what the command created at the `absent` protected paths; the paths removed.
pub(crate) fn remove_planted(absent: &[PathBuf]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for path in absent {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        let gone = if meta.is_dir() {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        };
        match gone {
            Ok(()) => removed.push(path.clone()),
            Err(err) => tracing::warn!(
                "a sandboxed command created {}, which cannot be removed: {err}",
                path.display()
            ),
        }
    }
    removed
}

/// Marks an outcome the sandbox explains: a protected path the command created (removed,
/// and the call failed), else a failure whose output shows a denied write or socket.
fn mark_denial(outcome: &mut ToolOutcome, policy: &SandboxPolicy, planted: &[PathBuf]) {
    if !planted.is_empty() {
        let names: Vec<String> = planted.iter().map(|p| p.display().to_string()).collect();
        outcome.output.push_str(&format!(
            "\n[the sandbox removed {}: a sandboxed command may not create git's hooks or config, .agents/ or .mcp.json]",
            names.join(", ")
        ));
        outcome.success = false;
        outcome.sandbox_denied = Some(format!(
            "the command created {}, which a sandboxed command may not create",
            names.join(", ")
        ));
        return;
    }
    if outcome.success {
        return;
    }
    outcome.sandbox_denied = agentls_core::sandbox::denial(&outcome.output, None, policy);
}

/// The call's outcome: success only for exit code 0; the evidence and the changed files
/// are its effect.
fn ran_outcome(
    command: &str,
    outcome: ShellOutcome,
    changed: Vec<agentls_core::event::ChangedPath>,
) -> ToolOutcome {
    let success = outcome.exit_code == Some(0) && !outcome.timed_out && !outcome.cancelled;
    let evidence = match outcome.exit_code {
        Some(code) => format!("`{command}` exited with {code}"),
        None if outcome.timed_out => format!("`{command}` timed out"),
        None => format!("`{command}` was stopped"),
    };
    ToolOutcome {
        output: outcome.output,
        success,
        effect: Some(Effect::Ran { evidence, changed }),
        sandbox_denied: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::{Arc, Mutex};

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

    fn no_output() -> impl Fn(&str) + Send + Sync + 'static {
        |_: &str| {}
    }

    async fn run(command: &str, timeout: Duration) -> ShellOutcome {
        let dir = tempfile::tempdir().unwrap();
        run_shell(
            command,
            dir.path(),
            timeout,
            10_000,
            no_output(),
            &CancellationToken::new(),
            ChildSetup::default(),
        )
        .await
        .unwrap()
    }

    /// True once `pid` is gone or a zombie (its parent may not reap it in a container).
    fn is_dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
            Err(_) => true,
        }
    }

    async fn wait_dead(pid: i32) -> bool {
        for _ in 0..100 {
            if is_dead(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    #[tokio::test]
    async fn shell_reports_output_and_exit_codes() {
        let ok = run("echo hello", Duration::from_secs(30)).await;
        assert_eq!(ok.output, "hello\n[exit code 0]");
        assert_eq!(ok.exit_code, Some(0));
        assert!(!ok.timed_out && !ok.cancelled);

        let failed = run("echo oops >&2; exit 3", Duration::from_secs(30)).await;
        assert_eq!(failed.output, "oops\n[exit code 3]");
        assert_eq!(failed.exit_code, Some(3));

        let merged = run("echo out; echo err >&2; echo out2", Duration::from_secs(30)).await;
        for part in ["out\n", "err\n", "out2\n"] {
            assert!(merged.output.contains(part), "{}", merged.output);
        }

        let dir = tempfile::tempdir().unwrap();
        let err = run_shell(
            "true",
            &dir.path().join("missing"),
            Duration::from_secs(5),
            1000,
            no_output(),
            &CancellationToken::new(),
            ChildSetup::default(),
        )
        .await
        .unwrap_err()
        .0;
        assert!(err.contains("does not exist"), "{err}");
    }

    #[tokio::test]
    async fn shell_output_is_streamed_and_cut_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let chunks = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = chunks.clone();
        let outcome = run_shell(
            "for i in $(seq 1 2000); do echo \"line $i é\"; done",
            dir.path(),
            Duration::from_secs(30),
            1000,
            move |chunk: &str| seen.lock().unwrap().push(chunk.to_string()),
            &CancellationToken::new(),
            ChildSetup::default(),
        )
        .await
        .unwrap();
        let streamed = chunks.lock().unwrap().concat();
        assert!(streamed.starts_with("line 1 é\n") && streamed.ends_with("line 2000 é\n"));
        assert!(!streamed.contains('\u{fffd}'));
        assert!(
            outcome.output.starts_with("Total output lines: 2000"),
            "{}",
            outcome.output
        );
        assert!(outcome.output.contains("line 1 é\n"), "{}", outcome.output);
        assert!(
            outcome.output.ends_with("line 2000 é\n[exit code 0]"),
            "{}",
            outcome.output
        );
        assert!(outcome.output.len() < 1200, "{}", outcome.output.len());
    }

    #[tokio::test]
    async fn shell_timeout_kills_the_whole_group() {
        let outcome = run("sleep 30 & echo $!; sleep 30", Duration::from_millis(300)).await;
        assert!(outcome.timed_out && !outcome.cancelled);
        assert_eq!(outcome.exit_code, None);
        assert!(
            outcome.output.ends_with("[killed: timed out after 0.3s]"),
            "{}",
            outcome.output
        );
        let background: i32 = outcome
            .output
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            wait_dead(background).await,
            "the background sleep survived the timeout"
        );
    }

    #[tokio::test]
    async fn shell_cancellation_kills_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            canceller.cancel();
        });
        let outcome = run_shell(
            "echo $$; sleep 30",
            dir.path(),
            Duration::from_secs(60),
            1000,
            no_output(),
            &cancel,
            ChildSetup::default(),
        )
        .await
        .unwrap();
        assert!(outcome.cancelled && !outcome.timed_out);
        assert!(outcome.output.contains("cancelled"), "{}", outcome.output);
        let shell: i32 = outcome
            .output
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            wait_dead(shell).await,
            "the shell survived the cancellation"
        );
    }

    #[tokio::test]
    async fn shell_does_not_wait_for_background_processes() {
        let outcome = run("sleep 60 & echo started", Duration::from_secs(20)).await;
        assert!(!outcome.timed_out, "{}", outcome.output);
        assert_eq!(outcome.exit_code, Some(0));
        assert!(
            outcome.output.starts_with("started\n"),
            "{}",
            outcome.output
        );
    }
}
