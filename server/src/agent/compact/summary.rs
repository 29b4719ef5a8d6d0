//! The summary call: the session's own request with the compaction prompt last and no tools,
//! the oldest rounds dropped while it does not fit, the style fallback after failures.

use crate::agent::tokenizer_for;
use crate::agent::Agent;
use crate::locks::Locked;
use crate::provider::Provider;
use agentls_core::compaction::plan::Window;
use agentls_core::compaction::plan::{self, Summary};
use agentls_core::compaction::{self, Style};
use agentls_core::context::StaticContext;
use agentls_core::history::Entry;
use agentls_core::history::History;
use agentls_core::history::Item;
use agentls_core::tokens::Calibration;
use agentls_core::wire::ErrorKind;
use agentls_core::wire::ProviderEvent;
use agentls_core::wire::Usage;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

impl Agent {
    /// Asks the model for a summary of `entries` in the configured style. The request is
    /// the session's own (same system prompt) with the compaction prompt as the last user
    /// message and no tools. Too large for the model: the oldest rounds are dropped until
    /// it fits. A checkpoint that is not valid JSON is asked again once, then the style
    /// falls back to handoff.
    pub(in crate::agent) async fn summarize(
        &self,
        provider: &Provider,
        static_context: &StaticContext,
        entries: &[Entry],
        instructions: Option<&str>,
        window: Window,
        cancel: &CancellationToken,
    ) -> Result<Summary, String> {
        let config = self.host.config();
        let mut style = config.compaction.style;
        let mut failures_of_style = 0;
        let mut total = Usage::default();
        loop {
            let prompt = self.compaction_prompt(style, instructions)?;
            let answer = self
                .summary_call(
                    provider,
                    static_context,
                    entries,
                    &prompt,
                    window,
                    cancel,
                    &mut total,
                )
                .await?;
            match compaction::parse_summary(style, &answer) {
                Ok(text) => {
                    return Ok(Summary {
                        text,
                        style,
                        usage: total,
                    })
                }
                Err(why) => {
                    failures_of_style += 1;
                    let Some(next) = plan::style_after_failure(style, failures_of_style) else {
                        return Err(why);
                    };
                    tracing::warn!("compaction: {why}");
                    if next != style {
                        failures_of_style = 0;
                    }
                    style = next;
                }
            }
        }
    }

    pub(in crate::agent) fn compaction_prompt(
        &self,
        style: Style,
        instructions: Option<&str>,
    ) -> Result<String, String> {
        // `compaction.promptFile` is read with the other prompts (`store::prompts::load`).
        let prompts = self.host.prompts();
        let mut prompt = style.prompt(&prompts).to_string();
        if let Some(focus) = instructions.map(str::trim).filter(|f| !f.is_empty()) {
            prompt.push_str(&format!("\n\n{}\n{focus}", prompts.compact_focus));
        }
        Ok(prompt)
    }

    /// One summary request; the oldest rounds are dropped while it does not fit.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::agent) async fn summary_call(
        &self,
        provider: &Provider,
        static_context: &StaticContext,
        entries: &[Entry],
        prompt: &str,
        window: Window,
        cancel: &CancellationToken,
        total: &mut Usage,
    ) -> Result<String, String> {
        let prompts = self.host.prompts();
        let config = self.host.config();
        let tokenizer = tokenizer_for(&config, &provider.config().model);
        // No tools: the model must answer in text.
        let no_tools = StaticContext {
            tools: Vec::new(),
            ..static_context.clone()
        };
        let mut dropped = 0;
        loop {
            let kept = compaction::drop_oldest_rounds(entries, dropped);
            if kept.is_empty() && dropped > 0 {
                return Err(
                    "even the newest part of the conversation does not fit the summarizer".into(),
                );
            }
            let text_only = compaction::without_image_bytes(kept, &prompts, tokenizer);
            let mut history = History::from_entries(tokenizer, text_only);
            history.record(
                Item::User {
                    text: prompt.to_string(),
                    context: None,
                },
                config.tool_output_limit,
                &prompts,
            );
            let assembly = agentls_core::context::AssemblyConfig {
                tokenizer,
                context_window: window.context_window,
                calibration: Calibration::default(),
            };
            let request = {
                let mut cache = self.cache.locked();
                agentls_core::context::assemble(
                    &assembly,
                    &no_tools,
                    &history,
                    None,
                    &prompts,
                    &mut cache.counts,
                )
            };
            if request.total_tokens > window.estimated(window.summarizer_usable) && !kept.is_empty()
            {
                dropped = plan::drop_more(dropped);
                continue;
            }
            let (text, result) = stream_text(provider, &request, &prompts, cancel, total).await;
            match result {
                Ok(_) => return Ok(text),
                Err(err) if err.kind == ErrorKind::ContextLengthExceeded && !kept.is_empty() => {
                    dropped = plan::drop_more(dropped);
                }
                Err(err) => return Err(format!("the summary call failed: {}", err.message)),
            }
        }
    }
}

/// Streams one summary call: its text (thoughts and tool calls ignored) and its usage added
/// to `total`.
async fn stream_text(
    provider: &Provider,
    request: &agentls_core::context::Request<'_>,
    prompts: &agentls_core::prompts::Prompts,
    cancel: &CancellationToken,
    total: &mut Usage,
) -> (
    String,
    Result<agentls_core::wire::Completion, agentls_core::wire::ProviderError>,
) {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let result = provider.stream(request, prompts, &events_tx, cancel).await;
    drop(events_tx);
    let mut text = String::new();
    while let Some(event) = events_rx.recv().await {
        match event {
            ProviderEvent::Text(chunk) => text.push_str(&chunk),
            ProviderEvent::Usage(usage) => {
                total.input_tokens += usage.input_tokens;
                total.output_tokens += usage.output_tokens;
            }
            _ => {}
        }
    }
    (text, result)
}
