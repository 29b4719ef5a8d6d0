//! `grep`: lines matching a regular expression under a path, .gitignore respected.

use std::path::{Path, PathBuf};

use globset::GlobMatcher;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use agentls_core::prompts::{fill, ToolOutputTexts};
use agentls_core::tool_info::{error, shorten, ToolError, ToolKind};

use crate::locks::Locked;
use crate::store::files::read_text;
use crate::tools::boundary::PathBoundary;
use crate::tools::input::ArgumentProblem;
use crate::tools::list_dir::walker;
use crate::tools::read_file::cut_line;
use crate::tools::registry::{blocking, text_arg, Prepared, Tool, ToolContext, ToolOutcome};

pub const MAX_GREP_MATCHES: usize = 200;
pub const MAX_GREP_LINE_CHARS: usize = 300;

/// `grep`: the lines matching a regular expression in the files under `path` (default
/// `roots[0]`; may be one file), `{path}:{line}: {text}`, optionally only in files whose path
/// or name matches `glob`. Binary and non-UTF-8 files are skipped. `texts` words the answer
/// when nothing matched or the matches were cut.
pub fn grep(
    ws: &PathBoundary,
    pattern: &str,
    path: Option<&str>,
    glob: Option<&str>,
    texts: &ToolOutputTexts,
) -> Result<String, ToolError> {
    Ok(matches(ws, pattern, path, glob, texts)?
        .unwrap_or_else(|| fill(&texts.no_matches, &[("pattern", pattern)])))
}

/// The matching lines as [`grep`] shows them, or None when no line matched.
fn matches(
    ws: &PathBoundary,
    pattern: &str,
    path: Option<&str>,
    glob: Option<&str>,
    texts: &ToolOutputTexts,
) -> Result<Option<String>, ToolError> {
    if pattern.is_empty() {
        return Err(error("a pattern is required"));
    }
    let regexes = Regexes::new(pattern)?;
    let glob = compile_glob(glob)?;
    let (target, is_dir) = ws.directory_or_file(path)?;
    let files = if is_dir {
        files_under(ws, &target, glob.as_ref())
    } else {
        // A file named explicitly is searched whatever the glob says.
        vec![target]
    };
    let (mut out, total) = matching_lines(ws, &files, &regexes);
    if total == 0 {
        return Ok(None);
    }
    if total > MAX_GREP_MATCHES {
        out.push(fill(
            &texts.matches_capped,
            &[
                ("shown", &MAX_GREP_MATCHES.to_string()),
                ("total", &total.to_string()),
            ],
        ));
    }
    Ok(Some(out.join("\n")))
}

/// A pattern compiled twice: per line, and over a whole file to skip files without a match.
struct Regexes {
    line: Regex,
    /// None when the whole-file pass could miss a match.
    file: Option<Regex>,
}

impl Regexes {
    fn new(pattern: &str) -> Result<Regexes, ToolError> {
        let invalid = |err: regex::Error| error(format!("invalid regex `{pattern}`: {err}"));
        let line = Regex::new(pattern).map_err(invalid)?;
        // Run over a whole file first: one search is much faster than one per line. With `^`
        // and `$` at line ends it matches wherever some line matches (and perhaps more),
        // unless the pattern anchors to the text itself (`\A`, `\z`) or sets its own flags,
        // which could turn multi-line off: then every line is tried.
        let file = if ["\\A", "\\z", "(?"]
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
                    .map_err(invalid)?,
            )
        };
        Ok(Regexes { line, file })
    }
}

/// The glob a file's path or name must match; none when blank.
fn compile_glob(glob: Option<&str>) -> Result<Option<GlobMatcher>, ToolError> {
    let Some(glob) = glob.filter(|glob| !glob.trim().is_empty()) else {
        return Ok(None);
    };
    let compiled = globset::GlobBuilder::new(glob)
        .literal_separator(false)
        .build()
        .map_err(|err| error(format!("invalid glob `{glob}`: {err}")))?;
    Ok(Some(compiled.compile_matcher()))
}

/// The files under `dir` (the shared walk) that `glob` admits, by their shown path, their
/// path under `dir` or their name.
fn files_under(ws: &PathBoundary, dir: &Path, glob: Option<&GlobMatcher>) -> Vec<PathBuf> {
    walker(dir)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(|file| {
            glob.is_none_or(|glob| {
                glob.is_match(ws.display(file))
                    || file.strip_prefix(dir).is_ok_and(|rel| glob.is_match(rel))
                    || file.file_name().is_some_and(|name| glob.is_match(name))
            })
        })
        .collect()
}

