//! What the session's previous turn changed, as unified diffs (`/review --last-turn`): from
//! its checkpoint to the files as it left them (its end snapshot; the files now when it has
//! none), read from the checkpoint store.

use std::path::PathBuf;
use std::sync::Arc;

use agentls_core::checkpoints::{self as core, Blob, CheckpointInfo, CheckpointSettings};

use crate::agent::checkpoints::{shown, turn_diff};
use crate::agent::sessions::SessionHandle;
use crate::agent::Agent;
use crate::store::checkpoints::CheckpointStore;
use crate::tools::git_diff;

impl Agent {
    /// The diff of the last turn of `handle`'s session that took a checkpoint, up to about
    /// `limit` bytes; Err when there is none.
    pub(in crate::agent) async fn last_turn_diff(
        &self,
        handle: &Arc<SessionHandle>,
        limit: usize,
    ) -> Result<String, String> {
        let events = {
            let _live = handle.live.lock().await;
            self.events_of(&handle.id).map_err(|e| e.message)?
        };
        let listed = core::list(&events);
        if listed.is_empty() {
            return Err(
                "this session has no earlier turn with a checkpoint to review (checkpoints.enabled)"
                    .into(),
            );
        }
        let store = self.checkpoint_store().map_err(|e| e.message)?;
        let limits = self.host.config().checkpoints;
        let buffers = self.unsaved_buffers(handle).await;
        tokio::task::spawn_blocking(move || {
            last_turn_text(&store, &listed, limits, &buffers, limit)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// The unified diffs of what the last listed checkpoint's turn changed. Blocking (git).
fn last_turn_text(
    store: &CheckpointStore,
    listed: &[CheckpointInfo],
    limits: CheckpointSettings,
    buffers: &[(PathBuf, Vec<u8>)],
    limit: usize,
) -> Result<String, String> {
    let at = listed.len() - 1;
    let mut now = None;
    let mut text = String::new();
    let read = |blob: &Option<Blob>| -> Result<Option<String>, String> {
        match blob {
            Some(blob) => Ok(Some(
                String::from_utf8_lossy(&store.blob(&blob.oid)?).into_owned(),
            )),
            None => Ok(None),
        }
    };
    for (first, root) in listed[at].trees.iter().enumerate() {
        let changes = turn_diff(store, listed, at, &root.root, &mut now, limits, buffers)?;
        for change in changes {
            let name = shown(&root.root, &change.path, first == 0);
            let (old, new) = (read(&change.old)?, read(&change.new)?);
            text.push_str(&git_diff::file_diff(&name, old.as_deref(), new.as_deref()));
            if text.len() >= limit {
                return Ok(text);
            }
        }
    }
    Ok(text)
}
