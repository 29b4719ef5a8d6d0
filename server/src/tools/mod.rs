//! The model-facing tools: what `read_file`, `list_dir`, `grep`, `edit_file`, `write_file`,
//! `shell` and `update_plan` do, and the workspace boundary that every path argument is
//! checked against (`PathBoundary::resolve`).
//!
//! Reading tools return their output text. Editing tools only plan: they return the new text
//! and its diff. Asking the user's approval is `approval.rs`'s job, and applying an edit is the
//! host's, through the editor, so that open buffers, undo and formatting stay the editor's.
//! No LSP and no network here.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use ignore::WalkBuilder;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::store::files::{read_text, FileRefused};
use agentls_core::position::{ceil_char_boundary, floor_char_boundary};
use agentls_core::tool_info::error;
pub use agentls_core::tool_info::ToolError;
use agentls_core::truncate::TruncationPolicy;
use agentls_core::truncate::{line_count, truncate_middle};

/// Lines `read_file` returns when the model gives no limit.
pub const DEFAULT_READ_LIMIT: usize = 2000;
/// A longer line (minified code, data) is cut: one line must not fill the context.
pub const MAX_READ_LINE_CHARS: usize = 2000;
pub const DEFAULT_LIST_DEPTH: usize = 2;
pub const MAX_LIST_ENTRIES: usize = 1000;
pub const MAX_GREP_MATCHES: usize = 200;
pub const MAX_GREP_LINE_CHARS: usize = 300;
/// The limit the kernel applies to a path's symbolic links (ELOOP), for the links we follow.
const MAX_SYMLINK_HOPS: usize = 40;
/// Line numbers listed in an error message before `…`.
const MAX_LISTED_LINES: usize = 10;
/// How long output is still read after the shell exited, before whatever it left running in
/// the background (and holding the pipes open) is killed: `server &` must not hang the turn.
const SHELL_EXIT_GRACE: Duration = Duration::from_millis(250);
/// How long output is still read after the process group was killed.
const KILLED_DRAIN: Duration = Duration::from_millis(500);
/// A command's output kept in memory is bounded: `yes` for two minutes must not exhaust it.
const MIN_KEPT_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// The folders the tools may touch: no path outside them is read, listed, searched or planned
/// for writing.
#[derive(Debug, Clone)]
pub struct PathBoundary {
    /// Canonical absolute paths; `roots[0]` is where relative paths start.
    pub roots: Vec<PathBuf>,
}

