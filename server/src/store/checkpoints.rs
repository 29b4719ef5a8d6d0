//! The checkpoint store: the workspace's files before each user message's turn, kept
//! content-addressed in a private git object store under the state directory
//! (`STATE/WORKSPACE-KEY/checkpoints/git`, 0700, files 0600), beside the session logs.
//!
//! It is never the user's repository: every git run here names its own `GIT_DIR` and
//! `GIT_INDEX_FILE` (one index per root: git's stat cache, so a turn that changed three
//! files of 20,000 hashes three), `--work-tree` the root, and no configuration of the
//! user's (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`, every `GIT_*` variable of
//! the environment removed), so no hook, filter, fsmonitor or attribute of the user's can
//! run or change what is stored (`info/attributes` turns off every conversion). The user's
//! `.git` (index, HEAD, refs, stash, config) is never opened; git itself skips `.git`.
//!
//! What is stored: the files git would see (tracked and untracked, `.gitignore` respected),
//! regular files and symlinks, each at most `checkpoints.maxFileBytes` (larger or
//! unreadable ones are listed as not stored). A tree per root per checkpoint; refs
//! `refs/sessions/SESSION/…` keep them, and past `checkpoints.maxStoreBytes` the oldest
//! sessions' refs go and git prunes what nothing keeps.
//!
//! A snapshot of a root is one `git status` against the root's index and its own HEAD (a
//! per-root `GIT_DIR`, `worktree-KEY`, sharing the store's objects through
//! `GIT_COMMON_DIR`, whose HEAD is the tree of the root's last snapshot): a stat of every
//! file, the untracked cache for new ones (only the directories whose mtime moved are
//! read again), the index written back with the stats it refreshed. When nothing changed
//! the tree is that HEAD, one git process in all; otherwise the changed paths go through
//! `update-index` and `write-tree`, and HEAD becomes the new tree.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use agentls_core::checkpoints::{
    parse_raw_diff, parse_status, CheckpointSettings, RawChange, Tracked,
};
use agentls_core::event::RootTree;

use crate::locks::Locked;
use crate::store::checkpoint_watch;
use crate::store::session_log::{private_dir, SessionStore};

/// One snapshot process at a time: the roots' index files are shared by the sessions of a
/// workspace (another process is kept off by git's own `index.lock`).
static SNAPSHOTS: Mutex<()> = Mutex::new(());

