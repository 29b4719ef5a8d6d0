//! `read_file`: a file's lines, numbered, a page at a time; the open buffer wins over the disk.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::tool_info::{error, shorten, LedgerRecord, ToolError, ToolKind};
use agentls_core::truncate::line_count;

use crate::locks::Locked;
use crate::store::files::read_text;
use crate::tools::boundary::PathBoundary;
use crate::tools::input::ArgumentProblem;
use crate::tools::registry::{
    blocking, text_arg, Effect, OutputBudget, Prepared, Tool, ToolContext, ToolOutcome,
};

/// An image file of the workspace (`path` as the tools resolve it), checked.
pub fn read_image(
    boundary: &PathBoundary,
    path: &str,
    declared: Option<&str>,
    formula: agentls_core::image::TokenFormula,
) -> Result<agentls_core::image::Image, String> {
    let resolved = boundary.resolve(path).map_err(|e| e.0)?;
    let shown = boundary.display(&resolved);
    let bytes = crate::store::files::read_image_bytes(
        &resolved,
        agentls_core::image::MAX_IMAGE_BYTES as u64,
    )
    .map_err(|refused| refused.0.replace(&resolved.display().to_string(), &shown))?;
    agentls_core::image::check(&shown, declared, &bytes, formula)
}

/// Lines `read_file` returns when the model gives no limit.
pub const DEFAULT_READ_LIMIT: usize = 2000;
/// A longer line (minified code, data) is cut: one line must not fill the context.
pub const MAX_READ_LINE_CHARS: usize = 2000;

/// `read_file`: the file's lines numbered `L{n}: {line}`, from `offset` (1-based), at most
/// `limit` of them. `buffer` is the open editor buffer, unsaved changes included: it wins over
/// the disk.
pub fn read_file(
    ws: &PathBoundary,
    path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    buffer: Option<&str>,
) -> Result<String, ToolError> {
    read_file_within(ws, path, offset, limit, buffer, None)
}

/// `read_file`, its page ending earlier when its lines would take more than `budget` (what
/// the window has left): the marker then says where to read on, so a large file is read in
/// pages instead of forcing a compaction.
pub fn read_file_within(
    ws: &PathBoundary,
    path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    buffer: Option<&str>,
    budget: Option<OutputBudget>,
) -> Result<String, ToolError> {
    let resolved = ws.resolve(path)?;
    let shown = ws.display(&resolved);
    let from_disk;
    let text = match buffer {
        Some(buffer) => buffer,
        None => {
            from_disk =
                read_text(&resolved).map_err(|refused| missing(ws, path, &resolved, refused))?;
            from_disk.as_str()
        }
    };
    page(text, &shown, offset, limit, budget)
}

/// The refusal of a read, naming the workspace's closest paths when the file does not
/// exist: a model that guessed a path then sees the real one, instead of concluding that
/// the file is not there.
fn missing(
    ws: &PathBoundary,
    asked: &str,
    resolved: &std::path::Path,
    refused: crate::store::files::FileRefused,
) -> ToolError {
    let mut refusal = ws.refusal(resolved, refused);
    if resolved.exists() {
        return refusal;
    }
    let Ok(root) = ws.default_root() else {
        return refusal;
    };
    let files = crate::store::file_index::workspace_files(root, NEAR_PATHS_SCAN);
    let near = agentls_core::near_paths::closest(asked, &files, 5);
    if !near.is_empty() {
        refusal.0.push_str(&format!(
            ". The closest paths in the workspace: {}",
            near.join(", ")
        ));
    }
    refusal
}

/// A file's first page as `read_file` shows it, with the whole text it came from.
pub struct Page {
    pub text: String,
    pub numbered: String,
}

/// The first page of the file at `path` (resolved already) from the disk, as `read_file`
/// without arguments shows it, fitted to `budget`.
pub fn read_page(
    ws: &PathBoundary,
    path: &std::path::Path,
    budget: Option<OutputBudget>,
) -> Result<Page, ToolError> {
    let text = read_text(path).map_err(|refused| ws.refusal(path, refused))?;
    let numbered = page(&text, &ws.display(path), None, None, budget)?;
    Ok(Page { text, numbered })
}