impl PathBoundary {
    /// The absolute path (canonical when it exists) that a model-given path names, if it is
    /// inside a root. Relative paths start at `roots[0]`. A path that escapes every root, by
    /// `..`, by being absolute elsewhere or through a symbolic link, is refused with a message
    /// that says it is outside. A path that does not exist yet (for `write_file`) is accepted
    /// when its nearest existing ancestor is inside a root. Reads no file content.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.trim().is_empty() {
            return Err(error("a path is required"));
        }
        let root = self.default_root()?;
        let given = Path::new(path);
        let candidate = if given.is_absolute() {
            given.to_path_buf()
        } else {
            root.join(given)
        };
        self.resolve_candidate(path, &candidate, 0)
    }

    /// The path as shown to the model and the user: relative to the root that holds it.
    pub fn display(&self, path: &Path) -> String {
        let shown = agentls_core::paths::display(path, &self.roots);
        if shown.is_empty() {
            ".".to_string()
        } else {
            shown
        }
    }

    fn default_root(&self) -> Result<&PathBuf, ToolError> {
        self.roots
            .first()
            .ok_or_else(|| error("no workspace folder is open"))
    }

    fn resolve_candidate(
        &self,
        shown: &str,
        candidate: &Path,
        hops: usize,
    ) -> Result<PathBuf, ToolError> {
        if let Ok(canonical) = candidate.canonicalize() {
            return self.inside(shown, canonical);
        }
        // The path does not exist (yet): what decides where a write lands is its nearest
        // existing ancestor, with every symbolic link on the way resolved.
        let components: Vec<Component> = candidate.components().collect();
        let existing = (1..=components.len())
            .rev()
            .find(|&end| {
                let prefix: PathBuf = components[..end].iter().collect();
                std::fs::symlink_metadata(prefix).is_ok()
            })
            .ok_or_else(|| error(format!("cannot resolve {shown}")))?;
        let prefix: PathBuf = components[..existing].iter().collect();
        let rest = &components[existing..];
        let base = match prefix.canonicalize() {
            Ok(base) => base,
            Err(_) if prefix.is_symlink() => {
                // A dangling link: writing to it would create its target, so the target is
                // the path that must be inside.
                if hops >= MAX_SYMLINK_HOPS {
                    return Err(error(format!("{shown}: too many levels of symbolic links")));
                }
                let target = std::fs::read_link(&prefix)
                    .map_err(|err| error(format!("cannot resolve {shown}: {err}")))?;
                let mut next = prefix.parent().unwrap_or(Path::new("/")).join(target);
                next.extend(rest);
                return self.resolve_candidate(shown, &next, hops + 1);
            }
            Err(err) => return Err(error(format!("cannot resolve {shown}: {err}"))),
        };
        if !rest.is_empty() && !base.is_dir() {
            return Err(error(format!(
                "{shown}: {} is a file, not a directory",
                self.display(&base)
            )));
        }
        let mut resolved = base;
        let mut added = 0usize;
        for component in rest {
            match component {
                Component::Normal(name) => {
                    resolved.push(name);
                    added += 1;
                }
                Component::CurDir => {}
                Component::ParentDir if added > 0 => {
                    resolved.pop();
                    added -= 1;
                }
                // `..` above an existing directory, which the lexical path cannot follow.
                _ => return Err(self.outside(shown)),
            }
        }
        self.inside(shown, resolved)
    }

    fn inside(&self, shown: &str, resolved: PathBuf) -> Result<PathBuf, ToolError> {
        if self.roots.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            Err(self.outside(shown))
        }
    }

    fn outside(&self, shown: &str) -> ToolError {
        let roots: Vec<String> = self
            .roots
            .iter()
            .map(|root| root.display().to_string())
            .collect();
        error(format!(
            "{shown} is outside the workspace ({})",
            roots.join(", ")
        ))
    }

    /// `files::read_text`'s refusal, naming the file as the model knows it.
    fn refusal(&self, path: &Path, refused: FileRefused) -> ToolError {
        error(
            refused
                .0
                .replace(&path.display().to_string(), &self.display(path)),
        )
    }

    /// A directory argument, `roots[0]` when absent, that must exist and be a directory.
    fn directory_or_file(&self, path: Option<&str>) -> Result<(PathBuf, bool), ToolError> {
        let resolved = match path.filter(|path| !path.trim().is_empty()) {
            Some(path) => self.resolve(path)?,
            None => self.default_root()?.clone(),
        };
        match std::fs::metadata(&resolved) {
            Ok(metadata) => Ok((resolved, metadata.is_dir())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Err(error(format!("{} does not exist", self.display(&resolved))))
            }
            Err(err) => Err(error(format!(
                "cannot read {}: {err}",
                self.display(&resolved)
            ))),
        }
    }
}

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
    let numbered: Vec<String> = text
        .lines()
        .enumerate()
        .skip(first - 1)
        .take(last + 1 - first)
        .map(|(index, line)| format!("L{}: {}", index + 1, cut_line(line, MAX_READ_LINE_CHARS)))
        .collect();
    let mut out = numbered.join("\n");
    if last < total {
        out.push_str(&format!(
            "\n[lines {first}–{last} of {total}; read more with offset={}]",
            last + 1
        ));
    }
    Ok(out)
}

/// `line` cut after `max_chars` characters, with a marker saying how much was cut.
fn cut_line(line: &str, max_chars: usize) -> Cow<'_, str> {
    match line.char_indices().nth(max_chars) {
        None => Cow::Borrowed(line),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… [{} more characters]",
            &line[..cut],
            line[cut..].chars().count()
        )),
    }
}

