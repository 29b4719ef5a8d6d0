//! The diffs `/review` reads from the user's repository: the uncommitted changes, and a
//! branch against its base. git runs pinned (`sandbox::pinned_git`: no user or system
//! config, no hooks, no fsmonitor, no pager) with `--no-ext-diff --no-textconv`, and not at
//! all when the repository's own config names a program git could run on the work tree (a
//! filter, a diff driver's command or textconv, `diff.external`): the review then says so.
//! Output is read up to a byte limit; the caller cuts it to its token budget.

use std::path::Path;

use tokio::io::AsyncReadExt;

use crate::store::files::read_text;

/// The empty tree: what a repository without a commit is compared with.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Untracked files shown whole in an uncommitted review, at most.
const MAX_UNTRACKED: usize = 50;

/// Runs pinned git in `dir`; its stdout (up to `limit` bytes, the rest dropped) when it
/// succeeded.
async fn git(dir: &Path, args: &[&str], limit: usize) -> Result<Vec<u8>, String> {
    let mut command = tokio::process::Command::from(crate::sandbox::pinned_git());
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|err| format!("cannot run git: {err}"))?;
    let mut out = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(limit as u64).read_to_end(&mut out).await;
    }
    if out.len() >= limit {
        let _ = child.kill().await;
        return Ok(out);
    }
    let status = child.wait().await.map_err(|err| err.to_string())?;
    if status.success() {
        Ok(out)
    } else {
        Err(format!("git {} failed ({status})", args.join(" ")))
    }
}

/// The repository `root` is in, when agentls may run git there; Err says why not.
async fn repository(root: &Path) -> Result<(), String> {
    if git(root, &["rev-parse", "--show-toplevel"], 4096)
        .await
        .is_err()
    {
        return Err(format!(
            "{} is not in a git repository: /review reviews git changes (`/review --last-turn` reviews the last turn's changes without git)",
            root.display()
        ));
    }
    let keys = git(root, &["config", "--list", "--name-only"], 1 << 20)
        .await
        .unwrap_or_default();
    if let Some(key) = String::from_utf8_lossy(&keys)
        .lines()
        .find(|key| crate::tools::snapshot::runs_a_program(key))
    {
        return Err(format!(
            "the repository's git config sets {key}, a program git would run on the work tree: agentls does not run git there, so it cannot gather the diff (`/review --last-turn` works from agentls's checkpoints)"
        ));
    }
    Ok(())
}

const DIFF: &[&str] = &[
    "diff",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--no-renames",
    "--submodule=short",
];

/// The work tree and the index against `HEAD` (the empty tree before the first commit),
/// then each untracked file that is not ignored, whole, as a new file.
pub async fn uncommitted(root: &Path, limit: usize) -> Result<String, String> {
    repository(root).await?;
    let head = match git(root, &["rev-parse", "-q", "--verify", "HEAD"], 256).await {
        Ok(_) => "HEAD",
        Err(_) => EMPTY_TREE,
    };
    let mut args = DIFF.to_vec();
    args.extend([head, "--", "."]);
    let mut text = String::from_utf8_lossy(&git(root, &args, limit).await?).into_owned();
    let untracked = git(
        root,
        &[
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
            "--",
            ".",
        ],
        1 << 20,
    )
    .await
    .unwrap_or_default();
    let names: Vec<String> = untracked
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    for name in names.iter().take(MAX_UNTRACKED) {
        if text.len() >= limit {
            break;
        }
        let path = root.join(name);
        let body = tokio::task::spawn_blocking(move || read_text(&path))
            .await
            .map_err(|err| err.to_string())?;
        match body {
            Ok(body) => text.push_str(&new_file(name, &body)),
            Err(refused) => text.push_str(&format!("new file {name}: {}\n", refused.0)),
        }
    }
    if names.len() > MAX_UNTRACKED {
        text.push_str(&format!(
            "[{} more untracked files not shown]\n",
            names.len() - MAX_UNTRACKED
        ));
    }
    Ok(text)
}

/// The current branch since it left `base`: `git diff BASE...HEAD` (from their merge base).
pub async fn branch(root: &Path, base: &str, limit: usize) -> Result<String, String> {
    repository(root).await?;
    if !agentls_core::review::is_ref_name(base) {
        return Err(format!("`{base}` is not a branch name"));
    }
    let commit = format!("{base}^{{commit}}");
    if git(root, &["rev-parse", "-q", "--verify", &commit], 256)
        .await
        .is_err()
    {
        return Err(format!(
            "there is no branch or commit `{base}` in the repository"
        ));
    }
    let range = format!("{base}...HEAD");
    let mut args = DIFF.to_vec();
    args.extend([range.as_str(), "--", "."]);
    Ok(String::from_utf8_lossy(&git(root, &args, limit).await?).into_owned())
}

/// A file that is new, as a unified diff.
pub fn new_file(name: &str, text: &str) -> String {
    file_diff(name, None, Some(text))
}

/// The unified diff of one file from `old` to `new` (None: it did not exist).
pub fn file_diff(name: &str, old: Option<&str>, new: Option<&str>) -> String {
    let header = match (old, new) {
        (None, _) => format!("diff --git a/{name} b/{name}\nnew file\n"),
        (_, None) => format!("diff --git a/{name} b/{name}\ndeleted file\n"),
        _ => format!("diff --git a/{name} b/{name}\n"),
    };
    let old_name = old.map_or("/dev/null".to_string(), |_| format!("a/{name}"));
    let new_name = new.map_or("/dev/null".to_string(), |_| format!("b/{name}"));
    let body = similar::TextDiff::from_lines(old.unwrap_or(""), new.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string();
    format!("{header}{body}")
}
