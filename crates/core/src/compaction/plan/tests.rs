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
            Item::Images { images, .. } => ("images", format!("{}", images.len())),
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

/// The running turn's question and its one read, larger than the window: the read stays,
/// cut head and tail, with or without a summary (the step after it needs it).
fn question_and_huge_read() -> Vec<Entry> {
    use super::super::tests::{call, output};
    let lines: String = (1..=700)
        .map(|i| format!("let value_{i} = stage({i});\n"))
        .collect();
    vec![
        user("what does src/big.rs compute?"),
        call("r1", "src/big.rs"),
        output("r1", &lines),
    ]
}

#[test]
fn the_running_turns_latest_read_is_kept_cut_when_a_summary_fails() {
    let entries = question_and_huge_read();
    check(
        input(&entries, 700),
        SummarySource::Fresh(Err("the summary call failed: HTTP 500".into())),
        expect![[r#"
            oldest_drop (threshold): 6378 → 467 tokens, 3 → 4 items; 0 outputs trimmed, 1 tool rounds kept
            fallback: the summary call failed: HTTP 500
            user        11  what does src/big.rs compute?
            summary    109  No model summary is available for this part of the conversation (the summary call failed: HTTP 500). 1 older items were removed (oldest drop); what matters from them is in the ledger below, which is exact.
                  │
                  │ <ledger>
                  │ ## Files modified
                  │ - src/m2.rs
                  │ </ledger>
            call        13  r1 {"path":"src/big.rs"}
            output     334  r1 Total output lines: 700⏎⏎let value_1 = stage(1);⏎let value_2…
        "#]],
    );
}

#[test]
fn the_running_turns_latest_read_is_kept_cut_beside_a_fresh_summary() {
    let entries = question_and_huge_read();
    check(
        input(&entries, 700),
        SummarySource::Fresh(Ok(summary("[Asked] what big.rs computes; read it."))),
        expect![[r#"
            summary (threshold): 6378 → 432 tokens, 3 → 4 items; 0 outputs trimmed, 1 tool rounds kept; handoff summary of 1200 + 80 tokens
            user        11  what does src/big.rs compute?
            summary     74  [Asked] what big.rs computes; read it.
                  │
                  │ <ledger>
                  │ ## Files modified
                  │ - src/m2.rs
                  │ </ledger>
            call        13  r1 {"path":"src/big.rs"}
            output     334  r1 Total output lines: 700⏎⏎let value_1 = stage(1);⏎let value_2…
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
