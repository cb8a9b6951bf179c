//! The checked journal directory: opened without following a symlink and
//! trusted only when root or the current user owns it and nobody else may
//! write it; every file in it is reached through its descriptor.
//!
//! Entries are written here, not with [`crate::atomic_file`] (the one writer
//! for files at a path the user names), which does not fit: it works on
//! paths, re-resolving the directory for the temp file, the link or rename
//! and the fsync, and checks neither the directory's owner nor its mode. The
//! journal checks its directory once (owner, mode, no symlink) and then works
//! only relative to that open descriptor (`openat` with `O_NOFOLLOW`,
//! `linkat` for no-clobber, `renameat`, `unlinkat`), so a directory swapped
//! for a symlink after the check is never written through; and its temp
//! names (`.<device>.json.tmp*`) are the ones the device's lock cleans up
//! after a killed run.

use super::{Journal, MAX_ENTRY_BYTES};
use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// An open, checked journal directory; every file is reached through it.
#[derive(Debug)]
pub(super) struct Dir {
    pub(super) fd: OwnedFd,
    pub(super) path: PathBuf,
}

/// An `io::Error` of kind `InvalidData` saying `path: why`.
pub(super) fn refused(path: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    )
}

/// An OS error with the path it concerns in its message (its kind kept).
pub(super) fn os_err(path: &Path, errno: Errno) -> io::Error {
    let e = io::Error::from(errno);
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Is `uid` an owner blktune trusts: root or the user running it?
fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// Why a file or directory with this status is not trusted, if it is not.
pub(super) fn untrusted(st: &FileStat, kind: SFlag, what: &str) -> Option<String> {
    let fmt = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    if fmt != kind {
        return Some(format!("not a {what}"));
    }
    if !trusted_owner(st.st_uid) {
        return Some(format!(
            "owned by uid {}, not by root or the current user",
            st.st_uid
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Some(format!(
            "writable by group or others (mode {:o})",
            st.st_mode & 0o7777
        ));
    }
    None
}

/// A name for a temp file that no other run uses (pid, a counter, the time).
pub(super) fn temp_name(device: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(".{device}.json.tmp{}.{n}.{nanos:x}", std::process::id())
}

impl Dir {
    pub(super) fn at(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Open `name` in this directory for reading, without following a symlink,
    /// and check it is a trusted regular file.
    pub(super) fn open_trusted(&self, name: &str) -> io::Result<Option<File>> {
        let path = self.at(name);
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let fd = match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(Errno::ELOOP) => return Err(refused(&path, "is a symbolic link, not an entry")),
            Err(e) => return Err(os_err(&path, e)),
        };
        let st = fstat(&fd).map_err(|e| os_err(&path, e))?;
        if let Some(why) = untrusted(&st, SFlag::S_IFREG, "regular file") {
            return Err(refused(&path, why));
        }
        if st.st_size as u64 > MAX_ENTRY_BYTES {
            return Err(refused(&path, "too large for a journal entry"));
        }
        Ok(Some(File::from(fd)))
    }

    /// Write `bytes` to a new, fsynced temp file with a name no one else
    /// uses (`O_EXCL`, retried on a clash) and return that name.
    pub(super) fn write_temp(&self, device: &str, bytes: &[u8]) -> io::Result<String> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mut tries = 0;
        let (name, fd) = loop {
            let name = temp_name(device);
            match openat(
                &self.fd,
                name.as_str(),
                flags,
                Mode::from_bits_truncate(0o600),
            ) {
                Ok(fd) => break (name, fd),
                Err(Errno::EEXIST) if tries < 16 => tries += 1,
                Err(e) => return Err(os_err(&self.at(&name), e)),
            }
        };
        let mut f = File::from(fd);
        let r = f.write_all(bytes).and_then(|()| f.sync_all());
        if let Err(e) = r {
            let _ = unlinkat(&self.fd, name.as_str(), UnlinkatFlags::NoRemoveDir);
            return Err(e);
        }
        Ok(name)
    }

    pub(super) fn sync(&self) -> io::Result<()> {
        nix::unistd::fsync(&self.fd).map_err(|e| os_err(&self.path, e))
    }

    pub(super) fn unlink(&self, name: &str) -> io::Result<()> {
        match unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(os_err(&self.at(name), e)),
        }
    }

    /// Every name in the directory (read through the checked path: the
    /// files themselves are opened through the descriptor).
    pub(super) fn names(&self) -> io::Result<Vec<String>> {
        let here = fstat(&self.fd).map_err(|e| os_err(&self.path, e))?;
        let there = fs::symlink_metadata(&self.path)?;
        use std::os::unix::fs::MetadataExt;
        if (there.dev(), there.ino()) != (here.st_dev, here.st_ino) {
            return Err(refused(&self.path, "was replaced while in use"));
        }
        Ok(fs::read_dir(&self.path)?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect())
    }

    /// The devices with an entry here (`NAME.json`, hidden files left out:
    /// those are blktune's own temporaries), sorted.
    pub(super) fn json_stems(&self) -> io::Result<Vec<String>> {
        let mut stems: Vec<String> = self
            .names()?
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
            .collect();
        stems.sort();
        Ok(stems)
    }
}

impl Dir {
    /// Open and check the directory `path`; `None` when it does not exist and
    /// `create` is false. A symlink in its place is refused (even a
    /// dangling one: it must not turn journalling off).
    pub(super) fn open(path: &Path, create: bool) -> io::Result<Option<Dir>> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let open = || nix::fcntl::open(path, flags, Mode::empty());
        let fd = match open() {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => {
                if fs::symlink_metadata(path).is_ok() {
                    // A dangling symlink (or something that vanished and came back).
                    return Err(refused(path, "is a symbolic link, not a directory"));
                }
                if !create {
                    return Ok(None);
                }
                match fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(path)
                {
                    Ok(()) => {}
                    Err(e) => {
                        return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
                    }
                }
                open().map_err(|e| match e {
                    Errno::ELOOP | Errno::ENOTDIR => refused(path, "is not a directory"),
                    e => os_err(path, e),
                })?
            }
            Err(Errno::ELOOP) => return Err(refused(path, "is a symbolic link, not a directory")),
            Err(Errno::ENOTDIR) => {
                // O_NOFOLLOW on a symlink to a directory also lands here on some filesystems.
                let what = match fs::symlink_metadata(path) {
                    Ok(m) if m.file_type().is_symlink() => "is a symbolic link, not a directory",
                    _ => "is not a directory",
                };
                return Err(refused(path, what));
            }
            Err(e) => return Err(os_err(path, e)),
        };
        let st = fstat(&fd).map_err(|e| os_err(path, e))?;
        if let Some(why) = untrusted(&st, SFlag::S_IFDIR, "directory") {
            return Err(refused(path, format!("{why}; not trusted as a journal")));
        }
        Ok(Some(Dir {
            fd,
            path: path.to_path_buf(),
        }))
    }
}

