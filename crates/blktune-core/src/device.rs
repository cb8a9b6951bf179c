//! Discovery of block devices and their queue settings under `<sysfs>/block`.
//!
//! Attribute meanings: kernel `Documentation/ABI/stable/sysfs-block`.

use crate::os::{
    DeviceName, OpenAttr, Opened, QueueAttr, SysRoot, is_plausible_scheduler_name,
    is_plausible_tunable_name,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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

/// The scheduler line of `queue/scheduler`: `none [mq-deadline] kyber bfq`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerState {
    pub active: String,
    pub available: Vec<String>,
}

impl SchedulerState {
    /// Parse the kernel's scheduler line. The bracketed name is the active one;
    /// a line with a single bare name (old kernels, `none`) is that name.
    pub fn parse(line: &str) -> Option<Self> {
        let mut active = None;
        let mut available = Vec::new();
        // Elevator names are short identifiers (`mq-deadline`, `bfq`); anything
        // else means the file is not what we think it is.
        for word in line.split_ascii_whitespace() {
            if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                if active.is_some() || !is_plausible_scheduler_name(inner) {
                    return None;
                }
                active = Some(inner.to_owned());
                available.push(inner.to_owned());
            } else if is_plausible_scheduler_name(word) {
                available.push(word.to_owned());
            } else {
                return None;
            }
        }
        let active = match active {
            Some(a) => a,
            None if available.len() == 1 => available[0].clone(),
            None => return None,
        };
        Some(Self { active, available })
    }
}

/// A device's queue settings: what blktune shows and may change. Two are
/// equal when their settings are ([`QueueSettings::unreadable`] is not a
/// setting: a file that fails one way and then another is no change).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QueueSettings {
    /// `None` when the device has no `queue/scheduler` (zram, md, bio-based dm).
    pub scheduler: Option<SchedulerState>,
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    /// The active scheduler's tunables (`queue/iosched/*`), name to value.
    pub tunables: BTreeMap<String, String>,
    /// The queue settings next to the scheduler that the device has
    /// ([`crate::sched::QUEUE_KNOBS`]: `wbt_lat_usec`, `nomerges`, ...),
    /// name to value as read; read with the tunables. Absent in older
    /// recordings and journals.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: BTreeMap<String, String>,
    /// The files above that are there but gave no value, with why, in the
    /// order read (scheduler, nr_requests, read_ahead_kb): kept from the one
    /// read, so that a change refused, `export` and `list` say what that
    /// read saw and never open the files again to find out. Not recorded.
    #[serde(skip)]
    pub unreadable: Vec<(QueueAttr, Unreadable)>,
}

impl PartialEq for QueueSettings {
    fn eq(&self, other: &Self) -> bool {
        self.scheduler == other.scheduler
            && self.nr_requests == other.nr_requests
            && self.read_ahead_kb == other.read_ahead_kb
            && self.tunables == other.tunables
            && self.knobs == other.knobs
    }
}

impl Eq for QueueSettings {}

/// Why a queue setting's file that is there gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// It could not be read.
    Failed {
        kind: std::io::ErrorKind,
        message: String,
    },
    /// It does not read as the kernel writes it: what it said (its first
    /// 64 characters, all a message shows: a thousand hostile files of a
    /// page each are not kept).
    Unexpected(String),
}

impl Unreadable {
    /// What is wrong, for a message after "cannot read queue/X: ".
    pub fn message(&self) -> String {
        match self {
            Unreadable::Failed { message, .. } => message.clone(),
            Unreadable::Unexpected(raw) => unexpected_content(raw),
        }
    }

    /// The same as an I/O error (unexpected content is invalid data).
    pub fn to_io_error(&self) -> std::io::Error {
        match self {
            Unreadable::Failed { kind, message } => std::io::Error::new(*kind, message.clone()),
            Unreadable::Unexpected(_) => {
                std::io::Error::new(std::io::ErrorKind::InvalidData, self.message())
            }
        }
    }
}

/// The scheduler line read once: the state, `None` for a queue without a
/// scheduler (no file, or a lone `none`), or why the file gave nothing.
pub type SchedulerRead = Result<Option<SchedulerState>, Unreadable>;

/// A setting's file read once: its value, `None` when the file is not
/// there, or why it gave nothing (a read error, or content `parse` refuses).
fn settle<T>(
    read: std::io::Result<String>,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, Unreadable> {
    match read {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Unreadable::Failed {
            kind: e.kind(),
            message: e.to_string(),
        }),
        Ok(raw) => match parse(&raw) {
            Some(v) => Ok(Some(v)),
            None => Err(Unreadable::Unexpected(raw.chars().take(64).collect())),
        },
    }
}

