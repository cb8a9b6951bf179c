//! Where the load generator may write: only to scratch devices it created
//! itself in this process, and only if they carry no partition, holder,
//! mount or filesystem signature. Any other device gets read-only loads.
//!
//! The checks that need no open of the device (sysfs and procfs through
//! [`SysRoot`]) run first, then ownership, and only for a device blktune owns
//! is its first 128 KiB read (read-only) to look for signatures, so a foreign
//! disk is never even opened by the write path.

use super::LoadError;
use crate::os::{DeviceName, SysRoot};
use crate::scratch::ScratchLoop;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Scratch devices this process created through [`Scratch::create`]: (name, backing file).
static OWNED: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// A scratch loop device created by the load generator; the only kind of
/// device it will write to. Detached and deleted on drop.
#[derive(Debug)]
pub struct Scratch {
    name: String,
    file: PathBuf,
    /// `None` only after [`Scratch::remove`] took it.
    inner: Option<ScratchLoop>,
}

impl Scratch {
    /// Create a sparse file of `size` bytes in `dir` and a direct-I/O loop
    /// device over it (root only). `dir` must not be on tmpfs for O_DIRECT.
    pub fn create(dir: &Path, size: u64) -> std::io::Result<Self> {
        let inner = ScratchLoop::create(dir, size)?;
        if let Ok(mut owned) = OWNED.lock() {
            owned.push((inner.name().to_owned(), inner.file().to_owned()));
        }
        Ok(Self {
            name: inner.name().to_owned(),
            file: inner.file().to_owned(),
            inner: Some(inner),
        })
    }

    /// The kernel name (`loop3`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/dev/loop3`.
    pub fn dev_path(&self) -> PathBuf {
        PathBuf::from("/dev").join(&self.name)
    }

    /// The backing file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The queue settings found at attach and the way to put them back,
    /// for a watchdog that tears the device down without this guard.
    pub fn queue_restore(&self) -> Option<crate::scratch::QueueRestore> {
        self.inner.as_ref().map(ScratchLoop::queue_restore)
    }

    /// Put its queue settings back, detach and delete now, reporting errors.
    pub fn remove(mut self) -> std::io::Result<()> {
        forget(&self.name);
        self.inner.take().map_or(Ok(()), ScratchLoop::remove)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // The inner guard detaches and deletes right after this.
        forget(&self.name);
    }
}

fn forget(name: &str) {
    if let Ok(mut owned) = OWNED.lock() {
        owned.retain(|(n, _)| n != name);
    }
}

/// Did this process create `name` through [`Scratch::create`], and is the
/// loop device still backed by the file it created (not re-used by someone
/// else after a detach)?
fn owned_by_us(root: &SysRoot, dev: &DeviceName) -> bool {
    let Some(file) = OWNED.lock().ok().and_then(|o| {
        o.iter()
            .find(|(n, _)| n == dev.as_str())
            .map(|(_, f)| f.clone())
    }) else {
        return false;
    };
    // Documentation/ABI/testing/sysfs-block-loop: loop/backing_file.
    root.read_dev_attr(dev, "loop/backing_file")
        .is_ok_and(|b| Path::new(&b) == file)
}

/// A device the generator may issue I/O to; writes only if built by [`Target::writable`].
#[derive(Debug, Clone)]
pub struct Target {
    name: String,
    path: PathBuf,
    size: u64,
    logical_block: u64,
    writes_allowed: bool,
    /// The device's `diskseq` when the target was made, and where to read it
    /// again: a load never starts on another device that took the name.
    diskseq: Option<u64>,
    root: SysRoot,
    dev: DeviceName,
}

impl Target {
    /// A read-only target on any whole device or partition (`/dev/<name>`).
    pub fn read_only(root: &SysRoot, name: &str) -> Result<Self, LoadError> {
        let dev = resolve_any(root, name)?;
        Self::describe(root, &dev, false)
    }

    /// A target that may be written: refused unless blktune created it in
    /// this process and it has no partitions, holders, mounts or signatures.
    pub fn writable(root: &SysRoot, name: &str) -> Result<Self, LoadError> {
        let dev = resolve_any(root, name)?;
        check_writable(root, &dev)?;
        Self::describe(root, &dev, true)
    }

