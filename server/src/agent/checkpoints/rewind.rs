//! `agent/session/rewind`: the code, the conversation or both back to a checkpoint.
//!
//! Code: every file the turns since the checkpoint changed goes back to its state there
//! (restored, created again, deleted), each written whole (a temporary file renamed over
//! it: a kill leaves the old or the new file) and, when it is open in the editor, through
//! `workspace/applyEdit` first so the editor's undo still has it. A file whose state now is
//! not the one the agent last left it in was changed by the user since: a conflict, left as
//! it is unless `force`. Conversation: an `Event::Rewind` in the log (append-only), and the
//! session replayed from it, so a reload gives the same history.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls_core::checkpoints::{
    self as core, Action, CheckpointInfo, CheckpointSettings, PlannedFile, Restore,
};
use agentls_core::event::Event;
use agentls_core::session::Session;

use crate::agent::checkpoints::{now_snapshot, record_synced, shown, turn_diff};
use crate::agent::{tokenizer_for, Agent, AgentError};
use crate::host::FileChange;
use crate::locks::Locked;
use crate::protocol::lsp::{RewindFailure, SessionRewindResult};
use crate::store::beneath;
use crate::store::checkpoints::{CheckpointStore, Snapshot};
use crate::store::session_log;
use crate::tools::registry::Registry;

/// Test hook: the path of a directory where a rewind waits before it writes each file, so a
/// test can act at exactly that point (swap a directory for a link, kill the server). The
/// rewind writes `reached` (the file's path) there and goes on once `go` exists, which it
/// removes. Read by debug builds only (the ones the tests drive): the shipped binary has no
/// such knob.
const GATE_ENV: &str = "AGENTLS_TEST_REWIND_GATE";

/// What a code rewind found: the plan, and the paths not stored.
struct CodePlan {
    files: Vec<PlannedFile>,
    not_stored: Vec<String>,
    first_root: String,
    /// Per root: the checkpoint's tree (to tell which directories it had).
    trees: Vec<(String, String)>,
    /// The unsaved buffers the plan read in place of their files.
    buffered: Vec<PathBuf>,
}

impl Agent {
    /// `agent/session/rewind`. Refused while a turn of the session runs or waits.
    pub async fn rewind(
        self: &Arc<Self>,
        id: &str,
        checkpoint_id: &str,
        restore: &str,
        dry_run: bool,
        force: bool,
    ) -> Result<SessionRewindResult, AgentError> {
        let restore = Restore::parse(restore).ok_or_else(|| {
            AgentError::invalid_params(format!(
                "invalid params: restore must be \"code\", \"conversation\" or \"both\", got {restore:?}"
            ))
        })?;
        let handle = self.handle(id).await?;
        // Read before the session is held (it reads the ledger).
        let buffers = self.unsaved_buffers(&handle).await;
        let mut live = handle.live.lock().await;
        handle.refuse_while_running("rewinding")?;
        let events = self.events_of(id)?;
        let listed = core::list(&events);
        let Some(at) = listed.iter().position(|c| c.id == checkpoint_id) else {
            return Err(AgentError::invalid_params(format!(
                "unknown checkpoint {checkpoint_id:?} in session {id} (agent/session/checkpoints lists them)"
            )));
        };
        let mut result = SessionRewindResult {
            dry_run,
            conversation: restore.conversation(),
            message: restore
                .conversation()
                .then(|| listed[at].full_message.clone()),
            ..Default::default()
        };
        if restore.code() {
            let store = self.checkpoint_store()?;
            let since = listed[at..].to_vec();
            let limits = self.host.config().checkpoints;
            let plan =
                tokio::task::spawn_blocking(move || plan_code(&store, &since, limits, buffers))
                    .await
                    .map_err(|e| AgentError::failed(e.to_string()))?
                    .map_err(AgentError::failed)?;
            self.restore_files(plan, force, &mut result).await?;
        }
        if dry_run {
            return Ok(result);
        }
        let rewind = Event::Rewind {
            checkpoint_id: checkpoint_id.to_string(),
            restore: restore.name().into(),
            at: session_log::now_millis(),
        };
        record_synced(&mut live, &rewind)?;
        if restore.conversation() {
            let mut events = events;
            events.push(rewind);
            let config = self.host.config();
            let tokenizer = tokenizer_for(&config, &live.session.model);
            let mut session = Session::replay(id, &events, tokenizer, Registry::builtin());
            if session.model.is_empty() {
                session.model = live.session.model.clone();
            }
            live.session = session;
            // A summary prepared from the history that is gone must not be used.
            *handle.prepared.locked() = Default::default();
            self.idle_status(&live.session, None);
        }
        Ok(result)
    }

