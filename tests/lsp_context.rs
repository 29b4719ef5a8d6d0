//! `agent/session/context` through the real server: what the model would be sent next, from
//! open buffers, files on disk, AGENTS.md, skills and configuration, and the errors for
//! editor states it cannot use.

mod common;

use common::{range_json, start, start_in, uri, Options};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

const LIB_RS: &str = "\
use crate::shapes::Circle;

/// Sums the areas.
pub fn total_area(circles: &[Circle]) -> f64 {
    let mut sum = 0.0;
    for c in circles {
        sum += c.area();
    }
    sum
}

pub fn unrelated() -> u32 {
    42
}
";

const SHAPES_RS: &str = "\
pub struct Circle {
    pub radius: f64,
}

impl Circle {
    pub fn area(&self) -> f64 {
        std::f64::consts::PI * self.radius * self.radius
    }
}
";

/// A git repository with AGENTS.md at the root and in src/, a skill, two Rust files and a
/// binary file.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    write(&root.join("AGENTS.md"), "Run ./test before you finish.\n");
    write(&root.join("src/AGENTS.md"), "Never use unwrap in src/.\n");
    write(
        &root.join(".agents/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Tag and publish a release\n---\nSteps.\n",
    );
    write(&root.join("src/lib.rs"), LIB_RS);
    write(&root.join("src/shapes.rs"), SHAPES_RS);
    fs::write(root.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 0, 1]).unwrap();
    (dir, root)
}

fn section(report: &Value, name: &str) -> (u64, String) {
    let s = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no section {name}: {report}"));
    (
        s["tokens"].as_u64().unwrap(),
        s["trust"].as_str().unwrap().to_string(),
    )
}

fn messages(report: &Value) -> &Vec<Value> {
    report["messages"].as_array().unwrap()
}

fn last_user_text(report: &Value) -> String {
    let last = messages(report).last().unwrap();
    assert_eq!(last["role"], "user");
    last["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_context_holds_instructions_skills_environment_and_the_editor_state() {
    let (_dir, root) = workspace();
    let server = start(Options {
        root: Some(&root),
        init_options: json!({
            "developerInstructions": "Answer in French.",
            "provider": {"contextWindow": 32000},
        }),
        ..Options::default()
    })
    .await;
    let lib = uri(&root.join("src/lib.rs"));
    server.open(&lib, "rust", 1, LIB_RS).await;
    server
        .open(&uri(&root.join("src/shapes.rs")), "rust", 1, SHAPES_RS)
        .await;

    let report = server
        .client
        .request(
            "agent/session/context",
            json!({"editor": {
                "uri": lib,
                "position": {"line": 6, "character": 12},
                "selection": range_json([5, 4, 7, 5]),
                "diagnostics": [{
                    "range": range_json([6, 15, 6, 19]),
                    "severity": 1,
                    "source": "rustc",
                    "message": "no method named `area` found"
                }]
            }}),
        )
        .await
        .expect("context");

    assert_eq!(report["contextWindow"], 32000);
    assert_eq!(report["estimated"], true);
    let sum: u64 = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(report["totalTokens"].as_u64().unwrap(), sum);
    let fill = report["fill"].as_f64().unwrap();
    assert!((fill - sum as f64 / 32000.0).abs() < 1e-9, "{fill}");
    for (name, trust) in [
        ("tools", "trusted"),
        ("system", "trusted"),
        ("developerInstructions", "trusted"),
        ("agentsMd", "trusted"),
        ("skills", "trusted"),
        ("environment", "trusted"),
        ("editor", "untrusted"),
    ] {
        let (tokens, got) = section(&report, name);
        assert!(tokens > 0, "{name} is empty");
        assert_eq!(got, trust, "{name}");
    }

    // The system message: prompt, developer instructions, the AGENTS.md chain of src/, skills.
    let system = messages(&report)[0]["content"].as_str().unwrap();
    assert_eq!(messages(&report)[0]["role"], "system");
    assert!(system.starts_with("You are agentls"));
    let at = |needle: &str| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("{needle}: {system}"))
    };
    let agents_header = format!(
        "# AGENTS.md instructions for {}",
        root.join("src").display()
    );
    assert!(at("Answer in French.") < at(&agents_header));
    assert!(at("Run ./test before you finish.") < at("Never use unwrap in src/."));
    assert!(at("<INSTRUCTIONS>") < at("</INSTRUCTIONS>"));
    assert!(
        at("</INSTRUCTIONS>")
            < at("- release: Tag and publish a release (file: .agents/skills/release/SKILL.md)")
    );

    // The turn's message: environment, then the editor context as labelled data.
    let turn = last_user_text(&report);
    assert!(turn.starts_with("<environment_context>\n"), "{turn}");
    assert!(turn.contains(&format!("<cwd>{}</cwd>", root.display())));
    assert!(turn.contains("<approval_policy>ask</approval_policy>"));
    let editor = &turn[turn.find("<editor_context>").expect("editor block")..];
    assert!(
        editor.contains("path=\"src/lib.rs\"") && editor.contains("cursor=\"7:13\""),
        "{editor}"
    );
    assert!(editor.contains("sum += c.area();"), "selection: {editor}");
    assert!(
        editor.contains("no method named `area` found"),
        "diagnostic: {editor}"
    );
    assert!(editor.contains("total_area"), "enclosing symbol: {editor}");
    // Circle is used in the symbol and defined in another open buffer.
    assert!(
        editor.contains("pub struct Circle {"),
        "definition: {editor}"
    );
    assert!(editor.contains("src/shapes.rs"), "{editor}");
    let boundary = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../prompts/data_boundary.md"),
    )
    .unwrap();
    assert!(editor.contains(boundary.trim()), "trust boundary: {editor}");
    server.stop().await;
}

