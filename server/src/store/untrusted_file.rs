//! Opening a file a repository (or anyone) may have turned into something else: the one
//! way configuration and instruction files (AGENTS.md, `.agents/hooks.json`, `.mcp.json`,
//! commands, subagents, skills, the user's settings, hooks and prompt overrides) and the
//! text files of `files::read_text` are read.
//!
//! A committed `AGENTS.md -> /dev/stdin` made the server read its own protocol input, a link
//! to a FIFO hung every turn, one to `/dev/zero` grew memory until allocation failed, and
//! `AGENTS.md -> ../../id_rsa` or `-> /proc/self/environ` put secrets into every system
//! message. So a file is opened without blocking (a FIFO opens at once), and what is then
//! checked is the *opened descriptor*: its type (a regular file only) and its real path
//! (`/proc/self/fd/N`: inside the allowed root, never under /proc, /dev or /sys). A path
//! swapped between a check and the open cannot get through, since nothing is checked by
//! path. The read is capped through `take`, since /proc files report a length of 0.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most a configuration or instruction file may hold (far above AGENTS.md's chain
/// budget and any hand-written command or settings file).
pub const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;

/// Where no file is ever read from, whatever the root: the kernel's and devices' files.
const NEVER_READ: [&str; 3] = ["/proc", "/dev", "/sys"];

/// What reading a configuration or instruction file gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigRead {
    /// Nothing there (or a link to nothing): not a problem.
    Missing,
    Text(String),
    /// Present but not read; the reason does not name the file, so the caller can write
    /// "skipping PATH: REASON".
    Refused(String),
}

/// `path`'s text when the opened file is a regular file inside `allowed_root` (when given),
/// not under /proc, /dev or /sys, at most `max_bytes` long and UTF-8.
pub fn read_config_file(path: &Path, allowed_root: Option<&Path>, max_bytes: u64) -> ConfigRead {
    let file = match open_checked(path, allowed_root) {
        Ok(Some(file)) => file,
        Ok(None) => return ConfigRead::Missing,
        Err(reason) => return ConfigRead::Refused(reason),
    };
    match read_capped(file, max_bytes) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => ConfigRead::Text(text),
            Err(_) => ConfigRead::Refused("it is not valid UTF-8".into()),
        },
        Err(reason) => ConfigRead::Refused(reason),
    }
}

/// Opens `path` (without blocking, not as a controlling terminal) and returns the file when
/// the descriptor is a regular file whose real path passes `allowed`; Ok(None) when there is
/// nothing at `path`. Only the descriptor is checked, never the path.
pub fn open_checked(path: &Path, allowed_root: Option<&Path>) -> Result<Option<File>, String> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("it cannot be opened: {err}")),
    };
    let metadata = file
        .metadata()
        .map_err(|err| format!("it cannot be examined: {err}"))?;
    if !metadata.is_file() {
        return Err(not_regular(path, &metadata.file_type()));
    }
    let real = real_path(&file, path)?;
    if let Some(special) = NEVER_READ.iter().find(|dir| real.starts_with(dir)) {
        return Err(format!(
            "it leads to {}, and nothing under {special} is read",
            real.display()
        ));
    }
    if let Some(root) = allowed_root {
        let root = root
            .canonicalize()
            .map_err(|err| format!("its folder {} cannot be resolved: {err}", root.display()))?;
        if !real.starts_with(&root) {
            return Err(format!(
                "it leads to {}, outside {}",
                real.display(),
                root.display()
            ));
        }
    }
    Ok(Some(file))
}

/// At most `max_bytes` of `file`; an error when there is more.
pub fn read_capped(file: File, max_bytes: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| format!("it cannot be read: {err}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("it is larger than the limit of {max_bytes} bytes"));
    }
    Ok(bytes)
}

/// Why a file that is not a regular one is refused, naming what the path links to.
fn not_regular(path: &Path, kind: &std::fs::FileType) -> String {
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO or pipe"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    match std::fs::read_link(path) {
        Ok(target) => format!(
            "it is a link to {} ({what}), not a regular file",
            target.display()
        ),
        Err(_) => format!("it is {what}, not a regular file"),
    }
}

/// The real path of the opened file: what the kernel says the descriptor is.
#[cfg(target_os = "linux")]
fn real_path(file: &File, _path: &Path) -> Result<PathBuf, String> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|err| format!("where it leads cannot be checked: {err}"))
}

/// Without /proc, the path resolved after the open (a narrower guarantee than Linux's).
#[cfg(not(target_os = "linux"))]
fn real_path(_file: &File, path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|err| format!("where it leads cannot be checked: {err}"))
}

