//! The journal of original settings, so every change can be reverted, even
//! from a later process after a crash or a dropped SSH session.
//!
//! One JSON file per device in `/run/blktune/` (tmpfs: it dies with the reboot
//! that also resets sysfs). An entry is written once, before the first change
//! to a device, atomically (temp file, fsync, link or rename), and dropped by
//! the one revert policy ([`Journal::forget_if_reverted`]). It records the
//! boot id and the device's `diskseq`, so an entry for a device that was
//! re-created since is recognised as stale.
//!
//! The journal belongs to the tree it describes ([`Journal::for_root`]): the
//! real `/sys` journals in `/run/blktune`, a fake tree given with
//! `--sysfs-root` inside itself, so a captured tree never reads or writes
//! the real journal.
//!
//! Nothing in the directory is trusted blindly: the directory must be owned
//! by root or the current user and not writable by group or others, and is
//! opened without following a symlink; every file in it is opened relative
//! to that directory with `O_NOFOLLOW` and checked (a regular file of the
//! same owners, this format's version, the device its name says). Anything
//! else is an error naming the path, and the caller changes nothing.
//!
//! Every change to a device holds the device's lock ([`Journal::lock`]: an
//! exclusive `flock(2)` on `.<device>.lock` in the directory) from the
//! journal read to the last read-back, so two blktune processes (or the TUI's
//! worker and its shoot-out) never interleave their writes or lose an original.

use crate::device::{BlockDevice, QueueSettings};
use crate::os::{SysRoot, is_plausible_device_name};
use crate::tuner::Settings;
use nix::errno::Errno;
use nix::fcntl::{AtFlags, Flock, FlockArg, OFlag, openat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};
use nix::unistd::{UnlinkatFlags, linkat, unlinkat};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Version of the journal file format.
pub const JOURNAL_VERSION: u32 = 1;

/// Where the journal of the real `/sys` lives unless told otherwise.
pub const DEFAULT_DIR: &str = "/run/blktune";

/// Environment variable that moves the journal (tests, unusual hosts). It
/// wins over [`Journal::for_root`]'s choice: whoever sets it chose the place.
pub const DIR_ENV: &str = "BLKTUNE_JOURNAL_DIR";

/// The journal of a fake tree: this directory inside its sysfs root.
pub const TREE_DIR: &str = ".blktune-journal";

/// How long a change waits for another holder of the device's lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Entries are small; anything bigger than this is not one of ours.
const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// The original settings of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub version: u32,
    pub device: String,
    pub major: u32,
    pub minor: u32,
    #[serde(default)]
    pub diskseq: Option<u64>,
    #[serde(default)]
    pub boot_id: Option<String>,
    /// Seconds since the Unix epoch when the entry was written.
    pub saved_at: f64,
    pub original: Settings,
}

