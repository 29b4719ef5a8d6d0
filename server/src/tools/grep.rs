//! `grep`: lines matching a regular expression under a path, .gitignore respected.

use serde_json::Value;

use agentls_core::tool_info::{shorten, ToolKind};

use super::registry::{blocking, text_arg, Prepared, Tool, ToolContext, ToolOutcome};
use std::path::PathBuf;

use crate::store::files::read_text;
use agentls_core::tool_info::{error, ToolError};

use super::boundary::PathBoundary;
use super::list_dir::walker;
use super::read_file::cut_line;

pub const MAX_GREP_MATCHES: usize = 200;
pub const MAX_GREP_LINE_CHARS: usize = 300;

/// `grep`: the lines matching a regular expression in the files under `path` (default
/// `roots[0]`; may be one file), `{path}:{line}: {text}`, optionally only in files whose path
/// or name matches `glob`. Binary and non-UTF-8 files are skipped.
pub fn grep(
    ws: &PathBoundary,
    pattern: &str,
    path: Option<&str>,
    glob: Option<&str>,
) -> Result<String, ToolError> {
    if pattern.is_empty() {
        return Err(error("a pattern is required"));
    }
    let line_regex = regex::Regex::new(pattern)
        .map_err(|err| error(format!("invalid regex `{pattern}`: {err}")))?;
    // Run over a whole file first: one search is much faster than one per line. With `^`
    // and `$` at line ends it matches wherever some line matches (and perhaps more), unless
    // the pattern anchors to the text itself (`\A`, `\z`) or sets its own flags, which could
    // turn multi-line off: then every line is tried.
    let file_regex = if ["\\A", "\\z", "(?"]
        .iter()
        .any(|risky| pattern.contains(risky))
    {
        None
    } else {
        Some(
            regex::RegexBuilder::new(pattern)
                .multi_line(true)
                .crlf(true)
                .build()
                .map_err(|err| error(format!("invalid regex `{pattern}`: {err}")))?,
        )
    };
    let glob = match glob.filter(|glob| !glob.trim().is_empty()) {
        Some(glob) => Some(
            globset::GlobBuilder::new(glob)
                .literal_separator(false)
                .build()
                .map_err(|err| error(format!("invalid glob `{glob}`: {err}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let (target, is_dir) = ws.directory_or_file(path)?;
    let files: Vec<PathBuf> = if is_dir {
        walker(&target)
            .build()
            .flatten()
            .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
            .map(ignore::DirEntry::into_path)
            .filter(|file| {
                glob.as_ref().is_none_or(|glob| {
                    glob.is_match(ws.display(file))
                        || file
                            .strip_prefix(&target)
                            .is_ok_and(|rel| glob.is_match(rel))
                        || file.file_name().is_some_and(|name| glob.is_match(name))
                })
            })
            .collect()
    } else {
        // A file named explicitly is searched whatever the glob says.
        vec![target]
    };

    let mut out: Vec<String> = Vec::new();
    let mut total = 0usize;
    for file in files {
        let Ok(text) = read_text(&file) else {
            continue;
        };
        if file_regex
            .as_ref()
            .is_some_and(|regex| !regex.is_match(&text))
        {
            continue;
        }
        let shown = ws.display(&file);
        for (index, line) in text.lines().enumerate() {
            if !line_regex.is_match(line) {
                continue;
            }
            total += 1;
            if total <= MAX_GREP_MATCHES {
                out.push(format!(
                    "{shown}:{}: {}",
                    index + 1,
                    cut_line(line, MAX_GREP_LINE_CHARS)
                ));
            }
        }
    }
    if total == 0 {
        return Ok(format!("No matches for `{pattern}`."));
    }
    if total > MAX_GREP_MATCHES {
        out.push(format!(
            "[showing the first {MAX_GREP_MATCHES} of {total} matching lines; narrow the pattern, the path or the glob]"
        ));
    }
    Ok(out.join("\n"))
}

pub struct Grep;

#[async_trait::async_trait]
impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn title(&self, arguments: &Value) -> String {
        let mut title = match text_arg(arguments, "pattern") {
            Some(pattern) => format!("Grep `{}`", shorten(pattern)),
            None => "Grep".to_string(),
        };
        if let Some(path) = text_arg(arguments, "path") {
            title.push_str(&format!(" in {}", shorten(path)));
        }
        if let Some(glob) = text_arg(arguments, "glob") {
            title.push_str(&format!(" ({})", shorten(glob)));
        }
        title
    }

    async fn run(&self, cx: &ToolContext, arguments: &Value, _: Prepared) -> ToolOutcome {
        let boundary = cx.boundary.clone();
        let args = arguments.clone();
        blocking(move || {
            grep(
                &boundary,
                args["pattern"].as_str().unwrap_or(""),
                args["path"].as_str(),
                args["glob"].as_str(),
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
    fn grep_finds_lines_filters_and_caps() {
        let (_dir, ws) = workspace();
        write(&ws, "src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
        write(&ws, "src/a/b.rs", "fn answer_too() {}\n");
        write(&ws, "notes.md", "the answer is fn answer\n");
        write(&ws, ".gitignore", "ignored.rs\n");
        write(&ws, "ignored.rs", "fn answer() {}\n");
        std::fs::write(root(&ws).join("blob.bin"), b"fn answer\0\x01").unwrap();

        assert_eq!(
            grep(&ws, "fn answer", None, None).unwrap(),
            "notes.md:1: the answer is fn answer\nsrc/a/b.rs:1: fn answer_too() {}\nsrc/lib.rs:1: pub fn answer() -> u32 {"
        );
        assert_eq!(
            grep(&ws, r"^fn \w+", None, Some("*.rs")).unwrap(),
            "src/a/b.rs:1: fn answer_too() {}"
        );
        assert_eq!(
            grep(&ws, "42", Some("src/lib.rs"), None).unwrap(),
            "src/lib.rs:2:     42"
        );
        assert_eq!(
            grep(&ws, "nothing here", None, None).unwrap(),
            "No matches for `nothing here`."
        );
        let err = grep(&ws, "fn (", None, None).unwrap_err().0;
        assert!(err.contains("invalid regex"), "{err}");
        let err = grep(&ws, "x", Some("../"), None).unwrap_err().0;
        assert!(err.contains("outside"), "{err}");

        // `\A` anchors each line here, not the file: the whole-file pass must not skip it.
        assert_eq!(
            grep(&ws, r"\A\s+42", None, None).unwrap(),
            "src/lib.rs:2:     42"
        );

        let many: String = (0..250).map(|n| format!("hit {n}\n")).collect();
        write(&ws, "many.txt", &many);
        let capped = grep(&ws, "hit", None, None).unwrap();
        assert_eq!(capped.lines().count(), MAX_GREP_MATCHES + 1);
        assert!(
            capped.lines().last().unwrap().contains("first 200 of 250"),
            "{capped}"
        );
    }
}
