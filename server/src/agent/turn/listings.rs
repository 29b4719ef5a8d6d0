//! `tools.fileListings`: a reply without tool calls whose text lists files (a path, then the
//! file's whole new content in a fenced block: `agentls_core::listings`) writes them, each
//! as the `write_file` call it stands for. The call takes the one path every call takes
//! (hooks, the approval gate with its diff, the check after the change, the ledger), so a
//! listing is asked, refused and recorded exactly like a call the model made.

use crate::agent::turn::{Call, FailedListing, Flow, Stop, Turn};
use crate::tools::boundary::PathBoundary;
use crate::tools::registry::Tool;
use crate::tools::write_file::{WriteFile, WriteFileInput};
use agentls_core::history::{History, InstructionRole, Item};
use agentls_core::listings::{self, Listing};
use agentls_core::prompts::{self, Prompts};
use agentls_core::reminders;

/// Fresh attempts a turn makes at most: each is a model call and a run of the check.
const FRESH_ATTEMPTS: usize = 3;

/// What a reply's file listings came to.
#[derive(Debug, PartialEq, Eq)]
enum Listed {
    /// None applied (none found, or none of a file the turn may write).
    Nothing,
    /// Applied, each as a `write_file` call: the first file written, and the output of the
    /// first call that failed.
    Written {
        path: String,
        refused: Option<String>,
    },
    /// The reply ends inside the listing of this file (the output limit): nothing written.
    Cut(String),
}

impl Turn {
    /// A small model asked to change the file it is shown whole (`shows_whole_file`) is
    /// offered no tools: it answers with the file's listing. Offered tools, the 1.5B local
    /// model's first call was a read of the file it had just been shown, and after it the
    /// model described the file instead of changing it (4 exercises of 4 on the bench).
    pub(in crate::agent::turn) fn listing_only(
        &self,
        mut static_context: agentls_core::context::StaticContext,
        shows_whole_file: bool,
    ) -> agentls_core::context::StaticContext {
        let config = self.host().config();
        if shows_whole_file
            && config.small_model()
            && config.file_listings()
            && agentls_core::reminders::asks_for_change(&self.request)
        {
            static_context.tools.clear();
        }
        static_context
    }

    /// A reply's listings written, then a fresh attempt, or the turn's end as after an
    /// answer (the failing-check reminder would only bring the last failed file back);
    /// None when the reply listed nothing.
    pub(in crate::agent::turn) async fn take_listings(&mut self, text: &str) -> Option<Flow> {
        let listed = match self.apply_listings(text).await {
            Ok(listed) => listed,
            Err(stop) => return Some(Flow::Done(stop)),
        };
        if listed == Listed::Nothing {
            return None;
        }
        if let Some(reason) = self.halt.take() {
            self.warn(format!("a hook stopped the turn: {reason}"));
            return Some(Flow::Done(Stop::EndTurn));
        }
        if self.fresh_attempt(&listed).await || self.stop_hooks(text).await {
            return Some(Flow::Next);
        }
        Some(Flow::Done(Stop::EndTurn))
    }

