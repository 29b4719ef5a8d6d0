//! What every tool declares, and the registry the turn finds them in. A tool is one file: a unit struct
//! implementing [`Tool`] (its name, kind, title, what the ledger records of it, its typed
//! input and how it runs), listed in `tools::builtin`. Its description and JSON
//! Schema for the model are in `prompts/tools.json` (model-facing text lives in `prompts/`);
//! `schema_check` holds that schema equal to the one derived from the tool's input type,
//! field by field.
//!
//! The turn (`agent::tool_calls`) drives every call the same way, through [`AnyTool`]: parse
//! the arguments into the tool's input (a bad argument is refused here, before anyone is
//! asked), `prepare` (an edit is planned and its diff computed), the approval gate, `run`,
//! then the call's [`Effect`] on the turn. A tool never asks for approval, never writes the
//! session log and never talks to the editor except through [`ToolContext`].

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use agentls_core::subagents::Subagent;
use agentls_core::tool_info::{shorten, LedgerRecord, PlanEntry, ToolCatalog, ToolKind};

use crate::host::{FileChange, Host};
use crate::tools::boundary::PathBoundary;
use crate::tools::input::{self, ArgumentProblem};

/// What a tool call may use while it runs.
pub struct ToolContext {
    /// The session and the call this context is for.
    pub session_id: String,
    pub call_id: String,
    pub boundary: PathBoundary,
    pub host: Arc<dyn Host>,
    pub cancel: CancellationToken,
    /// Environment variables a command must not see (the provider's key).
    pub hidden_env: Vec<String>,
    /// Streams partial output to the editor as it comes (the shell's).
    pub on_output: Arc<dyn Fn(&str) + Send + Sync>,
    /// Runs subagents (`task`); None where no subagent may start (inside a subagent).
    pub subagents: Option<Arc<dyn SubagentRunner>>,
    /// What the window has left for this call's output, in the session's tokens: a tool
    /// that can return less (a `read_file` page) fits it; the recorded output is cut to it
    /// in any case.
    pub output_budget: Option<OutputBudget>,
    /// The sandbox a command of this call runs in; None: unconfined (the sandbox is off,
    /// cannot be had, or the user let this command out).
    pub sandbox: Option<agentls_core::sandbox::SandboxPolicy>,
    /// How the session's model counts an image, when it takes images (`provider.images`);
    /// None: it sees text only, and `read_file` refuses an image as binary.
    pub images: Option<agentls_core::image::TokenFormula>,
    /// What the session's model has read of each file: a change to a file it has not read
    /// (or read in an older version) is refused (`tools.readBeforeWrite`); None: no such rule.
    pub reads: Option<Arc<std::sync::Mutex<agentls_core::file_reads::FileReads>>>,
    /// The session's background commands (`shell` with `background: true`, `shell_output`,
    /// `shell_kill`).
    pub background: Arc<crate::tools::background::Commands>,
}

/// Tokens an output may take, counted with the session's tokenizer.
#[derive(Debug, Clone, Copy)]
pub struct OutputBudget {
    pub tokens: usize,
    pub tokenizer: agentls_core::tokens::TokenizerKind,
}

/// What a child turn brought back.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildOutcome {
    /// Its final message, or why it failed.
    pub answer: Result<String, String>,
    /// Files it changed (as shown to the model).
    pub changed: Vec<String>,
}

/// Runs subagents for one `task` call (its id and the parent's turn are the runner's). Here,
/// beside the [`ToolContext`] that carries it: `task` builds on the registry, not the other
/// way round.
#[async_trait::async_trait]
pub trait SubagentRunner: Send + Sync {
    /// The subagents this turn offers.
    fn agents(&self) -> &[Subagent];
    async fn run(&self, agent: &Subagent, prompt: &str) -> ChildOutcome;
}

/// The work a tool did before the approval, handed to its `run`.
#[derive(Debug, Default)]
pub enum Prepared {
    #[default]
    Nothing,
    /// A planned change of one file or several (a rename): the host applies each; the
    /// diff is shown in the approval.
    Change {
        changes: Vec<FileChange>,
        diff: String,
        /// What the model is told once the change is applied.
        summary: String,
    },
}

impl Prepared {
    pub fn diff(&self) -> Option<&str> {
        match self {
            Prepared::Nothing => None,
            Prepared::Change { diff, .. } => Some(diff),
        }
    }

