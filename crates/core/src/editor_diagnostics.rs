//! What the editor's language servers say about the files a tool call changed
//! (`agent/editor/diagnostics`), chosen and written for the tool's output: errors and
//! warnings in or near the changed lines (the whole file after a `shell` command, which
//! does not say which lines it touched), errors first, cut to a small budget.

use serde_json::Value;
use std::ops::Range;

/// Lines either side of the changed ones whose diagnostics still count as the change's.
pub const NEAR_LINES: u32 = 3;
/// At most this many diagnostics are shown...
pub const MAX_ITEMS: usize = 20;
/// ...in at most about this many bytes; the count of the rest is said.
pub const MAX_BYTES: usize = 1_500;
/// The label before the list: what follows is the editor's data, not instructions.
pub const HEADING: &str = "Diagnostics the editor reports after this change:";

/// One diagnostic as the editor reported it (LSP's shape, 0-based lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: u32,
    pub character: u32,
    /// LSP's severity: 1 error, 2 warning, 3 information, 4 hint; None when not given.
    pub severity: Option<u8>,
    pub message: String,
    pub source: Option<String>,
}

impl Diagnostic {
    /// From an LSP `Diagnostic` object; None when it has no range start or message.
    pub fn from_lsp(value: &Value) -> Option<Diagnostic> {
        let start = &value["range"]["start"];
        Some(Diagnostic {
            line: u32::try_from(start["line"].as_u64()?).ok()?,
            character: u32::try_from(start["character"].as_u64().unwrap_or(0)).unwrap_or(0),
            severity: value["severity"]
                .as_u64()
                .and_then(|s| u8::try_from(s).ok()),
            message: value["message"].as_str()?.to_string(),
            source: value["source"].as_str().map(str::to_string),
        })
    }

    /// Whether a report can show it: an error or a warning (information and hints never are).
    pub fn is_reported(&self) -> bool {
        self.rank().is_some()
    }

    /// Errors rank 0, warnings 1 (a diagnostic without a severity counts as a warning);
    /// None for information and hints, which are left out.
    fn rank(&self) -> Option<u8> {
        match self.severity {
            Some(1) => Some(0),
            Some(2) | None => Some(1),
            _ => None,
        }
    }
}

/// The diagnostics of one changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiagnostics {
    /// The file as the model knows it (relative to the workspace when inside it).
    pub path: String,
    /// The changed lines of the new text (0-based, end exclusive); None for the whole file.
    pub lines: Option<Range<u32>>,
    pub diagnostics: Vec<Diagnostic>,
}

