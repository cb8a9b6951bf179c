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
//!
//! By idea: [`names`] (which names may reach a path), [`queue_attr`] (the
//! whitelist of writable attributes), [`read`] (bounded, non-blocking reads
//! of a hostile tree), [`open_attr`] (attributes kept open for re-reads),
//! [`mapped`] (the kernel's BTF mapped: blktune's only unsafe code),
//! [`cgroup`] (the cgroup v2 tree, read-only: ids, paths, `io.pressure`).

pub mod cgroup;
mod mapped;
mod names;
mod open_attr;
mod queue_attr;
mod read;

pub(crate) use mapped::ImmutableFile;
pub use names::{
    DeviceName, is_plausible_device_name, is_plausible_scheduler_name, is_plausible_tunable_name,
};
pub use open_attr::{OpenAttr, Opened, spare_descriptors};
pub use queue_attr::{QueueAttr, QueueDir};

use crate::natural::natural_cmp;
use queue_attr::bad_attr;
pub use read::open_named_file;
use read::{open_nonblocking, read_attr, read_into};
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

    /// Names of every entry under `<sysfs>/block`, in natural order
    /// ([`natural_cmp`]: loop2 before loop10).
    pub fn block_names(&self) -> io::Result<Vec<DeviceName>> {
        let mut names: Vec<DeviceName> = fs::read_dir(self.block_dir())?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| is_plausible_device_name(n))
            .map(DeviceName)
            .collect();
        names.sort_by(|a, b| natural_cmp(&a.0, &b.0));
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
    /// A missing attribute is an `ENOENT` error: no existence check first.
    pub fn read_dev_attr(&self, dev: &DeviceName, rel: &str) -> io::Result<String> {
        debug_assert!(!rel.contains(".."), "relative paths are constants");
        Ok(read_attr(&self.dev_path(dev, rel))?.trim().to_owned())
    }

    /// A device's `diskseq`: the kernel's number of this disk, new each
    /// time a name is reused (a loop device re-attached). `None` on a
    /// kernel before 5.15, or when the file does not read as a number.
    pub fn read_diskseq(&self, dev: &DeviceName) -> Option<u64> {
        self.read_dev_attr(dev, "diskseq").ok()?.parse().ok()
    }

    /// A device's I/Os in flight now, reads and writes (`inflight`).
    pub fn read_inflight(&self, dev: &DeviceName) -> io::Result<crate::diskstats::InFlight> {
        self.read_dev_attr(dev, "inflight")?
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("inflight: {e}")))
    }

    /// A device's `size` in bytes (the file counts 512-byte sectors).
    pub fn read_size_bytes(&self, dev: &DeviceName) -> io::Result<u64> {
        let s = self.read_dev_attr(dev, "size")?;
        s.parse::<u64>()
            .map(|sectors| sectors.saturating_mul(512))
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "size is not a number"))
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
        // The kernel names partitions after their disk (`sda1`, `nvme0n1p1`,
        // `mmcblk0p2`), so only such directories are looked into: one stat
        // per partition, not one per attribute of the device.
        let mut parts: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.len() > dev.0.len() && n.starts_with(dev.as_str()))
            })
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
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
        Ok(read_attr(&dir.join(attr))?.trim_end().to_owned())
    }

    /// Absolute path of a queue attribute, or `None` for a malformed tunable name.
    pub fn queue_attr_path(&self, dev: &DeviceName, attr: &QueueAttr) -> Option<PathBuf> {
        attr.rel_path().map(|rel| self.dev_path(dev, &rel))
    }

    /// Read a whitelisted queue attribute, trimmed.
    pub fn read_queue_attr(&self, dev: &DeviceName, attr: &QueueAttr) -> io::Result<String> {
        let path = self.queue_attr_path(dev, attr).ok_or_else(bad_attr)?;
        Ok(read_attr(&path)?.trim().to_owned())
    }

    /// Open a device's `queue/` directory once, to read several of its
    /// attributes with short lookups ([`QueueDir::read`]) instead of walking
    /// `/sys/block/<dev>` (a symlink) for each.
    pub fn queue_dir(&self, dev: &DeviceName) -> io::Result<QueueDir> {
        use nix::fcntl::{OFlag, open};
        use nix::sys::stat::Mode;
        let fd = open(
            &self.dev_path(dev, "queue"),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(QueueDir { fd })
    }

    /// Open a whitelisted queue attribute to read it again and again
    /// ([`OpenAttr`]) where it can be kept open, else read it once.
    pub fn open_queue_attr(&self, dev: &DeviceName, attr: &QueueAttr) -> io::Result<Opened> {
        let path = self.queue_attr_path(dev, attr).ok_or_else(bad_attr)?;
        OpenAttr::open(open_nonblocking(&path)?)
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
        // Not through a symlink, and without waiting (a FIFO has no reader):
        // a tree given with --sysfs-root is not trusted.
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .create(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)?;
        // Only a regular file, as sysfs attributes are: never a device node
        // a hostile tree put in an attribute's place.
        if !f.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file: not written",
            ));
        }
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
        let mut s = String::new();
        self.read_diskstats_into(&mut s)?;
        Ok(s)
    }

    /// `<proc>/diskstats` into `buf` (cleared first), reusing its allocation
    /// tick after tick.
    pub fn read_diskstats_into(&self, buf: &mut String) -> io::Result<()> {
        buf.clear();
        read_into(&self.procfs.join("diskstats"), buf)
    }

    /// The counters of every whole device as `/proc/diskstats` lines, made
    /// from each one's `<sysfs>/block/<dev>/stat` and `dev` (the same fields,
    /// kernel `Documentation/ABI/stable/sysfs-block`): for a tree captured
    /// without procfs. Devices without either file are left out; `NotFound`
    /// when none has them.
    pub fn read_block_stats_into(&self, buf: &mut String) -> io::Result<()> {
        use std::fmt::Write as _;
        buf.clear();
        let mut any = false;
        let mut one = String::new();
        for dev in self.block_names()? {
            let Ok(numbers) = self.read_dev_attr(&dev, "dev") else {
                continue;
            };
            let Some((major, minor)) = numbers.split_once(':') else {
                continue;
            };
            one.clear();
            if read_into(&self.dev_path(&dev, "stat"), &mut one).is_err() {
                continue;
            }
            let _ = writeln!(buf, "{major} {minor} {dev} {}", one.trim());
            any = true;
        }
        if any {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no device has a stat file",
            ))
        }
    }

    /// Sizes in bytes of the block devices with one, from `<proc>/partitions`
    /// in one read (the kernel leaves out devices of size 0, and counts in
    /// 1 KiB blocks: exact to 1 KiB, enough to tell an attached loop device
    /// from a detached one). `None` when the file is missing or unreadable.
    pub fn read_partition_sizes(&self) -> Option<std::collections::HashMap<String, u64>> {
        let text = self.read_proc("partitions").ok()?;
        Some(
            text.lines()
                .filter_map(|l| {
                    let mut w = l.split_ascii_whitespace();
                    let (_, _, blocks, name) = (w.next()?, w.next()?, w.next()?, w.next()?);
                    // Listed means a size: a 1-sector device is 0 blocks but not empty.
                    let bytes = blocks.parse::<u64>().ok()?.saturating_mul(1024).max(512);
                    Some((name.to_owned(), bytes))
                })
                .collect(),
        )
    }

    /// The target of a symlink under procfs (`self/ns/pid` -> `pid:[4026531836]`).
    pub fn read_proc_link(&self, rel: &str) -> io::Result<PathBuf> {
        debug_assert!(!rel.contains(".."), "relative paths are constants");
        fs::read_link(self.procfs.join(rel))
    }

    /// A file under procfs (`stat`, `uptime`, `sys/kernel/hostname`).
    pub fn read_proc(&self, rel: &str) -> io::Result<String> {
        debug_assert!(!rel.contains(".."), "relative paths are constants");
        let mut s = String::new();
        read_into(&self.procfs.join(rel), &mut s)?;
        Ok(s)
    }

    /// A gzip-compressed text file under procfs (`config.gz`), at most
    /// `max` bytes once decompressed; `None` when it is missing, not gzip,
    /// not text or larger.
    pub fn read_proc_gz(&self, rel: &str, max: u64) -> Option<String> {
        debug_assert!(!rel.contains(".."), "relative paths are constants");
        let f = open_nonblocking(&self.procfs.join(rel)).ok()?;
        let gz = flate2::read::GzDecoder::new(io::BufReader::new(f));
        crate::text::read_capped_from(gz, max).ok()
    }
}

/// Is this process running with root's effective uid?
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[cfg(test)]
mod tests;
