use super::*;

const BEFORE: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n";
/// Two hunks far apart: `b` changed, `m` removed and `M1`, `M2` added after `l`.
const AFTER: &str = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nM1\nM2\nn\n";

#[test]
fn hunks_have_ranges_diffs_and_ids_that_name_their_content() {
    let found = hunks(BEFORE, AFTER);
    assert_eq!(found.len(), 2);
    let ranges: Vec<(usize, usize, usize, usize)> = found
        .iter()
        .map(|h| (h.old_start, h.old_lines, h.new_start, h.new_lines))
        .collect();
    assert_eq!(ranges, [(2, 1, 2, 1), (13, 1, 13, 2)]);
    assert_eq!(found[0].diff, "@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n");
    assert_eq!(hunks(BEFORE, AFTER), found, "the same change, the same ids");
    let other = hunks(BEFORE, &AFTER.replace("M2", "M3"));
    assert_eq!(other[0].id, found[0].id);
    assert_ne!(other[1].id, found[1].id, "another content, another id");
    assert!(hunks(BEFORE, BEFORE).is_empty());
    let created = hunks("", "x\ny\n");
    assert_eq!(
        (
            created[0].old_start,
            created[0].old_lines,
            created[0].new_start,
            created[0].new_lines
        ),
        (0, 0, 1, 2)
    );
}

#[test]
fn undoing_some_hunks_keeps_the_others_and_the_users_lines_elsewhere() {
    let found = hunks(BEFORE, AFTER);
    let first = vec![found[0].id.clone()];
    let second = vec![found[1].id.clone()];
    assert_eq!(
        revert(BEFORE, AFTER, AFTER, &first).unwrap(),
        AFTER.replace("B\n", "b\n")
    );
    assert_eq!(
        revert(BEFORE, AFTER, AFTER, &second).unwrap(),
        BEFORE.replace("b\n", "B\n")
    );
    let both = [first.clone(), second.clone()].concat();
    assert_eq!(revert(BEFORE, AFTER, AFTER, &both).unwrap(), BEFORE);
    // The user typed elsewhere since (a line at the top, `g` changed): kept.
    let now = format!("top\n{}", AFTER.replace("g\n", "G\n"));
    assert_eq!(
        revert(BEFORE, AFTER, &now, &both).unwrap(),
        format!("top\n{}", BEFORE.replace("g\n", "G\n"))
    );
}

#[test]
fn a_hunk_the_user_changed_since_or_that_is_not_listed_is_refused() {
    let found = hunks(BEFORE, AFTER);
    let now = AFTER.replace("M1\n", "mine\n");
    assert_eq!(
        revert(BEFORE, AFTER, &now, &[found[1].id.clone()]),
        Err(RevertRefused::ChangedSince(found[1].id.clone()))
    );
    // The other hunk's lines are as the agent left them: it can go.
    assert_eq!(
        revert(BEFORE, AFTER, &now, &[found[0].id.clone()]).unwrap(),
        now.replace("B\n", "b\n")
    );
    assert_eq!(
        revert(BEFORE, AFTER, AFTER, &["h1-0".to_string()]),
        Err(RevertRefused::UnknownHunk("h1-0".into()))
    );
}

#[test]
fn a_removal_goes_back_before_the_line_that_followed_it() {
    let after = BEFORE.replace("c\n", "");
    let found = hunks(BEFORE, &after);
    assert_eq!((found[0].new_start, found[0].new_lines), (2, 0));
    let now = format!("{after}tail\n");
    assert_eq!(
        revert(BEFORE, &after, &now, &[found[0].id.clone()]).unwrap(),
        format!("{BEFORE}tail\n")
    );
}
