//! AGENTS.md discovery (seed 000 "Project Documentation"): for a directory D, the chain of
//! instruction files from the git root down to D, at most one per directory
//! (`AGENTS.override.md` before `AGENTS.md`), concatenated root to leaf under a byte cap.
//!
//! [`collect`] is pure over the [`InstructionFiles`] trait; [`Overlay`] puts open editor
//! buffers on top of another source, and `store::agents_md::DiskFiles` reads the disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::paths;
use crate::position;

pub const DEFAULT_MAX_BYTES: usize = 32 * 1024;
/// In precedence order: the first one present in a directory is the one used.
pub const FILE_NAMES: [&str; 2] = ["AGENTS.override.md", "AGENTS.md"];

pub fn is_instruction_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| FILE_NAMES.contains(&n))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    Missing,
    Text {
        text: String,
        from_buffer: bool,
    },
    /// Present but unusable (IO error, not UTF-8): skipped with a warning.
    Unreadable(String),
}

pub trait InstructionFiles {
    /// Whether `dir` holds a `.git` file or directory.
    fn has_git_marker(&self, dir: &Path) -> bool;
    fn read(&self, path: &Path) -> FileContent;
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentsFile {
    pub path: PathBuf,
    /// Relative to the workspace root when under it, else absolute.
    pub display_path: String,
    pub from_buffer: bool,
    pub bytes: usize,
    /// How much of it made it under the cap.
    pub included_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentsChain {
    pub dir: PathBuf,
    pub git_root: Option<PathBuf>,
    pub files: Vec<AgentsFile>,
    /// The instructions as the model will see them; empty when there are none.
    pub text: String,
    pub omitted_bytes: usize,
    pub warnings: Vec<String>,
}

/// The directories searched for `dir`, root to leaf, and the git root if there is one.
pub fn search_dirs(dir: &Path, files: &dyn InstructionFiles) -> (Option<PathBuf>, Vec<PathBuf>) {
    let mut chain = Vec::new();
    let mut current = Some(dir);
    while let Some(d) = current {
        chain.push(d.to_path_buf());
        if files.has_git_marker(d) {
            chain.reverse();
            return (Some(d.to_path_buf()), chain);
        }
        current = d.parent();
    }
    (None, vec![dir.to_path_buf()])
}

pub fn collect(
    dir: &Path,
    workspace_root: Option<&Path>,
    files: &dyn InstructionFiles,
    max_bytes: usize,
) -> AgentsChain {
    let (git_root, dirs) = search_dirs(dir, files);
    let mut chain = AgentsChain {
        dir: dir.to_path_buf(),
        git_root,
        files: Vec::new(),
        text: String::new(),
        omitted_bytes: 0,
        warnings: Vec::new(),
    };
    let mut budget = max_bytes;
    for d in &dirs {
        let Some((path, text, from_buffer)) = first_present(d, files, &mut chain.warnings) else {
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        let display_path = paths::display(&path, workspace_root.as_slice());
        let included = position::floor_char_boundary(&text, budget);
        budget -= included;
        chain.omitted_bytes += text.len() - included;
        if included > 0 {
            if !chain.text.is_empty() {
                chain.text.push_str("\n\n");
            }
            chain.text.push_str("## ");
            chain.text.push_str(&display_path);
            chain.text.push('\n');
            chain.text.push_str(text[..included].trim_end());
        }
        chain.files.push(AgentsFile {
            path,
            display_path,
            from_buffer,
            bytes: text.len(),
            included_bytes: included,
        });
    }
    if chain.omitted_bytes > 0 {
        chain.text.push_str(&format!(
            "\n[truncated: {} bytes of AGENTS.md omitted]",
            chain.omitted_bytes
        ));
    }
    for warning in &chain.warnings {
        tracing::warn!("{warning}");
    }
    chain
}

fn first_present(
    dir: &Path,
    files: &dyn InstructionFiles,
    warnings: &mut Vec<String>,
) -> Option<(PathBuf, String, bool)> {
    for name in FILE_NAMES {
        let path = dir.join(name);
        match files.read(&path) {
            FileContent::Missing => {}
            FileContent::Text { text, from_buffer } => return Some((path, text, from_buffer)),
            FileContent::Unreadable(why) => {
                warnings.push(format!("skipping {}: {why}", path.display()));
            }
        }
    }
    None
}

/// Open editor buffers over another source: the unsaved text wins.
pub struct Overlay<'a> {
    pub buffers: HashMap<PathBuf, String>,
    pub below: &'a dyn InstructionFiles,
}

impl InstructionFiles for Overlay<'_> {
    fn has_git_marker(&self, dir: &Path) -> bool {
        self.below.has_git_marker(dir)
    }

    fn read(&self, path: &Path) -> FileContent {
        match self.buffers.get(path) {
            Some(text) => FileContent::Text {
                text: text.clone(),
                from_buffer: true,
            },
            None => self.below.read(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory tree: paths to contents, and the directories holding `.git`.
    #[derive(Default)]
    struct Fake {
        files: HashMap<PathBuf, FileContent>,
        git: Vec<PathBuf>,
    }

    impl Fake {
        fn file(mut self, path: &str, text: &str) -> Self {
            self.files.insert(
                path.into(),
                FileContent::Text {
                    text: text.into(),
                    from_buffer: false,
                },
            );
            self
        }
        fn git(mut self, dir: &str) -> Self {
            self.git.push(dir.into());
            self
        }
    }

    impl InstructionFiles for Fake {
        fn has_git_marker(&self, dir: &Path) -> bool {
            self.git.iter().any(|g| g == dir)
        }
        fn read(&self, path: &Path) -> FileContent {
            self.files
                .get(path)
                .cloned()
                .unwrap_or(FileContent::Missing)
        }
    }

    fn names(chain: &AgentsChain) -> Vec<&str> {
        chain
            .files
            .iter()
            .map(|f| f.display_path.as_str())
            .collect()
    }

    #[test]
    fn nested_directories_root_to_leaf_with_override_precedence() {
        let fs = Fake::default()
            .git("/repo")
            .file("/AGENTS.md", "above the repo: never read")
            .file("/repo/AGENTS.md", "root rules")
            .file("/repo/a/AGENTS.md", "a rules")
            .file("/repo/a/AGENTS.override.md", "a override")
            .file("/repo/a/b/AGENTS.md", "b rules");
        let chain = collect(Path::new("/repo/a/b"), Some(Path::new("/repo")), &fs, 1000);
        assert_eq!(chain.git_root.as_deref(), Some(Path::new("/repo")));
        assert_eq!(
            names(&chain),
            ["AGENTS.md", "a/AGENTS.override.md", "a/b/AGENTS.md"]
        );
        assert_eq!(
            chain.text,
            "## AGENTS.md\nroot rules\n\n## a/AGENTS.override.md\na override\n\n## a/b/AGENTS.md\nb rules"
        );
        assert_eq!(chain.omitted_bytes, 0);
    }

    #[test]
    fn without_a_git_root_only_the_directory_itself() {
        let fs = Fake::default()
            .file("/ws/AGENTS.md", "parent")
            .file("/ws/sub/AGENTS.md", "sub");
        let chain = collect(Path::new("/ws/sub"), Some(Path::new("/ws")), &fs, 1000);
        assert_eq!(chain.git_root, None);
        assert_eq!(names(&chain), ["sub/AGENTS.md"]);
    }

    #[test]
    fn the_cap_truncates_on_a_char_boundary_and_says_so() {
        let fs = Fake::default()
            .git("/r")
            .file("/r/AGENTS.md", "0123456789")
            .file("/r/x/AGENTS.md", "ééééé") // 10 bytes
            .file("/r/x/y/AGENTS.md", "tail");
        let chain = collect(Path::new("/r/x/y"), Some(Path::new("/r")), &fs, 15);
        // 10 bytes of the root, then 5 bytes left: two é (4 bytes), 1 byte of the leaf.
        assert_eq!(chain.files[1].included_bytes, 4);
        assert_eq!(chain.files[2].included_bytes, 1);
        let chain = collect(Path::new("/r/x/y"), Some(Path::new("/r")), &fs, 14);
        assert_eq!(chain.files[1].included_bytes, 4);
        assert_eq!(chain.files[2].included_bytes, 0);
        assert_eq!(chain.omitted_bytes, 6 + 4);
        assert!(
            chain.text.contains("\n## x/AGENTS.md\néé\n"),
            "{}",
            chain.text
        );
        assert!(!chain.text.contains("tail"));
        assert!(chain
            .text
            .ends_with("[truncated: 10 bytes of AGENTS.md omitted]"));
    }

    #[test]
    fn unreadable_files_are_skipped_with_a_warning_and_the_next_candidate_used() {
        let mut fs = Fake::default().git("/r").file("/r/AGENTS.md", "plain");
        fs.files.insert(
            "/r/AGENTS.override.md".into(),
            FileContent::Unreadable("not valid UTF-8".into()),
        );
        let chain = collect(Path::new("/r"), Some(Path::new("/r")), &fs, 100);
        assert_eq!(names(&chain), ["AGENTS.md"]);
        assert_eq!(chain.warnings.len(), 1);
        assert!(chain.warnings[0].contains("AGENTS.override.md"));
    }

    #[test]
    fn blank_files_are_skipped_and_paths_outside_the_workspace_stay_absolute() {
        let fs = Fake::default()
            .git("/r")
            .file("/r/AGENTS.md", "repo rules")
            .file("/r/ws/AGENTS.md", "  \n");
        let chain = collect(Path::new("/r/ws"), Some(Path::new("/r/ws")), &fs, 100);
        assert_eq!(names(&chain), ["/r/AGENTS.md"]);
    }

    #[test]
    fn buffers_win_over_disk() {
        let fs = Fake::default().git("/r").file("/r/AGENTS.md", "saved");
        let overlay = Overlay {
            buffers: HashMap::from([(PathBuf::from("/r/AGENTS.md"), "unsaved".to_string())]),
            below: &fs,
        };
        let chain = collect(Path::new("/r"), Some(Path::new("/r")), &overlay, 100);
        assert!(chain.text.ends_with("unsaved"));
        assert!(chain.files[0].from_buffer);
    }
}
