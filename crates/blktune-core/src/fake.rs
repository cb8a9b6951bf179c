//! Fake sysfs/procfs trees for tests and benchmarks.
//!
//! A [`FakeTree`] lays out `sys/block/<dev>/...` and `proc/diskstats` under a
//! directory so that every feature can run against it through [`SysRoot`].
//! It writes plain files; it does not emulate the kernel, except for
//! [`FakeTree::settle`], which does what the kernel does after a scheduler
//! write (bracket the active one, reset nr_requests and tunables).

mod simulated;

pub use simulated::{Behaviour, SimLine, Simulated};

use crate::diskstats::Counters;
use crate::os::SysRoot;
use crate::sched::default_tunables;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Description of one fake whole device.
#[derive(Debug, Clone)]
pub struct FakeDisk {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub size_sectors: u64,
    pub rotational: bool,
    pub removable: bool,
    pub read_only: bool,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub serial: Option<String>,
    pub wwid: Option<String>,
    /// `None`: no `queue/scheduler` file (bio-based device).
    pub schedulers: Option<Vec<String>>,
    pub active: String,
    pub nr_requests: u64,
    pub read_ahead_kb: u64,
    pub partitions: Vec<String>,
    pub holders: Vec<String>,
    pub slaves: Vec<String>,
    pub diskseq: Option<u64>,
    /// `Some`: an `mq/0/nr_tags` with this hardware queue depth.
    pub hw_queue_depth: Option<u64>,
    /// More files, relative to the device directory (`dm/name`, `hidden`).
    pub attrs: Vec<(String, String)>,
}

impl FakeDisk {
    /// A blk-mq disk with the four mainline schedulers, `mq-deadline` active.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            major: 8,
            minor: 0,
            size_sectors: 2 * 1024 * 1024 * 20, // 20 GiB
            rotational: false,
            removable: false,
            read_only: false,
            model: None,
            vendor: None,
            serial: None,
            wwid: None,
            schedulers: Some(vec![
                "none".into(),
                "mq-deadline".into(),
                "kyber".into(),
                "bfq".into(),
            ]),
            active: "mq-deadline".into(),
            nr_requests: 256,
            read_ahead_kb: 128,
            partitions: Vec::new(),
            holders: Vec::new(),
            slaves: Vec::new(),
            diskseq: None,
            hw_queue_depth: None,
            attrs: Vec::new(),
        }
    }

    /// Builder: one more file under the device directory (`dm/uuid`,
    /// `md/level`, `hidden`, `device/type`, `multipath/nvme0c0n1`).
    pub fn attr(mut self, rel: &str, value: &str) -> Self {
        self.attrs.push((rel.into(), value.into()));
        self
    }

    /// Builder: a device-mapper device named `name` with `uuid` (its type
    /// follows the uuid's prefix: `LVM-`, `CRYPT-`, `mpath-`), without a
    /// scheduler (bio-based) and stacked on `slaves`.
    pub fn dm(self, name: &str, uuid: &str, slaves: &[&str]) -> Self {
        self.no_queue()
            .attr("dm/name", name)
            .attr("dm/uuid", uuid)
            .stacked(&[], slaves)
    }

    /// Builder: major and minor numbers.
    pub fn dev(mut self, major: u32, minor: u32) -> Self {
        self.major = major;
        self.minor = minor;
        self
    }

    /// Builder: model and optional vendor.
    pub fn model(mut self, model: &str, vendor: Option<&str>) -> Self {
        self.model = Some(model.into());
        self.vendor = vendor.map(Into::into);
        self
    }

    /// Builder: rotational flag.
    pub fn rotational(mut self, r: bool) -> Self {
        self.rotational = r;
        self
    }

    /// Builder: the active scheduler.
    pub fn active(mut self, s: &str) -> Self {
        self.active = s.into();
        self
    }

    /// Builder: no scheduler at all (zram, md, bio-based dm).
    pub fn no_queue(mut self) -> Self {
        self.schedulers = None;
        self
    }

    /// Builder: size in bytes.
    pub fn size_bytes(mut self, b: u64) -> Self {
        self.size_sectors = b / 512;
        self
    }

    /// Builder: serial and wwid.
    pub fn ids(mut self, serial: Option<&str>, wwid: Option<&str>) -> Self {
        self.serial = serial.map(Into::into);
        self.wwid = wwid.map(Into::into);
        self
    }

    /// Builder: partitions (names like `sda1`).
    pub fn partitions(mut self, p: &[&str]) -> Self {
        self.partitions = p.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Builder: one hardware queue with this tag depth (`mq/0/nr_tags`).
    pub fn hw_queue_depth(mut self, depth: u64) -> Self {
        self.hw_queue_depth = Some(depth);
        self
    }

    /// Builder: holders and slaves.
    pub fn stacked(mut self, holders: &[&str], slaves: &[&str]) -> Self {
        self.holders = holders.iter().map(|s| s.to_string()).collect();
        self.slaves = slaves.iter().map(|s| s.to_string()).collect();
        self
    }
}

