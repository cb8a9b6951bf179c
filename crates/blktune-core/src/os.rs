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

use crate::natural::natural_cmp;
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
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

/// Is `name` shaped like an I/O scheduler's name (`mq-deadline`, `bfq`):
/// a short identifier, as the kernel's elevators are named?
pub fn is_plausible_scheduler_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_".contains(&b))
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
    /// ([`HeldAttr`]) where it can be kept open, else read it once.
    pub fn hold_queue_attr(&self, dev: &DeviceName, attr: &QueueAttr) -> io::Result<Hold> {
        let path = self.queue_attr_path(dev, attr).ok_or_else(bad_attr)?;
        HeldAttr::open(open_nonblocking(&path)?)
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
}

/// Read a whole sysfs attribute: open, one read, close. `fs::read_to_string`
/// would first stat the file for a size hint (sysfs answers 4096 whatever
/// the content) and read again to see the end: two wasted syscalls. A sysfs
/// attribute is at most a page and comes whole from the first read
/// (`Documentation/filesystems/sysfs.rst`), so a short read is the end.
fn read_attr(path: &Path) -> io::Result<String> {
    read_file(open_nonblocking(path)?)
}

/// Open for reading without blocking: every file read through the seam may
/// belong to a hostile tree (`--sysfs-root`), where a FIFO in a file's place
/// would otherwise hang blktune; opened this way it reads as empty. On
/// sysfs, procfs and regular files `O_NONBLOCK` changes nothing.
fn open_nonblocking(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// An attribute file kept open: read again with one `pread` from its start
/// instead of a path walk, an open and a close (in a loop on one device
/// here, about 1 µs against 5 to 8; `watch` at 1000 devices took a tenth
/// less CPU). Only sysfs files are kept: sysfs makes the value anew for each
/// read from offset 0 and never moves a file, so a held file shows every
/// change made since, and a device removed makes its reads fail (`ENODEV`:
/// the holder opens the file again). A tree given with `--sysfs-root` is
/// read by path: its files can be replaced under their names (renamed over,
/// a directory or a symlink swapped) where an open file would not see it.
/// A held file costs a descriptor, and the kernel a page, while it lives.
#[derive(Debug)]
pub struct HeldAttr {
    file: fs::File,
}

/// What opening a file to hold it gave.
#[derive(Debug)]
pub enum Hold {
    Kept(HeldAttr),
    /// Not a file to keep open (not on sysfs, or not a regular file): its
    /// content, trimmed, from the one open.
    ReadOnce(String),
}

/// Is this file on sysfs?
fn on_sysfs(file: &fs::File) -> bool {
    nix::sys::statfs::fstatfs(file)
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::SYSFS_MAGIC)
}

impl HeldAttr {
    fn open(file: fs::File) -> io::Result<Hold> {
        // Never keep a FIFO or a device node open (a tape rewinds on close,
        // a held CD-ROM does not eject). sysfs has neither (only
        // directories, attributes and links), so a file on it is kept
        // without a second look: one call per file, a thousand at start on
        // a big machine. The crate's own unit tests keep regular files of
        // temporary trees, to test the holders.
        let keep = on_sysfs(&file) || (cfg!(test) && file.metadata()?.is_file());
        if keep {
            return Ok(Hold::Kept(Self { file }));
        }
        Ok(Hold::ReadOnce(read_file(file)?.trim().to_owned()))
    }

    /// A held file whose every read fails (tests of its holder): open for
    /// writing only.
    #[cfg(test)]
    pub(crate) fn failing() -> Self {
        let f = tempfile::NamedTempFile::new().unwrap();
        let file = fs::OpenOptions::new().write(true).open(f.path()).unwrap();
        Self { file }
    }

    /// The file's content now, trimmed.
    pub fn read(&self) -> io::Result<String> {
        use std::os::unix::fs::FileExt;
        Ok(read_page(|buf, at| self.file.read_at(buf, at as u64))?
            .trim()
            .to_owned())
    }
}

/// [`read_attr`] of an open file.
fn read_file(mut f: fs::File) -> io::Result<String> {
    read_page(|buf, _| f.read(buf))
}

