//! The editor's language servers' answers as the model reads them: places as
//! `path:line:column` with the line of code each (read from the open buffer or the disk,
//! inside the workspace only), lists cut to a count, hover text cut to a length.

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_types::{Location, Url};
use serde_json::Value;

use agentls_core::editor_lsp::{self, FoundSymbol, Operation};
use agentls_core::position::PositionEncoding;

use crate::store::files::read_text;
use crate::tools::lsp_position::Located;
use crate::tools::read_file::cut_line;
use crate::tools::registry::ToolContext;

/// Places listed at most; the rest are counted.
const MAX_PLACES: usize = 100;
/// Symbols listed at most.
const MAX_SYMBOLS: usize = 200;
/// Characters of a hover shown at most.
const MAX_HOVER_CHARS: usize = 6_000;
/// Characters of a line of code shown at most.
const MAX_LINE_CHARS: usize = 200;
/// Source lines shown under a definition.
const DEFINITION_LINES: usize = 4;

/// Files' lines, read once per answer: the open buffer's text, else the disk's, for files
/// inside the workspace (a library's file outside is shown by its place only).
struct Lines<'a> {
    cx: &'a ToolContext,
    files: HashMap<Url, Option<(String, Vec<String>)>>,
}

impl<'a> Lines<'a> {
    fn new(cx: &'a ToolContext) -> Lines<'a> {
        Lines {
            cx,
            files: HashMap::new(),
        }
    }

    /// The file as shown, and its lines when it is inside the workspace and readable.
    async fn file(&mut self, uri: &Url) -> Option<&(String, Vec<String>)> {
        if !self.files.contains_key(uri) {
            let file = self.read(uri).await;
            self.files.insert(uri.clone(), file);
        }
        self.files.get(uri).and_then(Option::as_ref)
    }

    async fn read(&self, uri: &Url) -> Option<(String, Vec<String>)> {
        let path: PathBuf = uri.to_file_path().ok()?;
        let inside = self.cx.boundary.resolve(&path.to_string_lossy()).ok();
        let Some(inside) = inside else {
            return Some((path.to_string_lossy().into_owned(), Vec::new()));
        };
        let shown = self.cx.boundary.display(&inside);
        let text = match self.cx.host.buffer(&inside).await {
            Some((text, _)) => Some(text),
            None => tokio::task::spawn_blocking(move || read_text(&inside).ok())
                .await
                .ok()
                .flatten(),
        };
        let lines = text
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default();
        Some((shown, lines))
    }

    /// `path:line:column` of an LSP position, and the lines from it on (`count` of them).
    async fn place(
        &mut self,
        uri: &Url,
        line: u32,
        character: u32,
        count: usize,
        encoding: PositionEncoding,
    ) -> (String, Vec<String>) {
        let Some((shown, lines)) = self.file(uri).await else {
            return (format!("{uri}:{}", line + 1), Vec::new());
        };
        let first = lines.get(line as usize);
        let column = first.map_or(character as usize + 1, |text| {
            editor_lsp::column_of(text, character, encoding)
        });
        let code = lines
            .iter()
            .skip(line as usize)
            .take(count)
            .map(|l| cut_line(l, MAX_LINE_CHARS).into_owned())
            .collect();
        (format!("{shown}:{}:{column}", line + 1), code)
    }
}

/// The model's reading of a language server's `result` for `operation` asked at `at`
/// (None for `workspace_symbols`, which asks `query`). Err: an answer that is not the
/// standard result's shape.
pub async fn render(
    cx: &ToolContext,
    operation: Operation,
    at: Option<&Located>,
    query: &str,
    result: &Value,
    encoding: PositionEncoding,
) -> Result<String, String> {
    let mut lines = Lines::new(cx);
    let place = at.map(Located::place).unwrap_or_default();
    let about = match at.and_then(|a| a.word.as_deref()) {
        Some(word) => format!("`{word}` at {place}"),
        None => place.clone(),
    };
    Ok(match operation {
        Operation::Definition => {
            let found = editor_lsp::locations(result)?;
            if found.is_empty() {
                return Ok(format!(
                    "The language server found no definition of {about}."
                ));
            }
            let mut out = vec![format!(
                "{} of {about} (the editor's language server):",
                counted(found.len(), "definition")
            )];
            for location in found.iter().take(MAX_PLACES) {
                let start = location.range.start;
                let (place, code) = lines
                    .place(
                        &location.uri,
                        start.line,
                        start.character,
                        DEFINITION_LINES,
                        encoding,
                    )
                    .await;
                out.push(place);
                out.extend(code.into_iter().map(|l| format!("    {l}")));
            }
            out.push(more(found.len(), MAX_PLACES));
            out.join("\n").trim_end().to_string()
        }
        Operation::References => references(&mut lines, &about, result, encoding).await?,
        Operation::Hover => match editor_lsp::hover_text(result)? {
            None => format!("The language server has nothing to show for {about}."),
            Some(text) => format!(
                "Hover for {about} (the editor's language server):\n{}",
                cut_line(&text, MAX_HOVER_CHARS)
            ),
        },
        Operation::DocumentSymbols => {
            let Some(at) = at else {
                return Err("document_symbols needs a file".into());
            };
            let found = editor_lsp::document_symbols(result, &at.uri)?;
            symbols(
                &format!("Symbols of {}", at.shown),
                &found,
                &mut lines,
                true,
            )
            .await
        }
        Operation::WorkspaceSymbols => {
            let found = editor_lsp::workspace_symbols(result)?;
            symbols(
                &format!("Symbols matching `{query}`"),
                &found,
                &mut lines,
                false,
            )
            .await
        }
        Operation::Rename => return Err("a rename is planned, not rendered".into()),
    })
}

async fn references(
    lines: &mut Lines<'_>,
    about: &str,
    result: &Value,
    encoding: PositionEncoding,
) -> Result<String, String> {
    let found: Vec<Location> = editor_lsp::locations(result)?;
    if found.is_empty() {
        return Ok(format!(
            "The language server found no references to {about}."
        ));
    }
    let files = {
        let mut uris: Vec<&Url> = found.iter().map(|l| &l.uri).collect();
        uris.sort();
        uris.dedup();
        uris.len()
    };
    let mut out = vec![format!(
        "{} to {about} in {} (the editor's language server):",
        counted(found.len(), "reference"),
        counted(files, "file")
    )];
    for location in found.iter().take(MAX_PLACES) {
        let start = location.range.start;
        let (place, code) = lines
            .place(&location.uri, start.line, start.character, 1, encoding)
            .await;
        match code.first() {
            Some(code) => out.push(format!("{place}: {}", code.trim())),
            None => out.push(place),
        }
    }
    out.push(more(found.len(), MAX_PLACES));
    Ok(out.join("\n").trim_end().to_string())
}

async fn symbols(
    title: &str,
    found: &[FoundSymbol],
    lines: &mut Lines<'_>,
    outline: bool,
) -> String {
    if found.is_empty() {
        return format!("{title}: none (the editor's language server).");
    }
    let mut out = vec![format!("{title} (the editor's language server):")];
    for symbol in found.iter().take(MAX_SYMBOLS) {
        let detail = symbol
            .detail
            .as_deref()
            .map(|d| format!(" ({})", cut_line(d, 80)))
            .unwrap_or_default();
        let indent = "  ".repeat(symbol.depth.min(8));
        let place = match (outline, symbol.line) {
            (true, Some(line)) => format!("line {}", line + 1),
            (_, line) => {
                let shown = match lines.file(&symbol.uri).await {
                    Some((shown, _)) => shown.clone(),
                    None => symbol.uri.to_string(),
                };
                match line {
                    Some(line) => format!("{shown}:{}", line + 1),
                    None => shown,
                }
            }
        };
        out.push(format!(
            "{indent}{} {}{detail}  {place}",
            symbol.kind, symbol.name
        ));
    }
    out.push(more(found.len(), MAX_SYMBOLS));
    out.join("\n").trim_end().to_string()
}

fn counted(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

fn more(total: usize, shown: usize) -> String {
    match total > shown {
        true => format!("[{} more not shown]", total - shown),
        false => String::new(),
    }
}
