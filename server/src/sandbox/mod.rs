//! The command sandbox's adapter: whether this machine can have one (probed once), the
//! places a policy is made of (the temp directory, `$HOME`, agentls's own directories), the
//! status the editors show, and confining a child process to a policy. The policy itself is
//! the core's (`agentls_core::sandbox`); the enforcement is `linux`.
//!
//! agentls itself is never sandboxed, only the children it confines; hooks and MCP servers
//! are the user's own programs and are not confined.

#[cfg(target_os = "linux")]
pub mod linux;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use agentls_core::config::Config;
use agentls_core::sandbox::{SandboxMode, SandboxPlaces, SandboxPolicy, SandboxSettings};

/// Simulates a kernel without Landlock, for the tests: read by debug builds only (the ones
/// the tests drive), so the shipped binary has no switch that takes its sandbox away.
pub const UNAVAILABLE_ENV: &str = "AGENTLS_SANDBOX_UNAVAILABLE";

/// What this machine offers, probed once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    /// Why no sandbox can be had; None when one can.
    pub missing: Option<String>,
    /// Landlock's ABI version, when there is one.
    pub landlock_abi: Option<i32>,
    /// Protected paths can be mounted read-only (else a protected path the command changes is
    /// only caught when it created it).
    pub mount_namespace: bool,
}

pub fn availability() -> &'static Availability {
    static PROBED: OnceLock<Availability> = OnceLock::new();
    PROBED.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> Availability {
    let simulated = cfg!(debug_assertions)
        && std::env::var_os(UNAVAILABLE_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    if simulated {
        return Availability {
            missing: Some(format!(
                "Landlock is not available ({UNAVAILABLE_ENV} is set)"
            )),
            landlock_abi: None,
            mount_namespace: false,
        };
    }
    let abi = linux::landlock_abi();
    Availability {
        missing: match abi {
            None => Some("Landlock is not available on this kernel".to_string()),
            Some(_) => None,
        },
        landlock_abi: abi,
        mount_namespace: abi.is_some() && linux::mount_namespace_works(),
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Availability {
    Availability {
        missing: Some(format!(
            "agentls has no sandbox on {}",
            std::env::consts::OS
        )),
        landlock_abi: None,
        mount_namespace: false,
    }
}

/// The sandbox as the editors show it (`agent/status`, `agent/sandbox/status`).
pub fn status(settings: &SandboxSettings) -> crate::protocol::lsp::SandboxState {
    let available = availability();
    let wanted = settings.mode != SandboxMode::Off;
    let enforced = wanted && available.missing.is_none();
    let message = match (&available.missing, wanted) {
        (Some(missing), true) if settings.required => Some(format!(
            "no sandbox: {missing}; commands are refused (sandbox.required)"
        )),
        (Some(missing), true) => Some(format!(
            "no sandbox: {missing}; commands run with approvals alone"
        )),
        (None, true) if !available.mount_namespace => Some(
            "no mount namespace: protected paths (.git/hooks, .git/config, .agents, .mcp.json) are only checked after each command"
                .to_string(),
        ),
        _ => None,
    };
    crate::protocol::lsp::SandboxState {
        mode: settings.mode.name().to_string(),
        available: available.missing.is_none(),
        network: !enforced || settings.network,
        enforced,
        message,
    }
}

/// Says once per process, in the log and to the user, that commands run without the sandbox
/// that the settings ask for.
pub fn warn_once_if_missing(settings: &SandboxSettings, show: impl FnOnce(String)) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.load(Ordering::Relaxed) {
        return;
    }
    let status = status(settings);
    if let Some(message) = status.message.filter(|_| !status.enforced) {
        if !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!("{message}");
            show(message);
        }
    }
}

/// A git command that runs nothing a repository configures, for the git agentls runs
/// outside the sandbox on a workspace a command may have changed: no user or system config,
/// no inherited `GIT_*`, and `core.fsmonitor`, hooks and the pager off on the command line
/// (which wins over every config file).
pub fn pinned_git() -> std::process::Command {
    let mut command = std::process::Command::new("git");
    for (name, _) in std::env::vars_os() {
        if name.as_encoded_bytes().starts_with(b"GIT_") {
            command.env_remove(name);
        }
    }
    command
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.untrackedCache=false",
            "-c",
            "core.pager=cat",
        ])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command
}

/// The hooks directory `root`'s git config names (`core.hooksPath`, relative to the root
/// or absolute), resolved; None when it names none.
pub fn git_hooks_dir(root: &std::path::Path) -> Option<PathBuf> {
    let out = pinned_git()
        .arg("-C")
        .arg(root)
        .args(["config", "--local", "--get", "core.hooksPath"])
        .output()
        .ok()?;
    let value = String::from_utf8(out.stdout).ok()?;
    let value = value.trim();
    if !out.status.success() || value.is_empty() {
        return None;
    }
    let path = match value.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => root.join(value),
    };
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

