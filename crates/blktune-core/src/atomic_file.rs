//! The one way blktune creates or replaces a file at a path it is given
//! (exported rules, recordings): never through a symlink, never onto
//! something that is not a regular file, and never half-written. (Journal
//! entries are written relative to the journal's checked directory
//! descriptor instead: `journal/dir.rs` says why.)
//!
//! - A new file goes to a temp name in the target's directory (same
//!   filesystem), opened `O_CREAT|O_EXCL|O_NOFOLLOW`, so a planted name or
//!   symlink is never followed.
//! - Without `replace` it is moved into place by `link(2)`, which fails with
//!   EEXIST if the name exists (even as a dangling symlink): nothing existing
//!   is ever replaced.
//! - With `replace` an existing target must be a regular file (checked with
//!   `lstat`, so a symlink counts as a symlink) owned by the current user or
//!   root; then `rename(2)` replaces the directory entry in one step. The old
//!   inode is never opened or truncated, so a hard link or a file swapped in
//!   after the check is not written through either: at worst a name in the
//!   directory is replaced.
//!
//! On any failure the temp file is removed and the target is untouched.
//!
//! `-` is standard output, for every writer ([`is_stdio`]): nothing is
//! created, and `replace` does not apply. (Readers take `-` as standard
//! input the same way.)

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// What [`WriteError::NotReplaceable`] says after the reason.
pub const REPLACE_RULE: &str =
    "only a regular file of this user or root is ever replaced; nothing was written";

/// Why a file was not written. Messages name the path the caller gave.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The name exists and replacing was not asked for.
    #[error("'{}' already exists", .0.display())]
    Exists(PathBuf),
    /// The name exists but is not a file blktune may replace.
    #[error("'{}' {why}; {REPLACE_RULE}", path.display())]
    NotReplaceable { path: PathBuf, why: String },
    /// The path has no file name, or its directory is missing.
    #[error("'{}': {why}", path.display())]
    BadPath { path: PathBuf, why: String },
    #[error("'{}': {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl WriteError {
    fn io(path: &Path, source: io::Error) -> Self {
        WriteError::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// Is this a refusal of the caller's request (exit code 2), not an I/O failure?
    pub fn is_refusal(&self) -> bool {
        !matches!(self, WriteError::Io { .. })
    }
}

/// What a non-regular file is, for messages: `is a character device`.
fn kind_of(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "is a symbolic link"
    } else if t.is_dir() {
        "is a directory"
    } else if t.is_char_device() {
        "is a character device"
    } else if t.is_block_device() {
        "is a block device"
    } else if t.is_fifo() {
        "is a FIFO"
    } else if t.is_socket() {
        "is a socket"
    } else {
        "is not a regular file"
    }
}

/// Is this path `-`: standard output to a writer, standard input to a reader?
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// A duplicate of standard output's descriptor, as a `File` (for `-`).
fn stdout_file(path: &Path) -> Result<File, WriteError> {
    use std::os::fd::AsFd;
    let fd = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| WriteError::io(path, e))?;
    Ok(File::from(fd))
}

/// May `path` be written? `Ok` when it does not exist, or (with `replace`)
/// when it is a regular file owned by this user or root. Never follows a symlink.
pub fn check_target(path: &Path, replace: bool) -> Result<(), WriteError> {
    let m = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(WriteError::io(path, e)),
        Ok(m) => m,
    };
    if !m.file_type().is_file() {
        return Err(WriteError::NotReplaceable {
            path: path.to_owned(),
            why: kind_of(&m).to_owned(),
        });
    }
    if !replace {
        return Err(WriteError::Exists(path.to_owned()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if m.uid() != me && m.uid() != 0 {
        return Err(WriteError::NotReplaceable {
            path: path.to_owned(),
            why: format!("belongs to another user (uid {})", m.uid()),
        });
    }
    Ok(())
}

/// The directory `path` goes in, which must exist.
fn dir_of(path: &Path) -> Result<(PathBuf, String), WriteError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| WriteError::BadPath {
            path: path.to_owned(),
            why: "not a file name".into(),
        })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(WriteError::BadPath {
            path: path.to_owned(),
            why: format!(
                "the directory '{}' does not exist; create it first or choose another path",
                dir.display()
            ),
        });
    }
    Ok((dir, name.to_owned()))
}

