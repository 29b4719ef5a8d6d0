//! Checkpoints, the pure half: which events a rewind takes out of a session, the checkpoints
//! a session lists, git's raw diffs read as data, and a rewind's plan (what to restore,
//! create, delete, and what the user changed after the agent: conflicts). The trees
//! themselves are the server's (`store::checkpoints`, a private git object store).

use std::collections::BTreeMap;

use crate::event::{Event, RootTree};
use crate::history::Item;
use crate::snapshot::ChangeKind;

/// The `checkpoints.*` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointSettings {
    /// `checkpoints.enabled`: a checkpoint before each user message's turn.
    pub enabled: bool,
    /// `checkpoints.maxFileBytes`: larger files are not stored (and listed as such).
    pub max_file_bytes: u64,
    /// `checkpoints.maxStoreBytes`: past it, the oldest sessions' checkpoints are dropped.
    pub max_store_bytes: u64,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            enabled: true,
            max_file_bytes: 10 * 1024 * 1024,
            max_store_bytes: 2 * 1024 * 1024 * 1024,
        }
    }
}

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Restore {
    Code,
    Conversation,
    Both,
}

impl Restore {
    pub fn parse(name: &str) -> Option<Restore> {
        match name {
            "code" => Some(Restore::Code),
            "conversation" => Some(Restore::Conversation),
            "both" => Some(Restore::Both),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Restore::Code => "code",
            Restore::Conversation => "conversation",
            Restore::Both => "both",
        }
    }

    pub fn code(self) -> bool {
        matches!(self, Restore::Code | Restore::Both)
    }

    pub fn conversation(self) -> bool {
        matches!(self, Restore::Conversation | Restore::Both)
    }
}

/// The events that make a session's state: each `Rewind` of the conversation takes out the
/// events from its checkpoint to itself, except those that stay (approvals, model switches,
/// the session's start). The log itself stays append-only; replay and transcript read this.
pub fn resolve_rewinds(events: &[Event]) -> Vec<&Event> {
    let mut kept: Vec<&Event> = Vec::with_capacity(events.len());
    for event in events {
        if let Event::Rewind {
            checkpoint_id,
            restore,
            ..
        } = event
        {
            let conversation = Restore::parse(restore).is_some_and(Restore::conversation);
            let at = kept.iter().position(
                |e| matches!(e, Event::Checkpoint { checkpoint_id: id, .. } if id == checkpoint_id),
            );
            if let (true, Some(at)) = (conversation, at) {
                let tail = kept.split_off(at);
                kept.extend(tail.into_iter().filter(|e| survives_rewind(e)));
            }
        }
        kept.push(event);
    }
    kept
}

/// Whether an event stays when a rewind takes out its turn: approvals given in rewound
/// turns stay (the user gave them), as do model switches.
fn survives_rewind(event: &Event) -> bool {
    matches!(
        event,
        Event::SessionStarted { .. }
            | Event::Permission { .. }
            | Event::ModelChanged { .. }
            | Event::Rewind { .. }
    )
}

/// A checkpoint as a session lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointInfo {
    pub id: String,
    pub turn_id: String,
    /// The turn's number in the session (1 = the first user message).
    pub turn: u32,
    /// The first line of the user's message.
    pub message: String,
    /// The whole user's message (what a rewind gives back to the input box).
    pub full_message: String,
    pub at: u64,
    pub trees: Vec<RootTree>,
    pub unstored: Vec<String>,
    /// The files as the turn left them (None: the turn did not end, e.g. a crash).
    pub end: Option<Vec<RootTree>>,
    pub end_unstored: Vec<String>,
}

/// The checkpoints of a session (after its rewinds), oldest first.
pub fn list(events: &[Event]) -> Vec<CheckpointInfo> {
    let events = resolve_rewinds(events);
    let mut checkpoints: Vec<CheckpointInfo> = Vec::new();
    let mut turns = 0u32;
    for event in events {
        match event {
            Event::TurnStarted { .. } => turns += 1,
            Event::Checkpoint {
                turn_id,
                checkpoint_id,
                at,
                trees,
                unstored,
                label,
            } => checkpoints.push(CheckpointInfo {
                id: checkpoint_id.clone(),
                turn_id: turn_id.clone(),
                turn: turns + 1,
                message: label.clone().unwrap_or_default(),
                full_message: label.clone().unwrap_or_default(),
                at: *at,
                trees: trees.clone(),
                unstored: unstored.clone(),
                end: None,
                end_unstored: Vec::new(),
            }),
            Event::Item { turn_id, entry } => {
                if let (Item::User { text, .. }, Some(checkpoint)) =
                    (&entry.item, checkpoints.last_mut())
                {
                    if checkpoint.turn_id == *turn_id && checkpoint.full_message.is_empty() {
                        checkpoint.full_message = text.clone();
                        checkpoint.message = text.lines().next().unwrap_or_default().to_string();
                    }
                }
            }
            Event::TurnSnapshot {
                turn_id,
                trees,
                unstored,
            } => {
                if let Some(checkpoint) =
                    checkpoints.iter_mut().rev().find(|c| c.turn_id == *turn_id)
                {
                    checkpoint.end = Some(trees.clone());
                    checkpoint.end_unstored = unstored.clone();
                }
            }
            _ => {}
        }
    }
    checkpoints
}