/// Read a file through `kept` when it is open and reads; else open it with
/// `open` and keep it when `keep` (and it can be kept, and it reads), or
/// read it once with `once`.
fn read_kept(
    kept: &mut Option<OpenAttr>,
    keep: bool,
    open: impl FnOnce() -> std::io::Result<Opened>,
    once: impl FnOnce() -> std::io::Result<String>,
) -> std::io::Result<String> {
    if let Some(h) = kept {
        match h.read() {
            Ok(s) => return Ok(s),
            // Removed and perhaps made again: the file anew, below.
            Err(_) => *kept = None,
        }
    }
    if !keep {
        return once();
    }
    match open()? {
        Opened::Kept(h) => {
            let read = h.read();
            if read.is_ok() {
                *kept = Some(h);
            }
            read
        }
        // Not on sysfs, or not a regular file: read once, as by path.
        Opened::ReadOnce(s) => Ok(s),
    }
}

fn settle_scheduler(read: std::io::Result<String>) -> SchedulerRead {
    // "none" without brackets and without a choice means no blk-mq queue.
    settle(read, SchedulerState::parse)
        .map(|s| s.filter(|s| !(s.available.len() == 1 && s.active == "none")))
}

fn settle_num(read: std::io::Result<String>) -> Result<Option<u64>, Unreadable> {
    settle(read, |raw| raw.trim().parse::<u64>().ok())
}

/// The names of a device's tunables as last listed, and the scheduler
/// they belong to (see [`QueueSettings::read_with_tunables`]).
#[derive(Debug, Clone, Default)]
pub struct TunableNames {
    scheduler: String,
    names: Vec<String>,
}

impl QueueSettings {
    /// Read the current queue settings of a device, tunables and the
    /// queue settings next to the scheduler included.
    pub fn read(root: &SysRoot, dev: &DeviceName) -> Self {
        let mut q = Self::read_basic(root, dev);
        q.read_details(root, dev);
        q
    }

    /// (Re-)read what a table row does not show: the active scheduler's
    /// tunables and the queue settings next to the scheduler.
    pub fn read_details(&mut self, root: &SysRoot, dev: &DeviceName) {
        self.read_tunables(root, dev);
        self.knobs = Self::knobs_of(root, dev);
    }

