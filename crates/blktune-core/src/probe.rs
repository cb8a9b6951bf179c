//! The latency probe: a few 4 KiB O_DIRECT reads per second at random
//! offsets of each watched device, timed one by one, because diskstats only
//! gives averages and averages hide the tail an application feels.
//!
//! Read-only by construction: devices are opened with `O_RDONLY | O_DIRECT`
//! and nothing else. Its own load is reported ([`ProbeStats::reads_per_sec`])
//! so that nobody mistakes the probe's reads for the workload's; they are
//! counted in the device's r/s too.
//!
//! The probe measures a read above the block layer (the syscall, as an
//! application sees it), and only a few per second: each interval keeps its
//! reads' latencies ([`ProbeReads`]), so that a window's percentiles are
//! pooled from all of its reads, never averaged from per-interval figures,
//! and every figure comes with the count it rests on. Under
//! [`MIN_IOS_FOR_P99`] reads there is no p99 (it would be the slowest read).
//!
//! ```no_run
//! let root = blktune_core::os::SysRoot::default();
//! let probe = blktune_core::probe::Probe::start(&root, &["sda".to_string()], 5.0);
//! std::thread::sleep(std::time::Duration::from_secs(1));
//! for (dev, s) in probe.take() {
//!     let f = s.reads_ns.figures();
//!     println!("{dev}: {:.1} reads/s, n={} p50 {:?} ms", s.reads_per_sec, f.n, f.p50);
//! }
//! ```

pub use crate::latency::MIN_IOS_FOR_P99;
use crate::os::SysRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default probe reads per second per device.
pub const DEFAULT_RATE: f64 = 5.0;

/// The latencies (ns) of a set of probe reads, sorted: an interval's, or a
/// window's pooled from its intervals. The probe reads a few times a second,
/// so the exact values are kept; no histogram, no rounding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeReads(Vec<u64>);

impl ProbeReads {
    /// The reads with these latencies (ns), in any order.
    pub fn from_ns(mut ns: Vec<u64>) -> Self {
        ns.sort_unstable();
        Self(ns)
    }

    /// All the reads of `parts` together: a window's reads from its intervals'.
    pub fn pool<'a>(parts: impl IntoIterator<Item = &'a ProbeReads>) -> Self {
        Self::from_ns(
            parts
                .into_iter()
                .flat_map(|p| p.0.iter().copied())
                .collect(),
        )
    }

    /// Number of reads.
    pub fn n(&self) -> u64 {
        self.0.len() as u64
    }

    /// The latencies (ns), fastest first.
    pub fn ns(&self) -> &[u64] {
        &self.0
    }

    /// The `quantile`-quantile (0 to 1) in ms by nearest rank: the smallest read
    /// that at least a fraction `quantile` of the reads do not exceed, so always
    /// the latency of a real read. `None` without reads.
    pub fn quantile_ms(&self, quantile: f64) -> Option<f64> {
        let n = self.0.len();
        let rank = (quantile.clamp(0.0, 1.0) * n as f64).ceil() as usize;
        let ns = *self.0.get(rank.clamp(1, n.max(1)) - 1)?;
        Some(ns as f64 / 1e6)
    }

    /// What the reads say, with their count; no p99 under [`MIN_IOS_FOR_P99`].
    pub fn figures(&self) -> ProbeFigures {
        let n = self.n();
        ProbeFigures {
            n,
            p50: self.quantile_ms(0.5),
            p99: (n >= MIN_IOS_FOR_P99)
                .then(|| self.quantile_ms(0.99))
                .flatten(),
            max: self.0.last().map(|&ns| ns as f64 / 1e6),
        }
    }
}

