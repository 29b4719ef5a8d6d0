//! Compaction through the real server and the fake provider: the threshold trigger with a
//! deliberately poor summary (the ledger carries what matters anyway), manual compaction
//! with a focus and $/progress, the fallback when the summary call fails, compact-and-retry
//! after a context-length answer, the checkpoint style's validation, a switch to a smaller
//! model, a summary prepared ahead, requests answered while a summary is in flight, and a
//! session reloaded after compaction.

mod common;

use agentls_dev::fake_provider::{Reply, Step};
use common::agent::*;
use common::{start, Options, Server};
use serde_json::{json, Value};

/// A workspace with two large files (about 3,200 tokens each when read).
fn big_workspace() -> Workspace {
    let ws = workspace();
    for (name, word) in [("big.rs", "alpha"), ("big2.rs", "omega")] {
        let text: String = (0..150)
            .map(|i| {
                format!("let value_{i} = compute(&inputs[{i}], \"{word} parser stage {i}\");\n")
            })
            .collect();
        std::fs::write(ws.root.join("src").join(name), text).unwrap();
    }
    ws
}

fn options(fake: &FakeProvider, ws: &Workspace, extra: Value) -> Value {
    provider_options(
        fake,
        ws,
        merge_all(
            json!({
                "approval": "full-auto",
                "provider": {"contextWindow": 12000, "maxRetries": 0},
                "compaction": {"prepareAt": 0.99},
            }),
            extra,
        ),
    )
}

fn merge_all(mut base: Value, extra: Value) -> Value {
    merge(&mut base, extra);
    base
}

fn read(id: &str, path: &str) -> Reply {
    let arguments = json!({ "path": path }).to_string();
    FakeProvider::openai_tool_calls(&[(id, "read_file", &[arguments.as_str()])], None)
}

fn read_from(id: &str, path: &str, offset: usize) -> Reply {
    let arguments = json!({ "path": path, "offset": offset }).to_string();
    FakeProvider::openai_tool_calls(&[(id, "read_file", &[arguments.as_str()])], None)
}

fn text(answer: &str) -> Reply {
    FakeProvider::openai_text(&[answer], None)
}

/// Every compaction prompt says this: summary calls are routed by it.
const SUMMARY_CALL: &str = "CONTEXT CHECKPOINT COMPACTION";

fn summary(fake: &FakeProvider, reply: Reply) {
    fake.push_for(SUMMARY_CALL, reply);
}

/// Turn 1 reads big.rs; turn 2 runs a failing command, sets a plan and reads big2.rs —
/// which puts the next call of turn 2 over the threshold.
fn script_two_turns(fake: &FakeProvider) {
    fake.push(read("r1", "src/big.rs"));
    fake.push(text("Read it."));
    let shell = json!({"command": "echo 'error[E0308]: mismatched types' >&2; exit 3"}).to_string();
    let plan =
        json!({"entries": [{"content": "fix the type error in big2.rs", "status": "in_progress"}]})
            .to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("s1", "shell", &[shell.as_str()]),
            ("p1", "update_plan", &[plan.as_str()]),
        ],
        None,
    ));
    fake.push(read("r2", "src/big2.rs"));
}

