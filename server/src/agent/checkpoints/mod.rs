//! Checkpoints of the agent's sessions: the workspace's files taken before each user
//! message's turn (`Event::Checkpoint`) and as the turn left them (`Event::TurnSnapshot`),
//! listed (`agent/session/checkpoints`), rewound to (`rewind.rs`) and forked from
//! (`fork.rs`). The trees are `store::checkpoints`'; what a rewind plans is the core's
//! `checkpoints`.
//!
//! Only a top-level turn takes them: a subagent runs inside its parent's turn, so its
//! changes are the parent turn's. A checkpoint that cannot be taken is said (a warning)
//! and the turn goes on.

mod changes;
mod fork;
mod review;
mod rewind;

use std::path::PathBuf;
use std::sync::Arc;

use agentls_core::checkpoints::{self as core, CheckpointInfo, CheckpointSettings, RawChange};
use agentls_core::event::{Event, RootTree};

use crate::agent::sessions::live::Durability;
use crate::agent::sessions::SessionHandle;
use crate::agent::turn::Turn;
use crate::agent::{Agent, AgentError};
use crate::protocol::lsp::{CheckpointEntry, CheckpointFile};
use crate::store::checkpoints::{CheckpointStore, Snapshot};
use crate::store::session_log;
use crate::tools::registry::Registry;

impl Agent {
    pub(in crate::agent) fn checkpoint_store(&self) -> Result<CheckpointStore, AgentError> {
        Ok(CheckpointStore::beside(&self.store()?))
    }

    /// The session's log, read now.
    pub(in crate::agent) fn events_of(&self, id: &str) -> Result<Vec<Event>, AgentError> {
        Ok(self
            .store()?
            .read(id)
            .map_err(|e| AgentError::failed(format!("cannot read session {id}: {e}")))?
            .events)
    }

    /// Takes a snapshot of the roots in the background, so the first turn's checkpoint
    /// finds git's index (its stat cache) and the files' objects made: the first snapshot
    /// of a workspace hashes every file (seconds on 20,000 files), the next ones only what
    /// changed. A turn that starts before it ends waits for it (one snapshot at a time).
    pub(in crate::agent) fn warm_checkpoints(&self) {
        let config = self.host.config();
        if !config.checkpoints.enabled {
            return;
        }
        let Ok(store) = self.checkpoint_store() else {
            return;
        };
        let roots = self.host.roots();
        let limits = config.checkpoints;
        tokio::task::spawn_blocking(move || {
            if let Err(err) = store.snapshot(&roots, limits) {
                tracing::info!("checkpoint store not warmed: {err}");
            }
        });
    }

    /// The editor's buffers of the files the agent changed in this session whose text is
    /// not what the disk holds (an edit through `workspace/applyEdit` not saved yet): a
    /// snapshot takes them in place of the disk. At most 64.
    pub(in crate::agent) async fn unsaved_buffers(
        &self,
        handle: &SessionHandle,
    ) -> Vec<(PathBuf, Vec<u8>)> {
        let changed: Vec<String> = {
            let live = handle.live.lock().await;
            live.session.ledger.files_changed.keys().cloned().collect()
        };
        let roots = self.host.roots();
        let mut buffers = Vec::new();
        for shown in changed {
            let candidates: Vec<PathBuf> = if std::path::Path::new(&shown).is_absolute() {
                vec![PathBuf::from(&shown)]
            } else {
                roots.iter().map(|root| root.join(&shown)).collect()
            };
            for path in candidates {
                if let Some((text, _)) = self.host.buffer(&path).await {
                    if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
                        buffers.push((path, text.into_bytes()));
                    }
                    break;
                }
            }
            if buffers.len() >= 64 {
                break;
            }
        }
        buffers
    }

    /// `agent/session/checkpoints`: each checkpoint with what its turn changed (the diff
    /// from it to the turn's end; a turn that never ended, to the next checkpoint or now).
    pub async fn checkpoints(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Vec<CheckpointEntry>, AgentError> {
        let handle = self.handle(id).await?;
        let events = {
            let _live = handle.live.lock().await;
            self.events_of(id)?
        };
        let listed = core::list(&events);
        let store = self.checkpoint_store()?;
        let limits = self.host.config().checkpoints;
        let buffers = self.unsaved_buffers(&handle).await;
        tokio::task::spawn_blocking(move || entries(&store, &listed, limits, &buffers))
            .await
            .map_err(|e| AgentError::failed(e.to_string()))?
            .map_err(AgentError::failed)
    }
}

