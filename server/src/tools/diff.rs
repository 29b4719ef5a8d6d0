//! Unified diffs of planned changes, shown in approvals.

pub(super) fn unified_diff(old: &str, new: &str, old_header: &str, new_header: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_header, new_header)
        .to_string()
}