async fn run_two_turns(server: &Server, session: &str) -> Vec<Value> {
    let turn = prompt(
        server,
        session,
        "Never edit generated files. Please read src/big.rs.",
    )
    .await;
    let (updates, _) = updates_until_end(server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let turn = prompt(server, session, "Now run the tests.").await;
    let (updates, others) = updates_until_end(server, &turn).await;
    let mut all = updates;
    all.extend(
        others
            .into_iter()
            .filter(|m| m.method == "agent/status")
            .map(|m| m.params),
    );
    all
}

/// A server wired to `fake` with this file's settings (and `extra`), and a new session.
async fn compaction_server(ws: &Workspace, fake: &FakeProvider, extra: Value) -> (Server, String) {
    let server = server(ws, options(fake, ws, extra), None).await;
    let session = new_session(&server).await;
    (server, session)
}

/// Runs a prompt to its end and returns its updates.
async fn turn(server: &Server, session: &str, text: &str) -> Vec<Value> {
    run_turn(server, session, text).await.0
}

/// `agent/session/compact` for `session` (with `instructions` when given).
async fn compact(server: &Server, session: &str, instructions: Option<&str>) -> Value {
    let mut params = json!({ "sessionId": session });
    if let Some(instructions) = instructions {
        params["instructions"] = json!(instructions);
    }
    server
        .client
        .request("agent/session/compact", params)
        .await
        .unwrap()
}

fn last_user_content(request: &Value) -> String {
    request["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn all_content(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn at_the_threshold_a_poor_summary_still_leaves_the_ledger_intact() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    script_two_turns(&fake);
    summary(&fake, text("I did some stuff."));
    fake.push(text("Tests fail."));
    let (server, session) = compaction_server(&ws, &fake, json!({})).await;
    let seen = run_two_turns(&server, &session).await;

    let compaction: Vec<&Value> = seen.iter().filter(|u| u["kind"] == "compaction").collect();
    assert_eq!(compaction.len(), 2, "{seen:?}");
    assert_eq!(compaction[0]["phase"], "started");
    assert_eq!(compaction[1]["phase"], "completed");
    assert_eq!(compaction[1]["strategy"], "summary");
    assert_eq!(compaction[1]["trigger"], "threshold");
    assert!(compaction[1]["tokensAfter"].as_u64() < compaction[1]["tokensBefore"].as_u64());
    assert!(seen.iter().any(|s| s["state"] == "compacting"), "{seen:?}");
    let last_status = seen
        .iter()
        .rev()
        .find(|s| s.get("compactions").is_some())
        .unwrap();
    assert_eq!(last_status["compactions"], 1);
    assert_eq!(answer_text(&seen), "Tests fail.");

    let requests = fake.requests();
    assert_eq!(requests.len(), 6);
    // The summary request: the session's own prefix, no tools, the compaction prompt last.
    let summary_request = &requests[4].body;
    assert!(summary_request.get("tools").is_none());
    assert!(last_user_content(summary_request).contains("CONTEXT CHECKPOINT COMPACTION"));
    assert!(all_content(summary_request).contains("alpha parser stage"));
    // The call after it: the summary, the ledger with everything that matters, the user's
    // messages; the old file content is gone.
    let after = all_content(&requests[5].body);
    for needle in [
        "I did some stuff.",
        "<ledger>",
        "src/big.rs (whole)",
        "echo 'error[E0308]: mismatched types' >&2; exit 3` → exit 3",
        "error[E0308]: mismatched types",
        "[~] fix the type error in big2.rs",
        "Never edit generated files.",
        "Now run the tests.",
    ] {
        assert!(
            after.contains(needle),
            "{needle:?} missing after compaction:\n{after}"
        );
    }
    assert!(
        !after.contains("alpha parser stage"),
        "the summarized read is gone"
    );
    assert!(
        after.contains("omega parser stage"),
        "the last round is kept verbatim"
    );
    assert_invariants(&requests);
    server.stop().await;
}

/// Files a shell command changed (`rm`, a generator, `sed -i`), found by the workspace
/// snapshots around it, are in the ledger after a compaction with a poor summary, like the
/// file tools' edits; a read-only command adds nothing.
#[tokio::test]
async fn files_changed_by_shell_commands_are_kept_by_the_ledger_through_compaction() {
    let ws = big_workspace();
    // A real repository with its files committed (the shared workspace has an empty .git).
    std::fs::remove_dir_all(ws.root.join(".git")).unwrap();
    common::git(&ws.root, &["init", "-q"]);
    common::git(&ws.root, &["add", "-A"]);
    common::git(&ws.root, &["commit", "-qm", "init"]);
    let fake = FakeProvider::start().await;
    let change = json!({"command": "rm src/big2.rs && mkdir -p gen && echo 'pub fn g() {}' > gen/out.rs && sed -i s/41/42/ src/lib.rs"}).to_string();
    let look = json!({"command": "cat src/lib.rs && git status --short"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("c1", "shell", &[change.as_str()]),
            ("c2", "shell", &[look.as_str()]),
        ],
        None,
    ));
    fake.push(text("Done."));
    summary(&fake, text("I did some stuff."));
    fake.push(text("Continuing."));
    let init = options(&fake, &ws, json!({"provider": {"contextWindow": 128000}}));
    let server = server(&ws, init, None).await;
    let session = new_session(&server).await;
    let updates = turn(&server, &session, "Regenerate the code.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert!(!ws.root.join("src/big2.rs").exists());

    let outcome = compact(&server, &session, None).await;
    assert_eq!(outcome["strategy"], "summary", "{outcome}");
    turn(&server, &session, "Go on.").await;
    let after = all_content(&fake.requests().last().unwrap().body);
    let modified: Vec<&str> = after
        .split("\\n")
        .skip_while(|l| *l != "## Files modified")
        .skip(1)
        .take_while(|l| !l.starts_with("##"))
        .collect();
    assert_eq!(
        modified,
        [
            "- gen/out.rs (created, by `rm src/big2.rs && mkdir -p gen && echo 'pub fn g() {}' > gen/out.rs && sed -i s/…`)",
            "- src/big2.rs (deleted, by `rm src/big2.rs && mkdir -p gen && echo 'pub fn g() {}' > gen/out.rs && sed -i s/…`)",
            "- src/lib.rs (by `rm src/big2.rs && mkdir -p gen && echo 'pub fn g() {}' > gen/out.rs && sed -i s/…`)",
        ],
        "{after}"
    );
    assert_invariants(&fake.requests());
    server.stop().await;
}

#[tokio::test]
async fn manual_compaction_follows_the_focus_reports_progress_and_survives_a_restart() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    fake.push(read("r1", "src/big.rs"));
    fake.push(text("Read it."));
    // Notes long enough that keeping the read verbatim beside them would grow the history:
    // without them the summary and the user's dropped context weigh about the same, and
    // the random temporary path's tokens decided whether the read stayed.
    let notes = "[Notes] the parser's stages are numbered and each one calls compute. ".repeat(12);
    summary(
        &fake,
        text(&format!(
            "# Compaction Handoff\n[Done] read src/big.rs\n[Next] refactor the parser\n{notes}"
        )),
    );
    let init = options(&fake, &ws, json!({"provider": {"contextWindow": 128000}}));
    let server = start(Options {
        root: Some(&ws.root),
        init_options: init.clone(),
        progress: true,
        ..Options::default()
    })
    .await;
    let session = new_session(&server).await;
    turn(&server, &session, "Please read src/big.rs.").await;

    let outcome = compact(&server, &session, Some("focus on the parser")).await;
    assert_eq!(outcome["strategy"], "summary", "{outcome}");
    assert!(outcome["tokensAfter"].as_u64().unwrap() < outcome["tokensBefore"].as_u64().unwrap());
    let requests = fake.requests();
    let prompt_text = last_user_content(&requests[2].body);
    assert!(
        prompt_text.ends_with("focus on the parser"),
        "{prompt_text}"
    );

    // The editor saw a work-done progress begin and end with the figures (read up to its
    // end: no quiet period on the clock).
    // Only the compaction's own progress: the symbol index reports its own, with its token.
    let mut progress: Vec<Value> = Vec::new();
    let mut token: Option<Value> = None;
    while progress.last().is_none_or(|p| p["kind"] != "end") {
        let message = server
            .client
            .next_message()
            .await
            .expect("the progress ends");
        if message.method != "$/progress" {
            continue;
        }
        let value = &message.params["value"];
        if token.is_none() && value["title"] == "Compacting conversation" {
            token = Some(message.params["token"].clone());
        }
        if token.as_ref() == Some(&message.params["token"]) {
            progress.push(value.clone());
        }
    }
    assert_eq!(
        progress.first().unwrap()["title"],
        "Compacting conversation",
        "{progress:?}"
    );
    let end = progress.last().unwrap();
    assert_eq!(end["kind"], "end");
    assert!(end["message"].as_str().unwrap().contains("% → "), "{end}");
    server.stop().await;

    // After a restart the session continues from the boundary.
    fake.push(text("Continuing."));
    let server = start(Options {
        root: Some(&ws.root),
        init_options: init,
        ..Options::default()
    })
    .await;
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let items = loaded["items"].as_array().unwrap();
    let marker = items
        .iter()
        .find(|i| i["kind"] == "compaction")
        .expect("compaction marker");
    assert_eq!(marker["strategy"], "summary");
    assert!(marker["summary"]
        .as_str()
        .unwrap()
        .contains("[Next] refactor the parser"));
    let updates = turn(&server, &session, "Go on.").await;
    assert_eq!(answer_text(&updates), "Continuing.");
    let after = all_content(&fake.requests()[3].body);
    assert!(after.contains("[Next] refactor the parser"));
    assert!(!after.contains("alpha parser stage"), "{after}");
    assert_invariants(&fake.requests());
    server.stop().await;
}

#[tokio::test]
async fn a_failed_summary_call_falls_back_to_a_rule_based_drop_with_the_ledger() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    script_two_turns(&fake);
    summary(
        &fake,
        Reply::Http {
            status: 500,
            headers: vec![],
            body: json!({"error": {"message": "summarizer down"}}).to_string(),
        },
    );
    fake.push(text("Tests fail."));
    let (server, session) = compaction_server(&ws, &fake, json!({})).await;
    let seen = run_two_turns(&server, &session).await;
    let completed = seen
        .iter()
        .find(|u| u["kind"] == "compaction" && u["phase"] == "completed")
        .expect("completed");
    let strategy = completed["strategy"].as_str().unwrap();
    assert!(
        strategy == "middle_drop" || strategy == "oldest_drop",
        "{completed}"
    );
    assert_eq!(answer_text(&seen), "Tests fail.");
    let after = all_content(&fake.requests()[5].body);
    assert!(
        after.contains("summarizer down"),
        "the note says why there is no summary"
    );
    for needle in [
        "src/big.rs (whole)",
        "exit 3",
        "Never edit generated files.",
    ] {
        assert!(after.contains(needle), "{needle:?} missing:\n{after}");
    }
    assert_invariants(&fake.requests());
    server.stop().await;
}

