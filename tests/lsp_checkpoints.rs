//! Checkpoints end to end, over the real binary and the fake provider: a turn that edits
//! with `edit_file`, runs `sed -i`, `rm`, `chmod` and a generator through `shell` (in its
//! sandbox) and has a subagent edit through `task`; then `agent/session/checkpoints`,
//! `agent/session/rewind` (code, conversation, both; dry run; conflicts and force) and
//! `agent/session/fork`, in a real git repository (whose `.git` must stay byte-identical)
//! and in a plain directory; across a restart and a kill -9 in the middle of a rewind.

mod common;

use common::agent::{
    apply_to_disk, kill9, new_session, prompt, provider_options, run_turn, server, stop_reason,
    updates_until_end, FakeProvider, Workspace,
};
use common::Server;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentls_dev::fake_provider::{Reply, Step};
use agentls_dev::lsp_client::{Answer, Responder};

const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";
const UTIL: &str = "pub fn helper() -> u32 {\n    1\n}\n";
const SCRIPT: &str = "#!/bin/sh\necho hello\n";
const NOTES: &str = "notes that rm will remove\n";

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A workspace with a few files (one executable, one binary, one ignored) and, with
/// `repo`, a real git repository holding a commit, a stash and an untracked file.
fn workspace(repo: bool) -> Workspace {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/lib.rs"), LIB).unwrap();
    fs::write(root.join("src/util.rs"), UTIL).unwrap();
    fs::write(root.join("script.sh"), SCRIPT).unwrap();
    fs::set_permissions(root.join("script.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(root.join("notes.txt"), NOTES).unwrap();
    fs::write(root.join("data.bin"), [0u8, 159, 146, 150, 255, 10, 13]).unwrap();
    fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    // The subagent that may edit.
    let agents = root.join(".agents/agents");
    fs::create_dir_all(&agents).unwrap();
    fs::write(
        agents.join("fixer.md"),
        "---\nname: fixer\ndescription: Fixes small things\ntools: read_file, edit_file\n---\nYou are the FIXERAGENT.\n",
    )
    .unwrap();
    if repo {
        git(&root, &["init", "-q"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "one"]);
        fs::write(root.join("notes.txt"), "stashed change\n").unwrap();
        git(&root, &["stash", "-q"]);
        fs::write(root.join("untracked.txt"), "not in git\n").unwrap();
    } else {
        fs::write(root.join("untracked.txt"), "plain\n").unwrap();
    }
    let root = root.canonicalize().unwrap();
    Workspace {
        _dir: dir,
        root,
        state: tempfile::tempdir().unwrap(),
    }
}

/// Every file under `dir` (not `.git` unless `dir` is it): its bytes and mode, symlinks as
/// their target.
fn files(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                if entry.file_name() != ".git" || base.ends_with(".git") {
                    walk(base, &path, out);
                }
                out.insert(format!("{name}/"), (Vec::new(), meta.permissions().mode()));
            } else if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(
                    name,
                    (target.as_os_str().as_encoded_bytes().to_vec(), 0o120000),
                );
            } else {
                out.insert(name, (fs::read(&path).unwrap(), meta.permissions().mode()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Answers permissions with allow-once and applies `workspace/applyEdit` to the disk, as an
/// editor that saves would.
fn editor() -> Responder {
    std::sync::Arc::new(|method: &str, params: &Value| match method {
        "agent/session/requestPermission" => {
            Answer::Result(json!({"outcome": {"optionId": "allow-once"}}))
        }
        "workspace/applyEdit" => Answer::Result(json!({"applied": apply_to_disk(params)})),
        _ => Answer::Result(Value::Null),
    })
}

async fn start(ws: &Workspace, fake: &FakeProvider, env: Vec<(&str, String)>) -> Server {
    let options = provider_options(fake, ws, json!({"approval": "full-auto"}));
    if env.is_empty() {
        return server(ws, options, Some(editor())).await;
    }
    common::start(common::Options {
        root: Some(&ws.root),
        init_options: options,
        apply_edit: true,
        responder: Some(editor()),
        env,
        ..common::Options::default()
    })
    .await
}

fn shell(id: &'static str, command: &str) -> (&'static str, &'static str, String) {
    (id, "shell", json!({ "command": command }).to_string())
}

/// Scripts the big turn: edit_file, sed -i, rm, chmod, a generator, a symlink, and a
/// subagent's edit; then the answer.
fn script_work_turn(fake: &FakeProvider) {
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    let calls = [
        ("c_edit", "edit_file", edit),
        shell("c_sed", "sed -i 's/hello/bye/' script.sh && chmod -x script.sh"),
        shell("c_rm", "rm notes.txt"),
        shell(
            "c_gen",
            "mkdir -p gen/deep && printf 'one' > gen/deep/out1.txt && printf 'two' > gen/out2.txt && ln -s ../src gen/link && mkdir -p ignored && echo log > ignored/build.log",
        ),
    ];
    let calls: Vec<(&str, &str, Vec<&str>)> = calls
        .iter()
        .map(|(id, name, args)| (*id, *name, vec![args.as_str()]))
        .collect();
    let calls: Vec<(&str, &str, &[&str])> = calls
        .iter()
        .map(|(id, name, args)| (*id, *name, args.as_slice()))
        .collect();
    fake.push(FakeProvider::openai_tool_calls(&calls, None));
    let task = json!({"agent": "fixer", "prompt": "Make helper() return 2"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("c_task", "task", &[task.as_str()])],
        None,
    ));
    let sub_edit =
        json!({"path": "src/util.rs", "old_text": "    1\n", "new_text": "    2\n"}).to_string();
    fake.push_for(
        "FIXERAGENT",
        FakeProvider::openai_tool_calls(&[("c_sub", "edit_file", &[sub_edit.as_str()])], None),
    );
    fake.push_for(
        "FIXERAGENT",
        FakeProvider::openai_text(&["helper() returns 2."], None),
    );
    fake.push(FakeProvider::openai_text(&["WORKDONE"], None));
}

/// One turn of `session` whose model runs `command` once in `shell`, then answers.
async fn one_shell_turn(
    server: &Server,
    fake: &FakeProvider,
    session: &str,
    command: &str,
    prompt: &str,
) {
    fake.push(FakeProvider::openai_tool_calls(
        &[("c1", "shell", &[command])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["DONE"], None));
    run_turn(server, session, prompt).await;
}

/// The debug build's rewind gate: the rewind waits there before it writes each file.
const GATE_ENV: &str = "AGENTLS_TEST_REWIND_GATE";

/// Waits until the rewind is at the gate; the path it is about to write.
async fn gate_reached(gate: &Path) -> String {
    loop {
        if let Ok(path) = fs::read_to_string(gate.join("reached")) {
            return path;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Lets the rewind past the gate, and waits until it has gone.
async fn gate_open(gate: &Path) {
    fs::write(gate.join("go"), "").unwrap();
    while gate.join("go").exists() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

async fn request(server: &Server, method: &str, params: Value) -> Value {
    server
        .client
        .request(method, params)
        .await
        .unwrap_or_else(|e| panic!("{method}: {e:?}"))
}

async fn checkpoints(server: &Server, session: &str) -> Vec<Value> {
    request(
        server,
        "agent/session/checkpoints",
        json!({"sessionId": session}),
    )
    .await["checkpoints"]
        .as_array()
        .unwrap()
        .clone()
}

async fn rewind(
    server: &Server,
    session: &str,
    checkpoint: &str,
    restore: &str,
    extra: Value,
) -> Value {
    let mut params = json!({"sessionId": session, "checkpointId": checkpoint, "restore": restore});
    common::agent::merge(&mut params, extra);
    request(server, "agent/session/rewind", params).await
}

fn strings(value: &Value) -> Vec<String> {
    let mut list: Vec<String> = value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    list.sort();
    list
}

/// The user messages of a recorded request, in order.
fn user_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect()
}

/// Two turns (the first only talks), then the big one; the checkpoints of the session.
async fn two_turns(server: &Server, fake: &FakeProvider, session: &str) -> Vec<Value> {
    fake.push(FakeProvider::openai_text(&["FIRSTANSWER"], None));
    let (updates, _) = run_turn(server, session, "FIRSTMESSAGE").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    script_work_turn(fake);
    let (updates, _) = run_turn(server, session, "SECONDMESSAGE do the work\nwith details").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert!(
        !updates.iter().any(|u| u["kind"] == "warning"
            && u["message"].as_str().unwrap_or("").contains("checkpoint")),
        "{updates:?}"
    );
    checkpoints(server, session).await
}

async fn rewind_both_restores_every_file_and_the_conversation(repo: bool) {
    let ws = workspace(repo);
    let fake = FakeProvider::start().await;
    let server = start(&ws, &fake, vec![]).await;
    let session = new_session(&server).await;
    let git_before = repo.then(|| files(&ws.root.join(".git")));
    let before = files(&ws.root);
    let listed = two_turns(&server, &fake, &session).await;

    // The work happened, the subagent's edit included.
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("src/util.rs")).unwrap(),
        UTIL.replace("1\n", "2\n")
    );
    assert!(!ws.root.join("notes.txt").exists());

    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["turn"], 1);
    assert_eq!(listed[0]["message"], "FIRSTMESSAGE");
    assert_eq!(listed[0]["files"], json!([]));
    assert_eq!(listed[1]["message"], "SECONDMESSAGE do the work");
    let changed: BTreeMap<String, String> = listed[1]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["change"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: BTreeMap<String, String> = [
        ("gen/deep/out1.txt", "created"),
        ("gen/link", "created"),
        ("gen/out2.txt", "created"),
        ("notes.txt", "deleted"),
        ("script.sh", "modified"),
        ("src/lib.rs", "modified"),
        ("src/util.rs", "modified"),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_string(), c.to_string()))
    .collect();
    assert_eq!(changed, expected);
    let checkpoint = listed[1]["id"].as_str().unwrap().to_string();

    // The dry run lists the plan and changes nothing.
    let after_work = files(&ws.root);
    let plan = rewind(
        &server,
        &session,
        &checkpoint,
        "both",
        json!({"dryRun": true}),
    )
    .await;
    assert_eq!(files(&ws.root), after_work);
    assert_eq!(
        strings(&plan["restore"]),
        ["script.sh", "src/lib.rs", "src/util.rs"]
    );
    assert_eq!(strings(&plan["create"]), ["notes.txt"]);
    assert_eq!(
        strings(&plan["delete"]),
        ["gen/deep/out1.txt", "gen/link", "gen/out2.txt"]
    );
    assert_eq!(strings(&plan["conflicts"]), Vec::<String>::new());

    let done = rewind(&server, &session, &checkpoint, "both", json!({})).await;
    assert_eq!(done["message"], "SECONDMESSAGE do the work\nwith details");
    assert_eq!(done["failed"], json!([]));
    // Every file byte for byte and mode for mode; the created ones (and their directories)
    // gone; the ignored file, not the checkpoint's, left.
    let mut now = files(&ws.root);
    assert!(now.remove("ignored/build.log").is_some());
    assert!(now.remove("ignored/").is_some());
    assert_eq!(now, before);
    if let Some(git_before) = git_before {
        assert_eq!(files(&ws.root.join(".git")), git_before, ".git changed");
    }

    // The conversation: the next request holds the first turn, not the rewound one.
    fake.push(FakeProvider::openai_text(&["AFTER"], None));
    let (updates, _) = run_turn(&server, &session, "THIRDMESSAGE").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let last = fake.requests().last().unwrap().body.clone();
    let users = user_messages(&last);
    assert!(
        users.iter().any(|m| m.contains("FIRSTMESSAGE")),
        "{users:?}"
    );
    assert!(!last.to_string().contains("SECONDMESSAGE"), "{last}");
    assert!(!last.to_string().contains("WORKDONE"), "{last}");
    assert!(users.last().unwrap().contains("THIRDMESSAGE"));
    let listed = checkpoints(&server, &session).await;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1]["message"], "THIRDMESSAGE");
    assert_eq!(listed[1]["turn"], 2);
    if let Some(git_before) = repo.then(|| files(&ws.root.join(".git"))) {
        // Checkpoints after the rewind leave it as it was too.
        assert_eq!(git_before, files(&ws.root.join(".git")));
    }
}

#[tokio::test]
async fn rewind_both_in_a_git_repository_restores_every_file_and_leaves_dot_git_untouched() {
    rewind_both_restores_every_file_and_the_conversation(true).await;
}

#[tokio::test]
async fn rewind_both_in_a_plain_directory_restores_every_file() {
    rewind_both_restores_every_file_and_the_conversation(false).await;
}

#[tokio::test]
async fn a_file_the_user_changed_after_the_agent_is_a_conflict_left_alone_unless_forced() {
    let ws = workspace(true);
    let fake = FakeProvider::start().await;
    let server = start(&ws, &fake, vec![]).await;
    let session = new_session(&server).await;
    let listed = two_turns(&server, &fake, &session).await;
    let checkpoint = listed[1]["id"].as_str().unwrap().to_string();
    // The user edits a file the agent changed, and one it created.
    fs::write(ws.root.join("src/lib.rs"), "// mine\n").unwrap();
    fs::write(ws.root.join("gen/out2.txt"), "mine too").unwrap();

    let plan = rewind(
        &server,
        &session,
        &checkpoint,
        "code",
        json!({"dryRun": true}),
    )
    .await;
    assert_eq!(strings(&plan["conflicts"]), ["gen/out2.txt", "src/lib.rs"]);
    assert!(!strings(&plan["restore"]).contains(&"src/lib.rs".to_string()));

    let done = rewind(&server, &session, &checkpoint, "code", json!({})).await;
    assert_eq!(strings(&done["conflicts"]), ["gen/out2.txt", "src/lib.rs"]);
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        "// mine\n"
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("gen/out2.txt")).unwrap(),
        "mine too"
    );
    // The rest went back.
    assert_eq!(
        fs::read_to_string(ws.root.join("src/util.rs")).unwrap(),
        UTIL
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("notes.txt")).unwrap(),
        NOTES
    );
    assert!(!ws.root.join("gen/deep").exists());

    let forced = rewind(
        &server,
        &session,
        &checkpoint,
        "code",
        json!({"force": true}),
    )
    .await;
    assert_eq!(
        strings(&forced["conflicts"]),
        ["gen/out2.txt", "src/lib.rs"]
    );
    assert_eq!(fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(), LIB);
    assert!(!ws.root.join("gen").exists());
}

