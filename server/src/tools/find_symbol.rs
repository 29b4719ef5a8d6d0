//! `find_symbol`: where a name is defined in the workspace (and, on request, where it is
//! used), from the workspace symbol index rather than a text search: definitions with their
//! kind, `path:line`, header and first lines; references as `path:line: text`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::symbol_index::{qualifier_reaches, SymbolKind};
use agentls_core::tool_info::{error, shorten, ToolError, ToolKind};

use crate::store::files::read_text;
use crate::symbols::{FoundDefinition, Symbols};
use crate::tools::boundary::PathBoundary;
use crate::tools::read_file::cut_line;
use crate::tools::registry::{blocking, text_arg, Prepared, Tool, ToolContext, ToolOutcome};

pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 200;
/// Source lines shown under each definition.
const DEFINITION_LINES: usize = 4;
const MAX_LINE_CHARS: usize = 200;

/// `find_symbol`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindSymbolInput {
    pub name: String,
    pub kind: Option<String>,
    pub path: Option<String>,
    pub references: Option<bool>,
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

fn parse_kind(kind: &str) -> Result<SymbolKind, ToolError> {
    Ok(match kind.trim().to_ascii_lowercase().as_str() {
        "function" | "fn" | "func" => SymbolKind::Function,
        "method" => SymbolKind::Method,
        "struct" => SymbolKind::Struct,
        "class" => SymbolKind::Class,
        "enum" => SymbolKind::Enum,
        "trait" => SymbolKind::Trait,
        "interface" => SymbolKind::Interface,
        "impl" => SymbolKind::Impl,
        "module" | "mod" | "namespace" => SymbolKind::Module,
        "constant" | "const" | "static" => SymbolKind::Constant,
        "type" | "typealias" | "type_alias" => SymbolKind::TypeAlias,
        "macro" => SymbolKind::Macro,
        other => {
            return Err(error(format!(
                "unknown kind `{other}`: use function, method, struct, class, enum, trait, \
                 interface, impl, module, constant, type or macro"
            )))
        }
    })
}

fn kind_name(kind: SymbolKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The answer to a `find_symbol` call over `symbols` (blocking: it may read files).
pub fn find_symbol(
    symbols: &Symbols,
    ws: &PathBoundary,
    input: &FindSymbolInput,
) -> Result<String, ToolError> {
    let name = input.name.trim();
    if name.is_empty() {
        return Err(error("a name is required"));
    }
    // `Type::method` and `obj.method` name the method (the index keys by simple name).
    let simple = name
        .rsplit([':', '.'])
        .find(|s| !s.is_empty())
        .unwrap_or(name);
    let kind = input.kind.as_deref().map(parse_kind).transpose()?;
    let prefix = match input.path.as_deref().filter(|p| !p.trim().is_empty()) {
        Some(path) => Some(prefix_of(&ws.resolve(path)?)),
        None => None,
    };
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let status = symbols.status();
    // A qualified name is sorted among every definition; a plain one needs only the first.
    let wanted = if simple != name { usize::MAX } else { limit };
    let (mut definitions, total) =
        symbols.definitions_limited(simple, kind, prefix.as_deref(), wanted);
    if simple != name {
        // Prefer the ones the qualifier names: inside the named container (`impl Type`), or
        // in the named module's file (`errors.HeaderParseError`).
        let qualifier = name[..name.len() - simple.len()].trim_end_matches([':', '.']);
        let container = qualifier.rsplit([':', '.']).next().unwrap_or(qualifier);
        definitions.sort_by_key(|d| {
            let path = d.path.to_string_lossy();
            let named_container = d
                .definition
                .container()
                .is_some_and(|c| c.split_whitespace().any(|w| w.starts_with(container)));
            !(named_container || qualifier_reaches(qualifier, &[], &path, &d.definition))
        });
    }
    let mut out = Vec::new();
    let mut cache = HashMap::new();
    if definitions.is_empty() {
        out.push(format!(
            "No definition of `{simple}` found in the symbol index."
        ));
        if status.status != "ready" {
            out.push(format!(
                "(The index is still being built: {} files so far; try again shortly, or use grep.)",
                status.files
            ));
        }
    } else {
        let shown = definitions.len().min(limit);
        out.push(format!(
            "{total} definition{} of `{simple}`:",
            if total == 1 { "" } else { "s" }
        ));
        for found in &definitions[..shown] {
            out.push(definition_block(ws, found, &mut cache));
        }
        if total > shown {
            out.push(format!(
                "[{} more definitions not shown; narrow with kind or path]",
                total - shown
            ));
        }
    }
    if input.references == Some(true) {
        out.push(String::new());
        out.extend(reference_lines(
            symbols,
            ws,
            simple,
            prefix.as_deref(),
            limit,
            &mut cache,
        ));
    }
    Ok(out.join("\n"))
}

/// A directory prefix ends with `/`, so `src` does not match `src2/`.
fn prefix_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        let mut text = path.as_os_str().to_os_string();
        text.push("/");
        PathBuf::from(text)
    } else {
        path.to_path_buf()
    }
}