#[tokio::test]
async fn a_context_length_answer_is_compacted_and_retried_once() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    fake.push(read("r1", "src/big.rs"));
    fake.push(text("Read it."));
    fake.push(FakeProvider::openai_context_length_exceeded());
    summary(&fake, text("[Done] read big.rs"));
    fake.push(text("Answer after the retry."));
    // A window the estimate thinks is large: only the provider knows better.
    let (server, session) =
        compaction_server(&ws, &fake, json!({"provider": {"contextWindow": 128000}})).await;
    turn(&server, &session, "Please read src/big.rs.").await;
    let updates = turn(&server, &session, "And now?").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "Answer after the retry.");
    let completed = updates
        .iter()
        .find(|u| u["kind"] == "compaction" && u["phase"] == "completed")
        .unwrap();
    assert_eq!(completed["trigger"], "overflow");
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    assert!(!all_content(&requests[4].body).contains("alpha parser stage"));
    assert_invariants(&requests);
    server.stop().await;
}

#[tokio::test]
async fn an_invalid_checkpoint_is_asked_again_then_the_style_falls_back_to_handoff() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    fake.push(read("r1", "src/big.rs"));
    fake.push(text("Read it."));
    summary(&fake, text("Sure! Here is the summary: it went well."));
    summary(&fake, text("{\"summary\": \"missing the intent\"}"));
    summary(&fake, text("# Compaction Handoff\n[Done] read big.rs"));
    let (server, session) = compaction_server(
        &ws,
        &fake,
        json!({"provider": {"contextWindow": 128000}, "compaction": {"style": "checkpoint"}}),
    )
    .await;
    turn(&server, &session, "Please read src/big.rs.").await;
    let outcome = compact(&server, &session, None).await;
    assert_eq!(outcome["strategy"], "summary");
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    assert!(last_user_content(&requests[2].body).contains("single valid JSON object"));
    assert!(last_user_content(&requests[3].body).contains("single valid JSON object"));
    assert!(last_user_content(&requests[4].body).contains("# Compaction Handoff"));

    // A valid checkpoint is used as it is (after the history grew again).
    fake.push(read("r2", "src/big2.rs"));
    fake.push(text("Read it too."));
    turn(&server, &session, "Please read src/big2.rs.").await;
    summary(&fake, text(
        &json!({"intent_user_message": "Refactor the parser.\n<VERBATIM_REQUEST_START>\nPlease read src/big.rs.\n<VERBATIM_REQUEST_END>", "summary": "Read it.\nRESUME_AT: refactor"})
            .to_string(),
    ));
    let outcome = compact(&server, &session, None).await;
    assert_eq!(outcome["strategy"], "summary", "{outcome}");
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let last = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|i| i["kind"] == "compaction")
        .unwrap()
        .clone();
    assert!(
        last["summary"]
            .as_str()
            .unwrap()
            .contains("RESUME_AT: refactor"),
        "{last}"
    );
    server.stop().await;
}