#[tokio::test]
async fn code_only_keeps_the_conversation_and_conversation_only_keeps_the_files() {
    let ws = workspace(false);
    let fake = FakeProvider::start().await;
    let server = start(&ws, &fake, vec![]).await;
    let session = new_session(&server).await;
    let listed = two_turns(&server, &fake, &session).await;
    let checkpoint = listed[1]["id"].as_str().unwrap().to_string();

    let done = rewind(&server, &session, &checkpoint, "code", json!({})).await;
    assert_eq!(done["conversation"], false);
    assert!(done.get("message").is_none());
    assert_eq!(fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(), LIB);
    fake.push(FakeProvider::openai_text(&["OK"], None));
    run_turn(&server, &session, "THIRD").await;
    let body = fake.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("SECONDMESSAGE") && body.contains("WORKDONE"),
        "{body}"
    );

    // Conversation only: to the third turn's checkpoint; the files stay.
    let listed = checkpoints(&server, &session).await;
    assert_eq!(listed.len(), 3);
    fs::write(ws.root.join("src/lib.rs"), "changed since\n").unwrap();
    let third = listed[2]["id"].as_str().unwrap();
    let done = rewind(&server, &session, third, "conversation", json!({})).await;
    assert_eq!(done["message"], "THIRD");
    assert_eq!(done["restore"], json!([]));
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        "changed since\n"
    );
    fake.push(FakeProvider::openai_text(&["OK"], None));
    run_turn(&server, &session, "FOURTH").await;
    let body = fake.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("WORKDONE") && !body.contains("THIRD"),
        "{body}"
    );
}