/// The probe's latency figures (ms) of an interval or a window, with the
/// number of reads they rest on. Honest by construction: `p99` is `None`
/// under [`MIN_IOS_FOR_P99`] reads; `p50` and `max` are `None` without any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ProbeFigures {
    /// Number of reads.
    pub n: u64,
    /// Median (nearest rank).
    pub p50: Option<f64>,
    /// 99th percentile (nearest rank), from 100 reads on.
    pub p99: Option<f64>,
    /// The slowest read.
    pub max: Option<f64>,
}

/// What the probe saw on one device since the last [`Probe::take`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeStats {
    /// Reads completed.
    pub reads: u64,
    /// The probe's own load on the device.
    pub reads_per_sec: f64,
    pub errors: u64,
    /// Latency of each completed read.
    pub reads_ns: ProbeReads,
    /// The last error (cannot open, read failed), if any.
    pub error: Option<String>,
}

impl ProbeStats {
    /// The interval as `watch --json` shows it.
    pub fn json(&self) -> ProbeJson {
        ProbeJson {
            figures: self.reads_ns.figures(),
            reads_per_sec: self.reads_per_sec,
            errors: self.errors,
            error: self.error.clone(),
        }
    }
}

/// The `probe` object of a `watch --probe --json` record: `n` (reads
/// completed in the interval), `p50`, `p99`, `max` (ms of those reads,
/// timed above the block layer; `null` without reads, `p99` `null` under
/// 100 reads), `reads_per_sec` (the probe's own load), `errors`, and
/// `error` (the last one) when there was one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeJson {
    #[serde(flatten)]
    pub figures: ProbeFigures,
    pub reads_per_sec: f64,
    pub errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug)]
struct DevState {
    ns: Vec<u64>,
    reads: u64,
    errors: u64,
    error: Option<String>,
    since: Instant,
}

impl DevState {
    fn new() -> Self {
        Self {
            ns: Vec::new(),
            reads: 0,
            errors: 0,
            error: None,
            since: Instant::now(),
        }
    }
}

#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    wanted: Mutex<Vec<String>>,
    state: Mutex<BTreeMap<String, DevState>>,
}

/// A running probe; stops when dropped.
#[derive(Debug)]
pub struct Probe {
    shared: Arc<Shared>,
    rate: f64,
    thread: Option<JoinHandle<()>>,
}

impl Probe {
    /// Start probing `devices` (whole devices or partitions) at `rate` reads
    /// per second each (clamped to 0.1–100). Errors (a device that cannot be
    /// opened) show up in [`ProbeStats::error`], not here.
    pub fn start(root: &SysRoot, devices: &[String], rate: f64) -> Self {
        let rate = if rate.is_finite() {
            rate.clamp(0.1, 100.0)
        } else {
            DEFAULT_RATE
        };
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            wanted: Mutex::new(devices.to_vec()),
            state: Mutex::new(BTreeMap::new()),
        });
        let s = Arc::clone(&shared);
        let root = root.clone();
        let thread = std::thread::Builder::new()
            .name("blktune-probe".into())
            .spawn(move || probe_loop(&root, &s, rate))
            .ok();
        if thread.is_none()
            && let Ok(mut st) = shared.state.lock()
        {
            for d in devices {
                let mut ds = DevState::new();
                ds.error = Some("cannot start the probe thread".into());
                st.insert(d.clone(), ds);
            }
        }
        Self {
            shared,
            rate,
            thread,
        }
    }

    /// Reads per second per device.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Probe these devices from now on (the TUI's selection changed).
    pub fn set_devices(&self, devices: &[String]) {
        if let Ok(mut w) = self.shared.wanted.lock() {
            *w = devices.to_vec();
        }
    }

    /// Each device's figures since the previous call, and start a new interval.
    pub fn take(&self) -> BTreeMap<String, ProbeStats> {
        let mut out = BTreeMap::new();
        let Ok(mut st) = self.shared.state.lock() else {
            return out;
        };
        let now = Instant::now();
        for (name, d) in st.iter_mut() {
            let secs = now.duration_since(d.since).as_secs_f64();
            out.insert(
                name.clone(),
                ProbeStats {
                    reads: d.reads,
                    reads_per_sec: if secs > 0.0 {
                        d.reads as f64 / secs
                    } else {
                        0.0
                    },
                    errors: d.errors,
                    reads_ns: ProbeReads::from_ns(std::mem::take(&mut d.ns)),
                    error: d.error.take(),
                },
            );
            d.reads = 0;
            d.errors = 0;
            d.since = now;
        }
        out
    }

    /// Stop the probe thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // A read on a stuck device can block for minutes; quitting the
            // tuner (and reverting its changes) must not wait for it. The
            // thread sees the stop flag and closes the device when the read
            // returns.
            join_within(t, STOP_WAIT);
        }
    }
}