#[tokio::test]
async fn switching_to_a_smaller_model_compacts_first_with_the_old_one() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    fake.push(read("r1", "src/big.rs"));
    fake.push(text("Read it."));
    summary(&fake, text("[Done] read big.rs"));
    let (server, session) =
        compaction_server(&ws, &fake, json!({"provider": {"contextWindow": 128000}})).await;
    turn(&server, &session, "Please read src/big.rs.").await;

    let bigger = server
        .client
        .request(
            "agent/session/setModel",
            json!({"sessionId": session, "model": "big-model", "contextWindow": 200000}),
        )
        .await
        .unwrap();
    assert_eq!(bigger["compacted"], false);
    let smaller = server
        .client
        .request(
            "agent/session/setModel",
            json!({"sessionId": session, "model": "small-model", "contextWindow": 6000}),
        )
        .await
        .unwrap();
    assert_eq!(smaller["compacted"], true);
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].body["model"], "big-model",
        "the summary is written by the old model"
    );
    let list = server
        .client
        .request("agent/session/list", json!({}))
        .await
        .unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], session.as_str());
    let err = server
        .client
        .request(
            "agent/session/setModel",
            json!({"sessionId": session, "model": ""}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    server.stop().await;
}

#[tokio::test]
async fn a_summary_prepared_ahead_is_swapped_in_at_the_threshold() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    // A read is cut to stay below prepareAt; its second page (at least an eighth of the
    // window) goes past it: the summary is prepared while the turn goes on.
    fake.push(read("r1", "src/big.rs"));
    fake.push(read_from("r1b", "src/big.rs", 60));
    fake.push(text("Read it."));
    summary(&fake, text("[Done] prepared summary of the big.rs read"));
    // Two more pages take the next turn past the threshold.
    fake.push(read("r2", "src/big2.rs"));
    fake.push(read_from("r3", "src/big2.rs", 60));
    fake.push(text("Read the second."));
    // The window is sized to these requests' parts: no memory tool, so the pages land
    // where the comments above say.
    let (server, session) = compaction_server(&ws, &fake, json!({"compaction": {"prepareAt": 0.5, "threshold": 0.7}, "provider": {"contextWindow": 13000}, "memory": {"enabled": false}})).await;
    turn(&server, &session, "Please read src/big.rs.").await;
    // The background summary call happened during or right after that turn.
    while !fake
        .requests()
        .iter()
        .any(|r| r.body.to_string().contains(SUMMARY_CALL))
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let updates = turn(&server, &session, "Now read src/big2.rs.").await;
    let completed = updates
        .iter()
        .find(|u| u["kind"] == "compaction" && u["phase"] == "completed")
        .expect("compacted at the threshold");
    assert_eq!(completed["trigger"], "prepared", "{completed}");
    assert_eq!(answer_text(&updates), "Read the second.");
    let requests = fake.requests();
    let summary_calls = requests
        .iter()
        .filter(|r| r.body.to_string().contains(SUMMARY_CALL))
        .count();
    assert_eq!(
        summary_calls, 1,
        "no second summary call: the prepared one was used"
    );
    let last = &requests.last().unwrap().body;
    assert!(all_content(last).contains("[Done] prepared summary of the big.rs read"));
    assert_invariants(&requests);
    server.stop().await;
}

