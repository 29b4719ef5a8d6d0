//! Configuration: parsed from `initializationOptions`, replaced by each
//! `workspace/didChangeConfiguration`. Pure: the LSP adapter reports the problems.
//!
//! Rules: a settings object is the whole configuration (an absent key takes its default);
//! a key of the wrong type keeps its previous value and is reported; an unknown key is
//! logged and ignored. Settings wrapped as `{ "agentls": { … } }` (what VS Code sends
//! for a section) are unwrapped.

use crate::agents_md;
use crate::compaction::CompactionConfig;
use crate::document;
use crate::editor_context;
use crate::permission_rules::{self, RuleAction};
use crate::tokens::TokenizerKind;
use crate::truncate::{self, TruncationPolicy};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `agentsMd.maxBytes`: cap on the AGENTS.md chain's content.
    pub agents_md_max_bytes: usize,
    /// `syntax.maxDocumentBytes`: documents above this get no syntax tree.
    pub syntax_max_document_bytes: usize,
    /// `syntax.treeBudgetBytes`: syntax trees are kept for the most recently used
    /// documents up to this much text; the others are parsed again when needed.
    pub syntax_tree_budget_bytes: usize,
    /// `developerInstructions`: trusted instructions after the system prompt.
    pub developer_instructions: Option<String>,
    /// `tokenizer`: `o200k_base` or `cl100k_base`; absent = chosen by the model's name.
    pub tokenizer: Option<TokenizerKind>,
    /// `toolOutputLimit`: `{"tokens": n}` or `{"bytes": n}`.
    pub tool_output_limit: TruncationPolicy,
    /// `editorContext.maxTokens`: budget of a turn's editor context block.
    pub editor_context_max_tokens: usize,
    /// `memory.enabled`: the `save_memory` tool and the memory block of new requests.
    pub memory_enabled: bool,
    /// `memory.maxTokens`: the memory block's budget (the newest entries are kept).
    pub memory_max_tokens: usize,
    /// `editorContext.wholeFileMaxTokens`: a smaller active file is shown whole (0: never).
    pub editor_whole_file_max_tokens: usize,
    /// `editorContext.attachTests`: a change request attaches the active file's tests.
    pub attach_tests: bool,
    /// `context.repoMap.maxTokens`: budget of the repository map in the system message
    /// (0: no map).
    pub repo_map_max_tokens: usize,
    /// `approval`: `ask`, `auto-edit`, `full-auto` or `plan` (`approval::POLICIES`).
    pub approval: String,
    /// `provider.kind`: `openai` or `anthropic`.
    pub provider_kind: String,
    /// `provider.model`.
    pub model: Option<String>,
    /// `provider.contextWindow`: overrides the known-models table.
    pub context_window: Option<usize>,
    /// `provider.maxOutputTokens`.
    pub max_output_tokens: Option<usize>,
    /// `prompts.dir`: where prompt overrides live (default `~/.config/agentls/prompts`).
    pub prompts_dir: Option<PathBuf>,
    /// `provider.baseUrl`: default per kind (api.openai.com/v1, api.anthropic.com).
    pub base_url: Option<String>,
    /// `provider.apiKeyEnv`: the environment variable holding the key.
    pub api_key_env: Option<String>,
    /// `provider.timeoutMs`: connect timeout and longest silence in a stream.
    pub timeout_ms: u64,
    /// `provider.maxRetries`: retries of 429/5xx answers.
    pub max_retries: u32,
    /// `provider.temperature`: sent when set (the provider's default otherwise).
    pub temperature: Option<f64>,
    /// `provider.profile`: what the model is offered, by its size (`ModelProfile`).
    pub model_profile: ModelProfile,
    /// `provider.images`: whether the model takes images; unset = the known-models table
    /// (`models::takes_images`), false for a model it does not know.
    pub images: Option<bool>,
    /// `lsp.applyEditTimeoutMs`: how long a `workspace/applyEdit` waits for the editor.
    pub apply_edit_timeout_ms: u64,
    /// `maxSteps`: model calls per turn.
    pub max_steps: usize,
    /// `subagents.maxSteps`: model calls of a subagent's turn.
    pub subagent_max_steps: usize,
    /// `subagents.maxConcurrent`: `task` calls of one response that run at the same time.
    pub subagent_max_concurrent: usize,
    /// `shell.maxBackground`: background commands (`shell` with `background: true`) of one
    /// session running at once.
    pub shell_max_background: usize,
    /// `stateDir`: where session logs live.
    pub state_dir: Option<PathBuf>,
    /// `approvalTimeoutMs`: an unanswered permission request counts as rejected after this.
    pub approval_timeout_ms: u64,
    /// `diagnostics.settleMs`: how long the editor may wait for its language servers to
    /// report on a file the agent changed before it answers `agent/editor/diagnostics`.
    pub diagnostics_settle_ms: u64,
    pub compaction: CompactionConfig,
    /// `hooks`: the settings' hooks, in Claude Code's shape (`{Event: [{matcher, hooks}]}`).
    pub hooks: Vec<crate::hooks::Hook>,
    /// `mcpServers`: the settings' MCP servers, in Claude Code's shape (`{NAME: {command,
    /// args, env} | {type: "http", url, headers}}`), sorted by name.
    pub mcp_servers: Vec<crate::mcp::config::ServerConfig>,
    /// `reminders.*`.
    pub reminders: crate::reminders::ReminderSettings,
    /// `sandbox` (the mode) or `sandbox.{mode, network, writableRoots, required}`.
    pub sandbox: crate::sandbox::SandboxSettings,
    /// `checkpoints.{enabled, maxFileBytes, maxStoreBytes}`.
    pub checkpoints: crate::checkpoints::CheckpointSettings,
    /// `tools.readBeforeWrite`: a `write_file` over an existing file the model has not read
    /// (or read in an older version) is refused with a message to read it first.
    pub read_before_write: bool,
    /// `tools.fileListings`: configured, else for a small model (`Config::file_listings`).
    pub file_listings: Option<bool>,
    /// `checks.afterEdit`: what runs after each change the model makes, its failure appended
    /// to the change's result.
    pub after_edit: crate::checks::AfterEdit,
    /// `checks.timeoutMs`: how long a check may run before it is stopped (and fails).
    pub check_timeout_ms: u64,
    /// `permissions.{allow, ask, deny}`: the user's standing rules (`permission_rules`).
    pub permissions: crate::permission_rules::PermissionLists,
    /// `permissions.rememberAlways`: `"workspace"` also keeps an "always" answer as a rule
    /// of the workspace (every later session obeys it); `"session"` (false) does not.
    pub remember_always_in_workspace: bool,
}

pub const APPROVAL_POLICIES: [&str; 4] = crate::approval::POLICIES;

/// `provider.profile`: what the model is offered. A small model (under `auto`, one whose name
/// gives its size at most [`SMALL_MODEL_MAX_BILLIONS`]) gets a short system prompt, a few
/// tools with short descriptions (`prompts/small_model.json`) and greedy sampling; others get
/// everything. `full` is the default: with the small profile the 1.5B local model answered
/// `./run`'s question without reading the file, and the task bench showed no gain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelProfile {
    Auto,
    Full,
    Small,
}

pub const MODEL_PROFILES: [&str; 3] = ["auto", "full", "small"];

/// Under `provider.profile: "auto"`, a model whose name says it has at most this many
/// billion parameters is small (`qwen2.5-coder-1.5b`, `llama3.2:3b`). Its name, not its
/// window: a large model may be served with a small window, and a name without a size
/// (the hosted models) keeps everything.
pub const SMALL_MODEL_MAX_BILLIONS: f64 = 8.0;

