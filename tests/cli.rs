//! The command line: --version, --help, bad arguments, and the demo (the main job).

mod common;

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(common::binary())
        .args(args)
        .output()
        .expect("run agentls")
}

#[test]
fn version_and_help() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("agentls {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("agentls demo")
            && help.contains("agentls context")
            && help.contains("AGENTLS_LOG"),
        "{help}"
    );
}

#[test]
fn unknown_arguments_fail_with_the_usage() {
    let out = run(&["--frobnicate"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("unknown arguments: --frobnicate") && err.contains("USAGE"),
        "{err}"
    );
    let out = run(&["bench", "keystroke", "--lines", "many"]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("--lines needs a number"));
}

#[test]
fn demo_drives_a_real_session_and_prints_what_it_tracked() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Be brief.\n").unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "struct Config;\n\nimpl Config {\n    fn load() -> Self { Config }\n}\n\nfn main() {}\n",
    )
    .unwrap();
    let out = Command::new(common::binary())
        .args(["demo", root.to_str().unwrap()])
        .env("AGENTLS_LOG", "error")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "position encoding \"utf-16\"",
        "workspace: Indexed 2 files",
        "opened src/main.rs: 8 lines, language \"rust\", version 1",
        "  impl Config [impl] line 3",
        "    load [method] line 4",
        "version 2, 13 lines, syntax errors: false",
        "last symbol: added_by_demo [function]",
        "symbol at 10:4: \"added_by_demo\" [\"function\"]",
        "  AGENTS.md (10 bytes)",
        "context the model would see (",
        "% of 128000, estimated):",
        "  editor",
        "server exited: exit status: 0",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

/// `agentls context`: the same report as the LSP request, for a file on disk.
#[test]
fn context_shows_sections_and_the_editor_parts_for_a_file_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Keep functions short.\n").unwrap();
    std::fs::write(
        root.join("lib.rs"),
        "pub fn double(x: u32) -> u32 {\n    x * 2\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("blob.bin"), [1u8, 0, 2, 0]).unwrap();
    let file = root.join("lib.rs");
    let target = format!("{}:2:5", file.display());

    let out = run(&["context", &target, "--workspace", root.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("context for lib.rs:2:5 in "), "{text}");
    for row in [
        "tools",
        "system",
        "agentsMd",
        "environment",
        "editor",
        "total",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(row)),
            "no {row} row: {text}"
        );
    }
    assert!(text.contains("enclosingSymbol"), "{text}");

    let out = run(&["context", &target, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let turn = report["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        turn.contains("cursor=\"2:5\"") && turn.contains("pub fn double"),
        "{turn}"
    );
    let system = report["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Keep functions short."), "{system}");

    let out = run(&["context", root.join("blob.bin").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("blob.bin is a binary file"), "{err}");

    let elsewhere = tempfile::tempdir().unwrap();
    let out = run(&[
        "context",
        target.as_str(),
        "--workspace",
        elsewhere.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("outside the workspace"));
}
