//! The persisted index: one file per workspace under the state directory (0700 directories,
//! a 0600 file, as the session logs), written whole to a temporary file and renamed, so a
//! crash leaves the old file or the new one, never half of one. What is read back is
//! checked by `symbol_index::persist::decode` before use; damage means a rebuild.

use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use agentls_core::symbol_index::{persist, SymbolIndex};

use crate::store::session_log::{self, SessionStore};

/// Where the index of a workspace with these roots lives.
pub fn store_path(state_dir: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let first = roots.first()?;
    let dir = SessionStore::for_workspace(state_dir, first)
        .dir()
        .parent()?
        .to_path_buf();
    let all: Vec<u8> = roots
        .iter()
        .flat_map(|r| r.as_os_str().as_encoded_bytes().iter().copied().chain([0]))
        .collect();
    Some(dir.join(format!(
        "symbols-{:016x}.bin",
        session_log::stable_hash(&all)
    )))
}

/// What was found on disk.
pub enum Loaded {
    Missing,
    Index(Box<SymbolIndex>),
    /// Present but not trusted: why.
    Damaged(String),
}

pub fn load(path: &Path) -> Loaded {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing,
        Err(err) => return Loaded::Damaged(format!("cannot be read: {err}")),
    };
    match persist::decode(&bytes) {
        Ok(index) => Loaded::Index(Box::new(index)),
        Err(err) => Loaded::Damaged(err.to_string()),
    }
}

/// Streams the index to a temporary file (never whole in memory), its header last, then
/// renames it over the old one.
pub fn save(path: &Path, index: &SymbolIndex) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no directory"))?;
    session_log::private_dir(dir, None)?;
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = session_log::open_private(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
        &temporary,
    )?;
    let mut writer = std::io::BufWriter::with_capacity(1 << 16, &mut file);
    writer.write_all(&[0; persist::HEADER_LEN])?;
    let mut failed = None;
    let header = persist::encode_streaming(index, &mut |chunk| {
        if failed.is_none() {
            if let Err(err) = writer.write_all(chunk) {
                failed = Some(err);
            }
        }
    });
    if let Some(err) = failed {
        drop(writer);
        let _ = std::fs::remove_file(&temporary);
        return Err(err);
    }
    writer.flush()?;
    drop(writer);
    file.seek(std::io::SeekFrom::Start(0))?;
    file.write_all(&header)?;
    file.sync_data()?;
    drop(file);
    std::fs::rename(&temporary, path)
}
