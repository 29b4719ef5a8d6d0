//! Where agentls keeps a workspace's own state outside the repository (its memory, the
//! rules its "always" answers wrote): `<stateDir>/<folder>/<name>-<digest><extension>`, named
//! after the first root's folder (so the user can tell the files apart) and a digest of its
//! path (so two folders of one name do not share one).

use std::path::{Path, PathBuf};

/// The file of `root`'s state in `folder` of the state directory (`stateDir`).
pub fn file(state_dir: Option<&Path>, root: &Path, folder: &str, extension: &str) -> PathBuf {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    super::session_log::state_dir(state_dir)
        .join(folder)
        .join(format!(
            "{}-{}{extension}",
            readable_name(&root),
            digest(&root)
        ))
}

/// The root's folder name as a file name can hold it.
fn readable_name(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if name.is_empty() {
        "root".into()
    } else {
        name
    }
}

fn digest(root: &Path) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(root.to_string_lossy().as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes `text` as the whole of `path`, private to the user (0700 directory, 0600 file):
/// written beside it, synced, then renamed over it, so a crash leaves the old or the new.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(path);
    super::session_log::private_dir(dir, None)?;
    let temporary = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temporary)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(err) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(err);
    }
    Ok(())
}