    /// Writes the listings of `text` that name a file of the workspace or one the user's
    /// message names: what the reply listed, or the stop that ended the turn while writing.
    async fn apply_listings(&mut self, text: &str) -> Result<Listed, Stop> {
        if !self.host().config().file_listings() {
            return Ok(Listed::Nothing);
        }
        if let Some(path) = listings::cut(text) {
            return Ok(Listed::Cut(path));
        }
        let boundary = PathBoundary {
            roots: self.host().roots(),
        };
        let mut chosen: Vec<Listing> = Vec::new();
        for block in listings::blocks(text) {
            let named = match block.path {
                Some(path) if self.applies(&boundary, &path).await => Some(path),
                _ => self.in_view_path(&block.content),
            };
            match named {
                Some(path) if !chosen.iter().any(|listing| listing.path == path) => {
                    chosen.push(Listing {
                        path,
                        content: block.content,
                    });
                }
                _ => {}
            }
        }
        let Some(first) = chosen.first().map(|listing| listing.path.clone()) else {
            return Ok(Listed::Nothing);
        };
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
            None => Ok(Listed::Written {
                path: first,
                refused: self.refused_output(&calls).await,
            }),
        }
    }

    /// The recorded output of the first of `calls` that failed.
    async fn refused_output(&self, calls: &[Call]) -> Option<String> {
        let live = self.handle.live.lock().await;
        live.session
            .history
            .entries()
            .iter()
            .rev()
            .take(calls.len() * 2)
            .filter_map(|entry| match &entry.item {
                Item::ToolOutput {
                    call_id,
                    content,
                    success: false,
                    ..
                } if calls.iter().any(|call| &call.id == call_id) => Some(content.clone()),
                _ => None,
            })
            .next_back()
    }

    /// After a listing that failed (its check fails, or it was written the same again and
    /// refused while the check still fails, or it was cut): the turn goes on with a fresh
    /// attempt, [`FRESH_ATTEMPTS`] at most. Whether it goes on.
    async fn fresh_attempt(&mut self, listed: &Listed) -> bool {
        let (path, report) = match listed {
            Listed::Nothing => return false,
            // The check's failure; else a write refused (the file as it already is: a
            // small model copies its last failed file from an earlier turn).
            Listed::Written { path, refused } => match (&self.failed_check, refused) {
                (Some(report), _) | (None, Some(report)) => (path, report.clone()),
                (None, None) => return false,
            },
            Listed::Cut(path) => (
                path,
                prompts::fill(
                    &self.host().prompts().reminders.listing_cut,
                    &[("path", path)],
                ),
            ),
        };
        if self.attempt.base.is_none() || self.attempt.fresh >= FRESH_ATTEMPTS {
            return false;
        }
        let end = self.handle.live.lock().await.session.history.len();
        self.attempt.failed = Some(FailedListing {
            end,
            path: path.clone(),
            report,
        });
        self.attempt.fresh += 1;
        true
    }

    /// What a request is built from: the history, or during a fresh attempt the history
    /// without the failed attempt, told how it failed (`reminders::fresh_attempt`), with the
    /// temperature to sample it at.
    pub(in crate::agent::turn) fn attempt_view(
        &self,
        history: History,
        prompts: &Prompts,
    ) -> (History, Option<f64>) {
        let (Some(base), Some(failed)) = (self.attempt.base, &self.attempt.failed) else {
            return (history, None);
        };
        let config = self.host().config();
        let (mut entries, reminder) = reminders::fresh_attempt(
            history.entries(),
            base,
            &failed.path,
            &failed.report,
            &prompts.reminders,
        );
        let text = reminders::render(
            &reminder,
            prompts,
            history.tokenizer(),
            config.reminders.max_tokens,
        );
        let item = Item::Instructions {
            role: InstructionRole::Reminder,
            text,
        };
        entries.push(history.entry_for(item, config.tool_output_limit, prompts));
        entries.extend(history.entries().iter().skip(failed.end).cloned());
        let temperature = config
            .sampling_temperature()
            .map_or(reminders::FRESH_ATTEMPT_TEMPERATURE, |t| {
                t.max(reminders::FRESH_ATTEMPT_TEMPERATURE)
            });
        (
            History::from_entries(history.tokenizer(), entries),
            Some(temperature),
        )
    }

    /// A listing is applied to a file that exists in the workspace, or to a new one the
    /// user's message names: code shown for another reason (an example, a new helper the
    /// user did not ask for) writes nothing.
    async fn applies(&self, boundary: &PathBoundary, listed: &str) -> bool {
        let Ok(path) = boundary.resolve(listed) else {
            return false;
        };
        match tokio::fs::metadata(&path).await {
            Ok(meta) => meta.is_file(),
            Err(_) => self.request.contains(listed),
        }
    }

    /// The file in view (shown whole at the turn's start), when `content` is a whole new
    /// version of it (`listings::keeps_definitions`): the model listed it under no path, or
    /// under a name it made up or took from its prompt's example.
    fn in_view_path(&self, content: &str) -> Option<String> {
        let (path, text) = self.attempt.in_view.as_ref()?;
        listings::keeps_definitions(content, text).then(|| path.clone())
    }
}
