//! [`FileIndex`]: the workspace roots and an index of their files, built in the background
//! with the `ignore` crate (respects .gitignore/.ignore, skips hidden files). Reads no file
//! content: binary files, huge files and unreadable files cost one directory entry each.

use crate::locks::ReadWriteLocked;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexStatus {
    NotStarted,
    Indexing,
    Ready,
}

#[derive(Debug, Clone)]
pub struct IndexState {
    pub roots: Vec<PathBuf>,
    pub files: Arc<Vec<PathBuf>>,
    pub status: IndexStatus,
    /// Bumped by every re-index, so a slow walk of old roots never overwrites a newer one.
    pub generation: u64,
    pub elapsed_ms: u128,
}

#[derive(Clone)]
pub struct FileIndex {
    state: Arc<RwLock<IndexState>>,
}

impl Default for FileIndex {
    fn default() -> Self {
        FileIndex {
            state: Arc::new(RwLock::new(IndexState {
                roots: Vec::new(),
                files: Arc::new(Vec::new()),
                status: IndexStatus::NotStarted,
                generation: 0,
                elapsed_ms: 0,
            })),
        }
    }
}

impl FileIndex {
    pub fn state(&self) -> IndexState {
        self.state.read_locked().clone()
    }

    pub fn roots(&self) -> Vec<PathBuf> {
        self.state().roots
    }

    /// The root holding `path`: the longest matching root, for nested workspace folders.
    pub fn root_of(&self, path: &Path) -> Option<PathBuf> {
        let state = self.state.read_locked();
        state
            .roots
            .iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
            .cloned()
    }

    /// Sets new roots and returns the generation a walk for them must report under.
    pub fn begin(&self, roots: Vec<PathBuf>) -> u64 {
        let mut state = self.state.write_locked();
        state.generation += 1;
        state.roots = roots;
        state.status = IndexStatus::Indexing;
        state.generation
    }

    /// Stores a finished walk unless newer roots have been set meanwhile.
    pub fn finish(&self, generation: u64, files: Vec<PathBuf>, elapsed_ms: u128) -> bool {
        let mut state = self.state.write_locked();
        if state.generation != generation {
            return false;
        }
        state.files = Arc::new(files);
        state.status = IndexStatus::Ready;
        state.elapsed_ms = elapsed_ms;
        true
    }
}

/// Walks the roots (blocking). `progress` is called with the running count now and then.
pub fn walk(roots: &[PathBuf], mut progress: impl FnMut(usize)) -> (Vec<PathBuf>, u128) {
    let started = Instant::now();
    let mut files = Vec::new();
    let mut last_report = Instant::now();
    for root in roots {
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            // .gitignore applies even outside a git repository: users expect it to.
            .require_git(false)
            .build();
        for entry in walker {
            match entry {
                Ok(entry) if entry.file_type().is_some_and(|t| t.is_file()) => {
                    files.push(entry.into_path());
                    if last_report.elapsed().as_millis() >= 100 {
                        progress(files.len());
                        last_report = Instant::now();
                    }
                }
                Ok(_) => {}
                Err(err) => tracing::debug!("index: {err}"),
            }
        }
    }
    files.sort();
    files.dedup();
    (files, started.elapsed().as_millis())
}

/// At most `limit` files under `root` as relative `/`-separated paths, walked like `walk`
/// (ignore files honoured, hidden files skipped, links not followed): for naming the
/// closest paths to one that does not exist.
pub fn workspace_files(root: &Path, limit: usize) -> Vec<String> {
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .take(limit)
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(root).ok()?;
            Some(relative.to_string_lossy().replace('\\', "/"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_respects_gitignore_and_skips_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::create_dir_all(root.join(".hidden")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(root.join("image.bin"), [0u8, 159, 146, 150, 0, 0]).unwrap();
        std::fs::write(root.join("target/debug/out"), "x").unwrap();
        std::fs::write(root.join("debug.log"), "x").unwrap();
        std::fs::write(root.join(".hidden/secret"), "x").unwrap();
        let (files, _) = walk(&[root.to_path_buf()], |_| {});
        let names: Vec<_> = files
            .iter()
            .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["image.bin", "src/main.rs"]);
    }

    #[test]
    fn a_stale_walk_does_not_overwrite_newer_roots() {
        let index = FileIndex::default();
        let old = index.begin(vec!["/a".into()]);
        let new = index.begin(vec!["/b".into()]);
        assert!(!index.finish(old, vec!["/a/x".into()], 1));
        assert_eq!(index.state().status, IndexStatus::Indexing);
        assert!(index.finish(new, vec!["/b/y".into()], 1));
        assert_eq!(index.state().files.as_slice(), [PathBuf::from("/b/y")]);
        assert_eq!(index.root_of(Path::new("/b/y")), Some("/b".into()));
        assert_eq!(index.root_of(Path::new("/c")), None);
    }
}