/// Files looked at for the closest paths to a missing one.
const NEAR_PATHS_SCAN: usize = 50_000;

/// A page of `text` (the whole file), numbered.
pub(crate) fn page(
    text: &str,
    shown: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    budget: Option<OutputBudget>,
) -> Result<String, ToolError> {
    if text.is_empty() {
        return Ok("(empty file)".to_string());
    }
    let total = line_count(text);
    let first = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(DEFAULT_READ_LIMIT).max(1);
    if first > total {
        return Err(error(format!(
            "offset {first} is past the end of {shown}, which has {total} line{}",
            if total == 1 { "" } else { "s" }
        )));
    }
    let last = (first - 1).saturating_add(limit).min(total);
    let mut numbered: Vec<String> = text
        .lines()
        .enumerate()
        .skip(first - 1)
        .take(last + 1 - first)
        .map(|(index, line)| format!("L{}: {}", index + 1, cut_line(line, MAX_READ_LINE_CHARS)))
        .collect();
    let fitted = budget.map_or(numbered.len(), |budget| lines_within(&numbered, budget));
    let cut_to_fit = fitted < numbered.len();
    numbered.truncate(fitted);
    let last = first - 1 + numbered.len();
    let mut out = numbered.join("\n");
    if last < total {
        out.push_str(&format!(
            "\n[lines {first}–{last} of {total}{}; read more with offset={}]",
            if cut_to_fit {
                ", as many as the context window has room for"
            } else {
                ""
            },
            last + 1
        ));
    }
    Ok(out)
}

/// How many of `lines` fit `budget` tokens, keeping room for the marker; at least one.
fn lines_within(lines: &[String], budget: OutputBudget) -> usize {
    let available = budget.tokens.saturating_sub(MARKER_TOKENS);
    let mut used = 0;
    for (index, line) in lines.iter().enumerate() {
        used += budget.tokenizer.count(line) + 1;
        if used > available {
            return index.max(1);
        }
    }
    lines.len()
}

/// What the page marker and the output's framing may take.
const MARKER_TOKENS: usize = 48;

/// `line` cut after `max_chars` characters, with a marker saying how much was cut.
pub(crate) fn cut_line(line: &str, max_chars: usize) -> Cow<'_, str> {
    match line.char_indices().nth(max_chars) {
        None => Cow::Borrowed(line),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… [{} more characters]",
            &line[..cut],
            line[cut..].chars().count()
        )),
    }
}

/// What the model reads of an image it asked for: what it is, then the image itself
/// (`Effect::Images`, recorded after the output).
fn image_outcome(image: agentls_core::image::Image) -> ToolOutcome {
    let bytes = image.data.len() / 4 * 3;
    let mut outcome = ToolOutcome::ok(format!(
        "{} is an image ({}, {}x{} pixels, about {} KB); it is attached after the tool results.",
        image.name,
        image.mime_type,
        image.width,
        image.height,
        bytes.div_ceil(1024)
    ));
    outcome.effect = Some(Effect::Images(vec![image]));
    outcome
}

pub struct ReadFile;