impl Config {
    /// The provider `provider.kind` names (validated against `PRESETS` when set).
    pub fn preset(&self) -> &'static crate::provider_kind::Preset {
        crate::provider_kind::Preset::named(&self.provider_kind)
            .unwrap_or(&crate::provider_kind::PRESETS[0])
    }

    /// Whether the model gets the small-model profile (`provider.profile`).
    pub fn small_model(&self) -> bool {
        match self.model_profile {
            ModelProfile::Small => true,
            ModelProfile::Full => false,
            ModelProfile::Auto => self
                .model
                .as_deref()
                .and_then(crate::models::billions_in_name)
                .is_some_and(|billions| billions <= SMALL_MODEL_MAX_BILLIONS),
        }
    }

    /// The sampling temperature to send: configured, else greedy for a small model (which
    /// drifts from the task at the server's default, 0.8 on llama.cpp), else none.
    pub fn sampling_temperature(&self) -> Option<f64> {
        self.temperature
            .or_else(|| self.small_model().then_some(0.0))
    }

    /// Whether a turn ending on a failing check goes on (`reminders.failingCheck`):
    /// configured, else for a small model.
    pub fn failing_check_reminder(&self) -> bool {
        self.reminders
            .failing_check
            .unwrap_or_else(|| self.small_model())
    }

    /// Whether a file listing in a reply (a path, then the file's whole content in a fenced
    /// block: `listings`) is applied as a `write_file` call (`tools.fileListings`):
    /// configured, else for a small model, which writes better code as text than as JSON.
    pub fn file_listings(&self) -> bool {
        self.file_listings.unwrap_or_else(|| self.small_model())
    }

    /// How the model is told to change a file (`reminders::ChangeForm`).
    pub fn change_form(&self) -> crate::reminders::ChangeForm {
        if self.file_listings() {
            crate::reminders::ChangeForm::Listings
        } else {
            crate::reminders::ChangeForm::Calls
        }
    }

    /// The tokenizer counts are made with: configured, else the model's.
    pub fn tokenizer(&self) -> TokenizerKind {
        self.tokenizer.unwrap_or_else(|| {
            self.model
                .as_deref()
                .map(TokenizerKind::for_model)
                .unwrap_or_default()
        })
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            agents_md_max_bytes: agents_md::DEFAULT_MAX_BYTES,
            syntax_max_document_bytes: document::DEFAULT_MAX_SYNTAX_BYTES,
            syntax_tree_budget_bytes: crate::document::DEFAULT_TREE_BUDGET_BYTES,
            developer_instructions: None,
            tokenizer: None,
            tool_output_limit: truncate::DEFAULT_TOOL_OUTPUT_LIMIT,
            editor_context_max_tokens: editor_context::DEFAULT_EDITOR_BUDGET,
            editor_whole_file_max_tokens: editor_context::WHOLE_FILE_MAX_TOKENS,
            attach_tests: false,
            memory_enabled: true,
            memory_max_tokens: 2_000,
            repo_map_max_tokens: 0,
            approval: "ask".to_string(),
            provider_kind: crate::provider_kind::ProviderKind::OpenAi
                .name()
                .to_string(),
            model: None,
            context_window: None,
            max_output_tokens: None,
            prompts_dir: None,
            base_url: None,
            api_key_env: None,
            timeout_ms: 120_000,
            max_retries: 4,
            temperature: None,
            model_profile: ModelProfile::Full,
            images: None,
            apply_edit_timeout_ms: 30_000,
            max_steps: 50,
            subagent_max_steps: 25,
            subagent_max_concurrent: 3,
            shell_max_background: 4,
            state_dir: None,
            approval_timeout_ms: 300_000,
            diagnostics_settle_ms: 1_500,
            compaction: CompactionConfig::default(),
            hooks: Vec::new(),
            mcp_servers: Vec::new(),
            reminders: crate::reminders::ReminderSettings::default(),
            sandbox: crate::sandbox::SandboxSettings::default(),
            checkpoints: crate::checkpoints::CheckpointSettings::default(),
            read_before_write: true,
            file_listings: None,
            after_edit: crate::checks::AfterEdit::default(),
            check_timeout_ms: 90_000,
            permissions: crate::permission_rules::PermissionLists::default(),
            remember_always_in_workspace: false,
        }
    }
}

/// A key whose value was rejected; the previous value stays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub key: String,
    pub message: String,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ConfigUpdate {
    pub problems: Vec<ConfigProblem>,
    pub unknown_keys: Vec<String>,
}

/// One known key: how to read it from JSON, and how to keep the previous value when the
/// new one is rejected.
struct Key {
    path: &'static str,
    doc: KeyDoc,
    set: fn(&mut Config, &Value) -> Result<(), String>,
    keep: fn(&mut Config, &Config),
}

/// A key's row of the Configuration table of docs/protocol.md (`settings_table`), as
/// Markdown: the table is generated from these, so a setting is documented where it is
/// declared.
struct KeyDoc {
    ty: &'static str,
    default: &'static str,
    meaning: &'static str,
}

/// The Configuration table of docs/protocol.md: one row per key, in `KEYS`' order.
pub fn settings_table() -> String {
    let mut table = String::from("| key | type | default | meaning |\n|---|---|---|---|\n");
    for key in KEYS {
        let KeyDoc {
            ty,
            default,
            meaning,
        } = &key.doc;
        table.push_str(&format!(
            "| `{}` | {ty} | {default} | {meaning} |\n",
            key.path
        ));
    }
    table
}

