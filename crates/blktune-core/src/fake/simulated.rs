//! A fake device that behaves: a thread keeps `/proc/diskstats` of a fake
//! tree moving as if a load ran, at the latency a caller-given function
//! assigns to the scheduler and nr_requests the device has now, and brackets
//! every scheduler name written, as the kernel shows the active one. So a
//! shoot-out or an A/B runs end to end without root, with a known truth.
//! (Unlike the kernel it leaves nr_requests alone after a switch: a reset
//! racing the tuner's own nr_requests write would fail its read-back.)

use super::FakeTree;
use crate::diskstats::Counters;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How one device of the fake tree is doing right now.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Behaviour {
    pub reads_per_s: f64,
    pub read_ms: f64,
    pub writes_per_s: f64,
    pub write_ms: f64,
    /// Sectors per I/O.
    pub sectors: f64,
}

/// A line of the simulated diskstats: a device, its numbers and, for the
/// device under test, its scheduler settings.
#[derive(Debug, Clone)]
pub struct SimLine {
    pub name: String,
    pub major: u32,
    pub minor: u32,
}

/// The running simulation; stops (and joins) when dropped.
#[derive(Debug)]
pub struct Simulated {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Simulated {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// How often the simulation advances the counters.
const TICK: Duration = Duration::from_millis(1);

/// How often a scheduler name written is bracketed, on a thread of its own:
/// a tool reads the line back a few milliseconds after its write (a
/// shoot-out's restore, then the winner's rule checked against the line),
/// and a diskstats write on a busy disk held the counters' thread for 4 ms.
const BRACKET_TICK: Duration = Duration::from_micros(200);

/// Accumulated counters of one line (fractions kept until whole).
#[derive(Debug, Clone, Default)]
struct Acc {
    rd: f64,
    rd_ms: f64,
    wr: f64,
    wr_ms: f64,
    sectors_r: f64,
    sectors_w: f64,
    busy_ms: f64,
    queue_ms: f64,
}

impl Acc {
    fn add(&mut self, behaviour: &Behaviour, dt: f64) {
        let (r, w) = (behaviour.reads_per_s * dt, behaviour.writes_per_s * dt);
        self.rd += r;
        self.wr += w;
        self.rd_ms += r * behaviour.read_ms;
        self.wr_ms += w * behaviour.write_ms;
        self.sectors_r += r * behaviour.sectors;
        self.sectors_w += w * behaviour.sectors;
        // Busy whenever there is I/O; the queue is I/Os times their time.
        if r + w > 0.0 {
            self.busy_ms += dt * 1000.0;
        }
        self.queue_ms += r * behaviour.read_ms + w * behaviour.write_ms;
    }

    fn counters(&self) -> Counters {
        Counters {
            rd_ios: self.rd as u64,
            rd_sectors: self.sectors_r as u64,
            rd_ticks: self.rd_ms as u32,
            wr_ios: self.wr as u64,
            wr_sectors: self.sectors_w as u64,
            wr_ticks: self.wr_ms as u32,
            io_ticks: self.busy_ms as u32,
            time_in_queue: self.queue_ms as u32,
            ..Counters::default()
        }
    }
}

/// A file's identity and age: a write changes the mtime (or, renamed
/// over, the inode).
fn stamp(p: &std::path::Path) -> Option<(u64, i64, i64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p)
        .ok()
        .map(|m| (m.ino(), m.mtime(), m.mtime_nsec(), m.size()))
}

/// The active scheduler of a line: the bracketed name, or a single bare one
/// (a name written and not bracketed yet).
fn active_of(line: &str) -> &str {
    let mut words = line.split_whitespace();
    match (words.next(), words.next()) {
        (Some(only), None) => only.trim_start_matches('[').trim_end_matches(']'),
        _ => line
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
            .unwrap_or(""),
    }
}

impl FakeTree {
    /// Bracket a bare scheduler name written to `device`'s queue (one of
    /// `available`), atomically, as the kernel shows the active one; the
    /// simulation does it every millisecond, a caller that must not wait
    /// for its thread (a shoot-out's progress callback) does it at once.
    ///
    /// The file is replaced only if nobody wrote it since it was read: a
    /// tool's write landing between the read and the rename would otherwise
    /// be lost (its read-back then sees the old scheduler, rolls back, and
    /// its next check finds a bare name, so the only scheduler).
    pub fn bracket(&self, device: &str, available: &[&str]) {
        let queue = self.dev_dir(device).join("queue");
        let path = queue.join("scheduler");
        // Identity and age first: a write after this changes the mtime
        // (or, renamed over, the inode).
        let Some(seen) = stamp(&path) else {
            return;
        };
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        let written = written.trim();
        if !available.contains(&written) {
            return;
        }
        let all: Vec<String> = available.iter().map(|s| s.to_string()).collect();
        let tmp = queue.join(".scheduler.tmp");
        if std::fs::write(&tmp, super::scheduler_line(&all, written)).is_ok()
            && stamp(&path) == Some(seen)
        {
            let _ = std::fs::rename(&tmp, &path);
        }
    }

