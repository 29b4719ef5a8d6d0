//! The sandbox on Linux, applied to a child between fork and exec: a private mount namespace
//! in which the protected paths are bind-mounted read-only (and each root's `.git` pinned,
//! so it cannot be moved away and rebuilt), and a PID namespace whose first process is the
//! command (nothing it starts, `setsid` or `&` with its output closed, outlives it: the
//! kernel ends a PID namespace's processes with its first), then Landlock (writes only beneath the writable
//! directories, and no device node made there), then seccomp filters: one that refuses
//! `TIOCSTI` (pushing keystrokes into a terminal, which root may do to any tty it opens),
//! and one that refuses IP sockets when the network is off.
//!
//! Everything that allocates or reads the disk happens in [`Confinement::prepare`], in the
//! parent; [`Confinement::apply`] runs in the forked child and only makes system calls.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{
    path_beneath_rules, AccessFs, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetStatus, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use agentls_core::sandbox::SandboxPolicy;

/// The Landlock ABI whose write rights are handled: v3 adds truncation, v2 cross-directory
/// renames (`Refer`), both of which a write policy must cover.
const HANDLED_ABI: ABI = ABI::V3;

/// Device files a command may still write: the null sinks, the terminal, the random pools.
const WRITABLE_DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// One bind mount of the namespace, in the order they are made (parents first).
#[derive(Debug)]
struct Mount {
    path: CString,
    /// Remounted read-only, keeping these flags of the mount it is on (a user namespace may
    /// not clear them).
    read_only: Option<libc::c_ulong>,
}

/// How the child gets its own mount table and PID namespace.
#[derive(Debug)]
enum Namespace {
    None,
    /// As root: a mount and a PID namespace.
    Mount,
    /// Otherwise: a user namespace mapping only this user, and the mount and PID namespaces
    /// in it.
    User {
        uid_map: CString,
        gid_map: CString,
    },
}

/// A policy made ready for a child: opened, compiled, formatted.
pub struct Confinement {
    namespace: Namespace,
    mounts: Vec<Mount>,
    /// The command gets a PID namespace of its own.
    pid: bool,
    ruleset: Option<RulesetCreated>,
    no_keystrokes: BpfProgram,
    filter: Option<BpfProgram>,
}

impl Confinement {
    /// Prepares `policy` (in the parent). Err when Landlock or the filter cannot be set up.
    pub fn prepare(policy: &SandboxPolicy, mount_namespace: bool) -> io::Result<Confinement> {
        let mounts = if mount_namespace {
            mounts(policy)
        } else {
            Vec::new()
        };
        let pid = mount_namespace && pid_namespace_works();
        let namespace = if !mount_namespace || (mounts.is_empty() && !pid) {
            Namespace::None
        } else if unsafe { libc::geteuid() } == 0 {
            Namespace::Mount
        } else {
            let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
            Namespace::User {
                uid_map: CString::new(format!("{uid} {uid} 1\n"))?,
                gid_map: CString::new(format!("{gid} {gid} 1\n"))?,
            }
        };
        Ok(Confinement {
            namespace,
            mounts,
            pid,
            ruleset: Some(ruleset(&policy.writable).map_err(io::Error::other)?),
            no_keystrokes: no_tiocsti().map_err(io::Error::other)?,
            filter: if policy.network {
                None
            } else {
                Some(no_ip_sockets().map_err(io::Error::other)?)
            },
        })
    }