#[cfg(test)]
mod tests {
    use super::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
    use std::os::unix::fs::symlink;
    use std::path::Path;

    fn refused(read: ConfigRead) -> String {
        match read {
            ConfigRead::Refused(why) => why,
            other => panic!("not refused: {other:?}"),
        }
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_regular_file_inside_its_root_is_read_and_a_link_inside_it_too() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("docs")).unwrap();
        std::fs::write(root.path().join("docs/AGENTS.md"), "rules").unwrap();
        symlink("docs/AGENTS.md", root.path().join("AGENTS.md")).unwrap();
        for name in ["docs/AGENTS.md", "AGENTS.md"] {
            let read = read_config_file(&root.path().join(name), Some(root.path()), 100);
            assert_eq!(read, ConfigRead::Text("rules".into()), "{name}");
        }
        let missing = root.path().join("absent.md");
        assert_eq!(
            read_config_file(&missing, Some(root.path()), 100),
            ConfigRead::Missing
        );
        symlink("nowhere", root.path().join("dangling.md")).unwrap();
        let dangling = root.path().join("dangling.md");
        assert_eq!(read_config_file(&dangling, None, 100), ConfigRead::Missing);
    }

    #[test]
    fn a_fifo_a_device_and_stdin_are_refused_without_blocking() {
        let root = tempfile::tempdir().unwrap();
        mkfifo(&root.path().join("fifo"));
        symlink(root.path().join("fifo"), root.path().join("to_fifo.md")).unwrap();
        symlink("/dev/zero", root.path().join("zero.md")).unwrap();
        symlink("/dev/stdin", root.path().join("stdin.md")).unwrap();
        let why = refused(read_config_file(&root.path().join("fifo"), None, 100));
        assert_eq!(why, "it is a FIFO or pipe, not a regular file");
        let why = refused(read_config_file(&root.path().join("to_fifo.md"), None, 100));
        assert!(
            why.starts_with("it is a link to ") && why.contains("(a FIFO or pipe)"),
            "{why}"
        );
        let why = refused(read_config_file(&root.path().join("zero.md"), None, 100));
        assert_eq!(
            why,
            "it is a link to /dev/zero (a character device), not a regular file"
        );
        // The test harness's stdin may be a terminal, a pipe or /dev/null: never a regular
        // file under the workspace, so refused in every case.
        let read = read_config_file(&root.path().join("stdin.md"), Some(root.path()), 100);
        assert!(
            matches!(read, ConfigRead::Refused(_) | ConfigRead::Missing),
            "{read:?}"
        );
    }

    #[test]
    fn a_link_out_of_the_root_and_proc_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(dir.path().join("id_rsa"), "-----BEGIN KEY-----").unwrap();
        symlink("../id_rsa", root.join("AGENTS.md")).unwrap();
        symlink("/proc/self/environ", root.join("env.md")).unwrap();
        let why = refused(read_config_file(&root.join("AGENTS.md"), Some(&root), 100));
        assert!(why.contains("id_rsa, outside "), "{why}");
        // Without a root the out-of-tree file is read; /proc never is.
        let read = read_config_file(&root.join("AGENTS.md"), None, 100);
        assert_eq!(read, ConfigRead::Text("-----BEGIN KEY-----".into()));
        let why = refused(read_config_file(&root.join("env.md"), None, 100));
        assert!(why.contains("nothing under /proc is read"), "{why}");
        let why = refused(read_config_file(
            Path::new("/proc/self/status"),
            None,
            1 << 20,
        ));
        assert!(why.contains("nothing under /proc is read"), "{why}");
    }

    #[test]
    fn a_file_over_the_cap_and_a_non_utf8_file_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let big = root.path().join("big.md");
        std::fs::write(&big, "x".repeat(101)).unwrap();
        let why = refused(read_config_file(&big, None, 100));
        assert_eq!(why, "it is larger than the limit of 100 bytes");
        std::fs::write(&big, "x".repeat(100)).unwrap();
        assert!(matches!(read_config_file(&big, None, 100), ConfigRead::Text(t) if t.len() == 100));
        std::fs::write(&big, [0xff, 0xfe]).unwrap();
        let why = refused(read_config_file(&big, None, MAX_CONFIG_FILE_BYTES));
        assert_eq!(why, "it is not valid UTF-8");
        let why = refused(read_config_file(root.path(), None, 100));
        assert_eq!(why, "it is a directory, not a regular file");
    }
}
