//! A device's queue settings: the scheduler line, nr_requests, read-ahead,
//! the active scheduler's tunables and the settings next to them, each read
//! through the seam with why a value is unknown when it is.

use super::unexpected_content;
use crate::os::{DeviceName, OpenAttr, Opened, QueueAttr, SysRoot, is_plausible_scheduler_name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
}