/// The walk every listing and search shares: .gitignore and .ignore honoured even outside a
/// git repository, hidden files skipped, `.git` never entered, entries in name order.
fn walker(path: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(path);
    builder
        .hidden(true)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != OsStr::new(".git"))
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// `list_dir`: the entries under a directory (default `roots[0]`) to `depth` levels, as an
/// indented tree with directories ending in `/`.
pub fn list_dir(
    ws: &PathBoundary,
    path: Option<&str>,
    depth: Option<usize>,
) -> Result<String, ToolError> {
    let (dir, is_dir) = ws.directory_or_file(path)?;
    let shown = ws.display(&dir);
    if !is_dir {
        return Err(error(format!(
            "{shown} is a file, not a directory; read it with read_file"
        )));
    }
    let depth = depth.unwrap_or(DEFAULT_LIST_DEPTH).max(1);
    let mut lines = vec![format!("{}/", shown.trim_end_matches('/'))];
    let mut listed = 0usize;
    let mut not_listed = 0usize;
    // Unreadable entries are skipped: the listing is a map, not an audit.
    for entry in walker(&dir).max_depth(Some(depth)).build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if listed == MAX_LIST_ENTRIES {
            not_listed += 1;
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
        lines.push(format!(
            "{}{}{}",
            "  ".repeat(entry.depth()),
            entry.file_name().to_string_lossy(),
            if is_dir { "/" } else { "" }
        ));
        listed += 1;
    }
    if listed == 0 {
        lines.push("  (empty, or every entry is ignored or hidden)".to_string());
    }
    if not_listed > 0 {
        lines.push(format!(
            "[{not_listed} more entries not listed; list a subdirectory or use a smaller depth]"
        ));
    }
    Ok(lines.join("\n"))
}

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

/// An `edit_file` call checked and computed, for the host to approve and apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEdit {
    pub path: PathBuf,
    /// Byte range of `old_text` in the current text.
    pub range: Range<usize>,
    pub new_text: String,
    /// Unified diff of the whole file, `--- a/<path>` `+++ b/<path>`.
    pub diff: String,
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
        return Err(error(
            "old_text and new_text are the same; the edit would change nothing",
        ));
    }
    let found = occurrences(current, old_text);
    let start = match found.as_slice() {
        [] => return Err(not_found(&shown, current, old_text)),
        [start] => *start,
        _ => {
            let lines: Vec<usize> = found.iter().map(|&at| line_at(current, at)).collect();
            return Err(error(format!(
                "old_text occurs {} times in {shown} (at {}); include more surrounding lines in old_text so that it matches exactly once",
                found.len(),
                describe_lines(&lines)
            )));
        }
    };
    let range = start..start + old_text.len();
    let mut edited = String::with_capacity(current.len() - old_text.len() + new_text.len());
    edited.push_str(&current[..range.start]);
    edited.push_str(new_text);
    edited.push_str(&current[range.end..]);
    let diff = unified_diff(
        current,
        &edited,
        &format!("a/{shown}"),
        &format!("b/{shown}"),
    );
    Ok(PlannedEdit {
        path: resolved,
        range,
        new_text: new_text.to_string(),
        diff,
    })
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
fn not_found(shown: &str, current: &str, old_text: &str) -> ToolError {
    let mut message = format!("old_text was not found in {shown}.");
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
                " Its first line `{}` occurs at {}, but the following lines differ: read the file there and copy old_text exactly.",
                cut_line(first_line, MAX_GREP_LINE_CHARS),
                describe_lines(&lines)
            ));
            return error(message);
        }
    }
    message.push_str(
        " Read the file again with read_file and copy the text to replace exactly, whitespace included.",
    );
    error(message)
}

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

fn unified_diff(old: &str, new: &str, old_header: &str, new_header: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_header, new_header)
        .to_string()
}

/// A `write_file` call checked and computed, for the host to approve and apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWrite {
    pub path: PathBuf,
    pub content: String,
    /// Unified diff against the current text, or against nothing (`--- /dev/null`).
    pub diff: String,
    pub created: bool,
}

/// `write_file`: the whole new content of a file. `current` is its text (open buffer or disk),
/// `None` when the file does not exist yet.
pub fn plan_write(
    ws: &PathBoundary,
    path: &str,
    current: Option<&str>,
    content: &str,
) -> Result<PlannedWrite, ToolError> {
    let resolved = ws.resolve(path)?;
    let shown = ws.display(&resolved);
    if resolved.is_dir() {
        return Err(error(format!(
            "{shown} is a directory; write_file needs a file path"
        )));
    }
    let new_header = format!("b/{shown}");
    let (diff, created) = match current {
        None => (unified_diff("", content, "/dev/null", &new_header), true),
        Some(current) => (
            unified_diff(current, content, &format!("a/{shown}"), &new_header),
            false,
        ),
    };
    Ok(PlannedWrite {
        path: resolved,
        content: content.to_string(),
        diff,
        created,
    })
}

