//! A scripted fake machine for the TUI tests: fake sysfs tree, scripted
//! diskstats counters on a scripted clock, so screens are deterministic.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use blktune::tui::app::{App, Config};
use blktune::tui::command::Mode;
use blktune::tui::render;
use blktune::tui::worker::latency::{DeviceLatency, LatencyFeed, LatencySample};
use blktune::tui::worker::protocol::{Control, Feed, ProbeSample};
use blktune_core::device::{self, BlockDevice};
use blktune_core::diskstats::{Counters, DiskStatsLine};
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::history::ChangeMark;
use blktune_core::host::HostInfo;
use blktune_core::latency::SparseHist;
use blktune_core::latency::hist::Hist;
use blktune_core::latency::{Dir, Span};
use blktune_core::probe::{ProbeReads, ProbeStats};
use blktune_core::sampler::{RateTracker, Snapshot};
use blktune_core::tuner::Wanted;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// Per-second load of one device.
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    pub reads: u64,
    pub read_ms: u32,
    pub writes: u64,
    pub write_ms: u32,
    pub busy_ms: u32,
}

pub fn load(reads: u64, r_await: u32, writes: u64, w_await: u32, util: u32) -> Load {
    Load {
        reads,
        read_ms: reads as u32 * r_await,
        writes,
        write_ms: writes as u32 * w_await,
        busy_ms: util * 10,
    }
}

pub struct Machine {
    pub dir: tempfile::TempDir,
    pub tree: FakeTree,
    rates: RateTracker,
    pub t: f64,
    counters: BTreeMap<String, Counters>,
    pub devices: Arc<Vec<BlockDevice>>,
    iowait: f64,
}

impl Machine {
    pub fn new(disks: &[FakeDisk]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        for d in disks {
            tree.add(d).unwrap();
        }
        let devices = Arc::new(device::discover(&tree.root()).unwrap());
        let mut m = Self {
            dir,
            tree,
            rates: RateTracker::default(),
            t: 0.0,
            counters: BTreeMap::new(),
            devices,
            iowait: 3.5,
        };
        m.rates.update(0.0, &m.lines());
        m
    }

    /// The usual three disks: an SSD, an HDD, and a zram without a queue.
    pub fn three() -> Self {
        Self::new(&[
            FakeDisk::new("sda")
                .model("Samsung SSD 870", None)
                .dev(8, 0),
            FakeDisk::new("sdb")
                .rotational(true)
                .active("bfq")
                .dev(8, 16)
                .size_bytes(4 << 40),
            FakeDisk::new("zram0")
                .no_queue()
                .dev(252, 0)
                .size_bytes(8 << 30),
        ])
    }

    pub fn refresh(&mut self) {
        self.devices = Arc::new(device::discover(&self.tree.root()).unwrap());
    }

    fn lines(&self) -> Vec<DiskStatsLine> {
        self.devices
            .iter()
            .map(|d| DiskStatsLine {
                major: d.major,
                minor: d.minor,
                name: d.name.clone(),
                counters: self.counters.get(&d.name).copied().unwrap_or_default(),
            })
            .collect()
    }

    /// Advance the clock by `dt` seconds with these loads and make a snapshot.
    pub fn step(&mut self, dt: f64, loads: &[(&str, Load)]) -> Snapshot {
        for (name, l) in loads {
            let c = self.counters.entry(name.to_string()).or_default();
            let k = |v: u64| (v as f64 * dt) as u64;
            c.rd_ios += k(l.reads);
            c.rd_ticks += k(l.read_ms as u64) as u32;
            c.wr_ios += k(l.writes);
            c.wr_ticks += k(l.write_ms as u64) as u32;
            c.io_ticks += k(l.busy_ms as u64) as u32;
            c.time_in_queue += k(l.read_ms as u64 + l.write_ms as u64) as u32;
            c.rd_sectors += k(l.reads * 8);
            c.wr_sectors += k(l.writes * 256);
        }
        let prev = self.t;
        self.t += dt;
        let stats = self.rates.update(self.t, &self.lines());
        Snapshot {
            wall: UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            t: self.t,
            interval: Some(self.t - prev),
            devices: Arc::clone(&self.devices),
            refreshed: true,
            stats,
            iowait_pct: Some(self.iowait),
            cpu_busy_pct: None,
            pressure: None,
            warnings: Vec::new(),
        }
    }

