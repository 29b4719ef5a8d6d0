//! AGENTS.md files on disk, for the core's `agents_md::collect`.

use crate::locks::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

    pub fn invalidate(&self, path: &Path) {
        let mut cache = self.cache.locked();
        if let Some(cache) = cache.as_mut() {
            cache.remove(path);
        }
    }

    fn read_disk(path: &Path) -> FileContent {
        match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => FileContent::Text {
                    text,
                    from_buffer: false,
                },
                Err(_) => FileContent::Unreadable("not valid UTF-8".into()),
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => FileContent::Missing,
            // A directory named AGENTS.md, or a dangling symlink: nothing to read.
            Err(_) if !path.is_file() => FileContent::Missing,
            Err(err) => FileContent::Unreadable(err.to_string()),
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