/// The tunables a fake device gets for `scheduler`: the kernel's defaults
/// ([`default_tunables`]) plus mq-deadline's derived `async_depth`, which the
/// kernel computes from nr_requests (a fixed 192 here, 3/4 of 256 as older
/// kernels did).
fn fake_tunables(scheduler: &str) -> Vec<(&'static str, &'static str)> {
    let mut t = default_tunables(scheduler);
    if scheduler == "mq-deadline" {
        t.push(("async_depth", "192"));
    }
    t
}

/// A fake `/sys` + `/proc` under one directory.
#[derive(Debug, Clone)]
pub struct FakeTree {
    base: PathBuf,
}

fn write(path: &Path, content: &str) -> io::Result<()> {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p)?;
    }
    fs::write(path, content)
}

impl FakeTree {
    /// Create the skeleton under `base` (which should be an empty temp dir).
    pub fn new(base: &Path) -> io::Result<Self> {
        fs::create_dir_all(base.join("sys/block"))?;
        fs::create_dir_all(base.join("proc/sys/kernel/random"))?;
        write(&base.join("proc/diskstats"), "")?;
        write(&base.join("proc/sys/kernel/hostname"), "testhost\n")?;
        write(&base.join("proc/sys/kernel/osrelease"), "6.18.0-test\n")?;
        write(
            &base.join("proc/sys/kernel/random/boot_id"),
            "00000000-0000-0000-0000-000000000001\n",
        )?;
        write(&base.join("proc/uptime"), "12345.67 20000.00\n")?;
        write(
            &base.join("proc/stat"),
            "cpu  100 0 100 700 100 0 0 0 0 0\n",
        )?;
        Ok(Self {
            base: base.to_owned(),
        })
    }

    /// The seam over this tree.
    pub fn root(&self) -> SysRoot {
        SysRoot::new(self.base.join("sys"), self.base.join("proc"))
    }

    /// The directory of a device.
    pub fn dev_dir(&self, name: &str) -> PathBuf {
        self.base.join("sys/block").join(name)
    }

    /// Lay out one device.
    pub fn add(&self, d: &FakeDisk) -> io::Result<()> {
        let dir = self.dev_dir(&d.name);
        let b = |v: bool| if v { "1\n" } else { "0\n" };
        write(&dir.join("dev"), &format!("{}:{}\n", d.major, d.minor))?;
        write(&dir.join("size"), &format!("{}\n", d.size_sectors))?;
        write(&dir.join("ro"), b(d.read_only))?;
        write(&dir.join("removable"), b(d.removable))?;
        write(&dir.join("queue/rotational"), b(d.rotational))?;
        // Kernel 4.10+: every queue has it; host-managed/host-aware for zoned disks.
        write(&dir.join("queue/zoned"), "none\n")?;
        write(
            &dir.join("queue/read_ahead_kb"),
            &format!("{}\n", d.read_ahead_kb),
        )?;
        if let Some(m) = &d.model {
            write(&dir.join("device/model"), &format!("{m}\n"))?;
        }
        if let Some(v) = &d.vendor {
            write(&dir.join("device/vendor"), &format!("{v}\n"))?;
        }
        if let Some(s) = &d.serial {
            write(&dir.join("serial"), &format!("{s}\n"))?;
        }
        if let Some(w) = &d.wwid {
            write(&dir.join("wwid"), &format!("{w}\n"))?;
        }
        if let Some(seq) = d.diskseq {
            write(&dir.join("diskseq"), &format!("{seq}\n"))?;
        }
        if let Some(depth) = d.hw_queue_depth {
            write(&dir.join("mq/0/nr_tags"), &format!("{depth}\n"))?;
        }
        for (rel, v) in &d.attrs {
            if rel.split('/').any(|c| c == ".." || c.is_empty()) {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad attr path"));
            }
            write(&dir.join(rel), &format!("{v}\n"))?;
        }
        for sub in ["holders", "slaves"] {
            fs::create_dir_all(dir.join(sub))?;
        }
        for h in &d.holders {
            write(&dir.join("holders").join(h), "")?;
        }
        for s in &d.slaves {
            write(&dir.join("slaves").join(s), "")?;
        }
        for (i, p) in d.partitions.iter().enumerate() {
            write(&dir.join(p).join("partition"), &format!("{}\n", i + 1))?;
            // The disk split evenly, for a size that is easy to check.
            let sectors = d.size_sectors / d.partitions.len() as u64;
            write(&dir.join(p).join("size"), &format!("{sectors}\n"))?;
            write(
                &dir.join(p).join("dev"),
                &format!("{}:{}\n", d.major, d.minor + 1 + i as u32),
            )?;
        }
        if let Some(scheds) = &d.schedulers {
            write(
                &dir.join("queue/scheduler"),
                &scheduler_line(scheds, &d.active),
            )?;
            write(
                &dir.join("queue/nr_requests"),
                &format!("{}\n", d.nr_requests),
            )?;
            fs::create_dir_all(dir.join("queue/iosched"))?;
            for (k, v) in fake_tunables(&d.active) {
                write(&dir.join("queue/iosched").join(k), &format!("{v}\n"))?;
            }
        }
        Ok(())
    }