    /// Feed `n` one-second samples of the same loads.
    pub fn run(&mut self, app: &mut App, n: usize, loads: &[(&str, Load)]) {
        for _ in 0..n {
            let s = self.step(1.0, loads);
            app.on_feed(Feed::Snapshot(Box::new(s)));
        }
    }

    /// A new app that has seen what the live worker sends first: the
    /// baseline, devices without rates. Its selection is the first name in
    /// natural order, as the screens here were drawn: given as `select`,
    /// because the live screen moves an untouched first selection to the
    /// busiest row at the first rates (`tui_table` tests that, with
    /// [`Machine::app_with`] and no selection).
    pub fn app(&self, read_only: Option<&str>) -> App {
        let first = self
            .devices
            .iter()
            .filter(|d| d.size_bytes > 0)
            .map(|d| d.name.clone())
            .min_by(|a, b| blktune_core::natural::natural_cmp(a, b));
        self.app_with(read_only, first)
    }

    /// [`Machine::app`] with `--device`'s selection (`None`: as the live
    /// screen starts without one).
    pub fn app_with(&self, read_only: Option<&str>, select: Option<String>) -> App {
        let mut app = self.app_before_baseline(read_only, select);
        app.on_feed(Feed::Snapshot(Box::new(self.baseline())));
        app
    }

    /// An app as the live screen starts: nothing from the worker yet.
    pub fn app_before_baseline(&self, read_only: Option<&str>, select: Option<String>) -> App {
        App::new(Config {
            host: HostInfo::read(&self.tree.root()),
            read_only: read_only.map(String::from),
            interval: Duration::from_secs(1),
            page_kb: 4,
            color: false,
            select,
        })
    }

    /// The sampler's first snapshot: devices and settings, no interval yet.
    pub fn baseline(&self) -> Snapshot {
        Snapshot {
            wall: UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            t: self.t,
            interval: None,
            devices: Arc::clone(&self.devices),
            refreshed: true,
            stats: Default::default(),
            iowait_pct: None,
            cpu_busy_pct: None,
            pressure: None,
            warnings: Vec::new(),
        }
    }

    /// Switch a fake device's scheduler as the kernel would, and return the
    /// change mark at the current time.
    pub fn switch(&mut self, dev: &str, label: &str, from: &str, to: &str) -> ChangeMark {
        std::fs::write(self.tree.dev_dir(dev).join("queue/scheduler"), to).unwrap();
        self.tree
            .settle(dev, &["none", "mq-deadline", "kyber", "bfq"], 256)
            .unwrap();
        self.refresh();
        self.mark(dev, label, from, to)
    }

    /// A change mark at the current time.
    pub fn mark(&self, dev: &str, label: &str, from: &str, to: &str) -> ChangeMark {
        ChangeMark {
            device: dev.into(),
            t: self.t,
            label: label.into(),
            before: Wanted {
                scheduler: Some(from.into()),
                ..Wanted::default()
            },
            after: Wanted {
                scheduler: Some(to.into()),
                ..Wanted::default()
            },
        }
    }
}

/// The usual load: sda busy with reads and some writes, sdb slow writes.
pub fn busy(r_await: u32) -> Vec<(&'static str, Load)> {
    vec![
        ("sda", load(800, r_await, 40, 10, 88)),
        ("sdb", load(20, 12, 150, 30, 95)),
        ("zram0", load(100, 0, 100, 0, 1)),
    ]
}

/// Press keys (a string of chars, or named keys) and collect the controls,
/// through the same path as the terminal's key events ([`App::on_key`]).
pub fn press(app: &mut App, keys: &[KeyCode]) -> Vec<Control> {
    let events: Vec<KeyEvent> = keys
        .iter()
        .map(|k| KeyEvent::new(*k, KeyModifiers::NONE))
        .collect();
    press_events(app, &events)
}

/// Key events as crossterm reads them (with modifiers: `Esc Enter` in one
/// read of the terminal arrives as Alt+Enter), and the controls they sent.
pub fn press_events(app: &mut App, events: &[KeyEvent]) -> Vec<Control> {
    events.iter().flat_map(|ev| app.on_key(ev)).collect()
}

/// Alt+`code`: how crossterm reads an Esc followed at once by `code`.
pub fn esc_then(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::ALT)
}

pub fn chars(s: &str) -> Vec<KeyCode> {
    s.chars().map(KeyCode::Char).collect()
}

pub fn mode(app: &App) -> Mode {
    app.mode()
}

