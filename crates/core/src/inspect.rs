//! What the model will see, from gathered inputs: the static context, the turn block and the
//! assembled request, reported section by section. Shared by the LSP request
//! `agent/session/context` and the `agentls context` command; both gather the inputs (open
//! buffers or files on disk, AGENTS.md, skills) and call [`report`]. No IO here.

use serde_json::Value;

use crate::agents_md::AgentsChain;
use crate::config::Config;
use crate::context::{
    self, AgentsMdInstructions, AssemblyCache, AssemblyConfig, Pending, Section, StaticContext,
    TurnBlock,
};
use crate::document::DocumentSnapshot;
use crate::editor_context::{self, ActiveFile, OpenBuffer, PartReport};
use crate::editor_state::ResolvedEditor;
use crate::environment::Environment;
use crate::history::History;
use crate::models;
use crate::prompts::Prompts;
use crate::skills::{self, Skill};
use crate::tokens::Calibration;
use crate::wire;

/// The document the user is in, with the editor state resolved to its bytes.
pub struct ActiveDocument {
    pub display_path: String,
    pub snapshot: DocumentSnapshot,
    pub editor: ResolvedEditor,
}

pub struct OtherDocument {
    pub display_path: String,
    pub snapshot: DocumentSnapshot,
}

pub struct Inputs<'a> {
    pub config: &'a Config,
    pub prompts: &'a Prompts,
    pub environment: &'a Environment,
    pub agents: Option<&'a AgentsChain>,
    pub skills: &'a [Skill],
    pub active: Option<&'a ActiveDocument>,
    pub others: &'a [OtherDocument],
    /// The definitions the workspace's symbol index holds for the identifiers in play,
    /// when the host has an index.
    pub workspace: Option<&'a editor_context::WorkspaceDefinitions>,
    /// The repository map the host keeps (`repo_map`), rendered; empty: none.
    pub repo_map: &'a str,
    /// The memory block (`memory::render`); empty: none.
    pub memory: &'a str,
    pub history: &'a History,
    pub calibration: Calibration,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextReport {
    pub context_window: usize,
    pub total_tokens: usize,
    pub fill: f64,
    pub estimated: bool,
    /// The request size at which a model call waits for a compaction: `compaction.threshold`
    /// of the usable window (the window less the output reserve), as the turn computes it.
    pub threshold_tokens: usize,
    /// Whether compaction runs by itself at that threshold (`compaction.auto`).
    pub auto_compact: bool,
    pub sections: Vec<Section>,
    /// Exactly the `messages` the configured provider would be sent next.
    pub messages: Vec<Value>,
    pub tokenizer: &'static str,
    pub calibration: Calibration,
    /// How the editor context block used its budget, part by part.
    pub editor_parts: Vec<PartReport>,
}

pub fn static_context(inputs: &Inputs) -> StaticContext {
    let agents_md = inputs
        .agents
        .filter(|chain| !chain.text.is_empty())
        .map(|chain| AgentsMdInstructions {
            dir: chain.dir.to_string_lossy().into_owned(),
            text: chain.text.clone(),
        });
    // A small model is offered less, said shortly (`provider.profile`).
    let (tools, system_prompt) = if inputs.config.small_model() {
        (
            inputs.prompts.small_model_tools(),
            inputs.prompts.system_small.clone(),
        )
    } else {
        (inputs.prompts.tools.clone(), inputs.prompts.system.clone())
    };
    StaticContext {
        tools,
        system_prompt,
        developer_instructions: inputs.config.developer_instructions.clone(),
        agents_md,
        skills_index: skills::render(inputs.skills, &inputs.prompts.skills),
        memory: inputs.memory.to_string(),
        repo_map: inputs.repo_map.to_string(),
    }
}

pub fn turn_block(inputs: &Inputs, cache: &mut AssemblyCache) -> TurnBlock {
    let tokenizer = inputs.config.tokenizer();
    let editor = inputs.active.map(|active| {
        let others: Vec<OpenBuffer> = inputs
            .others
            .iter()
            .map(|o| OpenBuffer {
                display_path: &o.display_path,
                snapshot: &o.snapshot,
            })
            .collect();
        let file = ActiveFile {
            display_path: &active.display_path,
            snapshot: &active.snapshot,
            cursor: active.editor.cursor,
            selection: active.editor.selection.clone(),
            visible: active.editor.visible.clone(),
            diagnostics: active.editor.diagnostics.clone(),
        };
        editor_context::build(
            &file,
            &others,
            inputs.workspace,
            &inputs.prompts.data_boundary,
            inputs.config.editor_context_max_tokens,
            inputs.config.editor_whole_file_max_tokens,
            tokenizer,
            &mut cache.counts,
            &mut cache.outlines,
        )
    });
    context::turn_block(inputs.environment, editor, tokenizer, &mut cache.counts)
}

/// Everything of the next request that does not borrow the history: the static context,
/// the turn block, the assembly settings.
pub struct Prepared {
    pub static_context: StaticContext,
    pub block: TurnBlock,
    pub config: AssemblyConfig,
}

pub fn prepare(inputs: &Inputs, cache: &mut AssemblyCache) -> Prepared {
    Prepared {
        static_context: static_context(inputs),
        block: turn_block(inputs, cache),
        config: AssemblyConfig {
            tokenizer: inputs.config.tokenizer(),
            context_window: models::context_window(
                inputs.config.context_window,
                inputs.config.model.as_deref(),
            ),
            calibration: inputs.calibration,
        },
    }
}

impl Prepared {
    /// The request the next prompt would produce, with `text` as what the user typed.
    pub fn request<'a>(
        &'a self,
        history: &'a History,
        text: &str,
        prompts: &Prompts,
        cache: &mut AssemblyCache,
    ) -> context::Request<'a> {
        context::assemble(
            &self.config,
            &self.static_context,
            history,
            Some(Pending {
                text,
                block: &self.block,
            }),
            prompts,
            &mut cache.counts,
        )
    }
}

/// The request the next prompt would produce (with `text` as what the user typed; empty
/// for an inspection without a prompt), reported.
pub fn report(inputs: &Inputs, text: &str, cache: &mut AssemblyCache) -> ContextReport {
    let mut prepared = prepare(inputs, cache);
    // The tools an ordinary turn offers: `report_finding` is a review turn's only, and
    // `save_memory` goes with `memory.enabled` (as `Turn::offer_tools` decides).
    prepared.static_context.tools.retain(|tool| {
        tool.name != crate::review::REPORT_FINDING_TOOL
            && (inputs.config.memory_enabled || tool.name != "save_memory")
    });
    let request = prepared.request(inputs.history, text, inputs.prompts, cache);
    ContextReport {
        context_window: request.context_window,
        total_tokens: request.total_tokens,
        fill: request.fill(),
        estimated: request.estimated,
        threshold_tokens: (inputs.config.compaction.threshold
            * crate::compaction::usable_window(
                request.context_window,
                inputs.config.max_output_tokens,
            ) as f64) as usize,
        auto_compact: inputs.config.compaction.auto,
        sections: request.sections.clone(),
        // Exactly what the configured provider would be sent.
        messages: wire::messages(inputs.config.preset().wire, &request, inputs.prompts),
        tokenizer: prepared.config.tokenizer.name(),
        calibration: inputs.calibration,
        editor_parts: prepared
            .block
            .editor
            .as_ref()
            .map(|e| e.parts.clone())
            .unwrap_or_default(),
    }
}