/// Configuration given to every git run: nothing of the user's, nothing that runs a
/// program, no conversion of content, no automatic gc (the cap decides what goes).
const CONFIG: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "true"),
    // The untracked cache is kept for the flags of `status.showUntrackedFiles`: `-uall`'s.
    ("status.showUntrackedFiles", "all"),
    ("status.renames", "false"),
    ("diff.renames", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.filemode", "true"),
    ("core.quotePath", "false"),
    ("core.logAllRefUpdates", "false"),
    ("core.sharedRepository", "0600"),
    ("core.bare", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("index.version", "4"),
    ("index.skipHash", "true"),
];

/// More changed or new files than this in one snapshot: none is taken (a root that is a
/// home directory, a tree of build outputs nobody ignored).
const MAX_CHANGED_FILES: usize = 200_000;

/// `info/attributes` wins over the work tree's `.gitattributes`: content stored as is.
const ATTRIBUTES: &str = "* -text -eol -filter -ident -working-tree-encoding -diff -merge\n";

/// The state of a workspace's files at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub trees: Vec<RootTree>,
    /// Files not stored (over the size limit, unreadable): root-relative paths.
    pub unstored: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct CheckpointStore {
    dir: PathBuf,
    /// agentls's own state directory, never snapshotted when it lies inside a root (a
    /// `stateDir` in the workspace: the logs must not be rewound).
    state: PathBuf,
}

impl CheckpointStore {
    /// The store of the workspace whose sessions `sessions` holds.
    pub fn beside(sessions: &SessionStore) -> CheckpointStore {
        let workspace = sessions.dir().parent().unwrap_or(sessions.dir());
        CheckpointStore {
            dir: workspace.join("checkpoints"),
            state: workspace.parent().unwrap_or(workspace).to_path_buf(),
        }
    }

    /// A store in `dir` (the benchmark's; the agent's is `beside` its session logs).
    pub fn at(dir: &Path) -> CheckpointStore {
        CheckpointStore {
            dir: dir.to_path_buf(),
            state: dir.to_path_buf(),
        }
    }

    pub fn git_dir(&self) -> PathBuf {
        self.dir.join("git")
    }

    /// The name of `root`'s files in the store (FNV-1a of its path).
    fn root_key(root: &Path) -> String {
        let key = root
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |hash, &b| {
                (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        format!("{key:016x}")
    }

    fn index_file(&self, root: &Path) -> PathBuf {
        self.dir.join(format!("index-{}", Self::root_key(root)))
    }

    /// `root`'s own `GIT_DIR`: its HEAD (the tree of its last snapshot) beside the
    /// store's objects and refs (`GIT_COMMON_DIR`).
    fn root_git_dir(&self, root: &Path) -> PathBuf {
        self.dir.join(format!("worktree-{}", Self::root_key(root)))
    }

    /// The exclude file of `root`'s git runs: the repository's `.git/info/exclude` (read,
    /// never written) and agentls's state directory when it lies inside the root (the logs
    /// and this store must not be rewound).
    fn excludes_file(&self, root: &Path) -> PathBuf {
        self.dir.join(format!("exclude-{}", Self::root_key(root)))
    }

    /// Makes `root`'s `GIT_DIR` (HEAD unborn until its first tree) and its exclude file,
    /// rewritten only when its text changes (git's untracked cache keeps its stat). Its
    /// stamp: what decides a snapshot besides the files under watch (the exclude files,
    /// the user's global one, the size limit).
    fn ensure_root(&self, root: &Path, limits: CheckpointSettings) -> Result<Vec<u8>, String> {
        let dir = self.root_git_dir(root);
        if !dir.join("HEAD").is_file() {
            private_dir(&dir, None).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            std::fs::write(dir.join("HEAD"), "ref: refs/heads/none\n")
                .map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
        }
        let mut text = std::fs::read(root.join(".git/info/exclude")).unwrap_or_default();
        if let Ok(inside) = self.state.strip_prefix(root) {
            if !inside.as_os_str().is_empty() {
                text.extend_from_slice(b"\n/");
                text.extend_from_slice(inside.as_os_str().as_encoded_bytes());
                text.extend_from_slice(b"\n");
            }
        }
        let path = self.excludes_file(root);
        if text.is_empty() {
            let _ = std::fs::remove_file(&path);
        } else if std::fs::read(&path).ok().as_deref() != Some(&text[..]) {
            std::fs::write(&path, &text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        let mut stamp = text;
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")));
        if let Some(global) = config.map(|dir| dir.join("git/ignore")) {
            if let Ok(meta) = std::fs::metadata(global) {
                use std::os::unix::fs::MetadataExt;
                stamp.extend_from_slice(
                    format!("\0{} {} {}", meta.mtime(), meta.mtime_nsec(), meta.len()).as_bytes(),
                );
            }
        }
        stamp.extend_from_slice(format!("\0{}", limits.max_file_bytes).as_bytes());
        Ok(stamp)
    }

    /// The tree `root`'s HEAD names (its last snapshot's), if any.
    fn head_tree(&self, root: &Path) -> Option<String> {
        let head = std::fs::read_to_string(self.root_git_dir(root).join("HEAD")).ok()?;
        let tree = head.trim();
        (tree.len() >= 40 && tree.bytes().all(|b| b.is_ascii_hexdigit())).then(|| tree.into())
    }

    /// Sets `root`'s HEAD to `tree` (a whole file renamed into place).
    fn set_head(&self, root: &Path, tree: &str) -> Result<(), String> {
        let dir = self.root_git_dir(root);
        let temp = dir.join("HEAD.new");
        std::fs::write(&temp, format!("{tree}\n"))
            .and_then(|()| std::fs::rename(&temp, dir.join("HEAD")))
            .map_err(|e| format!("cannot write {}: {e}", dir.display()))
    }

    /// Creates the store (0700) and its git directory once.
    fn ensure(&self) -> Result<(), String> {
        let git_dir = self.git_dir();
        if git_dir.join("HEAD").is_file() {
            return Ok(());
        }
        private_dir(&self.dir, None)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let output = self
            .git(None, None)
            .args(["init", "--quiet", "--bare"])
            .arg(&git_dir)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "git init failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let info = git_dir.join("info");
        private_dir(&info, None).map_err(|e| e.to_string())?;
        std::fs::write(info.join("attributes"), ATTRIBUTES).map_err(|e| e.to_string())?;
        // The template's sample hooks are never run (hooksPath); they go anyway.
        let _ = std::fs::remove_dir_all(git_dir.join("hooks"));
        Ok(())
    }

    /// A git command on this store, for `root`'s work tree and index when given.
    fn git(&self, root: Option<&Path>, index: Option<&Path>) -> Command {
        let mut command = Command::new("git");
        for (name, _) in std::env::vars_os() {
            if name.as_encoded_bytes().starts_with(b"GIT_") {
                command.env_remove(name);
            }
        }
        command
            .env("GIT_DIR", self.git_dir())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_COUNT", CONFIG.len().to_string())
            .stdin(Stdio::null());
        for (i, (key, value)) in CONFIG.iter().enumerate() {
            command
                .env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        if let Some(root) = root {
            command
                .env("GIT_DIR", self.root_git_dir(root))
                .env("GIT_COMMON_DIR", self.git_dir())
                .env("GIT_WORK_TREE", root)
                .current_dir(root);
            let exclude = self.excludes_file(root);
            if exclude.is_file() {
                command
                    .arg("-c")
                    .arg(format!("core.excludesFile={}", exclude.display()));
            }
        }
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        command
    }

    /// Runs `command`, feeding `input`; its stdout, or an error with its stderr.
    fn run(mut command: Command, input: Option<&[u8]>) -> Result<Vec<u8>, String> {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        if input.is_some() {
            command.stdin(Stdio::piped());
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if let Some(input) = input {
            let mut stdin = child.stdin.take().expect("piped");
            // A write error shows as git's own failure below.
            let _ = stdin.write_all(input);
        }
        let output = child.wait_with_output().map_err(|e| e.to_string())?;
        if !output.status.success() {
            return Err(format!(
                "git failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(output.stdout)
    }

    /// The workspace's files now: one tree per root. Blocking.
    pub fn snapshot(
        &self,
        roots: &[PathBuf],
        limits: CheckpointSettings,
    ) -> Result<Snapshot, String> {
        self.snapshot_with(roots, limits, &[])
    }

    /// `snapshot`, with `buffers` (absolute path, text) in place of what the disk holds:
    /// the editor's unsaved buffers the agent edited (an edit through `workspace/applyEdit`
    /// lands in the buffer; the disk has it once the user saves).
    pub fn snapshot_with(
        &self,
        roots: &[PathBuf],
        limits: CheckpointSettings,
        buffers: &[(PathBuf, Vec<u8>)],
    ) -> Result<Snapshot, String> {
        let _one = SNAPSHOTS.locked();
        self.ensure()?;
        let mut snapshot = Snapshot::default();
        for root in roots {
            let taken = self.snapshot_root(root, limits, buffers).or_else(|err| {
                // An index whose objects are gone (a store pruned under it, a crash): it is
                // only a cache, so the root is snapshotted again from nothing.
                tracing::warn!(
                    "checkpoint of {}: {err}; rebuilding its index",
                    root.display()
                );
                let _ = std::fs::remove_file(self.index_file(root));
                let _ = std::fs::remove_dir_all(self.root_git_dir(root));
                self.snapshot_root(root, limits, buffers)
            });
            let (tree, unstored) = taken?;
            snapshot.trees.push(RootTree {
                root: root.to_string_lossy().into_owned(),
                tree,
            });
            snapshot.unstored.extend(unstored);
        }
        Ok(snapshot)
    }

    fn snapshot_root(
        &self,
        root: &Path,
        limits: CheckpointSettings,
        buffers: &[(PathBuf, Vec<u8>)],
    ) -> Result<(String, Vec<String>), String> {
        let stamp = self.ensure_root(root, limits)?;
        let index = self.index_file(root);
        let buffered = buffers.iter().any(|(path, _)| path.starts_with(root));
        // Nothing changed since the last snapshot (the kernel says): its tree again.
        let skip = [self.state.clone(), self.dir.clone()];
        let reuse = !buffered;
        if let Some(last) = checkpoint_watch::unchanged(&index, root, &skip, &stamp, reuse) {
            if self.head_tree(root).as_deref() == Some(last.tree.as_str()) {
                return Ok((last.tree, last.unstored));
            }
            checkpoint_watch::unchanged(&index, root, &skip, &stamp, false);
        }
        let status = self.status(root, &index)?;
        let paths: BTreeMap<&[u8], Tracked> = status
            .paths
            .iter()
            .map(|(path, tracked)| (path.as_slice(), *tracked))
            .collect();
        if paths.len() > MAX_CHANGED_FILES {
            return Err(format!(
                "{} files changed or new since the last checkpoint of {} (more than {MAX_CHANGED_FILES}): too many to store (is the workspace root a home directory?)",
                paths.len(),
                root.display()
            ));
        }
        let changes = sort_changes(root, paths, limits.max_file_bytes);
        if changes.bytes > limits.max_store_bytes {
            return Err(format!(
                "{} bytes changed or new in {} since the last checkpoint: more than checkpoints.maxStoreBytes ({})",
                changes.bytes,
                root.display(),
                limits.max_store_bytes
            ));
        }
        let unstored: Vec<String> = changes.unstored.iter().cloned().collect();
        let taken = |tree: String| {
            if !buffered {
                let unstored = unstored.clone();
                checkpoint_watch::taken(
                    &index,
                    checkpoint_watch::Taken {
                        tree,
                        unstored,
                        stamp: stamp.clone(),
                    },
                );
            }
        };
        // Nothing to put in the index, and the index is HEAD's tree: that tree it is.
        if changes.update.is_empty() && changes.dropped.is_empty() && !buffered {
            if let Some(tree) = self.head_tree(root).filter(|_| !status.index_differs) {
                taken(tree.clone());
                return Ok((tree, unstored));
            }
        }
        self.stage_changes(root, &index, &changes)?;
        self.overlay_buffers(root, &index, buffers)?;
        let mut write = self.git(Some(root), Some(&index));
        write.arg("write-tree");
        let tree = String::from_utf8_lossy(&Self::run(write, None)?)
            .trim()
            .to_string();
        self.set_head(root, &tree)?;
        taken(tree.clone());
        Ok((tree, unstored))
    }

    /// What changed since `index` last saw `root`: new (untracked here), modified and
    /// deleted files, and whether the index is still HEAD's tree. Unchanged files cost a
    /// stat inside git, unchanged directories a stat (the untracked cache); git writes the
    /// index back when it refreshed a stat (so the next run trusts it) or the cache moved.
    fn status(
        &self,
        root: &Path,
        index: &Path,
    ) -> Result<agentls_core::checkpoints::StatusChanges, String> {
        let mut status = self.git(Some(root), Some(index));
        status.args([
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
        ]);
        Ok(parse_status(&Self::run(status, None)?))
    }

    /// Puts the sorted changes in `index`: the files not stored leave it (so the tree holds
    /// no stale copy of them), the others are added, updated or removed.
    fn stage_changes(&self, root: &Path, index: &Path, changes: &Changes) -> Result<(), String> {
        if !changes.dropped.is_empty() {
            let mut remove = self.git(Some(root), Some(index));
            remove.args(["update-index", "-z", "--force-remove", "--stdin"]);
            Self::run(remove, Some(&changes.dropped))?;
        }
        if !changes.update.is_empty() {
            let mut add = self.git(Some(root), Some(index));
            add.args(["update-index", "-z", "--add", "--remove", "--stdin"]);
            Self::run(add, Some(&changes.update))?;
        }
        Ok(())
    }

    /// The buffers under `root` put in the index in place of their files (their entries
    /// carry no stat, so the next snapshot reads the disk again).
    fn overlay_buffers(
        &self,
        root: &Path,
        index: &Path,
        buffers: &[(PathBuf, Vec<u8>)],
    ) -> Result<(), String> {
        let mut entries = Vec::new();
        for (path, text) in buffers {
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let mut hash = self.git(None, None);
            hash.args(["hash-object", "-w", "--no-filters", "--stdin"]);
            let oid = String::from_utf8_lossy(&Self::run(hash, Some(text))?)
                .trim()
                .to_string();
            let executable = std::fs::metadata(path)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false);
            let mode = if executable { "100755" } else { "100644" };
            entries.push(format!("{mode},{oid},{}", relative.display()));
        }
        if entries.is_empty() {
            return Ok(());
        }
        let mut update = self.git(Some(root), Some(index));
        update.args(["update-index", "--add"]);
        for entry in &entries {
            update.args(["--cacheinfo", entry]);
        }
        Self::run(update, None).map(|_| ())
    }

    /// What changed from tree `from` to tree `to` (`git diff-tree -r --raw`).
    pub fn diff(&self, from: &str, to: &str) -> Result<Vec<RawChange>, String> {
        if from == to {
            return Ok(Vec::new());
        }
        let mut diff = self.git(None, None);
        diff.args([
            "diff-tree",
            "-r",
            "-z",
            "--raw",
            "--no-renames",
            "--full-index",
            from,
            to,
        ]);
        Ok(parse_raw_diff(&Self::run(diff, None)?))
    }

    /// Whether the store still holds `tree` (the cap may have dropped it).
    pub fn has(&self, tree: &str) -> bool {
        let mut check = self.git(None, None);
        check.args(["cat-file", "-e", &format!("{tree}^{{tree}}")]);
        Self::run(check, None).is_ok()
    }

    /// Whether `tree` has a directory `dir` (a path relative to its root).
    pub fn has_dir(&self, tree: &str, dir: &str) -> bool {
        let mut check = self.git(None, None);
        check.args(["cat-file", "-e", &format!("{tree}:{dir}")]);
        Self::run(check, None).is_ok()
    }

    /// The entry of `path` (relative to its root) in `tree`: its mode and blob.
    pub fn entry(&self, tree: &str, path: &str) -> Option<agentls_core::checkpoints::Blob> {
        let mut list = self.git(None, None);
        list.args(["ls-tree", "-z", "--full-tree", tree, "--", path]);
        let out = Self::run(list, None).ok()?;
        let line = String::from_utf8_lossy(&out).into_owned();
        let (meta, _) = line.split_once('\t')?;
        let mut parts = meta.split(' ');
        let mode = u32::from_str_radix(parts.next()?, 8).ok()?;
        let kind = parts.next()?;
        let oid = parts.next()?.to_string();
        (kind == "blob").then_some(agentls_core::checkpoints::Blob { mode, oid })
    }

    /// The blob id `bytes` would have (nothing written).
    pub fn hash(&self, bytes: &[u8]) -> Result<String, String> {
        let mut hash = self.git(None, None);
        hash.args(["hash-object", "--no-filters", "--stdin"]);
        Ok(String::from_utf8_lossy(&Self::run(hash, Some(bytes))?)
            .trim()
            .to_string())
    }

    /// A blob's bytes.
    pub fn blob(&self, oid: &str) -> Result<Vec<u8>, String> {
        let mut cat = self.git(None, None);
        cat.args(["cat-file", "blob", oid]);
        Self::run(cat, None)
    }

    /// Keeps `trees` for `session` (a ref each: what the cap drops session by session),
    /// written as loose ref files (no git process per turn). `session` and `name` are file
    /// names (a session id; a checkpoint id).
    pub fn keep(&self, session: &str, name: &str, trees: &[RootTree]) -> Result<(), String> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if !safe(session) || !safe(name) {
            return Err(format!("not a ref name: {session}/{name}"));
        }
        let dir = self.git_dir().join("refs/sessions").join(session);
        private_dir(&dir, None).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for (i, tree) in trees.iter().enumerate() {
            if tree.tree.len() < 40 || !tree.tree.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("not a tree id: {}", tree.tree));
            }
            let path = dir.join(format!("{name}-{i}"));
            std::fs::write(&path, format!("{}\n", tree.tree))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Forgets `session`'s checkpoints (`session/delete`): its refs go, and with them, at
    /// the next gc, the objects no other session holds. A store never made is no error.
    pub fn forget_session(&self, session: &str) -> Result<(), String> {
        if !self.git_dir().is_dir() {
            return Ok(());
        }
        let _one = SNAPSHOTS.locked();
        let mut refs = self.git(None, None);
        refs.args(["for-each-ref", "--format=%(refname)"])
            .arg(format!("refs/sessions/{session}/"));
        let listed = String::from_utf8_lossy(&Self::run(refs, None)?).into_owned();
        let input: String = listed.lines().map(|r| format!("delete {r}\n")).collect();
        if input.is_empty() {
            return Ok(());
        }
        let mut delete = self.git(None, None);
        delete.args(["update-ref", "--stdin"]);
        Self::run(delete, Some(input.as_bytes())).map(|_| ())
    }

    /// The store's size in bytes (loose objects and packs).
    pub fn size(&self) -> Result<u64, String> {
        let mut count = self.git(None, None);
        count.args(["count-objects", "-v"]);
        let out = String::from_utf8_lossy(&Self::run(count, None)?).into_owned();
        let kib: u64 = out
            .lines()
            .filter_map(|line| {
                let (key, value) = line.split_once(": ")?;
                matches!(key, "size" | "size-pack").then(|| value.trim().parse::<u64>().ok())?
            })
            .sum();
        Ok(kib * 1024)
    }

    /// A ref to each root index's tree, so a gc never prunes what an index names (git
    /// keeps only its own default index's objects).
    fn keep_indexes(&self) -> Result<(), String> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| e.to_string())?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("index-") || name.contains('.') {
                continue;
            }
            let mut write = self.git(None, Some(&entry.path()));
            write.arg("write-tree");
            if let Ok(tree) = Self::run(write, None) {
                // Beside the sessions' refs, never one of them (the cap drops sessions).
                let dir = self.git_dir().join("refs/indexes");
                private_dir(&dir, None).map_err(|e| e.to_string())?;
                std::fs::write(dir.join(&name), tree).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// Past `max_bytes`, drops the oldest sessions' checkpoints (never `current`'s) until
    /// the store fits; the sessions dropped. Blocking; runs git's gc when it drops any.
    pub fn enforce_cap(&self, max_bytes: u64, current: &str) -> Result<Vec<String>, String> {
        let _one = SNAPSHOTS.locked();
        let mut dropped = Vec::new();
        while self.size()? > max_bytes {
            let mut refs = self.git(None, None);
            refs.args(["for-each-ref", "--format=%(refname)", "refs/sessions/"]);
            let listed = String::from_utf8_lossy(&Self::run(refs, None)?).into_owned();
            // Session ids begin with their creation time: the smallest is the oldest.
            let oldest = listed
                .lines()
                .filter_map(|r| r.strip_prefix("refs/sessions/")?.split('/').next())
                .filter(|s| *s != current)
                .min()
                .map(str::to_string);
            let Some(oldest) = oldest else { break };
            let input: String = listed
                .lines()
                .filter(|r| r.starts_with(&format!("refs/sessions/{oldest}/")))
                .map(|r| format!("delete {r}\n"))
                .collect();
            let mut delete = self.git(None, None);
            delete.args(["update-ref", "--stdin"]);
            Self::run(delete, Some(input.as_bytes()))?;
            self.keep_indexes()?;
            let mut gc = self.git(None, None);
            gc.args(["gc", "--quiet", "--prune=now"]);
            Self::run(gc, None)?;
            dropped.push(oldest);
        }
        Ok(dropped)
    }
}

/// The changed paths of a root sorted by what the snapshot does with them.
struct Changes {
    /// Paths (NUL-terminated) to add, update or remove in the index.
    update: Vec<u8>,
    /// Paths (NUL-terminated) in the index now too large or unreadable: taken out of it.
    dropped: Vec<u8>,
    /// The dropped paths, as the snapshot reports them (not stored).
    unstored: BTreeSet<String>,
    /// The size of the files to store.
    bytes: u64,
}

/// Sorts `paths` (relative to `root`) by whether each can be stored.
fn sort_changes(root: &Path, paths: BTreeMap<&[u8], Tracked>, max_file_bytes: u64) -> Changes {
    let mut changes = Changes {
        update: Vec::new(),
        dropped: Vec::new(),
        unstored: BTreeSet::new(),
        bytes: 0,
    };
    for (path, tracked) in paths {
        // A nested repository's directory: not this store's to snapshot.
        if path.ends_with(b"/") {
            continue;
        }
        let on_disk =
            root.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
        match storable(&on_disk, max_file_bytes) {
            Storable::Yes(len) => {
                changes.bytes += len;
                changes.update.extend_from_slice(path);
            }
            Storable::Gone => changes.update.extend_from_slice(path),
            Storable::No => {
                // An untracked one is not in the index: nothing to take out.
                if tracked == Tracked::Yes {
                    changes.dropped.extend_from_slice(path);
                    changes.dropped.push(0);
                }
                changes
                    .unstored
                    .insert(String::from_utf8_lossy(path).into_owned());
                continue;
            }
            Storable::Special => continue,
        }
        changes.update.push(0);
    }
    changes
}

enum Storable {
    /// A regular file of this many bytes, or a symlink.
    Yes(u64),
    /// Gone from the disk: its entry leaves the index.
    Gone,
    /// Too large or unreadable: listed as not stored.
    No,
    /// A FIFO, socket or device: not content, not stored, not listed.
    Special,
}

fn storable(path: &Path, max_file_bytes: u64) -> Storable {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Storable::Gone;
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Storable::Yes(0);
    }
    if !kind.is_file() {
        return Storable::Special;
    }
    if meta.len() > max_file_bytes || std::fs::File::open(path).is_err() {
        return Storable::No;
    }
    Storable::Yes(meta.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file's bytes and mode in the snapshot's tree (`None`: not in it).
    fn stored(store: &CheckpointStore, snapshot: &Snapshot, path: &str) -> Option<(Vec<u8>, u32)> {
        let blob = store.entry(&snapshot.trees[0].tree, path)?;
        Some((store.blob(&blob.oid).unwrap(), blob.mode))
    }

    fn append(path: &Path, text: &str) {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    /// Every kind of change made after a snapshot is in the next one, also when the
    /// snapshot before found nothing changed (and so took its tree again).
    #[test]
    fn every_change_after_a_snapshot_is_in_the_next_one() {
        let root_dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let root = root_dir.path().to_path_buf();
        let store = CheckpointStore::at(state.path());
        let roots = vec![root.clone()];
        let limits = CheckpointSettings::default();
        std::fs::create_dir_all(root.join("src/inner")).unwrap();
        std::fs::create_dir_all(root.join("empty")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join("a.rs"), "a\n").unwrap();
        std::fs::write(root.join("src/inner/b.rs"), "b\n").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("target/out"), "built\n").unwrap();
        std::fs::write(root.join("notes.txt"), "notes\n").unwrap();
        std::fs::write(root.join(".git/info/exclude"), "notes.txt\n").unwrap();
        let snap = || store.snapshot(&roots, limits).unwrap();
        let first = snap();
        assert_eq!(stored(&store, &first, "a.rs").unwrap().0, b"a\n");
        assert!(stored(&store, &first, "target/out").is_none());
        assert!(stored(&store, &first, "notes.txt").is_none());
        let mut last = snap();
        assert_eq!(last.trees[0].tree, first.trees[0].tree);

        type Change = (
            &'static str,
            fn(&Path),
            &'static str,
            Option<(&'static [u8], u32)>,
        );
        let changes: Vec<Change> = vec![
            (
                "a file appended to in place",
                |r| append(&r.join("a.rs"), "more\n"),
                "a.rs",
                Some((b"a\nmore\n", 0o100644)),
            ),
            (
                "a mode changed",
                |r| {
                    std::fs::set_permissions(r.join("a.rs"), std::fs::Permissions::from_mode(0o755))
                        .unwrap()
                },
                "a.rs",
                Some((b"a\nmore\n", 0o100755)),
            ),
            (
                "a file in an empty directory",
                |r| std::fs::write(r.join("empty/new.rs"), "new\n").unwrap(),
                "empty/new.rs",
                Some((b"new\n", 0o100644)),
            ),
            (
                "a file in new directories",
                |r| {
                    std::fs::create_dir_all(r.join("deep/er")).unwrap();
                    std::fs::write(r.join("deep/er/c.rs"), "c\n").unwrap()
                },
                "deep/er/c.rs",
                Some((b"c\n", 0o100644)),
            ),
            (
                "a file in a directory made by the change before",
                |r| std::fs::write(r.join("deep/er/d.rs"), "d\n").unwrap(),
                "deep/er/d.rs",
                Some((b"d\n", 0o100644)),
            ),
            (
                "a deep file rewritten",
                |r| append(&r.join("deep/er/c.rs"), "c2\n"),
                "deep/er/c.rs",
                Some((b"c\nc2\n", 0o100644)),
            ),
            (
                "a file deleted",
                |r| std::fs::remove_file(r.join("src/inner/b.rs")).unwrap(),
                "src/inner/b.rs",
                None,
            ),
            (
                "a directory renamed",
                |r| std::fs::rename(r.join("deep"), r.join("moved")).unwrap(),
                "moved/er/c.rs",
                Some((b"c\nc2\n", 0o100644)),
            ),
            (
                "a file in the renamed directory",
                |r| append(&r.join("moved/er/d.rs"), "d2\n"),
                "moved/er/d.rs",
                Some((b"d\nd2\n", 0o100644)),
            ),
            (
                "a symlink",
                |r| std::os::unix::fs::symlink("a.rs", r.join("link")).unwrap(),
                "link",
                Some((b"a.rs", 0o120000)),
            ),
            (
                "an exclude of the repository's taken back",
                |r| std::fs::write(r.join(".git/info/exclude"), "").unwrap(),
                "notes.txt",
                Some((b"notes\n", 0o100644)),
            ),
        ];
        for (what, change, path, expected) in changes {
            change(&root);
            let now = snap();
            let found = stored(&store, &now, path);
            assert_eq!(
                found
                    .as_ref()
                    .map(|(bytes, mode)| (bytes.as_slice(), *mode)),
                expected,
                "{what}: {path}"
            );
            assert_ne!(now.trees[0].tree, last.trees[0].tree, "{what}");
            // Nothing since: the same tree.
            last = snap();
            assert_eq!(last.trees[0].tree, now.trees[0].tree, "{what}, again");
        }
        // An ignored file changed: the tree stays.
        append(&root.join("target/out"), "again\n");
        assert_eq!(snap().trees[0].tree, last.trees[0].tree);
        // The user's .git is never written.
        assert_eq!(std::fs::read(root.join(".git/info/exclude")).unwrap(), b"");
        assert_eq!(std::fs::read_dir(root.join(".git")).unwrap().count(), 1);
    }
}