#[tokio::test]
async fn without_an_editor_state_it_assembles_for_a_fresh_session() {
    let (_dir, root) = workspace();
    let server = start_in(&root).await;
    for params in [json!({}), Value::Null] {
        let report = server
            .client
            .request("agent/session/context", params)
            .await
            .expect("context");
        let roles: Vec<&str> = messages(&report)
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user"]);
        assert_eq!(section(&report, "editor").0, 0);
        assert_eq!(report["contextWindow"], 128000);
        // The root's AGENTS.md only: there is no active file.
        let system = messages(&report)[0]["content"].as_str().unwrap();
        assert!(system.contains("Run ./test before you finish."));
        assert!(!system.contains("Never use unwrap"));
        assert!(!last_user_text(&report).contains("<editor_context>"));
    }
    server.stop().await;
}

#[tokio::test]
async fn a_file_that_is_not_open_is_read_from_disk_inside_the_workspace_only() {
    let (_dir, root) = workspace();
    let outside = tempfile::tempdir().unwrap();
    write(&outside.path().join("x.rs"), "fn x() {}\n");
    let server = start_in(&root).await;
    let context = |uri: String, line: u32| json!({"editor": {"uri": uri, "position": {"line": line, "character": 0}}});
    // Not open, in the workspace: read from disk, with its syntax; the line past the end
    // clamps to the end of the file.
    let report = server
        .client
        .request(
            "agent/session/context",
            context(uri(&root.join("src/shapes.rs")), 999),
        )
        .await
        .expect("from disk");
    let turn = last_user_text(&report);
    assert!(turn.contains("path=\"src/shapes.rs\""), "{turn}");
    assert!(turn.contains("struct Circle"), "outline from disk: {turn}");

    let err = server
        .client
        .request(
            "agent/session/context",
            context(uri(&outside.path().join("x.rs")), 0),
        )
        .await
        .expect_err("outside");
    assert_eq!(err.code, -32602);
    assert!(
        err.message.contains("not inside the workspace"),
        "{}",
        err.message
    );

    let err = server
        .client
        .request(
            "agent/session/context",
            context(uri(&root.join("logo.png")), 0),
        )
        .await
        .expect_err("binary");
    assert_eq!(err.code, -32602);
    assert!(
        err.message.contains("logo.png is a binary file"),
        "{}",
        err.message
    );

    let err = server
        .client
        .request(
            "agent/session/context",
            context(uri(&root.join("src/missing.rs")), 0),
        )
        .await
        .expect_err("missing");
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("missing.rs"), "{}", err.message);

    let err = server
        .client
        .request("agent/session/context", json!({"sessionId": "nope"}))
        .await
        .expect_err("unknown session");
    assert_eq!(err.code, -32602);
    assert!(
        err.message.contains("unknown session \"nope\""),
        "{}",
        err.message
    );

    let err = server
        .client
        .request(
            "agent/session/context",
            json!({"editor": {"uri": uri(&root.join("src/lib.rs")), "position": "top"}}),
        )
        .await
        .expect_err("malformed");
    assert_eq!(err.code, -32602);

    // The server is still fine.
    server
        .client
        .request("agent/session/context", json!({}))
        .await
        .expect("still answering");
    server.stop().await;
}

#[tokio::test]
async fn an_enormous_selection_is_cut_to_the_editor_budget_with_a_marker() {
    let (_dir, root) = workspace();
    let server = start(Options {
        root: Some(&root),
        init_options: json!({"editorContext": {"maxTokens": 600}}),
        ..Options::default()
    })
    .await;
    let big: String = (0..5000)
        .map(|i| format!("let value_{i} = {i} * 2;\n"))
        .collect();
    let big_uri = uri(&root.join("src/big.rs"));
    server.open(&big_uri, "rust", 1, &big).await;
    let report = server
        .client
        .request(
            "agent/session/context",
            json!({"editor": {
                "uri": big_uri,
                "position": {"line": 0, "character": 0},
                // Past the end on both ends of the range: clamps.
                "selection": range_json([0, 0, 99_999, 99]),
            }}),
        )
        .await
        .expect("context");
    let (editor_tokens, _) = section(&report, "editor");
    assert!(
        editor_tokens <= 600,
        "editor section {editor_tokens} over its budget"
    );
    let turn = last_user_text(&report);
    assert!(turn.contains("let value_0 = 0 * 2;"), "head kept");
    assert!(turn.contains("let value_4999 = 4999 * 2;"), "tail kept");
    assert!(turn.contains("tokens truncated…"), "middle marker: {turn}");
    assert!(
        turn.contains("cut to fit the editor-context budget"),
        "{turn}"
    );
    let parts = report["editorParts"].as_array().unwrap();
    let selection = parts.iter().find(|p| p["name"] == "selection").unwrap();
    assert!(
        selection["cutTokens"].as_u64().unwrap() > 10_000,
        "{selection}"
    );
    server.stop().await;
}

#[tokio::test]
async fn prompt_files_can_be_overridden_from_configuration() {
    let (_dir, root) = workspace();
    let prompts = tempfile::tempdir().unwrap();
    write(
        &prompts.path().join("system.md"),
        "You are a test double.\n",
    );
    let server = start(Options {
        root: Some(&root),
        init_options: json!({"prompts": {"dir": prompts.path()}}),
        ..Options::default()
    })
    .await;
    let report = server
        .client
        .request("agent/session/context", json!({}))
        .await
        .expect("context");
    let system = messages(&report)[0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are a test double.\n\n# AGENTS.md"),
        "{system}"
    );
    server.stop().await;
}
