//! `tools.fileListings`: a reply without tool calls whose text lists files (a path, then the
//! file's whole new content in a fenced block: `agentls_core::listings`) writes them, each
//! as the `write_file` call it stands for. The call takes the one path every call takes
//! (hooks, the approval gate with its diff, the check after the change, the ledger), so a
//! listing is asked, refused and recorded exactly like a call the model made.

use crate::agent::turn::{Call, Stop, Turn};
use crate::tools::boundary::PathBoundary;
use crate::tools::registry::Tool;
use crate::tools::write_file::{WriteFile, WriteFileInput};
use agentls_core::listings::{self, Listing};

impl Turn {
    /// Writes the listings of `text` that name a file of the workspace or one the user's
    /// message names; Err is the stop that ended the turn while writing them.
    pub(in crate::agent::turn) async fn apply_listings(&mut self, text: &str) -> Result<(), Stop> {
        if !self.host().config().file_listings() {
            return Ok(());
        }
        let found = listings::find(text);
        if found.is_empty() {
            return Ok(());
        }
        let boundary = PathBoundary {
            roots: self.host().roots(),
        };
        let mut chosen = Vec::new();
        for listing in found {
            if self.applies(&boundary, &listing).await {
                chosen.push(listing);
            }
        }
        if chosen.is_empty() {
            return Ok(());
        }
        let proposed: Vec<String> = (1..=chosen.len()).map(|n| format!("listing{n}")).collect();
        let ids = {
            let live = self.handle.live.lock().await;
            agentls_core::history::unique_call_ids(&live.session.history, &proposed)
        };
        let calls: Vec<Call> = chosen
            .into_iter()
            .zip(ids)
            .map(|(listing, id)| Call {
                id,
                name: WriteFile::NAME.to_string(),
                arguments: serde_json::to_string(&WriteFileInput {
                    path: listing.path,
                    content: listing.content,
                })
                .unwrap_or_default(),
            })
            .collect();
        match self.run_calls(&calls).await {
            Some(stop) => Err(stop),
            None => Ok(()),
        }
    }

    /// A listing is applied to a file that exists in the workspace, or to a new one the
    /// user's message names: code shown for another reason (an example, a new helper the
    /// user did not ask for) writes nothing.
    async fn applies(&self, boundary: &PathBoundary, listing: &Listing) -> bool {
        let Ok(path) = boundary.resolve(&listing.path) else {
            return false;
        };
        match tokio::fs::metadata(&path).await {
            Ok(meta) => meta.is_file(),
            Err(_) => self.request.contains(listing.path.as_str()),
        }
    }
}
