//! The path boundary: the folders the model's tools may touch, and the one place where a
//! model-given path becomes a file path.

use std::path::{Component, Path, PathBuf};

use crate::store::files::FileRefused;
use agentls_core::tool_info::{error, ToolError};

/// The limit the kernel applies to a path's symbolic links (ELOOP), for the links we follow.
const MAX_SYMLINK_HOPS: usize = 40;

/// The folders the tools may touch: no path outside them is read, listed, searched or planned
/// for writing.
#[derive(Debug, Clone)]
pub struct PathBoundary {
    /// Canonical absolute paths; `roots[0]` is where relative paths start.
    pub roots: Vec<PathBuf>,
}

impl PathBoundary {
    /// The absolute path (canonical when it exists) that a model-given path names, if it is
    /// inside a root. Relative paths start at `roots[0]`. A path that escapes every root, by
    /// `..`, by being absolute elsewhere or through a symbolic link, is refused with a message
    /// that says it is outside. A path that does not exist yet (for `write_file`) is accepted
    /// when its nearest existing ancestor is inside a root. Reads no file content.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.trim().is_empty() {
            return Err(error("a path is required"));
        }
        let root = self.default_root()?;
        let given = Path::new(path);
        let candidate = if given.is_absolute() {
            given.to_path_buf()
        } else {
            root.join(given)
        };
        self.resolve_candidate(path, &candidate, 0)
    }

    /// The path as shown to the model and the user (`agentls_core::paths::display`).
    pub fn display(&self, path: &Path) -> String {
        agentls_core::paths::display(path, &self.roots)
    }

    pub(crate) fn default_root(&self) -> Result<&PathBuf, ToolError> {
        self.roots
            .first()
            .ok_or_else(|| error("no workspace folder is open"))
    }

    pub(super) fn resolve_candidate(
        &self,
        shown: &str,
        candidate: &Path,
        hops: usize,
    ) -> Result<PathBuf, ToolError> {
        if let Ok(canonical) = candidate.canonicalize() {
            return self.inside(shown, canonical);
        }
        // The path does not exist (yet): what decides where a write lands is its nearest
        // existing ancestor, with every symbolic link on the way resolved.
        let components: Vec<Component> = candidate.components().collect();
        let existing = (1..=components.len())
            .rev()
            .find(|&end| {
                let prefix: PathBuf = components[..end].iter().collect();
                std::fs::symlink_metadata(prefix).is_ok()
            })
            .ok_or_else(|| error(format!("cannot resolve {shown}")))?;
        let prefix: PathBuf = components[..existing].iter().collect();
        let rest = &components[existing..];
        let base = match prefix.canonicalize() {
            Ok(base) => base,
            Err(_) if prefix.is_symlink() => {
                // A dangling link: writing to it would create its target, so the target is
                // the path that must be inside.
                if hops >= MAX_SYMLINK_HOPS {
                    return Err(error(format!("{shown}: too many levels of symbolic links")));
                }
                let target = std::fs::read_link(&prefix)
                    .map_err(|err| error(format!("cannot resolve {shown}: {err}")))?;
                let mut next = prefix.parent().unwrap_or(Path::new("/")).join(target);
                next.extend(rest);
                return self.resolve_candidate(shown, &next, hops + 1);
            }
            Err(err) => return Err(error(format!("cannot resolve {shown}: {err}"))),
        };
        if !rest.is_empty() && !base.is_dir() {
            return Err(error(format!(
                "{shown}: {} is a file, not a directory",
                self.display(&base)
            )));
        }
        let mut resolved = base;
        let mut added = 0usize;
        for component in rest {
            match component {
                Component::Normal(name) => {
                    resolved.push(name);
                    added += 1;
                }
                Component::CurDir => {}
                Component::ParentDir if added > 0 => {
                    resolved.pop();
                    added -= 1;
                }
                // `..` above an existing directory, which the lexical path cannot follow.
                _ => return Err(self.outside(shown)),
            }
        }
        self.inside(shown, resolved)
    }

    pub(super) fn inside(&self, shown: &str, resolved: PathBuf) -> Result<PathBuf, ToolError> {
        if self.roots.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            Err(self.outside(shown))
        }
    }

    pub(super) fn outside(&self, shown: &str) -> ToolError {
        let roots: Vec<String> = self
            .roots
            .iter()
            .map(|root| root.display().to_string())
            .collect();
        error(format!(
            "{shown} is outside the workspace ({})",
            roots.join(", ")
        ))
    }

    /// `files::read_text`'s refusal, naming the file as the model knows it.
    pub(super) fn refusal(&self, path: &Path, refused: FileRefused) -> ToolError {
        error(
            refused
                .0
                .replace(&path.display().to_string(), &self.display(path)),
        )
    }

    /// A directory argument, `roots[0]` when absent, that must exist and be a directory.
    pub(super) fn directory_or_file(
        &self,
        path: Option<&str>,
    ) -> Result<(PathBuf, bool), ToolError> {
        let resolved = match path.filter(|path| !path.trim().is_empty()) {
            Some(path) => self.resolve(path)?,
            None => self.default_root()?.clone(),
        };
        match std::fs::metadata(&resolved) {
            Ok(metadata) => Ok((resolved, metadata.is_dir())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Err(error(format!("{} does not exist", self.display(&resolved))))
            }
            Err(err) => Err(error(format!(
                "cannot read {}: {err}",
                self.display(&resolved)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::*;

    #[test]
    fn resolve_keeps_paths_inside_the_workspace() {
        let (_dir, ws) = workspace();
        let outside_dir = tempfile::tempdir().unwrap();
        let outside = outside_dir.path().canonicalize().unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        let lib = write(&ws, "src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");

        assert_eq!(ws.resolve("src/lib.rs").unwrap(), lib);
        assert_eq!(ws.resolve("./src/../src/lib.rs").unwrap(), lib);
        assert_eq!(ws.resolve(lib.to_str().unwrap()).unwrap(), lib);
        assert_eq!(ws.display(&lib), "src/lib.rs");
        assert_eq!(ws.resolve("").unwrap_err().0, "a path is required");

        let err = ws.resolve("../x").unwrap_err().0;
        assert!(err.contains("../x is outside the workspace"), "{err}");
        let err = ws.resolve("src/../../x").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let secret = outside.join("secret.txt");
        let err = ws.resolve(secret.to_str().unwrap()).unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("/etc/passwd").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");

        // Symbolic links: judged by where they lead.
        std::os::unix::fs::symlink(&secret, root(&ws).join("escape.txt")).unwrap();
        std::os::unix::fs::symlink(&outside, root(&ws).join("escape_dir")).unwrap();
        std::os::unix::fs::symlink(&lib, root(&ws).join("alias.rs")).unwrap();
        let err = ws.resolve("escape.txt").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("escape_dir/new.txt").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        assert_eq!(ws.resolve("alias.rs").unwrap(), lib);
        // A dangling link is judged by its target, which a write would create.
        std::os::unix::fs::symlink(outside.join("planted.txt"), root(&ws).join("dangling"))
            .unwrap();
        let err = ws.resolve("dangling").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");

        // Files that do not exist yet.
        assert_eq!(
            ws.resolve("src/new/mod.rs").unwrap(),
            root(&ws).join("src/new/mod.rs")
        );
        assert_eq!(
            ws.resolve("new/../other.rs").unwrap(),
            root(&ws).join("other.rs")
        );
        let err = ws.resolve("new/../../x.rs").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("../sibling/new.rs").unwrap_err().0;
        assert!(err.contains("outside"), "{err}");
        let err = ws.resolve("src/lib.rs/x").unwrap_err().0;
        assert!(err.contains("not a directory"), "{err}");

        let empty = PathBoundary { roots: Vec::new() };
        assert!(empty.resolve("x").is_err());
    }
}
