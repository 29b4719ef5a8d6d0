//! The model's tools. Each tool is one file: what it does and, in its `Tool` declaration
//! (see `registry`), its name, kind, title, typed input and what the ledger records of it;
//! `input` parses a call's arguments into that input. The path boundary every path argument
//! is checked against is `boundary`; `registry` is what every tool declares and the dispatch
//! the turn calls; `builtin` below is the one list of tools.
//!
//! Reading tools return their output text. Editing tools only plan: they return the new text
//! and its diff. Asking the user's approval is the turn's job (`agentls_core::approval`), and
//! applying an edit is the host's, through the editor, so that open buffers, undo and
//! formatting stay the editor's. No LSP and no network here.

pub mod background;
pub mod boundary;
mod diff;
pub mod edit_file;
pub mod file_change;
pub mod find_symbol;
pub mod git_diff;
pub mod grep;
pub mod input;
pub mod list_dir;
pub mod lsp;
mod lsp_answers;
pub mod lsp_position;
mod lsp_rename;
pub mod read_file;
pub mod registry;
pub mod report_finding;
pub mod save_memory;
#[cfg(test)]
mod schema_check;
pub mod shell;
pub mod shell_kill;
pub mod shell_output;
pub mod shell_process;
pub mod snapshot;
pub mod task;
#[cfg(test)]
mod test_support;
pub mod update_plan;
pub mod write_file;

use crate::tools::registry::AnyTool;

/// Every built-in tool, in the order the model is offered them. Adding one is its file, its
/// `mod` line and a line here, and its schema in `prompts/tools.json`.
pub(crate) fn builtin() -> Vec<Box<dyn AnyTool>> {
    vec![
        Box::new(read_file::ReadFile),
        Box::new(list_dir::ListDir),
        Box::new(grep::Grep),
        Box::new(find_symbol::FindSymbol),
        Box::new(lsp::Lsp),
        Box::new(edit_file::EditFile),
        Box::new(write_file::WriteFile),
        Box::new(shell::Shell),
        Box::new(shell_output::ShellOutput),
        Box::new(shell_kill::ShellKill),
        Box::new(update_plan::UpdatePlan),
        Box::new(save_memory::SaveMemory),
        Box::new(task::Task),
        Box::new(report_finding::ReportFinding),
    ]
}