    /// The files a planned change changes (none for a call that changes nothing).
    pub fn changes(&self) -> &[FileChange] {
        match self {
            Prepared::Nothing => &[],
            Prepared::Change { changes, .. } => changes,
        }
    }
}

/// What a call did to the turn beyond its output.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Files were changed (the paths as shown to the model), for the progress log.
    Changed(Vec<String>),
    /// A command ran: what was learned (for the progress log) and the files it changed in the
    /// workspace (for the ledger, through a `FilesChanged` event).
    Ran {
        evidence: String,
        changed: Vec<agentls_core::event::ChangedPath>,
    },
    /// The model's plan: recorded as an event and sent to the editor.
    Plan(Vec<PlanEntry>),
    /// Files a background command changed, found when its output was read: recorded for
    /// the ledger under the command (not the reading call).
    BackgroundChanged {
        command: String,
        changed: Vec<agentls_core::event::ChangedPath>,
    },
    /// Files a subagent changed: recorded for the session's ledger.
    SubagentChanged { agent: String, files: Vec<String> },
    /// Images the model sees after the call's output (`read_file` of an image).
    Images(Vec<agentls_core::image::Image>),
    /// A review's finding (`report_finding`): published by the host, listed at the turn's end.
    Finding(agentls_core::review::Finding),
}

/// A call's result: the output the model reads, whether it succeeded, and its effect.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub output: String,
    pub success: bool,
    pub effect: Option<Effect>,
    /// Why the command sandbox likely stopped this call (a denied write, no network, a
    /// protected path it created): the turn asks the user whether to run it outside.
    pub sandbox_denied: Option<String>,
}

impl ToolOutcome {
    pub fn ok(output: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            output: output.into(),
            success: true,
            effect: None,
            sandbox_denied: None,
        }
    }

    pub fn failed(output: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            output: output.into(),
            success: false,
            effect: None,
            sandbox_denied: None,
        }
    }

    pub fn from_result(result: Result<String, agentls_core::tool_info::ToolError>) -> Self {
        match result {
            Ok(output) => ToolOutcome::ok(output),
            Err(err) => ToolOutcome::failed(err.0),
        }
    }

    pub fn with_effect(mut self, effect: Effect) -> ToolOutcome {
        self.effect = Some(effect);
        self
    }
}

/// A tool, as its file writes it: the arguments arrive parsed into `Input`.
#[async_trait::async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by (its entry in `prompts/tools.json`).
    const NAME: &'static str;
    /// Its arguments; `prompts/tools.json` describes the same fields to the model.
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    fn kind(&self) -> ToolKind;
    /// The kind of one call, when its arguments decide it (`lsp`'s `rename` is an edit):
    /// the approval gate and plan mode go by it.
    fn call_kind(&self, _arguments: &Value) -> ToolKind {
        self.kind()
    }
    /// A short title for the call's row in the UI, from the model's arguments as they came
    /// (the call is shown before they are checked, so they may be anything: a missing field
    /// gives a vaguer title, never a panic).
    fn title(&self, arguments: &Value) -> String;
    /// What the ledger keeps of a successful call.
    fn ledger_record(&self) -> LedgerRecord {
        LedgerRecord::Nothing
    }
    /// The command line the approval rules match by prefix (the shell's); read after the
    /// arguments parsed.
    fn command<'a>(&self, _arguments: &'a Value) -> Option<&'a str> {
        None
    }
    /// Why a call is asked about in every mode, whatever the mode or an earlier answer
    /// allows (`save_memory` to the user's memory); None for most.
    fn always_asks(&self, _arguments: &Value) -> Option<String> {
        None
    }
    /// What the model reads when its arguments are not an `Input`.
    fn refusal(&self, _cx: &ToolContext, _arguments: &Value, problem: ArgumentProblem) -> String {
        problem.sentence(Self::NAME)
    }
    /// Work before the approval: a call that cannot run fails here, before anyone is asked.
    async fn prepare(&self, _cx: &ToolContext, _input: &Self::Input) -> Result<Prepared, String> {
        Ok(Prepared::Nothing)
    }
    async fn run(&self, cx: &ToolContext, input: Self::Input, prepared: Prepared) -> ToolOutcome;
}

