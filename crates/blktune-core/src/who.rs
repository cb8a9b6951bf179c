//! Who does a disk's I/O, from the kernel: the busiest processes and
//! cgroups of one interval on one disk, with their share of the disk and
//! the p99 of their reads, as the TUI's `i` panel, `watch --json --who` and
//! recordings carry them.
//!
//! The counts come from the BPF program's attribution ([`crate::latency::who`]):
//! every request is counted for the process that submitted it and that
//! process's cgroup (v2); a request a kernel worker submitted (write-back of
//! dirty pages, mostly) for the cgroup its bio was charged to where the
//! kernel keeps one (cgroup write-back: the io and memory controllers on
//! the v2 tree), else for no cgroup, and its process row reads
//! `write-back` (`kworker` when it also read: a loop device's backing file,
//! dm-crypt). What no row shows (owners past the top ones, and requests
//! started before attribution began, which the program counts for no
//! owner) is the rest. Every completed request of the disk is in one of
//! them, so shares are of the same reading and add up to 100.
//!
//! Cgroups are named from their path: the last component, which systemd
//! makes the unit's name (`postgresql.service`, `session-3.scope`), with a
//! container's 64-digit id cut to 12 as `docker ps` shows it
//! (`docker-4f3c2a1b9e8d.scope`).

use crate::latency::DevId;
use crate::latency::who::{Disk, Owner, OwnerIo, Owners, WhoInterval, WhoReading};
use crate::os::SysRoot;
use crate::os::cgroup::CgroupTree;
use crate::pressure::Pressure;
use crate::sampler::Snapshot;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// Rows of each kind kept per disk and interval (the rest is summed).
pub const TOP: usize = 10;

/// How often an unknown cgroup id may make the tree be walked again.
pub const RESCAN_EVERY: Duration = Duration::from_secs(2);

/// The name of the process row of a kernel worker's requests, when they
/// are all writes (the flusher's write-back of dirty pages).
pub const WRITE_BACK: &str = "write-back";

/// ... when some are reads: a worker reading for someone (a loop device's
/// backing file, dm-crypt, ...), which is no write-back.
pub const KWORKER: &str = "kworker";

/// The name of a kernel worker's row: `write-back` when it only wrote.
fn worker_name(io: &OwnerIo) -> &'static str {
    if io.ios[0] == 0 { WRITE_BACK } else { KWORKER }
}

/// One process or cgroup of one disk over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhoRow {
    /// The process (tgid); absent for write-back and for a cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// A process's name (`comm`), `write-back` for a kernel worker's
    /// requests; a cgroup's name ([`unit_name`]).
    pub name: String,
    /// The cgroup v2 path (`/` the root); absent when the kernel kept none
    /// (write-back not charged to a cgroup) or it could not be found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Reads, writes and the rest (discards, flushes) completed per second.
    pub r_s: f64,
    pub w_s: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub o_s: f64,
    /// KiB read and written per second (as iostat's rkB/s, wkB/s).
    #[serde(rename = "rkB_s")]
    pub rkb_s: f64,
    #[serde(rename = "wkB_s")]
    pub wkb_s: f64,
    /// Percent of the disk's completed requests in the interval
    /// (diskstats' reads, writes, discards and flushes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// p99 of its reads, start to completion (as r_await), ms, to within a
    /// quarter of a power of two; absent under 100 reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r_p99: Option<f64>,
    /// The number of reads the p99 rests on.
    pub r_n: u64,
    /// A cgroup's `io.pressure`: percent of the interval some (or all
    /// non-idle) of its tasks stalled on I/O; absent for a process, the root
    /// cgroup and where the kernel has no PSI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_some: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_full: Option<f64>,
    /// `io_some` and `io_full` are the kernel's 10 s averages instead (the
    /// cgroup's first reading: no interval yet).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub io_avg10: bool,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl WhoRow {
    /// Requests per second, every direction.
    pub fn iops(&self) -> f64 {
        self.r_s + self.w_s + self.o_s
    }

    /// MiB read and written per second.
    pub fn mib_s(&self) -> f64 {
        (self.rkb_s + self.wkb_s) / 1024.0
    }
}

