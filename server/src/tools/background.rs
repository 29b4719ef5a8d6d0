//! Background commands: `shell` with `background: true` starts a command that outlives its
//! call, `shell_output` reads what it printed since the last read, `shell_kill` stops it.
//! A background command runs as a foreground one does (the same spawn: its own process group
//! held by a `GroupGuard`, listed with the warden before it runs, so a kill -9 of agentls
//! ends it too; the same sandbox and hidden variables), and belongs to the session that
//! started it: the session holds its [`Commands`] (the agent's `SessionHandle`, handed to
//! its tools as `ToolContext::background`). [`Commands::stop_all`] kills a session's
//! commands (its end, a cancel with `stopBackground`), `process_groups::kill_all` every
//! command at agentls's exit.
//!
//! A command runs where foreground ones do: in a process group of agentls's own, or, for an
//! ACP client that offers terminals, in a client terminal (`Host::open_terminal`) that the
//! client shows and agentls reads (`terminal/output`), kills and releases. One table
//! holds both; a [`Runner`] is the only difference: a local process pushes its output as it
//! comes, a terminal's is pulled when read.
//!
//! What a command changes in the workspace enters the ledger when its output is read: each
//! read compares the workspace with the snapshot taken at the previous read (or the start).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use agentls_core::event::ChangedPath;
use agentls_core::prompts::fill;
use agentls_core::sandbox::SandboxPolicy;
use agentls_core::tool_info::{error, ToolError};
use agentls_core::truncate::{truncate_middle, TruncationPolicy};
use agentls_core::updates::Update;

use crate::host::{ClientTerminal, Host, Notice, TerminalExit, TerminalRun};
use crate::locks::Locked;
use crate::process_groups::GroupGuard;
use crate::tools::shell_process::{
    self, ChildSetup, Ending, KeptOutput, Limits, ProtectedBefore, SHELL_OUTPUT_BYTES,
};
use crate::tools::snapshot;

/// How long `shell` with `background: true` waits for a command's first output.
const FIRST_OUTPUT_WAIT: Duration = Duration::from_millis(1000);
/// Once output came, how long a pause in it ends the wait for the first output.
const FIRST_OUTPUT_QUIET: Duration = Duration::from_millis(150);
/// The longest `wait_ms` of `shell_output`: a read never holds a turn for long.
pub const MAX_WAIT_MS: u64 = 30_000;
/// How long `shell_kill` waits for a stopped command's last output and status.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How often a client terminal's output is read while a call waits for something new.
const TERMINAL_POLL: Duration = Duration::from_millis(200);
/// How often a client terminal that cannot be waited for (`terminal/wait_for_exit`
/// failed) is read for its exit.
const TERMINAL_EXIT_POLL: Duration = Duration::from_secs(1);
/// The output a client terminal keeps (`outputByteLimit`): what a command prints between
/// two reads, the client dropping the start of more.
const TERMINAL_OUTPUT_BYTES: usize = 1024 * 1024;

/// A session's background commands: the session owns them; its tools reach them through
/// their `ToolContext`, the front doors through the session.
pub struct Commands {
    session_id: String,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// The number of the last id given (`bg1`, `bg2`, …): not reused while the session
    /// keeps its commands (a stop-all or the session's release forgets them, and it).
    next: u32,
    commands: Vec<Arc<Background>>,
    /// Told when the list changes (a command starts or ends).
    host: Option<Arc<dyn Host>>,
}

/// One background command.
pub struct Background {
    pub id: String,
    /// The session's commands, which list it (until the session forgets them).
    owner: Weak<Commands>,
    pub command: String,
    pub cwd: PathBuf,
    /// Milliseconds since the epoch.
    pub started_at: u64,
    state: Mutex<Progress>,
    /// Signalled on new output and at the end.
    changed: Notify,
    stop: CancellationToken,
    runner: Runner,
    /// Where its changes are found, and the snapshot the next read compares against.
    root: PathBuf,
    roots: Vec<PathBuf>,
    snapshot: tokio::sync::Mutex<Option<snapshot::Before>>,
}