/// How a `shell` call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutcome {
    /// stdout and stderr merged, cut head and tail, ending with a status line.
    pub output: String,
    /// `None` when the process was killed (timeout, cancellation, signal).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

/// `shell`: run `command` with the user's shell (`-c`) in `cwd`, stdin closed, stdout and
/// stderr merged in arrival order and passed to `on_output` as they come. The command runs in
/// its own process group, which is killed whole on timeout or cancellation. Err only when the
/// process cannot be started.
pub async fn run_shell(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    max_output_bytes: usize,
    on_output: impl Fn(&str) + Send + Sync + 'static,
    cancel: &CancellationToken,
    hidden_env: &[String],
) -> Result<ShellOutcome, ToolError> {
    if !cwd.is_dir() {
        return Err(error(format!(
            "cannot run `{command}`: the working directory {} does not exist",
            cwd.display()
        )));
    }
    let mut shell = tokio::process::Command::new(user_shell());
    // The provider's key must not reach a command (`env` would print it to the model, the
    // editor and the session log).
    for name in hidden_env {
        shell.env_remove(name);
    }
    let mut child = shell
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Nothing may wait for a human at a terminal: pagers print, git does not prompt.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        // A group of its own, so a kill reaches everything the command started.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| {
            error(format!(
                "cannot run `{command}` in {}: {err}",
                cwd.display()
            ))
        })?;
    // If this future is dropped mid-run (the turn's task aborted), the group dies with it.
    let mut group = GroupGuard::new(child.id());

    // A small bound: a command printing faster than the output is consumed waits for it.
    let (sender, mut receiver) = mpsc::channel::<String>(64);
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, sender.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, sender.clone())));
    }
    drop(sender);

    let mut kept = KeptOutput::new(max_output_bytes);
    let mut status: Option<ExitStatus> = None;
    let mut pipes_open = true;
    let mut left_running_killed = false;
    let ending;
    let deadline = tokio::time::sleep(timeout);
    let grace = tokio::time::sleep(Duration::MAX);
    let wait = child.wait();
    tokio::pin!(deadline, grace, wait);
    loop {
        if status.is_some() && !pipes_open {
            ending = Ending::Exited;
            break;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                group.kill();
                ending = Ending::Cancelled;
                break;
            }
            _ = &mut deadline => {
                group.kill();
                ending = Ending::TimedOut;
                break;
            }
            chunk = receiver.recv(), if pipes_open => match chunk {
                Some(chunk) => {
                    on_output(&chunk);
                    kept.push(&chunk);
                }
                None => pipes_open = false,
            },
            exited = &mut wait, if status.is_none() => {
                let exited = exited.map_err(|err| error(format!("waiting for `{command}` failed: {err}")))?;
                status = Some(exited);
                if let Some(deadline) = tokio::time::Instant::now().checked_add(SHELL_EXIT_GRACE) {
                    grace.as_mut().reset(deadline);
                }
            }
            _ = &mut grace, if status.is_some() && pipes_open => {
                group.kill();
                left_running_killed = true;
                ending = Ending::Exited;
                break;
            }
        }
    }
    if pipes_open {
        // Killed: what the group wrote before dying is still in the pipes.
        let _ = tokio::time::timeout(KILLED_DRAIN, async {
            while let Some(chunk) = receiver.recv().await {
                on_output(&chunk);
                kept.push(&chunk);
            }
        })
        .await;
    }
    if status.is_none() {
        status = tokio::time::timeout(KILLED_DRAIN, &mut wait)
            .await
            .ok()
            .and_then(Result::ok);
    }
    // A process that left the group may hold a pipe open forever: stop reading it.
    for reader in readers {
        reader.abort();
    }
    // Killed already, or exited with the pipes closed: nothing is left for the guard.
    group.disarm();

    let mut output = truncate_middle(
        &kept.finish(),
        TruncationPolicy::Bytes(max_output_bytes),
        agentls_core::tokens::TokenizerKind::default(),
    )
    .text;
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    if left_running_killed {
        output.push_str("[processes the command left running in the background were killed]\n");
    }
    let exit_code = match ending {
        Ending::Exited => status.and_then(|status| status.code()),
        Ending::TimedOut | Ending::Cancelled => None,
    };
    output.push_str(&match ending {
        Ending::TimedOut => format!("[killed: timed out after {}s]", timeout.as_secs_f64()),
        Ending::Cancelled => "[killed: the turn was cancelled]".to_string(),
        Ending::Exited => match (exit_code, status) {
            (Some(code), _) => format!("[exit code {code}]"),
            (None, Some(status)) => {
                use std::os::unix::process::ExitStatusExt;
                match status.signal() {
                    Some(signal) => format!("[killed by signal {signal}]"),
                    None => "[exit status unknown]".to_string(),
                }
            }
            (None, None) => "[exit status unknown]".to_string(),
        },
    });
    Ok(ShellOutcome {
        output,
        exit_code,
        timed_out: ending == Ending::TimedOut,
        cancelled: ending == Ending::Cancelled,
    })
}