/// Who did one disk's I/O in one interval.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeviceWho {
    /// The busiest processes (most requests first), at most [`TOP`].
    pub processes: Vec<WhoRow>,
    /// The busiest cgroups, at most [`TOP`].
    pub cgroups: Vec<WhoRow>,
    /// Requests per second no process row has (smaller processes, and
    /// requests that started before attribution began).
    pub rest_s: f64,
    /// Their percent of the disk's requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest_share: Option<f64>,
}

/// Who did the I/O of each whole device in one interval, by name (only
/// devices with attributed I/O).
pub type WhoByDevice = BTreeMap<String, DeviceWho>;

/// Turns the kernel's attribution, read right after each sample, into each
/// device's rows: the interval's counts, cgroup paths and names, and each
/// shown cgroup's I/O pressure over the interval.
#[derive(Debug)]
pub struct WhoWatch {
    owners: Owners,
    names: CgroupNames,
    pressure: CgroupPressure,
    /// When the last reading was taken: an interval's rates are over the
    /// time between two readings (the map's own, not the sample's).
    read_at: Option<Instant>,
}

impl WhoWatch {
    /// A watch over `root`'s cgroup tree, with no reading yet.
    pub fn new(root: &SysRoot) -> Self {
        Self {
            owners: Owners::new(),
            names: CgroupNames::new(root),
            pressure: CgroupPressure::default(),
            read_at: None,
        }
    }

    /// The next reading is a baseline again (attribution was off meanwhile).
    pub fn reset(&mut self) {
        self.owners.reset();
        self.read_at = None;
    }

    /// Take `reading` as the baseline of the next interval.
    pub fn baseline(&mut self, reading: WhoReading) {
        self.read_at = Some(Instant::now());
        self.owners.next(reading);
    }

    /// The rows of every whole device of `s`, from the kernel's `reading`
    /// taken right after it; `None` for a baseline (the first reading).
    pub fn sample(&mut self, reading: WhoReading, s: &Snapshot) -> Option<WhoByDevice> {
        let now = Instant::now();
        let since = self.read_at.replace(now);
        let interval = self.owners.next(reading)?;
        let itv = now.duration_since(since?).as_secs_f64();
        let mut out = WhoByDevice::new();
        // A cgroup on several disks is read once per sample.
        let mut read: HashMap<String, Stalled> = HashMap::new();
        for d in s.devices.iter().filter(|d| d.size_bytes > 0) {
            let dev = DevId {
                major: d.major,
                minor: d.minor,
            };
            let owners = owners_of(&interval, dev, d.diskseq);
            if owners.is_empty() {
                continue;
            }
            let names = &mut self.names;
            let mut rows = device_rows(&owners, itv, |id| names.path(id));
            if let Some(tree) = self.names.tree() {
                for r in &mut rows.cgroups {
                    if let Some(p) = &r.cgroup {
                        let pressure = &mut self.pressure;
                        let st = *read
                            .entry(p.clone())
                            .or_insert_with(|| pressure.read(tree, p));
                        (r.io_some, r.io_full, r.io_avg10) = (st.some, st.full, st.avg10);
                    }
                }
            }
            out.insert(d.name.clone(), rows);
        }
        self.pressure
            .keep_only(&read.into_keys().collect::<Vec<_>>());
        Some(out)
    }
}

/// The last component of a cgroup path, a container's long id cut to 12
/// hex digits (`/system.slice/docker-<64 hex>.scope` -> `docker-<12>.scope`);
/// the root is `/`.
pub fn unit_name(path: &str) -> String {
    let last = path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("/");
    let (stem, suffix) = match last.rsplit_once('.') {
        Some((s, x)) if x == "scope" || x == "service" || x == "slice" => (s, Some(x)),
        _ => (last, None),
    };
    // `docker-<id>`, `cri-containerd-<id>`, `libpod-<id>`, or a bare id.
    let (prefix, id) = match stem.rsplit_once('-') {
        Some((p, id)) => (Some(p), id),
        None => (None, stem),
    };
    if id.len() >= 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        let short = &id[..12];
        let name = match prefix {
            Some(p) => format!("{p}-{short}"),
            None => short.to_string(),
        };
        return match suffix {
            Some(x) => format!("{name}.{x}"),
            None => name,
        };
    }
    last.to_string()
}

/// Cgroup paths by id, from walks of the v2 tree: again, at most every
/// [`RESCAN_EVERY`], when an id is not known (a cgroup made since).
#[derive(Debug)]
pub struct CgroupNames {
    tree: Option<CgroupTree>,
    by_id: HashMap<u64, String>,
    walked: Option<Instant>,
}