/// Every known key, by dotted path: one table so validation and defaults cannot drift.
const KEYS: &[Key] = &[
    Key {
        path: "agentsMd.maxBytes",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"32768"#,
            meaning: r#"cap on the AGENTS.md chain's content"#,
        },
        set: |c, v| {
            c.agents_md_max_bytes = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.agents_md_max_bytes = p.agents_md_max_bytes,
    },
    Key {
        path: "syntax.maxDocumentBytes",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"8388608"#,
            meaning: r#"documents above this get no syntax tree"#,
        },
        set: |c, v| {
            c.syntax_max_document_bytes = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.syntax_max_document_bytes = p.syntax_max_document_bytes,
    },
    Key {
        path: "syntax.treeBudgetBytes",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"1048576"#,
            meaning: r#"syntax trees are kept for the most recently used documents up to this much text; the others are parsed again when read or edited"#,
        },
        set: |c, v| {
            c.syntax_tree_budget_bytes = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.syntax_tree_budget_bytes = p.syntax_tree_budget_bytes,
    },
    Key {
        path: "developerInstructions",
        doc: KeyDoc {
            ty: r#"string"#,
            default: r#"none"#,
            meaning: r#"trusted instructions placed after the system prompt"#,
        },
        set: |c, v| {
            c.developer_instructions = Some(string(v)?).filter(|s| !s.trim().is_empty());
            Ok(())
        },
        keep: |c, p| c.developer_instructions = p.developer_instructions.clone(),
    },
    Key {
        path: "tokenizer",
        doc: KeyDoc {
            ty: r#"`"o200k_base"` \| `"cl100k_base"`"#,
            default: r#"by model (`cl100k_base` for GPT-4/3.5, else `o200k_base`)"#,
            meaning: r#"the tokenizer counts are made with"#,
        },
        set: |c, v| {
            let name = string(v)?;
            c.tokenizer =
                Some(TokenizerKind::from_name(&name).ok_or_else(|| {
                    format!("must be one of {:?}, got {v}", TokenizerKind::NAMES)
                })?);
            Ok(())
        },
        keep: |c, p| c.tokenizer = p.tokenizer,
    },
    Key {
        path: "toolOutputLimit",
        doc: KeyDoc {
            ty: r#"`{"tokens": n}` \| `{"bytes": n}`"#,
            default: r#"`{"tokens": 10000}`"#,
            meaning: r#"tool outputs are cut to this when recorded (head and tail kept)"#,
        },
        set: |c, v| {
            c.tool_output_limit = serde_json::from_value(v.clone())
                .map_err(|_| format!("must be {{\"tokens\": n}} or {{\"bytes\": n}}, got {v}"))?;
            Ok(())
        },
        keep: |c, p| c.tool_output_limit = p.tool_output_limit,
    },
    Key {
        path: "editorContext.maxTokens",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"8000"#,
            meaning: r#"budget of a turn's editor context block"#,
        },
        set: |c, v| {
            c.editor_context_max_tokens = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.editor_context_max_tokens = p.editor_context_max_tokens,
    },
    Key {
        path: "editorContext.wholeFileMaxTokens",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"2000"#,
            meaning: r#"an active file of at most 200 lines and this many tokens (and half the block's budget) is shown whole in place of its enclosing symbol and outline, and counts as read; 0: never"#,
        },
        set: |c, v| {
            c.editor_whole_file_max_tokens = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.editor_whole_file_max_tokens = p.editor_whole_file_max_tokens,
    },
    Key {
        path: "editorContext.attachTests",
        doc: KeyDoc {
            ty: r#"boolean"#,
            default: r#"false"#,
            meaning: r#"a request to change the active file, shown whole in the editor block, also attaches that file's tests as an `@` mention would (`NAME_test.py` or `test_NAME.py` beside it or in `tests/`, `NAME.test.ts`/`.spec.ts`/`.js`, `NAME_test.go`), within the block's budget: the tests say the names, values and error messages the code must have. A small model offered no tools for the change cannot read them otherwise; off by default: on the 1.5B local model it showed no gain on the task bench (0 of 6 exercises, against 1 of 6 without), and it lengthens the prompt by the tests"#,
        },
        set: |c, v| {
            c.attach_tests = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.attach_tests = p.attach_tests,
    },
    Key {
        path: "memory.enabled",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"memory across sessions: the `save_memory` tool, and the kept facts in each request's system message (see [Memory](#memory))"#,
        },
        set: |c, v| {
            c.memory_enabled = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.memory_enabled = p.memory_enabled,
    },
    Key {
        path: "memory.maxTokens",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"2000"#,
            meaning: r#"budget of the memory block; past it the oldest entries are left out (and said to be), and one a message names is recalled with it (0: entries are only recalled)"#,
        },
        set: |c, v| {
            c.memory_max_tokens = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.memory_max_tokens = p.memory_max_tokens,
    },
    Key {
        path: "context.repoMap.maxTokens",
        doc: KeyDoc {
            ty: r#"integer ≥ 0 (at most 32768)"#,
            default: r#"0 (off)"#,
            meaning: r#"budget of the repository map at the end of the system message (see Context): the workspace's most referenced definitions from the symbol index; 0 = no map"#,
        },
        set: |c, v| {
            c.repo_map_max_tokens = non_negative_integer(v)?.min(crate::repo_map::MAX_TOKENS);
            Ok(())
        },
        keep: |c, p| c.repo_map_max_tokens = p.repo_map_max_tokens,
    },
    Key {
        path: "approval",
        doc: KeyDoc {
            ty: r#"`"ask"` \| `"auto-edit"` \| `"full-auto"` \| `"plan"`"#,
            default: r#"`"ask"`"#,
            meaning: r#"approval policy, the mode of a session that did not choose one with `setMode` (see Plan mode; the session's mode is shown to the model in the environment block)"#,
        },
        set: |c, v| {
            c.approval = one_of(v, &APPROVAL_POLICIES)?;
            Ok(())
        },
        keep: |c, p| c.approval = p.approval.clone(),
    },
    Key {
        path: "provider.kind",
        doc: KeyDoc {
            ty: r#"`"openai"` \| `"anthropic"` \| `"openrouter"` \| `"deepseek"` \| `"groq"` \| `"mistral"` \| `"ollama"`"#,
            default: r#"`"openai"`"#,
            meaning: r#"the provider: its wire format (OpenAI's Chat Completions, or Anthropic's Messages for `anthropic`), default base URL, key variable and models (`PRESETS` in `crates/core/src/provider_kind.rs`); any other OpenAI-compatible server is `openai` with `provider.baseUrl`"#,
        },
        set: |c, v| {
            c.provider_kind = one_of(v, &crate::provider_kind::Preset::names())?;
            Ok(())
        },
        keep: |c, p| c.provider_kind = p.provider_kind.clone(),
    },
    Key {
        path: "provider.model",
        doc: KeyDoc {
            ty: r#"string"#,
            default: r#"none"#,
            meaning: r#"model name; chooses the tokenizer and the known context window"#,
        },
        set: |c, v| {
            c.model = Some(string(v)?).filter(|s| !s.is_empty());
            Ok(())
        },
        keep: |c, p| c.model = p.model.clone(),
    },
    Key {
        path: "provider.contextWindow",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"known window of the model, else 128000"#,
            meaning: r#"tokens the model accepts"#,
        },
        set: |c, v| {
            c.context_window = Some(positive_integer(v)?);
            Ok(())
        },
        keep: |c, p| c.context_window = p.context_window,
    },
    Key {
        path: "provider.maxOutputTokens",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"none (Anthropic: 8192)"#,
            meaning: r#"output budget of a model call"#,
        },
        set: |c, v| {
            c.max_output_tokens = Some(positive_integer(v)?);
            Ok(())
        },
        keep: |c, p| c.max_output_tokens = p.max_output_tokens,
    },
    Key {
        path: "provider.baseUrl",
        doc: KeyDoc {
            ty: r#"http(s) URL"#,
            default: r#"the provider's (`https://api.openai.com/v1`, `https://api.anthropic.com`, …)"#,
            meaning: r#"the provider's endpoint; any OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio, OpenRouter)"#,
        },
        set: |c, v| {
            let url = string(v)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("must be an http:// or https:// URL, got {v}"));
            }
            c.base_url = Some(url.trim_end_matches('/').to_string());
            Ok(())
        },
        keep: |c, p| c.base_url = p.base_url.clone(),
    },
    Key {
        path: "provider.apiKeyEnv",
        doc: KeyDoc {
            ty: r#"string"#,
            default: r#"the provider's (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OPENROUTER_API_KEY`, …)"#,
            meaning: r#"the environment variable holding the key (required by the providers' own endpoints except `ollama`'s, optional for a custom `baseUrl`); every provider's key variable is hidden from commands"#,
        },
        set: |c, v| {
            c.api_key_env = Some(string(v)?).filter(|s| !s.is_empty());
            Ok(())
        },
        keep: |c, p| c.api_key_env = p.api_key_env.clone(),
    },
    Key {
        path: "provider.timeoutMs",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"120000"#,
            meaning: r#"connect timeout, and the longest silence tolerated inside a stream"#,
        },
        set: |c, v| {
            c.timeout_ms = positive_integer(v)? as u64;
            Ok(())
        },
        keep: |c, p| c.timeout_ms = p.timeout_ms,
    },
    Key {
        path: "provider.maxRetries",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"4"#,
            meaning: r#"retries of 429/5xx answers and failed connections"#,
        },
        set: |c, v| {
            c.max_retries = u32::try_from(non_negative_integer(v)?)
                .map_err(|_| format!("must be a small non-negative integer, got {v}"))?;
            Ok(())
        },
        keep: |c, p| c.max_retries = p.max_retries,
    },
    Key {
        path: "provider.temperature",
        doc: KeyDoc {
            ty: r#"number 0–2"#,
            default: r#"none (the provider's); 0 for a small model (`provider.profile`)"#,
            meaning: r#"sampling temperature sent with each request"#,
        },
        set: |c, v| {
            c.temperature = Some(
                v.as_f64()
                    .filter(|t| (0.0..=2.0).contains(t))
                    .ok_or_else(|| format!("must be a number from 0 to 2, got {v}"))?,
            );
            Ok(())
        },
        keep: |c, p| c.temperature = p.temperature,
    },
    Key {
        path: "provider.profile",
        doc: KeyDoc {
            ty: r#"`"auto"` \| `"full"` \| `"small"`"#,
            default: r#"`"full"` (`"auto"`: small when the model's name gives its size at 8B parameters or fewer, `qwen2.5-coder-1.5b`)"#,
            meaning: r#"what the model is offered: `small` gives a short system prompt (`system_small.md`), the tools of `small_model.json` with their short descriptions, and temperature 0 unless `provider.temperature` is set; `full` gives every tool and `system.md`"#,
        },
        set: |c, v| {
            c.model_profile = match one_of(v, &MODEL_PROFILES)?.as_str() {
                "full" => ModelProfile::Full,
                "small" => ModelProfile::Small,
                _ => ModelProfile::Auto,
            };
            Ok(())
        },
        keep: |c, p| c.model_profile = p.model_profile,
    },
    Key {
        path: "provider.images",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"from the known-models table (`gpt-4o`, `gpt-4.1`, `gpt-5`, `o1`/`o3`/`o4-mini`, `claude-*` take images; an unknown model does not)"#,
            meaning: r#"whether the model takes images (see [Images](#images))"#,
        },
        set: |c, v| {
            c.images = Some(
                v.as_bool()
                    .ok_or_else(|| format!("must be true or false, got {v}"))?,
            );
            Ok(())
        },
        keep: |c, p| c.images = p.images,
    },
    Key {
        path: "lsp.applyEditTimeoutMs",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"30000"#,
            meaning: r#"how long an edit waits for the editor's answer to `workspace/applyEdit`; past it the tool fails with a clear error (the edit may still be applied) and the request is withdrawn with `$/cancelRequest`"#,
        },
        set: |c, v| {
            c.apply_edit_timeout_ms = positive_integer(v)? as u64;
            Ok(())
        },
        keep: |c, p| c.apply_edit_timeout_ms = p.apply_edit_timeout_ms,
    },
    Key {
        path: "tools.readBeforeWrite",
        doc: KeyDoc {
            ty: r#"boolean"#,
            default: r#"true"#,
            meaning: r#"a `write_file` over an existing, non-empty file the session has not read with `read_file` (or read in an older version: the user, a command or a formatter changed it since) is refused with a message to read it first; the session's own changes count as read. `edit_file` needs no read: its `old_text` must match the file"#,
        },
        set: |c, v| {
            c.read_before_write = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.read_before_write = p.read_before_write,
    },
    Key {
        path: "tools.fileListings",
        doc: KeyDoc {
            ty: r#"boolean"#,
            default: r#"true for a small model (`provider.profile`), else false"#,
            meaning: r#"a reply that lists a file (a line with its path, then its whole new content in a fenced block) writes it, as the `write_file` call it stands for: asked, checked and recorded like one. Only for an existing file of the workspace or one the user's message names, or, for a block under no such path that defines every top-level function and class of the file the editor block showed whole, that file; a block cut by the output limit is never applied. When the check after it (`checks.afterEdit`) fails or does not finish, the turn goes on with a fresh attempt (3 at most): the request leaves the failed attempt out, names the file, gives the end of the check's output, and samples at temperature 0.7. Under the small profile, a change asked of the file the editor block shows whole is offered no tools. A small model writes better code as text than inside a call's JSON"#,
        },
        set: |c, v| {
            c.file_listings = Some(boolean(v)?);
            Ok(())
        },
        keep: |c, p| c.file_listings = p.file_listings,
    },
    Key {
        path: "checks.afterEdit",
        doc: KeyDoc {
            ty: r#"`"auto"` \| `"off"` \| command line"#,
            default: r#"`"auto"`"#,
            meaning: r#"after each `edit_file`/`write_file` that changed a file, this command runs in the workspace (in the command sandbox, `checks.timeoutMs` at most) and its verdict is appended to the change's result: `[check after this change: `CMD` passed]`, or `failed (exit N)` (or `did not finish in N s`) with the last 60 lines of its output. `auto`: only where no editor reports diagnostics (the CLI, ACP, an LSP client without `editorDiagnostics`), and only a known check: `python3 -m pytest -x -q --tb=long -p no:cacheprovider` after a change to a `.py` file in a project with pytest-style tests (`test_*.py`, `*_test.py`, `tests/`) in its top two levels. It runs only where the session's approval rules would run that command without asking (`full-auto`, or an "always" answer for it)"#,
        },
        set: |c, v| {
            c.after_edit = crate::checks::AfterEdit::parse(v)?;
            Ok(())
        },
        keep: |c, p| c.after_edit = p.after_edit.clone(),
    },
    Key {
        path: "checks.timeoutMs",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"90000"#,
            meaning: r#"how long the check after a change may run; past it the check is stopped and counts as failing (nothing shows the change works; after a small change the usual cause is code that never returns): the model is told it did not finish, with the end of its output"#,
        },
        set: |c, v| {
            c.check_timeout_ms = positive_integer(v)? as u64;
            Ok(())
        },
        keep: |c, p| c.check_timeout_ms = p.check_timeout_ms,
    },
    Key {
        path: "maxSteps",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"50"#,
            meaning: r#"model calls per turn"#,
        },
        set: |c, v| {
            c.max_steps = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.max_steps = p.max_steps,
    },
    Key {
        path: "subagents.maxSteps",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"25"#,
            meaning: r#"model calls of a subagent's turn (see Subagents)"#,
        },
        set: |c, v| {
            c.subagent_max_steps = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.subagent_max_steps = p.subagent_max_steps,
    },
    Key {
        path: "subagents.maxConcurrent",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"3"#,
            meaning: r#"`task` calls of one response that run at the same time"#,
        },
        set: |c, v| {
            c.subagent_max_concurrent = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.subagent_max_concurrent = p.subagent_max_concurrent,
    },
    Key {
        path: "shell.maxBackground",
        doc: KeyDoc {
            ty: r#"integer ≥ 1"#,
            default: r#"4"#,
            meaning: r#"background commands (`shell` with `background: true`) of one session running at once; another is refused with a clear error"#,
        },
        set: |c, v| {
            c.shell_max_background = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.shell_max_background = p.shell_max_background,
    },
    Key {
        path: "stateDir",
        doc: KeyDoc {
            ty: r#"path"#,
            default: r#"`$XDG_STATE_HOME/agentls` (else `~/.local/state/agentls`)"#,
            meaning: r#"where session logs live, one directory per workspace"#,
        },
        set: |c, v| {
            c.state_dir = Some(PathBuf::from(string(v)?));
            Ok(())
        },
        keep: |c, p| c.state_dir = p.state_dir.clone(),
    },
    Key {
        path: "approvalTimeoutMs",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"300000"#,
            meaning: r#"an unanswered permission request counts as rejected after this"#,
        },
        set: |c, v| {
            c.approval_timeout_ms = positive_integer(v)? as u64;
            Ok(())
        },
        keep: |c, p| c.approval_timeout_ms = p.approval_timeout_ms,
    },
    Key {
        path: "diagnostics.settleMs",
        doc: KeyDoc {
            ty: r#"integer ≥ 0 (at most 60000)"#,
            default: r#"1500"#,
            meaning: r#"how long the editor may wait for its language servers to report on a changed file before it answers `agent/editor/diagnostics` (sent in the request); the server waits that and 1 s more"#,
        },
        set: |c, v| {
            c.diagnostics_settle_ms = non_negative_integer(v)?.min(60_000) as u64;
            Ok(())
        },
        keep: |c, p| c.diagnostics_settle_ms = p.diagnostics_settle_ms,
    },
    // What the client offers (read from initializationOptions by the LSP server, not kept
    // here): a known key, so that it is not reported as unknown.
    Key {
        path: "capabilities.editorDiagnostics",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"false"#,
            meaning: r#"set by the editor plugin, not the user: the client answers `agent/editor/diagnostics` (read from `initializationOptions` only; see [Diagnostics after an edit](#diagnostics-after-an-edit))"#,
        },
        set: |_, v| boolean(v).map(|_| ()),
        keep: |_, _| {},
    },
    Key {
        path: "capabilities.editorLanguageServers",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"false"#,
            meaning: r#"set by the editor plugin, not the user: the client answers `agent/editor/lsp` with its own language servers, and the model is offered the `lsp` tool (read from `initializationOptions` only; see [The editor's language servers](#the-editors-language-servers))"#,
        },
        set: |_, v| boolean(v).map(|_| ()),
        keep: |_, _| {},
    },
    Key {
        path: "compaction.auto",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"compact at the threshold and prepare ahead"#,
        },
        set: |c, v| {
            c.compaction.auto = v
                .as_bool()
                .ok_or_else(|| format!("must be true or false, got {v}"))?;
            Ok(())
        },
        keep: |c, p| c.compaction.auto = p.compaction.auto,
    },
    Key {
        path: "compaction.threshold",
        doc: KeyDoc {
            ty: r#"number in (0, 1]"#,
            default: r#"0.85"#,
            meaning: r#"fill of the usable window at which a model call waits for compaction"#,
        },
        set: |c, v| {
            c.compaction.threshold = fraction(v)?;
            Ok(())
        },
        keep: |c, p| c.compaction.threshold = p.compaction.threshold,
    },
    Key {
        path: "compaction.prepareAt",
        doc: KeyDoc {
            ty: r#"number in (0, 1]"#,
            default: r#"0.70"#,
            meaning: r#"fill at which a summary is prepared in the background"#,
        },
        set: |c, v| {
            c.compaction.prepare_at = fraction(v)?;
            Ok(())
        },
        keep: |c, p| c.compaction.prepare_at = p.compaction.prepare_at,
    },
    Key {
        path: "compaction.targetFill",
        doc: KeyDoc {
            ty: r#"number in (0, 1]"#,
            default: r#"0.35"#,
            meaning: r#"fill a compaction aims for"#,
        },
        set: |c, v| {
            c.compaction.target_fill = fraction(v)?;
            Ok(())
        },
        keep: |c, p| c.compaction.target_fill = p.compaction.target_fill,
    },
    Key {
        path: "compaction.style",
        doc: KeyDoc {
            ty: r#"`handoff` \| `state_snapshot` \| `checkpoint`"#,
            default: r#"`handoff`"#,
            meaning: r#"the summary's format"#,
        },
        set: |c, v| {
            let name = one_of(v, &["handoff", "state_snapshot", "checkpoint"])?;
            c.compaction.style = crate::compaction::Style::from_name(&name)
                .unwrap_or(crate::compaction::Style::Handoff);
            Ok(())
        },
        keep: |c, p| c.compaction.style = p.compaction.style,
    },
    Key {
        path: "compaction.promptFile",
        doc: KeyDoc {
            ty: r#"path"#,
            default: r#"none"#,
            meaning: r#"replaces the compaction prompt"#,
        },
        set: |c, v| {
            c.compaction.prompt_file = Some(PathBuf::from(string(v)?));
            Ok(())
        },
        keep: |c, p| c.compaction.prompt_file = p.compaction.prompt_file.clone(),
    },
    Key {
        path: "compaction.keepToolRounds",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"3"#,
            meaning: r#"tool rounds whose outputs are not trimmed"#,
        },
        set: |c, v| {
            c.compaction.keep_tool_rounds = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.compaction.keep_tool_rounds = p.compaction.keep_tool_rounds,
    },
    Key {
        path: "compaction.userMessageBudget",
        doc: KeyDoc {
            ty: r#"integer ≥ 0"#,
            default: r#"20000"#,
            meaning: r#"tokens of user messages kept verbatim"#,
        },
        set: |c, v| {
            c.compaction.user_message_budget = non_negative_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.compaction.user_message_budget = p.compaction.user_message_budget,
    },
    Key {
        path: "compaction.keepRecentRounds",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"2"#,
            meaning: r#"last rounds kept verbatim"#,
        },
        set: |c, v| {
            c.compaction.keep_recent_rounds = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.compaction.keep_recent_rounds = p.compaction.keep_recent_rounds,
    },
    Key {
        path: "compaction.maxSummaryMs",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"120000"#,
            meaning: r#"an automatic compaction does not ask the model for a summary it would take longer than this to read (at the slowest prompt speed measured on the session's calls: a local model's minutes): the extractive summary (rule-based drop and the ledger) is used instead; `/compact` always asks"#,
        },
        set: |c, v| {
            c.compaction.max_summary_ms = positive_integer(v)? as u64;
            Ok(())
        },
        keep: |c, p| c.compaction.max_summary_ms = p.compaction.max_summary_ms,
    },
    Key {
        path: "compaction.ledgerMaxTokens",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"4000"#,
            meaning: r#"the ledger's budget (what never drops is kept over it)"#,
        },
        set: |c, v| {
            c.compaction.ledger_max_tokens = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.compaction.ledger_max_tokens = p.compaction.ledger_max_tokens,
    },
    Key {
        path: "hooks",
        doc: KeyDoc {
            ty: r#"object: event → `[{ "matcher"?, "hooks": [{ "type": "command", "command", "timeout"? }] }]`"#,
            default: r#"none"#,
            meaning: r#"hook commands in Claude Code's shape (see Hooks); a value with a problem keeps the previous hooks and is reported"#,
        },
        set: |c, v| {
            let (hooks, problems) = crate::hooks::parse(v, crate::hooks::HookSource::Settings);
            if !problems.is_empty() {
                return Err(problems.join("; "));
            }
            c.hooks = hooks;
            Ok(())
        },
        keep: |c, p| c.hooks = p.hooks.clone(),
    },
    Key {
        path: "mcpServers",
        doc: KeyDoc {
            ty: r#"object: name → `{ "command", "args"?, "env"?, "cwd"? }` or `{ "type": "http", "url", "headers"? }`, each with `enabled`?, `timeoutMs`?, `startupTimeoutMs`?, `tools`? `{allow?, deny?}`, `trust`? (`ask`, `readOnly`)"#,
            default: r#"none"#,
            meaning: r#"MCP servers in Claude Code's shape (see MCP servers); `${VAR}` expanded at start; a value with a problem keeps the previous servers and is reported"#,
        },
        set: |c, v| {
            let (servers, problems) =
                crate::mcp::config::parse(v, crate::mcp::config::ServerSource::Settings);
            if !problems.is_empty() {
                return Err(problems.join("; "));
            }
            c.mcp_servers = servers;
            Ok(())
        },
        keep: |c, p| c.mcp_servers = p.mcp_servers.clone(),
    },
    Key {
        path: "reminders.agentsMd",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"remind the model when the AGENTS.md chain changed during the session"#,
        },
        set: |c, v| {
            c.reminders.agents_md = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.agents_md = p.reminders.agents_md,
    },
    Key {
        path: "reminders.plan",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"remind the model when a plan step is `in_progress` and `reminders.planRounds` tool rounds went by without `update_plan`"#,
        },
        set: |c, v| {
            c.reminders.plan = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.plan = p.reminders.plan,
    },
    Key {
        path: "reminders.riskyPatterns",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"one warning per risky-pattern rule per session when an edit adds `eval(`, `exec(`, `pickle.loads`, `child_process.exec`, `dangerouslySetInnerHTML`, `unsafe {`, `os.system(` or SQL built by string formatting"#,
        },
        set: |c, v| {
            c.reminders.risky = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.risky = p.reminders.risky,
    },
    Key {
        path: "reminders.afterCompaction",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"after a compaction, list the files modified in the session and tell the model to read a file again before editing it"#,
        },
        set: |c, v| {
            c.reminders.compaction = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.compaction = p.reminders.compaction,
    },
    Key {
        path: "reminders.hooks",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"hook `additionalContext` (and the plain stdout of SessionStart and UserPromptSubmit hooks) reaches the model as a reminder (the reasons of Stop and PostToolUse blocks always do)"#,
        },
        set: |c, v| {
            c.reminders.hooks = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.hooks = p.reminders.hooks,
    },
    Key {
        path: "reminders.maxTokens",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"200"#,
            meaning: r#"a longer reminder is cut in the middle, with the truncation marker"#,
        },
        set: |c, v| {
            c.reminders.max_tokens = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.max_tokens = p.reminders.max_tokens,
    },
    Key {
        path: "reminders.unfinishedChange",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"false (`./run`'s local model: true)"#,
            meaning: r#"a turn whose request asks for a change (one of implement, modify, fix, change, add, write, create, refactor, update, rename, remove, delete, edit, solve, as a word) and that ends having changed no file goes on once with a reminder (source `loop`) to make the change or say why not; for small models, which often read the file and answer with a sentence"#,
        },
        set: |c, v| {
            c.reminders.unfinished_change = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.unfinished_change = p.reminders.unfinished_change,
    },
    Key {
        path: "reminders.failingCheck",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true for a small model (`provider.profile`), else false"#,
            meaning: r#"a turn that ends while the check after its last change (`checks.afterEdit`) fails goes on with a reminder (source `loop`) to fix it, at most twice a turn; for small models, which read the failure and answer "done""#,
        },
        set: |c, v| {
            c.reminders.failing_check = Some(boolean(v)?);
            Ok(())
        },
        keep: |c, p| c.reminders.failing_check = p.reminders.failing_check,
    },
    Key {
        path: "reminders.planRounds",
        doc: KeyDoc {
            ty: r#"integer > 0"#,
            default: r#"5"#,
            meaning: r#"tool rounds before the plan reminder"#,
        },
        set: |c, v| {
            c.reminders.plan_rounds = positive_integer(v)?;
            Ok(())
        },
        keep: |c, p| c.reminders.plan_rounds = p.reminders.plan_rounds,
    },
    Key {
        path: "prompts.dir",
        doc: KeyDoc {
            ty: r#"string (path)"#,
            default: r#"`$XDG_CONFIG_HOME/agentls/prompts`"#,
            meaning: r#"a file there named like one in `prompts/` replaces it"#,
        },
        set: |c, v| {
            c.prompts_dir = Some(PathBuf::from(string(v)?));
            Ok(())
        },
        keep: |c, p| c.prompts_dir = p.prompts_dir.clone(),
    },
    Key {
        path: "sandbox",
        doc: KeyDoc {
            ty: r#"`"workspace-write"` \| `"read-only"` \| `"off"`"#,
            default: r#"`"workspace-write"`"#,
            meaning: r#"the sandbox `shell` commands run in (see [Command sandbox](#command-sandbox))"#,
        },
        set: |c, v| {
            c.sandbox.mode = sandbox_mode(v)?;
            Ok(())
        },
        keep: |c, p| c.sandbox.mode = p.sandbox.mode,
    },
    Key {
        path: "sandbox.mode",
        doc: KeyDoc {
            ty: r#"`"workspace-write"` \| `"read-only"` \| `"off"`"#,
            default: r#"`"workspace-write"`"#,
            meaning: r#"the same as `sandbox`"#,
        },
        set: |c, v| {
            c.sandbox.mode = sandbox_mode(v)?;
            Ok(())
        },
        keep: |c, p| c.sandbox.mode = p.sandbox.mode,
    },
    Key {
        path: "sandbox.network",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"false"#,
            meaning: r#"sandboxed commands may open IP sockets"#,
        },
        set: |c, v| {
            c.sandbox.network = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.sandbox.network = p.sandbox.network,
    },
    Key {
        path: "sandbox.required",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"false"#,
            meaning: r#"refuse commands when no sandbox can be had (default: warn once and run them with approvals alone)"#,
        },
        set: |c, v| {
            c.sandbox.required = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.sandbox.required = p.sandbox.required,
    },
    Key {
        path: "sandbox.writableRoots",
        doc: KeyDoc {
            ty: r#"list of absolute paths"#,
            default: r#"none"#,
            meaning: r#"more directories a sandboxed command may write in (a cache, `~/.cargo`)"#,
        },
        set: |c, v| {
            c.sandbox.writable_roots = absolute_paths(v)?;
            Ok(())
        },
        keep: |c, p| c.sandbox.writable_roots = p.sandbox.writable_roots.clone(),
    },
    Key {
        path: "checkpoints.enabled",
        doc: KeyDoc {
            ty: r#"bool"#,
            default: r#"true"#,
            meaning: r#"a checkpoint of the workspace's files before each user message's turn (see [Checkpoints](#checkpoints))"#,
        },
        set: |c, v| {
            c.checkpoints.enabled = boolean(v)?;
            Ok(())
        },
        keep: |c, p| c.checkpoints.enabled = p.checkpoints.enabled,
    },
    Key {
        path: "checkpoints.maxFileBytes",
        doc: KeyDoc {
            ty: r#"positive integer"#,
            default: r#"10485760"#,
            meaning: r#"larger files are not stored in checkpoints (and are listed as not stored)"#,
        },
        set: |c, v| {
            c.checkpoints.max_file_bytes = positive_integer(v)? as u64;
            Ok(())
        },
        keep: |c, p| c.checkpoints.max_file_bytes = p.checkpoints.max_file_bytes,
    },
    Key {
        path: "checkpoints.maxStoreBytes",
        doc: KeyDoc {
            ty: r#"positive integer"#,
            default: r#"2147483648"#,
            meaning: r#"past this, the oldest sessions' checkpoints are dropped"#,
        },
        set: |c, v| {
            c.checkpoints.max_store_bytes = positive_integer(v)? as u64;
            Ok(())
        },
        keep: |c, p| c.checkpoints.max_store_bytes = p.checkpoints.max_store_bytes,
    },
    Key {
        path: "permissions.allow",
        doc: KeyDoc {
            ty: r#"list of rules"#,
            default: r#"none"#,
            meaning: r#"calls that run without asking, in Claude Code's syntax: `shell(cargo test:*)`, `edit_file(src/**)`, `mcp__docs` (see [Permission rules](#permission-rules)); never read from a workspace"#,
        },
        set: |c, v| {
            c.permissions.allow = permission_rules::rule_list(v, RuleAction::Allow)?;
            Ok(())
        },
        keep: |c, p| c.permissions.allow = p.permissions.allow.clone(),
    },
    Key {
        path: "permissions.ask",
        doc: KeyDoc {
            ty: r#"list of rules"#,
            default: r#"none"#,
            meaning: r#"calls that ask in every mode, `full-auto` and remembered answers included"#,
        },
        set: |c, v| {
            c.permissions.ask = permission_rules::rule_list(v, RuleAction::Ask)?;
            Ok(())
        },
        keep: |c, p| c.permissions.ask = p.permissions.ask.clone(),
    },
    Key {
        path: "permissions.deny",
        doc: KeyDoc {
            ty: r#"list of rules"#,
            default: r#"none"#,
            meaning: r#"calls that never run, whatever the mode, a remembered answer or a hook says: `shell(git push:*)`, `read_file(~/.ssh/**)`"#,
        },
        set: |c, v| {
            c.permissions.deny = permission_rules::rule_list(v, RuleAction::Deny)?;
            Ok(())
        },
        keep: |c, p| c.permissions.deny = p.permissions.deny.clone(),
    },
    Key {
        path: "permissions.rememberAlways",
        doc: KeyDoc {
            ty: r#"`"session"` \| `"workspace"`"#,
            default: r#"`"session"`"#,
            meaning: r#"where an "always" answer is kept: for the session, or also as a rule of this workspace that every later session obeys (`shell(cargo test:*)`; kept under `stateDir`, listed by `agent/permissions` with source `answers`)"#,
        },
        set: |c, v| {
            c.remember_always_in_workspace = one_of(v, &["session", "workspace"])? == "workspace";
            Ok(())
        },
        keep: |c, p| c.remember_always_in_workspace = p.remember_always_in_workspace,
    },
];