    fn describe(root: &SysRoot, dev: &DeviceName, writes_allowed: bool) -> Result<Self, LoadError> {
        let sectors: u64 = root
            .read_dev_attr(dev, "size")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let logical_block = root
            .read_dev_attr(dev, "queue/logical_block_size")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(512u64);
        let size = sectors * 512;
        if size < 8 << 20 {
            return Err(LoadError::TooSmall {
                dev: dev.to_string(),
                size,
            });
        }
        Ok(Self {
            name: dev.to_string(),
            path: PathBuf::from("/dev").join(dev.as_str()),
            size,
            logical_block,
            writes_allowed,
            diskseq: root.read_diskseq(dev),
            root: root.clone(),
            dev: dev.clone(),
        })
    }

    /// The kernel name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/dev/<name>`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// I/O alignment: the logical block size, at least 4 KiB.
    pub fn align(&self) -> u64 {
        self.logical_block.max(4096)
    }

    /// May write loads run on it?
    pub fn writes_allowed(&self) -> bool {
        self.writes_allowed
    }

    /// The `diskseq` the device had when the target was made (`None`: a
    /// kernel before 5.15).
    pub fn diskseq(&self) -> Option<u64> {
        self.diskseq
    }

    /// Is the device still the one the target was made for? `Err` names
    /// the diskseq found instead.
    pub fn check_same(&self) -> Result<(), LoadError> {
        let Some(seen) = self.diskseq else {
            return Ok(());
        };
        match self.root.read_diskseq(&self.dev) {
            Some(now) if now == seen => Ok(()),
            now => Err(LoadError::Replaced {
                dev: self.name.clone(),
                seen,
                now: now.map_or_else(|| "none".into(), |n| n.to_string()),
            }),
        }
    }
}

/// A whole device or a partition name under sysfs.
fn resolve_any(root: &SysRoot, name: &str) -> Result<DeviceName, LoadError> {
    if let Some(d) = root.device(name) {
        return Ok(d);
    }
    Err(LoadError::UnknownDevice { name: name.into() })
}

/// Every reason not to write to `dev`, cheapest and most specific first.
pub fn check_writable(root: &SysRoot, dev: &DeviceName) -> Result<(), LoadError> {
    let refuse = |why: String| LoadError::WriteRefused {
        dev: dev.to_string(),
        why,
    };
    let parts = root.partitions_of(dev);
    if !parts.is_empty() {
        return Err(refuse(format!("it has partitions ({})", parts.join(", "))));
    }
    let holders = root.list_dev_dir(dev, "holders").unwrap_or_default();
    if !holders.is_empty() {
        return Err(refuse(format!(
            "it is in use by {} (holders)",
            holders.join(", ")
        )));
    }
    if let Some(m) = mounted_at(root, dev) {
        return Err(refuse(format!("it is mounted on {m}")));
    }
    if is_swap(root, dev) {
        return Err(refuse("it is an active swap device".into()));
    }
    if !owned_by_us(root, dev) {
        return Err(refuse(
            "blktune writes only to scratch devices it created itself (use --scratch SIZE); \
             other devices get read-only loads"
                .into(),
        ));
    }
    let head = read_head(&PathBuf::from("/dev").join(dev.as_str())).map_err(|e| {
        refuse(format!(
            "cannot read its first blocks to check for signatures: {e}"
        ))
    })?;
    if let Some(sig) = detect_signature(&head) {
        return Err(refuse(format!("it carries a {sig} signature")));
    }
    Ok(())
}

/// `major:minor` of the device and its partitions, from sysfs.
fn dev_numbers(root: &SysRoot, dev: &DeviceName) -> Vec<String> {
    let mut v: Vec<String> = root.read_dev_attr(dev, "dev").into_iter().collect();
    for p in root.partitions_of(dev) {
        if let Ok(n) = root.read_dev_attr(dev, &format!("{p}/dev")) {
            v.push(n);
        }
    }
    v
}