    /// Confines the calling process. Runs in the forked child: system calls only.
    pub fn apply(&mut self) -> io::Result<()> {
        self.enter_namespace()?;
        for mount in &self.mounts {
            bind(mount)?;
        }
        if !self.mounts.is_empty() {
            reenter_working_directory()?;
        }
        if let Some(ruleset) = self.ruleset.take() {
            let status = ruleset
                .restrict_self()
                .map_err(|_| io::Error::last_os_error())?;
            if status.ruleset == RulesetStatus::NotEnforced {
                return Err(io::Error::from_raw_os_error(libc::ENOSYS));
            }
        }
        // Landlock set it already; the filter needs it in any case.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        seccompiler::apply_filter(&self.no_keystrokes).map_err(|_| io::Error::last_os_error())?;
        if let Some(filter) = &self.filter {
            seccompiler::apply_filter(filter).map_err(|_| io::Error::last_os_error())?;
        }
        if self.pid {
            stand_in_for_the_namespace();
        }
        Ok(())
    }

    fn enter_namespace(&self) -> io::Result<()> {
        // A mount table of its own only when something is mounted: copying it is most of
        // what the namespaces cost a command.
        let mount = if self.mounts.is_empty() {
            0
        } else {
            libc::CLONE_NEWNS
        };
        let pid = if self.pid { libc::CLONE_NEWPID } else { 0 };
        let flags = match &self.namespace {
            Namespace::None => return Ok(()),
            Namespace::Mount => mount | pid,
            Namespace::User { .. } => libc::CLONE_NEWUSER | mount | pid,
        };
        check(unsafe { libc::unshare(flags) })?;
        if let Namespace::User { uid_map, gid_map } = &self.namespace {
            write_proc(c"/proc/self/setgroups", c"deny")?;
            write_proc(c"/proc/self/uid_map", uid_map)?;
            write_proc(c"/proc/self/gid_map", gid_map)?;
        }
        if mount == 0 {
            return Ok(());
        }
        // Nothing mounted here may reach the parent's mount table.
        check(unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        })
    }
}

/// The bind mounts of `policy`, parents first: each pinned `.git` and writable root that
/// lies under a protected directory (so it stays writable), then each protected path that
/// exists, read-only.
fn mounts(policy: &SandboxPolicy) -> Vec<Mount> {
    let mut planned: Vec<(PathBuf, bool)> = Vec::new();
    for path in &policy.protected {
        planned.push((path.clone(), true));
    }
    for root in &policy.writable {
        if policy
            .protected
            .iter()
            .any(|p| root.starts_with(p) && root != p)
        {
            planned.push((root.clone(), false));
        }
    }
    for pinned in &policy.pinned {
        planned.push((pinned.clone(), false));
    }
    let mut mounts: Vec<(usize, Mount)> = planned
        .into_iter()
        .filter_map(|(path, read_only)| {
            // A symlink is mounted where it leads; a path that is not there is not mounted
            // (one the command creates is removed after it: see `tools::shell_process`).
            let target = std::fs::canonicalize(&path).ok()?;
            let flags = if read_only {
                Some(locked_flags(&target)?)
            } else {
                None
            };
            let depth = target.components().count();
            let path = CString::new(target.as_os_str().as_bytes()).ok()?;
            Some((
                depth,
                Mount {
                    path,
                    read_only: flags,
                },
            ))
        })
        .collect();
    mounts.sort_by_key(|(depth, _)| *depth);
    mounts.into_iter().map(|(_, mount)| mount).collect()
}

/// The flags of the mount `path` is on that a read-only remount must keep.
fn locked_flags(path: &Path) -> Option<libc::c_ulong> {
    let name = CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(name.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    let mut flags = 0;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if stat.f_flag & st != 0 {
            flags |= ms;
        }
    }
    Some(flags)
}

