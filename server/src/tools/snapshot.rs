//! The snapshots around a shell command that tell what it changed in the workspace: `git
//! status` (and HEAD) where the root is in a git repository, else the stat of every file the
//! index would list. Taking them is IO; comparing them is `agentls_core::snapshot::changes`.
//!
//! Read-only towards git: `GIT_OPTIONAL_LOCKS=0` keeps `git status` from taking the index
//! lock (a user's concurrent `git commit` must never fail because the agent looked).
//!
//! Git runs here outside the sandbox, on a repository a command may just have changed, so
//! it must run nothing the repository configures: the user's and the system's config are
//! not read, `core.fsmonitor` and hooks are turned off on the command line (which wins over
//! every config file), submodules are not entered, and a repository whose config names a
//! program git could run on a work tree (a filter, a textconv, an external diff) is walked
//! instead of asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use agentls_core::event::ChangedPath;
use agentls_core::paths;
use agentls_core::snapshot::{self, DirtyPath, FileStat, Snapshot};

/// Beyond this many files (no git), no snapshot is taken: two walks of a huge tree around
/// every command would cost more than the ledger gains.
const MAX_WALKED_FILES: usize = 20_000;

/// The state before a command.
pub struct Before {
    root: PathBuf,
    /// The repository's top level, when the root is in one.
    git_top: Option<PathBuf>,
    head: Option<String>,
    snapshot: Snapshot,
    started_ns: i128,
}

/// The snapshot of `root` before a command; `None` when none can be taken (a tree too large
/// to walk).
pub async fn before(root: &Path) -> Option<Before> {
    let started_ns = now_ns();
    let root = root.to_path_buf();
    match git_top(&root).await {
        Some(top) => {
            let head = git_head(&top).await;
            let dirty = git_dirty(&root, &top).await?;
            Some(Before {
                root,
                git_top: Some(top),
                head,
                snapshot: Snapshot::Git {
                    dirty,
                    others: BTreeMap::new(),
                },
                started_ns,
            })
        }
        None => {
            let walked = root.clone();
            let files = tokio::task::spawn_blocking(move || walk(&walked))
                .await
                .ok()
                .flatten()?;
            Some(Before {
                root,
                git_top: None,
                head: None,
                snapshot: Snapshot::Files(files),
                started_ns,
            })
        }
    }
}

/// What changed since `before`, as paths shown to the model (relative to `roots`).
pub async fn changes_since(before: Before, roots: &[PathBuf]) -> Vec<ChangedPath> {
    let (after, head_changes, base) = match &before.git_top {
        Some(top) => {
            // The command may have given the repository such a config: nothing is run then.
            if config_runs_a_program(&before.root).await {
                return Vec::new();
            }
            let Some(dirty) = git_dirty(&before.root, top).await else {
                return Vec::new();
            };
            let head = git_head(top).await;
            let head_changes = match (&before.head, &head) {
                (Some(old), Some(new)) if old != new => {
                    git_head_changes(old, new, &before.root).await
                }
                _ => Vec::new(),
            };
            // The stat now of paths clean after the command that were dirty before or that
            // HEAD's move touched.
            let Snapshot::Git {
                dirty: dirty_before,
                ..
            } = &before.snapshot
            else {
                return Vec::new();
            };
            let others = dirty_before
                .keys()
                .chain(head_changes.iter().map(|c| &c.path))
                .filter(|path| !dirty.contains_key(*path))
                .map(|path| (path.clone(), stat(&top.join(path))))
                .collect();
            (Snapshot::Git { dirty, others }, head_changes, top.clone())
        }
        None => {
            let walked = before.root.clone();
            let Some(files) = tokio::task::spawn_blocking(move || walk(&walked))
                .await
                .ok()
                .flatten()
            else {
                return Vec::new();
            };
            (Snapshot::Files(files), Vec::new(), before.root.clone())
        }
    };
    snapshot::changes(&before.snapshot, &after, &head_changes, before.started_ns)
        .into_iter()
        .map(|(path, change)| ChangedPath {
            path: paths::display(&base.join(path), roots),
            change,
        })
        .collect()
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

fn stat(path: &Path) -> Option<FileStat> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_dir() {
        return None;
    }
    use std::os::unix::fs::MetadataExt;
    Some(FileStat {
        mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        size: meta.len(),
        inode: meta.ino(),
    })
}