/// Where the device (or one of its partitions) is mounted, if anywhere.
fn mounted_at(root: &SysRoot, dev: &DeviceName) -> Option<String> {
    let nums = dev_numbers(root, dev);
    // proc(5) mountinfo: field 3 is major:minor, field 5 the mount point.
    if let Ok(text) = root.read_proc("self/mountinfo") {
        return mountinfo_match(&text, &nums);
    }
    // Fallback: /proc/mounts names the source device.
    let text = root.read_proc("mounts").ok()?;
    let mut names = vec![dev.to_string()];
    names.extend(root.partitions_of(dev));
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let src = f.next()?;
        let at = f.next()?;
        let base = src.strip_prefix("/dev/")?;
        names.iter().any(|n| n == base).then(|| at.to_owned())
    })
}

/// The mount point of the first mountinfo line whose device is one of `nums`.
pub fn mountinfo_match(text: &str, nums: &[String]) -> Option<String> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (num, at) = (f.get(2)?, f.get(4)?);
        nums.iter().any(|n| n == num).then(|| (*at).to_owned())
    })
}

/// Is the device listed in `<proc>/swaps`?
fn is_swap(root: &SysRoot, dev: &DeviceName) -> bool {
    let Ok(text) = root.read_proc("swaps") else {
        return false;
    };
    let mut names = vec![dev.to_string()];
    names.extend(root.partitions_of(dev));
    text.lines().skip(1).any(|l| {
        l.split_whitespace()
            .next()
            .and_then(|p| p.strip_prefix("/dev/"))
            .is_some_and(|b| names.iter().any(|n| n == b))
    })
}

/// Bytes read from the start of a device for signature checks (btrfs's
/// superblock magic sits at 64 KiB + 64).
pub const HEAD_LEN: usize = 128 << 10;

