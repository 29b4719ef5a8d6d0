//! Whether a root's files may have changed since its last checkpoint snapshot, from the
//! kernel (inotify): a watch on every directory of the root (`.git` and agentls's state
//! directory aside), and one flag, set by any event (a write, a close after writing, a
//! mode or time change, an entry created, deleted or moved). A snapshot that finds the
//! flag clear takes the last snapshot's tree without running git (`git status` stats
//! every file: 30 ms of CPU on 20,000 files); any doubt is a full snapshot.
//!
//! Why no change is missed: the kernel queues an event inside the system call that made
//! the change, so the queue read before a snapshot holds every change that ended before
//! it; the watches of new directories are added before the snapshot's `git status`, so a
//! change in them is either seen by that status or queued. Not watched, hence never
//! trusted: roots on a file system whose changes may come from elsewhere (NFS, FUSE, 9p,
//! virtiofs: only the listed local ones are), roots with a mount inside, more than
//! `MAX_DIRS` directories or the kernel's watch limit, a queue overflow, a directory
//! renamed (the whole watch is made again). Writes through a memory map after the file
//! is closed, and through a hard link from outside the root, make no event here
//! (docs/limits.md): no tool the agent runs is known to do that to sources.

use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use linux::Watch;

/// More directories than this in a root: not watched (every snapshot is a full one).
const MAX_DIRS: usize = 50_000;

/// The share of the user's inotify watches (`fs.inotify.max_user_watches`, shared by every
/// program of the user) one root may take: the editor's own file watcher, and other
/// tools, must not find the limit spent by agentls.
const WATCH_SHARE_DIVISOR: usize = 4;

/// How many directories one root may watch: `MAX_DIRS`, or a quarter of the user's
/// watches when that is less (8,192 on older kernels: 2,048 directories).
fn max_dirs(max_user_watches: Option<usize>) -> usize {
    max_user_watches.map_or(MAX_DIRS, |limit| {
        (limit / WATCH_SHARE_DIVISOR).min(MAX_DIRS)
    })
}

/// The last snapshot a clear flag hands out again, and what it depended on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub tree: String,
    pub unstored: Vec<String>,
    /// What else decides the tree (the exclude files, the size limit): the snapshot is
    /// reused only while it is the same.
    pub stamp: Vec<u8>,
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    use super::{max_dirs, Taken};

    pub struct Watch {
        fd: OwnedFd,
        dev: u64,
        skip: Vec<PathBuf>,
        /// Watch descriptor → its directory (for the directories created under it).
        dirs: HashMap<i32, PathBuf>,
        /// Directories created since the queue was last read, to watch with their subtrees.
        created: Vec<PathBuf>,
        dirty: bool,
        /// More directories than this: not watched (see [`max_dirs`]).
        max_dirs: usize,
        /// The watch cannot be trusted any more (overflow, a directory moved): made again.
        broken: bool,
        pub taken: Option<Taken>,
    }

    impl Watch {
        /// Watches every directory under `root` but `skip` (and `.git`); `None` where the
        /// root cannot be trusted to report its changes. The flag starts set.
        pub fn new(root: &Path, skip: Vec<PathBuf>) -> Option<Watch> {
            let dev = std::fs::symlink_metadata(root).ok()?.dev();
            if !local_file_system(root) {
                return None;
            }
            // SAFETY: inotify_init1 takes flags only; a non-negative result is a new fd.
            let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if raw < 0 {
                return None;
            }
            // SAFETY: `raw` is a fresh descriptor owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            let mut watch = Watch {
                fd,
                dev,
                skip,
                dirs: HashMap::new(),
                created: Vec::new(),
                dirty: true,
                max_dirs: max_dirs(
                    std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
                        .ok()
                        .and_then(|text| text.trim().parse().ok()),
                ),
                broken: false,
                taken: None,
            };
            watch.watch_tree(root).then_some(watch)
        }

        /// Reads the queue and watches the directories made since; whether `taken` may be
        /// handed out again for `stamp` (no event since it was taken).
        pub fn unchanged_since_taken(&mut self, stamp: &[u8]) -> bool {
            self.read_events();
            let created = std::mem::take(&mut self.created);
            for dir in created {
                if !self.watch_tree(&dir) {
                    self.broken = true;
                }
            }
            !self.dirty && !self.broken && self.taken.as_ref().is_some_and(|t| t.stamp == stamp)
        }

        /// A full snapshot begins: what changes from now on sets the flag again.
        pub fn snapshot_begins(&mut self) {
            self.dirty = false;
            self.taken = None;
        }

        pub fn broken(&self) -> bool {
            self.broken
        }

        /// Adds a watch on `top` and every directory under it; false when one could not be
        /// added (the kernel's limit, too many, another file system).
        fn watch_tree(&mut self, top: &Path) -> bool {
            let mut stack = vec![top.to_path_buf()];
            while let Some(dir) = stack.pop() {
                if self.skip.iter().any(|s| dir.starts_with(s)) {
                    continue;
                }
                match std::fs::symlink_metadata(&dir) {
                    Ok(meta) if meta.is_dir() && meta.dev() == self.dev => {}
                    // Gone since (its parent's event set the flag) or a symlink now.
                    Ok(meta) if !meta.is_dir() => continue,
                    Err(_) => continue,
                    // A mount inside the root: its changes may come from elsewhere.
                    Ok(_) => return false,
                }
                if self.dirs.len() >= self.max_dirs || !self.add(&dir) {
                    return false;
                }
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                    if is_dir && entry.file_name() != ".git" {
                        stack.push(entry.path());
                    }
                }
            }
            true
        }

        fn add(&mut self, dir: &Path) -> bool {
            let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
                return false;
            };
            let mask = libc::IN_MODIFY
                | libc::IN_ATTRIB
                | libc::IN_CLOSE_WRITE
                | libc::IN_CREATE
                | libc::IN_DELETE
                | libc::IN_DELETE_SELF
                | libc::IN_MOVED_FROM
                | libc::IN_MOVED_TO
                | libc::IN_MOVE_SELF
                | libc::IN_ONLYDIR
                | libc::IN_DONT_FOLLOW;
            // SAFETY: a valid fd and a NUL-terminated path.
            let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), mask) };
            if wd < 0 {
                // Gone meanwhile: its parent's event set the flag. Anything else (the limit):
                // not trusted.
                return std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT);
            }
            self.dirs.insert(wd, dir.to_path_buf());
            true
        }

        /// Drains the queue: any event sets the flag; new directories are noted, a moved or
        /// overflowing one breaks the watch.
        fn read_events(&mut self) {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                // SAFETY: reads at most the buffer's length into it.
                let n = unsafe {
                    libc::read(
                        self.fd.as_raw_fd(),
                        buffer.as_mut_ptr().cast(),
                        buffer.len(),
                    )
                };
                if n <= 0 {
                    if n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN)
                    {
                        self.broken = true;
                    }
                    return;
                }
                self.dirty = true;
                let mut at = 0;
                let header = std::mem::size_of::<libc::inotify_event>();
                while at + header <= n as usize {
                    // SAFETY: the kernel wrote whole events; read_unaligned copes with offsets.
                    let event: libc::inotify_event =
                        unsafe { std::ptr::read_unaligned(buffer[at..].as_ptr().cast()) };
                    let name_bytes = &buffer[at + header..at + header + event.len as usize];
                    let name = &name_bytes[..name_bytes.iter().position(|&b| b == 0).unwrap_or(0)];
                    at += header + event.len as usize;
                    self.note(event.wd, event.mask, name);
                }
            }
        }

        fn note(&mut self, wd: i32, mask: u32, name: &[u8]) {
            if mask & (libc::IN_Q_OVERFLOW | libc::IN_MOVE_SELF) != 0 {
                self.broken = true;
            }
            if mask & libc::IN_IGNORED != 0 {
                self.dirs.remove(&wd);
                return;
            }
            if mask & libc::IN_ISDIR == 0 {
                return;
            }
            if mask & (libc::IN_MOVED_FROM | libc::IN_MOVED_TO) != 0 {
                // The paths of the watches under it are stale: made again.
                self.broken = true;
            } else if mask & libc::IN_CREATE != 0 {
                if let Some(parent) = self.dirs.get(&wd) {
                    let name = std::ffi::OsStr::from_bytes(name);
                    self.created.push(parent.join(name));
                }
            }
        }
    }

    /// Whether `root` lies on a file system whose every change is made by this kernel.
    fn local_file_system(root: &Path) -> bool {
        let Ok(path) = std::ffi::CString::new(root.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: a zeroed statfs is a valid value; statfs only writes into it.
        let kind = unsafe {
            let mut stat: libc::statfs = std::mem::zeroed();
            if libc::statfs(path.as_ptr(), &mut stat) != 0 {
                return false;
            }
            stat.f_type as i64
        };
        // ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs, overlayfs.
        [
            0xEF53,
            0x5846_5342,
            0x9123_683E,
            0x0102_1994,
            0xF2F5_2010,
            0x2FC1_2FC1,
            0x794C_7630,
        ]
        .contains(&kind)
    }
}