async fn git(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let output = tokio::process::Command::from(crate::sandbox::pinned_git())
        .arg("-C")
        .arg(dir)
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .ok()?;
    output.status.success().then_some(output.stdout)
}

/// Whether a config key names a program git may run on a work tree (`git status` hashes a
/// changed file through its clean filter).
pub(crate) fn runs_a_program(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let sub = |section: &str, names: &[&str]| {
        key.strip_prefix(section)
            .is_some_and(|rest| names.iter().any(|name| rest.ends_with(&format!(".{name}"))))
    };
    sub("filter.", &["clean", "smudge", "process"])
        || sub("diff.", &["textconv", "command"])
        || key == "diff.external"
}

/// Whether the config git would read at `root` names a program it could run (logged).
async fn config_runs_a_program(root: &Path) -> bool {
    let Some(names) = git(root, &["config", "--list", "--name-only"]).await else {
        return false;
    };
    let found = String::from_utf8_lossy(&names)
        .lines()
        .find(|key| runs_a_program(key))
        .map(str::to_string);
    if let Some(key) = &found {
        tracing::warn!(
            "{}: the repository's config sets {key}: git is not asked what changed there",
            root.display()
        );
    }
    found.is_some()
}

/// The top level of the repository `root` is in, when git may be asked about it: None
/// outside a repository, or when its config names a program (then the tree is walked).
async fn git_top(root: &Path) -> Option<PathBuf> {
    if config_runs_a_program(root).await {
        return None;
    }
    let out = git(root, &["rev-parse", "--show-toplevel"]).await?;
    let top = String::from_utf8(out).ok()?;
    let top = PathBuf::from(top.trim_end_matches('\n'));
    // Compared with the canonical roots.
    std::fs::canonicalize(&top).ok()
}

async fn git_head(top: &Path) -> Option<String> {
    let out = git(top, &["rev-parse", "-q", "--verify", "HEAD"]).await?;
    Some(String::from_utf8_lossy(&out).trim().to_string())
}

/// The dirty paths under `root` (repository-relative), with their stat now.
async fn git_dirty(root: &Path, top: &Path) -> Option<BTreeMap<String, DirtyPath>> {
    let out = git(
        root,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=all",
            "--no-renames",
            "--",
            ".",
        ],
    )
    .await?;
    Some(
        snapshot::parse_git_status(&out)
            .into_iter()
            .map(|(status, path)| {
                let stat = stat(&top.join(&path));
                (path, DirtyPath { status, stat })
            })
            .collect(),
    )
}

/// The files that differ between two commits, under `root`.
async fn git_head_changes(old: &str, new: &str, root: &Path) -> Vec<snapshot::HeadChange> {
    let Some(out) = git(
        root,
        &[
            "diff",
            "--name-status",
            "--no-renames",
            "-z",
            old,
            new,
            "--",
            ".",
        ],
    )
    .await
    else {
        return Vec::new();
    };
    // Paths from the top level, like `git status --porcelain`.
    snapshot::parse_name_status(&out)
}