/// A tool of any input type, as the registry holds it and the turn calls it: each entry
/// parses the model's arguments into the tool's input, in one place.
#[async_trait::async_trait]
pub trait AnyTool: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    fn kind(&self) -> ToolKind;
    fn call_kind(&self, arguments: &Value) -> ToolKind;
    fn title(&self, arguments: &Value) -> String;
    fn ledger_record(&self) -> LedgerRecord;
    fn command<'a>(&self, arguments: &'a Value) -> Option<&'a str>;
    fn always_asks(&self, arguments: &Value) -> Option<String>;
    /// The JSON Schema derived from the tool's input type.
    fn input_schema(&self) -> Value;
    /// The arguments parsed (once: `run` takes them from the `Ready`) and the call
    /// prepared; Err is what the model reads.
    async fn prepare(&self, cx: &ToolContext, arguments: &Value) -> Result<Ready, String>;
    /// Runs a call this tool's `prepare` made ready.
    async fn run(&self, cx: &ToolContext, ready: Ready) -> ToolOutcome;
}

/// A call that passed `AnyTool::prepare`: its input, parsed into the tool's `Input` type
/// (erased here, since the registry holds tools of every input type), and what was prepared.
pub struct Ready {
    input: Box<dyn std::any::Any + Send + Sync>,
    pub prepared: Prepared,
}

#[async_trait::async_trait]
impl<T: Tool> AnyTool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn kind(&self) -> ToolKind {
        Tool::kind(self)
    }

    fn call_kind(&self, arguments: &Value) -> ToolKind {
        Tool::call_kind(self, arguments)
    }

    fn title(&self, arguments: &Value) -> String {
        Tool::title(self, arguments)
    }

    fn ledger_record(&self) -> LedgerRecord {
        Tool::ledger_record(self)
    }

    fn command<'a>(&self, arguments: &'a Value) -> Option<&'a str> {
        Tool::command(self, arguments)
    }

    fn always_asks(&self, arguments: &Value) -> Option<String> {
        Tool::always_asks(self, arguments)
    }

    fn input_schema(&self) -> Value {
        input::schema_of::<T::Input>()
    }

    async fn prepare(&self, cx: &ToolContext, arguments: &Value) -> Result<Ready, String> {
        let input = parse(self, cx, arguments)?;
        let prepared = Tool::prepare(self, cx, &input).await?;
        Ok(Ready {
            input: Box::new(input),
            prepared,
        })
    }

    async fn run(&self, cx: &ToolContext, ready: Ready) -> ToolOutcome {
        match ready.input.downcast::<T::Input>() {
            Ok(input) => Tool::run(self, cx, *input, ready.prepared).await,
            Err(_) => ToolOutcome::failed(format!(
                "{} was given a call another tool prepared",
                T::NAME
            )),
        }
    }
}

/// `arguments` as `tool`'s input, or the tool's refusal.
fn parse<T: Tool>(tool: &T, cx: &ToolContext, arguments: &Value) -> Result<T::Input, String> {
    input::parse::<T::Input>(arguments).map_err(|problem| tool.refusal(cx, arguments, problem))
}

/// The tools the model may call.
pub struct Registry {
    tools: Vec<Box<dyn AnyTool>>,
}

impl Registry {
    /// Every built-in tool (the list is `tools::builtin`).
    pub fn builtin() -> &'static Registry {
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        REGISTRY.get_or_init(|| Registry {
            tools: crate::tools::builtin(),
        })
    }

    pub fn get(&self, name: &str) -> Option<&dyn AnyTool> {
        self.tools
            .iter()
            .find(|tool| tool.name() == name)
            .map(|tool| tool.as_ref())
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }
}

impl ToolCatalog for Registry {
    fn kind(&self, tool: &str, arguments: &Value) -> ToolKind {
        self.get(tool)
            .map_or(ToolKind::Other, |t| t.call_kind(arguments))
    }

    fn title(&self, tool: &str, arguments: &Value) -> String {
        match self.get(tool) {
            Some(t) => t.title(arguments),
            None if tool.is_empty() => "Unknown tool".to_string(),
            None => shorten(tool),
        }
    }

    fn ledger_record(&self, tool: &str) -> LedgerRecord {
        match self.get(tool) {
            Some(t) => t.ledger_record(),
            // An MCP server's tool (see `mcp`): not in this list, named by its prefix.
            None if tool.starts_with(agentls_core::mcp::names::PREFIX) => {
                LedgerRecord::ExternalCall
            }
            None => LedgerRecord::Nothing,
        }
    }
}