    /// Lists (dry run) or makes the plan's changes: deletes first (a symlinked directory the
    /// agent made goes before anything is written under its name), then the rest.
    async fn restore_files(
        &self,
        plan: CodePlan,
        force: bool,
        result: &mut SessionRewindResult,
    ) -> Result<(), AgentError> {
        let mut files = plan.files;
        files.sort_by_key(|f| (f.action != Action::Delete, f.path.clone()));
        let gate = std::env::var_os(GATE_ENV)
            .filter(|_| cfg!(debug_assertions))
            .map(PathBuf::from);
        let store = self.checkpoint_store()?;
        result.not_stored = plan.not_stored;
        for file in files {
            let path = PathBuf::from(&file.root).join(&file.path);
            let name = shown(&file.root, &file.path, file.root == plan.first_root);
            let buffer = self.host.buffer(&path).await;
            // Unsaved changes in the editor are the user's too, unless the plan read the
            // buffer (the agent's edit, not saved yet).
            let unsaved = match &buffer {
                Some((text, _)) if !plan.buffered.contains(&path) => {
                    std::fs::read(&path).ok().as_deref() != Some(text.as_bytes())
                }
                _ => false,
            };
            if file.conflict || unsaved {
                result.conflicts.push(name.clone());
                if !force {
                    continue;
                }
            }
            match file.action {
                Action::Restore => result.restore.push(name.clone()),
                Action::Create => result.create.push(name.clone()),
                Action::Delete => result.delete.push(name.clone()),
            }
            if result.dry_run {
                continue;
            }
            if let Some(gate) = &gate {
                wait_at_gate(gate, &file.path).await;
            }
            let tree = plan
                .trees
                .iter()
                .find(|(root, _)| *root == file.root)
                .map(|(_, tree)| tree.clone())
                .unwrap_or_default();
            if let Err(error) = self.restore_file(&store, &file, &path, &tree, buffer).await {
                result.failed.push(RewindFailure { path: name, error });
            }
        }
        Ok(())
    }

    /// One file back to its state at the checkpoint, written beneath its root through
    /// directory descriptors (no directory swapped for a link since the plan can redirect it).
    async fn restore_file(
        &self,
        store: &CheckpointStore,
        file: &PlannedFile,
        path: &Path,
        tree: &str,
        buffer: Option<(String, i32)>,
    ) -> Result<(), String> {
        beneath::split(&file.path_bytes)?;
        let root = PathBuf::from(&file.root);
        let relative = file.path_bytes.clone();
        let Some(target) = &file.target else {
            let (store, tree) = (store.clone(), tree.to_string());
            return tokio::task::spawn_blocking(move || remove(&store, &root, &tree, &relative))
                .await
                .map_err(|e| e.to_string())?;
        };
        let bytes = {
            let (store, oid) = (store.clone(), target.oid.clone());
            tokio::task::spawn_blocking(move || store.blob(&oid))
                .await
                .map_err(|e| e.to_string())??
        };
        self.write_beneath(root, relative, path, bytes, target.mode, buffer)
            .await
    }

