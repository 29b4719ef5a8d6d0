//! The process groups of every child agentls starts (shell commands, hooks, MCP servers),
//! and the one rule that ends them: a group is killed when its guard drops, when agentls
//! exits (`kill_all`), and — when agentls itself is killed with SIGKILL or crashes, so that
//! no code of ours runs — by the warden.
//!
//! The warden is a second `agentls` process (`agentls __warden`), started with the first
//! group, in a session of its own so a terminal's Ctrl-C or a kill of agentls's group does not
//! take it down first. Its stdin is a pipe whose only writer is agentls: each group is sent
//! as `+PGID` when it starts and `-PGID` when it ends. When the pipe closes — agentls has
//! exited, however it died — the warden kills the groups still listed and exits.
//!
//! Must not: decide when a child should die (its owner does, by dropping or killing the
//! guard), or start anything but the warden.

use crate::locks::Locked;
use std::io::{BufRead, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The subcommand that runs the warden (hidden from `--help`).
pub const WARDEN_SUBCOMMAND: &str = "__warden";

/// Kills the group when armed: on timeout, cancellation, or when dropped.
pub(crate) struct GroupGuard(Option<u32>);

struct Registry {
    /// Groups still running: killed by `kill_all` when the process exits (a future is not
    /// dropped at exit, so `GroupGuard` alone would leave them).
    running: Vec<u32>,
    /// The warden's stdin, once started; None before, or when it could not start.
    warden: Option<ChildStdin>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    running: Vec::new(),
    warden: None,
});

/// Whether this process starts a warden (the binary does; the library's unit tests, whose
/// executable is not agentls, do not).
static WARDEN_ENABLED: AtomicBool = AtomicBool::new(false);

/// Called once by the binary's `main`: children started from now on are watched by a warden.
pub fn enable_warden() {
    WARDEN_ENABLED.store(true, Ordering::SeqCst);
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.locked()
}

/// Kills every group still running (on exit, on Ctrl-C), then lets the warden go: it has
/// nothing left to kill.
pub fn kill_all() {
    let (groups, warden) = {
        let mut registry = registry();
        (
            std::mem::take(&mut registry.running),
            registry.warden.take(),
        )
    };
    for pgid in groups {
        kill_group(pgid);
    }
    drop(warden);
}

fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // pid 0 or 1 would address our own group or every process: never those.
    if pgid > 1 {
        // SAFETY: kill(2) has no memory effects; a negative pid names a process group.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

impl Registry {
    /// Tells the warden a line, starting it first if needed. A warden that cannot be started
    /// or has gone is logged once and forgotten: children still die with agentls's own exit.
    fn tell_warden(&mut self, line: &str) {
        if self.warden.is_none() && line.starts_with('+') && WARDEN_ENABLED.load(Ordering::SeqCst) {
            self.warden = start_warden(&self.running);
            // The groups listed at start already include this one.
            return;
        }
        if let Some(pipe) = self.warden.as_mut() {
            if let Err(err) = writeln!(pipe, "{line}") {
                tracing::warn!("the warden is gone ({err}); children outlive a crash of agentls");
                // Not closed: a child between fork and exec may still write to this
                // descriptor (`own_group`), and a closed one's number could be reused.
                std::mem::forget(self.warden.take());
                WARDEN_ENABLED.store(false, Ordering::SeqCst);
            }
        }
    }
}

fn start_warden(groups: &[u32]) -> Option<ChildStdin> {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            tracing::warn!("cannot find agentls's executable to start the warden: {err}");
            WARDEN_ENABLED.store(false, Ordering::SeqCst);
            return None;
        }
    };
    let mut command = Command::new(exe);
    command
        .arg(WARDEN_SUBCOMMAND)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid(2) is async-signal-safe, the only call made between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    match command.spawn() {
        Ok(mut child) => {
            let mut pipe = child.stdin.take()?;
            for pgid in groups {
                if writeln!(pipe, "+{pgid}").is_err() {
                    return None;
                }
            }
            // Not waited for: it outlives us by design, and exits when our end of the pipe
            // closes. Reaping it is our init's job once we are gone.
            std::mem::forget(child);
            Some(pipe)
        }
        Err(err) => {
            tracing::warn!("cannot start the warden: {err}; children outlive a crash of agentls");
            WARDEN_ENABLED.store(false, Ordering::SeqCst);
            None
        }
    }
}

/// Makes `command`'s child a group of its own, owned the one way every child here is: its
/// group leader is the child (so a kill reaches everything it started), it is killed if its
/// handle drops, and it tells the warden its group itself, between fork and exec, so it is
/// watched before it runs anything: told only by `GroupGuard::new`, after the spawn returned,
/// a child that acted at once (a command that wrote its pid) could see agentls killed before
/// it was listed, and outlive it. The warden is started here if needed, before the fork, so
/// its own start is not inside that window either. `GroupGuard::new` tells it again (the
/// warden keeps a set).
///
/// The group is a session of its own too (`setsid`, which also makes the group): the child
/// has no controlling terminal, so it cannot push keystrokes into agentls's (`TIOCSTI`: an
/// injected "y" to "run it outside the sandbox?", or a line the user's shell runs later).
pub(crate) fn own_group(command: &mut tokio::process::Command) {
    command.kill_on_drop(true);
    // SAFETY: setsid(2) is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let Some(fd) = ready_warden() else {
        return;
    };
    // SAFETY: the closure runs in the child between fork and exec, and calls only
    // async-signal-safe functions (getpid, signal, write) on a stack buffer.
    unsafe {
        command.pre_exec(move || {
            tell_warden_from_child(fd);
            Ok(())
        });
    }
}