/// The text of an argument, when it is a non-blank string.
pub fn text_arg<'a>(arguments: &'a Value, key: &str) -> Option<&'a str> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .filter(|value| !value.trim().is_empty())
}

/// Runs a synchronous tool body on the blocking pool (file reads, walks).
pub async fn blocking(
    f: impl FnOnce() -> Result<String, agentls_core::tool_info::ToolError> + Send + 'static,
) -> ToolOutcome {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => ToolOutcome::from_result(result),
        Err(err) => ToolOutcome::failed(format!("the tool failed: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_core::prompts::Prompts;
    use serde_json::json;

    #[test]
    fn every_registered_tool_is_described_to_the_model_and_no_other() {
        let mut registered = Registry::builtin().names();
        let mut described: Vec<String> = Prompts::builtin()
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect();
        registered.sort();
        described.sort();
        assert_eq!(registered, described);
    }

    #[test]
    fn every_tool_is_found_by_its_own_name_and_only_by_it() {
        let tools = Registry::builtin();
        let names = tools.names();
        for name in &names {
            assert_eq!(tools.get(name).map(|t| t.name()), Some(*name));
            assert!(tools.get(&name.to_uppercase()).is_none(), "{name}");
        }
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert!(tools.get("").is_none());
        assert!(tools.get("delete_everything").is_none());
    }

    #[test]
    fn kinds_and_titles() {
        let tools = Registry::builtin();
        let kind = |name: &str| tools.kind(name, &Value::Null);
        assert_eq!(kind("read_file"), ToolKind::Read);
        assert_eq!(kind("list_dir"), ToolKind::Read);
        assert_eq!(kind("grep"), ToolKind::Search);
        assert_eq!(kind("edit_file"), ToolKind::Edit);
        assert_eq!(kind("write_file"), ToolKind::Edit);
        assert_eq!(kind("shell"), ToolKind::Execute);
        assert_eq!(kind("update_plan"), ToolKind::Other);
        assert_eq!(kind("nope"), ToolKind::Other);

        let t = |name: &str, args: Value| tools.title(name, &args);
        assert_eq!(
            t("read_file", json!({"path": "src/lib.rs"})),
            "Read src/lib.rs"
        );
        assert_eq!(
            t(
                "read_file",
                json!({"path": "src/lib.rs", "offset": 10, "limit": 31})
            ),
            "Read src/lib.rs (lines 10–40)"
        );
        assert_eq!(t("list_dir", json!({"path": "src"})), "List src/");
        assert_eq!(t("list_dir", json!({})), "List the workspace root");
        assert_eq!(
            t("grep", json!({"pattern": "fn answer", "path": "src/"})),
            "Grep `fn answer` in src/"
        );
        assert_eq!(
            t("edit_file", json!({"path": "src/lib.rs"})),
            "Edit src/lib.rs"
        );
        assert_eq!(
            t("write_file", json!({"path": "src/new.rs"})),
            "Write src/new.rs"
        );
        assert_eq!(
            t("shell", json!({"command": "cargo test"})),
            "Run `cargo test`"
        );
        assert_eq!(
            t("shell", json!({"command": "ls", "cwd": "src"})),
            "Run `ls` in src"
        );
        assert_eq!(t("update_plan", Value::Null), "Update plan");
        assert_eq!(t("", Value::Null), "Unknown tool");
        assert_eq!(t("x", Value::Null), "x");
        for name in Registry::builtin().names() {
            assert!(!t(name, Value::Null).is_empty());
            assert!(!t(name, json!({"path": 3, "offset": "x"})).is_empty());
        }
        let long = t("shell", json!({"command": "echo ".repeat(100)}));
        assert!(long.ends_with("…`"), "{long}");
        assert!(long.chars().count() < 100, "{long}");
    }

    #[test]
    fn what_the_ledger_records_is_declared_per_tool() {
        let tools = Registry::builtin();
        assert_eq!(tools.ledger_record("read_file"), LedgerRecord::FileRead);
        assert_eq!(tools.ledger_record("edit_file"), LedgerRecord::FileEdit);
        assert_eq!(tools.ledger_record("write_file"), LedgerRecord::FileWrite);
        assert_eq!(tools.ledger_record("shell"), LedgerRecord::Command);
        assert_eq!(tools.ledger_record("grep"), LedgerRecord::Nothing);
        assert_eq!(tools.ledger_record("nope"), LedgerRecord::Nothing);
    }
}