struct Progress {
    /// Printed since the last read, bounded (head and tail kept, the middle counted).
    unread: KeptOutput,
    unread_bytes: usize,
    /// The status line once it ended (`[exit code 0]`).
    ending: Option<String>,
    exit_code: Option<i32>,
    /// Forwarded to the `shell` call that started it while that call waits.
    live: Option<OnOutput>,
}

/// What runs a background command.
enum Runner {
    /// A process group of agentls's own: its watcher pushes the output and the ending as
    /// they come.
    Local,
    /// A client terminal: its output is pulled (`terminal/output`) when read; its follower
    /// notes the ending.
    Terminal(TerminalFollow),
}

struct TerminalFollow {
    terminal: Arc<dyn ClientTerminal>,
    /// The terminal's output at the last pull, and whether it was released (then it is not
    /// asked again). One pull at a time, so each piece of output is taken once.
    seen: tokio::sync::Mutex<(String, bool)>,
    /// The client answered its `terminal/release`: nothing is left to tell it at exit.
    released: std::sync::atomic::AtomicBool,
}

/// Where the output streams to while the starting call waits (the call's `on_output`).
type OnOutput = Arc<dyn Fn(&str) + Send + Sync>;

/// A row of the list the editor shows (`agent/session/background`, the `background` update).
pub use crate::protocol::lsp::BackgroundCommand as BackgroundInfo;

/// What a read found: the new output (cut head and tail, ending with the status line) and
/// the files changed since the previous read.
pub struct Read {
    pub output: String,
    pub changed: Vec<ChangedPath>,
    pub command: String,
    pub ended: bool,
    pub exit_code: Option<i32>,
}

impl Background {
    fn push(&self, chunk: &str) {
        let live = {
            let mut state = self.state.locked();
            state.unread.push(chunk);
            state.unread_bytes += chunk.len();
            state.live.clone()
        };
        if let Some(live) = live {
            live(chunk);
        }
        self.changed.notify_waiters();
    }

    fn ended(&self) -> bool {
        self.state.locked().ending.is_some()
    }

    fn unread_bytes(&self) -> usize {
        self.state.locked().unread_bytes
    }

    /// Notes how it ended (the first ending noted stands); whether this one did.
    fn end(&self, ending: String, exit_code: Option<i32>) -> bool {
        {
            let mut state = self.state.locked();
            if state.ending.is_some() {
                return false;
            }
            state.ending = Some(ending);
            state.exit_code = exit_code;
        }
        self.changed.notify_waiters();
        true
    }

    /// Brings its unread output up to date: a client terminal's is read now (a local
    /// process pushes its own). The terminal's exit, when it reported one; Err (logged)
    /// when the terminal could not be read.
    async fn refresh(&self) -> Result<Option<TerminalExit>, ()> {
        let Runner::Terminal(follow) = &self.runner else {
            return Ok(None);
        };
        let mut seen = follow.seen.lock().await;
        if seen.1 {
            return Ok(None);
        }
        let snapshot = match follow.terminal.output().await {
            Ok(snapshot) => snapshot,
            Err(err) => {
                tracing::warn!("{}: {err}", self.id);
                return Err(());
            }
        };
        let (news, lost) = agentls_core::acp::terminal_news(&seen.0, &snapshot.output);
        if lost {
            self.push("[the start of this output was dropped by the client's terminal]\n");
        }
        if !news.is_empty() {
            self.push(news);
        }
        seen.0 = snapshot.output;
        Ok(snapshot.exit)
    }

    /// How long a wait for news may go without a `refresh`: None for a local process,
    /// whose news wakes the waiter.
    fn poll_every(&self) -> Option<Duration> {
        match self.runner {
            Runner::Local => None,
            Runner::Terminal(_) => Some(TERMINAL_POLL),
        }
    }