impl JournalEntry {
    /// Why this entry no longer describes the device now called by its name
    /// (so applying it would put another device's settings on this one), or
    /// `None` when it still does. `current` is `None` when the device is gone;
    /// `boot_id` is the running kernel's.
    pub fn stale_reason(
        &self,
        current: Option<&BlockDevice>,
        boot_id: Option<&str>,
    ) -> Option<&'static str> {
        self.stale_for(current.map(DeviceId::from), boot_id)
    }

    /// [`JournalEntry::stale_reason`] against the device's identity only
    /// (what the tuner reads, instead of everything about the device).
    pub fn stale_for(
        &self,
        current: Option<DeviceId>,
        boot_id: Option<&str>,
    ) -> Option<&'static str> {
        let Some(d) = current else {
            return Some("the device is gone");
        };
        if let (Some(saved), Some(now)) = (self.boot_id.as_deref(), boot_id)
            && saved != now
        {
            return Some("it was saved before the last reboot");
        }
        if let (Some(saved), Some(now)) = (self.diskseq, d.diskseq)
            && saved != now
        {
            return Some("the device was re-created since (diskseq changed)");
        }
        if (d.major, d.minor) != (self.major, self.minor) {
            return Some("the device number changed");
        }
        None
    }

    /// For a stale entry: may settings blktune wrote to the earlier device of
    /// this name still be in force on the device there now? Yes when it was
    /// re-created in this boot (a loop device keeps its scheduler and
    /// nr_requests across detach and attach); no when it is gone or the
    /// machine rebooted since.
    pub fn may_linger(&self, current: Option<&BlockDevice>, boot_id: Option<&str>) -> bool {
        let rebooted = matches!(
            (self.boot_id.as_deref(), boot_id),
            (Some(saved), Some(now)) if saved != now
        );
        current.is_some() && !rebooted
    }

    /// The journalled values that `now` does not have, as `name journalled→now`
    /// (empty: the device is exactly as journalled).
    pub fn differences(&self, now: &QueueSettings) -> Vec<String> {
        let o = &self.original;
        let mut out = Vec::new();
        let mut check = |name: &str, want: Option<&str>, got: Option<&str>| {
            if let Some(w) = want
                && got.map(str::trim) != Some(w.trim())
            {
                out.push(format!("{name} {w}→{}", got.unwrap_or("-").trim()));
            }
        };
        let active = now.scheduler.as_ref().map(|s| s.active.as_str());
        check("scheduler", o.scheduler.as_deref(), active);
        for (k, v) in &o.tunables {
            check(k, Some(v), now.tunables.get(k).map(String::as_str));
        }
        let n = |v: Option<u64>| v.map(|n| n.to_string());
        check(
            "nr_requests",
            n(o.nr_requests).as_deref(),
            n(now.nr_requests).as_deref(),
        );
        check(
            "read_ahead_kb",
            n(o.read_ahead_kb).as_deref(),
            n(now.read_ahead_kb).as_deref(),
        );
        out
    }
}

/// Who a device is: its number and incarnation, what an entry is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceId {
    pub major: u32,
    pub minor: u32,
    /// `None` on a kernel before 5.15.
    pub diskseq: Option<u64>,
}

impl From<&BlockDevice> for DeviceId {
    fn from(d: &BlockDevice) -> Self {
        Self {
            major: d.major,
            minor: d.minor,
            diskseq: d.diskseq,
        }
    }
}

/// What the revert policy did with a device's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// There was no entry.
    None,
    /// The device equals the journalled originals: the entry is gone.
    Dropped,
    /// The device still differs (these values, `journalled→now`): kept.
    Differs(Vec<String>),
}

/// The journal directory.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

/// An open, checked journal directory; every file is reached through it.
#[derive(Debug)]
struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// An `io::Error` of kind `InvalidData` saying `path: why`.
fn refused(path: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    )
}

