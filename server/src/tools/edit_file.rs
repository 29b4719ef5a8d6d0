//! `edit_file`: one exact occurrence of `old_text` replaced by `new_text`, planned (with its
//! diff) for the host to approve and apply.

use std::ops::Range;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::prompts::fill;
use agentls_core::tool_info::{error, shorten, LedgerRecord, ToolError, ToolKind};

use crate::host::FileChange;
use crate::locks::Locked;
use crate::tools::boundary::PathBoundary;
use crate::tools::diff::unified_diff;
use crate::tools::file_change;
use crate::tools::grep::MAX_GREP_LINE_CHARS;
use crate::tools::read_file::cut_line;
use crate::tools::registry::{text_arg, Prepared, Tool, ToolContext, ToolOutcome};

/// Line numbers listed in an error message before `…`.
const MAX_LISTED_LINES: usize = 10;

/// An `edit_file` call checked and computed, for the host to approve and apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEdit {
    pub path: PathBuf,
    /// Byte range of `old_text` in the current text.
    pub range: Range<usize>,
    pub new_text: String,
    /// Unified diff of the whole file, `--- a/<path>` `+++ b/<path>`.
    pub diff: String,
    /// How old_text matched when it did not match exactly (the model is told).
    pub matched: Option<String>,
}

/// `edit_file`: replace the one exact occurrence of `old_text` in `current` (the open buffer or
/// the disk's text). When it does not occur exactly once, the error says why and where, so the
/// model can correct its old_text rather than guess.
pub fn plan_edit(
    ws: &PathBoundary,
    path: &str,
    current: &str,
    old_text: &str,
    new_text: &str,
) -> Result<PlannedEdit, ToolError> {
    let resolved = ws.resolve(path)?;
    let shown = ws.display(&resolved);
    if old_text.is_empty() {
        return Err(error(
            "old_text is empty; to create a file or replace its whole content, use write_file",
        ));
    }
    if old_text == new_text {
        return Err(error(unchanged(&shown, current, old_text)));
    }
    let found = occurrences(current, old_text);
    let (range, new_text, matched) = match found.as_slice() {
        [start] => (*start..start + old_text.len(), new_text.to_string(), None),
        [] => match loose_match(current, old_text, new_text) {
            Some(Ok(loose)) => (loose.range, loose.new_text, Some(loose.how)),
            Some(Err(ambiguous)) => return Err(error(format!("{ambiguous} in {shown}"))),
            None => return Err(not_found(&shown, current, old_text, new_text)),
        },
        _ => {
            let lines: Vec<usize> = found.iter().map(|&at| line_at(current, at)).collect();
            return Err(error(format!(
                "old_text occurs {} times in {shown} (at {}); include more surrounding lines in old_text so that it matches exactly once",
                found.len(),
                describe_lines(&lines)
            )));
        }
    };
    let mut edited = String::with_capacity(current.len() - range.len() + new_text.len());
    edited.push_str(&current[..range.start]);
    edited.push_str(&new_text);
    edited.push_str(&current[range.end..]);
    if edited == current {
        return Err(error(unchanged(&shown, current, old_text)));
    }
    let diff = unified_diff(
        current,
        &edited,
        &format!("a/{shown}"),
        &format!("b/{shown}"),
    );
    let matched = matched.map(|how| {
        let first = line_at(current, range.start);
        let last = line_at(current, range.end.saturating_sub(1).max(range.start));
        format!("old_text matched line(s) {first}–{last} of {shown} {how}")
    });
    Ok(PlannedEdit {
        path: resolved,
        range,
        new_text,
        diff,
        matched,
    })
}