/// `read_file`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileInput {
    pub path: String,
    // 1-based; 0 reads from the first line too.
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Input = ReadFileInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, arguments: &Value) -> String {
        let Some(path) = text_arg(arguments, "path") else {
            return "Read a file".to_string();
        };
        let path = shorten(path);
        let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
        match (number("offset"), number("limit")) {
            (None, None) => format!("Read {path}"),
            (offset, Some(limit)) => {
                let first = offset.unwrap_or(1).max(1);
                let last = first.saturating_add(limit.max(1) - 1);
                format!("Read {path} (lines {first}–{last})")
            }
            (Some(offset), None) => format!("Read {path} (from line {offset})"),
        }
    }

    fn ledger_record(&self) -> LedgerRecord {
        LedgerRecord::FileRead
    }

    /// A missing path is refused as an empty one is (by the boundary).
    fn refusal(&self, _: &ToolContext, _: &Value, problem: ArgumentProblem) -> String {
        match problem {
            ArgumentProblem::Missing { .. } if problem.field() == Some("path") => {
                "a path is required".to_string()
            }
            problem => problem.sentence(Self::NAME),
        }
    }

    async fn run(&self, cx: &ToolContext, input: ReadFileInput, _: Prepared) -> ToolOutcome {
        let path = match cx.boundary.resolve(&input.path) {
            Ok(path) => path,
            Err(refused) => return ToolOutcome::failed(refused.0),
        };
        let buffer = cx.host.buffer(&path).await.map(|(text, _)| text);
        let boundary = cx.boundary.clone();
        // An image file, for a model that sees images: the image itself, after the output.
        if let Some(formula) = cx.images.filter(|_| buffer.is_none()) {
            if agentls_core::image::mime_for_name(&input.path).is_some() {
                let path = input.path.clone();
                let read = tokio::task::spawn_blocking(move || {
                    read_image(&boundary, &path, None, formula)
                })
                .await;
                return match read {
                    Ok(Ok(image)) => image_outcome(image),
                    Ok(Err(message)) => ToolOutcome::failed(message),
                    Err(err) => ToolOutcome::failed(err.to_string()),
                };
            }
        }
        let budget = cx.output_budget;
        let reads = cx.reads.clone();
        blocking(move || {
            let from_disk;
            let text = match buffer.as_deref() {
                Some(buffer) => buffer,
                None => {
                    from_disk = read_text(&path)
                        .map_err(|refused| missing(&boundary, &input.path, &path, refused))?;
                    from_disk.as_str()
                }
            };
            let shown = boundary.display(&path);
            let page = page(text, &shown, input.offset, input.limit, budget)?;
            // What the model has now seen: a change to this text may follow.
            if let Some(reads) = reads {
                reads.locked().saw(&path, text);
            }
            Ok(page)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::*;

    #[test]
    fn read_file_numbers_lines_and_pages() {
        let (_dir, ws) = workspace();
        write(&ws, "src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
        assert_eq!(
            read_file(&ws, "src/lib.rs", None, None, None).unwrap(),
            "L1: pub fn answer() -> u32 {\nL2:     41\nL3: }"
        );
        // The open buffer's unsaved text wins over the disk.
        let buffered = read_file(
            &ws,
            "src/lib.rs",
            None,
            None,
            Some("pub fn answer() -> u32 {\n    42\n}\n"),
        )
        .unwrap();
        assert!(buffered.contains("L2:     42"), "{buffered}");

        let long: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        write(&ws, "long.txt", &long);
        assert_eq!(
            read_file(&ws, "long.txt", Some(3), Some(2), None).unwrap(),
            "L3: line 3\nL4: line 4\n[lines 3–4 of 10; read more with offset=5]"
        );
        assert_eq!(
            read_file(&ws, "long.txt", Some(9), None, None).unwrap(),
            "L9: line 9\nL10: line 10"
        );
        let err = read_file(&ws, "long.txt", Some(11), None, None)
            .unwrap_err()
            .0;
        assert!(
            err.contains("long.txt") && err.contains("10 lines"),
            "{err}"
        );

        write(&ws, "wide.txt", &"x".repeat(MAX_READ_LINE_CHARS + 5));
        let wide = read_file(&ws, "wide.txt", None, None, None).unwrap();
        assert!(
            wide.ends_with("… [5 more characters]"),
            "{}",
            &wide[wide.len() - 40..]
        );

        write(&ws, "empty.txt", "");
        assert_eq!(
            read_file(&ws, "empty.txt", None, None, None).unwrap(),
            "(empty file)"
        );

        std::fs::write(root(&ws).join("tool.bin"), [0x7f, b'E', b'L', b'F', 0, 1]).unwrap();
        let err = read_file(&ws, "tool.bin", None, None, None).unwrap_err().0;
        assert!(err.contains("tool.bin is a binary file"), "{err}");
        assert!(!err.contains(root(&ws).to_str().unwrap()), "{err}");
        let err = read_file(&ws, "missing.rs", None, None, None)
            .unwrap_err()
            .0;
        assert!(err.contains("missing.rs"), "{err}");
        let err = read_file(&ws, "../x", None, None, None).unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
    }
}
