//! Session logs on disk: one append-only JSON-lines file per session under the state
//! directory, one directory per workspace. The IO edge of `session`.
//!
//! Durability rules: an event is written (one `write` of one whole line) before anyone is
//! told about it; the file is fsynced at turn boundaries. Reading never fails on content: a
//! torn last line (a crash mid-write) is dropped with a warning, a corrupted line is skipped
//! with a warning, and everything before them is kept.
//!
//! Privacy rule: the logs hold whole transcripts and tool outputs, so they are the user's
//! alone: directories are created 0700 and files 0600, whatever the umask, and a store's
//! directories and a session's files found more open are tightened when they are opened.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use agentls_core::event::Event;

/// Where session logs live: `stateDir` when configured, else `$XDG_STATE_HOME/agentls`,
/// else `~/.local/state/agentls`.
pub fn state_dir(configured: Option<&Path>) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_path_buf();
    }
    std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local").join("state"))
        })
        .unwrap_or_else(std::env::temp_dir)
        .join("agentls")
}

/// Creates `dir` (and any missing parent) 0700, then tightens `dir` and `also` (its
/// parents that belong to agentls) when they are open to the group or others.
pub fn private_dir(dir: &Path, also: Option<&Path>) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    for dir in std::iter::once(dir).chain(also) {
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

/// Opens (creating 0600) a file of the store, tightening it to 0600 if it was more open.
pub(crate) fn open_private(
    options: &mut std::fs::OpenOptions,
    path: &Path,
) -> std::io::Result<std::fs::File> {
    let file = options.mode(0o600).open(path)?;
    let mode = file.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// FNV-1a: stable across builds and Rust versions, unlike the std hasher.
pub(crate) fn stable_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A session id is a file name: letters, digits, `-` and `_` only.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh session id: time-ordered, with randomness from the std hasher's keys.
pub fn new_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(millis);
    format!("{millis:012x}-{:08x}", hasher.finish() as u32)
}

pub fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

#[derive(Debug, Default)]
pub struct LogContents {
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
}

impl SessionStore {
    /// The store of `workspace`'s sessions under `state_dir`.
    pub fn for_workspace(state_dir: &Path, workspace: &Path) -> SessionStore {
        let name: String = workspace
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into())
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let key = format!(
            "{name}-{:016x}",
            stable_hash(workspace.as_os_str().as_encoded_bytes())
        );
        SessionStore {
            dir: state_dir.join(key).join("sessions"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the store's directories private (see the module comment).
    fn create_dir(&self) -> std::io::Result<()> {
        private_dir(&self.dir, self.dir.parent())
    }

    pub fn log_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    pub fn progress_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.progress.md"))
    }

    /// Opens a session's log for appending, creating it if needed. A torn last line left
    /// by a crash is cut off first, so the next event starts on a line of its own.
    pub fn open(&self, id: &str) -> std::io::Result<SessionLog> {
        if !valid_session_id(id) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid session id {id:?}"),
            ));
        }
        self.create_dir()?;
        let path = self.log_path(id);
        let mut file = open_private(
            std::fs::OpenOptions::new()
                .read(true)
                .append(true)
                .create(true),
            &path,
        )?;
        let len = file.metadata()?.len();
        if len > 0 {
            let mut bytes = Vec::new();
            file.seek(SeekFrom::Start(0))?;
            file.read_to_end(&mut bytes)?;
            if bytes.last() != Some(&b'\n') {
                let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                tracing::warn!(
                    "{}: dropping a torn last line ({} bytes) before appending",
                    path.display(),
                    bytes.len() - keep
                );
                file.set_len(keep as u64)?;
            }
        }
        Ok(SessionLog { file, path })
    }

    pub fn exists(&self, id: &str) -> bool {
        valid_session_id(id) && self.log_path(id).is_file()
    }

    pub fn read(&self, id: &str) -> std::io::Result<LogContents> {
        if !valid_session_id(id) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid session id {id:?}"),
            ));
        }
        let bytes = std::fs::read(self.log_path(id))?;
        Ok(parse_log(&bytes))
    }

    /// Ids of the stored sessions.
    pub fn ids(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = dir
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".jsonl")?;
                valid_session_id(id).then(|| id.to_string())
            })
            .collect();
        ids.sort();
        ids
    }

    /// Removes a session's log and progress log; whether there was a log. A file already
    /// gone is not an error (the delete is idempotent).
    pub fn delete(&self, id: &str) -> std::io::Result<bool> {
        if !valid_session_id(id) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid session id {id:?}"),
            ));
        }
        let mut existed = false;
        for path in [self.log_path(id), self.progress_path(id)] {
            match std::fs::remove_file(&path) {
                Ok(()) => existed |= path == self.log_path(id),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
        Ok(existed)
    }

    /// Appends a section to the session's progress log (markdown, human-readable), beside its
    /// log: a session deleted while its turn ran (ACP `session/delete`) gets no new one.
    pub fn append_progress(&self, id: &str, section: &str) -> std::io::Result<()> {
        if !valid_session_id(id) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid session id {id:?}"),
            ));
        }
        if !self.log_path(id).exists() {
            return Ok(());
        }
        self.create_dir()?;
        let mut file = open_private(
            std::fs::OpenOptions::new().append(true).create(true),
            &self.progress_path(id),
        )?;
        file.write_all(section.as_bytes())
    }
}

/// The events of a log's bytes; never fails. See the module comment for the rules.
pub fn parse_log(bytes: &[u8]) -> LogContents {
    let mut contents = LogContents::default();
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if complete < bytes.len() {
        contents.warnings.push(format!(
            "the last line ({} bytes) was cut short, probably by a crash mid-write; it was ignored",
            bytes.len() - complete
        ));
    }
    for (number, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(event) => contents.events.push(event),
            Err(err) => contents.warnings.push(format!(
                "line {} is not a session event ({err}); skipped",
                number + 1
            )),
        }
    }
    contents
}