#[tokio::test]
async fn rewinds_are_refused_clearly_for_unknown_sessions_checkpoints_and_restores() {
    let ws = workspace(false);
    let fake = FakeProvider::start().await;
    let server = start(&ws, &fake, vec![]).await;
    let session = new_session(&server).await;
    let listed = two_turns(&server, &fake, &session).await;
    let checkpoint = listed[1]["id"].as_str().unwrap();
    let call = |params: Value| server.client.request("agent/session/rewind", params);
    let err = call(json!({"sessionId": "nope", "checkpointId": checkpoint, "restore": "both"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("unknown session"), "{err:?}");
    let err = call(json!({"sessionId": session, "checkpointId": "cp-nope", "restore": "both"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("unknown checkpoint"), "{err:?}");
    let err = call(json!({"sessionId": session, "checkpointId": checkpoint, "restore": "all"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("restore must be"), "{err:?}");

    // While a turn runs: refused, nothing touched.
    let mut held = FakeProvider::openai_text(&["late"], None);
    if let Reply::Sse { steps } = &mut held {
        steps.insert(0, Step::Hold);
    }
    fake.push(held);
    let turn = prompt(&server, &session, "HELD").await;
    let mut refused = None;
    for _ in 0..200 {
        match call(json!({"sessionId": session, "checkpointId": checkpoint, "restore": "both"}))
            .await
        {
            Err(err) => {
                refused = Some(err);
                break;
            }
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    let refused = refused.expect("a rewind during a turn is refused");
    assert!(refused.message.contains("is running"), "{refused:?}");
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        LIB.replace("41", "42")
    );
    fake.release();
    updates_until_end(&server, &turn).await;
}

#[tokio::test]
async fn a_fork_has_the_history_before_its_checkpoint_and_both_survive_a_restart() {
    let ws = workspace(true);
    let fake = FakeProvider::start().await;
    let mut server = start(&ws, &fake, vec![]).await;
    let session = new_session(&server).await;
    let listed = two_turns(&server, &fake, &session).await;
    let checkpoint = listed[1]["id"].as_str().unwrap().to_string();
    let second_request = fake.requests()[1].body.clone();

    let fork = request(
        &server,
        "agent/session/fork",
        json!({"sessionId": session, "checkpointId": checkpoint}),
    )
    .await;
    let forked = fork["sessionId"].as_str().unwrap().to_string();
    assert_ne!(forked, session);
    assert_eq!(fork["forkedFrom"], session.as_str());
    let whole = request(&server, "agent/session/fork", json!({"sessionId": session})).await;
    let whole = whole["sessionId"].as_str().unwrap().to_string();
    let err = server
        .client
        .request(
            "agent/session/fork",
            json!({"sessionId": session, "checkpointId": "cp-x"}),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("unknown checkpoint"), "{err:?}");
    // And the original rewound (conversation), to see both survive a restart.
    rewind(&server, &session, &checkpoint, "conversation", json!({})).await;

    kill9(&mut server).await;
    let server = start(&ws, &fake, vec![]).await;
    let list = request(&server, "agent/session/list", json!({})).await;
    let rows = list["sessions"].as_array().unwrap();
    let row = |id: &str| rows.iter().find(|r| r["sessionId"] == id).unwrap().clone();
    assert_eq!(row(&forked)["forkedFrom"], session.as_str());
    assert_eq!(row(&forked)["forkedFromCheckpoint"], checkpoint.as_str());
    assert_eq!(row(&whole)["forkedFrom"], session.as_str());
    assert!(row(&session).get("forkedFrom").is_none());

    // The fork's next request: the same prefix as the original's second request, up to
    // before its user message.
    fake.push(FakeProvider::openai_text(&["FORKED"], None));
    run_turn(&server, &forked, "IN THE FORK").await;
    let fork_request = fake.requests().last().unwrap().body.clone();
    let original = second_request["messages"].as_array().unwrap();
    let in_fork = fork_request["messages"].as_array().unwrap();
    assert_eq!(
        in_fork[..original.len() - 1],
        original[..original.len() - 1]
    );
    assert!(!fork_request.to_string().contains("SECONDMESSAGE"));
    // The whole fork has the work turn; the rewound original no more.
    fake.push(FakeProvider::openai_text(&["W"], None));
    run_turn(&server, &whole, "IN THE WHOLE FORK").await;
    assert!(fake
        .requests()
        .last()
        .unwrap()
        .body
        .to_string()
        .contains("WORKDONE"));
    let load = request(&server, "agent/session/load", json!({"sessionId": session})).await;
    assert!(!load.to_string().contains("SECONDMESSAGE"), "{load}");
    let users: Vec<&Value> = load["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "user")
        .collect();
    assert_eq!(users.len(), 1);
    assert!(users[0]["checkpointId"].is_string(), "{users:?}");
    // The fork's checkpoints still rewind its code.
    let fork_listed = checkpoints(&server, &whole).await;
    assert_eq!(fork_listed.len(), 3);
    let done = rewind(
        &server,
        &whole,
        fork_listed[1]["id"].as_str().unwrap(),
        "code",
        json!({}),
    )
    .await;
    assert_eq!(strings(&done["create"]), ["notes.txt"]);
    assert_eq!(
        fs::read_to_string(ws.root.join("notes.txt")).unwrap(),
        NOTES
    );
}

#[tokio::test]
async fn a_kill_during_a_rewind_leaves_each_file_old_or_new_and_a_session_that_loads() {
    let ws = workspace(false);
    let fake = FakeProvider::start().await;
    let gate = tempfile::tempdir().unwrap();
    let env = vec![(GATE_ENV, gate.path().display().to_string())];
    let mut server = start(&ws, &fake, env).await;
    let session = new_session(&server).await;
    let listed = two_turns(&server, &fake, &session).await;
    let checkpoint = listed[1]["id"].as_str().unwrap().to_string();
    let old = files(&ws.root);
    let before_names = ["script.sh", "src/lib.rs", "src/util.rs", "notes.txt"];

    let params = json!({"sessionId": session, "checkpointId": checkpoint, "restore": "both"});
    {
        let pending = server.client.request("agent/session/rewind", params);
        tokio::pin!(pending);
        // Killed at the second of the files that were there before (the deletes come
        // first): the first of them is written, the others are not.
        let at_second = async {
            let mut seen = 0;
            loop {
                let path = gate_reached(gate.path()).await;
                if before_names.contains(&path.as_str()) {
                    seen += 1;
                    if seen == 2 {
                        return;
                    }
                }
                gate_open(gate.path()).await;
            }
        };
        tokio::select! {
            answer = &mut pending => panic!("the rewind ended before the kill: {answer:?}"),
            () = at_second => {}
        }
    }
    kill9(&mut server).await;
    let now = files(&ws.root);
    let new = {
        let mut new = BTreeMap::new();
        new.insert("script.sh".to_string(), SCRIPT.to_string());
        new.insert("src/lib.rs".to_string(), LIB.to_string());
        new.insert("src/util.rs".to_string(), UTIL.to_string());
        new.insert("notes.txt".to_string(), NOTES.to_string());
        new
    };
    let mut restored = 0;
    for name in before_names {
        let now_bytes = now.get(name).map(|(b, _)| b.clone());
        let old_bytes = old.get(name).map(|(b, _)| b.clone());
        let new_bytes = Some(new[name].as_bytes().to_vec());
        assert!(
            now_bytes == old_bytes || now_bytes == new_bytes,
            "{name} is torn: {now_bytes:?}"
        );
        restored += usize::from(now_bytes == new_bytes && old_bytes != new_bytes);
    }
    assert!(
        restored < before_names.len(),
        "the kill came after the whole rewind"
    );
    assert!(
        now.keys().all(|name| !name.contains("agentls-rewind")),
        "a temporary file was left: {now:?}"
    );

    // The session loads; the rewind, asked again, finishes the job.
    let server = start(&ws, &fake, vec![]).await;
    request(&server, "agent/session/load", json!({"sessionId": session})).await;
    let done = rewind(&server, &session, &checkpoint, "both", json!({})).await;
    assert_eq!(done["failed"], json!([]));
    for name in before_names {
        assert_eq!(
            fs::read_to_string(ws.root.join(name)).unwrap(),
            new[name],
            "{name}"
        );
    }
}

#[tokio::test]
async fn checkpoints_can_be_turned_off_and_a_failed_one_is_said_while_the_turn_goes_on() {
    let ws = workspace(false);
    let fake = FakeProvider::start().await;
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "checkpoints": {"enabled": false}}),
    );
    let server = server(&ws, options, Some(editor())).await;
    let session = new_session(&server).await;
    fake.push(FakeProvider::openai_text(&["A"], None));
    run_turn(&server, &session, "ONE").await;
    assert!(checkpoints(&server, &session).await.is_empty());
    drop(server);

    // A state directory whose checkpoint store cannot be made (a file in its place): a
    // warning, and the turn answers.
    let ws2 = workspace(false);
    let blocked: PathBuf = ws2.state.path().to_path_buf();
    let mut first = start(&ws2, &fake, vec![]).await;
    new_session(&first).await;
    kill9(&mut first).await;
    let store_dir = fs::read_dir(&blocked)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("sessions").is_dir())
        .unwrap();
    // The killed server's warming git may still be writing there: until it is gone.
    while {
        let _ = fs::remove_dir_all(store_dir.join("checkpoints"));
        fs::write(store_dir.join("checkpoints"), "not a directory").is_err()
    } {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let server = start(&ws2, &fake, vec![]).await;
    let session = new_session(&server).await;
    fake.push(FakeProvider::openai_text(&["STILL ANSWERED"], None));
    let (updates, _) = run_turn(&server, &session, "TWO").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert!(
        updates.iter().any(|u| u["kind"] == "warning"
            && u["message"]
                .as_str()
                .unwrap()
                .contains("no checkpoint for this turn")),
        "{updates:?}"
    );
    assert_eq!(common::agent::answer_text(&updates), "STILL ANSWERED");
}

#[tokio::test]
async fn past_the_store_cap_the_oldest_sessions_checkpoints_go_and_a_rewind_to_them_says_so() {
    let ws = workspace(false);
    let fake = FakeProvider::start().await;
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "checkpoints": {"maxStoreBytes": 4096}}),
    );
    let server = server(&ws, options, Some(editor())).await;
    let older = new_session(&server).await;
    let write = |id: &'static str, text: &str| {
        FakeProvider::openai_tool_calls(
            &[(
                id,
                "shell",
                &[json!({ "command": format!("printf '{text}' > notes.txt") })
                    .to_string()
                    .as_str()],
            )],
            None,
        )
    };
    fake.push(write("c1", "older"));
    fake.push(FakeProvider::openai_text(&["ONE"], None));
    run_turn(&server, &older, "OLDER").await;
    let older_checkpoint = checkpoints(&server, &older).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let newer = new_session(&server).await;
    fake.push(write("c2", "newer"));
    fake.push(FakeProvider::openai_text(&["TWO"], None));
    let (updates, _) = run_turn(&server, &newer, "NEWER").await;
    let dropped = updates
        .iter()
        .find(|u| {
            u["kind"] == "warning" && u["message"].as_str().unwrap().contains("maxStoreBytes")
        })
        .unwrap_or_else(|| panic!("no warning of the cap: {updates:?}"));
    assert!(
        dropped["message"].as_str().unwrap().contains(&older),
        "{dropped}"
    );

    let err = server
        .client
        .request(
            "agent/session/rewind",
            json!({"sessionId": older, "checkpointId": older_checkpoint, "restore": "code"}),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("no longer in the store"), "{err:?}");
    // The running session's own checkpoints stay.
    let newer_checkpoint = checkpoints(&server, &newer).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let done = rewind(&server, &newer, &newer_checkpoint, "code", json!({})).await;
    assert_eq!(strings(&done["restore"]), ["notes.txt"]);
    assert_eq!(
        fs::read_to_string(ws.root.join("notes.txt")).unwrap(),
        "older"
    );
}

#[tokio::test]
async fn files_over_max_file_bytes_are_not_stored_said_so_and_never_touched_by_a_rewind() {
    let ws = workspace(false);
    let big = "x".repeat(1000);
    fs::write(ws.root.join("big.log"), &big).unwrap();
    let fake = FakeProvider::start().await;
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "checkpoints": {"maxFileBytes": 500}}),
    );
    let server = server(&ws, options, Some(editor())).await;
    let session = new_session(&server).await;
    let command =
        json!({"command": "printf 'more' >> big.log && printf 'changed' > notes.txt"}).to_string();
    one_shell_turn(&server, &fake, &session, &command, "GROW IT").await;
    let listed = checkpoints(&server, &session).await;
    assert_eq!(listed[0]["notStored"], json!(["big.log"]));
    let done = rewind(
        &server,
        &session,
        listed[0]["id"].as_str().unwrap(),
        "code",
        json!({}),
    )
    .await;
    assert_eq!(strings(&done["restore"]), ["notes.txt"]);
    assert_eq!(strings(&done["notStored"]), ["big.log"]);
    assert_eq!(
        fs::read_to_string(ws.root.join("notes.txt")).unwrap(),
        NOTES
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("big.log")).unwrap(),
        format!("{big}more")
    );
}