    /// Writes `bytes` as the file `relative` beneath `root` (`path`, its whole path), with
    /// `mode`, through directory descriptors; when it is open in the editor (`buffer`: its
    /// text and version), through the editor first, so its undo has the change.
    pub(super) async fn write_beneath(
        &self,
        root: PathBuf,
        relative: Vec<u8>,
        path: &Path,
        bytes: Vec<u8>,
        mode: u32,
        buffer: Option<(String, i32)>,
    ) -> Result<(), String> {
        if let (Some((text, version)), Ok(content), false) =
            (buffer, std::str::from_utf8(&bytes), mode == 0o120000)
        {
            let change = FileChange::Write {
                path: path.to_path_buf(),
                version: Some(version),
                original: Some(text),
                content: content.to_string(),
            };
            if let Err(err) = self.host.apply(change).await {
                tracing::warn!("the editor did not take {}: {err}", path.display());
            }
        }
        tokio::task::spawn_blocking(move || {
            beneath::write_atomically(&root, &relative, &bytes, mode)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// The test gate (`GATE_ENV`): says where the rewind is, then waits for `go`. `reached`
/// goes before `go` does, so a test that saw `go` taken knows the next `reached` is new.
async fn wait_at_gate(gate: &Path, path: &str) {
    let _ = std::fs::write(gate.join("reached.tmp"), path);
    let _ = std::fs::rename(gate.join("reached.tmp"), gate.join("reached"));
    while !gate.join("go").exists() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let _ = std::fs::remove_file(gate.join("reached"));
    let _ = std::fs::remove_file(gate.join("go"));
}

/// The plan of a rewind to `since[0]` (`since`: it and the checkpoints after it). Blocking.
fn plan_code(
    store: &CheckpointStore,
    since: &[CheckpointInfo],
    limits: CheckpointSettings,
    buffers: Vec<(PathBuf, Vec<u8>)>,
) -> Result<CodePlan, String> {
    let checkpoint = &since[0];
    for tree in &checkpoint.trees {
        if !store.has(&tree.tree) {
            return Err(format!(
                "checkpoint {} is no longer in the store (dropped to keep it under checkpoints.maxStoreBytes)",
                checkpoint.id
            ));
        }
    }
    let mut now: Option<Snapshot> = None;
    let now_trees = now_snapshot(store, since, &mut now, limits, &buffers)?.clone();
    let mut not_stored: Vec<String> = checkpoint.unstored.clone();
    for later in since {
        not_stored.extend(later.end_unstored.iter().cloned());
    }
    not_stored.extend(now_trees.unstored.iter().cloned());
    not_stored.sort();
    not_stored.dedup();
    let mut files = Vec::new();
    for root in &checkpoint.trees {
        let Some(now_tree) = now_trees.trees.iter().find(|t| t.root == root.root) else {
            continue;
        };
        let mut turn_diffs = Vec::new();
        for at in 0..since.len() {
            turn_diffs.push(turn_diff(
                store, since, at, &root.root, &mut now, limits, &buffers,
            )?);
        }
        let last = core::agent_last_states(&turn_diffs);
        let target_vs_now = store.diff(&root.tree, &now_tree.tree)?;
        files.extend(core::plan_root(
            &root.root,
            &target_vs_now,
            &last,
            &not_stored,
        ));
    }
    files.extend(unsaved_edits(store, checkpoint, &buffers, &files));
    Ok(CodePlan {
        files,
        // Everything not stored since the checkpoint, not only at it: a file a turn created
        // past `maxFileBytes` is left by the rewind, and said so.
        not_stored,
        first_root: checkpoint
            .trees
            .first()
            .map(|t| t.root.clone())
            .unwrap_or_default(),
        trees: checkpoint
            .trees
            .iter()
            .map(|t| (t.root.clone(), t.tree.clone()))
            .collect(),
        buffered: buffers.into_iter().map(|(path, _)| path).collect(),
    })
}

/// The agent's edits still in unsaved buffers that the snapshots did not see (the editor
/// tells the server of an applied edit a moment later): each such buffer whose text is not
/// the file's at the checkpoint goes back to it, through the editor (so its undo has it).
fn unsaved_edits(
    store: &CheckpointStore,
    checkpoint: &CheckpointInfo,
    buffers: &[(PathBuf, Vec<u8>)],
    planned: &[PlannedFile],
) -> Vec<PlannedFile> {
    let mut more = Vec::new();
    for (path, text) in buffers {
        for root in &checkpoint.trees {
            let Ok(relative) = path.strip_prefix(&root.root) else {
                continue;
            };
            let relative = relative.to_string_lossy().into_owned();
            if planned
                .iter()
                .any(|p| p.root == root.root && p.path == relative)
            {
                continue;
            }
            let Some(target) = store.entry(&root.tree, &relative) else {
                continue;
            };
            if store.hash(text).is_ok_and(|oid| oid != target.oid) {
                more.push(PlannedFile {
                    root: root.root.clone(),
                    path_bytes: relative.as_bytes().to_vec(),
                    path: relative,
                    action: Action::Restore,
                    target: Some(target),
                    now: None,
                    conflict: false,
                });
            }
        }
    }
    more
}

/// Removes a file the turns created, then its directories left empty that the checkpoint
/// did not have; all through directory descriptors below the root.
pub(super) fn remove(
    store: &CheckpointStore,
    root: &Path,
    tree: &str,
    relative: &[u8],
) -> Result<(), String> {
    let (dir_part, name) = beneath::split(relative)?;
    let Some(dir) = beneath::Dir::open(root, dir_part, false)? else {
        return Ok(());
    };
    dir.remove_file(OsStr::from_bytes(name))?;
    drop(dir);
    let mut dir_part = dir_part;
    while !dir_part.is_empty() {
        let (parent, name) = beneath::split(dir_part)?;
        // A directory the checkpoint had stays (a name that is not UTF-8 is not looked up:
        // it stays too).
        let kept = std::str::from_utf8(dir_part).map_or(true, |d| store.has_dir(tree, d));
        let Some(parent_dir) = beneath::Dir::open(root, parent, false)? else {
            break;
        };
        if kept || !parent_dir.remove_empty_dir(OsStr::from_bytes(name)) {
            break;
        }
        dir_part = parent;
    }
    Ok(())
}
