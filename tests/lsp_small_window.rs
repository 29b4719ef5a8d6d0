//! The agent loop on a small window (a local model's 8K), through the real server and the
//! fake provider: a read larger than what the window has left is cut to fit, not compacted
//! away with the question; a model that repeats the same call is told, then stopped; the
//! turn always ends with an answer or a clear message, never a loop.

mod common;

use agentls_dev::fake_provider::{FakeProvider, Reply};
use common::agent::*;
use serde_json::{json, Value};

/// A 700-line file: about 14,000 tokens whole, more than an 8,192-token window.
fn big_file(ws: &Workspace) {
    let text: String = (1..=700)
        .map(|i| format!("let value_{i} = compute(&inputs[{i}], \"stage {i} of the parser\");\n"))
        .collect();
    std::fs::write(ws.root.join("src/big.rs"), text).unwrap();
}

fn read(id: &str, arguments: Value) -> Reply {
    let arguments = arguments.to_string();
    FakeProvider::openai_tool_calls(&[(id, "read_file", &[arguments.as_str()])], None)
}

fn small_window(fake: &FakeProvider, ws: &Workspace) -> Value {
    provider_options(
        fake,
        ws,
        json!({"approval": "full-auto", "provider": {"contextWindow": 8192, "maxOutputTokens": 1024, "maxRetries": 0}}),
    )
}

fn compactions(updates: &[Value]) -> usize {
    updates
        .iter()
        .filter(|u| u["kind"] == "compaction" && u["phase"] == "started")
        .count()
}