/// Issue 41, hole 3: a directory swapped for a link between the rewind's plan and its write
/// (a process the model left running can do it) does not redirect the write outside.
#[tokio::test]
async fn a_directory_swapped_for_a_link_during_a_rewind_is_not_written_through() {
    let ws = workspace(false);
    fs::create_dir_all(ws.root.join("sub")).unwrap();
    fs::write(ws.root.join("sub/file.txt"), "OLD\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("file.txt"), "OUTSIDE\n").unwrap();
    let fake = FakeProvider::start().await;
    let gate = tempfile::tempdir().unwrap();
    let env = vec![(GATE_ENV, gate.path().display().to_string())];
    let server = start(&ws, &fake, env).await;
    let session = new_session(&server).await;
    let command = json!({"command": "printf 'NEW\\n' > sub/file.txt"}).to_string();
    one_shell_turn(&server, &fake, &session, &command, "CHANGE IT").await;
    assert_eq!(
        fs::read_to_string(ws.root.join("sub/file.txt")).unwrap(),
        "NEW\n"
    );
    let listed = checkpoints(&server, &session).await;
    let checkpoint = listed[0]["id"].as_str().unwrap().to_string();

    let params = json!({"sessionId": session, "checkpointId": checkpoint, "restore": "code"});
    let pending = server.client.request("agent/session/rewind", params);
    tokio::pin!(pending);
    // Only the wait for the gate races the answer: once the gate opens the rewind may
    // answer before `gate_open` sees it has gone.
    let at_gate = tokio::select! {
        answer = &mut pending => panic!("the rewind ended before the gate: {answer:?}"),
        path = gate_reached(gate.path()) => path,
    };
    assert_eq!(at_gate, "sub/file.txt");
    fs::rename(ws.root.join("sub"), ws.root.join("sub.real")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.root.join("sub")).unwrap();
    fs::write(gate.path().join("go"), "").unwrap();
    let done = pending.await.unwrap();
    assert_eq!(
        fs::read_to_string(outside.path().join("file.txt")).unwrap(),
        "OUTSIDE\n",
        "the rewind wrote through the link: {done}"
    );
    let names: Vec<String> = fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["file.txt"], "{done}");
    let failed = done["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{done}");
    assert_eq!(failed[0]["path"], "sub/file.txt");
    assert!(
        failed[0]["error"].as_str().unwrap().contains("symlink"),
        "{done}"
    );
}

