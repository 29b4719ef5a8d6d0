//! `shell`: a command in the user's shell, in its own process group, output streamed and kept
//! within bounds, killed whole on timeout or cancel.
//! The process itself (spawn, output, watch, kill) is `shell_process.rs`, which background
//! commands share.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use agentls_core::tool_info::{error, shorten, LedgerRecord, ToolError, ToolKind};
use agentls_core::truncate::{truncate_middle, TruncationPolicy};

use crate::host::{TerminalOutcome, TerminalRun};
use crate::process_groups::GroupGuard;
use crate::tools::background::Caller;
use crate::tools::registry::{text_arg, Effect, Prepared, Tool, ToolContext, ToolOutcome};
use crate::tools::shell_process::{
    merged_output, protected_before, put_back_protected, root_holding, settle, spawn, watch,
    ChildSetup, Ending, KeptOutput, Limits, PutBack, Watched, SHELL_OUTPUT_BYTES,
};
use crate::tools::snapshot;
use agentls_core::sandbox::SandboxPolicy;

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
        let before = snapshot::before(root_holding(&cx.boundary.roots, &cwd)).await;
        let protected = protected_before(cx.sandbox.as_ref());
        let ran = execute(cx, &input.command, cwd, timeout).await;
        let planted = put_back_protected(&protected);
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
    let caller = Caller {
        host: &cx.host,
        call_id: &cx.call_id,
        roots: &cx.boundary.roots,
        hidden_env: &cx.hidden_env,
        sandbox: cx.sandbox.as_ref(),
        on_output: &cx.on_output,
    };
    match cx.background.start(caller, command, cwd).await {
        Ok(output) => ToolOutcome::ok(output).with_effect(Effect::Ran {
            evidence: format!("`{command}` started in the background"),
            changed: Vec::new(),
        }),
        Err(err) => ToolOutcome::failed(err.0),
    }
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

/// Marks an outcome the sandbox explains: a protected path the command created or replaced
/// (undone, and the call failed), else a failure whose output shows a denied write or socket.
fn mark_denial(outcome: &mut ToolOutcome, policy: &SandboxPolicy, planted: &PutBack) {
    if !planted.is_empty() {
        outcome.output.push('\n');
        outcome.output.push_str(&planted.note());
        outcome.success = false;
        outcome.sandbox_denied = Some(planted.denial());
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