/// The lines of `new` that differ from `old` (0-based, end exclusive, in `new`'s lines):
/// what is between the common leading and trailing lines. A new file is all changed; a
/// deletion is the empty range where it was.
pub fn changed_lines(old: Option<&str>, new: &str) -> Range<u32> {
    let new_lines: Vec<&str> = new.split('\n').collect();
    let Some(old) = old else {
        return 0..to_u32(new_lines.len());
    };
    let old_lines: Vec<&str> = old.split('\n').collect();
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let room = old_lines.len().min(new_lines.len()) - prefix;
    let suffix = old_lines
        .iter()
        .rev()
        .zip(new_lines.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    to_u32(prefix)..to_u32(new_lines.len() - suffix)
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The text appended to a tool's output, or None when no error or warning is in or near the
/// changes. One line per diagnostic, `path:line:col severity message [source]` (1-based),
/// errors first, then by file and line; cut to `MAX_ITEMS` and about `MAX_BYTES`.
pub fn report(files: &[FileDiagnostics]) -> Option<String> {
    let mut chosen: Vec<(u8, usize, &Diagnostic)> = Vec::new();
    for (index, file) in files.iter().enumerate() {
        for diagnostic in &file.diagnostics {
            let near = file.lines.as_ref().is_none_or(|lines| {
                diagnostic.line + NEAR_LINES >= lines.start
                    && diagnostic.line < lines.end.max(lines.start + 1) + NEAR_LINES
            });
            if let (true, Some(rank)) = (near, diagnostic.rank()) {
                chosen.push((rank, index, diagnostic));
            }
        }
    }
    if chosen.is_empty() {
        return None;
    }
    chosen.sort_by_key(|(rank, index, d)| (*rank, *index, d.line, d.character));
    let mut text = format!("{HEADING}\n");
    let mut shown = 0;
    for (rank, index, diagnostic) in &chosen {
        let line = format_line(&files[*index].path, *rank, diagnostic);
        if shown == MAX_ITEMS || (shown > 0 && text.len() + line.len() > MAX_BYTES) {
            break;
        }
        text.push_str(&line);
        shown += 1;
    }
    if shown < chosen.len() {
        text.push_str(&format!("… and {} more\n", chosen.len() - shown));
    }
    Some(text)
}

/// `path:line:col severity message [source]`, the message on one line and cut to 200 bytes.
fn format_line(path: &str, rank: u8, diagnostic: &Diagnostic) -> String {
    let severity = if rank == 0 { "error" } else { "warning" };
    let mut message = diagnostic
        .message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if message.len() > 200 {
        let mut cut = 200;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    let source = diagnostic
        .source
        .as_deref()
        .map(|s| format!(" [{s}]"))
        .unwrap_or_default();
    format!(
        "{path}:{}:{} {severity} {message}{source}\n",
        diagnostic.line + 1,
        diagnostic.character + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diag(line: u32, severity: u8, message: &str) -> Diagnostic {
        Diagnostic {
            line,
            character: 4,
            severity: Some(severity),
            message: message.into(),
            source: Some("rustc".into()),
        }
    }

    #[test]
    fn changed_lines_are_between_the_common_lines() {
        assert_eq!(changed_lines(Some("a\nb\nc\nd"), "a\nB\nB2\nc\nd"), 1..3);
        assert_eq!(changed_lines(Some("a\nb\nc"), "a\nc"), 1..1);
        assert_eq!(changed_lines(None, "a\nb"), 0..2);
    }

    #[test]
    fn keeps_errors_and_warnings_near_the_change_errors_first() {
        let file = FileDiagnostics {
            path: "src/lib.rs".into(),
            lines: Some(10..12),
            diagnostics: vec![
                diag(11, 2, "unused variable"),
                diag(12, 1, "mismatched types\n  expected u32"),
                diag(40, 1, "far away"),
                diag(6, 1, "too far before"),
                diag(10, 3, "an information"),
                diag(7, 1, "just before"),
            ],
        };
        let text = report(&[file]).unwrap();
        assert_eq!(
            text,
            "Diagnostics the editor reports after this change:\n\
             src/lib.rs:8:5 error just before [rustc]\n\
             src/lib.rs:13:5 error mismatched types expected u32 [rustc]\n\
             src/lib.rs:12:5 warning unused variable [rustc]\n"
        );
    }

    #[test]
    fn nothing_to_say_is_none_and_a_deletion_still_has_a_neighbourhood() {
        let far = FileDiagnostics {
            path: "a.py".into(),
            lines: Some(5..5),
            diagnostics: vec![diag(50, 1, "far")],
        };
        assert_eq!(report(&[far]), None);
        let at = FileDiagnostics {
            path: "a.py".into(),
            lines: Some(5..5),
            diagnostics: vec![diag(5, 1, "here")],
        };
        assert!(report(&[at]).unwrap().contains("a.py:6:5 error here"));
    }

    #[test]
    fn a_whole_file_is_cut_to_the_budget_with_the_count_of_the_rest() {
        let file = FileDiagnostics {
            path: "big.rs".into(),
            lines: None,
            diagnostics: (0..30)
                .map(|n| diag(n * 100, 1 + (n % 2) as u8, "x"))
                .collect(),
        };
        let text = report(&[file]).unwrap();
        assert_eq!(text.lines().count(), 1 + MAX_ITEMS + 1);
        assert!(text.ends_with("… and 10 more\n"), "{text}");
        // Errors (even n) before warnings.
        assert!(text.lines().nth(15).unwrap().contains(" error "), "{text}");
        let long = FileDiagnostics {
            path: "big.rs".into(),
            lines: None,
            diagnostics: (0..10).map(|n| diag(n, 1, &"y".repeat(400))).collect(),
        };
        let text = report(&[long]).unwrap();
        assert!(text.len() <= MAX_BYTES + 100, "{}", text.len());
        assert!(text.ends_with("more\n"));
    }

    #[test]
    fn reads_the_lsp_shape() {
        let value = json!({"range": {"start": {"line": 3, "character": 7}, "end": {"line": 3, "character": 9}},
            "severity": 1, "message": "boom", "source": "pyright"});
        assert_eq!(
            Diagnostic::from_lsp(&value),
            Some(Diagnostic {
                line: 3,
                character: 7,
                severity: Some(1),
                message: "boom".into(),
                source: Some("pyright".into())
            })
        );
        assert_eq!(Diagnostic::from_lsp(&json!({"message": "no range"})), None);
    }
}
