//! A turn's changes reviewed file by file and hunk by hunk: the hunks from a file's text
//! before the turns to the text they left it with, each with an id that names its content,
//! and the text a file gets when some of them are undone over what it holds now (the user
//! may have typed since). Pure: the server reads the texts from the checkpoints and writes
//! the result through the editor.

use similar::{ChangeTag, DiffOp, TextDiff};

/// Lines of context around a hunk.
const CONTEXT: usize = 3;

/// One hunk of a file's change: the 1-based line ranges of the changed lines (a range of 0
/// lines starts after the line before it, as in a unified diff), and its unified diff text
/// (whose `@@` header counts the context lines too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Names the hunk's place and content: the same change listed again has the same id, a
    /// hunk whose lines changed has another.
    pub id: String,
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    /// `@@ -a,b +c,d @@` then the lines, with their context.
    pub diff: String,
}

/// The hunks from `before` to `after`.
pub fn hunks(before: &str, after: &str) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(before, after);
    diff.grouped_ops(CONTEXT)
        .iter()
        .map(|group| hunk(&diff, group))
        .collect()
}

fn hunk<'a>(diff: &TextDiff<'a, 'a, 'a, str>, group: &[DiffOp]) -> Hunk {
    // The changed lines alone (context left out): what the hunk undoes.
    let changed = |op: &&DiffOp| !matches!(op, DiffOp::Equal { .. });
    let first = group.iter().find(changed).expect("a group has a change");
    let last = group
        .iter()
        .rev()
        .find(changed)
        .expect("a group has a change");
    let old = first.old_range().start..last.old_range().end;
    let new = first.new_range().start..last.new_range().end;
    let mut text = String::new();
    for op in group {
        for change in diff.iter_changes(op) {
            let sign = match change.tag() {
                ChangeTag::Equal => ' ',
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
            };
            text.push(sign);
            text.push_str(change.value());
            if change.missing_newline() {
                text.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    let start = |range: &std::ops::Range<usize>| {
        if range.is_empty() {
            range.start
        } else {
            range.start + 1
        }
    };
    // The header is a unified diff's: the lines shown, context included.
    let (first_op, last_op) = (&group[0], &group[group.len() - 1]);
    let shown_old = first_op.old_range().start..last_op.old_range().end;
    let shown_new = first_op.new_range().start..last_op.new_range().end;
    let header = format!(
        "@@ -{},{} +{},{} @@\n",
        start(&shown_old),
        shown_old.len(),
        start(&shown_new),
        shown_new.len()
    );
    let id = format!(
        "h{}-{}",
        start(&new),
        crate::reminders::version_of(&format!("{}\u{0}{text}", old.start))
    );
    Hunk {
        id,
        old_start: start(&old),
        old_lines: old.len(),
        new_start: start(&new),
        new_lines: new.len(),
        diff: header + &text,
    }
}

/// Why some hunks cannot be undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertRefused {
    /// No hunk of the file has this id (the change is not what was listed).
    UnknownHunk(String),
    /// The hunk's lines were changed since the turns left them.
    ChangedSince(String),
}

impl std::fmt::Display for RevertRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            RevertRefused::UnknownHunk(id) => write!(
                f,
                "no hunk {id} in the file's changes now (list the changes again)"
            ),
            RevertRefused::ChangedSince(id) => write!(
                f,
                "the lines of hunk {id} were changed after the agent's change: left as they are"
            ),
        }
    }
}

/// The text of a file with the hunks `ids` of `hunks(before, after)` undone over `now` (its
/// text today, `after` when nobody changed it since). A hunk whose lines are not in `now` as
/// the turns left them is refused: undoing it would overwrite what the user typed.
pub fn revert(
    before: &str,
    after: &str,
    now: &str,
    ids: &[String],
) -> Result<String, RevertRefused> {
    let all = hunks(before, after);
    let mut chosen: Vec<&Hunk> = Vec::new();
    for id in ids {
        match all.iter().find(|h| &h.id == id) {
            Some(hunk) => chosen.push(hunk),
            None => return Err(RevertRefused::UnknownHunk(id.clone())),
        }
    }
    let before_lines: Vec<&str> = before.split_inclusive('\n').collect();
    let after_lines: Vec<&str> = after.split_inclusive('\n').collect();
    let mut now_lines: Vec<&str> = now.split_inclusive('\n').collect();
    // Where each line of `after` is in `now`, for the lines nobody changed since.
    let mut at_now: Vec<Option<usize>> = vec![None; after_lines.len() + 1];
    let since = TextDiff::from_lines(after, now);
    for op in since.ops() {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            for i in 0..len {
                at_now[old_index + i] = Some(new_index + i);
            }
        }
    }
    // The end of the file is where it is.
    at_now[after_lines.len()] = Some(now_lines.len());
    // Bottom first, so the places of the hunks above stay right.
    chosen.sort_by_key(|h| std::cmp::Reverse(h.new_start));
    chosen.dedup_by_key(|h| h.id.clone());
    for hunk in chosen {
        let from = if hunk.new_lines == 0 {
            hunk.new_start
        } else {
            hunk.new_start - 1
        };
        // The hunk's lines must be where the turns left them, one after the other; a hunk
        // that only removed lines goes back before the line that follows them.
        let start = if hunk.new_lines == 0 {
            at_now[from]
        } else {
            let mapped: Option<Vec<usize>> =
                (from..from + hunk.new_lines).map(|i| at_now[i]).collect();
            mapped
                .filter(|m| m.windows(2).all(|w| w[1] == w[0] + 1))
                .map(|m| m[0])
        };
        let Some(start) = start else {
            return Err(RevertRefused::ChangedSince(hunk.id.clone()));
        };
        let old_from = if hunk.old_lines == 0 {
            hunk.old_start
        } else {
            hunk.old_start - 1
        };
        let old = &before_lines[old_from..old_from + hunk.old_lines];
        now_lines.splice(start..start + hunk.new_lines, old.iter().copied());
    }
    Ok(now_lines.concat())
}

#[cfg(test)]
#[path = "hunks_tests.rs"]
mod tests;