/// How long stopping waits for the probe thread before leaving it behind.
const STOP_WAIT: Duration = Duration::from_secs(1);

/// Join `thread` if it ends within `limit`, else detach it; whether it ended.
fn join_within(thread: JoinHandle<()>, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !thread.is_finished() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = thread.join();
    true
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.halt();
    }
}

/// An open device: the file, its size and alignment.
struct Open {
    file: File,
    size: u64,
    align: u64,
}

/// Size in bytes and I/O alignment of a whole device or a partition, from sysfs.
fn geometry(root: &SysRoot, name: &str) -> Option<(u64, u64)> {
    let (dev, size_attr) = match root.device(name) {
        Some(d) => (d, "size".to_string()),
        None => (root.parent_of_partition(name)?, format!("{name}/size")),
    };
    let sectors: u64 = root.read_dev_attr(&dev, &size_attr).ok()?.parse().ok()?;
    let lbs: u64 = root
        .read_dev_attr(&dev, "queue/logical_block_size")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(512);
    Some((sectors * 512, lbs.max(4096)))
}

/// Open `/dev/<name>` read-only with O_DIRECT. Never for writing.
fn open_ro(root: &SysRoot, name: &str) -> Result<Open, String> {
    let (size, align) =
        geometry(root, name).ok_or_else(|| format!("'{name}' is not a block device"))?;
    if size < align {
        return Err(format!("'{name}' is empty"));
    }
    let path = std::path::Path::new("/dev").join(name);
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| format!("cannot open {} for reading: {e}", path.display()))?;
    Ok(Open { file, size, align })
}