impl Journal {
    /// Open and check the journal directory (see [`Dir::open`]).
    pub(super) fn open_dir(&self, create: bool) -> io::Result<Option<Dir>> {
        Dir::open(&self.dir, create)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{chmod, entry, is_root, names_path};
    use super::super::{JournalEntry, LockError};
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_directory_others_can_write_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        j.save_if_absent(&entry("sda", 128)).unwrap();
        chmod(dir.path(), 0o777);
        for e in [
            j.load("sda").unwrap_err(),
            j.list().unwrap_err(),
            j.save_if_absent(&entry("sdb", 1)).unwrap_err(),
            j.remove("sda").unwrap_err(),
            match j.lock("sda", Duration::ZERO).unwrap_err() {
                LockError::Io(e) => e,
                e => panic!("{e}"),
            },
        ] {
            let msg = names_path(&e, dir.path());
            assert!(msg.contains("writable by group or others"), "{msg}");
        }
        chmod(dir.path(), 0o770);
        assert!(j.load("sda").is_err(), "group-writable too");
        chmod(dir.path(), 0o700);
        assert!(j.load("sda").unwrap().is_some());
        assert!(!dir.path().join("sdb.json").exists());
    }

    #[test]
    fn a_directory_or_entry_of_another_user_is_refused() {
        if !is_root() {
            eprintln!("SKIPPED: needs root to give files away");
            return;
        }
        let nobody = nix::unistd::Uid::from_raw(65534);
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        j.save_if_absent(&entry("sda", 128)).unwrap();
        let file = dir.path().join("sda.json");
        nix::unistd::chown(&file, Some(nobody), None).unwrap();
        let msg = names_path(&j.load("sda").unwrap_err(), &file);
        assert!(msg.contains("owned by uid 65534"), "{msg}");
        let l = j.list().unwrap();
        assert!(matches!(&l[0], Err((n, _)) if n == "sda"), "{l:?}");
        nix::unistd::chown(&file, Some(nix::unistd::Uid::from_raw(0)), None).unwrap();
        nix::unistd::chown(dir.path(), Some(nobody), None).unwrap();
        let msg = names_path(&j.load("sda").unwrap_err(), dir.path());
        assert!(msg.contains("owned by uid 65534"), "{msg}");
    }