    fn info(&self) -> BackgroundInfo {
        let state = self.state.locked();
        BackgroundInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            cwd: self.cwd.display().to_string(),
            started_at: self.started_at,
            state: if state.ending.is_some() {
                "exited"
            } else {
                "running"
            }
            .into(),
            exit_code: state.exit_code,
        }
    }

    /// Waits until it ends, prints something new, or `wait` passes.
    async fn wait_for_news(&self, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let _ = self.refresh().await;
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = tokio::time::Instant::now();
            if self.ended() || self.unread_bytes() > 0 || now >= deadline {
                return;
            }
            let step = self
                .poll_every()
                .map_or(deadline - now, |poll| poll.min(deadline - now));
            let _ = tokio::time::timeout(step, changed).await;
        }
    }

    /// The output since the last read, cut head and tail, with its status line.
    fn take_output(&self, prompts: &agentls_core::prompts::Prompts) -> (String, bool, Option<i32>) {
        let mut state = self.state.locked();
        let unread = std::mem::replace(&mut state.unread, KeptOutput::new(SHELL_OUTPUT_BYTES));
        state.unread_bytes = 0;
        let mut output = truncate_middle(
            &unread.finish(),
            TruncationPolicy::Bytes(SHELL_OUTPUT_BYTES),
            agentls_core::tokens::TokenizerKind::default(),
        )
        .text;
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        match &state.ending {
            Some(ending) => output.push_str(ending),
            None => output.push_str(&fill(
                &prompts.tool_outputs.background_running,
                &[("id", &self.id)],
            )),
        }
        (output, state.ending.is_some(), state.exit_code)
    }

    /// The files changed since the previous read; the snapshot moves on to now.
    async fn changes(&self) -> Vec<ChangedPath> {
        let mut snapshot = self.snapshot.lock().await;
        let next = snapshot::before(&self.root).await;
        match std::mem::replace(&mut *snapshot, next) {
            Some(before) => snapshot::changes_since(before, &self.roots).await,
            None => Vec::new(),
        }
    }
}

/// The starting call (its `ToolContext`), as a background command reads it.
pub struct Caller<'a> {
    pub host: &'a Arc<dyn Host>,
    pub call_id: &'a str,
    pub roots: &'a [PathBuf],
    pub hidden_env: &'a [String],
    pub sandbox: Option<&'a SandboxPolicy>,
    /// Where the first output streams while the call waits for it.
    pub on_output: &'a OnOutput,
}

impl Commands {
    /// A session's table, empty.
    pub fn new(session_id: impl Into<String>) -> Arc<Commands> {
        Arc::new(Commands {
            session_id: session_id.into(),
            table: Mutex::new(Table::default()),
        })
    }

    /// Starts `command` in the background for `caller`; the text the call returns: its
    /// id, then what it printed in its first moments (and its status, if it ended already).
    pub async fn start(
        self: &Arc<Self>,
        caller: Caller<'_>,
        command: &str,
        cwd: PathBuf,
    ) -> Result<String, ToolError> {
        let max = caller.host.config().shell_max_background.max(1);
        let running = self.running().len();
        if running >= max {
            return Err(error(format!(
                "{running} background commands of this session are running, the most allowed (shell.maxBackground = {max}): stop one with shell_kill, or run this one in the foreground"
            )));
        }
        let root = shell_process::root_holding(caller.roots, &cwd).to_path_buf();
        let before = snapshot::before(&root).await;
        let absent = shell_process::protected_before(caller.sandbox);
        let run = TerminalRun {
            session_id: self.session_id.clone(),
            tool_call_id: caller.call_id.to_string(),
            command: command.to_string(),
            cwd: cwd.clone(),
            timeout: Duration::MAX,
            max_output_bytes: TERMINAL_OUTPUT_BYTES,
            hidden_env: caller.hidden_env.to_vec(),
            sandbox: caller.sandbox.cloned(),
        };
        let background = match caller.host.open_terminal(run).await {
            Some(terminal) => {
                let terminal = terminal.map_err(error)?;
                let runner = Runner::Terminal(TerminalFollow {
                    terminal,
                    seen: Default::default(),
                    released: Default::default(),
                });
                let background = self.register(&caller, command, cwd, root, before, runner);
                background.state.locked().live = Some(caller.on_output.clone());
                tokio::spawn(follow(background.clone(), absent));
                background
            }
            None => {
                let mut child = shell_process::spawn(
                    command,
                    &cwd,
                    ChildSetup {
                        hidden_env: caller.hidden_env,
                        sandbox: caller.sandbox,
                    },
                )?;
                let group = GroupGuard::new(child.id());
                let (chunks, readers) = shell_process::merged_output(&mut child);
                let background = self.register(&caller, command, cwd, root, before, Runner::Local);
                background.state.locked().live = Some(caller.on_output.clone());
                tokio::spawn(watch(
                    background.clone(),
                    child,
                    group,
                    chunks,
                    readers,
                    absent,
                ));
                background
            }
        };
        self.tell();
        first_output(&background).await;
        background.state.locked().live = None;
        let prompts = caller.host.prompts();
        let (output, _, _) = background.take_output(&prompts);
        let opening = fill(
            &prompts.tool_outputs.background_started,
            &[
                ("id", &background.id),
                ("command", &agentls_core::tool_info::shorten(command)),
            ],
        );
        Ok(format!("{opening}\n{output}"))
    }

