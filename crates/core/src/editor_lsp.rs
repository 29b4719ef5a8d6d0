//! The editor's language servers' answers as data: what the `lsp` tool asks
//! (`agent/editor/lsp`) and how it reads the standard results (definitions, references,
//! hover, symbols, a rename's workspace edit) before the server renders them for the model.
//! Columns cross here between the model's 1-based characters and LSP's units.

use lsp_types::{
    DocumentChangeOperation, DocumentChanges, DocumentSymbol, DocumentSymbolResponse,
    GotoDefinitionResponse, Hover, HoverContents, Location, MarkedString, OneOf, Position,
    SymbolKind, TextEdit, Url, WorkspaceEdit, WorkspaceSymbolResponse,
};
use serde_json::{json, Value};

use crate::position::PositionEncoding;

/// The `lsp` tool's operations, with the standard request each asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    // The names other agents' LSP tools use are taken too: a model trained on them writes them.
    #[serde(
        alias = "goToDefinition",
        alias = "go_to_definition",
        alias = "goto_definition"
    )]
    Definition,
    #[serde(alias = "findReferences", alias = "find_references")]
    References,
    Hover,
    #[serde(alias = "documentSymbol", alias = "document_symbol")]
    DocumentSymbols,
    #[serde(alias = "workspaceSymbol", alias = "workspace_symbol")]
    WorkspaceSymbols,
    Rename,
}

impl Operation {
    pub fn method(self) -> &'static str {
        match self {
            Operation::Definition => "textDocument/definition",
            Operation::References => "textDocument/references",
            Operation::Hover => "textDocument/hover",
            Operation::DocumentSymbols => "textDocument/documentSymbol",
            Operation::WorkspaceSymbols => "workspace/symbol",
            Operation::Rename => "textDocument/rename",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Operation::Definition => "definition",
            Operation::References => "references",
            Operation::Hover => "hover",
            Operation::DocumentSymbols => "document_symbols",
            Operation::WorkspaceSymbols => "workspace_symbols",
            Operation::Rename => "rename",
        }
    }

    /// Whether the operation is asked at a position (`path`, `line`, `character`).
    pub fn at_position(self) -> bool {
        !matches!(
            self,
            Operation::DocumentSymbols | Operation::WorkspaceSymbols
        )
    }
}

/// The standard params of `operation` at `position` of `uri` (`query` for
/// `workspace_symbols`, `new_name` for `rename`).
pub fn params(
    operation: Operation,
    uri: Option<&Url>,
    position: Position,
    query: &str,
    new_name: &str,
) -> Value {
    let document = json!({ "uri": uri.map(Url::as_str) });
    match operation {
        Operation::WorkspaceSymbols => json!({ "query": query }),
        Operation::DocumentSymbols => json!({ "textDocument": document }),
        Operation::References => json!({
            "textDocument": document,
            "position": position,
            "context": { "includeDeclaration": true },
        }),
        Operation::Rename => json!({
            "textDocument": document,
            "position": position,
            "newName": new_name,
        }),
        Operation::Definition | Operation::Hover => json!({
            "textDocument": document,
            "position": position,
        }),
    }
}

/// The LSP character offset of the 1-based `column` (in characters, as the model counts)
/// of `line`; a column past the end is the line's end.
pub fn character_of(line: &str, column: usize, encoding: PositionEncoding) -> u32 {
    let chars = line.chars().take(column.saturating_sub(1));
    let units: usize = match encoding {
        PositionEncoding::Utf8 => chars.map(char::len_utf8).sum(),
        PositionEncoding::Utf16 => chars.map(char::len_utf16).sum(),
        PositionEncoding::Utf32 => chars.count(),
    };
    u32::try_from(units).unwrap_or(u32::MAX)
}

/// The 1-based character column of LSP's `character` on `line` (inside a character: that
/// character; past the end: one past the last).
pub fn column_of(line: &str, character: u32, encoding: PositionEncoding) -> usize {
    let mut units = 0usize;
    for (n, c) in line.chars().enumerate() {
        let width = match encoding {
            PositionEncoding::Utf8 => c.len_utf8(),
            PositionEncoding::Utf16 => c.len_utf16(),
            PositionEncoding::Utf32 => 1,
        };
        if units + width > character as usize {
            return n + 1;
        }
        units += width;
    }
    line.chars().count() + 1
}

/// The byte offset in `line` of LSP's `character` (clamped to the line, rounded down to a
/// character's start).
pub fn byte_of(line: &str, character: u32, encoding: PositionEncoding) -> usize {
    let column = column_of(line, character, encoding);
    line.char_indices()
        .nth(column - 1)
        .map_or(line.len(), |(byte, _)| byte)
}