impl CgroupNames {
    /// The names of `root`'s cgroup v2 tree (none: every path unknown).
    pub fn new(root: &SysRoot) -> Self {
        Self {
            tree: CgroupTree::find(root),
            by_id: HashMap::new(),
            walked: None,
        }
    }

    /// The tree, if there is one.
    pub fn tree(&self) -> Option<&CgroupTree> {
        self.tree.as_ref()
    }

    /// The path of cgroup `id`, walking the tree again if it is not known
    /// and the last walk is old enough.
    pub fn path(&mut self, id: u64) -> Option<String> {
        if let Some(p) = self.by_id.get(&id) {
            return Some(p.clone());
        }
        let tree = self.tree.as_ref()?;
        if self.walked.is_some_and(|t| t.elapsed() < RESCAN_EVERY) {
            return None;
        }
        self.walked = Some(Instant::now());
        self.by_id = tree.walk().into_iter().collect();
        self.by_id.get(&id).cloned()
    }
}

/// What [`CgroupPressure::read`] says of one cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stalled {
    pub some: Option<f64>,
    pub full: Option<f64>,
    /// The kernel's 10 s averages, not the interval's share.
    pub avg10: bool,
}

/// Each cgroup's `io.pressure` total at the last read, for the interval's share.
#[derive(Debug, Default)]
pub struct CgroupPressure {
    prev: HashMap<String, (Pressure, Instant)>,
}

impl CgroupPressure {
    /// The share of the time since the last call for this cgroup in which
    /// some, and all, of its tasks stalled on I/O (percent); on the first
    /// read the kernel's 10 s averages instead (the flag says so); `None`
    /// for the root (the header has the system's) or without the file.
    pub fn read(&mut self, tree: &CgroupTree, path: &str) -> Stalled {
        if path == "/" {
            return Stalled::default();
        }
        let Some(now) = tree
            .read_io_pressure(path)
            .ok()
            .and_then(|t| Pressure::parse(&t))
        else {
            self.prev.remove(path);
            return Stalled::default();
        };
        let at = Instant::now();
        let out = match self.prev.get(path) {
            Some((before, then)) => {
                let secs = at.duration_since(*then).as_secs_f64();
                Stalled {
                    some: now.some_pct_since(before, secs),
                    full: now.full_pct_since(before, secs),
                    avg10: false,
                }
            }
            None => Stalled {
                some: Some(now.some.avg10),
                full: now.full.map(|f| f.avg10),
                avg10: true,
            },
        };
        self.prev.insert(path.to_string(), (now, at));
        out
    }

    /// Forget cgroups not read in the last call set (bounded memory).
    pub fn keep_only(&mut self, paths: &[String]) {
        self.prev.retain(|p, _| paths.contains(p));
    }
}