fn definition_block(ws: &PathBoundary, found: &FoundDefinition, cache: &mut FileCache) -> String {
    let d = &found.definition;
    let container = d
        .container()
        .map(|c| format!(" in {c}"))
        .unwrap_or_default();
    let mut block = vec![format!(
        "{}:{} {}{container}",
        ws.display(&found.path),
        d.name_line + 1,
        kind_name(d.kind)
    )];
    for line in d.doc().lines().take(3) {
        block.push(format!("    {}", cut_line(line, MAX_LINE_CHARS)));
    }
    match file_lines(cache, &found.path) {
        Some(lines) => {
            let start = d.start_line as usize;
            let end = (d.end_line as usize + 1).min(start + DEFINITION_LINES);
            for line in (start..end.min(lines.len())).filter_map(|n| lines.get(n)) {
                block.push(format!("    {}", cut_line(line, MAX_LINE_CHARS)));
            }
            if d.end_line as usize + 1 > end {
                block.push(format!(
                    "    … ({} lines in all)",
                    d.end_line - d.start_line + 1
                ));
            }
        }
        None => block.push(format!("    {}", d.signature())),
    }
    block.join("\n")
}

fn reference_lines(
    symbols: &Symbols,
    ws: &PathBoundary,
    name: &str,
    prefix: Option<&Path>,
    limit: usize,
    cache: &mut FileCache,
) -> Vec<String> {
    let (references, total, files) = symbols.references_limited(name, prefix, limit);
    if total == 0 {
        return vec![format!("No references to `{name}` found.")];
    }
    let mut out = vec![format!(
        "{total} reference{} to `{name}` in {files} file{}:",
        if total == 1 { "" } else { "s" },
        if files == 1 { "" } else { "s" }
    )];
    for reference in &references {
        let text = file_lines(cache, &reference.path)
            .and_then(|lines| lines.get(reference.line as usize))
            .map(|line| cut_line(line.trim(), MAX_LINE_CHARS).into_owned())
            .unwrap_or_default();
        out.push(format!(
            "{}:{}: {text}",
            ws.display(&reference.path),
            reference.line + 1
        ));
    }
    if total > references.len() {
        out.push(format!(
            "[{} more references not shown; narrow with path or raise limit]",
            total - references.len()
        ));
    }
    out
}

/// A file's text and where each line starts.
struct FileText {
    text: String,
    starts: Vec<usize>,
}

impl FileText {
    fn new(text: String) -> FileText {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        FileText { text, starts }
    }

    /// Line `n` (0-based) without its line break.
    fn get(&self, n: usize) -> Option<&str> {
        let start = *self.starts.get(n)?;
        let end = self.starts.get(n + 1).map_or(self.text.len(), |e| e - 1);
        Some(self.text[start..end.max(start)].trim_end_matches('\r'))
    }

    fn len(&self) -> usize {
        self.starts.len()
    }
}

type FileCache = HashMap<PathBuf, Option<FileText>>;

/// The file's lines, read once per call (a file that cannot be read shows no text).
fn file_lines<'a>(cache: &'a mut FileCache, path: &Path) -> Option<&'a FileText> {
    cache
        .entry(path.to_path_buf())
        .or_insert_with(|| read_text(path).ok().map(FileText::new))
        .as_ref()
}

pub struct FindSymbol;

#[async_trait::async_trait]
impl Tool for FindSymbol {
    const NAME: &'static str = "find_symbol";
    type Input = FindSymbolInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, arguments: &Value) -> String {
        match text_arg(arguments, "name") {
            Some(name) => format!("Find symbol {}", shorten(name)),
            None => "Find a symbol".to_string(),
        }
    }

    async fn run(&self, cx: &ToolContext, input: FindSymbolInput, _: Prepared) -> ToolOutcome {
        let Some(symbols) = cx.host.symbols().await else {
            return ToolOutcome::failed(
                "there is no symbol index in this mode; use grep instead".to_string(),
            );
        };
        let boundary = cx.boundary.clone();
        blocking(move || find_symbol(&symbols, &boundary, &input)).await
    }
}