/// The 1-based column where `symbol` starts on `line` (its first whole-word occurrence,
/// else its first occurrence): how a call that names the symbol but not its column is
/// placed.
pub fn column_of_symbol(line: &str, symbol: &str) -> Option<usize> {
    if symbol.is_empty() {
        return None;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let whole = line.match_indices(symbol).find(|(at, _)| {
        let before = line[..*at].chars().next_back();
        let after = line[at + symbol.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    });
    let (at, _) = whole.or_else(|| line.match_indices(symbol).next())?;
    Some(line[..at].chars().count() + 1)
}

/// The word (letters, digits, `_`, `$`) at the 1-based `column` of `line`, for an answer
/// from the symbol index when no language server answers.
pub fn word_at(line: &str, column: usize) -> Option<&str> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let at = line
        .char_indices()
        .nth(column.saturating_sub(1))
        .map(|(b, _)| b)?;
    if !line[at..].chars().next().is_some_and(is_word) {
        return None;
    }
    let start = line[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(at, |(b, _)| b);
    let end = line[at..]
        .char_indices()
        .find(|(_, c)| !is_word(*c))
        .map_or(line.len(), |(b, _)| at + b);
    Some(&line[start..end])
}

/// Every location of a definition or references answer (`Location`, `Location[]` or
/// `LocationLink[]`; null is none). Err: not one of those shapes.
pub fn locations(result: &Value) -> Result<Vec<Location>, String> {
    if result.is_null() {
        return Ok(Vec::new());
    }
    let response: GotoDefinitionResponse = serde_json::from_value(result.clone())
        .map_err(|e| format!("the answer is not a location list: {e}"))?;
    Ok(match response {
        GotoDefinitionResponse::Scalar(location) => vec![location],
        GotoDefinitionResponse::Array(list) => list,
        GotoDefinitionResponse::Link(links) => links
            .into_iter()
            .map(|link| Location {
                uri: link.target_uri,
                range: link.target_selection_range,
            })
            .collect(),
    })
}

/// A hover's text (markdown or plain), its parts joined; None for no hover.
pub fn hover_text(result: &Value) -> Result<Option<String>, String> {
    if result.is_null() {
        return Ok(None);
    }
    let hover: Hover = serde_json::from_value(result.clone())
        .map_err(|e| format!("the answer is not a hover: {e}"))?;
    let marked = |m: MarkedString| match m {
        MarkedString::String(text) => text,
        MarkedString::LanguageString(code) => {
            format!("```{}\n{}\n```", code.language, code.value)
        }
    };
    let text = match hover.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(list) => list.into_iter().map(marked).collect::<Vec<_>>().join("\n"),
        HoverContents::Markup(markup) => markup.value,
    };
    Ok(Some(text.trim().to_string()).filter(|t| !t.is_empty()))
}

/// One symbol of an outline or a workspace search.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundSymbol {
    pub name: String,
    pub kind: &'static str,
    /// Its container (a workspace symbol's), or its type (a document symbol's detail).
    pub detail: Option<String>,
    pub depth: usize,
    /// Where it is; a workspace symbol may come with its file only (line None).
    pub uri: Url,
    pub line: Option<u32>,
}

/// A document's symbols (`DocumentSymbol[]`, nested, or `SymbolInformation[]`), in order.
pub fn document_symbols(result: &Value, uri: &Url) -> Result<Vec<FoundSymbol>, String> {
    if result.is_null() {
        return Ok(Vec::new());
    }
    let response: DocumentSymbolResponse = serde_json::from_value(result.clone())
        .map_err(|e| format!("the answer is not a symbol list: {e}"))?;
    let mut out = Vec::new();
    match response {
        DocumentSymbolResponse::Flat(list) => {
            for info in list {
                out.push(FoundSymbol {
                    name: info.name,
                    kind: kind_name(info.kind),
                    detail: info.container_name,
                    depth: 0,
                    uri: info.location.uri,
                    line: Some(info.location.range.start.line),
                });
            }
        }
        DocumentSymbolResponse::Nested(list) => flatten(&list, uri, 0, &mut out),
    }
    Ok(out)
}

fn flatten(symbols: &[DocumentSymbol], uri: &Url, depth: usize, out: &mut Vec<FoundSymbol>) {
    for symbol in symbols {
        out.push(FoundSymbol {
            name: symbol.name.clone(),
            kind: kind_name(symbol.kind),
            detail: symbol.detail.clone().filter(|d| !d.is_empty()),
            depth,
            uri: uri.clone(),
            line: Some(symbol.selection_range.start.line),
        });
        if let Some(children) = &symbol.children {
            flatten(children, uri, depth + 1, out);
        }
    }
}

