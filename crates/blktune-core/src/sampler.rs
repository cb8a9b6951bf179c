//! The sampler: reads `<proc>/diskstats` once per tick and turns counter
//! differences into iostat -x statistics; keeps device info and queue settings
//! cached, re-reading them after a change, on hot-plug and every few seconds
//! (reading queue attributes of many devices costs far more than diskstats).

use crate::device::{self, BlockDevice};
use crate::diskstats::{self, Counters, DiskStatsLine};
use crate::host::CpuTimes;
use crate::iostat::{self, ExtStats, NoData};
use crate::os::SysRoot;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How often queue settings are re-read when nothing else asks for it.
pub const SETTINGS_REFRESH: Duration = Duration::from_secs(5);

/// One device's numbers for one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceStat {
    pub counters: Counters,
    /// `Err` when this interval has no data (first sample, reset counters).
    pub stats: Result<ExtStats, NoData>,
}

/// Pure rate computation over a stream of diskstats samples at monotonic times.
///
/// Used live by [`Sampler`] and by replay with recorded times.
#[derive(Debug, Default, Clone)]
pub struct RateTracker {
    prev: HashMap<String, Counters>,
    prev_t: Option<f64>,
}

impl RateTracker {
    /// Feed the counters seen at monotonic time `t` (seconds); returns each
    /// device's statistics over the interval since the previous call.
    pub fn update(&mut self, t: f64, lines: &[DiskStatsLine]) -> BTreeMap<String, DeviceStat> {
        let itv = self.prev_t.map(|p| t - p);
        let mut out = BTreeMap::new();
        let mut next = HashMap::with_capacity(lines.len());
        for l in lines {
            let stats = match (self.prev.get(&l.name), itv) {
                (Some(p), Some(itv)) => iostat::compute(p, &l.counters, itv),
                _ => Err(NoData::FirstSample),
            };
            out.insert(
                l.name.clone(),
                DeviceStat {
                    counters: l.counters,
                    stats,
                },
            );
            next.insert(l.name.clone(), l.counters);
        }
        // Devices that vanished simply drop out; if they come back they start over.
        self.prev = next;
        self.prev_t = Some(t);
        out
    }

    /// Seconds between the last two updates.
    pub fn last_interval(&self, t: f64) -> Option<f64> {
        self.prev_t.map(|p| t - p)
    }
}

/// What one tick produced.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Wall-clock time of the diskstats read.
    pub wall: SystemTime,
    /// Monotonic seconds since the sampler started.
    pub t: f64,
    /// Seconds since the previous tick (`None` on the first).
    pub interval: Option<f64>,
    /// Whole devices and their cached settings; shared until the next refresh.
    pub devices: Arc<Vec<BlockDevice>>,
    /// Did this tick re-read device info and settings?
    pub refreshed: bool,
    /// Statistics of every line of diskstats (partitions included), by name.
    pub stats: BTreeMap<String, DeviceStat>,
    /// CPU iowait percentage over the interval, from `<proc>/stat`.
    pub iowait_pct: Option<f64>,
    /// Lines of diskstats that could not be parsed, as messages.
    pub warnings: Vec<String>,
}

impl Snapshot {
    /// The statistics of a device, if this interval has them.
    pub fn ext(&self, name: &str) -> Option<&ExtStats> {
        self.stats.get(name).and_then(|s| s.stats.as_ref().ok())
    }

    /// The cached info of a whole device.
    pub fn device(&self, name: &str) -> Option<&BlockDevice> {
        self.devices.iter().find(|d| d.name == name)
    }
}

/// Live sampler over a [`SysRoot`].
#[derive(Debug)]
pub struct Sampler {
    root: SysRoot,
    start: Instant,
    rates: RateTracker,
    devices: Arc<Vec<BlockDevice>>,
    names: BTreeSet<String>,
    last_refresh: Instant,
    refresh_every: Duration,
    dirty: bool,
    cpu: Option<CpuTimes>,
}

