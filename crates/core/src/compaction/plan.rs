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
    kept_tail_start, rebuild, round_starts, rule_based, select_user_messages, summary_text,
    tokens_of, trim, verify, CompactionConfig, Strategy, Style,
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
    let (prompts, tokenizer, ledger) = (input.prompts, input.tokenizer, input.ledger);
    let tokens_before = tokens_of(input.entries);
    let target = target_tokens(input.config, input.window, input.fixed);
    let user_budget = input.config.user_message_budget.min(target / 4);
    // Where the verbatim tail may start: after the prepared point (what came since is not
    // in that summary), or, for a fresh summary of everything, the last rounds when they
    // fit, else nothing.
    let (summary, tail_starts) = match summary {
        SummarySource::Prepared(prepared) => {
            metrics.trigger = "prepared".into();
            (Ok(used(&mut metrics, prepared.summary)), vec![prepared.cut])
        }
        SummarySource::Fresh(summary) => {
            let tail = kept_tail_start(&entries, input.config.keep_recent_rounds, target / 2);
            (
                summary.map(|summary| used(&mut metrics, summary)),
                vec![tail, entries.len()],
            )
        }
    };

    // Rebuild and verify; a summary that does not verify is discarded.
    let reason = match summary {
        Ok(summary) => {
            let mut why = String::new();
            for cut in tail_starts {
                let users = select_user_messages(&entries[..cut], user_budget, tokenizer);
                let rebuilt = rebuild(
                    &users,
                    summary_text(&summary, ledger),
                    &entries[cut..],
                    prompts,
                    tokenizer,
                );
                match verify(tokens_before, &rebuilt, ledger) {
                    Ok(()) => {
                        metrics.strategy = Strategy::Summary.name().into();
                        return Ok(planned(input, rebuilt, metrics));
                    }
                    Err(reason) => why = format!("the summarized history was discarded: {reason}"),
                }
            }
            why
        }
        Err(why) => why,
    };

    // Fallback: a rule-based drop, still carrying the ledger. Never aim above half of what
    // there is: a manual compaction of a history already under the target must still make
    // room.
    let note_reserve = tokenizer.count(ledger) + 300;
    let dropped = rule_based(&entries, target.min(tokens_before / 2), note_reserve);
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
    // Even the last round is too large (one enormous message): keep only the user's
    // messages, cut to their budget, and the ledger. The session stays usable.
    let users = select_user_messages(&entries, user_budget, tokenizer);
    let rebuilt = rebuild(&users, text, &[], prompts, tokenizer);
    verify(tokens_before, &rebuilt, ledger)
        .map_err(|why| format!("compaction could not make the history smaller: {why}"))?;
    metrics.strategy = Strategy::OldestDrop.name().into();
    Ok(planned(input, rebuilt, metrics))
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
mod tests {
    use std::sync::LazyLock;

    use expect_test::{expect, Expect};

    use super::super::tests::{assistant, session, user};
    use super::*;

    static PROMPTS: LazyLock<Prompts> = LazyLock::new(Prompts::builtin);
    /// One tool round kept verbatim, a target of half the usable window (so `target`
    /// tokens are a window of twice that), the threshold at 85%.
    static CONFIG: LazyLock<CompactionConfig> = LazyLock::new(|| CompactionConfig {
        keep_tool_rounds: 1,
        target_fill: 0.5,
        threshold: 0.85,
        ..Default::default()
    });
    const LEDGER: &str = "<ledger>\n## Files modified\n- src/m2.rs\n</ledger>";