/// The rows of `agent/session/checkpoints`. Blocking (git).
fn entries(
    store: &CheckpointStore,
    listed: &[CheckpointInfo],
    limits: CheckpointSettings,
    buffers: &[(PathBuf, Vec<u8>)],
) -> Result<Vec<CheckpointEntry>, String> {
    let mut now: Option<Snapshot> = None;
    let mut rows = Vec::new();
    for (at, checkpoint) in listed.iter().enumerate() {
        let mut files = Vec::new();
        for (first, root) in checkpoint.trees.iter().enumerate() {
            let changes = match turn_diff(store, listed, at, &root.root, &mut now, limits, buffers)
            {
                Ok(changes) => changes,
                // A tree the cap dropped: the row stays, without its files.
                Err(_) if !store.has(&root.tree) => Vec::new(),
                Err(err) => return Err(err),
            };
            files.extend(changes.into_iter().map(|change| CheckpointFile {
                change: format!("{:?}", change.kind()).to_lowercase(),
                path: shown(&root.root, &change.path, first == 0),
            }));
        }
        rows.push(CheckpointEntry {
            id: checkpoint.id.clone(),
            turn: checkpoint.turn,
            turn_id: checkpoint.turn_id.clone(),
            message: checkpoint.message.clone(),
            time: checkpoint.at,
            files,
            not_stored: checkpoint.unstored.clone(),
        });
    }
    Ok(rows)
}

/// A root-relative path as shown: as is in the first root, under its root in the others.
pub(in crate::agent) fn shown(root: &str, path: &str, first_root: bool) -> String {
    if first_root {
        path.to_string()
    } else {
        PathBuf::from(root)
            .join(path)
            .to_string_lossy()
            .into_owned()
    }
}

fn tree_of<'a>(trees: &'a [RootTree], root: &str) -> Option<&'a str> {
    trees
        .iter()
        .find(|t| t.root == root)
        .map(|t| t.tree.as_str())
}

/// What turn `at` changed in `root`: from its checkpoint to its end (its own snapshot, the
/// next checkpoint, or the files now, taken once into `now`).
pub(in crate::agent) fn turn_diff(
    store: &CheckpointStore,
    listed: &[CheckpointInfo],
    at: usize,
    root: &str,
    now: &mut Option<Snapshot>,
    limits: CheckpointSettings,
    buffers: &[(PathBuf, Vec<u8>)],
) -> Result<Vec<RawChange>, String> {
    let checkpoint = &listed[at];
    let Some(start) = tree_of(&checkpoint.trees, root) else {
        return Ok(Vec::new());
    };
    let end = checkpoint
        .end
        .as_deref()
        .and_then(|trees| tree_of(trees, root))
        .or_else(|| {
            listed
                .get(at + 1)
                .and_then(|next| tree_of(&next.trees, root))
        })
        .map(str::to_string);
    let end = match end {
        Some(end) => end,
        None => {
            let snapshot = now_snapshot(store, listed, now, limits, buffers)?;
            match tree_of(&snapshot.trees, root) {
                Some(tree) => tree.to_string(),
                None => return Ok(Vec::new()),
            }
        }
    };
    store.diff(start, &end)
}

/// The files now, of the roots the checkpoints name (taken once).
pub(in crate::agent) fn now_snapshot<'a>(
    store: &CheckpointStore,
    listed: &[CheckpointInfo],
    now: &'a mut Option<Snapshot>,
    limits: CheckpointSettings,
    buffers: &[(PathBuf, Vec<u8>)],
) -> Result<&'a Snapshot, String> {
    if now.is_none() {
        let mut roots: Vec<PathBuf> = Vec::new();
        for checkpoint in listed {
            for tree in &checkpoint.trees {
                let root = PathBuf::from(&tree.root);
                if !roots.contains(&root) {
                    roots.push(root);
                }
            }
        }
        *now = Some(store.snapshot_with(&roots, limits, buffers)?);
    }
    Ok(now.as_ref().expect("just taken"))
}