    #[test]
    fn entries_are_checked_symlinks_versions_and_names() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        // An entry planted as a symlink to a file with forged originals.
        let forged = dir.path().join("forged");
        fs::write(&forged, serde_json::to_vec(&entry("sda", 4)).unwrap()).unwrap();
        std::os::unix::fs::symlink(&forged, dir.path().join("sda.json")).unwrap();
        let msg = names_path(&j.load("sda").unwrap_err(), &dir.path().join("sda.json"));
        assert!(msg.contains("symbolic link"), "{msg}");
        // A newer format is named as such.
        let mut v = serde_json::to_value(entry("sdb", 1)).unwrap();
        v["version"] = 99.into();
        fs::write(dir.path().join("sdb.json"), v.to_string()).unwrap();
        let msg = names_path(&j.load("sdb").unwrap_err(), &dir.path().join("sdb.json"));
        assert!(msg.contains("version 99"), "{msg}");
        // An entry of another device under this one's name.
        fs::write(
            dir.path().join("sdc.json"),
            serde_json::to_vec(&entry("sdd", 1)).unwrap(),
        )
        .unwrap();
        let msg = names_path(&j.load("sdc").unwrap_err(), &dir.path().join("sdc.json"));
        assert!(msg.contains("'sdd'"), "{msg}");
        // Writable by others.
        fs::write(
            dir.path().join("sde.json"),
            serde_json::to_vec(&entry("sde", 1)).unwrap(),
        )
        .unwrap();
        chmod(&dir.path().join("sde.json"), 0o666);
        assert!(j.load("sde").is_err());
        // Not a regular file (a FIFO would block a plain open).
        nix::unistd::mkfifo(
            &dir.path().join("sdf.json"),
            Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let msg = names_path(&j.load("sdf").unwrap_err(), &dir.path().join("sdf.json"));
        assert!(msg.contains("not a regular file"), "{msg}");
        // Every one is reported by list, none skipped.
        let l = j.list().unwrap();
        assert_eq!(l.len(), 5, "{l:?}");
        assert!(l.iter().all(Result::is_err), "{l:?}");
        // And the forged one is neither followed nor replaced by a save.
        assert!(j.save_if_absent(&entry("sda", 128)).is_ok_and(|w| !w));
        assert_eq!(
            serde_json::from_slice::<JournalEntry>(&fs::read(&forged).unwrap()).unwrap(),
            entry("sda", 4)
        );
    }

    #[test]
    fn a_dangling_symlink_in_place_of_the_directory_is_an_error_not_an_empty_journal() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("blktune");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        let j = Journal::new(&link);
        for e in [
            j.load("sda").unwrap_err(),
            j.list().unwrap_err(),
            j.save_if_absent(&entry("sda", 1)).unwrap_err(),
        ] {
            let msg = names_path(&e, &link);
            assert!(msg.contains("symbolic link"), "{msg}");
        }
        assert!(!dir.path().join("nowhere").exists(), "nothing created");
        // A symlink to a real directory is refused too.
        fs::create_dir(dir.path().join("real")).unwrap();
        let link2 = dir.path().join("b2");
        std::os::unix::fs::symlink(dir.path().join("real"), &link2).unwrap();
        assert!(Journal::new(&link2).load("sda").is_err());
        // An absent directory is an empty journal, and is made on the first save.
        let j = Journal::new(dir.path().join("new"));
        assert!(j.load("sda").unwrap().is_none());
        assert!(j.list().unwrap().is_empty());
        assert!(j.save_if_absent(&entry("sda", 1)).unwrap());
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.path().join("new"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