/// A new, empty temp file beside the target: `.NAME.blktune-PID-NANOS.tmp`
/// (starts with `.` and does not end in `.rules`, so udevd ignores it). A
/// leftover of a killed run with the same name is skipped, never reused.
fn create_temp(dir: &Path, name: &str, mode: u32) -> io::Result<(PathBuf, File)> {
    let mut last = None;
    for attempt in 0..16u32 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(
            ".{name}.blktune-{}-{nanos}-{attempt}.tmp",
            std::process::id()
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(mode)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temp name")))
}

/// Move the temp file to `path`: `rename` when replacing (after
/// [`check_target`]), `link` otherwise (fails if the name exists).
fn place(tmp: &Path, path: &Path, replace: bool) -> Result<(), WriteError> {
    check_target(path, replace)?;
    if replace {
        fs::rename(tmp, path).map_err(|e| WriteError::io(path, e))
    } else {
        match fs::hard_link(tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Tell a planted symlink or device from a plain file.
                check_target(path, false)?;
                Err(WriteError::Exists(path.to_owned()))
            }
            Err(e) => Err(WriteError::io(path, e)),
        }
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Write `bytes` to `path` atomically, with permission `mode` (before the
/// umask); an existing regular file of ours is replaced only with `replace`.
/// `-` writes `bytes` to standard output instead.
pub fn write(path: &Path, bytes: &[u8], mode: u32, replace: bool) -> Result<(), WriteError> {
    if is_stdio(path) {
        let mut out = io::stdout().lock();
        return out
            .write_all(bytes)
            .and_then(|()| out.flush())
            .map_err(|e| WriteError::io(path, e));
    }
    let (dir, name) = dir_of(path)?;
    check_target(path, replace)?;
    let (tmp, mut f) = create_temp(&dir, &name, mode).map_err(|e| WriteError::io(path, e))?;
    let result = f
        .write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| WriteError::io(path, e))
        .and_then(|()| place(&tmp, path, replace));
    drop(f);
    // After rename the temp name is gone; after link (or a failure) it must go.
    let _ = fs::remove_file(&tmp);
    result?;
    sync_dir(&dir);
    Ok(())
}

/// Create `path` for a stream of writes (a recording) and return it open.
/// The rules are those of [`write()`]: a new name is created exclusively and
/// without following symlinks; with `replace` only a regular file of ours is
/// replaced, by a new file renamed over it (the old one is never truncated).
/// `-` is standard output (a duplicate of its descriptor).
pub fn create(path: &Path, mode: u32, replace: bool) -> Result<File, WriteError> {
    if is_stdio(path) {
        return stdout_file(path);
    }
    let (dir, name) = dir_of(path)?;
    check_target(path, replace)?;
    if !replace {
        // O_EXCL with O_CREAT never follows a symlink, even a dangling one.
        return match OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(mode)
            .open(path)
        {
            Ok(f) => Ok(f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                check_target(path, false)?;
                Err(WriteError::Exists(path.to_owned()))
            }
            Err(e) => Err(WriteError::io(path, e)),
        };
    }
    let (tmp, f) = create_temp(&dir, &name, mode).map_err(|e| WriteError::io(path, e))?;
    let result = place(&tmp, path, true);
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_dir(&dir);
    Ok(f)
}

/// Make the directory `path` (absolute) for files of this user, with
/// `mode` (0700 for a user's state directory, 0750 for root's), and check
/// it. The ancestors that exist are taken as the system resolves them (a
/// home under a symlinked `/home`); every component from the first missing
/// one on is made with `mkdirat` and opened again relative to its parent
/// with `O_NOFOLLOW`, so a symlink planted there is never followed; the
/// directory itself, made or found, must be a directory owned by this user
/// or root that no group or other may write (a recording names devices and
/// settings, and a directory others can write lets them swap its files).
pub fn private_dir(path: &Path, mode: u32) -> Result<(), WriteError> {
    use nix::errno::Errno;
    use nix::fcntl::{OFlag, open, openat};
    use nix::sys::stat::{Mode, fstat, mkdirat};
    let bad = |at: &Path, why: &str| WriteError::BadPath {
        path: at.to_owned(),
        why: why.to_owned(),
    };
    if !path.is_absolute() {
        return Err(bad(path, "not an absolute path"));
    }
    let mut names = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => names.push(n),
            // `..` would leave what was made and checked.
            Component::ParentDir | Component::Prefix(_) => {
                return Err(bad(path, "'..' is not accepted in a directory to make"));
            }
        }
    }
    if names.is_empty() {
        return Err(bad(path, "is the root directory"));
    }
    // The longest existing ancestor (never the directory itself).
    let mut at = PathBuf::from("/");
    let mut made_from = 0;
    while made_from + 1 < names.len() && at.join(names[made_from]).is_dir() {
        at.push(names[made_from]);
        made_from += 1;
    }
    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let os = |at: &Path, e: Errno| WriteError::io(at, io::Error::from(e));
    let mut fd = open(at.as_path(), dir_flags, Mode::empty()).map_err(|e| os(&at, e))?;
    for name in &names[made_from..] {
        at.push(name);
        match mkdirat(&fd, *name, Mode::from_bits_truncate(mode)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(os(&at, e)),
        }
        fd = match openat(&fd, *name, dir_flags | OFlag::O_NOFOLLOW, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ELOOP) => return Err(bad(&at, "is a symbolic link, not a directory")),
            Err(Errno::ENOTDIR) => {
                let what = match fs::symlink_metadata(&at) {
                    Ok(m) if m.file_type().is_symlink() => "is a symbolic link, not a directory",
                    _ => "is not a directory",
                };
                return Err(bad(&at, what));
            }
            Err(e) => return Err(os(&at, e)),
        };
    }
    let st = fstat(&fd).map_err(|e| os(path, e))?;
    let me = nix::unistd::geteuid().as_raw();
    if st.st_uid != me && st.st_uid != 0 {
        return Err(bad(
            path,
            &format!(
                "belongs to another user (uid {}); choose a directory of your own",
                st.st_uid
            ),
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(bad(
            path,
            &format!(
                "may be written by group or others (mode {:o}); choose a directory of your own",
                st.st_mode & 0o7777
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_new_files_and_replaces_only_with_replace() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.rules");
        write(&p, b"one\n", 0o644, false).unwrap();
        let e = write(&p, b"two\n", 0o644, false).unwrap_err();
        assert!(matches!(e, WriteError::Exists(_)), "{e}");
        assert_eq!(fs::read_to_string(&p).unwrap(), "one\n");
        write(&p, b"two\n", 0o644, true).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two\n");
        assert_eq!(entries(d.path()), ["a.rules"]);
    }

    #[test]
    fn a_fifo_a_symlink_or_a_directory_is_never_replaced() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, "keep\n").unwrap();
        let link = d.path().join("link");
        symlink(&victim, &link).unwrap();
        let dangling = d.path().join("dangling");
        symlink(d.path().join("nowhere"), &dangling).unwrap();
        let dir = d.path().join("dir");
        fs::create_dir(&dir).unwrap();
        for (p, why) in [
            (&fifo, "is a FIFO"),
            (&link, "is a symbolic link"),
            (&dangling, "is a symbolic link"),
            (&dir, "is a directory"),
        ] {
            for replace in [false, true] {
                let e = write(p, b"x", 0o644, replace).unwrap_err();
                assert!(e.to_string().contains(why), "{e}");
                let e = create(p, 0o644, replace).unwrap_err();
                assert!(e.to_string().contains(why), "{e}");
            }
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
        assert!(!d.path().join("nowhere").exists());
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(
            entries(d.path()),
            ["dangling", "dir", "fifo", "link", "victim"]
        );
    }

    #[test]
    fn create_replaces_by_rename_so_a_hard_link_keeps_its_content() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rec.ndjson");
        fs::write(&p, "old\n").unwrap();
        let other = d.path().join("other");
        fs::hard_link(&p, &other).unwrap();
        let mut f = create(&p, 0o644, true).unwrap();
        f.write_all(b"new\n").unwrap();
        drop(f);
        assert_eq!(fs::read_to_string(&p).unwrap(), "new\n");
        assert_eq!(fs::read_to_string(&other).unwrap(), "old\n");
        assert_eq!(entries(d.path()), ["other", "rec.ndjson"]);
        let e = create(&p, 0o644, false).unwrap_err();
        assert!(matches!(e, WriteError::Exists(_)), "{e}");
    }

    #[test]
    fn only_a_bare_dash_is_standard_output() {
        // `./-` is how a user names a file called `-`.
        assert!(is_stdio(Path::new("-")));
        assert!(!is_stdio(Path::new("./-")));
        assert!(!is_stdio(Path::new("/tmp/-")));
        assert!(!is_stdio(Path::new("--")));
    }

    #[test]
    fn a_missing_directory_is_named() {
        let d = tempfile::tempdir().unwrap();
        let q = d.path().join("missing/61.rules");
        let e = write(&q, b"x", 0o644, false).unwrap_err();
        assert!(matches!(e, WriteError::BadPath { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("'{}'", q.display())));
    }

    #[test]
    fn a_private_directory_is_made_with_its_mode_and_never_through_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // Every missing component is made, with the mode.
        let state = d.path().join("home/.local/state/blktune");
        private_dir(&state, 0o700).unwrap();
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&d.path().join("home/.local")), 0o700);
        // Found again: fine.
        private_dir(&state, 0o700).unwrap();
        // A symlink where the directory goes, to a real directory or
        // nowhere, is refused and nothing is made through it.
        let elsewhere = d.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let link = d.path().join("home/.local/state/link");
        symlink(&elsewhere, &link).unwrap();
        let dangling = d.path().join("home/.local/state/dangling");
        symlink(d.path().join("nowhere"), &dangling).unwrap();
        for p in [&link, &dangling] {
            let e = private_dir(p, 0o700).unwrap_err();
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        assert!(entries(&elsewhere).is_empty());
        assert!(!d.path().join("nowhere").exists());
        // A file in the way, a directory others may write, a relative path.
        let file = d.path().join("home/file");
        fs::write(&file, "x").unwrap();
        let e = private_dir(&file.join("sub"), 0o700).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        let open = d.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_dir(&open, 0o700).unwrap_err();
        assert!(e.to_string().contains("group or others (mode 777)"), "{e}");
        assert!(private_dir(Path::new("rel/dir"), 0o700).is_err());
        assert!(private_dir(&d.path().join("home/../x"), 0o700).is_err());
    }
}
