//! Where an `lsp` call points: its `path` resolved in the workspace, its 1-based `line`, and
//! its column, from `character` or, when that misses the named `symbol`, from where the
//! symbol stands on the line (a small model counts columns badly and names well).

use std::path::PathBuf;

use lsp_types::{Position, Url};
use schemars::JsonSchema;
use serde::Deserialize;

use agentls_core::editor_lsp::{self, Operation};
use agentls_core::position::PositionEncoding;

use crate::tools::file_change;
use crate::tools::registry::ToolContext;

/// `lsp`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LspInput {
    pub operation: Operation,
    pub path: Option<String>,
    #[schemars(range(min = 1))]
    pub line: Option<usize>,
    #[schemars(range(min = 1))]
    pub character: Option<usize>,
    pub symbol: Option<String>,
    pub new_name: Option<String>,
}

impl LspInput {
    pub fn symbol(&self) -> Option<&str> {
        self.symbol
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }
}

/// The file and position a call names.
pub struct Located {
    pub path: PathBuf,
    pub uri: Url,
    /// The path as shown to the model.
    pub shown: String,
    /// The file's text now (the open buffer's, else the disk's) and its buffer version.
    pub text: String,
    pub version: Option<i32>,
    /// 0-based line, 1-based character column, and the word there.
    pub line: usize,
    pub column: usize,
    pub word: Option<String>,
}

impl Located {
    /// `path:line:column`, as the model reads places.
    pub fn place(&self) -> String {
        format!("{}:{}:{}", self.shown, self.line + 1, self.column)
    }

    /// The LSP position in `encoding`.
    pub fn position(&self, encoding: PositionEncoding) -> Position {
        let line_text = self.text.lines().nth(self.line).unwrap_or_default();
        Position::new(
            self.line as u32,
            editor_lsp::character_of(line_text, self.column, encoding),
        )
    }
}

/// The file a call names (every operation but `workspace_symbols` has one), with its text.
pub async fn locate_file(cx: &ToolContext, input: &LspInput) -> Result<Located, String> {
    let Some(arg) = input.path.as_deref().filter(|p| !p.trim().is_empty()) else {
        return Err(format!(
            "{} needs `path` (the file, relative to the workspace root)",
            input.operation.name()
        ));
    };
    let target = file_change::target(cx, arg).await?;
    let Some(text) = target.current else {
        return Err(format!("{} does not exist", target.shown));
    };
    let path = target.path;
    let uri = Url::from_file_path(&path)
        .map_err(|()| format!("{} cannot be named by a file URI", target.shown))?;
    Ok(Located {
        path,
        uri,
        shown: target.shown,
        text,
        version: target.version,
        line: 0,
        column: 1,
        word: None,
    })
}

/// The file, line and column a call names; Err says what is missing or out of range.
pub async fn locate(cx: &ToolContext, input: &LspInput) -> Result<Located, String> {
    let mut located = locate_file(cx, input).await?;
    let operation = input.operation.name();
    let Some(line) = input.line.filter(|&l| l >= 1) else {
        return Err(format!(
            "{operation} needs `line` (1-based, as read_file numbers lines) and `character` or `symbol`"
        ));
    };
    let lines = located.text.lines().count().max(1);
    let Some(line_text) = located.text.lines().nth(line - 1) else {
        return Err(format!(
            "line {line} is past the end of {} ({lines} lines)",
            located.shown
        ));
    };
    let at_symbol = input
        .symbol()
        .and_then(|symbol| editor_lsp::column_of_symbol(line_text, symbol));
    let column = match (input.character.filter(|&c| c >= 1), at_symbol) {
        // The symbol wins over a column that is not on it.
        (Some(column), Some(symbol_column))
            if editor_lsp::word_at(line_text, column) != input.symbol() =>
        {
            symbol_column
        }
        (Some(column), _) => column,
        (None, Some(symbol_column)) => symbol_column,
        (None, None) => match input.symbol() {
            Some(symbol) => {
                return Err(format!(
                    "`{symbol}` is not on line {line} of {}: {}",
                    located.shown,
                    line_text.trim()
                ))
            }
            None => {
                return Err(format!(
                    "{operation} needs `character` (1-based column) or `symbol` (the name on line {line})"
                ))
            }
        },
    };
    located.word = editor_lsp::word_at(line_text, column).map(str::to_string);
    located.line = line - 1;
    located.column = column;
    Ok(located)
}