/// An OS error with the path it concerns in its message (its kind kept).
fn os_err(path: &Path, e: Errno) -> io::Error {
    let e = io::Error::from(e);
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Is `uid` an owner blktune trusts: root or the user running it?
fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// Why a file or directory with this status is not trusted, if it is not.
fn untrusted(st: &FileStat, kind: SFlag, what: &str) -> Option<String> {
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
fn temp_name(device: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(".{device}.json.tmp{}.{n}.{nanos:x}", std::process::id())
}

impl Dir {
    fn at(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Open `name` in this directory for reading, without following a symlink,
    /// and check it is a trusted regular file.
    fn open_trusted(&self, name: &str) -> io::Result<Option<File>> {
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
    fn write_temp(&self, device: &str, bytes: &[u8]) -> io::Result<String> {
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

    fn sync(&self) -> io::Result<()> {
        nix::unistd::fsync(&self.fd).map_err(|e| os_err(&self.path, e))
    }

    fn unlink(&self, name: &str) -> io::Result<()> {
        match unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(os_err(&self.at(name), e)),
        }
    }

    /// Every name in the directory (read through the checked path: the
    /// files themselves are opened through the descriptor).
    fn names(&self) -> io::Result<Vec<String>> {
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
}

impl Journal {
    /// A journal in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The journal of the tree `root` describes: `$BLKTUNE_JOURNAL_DIR` when
    /// set; else `/run/blktune` for the real `/sys` and `/proc`; else
    /// [`TREE_DIR`] inside the given sysfs root, so a fake tree never reads or
    /// writes the real journal. (With the real `/sys` but another `/proc`
    /// that is `/sys/.blktune-journal`, which cannot be made: changes are
    /// refused, as they would go to real devices against a fake `/proc`.)
    pub fn for_root(root: &SysRoot) -> Self {
        Self::choose(std::env::var_os(DIR_ENV).map(PathBuf::from), root)
    }

    /// Where [`Journal::for_root`] puts the journal of `root` when
    /// `$BLKTUNE_JOURNAL_DIR` is not set.
    pub fn default_for(root: &SysRoot) -> Self {
        Self::choose(None, root)
    }

    fn choose(env: Option<PathBuf>, root: &SysRoot) -> Self {
        match env {
            Some(dir) if !dir.as_os_str().is_empty() => Self::new(dir),
            _ if root.is_live() => Self::new(DEFAULT_DIR),
            _ => Self::new(root.sysfs().join(TREE_DIR)),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Open and check the directory; `None` when it does not exist and
    /// `create` is false. A symlink in its place is refused (even a
    /// dangling one: it must not turn journalling off).
    fn open_dir(&self, create: bool) -> io::Result<Option<Dir>> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let path = &self.dir;
        let open = || nix::fcntl::open(path.as_path(), flags, Mode::empty());
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
            path: path.clone(),
        }))
    }

    /// The entry file name of a device. Names that are not plausible kernel
    /// names (`../x`, `a/b`) are refused, so no input reaches a file outside
    /// the journal.
    fn file_name(device: &str) -> io::Result<String> {
        if !is_plausible_device_name(device) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{}' is not a device name", device.escape_debug()),
            ));
        }
        Ok(format!("{device}.json"))
    }

    /// The entry of a device, if any, checked: a trusted regular file (not a
    /// symlink), this format's version, and the device its name says.
    pub fn load(&self, device: &str) -> io::Result<Option<JournalEntry>> {
        let name = Self::file_name(device)?;
        let Some(dir) = self.open_dir(false)? else {
            return Ok(None);
        };
        Self::load_in(&dir, device, &name)
    }

    fn load_in(dir: &Dir, device: &str, name: &str) -> io::Result<Option<JournalEntry>> {
        let path = dir.at(name);
        let Some(mut f) = dir.open_trusted(name)? else {
            return Ok(None);
        };
        let mut text = String::new();
        Read::by_ref(&mut f)
            .take(MAX_ENTRY_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        // The version first, so a newer format is named as such, not as bad JSON.
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| refused(&path, format!("not a journal entry ({e})")))?;
        match v.get("version").and_then(serde_json::Value::as_u64) {
            Some(n) if n == u64::from(JOURNAL_VERSION) => {}
            Some(n) => {
                return Err(refused(
                    &path,
                    format!("format version {n}, this blktune reads version {JOURNAL_VERSION}"),
                ));
            }
            None => return Err(refused(&path, "not a journal entry (no version)")),
        }
        let e: JournalEntry = serde_json::from_value(v)
            .map_err(|e| refused(&path, format!("not a journal entry ({e})")))?;
        if e.device != device {
            return Err(refused(
                &path,
                format!("names device '{}', not '{device}'", e.device.escape_debug()),
            ));
        }
        Ok(Some(e))
    }

    /// Write `entry` unless the device already has one (the first original
    /// wins: a second change must not overwrite the true original).
    /// Returns whether it wrote. Two processes racing for the same device
    /// cannot both win: the entry is published with `link(2)`, which never
    /// replaces an existing file.
    pub fn save_if_absent(&self, entry: &JournalEntry) -> io::Result<bool> {
        let name = Self::file_name(&entry.device)?;
        self.publish(entry, |dir, tmp| {
            let r = linkat(&dir.fd, tmp, &dir.fd, name.as_str(), AtFlags::empty());
            match r {
                Ok(()) => Ok(true),
                Err(Errno::EEXIST) => Ok(false),
                Err(e) => Err(os_err(&dir.at(&name), e)),
            }
        })
    }

    /// Replace a stale entry (see [`JournalEntry::stale_reason`]) with `entry`,
    /// atomically (temp file, fsync, rename).
    pub fn replace(&self, entry: &JournalEntry) -> io::Result<()> {
        let name = Self::file_name(&entry.device)?;
        self.publish(entry, |dir, tmp| {
            renameat(&dir.fd, tmp, &dir.fd, name.as_str()).map_err(|e| os_err(&dir.at(&name), e))
        })
    }

    /// Write `entry` to a fsynced temp file in the journal directory, hand it
    /// to `put` (link or rename into place), then fsync the directory. The
    /// temp file is removed whatever happens (after a rename it is gone).
    fn publish<T>(
        &self,
        entry: &JournalEntry,
        put: impl FnOnce(&Dir, &str) -> io::Result<T>,
    ) -> io::Result<T> {
        let json = serde_json::to_vec_pretty(entry).map_err(io::Error::other)?;
        let Some(dir) = self.open_dir(true)? else {
            return Err(refused(&self.dir, "cannot be created"));
        };
        let tmp = dir.write_temp(&entry.device, &json)?;
        let out = put(&dir, &tmp);
        let _ = dir.unlink(&tmp);
        let out = out?;
        dir.sync()?;
        Ok(out)
    }

    /// Every entry, sorted by device. Unreadable or refused files are
    /// reported, not skipped silently.
    pub fn list(&self) -> io::Result<Vec<Result<JournalEntry, (String, io::Error)>>> {
        let Some(dir) = self.open_dir(false)? else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = dir
            .names()?
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .filter_map(|n| {
                let r = Self::file_name(&n).and_then(|file| Self::load_in(&dir, &n, &file));
                match r {
                    Ok(Some(e)) => Some(Ok(e)),
                    Ok(None) => None,
                    Err(e) => Some(Err((n, e))),
                }
            })
            .collect())
    }

    /// Remove a device's entry.
    pub fn remove(&self, device: &str) -> io::Result<()> {
        let name = Self::file_name(device)?;
        let Some(dir) = self.open_dir(false)? else {
            return Ok(());
        };
        dir.unlink(&name)?;
        dir.sync()
    }

    /// The one revert policy: **a device's entry is dropped when the device's
    /// settings equal the journalled originals after a revert** (any restore
    /// of earlier settings: `blktune revert`, the TUI's `u` and `U`,
    /// `--revert-on-exit`, the shoot-out's restore, a rolled-back change).
    /// Then nothing is left to revert, so `revert` and `export` no longer
    /// name the device. When it still differs (an undo back to a state that
    /// was itself a change, or a value the kernel would not take back) the
    /// entry stays, so the true original can still be put back. Call it with
    /// the device's lock held and `now` read after the last write.
    pub fn forget_if_reverted(&self, device: &str, now: &QueueSettings) -> io::Result<Kept> {
        let Some(entry) = self.load(device)? else {
            return Ok(Kept::None);
        };
        let differs = entry.differences(now);
        if !differs.is_empty() {
            return Ok(Kept::Differs(differs));
        }
        self.remove(device)?;
        Ok(Kept::Dropped)
    }

    /// Take the device's lock (see the module doc), waiting up to `wait`
    /// for another holder. Leftover temp files of a killed run of this
    /// device are removed once it is held (no live writer can own them).
    pub fn lock(&self, device: &str, wait: Duration) -> Result<DeviceLock, LockError> {
        Self::file_name(device).map_err(LockError::Io)?;
        let dir = self.open_dir(true).map_err(LockError::Io)?;
        let Some(dir) = dir else {
            return Err(LockError::Io(refused(&self.dir, "cannot be created")));
        };
        let name = format!(".{device}.lock");
        let path = dir.at(&name);
        let deadline = Instant::now() + wait;
        let flags = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        loop {
            let fd = openat(
                &dir.fd,
                name.as_str(),
                flags,
                Mode::from_bits_truncate(0o600),
            )
            .map_err(|e| match e {
                Errno::ELOOP => LockError::Io(refused(&path, "is a symbolic link")),
                e => LockError::Io(os_err(&path, e)),
            })?;
            let st = fstat(&fd).map_err(|e| LockError::Io(os_err(&path, e)))?;
            if let Some(why) = untrusted(&st, SFlag::S_IFREG, "regular file") {
                return Err(LockError::Io(refused(&path, why)));
            }
            match Flock::lock(File::from(fd), FlockArg::LockExclusiveNonblock) {
                Ok(mut held) => {
                    // The holder before us may have unlinked the file before
                    // we locked it: then the lock is on a dead inode; retry.
                    let same = fstatat(&dir.fd, name.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                        .is_ok_and(|now| (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino));
                    if !same {
                        continue;
                    }
                    let pid = format!("{}\n", std::process::id());
                    let _ = held
                        .set_len(0)
                        .and_then(|()| held.rewind())
                        .and_then(|()| held.write_all(pid.as_bytes()));
                    let lock = DeviceLock {
                        file: Some(held),
                        dir,
                        name,
                        device: device.to_string(),
                    };
                    lock.clean_temps();
                    return Ok(lock);
                }
                Err((_, Errno::EWOULDBLOCK)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err((mut f, Errno::EWOULDBLOCK)) => {
                    let mut text = String::new();
                    let _ = Read::by_ref(&mut f).take(32).read_to_string(&mut text);
                    return Err(LockError::Busy {
                        device: device.to_string(),
                        pid: text.trim().parse().ok(),
                        path,
                    });
                }
                Err((_, e)) => return Err(LockError::Io(os_err(&path, e))),
            }
        }
    }
}

/// Why a device's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process (or another task of this one) holds it.
    #[error("'{device}' is being changed by {}; nothing was changed: try again when it has finished (lock: {})", holder(*.pid), .path.display())]
    Busy {
        device: String,
        pid: Option<u32>,
        path: PathBuf,
    },
    /// The journal directory or the lock file cannot be used.
    #[error("{0}")]
    Io(io::Error),
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(p) if p == std::process::id() => {
            format!("this blktune (pid {p}: its shoot-out or another change)")
        }
        Some(p) => format!("another blktune (pid {p})"),
        None => "another blktune".to_string(),
    }
}

