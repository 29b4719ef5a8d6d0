//! Git worktrees for subagents that work apart (`isolation: worktree`): one per child, in
//! agentls's state beside the session logs (`<workspace state>/worktrees/<name>`), on a
//! branch of its own (`agentls/<name>`) from the workspace's HEAD. At the child's end what
//! it changed is committed on that branch, the diff taken, and the worktree's directory
//! removed (the branch keeps the commit); a worktree left by a killed server is removed at
//! the next start (`sweep`). Every git here is `sandbox::pinned_git` (no hooks, fsmonitor
//! or user config), and a repository whose config runs a program on checkout (a filter) is
//! refused: `git worktree add` checks files out. Blocking.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::sandbox::pinned_git;

/// A diff longer than this is cut for the parent (the branch has all of it).
const MAX_DIFF_BYTES: usize = 24 * 1024;

/// A child's worktree.
#[derive(Debug, Clone)]
pub(super) struct Worktree {
    pub(super) path: PathBuf,
    pub(super) branch: String,
    /// The commit it started from.
    pub(super) base: String,
    /// The repository's top level.
    pub(super) repo: PathBuf,
}

/// What a child left on its branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Finished {
    /// `git diff --stat` and the diff (cut to `MAX_DIFF_BYTES`); empty: nothing changed,
    /// and the branch is deleted.
    pub(super) stat: String,
    pub(super) diff: String,
    pub(super) cut: bool,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut command: Command = pinned_git();
    command.arg("-C").arg(dir).args(args);
    command.stderr(std::process::Stdio::piped());
    let out = command
        .output()
        .map_err(|e| format!("git could not start: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!("git {} failed: {}", args.join(" "), why.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where the worktrees of a workspace are (beside its session logs' directory).
pub(super) fn dir_beside(sessions_dir: &Path) -> PathBuf {
    sessions_dir
        .parent()
        .unwrap_or(sessions_dir)
        .join("worktrees")
}

/// A branch-safe form of `name` (letters, digits, `-`, `_`).
fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Who keeps a worktree: a subagent's lives as long as this server (its directory names
/// the process, and `sweep` removes it once that is gone); a session's as long as the
/// session (kept across restarts, removed when the session is deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keeper {
    Process,
    Session,
}

/// A new worktree of the repository at `root` named `name`, under `dir`. Err says why not:
/// no repository, no commit yet, a config that runs programs on checkout.
pub(super) fn create(
    root: &Path,
    dir: &Path,
    name: &str,
    keeper: Keeper,
) -> Result<Worktree, String> {
    let repo = git(root, &["rev-parse", "--show-toplevel"])
        .map_err(|_| {
            format!(
                "isolation: worktree needs a git repository, and {} is not in one",
                root.display()
            )
        })?
        .trim()
        .to_string();
    let repo = PathBuf::from(repo);
    let keys = git(&repo, &["config", "--list", "--name-only"]).unwrap_or_default();
    if let Some(key) = keys
        .lines()
        .find(|key| crate::tools::snapshot::runs_a_program(key))
    {
        return Err(format!(
            "isolation: worktree is refused: the repository's config sets {key}, a program git would run when it checks files out"
        ));
    }
    let base = git(&repo, &["rev-parse", "--verify", "HEAD^{commit}"])
        .map_err(|_| {
            "isolation: worktree needs a commit to start from: the repository has none yet"
                .to_string()
        })?
        .trim()
        .to_string();
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = safe(name);
    let mut branch = format!("agentls/{name}");
    if git(
        &repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok()
    {
        branch = format!("agentls/{name}-{}", &base[..8.min(base.len())]);
    }
    // A subagent's directory names the server that owns it: `sweep` leaves a live one's
    // alone, and a session's (no process in its name) always.
    let path = match keeper {
        Keeper::Process => dir.join(format!("{}-{name}", std::process::id())),
        Keeper::Session => dir.join(&name),
    };
    let shown = path.to_string_lossy().into_owned();
    git(
        &repo,
        &["worktree", "add", "--quiet", "-b", &branch, &shown, &base],
    )?;
    Ok(Worktree {
        path,
        branch,
        base,
        repo,
    })
}

/// Commits what the child changed on its branch (as agentls, `message`), takes the diff
/// from the base, and removes the worktree's directory. A branch with nothing on it is
/// deleted.
pub(super) fn finish(worktree: &Worktree, message: &str) -> Result<Finished, String> {
    let changed = commit_all(&worktree.path, message)?;
    let range = format!("{}..{}", worktree.base, worktree.branch);
    let stat = git(
        &worktree.repo,
        &["diff", "--stat", "--no-ext-diff", "--no-textconv", &range],
    )?;
    let mut diff = git(
        &worktree.repo,
        &["diff", "--no-ext-diff", "--no-textconv", &range],
    )?;
    let cut = diff.len() > MAX_DIFF_BYTES;
    if cut {
        let mut end = MAX_DIFF_BYTES;
        while !diff.is_char_boundary(end) {
            end -= 1;
        }
        diff.truncate(end);
    }
    remove(worktree)?;
    if !changed {
        let _ = git(
            &worktree.repo,
            &["branch", "--quiet", "-D", &worktree.branch],
        );
    }
    Ok(Finished { stat, diff, cut })
}

/// Removes the worktree's directory and git's record of it (the branch stays).
pub(super) fn remove(worktree: &Worktree) -> Result<(), String> {
    let shown = worktree.path.to_string_lossy().into_owned();
    git(&worktree.repo, &["worktree", "remove", "--force", &shown]).map(|_| ())
}

/// Removes every worktree under `dir` whose server is gone (a kill -9 ended it before its
/// children did): the directory's name starts with the owner's process id. Their branches
/// stay.
pub(super) fn sweep(root: &Path, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name
            .split('-')
            .next()
            .and_then(|pid| pid.parse::<u32>().ok());
        let alive =
            |pid: u32| pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        // A session's worktree (no process in its name) is its session's to remove.
        if owner.is_none_or(alive) {
            continue;
        }
        let shown = path.to_string_lossy().into_owned();
        if git(root, &["worktree", "remove", "--force", &shown]).is_ok()
            || std::fs::remove_dir_all(&path).is_ok()
        {
            removed += 1;
        }
    }
    let _ = git(root, &["worktree", "prune"]);
    removed
}

/// A file a session's worktree changed from its base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ChangedFile {
    /// Relative to the repository's top level, `/`-separated.
    pub(super) path: String,
    pub(super) status: FileStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileStatus {
    Added,
    Modified,
    Deleted,
}

/// What the worktree at `path` changed from `base`, committed or not (everything is
/// staged first: a new file counts).
pub(super) fn changed_files(path: &Path, base: &str) -> Result<Vec<ChangedFile>, String> {
    git(path, &["add", "--all"])?;
    let listed = git(
        path,
        &[
            "diff",
            "--cached",
            "--name-status",
            "--no-renames",
            "-z",
            base,
        ],
    )?;
    let mut fields = listed.split('\0').filter(|f| !f.is_empty());
    let mut files = Vec::new();
    while let (Some(status), Some(file)) = (fields.next(), fields.next()) {
        let status = match status.chars().next() {
            Some('A') => FileStatus::Added,
            Some('D') => FileStatus::Deleted,
            _ => FileStatus::Modified,
        };
        files.push(ChangedFile {
            path: file.to_string(),
            status,
        });
    }
    Ok(files)
}

/// The text of `path` at commit `base` (None: not valid UTF-8, or not there).
pub(super) fn text_at(repo: &Path, base: &str, path: &str) -> Option<String> {
    let mut command: Command = pinned_git();
    command
        .arg("-C")
        .arg(repo)
        .args(["cat-file", "blob", &format!("{base}:{path}")]);
    let out = command.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).ok())
        .flatten()
}

