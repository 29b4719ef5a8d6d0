//! The compaction plan: every decision of a compaction, as functions over data. The agent
//! does the IO around them (the summary call, waiting for a summary prepared ahead, the
//! log, what the client sees) and decides nothing itself.
//!
//! One compaction is two steps, because the summary is the model's:
//! - [`decide`]: trimming old tool outputs alone may reach the target ([`Decision::Done`]);
//!   else a summary is needed ([`Decision::NeedSummary`]): one prepared ahead when it still
//!   stands for this history ([`NeedSummary::prepared_fits`]), else a fresh one of
//!   [`NeedSummary::entries`].
//! - [`finish`]: the summary (or why there is none) becomes the compacted history: rebuilt
//!   and verified at each candidate tail cut; else a rule-based drop with a note; else, when
//!   even that does not shrink the history, only the user's messages and the ledger.
//!
//! Beside them, the figures and small choices the agent needs before and after: the
//! [`Window`], the [`triggers`] before a model call, the [`target_tokens`], what a summary
//! [prepared ahead](to_prepare) covers, the [`style_after_failure`] of a summary that does
//! not parse, [`drop_more`] rounds when the summary request is too large, and the
//! [`warnings`] after a compaction.

use super::{
    kept_tail_start, last_round_within, rebuild, round_starts, rule_based, select_user_messages,
    summary_text, tokens_of, trim, verify, CompactionConfig, Strategy, Style,
};
use crate::event::CompactionMetrics;
use crate::history::{item_tokens, Entry, Item};
use crate::prompts::{fill, Prompts};
use crate::tokens::TokenizerKind;
use crate::wire::Usage;

/// The window figures a compaction works with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub context_window: usize,
    pub usable: usize,
    /// What the summarizing model takes (the old model's when switching to a smaller one).
    pub summarizer_usable: usize,
    /// Provider tokens per estimated token (the session's calibration): the window is in
    /// the provider's tokens, history counts are estimates.
    pub ratio: f64,
}

impl Window {
    /// A model's window of `context_window` tokens, less the output reserved for the answer
    /// ([`super::usable_window`]); the same model summarizes.
    pub fn new(context_window: usize, max_output_tokens: Option<usize>, ratio: f64) -> Window {
        let usable = super::usable_window(context_window, max_output_tokens);
        Window {
            context_window,
            usable,
            summarizer_usable: usable,
            ratio,
        }
    }

    /// `provider_tokens` of the window expressed in estimated tokens.
    pub fn estimated(&self, provider_tokens: usize) -> usize {
        (provider_tokens as f64 / self.ratio.max(0.1)) as usize
    }
}

/// Why a compaction runs (`trigger` of its metrics, unless a prepared summary was used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Threshold,
    Manual,
    ModelSwitch,
    Overflow,
}

impl Trigger {
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Threshold => "threshold",
            Trigger::Manual => "manual",
            Trigger::ModelSwitch => "modelSwitch",
            Trigger::Overflow => "overflow",
        }
    }
}

/// What the fill before a model call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Triggers {
    /// The call waits for a compaction.
    pub compact: bool,
    /// A summary should be prepared in the background.
    pub prepare: bool,
}

/// Whether the next model call must wait for a compaction, or a summary should be
/// prepared, when the request is `used` tokens of `usable`. Neither when automatic
/// compaction is off, by configuration or after two low-yield compactions in a row.
pub fn triggers(
    config: &CompactionConfig,
    low_yield_compactions: u32,
    used: usize,
    usable: usize,
) -> Triggers {
    if !config.auto || low_yield_compactions >= 2 {
        return Triggers::default();
    }
    let fill = used as f64 / (usable as f64).max(1.0);
    Triggers {
        compact: fill >= config.threshold,
        prepare: fill >= config.prepare_at && fill < config.threshold,
    }
}

/// Why a summary of `tokens` input tokens is not asked of a provider that reads about
/// `tokens_per_second` (the slowest prompt speed seen in the session) when it would take
/// longer than `max_ms`, or None: on a local model a summary of the whole history can take
/// minutes, more than the compaction saves; the extractive summary is used instead.
pub fn summary_too_slow(
    tokens: usize,
    tokens_per_second: Option<f64>,
    max_ms: u64,
) -> Option<String> {
    let speed = tokens_per_second.filter(|s| *s > 0.0)?;
    let ms = tokens as f64 / speed * 1000.0;
    (ms > max_ms as f64).then(|| {
        format!(
            "this provider reads about {speed:.0} tokens/s: a summary of {tokens} tokens would take about {:.0} s, over compaction.maxSummaryMs ({max_ms} ms)",
            ms / 1000.0
        )
    })
}

/// Whether a history of `used` tokens must be compacted (with the old model) before
/// switching to a model whose usable window is `usable`.
pub fn compact_before_switch(config: &CompactionConfig, used: usize, usable: usize) -> bool {
    used as f64 >= config.threshold * usable as f64
}