/// A workspace symbol search's answer (`SymbolInformation[]` or `WorkspaceSymbol[]`).
pub fn workspace_symbols(result: &Value) -> Result<Vec<FoundSymbol>, String> {
    if result.is_null() {
        return Ok(Vec::new());
    }
    let response: WorkspaceSymbolResponse = serde_json::from_value(result.clone())
        .map_err(|e| format!("the answer is not a symbol list: {e}"))?;
    Ok(match response {
        WorkspaceSymbolResponse::Flat(list) => list
            .into_iter()
            .map(|info| FoundSymbol {
                name: info.name,
                kind: kind_name(info.kind),
                detail: info.container_name,
                depth: 0,
                uri: info.location.uri,
                line: Some(info.location.range.start.line),
            })
            .collect(),
        WorkspaceSymbolResponse::Nested(list) => list
            .into_iter()
            .map(|symbol| {
                let (uri, line) = match symbol.location {
                    OneOf::Left(location) => (location.uri, Some(location.range.start.line)),
                    OneOf::Right(file) => (file.uri, None),
                };
                FoundSymbol {
                    name: symbol.name,
                    kind: kind_name(symbol.kind),
                    detail: symbol.container_name,
                    depth: 0,
                    uri,
                    line,
                }
            })
            .collect(),
    })
}

/// The text edits of a rename's workspace edit, by file, in the order the answer lists
/// them. Err: not a workspace edit, or one that also creates, renames or deletes files
/// (agentls applies text edits only).
pub fn workspace_edit(result: &Value) -> Result<Vec<(Url, Vec<TextEdit>)>, String> {
    if result.is_null() {
        return Ok(Vec::new());
    }
    let edit: WorkspaceEdit = serde_json::from_value(result.clone())
        .map_err(|e| format!("the answer is not a workspace edit: {e}"))?;
    let mut files: Vec<(Url, Vec<TextEdit>)> = Vec::new();
    let mut add = |uri: Url, edits: Vec<TextEdit>| match files.iter_mut().find(|(u, _)| *u == uri) {
        Some((_, list)) => list.extend(edits),
        None => files.push((uri, edits)),
    };
    match edit.document_changes {
        Some(DocumentChanges::Edits(list)) => {
            for doc in list {
                add(doc.text_document.uri, plain_edits(doc.edits));
            }
        }
        Some(DocumentChanges::Operations(list)) => {
            for operation in list {
                match operation {
                    DocumentChangeOperation::Edit(doc) => {
                        add(doc.text_document.uri, plain_edits(doc.edits))
                    }
                    DocumentChangeOperation::Op(_) => {
                        return Err("the rename also creates, renames or deletes files, which agentls does not apply: rename the file with a command, then the symbol".into())
                    }
                }
            }
        }
        None => {
            let mut changes: Vec<_> = edit.changes.unwrap_or_default().into_iter().collect();
            changes.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            for (uri, edits) in changes {
                add(uri, edits);
            }
        }
    }
    Ok(files)
}

fn plain_edits(edits: Vec<OneOf<TextEdit, lsp_types::AnnotatedTextEdit>>) -> Vec<TextEdit> {
    edits
        .into_iter()
        .map(|edit| match edit {
            OneOf::Left(edit) => edit,
            OneOf::Right(annotated) => annotated.text_edit,
        })
        .collect()
}

/// `edits` (LSP ranges in `encoding`, not overlapping) made to `text`: the byte range of
/// `text` they cover and the text that replaces it. Err names an edit past the end of the
/// text or two that overlap.
pub fn apply_edits(
    text: &str,
    edits: &[TextEdit],
    encoding: PositionEncoding,
) -> Result<(std::ops::Range<usize>, String), String> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let byte = |position: Position| -> Result<usize, String> {
        let line = position.line as usize;
        let Some(&start) = starts.get(line) else {
            return Err(format!(
                "an edit at line {} is past the end of the file ({} lines)",
                line + 1,
                starts.len()
            ));
        };
        let end = starts.get(line + 1).map_or(text.len(), |next| next - 1);
        let content = text[start..end].trim_end_matches('\r');
        Ok(start + byte_of(content, position.character, encoding))
    };
    let mut spans = Vec::with_capacity(edits.len());
    for edit in edits {
        let (start, end) = (byte(edit.range.start)?, byte(edit.range.end)?);
        spans.push((start, end.max(start), edit.new_text.as_str()));
    }
    spans.sort_by_key(|(start, end, _)| (*start, *end));
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err("two edits of the file overlap".into());
    }
    let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
        return Ok((0..0, String::new()));
    };
    let covered = first.0..last.1;
    let mut replacement = String::new();
    let mut at = covered.start;
    for (start, end, new_text) in &spans {
        replacement.push_str(&text[at..*start]);
        replacement.push_str(new_text);
        at = *end;
    }
    replacement.push_str(&text[at..covered.end]);
    Ok((covered, replacement))
}

/// LSP's symbol kind as a word.
pub fn kind_name(kind: SymbolKind) -> &'static str {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_u64())
        .and_then(|n| NAMES.get((n as usize).checked_sub(1)?))
        .copied()
        .unwrap_or("symbol")
}

#[cfg(test)]
#[path = "editor_lsp_tests.rs"]
mod tests;
