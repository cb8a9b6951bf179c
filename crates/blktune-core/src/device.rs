//! Discovery of block devices and their queue settings under `<sysfs>/block`.
//!
//! Attribute meanings: kernel `Documentation/ABI/stable/sysfs-block`.

mod queue;

pub use queue::{QueueSettings, SchedulerRead, SchedulerState, TunableNames, Unreadable};

use crate::os::{DeviceName, QueueAttr, SysRoot, is_plausible_tunable_name};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of device this is, for the table and for udev class matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Nvme,
    Ssd,
    Hdd,
    /// A SCSI/ATA disk whose rotation is unknown (no `queue/rotational`).
    Disk,
    /// An optical drive (`sr*`, SCSI peripheral type 5).
    Rom,
    Virtio,
    Loop,
    Zram,
    Md,
    Dm,
    Mmc,
    Other,
}

impl DeviceKind {
    /// Short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            DeviceKind::Nvme => "nvme",
            DeviceKind::Ssd => "ssd",
            DeviceKind::Hdd => "hdd",
            DeviceKind::Disk => "disk",
            DeviceKind::Rom => "rom",
            DeviceKind::Virtio => "virtio",
            DeviceKind::Loop => "loop",
            DeviceKind::Zram => "zram",
            DeviceKind::Md => "md",
            DeviceKind::Dm => "dm",
            DeviceKind::Mmc => "mmc",
            DeviceKind::Other => "other",
        }
    }

    /// Classify from the kernel name and the rotational flag (`None`: no
    /// `queue/rotational`, so a SCSI disk is a `disk`, not a guessed `ssd`).
    pub fn classify(name: &str, rotational: Option<bool>) -> Self {
        let starts = |p: &str| name.starts_with(p);
        if starts("nvme") {
            DeviceKind::Nvme
        } else if starts("loop") {
            DeviceKind::Loop
        } else if starts("zram") {
            DeviceKind::Zram
        } else if starts("md") {
            DeviceKind::Md
        } else if starts("dm-") {
            DeviceKind::Dm
        } else if starts("mmcblk") {
            DeviceKind::Mmc
        } else if starts("vd") || starts("xvd") {
            DeviceKind::Virtio
        } else if starts("sr") {
            DeviceKind::Rom
        } else if starts("sd") || starts("hd") {
            match rotational {
                Some(true) => DeviceKind::Hdd,
                Some(false) => DeviceKind::Ssd,
                None => DeviceKind::Disk,
            }
        } else {
            DeviceKind::Other
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The hardware queue depth of a blk-mq device: the smallest
/// `mq/<n>/nr_tags` (every hardware queue shares the tag set's depth), or
/// `None` when the device has no `mq/` directory.
pub fn hw_queue_depth(root: &SysRoot, dev: &DeviceName) -> Option<u64> {
    root.list_dev_dir(dev, "mq")
        .ok()?
        .iter()
        .filter(|q| is_plausible_tunable_name(q))
        .filter_map(|q| {
            root.read_dev_attr(dev, &format!("mq/{q}/nr_tags"))
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .min()
}

/// The device's `major:minor` (its `dev` file).
pub fn read_dev_numbers(root: &SysRoot, dev: &DeviceName) -> Option<(u32, u32)> {
    let d = root.read_dev_attr(dev, "dev").ok()?;
    let (a, b) = d.split_once(':')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// Everything blktune knows about one block device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockDevice {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub kind: DeviceKind,
    /// `device/model` as sysfs has it (trimmed), apart from the vendor, as lsblk shows them.
    pub model: Option<String>,
    /// `device/vendor` as sysfs has it (`ATA`, `0x1af4` for virtio).
    pub vendor: Option<String>,
    pub serial: Option<String>,
    pub wwid: Option<String>,
    /// An NVMe namespace's `nguid` and `eui` (ids where `wwid` is missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nguid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eui: Option<String>,
    /// 0 when the device is empty or its `size` is unknown ([`BlockDevice::size_unknown`]).
    pub size_bytes: u64,
    /// The `size` file is missing or unreadable: the size is unknown, not 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub size_unknown: bool,
    pub read_only: bool,
    pub removable: bool,
    /// `queue/rotational`; `None` when the device has none (unknown).
    pub rotational: Option<bool>,
    pub holders: Vec<String>,
    pub slaves: Vec<String>,
    pub partitions: Vec<String>,
    /// Bumped by the kernel each time the name is reused (loop re-attach), 5.15+.
    pub diskseq: Option<u64>,
    pub queue: QueueSettings,
    /// [`hw_queue_depth`]: the most nr_requests the kernel takes under `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_queue_depth: Option<u64>,
    /// dm, md and NVMe multipath heads: what names the stack ([`crate::stack`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<crate::stack::Stack>,
    /// The SCSI peripheral type (`device/type`: 0 disk, 5 rom), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scsi_type: Option<u32>,
    /// `hidden` = 1: an NVMe multipath path, which lsblk and udev leave out
    /// (its head is the device users know).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
}

impl BlockDevice {
    /// Read one device from sysfs: identity, size and every queue setting.
    pub fn read(root: &SysRoot, dev: &DeviceName) -> Self {
        let mut d = Self::unread(dev.as_str());
        d.read_size(root, dev);
        d.read_identity(root, dev, Identity::Full);
        d.queue = QueueSettings::read(root, dev);
        d
    }

    /// A device known only by name: nothing read yet (size 0, no queue).
    pub fn unread(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            major: 0,
            minor: 0,
            kind: DeviceKind::classify(name, None),
            model: None,
            vendor: None,
            serial: None,
            wwid: None,
            nguid: None,
            eui: None,
            size_bytes: 0,
            size_unknown: false,
            read_only: false,
            removable: false,
            rotational: None,
            holders: Vec::new(),
            slaves: Vec::new(),
            partitions: Vec::new(),
            diskseq: None,
            queue: QueueSettings::default(),
            hw_queue_depth: None,
            stack: None,
            scsi_type: None,
            hidden: false,
        }
    }

    /// Re-read `size` (0 and [`BlockDevice::size_unknown`] when it cannot
    /// be read; a detached loop device reads 0 and is known to be empty).
    pub fn read_size(&mut self, root: &SysRoot, dev: &DeviceName) {
        let size = root.read_size_bytes(dev);
        self.size_unknown = size.is_err();
        self.size_bytes = size.unwrap_or(0);
    }

    /// The size as lsblk prints it (`223.6G`), or `-` when unknown.
    pub fn size_label(&self) -> String {
        if self.size_unknown {
            "-".into()
        } else {
            human_size(self.size_bytes)
        }
    }

    /// Is there nothing to tune: known to be empty (a detached loop device)?
    pub fn is_empty(&self) -> bool {
        self.size_bytes == 0 && !self.size_unknown
    }

    /// lsblk's TYPE: `disk`, `rom`, `loop`, `lvm`, `crypt`, `mpath`,
    /// `raid1`..., from the stack, the SCSI type and the name.
    pub fn type_name(&self) -> String {
        if let Some(s) = &self.stack {
            return s.type_name.clone();
        }
        if self.name.starts_with("loop") {
            return "loop".into();
        }
        match self.scsi_type {
            Some(t) => crate::stack::scsi_type_name(t).into(),
            None => "disk".into(),
        }
    }

    /// The stack's own name (`dm/name`, an md array's `MD_DEVNAME`), if any.
    pub fn stack_name(&self) -> Option<&str> {
        self.stack.as_ref().and_then(|s| s.name.as_deref())
    }

    /// Re-read `diskseq` (kernel 5.15+).
    pub fn read_diskseq(&mut self, root: &SysRoot, dev: &DeviceName) {
        self.diskseq = root.read_diskseq(dev);
    }

    /// Read `queue/rotational` and classify again (it only matters for
    /// `sd*`/`hd*`, whose class it decides). No file, or not `0`/`1`: unknown.
    pub fn read_rotational(&mut self, root: &SysRoot, dev: &DeviceName) {
        self.rotational = match root.read_dev_attr(dev, "queue/rotational").as_deref() {
            Ok("1") => Some(true),
            Ok("0") => Some(false),
            _ => None,
        };
        self.kind = DeviceKind::classify(&self.name, self.rotational);
        if self.kind == DeviceKind::Other && self.scsi_type == Some(5) {
            self.kind = DeviceKind::Rom;
        }
    }

    /// Read the facts that do not change while the device keeps its
    /// `diskseq`: [`Identity::Table`] is what `blktune list` prints,
    /// [`Identity::Full`] everything. Missing files are simply absent
    /// (`ENOENT` from the open, no existence check first).
    pub fn read_identity(&mut self, root: &SysRoot, dev: &DeviceName, what: Identity) {
        let attr = |rel: &str| root.read_dev_attr(dev, rel).ok().filter(|s| !s.is_empty());
        let flag = |rel: &str| attr(rel).is_some_and(|v| v == "1");
        // The SCSI peripheral type (0 disk, 5 rom) of SCSI devices only:
        // virtio and NVMe have other `type` files or none.
        if self.name.starts_with("sd") || self.name.starts_with("sr") {
            self.scsi_type = attr("device/type").and_then(|t| t.parse().ok());
        }
        self.read_rotational(root, dev);
        // As sysfs has them (trimmed), the vendor apart: what lsblk shows.
        self.model = attr("device/model");
        self.vendor = attr("device/vendor");
        self.slaves = plausible(root.list_dev_dir(dev, "slaves").unwrap_or_default());
        self.hidden = flag("hidden");
        let names = if self.name.starts_with("nvme") {
            root.block_names().unwrap_or_default()
        } else {
            Vec::new()
        };
        self.stack = crate::stack::Stack::read(root, dev, &names);
        // The tree `list` draws hangs stacks on partitions.
        self.partitions = root.partitions_of(dev);
        // A stack's name may be udev's alone (an md array's MD_DEVNAME), and
        // the udev database is keyed by the device number.
        if what == Identity::Full || self.stack.is_some() {
            (self.major, self.minor) = read_dev_numbers(root, dev).unwrap_or((0, 0));
        }
        if what == Identity::Table {
            return;
        }
        self.serial = attr("serial").or_else(|| attr("device/serial"));
        self.wwid = attr("wwid").or_else(|| attr("device/wwid"));
        if self.name.starts_with("nvme") {
            self.nguid = attr("nguid");
            self.eui = attr("eui");
        }
        self.read_only = flag("ro");
        self.removable = flag("removable");
        self.holders = plausible(root.list_dev_dir(dev, "holders").unwrap_or_default());
        self.read_diskseq(root, dev);
        self.hw_queue_depth = hw_queue_depth(root, dev);
    }
}

/// The entries of a `holders/` or `slaves/` directory that can be device
/// names (a hostile tree may put anything there).
fn plausible(names: Vec<String>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| crate::os::is_plausible_device_name(n))
        .collect()
}

/// How much of a device's identity to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// Model, vendor, rotational, slaves, partitions, the stack: the
    /// columns and the tree of `blktune list`.
    Table,
    /// Everything: ids, flags, holders, partitions, diskseq, queue depth.
    Full,
}

/// Read every device under `<sysfs>/block`, in natural order (loop2 before loop10).
pub fn discover(root: &SysRoot) -> std::io::Result<Vec<BlockDevice>> {
    Ok(root
        .block_names()?
        .iter()
        .map(|d| BlockDevice::read(root, d))
        .collect())
}

/// Read only what a listing of the default devices (a scheduler or a stack,
/// and a size) needs: every device's `size`, the scheduler of those with
/// one, and then `what` and the queue settings of the devices that pass
/// (and of every device named like a stack: dm, md, NVMe namespaces). The others stay
/// as [`BlockDevice::unread`] with their size (and, where the scheduler
/// file is there but gave nothing, why, in [`QueueSettings::unreadable`]).
/// In natural order.
pub fn discover_shown(root: &SysRoot, what: Identity) -> std::io::Result<Vec<BlockDevice>> {
    Ok(root
        .block_names()?
        .iter()
        .map(|dev| {
            let mut d = BlockDevice::unread(dev.as_str());
            d.read_size(root, dev);
            if d.is_empty() {
                return d;
            }
            match QueueSettings::read_scheduler(root, dev) {
                Ok(Some(sched)) => {
                    d.queue = QueueSettings::read_basic_with(root, dev, Ok(Some(sched)));
                }
                // A stack (bio-based dm, md, an NVMe head) is listed
                // without a scheduler: its read-ahead and what it sits on.
                Ok(None) if crate::stack::may_be_stack(dev.as_str()) => {
                    d.queue = QueueSettings::read_basic_with(root, dev, Ok(None));
                }
                Ok(None) => return d,
                // Not listed, and why, for the warning `list` gives.
                Err(why) => {
                    d.queue.unreadable.push((QueueAttr::Scheduler, why));
                    return d;
                }
            }
            d.read_identity(root, dev, what);
            if what == Identity::Full {
                d.queue.read_details(root, dev);
            }
            d
        })
        .collect())
}

/// A size as lsblk prints it (util-linux `size_to_human_string`): binary
/// units, one decimal when there is a remainder, rounded as lsblk 2.38
/// rounds: the remainder in thousandths (cut), then to tenths (`512B`,
/// `4K`, `20G`, `223.6G`, `1.7T`). Checked against lsblk on every size
/// from 1 to 2 MiB in 512-byte steps.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "K", "M", "G", "T", "P", "E"];
    let mut exp = 0u32;
    while exp < 60 && bytes >= 1u64 << (exp + 10) {
        exp += 10;
    }
    let unit = UNITS[(exp / 10) as usize];
    if exp == 0 {
        return format!("{bytes}{unit}");
    }
    let mut whole = bytes >> exp;
    let rest = bytes & ((1u64 << exp) - 1);
    let thousandths = ((u128::from(rest) * 1000) >> exp) as u64;
    let mut tenth = (thousandths + 50) / 100;
    if tenth == 10 {
        whole += 1;
        tenth = 0;
    }
    if tenth == 0 {
        format!("{whole}{unit}")
    } else {
        format!("{whole}.{tenth}{unit}")
    }
}