/// Up to a page through `read(buf, offset)`, as [`read_attr`] reads it.
fn read_page(mut read: impl FnMut(&mut [u8], usize) -> io::Result<usize>) -> io::Result<String> {
    let mut buf = [0u8; 4096];
    let mut len = 0;
    while len < buf.len() {
        match read(&mut buf[len..], len) {
            Ok(0) => break,
            Ok(n) => {
                len += n;
                // A regular file (a fake tree) of less than a page also ends here.
                if len < buf.len() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(buf[..len].to_vec())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// The most read of a file of `/proc` ([`read_into`]): diskstats of ten
/// thousand devices with their partitions is a few MiB; a file that goes on
/// past this (a `--proc-root` tree's, linked to `/dev/zero`) is refused.
const MAX_PROC_FILE: usize = 64 << 20;

/// Append a file's whole content to `buf`, without a stat for a size hint,
/// in reads as large as the buffer's spare room (diskstats of a thousand
/// devices is about 100 KiB: a few reads, not twenty-five); at most
/// [`MAX_PROC_FILE`] bytes.
fn read_into(path: &Path, buf: &mut String) -> io::Result<()> {
    let mut f = open_nonblocking(path)?;
    let mut bytes = std::mem::take(buf).into_bytes();
    let start = bytes.len();
    let res = loop {
        let len = bytes.len();
        if len - start > MAX_PROC_FILE {
            bytes.truncate(start);
            break Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("larger than {} MiB", MAX_PROC_FILE >> 20),
            ));
        }
        let room = (bytes.capacity() - len)
            .max(16 << 10)
            .min(MAX_PROC_FILE + 1 - (len - start));
        bytes.resize(len + room, 0);
        match f.read(&mut bytes[len..]) {
            Ok(0) => {
                bytes.truncate(len);
                break Ok(());
            }
            Ok(n) => bytes.truncate(len + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => bytes.truncate(len),
            Err(e) => {
                bytes.truncate(len);
                break Err(e);
            }
        }
    };
    match String::from_utf8(bytes) {
        Ok(s) => {
            *buf = s;
            res
        }
        Err(e) => {
            let mut v = e.into_bytes();
            v.clear();
            *buf = String::from_utf8(v).unwrap_or_default();
            Err(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
        }
    }
}

/// The bytes of the kernel's BTF, which never change while the system runs:
/// mapped read-only where the kernel allows it (6.16 on), which costs no copy
/// and no fresh pages (about 5 ms of CPU for the 5.5 MB of
/// `/sys/kernel/btf/vmlinux` here); else read whole.
#[derive(Debug)]
pub(crate) enum ImmutableFile {
    Mapped(Mapping),
    Read(Vec<u8>),
}

impl ImmutableFile {
    /// `/sys/kernel/btf/vmlinux`.
    pub(crate) fn kernel_btf() -> io::Result<Self> {
        Self::open(Path::new("/sys/kernel/btf/vmlinux"))
    }

    /// Read `path`; map it instead only when it is a regular file on sysfs,
    /// whose files the kernel owns (no process can change or shorten them
    /// under the mapping). Private: the only sysfs file mapped is the
    /// kernel's BTF ([`Self::kernel_btf`]), whose content is fixed for as
    /// long as the system runs.
    fn open(path: &Path) -> io::Result<Self> {
        let file = fs::File::open(path)?;
        let meta = file.metadata()?;
        let on_sysfs = on_sysfs(&file);
        let len = usize::try_from(meta.len())
            .ok()
            .and_then(std::num::NonZeroUsize::new);
        if let (Some(len), true, true) = (len, meta.is_file(), on_sysfs)
            && let Ok(m) = Mapping::new(&file, len)
        {
            return Ok(Self::Mapped(m));
        }
        read_file_bytes(file).map(Self::Read)
    }
}

impl std::ops::Deref for ImmutableFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(m) => m.bytes(),
            Self::Read(v) => v,
        }
    }
}

fn read_file_bytes(mut file: fs::File) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    file.read_to_end(&mut v)?;
    Ok(v)
}

/// A private read-only mapping of a whole file, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    at: std::ptr::NonNull<std::ffi::c_void>,
    len: std::num::NonZeroUsize,
}

// The only unsafe code in blktune: a mapping and the slice over it.
#[allow(unsafe_code)]
impl Mapping {
    fn new(file: &fs::File, len: std::num::NonZeroUsize) -> io::Result<Self> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        // SAFETY: a new mapping at an address the kernel picks, of a file
        // opened for reading, read-only and private: it overlaps no memory
        // Rust knows of, and nothing writes through it.
        let at = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ,
                MapFlags::MAP_PRIVATE,
                file,
                0,
            )
        }?;
        Ok(Self { at, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes mapped readable at `at` for as long as `self`
        // lives (unmapped only in `drop`); their content does not change:
        // `ImmutableFile::open` maps only the kernel's BTF, a sysfs file no
        // process can write or shorten, and pages of a private read-only
        // mapping are never written by this process.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr().cast::<u8>(), self.len.get()) }
    }
}

#[allow(unsafe_code)]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once; no slice of it
        // outlives `self` (`bytes` borrows it).
        let _ = unsafe { nix::sys::mman::munmap(self.at, self.len.get()) };
    }
}

/// A device's open `queue/` directory (see [`SysRoot::queue_dir`]); reads only.
#[derive(Debug)]
pub struct QueueDir {
    fd: std::os::fd::OwnedFd,
}