/// The events of a session up to (not including) a checkpoint, after its rewinds: a fork's
/// history. `None` for the whole session.
pub fn prefix_before<'a>(
    events: &'a [Event],
    checkpoint_id: Option<&str>,
) -> Option<Vec<&'a Event>> {
    let events = resolve_rewinds(events);
    let Some(id) = checkpoint_id else {
        return Some(events);
    };
    let at = events.iter().position(
        |e| matches!(e, Event::Checkpoint { checkpoint_id, .. } if checkpoint_id == id),
    )?;
    Some(events[..at].to_vec())
}

/// A file's state in a tree: its git mode and blob id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    pub mode: u32,
    pub oid: String,
}

/// One path of `git diff-tree -r -z --raw`: its old and new states (None: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChange {
    /// The path as shown (a name that is not UTF-8 shows U+FFFD in place of its bytes).
    pub path: String,
    /// The path's bytes as git gave them: what is written and removed.
    pub path_bytes: Vec<u8>,
    pub old: Option<Blob>,
    pub new: Option<Blob>,
}

impl RawChange {
    pub fn kind(&self) -> ChangeKind {
        match (&self.old, &self.new) {
            (None, _) => ChangeKind::Created,
            (_, None) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        }
    }
}

/// Reads `git diff-tree -r -z --no-renames --raw` output (`:OLDMODE NEWMODE OLD NEW S\0PATH\0`
/// per path); a malformed record ends the reading.
pub fn parse_raw_diff(bytes: &[u8]) -> Vec<RawChange> {
    let mut changes = Vec::new();
    let mut fields = bytes.split(|&b| b == 0);
    while let (Some(header), Some(path)) = (fields.next(), fields.next()) {
        let header = String::from_utf8_lossy(header);
        let parts: Vec<&str> = header.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, old_oid, new_oid, _status] = parts[..] else {
            break;
        };
        let blob = |mode: &str, oid: &str| {
            let mode = u32::from_str_radix(mode, 8).ok()?;
            (mode != 0).then(|| Blob {
                mode,
                oid: oid.to_string(),
            })
        };
        changes.push(RawChange {
            path: String::from_utf8_lossy(path).into_owned(),
            path_bytes: path.to_vec(),
            old: blob(old_mode, old_oid),
            new: blob(new_mode, new_oid),
        });
    }
    changes
}

/// What `git status --porcelain=v2 -z --untracked-files=all --no-renames` says of a root
/// against the store's own index and its HEAD (the tree of the last snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusChanges {
    /// Root-relative paths that differ from the index on disk (modified, deleted, type
    /// changed: `tracked`) or are not in it (untracked, not ignored), in git's order.
    pub paths: Vec<(Vec<u8>, Tracked)>,
    /// Whether the index differs from HEAD: the tree of the last snapshot is not the
    /// index's (a snapshot that ended between its index update and its HEAD), so the tree
    /// must be written again even when no file changed.
    pub index_differs: bool,
}

/// Whether a changed path is in the store's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracked {
    Yes,
    No,
}

/// Reads `git status --porcelain=v2 -z` output: ordinary entries `1 XY …8 fields… path`
/// (X the index against HEAD, Y the disk against the index), untracked `? path`; renames
/// (`2`, with an extra field) and unmerged entries (`u`) cannot occur without renames or
/// merges, and are read as changes of their path so nothing is missed.
pub fn parse_status(bytes: &[u8]) -> StatusChanges {
    let mut status = StatusChanges::default();
    let mut records = bytes.split(|&b| b == 0).filter(|r| !r.is_empty());
    while let Some(record) = records.next() {
        let (kind, rest) = (record[0], record.get(2..).unwrap_or_default());
        // The number of space-separated fields before the path, after the kind.
        let fields = match kind {
            b'?' => {
                status.paths.push((rest.to_vec(), Tracked::No));
                continue;
            }
            b'1' => 7,
            b'2' => 8,
            b'u' => 9,
            _ => continue,
        };
        let mut parts = rest.splitn(fields + 1, |&b| b == b' ');
        let xy = parts.next().unwrap_or_default();
        let Some(path) = parts.nth(fields - 1) else {
            continue;
        };
        if kind == b'2' {
            // The rename's origin, its own record.
            records.next();
        }
        let (x, y) = (xy.first().copied(), xy.get(1).copied());
        if x != Some(b'.') || kind != b'1' {
            status.index_differs = true;
        }
        if y != Some(b'.') || kind != b'1' {
            status.paths.push((path.to_vec(), Tracked::Yes));
        }
    }
    status
}

