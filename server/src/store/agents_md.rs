//! AGENTS.md files on disk, for the core's `agents_md::collect`.

use crate::locks::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
use agentls_core::agents_md::{FileContent, InstructionFiles};

/// Files on disk. With `cache` on (the client watches AGENTS.md files for us and tells us
/// of changes), each path is read once until invalidated; without it every lookup reads,
/// so a change is never missed by a client that cannot watch files.
#[derive(Default)]
pub struct DiskFiles {
    cache: Mutex<Option<HashMap<PathBuf, FileContent>>>,
}

impl DiskFiles {
    pub fn enable_cache(&self) {
        let mut cache = self.cache.locked();
        if cache.is_none() {
            *cache = Some(HashMap::new());
        }
    }

    /// Forgets every file read (many files changed at once).
    pub fn invalidate_all(&self) {
        if let Some(cache) = self.cache.locked().as_mut() {
            cache.clear();
        }
    }

    pub fn invalidate(&self, path: &Path) {
        let mut cache = self.cache.locked();
        if let Some(cache) = cache.as_mut() {
            cache.remove(path);
        }
    }

    /// An AGENTS.md is read only when it is a regular file inside its allowed root: the git
    /// root above it (where its chain starts, `agents_md::search_dirs`), else its own
    /// directory (a chain without a git root is that directory alone). A link that stays
    /// inside (`AGENTS.md -> docs/AGENTS.md`) works; one out of it, or to /proc, /dev or
    /// /sys, a FIFO or a device, is skipped with a warning in the chain.
    fn read_disk(path: &Path) -> FileContent {
        let Some(dir) = path.parent() else {
            return FileContent::Missing;
        };
        let root = dir
            .ancestors()
            .find(|d| d.join(".git").exists())
            .unwrap_or(dir);
        match read_config_file(path, Some(root), MAX_CONFIG_FILE_BYTES) {
            ConfigRead::Text(text) => FileContent::Text {
                text,
                from_buffer: false,
            },
            ConfigRead::Missing => FileContent::Missing,
            // A directory named AGENTS.md: nothing to read.
            ConfigRead::Refused(_) if path.is_dir() => FileContent::Missing,
            ConfigRead::Refused(why) => FileContent::Unreadable(why),
        }
    }
}

impl InstructionFiles for DiskFiles {
    fn has_git_marker(&self, dir: &Path) -> bool {
        dir.join(".git").exists()
    }

    fn read(&self, path: &Path) -> FileContent {
        let mut cache = self.cache.locked();
        match cache.as_mut() {
            Some(cache) => cache
                .entry(path.to_path_buf())
                .or_insert_with(|| Self::read_disk(path))
                .clone(),
            None => Self::read_disk(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_cache_holds_until_invalidated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("AGENTS.md");
        std::fs::write(&path, "one").unwrap();
        let disk = DiskFiles::default();
        disk.enable_cache();
        assert!(matches!(disk.read(&path), FileContent::Text { text, .. } if text == "one"));
        std::fs::write(&path, "two").unwrap();
        assert!(matches!(disk.read(&path), FileContent::Text { text, .. } if text == "one"));
        disk.invalidate(&path);
        assert!(matches!(disk.read(&path), FileContent::Text { text, .. } if text == "two"));
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
        disk.invalidate(&path);
        assert!(matches!(disk.read(&path), FileContent::Unreadable(_)));
        assert_eq!(disk.read(&dir.path().join("nope.md")), FileContent::Missing);
    }
}
