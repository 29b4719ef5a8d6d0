//! What a command may touch: the `sandbox` settings, the policy a `shell` call runs under
//! (which directories it may write, which paths inside them stay read-only, whether it may
//! open IP sockets), and whether a failed command's output says the sandbox stopped it.
//! Plain data and functions; the server enforces the policy (Landlock, a mount namespace,
//! seccomp) between fork and exec.

use std::path::{Path, PathBuf};

/// `sandbox` / `sandbox.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Writes in the workspace roots, the temp directory and `writableRoots` only.
    #[default]
    WorkspaceWrite,
    /// No writes but the temp directory.
    ReadOnly,
    /// No sandbox: approvals alone.
    Off,
}

pub const SANDBOX_MODES: [&str; 3] = ["workspace-write", "read-only", "off"];

impl SandboxMode {
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }

    pub fn from_name(name: &str) -> Option<SandboxMode> {
        match name {
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "read-only" => Some(SandboxMode::ReadOnly),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }
}

/// The `sandbox.*` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// `sandbox.network`: commands may open IP sockets.
    pub network: bool,
    /// `sandbox.writableRoots`: more directories a command may write in.
    pub writable_roots: Vec<PathBuf>,
    /// `sandbox.required`: refuse commands when no sandbox can be had.
    pub required: bool,
}

/// Workspace entries no sandboxed command may change, even where it may write: what agentls,
/// git or an MCP client would later run outside the sandbox.
pub const PROTECTED_IN_ROOT: [&str; 4] = [".git/hooks", ".git/config", ".agents", ".mcp.json"];

/// The rules one command runs under.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxPolicy {
    /// `workspace-write` or `read-only` (an `off` policy is no policy).
    pub mode: String,
    pub network: bool,
    /// Directories (and their trees) the command may write in.
    pub writable: Vec<PathBuf>,
    /// Paths inside `writable` that stay read-only (when they exist; one the command creates
    /// is removed after it).
    pub protected: Vec<PathBuf>,
    /// Directories pinned in place (a bind mount on themselves) so that a protected path
    /// under them cannot be moved away and replaced: each root's `.git`.
    pub pinned: Vec<PathBuf>,
}

/// Where the policy's paths come from, read by the server from the process and the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPlaces {
    pub roots: Vec<PathBuf>,
    pub temp_dir: PathBuf,
    pub home: Option<PathBuf>,
    /// agentls's own settings and state directories.
    pub own_dirs: Vec<PathBuf>,
    /// The hooks directories git's config names (`core.hooksPath`, e.g. husky's `.husky/`):
    /// protected like `.git/hooks`.
    pub hook_dirs: Vec<PathBuf>,
}

/// The policy a command runs under: `None` when the mode is `off`. In `read-only` only the
/// temp directory is writable. agentls's own directories, and `$HOME` when it lies inside a
/// writable directory (a test's home in the temp directory) without holding a workspace
/// root, stay read-only.
pub fn policy(settings: &SandboxSettings, places: &SandboxPlaces) -> Option<SandboxPolicy> {
    let mut writable = vec![places.temp_dir.clone()];
    if settings.mode == SandboxMode::WorkspaceWrite {
        writable.extend(places.roots.iter().cloned());
        writable.extend(settings.writable_roots.iter().cloned());
    } else if settings.mode == SandboxMode::Off {
        return None;
    }
    let inside_writable = |path: &Path| writable.iter().any(|dir| path.starts_with(dir));
    let mut protected: Vec<PathBuf> = Vec::new();
    let mut pinned = Vec::new();
    for root in &places.roots {
        if settings.mode == SandboxMode::WorkspaceWrite {
            protected.extend(PROTECTED_IN_ROOT.iter().map(|name| root.join(name)));
            pinned.push(root.join(".git"));
        } else if inside_writable(root) {
            // A read-only workspace that lies in the temp directory stays read-only.
            protected.push(root.clone());
        }
    }
    if settings.mode == SandboxMode::WorkspaceWrite {
        protected.extend(
            places
                .hook_dirs
                .iter()
                .filter(|dir| inside_writable(dir))
                .cloned(),
        );
    }
    for dir in &places.own_dirs {
        if inside_writable(dir) {
            protected.push(dir.clone());
        }
    }
    if let Some(home) = &places.home {
        let holds_a_root = places.roots.iter().any(|root| root.starts_with(home));
        if inside_writable(home) && !holds_a_root && !writable.contains(home) {
            protected.push(home.clone());
        }
    }
    dedup_keep_order(&mut writable);
    dedup_keep_order(&mut protected);
    Some(SandboxPolicy {
        mode: settings.mode.name().to_string(),
        network: settings.network,
        writable,
        protected,
        pinned,
    })
}

/// The policy of a session in plan mode: nothing written but the temp directory, no network.
pub fn plan_mode(settings: &SandboxSettings) -> SandboxSettings {
    SandboxSettings {
        mode: SandboxMode::ReadOnly,
        network: false,
        writable_roots: Vec::new(),
        required: settings.required,
    }
}

fn dedup_keep_order(paths: &mut Vec<PathBuf>) {
    let mut seen = std::collections::HashSet::new();
    paths.retain(|path| seen.insert(path.clone()));
}

