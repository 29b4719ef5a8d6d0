//! The workspace scripts a hook or an MCP server runs, and what they hold: an approval
//! covers a script's content, so a script rewritten since (by a command, the model or the
//! user) is asked again. A leaf of `agent/`: it names no other file of it.

use std::path::Path;

/// The `words` that name regular files inside `root` (relative to it, or absolute), as
/// `/`-separated paths relative to it: the workspace scripts a hook or an MCP server runs.
pub(in crate::agent) fn workspace_files(
    root: &Path,
    words: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    words
        .into_iter()
        .filter_map(|word| {
            let path = root.join(&word).canonicalize().ok()?;
            let relative = path.strip_prefix(&root).ok()?;
            path.is_file()
                .then(|| relative.to_string_lossy().replace('\\', "/"))
        })
        .collect()
}

/// The SHA-256 of a script's content (hex), read as configuration files are
/// (`store::untrusted_file`: a regular file inside `root`, at most 16 MiB): a script that is
/// missing, special, outside or larger has a digest that says so, and any change to it
/// changes the approval's fingerprint.
pub(in crate::agent) fn digest_of(root: &Path, path: &Path) -> String {
    use crate::store::untrusted_file::{open_checked, read_capped};
    use sha2::{Digest, Sha256};
    const MAX_SCRIPT_BYTES: u64 = 16 << 20;
    let bytes = match open_checked(path, Some(root)) {
        Ok(Some(file)) => read_capped(file, MAX_SCRIPT_BYTES),
        Ok(None) => Err("missing".to_string()),
        Err(why) => Err(why),
    };
    match bytes {
        Ok(bytes) => Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        Err(why) => why,
    }
}
