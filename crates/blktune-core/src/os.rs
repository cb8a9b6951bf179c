//! The one seam to the operating system.
//!
//! Every read and write of `/sys` and `/proc` goes through [`SysRoot`], which
//! carries the two root paths. Tests point it at fake trees in temp dirs; the
//! real roots are only the defaults. Nothing outside this module builds a
//! sysfs or procfs path by hand.
//!
//! Writes are limited to the whitelisted queue attributes in [`QueueAttr`], and
//! device names are [`DeviceName`]s, which can only be made from an entry that
//! exists under `<sysfs>/block`, so no user input can reach another path.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The sysfs and procfs roots every OS access goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    sysfs: PathBuf,
    procfs: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        Self::new("/sys", "/proc")
    }
}

/// A block device name that was found under `<sysfs>/block` (a whole device).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceName(String);

impl DeviceName {
    /// The name as the kernel spells it (`sda`, `nvme0n1`, `loop3`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Is `name` shaped like a kernel block device name? (No path tricks.)
///
/// Kernel names use letters, digits and `-_.:!+` (sysfs spells `/` as `!`,
/// e.g. `cciss!c0d0`). `.` and `..` alone are refused.
pub fn is_plausible_device_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:!+".contains(&b))
}

/// Is `name` shaped like an iosched tunable file name?
pub fn is_plausible_tunable_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The queue attributes blktune may ever write. Nothing else is writable.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueAttr {
    /// `queue/scheduler`
    Scheduler,
    /// `queue/nr_requests`
    NrRequests,
    /// `queue/read_ahead_kb`
    ReadAheadKb,
    /// `queue/iosched/<name>`; the name is checked by [`is_plausible_tunable_name`].
    Tunable(String),
}

impl QueueAttr {
    /// Path relative to the device directory, or `None` for a malformed tunable name.
    fn rel_path(&self) -> Option<String> {
        match self {
            QueueAttr::Scheduler => Some("queue/scheduler".into()),
            QueueAttr::NrRequests => Some("queue/nr_requests".into()),
            QueueAttr::ReadAheadKb => Some("queue/read_ahead_kb".into()),
            QueueAttr::Tunable(name) if is_plausible_tunable_name(name) => {
                Some(format!("queue/iosched/{name}"))
            }
            QueueAttr::Tunable(_) => None,
        }
    }

    /// The short label used in messages (`scheduler`, `nr_requests`, `iosched/read_expire`).
    pub fn label(&self) -> String {
        match self {
            QueueAttr::Scheduler => "scheduler".into(),
            QueueAttr::NrRequests => "nr_requests".into(),
            QueueAttr::ReadAheadKb => "read_ahead_kb".into(),
            QueueAttr::Tunable(name) => format!("iosched/{name}"),
        }
    }
}

impl SysRoot {
    /// A seam over the given sysfs and procfs roots.
    pub fn new(sysfs: impl Into<PathBuf>, procfs: impl Into<PathBuf>) -> Self {
        Self {
            sysfs: sysfs.into(),
            procfs: procfs.into(),
        }
    }

    /// The sysfs root (`/sys` on a real system).
    pub fn sysfs(&self) -> &Path {
        &self.sysfs
    }

    /// The procfs root (`/proc` on a real system).
    pub fn procfs(&self) -> &Path {
        &self.procfs
    }

    /// Is this the real machine (default roots)?
    pub fn is_live(&self) -> bool {
        self.sysfs == Path::new("/sys") && self.procfs == Path::new("/proc")
    }

    fn block_dir(&self) -> PathBuf {
        self.sysfs.join("block")
    }