    /// Keep diskstats of `lines` moving: a thread brackets a scheduler name
    /// written to `device` (whose schedulers are `available`) every
    /// [`BRACKET_TICK`]; another, every millisecond, adds the I/Os of the
    /// time gone by (`nr_default` when nr_requests cannot be read), as `behave(active scheduler, nr_requests)` says each line
    /// (in the order of `lines`) is doing. `behave` may keep state (noise).
    pub fn simulate(
        &self,
        device: &str,
        available: &[&str],
        nr_default: u64,
        lines: Vec<SimLine>,
        behave: impl FnMut(&str, u64) -> Vec<Behaviour> + Send + 'static,
    ) -> Simulated {
        self.simulate_lagging(device, available, nr_default, lines, Duration::ZERO, behave)
    }

    /// [`FakeTree::simulate`], but a name written stays bare for `lag`
    /// before it is bracketed: a reader that relies on the line right after
    /// its own write (a single bare name reads as the only scheduler) fails
    /// every time instead of once in a while under load.
    pub fn simulate_lagging(
        &self,
        device: &str,
        available: &[&str],
        nr_default: u64,
        lines: Vec<SimLine>,
        lag: Duration,
        mut behave: impl FnMut(&str, u64) -> Vec<Behaviour> + Send + 'static,
    ) -> Simulated {
        // The lines exist from the start: a first sample finds them all.
        let zero: Vec<(&str, u32, u32, Counters)> = lines
            .iter()
            .map(|l| (l.name.as_str(), l.major, l.minor, Counters::default()))
            .collect();
        let _ = self.set_diskstats(&zero);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let tree = self.clone();
        let device = device.to_string();
        let available: Vec<String> = available.iter().map(|s| s.to_string()).collect();
        // The one thread that rewrites the scheduler line (two would race
        // each other's renames).
        let bracketer = {
            let (tree, device) = (tree.clone(), device.clone());
            let flag = Arc::clone(&stop);
            std::thread::spawn(move || {
                let avail: Vec<&str> = available.iter().map(String::as_str).collect();
                let path = tree.dev_dir(&device).join("queue/scheduler");
                // The line as last seen, and since when.
                let mut since = (stamp(&path), Instant::now());
                while !flag.load(Ordering::Relaxed) {
                    let now = stamp(&path);
                    if now != since.0 {
                        since = (now, Instant::now());
                    }
                    if since.1.elapsed() >= lag {
                        tree.bracket(&device, &avail);
                    }
                    std::thread::sleep(BRACKET_TICK);
                }
            })
        };
        let thread = std::thread::spawn(move || {
            let mut acc = vec![Acc::default(); lines.len()];
            let mut last = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                let queue = tree.dev_dir(&device).join("queue");
                let read = |f: &str| std::fs::read_to_string(queue.join(f)).unwrap_or_default();
                let line = read("scheduler");
                let active = active_of(&line).to_string();
                let nr = read("nr_requests").trim().parse().unwrap_or(nr_default);
                let now = Instant::now();
                let dt = now.duration_since(last).as_secs_f64();
                last = now;
                for (a, b) in acc.iter_mut().zip(behave(&active, nr)) {
                    a.add(&b, dt);
                }
                let rows: Vec<(&str, u32, u32, Counters)> = lines
                    .iter()
                    .zip(&acc)
                    .map(|(l, a)| (l.name.as_str(), l.major, l.minor, a.counters()))
                    .collect();
                let _ = tree.set_diskstats(&rows);
            }
        });
        Simulated {
            stop,
            threads: vec![bracketer, thread],
        }
    }
}