/// `$SHELL` when it is a POSIX-like shell, which reads `-c` as expected; fish or nushell
/// would not run the same command line, so they fall back to `/bin/sh`.
fn user_shell() -> PathBuf {
    const POSIX_LIKE: [&str; 6] = ["sh", "bash", "zsh", "dash", "ksh", "ash"];
    std::env::var_os("SHELL")
        .map(PathBuf::from)
        .filter(|shell| {
            shell.is_absolute()
                && shell
                    .file_name()
                    .and_then(OsStr::to_str)
                    .is_some_and(|name| POSIX_LIKE.contains(&name))
                && shell.is_file()
        })
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// Kills the command's process group when armed: on timeout, cancellation, or when dropped.
struct GroupGuard(Option<u32>);

/// Process groups of commands still running: killed by `kill_running_commands` when the
/// process exits (a future is not dropped at exit, so `GroupGuard` alone would leave them).
static RUNNING_GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Kills every command still running (on exit, on Ctrl-C).
pub fn kill_running_commands() {
    let groups = std::mem::take(&mut *RUNNING_GROUPS.lock().unwrap_or_else(|e| e.into_inner()));
    for pid in groups {
        GroupGuard(Some(pid)).kill();
    }
}

impl GroupGuard {
    fn new(pid: Option<u32>) -> GroupGuard {
        if let Some(pid) = pid {
            RUNNING_GROUPS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(pid);
        }
        GroupGuard(pid)
    }

    fn forget(&self) {
        if let Some(pid) = self.0 {
            RUNNING_GROUPS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|p| *p != pid);
        }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.0.and_then(|pid| libc::pid_t::try_from(pid).ok()) {
            // pid 0 or 1 would address our own group or every process: never those.
            if pgid > 1 {
                // SAFETY: kill(2) has no memory effects; a negative pid names a process group.
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
        }
    }

    fn disarm(&mut self) {
        self.forget();
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
        self.forget();
    }
}

/// Reads a pipe to its end, sending text chunks. A multi-byte character split between two
/// reads is held back until it is whole, so no chunk shows a spurious `�`.
async fn pump(mut pipe: impl AsyncRead + Unpin, sender: mpsc::Sender<String>) {
    let mut buffer = vec![0u8; 8192];
    let mut pending = Vec::new();
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                pending.extend_from_slice(&buffer[..read]);
                let text = take_complete_utf8(&mut pending);
                if !text.is_empty() && sender.send(text).await.is_err() {
                    return;
                }
            }
        }
    }
    if !pending.is_empty() {
        let _ = sender
            .send(String::from_utf8_lossy(&pending).into_owned())
            .await;
    }
}

/// The text of `pending` up to an incomplete character at its end, which stays in `pending`.
/// Invalid bytes become `�`.
fn take_complete_utf8(pending: &mut Vec<u8>) -> String {
    let mut text = String::new();
    let mut start = 0;
    loop {
        match std::str::from_utf8(&pending[start..]) {
            Ok(valid) => {
                text.push_str(valid);
                start = pending.len();
                break;
            }
            Err(err) => {
                let valid_end = start + err.valid_up_to();
                text.push_str(&String::from_utf8_lossy(&pending[start..valid_end]));
                match err.error_len() {
                    Some(invalid) => {
                        text.push(char::REPLACEMENT_CHARACTER);
                        start = valid_end + invalid;
                    }
                    None => {
                        start = valid_end;
                        break;
                    }
                }
            }
        }
    }
    pending.drain(..start);
    text
}