    /// Names of every entry under `<sysfs>/block`, sorted.
    pub fn block_names(&self) -> io::Result<Vec<DeviceName>> {
        let mut names: Vec<DeviceName> = fs::read_dir(self.block_dir())?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| is_plausible_device_name(n))
            .map(DeviceName)
            .collect();
        names.sort();
        Ok(names)
    }

    /// Turn user input into a [`DeviceName`] if `<sysfs>/block/<name>` exists.
    pub fn device(&self, name: &str) -> Option<DeviceName> {
        if !is_plausible_device_name(name) {
            return None;
        }
        let dir = self.block_dir().join(name);
        dir.symlink_metadata().ok()?;
        Some(DeviceName(name.to_owned()))
    }

    /// The device directory (`<sysfs>/block/<dev>`), for messages and for udev.
    pub fn device_dir(&self, dev: &DeviceName) -> PathBuf {
        self.block_dir().join(dev.as_str())
    }

    /// Path of an attribute relative to a device directory. `rel` is a
    /// constant of this crate or a name that passed a plausibility check.
    fn dev_path(&self, dev: &DeviceName, rel: &str) -> PathBuf {
        self.device_dir(dev).join(rel)
    }

    /// Read a device attribute (`size`, `queue/scheduler`, `device/model`), trimmed.
    pub fn read_dev_attr(&self, dev: &DeviceName, rel: &str) -> io::Result<String> {
        debug_assert!(!rel.contains(".."), "relative paths are constants");
        Ok(fs::read_to_string(self.dev_path(dev, rel))?
            .trim()
            .to_owned())
    }

    /// Does a device attribute exist?
    pub fn dev_attr_exists(&self, dev: &DeviceName, rel: &str) -> bool {
        self.dev_path(dev, rel).exists()
    }

    /// Names inside a device sub-directory (`holders`, `slaves`, `queue/iosched`), sorted.
    pub fn list_dev_dir(&self, dev: &DeviceName, rel: &str) -> io::Result<Vec<String>> {
        let mut v: Vec<String> = fs::read_dir(self.dev_path(dev, rel))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        v.sort();
        Ok(v)
    }

    /// Sub-directories of the device directory that are partitions (have a `partition` file).
    pub fn partitions_of(&self, dev: &DeviceName) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.device_dir(dev)) else {
            return Vec::new();
        };
        let mut parts: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("partition").exists())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        parts.sort();
        parts
    }

    /// If `name` is a partition of some device, that device.
    pub fn parent_of_partition(&self, name: &str) -> Option<DeviceName> {
        if !is_plausible_device_name(name) {
            return None;
        }
        self.block_names()
            .ok()?
            .into_iter()
            .find(|d| self.device_dir(d).join(name).join("partition").exists())
    }

    /// The device directory and its parents in the device tree, nearest first,
    /// for udev's `ATTRS{}` lookups (udev(7): "the device and its parents").
    /// On real sysfs `<sysfs>/block/<dev>` links into `<sysfs>/devices/...`, so
    /// the parents are that path's ancestors; in a fake tree (a plain directory)
    /// they are the `device`, `device/device`, ... sub-directories.
    pub fn device_lineage(&self, dev: &DeviceName) -> Vec<PathBuf> {
        let dir = self.device_dir(dev);
        let (Ok(real), Ok(sys)) = (fs::canonicalize(&dir), fs::canonicalize(&self.sysfs)) else {
            return vec![dir];
        };
        let devices = sys.join("devices");
        if real.starts_with(&devices) {
            let mut v: Vec<PathBuf> = real
                .ancestors()
                .take_while(|p| *p != devices.as_path())
                .map(Path::to_path_buf)
                .collect();
            v.truncate(32);
            return v;
        }
        let mut v = vec![dir.clone()];
        let mut p = dir.join("device");
        while p.is_dir() && v.len() < 8 {
            v.push(p.clone());
            p = p.join("device");
        }
        v
    }

    /// Read an attribute in a directory returned by [`SysRoot::device_lineage`],
    /// trailing whitespace removed (as udev compares it). `attr` must be a
    /// plain relative path.
    pub fn read_lineage_attr(&self, dir: &Path, attr: &str) -> io::Result<String> {
        if attr.is_empty() || attr.starts_with('/') || attr.split('/').any(|c| c == "..") {
            return Err(bad_attr());
        }
        Ok(fs::read_to_string(dir.join(attr))?.trim_end().to_owned())
    }

    /// Absolute path of a queue attribute, or `None` for a malformed tunable name.
    pub fn queue_attr_path(&self, dev: &DeviceName, attr: &QueueAttr) -> Option<PathBuf> {
        attr.rel_path().map(|rel| self.dev_path(dev, &rel))
    }

    /// Read a whitelisted queue attribute, trimmed.
    pub fn read_queue_attr(&self, dev: &DeviceName, attr: &QueueAttr) -> io::Result<String> {
        let path = self.queue_attr_path(dev, attr).ok_or_else(bad_attr)?;
        Ok(fs::read_to_string(path)?.trim().to_owned())
    }

    /// Write a whitelisted queue attribute. Never creates a file.
    pub fn write_queue_attr(
        &self,
        dev: &DeviceName,
        attr: &QueueAttr,
        value: &str,
    ) -> io::Result<()> {
        let path = self.queue_attr_path(dev, attr).ok_or_else(bad_attr)?;
        // sysfs ignores O_TRUNC; a fake tree needs it so the file holds only the new value.
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .create(false)
            .open(path)?;
        // One write(2) call: sysfs takes the whole value from a single write.
        f.write_all(value.as_bytes())?;
        Ok(())
    }

    /// May this process write the attribute? (`access(2)`, so root passes.)
    pub fn can_write_queue_attr(&self, dev: &DeviceName, attr: &QueueAttr) -> bool {
        self.queue_attr_path(dev, attr)
            .is_some_and(|p| nix::unistd::access(&p, nix::unistd::AccessFlags::W_OK).is_ok())
    }

    /// `<proc>/diskstats`, whole.
    pub fn read_diskstats(&self) -> io::Result<String> {
        fs::read_to_string(self.procfs.join("diskstats"))
    }

    /// The target of a symlink under procfs (`self/ns/pid` -> `pid:[4026531836]`).
    pub fn read_proc_link(&self, rel: &str) -> io::Result<PathBuf> {
        debug_assert!(!rel.contains(".."), "relative paths are constants");
        fs::read_link(self.procfs.join(rel))
    }

    /// A file under procfs (`stat`, `uptime`, `sys/kernel/hostname`).
    pub fn read_proc(&self, rel: &str) -> io::Result<String> {
        debug_assert!(!rel.contains(".."), "relative paths are constants");
        fs::read_to_string(self.procfs.join(rel))
    }
}

