//! `read_file`: a file's lines, numbered, a page at a time; the open buffer wins over the disk.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::tool_info::{error, shorten, LedgerRecord, ToolError, ToolKind};
use agentls_core::truncate::line_count;

use crate::store::files::read_text;
use crate::tools::boundary::PathBoundary;
use crate::tools::input::ArgumentProblem;
use crate::tools::registry::{
    blocking, text_arg, OutputBudget, Prepared, Tool, ToolContext, ToolOutcome,
};

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
            from_disk = read_text(&resolved).map_err(|refused| ws.refusal(&resolved, refused))?;
            from_disk.as_str()
        }
    };
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
        let budget = cx.output_budget;
        blocking(move || {
            read_file_within(
                &boundary,
                &input.path,
                input.offset,
                input.limit,
                buffer.as_deref(),
                budget,
            )
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
