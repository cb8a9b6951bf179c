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
//!
//! The files: this one holds the entries, the policy and the journal's
//! operations; `dir` the checked directory and the files reached through it;
//! `lock` the per-device `flock(2)`.

mod dir;
mod lock;

pub use lock::{DeviceLock, LockError};

use crate::device::{BlockDevice, QueueSettings};
use crate::os::{SysRoot, is_plausible_device_name};
use crate::wanted::Wanted;
use dir::{Dir, os_err, refused};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, renameat};
use nix::unistd::linkat;
use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    pub original: Wanted,
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
        if let Some(why) = implausible_original(&e.original) {
            return Err(refused(&path, why));
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
}

/// What an original read from sysfs can never look like: a scheduler name
/// that is not an identifier, a tunable whose name or value is not one the
/// kernel shows (a whole number). Such an entry was not written by blktune
/// and is not written to sysfs on its word.
fn implausible_original(w: &Wanted) -> Option<String> {
    if let Some(s) = w.scheduler.as_deref()
        && !crate::os::is_plausible_scheduler_name(s)
    {
        return Some(format!(
            "scheduler '{}' is not a scheduler's name",
            s.escape_debug()
        ));
    }
    for (k, v) in &w.tunables {
        if !crate::os::is_plausible_tunable_name(k) || !crate::sched::is_integer_text(v) {
            return Some(format!(
                "tunable '{}' = '{}' is not a tunable's name and number",
                k.escape_debug(),
                v.escape_debug()
            ));
        }
    }
    None
}

#[cfg(test)]
pub(super) mod test_support {
    use super::*;
    use std::fs;

    pub fn entry(dev: &str, nr: u64) -> JournalEntry {
        JournalEntry {
            version: JOURNAL_VERSION,
            device: dev.into(),
            major: 7,
            minor: 0,
            diskseq: Some(9),
            boot_id: None,
            saved_at: 0.0,
            original: Wanted {
                scheduler: Some("none".into()),
                nr_requests: Some(nr),
                ..Wanted::default()
            },
        }
    }

    pub fn chmod(p: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }

    pub fn is_root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    /// The error's message, which must name `path`.
    pub fn names_path(e: &io::Error, path: &Path) -> String {
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{entry, names_path};
    use super::*;
    use std::fs;

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

    /// An original sysfs could never have shown (a terminal escape as the
    /// scheduler, a word as a tunable's value) is refused, not written back.
    #[test]
    fn an_implausible_original_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        let mut e = entry("loop0", 128);
        e.original.scheduler = Some("\u{1b}[2J".into());
        j.save_if_absent(&e).unwrap();
        let err = j.load("loop0").unwrap_err();
        let msg = names_path(&err, &dir.path().join("j/loop0.json"));
        assert!(msg.contains("is not a scheduler's name"), "{msg}");
        assert!(!msg.contains('\u{1b}'), "{msg}");
        j.remove("loop0").unwrap();
        let mut e = entry("loop0", 128);
        e.original.scheduler = Some("mq-deadline".into());
        e.original.tunables = vec![("read_expire".into(), "500; rm".into())];
        j.save_if_absent(&e).unwrap();
        assert!(j.load("loop0").is_err());
        j.remove("loop0").unwrap();
        e.original.tunables = vec![("read_expire".into(), "500\n".into())];
        j.save_if_absent(&e).unwrap();
        assert!(j.load("loop0").unwrap().is_some());
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
