//! The journal of original settings, so every change can be reverted, even
//! from a later process after a crash or a dropped SSH session.
//!
//! One JSON file per device in `/run/blktune/` (tmpfs: it dies with the reboot
//! that also resets sysfs). An entry is written once, before the first change
//! to a device, atomically (temp file, fsync, rename), and removed when the
//! device is reverted. It records the boot id and the device's `diskseq`, so an
//! entry for a device that was re-created since is recognised as stale.

use crate::device::BlockDevice;
use crate::os::is_plausible_device_name;
use crate::tuner::Settings;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Version of the journal file format.
pub const JOURNAL_VERSION: u32 = 1;

/// Where the journal lives unless told otherwise.
pub const DEFAULT_DIR: &str = "/run/blktune";

/// Environment variable that moves the journal (tests, unusual hosts).
pub const DIR_ENV: &str = "BLKTUNE_JOURNAL_DIR";

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
}

impl JournalEntry {
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

    /// `$BLKTUNE_JOURNAL_DIR` or `/run/blktune`.
    pub fn from_env() -> Self {
        Self::new(
            std::env::var_os(DIR_ENV).map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from),
        )
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry file of a device. Names that are not plausible kernel names
    /// (`../x`, `a/b`) are refused, so no input reaches a file outside the journal.
    fn path(&self, device: &str) -> io::Result<PathBuf> {
        if !is_plausible_device_name(device) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{}' is not a device name", device.escape_debug()),
            ));
        }
        Ok(self.dir.join(format!("{device}.json")))
    }

    /// The entry of a device, if any.
    pub fn load(&self, device: &str) -> io::Result<Option<JournalEntry>> {
        match fs::read_to_string(self.path(device)?) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Write `entry` unless the device already has one (the first original
    /// wins: a second change must not overwrite the true original).
    /// Returns whether it wrote. Two processes racing for the same device
    /// cannot both win: the entry is published with `link(2)`, which never
    /// replaces an existing file.
    pub fn save_if_absent(&self, entry: &JournalEntry) -> io::Result<bool> {
        let path = self.path(&entry.device)?;
        if path.exists() {
            return Ok(false);
        }
        self.publish(entry, |tmp| match fs::hard_link(tmp, &path) {
            Ok(()) => fs::remove_file(tmp).map(|()| true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                fs::remove_file(tmp).map(|()| false)
            }
            Err(e) => Err(e),
        })
    }

    /// Replace a stale entry (see [`JournalEntry::stale_reason`]) with `entry`,
    /// atomically (temp file, fsync, rename).
    pub fn replace(&self, entry: &JournalEntry) -> io::Result<()> {
        let path = self.path(&entry.device)?;
        self.publish(entry, |tmp| fs::rename(tmp, &path))
    }

    /// Write `entry` to a fsynced temp file in the journal directory, hand it
    /// to `put` (link or rename into place), then fsync the directory. The
    /// temp file is removed if anything fails.
    fn publish<T>(
        &self,
        entry: &JournalEntry,
        put: impl FnOnce(&Path) -> io::Result<T>,
    ) -> io::Result<T> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let json = serde_json::to_vec_pretty(entry).map_err(io::Error::other)?;
        let tmp = self
            .dir
            .join(format!(".{}.json.tmp{}", entry.device, std::process::id()));
        let result = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&json)?;
            f.sync_all()?;
            let out = put(&tmp)?;
            fs::File::open(&self.dir)?.sync_all()?;
            Ok(out)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Every entry, sorted by device. Unreadable files are reported, not skipped silently.
    pub fn list(&self) -> io::Result<Vec<Result<JournalEntry, (String, io::Error)>>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .filter_map(|n| match self.load(&n) {
                Ok(Some(e)) => Some(Ok(e)),
                Ok(None) => None,
                Err(e) => Some(Err((n, e))),
            })
            .collect())
    }

    /// Remove a device's entry (after a successful revert).
    pub fn remove(&self, device: &str) -> io::Result<()> {
        match fs::remove_file(self.path(device)?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
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
}