    /// Registers a new command of the session under the next id.
    fn register(
        self: &Arc<Self>,
        caller: &Caller<'_>,
        command: &str,
        cwd: PathBuf,
        root: PathBuf,
        before: Option<snapshot::Before>,
        runner: Runner,
    ) -> Arc<Background> {
        let mut table = self.table.locked();
        table.next += 1;
        table.host = Some(caller.host.clone());
        let background = Arc::new(Background {
            id: format!("bg{}", table.next),
            owner: Arc::downgrade(self),
            command: command.to_string(),
            cwd,
            started_at: crate::store::session_log::now_millis(),
            state: Mutex::new(Progress {
                unread: KeptOutput::new(SHELL_OUTPUT_BYTES),
                unread_bytes: 0,
                ending: None,
                exit_code: None,
                live: None,
            }),
            changed: Notify::new(),
            stop: CancellationToken::new(),
            runner,
            root,
            roots: caller.roots.to_vec(),
            snapshot: tokio::sync::Mutex::new(before),
        });
        table.commands.push(background.clone());
        background
    }
}

/// Waits for the first output: until the command ends, its output pauses, or
/// `FIRST_OUTPUT_WAIT` passes.
async fn first_output(background: &Background) {
    let deadline = tokio::time::Instant::now() + FIRST_OUTPUT_WAIT;
    // The unread output at the previous look: the same again after a pause is a pause.
    let mut before = None;
    loop {
        let _ = background.refresh().await;
        let changed = background.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let unread = background.unread_bytes();
        let now = tokio::time::Instant::now();
        if background.ended() || now >= deadline || (unread > 0 && before == Some(unread)) {
            return;
        }
        before = Some(unread);
        let wait = if unread > 0 {
            FIRST_OUTPUT_QUIET
        } else {
            deadline - now
        };
        let wait = background
            .poll_every()
            .map_or(wait, |poll| poll.max(FIRST_OUTPUT_QUIET).min(wait))
            .min(deadline - now);
        let _ = tokio::time::timeout(wait, changed).await;
    }
}