fn sandbox_mode(value: &Value) -> Result<crate::sandbox::SandboxMode, String> {
    let name = one_of(value, &crate::sandbox::SANDBOX_MODES)?;
    Ok(crate::sandbox::SandboxMode::from_name(&name).unwrap_or_default())
}

/// A list of absolute paths (a relative one would depend on where the server started).
fn absolute_paths(value: &Value) -> Result<Vec<PathBuf>, String> {
    let Some(items) = value.as_array() else {
        return Err(format!("must be a list of absolute paths, got {value}"));
    };
    items
        .iter()
        .map(|item| match item.as_str() {
            Some(path) if Path::new(path).is_absolute() => Ok(PathBuf::from(path)),
            _ => Err(format!("must be a list of absolute paths, got {item}")),
        })
        .collect()
}

fn string(value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("must be a string, got {value}"))
}

fn boolean(value: &Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("must be true or false, got {value}"))
}

fn one_of(value: &Value, allowed: &[&str]) -> Result<String, String> {
    match value.as_str() {
        Some(s) if allowed.contains(&s) => Ok(s.to_string()),
        _ => Err(format!("must be one of {allowed:?}, got {value}")),
    }
}

/// A number in (0, 1].
fn fraction(value: &Value) -> Result<f64, String> {
    value
        .as_f64()
        .filter(|f| *f > 0.0 && *f <= 1.0)
        .ok_or_else(|| format!("must be a number between 0 and 1, got {value}"))
}

