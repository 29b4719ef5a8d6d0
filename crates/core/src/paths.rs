//! How a path is shown to the model and the user. One rule for every place that names a file
//! or folder in a prompt, a tool result or a report: the AGENTS.md headers, the skills index,
//! the editor context's buffers and the tools' own messages.

use std::path::Path;

/// `path` as shown: relative to the root that holds it, `.` for a root itself, and unchanged
/// (as given, usually absolute) when no root holds it.
///
/// When roots nest, the innermost root that holds the path wins (the shortest relative
/// path). Roots are matched by whole components (`/w` holds `/w/a`, not `/wx/a`) and
/// literally: nothing is canonicalized, so callers pass paths and roots in the same form.
/// A caller that wants absolute paths (the skills index with several roots, where a
/// relative path would be ambiguous) passes no roots.
pub fn display(path: &Path, roots: &[impl AsRef<Path>]) -> String {
    let shown = roots
        .iter()
        .filter_map(|root| path.strip_prefix(root).ok())
        .min_by_key(|relative| relative.as_os_str().len())
        .unwrap_or(path);
    if shown.as_os_str().is_empty() {
        ".".to_string()
    } else {
        shown.to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn shown(path: &str, roots: &[&str]) -> String {
        let roots: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
        display(Path::new(path), &roots)
    }

    #[test]
    fn display_follows_one_rule() {
        // (path, roots, shown)
        let cases: &[(&str, &[&str], &str)] = &[
            // Inside a root: relative to it.
            ("/w/src/lib.rs", &["/w"], "src/lib.rs"),
            ("/w/src/", &["/w"], "src"),
            // A root itself.
            ("/w", &["/w"], "."),
            ("/w/", &["/w"], "."),
            // Outside every root, or no roots: as given.
            ("/elsewhere/a.rs", &["/w"], "/elsewhere/a.rs"),
            ("/w/a.rs", &[], "/w/a.rs"),
            ("relative/a.rs", &[], "relative/a.rs"),
            // Whole components only.
            ("/wx/a.rs", &["/w"], "/wx/a.rs"),
            // Several roots: the one that holds the path, the innermost when they nest,
            // whatever their order.
            ("/x/b.rs", &["/w", "/x"], "b.rs"),
            ("/w/sub/c.rs", &["/w", "/w/sub"], "c.rs"),
            ("/w/sub/c.rs", &["/w/sub", "/w"], "c.rs"),
            ("/w/sub", &["/w", "/w/sub"], "."),
            ("/w/other/c.rs", &["/w", "/w/sub"], "other/c.rs"),
            // Nothing is resolved: `..` stays, a relative path is not under an absolute root.
            ("/w/../etc/passwd", &["/w"], "../etc/passwd"),
            ("w/a.rs", &["/w"], "w/a.rs"),
        ];
        for (path, roots, expected) in cases {
            assert_eq!(shown(path, roots), *expected, "{path} in {roots:?}");
        }
    }

    #[test]
    fn roots_may_be_any_path_like() {
        let root = Some(Path::new("/repo"));
        assert_eq!(
            display(Path::new("/repo/AGENTS.md"), root.as_slice()),
            "AGENTS.md"
        );
        let none: Option<&Path> = None;
        assert_eq!(
            display(Path::new("/repo/AGENTS.md"), none.as_slice()),
            "/repo/AGENTS.md"
        );
        assert_eq!(display(Path::new("/r/a"), &["/r".to_string()]), "a");
    }
}