/// Issue 41, hole 12: a file whose name is not UTF-8 is restored under its own name, not
/// a new one with U+FFFD in it.
#[tokio::test]
async fn a_file_whose_name_is_not_utf8_is_restored_under_its_own_name() {
    use std::os::unix::ffi::OsStrExt;
    let ws = workspace(false);
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    fs::write(ws.root.join(name), "OLD\n").unwrap();
    let fake = FakeProvider::start().await;
    let server = start(&ws, &fake, vec![]).await;
    let session = new_session(&server).await;
    let command =
        json!({"command": "for f in caf*.txt; do printf 'NEW\\n' > \"$f\"; done"}).to_string();
    one_shell_turn(&server, &fake, &session, &command, "CHANGE IT").await;
    assert_eq!(fs::read_to_string(ws.root.join(name)).unwrap(), "NEW\n");
    let listed = checkpoints(&server, &session).await;
    let checkpoint = listed[0]["id"].as_str().unwrap();
    let done = rewind(&server, &session, checkpoint, "code", json!({})).await;
    assert_eq!(done["failed"], json!([]), "{done}");
    assert_eq!(strings(&done["restore"]), ["caf\u{fffd}.txt"], "{done}");
    assert_eq!(fs::read_to_string(ws.root.join(name)).unwrap(), "OLD\n");
    assert!(
        !ws.root.join("caf\u{fffd}.txt").exists(),
        "a new file was made with U+FFFD in its name"
    );
}