impl QueueDir {
    /// Read a whitelisted queue attribute, trimmed.
    pub fn read(&self, attr: &QueueAttr) -> io::Result<String> {
        Ok(read_file(self.open(attr)?)?.trim().to_owned())
    }

    /// [`SysRoot::hold_queue_attr`] with a short lookup.
    pub fn hold(&self, attr: &QueueAttr) -> io::Result<Hold> {
        HeldAttr::open(self.open(attr)?)
    }

    fn open(&self, attr: &QueueAttr) -> io::Result<fs::File> {
        use nix::fcntl::{OFlag, openat};
        use nix::sys::stat::Mode;
        let rel = attr.rel_path().ok_or_else(bad_attr)?;
        let rel = rel.strip_prefix("queue/").ok_or_else(bad_attr)?;
        // Not blocking, as [`open_nonblocking`]: a FIFO reads as empty.
        let fd = openat(
            &self.fd,
            rel,
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(fs::File::from(fd))
    }
}

/// Descriptors this process may spend on [`HeldAttr`]s: half of what its
/// soft `RLIMIT_NOFILE` leaves after 256 for everything else, and at most
/// 4096 (each costs the kernel a page on sysfs).
pub fn spare_descriptors() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(1024, |(soft, _)| soft);
    usize::try_from(soft.saturating_sub(256) / 2)
        .unwrap_or(usize::MAX)
        .min(4096)
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