fn bind(mount: &Mount) -> io::Result<()> {
    let null = std::ptr::null();
    check(unsafe {
        libc::mount(
            mount.path.as_ptr(),
            mount.path.as_ptr(),
            null,
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })?;
    if let Some(kept) = mount.read_only {
        check(unsafe {
            libc::mount(
                null,
                mount.path.as_ptr(),
                null,
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept,
                std::ptr::null(),
            )
        })?;
    }
    Ok(())
}

/// The working directory was entered before the mounts: entered again by its path, it is
/// seen through them (a workspace mounted read-only over itself is then read-only here too).
fn reenter_working_directory() -> io::Result<()> {
    let mut path = [0 as libc::c_char; libc::PATH_MAX as usize];
    if unsafe { libc::getcwd(path.as_mut_ptr(), path.len()) }.is_null() {
        return Err(io::Error::last_os_error());
    }
    check(unsafe { libc::chdir(path.as_ptr()) })
}

fn write_proc(path: &std::ffi::CStr, text: &std::ffi::CStr) -> io::Result<()> {
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    let bytes = text.to_bytes();
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    unsafe { libc::close(fd) };
    if written != bytes.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Landlock: writes are handled, and allowed only beneath `writable` and on the devices.
fn ruleset(writable: &[PathBuf]) -> Result<RulesetCreated, landlock::RulesetError> {
    let write = AccessFs::from_write(HANDLED_ABI);
    // Handled, and granted nowhere: a device node made in the workspace (as root) would
    // reach the disk or memory behind every other rule.
    let allowed = write & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    Ruleset::default()
        .handle_access(write)?
        .create()?
        .add_rules(path_beneath_rules(writable, allowed))?
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, allowed))
}

/// seccomp: `ioctl(fd, TIOCSTI, …)` fails with EPERM. Without a controlling terminal a
/// command may still open one (`/dev/pts/N`), and root may push keystrokes into any.
fn no_tiocsti() -> Result<BpfProgram, seccompiler::Error> {
    let tiocsti =
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::TIOCSTI)?;
    refusing(
        vec![(libc::SYS_ioctl, vec![SeccompRule::new(vec![tiocsti])?])],
        libc::EPERM,
    )
}

/// seccomp: `socket` for any family but AF_UNIX, and io_uring (which opens sockets without
/// `socket`), fail with EAFNOSUPPORT: a program then says "Address family not supported",
/// which tells the denial apart from a refused write.
fn no_ip_sockets() -> Result<BpfProgram, seccompiler::Error> {
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )?;
    refusing(
        vec![
            (libc::SYS_socket, vec![SeccompRule::new(vec![not_unix])?]),
            (libc::SYS_io_uring_setup, Vec::new()),
        ],
        libc::EAFNOSUPPORT,
    )
}

/// A filter for this architecture under which the calls `rules` match fail with `errno`
/// and every other call is allowed.
fn refusing(
    rules: Vec<(i64, Vec<SeccompRule>)>,
    errno: i32,
) -> Result<BpfProgram, seccompiler::Error> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| seccompiler::Error::EmptyFilter)?;
    let filter = SeccompFilter::new(
        rules.into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

/// The Landlock ABI this kernel offers, or None.
pub fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (abi > 0).then_some(abi as i32)
}

/// Whether a child can have a mount namespace (as root, or through a user namespace):
/// tried once with `/bin/true`.
/// Closes every descriptor but `keep` (-1: none): a process that never execs must not hold
/// the command's pipes, or the descriptor std reports a failed exec on (the spawn would
/// wait for the whole command).
unsafe fn close_all_but(keep: libc::c_int) {
    for fd in 0..3 {
        if fd != keep {
            libc::close(fd);
        }
    }
    let closed = if keep >= 3 {
        libc::syscall(libc::SYS_close_range, 3u32, (keep - 1) as u32, 0u32) == 0
            && libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32) == 0
    } else {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) == 0
    };
    if !closed {
        for fd in 3..4096 {
            if fd != keep {
                libc::close(fd);
            }
        }
    }
}

/// Waits for `pid`, retrying on EINTR; its wait status, or None.
unsafe fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        let waited = libc::waitpid(pid, &mut status, 0);
        if waited == pid {
            return Some(status);
        }
        if waited < 0 && *libc::__errno_location() != libc::EINTR {
            return None;
        }
    }
}

