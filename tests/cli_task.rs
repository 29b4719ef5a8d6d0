//! What makes a small model finish a coding task, end to end: `agentls ask --approve` in
//! full-auto against the fake provider over real HTTP, the model's calls scripted the way a
//! small model makes them. Each test fails without its mechanism:
//! - a whole-file write over a file the model has not read is refused until it reads it;
//! - `grep` for a path shows that file, and a read of a missing path names the real one;
//! - an edit whose indentation drifted, or that carries read_file's line numbers, is
//!   applied, and said;
//! - a call cut by the output limit is answered, and never breaks the session;
//! - the project's tests run after a change, and their failure is in the change's result;
//! - the result line on stderr shows what a call returned;
//! - a small model is offered the short prompt, four tools and greedy sampling;
//! - a file listing in the reply (path, fenced block) writes the file, as a call would;
//! - a listing that fails the check is tried again fresh, without the failed file;
//! - a turn that ends while the check after its last change fails goes on, twice at most.

mod common;

use agentls_dev::fake_provider::{FakeProvider, RecordedRequest};
use serde_json::json;

/// A git workspace holding `files`, and a state directory beside it.
struct Task {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    state: std::path::PathBuf,
}

impl Task {
    fn new(files: &[(&str, &str)]) -> Task {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let state = dir.path().join("state");
        Task {
            _dir: dir,
            root,
            state,
        }
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap()
    }

    /// `agentls ask QUESTION --approve` in full-auto with `settings` over the provider's;
    /// (exit code, stdout, stderr).
    async fn ask(
        &self,
        fake: &FakeProvider,
        question: &str,
        settings: serde_json::Value,
        session: Option<&str>,
    ) -> (i32, String, String) {
        self.ask_with(fake, question, settings, session, &[]).await
    }

    /// `ask` with more arguments (`--file PATH`: the editor's active file).
    async fn ask_with(
        &self,
        fake: &FakeProvider,
        question: &str,
        settings: serde_json::Value,
        session: Option<&str>,
        more: &[&str],
    ) -> (i32, String, String) {
        let mut config = json!({
            "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "m"},
            "stateDir": self.state,
            "approval": "full-auto",
            "checks": {"afterEdit": "off"},
        });
        agentls_core_merge(&mut config, settings);
        let mut args = vec![
            "ask".to_string(),
            question.to_string(),
            "--approve".into(),
            "--workspace".into(),
            self.root.to_str().unwrap().to_string(),
            "--config".into(),
            config.to_string(),
        ];
        if let Some(session) = session {
            args.extend(["--session".to_string(), session.to_string()]);
        }
        args.extend(more.iter().map(|arg| arg.to_string()));
        common::run_agentls(&args, common::NO_USER_CONFIG.as_ref()).await
    }
}

/// `over`'s keys over `base`'s, recursively.
fn agentls_core_merge(base: &mut serde_json::Value, over: serde_json::Value) {
    match (base, over) {
        (serde_json::Value::Object(base), serde_json::Value::Object(over)) => {
            for (key, value) in over {
                agentls_core_merge(base.entry(key).or_insert(serde_json::Value::Null), value);
            }
        }
        (base, over) => *base = over,
    }
}

