//! What a shell command changed in the workspace, found by comparing two cheap snapshots
//! taken before and after it (`rm`, `sed -i`, a code generator, `git checkout` change files
//! without the file tools, and the ledger must still list them).
//!
//! Pure: the server takes the snapshots (`git status`, `git diff`, `stat`, a walk) and hands
//! them here as data. Two kinds of snapshot:
//! - **git**: HEAD and the dirty paths (`git status --porcelain -z`) with their stat. A file
//!   clean before and after changed only if HEAD moved under it (`git checkout`, `reset
//!   --hard`, `pull`): those come from `git diff --name-status HEAD_before HEAD_after`.
//! - **files**: the stat of every indexed file (no git), compared one by one.

use std::collections::{BTreeMap, BTreeSet};

/// What identifies a file's content cheaply: a rewrite changes the mtime, usually the size,
/// and for `sed -i`-style replace-by-rename the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
    pub size: u64,
    pub inode: u64,
}

/// A path as git reports it (relative to the repository's top level) in a dirty state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirtyPath {
    /// The two status letters of `git status --porcelain` (`??`, ` M`, `D `, `A `…).
    pub status: String,
    /// The file's stat now; `None` when it does not exist.
    pub stat: Option<FileStat>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snapshot {
    Git {
        /// Repository-relative path → its dirty state.
        dirty: BTreeMap<String, DirtyPath>,
        /// The stat, taken with the "after" snapshot, of paths that were dirty before and
        /// are clean now, or that HEAD's move touched (`None`: the file is gone).
        others: BTreeMap<String, Option<FileStat>>,
    },
    Files(BTreeMap<String, FileStat>),
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

/// The status letters of a diff between two commits (`git diff --name-status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadChange {
    pub status: char,
    pub path: String,
}

/// A file whose mtime is this close before the command's start still counts as written by it:
/// file systems stamp with a coarse clock that may lag the real one by a tick.
const MTIME_SLACK_NS: i128 = 1_000_000_000;

/// The paths changed between `before` and `after`, sorted by path. `head_changes` is the
/// diff between the two HEADs (empty when HEAD did not move); `started_ns` is when the command
/// started, in the clock of the mtimes.
pub fn changes(
    before: &Snapshot,
    after: &Snapshot,
    head_changes: &[HeadChange],
    started_ns: i128,
) -> Vec<(String, ChangeKind)> {
    let changed = match (before, after) {
        (Snapshot::Files(before), Snapshot::Files(after)) => file_changes(before, after),
        (
            Snapshot::Git {
                dirty: dirty_before,
                ..
            },
            Snapshot::Git {
                dirty: dirty_after,
                others,
                ..
            },
        ) => git_changes(dirty_before, dirty_after, others, head_changes, started_ns),
        // The kind of snapshot changed (git appeared or went): nothing can be compared.
        _ => BTreeMap::new(),
    };
    changed.into_iter().collect()
}