/// The refusal of an edit that changes nothing, with the file's text where old_text is (or
/// says it is not there): a model that repeats such an edit has usually lost track of what
/// the file holds.
fn unchanged(shown: &str, current: &str, old_text: &str) -> String {
    let mut message =
        "old_text and new_text are the same; the edit would change nothing.".to_string();
    let at = occurrences(current, old_text).first().copied().or_else(|| {
        match loose_match(current, old_text, old_text) {
            Some(Ok(loose)) => Some(loose.range.start),
            _ => None,
        }
    });
    match at {
        Some(at) => {
            let line = line_at(current, at);
            let first = line.saturating_sub(3).max(1);
            let last = line + old_text.lines().count().max(1) + 2;
            let numbered: Vec<String> = current
                .lines()
                .enumerate()
                .skip(first - 1)
                .take(last + 1 - first)
                .map(|(i, text)| format!("L{}: {}", i + 1, cut_line(text, MAX_GREP_LINE_CHARS)))
                .collect();
            message.push_str(&format!(
                " {shown} reads there now:\n{}\nIf the change you want is already there, it is done; otherwise give new_text the text it should read.",
                numbered.join("\n")
            ));
        }
        None => message.push_str(&format!(
            " old_text is not in {shown} either: read it with read_file and copy the text to replace exactly."
        )),
    }
    message
}

/// A match of old_text found once the model's drift was forgiven: the byte range of the
/// file's lines it covers, new_text adapted the same way, and what was forgiven.
struct Loose {
    range: Range<usize>,
    new_text: String,
    how: &'static str,
}

/// old_text matched after loosening, in order: the `L12: ` line numbers of `read_file`'s
/// output copied into the texts (a small model does); a Markdown fence around the texts;
/// then line by line with line endings and trailing whitespace ignored; then with
/// indentation ignored (new_text re-indented by the same amount). None: no match; Err: it
/// matches at several places (said with their lines).
fn loose_match(current: &str, old_text: &str, new_text: &str) -> Option<Result<Loose, String>> {
    if let Some(old) = unnumber(old_text) {
        let new = unnumber(new_text).unwrap_or_else(|| new_text.to_string());
        let how = "once the `L12: ` line numbers copied from read_file were removed";
        if let [start] = occurrences(current, &old).as_slice() {
            return Some(Ok(Loose {
                range: *start..start + old.len(),
                new_text: new,
                how,
            }));
        }
        return loose_match(current, &old, &new)
            .map(|found| found.map(|loose| Loose { how, ..loose }));
    }
    if let (Some(old), new) = (unfence(old_text), unfence(new_text)) {
        let new = new.unwrap_or(new_text);
        if let [start] = occurrences(current, old).as_slice() {
            return Some(Ok(Loose {
                range: *start..start + old.len(),
                new_text: new.to_string(),
                how: "once the ``` fence around old_text was removed",
            }));
        }
        return loose_match(current, old, new);
    }
    match_loosened_lines(current, old_text, new_text)
}

/// old_text matched line by line, first with line endings and trailing whitespace ignored,
/// then with indentation ignored too (`loose_match`'s last two steps).
fn match_loosened_lines(
    current: &str,
    old_text: &str,
    new_text: &str,
) -> Option<Result<Loose, String>> {
    let crlf = current.contains("\r\n");
    let loosenings: [(Trim, &'static str); 2] = [
        (
            str::trim_end,
            "with line endings and trailing whitespace ignored",
        ),
        (
            str::trim,
            "with indentation ignored (new_text was re-indented to match)",
        ),
    ];
    let file_lines = lines_with_offsets(current);
    let old_lines: Vec<&str> = old_text
        .trim_end_matches(['\n', '\r'])
        .split('\n')
        .collect();
    if old_lines.iter().all(|line| line.trim().is_empty()) {
        return None;
    }
    for (trim, how) in loosenings {
        let starts: Vec<usize> = (0..file_lines.len().saturating_sub(old_lines.len() - 1))
            .filter(|&i| {
                old_lines
                    .iter()
                    .enumerate()
                    .all(|(k, old)| trim(file_lines[i + k].1) == trim(old))
            })
            .collect();
        match starts.as_slice() {
            [] => continue,
            [i] => {
                let first = file_lines[*i];
                let last = file_lines[i + old_lines.len() - 1];
                let mut end = last.0 + last.1.trim_end_matches('\r').len();
                // old_text ended with its line's newline: the range takes it too.
                if old_text.ends_with('\n') && current[end..].starts_with(['\r', '\n']) {
                    end += if current[end..].starts_with("\r\n") {
                        2
                    } else {
                        1
                    };
                }
                let mut new = if how.starts_with("with indentation") {
                    reindent(new_text, indent(old_lines[0]), indent(first.1))
                } else {
                    new_text.to_string()
                };
                if crlf {
                    new = new.replace("\r\n", "\n").replace('\n', "\r\n");
                }
                return Some(Ok(Loose {
                    range: first.0..end,
                    new_text: new,
                    how,
                }));
            }
            several => {
                let lines: Vec<usize> = several.iter().map(|i| i + 1).collect();
                return Some(Err(format!(
                    "old_text matches {} places {how} (at {}); include more surrounding lines so that it matches once",
                    several.len(),
                    describe_lines(&lines)
                )));
            }
        }
    }
    None
}

/// The text without the `L12: ` prefix of each line, when every line has one (as
/// `read_file` shows lines).
fn unnumber(text: &str) -> Option<String> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut lines = Vec::new();
    for line in body.split('\n') {
        let rest = line.strip_prefix('L')?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let rest = rest[digits..].strip_prefix(':').filter(|_| digits > 0)?;
        lines.push(rest.strip_prefix(' ').unwrap_or(rest));
    }
    let mut plain = lines.join("\n");
    if body.len() < text.len() {
        plain.push('\n');
    }
    Some(plain)
}