/// The state the agent last left each file in, from the diffs of the turns since a
/// checkpoint (oldest first, each from the turn's checkpoint to its end).
pub fn agent_last_states(turn_diffs: &[Vec<RawChange>]) -> BTreeMap<String, Option<Blob>> {
    let mut last = BTreeMap::new();
    for diff in turn_diffs {
        for change in diff {
            last.insert(change.path.clone(), change.new.clone());
        }
    }
    last
}

/// What a rewind does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Back to its content (and mode) at the checkpoint.
    Restore,
    /// It existed at the checkpoint and is gone: written again.
    Create,
    /// It did not exist at the checkpoint.
    Delete,
}

/// One file of a rewind's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    pub root: String,
    /// As shown; `path_bytes` is the name on the disk (they differ where it is not UTF-8).
    pub path: String,
    pub path_bytes: Vec<u8>,
    pub action: Action,
    /// The state to bring back (None for a delete).
    pub target: Option<Blob>,
    /// The file now (None: absent).
    pub now: Option<Blob>,
    /// The user changed it after the agent's last change.
    pub conflict: bool,
}

/// The plan of one root: `target_vs_now` is the diff from the checkpoint's tree to the files
/// now; `agent_last` what the turns since left each file as; `unstored` the paths the
/// checkpoint or a turn's end could not store (never touched). Only files the agent changed
/// are planned: a file only the user changed is not the agent's to take back.
pub fn plan_root(
    root: &str,
    target_vs_now: &[RawChange],
    agent_last: &BTreeMap<String, Option<Blob>>,
    unstored: &[String],
) -> Vec<PlannedFile> {
    target_vs_now
        .iter()
        .filter(|change| agent_last.contains_key(&change.path))
        .filter(|change| !unstored.contains(&change.path))
        .map(|change| {
            let action = match (&change.old, &change.new) {
                (None, _) => Action::Delete,
                (Some(_), None) => Action::Create,
                (Some(_), Some(_)) => Action::Restore,
            };
            PlannedFile {
                root: root.to_string(),
                path: change.path.clone(),
                path_bytes: change.path_bytes.clone(),
                action,
                target: change.old.clone(),
                now: change.new.clone(),
                conflict: agent_last.get(&change.path) != Some(&change.new),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Entry, Item};

    fn blob(oid: &str) -> Option<Blob> {
        Some(Blob {
            mode: 0o100644,
            oid: oid.into(),
        })
    }

    fn change(path: &str, old: Option<Blob>, new: Option<Blob>) -> RawChange {
        RawChange {
            path: path.into(),
            path_bytes: path.as_bytes().to_vec(),
            old,
            new,
        }
    }

    #[test]
    fn status_lists_what_the_disk_changed_and_whether_the_index_left_head() {
        let raw = b"1 .M N... 100644 100644 100644 aaaa aaaa src/a b.rs\0\
1 .D N... 100644 100644 000000 bbbb bbbb gone.rs\0\
1 .T N... 100644 100644 120000 cccc cccc link\0\
? new file.rs\0? nested/\0";
        let status = parse_status(raw);
        let paths: Vec<(&[u8], Tracked)> = status
            .paths
            .iter()
            .map(|(p, t)| (p.as_slice(), *t))
            .collect();
        assert_eq!(
            paths,
            vec![
                (&b"src/a b.rs"[..], Tracked::Yes),
                (&b"gone.rs"[..], Tracked::Yes),
                (&b"link"[..], Tracked::Yes),
                (&b"new file.rs"[..], Tracked::No),
                (&b"nested/"[..], Tracked::No),
            ]
        );
        assert!(!status.index_differs);
        // Index against HEAD only (an unborn HEAD, a snapshot cut short): no file to take,
        // but the tree is written again.
        let staged = parse_status(b"1 A. N... 000000 100644 100644 0000 aaaa a.rs\0");
        assert!(staged.paths.is_empty());
        assert!(staged.index_differs);
        assert_eq!(parse_status(b""), StatusChanges::default());
        // A rename's two records: its origin (not in the index) is skipped.
        let renamed =
            parse_status(b"2 R. N... 100644 100644 100644 aaaa aaaa R100 new.rs\0old.rs\0? x\0");
        assert_eq!(renamed.paths.len(), 2);
        assert_eq!(renamed.paths[0].0, b"new.rs".to_vec());
        assert_eq!(renamed.paths[1].0, b"x".to_vec());
    }

    #[test]
    fn raw_diffs_are_read_with_modes_and_absent_sides() {
        let raw = b":100644 100755 aaaa bbbb M\0src/a.rs\0:000000 100644 0000 cccc A\0new file\0:100644 000000 dddd 0000 D\0gone\0";
        let changes = parse_raw_diff(raw);
        assert_eq!(changes.len(), 3);
        assert_eq!(changes[0].old.as_ref().unwrap().mode, 0o100644);
        assert_eq!(changes[0].new.as_ref().unwrap().mode, 0o100755);
        assert_eq!(changes[1].path, "new file");
        assert_eq!(changes[1].kind(), ChangeKind::Created);
        assert_eq!(changes[2].kind(), ChangeKind::Deleted);
        assert!(parse_raw_diff(b":garbage\0x\0").is_empty());
    }

    #[test]
    fn a_plan_restores_creates_deletes_and_flags_the_users_later_edits() {
        // Turn 1 changed a (→ a1), created n, deleted d; turn 2 changed a again (→ a2).
        let turns = vec![
            vec![
                change("a", blob("a0"), blob("a1")),
                change("n", None, blob("n1")),
                change("d", blob("d0"), None),
            ],
            vec![change("a", blob("a1"), blob("a2"))],
        ];
        let last = agent_last_states(&turns);
        // Now: a as the agent left it, n edited by the user since, d gone, u changed by the
        // user only.
        let now = vec![
            change("a", blob("a0"), blob("a2")),
            change("n", None, blob("n-user")),
            change("d", blob("d0"), None),
            change("u", blob("u0"), blob("u-user")),
        ];
        let plan = plan_root("/r", &now, &last, &[]);
        let summary: Vec<_> = plan
            .iter()
            .map(|p| (p.path.as_str(), p.action, p.conflict))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a", Action::Restore, false),
                ("n", Action::Delete, true),
                ("d", Action::Create, false),
            ]
        );
        // An unstored file is never touched.
        assert!(plan_root("/r", &now, &last, &["a".into()])
            .iter()
            .all(|p| p.path != "a"));
    }

    fn checkpoint(id: &str, turn: &str) -> Event {
        Event::Checkpoint {
            turn_id: turn.into(),
            checkpoint_id: id.into(),
            at: 1,
            trees: vec![RootTree {
                root: "/r".into(),
                tree: format!("tree-{id}"),
            }],
            unstored: vec![],
            label: None,
        }
    }

    fn user(turn: &str, text: &str) -> Event {
        Event::Item {
            turn_id: turn.into(),
            entry: Entry {
                item: Item::User {
                    text: text.into(),
                    context: None,
                },
                tokens: 1,
            },
        }
    }

    fn started(turn: &str) -> Event {
        Event::TurnStarted {
            turn_id: turn.into(),
            at: 1,
        }
    }

    #[test]
    fn a_conversation_rewind_takes_out_its_turns_but_keeps_approvals() {
        let permission = Event::Permission {
            turn_id: "t2".into(),
            tool_call_id: "c".into(),
            tool: "shell".into(),
            outcome: "allowAlways".into(),
            prefix: Some("cargo test".into()),
        };
        let rewind = |restore: &str| Event::Rewind {
            checkpoint_id: "c2".into(),
            restore: restore.into(),
            at: 2,
        };
        let base = vec![
            checkpoint("c1", "t1"),
            started("t1"),
            user("t1", "first\nmore"),
            checkpoint("c2", "t2"),
            started("t2"),
            user("t2", "second"),
            permission.clone(),
        ];
        let mut events = base.clone();
        events.push(rewind("both"));
        let kept = resolve_rewinds(&events);
        assert_eq!(kept.len(), 5);
        assert!(kept.contains(&&permission));
        let listed = list(&events);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].message, "first");
        assert_eq!(listed[0].full_message, "first\nmore");
        assert_eq!(listed[0].turn, 1);
        // A code-only rewind leaves the conversation.
        let mut events = base.clone();
        events.push(rewind("code"));
        assert_eq!(list(&events).len(), 2);
        assert_eq!(list(&events)[1].turn, 2);
        // A fork's prefix ends before the checkpoint.
        assert_eq!(prefix_before(&base, Some("c2")).unwrap().len(), 3);
        assert!(prefix_before(&base, Some("nope")).is_none());
    }
}
