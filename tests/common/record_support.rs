//! A scripted recording session on a fake tree, shared by the record tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use blktune_core::device::{self, BlockDevice};
use blktune_core::diskstats::{self, Counters};
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::history::ChangeMark;
use blktune_core::record::{RecordOptions, Recorder, Recording};
use blktune_core::sampler::{DeviceStats, RateTracker, Snapshot};
use blktune_core::tuner::Wanted;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub const SCHEDS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];
/// The live clock's time when recording starts; a dyadic value so that
/// subtracting it is exact and the replayed intervals equal the live ones.
pub const ORIGIN: f64 = 100.0;
/// The sampler checks every device's settings within this time.
pub const CHECKED_WITHIN: Duration = Duration::from_millis(250);
pub const STEPS: usize = 24;
/// The step at which another process switches sda to kyber.
pub const OBSERVED_AT: usize = 8;
/// The step before which this process switches sda to none (TUI-style).
pub const OWN_AT: usize = 16;
/// The step at which a disk sdb is plugged in (a refresh step).
pub const HOTPLUG_AT: usize = 20;

/// What the live side saw at one tick.
pub struct LiveTick {
    pub t: f64,
    pub interval: Option<f64>,
    pub stats: DeviceStats,
    pub devices: Arc<Vec<BlockDevice>>,
}

pub struct Session {
    pub _dir: tempfile::TempDir,
    pub tree: FakeTree,
    pub file: PathBuf,
    pub live: Vec<LiveTick>,
    pub own_mark: ChangeMark,
    pub observed_window: (f64, f64),
}

pub fn counters(step: u64, scale: u64) -> Counters {
    let reads = 100 * step * step * scale;
    let writes = 40 * step * scale;
    Counters {
        rd_ios: reads,
        rd_merges: reads / 10,
        rd_sectors: reads * 8,
        rd_ticks: (reads * 3 / 2) as u32,
        wr_ios: writes,
        wr_merges: writes / 4,
        wr_sectors: writes * 256,
        wr_ticks: (writes * 7) as u32,
        in_flight: step % 5,
        io_ticks: (step * 450) as u32,
        time_in_queue: (step * 900 + reads) as u32,
        ..Counters::default()
    }
}

/// Switch a fake device's scheduler the way the kernel shows it afterwards.
pub fn switch(tree: &FakeTree, dev: &str, to: &str, nr: u64) {
    std::fs::write(tree.dev_dir(dev).join("queue/scheduler"), format!("{to}\n")).unwrap();
    tree.settle(dev, &SCHEDS, nr).unwrap();
}

pub fn tick_time(i: usize) -> f64 {
    // Uneven but exactly representable intervals around 0.5 s.
    ORIGIN + i as f64 * 0.5 + (i % 3) as f64 * 0.125
}

/// Record a scripted session, computing the live figures the way the
/// sampler does (same parser, same RateTracker), with synthetic times.
pub fn record_session(name: &str, only: &[&str]) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("tree")).unwrap();
    tree.add(
        &FakeDisk::new("sda")
            .model("Fake SSD", Some("ACME"))
            .partitions(&["sda1"]),
    )
    .unwrap();
    tree.add(&FakeDisk::new("nvme0n1").dev(259, 0).active("none"))
        .unwrap();
    let root = tree.root();
    let file = dir.path().join(name);
    let mut devices = Arc::new(device::discover(&root).unwrap());
    let opts = RecordOptions {
        force: false,
        only: only.iter().map(|s| s.to_string()).collect(),
        interval: Duration::from_millis(500),
        checked_within: CHECKED_WITHIN,
    };
    let mut rec = Recorder::create(&file, &root, &devices, ORIGIN, &opts).unwrap();
    let mut rates = RateTracker::default();
    let mut live = Vec::new();
    let mut own_mark = None;
    let mut observed_window = (0.0, 0.0);
    let mut last_refresh_t = ORIGIN;
    for i in 0..STEPS {
        let t = tick_time(i);
        let s = i as u64;
        let mut lines = vec![
            ("sda", 8, 0, counters(s, 3)),
            ("sda1", 8, 1, counters(s, 2)),
            ("nvme0n1", 259, 0, counters(s * 2, 5)),
        ];
        if i >= HOTPLUG_AT {
            if i == HOTPLUG_AT {
                tree.add(&FakeDisk::new("sdb").dev(8, 16).active("bfq"))
                    .unwrap();
            }
            lines.push(("sdb", 8, 16, counters(s - 10, 1)));
        }
        tree.set_diskstats(&lines).unwrap();
        let mut refreshed = i % 4 == 0;
        if i == OBSERVED_AT {
            // Another process (blktune set in another shell) switches sda.
            switch(&tree, "sda", "kyber", 256);
            refreshed = true;
            // Seen at this tick: made after the last refreshed snapshot and
            // after the sampler's last check (a snapshot is refreshed only
            // when something changed, so the last one can be long ago).
            let since = last_refresh_t.max(t - CHECKED_WITHIN.as_secs_f64());
            observed_window = (since - ORIGIN, t - ORIGIN);
        }
        if i == OWN_AT {
            // This process switches sda, between two ticks, and says so.
            let dev = root.device("sda").unwrap();
            let before = Wanted::snapshot_of(&device::QueueSettings::read(&root, &dev));
            switch(&tree, "sda", "none", 128);
            let after = Wanted::snapshot_of(&device::QueueSettings::read(&root, &dev));
            let mark = ChangeMark {
                device: "sda".into(),
                t: t - 0.25,
                label: "kyber→none, nr_requests 256→128".into(),
                before,
                after,
            };
            rec.change(&mark).unwrap();
            own_mark = Some(mark);
            refreshed = true;
        }
        if refreshed {
            devices = Arc::new(device::discover(&root).unwrap());
            last_refresh_t = t;
        }
        let (lines, bad) = diskstats::parse(&root.read_diskstats().unwrap());
        assert!(bad.is_empty());
        let interval = rates.last_interval(t);
        let stats = rates.update(t, &lines);
        let snap = Snapshot {
            wall: SystemTime::now(),
            t,
            interval,
            devices: Arc::clone(&devices),
            refreshed,
            stats: stats.clone(),
            iowait_pct: Some(i as f64),
            cpu_busy_pct: None,
            pressure: None,
            warnings: Vec::new(),
        };
        rec.snapshot(&snap).unwrap();
        live.push(LiveTick {
            t,
            interval,
            stats,
            devices: Arc::clone(&devices),
        });
    }
    let stats = rec.finish("stopped").unwrap();
    assert_eq!(stats.samples, STEPS as u64);
    Session {
        _dir: dir,
        tree,
        file,
        live,
        own_mark: own_mark.unwrap(),
        observed_window,
    }
}

pub fn open(path: &Path) -> Arc<Recording> {
    Arc::new(Recording::open(path).unwrap())
}

pub fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}