    /// The queue settings next to the scheduler the device has, name to
    /// value (integers only: anything else is left out). A queue whose
    /// write-back throttling was never set up (its default scheduler was
    /// bfq) refuses to read `wbt_lat_usec` (EINVAL, `queue_wb_lat_show()`):
    /// it is off, which reads as 0 once set up, so 0.
    pub fn knobs_of(root: &SysRoot, dev: &DeviceName) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for k in crate::sched::QUEUE_KNOBS {
            let v = match root.read_dev_attr(dev, &format!("queue/{}", k.name)) {
                Ok(v) => v.trim().to_string(),
                Err(e) if k.name == "wbt_lat_usec" && e.raw_os_error() == Some(libc::EINVAL) => {
                    "0".into()
                }
                Err(_) => continue,
            };
            if crate::sched::is_integer_text(&v) {
                out.insert(k.name.to_string(), v);
            }
        }
        out
    }

    /// Scheduler, nr_requests and read_ahead_kb only (three reads): what a
    /// table row shows. The tunables are left empty.
    pub fn read_basic(root: &SysRoot, dev: &DeviceName) -> Self {
        Self::read_basic_kept(root, dev, &mut None, false)
    }

    /// [`QueueSettings::read_basic`] with the scheduler line read as
    /// [`QueueSettings::read_scheduler_kept`] reads it.
    pub fn read_basic_kept(
        root: &SysRoot,
        dev: &DeviceName,
        kept: &mut Option<OpenAttr>,
        keep: bool,
    ) -> Self {
        // Three reads through one open `queue/`: short lookups.
        let Ok(q) = root.queue_dir(dev) else {
            let sched = Self::read_scheduler_kept(root, dev, kept, keep);
            return Self::read_basic_with(root, dev, sched);
        };
        let sched = read_kept(
            kept,
            keep,
            || q.open_attr(&QueueAttr::Scheduler),
            || q.read(&QueueAttr::Scheduler),
        );
        Self::from_reads(
            settle_scheduler(sched),
            settle_num(q.read(&QueueAttr::NrRequests)),
            settle_num(q.read(&QueueAttr::ReadAheadKb)),
        )
    }

    /// [`QueueSettings::read_basic`] and the active scheduler's tunables,
    /// every file through one open `queue/` (short lookups): what the
    /// exporter reads of each device at every scrape. `names` are the
    /// tunables' names as last listed for this device: listed again only
    /// when the active scheduler is another (the kernel fixes a scheduler's
    /// tunables), and updated.
    pub fn read_with_tunables(root: &SysRoot, dev: &DeviceName, names: &mut TunableNames) -> Self {
        let Ok(q) = root.queue_dir(dev) else {
            let mut s = Self::read_basic(root, dev);
            s.read_tunables(root, dev);
            return s;
        };
        let mut s = Self::from_reads(
            settle_scheduler(q.read(&QueueAttr::Scheduler)),
            settle_num(q.read(&QueueAttr::NrRequests)),
            settle_num(q.read(&QueueAttr::ReadAheadKb)),
        );
        // `none` has no `queue/iosched` directory: nothing to list.
        let Some(active) = s.scheduler.as_ref().map(|s| s.active.clone()) else {
            return s;
        };
        if active == "none" {
            return s;
        }
        if names.scheduler != active {
            *names = TunableNames {
                names: root.list_dev_dir(dev, "queue/iosched").unwrap_or_default(),
                scheduler: active,
            };
        }
        for name in &names.names {
            if let Ok(v) = q.read(&QueueAttr::Tunable(name.clone())) {
                s.tunables.insert(name.clone(), v);
            }
        }
        s
    }

    /// [`QueueSettings::read_basic`] with the scheduler line already read.
    pub fn read_basic_with(root: &SysRoot, dev: &DeviceName, scheduler: SchedulerRead) -> Self {
        let num = |a: QueueAttr| settle_num(root.read_queue_attr(dev, &a));
        Self::from_reads(
            scheduler,
            num(QueueAttr::NrRequests),
            num(QueueAttr::ReadAheadKb),
        )
    }

    fn from_reads(
        scheduler: SchedulerRead,
        nr_requests: Result<Option<u64>, Unreadable>,
        read_ahead_kb: Result<Option<u64>, Unreadable>,
    ) -> Self {
        let mut unreadable = Vec::new();
        let scheduler = scheduler.unwrap_or_else(|why| {
            unreadable.push((QueueAttr::Scheduler, why));
            None
        });
        let mut keep = |attr: QueueAttr, r: Result<Option<u64>, Unreadable>| {
            r.unwrap_or_else(|why| {
                unreadable.push((attr, why));
                None
            })
        };
        let nr_requests = keep(QueueAttr::NrRequests, nr_requests);
        let read_ahead_kb = keep(QueueAttr::ReadAheadKb, read_ahead_kb);
        Self {
            scheduler,
            nr_requests,
            read_ahead_kb,
            tunables: BTreeMap::new(),
            knobs: BTreeMap::new(),
            unreadable,
        }
    }

    /// Just the scheduler line (one read): the cheapest sign that someone
    /// else changed a device.
    pub fn read_scheduler(root: &SysRoot, dev: &DeviceName) -> SchedulerRead {
        settle_scheduler(root.read_queue_attr(dev, &QueueAttr::Scheduler))
    }

    /// The scheduler line from `kept` when it is open (the cheap read of a
    /// round-robin), else from the file, which is kept in `kept` when
    /// `keep`. A kept file that fails is dropped and the file opened again.
    pub fn read_scheduler_kept(
        root: &SysRoot,
        dev: &DeviceName,
        kept: &mut Option<OpenAttr>,
        keep: bool,
    ) -> SchedulerRead {
        let attr = QueueAttr::Scheduler;
        settle_scheduler(read_kept(
            kept,
            keep,
            || root.open_queue_attr(dev, &attr),
            || root.read_queue_attr(dev, &attr),
        ))
    }

    /// These files were read again (after a write): why the first read
    /// got no value from them no longer holds.
    pub fn read_again(&mut self, attrs: &[QueueAttr]) {
        self.unreadable.retain(|(a, _)| !attrs.contains(a));
    }

    /// The first file that gave no value and why, as every message puts
    /// it: `cannot read queue/nr_requests: unexpected content 'lots'`.
    pub fn unreadable_text(&self) -> Option<String> {
        let (attr, why) = self.unreadable.first()?;
        Some(format!(
            "cannot read queue/{}: {}",
            attr.label(),
            why.message()
        ))
    }

    /// Why `attr`'s file, there, gave no value in the read these settings
    /// came from (`None`: it gave one, or it is not there).
    pub fn why_unreadable(&self, attr: &QueueAttr) -> Option<&Unreadable> {
        (self.unreadable.iter())
            .find(|(a, _)| a == attr)
            .map(|(_, why)| why)
    }

    /// (Re-)read the active scheduler's tunables (`queue/iosched/*`).
    pub fn read_tunables(&mut self, root: &SysRoot, dev: &DeviceName) {
        // `none` has no `queue/iosched` directory: nothing to list.
        self.tunables = if self.scheduler.as_ref().is_none_or(|s| s.active == "none") {
            BTreeMap::new()
        } else {
            Self::tunables_of(root, dev)
        };
    }

    /// The active scheduler's tunables (`queue/iosched/*`), name to value.
    pub fn tunables_of(root: &SysRoot, dev: &DeviceName) -> BTreeMap<String, String> {
        let mut tunables = BTreeMap::new();
        for name in root.list_dev_dir(dev, "queue/iosched").unwrap_or_default() {
            let attr = QueueAttr::Tunable(name.clone());
            if let Ok(v) = root.read_queue_attr(dev, &attr) {
                tunables.insert(name, v);
            }
        }
        tunables
    }

    /// The active scheduler's name, or `-` when there is none to choose.
    pub fn active_label(&self) -> &str {
        self.scheduler.as_ref().map_or("-", |s| s.active.as_str())
    }

    /// Can a scheduler be chosen for this device?
    pub fn has_scheduler(&self) -> bool {
        self.scheduler.is_some()
    }

    /// Nothing is known yet: not read (a screen reads the rows past its
    /// first ones over its first ticks), or none of it readable. Every
    /// block device has `read_ahead_kb`, even one without a scheduler, so
    /// this is never a device that merely lacks a queue.
    pub fn is_unread(&self) -> bool {
        self.scheduler.is_none() && self.nr_requests.is_none() && self.read_ahead_kb.is_none()
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

    /// The scheduler line through a kept file: kept when asked, not when
    /// not; a kept file that fails is dropped and the file opened again; a
    /// file that is not regular is read once and never kept.
    #[test]
    fn a_scheduler_file_is_kept_open_when_asked_and_opened_again_when_it_fails() {
        use crate::fake::{FakeDisk, FakeTree};
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        tree.add(&FakeDisk::new("sda").dev(8, 0).active("kyber"))
            .unwrap();
        let root = tree.root();
        let sda = root.device("sda").unwrap();
        let active = |r: SchedulerRead| r.unwrap().unwrap().active;
        let mut kept = None;
        let r = QueueSettings::read_scheduler_kept(&root, &sda, &mut kept, false);
        assert_eq!((active(r).as_str(), kept.is_some()), ("kyber", false));
        let r = QueueSettings::read_scheduler_kept(&root, &sda, &mut kept, true);
        assert_eq!((active(r).as_str(), kept.is_some()), ("kyber", true));
        let q = QueueSettings::read_basic_kept(&root, &sda, &mut kept, true);
        assert_eq!((q.active_label(), kept.is_some()), ("kyber", true));

        let mut kept = Some(OpenAttr::failing());
        let r = QueueSettings::read_scheduler_kept(&root, &sda, &mut kept, true);
        assert_eq!(active(r), "kyber", "read again from the file");
        assert!(kept.as_ref().is_some_and(|h| h.read().is_ok()), "kept anew");
        let mut kept = Some(OpenAttr::failing());
        let q = QueueSettings::read_basic_kept(&root, &sda, &mut kept, false);
        assert_eq!((q.active_label(), kept.is_some()), ("kyber", false));

        let sched = tree.dev_dir("sda").join("queue/scheduler");
        std::fs::remove_file(&sched).unwrap();
        nix::unistd::mkfifo(&sched, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let mut kept = None;
        let r = QueueSettings::read_scheduler_kept(&root, &sda, &mut kept, true);
        assert!(matches!(r, Err(Unreadable::Unexpected(_))), "{r:?}");
        assert!(kept.is_none());
    }

    /// The exporter's read through one open `queue/` gives what the reads
    /// by path give: the settings, the active scheduler's tunables, and
    /// none for `none`, whose `queue/iosched` is not there.
    #[test]
    fn the_read_through_one_queue_dir_gives_what_the_reads_by_path_give() {
        use crate::fake::{FakeDisk, FakeTree};
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        tree.add(&FakeDisk::new("sda").dev(8, 0).active("mq-deadline"))
            .unwrap();
        tree.add(&FakeDisk::new("sdb").dev(8, 16).active("bfq"))
            .unwrap();
        tree.add(&FakeDisk::new("sdc").dev(8, 32).active("none"))
            .unwrap();
        std::fs::remove_dir_all(tree.dev_dir("sdc").join("queue/iosched")).unwrap();
        let root = tree.root();
        for name in ["sda", "sdb", "sdc"] {
            let dev = root.device(name).unwrap();
            let mut by_path = QueueSettings::read_basic(&root, &dev);
            by_path.read_tunables(&root, &dev);
            let mut names = TunableNames::default();
            let one_dir = QueueSettings::read_with_tunables(&root, &dev, &mut names);
            // Again with the names kept: the same.
            let again = QueueSettings::read_with_tunables(&root, &dev, &mut names);
            assert_eq!(again.tunables, one_dir.tunables, "{name}");
            assert_eq!(one_dir.tunables, by_path.tunables, "{name}");
            assert_eq!(
                (
                    one_dir.scheduler,
                    one_dir.nr_requests,
                    one_dir.read_ahead_kb
                ),
                (
                    by_path.scheduler,
                    by_path.nr_requests,
                    by_path.read_ahead_kb
                ),
                "{name}"
            );
            assert_eq!(one_dir.tunables.is_empty(), name == "sdc", "{name}");
        }
    }

    /// A setting's file that is there but gives no value keeps why in the
    /// settings read (its content, or the read's error); a file that is
    /// not there, and a lone `none`, are no problem.
    #[test]
    fn the_one_read_keeps_why_a_setting_is_unknown() {
        use crate::fake::{FakeDisk, FakeTree};
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        tree.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        tree.add(&FakeDisk::new("zram0").dev(252, 0).no_queue())
            .unwrap();
        let root = tree.root();
        let queue = tree.dev_dir("sda").join("queue");
        std::fs::write(queue.join("nr_requests"), "lots\n").unwrap();
        std::fs::remove_file(queue.join("read_ahead_kb")).unwrap();
        std::fs::create_dir(queue.join("read_ahead_kb")).unwrap();
        let sda = root.device("sda").unwrap();
        for q in [
            QueueSettings::read(&root, &sda),
            QueueSettings::read_basic_with(&root, &sda, QueueSettings::read_scheduler(&root, &sda)),
        ] {
            assert!(q.scheduler.is_some());
            assert_eq!((q.nr_requests, q.read_ahead_kb), (None, None));
            assert_eq!(
                q.why_unreadable(&QueueAttr::NrRequests),
                Some(&Unreadable::Unexpected("lots".into()))
            );
            let why = q.why_unreadable(&QueueAttr::ReadAheadKb).unwrap();
            assert!(matches!(why, Unreadable::Failed { .. }), "{why:?}");
            assert_eq!(q.why_unreadable(&QueueAttr::Scheduler), None);
            assert_eq!(q.unreadable.len(), 2);
        }
        let zram = root.device("zram0").unwrap();
        assert_eq!(QueueSettings::read(&root, &zram).unreadable, []);
        // Why is not a setting: the same values failing otherwise are the
        // same settings (no change to report, record or republish).
        let a = QueueSettings::read(&root, &sda);
        let mut b = a.clone();
        b.unreadable.clear();
        assert_eq!(a, b);
        b.nr_requests = Some(64);
        assert_ne!(a, b);
    }

    #[test]
    fn scheduler_line_parses() {
        let s = SchedulerState::parse("none [mq-deadline] kyber bfq").unwrap();
        assert_eq!(s.active, "mq-deadline");
        assert_eq!(s.available, ["none", "mq-deadline", "kyber", "bfq"]);
        let s = SchedulerState::parse("[none] mq-deadline").unwrap();
        assert_eq!(s.active, "none");
        assert_eq!(SchedulerState::parse("none").unwrap().active, "none");
        assert_eq!(SchedulerState::parse("a b"), None);
        assert_eq!(SchedulerState::parse(""), None);
        assert_eq!(SchedulerState::parse("[none] [kyber]"), None);
        assert_eq!(SchedulerState::parse("garbage\0here"), None);
        assert_eq!(SchedulerState::parse("none [../x]"), None);
        assert_eq!(SchedulerState::parse("[[[ ]]]"), None);
    }

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