/// The output the model got for call `call_id`, from the request after it.
fn tool_output(requests: &[RecordedRequest], call_id: &str) -> String {
    requests
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no output for {call_id}"))
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> agentls_dev::fake_provider::Reply {
    FakeProvider::openai_tool_calls(&[(id, name, &[arguments.to_string().as_str()])], None)
}

/// The small model's first answer to bob.py: an edit to a wrong but working reply.
fn edit_to_whatever(id: &str) -> agentls_dev::fake_provider::Reply {
    call(
        id,
        "edit_file",
        json!({"path": "bob.py", "old_text": "    pass", "new_text": "    return 'Whatever.'"}),
    )
}

fn session_of(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("agentls: session "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the session id on stderr")
        .to_string()
}

const STUB: &str = "def response(hey_bob):\n    pass\n";

/// The small model's first move on an exercise: rewrite the stub without reading it,
/// renaming the function the tests import. Refused, the refusal showing the file (which
/// counts as its read); then its write goes through, and its own change counts as seen.
#[tokio::test]
async fn a_write_over_a_file_not_read_is_refused_until_it_is_read() {
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    let blind = "def is_response(text):\n    return 'Whatever.'\n";
    let read = "def response(hey_bob):\n    return 'Whatever.'\n";
    fake.push(call(
        "c1",
        "write_file",
        json!({"path": "bob.py", "content": blind}),
    ));
    // The refusal showed the file, and counts as the read.
    fake.push(call(
        "c4",
        "write_file",
        json!({"path": "bob.py", "content": read}),
    ));
    // The same text again changes nothing, and is said to.
    fake.push(call(
        "c4b",
        "write_file",
        json!({"path": "bob.py", "content": read}),
    ));
    // Its own write counts as seen: the next edit needs no read.
    fake.push(call(
        "c5",
        "edit_file",
        json!({"path": "bob.py", "old_text": "'Whatever.'", "new_text": "'Fine.'"}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", json!({}), None).await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    let output = tool_output(&requests, "c1");
    assert!(
        output.contains("had not read it")
            && output.contains("L1: def response(hey_bob):\nL2:     pass"),
        "{output}"
    );
    assert!(tool_output(&requests, "c4").contains("Replaced the content of bob.py"));
    assert!(tool_output(&requests, "c4b").contains("already holds exactly this content"));
    assert!(tool_output(&requests, "c5").contains("Edited bob.py"));
    assert_eq!(task.read("bob.py"), read.replace("Whatever.", "Fine."));

    // A session resumed in a new process: what its history read counts as read.
    fake.push(call(
        "c6",
        "write_file",
        json!({"path": "bob.py", "content": STUB}),
    ));
    fake.push(FakeProvider::openai_text(&["Back to the stub."], None));
    let session = session_of(&stderr);
    let (code, _, stderr) = task.ask(&fake, "Undo it", json!({}), Some(&session)).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(tool_output(&fake.requests(), "c6").contains("Replaced the content of bob.py"));
    assert_eq!(task.read("bob.py"), STUB);

    // The rule can be turned off.
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(call(
        "c1",
        "write_file",
        json!({"path": "bob.py", "content": blind}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let off = json!({"tools": {"readBeforeWrite": false}});
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", off, None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(task.read("bob.py"), blind);
}

/// The exercise's stub open in the editor, small: the editor block shows it whole (its
/// names, its docstring, its constants), which counts as the read, so the model's first
/// write goes through. A long file is shown by its outline, and the rule holds.
#[tokio::test]
async fn a_small_file_open_in_the_editor_is_shown_whole_and_counts_as_read() {
    let long: String = (0..250).map(|i| format!("X{i} = {i}\n")).collect();
    let task = Task::new(&[("bob.py", STUB), ("long.py", &long)]);
    let fake = FakeProvider::start().await;
    let solved = "def response(hey_bob):\n    return 'Whatever.'\n";
    fake.push(call(
        "c1",
        "write_file",
        json!({"path": "bob.py", "content": solved}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let more = ["--file", "bob.py"];
    let (code, _, stderr) = task
        .ask_with(&fake, "Solve bob.py", json!({}), None, &more)
        .await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    let first = requests[0].body["messages"].to_string();
    assert!(
        first.contains(
            "<file lines=\\\"1-2\\\">\\nL1: def response(hey_bob):\\nL2:     pass\\n</file>"
        ),
        "{first}"
    );
    assert!(tool_output(&requests, "c1").contains("Replaced the content of bob.py"));
    assert_eq!(task.read("bob.py"), solved);

    let fake = FakeProvider::start().await;
    fake.push(call(
        "c2",
        "write_file",
        json!({"path": "long.py", "content": "X = 1\n"}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let more = ["--file", "long.py"];
    let (code, _, stderr) = task
        .ask_with(&fake, "Shorten long.py", json!({}), None, &more)
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(tool_output(&fake.requests(), "c2").contains("had not read it"));
    assert_eq!(task.read("long.py"), long);

    // Turned off, the small file is not shown whole, nor counted as read.
    let fake = FakeProvider::start().await;
    fake.push(call(
        "c3",
        "write_file",
        json!({"path": "bob.py", "content": STUB}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let off = json!({"editorContext": {"wholeFileMaxTokens": 0}});
    let more = ["--file", "bob.py"];
    let (code, _, stderr) = task.ask_with(&fake, "Undo bob.py", off, None, &more).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(tool_output(&fake.requests(), "c3").contains("had not read it"));
}

/// Under `provider.profile: "auto"`, the model's name says it is small (1.5B): it is told a
/// short system prompt with the form of a change, offered four tools with short descriptions
/// and only the arguments it needs, and sampled at temperature 0; `"full"` (the default)
/// gives it everything.
#[tokio::test]
async fn a_small_model_is_offered_a_short_prompt_few_tools_and_greedy_sampling() {
    let task = Task::new(&[("bob.py", STUB)]);
    let small = json!({"provider": {"model": "qwen2.5-coder-1.5b", "profile": "auto"}});
    let tool_names = |body: &serde_json::Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };

    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["It says pass."], None));
    let (code, _, stderr) = task
        .ask_with(
            &fake,
            "What does bob.py do?",
            small.clone(),
            None,
            &["--file", "bob.py"],
        )
        .await;
    assert_eq!(code, 0, "{stderr}");
    let body = &fake.requests()[0].body;
    assert_eq!(tool_names(body), ["read_file", "list_dir", "grep", "shell"]);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("path on a line of its own"), "{system}");
    assert!(!system.contains("update_plan"), "{system}");
    assert_eq!(body["temperature"], json!(0.0));
    let shell = &body["tools"][3]["function"]["parameters"]["properties"];
    assert_eq!(shell.as_object().unwrap().len(), 1, "{shell}");

    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["It says pass."], None));
    let full = json!({"provider": {"model": "qwen2.5-coder-1.5b", "profile": "full"}});
    let (code, _, stderr) = task
        .ask_with(
            &fake,
            "What does bob.py do?",
            full,
            None,
            &["--file", "bob.py"],
        )
        .await;
    assert_eq!(code, 0, "{stderr}");
    let body = &fake.requests()[0].body;
    assert!(tool_names(body).contains(&"update_plan".to_string()));
    assert!(body.get("temperature").is_none(), "{body}");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("path on a line of its own"));
}

/// `./run`'s question as the small model answered it: grep for the path, "No matches",
/// "the file does not exist". grep for a path now shows the file; a read of a guessed path
/// names the real one.
#[tokio::test]
async fn a_path_searched_for_or_guessed_leads_to_the_file() {
    let main = "//! The binary: serves LSP on stdio.\nfn main() {}\n";
    let task = Task::new(&[("server/src/main.rs", main), ("README.md", "x\n")]);
    let fake = FakeProvider::start().await;
    fake.push(call(
        "c1",
        "grep",
        json!({"pattern": "server/src/main.rs", "path": "server"}),
    ));
    fake.push(call("c2", "read_file", json!({"path": "src/main.rs"})));
    fake.push(FakeProvider::openai_text(
        &["It serves LSP on stdio."],
        None,
    ));
    let (code, stdout, stderr) = task
        .ask(&fake, "What does server/src/main.rs do?", json!({}), None)
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "It serves LSP on stdio.");
    let requests = fake.requests();
    let grep = tool_output(&requests, "c1");
    assert!(
        grep.contains("is a file of the workspace")
            && grep.contains("L1: //! The binary: serves LSP on stdio.")
            // The small model answered "the file contains no such lines" from a trailing
            // "No matches".
            && !grep.contains("No matches"),
        "{grep}"
    );
    let read = tool_output(&requests, "c2");
    assert!(
        read.contains("does not exist")
            && read.contains("closest paths in the workspace: server/src/main.rs"),
        "{read}"
    );
    // The CLI's result line shows what the call returned, not its id.
    assert!(
        stderr.contains("  ✓ Grep `server/src/main.rs` in server: ")
            && stderr.contains("  ✗ Read src/main.rs: cannot read src/main.rs"),
        "{stderr}"
    );
}

/// The small model drops a method's indentation in old_text: the edit is applied at the
/// one place it fits, re-indented, and the result says how it matched.
#[tokio::test]
async fn an_edit_whose_indentation_drifted_is_applied_and_said() {
    let source = "class Bob:\n    def hey(self, text):\n        return None\n";
    let task = Task::new(&[("bob.py", source)]);
    let fake = FakeProvider::start().await;
    fake.push(call("c1", "read_file", json!({"path": "bob.py"})));
    fake.push(call(
        "c2",
        "edit_file",
        json!({"path": "bob.py", "old_text": "def hey(self, text):\n    return None", "new_text": "def hey(self, text):\n    return 'Fine.'"}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (code, _, stderr) = task.ask(&fake, "Fix hey", json!({}), None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        task.read("bob.py"),
        "class Bob:\n    def hey(self, text):\n        return 'Fine.'\n"
    );
    let output = tool_output(&fake.requests(), "c2");
    assert!(
        output.contains("matched line(s) 2–3") && output.contains("indentation"),
        "{output}"
    );
}

/// The benchmark's bottle-song: the model copied read_file's `L1: ` line numbers into
/// old_text and new_text. They are taken off both, and the result says so.
#[tokio::test]
async fn an_edit_with_the_line_numbers_of_read_file_is_applied_without_them() {
    let stub = "def recite(start, take=1):\n    pass\n";
    let task = Task::new(&[("bottle_song.py", stub)]);
    let fake = FakeProvider::start().await;
    fake.push(call(
        "c1",
        "edit_file",
        json!({"path": "bottle_song.py", "old_text": "L1: def recite(start, take=1):\nL2:     pass", "new_text": "L1: def recite(start, take=1):\nL2:     return []"}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (code, _, stderr) = task.ask(&fake, "Solve it", json!({}), None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        task.read("bottle_song.py"),
        "def recite(start, take=1):\n    return []\n"
    );
    let output = tool_output(&fake.requests(), "c1");
    assert!(output.contains("line numbers"), "{output}");
}

/// The benchmark's bottle-song: the model guessed a stub's text for old_text five times
/// and was stopped by the loop guard. A small file is shown whole in the not-found error,
/// with write_file named for replacing it.
#[tokio::test]
async fn an_edit_of_a_small_file_that_does_not_match_shows_the_file() {
    let stub = "def recite(start, take=1):\n    pass\n";
    let task = Task::new(&[("bottle_song.py", stub)]);
    let fake = FakeProvider::start().await;
    fake.push(call(
        "c1",
        "edit_file",
        json!({"path": "bottle_song.py", "old_text": "def recite(start, take):\n    return []", "new_text": "x"}),
    ));
    // Shown whole, the file counts as read: write_file over it is not refused.
    fake.push(call(
        "c2",
        "write_file",
        json!({"path": "bottle_song.py", "content": "def recite(start, take=1):\n    return []\n"}),
    ));
    fake.push(FakeProvider::openai_text(&["I wrote it."], None));
    let (code, _, stderr) = task.ask(&fake, "Implement recite", json!({}), None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        task.read("bottle_song.py"),
        "def recite(start, take=1):\n    return []\n",
        "{stderr}"
    );
    let output = tool_output(&fake.requests(), "c1");
    assert!(
        output.contains("old_text was not found")
            && output.contains(&format!(
                "--- bottle_song.py ---\n{stub}--- end of bottle_song.py ---"
            ))
            && output.contains("call write_file with the whole new content"),
        "{output}"
    );
}

/// A write cut by the output limit: its arguments are not JSON. The model is told the call
/// was cut and what to do; the request after it carries `{}` for those arguments (a server
/// that parses them, like llama.cpp's, refuses the request otherwise), so the turn goes on
/// and the session takes the next prompt.
#[tokio::test]
async fn a_call_cut_by_the_output_limit_never_breaks_the_session() {
    let task = Task::new(&[]);
    let fake = FakeProvider::start().await;
    fake.refuse_bad_arguments();
    fake.push(FakeProvider::openai_tool_calls(
        &[(
            "c1",
            "write_file",
            &["{\"path\": \"a.py\", \"content\": \"def f(x):\\n    return"],
        )],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["I will write less."], None));
    fake.push(FakeProvider::openai_text(&["Still here."], None));
    let (code, stdout, stderr) = task.ask(&fake, "Write a.py", json!({}), None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "I will write less.");
    let requests = fake.requests();
    let output = tool_output(&requests, "c1");
    assert!(
        output.contains("cut off") && output.contains("edit_file"),
        "{output}"
    );
    assert_eq!(
        requests[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|m| m["tool_calls"][0]["function"]["arguments"].as_str()),
        Some("{}")
    );
    let session = session_of(&stderr);
    let (code, stdout, stderr) = task
        .ask(&fake, "Are you there?", json!({}), Some(&session))
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "Still here.");
}

/// With `checks.afterEdit` a command runs after each change and its failure comes back
/// with the change's result: the model learns its change broke the tests in the same step.
#[tokio::test]
async fn the_check_after_a_change_reports_its_failure() {
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(call("c1", "read_file", json!({"path": "bob.py"})));
    fake.push(edit_to_whatever("c2"));
    fake.push(call(
        "c3",
        "edit_file",
        json!({"path": "bob.py", "old_text": "'Whatever.'", "new_text": "'Fine.'"}),
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    // A check that fails while the file says Whatever, passes once it says Fine.
    let check = json!({"checks": {"afterEdit": "grep -q Fine bob.py || { echo 'FAILED test_bob: expected Fine'; exit 1; }"}});
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", check, None).await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    let failed = tool_output(&requests, "c2");
    assert!(
        failed.contains("Edited bob.py")
            && failed.contains("failed (exit 1)")
            && failed.contains("FAILED test_bob: expected Fine"),
        "{failed}"
    );
    let passed = tool_output(&requests, "c3");
    assert!(passed.contains("passed]"), "{passed}");
    // A read is no change: no check after it.
    assert!(!tool_output(&requests, "c1").contains("check after"));
}

/// The small model read the failure in its change's result and answered "Done.": the turn
/// goes on with a reminder, and the model's next change makes the check pass. Where it
/// cannot, the turn goes on twice at most; `reminders.failingCheck: false` ends it at once.
#[tokio::test]
async fn a_turn_ending_on_a_failing_check_goes_on_to_fix_it() {
    let task = Task::new(&[("bob.py", STUB)]);
    let check = "grep -q Fine bob.py || { echo 'FAILED test_bob: expected Fine'; exit 1; }";
    let settings = json!({"checks": {"afterEdit": check}, "reminders": {"failingCheck": true}});
    let fake = FakeProvider::start().await;
    fake.push(edit_to_whatever("c1"));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    fake.push(call(
        "c2",
        "edit_file",
        json!({"path": "bob.py", "old_text": "'Whatever.'", "new_text": "'Fine.'"}),
    ));
    fake.push(FakeProvider::openai_text(&["Fixed."], None));
    let (code, stdout, stderr) = task.ask(&fake, "Solve bob.py", settings, None).await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 4, "{stdout}");
    let third = requests[2].body["messages"].to_string();
    assert!(third.contains("still fails"), "{third}");
    assert!(tool_output(&requests, "c2").contains("passed]"));
    assert!(stdout.contains("Fixed."), "{stdout}");
    assert!(task.read("bob.py").contains("Fine"));

    // A check it cannot pass: two reminders, then the turn ends.
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(edit_to_whatever("c1"));
    for _ in 0..4 {
        fake.push(FakeProvider::openai_text(&["Done."], None));
    }
    let settings = json!({"checks": {"afterEdit": check}, "reminders": {"failingCheck": true}});
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", settings, None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(fake.requests().len(), 4);

    // Off: the turn ends on the model's answer.
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(edit_to_whatever("c1"));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let settings = json!({"checks": {"afterEdit": check}, "reminders": {"failingCheck": false}});
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", settings, None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(fake.requests().len(), 2);
}

/// The small model writes its solution as a file listing (the path, then the whole file in
/// a fenced block), as it writes code best: the listing is the `write_file` it stands for,
/// checked after the change, and the turn goes on while the check fails. Code shown for a
/// file that neither exists nor is named, or cut by the output limit, writes nothing; with
/// `tools.fileListings: false` the listing is only text.
#[tokio::test]
async fn a_file_listing_in_the_reply_writes_the_file() {
    let check = "grep -q Fine bob.py || { echo 'FAILED test_bob: expected Fine'; exit 1; }";
    let listing = |text: &str| {
        format!(
            "Here it is.\n\nbob.py\n```python\ndef response(hey_bob):\n    return '{text}'\n```\n"
        )
    };
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&[&listing("Whatever.")], None));
    fake.push(FakeProvider::openai_text(
        &[&format!(
            "{}\nexample.py\n```python\nprint(1)\n```\n",
            listing("Fine.")
        )],
        None,
    ));
    let settings = json!({
        "provider": {"profile": "small"},
        "checks": {"afterEdit": check},
    });
    let (code, stdout, stderr) = task
        .ask_with(&fake, "Solve bob.py", settings, None, &["--file", "bob.py"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{stdout}");
    // The check's failure reached the model (in the fresh attempt's request).
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("FAILED test_bob: expected Fine"),
        "{second}"
    );
    assert_eq!(
        task.read("bob.py"),
        "def response(hey_bob):\n    return 'Fine.'\n"
    );
    assert!(!task.root.join("example.py").exists());
    assert!(stderr.contains("Write bob.py"), "{stderr}");

    // Cut by the output limit: the half file is not written, and a fresh attempt is told so.
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    let cut = "bob.py\n```python\ndef response(hey_bob):\n    return 1\n    return 1\n";
    fake.push(FakeProvider::openai_text(&[cut], None));
    fake.push(FakeProvider::openai_text(&["I could not."], None));
    let settings = json!({"provider": {"profile": "small"}});
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", settings, None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(task.read("bob.py"), STUB);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let fresh = requests[1].body["messages"].to_string();
    assert!(
        fresh.contains("cut by the output limit inside the listing of bob.py"),
        "{fresh}"
    );
    assert!(!fresh.contains("return 1"), "{fresh}");

    // Off: text only.
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&[&listing("Fine.")], None));
    let settings = json!({"provider": {"profile": "small"}, "tools": {"fileListings": false}});
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", settings, None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(task.read("bob.py"), STUB);
}

/// A small model shown the file it is asked to change is offered no tools (it would read
/// that file again and describe it), and answers with a listing. When the listing fails the
/// check, the next request leaves the failed file out, says how it failed and samples at
/// 0.7: shown its failed file, the model writes it again. Three fresh attempts at most.
#[tokio::test]
async fn a_failed_listing_is_tried_again_fresh_without_the_failed_file() {
    let check = "grep -q Fine bob.py || { echo 'FAILED test_bob: expected Fine'; exit 1; }";
    let listing = |text: &str| {
        format!("bob.py\n```python\ndef response(hey_bob):\n    return '{text}'\n```\n")
    };
    let settings = json!({"provider": {"profile": "small"}, "checks": {"afterEdit": check}});
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&[&listing("Whatever.")], None));
    fake.push(FakeProvider::openai_text(&[&listing("Fine.")], None));
    let (code, stdout, stderr) = task
        .ask_with(
            &fake,
            "Solve bob.py",
            settings.clone(),
            None,
            &["--file", "bob.py"],
        )
        .await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{stdout}");
    assert!(
        requests[0].body.get("tools").is_none(),
        "{}",
        requests[0].body
    );
    assert_eq!(requests[0].body["temperature"], json!(0.0));
    let fresh = requests[1].body["messages"].to_string();
    assert!(!fresh.contains("Whatever."), "{fresh}");
    assert!(
        fresh.contains("A fresh attempt") && fresh.contains("expected Fine"),
        "{fresh}"
    );
    assert!(fresh.contains("Write bob.py again"), "{fresh}");
    assert_eq!(requests[1].body["temperature"], json!(0.7));
    assert!(task.read("bob.py").contains("Fine."));

    // A listing that never passes: three fresh attempts (the same file again is refused),
    // then the turn ends.
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    for _ in 0..6 {
        fake.push(FakeProvider::openai_text(&[&listing("Whatever.")], None));
    }
    let (code, _, stderr) = task
        .ask_with(&fake, "Solve bob.py", settings, None, &["--file", "bob.py"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(fake.requests().len(), 4);

    // The next turn of the session: the model copies its last file from the history, which
    // is refused as changing nothing; that is a failed attempt too.
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&[&listing("Whatever.")], None));
    let no_check = json!({"provider": {"profile": "small"}});
    let (code, _, stderr) = task
        .ask_with(&fake, "Solve bob.py", no_check, None, &["--file", "bob.py"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let session = session_of(&stderr);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&[&listing("Whatever.")], None));
    fake.push(FakeProvider::openai_text(&[&listing("Fine.")], None));
    let settings = json!({"provider": {"profile": "small"}, "checks": {"afterEdit": check}});
    let (code, _, stderr) = task
        .ask_with(
            &fake,
            "Solve bob.py: FAILED test_bob",
            settings,
            Some(&session),
            &["--file", "bob.py"],
        )
        .await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let fresh = requests[1].body["messages"].to_string();
    assert!(
        fresh.contains("already holds exactly this content"),
        "{fresh}"
    );
    assert!(task.read("bob.py").contains("Fine."));
}

/// With `editorContext.attachTests`, a small model asked to change the file it is shown
/// whole gets that file's tests attached (it is offered no tools to read them): the names,
/// values and messages the code must have, once a session. A question attaches nothing,
/// nor does the default.
#[tokio::test]
async fn a_change_to_the_active_file_attaches_its_tests() {
    let tests = "from bob import response\n\ndef test_shout():\n    assert response('HEY') == 'Whoa, chill out!'\n";
    let cases = [
        ("Solve bob.py", true, true),
        ("What does bob.py hold?", true, false),
        ("Solve bob.py", false, false),
    ];
    let settings = |attach_tests: bool| {
        json!({
            "provider": {"profile": "small"},
            "checks": {"afterEdit": "off"},
            "editorContext": {"attachTests": attach_tests},
        })
    };
    let answering = || async {
        let fake = FakeProvider::start().await;
        fake.push(FakeProvider::openai_text(&["It holds a stub."], None));
        fake.push(FakeProvider::openai_text(&["It holds a stub."], None));
        fake
    };
    for (prompt, attach_tests, attached) in cases {
        let task = Task::new(&[("bob.py", STUB), ("bob_test.py", tests)]);
        let fake = answering().await;
        let (code, _, stderr) = task
            .ask_with(
                &fake,
                prompt,
                settings(attach_tests),
                None,
                &["--file", "bob.py"],
            )
            .await;
        assert_eq!(code, 0, "{stderr}");
        let first = fake.requests()[0].body["messages"].to_string();
        assert_eq!(
            first.contains("bob_test.py") && first.contains("Whoa, chill out!"),
            attached,
            "{prompt}: {first}"
        );
        if !attached {
            continue;
        }
        // The next change request of the session: the model has them already.
        let session = session_of(&stderr);
        let fake = answering().await;
        let (code, _, stderr) = task
            .ask_with(
                &fake,
                "Fix bob.py",
                settings(true),
                Some(&session),
                &["--file", "bob.py"],
            )
            .await;
        assert_eq!(code, 0, "{stderr}");
        let next = fake.requests()[0].body["messages"].to_string();
        assert_eq!(next.matches("Whoa, chill out!").count(), 1, "{next}");
    }
}

/// The small model often lists the file it was asked to change under no path, or under the
/// name of its prompt's example: a block that defines every function the file in view (shown
/// whole) defines is that file. A snippet that only calls them writes nothing.
#[tokio::test]
async fn a_block_under_no_path_or_a_made_up_one_is_the_file_in_view() {
    let solved = "def response(hey_bob):\n    return 'Fine.'\n";
    let replies = [
        (format!("Here it is:\n```python\n{solved}```\n"), true),
        (format!("greeting.py\n```python\n{solved}```\n"), true),
        (
            "Use it so:\n```python\nprint(response('Hi'))\n```\n".to_string(),
            false,
        ),
    ];
    for (reply, writes) in replies {
        let task = Task::new(&[("bob.py", STUB)]);
        let fake = FakeProvider::start().await;
        fake.push(FakeProvider::openai_text(&[&reply], None));
        fake.push(FakeProvider::openai_text(&["Done."], None));
        let settings = json!({"provider": {"profile": "small"}, "checks": {"afterEdit": "off"}});
        let (code, _, stderr) = task
            .ask_with(&fake, "Solve bob.py", settings, None, &["--file", "bob.py"])
            .await;
        assert_eq!(code, 0, "{stderr}");
        let expected = if writes { solved } else { STUB };
        assert_eq!(task.read("bob.py"), expected, "{reply}");
        assert!(!task.root.join("greeting.py").exists());
    }
}

/// A listing whose check never finishes (the model's code loops forever) is a failed
/// attempt like one whose check fails: the check is stopped at `checks.timeoutMs`, and the
/// fresh attempt is told it did not finish.
#[tokio::test]
async fn a_check_that_does_not_finish_is_a_failed_attempt() {
    let check = "grep -q Fine bob.py || sleep 600";
    let listing = |text: &str| {
        format!("bob.py\n```python\ndef response(hey_bob):\n    return '{text}'\n```\n")
    };
    let settings = json!({
        "provider": {"profile": "small"},
        "checks": {"afterEdit": check, "timeoutMs": 1000},
    });
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&[&listing("Whatever.")], None));
    fake.push(FakeProvider::openai_text(&[&listing("Fine.")], None));
    let (code, stdout, stderr) = task
        .ask_with(&fake, "Solve bob.py", settings, None, &["--file", "bob.py"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{stdout}");
    let fresh = requests[1].body["messages"].to_string();
    assert!(
        fresh.contains("A fresh attempt") && fresh.contains("did not finish in 1 s"),
        "{fresh}"
    );
    assert!(!fresh.contains("Whatever."), "{fresh}");
    assert!(task.read("bob.py").contains("Fine."));
}

/// The small model's loop on an exercise: read the file, make an edit that changes nothing,
/// read it again, the same edit again… Each call repeats with the same result though never
/// twice in a row: the model is reminded at the third, and the turn stops at the fifth
/// instead of running to `maxSteps`.
#[tokio::test]
async fn a_cycle_of_calls_that_change_nothing_is_stopped() {
    let task = Task::new(&[("bob.py", STUB)]);
    let fake = FakeProvider::start().await;
    let same = json!({"path": "bob.py", "old_text": "    pass", "new_text": "    pass"});
    for round in 0..6 {
        fake.push(call(
            &format!("r{round}"),
            "read_file",
            json!({"path": "bob.py"}),
        ));
        fake.push(call(&format!("e{round}"), "edit_file", same.clone()));
    }
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (code, _, stderr) = task.ask(&fake, "Solve bob.py", json!({}), None).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("read_file 5 times with the same arguments and got the same result"),
        "{stderr}"
    );
    let requests = fake.requests();
    // r0..r4 ran (r4 refused), e0..e3 ran: 9 model calls, not 50.
    assert_eq!(requests.len(), 9);
    let last = requests.last().unwrap().body.to_string();
    assert!(
        last.contains("3 times with the same arguments"),
        "the reminder came first"
    );
}

/// The small model's commonest ending on an exercise: it reads the stub it was asked to
/// change, then answers with a sentence. With `reminders.unfinishedChange` (what `./run`
/// gives its local model) the turn goes on once with a reminder, and the model makes the
/// change; without it, the turn ends there.
#[tokio::test]
async fn a_turn_asked_for_a_change_that_made_none_goes_on_once() {
    let solved = "def response(hey_bob):\n    return 'Whatever.'\n";
    for on in [true, false] {
        let task = Task::new(&[("bob.py", STUB)]);
        let fake = FakeProvider::start().await;
        fake.push(call("c1", "read_file", json!({"path": "bob.py"})));
        fake.push(FakeProvider::openai_text(&["The game ends."], None));
        fake.push(call(
            "c2",
            "write_file",
            json!({"path": "bob.py", "content": solved}),
        ));
        fake.push(FakeProvider::openai_text(&["Done."], None));
        // A second answer without a change ends the turn: the reminder comes once.
        fake.push(FakeProvider::openai_text(&["Really done."], None));
        let settings = json!({"reminders": {"unfinishedChange": on}});
        let (code, stdout, stderr) = task
            .ask(
                &fake,
                "Modify bob.py to solve the exercise.",
                settings,
                None,
            )
            .await;
        assert_eq!(code, 0, "{stderr}");
        let requests = fake.requests();
        if on {
            assert_eq!(task.read("bob.py"), solved);
            assert_eq!(requests.len(), 4, "{stdout}");
            let third = requests[2].body.to_string();
            assert!(third.contains("without having changed any file"), "{third}");
        } else {
            assert_eq!(task.read("bob.py"), STUB);
            assert_eq!(requests.len(), 2);
        }
    }
}