fn probe_loop(root: &SysRoot, shared: &Shared, rate: f64) {
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut open: BTreeMap<String, Result<Open, String>> = BTreeMap::new();
    let mut rng = crate::load::Rng::seeded(0x9b07);
    let mut buf = crate::load::AlignedBuf::new(65536, 65536);
    let mut next = Instant::now();
    while !shared.stop.load(Ordering::Relaxed) {
        let wanted = shared.wanted.lock().map(|w| w.clone()).unwrap_or_default();
        open.retain(|k, _| wanted.contains(k));
        if let Ok(mut st) = shared.state.lock() {
            st.retain(|k, _| wanted.contains(k));
            // A device's interval starts when it becomes wanted, not at its
            // first read: else a take() just after that read would divide
            // one read by a few milliseconds and report a huge rate.
            for name in &wanted {
                st.entry(name.clone()).or_insert_with(DevState::new);
            }
        }
        for name in &wanted {
            let dev = open
                .entry(name.clone())
                .or_insert_with(|| open_ro(root, name));
            let result = match dev {
                Ok(d) => {
                    let len = d.align as usize;
                    let off = rng.offset(d.size, d.align);
                    let b = &mut buf.bytes_mut()[..len];
                    let t = Instant::now();
                    let r = d.file.read_at(b, off);
                    let ns = t.elapsed().as_nanos() as u64;
                    match r {
                        Ok(n) if n == len => Ok(ns),
                        Ok(n) => Err(format!("short read of {n} bytes at offset {off}")),
                        Err(e) => Err(format!("read at offset {off} failed: {e}")),
                    }
                }
                Err(e) => Err(e.clone()),
            };
            let Ok(mut st) = shared.state.lock() else {
                return;
            };
            let d = st.entry(name.clone()).or_insert_with(DevState::new);
            match result {
                Ok(ns) => {
                    d.reads += 1;
                    d.ns.push(ns);
                }
                Err(e) => {
                    d.errors += 1;
                    d.error = Some(e);
                }
            }
        }
        // Absolute deadlines; after a stall, do not burst to catch up.
        next += period;
        let now = Instant::now();
        if next < now {
            next = now;
        }
        while !shared.stop.load(Ordering::Relaxed) && Instant::now() < next {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> ProbeReads {
        ProbeReads::from_ns(values.iter().map(|ms| ms * 1_000_000).collect())
    }

    #[test]
    fn a_window_pools_its_intervals_reads_into_exact_percentiles() {
        // 120 reads of 1..=120 ms over three intervals of different sizes,
        // the slow ones all in the last: its own p99 is 120 ms, a mean of
        // the three intervals' "p99" (their slowest read) would be 80 ms.
        let a = ms(&(1..=50).rev().collect::<Vec<_>>());
        let b = ms(&(51..=70).collect::<Vec<_>>());
        let c = ms(&(71..=120).collect::<Vec<_>>());
        let w = ProbeReads::pool([&a, &b, &c]).figures();
        assert_eq!(w.n, 120);
        // Nearest rank: the 60th and the 119th of 120 reads.
        assert_eq!(w.p50, Some(60.0));
        assert_eq!(w.p99, Some(119.0));
        assert_eq!(w.max, Some(120.0));
        // Pooling in any order gives the same reads.
        assert_eq!(
            ProbeReads::pool([&c, &a, &b]),
            ProbeReads::pool([&a, &b, &c])
        );
    }

    #[test]
    fn under_100_reads_there_is_a_count_a_median_and_a_max_but_no_p99() {
        let few: Vec<ProbeReads> = (0..19)
            .map(|i| ms(&[1 + i, 2 + i, 3 + i, 4 + i, 100 + i]))
            .collect();
        let w = ProbeReads::pool(&few).figures();
        assert_eq!(w.n, 95);
        assert_eq!(w.p99, None);
        assert_eq!(w.max, Some(118.0));
        assert!(w.p50.is_some());
        let one = ms(&[7]).figures();
        assert_eq!(
            (one.n, one.p50, one.p99, one.max),
            (1, Some(7.0), None, Some(7.0))
        );
        assert_eq!(ProbeReads::default().figures(), ProbeFigures::default());
        // 100 reads: the 99th fastest is the p99.
        let hundred = ms(&(1..=100).collect::<Vec<_>>()).figures();
        assert_eq!((hundred.p50, hundred.p99), (Some(50.0), Some(99.0)));
    }

    #[test]
    fn the_json_of_an_interval_has_its_count_and_no_p99_under_100_reads() {
        let s = ProbeStats {
            reads: 3,
            reads_per_sec: 3.0,
            errors: 0,
            reads_ns: ms(&[2, 1, 3]),
            error: None,
        };
        let v = serde_json::to_value(s.json()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"n": 3, "p50": 2.0, "p99": null, "max": 3.0, "reads_per_sec": 3.0, "errors": 0})
        );
    }

    #[test]
    fn stopping_does_not_wait_for_a_stuck_read() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        // Stands in for a read that does not return until released.
        let stuck = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        let started = Instant::now();
        assert!(!join_within(stuck, Duration::from_millis(100)));
        assert!(started.elapsed() < Duration::from_secs(30));
        drop(tx);
    }

    #[test]
    fn a_thread_that_ends_is_joined() {
        let quick = std::thread::spawn(|| std::thread::sleep(Duration::from_millis(20)));
        assert!(join_within(quick, Duration::from_secs(30)));
    }
}