    /// A file not on sysfs is read, never mapped (another process could
    /// change it under the mapping); so are procfs and empty files.
    #[test]
    fn only_sysfs_files_are_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let content: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &content).unwrap();
        let f = ImmutableFile::open(&path).unwrap();
        assert!(matches!(f, ImmutableFile::Read(_)), "{f:?}");
        assert_eq!(&*f, &content[..]);
        fs::write(&path, b"").unwrap();
        let f = ImmutableFile::open(&path).unwrap();
        assert!(
            matches!(&f, ImmutableFile::Read(v) if v.is_empty()),
            "{f:?}"
        );
        let f = ImmutableFile::open(Path::new("/proc/self/stat")).unwrap();
        assert!(matches!(f, ImmutableFile::Read(_)));
        assert!(f.starts_with(std::process::id().to_string().as_bytes()));
        assert!(ImmutableFile::open(&dir.path().join("missing")).is_err());
    }

    /// The kernel's BTF reads as its bytes, mapped on kernels from 6.16 on
    /// (older ones refuse the mapping, and it is read).
    #[test]
    fn the_kernels_btf_is_mapped_from_6_16_on() {
        let Ok(read) = fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let f = ImmutableFile::kernel_btf().unwrap();
        assert!(*f == *read);
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut v = release
            .split(['.', '-'])
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let version = (v.next().unwrap_or(0), v.next().unwrap_or(0));
        if version >= (6, 16) {
            assert!(
                matches!(f, ImmutableFile::Mapped(_)),
                "not mapped on {release}"
            );
        }
    }

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

    /// A tree given with --sysfs-root is not trusted: an attribute that is a
    /// symlink, a FIFO or a device node is not written (and a FIFO does not
    /// hang the write); a regular file is.
    #[test]
    fn only_regular_attribute_files_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let q = dir.path().join("block/sda/queue");
        fs::create_dir_all(&q).unwrap();
        let root = SysRoot::new(dir.path(), "/proc");
        let dev = DeviceName("sda".into());
        let write = |attr: QueueAttr| root.write_queue_attr(&dev, &attr, "64");
        fs::write(q.join("nr_requests"), "256\n").unwrap();
        write(QueueAttr::NrRequests).unwrap();
        assert_eq!(fs::read_to_string(q.join("nr_requests")).unwrap(), "64");
        let target = dir.path().join("target");
        fs::write(&target, "untouched").unwrap();
        std::os::unix::fs::symlink(&target, q.join("read_ahead_kb")).unwrap();
        assert!(write(QueueAttr::ReadAheadKb).is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "untouched");
        nix::unistd::mkfifo(&q.join("scheduler"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(write(QueueAttr::Scheduler).is_err());
        // A character device (/dev/null's numbers) where root can make one.
        let node = q.join("iosched/read_expire");
        fs::create_dir_all(node.parent().unwrap()).unwrap();
        if nix::sys::stat::mknod(
            &node,
            nix::sys::stat::SFlag::S_IFCHR,
            nix::sys::stat::Mode::S_IRWXU,
            nix::sys::stat::makedev(1, 3),
        )
        .is_ok()
        {
            let e = write(QueueAttr::Tunable("read_expire".into())).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
    }

    /// Reading a hostile tree never hangs: a FIFO in an attribute's place
    /// reads as empty (then fails to parse), by the queue directory too.
    #[test]
    fn a_fifo_attribute_does_not_hang_a_read() {
        let dir = tempfile::tempdir().unwrap();
        let q = dir.path().join("block/sda/queue");
        fs::create_dir_all(&q).unwrap();
        nix::unistd::mkfifo(&q.join("nr_requests"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        nix::unistd::mkfifo(&q.join("scheduler"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let root = SysRoot::new(dir.path(), "/proc");
        let got = crate::fake::within("a read of a FIFO", move || {
            let dev = DeviceName("sda".into());
            let by_dir = root.queue_dir(&dev).unwrap().read(&QueueAttr::NrRequests);
            let by_path = root.read_queue_attr(&dev, &QueueAttr::Scheduler);
            (by_dir.ok(), by_path.ok())
        });
        assert_eq!(got, (Some(String::new()), Some(String::new())));
        // An attribute a udev rule names, read in a device's lineage.
        let lineage = dir.path().join("devices/x");
        fs::create_dir_all(&lineage).unwrap();
        nix::unistd::mkfifo(&lineage.join("vendor"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let root = SysRoot::new(dir.path(), "/proc");
        let got = crate::fake::within("a lineage read of a FIFO", move || {
            root.read_lineage_attr(&lineage, "vendor").ok()
        });
        assert_eq!(got, Some(String::new()));
    }

    /// A held attribute reads its content now, each time from the start;
    /// a FIFO or any other file that is not regular is read once, never
    /// held (nor does holding it hang). (Off sysfs only this crate's unit
    /// tests hold files: `only_sysfs_files_are_held`.)
    #[test]
    fn a_held_attribute_reads_afresh_and_only_regular_files_are_held() {
        let dir = tempfile::tempdir().unwrap();
        let q = dir.path().join("block/sda/queue");
        fs::create_dir_all(&q).unwrap();
        fs::write(q.join("scheduler"), "none [kyber]\n").unwrap();
        let root = SysRoot::new(dir.path(), "/proc");
        let dev = DeviceName("sda".into());
        let kept = |h: io::Result<Hold>| match h.unwrap() {
            Hold::Kept(h) => h,
            Hold::ReadOnce(s) => panic!("not kept: {s}"),
        };
        let held = kept(root.hold_queue_attr(&dev, &QueueAttr::Scheduler));
        assert_eq!(held.read().unwrap(), "none [kyber]");
        assert_eq!(held.read().unwrap(), "none [kyber]", "from the start again");
        // Written in place, as sysfs shows a write (a longer and a shorter value).
        fs::write(q.join("scheduler"), "none kyber [mq-deadline]\n").unwrap();
        assert_eq!(held.read().unwrap(), "none kyber [mq-deadline]");
        fs::write(q.join("scheduler"), "[none]\n").unwrap();
        assert_eq!(held.read().unwrap(), "[none]");
        let by_dir = kept(root.queue_dir(&dev).unwrap().hold(&QueueAttr::Scheduler));
        assert_eq!(by_dir.read().unwrap(), "[none]");

        nix::unistd::mkfifo(&q.join("nr_requests"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let got = crate::fake::within("holding a FIFO", move || {
            let by_path = root.hold_queue_attr(&dev, &QueueAttr::NrRequests);
            let by_dir = root.queue_dir(&dev).unwrap().hold(&QueueAttr::NrRequests);
            [by_path, by_dir].map(|h| match h.unwrap() {
                Hold::ReadOnce(s) => s,
                Hold::Kept(_) => "kept".into(),
            })
        });
        assert_eq!(got, [String::new(), String::new()], "read once, as empty");
    }

    /// Outside this crate's unit tests a file is held only on sysfs: a
    /// tree given with `--sysfs-root` is read by path, where a file renamed
    /// over (or a swapped directory or symlink) shows at the next read.
    #[test]
    fn only_sysfs_files_are_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scheduler");
        fs::write(&path, "[none]\n").unwrap();
        assert!(!on_sysfs(&fs::File::open(&path).unwrap()));
        let sysfs = fs::File::open("/sys/kernel/mm/transparent_hugepage/enabled")
            .or_else(|_| fs::File::open("/sys/kernel/btf/vmlinux"))
            .unwrap();
        assert!(on_sysfs(&sysfs));
    }

    #[test]
    fn partition_sizes_in_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::new(dir.path(), dir.path());
        assert_eq!(root.read_partition_sizes(), None);
        fs::write(
            dir.path().join("partitions"),
            "major minor  #blocks  name\n\n 254        0  268435456 vda\n   7        1          0 loop1\n garbage\n",
        )
        .unwrap();
        let m = root.read_partition_sizes().unwrap();
        assert_eq!(m["vda"], 268_435_456 * 1024);
        assert_eq!(m["loop1"], 512, "listed means not empty");
        assert_eq!(m.len(), 2);
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