/// Follows a command in a client terminal until it ends or is stopped: a stop kills it
/// (`terminal/kill`), then its last output is read and the terminal released; how it
/// ended is noted.
async fn follow(background: Arc<Background>, absent: Vec<ProtectedBefore>) {
    let Runner::Terminal(terminal) = &background.runner else {
        return;
    };
    let terminal = terminal.terminal.clone();
    let exit = tokio::select! {
        biased;
        () = background.stop.cancelled() => None,
        exit = terminal_exit(&background, &*terminal) => Some(exit),
    };
    let (ending, exit_code) = match exit {
        None => {
            if let Err(err) = terminal.kill().await {
                tracing::warn!("{}: {err}", background.id);
            }
            (format!("[{} was killed]", background.id), None)
        }
        Some(exit) => (status_line(&exit), exit.code),
    };
    let _ = background.refresh().await;
    if let Runner::Terminal(follow) = &background.runner {
        follow.seen.lock().await.1 = true;
    }
    match terminal.release().await {
        Ok(()) => {
            if let Runner::Terminal(follow) = &background.runner {
                follow
                    .released
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        // The connection closing ends the wait for its exit too: the release is then
        // sent at exit (`release_terminals_at_exit`), whoever noted the end first.
        Err(err) => tracing::warn!("{}: {err}", background.id),
    }
    let ending = with_planted(ending, &absent);
    if background.end(ending, exit_code) {
        background.tell_owner();
    }
}

/// How the command in `terminal` ended: waited for, else (a client that cannot wait)
/// read until its output shows an exit.
async fn terminal_exit(background: &Background, terminal: &dyn ClientTerminal) -> TerminalExit {
    match terminal.wait_for_exit().await {
        Ok(exit) => return exit,
        Err(err) => tracing::warn!("{}: {err}; reading its output for the exit", background.id),
    }
    loop {
        match background.refresh().await {
            Ok(Some(exit)) => return exit,
            Ok(None) => tokio::time::sleep(TERMINAL_EXIT_POLL).await,
            // Neither waited for nor read: nothing more will be known of it.
            Err(()) => {
                return TerminalExit {
                    code: None,
                    signal: None,
                }
            }
        }
    }
}

/// The status line of a command that exited in a client terminal.
fn status_line(exit: &TerminalExit) -> String {
    match (exit.code, &exit.signal) {
        (Some(code), _) => format!("[exit code {code}]"),
        (None, Some(signal)) => format!("[killed by signal {signal}]"),
        (None, None) => "[exit status unknown]".to_string(),
    }
}

/// The ending, after a note of the protected paths a sandboxed command created or replaced
/// (undone now).
fn with_planted(ending: String, absent: &[ProtectedBefore]) -> String {
    let planted = shell_process::put_back_protected(absent);
    if planted.is_empty() {
        return ending;
    }
    format!("{}\n{ending}", planted.note())
}

/// Reads the command until it ends or is stopped, then notes how it ended.
async fn watch(
    background: Arc<Background>,
    mut child: tokio::process::Child,
    mut group: GroupGuard,
    mut chunks: tokio::sync::mpsc::Receiver<String>,
    readers: Vec<tokio::task::JoinHandle<()>>,
    absent: Vec<ProtectedBefore>,
) {
    let wait = child.wait();
    tokio::pin!(wait);
    let limits = Limits {
        timeout: Duration::MAX,
        cancel: &background.stop,
    };
    let mut take = |chunk: &str| background.push(chunk);
    let watched =
        shell_process::watch(wait.as_mut(), &mut chunks, &mut take, &mut group, &limits).await;
    let (ending, exit_code) = match watched {
        Ok(watched) => {
            let status = shell_process::settle(wait, &mut chunks, &mut take, &watched).await;
            for reader in readers {
                reader.abort();
            }
            group.disarm();
            ending_line(&background, &watched, status)
        }
        Err(err) => {
            group.kill();
            group.disarm();
            (format!("[waiting for the command failed: {err}]"), None)
        }
    };
    if background.end(with_planted(ending, &absent), exit_code) {
        background.tell_owner();
    }
}

/// The status line of an ended command and its exit code.
fn ending_line(
    background: &Background,
    watched: &shell_process::Watched,
    status: Option<std::process::ExitStatus>,
) -> (String, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    let mut line = String::new();
    if watched.left_running_killed {
        line.push_str("[processes the command left running in the background were killed]\n");
    }
    if watched.ending == Ending::Cancelled {
        line.push_str(&format!("[{} was killed]", background.id));
        return (line, None);
    }
    let code = status.and_then(|s| s.code());
    line.push_str(&match (code, status.and_then(|s| s.signal())) {
        (Some(code), _) => format!("[exit code {code}]"),
        (None, Some(signal)) => format!("[killed by signal {signal}]"),
        (None, None) => "[exit status unknown]".to_string(),
    });
    (line, code)
}

impl Commands {
    /// A command of the session, by id.
    fn find(&self, id: &str) -> Result<Arc<Background>, String> {
        let table = self.table.locked();
        match table.commands.iter().find(|c| c.id == id.trim()) {
            Some(found) => Ok(found.clone()),
            None => {
                let known: Vec<&str> = table.commands.iter().map(|c| c.id.as_str()).collect();
                Err(if known.is_empty() {
                    format!("no background command {id:?}: this session has none (start one with shell and background: true)")
                } else {
                    format!(
                        "no background command {id:?}: this session's are {}",
                        known.join(", ")
                    )
                })
            }
        }
    }

    /// `shell_output`: what command `id` printed since the last read (waiting up to `wait`
    /// for something new while it runs), and what it changed.
    pub async fn read(
        &self,
        id: &str,
        wait: Duration,
        prompts: &agentls_core::prompts::Prompts,
    ) -> Result<Read, String> {
        let background = self.find(id)?;
        background.wait_for_news(wait).await;
        let changed = background.changes().await;
        let (output, ended, exit_code) = background.take_output(prompts);
        Ok(Read {
            output,
            changed,
            command: background.command.clone(),
            ended,
            exit_code,
        })
    }

    /// `shell_kill`: stops command `id` (its whole process group); its last output and
    /// status.
    pub async fn kill(
        &self,
        id: &str,
        prompts: &agentls_core::prompts::Prompts,
    ) -> Result<Read, String> {
        let background = self.find(id)?;
        let ended_before = background.ended();
        background.stop.cancel();
        let deadline = tokio::time::Instant::now() + KILL_WAIT;
        loop {
            let changed = background.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = tokio::time::Instant::now();
            if background.ended() || now >= deadline {
                break;
            }
            let _ = tokio::time::timeout(deadline - now, changed).await;
        }
        let mut read = self.read(id, Duration::ZERO, prompts).await?;
        if !ended_before {
            read.output.push('\n');
            read.output.push_str(&fill(
                &prompts.tool_outputs.background_stopped,
                &[("id", &background.id)],
            ));
        }
        Ok(read)
    }

    /// Stops every command of the session and forgets them: the session ended or was
    /// cancelled with "stop all". Returns how many were running. Each process group is
    /// killed at once (not waiting for the watchers).
    pub fn stop_all(&self) -> usize {
        let table = std::mem::take(&mut *self.table.locked());
        let mut running = 0;
        for background in &table.commands {
            if !background.ended() {
                running += 1;
            }
            background.stop.cancel();
        }
        if let Some(host) = table.host {
            announce(&*host, &self.session_id, Vec::new());
        }
        running
    }

    /// agentls is exiting: every command of the session in a client terminal is released
    /// at once, without waiting for an answer that can no longer arrive (the client kills
    /// it); local process groups are `process_groups::kill_all`'s. How many terminals were
    /// released.
    pub fn release_terminals_at_exit(&self) -> usize {
        let table = std::mem::take(&mut *self.table.locked());
        let mut released = 0;
        for background in &table.commands {
            if let Runner::Terminal(follow) = &background.runner {
                if !follow.released.load(std::sync::atomic::Ordering::SeqCst) {
                    follow.terminal.abandon();
                    released += 1;
                }
            }
        }
        released
    }

    /// Stops one command from outside a turn (the editor's stop button); whether it was
    /// running.
    pub fn stop(&self, id: &str) -> Result<bool, String> {
        let background = self.find(id)?;
        let running = !background.ended();
        background.stop.cancel();
        Ok(running)
    }

    /// The session's commands, in the order they started.
    pub fn list(&self) -> Vec<BackgroundInfo> {
        self.table
            .locked()
            .commands
            .iter()
            .map(|c| c.info())
            .collect()
    }

    /// The session's running commands, as the environment block names them.
    pub fn running(&self) -> Vec<(String, String)> {
        self.list()
            .into_iter()
            .filter(|c| c.state == "running")
            .map(|c| (c.id, c.command))
            .collect()
    }

    /// Tells the session's editor the list changed (a `background` update).
    fn tell(&self) {
        let host = self.table.locked().host.clone();
        if let Some(host) = host {
            announce(&*host, &self.session_id, self.list());
        }
    }
}

impl Background {
    /// Tells its session's editor the list changed, while the session keeps its commands.
    fn tell_owner(&self) {
        if let Some(owner) = self.owner.upgrade() {
            owner.tell();
        }
    }
}

fn announce(host: &dyn Host, session_id: &str, commands: Vec<BackgroundInfo>) {
    host.notify(Notice::Update {
        session_id: session_id.to_string(),
        turn_id: String::new(),
        update: Update::Background { commands },
        parent: Default::default(),
    });
}
