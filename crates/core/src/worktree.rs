//! What applying a session's worktree to the main tree does to one file, decided from three
//! texts: the file at the worktree's base commit, in the worktree now, and in the main tree
//! now. A file the user changed in the main tree since is never overwritten.

/// How a file differs in the worktree from its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Added,
    Modified,
    Deleted,
}

/// What to do with one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Write this text over the main tree's file (or create it).
    Write(String),
    /// The main tree already holds the worktree's text.
    AlreadyThere,
    /// Not applied, and why.
    Conflict(String),
}

/// The step for a file of status `status` whose base text is `base`, worktree text `new`
/// and main-tree text `current` (None: absent, or not text).
pub fn step(status: Status, base: Option<&str>, new: Option<&str>, current: Option<&str>) -> Step {
    match status {
        Status::Deleted => match current {
            None => Step::AlreadyThere,
            Some(_) => Step::Conflict(
                "deleted in the worktree: agentls applies no deletion, delete it yourself".into(),
            ),
        },
        Status::Added | Status::Modified => {
            let Some(new) = new else {
                return Step::Conflict("not a text file: merge the branch with git".into());
            };
            match current {
                Some(current) if current == new => Step::AlreadyThere,
                None if status == Status::Added => Step::Write(new.to_string()),
                current if current == base => Step::Write(new.to_string()),
                None => Step::Conflict("deleted in the workspace since the session started".into()),
                Some(_) if status == Status::Added => Step::Conflict(
                    "the workspace has a file of that name with other content".into(),
                ),
                Some(_) => {
                    Step::Conflict("changed in the workspace since the session started".into())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_only_in_the_worktree_is_written_and_a_users_change_is_kept() {
        let step = |status, base, new, current| step(status, base, new, current);
        assert_eq!(
            step(Status::Modified, Some("a"), Some("b"), Some("a")),
            Step::Write("b".into())
        );
        assert_eq!(
            step(Status::Modified, Some("a"), Some("b"), Some("b")),
            Step::AlreadyThere
        );
        assert!(matches!(
            step(Status::Modified, Some("a"), Some("b"), Some("user's")),
            Step::Conflict(why) if why.contains("changed in the workspace")
        ));
        assert!(matches!(
            step(Status::Modified, Some("a"), Some("b"), None),
            Step::Conflict(why) if why.contains("deleted in the workspace")
        ));
        assert_eq!(
            step(Status::Added, None, Some("n"), None),
            Step::Write("n".into())
        );
        assert!(matches!(
            step(Status::Added, None, Some("n"), Some("other")),
            Step::Conflict(_)
        ));
        assert!(matches!(
            step(Status::Modified, Some("a"), None, Some("a")),
            Step::Conflict(why) if why.contains("not a text file")
        ));
        assert!(matches!(
            step(Status::Deleted, Some("a"), None, Some("a")),
            Step::Conflict(why) if why.contains("delete it yourself")
        ));
        assert_eq!(
            step(Status::Deleted, Some("a"), None, None),
            Step::AlreadyThere
        );
    }
}