fn positive_integer(value: &Value) -> Result<usize, String> {
    match non_negative_integer(value) {
        Ok(0) | Err(_) => Err(format!("must be a positive integer, got {value}")),
        Ok(n) => Ok(n),
    }
}

fn non_negative_integer(value: &Value) -> Result<usize, String> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("must be a non-negative integer, got {value}"))
}

impl Config {
    /// The configuration `settings` describes, starting from `previous` for rejected keys.
    pub fn from_settings(previous: &Config, settings: &Value) -> (Config, ConfigUpdate) {
        let mut update = ConfigUpdate::default();
        let mut next = Config::default();
        let settings = match settings {
            Value::Null => &Value::Object(Map::new()),
            Value::Object(map)
                if map.len() == 1 && map.get("agentls").is_some_and(Value::is_object) =>
            {
                &map["agentls"]
            }
            other => other,
        };
        let Value::Object(map) = settings else {
            update.problems.push(ConfigProblem {
                key: "(settings)".into(),
                message: format!("must be an object, got {settings}"),
            });
            return (previous.clone(), update);
        };
        let mut leaves = Vec::new();
        flatten("", map, &mut leaves);
        for (key, value) in leaves {
            match KEYS.iter().find(|known| known.path == key) {
                // null means "the default".
                Some(_) if value.is_null() => {}
                Some(known) => {
                    if let Err(message) = (known.set)(&mut next, value) {
                        (known.keep)(&mut next, previous);
                        update.problems.push(ConfigProblem { key, message });
                    }
                }
                None => update.unknown_keys.push(key),
            }
        }
        (next, update)
    }
}