    /// Remove a device (hot-unplug).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        fs::remove_dir_all(self.dev_dir(name))
    }

    /// Write `/proc/diskstats` with 20-column lines.
    pub fn set_diskstats(&self, lines: &[(&str, u32, u32, Counters)]) -> io::Result<()> {
        let mut out = String::new();
        for (name, major, minor, c) in lines {
            out.push_str(&diskstats_line(name, *major, *minor, c));
            out.push('\n');
        }
        self.set_diskstats_raw(&out)
    }

    /// Write `/proc/diskstats` verbatim. Atomically (temp file and rename), as
    /// a reader of the real file never sees half a line.
    pub fn set_diskstats_raw(&self, text: &str) -> io::Result<()> {
        let tmp = self.base.join("proc/.diskstats.tmp");
        write(&tmp, text)?;
        fs::rename(tmp, self.base.join("proc/diskstats"))
    }

    /// Do what the kernel does after a write to `queue/scheduler` of a fake
    /// device: bracket the active name, reset nr_requests and the tunables.
    pub fn settle(&self, name: &str, available: &[&str], nr_default: u64) -> io::Result<()> {
        let dir = self.dev_dir(name).join("queue");
        let raw = fs::read_to_string(dir.join("scheduler"))?;
        let raw = raw.trim();
        if raw.contains('[') {
            return Ok(());
        }
        let scheds: Vec<String> = available.iter().map(|s| s.to_string()).collect();
        write(&dir.join("scheduler"), &scheduler_line(&scheds, raw))?;
        write(&dir.join("nr_requests"), &format!("{nr_default}\n"))?;
        let _ = fs::remove_dir_all(dir.join("iosched"));
        fs::create_dir_all(dir.join("iosched"))?;
        for (k, v) in fake_tunables(raw) {
            write(&dir.join("iosched").join(k), &format!("{v}\n"))?;
        }
        Ok(())
    }
}

/// `none [mq-deadline] kyber bfq`
pub fn scheduler_line(available: &[String], active: &str) -> String {
    let words: Vec<String> = available
        .iter()
        .map(|s| {
            if s == active {
                format!("[{s}]")
            } else {
                s.clone()
            }
        })
        .collect();
    format!("{}\n", words.join(" "))
}

/// One 20-column diskstats line.
pub fn diskstats_line(name: &str, major: u32, minor: u32, c: &Counters) -> String {
    let d = c.discard.unwrap_or_default();
    let f = c.flush.unwrap_or_default();
    format!(
        "{major:4} {minor:7} {name} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
        c.rd_ios,
        c.rd_merges,
        c.rd_sectors,
        c.rd_ticks,
        c.wr_ios,
        c.wr_merges,
        c.wr_sectors,
        c.wr_ticks,
        c.in_flight,
        c.io_ticks,
        c.time_in_queue,
        d.ios,
        d.merges,
        d.sectors,
        d.ticks,
        f.ios,
        f.ticks
    )
}

/// Run `f` on a thread of its own and return its answer, or panic saying
/// `what` hung after 10 s: for reads that must never block (a FIFO in a
/// hostile tree), where the old code blocks for ever.
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what} hung"))
}