/// The places of a policy for `roots`: the temp directory, `$HOME`, and agentls's settings
/// and state directories, canonical where they exist (Landlock sees real paths).
pub fn places(roots: Vec<PathBuf>, config: &Config) -> SandboxPlaces {
    let real = |path: PathBuf| std::fs::canonicalize(&path).unwrap_or(path);
    let mut own_dirs = vec![crate::store::session_log::state_dir(
        config.state_dir.as_deref(),
    )];
    if let Some(settings) =
        crate::store::settings::path().and_then(|p| p.parent().map(PathBuf::from))
    {
        own_dirs.push(settings);
    }
    let roots: Vec<PathBuf> = roots.into_iter().map(real).collect();
    SandboxPlaces {
        hook_dirs: roots
            .iter()
            .filter_map(|root| git_hooks_dir(root))
            .collect(),
        roots,
        temp_dir: real(std::env::temp_dir()),
        home: std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(|home| real(PathBuf::from(home))),
        own_dirs: own_dirs.into_iter().map(real).collect(),
    }
}

/// The policy a command runs under: the settings (read-only with no network in plan mode)
/// over `places`; None when the sandbox is off or cannot be had.
pub fn policy_for(
    settings: &SandboxSettings,
    plan_mode: bool,
    places: &SandboxPlaces,
) -> Option<SandboxPolicy> {
    if availability().missing.is_some() {
        return None;
    }
    let settings = if plan_mode {
        agentls_core::sandbox::plan_mode(settings)
    } else {
        settings.clone()
    };
    agentls_core::sandbox::policy(&settings, places)
}

/// Makes `command` start confined to `policy`. Err when the policy cannot be prepared.
#[cfg(target_os = "linux")]
pub fn confine(command: &mut std::process::Command, policy: &SandboxPolicy) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let mut confinement = linux::Confinement::prepare(policy, availability().mount_namespace)?;
    // SAFETY: `apply` only makes system calls on data prepared before the fork.
    unsafe {
        command.pre_exec(move || confinement.apply());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn confine(_: &mut std::process::Command, _: &SandboxPolicy) -> std::io::Result<()> {
    Err(std::io::Error::other("no sandbox on this OS"))
}

/// `agentls sandbox --policy JSON -- PROGRAM ARGS…`: runs PROGRAM confined to the policy
/// (what a client terminal runs for a sandboxed `shell` call), or with no `--policy` to the
/// settings' policy for the current directory. Its exit code is PROGRAM's; 126 when it could
/// not be confined or started.
pub fn run_confined(policy: Option<&str>, program: &[std::ffi::OsString]) -> i32 {
    let Some((first, rest)) = program.split_first() else {
        eprintln!("agentls sandbox: no command given");
        return 2;
    };
    let policy = match policy {
        Some(json) => match serde_json::from_str::<SandboxPolicy>(json) {
            Ok(policy) => policy,
            Err(err) => {
                eprintln!("agentls sandbox: the policy is not valid: {err}");
                return 2;
            }
        },
        None => {
            let config = Config::default();
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            match policy_for(&config.sandbox, false, &places(vec![cwd], &config)) {
                Some(policy) => policy,
                None => {
                    let why = availability().missing.clone().unwrap_or_default();
                    eprintln!("agentls sandbox: no sandbox: {why}");
                    return 126;
                }
            }
        }
    };
    let mut command = std::process::Command::new(first);
    command.args(rest);
    if let Err(err) = confine(&mut command, &policy) {
        eprintln!("agentls sandbox: cannot prepare the sandbox: {err}");
        return 126;
    }
    match command.status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
        }
        Err(err) => {
            eprintln!(
                "agentls sandbox: cannot run {}: {err}",
                first.to_string_lossy()
            );
            126
        }
    }
}

/// How a client terminal starts a command confined to `policy`: this binary's `sandbox`
/// subcommand, the policy as JSON, then `--` and the command.
pub fn launcher(policy: &SandboxPolicy) -> Result<(String, Vec<String>), String> {
    let exe = std::env::current_exe()
        .map_err(|err| format!("cannot find agentls's own binary for the sandbox: {err}"))?;
    let policy = serde_json::to_string(policy).map_err(|err| err.to_string())?;
    Ok((
        exe.to_string_lossy().into_owned(),
        vec!["sandbox".into(), "--policy".into(), policy, "--".into()],
    ))
}