/// Commits what the worktree changed on its branch (as agentls), keeping the worktree: a
/// session that works apart leaves its work where `git merge BRANCH` finds it.
pub(super) fn commit_all(path: &Path, message: &str) -> Result<bool, String> {
    git(path, &["add", "--all"])?;
    if git(path, &["diff", "--cached", "--name-only"])?
        .trim()
        .is_empty()
    {
        return Ok(false);
    }
    git(
        path,
        &[
            "-c",
            "user.name=agentls",
            "-c",
            "user.email=agentls@localhost",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            message,
        ],
    )?;
    Ok(true)
}

/// The repository's top level for `root` (where a worktree's paths start).
pub(super) fn top_level(root: &Path) -> Result<PathBuf, String> {
    Ok(PathBuf::from(
        git(root, &["rev-parse", "--show-toplevel"])?.trim(),
    ))
}

/// The worktree of `branch` made again at `path` (a cleanup removed its directory).
pub(super) fn restore(root: &Path, path: &Path, branch: &str) -> Result<(), String> {
    let _ = git(root, &["worktree", "prune"]);
    let shown = path.to_string_lossy().into_owned();
    git(root, &["worktree", "add", "--quiet", &shown, branch]).map(|_| ())
}

/// Removes the worktree at `path` (its branch stays).
pub(super) fn remove_path(root: &Path, path: &Path) -> Result<(), String> {
    let shown = path.to_string_lossy().into_owned();
    git(root, &["worktree", "remove", "--force", &shown]).map(|_| ())
}