/// The first `MAX_GREP_MATCHES` matching lines as `{path}:{line}: {text}`, and how many
/// lines matched in all.
fn matching_lines(ws: &PathBoundary, files: &[PathBuf], regexes: &Regexes) -> (Vec<String>, usize) {
    let mut out: Vec<String> = Vec::new();
    let mut total = 0usize;
    for file in files {
        let Ok(text) = read_text(file) else {
            continue;
        };
        if regexes
            .file
            .as_ref()
            .is_some_and(|regex| !regex.is_match(&text))
        {
            continue;
        }
        let shown = ws.display(file);
        for (index, line) in text.lines().enumerate() {
            if !regexes.line.is_match(line) {
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
    (out, total)
}

pub struct Grep;

/// `grep`'s arguments (described to the model in `prompts/tools.json`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepInput {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
}

#[async_trait::async_trait]
impl Tool for Grep {
    const NAME: &'static str = "grep";
    type Input = GrepInput;

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

    /// A missing pattern is refused as an empty one is.
    fn refusal(&self, _: &ToolContext, _: &Value, problem: ArgumentProblem) -> String {
        match problem {
            ArgumentProblem::Missing { .. } if problem.field() == Some("pattern") => {
                "a pattern is required".to_string()
            }
            problem => problem.sentence(Self::NAME),
        }
    }

    async fn run(&self, cx: &ToolContext, input: GrepInput, _: Prepared) -> ToolOutcome {
        let boundary = cx.boundary.clone();
        let texts = cx.host.prompts().tool_outputs.clone();
        let budget = cx.output_budget;
        let reads = cx.reads.clone();
        blocking(move || {
            let found = matches(
                &boundary,
                &input.pattern,
                input.path.as_deref(),
                input.glob.as_deref(),
                &texts,
            )?;
            let pattern = input.pattern.trim();
            let no_matches = || fill(&texts.no_matches, &[("pattern", pattern)]);
            Ok(match path_named(&boundary, &input.pattern) {
                Some(NamedPath::Directory(shown)) => format!(
                    "Note: `{pattern}` is a directory of the workspace; grep searches the text inside files. To see what it holds, call list_dir with {{\"path\": \"{shown}\"}}.\n\n{}",
                    found.unwrap_or_else(no_matches)
                ),
                // The file is the answer: a trailing "No matches" reads to a small model as
                // "the file does not exist" or "the file is empty", and it answers so.
                Some(NamedPath::File(path, shown)) => {
                    let page = crate::tools::read_file::read_page(&boundary, &path, budget)?;
                    if let Some(reads) = reads {
                        reads.locked().saw(&path, &page.text);
                    }
                    let mut out = format!(
                        "`{pattern}` is a file of the workspace ({shown}); grep searches the text inside files, so here is the file itself, as read_file shows it:\n{}",
                        page.numbered
                    );
                    if let Some(found) = found {
                        out.push_str(&format!("\n\nLines elsewhere that contain `{pattern}`:\n{found}"));
                    }
                    out
                }
                None => found.unwrap_or_else(no_matches),
            })
        })
        .await
    }
}

/// What a pattern that is a path of the workspace names.
#[derive(Debug, PartialEq)]
enum NamedPath {
    File(std::path::PathBuf, String),
    Directory(String),
}

/// When the pattern is a path of the workspace (`grep "src/main.rs"`), what it names: grep
/// searches the files' text, and "No matches" for a path reads as "that file does not
/// exist" to a small model, which then answers so. The file itself is what it was after.
fn path_named(boundary: &PathBoundary, pattern: &str) -> Option<NamedPath> {
    let candidate = pattern.trim().trim_start_matches("./");
    // A path-like pattern only: no regex syntax beyond the dots of file names.
    let path_like = !candidate.is_empty()
        && candidate
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
        && candidate.contains('/');
    if !path_like {
        return None;
    }
    let resolved = boundary.resolve(candidate).ok()?;
    let shown = boundary.display(&resolved);
    let metadata = std::fs::metadata(&resolved).ok()?;
    Some(if metadata.is_dir() {
        NamedPath::Directory(shown)
    } else {
        NamedPath::File(resolved, shown)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::*;
    use agentls_core::prompts::Prompts;

    fn grep(
        ws: &PathBoundary,
        pattern: &str,
        path: Option<&str>,
        glob: Option<&str>,
    ) -> Result<String, ToolError> {
        super::grep(ws, pattern, path, glob, &Prompts::builtin().tool_outputs)
    }

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

    #[test]
    fn a_pattern_that_is_a_path_names_the_path() {
        let (_dir, ws) = workspace();
        let file = write(&ws, "app/src/entry.rs", "fn main() {}\n");
        assert_eq!(
            path_named(&ws, "app/src/entry.rs"),
            Some(NamedPath::File(file, "app/src/entry.rs".into()))
        );
        assert_eq!(
            path_named(&ws, "./app/src"),
            Some(NamedPath::Directory("app/src".into()))
        );
        // Not a path, or no such path: nothing.
        assert_eq!(path_named(&ws, "fn main"), None);
        assert_eq!(path_named(&ws, "entry.rs"), None);
        assert_eq!(path_named(&ws, r"src/.*\.rs"), None);
        assert_eq!(path_named(&ws, "app/src/missing.rs"), None);
        assert_eq!(path_named(&ws, "../etc/passwd"), None);
    }
}