/// Read the first [`HEAD_LEN`] bytes, read-only.
fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    let f = File::open(path)?;
    let mut buf = Vec::with_capacity(HEAD_LEN);
    f.take(HEAD_LEN as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The kind of on-disk signature at the start of a device, if any (the magic
/// numbers blkid looks for; offsets from each format's specification).
pub fn detect_signature(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    // ext2/3/4: s_magic 0xEF53 (little-endian) at superblock (1024) + 56.
    if at(1080, &[0x53, 0xEF]) {
        return Some("ext2/3/4 filesystem");
    }
    if at(0, b"XFSB") {
        return Some("XFS filesystem");
    }
    if at(65600, b"_BHRfS_M") {
        return Some("btrfs filesystem");
    }
    // Swap: last 10 bytes of the first 4 KiB page.
    if at(4086, b"SWAPSPACE2") || at(4086, b"SWAP-SPACE") {
        return Some("swap");
    }
    if at(0, b"LUKS\xba\xbe") {
        return Some("LUKS");
    }
    // LVM2 physical volume label: in one of the first four sectors.
    if (0..4).any(|s| at(s * 512, b"LABELONE")) {
        return Some("LVM physical volume");
    }
    // md RAID superblock 1.1 (at 0) and 1.2 (at 4 KiB): 0xa92b4efc little-endian.
    if at(0, &[0xfc, 0x4e, 0x2b, 0xa9]) || at(4096, &[0xfc, 0x4e, 0x2b, 0xa9]) {
        return Some("md RAID member");
    }
    if at(512, b"EFI PART") {
        return Some("GPT partition table");
    }
    // MBR partition tables and FAT/NTFS boot sectors end sector 0 with 55 AA.
    if at(510, &[0x55, 0xAA]) {
        return Some("MBR partition table or boot sector");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeDisk, FakeTree};

    /// A fake tree's `diskseq` that is a FIFO reads as none, at once (it
    /// hung the load, past Ctrl-C).
    #[test]
    fn a_fifo_diskseq_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let dev_dir = dir.path().join("sys/block/sdq");
        std::fs::create_dir_all(&dev_dir).unwrap();
        nix::unistd::mkfifo(&dev_dir.join("diskseq"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let root = SysRoot::new(dir.path().join("sys"), dir.path().join("proc"));
        let dev = root.device("sdq").unwrap();
        let got = crate::fake::within("a read of a FIFO", move || root.read_diskseq(&dev));
        assert_eq!(got, None);
    }

    fn with(off: usize, magic: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; HEAD_LEN];
        v[off..off + magic.len()].copy_from_slice(magic);
        v
    }

    #[test]
    fn signatures_are_found_at_their_offsets() {
        assert_eq!(detect_signature(&vec![0; HEAD_LEN]), None);
        assert_eq!(detect_signature(&[]), None);
        assert_eq!(
            detect_signature(&with(1080, &[0x53, 0xEF])),
            Some("ext2/3/4 filesystem")
        );
        assert_eq!(detect_signature(&with(0, b"XFSB")), Some("XFS filesystem"));
        assert_eq!(
            detect_signature(&with(65600, b"_BHRfS_M")),
            Some("btrfs filesystem")
        );
        assert_eq!(detect_signature(&with(4086, b"SWAPSPACE2")), Some("swap"));
        assert_eq!(
            detect_signature(&with(512, b"LABELONE")),
            Some("LVM physical volume")
        );
        assert_eq!(
            detect_signature(&with(512, b"EFI PART")),
            Some("GPT partition table")
        );
        assert_eq!(
            detect_signature(&with(510, &[0x55, 0xAA])),
            Some("MBR partition table or boot sector")
        );
        // The same bytes elsewhere mean nothing.
        assert_eq!(detect_signature(&with(1081, &[0x53, 0xEF])), None);
        // A head too short to hold the btrfs superblock is fine.
        assert_eq!(detect_signature(&with(0, b"x")[..4096]), None);
    }

    #[test]
    fn mountinfo_matches_on_device_numbers() {
        let text = "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n\
                    40 22 7:3 / /mnt/x rw - ext4 /dev/loop3 rw\n";
        assert_eq!(
            mountinfo_match(text, &["7:3".into()]),
            Some("/mnt/x".into())
        );
        assert_eq!(mountinfo_match(text, &["7:4".into()]), None);
    }

    fn tree() -> (tempfile::TempDir, FakeTree) {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        (dir, t)
    }

    fn refusal(root: &SysRoot, name: &str) -> String {
        match Target::writable(root, name) {
            Err(LoadError::WriteRefused { why, .. }) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn writes_are_refused_on_partitioned_held_mounted_and_foreign_devices() {
        let (_d, t) = tree();
        t.add(&FakeDisk::new("sda").partitions(&["sda1", "sda2"]))
            .unwrap();
        t.add(&FakeDisk::new("sdb").dev(8, 16).stacked(&["dm-0"], &[]))
            .unwrap();
        t.add(&FakeDisk::new("sdc").dev(8, 32)).unwrap();
        t.add(&FakeDisk::new("sdd").dev(8, 48)).unwrap();
        std::fs::create_dir_all(t.root().procfs().join("self")).unwrap();
        std::fs::write(
            t.root().procfs().join("self/mountinfo"),
            "40 22 8:32 / /srv rw - xfs /dev/sdc rw\n",
        )
        .unwrap();
        let root = t.root();
        assert!(refusal(&root, "sda").contains("partitions (sda1, sda2)"));
        assert!(refusal(&root, "sdb").contains("in use by dm-0"));
        assert!(refusal(&root, "sdc").contains("mounted on /srv"));
        // Clean, but not created by blktune: refused without being opened
        // (there is no /dev/sdd behind this fake tree to open).
        assert!(refusal(&root, "sdd").contains("created itself"));
        // Reading is another matter.
        let t = Target::read_only(&root, "sdd").unwrap();
        assert!(!t.writes_allowed());
        assert_eq!(t.size(), 20 << 30);
    }

    #[test]
    fn a_partition_of_a_mounted_disk_counts_as_mounted() {
        let (_d, t) = tree();
        t.add(&FakeDisk::new("sda").partitions(&["sda1"])).unwrap();
        std::fs::create_dir_all(t.root().procfs().join("self")).unwrap();
        std::fs::write(
            t.root().procfs().join("self/mountinfo"),
            "40 22 8:1 / /boot rw - ext4 /dev/sda1 rw\n",
        )
        .unwrap();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        assert_eq!(mounted_at(&root, &dev), Some("/boot".into()));
    }
}