/// Why a command that failed under `policy` was likely stopped by the sandbox, from its
/// output: a denied write, a read-only file system, a refused socket. None when it exited 0
/// or its output shows none of these.
pub fn denial(output: &str, exit_code: Option<i32>, policy: &SandboxPolicy) -> Option<String> {
    if exit_code == Some(0) {
        return None;
    }
    let lower = output.to_lowercase();
    const WRITE_DENIED: [&str; 3] = [
        "read-only file system",
        "permission denied",
        "operation not permitted",
    ];
    const NETWORK_DENIED: [&str; 8] = [
        "network is unreachable",
        "could not resolve host",
        "temporary failure in name resolution",
        "name or service not known",
        "failed to connect",
        "couldn't connect",
        "connection refused",
        "address family not supported",
    ];
    if !policy.network {
        if let Some(sign) = NETWORK_DENIED.iter().find(|sign| lower.contains(*sign)) {
            return Some(format!(
                "the sandbox has no network, and the command failed with \"{sign}\""
            ));
        }
    }
    if let Some(sign) = WRITE_DENIED.iter().find(|sign| lower.contains(*sign)) {
        let what = if policy.mode == SandboxMode::ReadOnly.name() {
            "the sandbox is read-only"
        } else {
            "the sandbox lets commands write only in the workspace and the temp directory"
        };
        return Some(format!("{what}, and the command failed with \"{sign}\""));
    }
    None
}

/// The command sandbox: what the settings ask for and what this machine gives (built by the
/// server's `sandbox::status`).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct SandboxState {
    /// `workspace-write`, `read-only` or `off` (the `sandbox` setting).
    pub mode: String,
    /// This machine can confine a command (Linux with Landlock).
    pub available: bool,
    /// Commands may open IP sockets (true whenever no sandbox is enforced).
    pub network: bool,
    /// Commands run confined: the mode is not `off` and a sandbox is available.
    pub enforced: bool,
    /// Why the sandbox is missing or weaker than asked, for the status bar and health check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> SandboxPlaces {
        SandboxPlaces {
            roots: vec![PathBuf::from("/w/a")],
            temp_dir: PathBuf::from("/tmp"),
            home: Some(PathBuf::from("/home/u")),
            own_dirs: vec![PathBuf::from("/home/u/.config/agentls")],
            hook_dirs: Vec::new(),
        }
    }

    #[test]
    fn workspace_write_writes_roots_temp_and_extra_dirs_but_not_the_protected_paths() {
        let settings = SandboxSettings {
            writable_roots: vec![PathBuf::from("/cache")],
            ..SandboxSettings::default()
        };
        let policy = policy(&settings, &places()).unwrap();
        let writable: Vec<_> = policy
            .writable
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(writable, ["/tmp", "/w/a", "/cache"]);
        let protected: Vec<_> = policy
            .protected
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            protected,
            [
                "/w/a/.git/hooks",
                "/w/a/.git/config",
                "/w/a/.agents",
                "/w/a/.mcp.json"
            ]
        );
        assert_eq!(policy.pinned, [PathBuf::from("/w/a/.git")]);
        assert!(!policy.network);
    }

    #[test]
    fn read_only_writes_only_the_temp_directory_and_off_is_no_policy() {
        let read_only = SandboxSettings {
            mode: SandboxMode::ReadOnly,
            network: true,
            ..SandboxSettings::default()
        };
        let policy = policy(&read_only, &places()).unwrap();
        assert_eq!(policy.writable, [PathBuf::from("/tmp")]);
        assert!(policy.protected.is_empty() && policy.network);
        let in_temp = SandboxPlaces {
            roots: vec![PathBuf::from("/tmp/ws")],
            ..places()
        };
        let policy = super::policy(&read_only, &in_temp).unwrap();
        assert_eq!(policy.protected, [PathBuf::from("/tmp/ws")]);
        let off = SandboxSettings {
            mode: SandboxMode::Off,
            ..SandboxSettings::default()
        };
        assert_eq!(super::policy(&off, &places()), None);
        let plan = plan_mode(&SandboxSettings {
            network: true,
            ..SandboxSettings::default()
        });
        assert_eq!((plan.mode, plan.network), (SandboxMode::ReadOnly, false));
    }

    #[test]
    fn a_home_or_state_directory_inside_the_temp_directory_stays_read_only() {
        let places = SandboxPlaces {
            roots: vec![PathBuf::from("/tmp/t/ws")],
            temp_dir: PathBuf::from("/tmp"),
            home: Some(PathBuf::from("/tmp/t/home")),
            own_dirs: vec![PathBuf::from("/tmp/t/state/agentls")],
            hook_dirs: Vec::new(),
        };
        let policy = policy(&SandboxSettings::default(), &places).unwrap();
        assert!(policy.protected.contains(&PathBuf::from("/tmp/t/home")));
        assert!(policy
            .protected
            .contains(&PathBuf::from("/tmp/t/state/agentls")));
        // A home that holds the workspace is not made read-only over it.
        let holding = SandboxPlaces {
            home: Some(PathBuf::from("/tmp/t")),
            ..places
        };
        let policy = super::policy(&SandboxSettings::default(), &holding).unwrap();
        assert!(!policy.protected.contains(&PathBuf::from("/tmp/t")));
    }

    #[test]
    fn denials_are_read_from_failed_output_only() {
        let policy = policy(&SandboxSettings::default(), &places()).unwrap();
        let denied = denial(
            "touch: cannot touch '/etc/x': Permission denied\n",
            Some(1),
            &policy,
        );
        assert!(denied.unwrap().contains("permission denied"));
        assert_eq!(denial("Permission denied", Some(0), &policy), None);
        assert_eq!(denial("error: test failed", Some(101), &policy), None);
        let net = denial("curl: (7) Failed to connect to 127.0.0.1", Some(7), &policy);
        assert!(net.unwrap().contains("no network"));
        let open = SandboxPolicy {
            network: true,
            ..policy
        };
        assert_eq!(denial("curl: (7) Failed to connect", Some(7), &open), None);
    }
}