/// Render the app at `w` x `h` and return the terminal (its Display is the screen).
pub fn screen(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render::draw(f, app)).unwrap();
    term
}

pub fn text(term: &Terminal<TestBackend>) -> String {
    term.backend().to_string()
}

/// What the probe saw on one device in one interval: reads that took
/// `reads_ms` each (their count is the rate), or none and an error.
pub fn probe_stats(rate: f64, reads_ms: &[f64], error: Option<&str>) -> ProbeStats {
    ProbeStats {
        reads: reads_ms.len() as u64,
        reads_per_sec: rate,
        errors: u64::from(error.is_some()) * 5,
        reads_ns: ProbeReads::from_ns(
            reads_ms
                .iter()
                .map(|ms| (ms * 1e6).round() as u64)
                .collect(),
        ),
        error: error.map(String::from),
    }
}

impl Machine {
    /// Like [`Machine::run`], with the probe's figures for `dev` after each
    /// snapshot, as the live source sends them.
    pub fn run_probed(
        &mut self,
        app: &mut App,
        n: usize,
        loads: &[(&str, Load)],
        dev: &str,
        stats: &ProbeStats,
    ) {
        for _ in 0..n {
            let s = self.step(1.0, loads);
            app.on_feed(Feed::Snapshot(Box::new(s)));
            app.on_feed(Feed::Probe(ProbeSample {
                t: self.t,
                itv: 1.0,
                stats: BTreeMap::from([(dev.to_string(), stats.clone())]),
            }));
        }
    }
}

/// A synthetic interval histogram: `n` I/Os spread evenly over ±20% of
/// `p50_ms`, of which a fraction `tail` took `tail_ms` instead.
pub fn lat_hist(n: u64, p50_ms: f64, tail: f64, tail_ms: f64) -> SparseHist {
    let mut h = Hist::empty();
    let slow = (n as f64 * tail).round() as u64;
    for i in 0..n - slow {
        let f = 0.8 + 0.4 * i as f64 / n.max(1) as f64;
        h.record((p50_ms * f * 1e6) as u64);
    }
    for _ in 0..slow {
        h.record((tail_ms * 1e6) as u64);
    }
    SparseHist::from(&h)
}

/// One device's latency per second: reads (total and device span) and writes.
#[derive(Debug, Clone, Copy)]
pub struct Lat {
    pub reads: u64,
    pub r_ms: f64,
    /// Fraction of slow reads and how slow (total span only: time in the scheduler).
    pub r_tail: f64,
    pub r_tail_ms: f64,
    pub r_dev_ms: f64,
    pub writes: u64,
    pub w_ms: f64,
}

impl Machine {
    /// Like [`Machine::run`], with the kernel's histograms after each
    /// snapshot, as the live source sends them (tracing on).
    pub fn run_traced(
        &mut self,
        app: &mut App,
        n: usize,
        loads: &[(&str, Load)],
        lat: &[(&str, Lat)],
    ) {
        app.on_feed(Feed::Latency(LatencyFeed::Tracing));
        for _ in 0..n {
            let s = self.step(1.0, loads);
            app.on_feed(Feed::Snapshot(Box::new(s)));
            let devices = lat
                .iter()
                .map(|(name, l)| {
                    let mut hists = BTreeMap::new();
                    if l.reads > 0 {
                        hists.insert(
                            (Span::Total, Dir::Read),
                            lat_hist(l.reads, l.r_ms, l.r_tail, l.r_tail_ms),
                        );
                        hists.insert(
                            (Span::Device, Dir::Read),
                            lat_hist(l.reads, l.r_dev_ms, 0.0, 0.0),
                        );
                    }
                    if l.writes > 0 {
                        hists.insert(
                            (Span::Total, Dir::Write),
                            lat_hist(l.writes, l.w_ms, 0.0, 0.0),
                        );
                        hists.insert(
                            (Span::Device, Dir::Write),
                            lat_hist(l.writes, l.w_ms * 0.8, 0.0, 0.0),
                        );
                    }
                    let diskseq = self
                        .devices
                        .iter()
                        .find(|d| d.name == *name)
                        .and_then(|d| d.diskseq);
                    (name.to_string(), DeviceLatency { diskseq, hists })
                })
                .collect();
            app.on_feed(Feed::Latency(LatencyFeed::Sample(LatencySample {
                t: self.t,
                itv: 1.0,
                devices,
                lost: 0,
            })));
        }
    }
}
