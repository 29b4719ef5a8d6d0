//! `agent/session/changes` and `agent/session/revertChanges`: what the turns since a
//! checkpoint changed, file by file and hunk by hunk (from the checkpoint's text to the text
//! the turns left, `agentls_core::hunks`), and the undo of some of it over what the files
//! hold now. An undo is a change like any other: a checkpoint is taken before it (labelled,
//! so `agent/session/rewind` can take the undo back) and its end is snapshotted, so the
//! next listing sees the files as the undo left them.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use agentls_core::checkpoints::{self as core, Blob, CheckpointInfo, CheckpointSettings};
use agentls_core::event::Event;
use agentls_core::hunks::{self, Hunk};

use super::rewind::remove;
use super::{now_snapshot, record_synced, shown, turn_diff};
use crate::agent::{Agent, AgentError};
use crate::protocol::lsp::{
    ChangeHunk, ChangeToRevert, ChangedFile, RevertConflict, SessionChangesResult,
    SessionRevertChangesResult,
};
use crate::store::checkpoints::CheckpointStore;
use crate::store::session_log;

const SYMLINK_MODE: u32 = 0o120000;

/// One file the turns changed: its states before them, as they left it, and now.
struct Reviewed {
    root: String,
    /// As listed (`shown`).
    shown: String,
    path_bytes: Vec<u8>,
    /// The checkpoint's tree of the root (which directories it had).
    tree: String,
    before: Option<Blob>,
    after: Option<Blob>,
    now: Option<Blob>,
    /// The three texts, when all are text (None: a binary file or a link).
    texts: Option<[String; 3]>,
}

impl Reviewed {
    fn status(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "added",
            (_, None) => "deleted",
            _ => "modified",
        }
    }

    fn hunks(&self) -> Vec<Hunk> {
        match &self.texts {
            Some([before, after, _]) => hunks::hunks(before, after),
            None => Vec::new(),
        }
    }
}

impl Agent {
    /// `agent/session/changes`.
    pub async fn changes(
        self: &Arc<Self>,
        id: &str,
        since_turn_id: Option<&str>,
    ) -> Result<SessionChangesResult, AgentError> {
        let handle = self.handle(id).await?;
        let buffers = self.unsaved_buffers(&handle).await;
        let events = {
            let _live = handle.live.lock().await;
            self.events_of(id)?
        };
        let Some(since) = since_checkpoint(&events, id, since_turn_id)? else {
            return Ok(SessionChangesResult::default());
        };
        let store = self.checkpoint_store()?;
        let limits = self.host.config().checkpoints;
        let reviewed =
            tokio::task::spawn_blocking(move || reviewed(&store, &since, limits, &buffers))
                .await
                .map_err(|e| AgentError::failed(e.to_string()))?
                .map_err(AgentError::failed)?;
        let files = reviewed
            .iter()
            .map(|file| ChangedFile {
                path: file.shown.clone(),
                status: file.status().to_string(),
                hunks: file
                    .hunks()
                    .into_iter()
                    .map(|h| ChangeHunk {
                        id: h.id,
                        old_start: h.old_start,
                        old_lines: h.old_lines,
                        new_start: h.new_start,
                        new_lines: h.new_lines,
                        diff: h.diff,
                    })
                    .collect(),
                changed_since: file.now != file.after,
            })
            .collect();
        Ok(SessionChangesResult { files })
    }

    /// `agent/session/revertChanges`. Refused while a turn of the session runs or waits.
    pub async fn revert_changes(
        self: &Arc<Self>,
        id: &str,
        since_turn_id: Option<&str>,
        changes: Vec<ChangeToRevert>,
    ) -> Result<SessionRevertChangesResult, AgentError> {
        let handle = self.handle(id).await?;
        let buffers = self.unsaved_buffers(&handle).await;
        let mut live = handle.live.lock().await;
        handle.refuse_while_running("undoing its changes")?;
        let events = self.events_of(id)?;
        let Some(since) = since_checkpoint(&events, id, since_turn_id)? else {
            return Err(AgentError::invalid_params(format!(
                "session {id} has no checkpoint: no change of it can be undone (checkpoints.enabled)"
            )));
        };
        let store = self.checkpoint_store()?;
        let limits = self.host.config().checkpoints;
        let reviewed = {
            let (store, buffers) = (store.clone(), buffers.clone());
            tokio::task::spawn_blocking(move || reviewed(&store, &since, limits, &buffers))
                .await
                .map_err(|e| AgentError::failed(e.to_string()))?
                .map_err(AgentError::failed)?
        };
        let mut result = SessionRevertChangesResult::default();
        let writes = planned_undos(&reviewed, &changes, &mut result.conflicts);
        if writes.is_empty() {
            return Ok(result);
        }
        let names: Vec<&str> = writes.iter().map(|(f, _)| f.shown.as_str()).collect();
        let (turn_id, checkpoint_id) = self
            .record_undo_start(&mut live, &store, id, &names.join(", "), &buffers)
            .await?;
        result.checkpoint_id = Some(checkpoint_id.clone());
        let mut written: Vec<PathBuf> = Vec::new();
        for (file, undo) in writes {
            let path = PathBuf::from(&file.root).join(OsStr::from_bytes(&file.path_bytes));
            match self.write_undo(&store, file, undo, &path).await {
                Ok(()) => result.reverted.push(file.shown.clone()),
                Err(reason) => result.conflicts.push(RevertConflict {
                    path: file.shown.clone(),
                    reason: format!("not written: {reason}"),
                }),
            }
            written.push(path);
        }
        // The files as the undo left them: the next listing starts from there. (The
        // buffers read before hold the old text of the files written: the disk has theirs.)
        let buffers: Vec<(PathBuf, Vec<u8>)> = buffers
            .into_iter()
            .filter(|(path, _)| !written.contains(path))
            .collect();
        let end_name = format!("{checkpoint_id}-end");
        match self.keep_snapshot(&store, id, &end_name, &buffers).await {
            Ok(end) => record_synced(
                &mut live,
                &Event::TurnSnapshot {
                    turn_id,
                    trees: end.trees,
                    unstored: end.unstored,
                },
            )?,
            Err(err) => tracing::warn!("no snapshot after the undo: {err}"),
        }
        Ok(result)
    }

