//! `lsp`: the editor's own language servers (rust-analyzer, pyright, gopls, tsserver…)
//! asked through the client (`agent/editor/lsp`): a definition, references, a hover, a
//! file's or the workspace's symbols, a rename. Where no language server answers (a client
//! that does not offer them, a file none serves, the terminal, ACP) the answer comes from
//! the workspace symbol index with a note that says so; a rename then is refused with how
//! else to make it.

use serde_json::Value;

use agentls_core::editor_lsp::{self, Operation};
use agentls_core::position::PositionEncoding;
use agentls_core::tool_info::{shorten, ToolKind};

use crate::tools::find_symbol::{find_symbol, FindSymbolInput};
use crate::tools::lsp_answers::render;
use crate::tools::lsp_position::{locate, locate_file, Located, LspInput};
use crate::tools::lsp_rename::plan_rename;
use crate::tools::registry::{text_arg, Prepared, Tool, ToolContext, ToolOutcome};
use crate::tools::{file_change, read_file::cut_line};

pub struct Lsp;

/// Whether tool `name` is described to the model by a host with (or without) the editor's
/// language servers: `lsp` only where they answer it. The one rule the turn and the context
/// reports follow.
pub fn described(name: &str, editor_language_servers: bool) -> bool {
    editor_language_servers || name != Lsp::NAME
}

#[async_trait::async_trait]
impl Tool for Lsp {
    const NAME: &'static str = "lsp";
    type Input = LspInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn call_kind(&self, arguments: &Value) -> ToolKind {
        match text_arg(arguments, "operation") {
            Some("rename") => ToolKind::Edit,
            _ => ToolKind::Read,
        }
    }

    fn title(&self, arguments: &Value) -> String {
        let operation = text_arg(arguments, "operation").unwrap_or("query");
        if let (Some("rename"), Some(new_name)) = (
            text_arg(arguments, "operation"),
            text_arg(arguments, "new_name"),
        ) {
            let old = text_arg(arguments, "symbol").unwrap_or("a symbol");
            return format!("Rename {} to {}", shorten(old), shorten(new_name));
        }
        let what = text_arg(arguments, "symbol").or_else(|| text_arg(arguments, "path"));
        match (what, arguments["line"].as_u64()) {
            (Some(what), Some(line)) => format!("LSP {operation} {}:{line}", shorten(what)),
            (Some(what), None) => format!("LSP {operation} {}", shorten(what)),
            _ => format!("LSP {operation}"),
        }
    }

    async fn prepare(&self, cx: &ToolContext, input: &LspInput) -> Result<Prepared, String> {
        match input.operation {
            Operation::Rename => plan_rename(cx, input).await,
            _ => Ok(Prepared::Nothing),
        }
    }

    async fn run(&self, cx: &ToolContext, input: LspInput, prepared: Prepared) -> ToolOutcome {
        if input.operation == Operation::Rename {
            return file_change::apply(cx, prepared).await;
        }
        ToolOutcome::from_result(
            answer(cx, &input)
                .await
                .map_err(agentls_core::tool_info::error),
        )
    }
}

/// The language server's answer, else the symbol index's with the reason.
async fn answer(cx: &ToolContext, input: &LspInput) -> Result<String, String> {
    let at = match input.operation {
        Operation::WorkspaceSymbols => None,
        Operation::DocumentSymbols => Some(locate_file(cx, input).await?),
        _ => Some(locate(cx, input).await?),
    };
    let query = input.symbol().unwrap_or_default();
    if input.operation == Operation::WorkspaceSymbols && query.is_empty() {
        return Err("workspace_symbols needs `symbol` (a name or the start of one)".into());
    }
    let why = match cx.host.editor_language_servers() {
        Some(encoding) => match ask(cx, input.operation, at.as_ref(), query, encoding).await {
            Ok(text) => return Ok(text),
            Err(why) => format!("the editor's language servers did not answer: {why}"),
        },
        None => "no editor language server answers here (the client does not offer them)".into(),
    };
    let from_index = from_index(cx, input, at.as_ref()).await?;
    Ok(format!(
        "[{why}; this answer is from the workspace symbol index, which matches by name]\n{from_index}"
    ))
}

async fn ask(
    cx: &ToolContext,
    operation: Operation,
    at: Option<&Located>,
    query: &str,
    encoding: PositionEncoding,
) -> Result<String, String> {
    let params = editor_lsp::params(
        operation,
        at.map(|a| &a.uri),
        at.map(|a| a.position(encoding)).unwrap_or_default(),
        query,
        "",
    );
    let result = tokio::select! {
        result = cx.host.editor_lsp(operation.method(), params) => result?,
        () = cx.cancel.cancelled() => return Err("the turn was cancelled".into()),
    };
    render(cx, operation, at, query, &result, encoding).await
}

/// What the symbol index says for the same question.
async fn from_index(
    cx: &ToolContext,
    input: &LspInput,
    at: Option<&Located>,
) -> Result<String, String> {
    if input.operation == Operation::DocumentSymbols {
        return Ok(match at {
            Some(at) => outline(at),
            None => String::new(),
        });
    }
    let name = match input.operation {
        Operation::WorkspaceSymbols => input.symbol().map(str::to_string),
        _ => at.and_then(|a| a.word.clone()),
    };
    let Some(name) = name else {
        return Err(format!(
            "there is no name at {} to look up",
            at.map(Located::place).unwrap_or_default()
        ));
    };
    let Some(symbols) = cx.host.symbols().await else {
        return Err("there is no symbol index here either; use grep".into());
    };
    let query = FindSymbolInput {
        name,
        kind: None,
        path: None,
        references: Some(input.operation == Operation::References),
        limit: Some(match input.operation {
            Operation::References => 50,
            _ => 5,
        }),
    };
    let boundary = cx.boundary.clone();
    tokio::task::spawn_blocking(move || find_symbol(&symbols, &boundary, &query))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.0)
}

/// A file's outline from its syntax tree.
fn outline(at: &Located) -> String {
    use agentls_core::document::Document;
    use agentls_core::language::Language;
    let language = Language::detect("", Some(&at.path));
    let mut document = Document::new(&at.text, 0, language, 8 << 20);
    let Some(tree) = document.tree() else {
        return format!(
            "No outline of {}: its language is not one agentls parses.",
            at.shown
        );
    };
    let symbols = agentls_core::syntax::outline(language, at.text.as_bytes(), tree);
    let mut out = vec![format!("Symbols of {}:", at.shown)];
    let mut stack: Vec<(&agentls_core::syntax::Symbol, usize)> =
        symbols.iter().rev().map(|s| (s, 0)).collect();
    while let Some((symbol, depth)) = stack.pop() {
        let line = at.text[..symbol.selection_range.start.min(at.text.len())]
            .matches('\n')
            .count();
        out.push(format!(
            "{}{} {}  line {}",
            "  ".repeat(depth.min(8)),
            serde_json::to_value(symbol.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            cut_line(&symbol.name, 80),
            line + 1
        ));
        stack.extend(symbol.children.iter().rev().map(|c| (c, depth + 1)));
    }
    out.join("\n")
}