/// The text inside a Markdown fence (```lang … ```), when the whole text is one.
fn unfence(text: &str) -> Option<&str> {
    let trimmed = text.trim();
    let rest = trimmed.strip_prefix("```")?;
    let body = rest.split_once('\n')?.1;
    let body = body.trim_end().strip_suffix("```")?;
    Some(body.strip_suffix('\n').unwrap_or(body))
}

/// Each line's byte offset and text (without its `\n`).
fn lines_with_offsets(text: &str) -> Vec<(usize, &str)> {
    let mut offset = 0;
    text.split('\n')
        .map(|line| {
            let at = offset;
            offset += line.len() + 1;
            (at, line)
        })
        .collect()
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// new_text's lines moved from the model's indentation (`from`) to the file's (`to`).
fn reindent(text: &str, from: &str, to: &str) -> String {
    text.split('\n')
        .map(|line| {
            if line.trim().is_empty() {
                return line.to_string();
            }
            match line.strip_prefix(from) {
                Some(rest) => format!("{to}{rest}"),
                None => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `needle` starts in `haystack`, overlapping occurrences included: `aa` in `aaa` is
/// ambiguous, and an edit must not pick one of two silently.
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = haystack[from..].find(needle) {
        found.push(from + at);
        from += at + step;
    }
    found
}

/// The 1-based line of byte offset `at`.
fn line_at(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn describe_lines(lines: &[usize]) -> String {
    let mut listed: Vec<String> = lines
        .iter()
        .take(MAX_LISTED_LINES)
        .map(usize::to_string)
        .collect();
    if lines.len() > MAX_LISTED_LINES {
        listed.push("…".to_string());
    }
    let word = if lines.len() == 1 { "line" } else { "lines" };
    format!("{word} {}", listed.join(", "))
}

/// The not-found error, with the nearest thing to a match the model can act on: the same text
/// with other line endings or whitespace, or where its first line is.
fn not_found(shown: &str, current: &str, old_text: &str, new_text: &str) -> ToolError {
    let mut message = format!("old_text was not found in {shown}.");
    // The same edit a second time: say it is done, or a model repeats it until stopped.
    if !new_text.trim().is_empty() && new_text != old_text {
        if let Some(&at) = occurrences(current, new_text).first() {
            message.push_str(&format!(
                " new_text is already there (line {}): this edit was already made; do not repeat it.",
                line_at(current, at)
            ));
            return error(message);
        }
    }
    let lf = |text: &str| text.replace("\r\n", "\n");
    let lines = match_lines(&lf(current), &lf(old_text));
    if !lines.is_empty() {
        let endings = if current.contains("\r\n") {
            "the file has CRLF (\\r\\n) line endings; write old_text with \\r\\n line endings too"
        } else {
            "the file has LF (\\n) line endings but old_text has CRLF (\\r\\n)"
        };
        message.push_str(&format!(
            " It matches at {} if line endings are ignored: {endings}.",
            describe_lines(&lines)
        ));
        return error(message);
    }
    // Looser and looser: what differs is what the model must copy exactly.
    let loosenings: [(Trim, &str, &str); 2] = [
        (
            str::trim_end,
            "trailing whitespace",
            "trailing spaces and tabs",
        ),
        (str::trim, "indentation", "indentation"),
    ];
    for (trim, ignored, included) in loosenings {
        let lines = match_lines(&trim_lines(current, trim), &trim_lines(old_text, trim));
        if !lines.is_empty() {
            message.push_str(&format!(
                " It matches at {} if {ignored} is ignored: copy old_text exactly as read_file shows it, {included} included.",
                describe_lines(&lines)
            ));
            return error(message);
        }
    }
    let first_line = old_text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty());
    if let Some(first_line) = first_line {
        let lines: Vec<usize> = current
            .lines()
            .enumerate()
            .filter(|(_, line)| line.contains(first_line))
            .map(|(index, _)| index + 1)
            .collect();
        if !lines.is_empty() {
            message.push_str(&format!(
                " Its first line `{}` occurs at {}, but the following lines differ:",
                cut_line(first_line, MAX_GREP_LINE_CHARS),
                describe_lines(&lines)
            ));
            message.push_str(
                &small_file_shown(shown, current).unwrap_or_else(|| {
                    " read the file there and copy old_text exactly.".to_string()
                }),
            );
            return error(message);
        }
    }
    message.push_str(&small_file_shown(shown, current).unwrap_or_else(|| {
        " Read the file again with read_file and copy the text to replace exactly, whitespace included.".to_string()
    }));
    error(message)
}

/// A small file (an exercise's stub) whole, for the not-found error: a small model that
/// guessed its text guesses again after "read it again" and repeats the edit until stopped.
fn small_file_shown(shown: &str, current: &str) -> Option<String> {
    if !shown_whole(current) {
        return None;
    }
    let end = if current.ends_with('\n') || current.is_empty() {
        ""
    } else {
        "\n"
    };
    Some(format!(
        " The whole file is:\n--- {shown} ---\n{current}{end}--- end of {shown} ---\nCopy old_text exactly from it, or call write_file with the whole new content of {shown} to replace all of it."
    ))
}

/// Whether a not-found error shows `current` whole (and so counts as its read).
fn shown_whole(current: &str) -> bool {
    current.len() <= SHOWN_WHOLE_BYTES && current.lines().count() <= SHOWN_WHOLE_LINES
}

/// A file this small is shown whole when an edit's old_text is not found in it.
const SHOWN_WHOLE_LINES: usize = 40;
const SHOWN_WHOLE_BYTES: usize = 4096;

/// The lines where `needle` occurs in `haystack` (normalized texts with the same lines).
fn match_lines(haystack: &str, needle: &str) -> Vec<usize> {
    if needle.trim().is_empty() {
        return Vec::new();
    }
    occurrences(haystack, needle)
        .into_iter()
        .map(|at| line_at(haystack, at))
        .collect()
}

/// How a line is loosened before comparing.
type Trim = fn(&str) -> &str;

fn trim_lines(text: &str, trim: Trim) -> String {
    text.split('\n').map(trim).collect::<Vec<_>>().join("\n")
}

pub struct EditFile;

/// `edit_file`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileInput {
    pub path: String,
    pub old_text: String,
    pub new_text: String,
}

#[async_trait::async_trait]
impl Tool for EditFile {
    const NAME: &'static str = "edit_file";
    type Input = EditFileInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn title(&self, arguments: &Value) -> String {
        text_arg(arguments, "path").map_or("Edit a file".to_string(), |path| {
            format!("Edit {}", shorten(path))
        })
    }

    fn ledger_record(&self) -> LedgerRecord {
        LedgerRecord::FileEdit
    }

    /// The edit is planned before the approval: the user sees its diff, and an edit whose
    /// old_text does not match fails before anyone is asked.
    async fn prepare(&self, cx: &ToolContext, input: &EditFileInput) -> Result<Prepared, String> {
        let file_change::Target {
            current,
            version,
            shown,
            ..
        } = file_change::target(cx, &input.path).await?;
        let current =
            current.ok_or_else(|| format!("{shown} does not exist; create it with write_file"))?;
        let EditFileInput {
            path,
            old_text,
            new_text,
        } = input;
        let planned = match plan_edit(&cx.boundary, path, &current, old_text, new_text) {
            Ok(planned) => planned,
            Err(err) => {
                // An error that showed the whole file counts as its read, as a refused write's
                // first page does: the model may then replace it with write_file.
                if shown_whole(&current) {
                    if let (Some(reads), Ok(resolved)) = (&cx.reads, cx.boundary.resolve(path)) {
                        reads.locked().saw(&resolved, &current);
                    }
                }
                return Err(err.0);
            }
        };
        let mut summary = fill(
            &cx.host.prompts().tool_outputs.file_edited,
            &[
                ("path", &shown),
                ("old", &old_text.lines().count().max(1).to_string()),
                ("new", &new_text.lines().count().max(1).to_string()),
            ],
        );
        if let Some(matched) = &planned.matched {
            summary.push_str(&format!(" ({matched}.)"));
        }
        Ok(Prepared::Change {
            changes: vec![FileChange::Edit {
                path: planned.path.clone(),
                version,
                original: current,
                range: planned.range.clone(),
                new_text: planned.new_text.clone(),
            }],
            diff: planned.diff,
            summary,
        })
    }

    async fn run(&self, cx: &ToolContext, _: EditFileInput, prepared: Prepared) -> ToolOutcome {
        file_change::apply(cx, prepared).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::*;

    #[test]
    fn an_edit_made_already_is_said_to_be_made_not_only_not_found() {
        let (_dir, ws) = workspace();
        let current = "pub fn answer() -> u32 {\n    42\n}\n";
        let err = plan_edit(&ws, "src/lib.rs", current, "    41", "    42")
            .unwrap_err()
            .0;
        assert!(
            err.contains("not found") && err.contains("already there (line 2)"),
            "{err}"
        );
        // Neither text there: the plain not-found, no claim that it was made.
        let err = plan_edit(&ws, "src/lib.rs", current, "    41", "    43")
            .unwrap_err()
            .0;
        assert!(!err.contains("already"), "{err}");
    }

    #[test]
    fn plan_edit_replaces_one_exact_occurrence() {
        let (_dir, ws) = workspace();
        let current = "fn a() {\n    1\n}\n\nfn b() {\n    1\n}\n";
        let edit = plan_edit(
            &ws,
            "src/lib.rs",
            current,
            "fn b() {\n    1",
            "fn b() {\n    2",
        )
        .unwrap();
        assert_eq!(edit.path, root(&ws).join("src/lib.rs"));
        assert_eq!(&current[edit.range.clone()], "fn b() {\n    1");
        assert_eq!(edit.range.start, current.find("fn b").unwrap());
        assert_eq!(edit.new_text, "fn b() {\n    2");
        assert!(
            edit.diff
                .starts_with("--- a/src/lib.rs\n+++ b/src/lib.rs\n"),
            "{}",
            edit.diff
        );
        assert!(edit.diff.contains("\n-    1\n+    2\n"), "{}", edit.diff);

        let err = plan_edit(&ws, "src/lib.rs", current, "    1\n", "    3\n")
            .unwrap_err()
            .0;
        assert!(
            err.contains("occurs 2 times") && err.contains("lines 2, 6"),
            "{err}"
        );

        let err = plan_edit(&ws, "src/lib.rs", current, "fn c() {}", "x")
            .unwrap_err()
            .0;
        assert!(err.contains("not found in src/lib.rs"), "{err}");
        let err = plan_edit(&ws, "src/lib.rs", current, "fn b() {\n    7\n}", "x")
            .unwrap_err()
            .0;
        assert!(
            err.contains("first line") && err.contains("line 5"),
            "{err}"
        );
        // Drift is forgiven, and said: trailing whitespace, line endings.
        let edit = plan_edit(&ws, "src/lib.rs", current, "fn b() {   \n    1", "x").unwrap();
        assert_eq!(&current[edit.range.clone()], "fn b() {\n    1");
        let matched = edit.matched.unwrap();
        assert!(
            matched.contains("trailing whitespace") && matched.contains("5–6"),
            "{matched}"
        );
        // Line numbers copied from read_file's output are taken off both texts, and said.
        let edit = plan_edit(
            &ws,
            "src/lib.rs",
            current,
            "L5: fn b() {\nL6:     1",
            "L5: fn b() {\nL6:     2",
        )
        .unwrap();
        assert_eq!(&current[edit.range.clone()], "fn b() {\n    1");
        assert_eq!(edit.new_text, "fn b() {\n    2");
        assert!(edit.matched.unwrap().contains("line numbers"));
        assert!(
            plan_edit(&ws, "src/lib.rs", current, "L5 fn b() {", "x").is_err(),
            "not a read_file prefix"
        );
        let crlf = "fn a() {\r\n    1\r\n}\r\n";
        let edit = plan_edit(&ws, "src/lib.rs", crlf, "    1\n}", "    2\n}").unwrap();
        assert_eq!(&crlf[edit.range.clone()], "    1\r\n}");
        assert_eq!(edit.new_text, "    2\r\n}");

        assert!(plan_edit(&ws, "src/lib.rs", current, "", "x")
            .unwrap_err()
            .0
            .contains("write_file"));
        assert!(plan_edit(&ws, "src/lib.rs", current, "fn a", "fn a").is_err());
        assert!(plan_edit(&ws, "../lib.rs", current, "fn a", "fn z")
            .unwrap_err()
            .0
            .contains("outside"));
        // Overlapping occurrences are ambiguous too.
        assert!(plan_edit(&ws, "x.txt", "aaa", "aa", "b")
            .unwrap_err()
            .0
            .contains("2 times"));
    }

    #[test]
    fn drift_in_indentation_or_a_fence_is_forgiven_and_said() {
        let (_dir, ws) = workspace();
        let current =
            "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n";
        // Written without the class's indentation: matched, and new_text re-indented.
        let edit = plan_edit(
            &ws,
            "a.py",
            current,
            "def g(self):\n    return 2\n",
            "def g(self):\n    return 3\n",
        )
        .unwrap();
        assert_eq!(
            &current[edit.range.clone()],
            "    def g(self):\n        return 2\n"
        );
        assert_eq!(edit.new_text, "    def g(self):\n        return 3\n");
        assert!(edit.matched.unwrap().contains("indentation"));
        // A fence around both texts.
        let edit = plan_edit(
            &ws,
            "a.py",
            current,
            "```python\n        return 1\n```",
            "```python\n        return 5\n```",
        )
        .unwrap();
        assert_eq!(edit.new_text, "        return 5");
        assert!(edit.matched.unwrap().contains("fence"));
        // Several loose matches: refused with their lines, nothing guessed.
        let err = plan_edit(&ws, "a.py", current, "return 1\n", "return 9\n");
        assert!(err.is_ok(), "an exact substring still matches once");
        let twice = "if a:\n    x = 1\n    y = 2\nif b:\n        x = 1\n        y = 2\n";
        let err = plan_edit(&ws, "b.py", twice, "x = 1\n  y = 2", "x = 1\n  y = 3")
            .unwrap_err()
            .0;
        assert!(
            err.contains("2 places") && err.contains("lines 2, 5"),
            "{err}"
        );
    }

    #[test]
    fn an_edit_that_changes_nothing_shows_the_text_there() {
        let (_dir, ws) = workspace();
        let current = "def a():\n    return 1\n\ndef b():\n    return 2\n";
        let err = plan_edit(&ws, "a.py", current, "    return 2", "    return 2")
            .unwrap_err()
            .0;
        assert!(
            err.contains("change nothing") && err.contains("L5:     return 2"),
            "{err}"
        );
        let err = plan_edit(&ws, "a.py", current, "    return 7", "    return 7")
            .unwrap_err()
            .0;
        assert!(err.contains("not in a.py either"), "{err}");
    }
}