/// A device's lock, held until dropped. The lock file is removed while
/// still held, so the directory keeps no lock files; a waiter that had
/// opened it notices (the inode is gone) and takes a fresh one.
#[derive(Debug)]
pub struct DeviceLock {
    file: Option<Flock<File>>,
    dir: Dir,
    name: String,
    device: String,
}

impl DeviceLock {
    /// The device it locks.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// Remove `.<device>.json.tmp*` left by a run that was killed between
    /// writing its temp file and publishing it.
    fn clean_temps(&self) {
        let prefix = format!(".{}.json.tmp", self.device);
        if let Ok(names) = self.dir.names() {
            for n in names.iter().filter(|n| n.starts_with(&prefix)) {
                let _ = self.dir.unlink(n);
            }
        }
    }
}

impl Drop for DeviceLock {
    fn drop(&mut self) {
        let _ = unlinkat(&self.dir.fd, self.name.as_str(), UnlinkatFlags::NoRemoveDir);
        // Closing the file releases the lock.
        drop(self.file.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dev: &str, nr: u64) -> JournalEntry {
        JournalEntry {
            version: JOURNAL_VERSION,
            device: dev.into(),
            major: 7,
            minor: 0,
            diskseq: Some(9),
            boot_id: None,
            saved_at: 0.0,
            original: Settings {
                scheduler: Some("none".into()),
                nr_requests: Some(nr),
                ..Settings::default()
            },
        }
    }

    #[test]
    fn first_original_wins_and_remove_clears() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        assert!(j.save_if_absent(&entry("loop0", 128)).unwrap());
        assert!(!j.save_if_absent(&entry("loop0", 64)).unwrap());
        assert_eq!(
            j.load("loop0").unwrap().unwrap().original.nr_requests,
            Some(128)
        );
        assert_eq!(j.list().unwrap().len(), 1);
        j.remove("loop0").unwrap();
        assert!(j.load("loop0").unwrap().is_none());
        j.remove("loop0").unwrap();
        // no temp files are left behind
        assert_eq!(fs::read_dir(dir.path().join("j")).unwrap().count(), 0);
    }