#[tokio::test]
async fn requests_are_answered_while_a_summary_is_in_flight() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    fake.push(read("r1", "src/big.rs"));
    fake.push(text("Read it."));
    // The summary streams only when the test says so.
    summary(
        &fake,
        Reply::Sse {
            steps: vec![
                Step::Hold,
                agentls_dev::fake_provider::openai_chunk(
                    json!({"content": "[Done] read big.rs"}),
                    None,
                ),
                agentls_dev::fake_provider::openai_chunk(json!({}), Some("stop")),
                Step::Data("[DONE]".into()),
            ],
        },
    );
    let (server, session) =
        compaction_server(&ws, &fake, json!({"provider": {"contextWindow": 128000}})).await;
    turn(&server, &session, "Please read src/big.rs.").await;

    let compact = server
        .client
        .request("agent/session/compact", json!({"sessionId": session}));
    let others = async {
        while fake.requests().len() < 3 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // The summary call is held: everything else is still answered.
        let context = server
            .client
            .request("agent/session/context", json!({}))
            .await
            .unwrap();
        let list = server
            .client
            .request("agent/session/list", json!({}))
            .await
            .unwrap();
        fake.release();
        (context, list)
    };
    let (outcome, (context, list)) = tokio::join!(compact, others);
    assert!(context["totalTokens"].as_u64().unwrap() > 0);
    assert_eq!(list["sessions"][0]["sessionId"], session.as_str());
    assert_eq!(outcome.unwrap()["strategy"], "summary");
    server.stop().await;
}