/// Two stats of every file: a path in one only was created or deleted, a different stat
/// is a modification.
fn file_changes(
    before: &BTreeMap<String, FileStat>,
    after: &BTreeMap<String, FileStat>,
) -> BTreeMap<String, ChangeKind> {
    let mut out = BTreeMap::new();
    for (path, stat) in after {
        match before.get(path) {
            None => {
                out.insert(path.clone(), ChangeKind::Created);
            }
            Some(old) if old != stat => {
                out.insert(path.clone(), ChangeKind::Modified);
            }
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.insert(path.clone(), ChangeKind::Deleted);
    }
    out
}

/// Every path dirty before or after, or moved by HEAD, judged by how it was before.
fn git_changes(
    dirty_before: &BTreeMap<String, DirtyPath>,
    dirty_after: &BTreeMap<String, DirtyPath>,
    others: &BTreeMap<String, Option<FileStat>>,
    head_changes: &[HeadChange],
    started_ns: i128,
) -> BTreeMap<String, ChangeKind> {
    let head_moved: BTreeMap<&str, char> = head_changes
        .iter()
        .map(|c| (c.path.as_str(), c.status))
        .collect();
    let candidates: BTreeSet<&str> = dirty_before
        .keys()
        .chain(dirty_after.keys())
        .map(String::as_str)
        .chain(head_moved.keys().copied())
        .collect();
    let mut out = BTreeMap::new();
    for path in candidates {
        let now = match dirty_after.get(path) {
            Some(entry) => entry.stat,
            None => others.get(path).copied().flatten(),
        };
        let kind = match (dirty_before.get(path), dirty_after.get(path)) {
            (Some(old), _) => dirty_path_change(old, now),
            (None, Some(new)) => newly_dirty_change(new, now, started_ns),
            // Clean before and after: the working tree followed HEAD.
            (None, None) => head_followed_change(head_moved.get(path).copied(), now),
        };
        if let Some(kind) = kind {
            out.insert(path.to_string(), kind);
        }
    }
    out
}

/// Dirty before: the file changed if its stat did.
fn dirty_path_change(old: &DirtyPath, now: Option<FileStat>) -> Option<ChangeKind> {
    match (old.stat, now) {
        (Some(_), None) => Some(ChangeKind::Deleted),
        (None, Some(_)) => Some(ChangeKind::Created),
        (Some(a), Some(b)) if a != b => Some(ChangeKind::Modified),
        _ => None,
    }
}

/// Clean before, dirty now (`new`).
fn newly_dirty_change(
    new: &DirtyPath,
    now: Option<FileStat>,
    started_ns: i128,
) -> Option<ChangeKind> {
    match now {
        None => Some(ChangeKind::Deleted),
        // Untracked or added: it did not exist (an existing untracked file would have been
        // dirty before).
        Some(_) if new.status.starts_with('?') || new.status.starts_with('A') => {
            Some(ChangeKind::Created)
        }
        // Tracked and clean before: changed if written since the start (a `reset --soft` or
        // `rm --cached` makes it dirty without a write).
        Some(stat) if stat.mtime_ns >= started_ns - MTIME_SLACK_NS => Some(ChangeKind::Modified),
        Some(_) => None,
    }
}

/// Clean before and after: what HEAD's move (`status`, its diff letter) did to the file.
fn head_followed_change(status: Option<char>, now: Option<FileStat>) -> Option<ChangeKind> {
    match status {
        Some('A') if now.is_some() => Some(ChangeKind::Created),
        Some('D') if now.is_none() => Some(ChangeKind::Deleted),
        Some(_) if now.is_some() => Some(ChangeKind::Modified),
        _ => None,
    }
}

/// The entries of `git status --porcelain=v1 -z`: (status letters, path). A rename or copy
/// (`R`/`C`) names its new path first and its old one in the next field: both are listed,
/// the old one as deleted (` D`).
pub fn parse_git_status(output: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut fields = output.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let Some(field) = fields.next() {
        if field.len() < 4 {
            continue;
        }
        let status = String::from_utf8_lossy(&field[..2]).into_owned();
        let path = String::from_utf8_lossy(&field[3..]).into_owned();
        let renamed = status.starts_with('R') || status.starts_with('C');
        out.push((status.clone(), path));
        if renamed {
            if let Some(old) = fields.next() {
                if status.starts_with('R') {
                    out.push((" D".to_string(), String::from_utf8_lossy(old).into_owned()));
                }
            }
        }
    }
    out
}

/// The entries of `git diff --name-status --no-renames -z A B`.
pub fn parse_name_status(output: &[u8]) -> Vec<HeadChange> {
    let mut out = Vec::new();
    let mut fields = output.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        if let Some(&letter) = status.first() {
            out.push(HeadChange {
                status: letter as char,
                path: String::from_utf8_lossy(path).into_owned(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(mtime_ns: i128, size: u64) -> FileStat {
        FileStat {
            mtime_ns,
            size,
            inode: 1,
        }
    }

    fn dirty(entries: &[(&str, &str, Option<FileStat>)]) -> BTreeMap<String, DirtyPath> {
        entries
            .iter()
            .map(|(path, status, stat)| {
                (
                    path.to_string(),
                    DirtyPath {
                        status: status.to_string(),
                        stat: *stat,
                    },
                )
            })
            .collect()
    }

    fn git(
        entries: &[(&str, &str, Option<FileStat>)],
        others: &[(&str, Option<FileStat>)],
    ) -> Snapshot {
        Snapshot::Git {
            dirty: dirty(entries),
            others: others.iter().map(|(p, s)| (p.to_string(), *s)).collect(),
        }
    }

    const START: i128 = 1_000 * 1_000_000_000;

    #[test]
    fn git_snapshots_find_created_modified_and_deleted_files() {
        let before = git(
            &[
                ("edited.rs", " M", Some(stat(START - 50_000_000_000, 10))),
                (
                    "untouched_dirty.rs",
                    " M",
                    Some(stat(START - 9_000_000_000, 5)),
                ),
                ("scratch.txt", "??", Some(stat(START - 9_000_000_000, 5))),
            ],
            &[],
        );
        let after = git(
            &[
                // rewritten by `sed -i` (new inode, same size, new mtime)
                ("edited.rs", " M", Some(stat(START + 1, 10))),
                (
                    "untouched_dirty.rs",
                    " M",
                    Some(stat(START - 9_000_000_000, 5)),
                ),
                // generated
                ("gen/out.rs", "??", Some(stat(START + 2, 99))),
                // `rm lib.rs` of a clean tracked file
                ("lib.rs", " D", None),
                // clean before, written by the command
                ("main.rs", " M", Some(stat(START + 3, 7))),
                // clean before, made dirty without a write (`git reset --soft`)
                ("old.rs", "M ", Some(stat(START - 100_000_000_000, 7))),
            ],
            // `rm scratch.txt`: dirty before, gone now
            &[("scratch.txt", None)],
        );
        let found = changes(&before, &after, &[], START);
        assert_eq!(
            found,
            vec![
                ("edited.rs".to_string(), ChangeKind::Modified),
                ("gen/out.rs".to_string(), ChangeKind::Created),
                ("lib.rs".to_string(), ChangeKind::Deleted),
                ("main.rs".to_string(), ChangeKind::Modified),
                ("scratch.txt".to_string(), ChangeKind::Deleted),
            ]
        );
    }

    #[test]
    fn a_checkout_changes_the_files_head_moved_and_a_commit_changes_none() {
        // `git checkout other`: clean before and after; HEAD's diff names the files.
        let before = git(&[], &[]);
        let after = git(
            &[],
            &[
                ("a.rs", Some(stat(START + 5, 3))),
                ("new.rs", Some(stat(START + 5, 3))),
                ("gone.rs", None),
            ],
        );
        let moved = parse_name_status(b"M\0a.rs\0A\0new.rs\0D\0gone.rs\0");
        assert_eq!(
            changes(&before, &after, &moved, START),
            vec![
                ("a.rs".to_string(), ChangeKind::Modified),
                ("gone.rs".to_string(), ChangeKind::Deleted),
                ("new.rs".to_string(), ChangeKind::Created),
            ]
        );
        // `git commit -am`: dirty before, clean after, same stat; HEAD's diff names it.
        let before = git(&[("a.rs", " M", Some(stat(START - 5, 3)))], &[]);
        let after = git(&[], &[("a.rs", Some(stat(START - 5, 3)))]);
        let moved = parse_name_status(b"M\0a.rs\0");
        assert_eq!(changes(&before, &after, &moved, START), vec![]);
        // `git checkout -- a.rs`: dirty before, clean after, rewritten.
        let after = git(&[], &[("a.rs", Some(stat(START + 5, 2)))]);
        assert_eq!(
            changes(&before, &after, &[], START),
            vec![("a.rs".to_string(), ChangeKind::Modified)]
        );
    }

    #[test]
    fn file_snapshots_compare_every_file() {
        let before = Snapshot::Files(
            [("a", stat(1, 1)), ("b", stat(1, 1)), ("c", stat(1, 1))]
                .into_iter()
                .map(|(p, s)| (p.to_string(), s))
                .collect(),
        );
        let after = Snapshot::Files(
            [("a", stat(1, 1)), ("b", stat(2, 1)), ("d", stat(2, 1))]
                .into_iter()
                .map(|(p, s)| (p.to_string(), s))
                .collect(),
        );
        assert_eq!(
            changes(&before, &after, &[], 0),
            vec![
                ("b".to_string(), ChangeKind::Modified),
                ("c".to_string(), ChangeKind::Deleted),
                ("d".to_string(), ChangeKind::Created),
            ]
        );
        // Different kinds of snapshot cannot be compared.
        assert_eq!(changes(&before, &git(&[], &[]), &[], 0), vec![]);
    }

    #[test]
    fn git_status_output_is_parsed_with_renames() {
        let parsed =
            parse_git_status(b" M src/a.rs\0?? new file.txt\0R  b.rs\0old b.rs\0D  c.rs\0");
        assert_eq!(
            parsed,
            vec![
                (" M".to_string(), "src/a.rs".to_string()),
                ("??".to_string(), "new file.txt".to_string()),
                ("R ".to_string(), "b.rs".to_string()),
                (" D".to_string(), "old b.rs".to_string()),
                ("D ".to_string(), "c.rs".to_string()),
            ]
        );
        assert_eq!(parse_git_status(b""), vec![]);
    }
}