/// The case: with an 8K window, one read of a 700-line file used to fill more than
/// the window, compact the question and the read away, and end with no answer at all.
#[tokio::test]
async fn a_read_larger_than_the_window_is_cut_to_fit_and_the_turn_answers() {
    let ws = workspace();
    big_file(&ws);
    let fake = FakeProvider::start().await;
    fake.push(read("r1", json!({"path": "src/big.rs"})));
    fake.push(FakeProvider::openai_text(
        &["It computes 700 parser stages."],
        None,
    ));
    let server = server(&ws, small_window(&fake, &ws), None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(
        &server,
        &session,
        "What does src/big.rs compute? QUESTIONMARK",
    )
    .await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:#?}");
    assert_eq!(answer_text(&updates), "It computes 700 parser stages.");
    assert_eq!(
        compactions(&updates),
        0,
        "one read never forces a compaction"
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "no summary call: {}", requests.len());
    let after_read = requests[1].body.to_string();
    assert!(
        after_read.contains("QUESTIONMARK"),
        "the question is still there"
    );
    assert!(
        after_read.contains("let value_1 ="),
        "the read's first lines are there"
    );
    assert!(
        !after_read.contains("let value_700 ="),
        "but not the whole file"
    );
    assert!(
        after_read.contains("read more with offset="),
        "the model is told where to read on: {after_read:.2000}"
    );
    for request in &requests {
        let bytes = request.body.to_string().len();
        assert!(
            bytes < 8192 * 4,
            "a request of {bytes} bytes for an 8,192-token window"
        );
    }
    server.stop().await;
}

/// A model that asks for the same read again and again: told after the third identical
/// call, and the turn stopped with a clear message after the fifth, not at `maxSteps`.
#[tokio::test]
async fn a_model_repeating_the_same_call_is_told_then_stopped() {
    let ws = workspace();
    let fake = FakeProvider::start().await;
    for i in 0..12 {
        fake.push(read(&format!("r{i}"), json!({"path": "src/lib.rs"})));
    }
    let server = server(&ws, small_window(&fake, &ws), None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "What does answer return?").await;
    assert_eq!(stop_reason(&updates), "error", "{updates:#?}");
    let error = updates
        .iter()
        .find(|u| u["kind"] == "error")
        .expect("an error update");
    assert_eq!(error["code"], "repeatedToolCall", "{error:#}");
    assert!(
        error["message"].as_str().unwrap().contains("read_file"),
        "{error:#}"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 5, "five calls, then the turn stops");
    let told = requests[3].body.to_string();
    assert!(
        told.contains("same arguments") && !requests[2].body.to_string().contains("same arguments"),
        "the reminder comes after the third identical call"
    );
    server.stop().await;
}

/// An AGENTS.md that fills most of the window on its own: no compaction can make room (the
/// instructions are never compacted). The first compaction of the turn shows it; the turn
/// does not compact at every step after it, and answers.
#[tokio::test]
async fn a_compaction_that_cannot_make_room_is_not_repeated_in_the_turn() {
    let (ws, fake) = crowded_workspace().await;
    for i in 0..6 {
        fake.push(read(
            &format!("r{i}"),
            json!({"path": "src/lib.rs", "offset": i % 3 + 1}),
        ));
    }
    fake.push(FakeProvider::openai_text(&["It returns 41."], None));
    let server = server(&ws, small_window(&fake, &ws), None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "What does answer return?").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:#?}");
    assert_eq!(answer_text(&updates), "It returns 41.");
    assert_eq!(compactions(&updates), 1, "{updates:#?}");
    assert!(
        updates.iter().any(|u| u["kind"] == "warning"
            && u["message"]
                .as_str()
                .unwrap_or_default()
                .contains("did not make room")),
        "{updates:#?}"
    );
    server.stop().await;
}

/// AGENTS.md's size in copies of its rule: with the system prompt and the tools, the
/// request starts at about 82% of the usable 8K window.
const WORDS: usize = 150;

/// A workspace whose AGENTS.md fills most of an 8K window, and a fake provider that answers
/// summary calls.
async fn crowded_workspace() -> (Workspace, FakeProvider) {
    let ws = workspace();
    let rule = "Always keep the public API stable, document every change in CHANGELOG.md, and run the full test suite before you answer. ";
    std::fs::write(ws.root.join("AGENTS.md"), rule.repeat(WORDS)).unwrap();
    let fake = FakeProvider::start().await;
    fake.push_for(
        "CONTEXT CHECKPOINT COMPACTION",
        FakeProvider::openai_text(&["[Asked] what answer returns."], None),
    );
    (ws, fake)
}

/// A slow provider (a local model reading a few hundred tokens a second): an automatic
/// compaction does not ask it for a summary that would take longer than
/// `compaction.maxSummaryMs`; the extractive summary is used, and the user is told why.
#[tokio::test]
async fn a_slow_provider_is_not_asked_for_a_summary_mid_turn() {
    let (ws, fake) = crowded_workspace().await;
    // The first call reads its 6,000-token prompt in at least 600 ms: at most 10,000
    // tokens/s, so a summary of about 6,000 tokens takes at least 0.6 s, over 100 ms.
    let Reply::Sse { mut steps } = FakeProvider::openai_tool_calls(
        &[(
            "r0",
            "read_file",
            &[json!({"path": "src/lib.rs"}).to_string().as_str()],
        )],
        Some((6000, 10)),
    ) else {
        unreachable!()
    };
    steps.insert(
        0,
        agentls_dev::fake_provider::Step::Delay(std::time::Duration::from_millis(600)),
    );
    fake.push(Reply::Sse { steps });
    for i in 1..6 {
        fake.push(read(
            &format!("r{i}"),
            json!({"path": "src/lib.rs", "offset": i % 3 + 1}),
        ));
    }
    fake.push(FakeProvider::openai_text(&["It returns 41."], None));
    let mut options = small_window(&fake, &ws);
    merge(&mut options, json!({"compaction": {"maxSummaryMs": 100}}));
    let server = server(&ws, options, None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "What does answer return?").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:#?}");
    assert_eq!(answer_text(&updates), "It returns 41.");
    let completed = updates
        .iter()
        .find(|u| u["kind"] == "compaction" && u["phase"] == "completed")
        .expect("a compaction");
    let reason = completed["fallbackReason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("tokens/s") && reason.contains("maxSummaryMs"),
        "{completed:#}"
    );
    let summary_calls = fake
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("CONTEXT CHECKPOINT COMPACTION"))
        .count();
    assert_eq!(
        summary_calls, 0,
        "no summary was asked of the slow provider"
    );
    server.stop().await;
}