/// `unexpected content '...'`: a queue file's text that is not what the
/// kernel writes, cut and escaped for one line.
pub fn unexpected_content(raw: &str) -> String {
    format!(
        "unexpected content '{}'",
        raw.chars().take(64).collect::<String>().escape_debug()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_by_name_and_rotation() {
        let c = DeviceKind::classify;
        assert_eq!(c("nvme0n1", Some(false)), DeviceKind::Nvme);
        assert_eq!(c("sda", Some(true)), DeviceKind::Hdd);
        assert_eq!(c("sdb", Some(false)), DeviceKind::Ssd);
        assert_eq!(
            c("sdb", None),
            DeviceKind::Disk,
            "unknown rotation is no ssd"
        );
        assert_eq!(c("vda", Some(true)), DeviceKind::Virtio);
        assert_eq!(c("loop7", Some(false)), DeviceKind::Loop);
        assert_eq!(c("zram0", None), DeviceKind::Zram);
        assert_eq!(c("md127", None), DeviceKind::Md);
        assert_eq!(c("dm-3", None), DeviceKind::Dm);
        assert_eq!(c("mmcblk0", Some(false)), DeviceKind::Mmc);
        assert_eq!(c("sr0", Some(true)), DeviceKind::Rom);
        assert_eq!(c("nbd0", None), DeviceKind::Other);
    }

    #[test]
    fn human_sizes_are_lsblks() {
        // Each checked against lsblk 2.38 (`lsblk -o SIZE` of a tree with that size).
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(512), "512B");
        assert_eq!(human_size(4096), "4K");
        assert_eq!(human_size(20 * 1024 * 1024 * 1024), "20G");
        assert_eq!(human_size(2_000_398_934_016), "1.8T");
        assert_eq!(human_size(240_057_409_536), "223.6G");
        assert_eq!(human_size(1_920_383_410_176), "1.7T", "1.7466T");
        // lsblk: 1M for 2148 sectors, 1.1M for 2151 (1.0502M).
        assert_eq!(human_size(2148 * 512), "1M");
        assert_eq!(human_size(2151 * 512), "1.1M");
        assert_eq!(human_size(2047 * 512), "1023.5K");
        assert_eq!(human_size(8_001_563_222_016), "7.3T");
        assert_eq!(human_size(1023), "1023B");
        assert_eq!(human_size(1024 * 1024 - 1), "1024K");
        assert_eq!(human_size(u64::MAX), "16E");
    }
}
