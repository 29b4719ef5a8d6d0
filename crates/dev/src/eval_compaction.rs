//! `agentls-dev eval-compaction`: how much of what matters survives compaction. Synthetic long
//! sessions are driven through the real agent loop (real tools in a temporary workspace,
//! the fake provider on loopback speaking the real wire format), with needles planted on
//! the way: files created and edited, error strings, exit codes, user constraints,
//! approvals, plan items, the latest request. Each session is compacted 1..N times (more
//! turns in between) with (a) a summarizer that answers a deliberately poor, generic
//! summary and (b) an extractive summarizer answering the real prompt from the request it
//! receives; recall per category is measured in the rebuilt context, with its size as a
//! share of the window.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::fake_provider::{FakeProvider, Reply};
use agentls::agent::Agent;
use agentls::host::{Host, Notice, PermissionOutcome, PermissionRequest};
use agentls_core::config::Config;
use agentls_core::history::model_text;
use agentls_core::prompts::Prompts;

pub struct EvalOptions {
    pub sessions: usize,
    pub compactions: usize,
    /// Turns before the first compaction, and between two.
    pub turns: usize,
    pub context_window: usize,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            sessions: 3,
            compactions: 5,
            turns: 4,
            context_window: 32_000,
        }
    }
}

pub const CATEGORIES: [&str; 7] = [
    "files",
    "errors",
    "exitCodes",
    "constraints",
    "approvals",
    "plan",
    "latestRequest",
];

/// Recall after compaction `k` (1-based) for one summarizer.
#[derive(Debug, Clone, Default)]
pub struct Round {
    /// Category → (found, planted).
    pub recall: BTreeMap<&'static str, (usize, usize)>,
    /// The same with the ledger block cut out of the context: what the summary and the
    /// kept messages alone carry (the ledger's share is the difference).
    pub recall_without_ledger: BTreeMap<&'static str, (usize, usize)>,
    /// Request tokens after compaction / window, worst session.
    pub max_fill_after: f64,
    /// Whether any compaction made the history larger.
    pub grew: bool,
    pub strategies: BTreeMap<String, usize>,
}