/// The stat of every file the index would list under `root` (relative paths), or `None` past
/// MAX_WALKED_FILES.
fn walk(root: &Path) -> Option<BTreeMap<String, FileStat>> {
    let mut files = BTreeMap::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if files.len() >= MAX_WALKED_FILES {
            tracing::debug!(
                "{}: more than {MAX_WALKED_FILES} files and no git: shell changes are not tracked",
                root.display()
            );
            return None;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        if let Some(stat) = stat(entry.path()) {
            files.insert(relative.to_string_lossy().into_owned(), stat);
        }
    }
    Some(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_core::snapshot::ChangeKind;
    use std::process::Command;

    fn sh(dir: &Path, script: &str) {
        let status = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(status.success(), "{script}");
    }

    fn shown(changes: &[ChangedPath]) -> Vec<(String, ChangeKind)> {
        changes.iter().map(|c| (c.path.clone(), c.change)).collect()
    }

    #[test]
    fn config_keys_that_run_a_program_are_known() {
        for key in [
            "filter.lfs.clean",
            "filter.x.smudge",
            "filter.a.b.process",
            "diff.pdf.textconv",
            "diff.tool.command",
            "diff.external",
            "FILTER.X.CLEAN",
        ] {
            assert!(runs_a_program(key), "{key}");
        }
        for key in [
            "core.fsmonitor",
            "user.name",
            "diff.renames",
            "filter.x.required",
        ] {
            assert!(!runs_a_program(key), "{key}");
        }
    }

    /// A repository whose config sets core.fsmonitor or a clean filter runs neither when the
    /// snapshots are taken (outside the sandbox), and its changes are still found.
    #[tokio::test]
    async fn the_snapshots_run_nothing_the_repository_configures() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let marker = outside.path().join("ran-").display().to_string();
        sh(
            &root,
            &format!(
                "git init -q -b main && printf 'a\\n' > a.txt && git add . && git commit -qm one \
                 && git config core.fsmonitor 'touch {marker}fsmonitor; false'"
            ),
        );
        let taken = before(&root).await.unwrap();
        std::fs::write(root.join("a.txt"), "b\n").unwrap();
        let changes = changes_since(taken, std::slice::from_ref(&root)).await;
        assert_eq!(
            shown(&changes),
            [("a.txt".to_string(), ChangeKind::Modified)]
        );
        assert!(!Path::new(&format!("{marker}fsmonitor")).exists());
        // A clean filter: the tree is walked, git is not asked.
        sh(
            &root,
            &format!(
                "echo '* filter=x' > .gitattributes && git config filter.x.clean 'touch {marker}filter; cat'"
            ),
        );
        let taken = before(&root).await.unwrap();
        std::fs::write(root.join("a.txt"), "c\n").unwrap();
        let changes = changes_since(taken, std::slice::from_ref(&root)).await;
        assert_eq!(
            shown(&changes),
            [("a.txt".to_string(), ChangeKind::Modified)]
        );
        assert!(!Path::new(&format!("{marker}filter")).exists());
    }

    #[tokio::test]
    async fn a_git_workspace_reports_what_rm_sed_a_generator_and_a_checkout_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        sh(
            &root,
            "git init -q -b main && printf 'a\\n' > a.txt && printf 'b\\n' > b.txt && printf 'c\\n' > c.txt \
             && git add . && git commit -qm one && git checkout -qb other && printf 'c2\\n' > c.txt \
             && printf 'n\\n' > n.txt && git add . && git commit -qm two && git checkout -q main \
             && printf 'dirty\\n' > b.txt",
        );
        let roots = vec![root.clone()];
        let before = before(&root).await.unwrap();
        sh(
            &root,
            "rm a.txt && sed -i 's/dirty/sed/' b.txt && mkdir -p gen && echo x > gen/out.rs",
        );
        assert_eq!(
            shown(&changes_since(before, &roots).await),
            vec![
                ("a.txt".to_string(), ChangeKind::Deleted),
                ("b.txt".to_string(), ChangeKind::Modified),
                ("gen/out.rs".to_string(), ChangeKind::Created),
            ]
        );
        // A checkout of another branch: every file it rewrote, though the tree is as clean
        // after as before.
        sh(&root, "git add -A && git commit -qm three");
        let before = super::before(&root).await.unwrap();
        sh(&root, "git checkout -q other");
        assert_eq!(
            shown(&changes_since(before, &roots).await),
            vec![
                ("a.txt".to_string(), ChangeKind::Created),
                ("b.txt".to_string(), ChangeKind::Modified),
                ("c.txt".to_string(), ChangeKind::Modified),
                ("gen/out.rs".to_string(), ChangeKind::Deleted),
                ("n.txt".to_string(), ChangeKind::Created),
            ]
        );
        // A command that changes nothing reports nothing; nor does a commit.
        sh(&root, "echo more >> a.txt");
        let before = super::before(&root).await.unwrap();
        sh(&root, "git status >/dev/null && git commit -qam four");
        assert_eq!(shown(&changes_since(before, &roots).await), vec![]);
    }

    #[tokio::test]
    async fn without_git_every_file_is_compared() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        sh(
            &root,
            "echo a > a && echo b > b && echo 'ignored' > .gitignore && echo x > ignored",
        );
        let roots = vec![root.clone()];
        let before = before(&root).await.unwrap();
        sh(
            &root,
            "rm a && echo bb > b && echo c > c && echo y > ignored",
        );
        assert_eq!(
            shown(&changes_since(before, &roots).await),
            vec![
                ("a".to_string(), ChangeKind::Deleted),
                ("b".to_string(), ChangeKind::Modified),
                ("c".to_string(), ChangeKind::Created),
            ]
        );
    }
}
