//! Files written and removed beneath a root through directory descriptors, never through a
//! link.
//!
//! A check that no directory of a path is a symlink, followed by a write to the path, is a
//! race: a process the model left running can swap a directory for a link in between, and
//! the write lands where the link points (issue 41, hole 3). Here every directory below the
//! root is opened with `O_NOFOLLOW` from the one above it, and the file is made, renamed and
//! removed relative to its directory's descriptor: once a directory is open, no rename of
//! its path can redirect what is written into it.

use std::ffi::{CStr, CString, OsStr};
use std::io::{Error, ErrorKind, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A directory below a root, opened without following links.
pub struct Dir {
    fd: OwnedFd,
    /// The path from the root, for messages.
    shown: String,
}

/// What went wrong, said for the user: the path and the reason.
fn failure(shown: &str, what: &str, e: &Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::ENOTDIR) {
        return format!("{shown} is a symlink now (or not a directory): not written through");
    }
    format!("cannot {what} {shown}: {e}")
}

fn c_name(part: &[u8]) -> Result<CString, String> {
    CString::new(part).map_err(|_| format!("refused path part {:?}", String::from_utf8_lossy(part)))
}

/// The parts of a relative path: no empty, `.` or `..` part (a path that climbs is refused,
/// never resolved).
fn parts(relative: &[u8]) -> Result<Vec<&[u8]>, String> {
    let parts: Vec<&[u8]> = relative.split(|b| *b == b'/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == b"." || *p == b"..")
    {
        return Err(format!(
            "refused path {:?}",
            String::from_utf8_lossy(relative)
        ));
    }
    Ok(parts)
}

fn open_dir_at(at: libc::c_int, name: &CStr) -> std::io::Result<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `name` is a valid C string; the result is checked before it is owned.
    let fd = unsafe { libc::openat(at, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Dir {
    /// The root itself (trusted: the workspace folder the user opened).
    pub fn root(root: &Path) -> Result<Dir, String> {
        let c = c_name(root.as_os_str().as_bytes())?;
        let fd = open_dir_at(libc::AT_FDCWD, &c)
            .map_err(|e| format!("cannot open {}: {e}", root.display()))?;
        Ok(Dir {
            fd,
            shown: String::new(),
        })
    }

    /// The directory `relative` (slash-separated) below `root`, made where missing when
    /// `create`. `None` when it is missing and not made.
    pub fn open(root: &Path, relative: &[u8], create: bool) -> Result<Option<Dir>, String> {
        let mut dir = Dir::root(root)?;
        if relative.is_empty() {
            return Ok(Some(dir));
        }
        for part in parts(relative)? {
            match dir.child(part, create)? {
                Some(child) => dir = child,
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    fn shown_child(&self, part: &[u8]) -> String {
        let name = String::from_utf8_lossy(part);
        if self.shown.is_empty() {
            name.into_owned()
        } else {
            format!("{}/{name}", self.shown)
        }
    }

    fn child(&self, part: &[u8], create: bool) -> Result<Option<Dir>, String> {
        let shown = self.shown_child(part);
        let c = c_name(part)?;
        match open_dir_at(self.fd.as_raw_fd(), &c) {
            Ok(fd) => return Ok(Some(Dir { fd, shown })),
            Err(e) if e.kind() == ErrorKind::NotFound && create => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(failure(&shown, "open", &e)),
        }
        // SAFETY: valid descriptor and C string.
        if unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) } != 0 {
            let e = Error::last_os_error();
            if e.kind() != ErrorKind::AlreadyExists {
                return Err(failure(&shown, "create", &e));
            }
        }
        // Opened again without following: whatever now has the name must be the directory.
        let fd = open_dir_at(self.fd.as_raw_fd(), &c).map_err(|e| failure(&shown, "open", &e))?;
        Ok(Some(Dir { fd, shown }))
    }

    /// The mode bits of `name` in this directory when it is a regular file.
    fn file_mode(&self, name: &CStr) -> Option<u32> {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: valid descriptor, C string and out-pointer.
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            return None;
        }
        // SAFETY: fstatat succeeded, so the struct is filled.
        let stat = unsafe { stat.assume_init() };
        ((stat.st_mode & libc::S_IFMT) == libc::S_IFREG).then_some(stat.st_mode & 0o7777)
    }

    /// `name` in this directory replaced whole by `bytes` (a temporary file renamed over it:
    /// a kill leaves the old or the new file). `mode` is git's: 0o120000 makes a symlink
    /// whose target is `bytes`; otherwise only the executable bit is taken from it.
    pub fn write_atomically(&self, name: &OsStr, bytes: &[u8], mode: u32) -> Result<(), String> {
        let shown = self.shown_child(name.as_bytes());
        let c = c_name(name.as_bytes())?;
        let temp = c_name(
            format!(
                ".{}.agentls-rewind-{}",
                name.to_string_lossy(),
                std::process::id()
            )
            .as_bytes(),
        )?;
        let at = self.fd.as_raw_fd();
        // SAFETY: valid descriptor and C string; a leftover of an earlier kill goes.
        unsafe { libc::unlinkat(at, temp.as_ptr(), 0) };
        if mode == 0o120000 {
            let target = c_name(bytes)?;
            // SAFETY: valid C strings and descriptor.
            if unsafe { libc::symlinkat(target.as_ptr(), at, temp.as_ptr()) } != 0 {
                return Err(failure(&shown, "write", &Error::last_os_error()));
            }
        } else {
            let old = self.file_mode(&c).unwrap_or(0o644);
            // Git keeps only the executable bit: x where r is, as git checks files out.
            let permissions = if mode & 0o111 != 0 {
                old | (old & 0o444) >> 2 | 0o100
            } else {
                old & !0o111
            };
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: valid descriptor and C string; the result is checked.
            let fd = unsafe { libc::openat(at, temp.as_ptr(), flags, 0o600 as libc::c_uint) };
            if fd < 0 {
                return Err(failure(&shown, "write", &Error::last_os_error()));
            }
            // SAFETY: just opened, owned here.
            let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
            let written = (|| -> std::io::Result<()> {
                file.write_all(bytes)?;
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(permissions))?;
                file.sync_all()
            })();
            if let Err(e) = written {
                // SAFETY: as above.
                unsafe { libc::unlinkat(at, temp.as_ptr(), 0) };
                return Err(failure(&shown, "write", &e));
            }
        }
        // SAFETY: valid descriptor and C strings.
        if unsafe { libc::renameat(at, temp.as_ptr(), at, c.as_ptr()) } != 0 {
            let e = Error::last_os_error();
            // SAFETY: as above.
            unsafe { libc::unlinkat(at, temp.as_ptr(), 0) };
            return Err(failure(&shown, "replace", &e));
        }
        Ok(())
    }

    /// Removes the file (or link) `name`; a missing one is no error.
    pub fn remove_file(&self, name: &OsStr) -> Result<(), String> {
        let c = c_name(name.as_bytes())?;
        // SAFETY: valid descriptor and C string.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            let e = Error::last_os_error();
            if e.kind() != ErrorKind::NotFound {
                return Err(failure(&self.shown_child(name.as_bytes()), "remove", &e));
            }
        }
        Ok(())
    }

    /// Removes the directory `name` when it is empty; false when it was not removed.
    pub fn remove_empty_dir(&self, name: &OsStr) -> bool {
        let Ok(c) = c_name(name.as_bytes()) else {
            return false;
        };
        // SAFETY: valid descriptor and C string.
        unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) == 0 }
    }
}