pub struct SessionLog {
    file: std::fs::File,
    path: PathBuf,
}

impl SessionLog {
    /// Writes one event as one line, in one write.
    pub fn append(&mut self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event)
            .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
        line.push(b'\n');
        let before = self.file.metadata()?.len();
        let written = self.file.write_all(&line);
        if written.is_err() {
            // A half-written line (disk full) would swallow the next event: cut it off.
            let _ = self.file.set_len(before);
        }
        written
    }

    /// Flushes the log to the disk (turn boundaries).
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn_started(id: &str) -> Event {
        Event::TurnStarted {
            turn_id: id.into(),
            at: 1,
        }
    }

    #[test]
    fn appended_events_read_back_and_a_torn_line_is_dropped_then_repaired() {
        let state = tempfile::tempdir().unwrap();
        let store = SessionStore::for_workspace(state.path(), Path::new("/home/u/my project"));
        assert!(store.dir().starts_with(state.path()));
        assert!(store.dir().to_string_lossy().contains("my_project-"));
        let mut log = store.open("s-1").unwrap();
        log.append(&turn_started("t1")).unwrap();
        log.append(&turn_started("t2")).unwrap();
        log.sync().unwrap();
        drop(log);
        // A crash mid-write: half a line at the end.
        let path = store.log_path("s-1");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"event\":\"turnStar");
        std::fs::write(&path, &bytes).unwrap();
        let read = store.read("s-1").unwrap();
        assert_eq!(read.events, [turn_started("t1"), turn_started("t2")]);
        assert_eq!(read.warnings.len(), 1);
        assert!(read.warnings[0].contains("cut short"));
        // Reopening cuts the torn bytes; the next event is whole.
        let mut log = store.open("s-1").unwrap();
        log.append(&turn_started("t3")).unwrap();
        drop(log);
        let read = store.read("s-1").unwrap();
        assert_eq!(read.events.len(), 3);
        assert!(read.warnings.is_empty());
        assert_eq!(store.ids(), ["s-1"]);
    }

    #[test]
    fn corrupted_lines_are_skipped_and_never_fatal() {
        let bytes = b"{\"event\":\"turnStarted\",\"turnId\":\"a\",\"at\":1}\nnot json at all\n\x00\xff\n{\"event\":\"unknownKind\"}\n{\"event\":\"turnStarted\",\"turnId\":\"b\",\"at\":2}\n";
        let read = parse_log(bytes);
        assert_eq!(
            read.events,
            [turn_started("a"), turn_started("b")].map(|mut e| {
                if let Event::TurnStarted { at, turn_id } = &mut e {
                    *at = if turn_id == "a" { 1 } else { 2 };
                }
                e
            })
        );
        assert_eq!(read.warnings.len(), 3);
        assert!(read.warnings[0].starts_with("line 2 "));
        assert!(parse_log(b"").events.is_empty());
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn logs_are_private_whatever_the_umask_and_open_ones_are_tightened() {
        // Like a umask of 022: what is created must not inherit the process's openness.
        let state = tempfile::tempdir().unwrap();
        let root = state.path().join("agentls");
        let store = SessionStore::for_workspace(&root, Path::new("/w/p"));
        drop(store.open("s-1").unwrap());
        store.append_progress("s-1", "## turn\n").unwrap();
        for dir in [&root, store.dir().parent().unwrap(), store.dir()] {
            assert_eq!(mode(dir), 0o700, "{}", dir.display());
        }
        assert_eq!(mode(&store.log_path("s-1")), 0o600);
        assert_eq!(mode(&store.progress_path("s-1")), 0o600);

        // Files and directories left world-readable by an older build are tightened on open.
        let open = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(store.dir(), open.clone()).unwrap();
        std::fs::set_permissions(store.dir().parent().unwrap(), open).unwrap();
        for path in [store.log_path("s-2"), store.progress_path("s-2")] {
            std::fs::write(&path, "").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        drop(store.open("s-2").unwrap());
        store.append_progress("s-2", "## turn\n").unwrap();
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(mode(store.dir().parent().unwrap()), 0o700);
        assert_eq!(mode(&store.log_path("s-2")), 0o600);
        assert_eq!(mode(&store.progress_path("s-2")), 0o600);
    }

    /// Issue 41's fourteenth hole: a turn that ended after its session was deleted wrote
    /// `<id>.progress.md` again.
    #[test]
    fn a_deleted_sessions_progress_log_is_not_written_again() {
        let state = tempfile::tempdir().unwrap();
        let store = SessionStore::for_workspace(state.path(), Path::new("/w/p"));
        drop(store.open("s-1").unwrap());
        store.append_progress("s-1", "## turn 1\n").unwrap();
        assert!(store.progress_path("s-1").exists());
        assert!(store.delete("s-1").unwrap());
        store.append_progress("s-1", "## turn 2\n").unwrap();
        assert!(!store.progress_path("s-1").exists());
    }

    #[test]
    fn session_ids_are_file_names_only() {
        assert!(valid_session_id(&new_session_id()));
        assert_ne!(new_session_id(), new_session_id());
        for bad in ["", "../x", "a/b", "a.b", "x y"] {
            assert!(!valid_session_id(bad), "{bad}");
        }
        let state = tempfile::tempdir().unwrap();
        let store = SessionStore::for_workspace(state.path(), Path::new("/w"));
        assert!(store.open("../escape").is_err());
        assert!(store.read("../escape").is_err());
    }
}