/// History tokens a compaction aims for: `targetFill` of the usable window less the static
/// context (`fixed` tokens), and never less than 256.
pub fn target_tokens(config: &CompactionConfig, window: Window, fixed: usize) -> usize {
    window
        .estimated((config.target_fill * window.usable as f64) as usize)
        .saturating_sub(fixed)
        .max(256)
}

/// History tokens below the threshold: where a prepared summary with what came since must
/// land to be worth swapping in.
fn below_threshold(config: &CompactionConfig, window: Window, fixed: usize) -> usize {
    window
        .estimated((config.threshold * window.usable as f64) as usize)
        .saturating_sub(fixed)
}

/// What a summary prepared ahead covers: the whole history as it is, old tool outputs
/// trimmed. It runs before a model call, when every call has its output; what comes after
/// it stays verbatim at the swap (the cut is the length of what it covers).
pub fn to_prepare(
    entries: &[Entry],
    config: &CompactionConfig,
    prompts: &Prompts,
    tokenizer: TokenizerKind,
) -> Result<Vec<Entry>, String> {
    let trimmed = trim(entries, config.keep_tool_rounds, prompts, tokenizer);
    if trimmed.entries.is_empty() {
        return Err("nothing to summarize yet".into());
    }
    Ok(trimmed.entries)
}

/// The style to ask for again when the answer in `style` did not parse, for the
/// `failures`-th time in a row; `None`: give up with the parse error. A checkpoint (JSON,
/// which models get wrong) is asked again once, then falls back to handoff; the other
/// styles only fail when empty, and are not asked again.
pub fn style_after_failure(style: Style, failures: usize) -> Option<Style> {
    match style {
        Style::Checkpoint if failures >= 2 => Some(Style::Handoff),
        Style::Checkpoint => Some(Style::Checkpoint),
        Style::Handoff | Style::StateSnapshot => None,
    }
}

/// How many of the oldest rounds the next summary request drops when the last one, with
/// `dropped` dropped, did not fit the summarizer: 1, 2, 4, … so any size fits in a few.
pub fn drop_more(dropped: usize) -> usize {
    (dropped * 2).max(1)
}

/// A warning the client gets after a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warning {
    CompactedTwice,
    AutoCompactionOff,
}

impl Warning {
    pub fn message(self) -> &'static str {
        match self {
            Warning::CompactedTwice => "This session has been compacted twice: long sessions with several compactions lose accuracy. Consider starting a new session (/new) once this task is done.",
            Warning::AutoCompactionOff => "Automatic compaction is off for this session: the last two compactions each saved less than 10%. /compact still works; a new session (/new) starts clean.",
        }
    }
}

/// The warnings after a compaction that leaves the session at `compactions` compactions,
/// the last `low_yield_compactions` of them in a row saving little: once at the second
/// compaction, and whenever [`triggers`] has turned automatic compaction off.
pub fn warnings(compactions: u32, low_yield_compactions: u32) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if compactions == 2 {
        warnings.push(Warning::CompactedTwice);
    }
    if low_yield_compactions >= 2 {
        warnings.push(Warning::AutoCompactionOff);
    }
    warnings
}

/// A summary the model wrote, parsed for its style, and what writing it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub text: String,
    pub style: Style,
    pub usage: Usage,
}

/// A summary computed ahead, for the history as it was at `generation`, covering its
/// entries before `cut` (a round start).
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedSummary {
    pub generation: u64,
    pub cut: usize,
    pub summary: Summary,
}

/// Everything a compaction decides from.
#[derive(Clone, Copy)]
pub struct PlanInput<'a> {
    /// The history now.
    pub entries: &'a [Entry],
    /// The session's generation now: a prepared summary must be of the same.
    pub generation: u64,
    /// The rendered ledger, carried by every summary item (empty: nothing to carry).
    pub ledger: &'a str,
    /// The user asked for a focus: trimming alone will not do, nor a prepared summary.
    pub focused: bool,
    pub trigger: Trigger,
    pub config: &'a CompactionConfig,
    pub window: Window,
    /// Tokens of a request without history (the static context).
    pub fixed: usize,
    pub prompts: &'a Prompts,
    pub tokenizer: TokenizerKind,
}

/// The compacted history and the metrics of the compaction (all but its duration).
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub entries: Vec<Entry>,
    pub metrics: CompactionMetrics,
}

