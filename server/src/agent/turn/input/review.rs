//! `/review [--base BRANCH | --last-turn] [focus]`: the prompt becomes the review prompt
//! (`prompts/review.md`) and the diff it reviews, gathered here, goes after the editor
//! block as data (`review::diff_block`), cut to a quarter of the window. The turn then
//! runs under plan mode's rules with `report_finding` (`Scope::review`). An empty diff, or
//! one that cannot be had, ends the turn with the reason before any model call.

use agentls_core::review::{self, Target};
use agentls_core::truncate::{truncate_middle, TruncationPolicy};
use agentls_core::updates::Update;

use crate::agent::sessions::Prompt;
use crate::agent::tokenizer_for;
use crate::agent::turn::Stop;
use crate::agent::turn::Turn;
use crate::tools::git_diff;

/// The most bytes of diff read before it is cut to its token budget.
const MAX_DIFF_BYTES: usize = 4 << 20;

impl Turn {
    /// Makes `prompt` the review's and the turn a review turn; Err ends the turn (nothing
    /// to review, or the diff could not be had: said in the chat).
    pub(in crate::agent) async fn review(
        &mut self,
        prompt: &mut Prompt,
        arguments: Option<&str>,
    ) -> Result<(), Stop> {
        let request = match review::parse_request(arguments) {
            Ok(request) => request,
            Err(why) => return Err(self.refuse(why).await),
        };
        let diff = match self.review_diff(&request.target).await {
            Ok(diff) => diff,
            Err(why) => return Err(self.refuse(format!("/review: {why}")).await),
        };
        if diff.trim().is_empty() {
            self.update(Update::AgentMessageChunk {
                text: format!(
                    "Nothing to review: {} are empty.",
                    request.target.described()
                ),
            });
            return Err(Stop::EndTurn);
        }
        let config = self.host().config();
        let prompts = self.host().prompts();
        let (window, model) = {
            let live = self.handle.live.lock().await;
            (
                self.agent.window_of(&live.session),
                live.session.model.clone(),
            )
        };
        let budget = (window.estimated(window.usable) / 4).max(1);
        let cut = truncate_middle(
            &diff,
            TruncationPolicy::Tokens(budget),
            tokenizer_for(&config, &model),
        );
        if cut.removed > 0 {
            self.warn(format!(
                "the diff to review is larger than a quarter of the model's window: its middle was cut ({} tokens left out)",
                cut.removed
            ));
        }
        // The user's words may @mention files; the review prompt's are not searched.
        self.scope.mentions_from = Some(prompt.text.clone());
        self.scope.review = Some(review::diff_block(&request.target, &cut.text, &prompts));
        // A review asks for no change: the unfinished-change reminder must not push one.
        self.reminded_unfinished = true;
        prompt.text = review::review_prompt(&request, &prompts);
        Ok(())
    }

    /// The diff `target` names, as text (unified diffs), whole up to `MAX_DIFF_BYTES`.
    async fn review_diff(&self, target: &Target) -> Result<String, String> {
        let roots = self.host().roots();
        let Some(root) = roots.first().cloned() else {
            return Err("there is no workspace folder".into());
        };
        match target {
            Target::Uncommitted => git_diff::uncommitted(&root, MAX_DIFF_BYTES).await,
            Target::Branch { base } => git_diff::branch(&root, base, MAX_DIFF_BYTES).await,
            Target::LastTurn => {
                self.agent
                    .last_turn_diff(&self.handle, MAX_DIFF_BYTES)
                    .await
            }
        }
    }
}