/// `relative` (slash-separated) below `root` replaced whole by `bytes`; its directories made
/// where missing, none of them followed through a link.
pub fn write_atomically(
    root: &Path,
    relative: &[u8],
    bytes: &[u8],
    mode: u32,
) -> Result<(), String> {
    let (dir, name) = split(relative)?;
    let dir = Dir::open(root, dir, true)?.ok_or("no directory")?;
    dir.write_atomically(OsStr::from_bytes(name), bytes, mode)
}

/// The directory part and the name of a relative path.
pub fn split(relative: &[u8]) -> Result<(&[u8], &[u8]), String> {
    parts(relative)?;
    Ok(match relative.iter().rposition(|b| *b == b'/') {
        Some(at) => (&relative[..at], &relative[at + 1..]),
        None => (&[][..], relative),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "agentls-beneath-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_file_is_written_with_its_directories() {
        let root = temp_root();
        write_atomically(&root, b"a/b/c.txt", b"hello", 0o100755).unwrap();
        assert_eq!(std::fs::read(root.join("a/b/c.txt")).unwrap(), b"hello");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root.join("a/b/c.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111 & (mode & 0o444) >> 2 | 0o100);
        write_atomically(&root, b"link", b"a/b/c.txt", 0o120000).unwrap();
        assert_eq!(
            std::fs::read_link(root.join("link")).unwrap(),
            Path::new("a/b/c.txt")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_directory_that_is_a_link_is_not_written_through() {
        let root = temp_root();
        let outside = temp_root();
        std::os::unix::fs::symlink(&outside, root.join("a")).unwrap();
        let error = write_atomically(&root, b"a/c.txt", b"x", 0o100644).unwrap_err();
        assert!(error.contains("a is a symlink now"), "{error}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // Nor removed through.
        std::fs::write(outside.join("keep"), "k").unwrap();
        assert!(Dir::open(&root, b"a", false).is_err());
        assert!(outside.join("keep").exists());
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn an_open_directory_is_written_even_if_its_path_is_swapped_for_a_link() {
        let root = temp_root();
        let outside = temp_root();
        std::fs::create_dir(root.join("a")).unwrap();
        let dir = Dir::open(&root, b"a", false).unwrap().unwrap();
        std::fs::rename(root.join("a"), root.join("a.real")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a")).unwrap();
        dir.write_atomically(OsStr::new("c.txt"), b"x", 0o100644)
            .unwrap();
        assert_eq!(std::fs::read(root.join("a.real/c.txt")).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn paths_that_climb_are_refused() {
        let root = temp_root();
        for bad in [&b"../x"[..], b"a/../../x", b"/etc/x", b"a//b", b"./x"] {
            assert!(
                write_atomically(&root, bad, b"x", 0o100644).is_err(),
                "{bad:?}"
            );
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