impl Turn {
    /// Before the turn changes anything: a checkpoint of the workspace's files, recorded
    /// (a top-level turn only; a warning, and the turn goes on, when it cannot be taken).
    pub(in crate::agent) async fn take_checkpoint(&mut self) {
        if self.handle.parent.is_some() || !self.host().config().checkpoints.enabled {
            return;
        }
        let checkpoint_id = format!("cp-{}", self.turn_id.trim_start_matches("turn-"));
        match self.snapshot(&checkpoint_id).await {
            Ok(snapshot) => {
                let recorded = self
                    .record(Event::Checkpoint {
                        turn_id: self.turn_id.clone(),
                        checkpoint_id: checkpoint_id.clone(),
                        at: session_log::now_millis(),
                        trees: snapshot.trees.clone(),
                        unstored: snapshot.unstored.clone(),
                        label: None,
                    })
                    .await;
                match recorded {
                    Ok(()) => self.checkpoint = Some((checkpoint_id, snapshot)),
                    Err(err) => self.warn(format!("no checkpoint for this turn: {err}")),
                }
            }
            Err(err) => self.warn(format!(
                "no checkpoint for this turn (a rewind cannot go back to before it): {err}"
            )),
        }
    }

    /// After the turn: the files as it left them, so what it changed is known and a
    /// rewind sees the user's later edits. Then the store is kept under its cap.
    pub(in crate::agent) async fn take_turn_snapshot(&mut self) {
        let Some((checkpoint_id, start)) = self.checkpoint.take() else {
            return;
        };
        let snapshot = if self.only_read().await {
            // Nothing of the agent's could change a file: the end is the checkpoint (no
            // walk of the workspace for a turn that only talked or read).
            Ok(start)
        } else {
            self.snapshot(&format!("{checkpoint_id}-end")).await
        };
        match snapshot {
            Ok(snapshot) => {
                if let Err(err) = self
                    .record(Event::TurnSnapshot {
                        turn_id: self.turn_id.clone(),
                        trees: snapshot.trees,
                        unstored: snapshot.unstored,
                    })
                    .await
                {
                    tracing::warn!("cannot record the turn's snapshot: {err}");
                }
            }
            Err(err) => tracing::warn!("no snapshot at the turn's end: {err}"),
        }
        let (store, session) = match self.agent.checkpoint_store() {
            Ok(store) => (store, self.handle.id.clone()),
            Err(_) => return,
        };
        let cap = self.host().config().checkpoints.max_store_bytes;
        let capped = tokio::task::spawn_blocking(move || store.enforce_cap(cap, &session)).await;
        match capped {
            Ok(Ok(dropped)) if !dropped.is_empty() => self.warn(format!(
                "the checkpoint store passed checkpoints.maxStoreBytes ({cap} bytes): the checkpoints of the oldest session(s) {} were dropped",
                dropped.join(", ")
            )),
            Ok(Err(err)) => tracing::warn!("checkpoint store cap: {err}"),
            _ => {}
        }
    }

    /// Whether this turn's tool calls (since its user message) only read and searched.
    async fn only_read(&self) -> bool {
        use agentls_core::history::Item;
        use agentls_core::tool_info::{ToolCatalog, ToolKind};
        let live = self.handle.live.lock().await;
        live.session
            .history
            .entries()
            .iter()
            .rev()
            .take_while(|e| !matches!(e.item, Item::User { .. }))
            .all(|e| match &e.item {
                Item::ToolCall {
                    name, arguments, ..
                } => matches!(
                    Registry::builtin()
                        .kind(name, &serde_json::from_str(arguments).unwrap_or_default()),
                    ToolKind::Read | ToolKind::Search
                ),
                _ => true,
            })
    }

    /// The workspace's files now, kept for this session under `name`. Holds the session
    /// while it runs, so a rewind and a checkpoint never interleave.
    async fn snapshot(&self, name: &str) -> Result<Snapshot, String> {
        let store = self.agent.checkpoint_store().map_err(|e| e.message)?;
        let roots = self.host().roots();
        let limits = self.host().config().checkpoints;
        let session = self.handle.id.clone();
        let name = name.to_string();
        let buffers = self.agent.unsaved_buffers(&self.handle).await;
        let _live = self.handle.live.lock().await;
        tokio::task::spawn_blocking(move || {
            let snapshot = store.snapshot_with(&roots, limits, &buffers)?;
            store.keep(&session, &name, &snapshot.trees)?;
            Ok(snapshot)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// Records `event` durably in `live` (the rewind's and the fork's events).
pub(in crate::agent) fn record_synced(
    live: &mut crate::agent::sessions::live::Live,
    event: &Event,
) -> Result<(), AgentError> {
    live.record(event, Durability::Synced, Registry::builtin())
        .map_err(AgentError::failed)
}
