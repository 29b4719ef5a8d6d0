//! What the tools' unit tests share: a temporary workspace and files in it.

use std::path::{Path, PathBuf};

use crate::tools::boundary::PathBoundary;

pub fn workspace() -> (tempfile::TempDir, PathBoundary) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, PathBoundary { roots: vec![root] })
}

pub fn root(ws: &PathBoundary) -> &Path {
    &ws.roots[0]
}

pub fn write(ws: &PathBoundary, relative: &str, text: &str) -> PathBuf {
    let path = root(ws).join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}