/// The rows of one disk's owners in an interval of `itv` seconds (every
/// completed request of the disk, [`Owner::Unknown`] included: the shares'
/// whole). `cgroup_path` names a cgroup id. Most requests first (then most
/// bytes, then name).
pub fn device_rows(
    owners: &[(Owner, &OwnerIo)],
    itv: f64,
    mut cgroup_path: impl FnMut(u64) -> Option<String>,
) -> DeviceWho {
    if itv <= 0.0 {
        return DeviceWho::default();
    }
    let total = owners.iter().map(|(_, io)| io.total_ios()).sum::<u64>() as f64;
    let known: Vec<&(Owner, &OwnerIo)> = owners
        .iter()
        .filter(|(o, _)| *o != Owner::Unknown)
        .collect();
    let share = |ios: u64| (total > 0.0).then(|| ios as f64 / total * 100.0);
    let row = |pid: Option<u32>, name: String, cgroup: Option<String>, io: &OwnerIo| WhoRow {
        pid,
        name,
        cgroup,
        r_s: io.ios[0] as f64 / itv,
        w_s: io.ios[1] as f64 / itv,
        o_s: io.ios[2] as f64 / itv,
        rkb_s: io.bytes[0] as f64 / 1024.0 / itv,
        wkb_s: io.bytes[1] as f64 / 1024.0 / itv,
        share: share(io.total_ios()),
        r_p99: io.read_p99_ms(),
        r_n: io.read_slots.iter().sum(),
        io_some: None,
        io_full: None,
        io_avg10: false,
    };
    let mut paths: HashMap<u64, Option<String>> = HashMap::new();
    let mut path_of = |id: u64| paths.entry(id).or_insert_with(|| cgroup_path(id)).clone();
    let mut processes: Vec<(u64, u64, WhoRow)> = known
        .iter()
        .map(|(o, io)| {
            let cgroup = o.cgroup().and_then(&mut path_of);
            let name = match o.pid() {
                Some(_) => io.comm.clone(),
                None => worker_name(io).to_string(),
            };
            (
                io.total_ios(),
                io.rw_bytes(),
                row(o.pid(), name, cgroup, io),
            )
        })
        .collect();
    let mut by_cgroup: BTreeMap<Option<u64>, OwnerIo> = BTreeMap::new();
    for (o, io) in &known {
        by_cgroup
            .entry(o.cgroup())
            .or_insert_with(OwnerIo::empty)
            .add(io);
    }
    let mut cgroups: Vec<(u64, u64, WhoRow)> = by_cgroup
        .iter()
        .map(|(id, io)| {
            let path = id.and_then(&mut path_of);
            let name = match (id, &path) {
                (_, Some(p)) => unit_name(p),
                (Some(id), None) => format!("cgroup {id}"),
                (None, None) => worker_name(io).to_string(),
            };
            (io.total_ios(), io.rw_bytes(), row(None, name, path, io))
        })
        .collect();
    let busiest = |v: &mut Vec<(u64, u64, WhoRow)>| {
        v.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.1.cmp(&a.1))
                .then(a.2.name.cmp(&b.2.name))
                .then(a.2.pid.cmp(&b.2.pid))
        });
        v.truncate(TOP);
    };
    busiest(&mut processes);
    busiest(&mut cgroups);
    let shown: u64 = processes.iter().map(|(n, _, _)| n).sum();
    let rest = (total - shown as f64).max(0.0);
    DeviceWho {
        processes: processes.into_iter().map(|(_, _, r)| r).collect(),
        cgroups: cgroups.into_iter().map(|(_, _, r)| r).collect(),
        rest_s: rest / itv,
        rest_share: (total > 0.0).then(|| rest / total * 100.0),
    }
}