/// Ends the calling process the way `status` says a process ended: its exit code, or its
/// signal.
unsafe fn end_like(status: libc::c_int) -> ! {
    if libc::WIFEXITED(status) {
        libc::_exit(libc::WEXITSTATUS(status));
    }
    let signal = libc::WTERMSIG(status);
    libc::signal(signal, libc::SIG_DFL);
    libc::kill(libc::getpid(), signal);
    libc::_exit(128 + signal)
}

/// After `unshare(CLONE_NEWPID)` the caller's next child is the namespace's first process
/// (PID 1): it stays as the namespace's init, reaping whatever is orphaned inside, and forks
/// the process that goes on to exec the command (so the command keeps ordinary signal
/// handling, which a PID 1 does not). When the command ends, the init ends, and the kernel
/// ends everything left in the namespace. The caller stays outside as their stand-in — the
/// process agentls started and waits for, in the command's process group, so a kill of the
/// group reaches the init too — and ends the way the command ended (the init passes the
/// command's wait status up a pipe: an init cannot end itself with a signal). Runs in the
/// forked child: system calls only.
fn stand_in_for_the_namespace() {
    // SAFETY: pipe2, fork, prctl, close, close_range, waitpid, read, write, signal, kill
    // and _exit are async-signal-safe; the buffers are on the stack.
    unsafe {
        let mut status_pipe = [-1 as libc::c_int; 2];
        if libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            libc::_exit(126);
        }
        let init = libc::fork();
        if init < 0 {
            libc::_exit(126);
        }
        if init == 0 {
            // The namespace's init: it dies with its stand-in, whatever kills that.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            let command = libc::fork();
            if command < 0 {
                libc::_exit(126);
            }
            if command == 0 {
                libc::close(status_pipe[0]);
                libc::close(status_pipe[1]);
                // A session of its own, as every command is (no terminal to push keys
                // into); the group's kill still reaches it through the init.
                libc::setsid();
                return;
            }
            close_all_but(status_pipe[1]);
            let mut ended: Option<libc::c_int> = None;
            while ended.is_none() {
                let mut status = 0;
                let waited = libc::waitpid(-1, &mut status, 0);
                if waited == command {
                    ended = Some(status);
                } else if waited < 0 && *libc::__errno_location() != libc::EINTR {
                    break;
                }
            }
            let status = ended.unwrap_or(126 << 8);
            let bytes = status.to_ne_bytes();
            libc::write(status_pipe[1], bytes.as_ptr().cast(), bytes.len());
            libc::_exit(0);
        }
        close_all_but(status_pipe[0]);
        let mut bytes = [0u8; 4];
        let mut read = 0;
        while read < bytes.len() {
            let n = libc::read(
                status_pipe[0],
                bytes[read..].as_mut_ptr().cast(),
                bytes.len() - read,
            );
            if n > 0 {
                read += n as usize;
            } else if n == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        let init_status = wait_for(init);
        if read == bytes.len() {
            end_like(libc::c_int::from_ne_bytes(bytes));
        }
        // The init was killed before the command ended: so was the command.
        end_like(init_status.unwrap_or(libc::SIGKILL))
    }
}

pub fn mount_namespace_works() -> bool {
    unshare_works(libc::CLONE_NEWNS)
}

/// Whether a command can have a PID namespace of its own (probed once, beside the mount
/// namespace: a machine may allow one and not the other).
fn pid_namespace_works() -> bool {
    static PROBED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROBED.get_or_init(|| unshare_works(libc::CLONE_NEWPID))
}

/// Whether a child can `unshare` these namespaces (in a user namespace of its own unless
/// root).
fn unshare_works(namespaces: libc::c_int) -> bool {
    use std::os::unix::process::CommandExt;
    let root = unsafe { libc::geteuid() } == 0;
    let mut probe = std::process::Command::new("/bin/true");
    unsafe {
        probe.pre_exec(move || {
            let flags = if root {
                namespaces
            } else {
                libc::CLONE_NEWUSER | namespaces
            };
            check(libc::unshare(flags))
        });
    }
    probe
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