impl Planned {
    /// The text of the summary item (the summary or the fallback's note, and the ledger);
    /// empty when trimming alone sufficed.
    pub fn summary(&self) -> String {
        self.entries
            .iter()
            .find_map(|e| match &e.item {
                Item::CompactionSummary { text } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }
}

pub enum Decision {
    /// Trimming old tool outputs reached the target.
    Done(Planned),
    NeedSummary(NeedSummary),
}

/// A compaction waiting for its summary.
#[derive(Debug, Clone, PartialEq)]
pub struct NeedSummary {
    /// The history with old tool outputs trimmed: what a fresh summary covers.
    entries: Vec<Entry>,
    /// The trim's figures so far.
    metrics: CompactionMetrics,
}

impl NeedSummary {
    /// What a fresh summary must cover.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Whether `prepared` still stands for this history: no focus was asked for, the same
    /// history (generation), cut at a round start, and with what came since kept verbatim
    /// the result lands below the threshold.
    pub fn prepared_fits(&self, input: &PlanInput, prepared: &PreparedSummary) -> bool {
        let entries = &self.entries;
        !input.focused
            && prepared.generation == input.generation
            && prepared.cut <= entries.len()
            && (prepared.cut == entries.len() || round_starts(entries).contains(&prepared.cut))
            && tokens_of(&entries[prepared.cut..])
                + input.tokenizer.count(&prepared.summary.text)
                + input.tokenizer.count(input.ledger)
                < below_threshold(input.config, input.window, input.fixed)
    }
}

/// Where the summary of a compaction comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SummarySource {
    /// Prepared ahead, and [fitting](NeedSummary::prepared_fits).
    Prepared(PreparedSummary),
    /// Asked for now, of [`NeedSummary::entries`]: the summary, or why there is none.
    Fresh(Result<Summary, String>),
}

/// Step one: trim old tool outputs; enough alone when it reaches the target and no focus
/// was asked for.
pub fn decide(input: &PlanInput) -> Decision {
    let tokens_before = tokens_of(input.entries);
    let target = target_tokens(input.config, input.window, input.fixed);
    let trimmed = trim(
        input.entries,
        input.config.keep_tool_rounds,
        input.prompts,
        input.tokenizer,
    );
    let mut metrics = CompactionMetrics {
        outputs_trimmed: trimmed.outputs_trimmed,
        tool_rounds_kept: trimmed.tool_rounds_kept,
        ..Default::default()
    };
    if !input.focused
        && trimmed.outputs_trimmed > 0
        && tokens_of(&trimmed.entries) <= target
        && verify(tokens_before, &trimmed.entries, "").is_ok()
    {
        metrics.strategy = Strategy::Trim.name().into();
        return Decision::Done(planned(input, trimmed.entries, metrics));
    }
    Decision::NeedSummary(NeedSummary {
        entries: trimmed.entries,
        metrics,
    })
}

/// Step two: the compacted history with `summary`. The summary is rebuilt around (the
/// recent user messages within their budget, the summary with the ledger, a verbatim
/// tail) and verified: a prepared one keeps everything after its cut; a fresh one keeps
/// the last rounds when that verifies, else nothing. Without a summary that verifies, a
/// rule-based drop makes room, its note in place of the summary; when even the last round
/// is too large, only the user's messages and the note remain. Err: nothing made the
/// history smaller.
pub fn finish(
    input: &PlanInput,
    need: NeedSummary,
    summary: SummarySource,
) -> Result<Planned, String> {
    let NeedSummary {
        entries,
        mut metrics,
    } = need;
    let target = target_tokens(input.config, input.window, input.fixed);
    let user_budget = input.config.user_message_budget.min(target / 4);
    // Where the verbatim tail may start: after the prepared point (what came since is not
    // in that summary), or, for a fresh summary of everything, the last rounds when they
    // fit, else nothing.
    let (summary, tails) = match summary {
        SummarySource::Prepared(prepared) => {
            metrics.trigger = "prepared".into();
            let tail = entries[prepared.cut..].to_vec();
            (
                Ok(used(&mut metrics, prepared.summary)),
                vec![(prepared.cut, tail)],
            )
        }
        SummarySource::Fresh(summary) => {
            let tail = kept_tail_start(&entries, input.config.keep_recent_rounds, target / 2);
            (
                summary.map(|summary| used(&mut metrics, summary)),
                vec![
                    (tail, entries[tail..].to_vec()),
                    last_round_shrunk(input, &entries, target / 2),
                    (entries.len(), Vec::new()),
                ],
            )
        }
    };
    // A summary that does not verify is discarded.
    let reason = match summary {
        Ok(summary) => match rebuilt_around(input, &entries, &summary, &tails, user_budget) {
            Ok(rebuilt) => {
                metrics.strategy = Strategy::Summary.name().into();
                return Ok(planned(input, rebuilt, metrics));
            }
            Err(why) => why,
        },
        Err(why) => why,
    };
    fallback(input, &entries, reason, user_budget, metrics)
}

/// The last round (the running turn's latest calls and outputs) with its outputs cut to fit
/// `budget`, and where it starts: a tail that keeps what the next step needs when the
/// rounds as they are do not fit.
fn last_round_shrunk(input: &PlanInput, entries: &[Entry], budget: usize) -> (usize, Vec<Entry>) {
    let tail = last_round_within(entries, budget, input.prompts, input.tokenizer);
    let start = if tail.is_empty() {
        entries.len()
    } else {
        round_starts(entries).last().copied().unwrap_or(0)
    };
    (start, tail)
}

/// The history rebuilt around `summary` with the first tail of `tails` (where it starts in
/// `entries`, and its entries) that verifies; Err: why the last one did not.
fn rebuilt_around(
    input: &PlanInput,
    entries: &[Entry],
    summary: &str,
    tails: &[(usize, Vec<Entry>)],
    user_budget: usize,
) -> Result<Vec<Entry>, String> {
    let (prompts, tokenizer, ledger) = (input.prompts, input.tokenizer, input.ledger);
    let tokens_before = tokens_of(input.entries);
    let mut why = String::new();
    for (cut, tail) in tails {
        let users = select_user_messages(&entries[..*cut], user_budget, tokenizer);
        let rebuilt = rebuild(
            &users,
            summary_text(summary, ledger),
            tail,
            prompts,
            tokenizer,
        );
        match verify(tokens_before, &rebuilt, ledger) {
            Ok(()) => return Ok(rebuilt),
            Err(reason) => why = format!("the summarized history was discarded: {reason}"),
        }
    }
    Err(why)
}

/// Without a summary: a rule-based drop, its note (saying `reason`) in place of the
/// summary, still carrying the ledger; when even that does not verify, only the user's
/// messages and the note.
fn fallback(
    input: &PlanInput,
    entries: &[Entry],
    reason: String,
    user_budget: usize,
    mut metrics: CompactionMetrics,
) -> Result<Planned, String> {
    let (prompts, tokenizer, ledger) = (input.prompts, input.tokenizer, input.ledger);
    let tokens_before = tokens_of(input.entries);
    let target = target_tokens(input.config, input.window, input.fixed);
    // Never aim above half of what there is: a manual compaction of a history already under
    // the target must still make room.
    let note_reserve = tokenizer.count(ledger) + 300;
    let dropped = rule_based(entries, target.min(tokens_before / 2), note_reserve);
    let note = fill(
        &prompts.compact_fallback,
        &[
            ("reason", &reason),
            ("dropped", &dropped.dropped_items.to_string()),
            ("strategy", &dropped.strategy.name().replace('_', " ")),
        ],
    );
    let text = summary_text(&note, ledger);
    metrics.fallback_reason = Some(reason);
    let item = Item::CompactionSummary { text: text.clone() };
    let tokens = item_tokens(&item, prompts, tokenizer);
    let mut rebuilt = dropped.head;
    rebuilt.push(Entry { item, tokens });
    rebuilt.extend(dropped.tail);
    if verify(tokens_before, &rebuilt, ledger).is_ok() {
        metrics.strategy = dropped.strategy.name().into();
        return Ok(planned(input, rebuilt, metrics));
    }
    // Even the last round is too large (one enormous output or message): the user's
    // messages cut to their budget, the ledger, and the last round with its outputs cut
    // head and tail (what the running turn needs next); failing that, without it. The
    // session stays usable.
    let shrunk = last_round_shrunk(input, entries, target / 2);
    let mut why = String::new();
    for (cut, tail) in [shrunk, (entries.len(), Vec::new())] {
        let users = select_user_messages(&entries[..cut], user_budget, tokenizer);
        let rebuilt = rebuild(&users, text.clone(), &tail, prompts, tokenizer);
        match verify(tokens_before, &rebuilt, ledger) {
            Ok(()) => {
                metrics.strategy = Strategy::OldestDrop.name().into();
                return Ok(planned(input, rebuilt, metrics));
            }
            Err(reason) => why = reason,
        }
    }
    Err(format!(
        "compaction could not make the history smaller: {why}"
    ))
}

/// `summary`'s text, its style and cost noted in `metrics`.
fn used(metrics: &mut CompactionMetrics, summary: Summary) -> String {
    metrics.style = Some(summary.style.name().into());
    metrics.summarizer_input_tokens = summary.usage.input_tokens;
    metrics.summarizer_output_tokens = summary.usage.output_tokens;
    summary.text
}

/// The result, its figures completed.
fn planned(input: &PlanInput, entries: Vec<Entry>, mut metrics: CompactionMetrics) -> Planned {
    if metrics.trigger.is_empty() {
        metrics.trigger = input.trigger.name().into();
    }
    metrics.tokens_before = tokens_of(input.entries);
    metrics.tokens_after = tokens_of(&entries);
    metrics.items_before = input.entries.len();
    metrics.items_after = entries.len();
    Planned { entries, metrics }
}

#[cfg(test)]
mod tests;