/// Flattens nested objects into dotted keys, but only as deep as the known keys go: a
/// section object that is not a known prefix is reported whole as one unknown key.
fn flatten<'a>(prefix: &str, map: &'a Map<String, Value>, out: &mut Vec<(String, &'a Value)>) {
    for (name, value) in map {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let is_section = KEYS
            .iter()
            .any(|known| known.path.starts_with(&format!("{key}.")));
        match value {
            Value::Object(inner) if is_section => flatten(&key, inner, out),
            _ => out.push((key, value)),
        }
    }
}

/// The settings in force when two sources give them: `over` (the editor's, `--config`) wins
/// key by key over `base` (the user settings file); objects merge recursively, anything else
/// in `over` replaces what `base` has. A null `over` is `base`.
pub fn merge_settings(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            let mut merged = base.clone();
            for (key, value) in over {
                let next = match merged.get(key) {
                    Some(existing) => merge_settings(existing, value),
                    None => value.clone(),
                };
                merged.insert(key.clone(), next);
            }
            Value::Object(merged)
        }
        (base, Value::Null) => base.clone(),
        (_, over) => over.clone(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn editor_settings_win_key_by_key_over_the_user_file() {
        use serde_json::json;
        let file = json!({"approval": "full-auto", "provider": {"kind": "openai", "model": "a"}, "maxSteps": 5});
        let editor = json!({"provider": {"model": "b"}, "maxSteps": 9});
        assert_eq!(
            super::merge_settings(&file, &editor),
            json!({"approval": "full-auto", "provider": {"kind": "openai", "model": "b"}, "maxSteps": 9})
        );
        assert_eq!(super::merge_settings(&file, &serde_json::Value::Null), file);
        assert_eq!(
            super::merge_settings(&serde_json::Value::Null, &editor),
            editor
        );
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn a_small_model_is_known_by_its_name_or_the_setting_and_sampled_greedily() {
        let with =
            |settings: serde_json::Value| Config::from_settings(&Config::default(), &settings).0;
        let qwen = with(json!({"provider": {"model": "qwen2.5-coder-1.5b", "profile": "auto"}}));
        assert!(!with(json!({"provider": {"model": "qwen2.5-coder-1.5b"}})).small_model());
        assert!(qwen.small_model());
        assert_eq!(qwen.sampling_temperature(), Some(0.0));
        let hot = with(
            json!({"provider": {"model": "qwen2.5-coder-1.5b", "profile": "auto", "temperature": 0.7}}),
        );
        assert_eq!(hot.sampling_temperature(), Some(0.7));
        let full = with(json!({"provider": {"model": "qwen2.5-coder-1.5b", "profile": "full"}}));
        assert!(!full.small_model());
        assert_eq!(full.sampling_temperature(), None);
        let large = with(
            json!({"provider": {"model": "gpt-4.1", "profile": "auto", "contextWindow": 8000}}),
        );
        assert!(!large.small_model());
        assert!(
            !with(json!({"provider": {"model": "gemma-2-27b", "profile": "auto"}})).small_model()
        );
        assert!(with(json!({"provider": {"model": "gpt-4.1", "profile": "small"}})).small_model());
        let (kept, update) = Config::from_settings(
            &qwen,
            &json!({"provider": {"model": "qwen2.5-coder-1.5b", "profile": "tiny"}}),
        );
        assert!(kept.small_model());
        assert_eq!(update.problems.len(), 1, "{:?}", update.problems);
    }

    #[test]
    fn mcp_servers_are_a_setting_and_a_bad_entry_keeps_the_previous_servers() {
        let settings = json!({"mcpServers": {"time": {"command": "mcp-server-time"}}});
        let (config, update) = Config::from_settings(&Config::default(), &settings);
        assert_eq!(update, ConfigUpdate::default());
        assert_eq!(config.mcp_servers.len(), 1);
        assert_eq!(config.mcp_servers[0].name, "time");
        let bad = json!({"mcpServers": {"time": {"args": []}}});
        let (next, update) = Config::from_settings(&config, &bad);
        assert_eq!(next.mcp_servers, config.mcp_servers);
        assert_eq!(update.problems[0].key, "mcpServers");
        assert!(update.problems[0].message.contains("needs a command"));
    }

    #[test]
    fn hooks_and_reminder_switches_are_settings_and_a_bad_hooks_value_keeps_the_previous() {
        let settings = json!({
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "check.sh"}]}]},
            "reminders": {"riskyPatterns": false, "maxTokens": 80}
        });
        let (config, update) = Config::from_settings(&Config::default(), &settings);
        assert_eq!(update, ConfigUpdate::default());
        assert_eq!(config.hooks.len(), 1);
        assert_eq!(config.hooks[0].command, "check.sh");
        assert!(!config.reminders.risky && config.reminders.plan);
        assert_eq!(config.reminders.max_tokens, 80);
        let bad = json!({"hooks": {"Stop": "check.sh"}, "reminders": {"plan": "no"}});
        let (next, update) = Config::from_settings(&config, &bad);
        assert_eq!(next.hooks, config.hooks, "the previous hooks stay");
        let keys: Vec<&str> = update.problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["hooks", "reminders.plan"]);
    }

    #[test]
    fn defaults_for_empty_or_null_settings() {
        for settings in [json!(null), json!({})] {
            let (config, update) = Config::from_settings(&Config::default(), &settings);
            assert_eq!(config, Config::default());
            assert_eq!(update, ConfigUpdate::default());
        }
    }

    #[test]
    fn known_keys_are_read_and_nested_or_wrapped_forms_agree() {
        let (a, _) = Config::from_settings(
            &Config::default(),
            &json!({"agentsMd": {"maxBytes": 100}, "syntax": {"maxDocumentBytes": 5}}),
        );
        let (b, _) = Config::from_settings(
            &Config::default(),
            &json!({"agentls": {"agentsMd": {"maxBytes": 100}, "syntax": {"maxDocumentBytes": 5}}}),
        );
        assert_eq!(a.agents_md_max_bytes, 100);
        assert_eq!(a.syntax_max_document_bytes, 5);
        assert_eq!(a, b);
    }

    #[test]
    fn wrong_type_keeps_the_previous_value_and_names_the_key() {
        let previous = Config {
            agents_md_max_bytes: 777,
            ..Config::default()
        };
        let (config, update) = Config::from_settings(
            &previous,
            &json!({"agentsMd": {"maxBytes": "lots"}, "syntax": {"maxDocumentBytes": 9}}),
        );
        assert_eq!(config.agents_md_max_bytes, 777);
        assert_eq!(config.syntax_max_document_bytes, 9);
        assert_eq!(update.problems.len(), 1);
        assert_eq!(update.problems[0].key, "agentsMd.maxBytes");
        assert!(update.problems[0].message.contains("\"lots\""));
        let (config, update) =
            Config::from_settings(&previous, &json!({"agentsMd": {"maxBytes": -1}}));
        assert_eq!(config.agents_md_max_bytes, 777);
        assert_eq!(update.problems[0].key, "agentsMd.maxBytes");
    }

    #[test]
    fn absent_keys_return_to_defaults_and_unknown_keys_are_listed() {
        let previous = Config {
            agents_md_max_bytes: 1,
            syntax_max_document_bytes: 2,
            ..Config::default()
        };
        let (config, update) = Config::from_settings(
            &previous,
            &json!({"colour": {"kind": "openai"}, "agentsMd": {"maxBytes": 3, "colour": 1}}),
        );
        assert_eq!(config.agents_md_max_bytes, 3);
        assert_eq!(
            config.syntax_max_document_bytes,
            Config::default().syntax_max_document_bytes
        );
        assert_eq!(update.unknown_keys, ["agentsMd.colour", "colour"]);
    }

    #[test]
    fn the_repository_map_is_off_by_default_and_its_budget_is_checked() {
        assert_eq!(Config::default().repo_map_max_tokens, 0);
        let (config, update) = Config::from_settings(
            &Config::default(),
            &json!({"context": {"repoMap": {"maxTokens": 2048}}}),
        );
        assert_eq!(update, ConfigUpdate::default());
        assert_eq!(config.repo_map_max_tokens, 2048);
        let (huge, _) = Config::from_settings(
            &Config::default(),
            &json!({"context": {"repoMap": {"maxTokens": 1_000_000}}}),
        );
        assert_eq!(huge.repo_map_max_tokens, crate::repo_map::MAX_TOKENS);
        let (kept, update) = Config::from_settings(
            &config,
            &json!({"context": {"repoMap": {"maxTokens": "lots"}}}),
        );
        assert_eq!(kept.repo_map_max_tokens, 2048);
        assert_eq!(update.problems[0].key, "context.repoMap.maxTokens");
    }

    #[test]
    fn provider_kind_names_a_preset_with_its_defaults() {
        let (config, update) =
            Config::from_settings(&Config::default(), &json!({"provider": {"kind": "groq"}}));
        assert_eq!(update, ConfigUpdate::default());
        let preset = config.preset();
        assert_eq!(preset.wire, crate::provider_kind::ProviderKind::OpenAi);
        assert_eq!(preset.base_url, "https://api.groq.com/openai/v1");
        assert_eq!(preset.api_key_env, "GROQ_API_KEY");
        assert!(!Config::default().preset().models.is_empty());
        // An unknown name is a problem and keeps the previous provider.
        let (config, update) =
            Config::from_settings(&config, &json!({"provider": {"kind": "acme"}}));
        assert_eq!(update.problems[0].key, "provider.kind");
        assert!(update.problems[0].message.contains("ollama"));
        assert_eq!(config.preset().name, "groq");
    }

    #[test]
    fn context_keys_are_validated() {
        let (config, update) = Config::from_settings(
            &Config::default(),
            &json!({
                "developerInstructions": "Prefer small diffs.",
                "tokenizer": "cl100k_base",
                "toolOutputLimit": {"bytes": 4000},
                "editorContext": {"maxTokens": 500},
                "approval": "auto-edit",
                "provider": {"kind": "anthropic", "model": "claude-x", "contextWindow": 1000},
                "prompts": {"dir": "/p"}
            }),
        );
        assert_eq!(update, ConfigUpdate::default());
        assert_eq!(
            config.developer_instructions.as_deref(),
            Some("Prefer small diffs.")
        );
        assert_eq!(config.tokenizer(), TokenizerKind::Cl100kBase);
        assert_eq!(config.tool_output_limit, TruncationPolicy::Bytes(4000));
        assert_eq!(config.editor_context_max_tokens, 500);
        assert_eq!(config.approval, "auto-edit");
        assert_eq!(config.provider_kind, "anthropic");
        let (planning, update) =
            Config::from_settings(&Config::default(), &json!({"approval": "plan"}));
        assert_eq!(update, ConfigUpdate::default());
        assert_eq!(planning.approval, "plan");
        assert_eq!(config.context_window, Some(1000));
        assert_eq!(config.prompts_dir, Some(PathBuf::from("/p")));

        let (config, update) = Config::from_settings(
            &Config::default(),
            &json!({
                "tokenizer": "llama",
                "toolOutputLimit": {"lines": 3},
                "approval": "yolo",
                "provider": {"contextWindow": 0, "model": "gpt-4"}
            }),
        );
        let keys: Vec<_> = update.problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "approval",
                "provider.contextWindow",
                "tokenizer",
                "toolOutputLimit"
            ]
        );
        assert_eq!(
            config.tool_output_limit,
            truncate::DEFAULT_TOOL_OUTPUT_LIMIT
        );
        // Without a configured tokenizer, the model decides.
        assert_eq!(config.tokenizer(), TokenizerKind::Cl100kBase);
    }

    #[test]
    fn a_non_object_is_rejected_whole() {
        let previous = Config {
            agents_md_max_bytes: 5,
            ..Config::default()
        };
        let (config, update) = Config::from_settings(&previous, &json!([1, 2]));
        assert_eq!(config, previous);
        assert_eq!(update.problems[0].key, "(settings)");
    }
}