/// The warden's pipe, started if this process has a warden and it is not running yet.
fn ready_warden() -> Option<std::os::fd::RawFd> {
    use std::os::fd::AsRawFd;
    let mut registry = registry();
    if registry.warden.is_none() && WARDEN_ENABLED.load(Ordering::SeqCst) {
        let running = registry.running.clone();
        registry.warden = start_warden(&running);
    }
    registry.warden.as_ref().map(|pipe| pipe.as_raw_fd())
}

/// Writes `+PID\n` for the calling process (a group leader: `own_group`) to `fd`,
/// without allocating. A warden that is gone must not kill the child with SIGPIPE.
fn tell_warden_from_child(fd: std::os::fd::RawFd) {
    let mut line = [0u8; 24];
    line[0] = b'+';
    // SAFETY: getpid has no memory effects.
    let mut pid = unsafe { libc::getpid() } as u32;
    let mut digits = [0u8; 10];
    let mut count = 0;
    loop {
        digits[count] = b'0' + (pid % 10) as u8;
        count += 1;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    for i in 0..count {
        line[1 + i] = digits[count - 1 - i];
    }
    line[1 + count] = b'\n';
    // SAFETY: signal and write are async-signal-safe; `line` outlives the call. One write
    // of at most 12 bytes to a pipe is atomic, so it never interleaves with agentls's own.
    unsafe {
        let previous = libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::write(fd, line.as_ptr().cast(), count + 2);
        libc::signal(libc::SIGPIPE, previous);
    }
}

impl GroupGuard {
    /// Takes charge of the group led by `pid` (a child started by `own_group`).
    pub(crate) fn new(pid: Option<u32>) -> GroupGuard {
        if let Some(pid) = pid {
            let mut registry = registry();
            registry.running.push(pid);
            registry.tell_warden(&format!("+{pid}"));
        }
        GroupGuard(pid)
    }

    fn forget(&self) {
        if let Some(pid) = self.0 {
            let mut registry = registry();
            let before = registry.running.len();
            registry.running.retain(|p| *p != pid);
            if registry.running.len() != before {
                registry.tell_warden(&format!("-{pid}"));
            }
        }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.0 {
            kill_group(pgid);
        }
    }

    /// The group ended on its own: nothing to kill any more.
    pub(crate) fn disarm(&mut self) {
        self.forget();
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
        self.forget();
    }
}

/// Whether process `pid` has exited: gone, or a zombie its parent has not reaped yet.
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name, which may itself hold `)`.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// The warden's whole life: read `+PGID`/`-PGID` lines until agentls's end of the pipe
/// closes, then kill what is still listed. Hang-ups and interrupts are ignored: only the
/// pipe's end means agentls is gone.
pub fn run_warden() -> std::process::ExitCode {
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory effects.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut groups = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        apply(&mut groups, &line);
    }
    for pgid in groups {
        kill_group(pgid);
    }
    std::process::ExitCode::SUCCESS
}

/// One line of the warden's input applied to the groups it watches; anything else is ignored.
fn apply(groups: &mut Vec<u32>, line: &str) {
    if let Some(Ok(pgid)) = line.strip_prefix('+').map(str::parse::<u32>) {
        if !groups.contains(&pgid) {
            groups.push(pgid);
        }
    } else if let Some(Ok(pgid)) = line.strip_prefix('-').map(str::parse::<u32>) {
        groups.retain(|p| *p != pgid);
    }
}

#[cfg(test)]
mod tests {
    use super::{apply, tell_warden_from_child};

    #[test]
    fn a_child_tells_the_warden_its_pid_in_one_line() {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills the two descriptors; both are closed below.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        tell_warden_from_child(fds[1]);
        let mut buf = [0u8; 32];
        // SAFETY: reads into `buf`, then closes the descriptors pipe(2) opened.
        let read = unsafe {
            let n = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
            libc::close(fds[0]);
            libc::close(fds[1]);
            n
        };
        let line = std::str::from_utf8(&buf[..read as usize]).unwrap();
        assert_eq!(line, format!("+{}\n", std::process::id()));
        let mut groups = Vec::new();
        apply(&mut groups, line.trim_end());
        assert_eq!(groups, vec![std::process::id()]);
    }

    #[test]
    fn the_warden_keeps_the_groups_started_and_not_yet_ended() {
        let mut groups = Vec::new();
        for line in [
            "+12", "+34", "+12", "-12", "+56", "junk", "", "-999", "+x", "é",
        ] {
            apply(&mut groups, line);
        }
        assert_eq!(groups, vec![34, 56]);
    }
}