/// The watches of the roots, by the store's index file of each (`None`: not watchable).
#[cfg(target_os = "linux")]
static WATCHES: std::sync::Mutex<std::collections::BTreeMap<PathBuf, Option<Watch>>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Before a snapshot of `root` (its store index `key`): the last snapshot when nothing
/// changed since it was taken and `reuse` allows; otherwise `None`, and a full snapshot
/// begins (the watch made first when there is none, so it sees what the snapshot misses).
#[cfg(target_os = "linux")]
pub fn unchanged(
    key: &Path,
    root: &Path,
    skip: &[PathBuf],
    stamp: &[u8],
    reuse: bool,
) -> Option<Taken> {
    use crate::locks::Locked;
    let mut watches = WATCHES.locked();
    let slot = watches
        .entry(key.to_path_buf())
        .or_insert_with(|| Watch::new(root, skip.to_vec()));
    let watch = slot.as_mut()?;
    if watch.unchanged_since_taken(stamp) && reuse {
        return watch.taken.clone();
    }
    if watch.broken() {
        *slot = Watch::new(root, skip.to_vec());
    }
    if let Some(watch) = slot.as_mut() {
        watch.snapshot_begins();
    }
    None
}

/// After a full snapshot of `key`'s root: what the next one may take again.
#[cfg(target_os = "linux")]
pub fn taken(key: &Path, taken: Taken) {
    use crate::locks::Locked;
    if let Some(Some(watch)) = WATCHES.locked().get_mut(key) {
        watch.taken = Some(taken);
    }
}

/// Without inotify every snapshot is a full one.
#[cfg(not(target_os = "linux"))]
pub fn unchanged(_: &Path, _: &Path, _: &[PathBuf], _: &[u8], _: bool) -> Option<Taken> {
    None
}

#[cfg(not(target_os = "linux"))]
pub fn taken(_: &Path, _: Taken) {}

#[cfg(test)]
mod tests {
    use super::{max_dirs, MAX_DIRS};

    #[test]
    fn a_root_takes_at_most_a_quarter_of_the_users_watches() {
        assert_eq!(max_dirs(Some(8_192)), 2_048);
        assert_eq!(max_dirs(Some(1_000_000)), MAX_DIRS);
        assert_eq!(max_dirs(None), MAX_DIRS);
        assert_eq!(max_dirs(Some(0)), 0);
    }
}