fn bad_attr() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "malformed queue attribute name",
    )
}

/// Is this process running with root's effective uid?
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_path_tricks_are_refused() {
        for bad in ["", ".", "..", "../vda", "sda/queue", "a b", "x\0y", "sda\n"] {
            assert!(!is_plausible_device_name(bad), "{bad:?}");
        }
        for good in [
            "sda",
            "nvme0n1",
            "loop3",
            "dm-0",
            "cciss!c0d0",
            "md127",
            "mmcblk0",
        ] {
            assert!(is_plausible_device_name(good), "{good:?}");
        }
    }

    #[test]
    fn device_needs_an_entry_under_block() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("sys/block/sda/queue")).unwrap();
        fs::create_dir_all(dir.path().join("sys/vda")).unwrap();
        let root = SysRoot::new(dir.path().join("sys"), dir.path().join("proc"));
        assert!(root.device("sda").is_some());
        assert!(root.device("sdb").is_none());
        assert!(root.device("../vda").is_none());
        assert!(root.device("..").is_none());
    }

    #[test]
    fn tunable_paths_cannot_escape_iosched() {
        let root = SysRoot::new("/s", "/p");
        let dev = DeviceName("sda".into());
        assert_eq!(
            root.queue_attr_path(&dev, &QueueAttr::Tunable("read_expire".into())),
            Some(PathBuf::from("/s/block/sda/queue/iosched/read_expire"))
        );
        assert_eq!(
            root.queue_attr_path(&dev, &QueueAttr::Tunable("../../x".into())),
            None
        );
        assert_eq!(
            root.queue_attr_path(&dev, &QueueAttr::Tunable(String::new())),
            None
        );
    }

    #[test]
    fn writes_never_create_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("block/sda/queue")).unwrap();
        let root = SysRoot::new(dir.path(), dir.path());
        let dev = root.device("sda").unwrap();
        assert!(
            root.write_queue_attr(&dev, &QueueAttr::NrRequests, "64")
                .is_err()
        );
        assert!(!dir.path().join("block/sda/queue/nr_requests").exists());
    }
}