    /// The checkpoint before an undo of `names`, recorded with its label, so a rewind can
    /// take the undo back: (its turn id, its id).
    async fn record_undo_start(
        &self,
        live: &mut crate::agent::sessions::live::Live,
        store: &CheckpointStore,
        id: &str,
        names: &str,
        buffers: &[(PathBuf, Vec<u8>)],
    ) -> Result<(String, String), AgentError> {
        let millis = session_log::now_millis();
        let turn_id = format!("undo-{millis}");
        let checkpoint_id = format!("cp-undo-{millis}");
        let snapshot = self
            .keep_snapshot(store, id, &checkpoint_id, buffers)
            .await
            .map_err(|e| AgentError::failed(format!("no checkpoint before the undo: {e}")))?;
        record_synced(
            live,
            &Event::Checkpoint {
                turn_id: turn_id.clone(),
                checkpoint_id: checkpoint_id.clone(),
                at: millis,
                trees: snapshot.trees,
                unstored: snapshot.unstored,
                label: Some(format!("(undo of the agent's changes to {names})")),
            },
        )?;
        Ok((turn_id, checkpoint_id))
    }

    /// One file's undo written (`path`: where it is): through the editor when it is open,
    /// beneath its root either way.
    async fn write_undo(
        &self,
        store: &CheckpointStore,
        file: &Reviewed,
        undo: Undo,
        path: &std::path::Path,
    ) -> Result<(), String> {
        let root = PathBuf::from(&file.root);
        let (bytes, mode) = match undo {
            Undo::Remove => {
                let (store, tree, relative) =
                    (store.clone(), file.tree.clone(), file.path_bytes.clone());
                return tokio::task::spawn_blocking(move || {
                    remove(&store, &root, &tree, &relative)
                })
                .await
                .map_err(|e| e.to_string())?;
            }
            Undo::Text(text, mode) => (text.into_bytes(), mode),
            Undo::Stored(blob) => {
                let store = store.clone();
                let bytes = tokio::task::spawn_blocking(move || store.blob(&blob.oid))
                    .await
                    .map_err(|e| e.to_string())??;
                (bytes, blob.mode)
            }
        };
        let buffer = self.host.buffer(path).await;
        self.write_beneath(root, file.path_bytes.clone(), path, bytes, mode, buffer)
            .await
    }

