//! File listings in a model's reply: a line naming a file, then a fenced block with the
//! file's whole new content (the edit format Aider calls "whole"). A small model writes far
//! better code as plain text than inside a tool call's JSON string (on the task bench the
//! 1.5B local model's first reply passed 0 of 6 tries as a `write_file` call and 5 of 6 as a
//! listing), so under `tools.fileListings` the agent applies a listing as the `write_file`
//! call it stands for. This module only finds them; which to apply is the server's call.

/// One file listing: the path as written and the content of its fenced block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub path: String,
    pub content: String,
}

/// The listings of `reply`, in order. A block whose fence is never closed (a reply cut by
/// the output limit) is not a listing: half a file must never replace a whole one. Where
/// every line of a block starts with a read's line number (`L12: `), the numbers are left
/// out (a small model copies them from the editor block).
pub fn find(reply: &str) -> Vec<Listing> {
    blocks(reply)
        .into_iter()
        .filter_map(|block| {
            Some(Listing {
                path: block.path?,
                content: block.content,
            })
        })
        .collect()
}

/// A closed fenced block of a reply: its content, and the path it is listed under, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub path: Option<String>,
    pub content: String,
}

/// Every closed fenced block of `reply`, in order, with its path where it has one (what
/// [`find`] keeps), content as in [`find`].
pub fn blocks(reply: &str) -> Vec<Block> {
    scan(reply).0
}

/// Whether `content` is a whole new version of `original` (the file as the turn found it):
/// it defines every top-level function and class `original` defines, and `original` defines
/// some. A small model often lists the file it was asked to change under no path, or under
/// the example's name from its prompt; a block that keeps the file's names is that file
/// (what Aider does with a block of no known name when one file is in the chat). An example
/// or a snippet that calls the functions does not define them.
pub fn keeps_definitions(content: &str, original: &str) -> bool {
    let wanted = top_level_definitions(original);
    let found = top_level_definitions(content);
    !wanted.is_empty() && wanted.iter().all(|name| found.contains(name))
}

/// The names a file defines at its top level, read from lines that start a definition at
/// column 0 (Python, Rust, JavaScript and TypeScript, Go).
fn top_level_definitions(text: &str) -> Vec<&str> {
    const STARTS: [&str; 12] = [
        "def ",
        "async def ",
        "class ",
        "fn ",
        "pub fn ",
        "pub struct ",
        "struct ",
        "function ",
        "export function ",
        "export class ",
        "export default function ",
        "func ",
    ];
    text.lines()
        .filter_map(|line| STARTS.iter().find_map(|start| line.strip_prefix(start)))
        .filter_map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
        .collect()
}

/// The path of a listing `reply` opens and never closes: a reply cut by the output limit
/// in the middle of a file (a small model that repeats a block until the limit).
pub fn cut(reply: &str) -> Option<String> {
    scan(reply).1
}

/// One walk over the fences: the closed listings, and the path of one left open.
fn scan(reply: &str) -> (Vec<Block>, Option<String>) {
    let lines: Vec<&str> = reply.lines().collect();
    let mut listings = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let Some((fence, info)) = opening_fence(lines[index]) else {
            index += 1;
            continue;
        };
        let path = path_in_info(info).or_else(|| path_before(&lines[..index]));
        let Some(close) = (index + 1..lines.len()).find(|&i| closes(lines[i], fence)) else {
            return (listings, path);
        };
        listings.push(Block {
            path,
            content: content_of(&lines[index + 1..close]),
        });
        index = close + 1;
    }
    (listings, None)
}

/// A fence's marker (its character and length) and info string, when `line` opens one.
fn opening_fence(line: &str) -> Option<((char, usize), &str)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let length = trimmed.chars().take_while(|c| *c == marker).count();
    if length < 3 {
        return None;
    }
    let info = trimmed[length..].trim();
    // A backtick fence's info string never holds a backtick (CommonMark).
    if marker == '`' && info.contains('`') {
        return None;
    }
    Some(((marker, length), info))
}

fn closes(line: &str, (marker, length): (char, usize)) -> bool {
    let trimmed = line.trim();
    trimmed.chars().count() >= length && trimmed.chars().all(|c| c == marker)
}

/// A path in the info string: ```` ```python path=src/a.py ````, ```` ```src/a.py ```` or
/// ```` ```python:src/a.py ````; a bare language name is not one.
fn path_in_info(info: &str) -> Option<String> {
    info.split(|c: char| c.is_whitespace() || c == ':' || c == '=')
        .filter(|word| word.contains('.'))
        .find_map(path_like)
}

/// The path on the last non-blank line before the fence (one blank line may separate
/// them), as a model writes it: `a.py`, `` `a.py` ``, `**a.py**`, `a.py:`, `### a.py`,
/// `File: a.py`.
fn path_before(before: &[&str]) -> Option<String> {
    let mut lines = before.iter().rev();
    let mut line = lines.next()?.trim();
    if line.is_empty() {
        line = lines.next()?.trim();
    }
    let line = line.trim_start_matches('#').trim();
    let line = ["File:", "file:", "Filename:", "filename:"]
        .iter()
        .find_map(|label| line.strip_prefix(label))
        .unwrap_or(line)
        .trim();
    let line = line.trim_end_matches(':');
    let line = line.trim_matches(|c| c == '`' || c == '*' || c == '"' || c == '\'');
    path_like(line)
}

/// `word` when it reads as a relative or absolute file path: no spaces, no URL, only the
/// characters paths are made of, and a name with an extension or a directory part.
fn path_like(word: &str) -> Option<String> {
    let word = word.trim();
    if word.is_empty() || word.len() > 255 || word.contains("://") {
        return None;
    }
    let allowed = |c: char| c.is_alphanumeric() || "._-/+@".contains(c);
    if !word.chars().all(allowed) {
        return None;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    let has_extension = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty());
    (has_extension || (word.contains('/') && !name.is_empty())).then(|| word.to_string())
}

/// A block's lines as a file: line numbers copied from a read (`L3: `) left out when every
/// non-empty line has one; one trailing newline.
fn content_of(lines: &[&str]) -> String {
    let numbered = lines.iter().any(|l| !l.is_empty())
        && lines
            .iter()
            .all(|l| l.is_empty() || read_number(l).is_some());
    let mut content = String::new();
    for line in lines {
        let line = match read_number(line).filter(|_| numbered) {
            Some(length) => &line[length..],
            None => line,
        };
        content.push_str(line);
        content.push('\n');
    }
    content
}

/// The length of `line`'s read line number (`L12: `, or `L12:` on an empty line).
fn read_number(line: &str) -> Option<usize> {
    let rest = line.strip_prefix('L')?;
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    match &rest[digits..] {
        ":" => Some(digits + 2),
        after if after.starts_with(": ") => Some(digits + 3),
        _ => None,
    }
}

#[cfg(test)]
#[path = "listings_tests.rs"]
mod tests;