pub struct EvalReport {
    /// (summarizer, rounds)
    pub summarizers: Vec<(&'static str, Vec<Round>)>,
}

struct EvalHost {
    config: Config,
    prompts: Arc<Prompts>,
    root: PathBuf,
    /// (turn id, stop reason) of each turnEnd.
    ends: tokio::sync::mpsc::UnboundedSender<(String, String)>,
}

#[tower_lsp::async_trait]
impl Host for EvalHost {
    fn config(&self) -> Config {
        self.config.clone()
    }
    fn prompts(&self) -> Arc<Prompts> {
        self.prompts.clone()
    }
    fn roots(&self) -> Vec<PathBuf> {
        vec![self.root.clone()]
    }
    async fn request_permission(&self, _request: PermissionRequest) -> PermissionOutcome {
        // The user says "always" the first time: the approval is a needle.
        PermissionOutcome {
            kind: "allowAlways".into(),
        }
    }
    fn notify(&self, notice: Notice) {
        if let Notice::Update {
            turn_id,
            update: agentls_core::updates::Update::TurnEnd { stop_reason, .. },
            ..
        } = notice
        {
            let _ = self.ends.send((turn_id, stop_reason.name().to_string()));
        }
    }
    fn progress(&self, _id: &str, _title: &str, _end: Option<String>) {}
    fn show_warning(&self, message: String) {
        eprintln!("{message}");
    }
}

/// What one synthetic session planted so far.
#[derive(Default)]
struct Needles {
    by_category: BTreeMap<&'static str, Vec<String>>,
}

impl Needles {
    fn set(&mut self, category: &'static str, values: Vec<String>) {
        self.by_category.insert(category, values);
    }
    fn add(&mut self, category: &'static str, value: String) {
        self.by_category.entry(category).or_default().push(value);
    }
}

/// The tool calls of synthetic turn `k` of session `s`, as one model step, and the needles
/// they plant.
fn turn_reply(s: usize, k: usize, needles: &mut Needles) -> Reply {
    let created = format!("src/gen_{s}_{k}.rs");
    let code = k % 5 + 1;
    let error = format!(
        "FAILED: test_case_{s}_{k} panicked at src/tests.rs:{}",
        10 + k
    );
    let shell = format!("echo '{error}' >&2; exit {code}");
    let plan = json!({"entries": [
        {"content": format!("step {k}: port function f{k}"), "status": "in_progress"},
        {"content": format!("step {}: port function f{}", k + 1, k + 1), "status": "pending"},
    ]});
    needles.add("files", created.clone());
    needles.set("errors", vec![error]);
    needles.set("exitCodes", vec![format!("exit {code}")]);
    needles.set(
        "plan",
        vec![
            format!("step {k}: port function f{k}"),
            format!("step {}: port function f{}", k + 1, k + 1),
        ],
    );
    let calls = [
        (
            "read",
            "read_file".to_string(),
            json!({"path": "src/noise.rs"}),
        ),
        (
            "write",
            "write_file".to_string(),
            json!({"path": created, "content": format!("pub fn f{k}() -> u32 {{ {k} }}\n")}),
        ),
        (
            "edit",
            "edit_file".to_string(),
            json!({"path": format!("src/lib_{s}.rs"), "old_text": format!("= {k};"), "new_text": format!("= {};", k + 1)}),
        ),
        ("shell", "shell".to_string(), json!({"command": shell})),
        ("plan", "update_plan".to_string(), plan),
    ];
    let owned: Vec<(String, String, String)> = calls
        .iter()
        .map(|(id, name, args)| (format!("{id}_{s}_{k}"), name.clone(), args.to_string()))
        .collect();
    FakeProvider::openai_whole_tool_calls(&owned, None)
}

fn user_message(s: usize, k: usize) -> String {
    if k == 0 {
        format!(
            "We are porting session {s}'s parser. Never change the public API of src/api_{s}.rs. \
             Always run cargo fmt before finishing. Start with step 0."
        )
    } else {
        format!("Continue with step {k} of session {s}, and report what failed.")
    }
}

/// The extractive summarizer: a handoff written from what the request holds (the user's
/// messages and the last lines of tool outputs), the way a decent model would.
fn extractive_summary(body: &Value) -> Reply {
    let mut lines = vec![
        "# Compaction Handoff".to_string(),
        "## Current objective".to_string(),
    ];
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for message in &messages {
        let content = message["content"].as_str().unwrap_or("");
        if message["role"] == "user" && !content.contains("CONTEXT CHECKPOINT COMPACTION") {
            if let Some(typed) = content.rsplit("\n\n").next() {
                lines.push(format!("- {}", typed.chars().take(300).collect::<String>()));
            }
        }
    }
    lines.push("## Actions already taken".into());
    lines.push("[Done] ported the earlier steps".into());
    lines.push("[Next] continue with the next step".into());
    FakeProvider::openai_text(&[&lines.join("\n")], Some((1000, 200)))
}

fn poor_summary(_body: &Value) -> Reply {
    FakeProvider::openai_text(
        &["I worked on some files and ran some commands."],
        Some((1000, 12)),
    )
}

pub async fn run(options: &EvalOptions) -> Result<EvalReport, String> {
    let mut summarizers = Vec::new();
    for (name, summarizer) in [
        (
            "poor",
            Arc::new(poor_summary) as crate::fake_provider::Responder,
        ),
        (
            "extractive",
            Arc::new(extractive_summary) as crate::fake_provider::Responder,
        ),
    ] {
        let mut rounds = vec![Round::default(); options.compactions];
        for s in 0..options.sessions {
            run_session(options, s, summarizer.clone(), &mut rounds).await?;
        }
        summarizers.push((name, rounds));
    }
    Ok(EvalReport { summarizers })
}

async fn run_session(
    options: &EvalOptions,
    s: usize,
    summarizer: crate::fake_provider::Responder,
    rounds: &mut [Round],
) -> Result<(), String> {
    let dir = tempfile_dir(s)?;
    let root = dir.join("project");
    let fake = FakeProvider::start().await;
    fake.respond_to("CONTEXT CHECKPOINT COMPACTION", summarizer);
    let settings = json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "eval-model", "contextWindow": options.context_window, "maxRetries": 0},
        "stateDir": dir.join("state"),
        "approval": "ask",
        // Compactions happen when the eval says, not at the threshold.
        "compaction": {"auto": false},
    });
    let (config, update) = Config::from_settings(&Config::default(), &settings);
    if let Some(problem) = update.problems.first() {
        return Err(format!("{}: {}", problem.key, problem.message));
    }
    let (ends_tx, mut ends) = tokio::sync::mpsc::unbounded_channel();
    let host = Arc::new(EvalHost {
        config,
        prompts: Arc::new(Prompts::builtin()),
        root: root.canonicalize().map_err(|e| e.to_string())?,
        ends: ends_tx,
    });
    let agent = Agent::new(host.clone());
    let session = agent.new_session(None).await.map_err(|e| e.message)?;
    let mut needles = planted(s);
    let mut k = 0;
    let mut result = Ok(());
    for round in rounds.iter_mut() {
        for _ in 0..options.turns {
            fake.push(turn_reply(s, k, &mut needles));
            fake.push(FakeProvider::openai_text(
                &[&format!(
                    "Step {k} is ported; test_case_{s}_{k} still fails."
                )],
                None,
            ));
            let text = user_message(s, k);
            needles.set("latestRequest", vec![text.clone()]);
            let stop = one_turn(&agent, &session, text, &mut ends).await?;
            if stop != "endTurn" {
                result = Err(format!("session {s} turn {k} ended with {stop}"));
            }
            k += 1;
        }
        compact_and_score(&agent, &session, options, &needles, round).await?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// What the eval plants before the first turn: the user's constraints, the approvals given
/// and the first file.
fn planted(s: usize) -> Needles {
    let mut needles = Needles::default();
    needles.set(
        "constraints",
        vec![
            format!("Never change the public API of src/api_{s}.rs."),
            "Always run cargo fmt before finishing.".into(),
        ],
    );
    needles.set(
        "approvals",
        vec![
            "always allowed for this session: write_file".into(),
            "always allowed for this session: edit_file".into(),
            "always allowed for this session: shell commands starting `echo`".into(),
        ],
    );
    needles.add("files", format!("src/lib_{s}.rs"));
    needles
}

/// Compacts `session` and adds to `round` what survived: each category's recall with and
/// without the ledger, the fill after, whether it grew, the strategy.
async fn compact_and_score(
    agent: &Arc<Agent>,
    session: &str,
    options: &EvalOptions,
    needles: &Needles,
    round: &mut Round,
) -> Result<(), String> {
    let outcome = agent.compact(session, None).await.map_err(|e| e.message)?;
    round.grew |= outcome.tokens_after >= outcome.tokens_before;
    *round
        .strategies
        .entry(outcome.strategy.clone())
        .or_default() += 1;
    let (history, _, _) = agent.history_of(session).await.map_err(|e| e.message)?;
    let prompts = Prompts::builtin();
    let context: String = history
        .entries()
        .iter()
        .map(|e| model_text(&e.item, &prompts).into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    // The whole request: the history plus the static prefix (system prompt, tools).
    let fill = (history.tokens() + static_tokens(&history)) as f64 / options.context_window as f64;
    round.max_fill_after = round.max_fill_after.max(fill);
    let without_ledger = cut_ledger(&context);
    for category in CATEGORIES {
        let planted = needles
            .by_category
            .get(category)
            .cloned()
            .unwrap_or_default();
        for (text, recall) in [
            (&context, &mut round.recall),
            (&without_ledger, &mut round.recall_without_ledger),
        ] {
            let found = planted.iter().filter(|n| text.contains(n.as_str())).count();
            let entry = recall.entry(category).or_insert((0, 0));
            entry.0 += found;
            entry.1 += planted.len();
        }
    }
    Ok(())
}

fn cut_ledger(context: &str) -> String {
    let mut out = String::with_capacity(context.len());
    let mut rest = context;
    while let Some(start) = rest.find("<ledger>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</ledger>") {
            Some(end) => rest = &rest[start + end + "</ledger>".len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Tokens of the static prefix (tools and system prompt) as assembled for any request.
fn static_tokens(history: &agentls_core::history::History) -> usize {
    let prompts = Prompts::builtin();
    let static_context = agentls_core::context::StaticContext {
        tools: prompts.tools.clone(),
        system_prompt: prompts.system.clone(),
        ..Default::default()
    };
    agentls_core::context::static_tokens(
        &static_context,
        history.tokenizer(),
        &prompts,
        &mut agentls_core::tokens::CountCache::default(),
    )
}

async fn one_turn(
    agent: &Arc<Agent>,
    session: &str,
    text: String,
    ends: &mut tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
) -> Result<String, String> {
    let turn = agent
        .prompt(session, text, None)
        .await
        .map_err(|e| e.message)?;
    loop {
        match ends.recv().await {
            Some((turn_id, stop)) if turn_id == turn => return Ok(stop),
            Some(_) => continue,
            None => return Err("the agent stopped".into()),
        }
    }
}

fn tempfile_dir(s: usize) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("agentls-eval-{}-{s}", std::process::id()));
    let root = dir.join("project/src");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    std::fs::write(
        root.join(format!("lib_{s}.rs")),
        format!("pub const STEP_{s}: u32 = 0;\n"),
    )
    .map_err(|e| e.to_string())?;
    let noise: String = (0..120)
        .map(|i| format!("fn noise_{i}(x: u32) -> u32 {{ x.wrapping_mul({i}).rotate_left(3) }}\n"))
        .collect();
    std::fs::write(root.join("noise.rs"), noise).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Recall of `category` in percent (100 when nothing was planted).
pub fn percent(recall: &BTreeMap<&'static str, (usize, usize)>, category: &str) -> f64 {
    let (found, planted) = recall.get(category).copied().unwrap_or((0, 0));
    if planted == 0 {
        100.0
    } else {
        found as f64 * 100.0 / planted as f64
    }
}

pub fn print(options: &EvalOptions, report: &EvalReport) {
    println!(
        "compaction eval: {} sessions × {} compactions, {} turns before each (5 tool calls per turn), window {} tokens",
        options.sessions, options.compactions, options.turns, options.context_window
    );
    for (name, rounds) in &report.summarizers {
        println!("summarizer: {name}");
        print!("  {:<12}", "compaction");
        for category in CATEGORIES {
            print!(" {category:>13}");
        }
        println!(" {:>10} {:>6}  strategies", "fill after", "grew");
        for (i, round) in rounds.iter().enumerate() {
            print!("  {:<12}", format!("{} no ledger", i + 1));
            for category in CATEGORIES {
                print!(
                    " {:>12.0}%",
                    percent(&round.recall_without_ledger, category)
                );
            }
            println!();
            print!("  {:<12}", i + 1);
            for category in CATEGORIES {
                print!(" {:>12.0}%", percent(&round.recall, category));
            }
            let strategies: Vec<String> = round
                .strategies
                .iter()
                .map(|(s, n)| format!("{s}×{n}"))
                .collect();
            println!(
                " {:>9.0}% {:>6}  {}",
                round.max_fill_after * 100.0,
                if round.grew { "yes" } else { "no" },
                strategies.join(", ")
            );
        }
    }
}