    /// A compaction of `entries` at the threshold aiming at `target` tokens of history,
    /// with no static context, an exact calibration and the test ledger.
    fn input(entries: &[Entry], target: usize) -> PlanInput<'_> {
        PlanInput {
            entries,
            generation: 7,
            ledger: LEDGER,
            focused: false,
            trigger: Trigger::Threshold,
            config: &CONFIG,
            window: Window {
                context_window: 4 * target,
                usable: 2 * target,
                summarizer_usable: 2 * target,
                ratio: 1.0,
            },
            fixed: 0,
            prompts: &PROMPTS,
            tokenizer: TokenizerKind::O200kBase,
        }
    }

    fn summary(text: &str) -> Summary {
        Summary {
            text: text.into(),
            style: Style::Handoff,
            usage: Usage {
                input_tokens: 1200,
                output_tokens: 80,
            },
        }
    }

    fn need_summary(input: &PlanInput) -> NeedSummary {
        match decide(input) {
            Decision::NeedSummary(need) => need,
            Decision::Done(planned) => panic!("trimming sufficed:\n{}", render(&planned)),
        }
    }

    /// `decide`, then (when a summary is needed) `finish` with `summary`.
    fn check(input: PlanInput, summary: SummarySource, expect: Expect) {
        let rendered = match decide(&input) {
            Decision::Done(planned) => format!("done by decide\n{}", render(&planned)),
            Decision::NeedSummary(need) => match finish(&input, need, summary) {
                Ok(planned) => render(&planned),
                Err(why) => format!("error: {why}"),
            },
        };
        expect.assert_eq(&rendered);
    }

    /// The metrics on one line, then one line per entry: kind, tokens, text (cut, unless
    /// it is the summary item's).
    fn render(planned: &Planned) -> String {
        let m = &planned.metrics;
        let mut out = format!(
            "{} ({}): {} → {} tokens, {} → {} items; {} outputs trimmed, {} tool rounds kept",
            m.strategy,
            m.trigger,
            m.tokens_before,
            m.tokens_after,
            m.items_before,
            m.items_after,
            m.outputs_trimmed,
            m.tool_rounds_kept
        );
        if let Some(style) = &m.style {
            out += &format!(
                "; {style} summary of {} + {} tokens",
                m.summarizer_input_tokens, m.summarizer_output_tokens
            );
        }
        if let Some(reason) = &m.fallback_reason {
            out += &format!("\nfallback: {reason}");
        }
        for entry in &planned.entries {
            let (kind, text) = match &entry.item {
                Item::User { text, .. } => ("user", short(text)),
                Item::Assistant { text } => ("assistant", short(text)),
                Item::ToolCall {
                    call_id, arguments, ..
                } => ("call", format!("{call_id} {arguments}")),
                Item::ToolOutput {
                    call_id, content, ..
                } => ("output", format!("{call_id} {}", short(content))),
                Item::CompactionSummary { text } => ("summary", text.replace('\n', "\n      │ ")),
                Item::Instructions { text, .. } => ("instructions", short(text)),
                Item::Internal { .. } => ("internal", String::new()),
            };
            out += &format!("\n{kind:<9} {:>4}  {text}", entry.tokens);
        }
        out.lines()
            .map(|line| line.trim_end().to_string() + "\n")
            .collect()
    }

    fn short(text: &str) -> String {
        let line = text.replace('\n', "⏎");
        if line.chars().count() > 60 {
            format!("{}…", line.chars().take(60).collect::<String>())
        } else {
            line
        }
    }

    #[test]
    fn trimming_alone_suffices_when_it_reaches_the_target() {
        let entries = session(3);
        let trimmed = tokens_of(&trim(&entries, 1, &PROMPTS, TokenizerKind::O200kBase).entries);
        check(
            input(&entries, trimmed),
            SummarySource::Fresh(Err("not asked".into())),
            expect![[r#"
                done by decide
                trim (threshold): 2637 → 1329 tokens, 21 → 21 items; 4 outputs trimmed, 1 tool rounds kept
                user        15  request 0: fix module 0
                assistant    9  Looking at module 0.
                call        13  a0 {"path":"src/m0.rs"}
                call        13  b0 {"path":"src/n0.rs"}
                output      83  a0 [compacted: the output of read_file {"path":"src/m0.rs"} (47…
                output      83  b0 [compacted: the output of read_file {"path":"src/n0.rs"} (35…
                assistant    9  Module 0 is fixed.
                user        15  request 1: fix module 1
                assistant    9  Looking at module 1.
                call        13  a1 {"path":"src/m1.rs"}
                call        13  b1 {"path":"src/n1.rs"}
                output      83  a1 [compacted: the output of read_file {"path":"src/m1.rs"} (47…
                output      83  b1 [compacted: the output of read_file {"path":"src/n1.rs"} (35…
                assistant    9  Module 1 is fixed.
                user        15  request 2: fix module 2
                assistant    9  Looking at module 2.
                call        13  a2 {"path":"src/m2.rs"}
                call        13  b2 {"path":"src/n2.rs"}
                output     470  a2 fn body() { work(); }⏎fn body() { work(); }⏎fn body() { work…
                output     350  b2 let x = compute();⏎let x = compute();⏎let x = compute();⏎let…
                assistant    9  Module 2 is fixed.
            "#]],
        );
        // One token short of it, or asked for a focus: a summary is needed.
        assert!(matches!(
            decide(&input(&entries, trimmed - 1)),
            Decision::NeedSummary(_)
        ));
        let focused = PlanInput {
            focused: true,
            ..input(&entries, trimmed)
        };
        assert!(matches!(decide(&focused), Decision::NeedSummary(_)));
    }

    #[test]
    fn a_prepared_summary_is_used_and_what_came_since_stays_verbatim() {
        let entries = session(3);
        let input = input(&entries, 700);
        let prepared = PreparedSummary {
            generation: 7,
            cut: 14,
            summary: summary("[Done] modules 0 and 1 are fixed."),
        };
        assert!(need_summary(&input).prepared_fits(&input, &prepared));
        check(
            input,
            SummarySource::Prepared(prepared),
            expect![[r#"
                summary (prepared): 2637 → 976 tokens, 21 → 10 items; 4 outputs trimmed, 1 tool rounds kept; handoff summary of 1200 + 80 tokens
                user        11  request 0: fix module 0
                user        11  request 1: fix module 1
                summary     75  [Done] modules 0 and 1 are fixed.
                      │
                      │ <ledger>
                      │ ## Files modified
                      │ - src/m2.rs
                      │ </ledger>
                user        15  request 2: fix module 2
                assistant    9  Looking at module 2.
                call        13  a2 {"path":"src/m2.rs"}
                call        13  b2 {"path":"src/n2.rs"}
                output     470  a2 fn body() { work(); }⏎fn body() { work(); }⏎fn body() { work…
                output     350  b2 let x = compute();⏎let x = compute();⏎let x = compute();⏎let…
                assistant    9  Module 2 is fixed.
            "#]],
        );
    }

    #[test]
    fn a_stale_or_unfitting_prepared_summary_is_refused() {
        let entries = session(3);
        let input = input(&entries, 700);
        let need = need_summary(&input);
        let prepared = |generation, cut, text: &str| PreparedSummary {
            generation,
            cut,
            summary: summary(text),
        };
        let ok = "[Done] modules 0 and 1 are fixed.";
        let long = "[Done] module 0. ".repeat(400);
        let focused = PlanInput {
            focused: true,
            ..input
        };
        let cases = [
            ("cut at a round start", input, prepared(7, 14, ok)),
            ("cut at the end", input, prepared(7, 21, ok)),
            ("an older history", input, prepared(6, 14, ok)),
            ("cut inside a round", input, prepared(7, 16, ok)),
            ("cut past the end", input, prepared(7, 22, ok)),
            ("a focus asked for", focused, prepared(7, 14, ok)),
            (
                "too long to land below the threshold",
                input,
                prepared(7, 14, &long),
            ),
        ];
        let verdicts: String = cases
            .iter()
            .map(|(case, input, prepared)| {
                let verdict = if need.prepared_fits(input, prepared) {
                    "used"
                } else {
                    "refused: a fresh summary is needed"
                };
                format!("{case}: {verdict}\n")
            })
            .collect();
        expect![[r#"
            cut at a round start: used
            cut at the end: used
            an older history: refused: a fresh summary is needed
            cut inside a round: refused: a fresh summary is needed
            cut past the end: refused: a fresh summary is needed
            a focus asked for: refused: a fresh summary is needed
            too long to land below the threshold: refused: a fresh summary is needed
        "#]]
        .assert_eq(&verdicts);
    }

    #[test]
    fn a_fresh_summary_keeps_the_last_rounds_that_fit() {
        let entries = session(3);
        check(
            input(&entries, 700),
            SummarySource::Fresh(Ok(summary("[Done] modules 0-2 are fixed."))),
            expect![[r#"
                summary (threshold): 2637 → 116 tokens, 21 → 5 items; 4 outputs trimmed, 1 tool rounds kept; handoff summary of 1200 + 80 tokens
                user        11  request 0: fix module 0
                user        11  request 1: fix module 1
                user        11  request 2: fix module 2
                summary     74  [Done] modules 0-2 are fixed.
                      │
                      │ <ledger>
                      │ ## Files modified
                      │ - src/m2.rs
                      │ </ledger>
                assistant    9  Module 2 is fixed.
            "#]],
        );
    }

    #[test]
    fn a_failed_summary_falls_back_to_a_rule_based_drop_with_its_note() {
        let entries = session(3);
        check(
            input(&entries, 700),
            SummarySource::Fresh(Err("the summary call failed: HTTP 500".into())),
            expect![[r#"
                middle_drop (threshold): 2637 → 132 tokens, 21 → 3 items; 4 outputs trimmed, 1 tool rounds kept
                fallback: the summary call failed: HTTP 500
                user        15  request 0: fix module 0
                summary    108  No model summary is available for this part of the conversation (the summary call failed: HTTP 500). 19 older items were removed (middle drop); what matters from them is in the ledger below, which is exact.
                      │
                      │ <ledger>
                      │ ## Files modified
                      │ - src/m2.rs
                      │ </ledger>
                assistant    9  Module 2 is fixed.
            "#]],
        );
    }

    #[test]
    fn verify_discards_a_summary_that_would_grow_the_history() {
        let entries = session(3);
        let inflated = "[Done] module 0 is fixed. ".repeat(300);
        check(
            input(&entries, 700),
            SummarySource::Fresh(Ok(summary(&inflated))),
            expect![[r#"
                middle_drop (threshold): 2637 → 145 tokens, 21 → 3 items; 4 outputs trimmed, 1 tool rounds kept; handoff summary of 1200 + 80 tokens
                fallback: the summarized history was discarded: the result is not smaller (2796 tokens after, 2637 before)
                user        15  request 0: fix module 0
                summary    121  No model summary is available for this part of the conversation (the summarized history was discarded: the result is not smaller (2796 tokens after, 2637 before)). 19 older items were removed (middle drop); what matters from them is in the ledger below, which is exact.
                      │
                      │ <ledger>
                      │ ## Files modified
                      │ - src/m2.rs
                      │ </ledger>
                assistant    9  Module 2 is fixed.
            "#]],
        );
    }

    #[test]
    fn when_even_the_last_round_is_too_large_only_the_users_messages_remain() {
        let entries = vec![user("fix the parser"), assistant(&"token ".repeat(3000))];
        check(
            input(&entries, 700),
            SummarySource::Fresh(Err("the summary call failed: HTTP 500".into())),
            expect![[r#"
                oldest_drop (threshold): 3014 → 115 tokens, 2 → 2 items; 0 outputs trimmed, 0 tool rounds kept
                fallback: the summary call failed: HTTP 500
                user         6  fix the parser
                summary    109  No model summary is available for this part of the conversation (the summary call failed: HTTP 500). 1 older items were removed (oldest drop); what matters from them is in the ledger below, which is exact.
                      │
                      │ <ledger>
                      │ ## Files modified
                      │ - src/m2.rs
                      │ </ledger>
            "#]],
        );
    }

    #[test]
    fn a_history_nothing_makes_smaller_is_an_error() {
        let entries = vec![user("hi")];
        check(
            input(&entries, 700),
            SummarySource::Fresh(Err("the summary call failed: HTTP 500".into())),
            expect!["error: compaction could not make the history smaller: the result is not smaller (113 tokens after, 8 before)"],
        );
    }

    #[test]
    fn the_fill_triggers_compaction_then_preparation_unless_auto_is_off() {
        let config = CompactionConfig::default();
        let off = CompactionConfig {
            auto: false,
            ..Default::default()
        };
        let cases = [
            ("60%", &config, 0, 600),
            ("70%", &config, 0, 700),
            ("84.9%", &config, 0, 849),
            ("85%", &config, 0, 850),
            ("85%, two low-yield compactions", &config, 2, 850),
            ("85%, auto off", &off, 0, 850),
        ];
        let table: String = cases
            .iter()
            .map(|(case, config, low_yield, used)| {
                let verdict = match triggers(config, *low_yield, *used, 1000) {
                    Triggers {
                        compact: true,
                        prepare: false,
                    } => "compact now",
                    Triggers {
                        compact: false,
                        prepare: true,
                    } => "prepare a summary",
                    Triggers {
                        compact: false,
                        prepare: false,
                    } => "nothing",
                    both => panic!("{both:?}"),
                };
                format!("{case}: {verdict}\n")
            })
            .collect();
        expect![[r#"
            60%: nothing
            70%: prepare a summary
            84.9%: prepare a summary
            85%: compact now
            85%, two low-yield compactions: nothing
            85%, auto off: nothing
        "#]]
        .assert_eq(&table);
        assert!(compact_before_switch(&config, 850, 1000));
        assert!(!compact_before_switch(&config, 849, 1000));
    }

    #[test]
    fn the_target_is_the_target_fill_less_the_static_context_in_estimated_tokens() {
        let config = CompactionConfig::default();
        let window = Window::new(128_000, None, 1.25);
        assert_eq!(window.usable, 128_000 - 4096);
        assert_eq!(window.summarizer_usable, window.usable);
        // 35% of 123 904 is 43 366 provider tokens, 34 692 estimated, less 2 000 fixed.
        assert_eq!(target_tokens(&config, window, 2_000), 32_692);
        assert_eq!(
            target_tokens(&config, window, 100_000),
            256,
            "never below 256"
        );
        assert_eq!(below_threshold(&config, window, 2_000), 82_254);
    }

    #[test]
    fn a_checkpoint_is_asked_twice_then_handoff_others_once() {
        assert_eq!(
            style_after_failure(Style::Checkpoint, 1),
            Some(Style::Checkpoint)
        );
        assert_eq!(
            style_after_failure(Style::Checkpoint, 2),
            Some(Style::Handoff)
        );
        assert_eq!(style_after_failure(Style::Handoff, 1), None);
        assert_eq!(style_after_failure(Style::StateSnapshot, 1), None);
    }

    #[test]
    fn the_summary_request_drops_twice_as_many_rounds_each_time() {
        let drops: Vec<usize> = std::iter::successors(Some(0), |&d| Some(drop_more(d)))
            .take(6)
            .collect();
        assert_eq!(drops, [0, 1, 2, 4, 8, 16]);
    }

    #[test]
    fn warnings_come_at_the_second_compaction_and_when_auto_compaction_stops() {
        assert_eq!(warnings(1, 0), []);
        assert_eq!(warnings(2, 1), [Warning::CompactedTwice]);
        assert_eq!(warnings(3, 1), []);
        assert_eq!(
            warnings(2, 2),
            [Warning::CompactedTwice, Warning::AutoCompactionOff]
        );
        assert_eq!(warnings(5, 3), [Warning::AutoCompactionOff]);
    }

    #[test]
    fn a_preparation_covers_the_trimmed_history() {
        let entries = session(2);
        let covered = to_prepare(&entries, &CONFIG, &PROMPTS, TokenizerKind::O200kBase).unwrap();
        assert_eq!(covered.len(), entries.len());
        assert!(tokens_of(&covered) < tokens_of(&entries));
        assert!(to_prepare(&[], &CONFIG, &PROMPTS, TokenizerKind::O200kBase).is_err());
    }
}