impl Sampler {
    /// Discover devices and take the baseline sample, so the first [`tick`]
    /// reports a real interval.
    ///
    /// [`tick`]: Sampler::tick
    pub fn new(root: SysRoot) -> io::Result<Self> {
        let now = Instant::now();
        let mut s = Self {
            devices: Arc::new(device::discover(&root)?),
            root,
            start: now,
            rates: RateTracker::default(),
            names: BTreeSet::new(),
            last_refresh: now,
            refresh_every: SETTINGS_REFRESH,
            dirty: false,
            cpu: None,
        };
        s.tick()?;
        Ok(s)
    }

    /// The root this sampler reads.
    pub fn root(&self) -> &SysRoot {
        &self.root
    }

    /// Ask for device info and settings to be re-read on the next tick
    /// (after blktune changed something).
    pub fn invalidate(&mut self) {
        self.dirty = true;
    }

    /// Change how often settings are re-read without being asked.
    pub fn set_refresh_every(&mut self, every: Duration) {
        self.refresh_every = every;
    }

    /// The cached devices.
    pub fn devices(&self) -> &Arc<Vec<BlockDevice>> {
        &self.devices
    }

    /// Read diskstats (and, when due, device settings) and compute the interval.
    pub fn tick(&mut self) -> io::Result<Snapshot> {
        let text = self.root.read_diskstats()?;
        let now = Instant::now();
        let wall = SystemTime::now();
        let t = now.duration_since(self.start).as_secs_f64();
        let (lines, bad) = diskstats::parse(&text);
        let warnings = bad
            .into_iter()
            .map(|(n, e)| format!("diskstats line {n}: {e}"))
            .collect();
        let interval = self.rates.last_interval(t);
        let stats = self.rates.update(t, &lines);

        // Hot-plug shows up as a change in the set of names in diskstats.
        let names_changed =
            stats.len() != self.names.len() || stats.keys().zip(&self.names).any(|(a, b)| a != b);
        if names_changed {
            self.names = stats.keys().cloned().collect();
        }
        let due = now.duration_since(self.last_refresh) >= self.refresh_every;
        let refreshed = self.dirty || names_changed || due;
        if refreshed {
            // A vanished /sys/block would be odd; keep the old list rather than fail the tick.
            if let Ok(devs) = device::discover(&self.root) {
                self.devices = Arc::new(devs);
            }
            self.last_refresh = now;
            self.dirty = false;
        }

        let cpu = self
            .root
            .read_proc("stat")
            .ok()
            .and_then(|s| CpuTimes::parse(&s));
        let iowait_pct = match (&self.cpu, &cpu) {
            (Some(p), Some(c)) => c.iowait_pct_since(p),
            _ => None,
        };
        self.cpu = cpu;

        Ok(Snapshot {
            wall,
            t,
            interval,
            devices: Arc::clone(&self.devices),
            refreshed,
            stats,
            iowait_pct,
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, rd_ios: u64, rd_ticks: u32) -> DiskStatsLine {
        DiskStatsLine {
            major: 7,
            minor: 0,
            name: name.into(),
            counters: Counters {
                rd_ios,
                rd_ticks,
                ..Counters::default()
            },
        }
    }

    #[test]
    fn first_sample_and_new_devices_have_no_data() {
        let mut r = RateTracker::default();
        let out = r.update(0.0, &[line("a", 0, 0)]);
        assert_eq!(out["a"].stats, Err(NoData::FirstSample));
        let out = r.update(1.0, &[line("a", 100, 300), line("b", 5, 5)]);
        assert_eq!(out["a"].stats.unwrap().r_s, 100.0);
        assert_eq!(out["a"].stats.unwrap().r_await, 3.0);
        assert_eq!(out["b"].stats, Err(NoData::FirstSample));
    }

    #[test]
    fn a_device_that_vanished_and_came_back_starts_over() {
        let mut r = RateTracker::default();
        r.update(0.0, &[line("a", 100, 0)]);
        r.update(1.0, &[]);
        let out = r.update(2.0, &[line("a", 3, 0)]);
        assert_eq!(out["a"].stats, Err(NoData::FirstSample));
    }

    #[test]
    fn recreated_device_with_smaller_counters_is_no_data() {
        let mut r = RateTracker::default();
        r.update(0.0, &[line("a", 100, 0)]);
        let out = r.update(1.0, &[line("a", 3, 0)]);
        assert_eq!(out["a"].stats, Err(NoData::CounterReset));
        // and the interval after that is normal again
        let out = r.update(2.0, &[line("a", 13, 0)]);
        assert_eq!(out["a"].stats.unwrap().r_s, 10.0);
    }

    mod cache {
        use super::super::*;
        use crate::fake::{FakeDisk, FakeTree};

        fn nr_of(snap: &Snapshot, name: &str) -> Option<u64> {
            snap.device(name).and_then(|d| d.queue.nr_requests)
        }

        fn tree() -> (tempfile::TempDir, FakeTree) {
            let dir = tempfile::tempdir().unwrap();
            let t = FakeTree::new(dir.path()).unwrap();
            t.add(&FakeDisk::new("sda")).unwrap();
            t.set_diskstats(&[("sda", 8, 0, Counters::default())])
                .unwrap();
            (dir, t)
        }

        #[test]
        fn queue_settings_are_cached_until_invalidated() {
            let (_d, t) = tree();
            let mut s = Sampler::new(t.root()).unwrap();
            s.set_refresh_every(Duration::from_secs(3600));
            std::fs::write(t.dev_dir("sda").join("queue/nr_requests"), "64\n").unwrap();
            let snap = s.tick().unwrap();
            assert!(!snap.refreshed);
            assert_eq!(nr_of(&snap, "sda"), Some(256), "not re-read every tick");
            s.invalidate();
            let snap = s.tick().unwrap();
            assert!(snap.refreshed);
            assert_eq!(nr_of(&snap, "sda"), Some(64));
            let snap = s.tick().unwrap();
            assert!(!snap.refreshed, "one refresh per invalidate");
        }

        #[test]
        fn queue_settings_are_re_read_after_the_refresh_period() {
            let (_d, t) = tree();
            let mut s = Sampler::new(t.root()).unwrap();
            s.set_refresh_every(Duration::from_millis(50));
            std::fs::write(t.dev_dir("sda").join("queue/nr_requests"), "32\n").unwrap();
            std::thread::sleep(Duration::from_millis(60));
            let snap = s.tick().unwrap();
            assert!(snap.refreshed);
            assert_eq!(nr_of(&snap, "sda"), Some(32));
        }

        #[test]
        fn hot_plug_refreshes_and_the_new_device_has_no_data_yet() {
            let (_d, t) = tree();
            let mut s = Sampler::new(t.root()).unwrap();
            s.set_refresh_every(Duration::from_secs(3600));
            t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
            t.set_diskstats(&[
                ("sda", 8, 0, Counters::default()),
                (
                    "sdb",
                    8,
                    16,
                    Counters {
                        rd_ios: 1_000_000,
                        ..Counters::default()
                    },
                ),
            ])
            .unwrap();
            let snap = s.tick().unwrap();
            assert!(snap.refreshed, "a new name in diskstats is hot-plug");
            assert!(snap.device("sdb").is_some());
            assert_eq!(snap.stats["sdb"].stats, Err(NoData::FirstSample));
            assert!(snap.stats["sda"].stats.is_ok());
            // and when it goes away
            t.remove("sdb").unwrap();
            t.set_diskstats(&[("sda", 8, 0, Counters::default())])
                .unwrap();
            let snap = s.tick().unwrap();
            assert!(snap.refreshed);
            assert!(snap.device("sdb").is_none() && !snap.stats.contains_key("sdb"));
        }

        #[test]
        fn the_first_tick_after_new_is_a_real_interval() {
            let (_d, t) = tree();
            let mut s = Sampler::new(t.root()).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            let snap = s.tick().unwrap();
            let itv = snap.interval.unwrap();
            assert!((0.1..1.0).contains(&itv), "{itv}");
            assert!(snap.stats["sda"].stats.is_ok());
        }
    }
}