/// The quality evaluation, small: every planted needle survives successive compactions
/// with a poor and with an extractive summarizer, the ledger is what keeps the files and
/// approvals (without it they are lost), results stay under 35% of the window and never
/// grow.
#[tokio::test]
async fn the_compaction_eval_recalls_every_needle_after_successive_compactions() {
    use agentls_dev::eval_compaction::{percent, run, EvalOptions, CATEGORIES};
    let options = EvalOptions {
        sessions: 1,
        compactions: 3,
        turns: 2,
        context_window: 32_000,
    };
    let report = run(&options).await.unwrap();
    assert_eq!(report.summarizers.len(), 2);
    for (name, rounds) in &report.summarizers {
        assert_eq!(rounds.len(), 3);
        for (i, round) in rounds.iter().enumerate() {
            for category in CATEGORIES {
                assert_eq!(
                    percent(&round.recall, category),
                    100.0,
                    "{name} compaction {} {category}",
                    i + 1
                );
            }
            assert!(
                round.max_fill_after <= 0.35,
                "{name}: {}",
                round.max_fill_after
            );
            assert!(!round.grew, "{name}");
        }
        let last = rounds.last().unwrap();
        assert!(
            percent(&last.recall_without_ledger, "files") < 100.0,
            "the ledger carries the files"
        );
        assert!(
            percent(&last.recall_without_ledger, "approvals") < 100.0,
            "and the approvals"
        );
    }
}

#[tokio::test]
async fn the_state_snapshot_style_uses_its_prompt_and_an_inflating_summary_is_discarded() {
    let ws = big_workspace();
    let fake = FakeProvider::start().await;
    fake.push(read("r1", "src/big.rs"));
    fake.push(text("Read it."));
    summary(
        &fake,
        text("<state_snapshot>\n  <overall_goal>read big.rs</overall_goal>\n</state_snapshot>"),
    );
    let (server, session) = compaction_server(
        &ws,
        &fake,
        json!({"provider": {"contextWindow": 128000}, "compaction": {"style": "state_snapshot"}}),
    )
    .await;
    turn(&server, &session, "Please read src/big.rs.").await;
    let outcome = compact(&server, &session, None).await;
    assert_eq!(outcome["strategy"], "summary");
    let requests = fake.requests();
    assert!(last_user_content(&requests[2].body).contains("<state_snapshot>"));

    // A summary larger than what it replaces is discarded: the rule-based fallback runs.
    fake.push(read("r2", "src/big2.rs"));
    fake.push(text("Read it too."));
    turn(&server, &session, "Please read src/big2.rs.").await;
    summary(&fake, text(&"padding words ".repeat(20_000)));
    let outcome = compact(&server, &session, None).await;
    let strategy = outcome["strategy"].as_str().unwrap();
    assert!(strategy.ends_with("_drop"), "{outcome}");
    assert!(outcome["tokensAfter"].as_u64() < outcome["tokensBefore"].as_u64());
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let marker = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|i| i["kind"] == "compaction")
        .unwrap()
        .clone();
    let summary_text = marker["summary"].as_str().unwrap();
    assert!(
        summary_text.contains("discarded") && summary_text.contains("<ledger>"),
        "{summary_text}"
    );
    assert!(!summary_text.contains("padding words padding"));
    server.stop().await;
}