/// The owners of one disk (by number and diskseq) in an interval.
pub fn owners_of(
    interval: &WhoInterval,
    dev: DevId,
    diskseq: Option<u64>,
) -> Vec<(Owner, &OwnerIo)> {
    interval
        .iter()
        .filter(|((d, seq), _, _): &&(Disk, Owner, OwnerIo)| {
            *d == dev && diskseq.is_none_or(|s| s == *seq)
        })
        .map(|(_, o, io)| (*o, io))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_containers_are_named_as_admins_name_them() {
        assert_eq!(unit_name("/"), "/");
        assert_eq!(
            unit_name("/system.slice/postgresql.service"),
            "postgresql.service"
        );
        let id = "4f3c2a1b9e8d7c6b5a4f3c2a1b9e8d7c6b5a4f3c2a1b9e8d7c6b5a4f3c2a1b9e";
        assert_eq!(
            unit_name(&format!("/system.slice/docker-{id}.scope")),
            "docker-4f3c2a1b9e8d.scope"
        );
        assert_eq!(
            unit_name(&format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-{id}.scope"
            )),
            "cri-containerd-4f3c2a1b9e8d.scope"
        );
        assert_eq!(unit_name(&format!("/docker/{id}")), "4f3c2a1b9e8d");
        assert_eq!(
            unit_name("/user.slice/user-1000.slice/session-3.scope"),
            "session-3.scope"
        );
        assert_eq!(unit_name("/blktune-test-4242"), "blktune-test-4242");
    }

    fn io(comm: &str, reads: u64, writes: u64) -> OwnerIo {
        let mut v = OwnerIo::empty();
        v.comm = comm.into();
        v.ios = [reads, writes, 0];
        v.bytes = [reads * 4096, writes * 65536, 0];
        v
    }

    #[test]
    fn rows_are_busiest_first_with_shares_of_the_disk_and_the_rest() {
        let fio = (Owner::Process { pid: 10, cgroup: 7 }, io("fio", 900, 0));
        let dd = (Owner::Process { pid: 11, cgroup: 1 }, io("dd", 0, 50));
        let wb = (Owner::Worker { cgroup: None }, io("", 0, 25));
        // 25 requests started before attribution began.
        let unknown = (Owner::Unknown, io("", 25, 0));
        let owners: Vec<(Owner, &OwnerIo)> = vec![
            (dd.0, &dd.1),
            (fio.0, &fio.1),
            (wb.0, &wb.1),
            (unknown.0, &unknown.1),
        ];
        let paths = |id: u64| match id {
            7 => Some("/system.slice/postgresql.service".to_string()),
            1 => Some("/".to_string()),
            _ => None,
        };
        // The disk completed 1000 requests in 2 s; 25 were not attributed.
        let w = device_rows(&owners, 2.0, paths);
        let names: Vec<&str> = w.processes.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["fio", "dd", WRITE_BACK]);
        let fio = &w.processes[0];
        assert_eq!(fio.pid, Some(10));
        assert_eq!(fio.r_s, 450.0);
        assert_eq!(fio.rkb_s, 1800.0);
        assert_eq!(fio.share, Some(90.0));
        assert_eq!(
            fio.cgroup.as_deref(),
            Some("/system.slice/postgresql.service")
        );
        assert_eq!(w.processes[2].pid, None);
        assert_eq!(w.processes[2].cgroup, None);
        let cg: Vec<&str> = w.cgroups.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(cg, ["postgresql.service", "/", WRITE_BACK]);
        assert_eq!(w.rest_s, 12.5);
        assert_eq!(w.rest_share, Some(2.5));
        let w = device_rows(&owners, 2.0, |_| None);
        assert_eq!(w.cgroups[0].name, "cgroup 7");
        // A worker that also read is no write-back.
        let reader = (Owner::Worker { cgroup: None }, io("", 5, 5));
        let w = device_rows(&[(reader.0, &reader.1)], 1.0, |_| None);
        assert_eq!(w.processes[0].name, KWORKER);
        assert_eq!(w.processes[0].share, Some(100.0));
    }

    #[test]
    fn only_the_top_rows_are_kept_and_the_rest_sums_the_others() {
        let many: Vec<(Owner, OwnerIo)> = (0..25)
            .map(|i| {
                (
                    Owner::Process {
                        pid: 100 + i,
                        cgroup: 1,
                    },
                    io(&format!("p{i}"), 10 + u64::from(i), 0),
                )
            })
            .collect();
        let owners: Vec<(Owner, &OwnerIo)> = many.iter().map(|(o, io)| (*o, io)).collect();
        let w = device_rows(&owners, 1.0, |_| Some("/".into()));
        assert_eq!(w.processes.len(), TOP);
        assert_eq!(w.processes[0].name, "p24");
        let all: u64 = (0..25).map(|i| 10 + i).sum();
        let top: u64 = (15..25).map(|i| 10 + i).sum();
        assert_eq!(w.rest_s, (all - top) as f64);
        assert_eq!(w.cgroups.len(), 1);
    }

    #[test]
    fn a_cgroups_pressure_is_its_10s_average_first_then_the_intervals_share() {
        let d = tempfile::tempdir().unwrap();
        let sys = d.path().join("sys");
        let cg = sys.join("fs/cgroup/db.service");
        std::fs::create_dir_all(&cg).unwrap();
        std::fs::write(sys.join("fs/cgroup/cgroup.controllers"), "io\n").unwrap();
        let write = |total: u64| {
            std::fs::write(
                cg.join("io.pressure"),
                format!(
                    "some avg10=40.00 avg60=1.00 avg300=0.50 total={total}\n\
                     full avg10=10.00 avg60=0.00 avg300=0.00 total={total}\n"
                ),
            )
            .unwrap()
        };
        let root = SysRoot::new(&sys, d.path().join("proc"));
        let tree = CgroupTree::find(&root).unwrap();
        let mut p = CgroupPressure::default();
        write(0);
        let first = p.read(&tree, "/db.service");
        assert_eq!(
            (first.some, first.full, first.avg10),
            (Some(40.0), Some(10.0), true)
        );
        // Stalled the whole time since: the share is capped at 100.
        write(u64::MAX / 2);
        let next = p.read(&tree, "/db.service");
        assert_eq!((next.some, next.avg10), (Some(100.0), false));
        // The root has none here; a cgroup gone has none.
        assert_eq!(p.read(&tree, "/"), Stalled::default());
        assert_eq!(p.read(&tree, "/gone.service"), Stalled::default());
    }
}