    /// The workspace's files now, kept for session `id` under `name`. Blocking work off the
    /// async threads.
    async fn keep_snapshot(
        &self,
        store: &CheckpointStore,
        id: &str,
        name: &str,
        buffers: &[(PathBuf, Vec<u8>)],
    ) -> Result<crate::store::checkpoints::Snapshot, String> {
        let limits = self.host.config().checkpoints;
        let (store, roots, id, name, buffers) = (
            store.clone(),
            self.host.roots(),
            id.to_string(),
            name.to_string(),
            buffers.to_vec(),
        );
        tokio::task::spawn_blocking(move || {
            let snapshot = store.snapshot_with(&roots, limits, &buffers)?;
            store.keep(&id, &name, &snapshot.trees)?;
            Ok(snapshot)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// The checkpoints from the one of `since_turn_id` (absent: the session's last turn, a
/// user's message, not an undo) to the end; None when the session has none.
fn since_checkpoint(
    events: &[Event],
    id: &str,
    since_turn_id: Option<&str>,
) -> Result<Option<Vec<CheckpointInfo>>, AgentError> {
    let listed = core::list(events);
    let at = match since_turn_id {
        Some(turn) => Some(listed.iter().position(|c| c.turn_id == turn).ok_or_else(|| {
            AgentError::invalid_params(format!(
                "unknown turn {turn:?} in session {id}: no checkpoint was taken before it (agent/session/checkpoints lists the turns that have one)"
            ))
        })?),
        None => listed.iter().rposition(|c| !c.turn_id.starts_with("undo-")),
    };
    Ok(at.map(|at| listed[at..].to_vec()))
}

/// The undo each asked change makes; the ones that cannot be made go to `conflicts` with
/// why.
fn planned_undos<'a>(
    reviewed: &'a [Reviewed],
    changes: &[ChangeToRevert],
    conflicts: &mut Vec<RevertConflict>,
) -> Vec<(&'a Reviewed, Undo)> {
    let mut writes = Vec::new();
    for change in changes {
        let Some(file) = reviewed.iter().find(|f| f.shown == change.path) else {
            conflicts.push(RevertConflict {
                path: change.path.clone(),
                reason: "the turns did not change this file (agent/session/changes lists the ones they did)".into(),
            });
            continue;
        };
        match undone(file, change.hunk_ids.as_deref()) {
            Ok(undo) => writes.push((file, undo)),
            Err(reason) => conflicts.push(RevertConflict {
                path: change.path.clone(),
                reason,
            }),
        }
    }
    writes
}

/// What an undo writes.
enum Undo {
    /// The file did not exist before the turns.
    Remove,
    /// Its content and mode at the checkpoint.
    Stored(Blob),
    /// Its text with some hunks undone, and the mode it has.
    Text(String, u32),
}

/// What undoing `hunk_ids` (absent: the whole file) makes of the file; Err says why it is
/// left as it is.
fn undone(file: &Reviewed, hunk_ids: Option<&[String]>) -> Result<Undo, String> {
    let Some(ids) = hunk_ids else {
        if file.now != file.after {
            return Err("changed after the agent's last change: undo its hunks one by one, or rewind with force".into());
        }
        return Ok(file.before.clone().map_or(Undo::Remove, Undo::Stored));
    };
    let Some([before, after, now]) = &file.texts else {
        return Err("not a text file: it has no hunks (undo it whole)".into());
    };
    let Some(mode) = file.now.as_ref().map(|b| b.mode) else {
        return Err("deleted after the agent's change".into());
    };
    let text = hunks::revert(before, after, now, ids).map_err(|e| e.to_string())?;
    Ok(Undo::Text(text, mode))
}

/// The files the turns of `since` changed. Blocking (git).
fn reviewed(
    store: &CheckpointStore,
    since: &[CheckpointInfo],
    limits: CheckpointSettings,
    buffers: &[(PathBuf, Vec<u8>)],
) -> Result<Vec<Reviewed>, String> {
    let checkpoint = &since[0];
    for tree in &checkpoint.trees {
        if !store.has(&tree.tree) {
            return Err(format!(
                "checkpoint {} is no longer in the store (dropped to keep it under checkpoints.maxStoreBytes)",
                checkpoint.id
            ));
        }
    }
    let mut now = None;
    let now_trees = now_snapshot(store, since, &mut now, limits, buffers)?.clone();
    let mut unstored: Vec<String> = checkpoint.unstored.clone();
    for later in since {
        unstored.extend(later.end_unstored.iter().cloned());
    }
    let mut files = Vec::new();
    for (index, root) in checkpoint.trees.iter().enumerate() {
        let mut diffs = Vec::new();
        for at in 0..since.len() {
            diffs.push(turn_diff(
                store, since, at, &root.root, &mut now, limits, buffers,
            )?);
        }
        let bytes_of: HashMap<String, Vec<u8>> = diffs
            .iter()
            .flatten()
            .map(|c| (c.path.clone(), c.path_bytes.clone()))
            .collect();
        let now_tree = now_trees
            .trees
            .iter()
            .find(|t| t.root == root.root)
            .map(|t| t.tree.clone());
        for (path, after) in core::agent_last_states(&diffs) {
            if unstored.contains(&path) {
                continue;
            }
            let before = store.entry(&root.tree, &path);
            if before == after {
                continue;
            }
            let now = now_tree
                .as_deref()
                .and_then(|tree| store.entry(tree, &path));
            let text = |blob: &Option<Blob>| -> Result<Option<String>, String> {
                match blob {
                    None => Ok(Some(String::new())),
                    Some(b) if b.mode == SYMLINK_MODE => Ok(None),
                    Some(b) => Ok(String::from_utf8(store.blob(&b.oid)?).ok()),
                }
            };
            let texts = match (text(&before)?, text(&after)?, text(&now)?) {
                (Some(b), Some(a), Some(n)) => Some([b, a, n]),
                _ => None,
            };
            files.push(Reviewed {
                shown: shown(&root.root, &path, index == 0),
                path_bytes: bytes_of
                    .get(&path)
                    .cloned()
                    .unwrap_or_else(|| path.as_bytes().to_vec()),
                root: root.root.clone(),
                tree: root.tree.clone(),
                before,
                after,
                now,
                texts,
            });
        }
    }
    Ok(files)
}