/// Issue 41, hole 13: a file a turn created past `checkpoints.maxFileBytes` is not stored,
/// so a rewind leaves it: it says so in `notStored`.
#[tokio::test]
async fn a_created_file_past_max_file_bytes_is_listed_as_not_stored_by_a_rewind() {
    let ws = workspace(false);
    let fake = FakeProvider::start().await;
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "checkpoints": {"maxFileBytes": 500}}),
    );
    let server = server(&ws, options, Some(editor())).await;
    let session = new_session(&server).await;
    let command = json!({
        "command": "head -c 2000 /dev/zero | tr '\\0' x > huge.log && printf 'changed' > notes.txt"
    })
    .to_string();
    one_shell_turn(&server, &fake, &session, &command, "MAKE IT").await;
    assert_eq!(fs::metadata(ws.root.join("huge.log")).unwrap().len(), 2000);
    let listed = checkpoints(&server, &session).await;
    let done = rewind(
        &server,
        &session,
        listed[0]["id"].as_str().unwrap(),
        "code",
        json!({}),
    )
    .await;
    assert_eq!(strings(&done["restore"]), ["notes.txt"], "{done}");
    assert_eq!(strings(&done["notStored"]), ["huge.log"], "{done}");
    assert!(ws.root.join("huge.log").exists());
}