/// A command's output held in bounded memory: all of it up to a cap, beyond which the head
/// and a rolling tail are kept and the middle counted.
struct KeptOutput {
    head: String,
    tail: String,
    dropped_bytes: usize,
    half: usize,
}

impl KeptOutput {
    fn new(max_output_bytes: usize) -> KeptOutput {
        KeptOutput {
            head: String::new(),
            tail: String::new(),
            dropped_bytes: 0,
            half: max_output_bytes.max(MIN_KEPT_OUTPUT_BYTES),
        }
    }

    fn push(&mut self, mut chunk: &str) {
        if self.head.len() < self.half {
            let room = floor_char_boundary(chunk, self.half - self.head.len());
            self.head.push_str(&chunk[..room]);
            chunk = &chunk[room..];
        }
        self.tail.push_str(chunk);
        if self.tail.len() > 2 * self.half {
            let cut = ceil_char_boundary(&self.tail, self.tail.len() - self.half);
            self.dropped_bytes += cut;
            self.tail.drain(..cut);
        }
    }

    fn finish(self) -> String {
        if self.dropped_bytes == 0 {
            return self.head + &self.tail;
        }
        format!(
            "{}\n…{} bytes of output not kept…\n{}",
            self.head, self.dropped_bytes, self.tail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn workspace() -> (tempfile::TempDir, PathBoundary) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, PathBoundary { roots: vec![root] })
    }

    fn root(ws: &PathBoundary) -> &Path {
        &ws.roots[0]
    }