    #[test]
    fn corrupt_entries_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("sda.json"), "{not json").unwrap();
        let j = Journal::new(dir.path());
        let l = j.list().unwrap();
        assert!(matches!(&l[0], Err((n, _)) if n == "sda"));
    }

    #[test]
    fn path_like_names_never_reach_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        std::fs::write(dir.path().join("x.json"), "{}").unwrap();
        for bad in ["../x", "a/b", "..", "", "x\n"] {
            assert!(j.load(bad).is_err(), "{bad:?}");
            assert!(j.remove(bad).is_err(), "{bad:?}");
            assert!(j.save_if_absent(&entry(bad, 1)).is_err(), "{bad:?}");
        }
        assert!(dir.path().join("x.json").exists());
    }

    #[test]
    fn stale_entries_are_recognised() {
        use crate::fake::{FakeDisk, FakeTree};
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        let mut d = FakeDisk::new("loop0").dev(7, 0);
        d.diskseq = Some(9);
        t.add(&d).unwrap();
        let root = t.root();
        let dev = crate::device::BlockDevice::read(&root, &root.device("loop0").unwrap());
        let mut e = entry("loop0", 128);
        e.boot_id = Some("b1".into());
        assert_eq!(e.stale_reason(Some(&dev), Some("b1")), None);
        assert_eq!(e.stale_reason(Some(&dev), None), None);
        assert!(e.stale_reason(None, Some("b1")).unwrap().contains("gone"));
        assert!(
            e.stale_reason(Some(&dev), Some("b2"))
                .unwrap()
                .contains("reboot")
        );
        assert!(!e.may_linger(None, Some("b1")), "gone");
        assert!(!e.may_linger(Some(&dev), Some("b2")), "rebooted");
        e.diskseq = Some(8);
        assert!(e.may_linger(Some(&dev), Some("b1")), "re-created");
        assert!(
            e.stale_reason(Some(&dev), Some("b1"))
                .unwrap()
                .contains("diskseq")
        );
        e.diskseq = None;
        e.minor = 5;
        assert!(
            e.stale_reason(Some(&dev), Some("b1"))
                .unwrap()
                .contains("number")
        );
    }

    #[test]
    fn replace_overwrites_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        j.save_if_absent(&entry("sda", 128)).unwrap();
        j.replace(&entry("sda", 64)).unwrap();
        assert_eq!(
            j.load("sda").unwrap().unwrap().original.nr_requests,
            Some(64)
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    fn chmod(p: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn is_root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    /// The error's message, which must name `path`.
    fn names_path(e: &io::Error, path: &Path) -> String {
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
        msg
    }

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

    #[test]
    fn a_killed_runs_temp_file_never_blocks_a_save_and_is_cleaned_under_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        // What a killed run with our pid (pid reuse) would have left, in the
        // old naming and in the new one.
        let old = dir
            .path()
            .join(format!(".loop1.json.tmp{}", std::process::id()));
        fs::write(&old, "{").unwrap();
        let new = dir.path().join(temp_name("loop1"));
        fs::write(&new, "{").unwrap();
        assert!(j.save_if_absent(&entry("loop1", 1)).unwrap());
        assert!(j.load("loop1").unwrap().is_some());
        let lock = j.lock("loop1", Duration::ZERO).unwrap();
        assert!(!old.exists() && !new.exists(), "temps cleaned");
        drop(lock);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["loop1.json"], "no temp or lock file left");
    }

    #[test]
    fn a_held_lock_makes_a_second_taker_wait_then_name_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        let held = j.lock("sda", Duration::ZERO).unwrap();
        assert_eq!(held.device(), "sda");
        let t = Instant::now();
        let e = j.lock("sda", Duration::from_millis(200)).unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(200), "it waited");
        let msg = e.to_string();
        assert!(
            matches!(&e, LockError::Busy { pid: Some(p), .. } if *p == std::process::id()),
            "{msg}"
        );
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains("nothing was changed"), "{msg}");
        // Another device is not blocked.
        drop(j.lock("sdb", Duration::ZERO).unwrap());
        // A waiter gets the lock once the holder lets go.
        let j2 = j.clone();
        let waiter = std::thread::spawn(move || j2.lock("sda", Duration::from_secs(10)).map(drop));
        std::thread::sleep(Duration::from_millis(100));
        drop(held);
        waiter.join().unwrap().unwrap();
        assert_eq!(
            fs::read_dir(j.dir()).unwrap().count(),
            0,
            "no lock file left"
        );
    }

    #[test]
    fn many_takers_never_hold_one_lock_together() {
        use std::sync::atomic::AtomicUsize;
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        let inside = std::sync::Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (j, inside) = (j.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let l = j.lock("sda", Duration::from_secs(30)).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(l);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn the_policy_drops_an_entry_only_when_the_device_is_back_at_the_originals() {
        use crate::device::SchedulerState;
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        let q = |active: &str, nr: u64| QueueSettings {
            scheduler: Some(SchedulerState {
                active: active.into(),
                available: vec!["none".into(), "kyber".into()],
            }),
            nr_requests: Some(nr),
            ..QueueSettings::default()
        };
        assert_eq!(
            j.forget_if_reverted("sda", &q("none", 128)).unwrap(),
            Kept::None
        );
        j.save_if_absent(&entry("sda", 128)).unwrap();
        assert_eq!(
            j.forget_if_reverted("sda", &q("kyber", 128)).unwrap(),
            Kept::Differs(vec!["scheduler none→kyber".into()])
        );
        assert_eq!(
            j.forget_if_reverted("sda", &q("none", 64)).unwrap(),
            Kept::Differs(vec!["nr_requests 128→64".into()])
        );
        assert!(j.load("sda").unwrap().is_some());
        assert_eq!(
            j.forget_if_reverted("sda", &q("none", 128)).unwrap(),
            Kept::Dropped
        );
        assert!(j.load("sda").unwrap().is_none());
    }

    #[test]
    fn a_fake_tree_has_its_own_journal_and_the_variable_wins() {
        let live = SysRoot::default();
        assert_eq!(Journal::choose(None, &live).dir(), Path::new(DEFAULT_DIR));
        let fake = SysRoot::new("/tmp/captured/sys", "/tmp/captured/proc");
        assert_eq!(
            Journal::choose(None, &fake).dir(),
            Path::new("/tmp/captured/sys/.blktune-journal")
        );
        // Only /proc faked: the journal is not the real one either.
        let half = SysRoot::new("/sys", "/tmp/captured/proc");
        assert_ne!(Journal::choose(None, &half).dir(), Path::new(DEFAULT_DIR));
        assert_eq!(
            Journal::choose(Some("/tmp/j".into()), &fake).dir(),
            Path::new("/tmp/j")
        );
        assert_eq!(
            Journal::choose(Some("".into()), &live).dir(),
            Path::new(DEFAULT_DIR)
        );
    }
}