    fn write(ws: &PathBoundary, relative: &str, text: &str) -> PathBuf {
        let path = root(ws).join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn resolve_keeps_paths_inside_the_workspace() {
        let (_dir, ws) = workspace();
        let outside_dir = tempfile::tempdir().unwrap();
        let outside = outside_dir.path().canonicalize().unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        let lib = write(&ws, "src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");

        assert_eq!(ws.resolve("src/lib.rs").unwrap(), lib);
        assert_eq!(ws.resolve("./src/../src/lib.rs").unwrap(), lib);
        assert_eq!(ws.resolve(lib.to_str().unwrap()).unwrap(), lib);
        assert_eq!(ws.display(&lib), "src/lib.rs");
        assert_eq!(ws.resolve("").unwrap_err().0, "a path is required");

        let err = ws.resolve("../x").unwrap_err().0;
        assert!(err.contains("../x is outside the workspace"), "{err}");
        let err = ws.resolve("src/../../x").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let secret = outside.join("secret.txt");
        let err = ws.resolve(secret.to_str().unwrap()).unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("/etc/passwd").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");

        // Symbolic links: judged by where they lead.
        std::os::unix::fs::symlink(&secret, root(&ws).join("escape.txt")).unwrap();
        std::os::unix::fs::symlink(&outside, root(&ws).join("escape_dir")).unwrap();
        std::os::unix::fs::symlink(&lib, root(&ws).join("alias.rs")).unwrap();
        let err = ws.resolve("escape.txt").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("escape_dir/new.txt").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        assert_eq!(ws.resolve("alias.rs").unwrap(), lib);
        // A dangling link is judged by its target, which a write would create.
        std::os::unix::fs::symlink(outside.join("planted.txt"), root(&ws).join("dangling"))
            .unwrap();
        let err = ws.resolve("dangling").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");

        // Files that do not exist yet.
        assert_eq!(
            ws.resolve("src/new/mod.rs").unwrap(),
            root(&ws).join("src/new/mod.rs")
        );
        assert_eq!(
            ws.resolve("new/../other.rs").unwrap(),
            root(&ws).join("other.rs")
        );
        let err = ws.resolve("new/../../x.rs").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("../sibling/new.rs").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("src/lib.rs/x").unwrap_err().0;
        assert!(err.contains("not a directory"), "{err}");

        let empty = PathBoundary { roots: Vec::new() };
        assert!(empty.resolve("x").is_err());
    }

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

    #[test]
    fn list_dir_honours_gitignore_hides_git_and_limits_depth() {
        let (_dir, ws) = workspace();
        write(&ws, ".gitignore", "ignored.txt\ntarget/\n");
        write(&ws, ".git/config", "[core]\n");
        write(&ws, "ignored.txt", "x");
        write(&ws, "target/debug/app", "x");
        write(&ws, "Cargo.toml", "[package]\n");
        write(&ws, "src/lib.rs", "");
        write(&ws, "src/a/b/deep.rs", "");

        let listing = list_dir(&ws, None, None).unwrap();
        assert_eq!(listing, "./\n  Cargo.toml\n  src/\n    a/\n    lib.rs");

        let deeper = list_dir(&ws, Some("src"), Some(3)).unwrap();
        assert_eq!(deeper, "src/\n  a/\n    b/\n      deep.rs\n  lib.rs");

        let err = list_dir(&ws, Some("Cargo.toml"), None).unwrap_err().0;
        assert!(err.contains("not a directory"), "{err}");
        let err = list_dir(&ws, Some("nowhere"), None).unwrap_err().0;
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn list_dir_caps_entries() {
        let (_dir, ws) = workspace();
        for n in 0..MAX_LIST_ENTRIES + 5 {
            write(&ws, &format!("f{n:04}.txt"), "");
        }
        let listing = list_dir(&ws, None, Some(1)).unwrap();
        assert_eq!(listing.lines().count(), MAX_LIST_ENTRIES + 2);
        assert!(listing
            .ends_with("[5 more entries not listed; list a subdirectory or use a smaller depth]"));
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
        let err = plan_edit(&ws, "src/lib.rs", current, "fn b() {   \n    1", "x")
            .unwrap_err()
            .0;
        assert!(
            err.contains("trailing whitespace") && err.contains("line 5"),
            "{err}"
        );
        let crlf = "fn a() {\r\n    1\r\n}\r\n";
        let err = plan_edit(&ws, "src/lib.rs", crlf, "    1\n}", "x")
            .unwrap_err()
            .0;
        assert!(err.contains("CRLF") && err.contains("line 2"), "{err}");

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
    fn plan_write_creates_or_replaces() {
        let (_dir, ws) = workspace();
        let created = plan_write(&ws, "src/new.rs", None, "fn new() {}\n").unwrap();
        assert!(created.created);
        assert_eq!(created.path, root(&ws).join("src/new.rs"));
        assert!(
            created
                .diff
                .starts_with("--- /dev/null\n+++ b/src/new.rs\n"),
            "{}",
            created.diff
        );
        assert!(created.diff.contains("+fn new() {}"), "{}", created.diff);

        write(&ws, "old.rs", "fn old() {}\n");
        let replaced = plan_write(&ws, "old.rs", Some("fn old() {}\n"), "fn new() {}\n").unwrap();
        assert!(!replaced.created);
        assert!(
            replaced.diff.contains("--- a/old.rs\n+++ b/old.rs\n"),
            "{}",
            replaced.diff
        );
        assert!(
            replaced.diff.contains("-fn old() {}\n+fn new() {}\n"),
            "{}",
            replaced.diff
        );

        std::fs::create_dir(root(&ws).join("dir")).unwrap();
        assert!(plan_write(&ws, "dir", None, "x")
            .unwrap_err()
            .0
            .contains("directory"));
        assert!(plan_write(&ws, "../evil.rs", None, "x")
            .unwrap_err()
            .0
            .contains("outside"));
    }

    #[test]
    fn split_characters_are_held_back_until_whole() {
        let bytes = "é€".as_bytes();
        let mut pending = bytes[..1].to_vec();
        assert_eq!(take_complete_utf8(&mut pending), "");
        pending.extend_from_slice(&bytes[1..3]);
        assert_eq!(take_complete_utf8(&mut pending), "é");
        pending.extend_from_slice(&bytes[3..]);
        pending.extend_from_slice(b"\xffok");
        assert_eq!(take_complete_utf8(&mut pending), "€\u{fffd}ok");
        assert!(pending.is_empty());
    }

    #[test]
    fn kept_output_is_bounded() {
        let mut kept = KeptOutput::new(0);
        let line = "y\n".repeat(1024);
        for _ in 0..(6 * MIN_KEPT_OUTPUT_BYTES / line.len()) {
            kept.push(&line);
        }
        let text = kept.finish();
        assert!(text.len() <= 3 * MIN_KEPT_OUTPUT_BYTES + 100);
        assert!(text.contains("bytes of output not kept"));
    }

    fn no_output() -> impl Fn(&str) + Send + Sync + 'static {
        |_: &str| {}
    }

    async fn run(command: &str, timeout: Duration) -> ShellOutcome {
        let dir = tempfile::tempdir().unwrap();
        run_shell(
            command,
            dir.path(),
            timeout,
            10_000,
            no_output(),
            &CancellationToken::new(),
            &[],
        )
        .await
        .unwrap()
    }

    /// True once `pid` is gone or a zombie (its parent may not reap it in a container).
    fn is_dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
            Err(_) => true,
        }
    }

    async fn wait_dead(pid: i32) -> bool {
        for _ in 0..100 {
            if is_dead(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    #[tokio::test]
    async fn shell_reports_output_and_exit_codes() {
        let ok = run("echo hello", Duration::from_secs(30)).await;
        assert_eq!(ok.output, "hello\n[exit code 0]");
        assert_eq!(ok.exit_code, Some(0));
        assert!(!ok.timed_out && !ok.cancelled);

        let failed = run("echo oops >&2; exit 3", Duration::from_secs(30)).await;
        assert_eq!(failed.output, "oops\n[exit code 3]");
        assert_eq!(failed.exit_code, Some(3));

        let merged = run("echo out; echo err >&2; echo out2", Duration::from_secs(30)).await;
        for part in ["out\n", "err\n", "out2\n"] {
            assert!(merged.output.contains(part), "{}", merged.output);
        }

        let dir = tempfile::tempdir().unwrap();
        let err = run_shell(
            "true",
            &dir.path().join("missing"),
            Duration::from_secs(5),
            1000,
            no_output(),
            &CancellationToken::new(),
            &[],
        )
        .await
        .unwrap_err()
        .0;
        assert!(err.contains("does not exist"), "{err}");
    }

    #[tokio::test]
    async fn shell_output_is_streamed_and_cut_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let chunks = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = chunks.clone();
        let outcome = run_shell(
            "for i in $(seq 1 2000); do echo \"line $i é\"; done",
            dir.path(),
            Duration::from_secs(30),
            1000,
            move |chunk: &str| seen.lock().unwrap().push(chunk.to_string()),
            &CancellationToken::new(),
            &[],
        )
        .await
        .unwrap();
        let streamed = chunks.lock().unwrap().concat();
        assert!(streamed.starts_with("line 1 é\n") && streamed.ends_with("line 2000 é\n"));
        assert!(!streamed.contains('\u{fffd}'));
        assert!(
            outcome.output.starts_with("Total output lines: 2000"),
            "{}",
            outcome.output
        );
        assert!(outcome.output.contains("line 1 é\n"), "{}", outcome.output);
        assert!(
            outcome.output.ends_with("line 2000 é\n[exit code 0]"),
            "{}",
            outcome.output
        );
        assert!(outcome.output.len() < 1200, "{}", outcome.output.len());
    }

    #[tokio::test]
    async fn shell_timeout_kills_the_whole_group() {
        let outcome = run("sleep 30 & echo $!; sleep 30", Duration::from_millis(300)).await;
        assert!(outcome.timed_out && !outcome.cancelled);
        assert_eq!(outcome.exit_code, None);
        assert!(
            outcome.output.ends_with("[killed: timed out after 0.3s]"),
            "{}",
            outcome.output
        );
        let background: i32 = outcome
            .output
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            wait_dead(background).await,
            "the background sleep survived the timeout"
        );
    }

    #[tokio::test]
    async fn shell_cancellation_kills_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            canceller.cancel();
        });
        let outcome = run_shell(
            "echo $$; sleep 30",
            dir.path(),
            Duration::from_secs(60),
            1000,
            no_output(),
            &cancel,
            &[],
        )
        .await
        .unwrap();
        assert!(outcome.cancelled && !outcome.timed_out);
        assert!(outcome.output.contains("cancelled"), "{}", outcome.output);
        let shell: i32 = outcome
            .output
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            wait_dead(shell).await,
            "the shell survived the cancellation"
        );
    }

    #[tokio::test]
    async fn shell_does_not_wait_for_background_processes() {
        let outcome = run("sleep 60 & echo started", Duration::from_secs(20)).await;
        assert!(!outcome.timed_out, "{}", outcome.output);
        assert_eq!(outcome.exit_code, Some(0));
        assert!(
            outcome.output.starts_with("started\n"),
            "{}",
            outcome.output
        );
    }
}
